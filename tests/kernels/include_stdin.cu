// cheat: includes /dev/stdin, which blocks a compile forever; the sandbox must refuse it (at once) before NVRTC runs.
// @kagent entry: layernorm
// @kagent grid: rows
// @kagent block: 256
#include "/dev/stdin"
extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[(size_t)blockIdx.x * cols + c] = x[(size_t)blockIdx.x * cols + c];
}
