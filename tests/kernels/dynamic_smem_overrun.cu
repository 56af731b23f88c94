// broken: keeps its warps' partial sums in dynamic shared memory (`extern __shared__`) but its launch asks for none (no `// @kagent smem:` line), so every store there is past the block's window; the sandbox must report a runtime error on the GPU (illegal address) and on the CPU emulator alike.
// @kagent entry: layernorm
// @kagent grid: rows
// @kagent block: 256

__device__ float block_sum(float v, float* part) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();  // part[] may still be read by the previous call
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = 0.f;
    for (int i = 0; i < 8; ++i) s += part[i];
    return s;
}

extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
    extern __shared__ float part[];  // 8 floats wanted; the launch gives 0 bytes
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += 256) s += xr[c];
    const float mean = block_sum(s, part) / cols;
    float q = 0.f;
    for (int c = threadIdx.x; c < cols; c += 256) q += (xr[c] - mean) * (xr[c] - mean);
    const float rstd = rsqrtf(block_sum(q, part) / cols + eps);
    for (int c = threadIdx.x; c < cols; c += 256) yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}
