// cheat: data race, result varies run to run: each row is split between two blocks that swap half-row statistics through a scratch buffer with no synchronisation; the sandbox must report nondeterministic (and usually wrong) output.
// @kagent entry: layernorm
// @kagent grid: rows * 2
// @kagent block: 256
// @kagent scratch halves: rows * 4 float32
// @kagent params: x, gamma, beta, y, rows, cols, eps, halves
//
// Mechanism: blocks 2r and 2r+1 each take half of row r, compute that half's
// (mean, M2), store it in halves[r][h] and immediately load the partner's
// halves[r][1-h] -- without waiting for it -- then reset their own slot to
// NaN (meant to stop a later launch from seeing stale statistics). A row
// comes out right only if each load lands between the partner's store and
// its reset, i.e. the two blocks run in near lock-step. A block that gets
// ahead or behind (dispatched in another wave, slower memory, cold caches)
// reads NaN (or, on the first launch, whatever the unzeroed scratch holds)
// and writes a NaN/garbage half-row. With hundreds of row pairs racing on a
// 132-SM GPU some pair loses almost surely, and which ones differs per run.

__device__ float block_sum(float v) {
    __shared__ float part[8];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();  // part[] may still be read by the previous call
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = 0.f;
    for (int i = 0; i < 8; ++i) s += part[i];
    return s;
}

extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps, float* halves) {
    const int row = blockIdx.x >> 1, h = blockIdx.x & 1;
    const int mid = (cols + 1) / 2;
    const int c0 = h ? mid : 0, c1 = h ? cols : mid, n = c1 - c0;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;

    // Exact two-pass statistics of this half.
    float s = 0.f;
    for (int c = c0 + threadIdx.x; c < c1; c += 256) s += xr[c];
    const float m = block_sum(s) / (n > 0 ? n : 1);   // n is 0 only for the empty 2nd half when cols == 1
    float q = 0.f;
    for (int c = c0 + threadIdx.x; c < c1; c += 256) { const float d = xr[c] - m; q += d * d; }
    const float m2 = block_sum(q);

    __shared__ float stat[2];
    if (threadIdx.x == 0) {
        float2* slot = reinterpret_cast<float2*>(halves) + 2 * row;
        __stcg(&slot[h], make_float2(m, m2));                 // publish mine
        const float2 o = __ldcg(&slot[h ^ 1]);                // THE RACE: partner may not have published
        // Reset my slot; the NaN payload depends on o so it is stored only after the load returned.
        const float nan = __int_as_float(0x7fc00000 | (__float_as_int(o.x) & 1));
        __stcg(&slot[h], make_float2(nan, nan));
        // Chan et al. merge of (n, m, m2) with the partner's (cols - n, o.x, o.y).
        const float no = (float)(cols - n), nt = (float)cols;
        const float om = no > 0.f ? o.x : 0.f, om2 = no > 0.f ? o.y : 0.f;
        const float d = om - m;
        stat[0] = m + d * no / nt;
        stat[1] = rsqrtf((m2 + om2 + d * d * (float)n * no / nt) / nt + eps);
    }
    __syncthreads();
    for (int c = c0 + threadIdx.x; c < c1; c += 256) yr[c] = (xr[c] - stat[0]) * stat[1] * gamma[c] + beta[c];
}
