// @kagent entry: bmm
// @kagent grid: ceil_div(n, 16), ceil_div(m, 16), batch
// @kagent block: 16, 16
// @kagent smem: 0
//
// Naive baseline: one thread per output element, the batch in grid z (so at
// most 65535 matrices), a plain loop over k. Threads of a block row read
// consecutive columns of B (coalesced) and the same element of A (a
// broadcast), but nothing is reused from shared memory or registers: every
// FMA costs two loads from L1/L2.

extern "C" __global__ void bmm(const float* a, const float* b, float* c, int batch, int m, int n, int k) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int p = blockIdx.z;
    if (p >= batch || row >= m || col >= n) return;
    const float* ap = a + ((size_t)p * m + row) * k;
    const float* bp = b + (size_t)p * k * n + col;
    float acc = 0.f;
    for (int i = 0; i < k; ++i) acc += ap[i] * bp[(size_t)i * n];
    c[((size_t)p * m + row) * n + col] = acc;
}
