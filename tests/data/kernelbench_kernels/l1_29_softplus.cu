// @kagent entry: softplus
// @kagent grid: ceil_div(batch_size * dim, 256)
// @kagent block: 256
// @kagent smem: 0
//
// KernelBench level1/29_Softplus.py: one thread per element of the (batch_size, dim) tensor,
// 64-bit flat index (batch_size * dim is about 1.6e9 at the timed size).
// F.softplus with its defaults beta = 1, threshold = 20: x where x > 20, else log1p(exp(x)).

extern "C" __global__ void softplus(const float* x, float* out, int batch_size, int dim) {
    const long long n = (long long)batch_size * dim;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = x[i];
    out[i] = v > 20.f ? v : log1pf(expf(v));
}
