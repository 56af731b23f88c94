// @repair task: tasks/level1/rmsnorm.yaml
// @repair from: tasks/level1/rmsnorm/naive.cu
// @repair expect: wrong_result
// @repair bug: the mean of squares divides by a constant COLS 4096 (the timed size) instead of cols: wrong at every check size
// @repair fix: sq / cols
// @kagent entry: rmsnorm
// @kagent grid: ceil_div(rows, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per row, two sequential passes over the row
// (sum of squares, then scale). Correct but slow: neighbouring threads touch
// addresses `cols` floats apart, so no load or store is coalesced.

#define COLS 4096   // hidden size

extern "C" __global__ void rmsnorm(const float* x, const float* weight, float* y, int rows, int cols, float eps) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;

    float sq = 0.f;
    for (int c = 0; c < cols; ++c) sq += xr[c] * xr[c];
    const float scale = 1.0f / sqrtf(sq / COLS + eps);

    for (int c = 0; c < cols; ++c) yr[c] = xr[c] * scale * weight[c];
}
