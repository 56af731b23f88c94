// @kagent entry: sum_squares
// @kagent grid: ceil_div(N * C * H * W, 256)
// @kagent block: 256
// @kagent smem: 0
// @kagent params: x, sumsq, N, C, H, W
// @kagent entry: scale_by_norm
// @kagent grid: ceil_div(N * C * H * W, 256)
// @kagent block: 256
// @kagent smem: 0
// @kagent params: x, sumsq, y, N, C, H, W
// @kagent scratch sumsq: 1 float32 zeroed
//
// Naive baseline in two kernels over the tensor as one flat array.
// sum_squares: one element per thread, a shared-memory tree per block, one
// atomicAdd per block into a zeroed scratch float (256 Ki atomics on one
// address at the timed size; their order varies, so the last bits do too).
// scale_by_norm: one thread per element divides by the square root.

extern "C" __global__ void sum_squares(const float* x, float* sumsq, int N, int C, int H, int W) {
    __shared__ float buf[256];
    const int tid = threadIdx.x;
    const long long i = (long long)blockIdx.x * blockDim.x + tid;
    const long long n = (long long)N * C * H * W;
    const float v = i < n ? x[i] : 0.f;
    buf[tid] = v * v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (tid < s) buf[tid] += buf[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(sumsq, buf[0]);
}

extern "C" __global__ void scale_by_norm(const float* x, const float* sumsq, float* y, int N, int C, int H, int W) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)N * C * H * W) return;
    y[i] = x[i] / sqrtf(sumsq[0]);
}
