// @kagent entry: log_softmax
// @kagent grid: ceil_div(rows, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per row, three sequential passes over the row
// (max, sum of exponentials, write x - max - log(sum)). Correct but slow:
// neighbouring threads touch addresses `cols` floats apart, so nothing is
// coalesced, and with few long rows (1024 of 64 Ki at the timed size) only
// 1024 threads exist for 64 Mi elements.

extern "C" __global__ void log_softmax(const float* x, float* y, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;

    float m = -INFINITY;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);

    float sum = 0.f;
    for (int c = 0; c < cols; ++c) sum += expf(xr[c] - m);
    const float shift = m + logf(sum);

    for (int c = 0; c < cols; ++c) yr[c] = xr[c] - shift;
}
