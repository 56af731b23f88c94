// @kagent entry: matvec
// @kagent grid: M
// @kagent block: 256
// @kagent smem: 0
//
// KernelBench level1/4_Matrix_vector_multiplication_.py: C (M, 1) = A (M, K) @ B (K, 1).
// The task's index_dtype is int64, so M and K arrive as long long. One block of 256
// threads per row: each thread strides over the row (coalesced), accumulating in
// double (K = 2^20 at the timed size), then a shared-memory tree reduction.

#define BLOCK 256

extern "C" __global__ void matvec(const float* A, const float* B, float* out, long long M, long long K) {
    __shared__ double partial[BLOCK];
    const long long row = blockIdx.x;
    if (row >= M) return;  // uniform over the block
    const float* a = A + row * K;
    double acc = 0.0;
    for (long long k = threadIdx.x; k < K; k += BLOCK) acc += (double)a[k] * (double)B[k];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[row] = (float)partial[0];
}
