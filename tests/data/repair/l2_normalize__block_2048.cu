// @repair task: tasks/level2/l2_normalize.yaml
// @repair from: tasks/level2/l2_normalize/naive.cu
// @repair expect: launch_error
// @repair bug: block: 2048 threads, more than the 1024 a block may have
// @repair fix: block: 256 and grid: ceil_div(rows, 256)
// @kagent entry: l2_normalize
// @kagent grid: ceil_div(rows, 2048)
// @kagent block: 2048
// @kagent smem: 0
//
// Naive baseline: one thread per row, two sequential passes over the row (sum
// of squares, then scale). Correct but slow: neighbouring threads touch
// addresses `cols` floats apart, so no load or store is coalesced.

extern "C" __global__ void l2_normalize(const float* x, float* y, int rows, int cols, float eps) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;

    float sq = 0.f;
    for (int c = 0; c < cols; ++c) sq += xr[c] * xr[c];
    const float inv = 1.0f / fmaxf(sqrtf(sq), eps);

    for (int c = 0; c < cols; ++c) yr[c] = xr[c] * inv;
}
