// @kagent entry: avgpool2d
// @kagent grid: ceil_div(N * C * HO * WO, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per output element, an 11x11 window (stride 11,
// no padding: every tap is in range) summed row by row, divided by 121.
// Neighbouring threads read addresses 11 floats apart, so each warp load
// touches 11x more sectors than it uses at once; every input is read once.

extern "C" __global__ void avgpool2d(const float* x, float* y, int N, int C, int H, int W, int HO, int WO) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long total = (long long)N * C * HO * WO;
    if (idx >= total) return;
    const int ow = idx % WO;
    const int oh = (idx / WO) % HO;
    const long long plane = idx / ((long long)WO * HO);   // n * C + c
    const float* xp = x + plane * H * W + (long long)(11 * oh) * W + 11 * ow;
    float sum = 0.f;
    for (int dy = 0; dy < 11; ++dy)
        for (int dx = 0; dx < 11; ++dx) sum += xp[(long long)dy * W + dx];
    y[idx] = sum / 121.0f;
}
