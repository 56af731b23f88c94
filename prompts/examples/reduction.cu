// @kagent entry: full_sum
// @kagent grid: min(ceil_div(n, 256), 1024)
// @kagent block: 256
// @kagent smem: 0
// task: tasks/level1/full_sum.yaml
// At most 1024 blocks stride over the input, each thread summing its elements; each warp adds its
// 32 sums with shuffles, warp 0 adds the 8 warp sums, and one atomicAdd a block adds the block's sum
// into the output (zeroed before the launch).
extern "C" __global__ void full_sum(const float* x, float* out, int n) {
    __shared__ float warp_sums[8];
    float sum = 0.f;
    for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < n; i += (long long)gridDim.x * 256) sum += x[i];
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = sum;
    __syncthreads();
    if (threadIdx.x < 32) {
        sum = threadIdx.x < 8 ? warp_sums[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        if (threadIdx.x == 0) atomicAdd(out, sum);
    }
}
