// @kagent entry: softmax
// @kagent grid: batch_size
// @kagent block: 256
// @kagent smem: 0
//
// KernelBench level1/23_Softmax.py: torch.softmax(x, dim=1) over rows of `dim`.
// One block of 256 threads per row, three strided (coalesced) passes: the row max
// (shared-memory tree), the sum of exp(x - max) (per-thread double, shared-memory
// tree), then out = exp(x - max) / sum.

#define BLOCK 256

extern "C" __global__ void softmax(const float* x, float* out, int batch_size, int dim) {
    __shared__ float smax[BLOCK];
    __shared__ double ssum[BLOCK];
    const int row = blockIdx.x;
    if (row >= batch_size) return;  // uniform over the block
    const float* xr = x + (long long)row * dim;
    float* yr = out + (long long)row * dim;
    const int t = threadIdx.x;

    float m = -INFINITY;
    for (int c = t; c < dim; c += BLOCK) m = fmaxf(m, xr[c]);
    smax[t] = m;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) smax[t] = fmaxf(smax[t], smax[t + s]);
        __syncthreads();
    }
    m = smax[0];

    double sum = 0.0;
    for (int c = t; c < dim; c += BLOCK) sum += (double)expf(xr[c] - m);
    ssum[t] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) ssum[t] += ssum[t + s];
        __syncthreads();
    }
    const float inv = (float)(1.0 / ssum[0]);

    for (int c = t; c < dim; c += BLOCK) yr[c] = expf(xr[c] - m) * inv;
}
