// @repair task: tasks/level1/gelu.yaml
// @repair from: tasks/level1/gelu/naive.cu
// @repair expect: wrong_result
// @repair bug: no i < n check: the grid is rounded up to 256 threads, and the extra threads write y past its end (guard band)
// @repair fix: wrap the body in if (i < n) { ... }
// @kagent entry: gelu
// @kagent grid: ceil_div(n, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per element, the textbook formula with tanhf.

extern "C" __global__ void gelu(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float v = x[i];
    const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);  // sqrt(2/pi) * (x + 0.044715 x^3)
    y[i] = 0.5f * v * (1.0f + tanhf(u));
}
