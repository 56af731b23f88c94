// @kagent entry: layernorm
// @kagent grid: ceil_div(rows, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per row, three sequential passes over the row.
// Correct but slow: neighbouring threads touch addresses `cols` floats apart,
// so no load or store is coalesced.

extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;

    float sum = 0.f;
    for (int c = 0; c < cols; ++c) sum += xr[c];
    const float mean = sum / cols;

    // Two-pass variance: accurate even when the mean is large.
    float sq = 0.f;
    for (int c = 0; c < cols; ++c) { const float d = xr[c] - mean; sq += d * d; }
    const float rstd = 1.0f / sqrtf(sq / cols + eps);

    for (int c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}
