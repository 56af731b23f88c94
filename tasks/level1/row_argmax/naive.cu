// @kagent entry: row_argmax
// @kagent grid: ceil_div(rows, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per row, a sequential scan keeping the first
// index of the largest value seen. Correct for finite and infinite values
// (NaN inputs are not expected). Slow: neighbouring threads read addresses
// `cols` floats apart, so no load is coalesced, and only `rows` threads exist.

extern "C" __global__ void row_argmax(const float* x, int* idx, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float best = xr[0];
    int best_c = 0;
    for (int c = 1; c < cols; ++c) {
        if (xr[c] > best) {   // strictly greater: the first index wins ties
            best = xr[c];
            best_c = c;
        }
    }
    idx[row] = best_c;
}
