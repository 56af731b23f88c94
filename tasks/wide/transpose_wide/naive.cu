// @kagent entry: transpose
// @kagent grid: ceil_div(cols, 16), ceil_div(rows, 16)
// @kagent block: 16, 16
// @kagent smem: 0
//
// Naive baseline: one thread per element, straight from x to y. Reads are
// coalesced along a row of x, but neighbouring threads write addresses
// `rows` floats apart in y, so every store touches its own 32-byte sector.

extern "C" __global__ void transpose(const float* x, float* y, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) y[(size_t)c * rows + r] = x[(size_t)r * cols + c];
}
