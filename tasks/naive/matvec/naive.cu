// @kagent entry: matvec
// @kagent grid: ceil_div(M, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per row, a sequential dot product with x.
// Correct but slow: neighbouring threads read A at addresses K floats apart,
// so no load of A is coalesced, and only M threads exist (8192 at the timed
// size) to stream 256 MiB.

extern "C" __global__ void matvec(const float* a, const float* x, float* y, int M, int K) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    const float* ar = a + (size_t)row * K;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += ar[k] * x[k];
    y[row] = acc;
}
