// @kagent entry: argmax_dim1
// @kagent grid: ceil_div(batch_size * dim2, 256)
// @kagent block: 256
// @kagent smem: 0
//
// KernelBench level1/51_Argmax_over_a_dimension.py: torch.argmax(x, dim=1) for x of
// (batch_size, dim1, dim2): out (batch_size, dim2), int64. One thread per (b, j)
// output scans dim1 (stride dim2, coalesced across threads) and keeps the FIRST
// maximal index (strict >). As in torch, NaN counts as the maximum: the first NaN
// wins.

extern "C" __global__ void argmax_dim1(const float* x, long long* out, int batch_size, int dim1, int dim2) {
    const long long total = (long long)batch_size * dim2;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    const long long b = i / dim2;
    const long long j = i - b * dim2;
    const float* xp = x + b * dim1 * dim2 + j;
    float best = xp[0];
    long long best_k = 0;
    if (!isnan(best)) {
        for (int k = 1; k < dim1; ++k) {
            const float v = xp[(long long)k * dim2];
            if (isnan(v)) { best_k = k; break; }
            if (v > best) { best = v; best_k = k; }
        }
    }
    out[i] = best_k;
}
