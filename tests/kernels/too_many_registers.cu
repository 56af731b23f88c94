// cheat: needs more registers than a 1024-thread block can get (> 64 per thread, 65536 per SM); the sandbox must report a launch failure (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES).
// @kagent entry: layernorm
// @kagent grid: rows
// @kagent block: 1024
//
// Each thread keeps KEEP values of its row in registers across the two
// statistics passes and the output pass. With no __launch_bounds__ ptxas is
// free to use up to 255 registers and keeps all KEEP floats live (~218
// registers with nvcc 13 for sm_90): 1024 x 218 > 65536, so no launch.

#define NT 1024
#define KEEP 96

__device__ float block_sum(float v) {
    __shared__ float part[NT / 32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = 0.f;
    for (int i = 0; i < NT / 32; ++i) s += part[i];
    return s;
}

extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    float v[KEEP];
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < KEEP; ++i) {
        const int c = threadIdx.x + i * NT;
        v[i] = c < cols ? xr[c] : 0.f;
        s += v[i];
    }
    for (int c = threadIdx.x + KEEP * NT; c < cols; c += NT) s += xr[c];
    const float mean = block_sum(s) / cols;
    float q = 0.f;
#pragma unroll
    for (int i = 0; i < KEEP; ++i)
        if (threadIdx.x + i * NT < cols) q += (v[i] - mean) * (v[i] - mean);
    for (int c = threadIdx.x + KEEP * NT; c < cols; c += NT) q += (xr[c] - mean) * (xr[c] - mean);
    const float rstd = rsqrtf(block_sum(q) / cols + eps);
#pragma unroll
    for (int i = 0; i < KEEP; ++i) {
        const int c = threadIdx.x + i * NT;
        if (c < cols) yr[c] = (v[i] - mean) * rstd * gamma[c] + beta[c];
    }
    for (int c = threadIdx.x + KEEP * NT; c < cols; c += NT) yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}
