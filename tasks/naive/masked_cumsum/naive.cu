// @kagent entry: masked_cumsum
// @kagent grid: ceil_div(rows, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per row, a running sum of the kept elements
// (mask byte nonzero) written at every column. Correct but slow: neighbouring
// threads touch addresses `cols` elements apart, so no load or store is
// coalesced, and only `rows` threads exist (4096 at the timed size).

extern "C" __global__ void masked_cumsum(const float* x, const unsigned char* mask, float* y, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    const unsigned char* mr = mask + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float sum = 0.f;
    for (int c = 0; c < cols; ++c) {
        if (mr[c]) sum += xr[c];
        yr[c] = sum;
    }
}
