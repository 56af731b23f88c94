// cheat: requests 300000 bytes of dynamic shared memory (H100/H200 allow at most 227 KB per block); the sandbox must report a launch failure (CUDA_ERROR_INVALID_VALUE).
// @kagent entry: layernorm
// @kagent grid: rows
// @kagent block: 256
// @kagent smem: 300000

extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
    // Would stage the whole row in shared memory (75000 floats) if it ever launched.
    extern __shared__ float buf[];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    __shared__ float stat[2];
    if (threadIdx.x == 0) {
        float s = 0.f;
        for (int c = 0; c < cols; ++c) { buf[c] = xr[c]; s += xr[c]; }
        const float mean = s / cols;
        float q = 0.f;
        for (int c = 0; c < cols; ++c) q += (buf[c] - mean) * (buf[c] - mean);
        stat[0] = mean;
        stat[1] = rsqrtf(q / cols + eps);
    }
    __syncthreads();
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = (buf[c] - stat[0]) * stat[1] * gamma[c] + beta[c];
}
