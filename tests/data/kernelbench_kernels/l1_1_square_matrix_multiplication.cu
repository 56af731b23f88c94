// @kagent entry: matmul
// @kagent grid: ceil_div(N, 16), ceil_div(N, 16)
// @kagent block: 16, 16
// @kagent smem: 0
//
// KernelBench level1/1_Square_matrix_multiplication_.py: C = A @ B, all (N, N).
// Naive: one thread per output element, a plain fp32 loop over k. Threads of a
// block row read consecutive columns of B (coalesced) and broadcast one A value.

extern "C" __global__ void matmul(const float* A, const float* B, float* out, int N) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= N || col >= N) return;
    const float* a = A + (long long)row * N;
    float acc = 0.f;
    for (int k = 0; k < N; ++k) acc += a[k] * B[(long long)k * N + col];
    out[(long long)row * N + col] = acc;
}
