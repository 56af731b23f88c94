// @kagent entry: attention
// @kagent grid: ceil_div(seq, 128)
// @kagent block: 128
// @kagent smem: 0
//
// Naive baseline: one thread per query row, straight from global memory.
// Pass 1 walks all keys keeping a running max and sum of exponentials; pass 2
// recomputes every score and adds p * v[key] into the output row in global
// memory (any d works, no per-thread array). Correct but slow: few threads,
// every score computed twice, no reuse of k or v across queries.

extern "C" __global__ void attention(const float* q, const float* k, const float* v, float* out, int seq, int d) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= seq) return;
    const float scale = 1.0f / sqrtf((float)d);
    const float* qr = q + (size_t)row * d;
    float* orow = out + (size_t)row * d;

    // Pass 1: max and sum of exp(score - max), updated online.
    float m = -INFINITY, l = 0.0f;
    for (int j = 0; j < seq; ++j) {
        float s = 0.0f;
        for (int c = 0; c < d; ++c) s += qr[c] * k[(size_t)j * d + c];
        s *= scale;
        if (s > m) {
            l = l * expf(m - s) + 1.0f;   // first key: expf(-inf) = 0
            m = s;
        } else {
            l += expf(s - m);
        }
    }

    // Pass 2: out = sum_j softmax_j * v[j].
    for (int c = 0; c < d; ++c) orow[c] = 0.0f;
    for (int j = 0; j < seq; ++j) {
        float s = 0.0f;
        for (int c = 0; c < d; ++c) s += qr[c] * k[(size_t)j * d + c];
        s *= scale;
        const float p = expf(s - m) / l;
        for (int c = 0; c < d; ++c) orow[c] += p * v[(size_t)j * d + c];
    }
}
