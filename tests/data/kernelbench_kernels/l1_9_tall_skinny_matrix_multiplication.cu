// @kagent entry: matmul
// @kagent grid: ceil_div(M, 16), ceil_div(M, 16)
// @kagent block: 16, 16
// @kagent smem: 0
//
// KernelBench level1/9_Tall_skinny_matrix_multiplication_.py: C (M, M) = A (M, N) @ B (N, M),
// the inner dimension N small (32 at the timed size). Naive: one thread per output
// element, a plain fp32 loop over the N-long inner dimension; 64-bit output index
// (M * M = 2^30 at the timed size).

extern "C" __global__ void matmul(const float* A, const float* B, float* out, int M, int N) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= M) return;
    const float* a = A + (long long)row * N;
    float acc = 0.f;
    for (int k = 0; k < N; ++k) acc += a[k] * B[(long long)k * M + col];
    out[(long long)row * M + col] = acc;
}
