// @kagent entry: full_sum
// @kagent grid: ceil_div(n, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one element per thread, a shared-memory tree per block
// (a __syncthreads after every step), then one atomicAdd per block into the
// zeroed output. Slow: 1M blocks, each thread loads one float, and 1M
// atomics land on one address; the order of those atomics varies, so the
// last bits of the result vary from run to run.

extern "C" __global__ void full_sum(const float* x, float* out, int n) {
    __shared__ float buf[256];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + tid;
    buf[tid] = i < n ? x[i] : 0.f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (tid < s) buf[tid] += buf[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, buf[0]);
}
