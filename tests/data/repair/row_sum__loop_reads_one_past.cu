// @repair task: tasks/level1/row_sum.yaml
// @repair from: tasks/level1/row_sum/naive.cu
// @repair expect: wrong_result
// @repair bug: the column loop runs to c <= cols, so each row also adds the first element of the next row (the last row a guard value)
// @repair fix: for (int c = 0; c < cols; ++c)
// @kagent entry: row_sum
// @kagent grid: ceil_div(rows, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per row, a sequential loop over the row.
// Correct but slow: neighbouring threads read addresses `cols` floats apart,
// so no load is coalesced, and only `rows` threads exist.

extern "C" __global__ void row_sum(const float* x, float* y, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float sum = 0.f;
    for (int c = 0; c <= cols; ++c) sum += xr[c];
    y[row] = sum;
}
