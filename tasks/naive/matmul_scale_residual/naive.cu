// @kagent entry: matmul_scale_residual
// @kagent grid: ceil_div(out_features, 16), ceil_div(batch, 16)
// @kagent block: 16, 16
// @kagent smem: 0
//
// Naive baseline: one thread per output (row r, feature f), a plain dot
// product of row r of x with row f of weight (the weight is stored
// out_features x in_features, as nn.Linear keeps it), then the bias and the
// scaled residual z * scale + z. Neighbouring threads (consecutive f) read
// weight addresses in_features floats apart, so the weight loads are not
// coalesced, and nothing is reused from shared memory or registers.

extern "C" __global__ void matmul_scale_residual(const float* x, const float* weight, const float* bias, float* y,
                                                 int batch, int in_features, int out_features, float scale) {
    const int f = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= batch || f >= out_features) return;
    const float* xr = x + (size_t)r * in_features;
    const float* wf = weight + (size_t)f * in_features;
    float acc = 0.f;
    for (int i = 0; i < in_features; ++i) acc += xr[i] * wf[i];
    const float z = acc + bias[f];
    y[(size_t)r * out_features + f] = z * scale + z;
}
