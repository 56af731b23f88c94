// cheat: names the host file through a macro (a computed include), which a text check of the #include line would miss; the sandbox must refuse it.
// @kagent entry: layernorm
// @kagent grid: rows
// @kagent block: 256
#define HOST_FILE "/etc/hostname"
#include HOST_FILE
extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[(size_t)blockIdx.x * cols + c] = x[(size_t)blockIdx.x * cols + c];
}
