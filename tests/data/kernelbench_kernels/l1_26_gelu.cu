// @kagent entry: gelu
// @kagent grid: ceil_div(batch_size * dim, 256)
// @kagent block: 256
// @kagent smem: 0
//
// KernelBench level1/26_GELU_.py: one thread per element of the (batch_size, dim) tensor,
// 64-bit flat index (batch_size * dim is about 1.6e9 at the timed size).
// F.gelu with its default approximate='none': the exact erf form 0.5 * x * (1 + erf(x / sqrt(2))).

extern "C" __global__ void gelu(const float* x, float* out, int batch_size, int dim) {
    const long long n = (long long)batch_size * dim;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = x[i];
    out[i] = 0.5f * v * (1.f + erff(v * 0.7071067811865475f));
}
