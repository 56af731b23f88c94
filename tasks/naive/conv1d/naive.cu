// @kagent entry: conv1d
// @kagent grid: ceil_div(B * Cout * LO, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per output (b, o, l), a loop over the input
// channels and the 3 taps. Neighbouring threads read neighbouring l
// (coalesced) and the same weights (a broadcast), but each input is re-read
// from L1/L2 by all Cout output channels and 3 taps: nothing is kept in
// shared memory or registers, so the FMAs wait on loads.

extern "C" __global__ void conv1d(const float* x, const float* w, float* y, int B, int Cin, int Cout, int L, int LO) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)B * Cout * LO) return;
    const int l = idx % LO;
    const int o = (idx / LO) % Cout;
    const long long b = idx / ((long long)LO * Cout);
    const float* xb = x + (size_t)b * Cin * L + l;
    const float* wo = w + (size_t)o * Cin * 3;
    float acc = 0.f;
    for (int c = 0; c < Cin; ++c) {
        const float* xc = xb + (size_t)c * L;
        acc += wo[3 * c] * xc[0] + wo[3 * c + 1] * xc[1] + wo[3 * c + 2] * xc[2];
    }
    y[idx] = acc;
}
