// @kagent entry: row_sum
// @kagent grid: ceil_div(rows, 256)
// @kagent block: 256
// @kagent smem: 0
//
// HANGS on purpose (bench fixture): the column index wraps around, so the loop
// never ends (volatile loads keep the compiler from removing it).

extern "C" __global__ void row_sum(const float* x, float* y, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const volatile float* xr = x + (size_t)row * cols;
    float sum = 0.f;
    for (int c = 0; c < cols; c = (c + 1) % cols) sum += xr[c];
    y[row] = sum;
}
