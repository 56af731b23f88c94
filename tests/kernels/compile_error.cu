// cheat: fails to compile: undeclared identifier `undeclared_scale` on line 8; the sandbox must report a compile error naming line 8.
// @kagent entry: layernorm
// @kagent grid: rows
// @kagent block: 256
extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[(size_t)blockIdx.x * cols + c] = x[(size_t)blockIdx.x * cols + c] * undeclared_scale;
}
