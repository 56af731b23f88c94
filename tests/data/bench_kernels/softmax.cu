// @kagent entry: softmax
// @kagent grid: ceil_div(rows, 256)
// @kagent block: 256
// @kagent smem: 0
//
// DOES NOT COMPILE on purpose (bench fixture): `total` is never declared.

extern "C" __global__ void softmax(const float* x, float* y, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;

    float m = -INFINITY;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);

    float sum = 0.f;
    for (int c = 0; c < cols; ++c) sum += expf(xr[c] - m);

    for (int c = 0; c < cols; ++c) yr[c] = expf(xr[c] - m) / total;
}
