// @repair task: tasks/level2/bias_gelu.yaml
// @repair from: tasks/level2/bias_gelu/naive.cu
// @repair expect: wrong_result
// @repair bug: no i >= rows * cols return: the threads of the rounded-up last block write y past its end (guard band)
// @repair fix: if (i >= (long long)rows * cols) return; before touching x and y
// @kagent entry: bias_gelu
// @kagent grid: ceil_div(rows * cols, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per element, the textbook tanh formula.
// Coalesced (neighbouring threads take neighbouring elements), but scalar
// loads, an integer division per element and the slower tanhf.

extern "C" __global__ void bias_gelu(const float* x, const float* bias, float* y, int rows, int cols) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int col = (int)(i % cols);
    const float v = x[i] + bias[col];
    const float k = 0.7978845608028654f;   // sqrt(2 / pi)
    y[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}
