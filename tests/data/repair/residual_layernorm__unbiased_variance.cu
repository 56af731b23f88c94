// @repair task: tasks/level2/residual_layernorm.yaml
// @repair from: tasks/level2/residual_layernorm/naive.cu
// @repair expect: wrong_result
// @repair bug: the variance divides by cols - 1 (unbiased) instead of cols (biased, as the reference); NaN at cols = 1
// @repair fix: 1.0f / sqrtf(sq / cols + eps)
// @kagent entry: residual_layernorm
// @kagent grid: ceil_div(rows, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per row, three sequential passes over the row,
// recomputing x + residual in each. Correct but slow: neighbouring threads
// touch addresses `cols` floats apart, so no load or store is coalesced.

extern "C" __global__ void residual_layernorm(const float* x, const float* residual, const float* gamma,
                                              const float* beta, float* y, int rows, int cols, float eps) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    const float* rr = residual + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;

    float sum = 0.f;
    for (int c = 0; c < cols; ++c) sum += xr[c] + rr[c];
    const float mean = sum / cols;

    // Two-pass variance: accurate even when the mean is large.
    float sq = 0.f;
    for (int c = 0; c < cols; ++c) { const float d = (xr[c] + rr[c]) - mean; sq += d * d; }
    const float rstd = 1.0f / sqrtf(sq / (cols - 1) + eps);

    for (int c = 0; c < cols; ++c) yr[c] = ((xr[c] + rr[c]) - mean) * rstd * gamma[c] + beta[c];
}
