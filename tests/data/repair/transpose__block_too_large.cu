// @repair task: tasks/level1/transpose.yaml
// @repair from: tasks/level1/transpose/naive.cu
// @repair expect: launch_error
// @repair bug: a 64 x 32 block is 2048 threads, more than the 1024 a block may have
// @repair fix: block: 16, 16 (or any tile of at most 1024 threads, with the grid to match)
// @kagent entry: transpose
// @kagent grid: ceil_div(cols, 64), ceil_div(rows, 32)
// @kagent block: 64, 32
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
