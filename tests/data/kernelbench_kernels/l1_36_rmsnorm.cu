// @kagent entry: rmsnorm
// @kagent grid: ceil_div(batch_size * dim1 * dim2, 256)
// @kagent block: 256
// @kagent smem: 0
//
// KernelBench level1/36_RMSNorm_.py: x / sqrt(mean(x^2 over dim 1 = features) + eps),
// eps = 1e-5 (the model's default; get_init_inputs passes only num_features).
// The reduction runs over the strided `features` axis of (batch, features, dim1, dim2):
// one thread per (batch, dim1, dim2) position loops over the features (stride
// dim1 * dim2), so neighbouring threads read neighbouring addresses (coalesced).
// Sum of squares in double; 64-bit indices (1.9e9 elements at the timed size).

extern "C" __global__ void rmsnorm(const float* x, float* out, int batch_size, int features, int dim1, int dim2) {
    const long long inner = (long long)dim1 * dim2;
    const long long total = (long long)batch_size * inner;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    const long long b = i / inner;
    const long long p = i - b * inner;
    const long long base = b * features * inner + p;
    double ss = 0.0;
    for (int f = 0; f < features; ++f) {
        const double v = (double)x[base + f * inner];
        ss += v * v;
    }
    const float rms = sqrtf((float)(ss / features) + 1e-5f);
    for (int f = 0; f < features; ++f) out[base + f * inner] = x[base + f * inner] / rms;
}
