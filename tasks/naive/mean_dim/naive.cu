// @kagent entry: mean_dim
// @kagent grid: ceil_div(B * D, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per output (b, d), a sequential loop down the
// reduced middle axis. Neighbouring threads read neighbouring d, so each load
// is coalesced, but only B * D threads exist (16 Ki at the timed size, a few
// warps per SM) and each walks N rows one dependent add at a time.

extern "C" __global__ void mean_dim(const float* x, float* y, int B, int N, int D) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)B * D) return;
    const long long b = idx / D;
    const long long d = idx % D;
    const float* xp = x + (size_t)b * N * D + d;
    float sum = 0.f;
    for (int n = 0; n < N; ++n) sum += xp[(size_t)n * D];
    y[idx] = sum / N;
}
