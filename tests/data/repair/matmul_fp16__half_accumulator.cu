// @repair task: tasks/level1/matmul_fp16.yaml
// @repair from: tasks/level1/matmul_fp16/naive.cu
// @repair expect: wrong_result
// @repair bug: the dot product accumulates in __half (__hfma) instead of float: rounding to 11 bits at every step, far off for long k
// @repair fix: float acc = 0.f; acc += __half2float(a[...]) * __half2float(b[...]); c[...] = acc;
// @kagent entry: matmul
// @kagent grid: ceil_div(n, 16), ceil_div(m, 16)
// @kagent block: 16, 16
// @kagent smem: 0
//
// Naive baseline: one thread per output element, one fused multiply-add of
// the half inputs per step of k. No tensor cores, no reuse through shared
// memory.

#include <cuda_fp16.h>

extern "C" __global__ void matmul(const __half* a, const __half* b, float* c, int m, int n, int k) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    __half acc = __float2half(0.f);
    for (int i = 0; i < k; ++i)
        acc = __hfma(a[(size_t)row * k + i], b[(size_t)i * n + col], acc);
    c[(size_t)row * n + col] = __half2float(acc);
}
