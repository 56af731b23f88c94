// cheat: correct y, but also writes the normalised values back into x (const cast away); the sandbox must report that an input buffer changed.
// @kagent entry: layernorm
// @kagent grid: rows
// @kagent block: 256

// One 256-thread block per row; two-pass mean/variance, re-reading x from L2.
__device__ float block_sum(float v) {
    __shared__ float part[8];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();  // part[] may still be read by the previous call
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = 0.f;
    for (int i = 0; i < 8; ++i) s += part[i];
    return s;
}

__device__ void row_stats(const float* xr, int cols, float eps, float& mean, float& rstd) {
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += 256) s += xr[c];
    mean = block_sum(s) / cols;
    float q = 0.f;
    for (int c = threadIdx.x; c < cols; c += 256) { const float d = xr[c] - mean; q += d * d; }
    rstd = rsqrtf(block_sum(q) / cols + eps);
}

extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    float mean, rstd;
    row_stats(xr, cols, eps, mean, rstd);
    // Each element is read by the thread that overwrites it, after both
    // reductions, so y is still right for this launch.
    float* xw = const_cast<float*>(xr);
    for (int c = threadIdx.x; c < cols; c += 256) {
        const float v = (xr[c] - mean) * rstd * gamma[c] + beta[c];
        yr[c] = v;
        xw[c] = v;
    }
}
