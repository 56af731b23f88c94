// @kagent entry: matmul
// @kagent grid: ceil_div(n, 16), ceil_div(m, 16)
// @kagent block: 16, 16
// @kagent smem: 0
//
// Naive baseline: one thread per output element, fp32 accumulation of the
// half inputs converted one by one. No tensor cores, no reuse through shared
// memory.

#include <cuda_fp16.h>

extern "C" __global__ void matmul(const __half* a, const __half* b, float* c, int m, int n, int k) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    float acc = 0.f;
    for (int i = 0; i < k; ++i)
        acc += __half2float(a[(size_t)row * k + i]) * __half2float(b[(size_t)i * n + col]);
    c[(size_t)row * n + col] = acc;
}
