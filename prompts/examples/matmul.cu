// @kagent entry: matmul
// @kagent grid: ceil_div(n, 16), ceil_div(m, 16)
// @kagent block: 16, 16
// @kagent smem: 0
// task: tasks/level1/matmul_fp32.yaml
// 16x16 tiles through shared memory: each block computes a 16x16 tile of C, loading one 16x16 tile
// of A and one of B per step of 16 along k (zeros past the edges), so every input value is read from
// global memory 16 times fewer than one thread per output would.
extern "C" __global__ void matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    __shared__ float as[16][16];
    __shared__ float bs[16][17];
    const int row = blockIdx.y * 16 + threadIdx.y;
    const int col = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < k; t += 16) {
        as[threadIdx.y][threadIdx.x] = (row < m && t + threadIdx.x < k) ? a[(size_t)row * k + t + threadIdx.x] : 0.f;
        bs[threadIdx.y][threadIdx.x] = (t + threadIdx.y < k && col < n) ? b[(size_t)(t + threadIdx.y) * n + col] : 0.f;
        __syncthreads();
        for (int i = 0; i < 16; ++i) acc += as[threadIdx.y][i] * bs[i][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) c[(size_t)row * n + col] = acc;
}
