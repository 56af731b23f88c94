// @kagent entry: gelu
// @kagent grid: min(ceil_div(n, 1024), 8192)
// @kagent block: 256
// @kagent smem: 0
// task: tasks/level1/gelu.yaml
// Grid-stride loop, 4 elements a thread in flight (256 apart, so every load of a warp is coalesced);
// at most 8192 blocks, which stride over the rest.
extern "C" __global__ void gelu(const float* x, float* y, int n) {
    for (long long base = (long long)blockIdx.x * 1024 + threadIdx.x; base < n; base += (long long)gridDim.x * 1024) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const long long i = base + k * 256;
            if (i < n) {
                const float v = x[i];
                const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
                y[i] = 0.5f * v * (1.0f + tanhf(u));
            }
        }
    }
}
