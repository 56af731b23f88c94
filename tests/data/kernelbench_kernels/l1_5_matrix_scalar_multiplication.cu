// @kagent entry: matrix_scalar
// @kagent grid: ceil_div(M * N, 256)
// @kagent block: 256
// @kagent smem: 0
//
// KernelBench level1/5_Matrix_scalar_multiplication.py: C = A * s, one thread per
// element, 64-bit flat index (M * N = 2^30 at the timed size).

extern "C" __global__ void matrix_scalar(const float* A, float* out, float s, int M, int N) {
    const long long n = (long long)M * N;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = A[i] * s;
}
