// @kagent entry: transpose
// @kagent grid: ceil_div(cols, 32), ceil_div(rows, 32)
// @kagent block: 32, 8
// @kagent smem: 0
// task: tasks/level1/transpose.yaml
// A 32x32 tile through shared memory (padded to 33 columns against bank conflicts): read rows of the
// tile with coalesced loads, write rows of the transposed tile with coalesced stores.
extern "C" __global__ void transpose(const float* x, float* y, int rows, int cols) {
    __shared__ float tile[32][33];
    const int c = blockIdx.x * 32 + threadIdx.x;
    for (int j = threadIdx.y; j < 32; j += 8) {
        const int r = blockIdx.y * 32 + j;
        if (r < rows && c < cols) tile[j][threadIdx.x] = x[(size_t)r * cols + c];
    }
    __syncthreads();
    const int r2 = blockIdx.y * 32 + threadIdx.x;
    for (int j = threadIdx.y; j < 32; j += 8) {
        const int c2 = blockIdx.x * 32 + j;
        if (c2 < cols && r2 < rows) y[(size_t)c2 * rows + r2] = tile[threadIdx.x][j];
    }
}
