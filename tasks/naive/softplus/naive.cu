// @kagent entry: softplus
// @kagent grid: ceil_div(n, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one element per thread, scalar loads and stores,
// log1pf(expf(x)) (accurate where exp(x) is tiny), and x itself above 20,
// where expf would be needlessly large (and overflows past 88).

extern "C" __global__ void softplus(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = x[i];
    y[i] = v > 20.f ? v : log1pf(expf(v));
}
