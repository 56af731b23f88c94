// cheat: writes 0 to every y element; the sandbox must report wrong output (mismatch vs reference).
// @kagent entry: layernorm
// @kagent grid: rows
// @kagent block: 256

extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
    float* yr = y + (size_t)blockIdx.x * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = 0.f;
}
