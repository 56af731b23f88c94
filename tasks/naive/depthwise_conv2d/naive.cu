// @kagent entry: depthwise_conv2d
// @kagent grid: ceil_div(N * C * HO * WO, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per output element, the channel's 3x3 filter
// applied with 9 loads of x and 9 of w. Loads are coalesced along a row, but
// each input is loaded by 9 threads: the reuse is left to the caches.

extern "C" __global__ void depthwise_conv2d(const float* x, const float* w, float* y, int N, int C, int H, int W,
                                            int HO, int WO) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)N * C * HO * WO) return;
    const int j = idx % WO;
    const int i = (idx / WO) % HO;
    const long long plane = idx / ((long long)WO * HO);   // n * C + c
    const int c = plane % C;
    const float* xp = x + plane * H * W + (long long)i * W + j;
    const float* wc = w + 9 * c;
    float acc = 0.f;
    for (int dy = 0; dy < 3; ++dy)
        for (int dx = 0; dx < 3; ++dx) acc += wc[3 * dy + dx] * xp[(long long)dy * W + dx];
    y[idx] = acc;
}
