// @kagent entry: row_sum
// @kagent grid: ceil_div(rows, 8)
// @kagent block: 32, 8
// @kagent smem: 0
// task: tasks/level1/row_sum.yaml
// One warp per row (8 rows a block): the 32 lanes stride over the row's columns, so each load
// instruction of the warp reads 32 neighbouring floats; then the lanes add their partial sums with
// shuffles, and lane 0 writes the row's result.
extern "C" __global__ void row_sum(const float* x, float* y, int rows, int cols) {
    const int row = blockIdx.x * 8 + threadIdx.y;
    if (row >= rows) return;  // the whole warp leaves together: it shares one row
    const float* xr = x + (size_t)row * cols;
    float sum = 0.f;
    for (int c = threadIdx.x; c < cols; c += 32) sum += xr[c];
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (threadIdx.x == 0) y[row] = sum;
}
