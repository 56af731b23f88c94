// @kagent entry: sum_dim1
// @kagent grid: ceil_div(batch_size * dim2, 256)
// @kagent block: 256
// @kagent smem: 0
//
// KernelBench level1/47_Sum_reduction_over_a_dimension.py: torch.sum(x, dim=1,
// keepdim=True) for x of (batch_size, dim1, dim2): out (batch_size, 1, dim2).
// The reduced axis is the middle one: one thread per (b, j) output loops over dim1
// with stride dim2, so neighbouring threads read neighbouring addresses (coalesced).
// Accumulates in double.

extern "C" __global__ void sum_dim1(const float* x, float* out, int batch_size, int dim1, int dim2) {
    const long long total = (long long)batch_size * dim2;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    const long long b = i / dim2;
    const long long j = i - b * dim2;
    const float* xp = x + b * dim1 * dim2 + j;
    double acc = 0.0;
    for (int k = 0; k < dim1; ++k) acc += (double)xp[(long long)k * dim2];
    out[i] = (float)acc;
}
