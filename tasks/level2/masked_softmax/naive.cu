// @kagent entry: masked_softmax
// @kagent grid: ceil_div(rows, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per row, three sequential passes over the row
// (max, sum of exponentials, normalise). Masked positions (mask byte 0) output
// 0; a fully masked row outputs zeros. Correct but slow: neighbouring threads
// touch addresses `cols` elements apart, so no load or store is coalesced.

extern "C" __global__ void masked_softmax(const float* x, const unsigned char* mask, float* y, int rows,
                                          int cols, float scale) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    const unsigned char* mr = mask + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;

    float m = -INFINITY;
    for (int c = 0; c < cols; ++c)
        if (mr[c]) m = fmaxf(m, xr[c] * scale);

    if (m == -INFINITY) {   // nothing kept in this row
        for (int c = 0; c < cols; ++c) yr[c] = 0.0f;
        return;
    }

    float sum = 0.f;
    for (int c = 0; c < cols; ++c)
        if (mr[c]) sum += expf(xr[c] * scale - m);

    for (int c = 0; c < cols; ++c)
        yr[c] = mr[c] ? expf(xr[c] * scale - m) / sum : 0.0f;
}
