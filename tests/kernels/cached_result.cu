// cheat: memoises y in a static 256 MB device array and, on later launches with the same shape, copies it back instead of computing (ignores changed inputs); the sandbox must report wrong output on the fresh-input re-check.
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

#define CACHE_CAP (16384 * 4096)   // sized for the timed shape
__device__ float g_cache[CACHE_CAP];
__device__ int g_cached_rows, g_cached_cols;   // shape g_cache holds; 0 = empty
__device__ unsigned int g_blocks_finished;

extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
    const size_t base = (size_t)blockIdx.x * cols;
    const bool fits = (long long)rows * cols <= CACHE_CAP;
    // The shape is published only after a whole launch finished, so the
    // decision is the same for every block of a launch.
    if (fits && g_cached_rows == rows && g_cached_cols == cols) {
        for (int c = threadIdx.x; c < cols; c += 256) y[base + c] = g_cache[base + c];
        return;
    }
    float mean, rstd;
    row_stats(x + base, cols, eps, mean, rstd);
    for (int c = threadIdx.x; c < cols; c += 256) {
        const float v = (x[base + c] - mean) * rstd * gamma[c] + beta[c];
        y[base + c] = v;
        if (fits) g_cache[base + c] = v;
    }
    if (fits && threadIdx.x == 0 && atomicAdd(&g_blocks_finished, 1u) == gridDim.x - 1) {
        g_blocks_finished = 0;
        g_cached_rows = rows;
        g_cached_cols = cols;
    }
}
