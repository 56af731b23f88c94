// @kagent entry: leaky_relu
// @kagent grid: ceil_div(batch_size * dim, 256)
// @kagent block: 256
// @kagent smem: 0
//
// KernelBench level1/20_LeakyReLU.py: one thread per element of the (batch_size, dim) tensor,
// 64-bit flat index (batch_size * dim is about 1.6e9 at the timed size).
// F.leaky_relu with the model's default negative_slope = 0.01 (get_init_inputs is empty): x > 0 ? x : 0.01 * x.

extern "C" __global__ void leaky_relu(const float* x, float* out, int batch_size, int dim) {
    const long long n = (long long)batch_size * dim;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = x[i];
    out[i] = v > 0.f ? v : v * 0.01f;
}
