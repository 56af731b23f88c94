// @kagent entry: cumsum
// @kagent grid: batch_size
// @kagent block: 1024
// @kagent smem: 0
//
// KernelBench level1/89_cumsum.py: torch.cumsum(x, dim=1) for x of (batch_size, 32768);
// the row length 32768 is fixed by the problem (input_shape), not a dim of the task,
// so it is a constant here. One block of 1024 threads per row walks the row in
// tiles of 1024 (coalesced): a warp-shuffle inclusive scan, a scan of the 32 warp
// totals, plus the running carry of earlier tiles. All sums in double (torch's CPU
// cumsum also accumulates float in double), rounded to float on the store.

#define ROW 32768
#define BLOCK 1024
#define WARPS (BLOCK / 32)

extern "C" __global__ void cumsum(const float* x, float* out, int batch_size) {
    __shared__ double warp_total[WARPS];
    const int row = blockIdx.x;
    if (row >= batch_size) return;  // uniform over the block
    const float* xr = x + (long long)row * ROW;
    float* yr = out + (long long)row * ROW;
    const int t = threadIdx.x;
    const int lane = t & 31;
    const int warp = t >> 5;
    double carry = 0.0;
    for (int base = 0; base < ROW; base += BLOCK) {
        const int c = base + t;
        double v = c < ROW ? (double)xr[c] : 0.0;
        for (int off = 1; off < 32; off <<= 1) {
            const double n = __shfl_up_sync(0xffffffffu, v, off);
            if (lane >= off) v += n;
        }
        if (lane == 31) warp_total[warp] = v;
        __syncthreads();
        if (warp == 0) {
            double w = lane < WARPS ? warp_total[lane] : 0.0;
            for (int off = 1; off < 32; off <<= 1) {
                const double n = __shfl_up_sync(0xffffffffu, w, off);
                if (lane >= off) w += n;
            }
            if (lane < WARPS) warp_total[lane] = w;  // inclusive scan of the warp totals
        }
        __syncthreads();
        const double before = warp > 0 ? warp_total[warp - 1] : 0.0;
        if (c < ROW) yr[c] = (float)(carry + before + v);
        carry += warp_total[WARPS - 1];
        __syncthreads();  // every thread has read warp_total before the next tile rewrites it
    }
}
