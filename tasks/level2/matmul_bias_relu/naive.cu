// @kagent entry: matmul_bias_relu
// @kagent grid: ceil_div(n, 16), ceil_div(m, 16)
// @kagent block: 16, 16
// @kagent smem: 0
//
// Naive baseline: one thread per output element, a plain dot product over k
// read straight from global memory, then bias and ReLU. No shared memory, no
// register blocking: every A and B element is re-read from cache n (m) times.

extern "C" __global__ void matmul_bias_relu(const float* a, const float* b, const float* bias, float* y,
                                            int m, int n, int k) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    float acc = 0.0f;
    for (int i = 0; i < k; ++i) acc += a[(size_t)row * k + i] * b[(size_t)i * n + col];
    acc += bias[col];
    y[(size_t)row * n + col] = acc > 0.0f ? acc : 0.0f;
}
