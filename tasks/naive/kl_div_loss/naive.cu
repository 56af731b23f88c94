// @kagent entry: kl_div_loss
// @kagent grid: ceil_div(batch * n, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one element per thread (t * (log t - log p)), a
// shared-memory tree per block (a __syncthreads after every step), then one
// atomicAdd of the block's sum divided by `batch` into the zeroed output.
// Slow: 128 Ki blocks, one load pair and two logf per thread, and 128 Ki
// atomics land on one address; their order varies, so the last bits of the
// loss vary from run to run.

extern "C" __global__ void kl_div_loss(const float* predictions, const float* targets, float* loss, int batch, int n) {
    __shared__ float buf[256];
    const int tid = threadIdx.x;
    const long long i = (long long)blockIdx.x * blockDim.x + tid;
    float term = 0.f;
    if (i < (long long)batch * n) {
        const float t = targets[i];
        term = t * (logf(t) - logf(predictions[i]));
    }
    buf[tid] = term;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (tid < s) buf[tid] += buf[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(loss, buf[0] / batch);
}
