// @repair task: tasks/level1/softmax.yaml
// @repair from: tasks/level1/softmax/naive.cu
// @repair expect: launch_error
// @repair bug: the grid is rows // 256, which drops the tail rows and is 0 blocks (no launch) for rows < 256
// @repair fix: // @kagent grid: ceil_div(rows, 256)
// @kagent entry: softmax
// @kagent grid: rows // 256
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per row, three sequential passes over the row
// (max, sum of exponentials, normalise). Correct but slow: neighbouring
// threads touch addresses `cols` floats apart, so nothing is coalesced.

extern "C" __global__ void softmax(const float* x, float* y, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;

    float m = -INFINITY;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);

    float sum = 0.f;
    for (int c = 0; c < cols; ++c) sum += expf(xr[c] - m);

    for (int c = 0; c < cols; ++c) yr[c] = expf(xr[c] - m) / sum;
}
