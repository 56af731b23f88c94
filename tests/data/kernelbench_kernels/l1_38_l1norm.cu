// @kagent entry: l1norm
// @kagent grid: batch_size
// @kagent block: 256
// @kagent smem: 0
//
// KernelBench level1/38_L1Norm_.py: x / mean(|x|, dim=1, keepdim=True). Note: the MEAN
// of |x| over the row (sum / dim), not the sum. One block of 256 threads per row:
// strided (coalesced) per-thread double sums of |x|, a shared-memory tree, then
// out = x / mean. 64-bit row offsets (batch_size * dim is just under 2^31 at the
// timed size).

#define BLOCK 256

extern "C" __global__ void l1norm(const float* x, float* out, int batch_size, int dim) {
    __shared__ double ssum[BLOCK];
    const int row = blockIdx.x;
    if (row >= batch_size) return;  // uniform over the block
    const float* xr = x + (long long)row * dim;
    float* yr = out + (long long)row * dim;
    const int t = threadIdx.x;

    double sum = 0.0;
    for (int c = t; c < dim; c += BLOCK) sum += (double)fabsf(xr[c]);
    ssum[t] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) ssum[t] += ssum[t + s];
        __syncthreads();
    }
    const float mean = (float)(ssum[0] / dim);

    for (int c = t; c < dim; c += BLOCK) yr[c] = xr[c] / mean;
}
