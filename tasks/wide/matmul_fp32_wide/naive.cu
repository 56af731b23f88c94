// @kagent entry: matmul
// @kagent grid: ceil_div(n, 16), ceil_div(m, 16)
// @kagent block: 16, 16
// @kagent smem: 0
//
// Naive baseline: one thread per output element, a plain loop over k.
// Threads of a row of the block read consecutive columns of B (coalesced)
// and the same element of A (a broadcast), but nothing is reused from
// shared memory or registers, so every FMA needs two loads from L1/L2.

extern "C" __global__ void matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    float acc = 0.f;
    for (int i = 0; i < k; ++i) acc += a[(size_t)row * k + i] * b[(size_t)i * n + col];
    c[(size_t)row * n + col] = acc;
}
