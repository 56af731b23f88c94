// @kagent entry: gelu
// @kagent grid: ceil_div(n, 256)
// @kagent block: 256
// @kagent smem: 0
//
// WRONG on purpose (bench fixture): the factor 0.5 of GELU is missing.

extern "C" __global__ void gelu(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = x[i];
        const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);  // sqrt(2/pi) * (x + 0.044715 x^3)
        y[i] = v * (1.0f + tanhf(u));
    }
}
