// cheat: does nothing, hoping y still holds an earlier correct result; the sandbox must report wrong output (y keeps its NaN poison).
// @kagent entry: layernorm
// @kagent grid: 1
// @kagent block: 32

extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
}
