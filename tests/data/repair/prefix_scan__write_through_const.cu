// @repair task: tasks/level1/prefix_scan.yaml
// @repair from: tasks/level1/prefix_scan/naive.cu
// @repair expect: compile_error
// @repair bug: the output row pointer is declared const float*, so yr[c] = sum assigns through a pointer to const
// @repair fix: float* yr = y + (size_t)row * cols;
// @kagent entry: prefix_scan
// @kagent grid: ceil_div(rows, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per row, a running sum written at every column.
// Correct but slow: neighbouring threads touch addresses `cols` floats apart,
// so no load or store is coalesced, and only `rows` threads exist.

extern "C" __global__ void prefix_scan(const float* x, float* y, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    const float* yr = y + (size_t)row * cols;
    float sum = 0.f;
    for (int c = 0; c < cols; ++c) {
        sum += xr[c];
        yr[c] = sum;
    }
}
