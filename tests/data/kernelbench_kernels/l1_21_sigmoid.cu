// @kagent entry: sigmoid
// @kagent grid: ceil_div(batch_size * dim, 256)
// @kagent block: 256
// @kagent smem: 0
//
// KernelBench level1/21_Sigmoid.py: one thread per element of the (batch_size, dim) tensor,
// 64-bit flat index (batch_size * dim is about 1.6e9 at the timed size).
// torch.sigmoid: 1 / (1 + exp(-x)); expf overflow to inf for very negative x gives 0, as it should.

extern "C" __global__ void sigmoid(const float* x, float* out, int batch_size, int dim) {
    const long long n = (long long)batch_size * dim;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = x[i];
    out[i] = 1.f / (1.f + expf(-v));
}
