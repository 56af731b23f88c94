// @kagent entry: group_stats
// @kagent grid: N * G
// @kagent block: 256
// @kagent smem: 0
// @kagent params: x, stats, N, G, CG, H, W, eps
// @kagent entry: group_apply
// @kagent grid: ceil_div(N * G * CG * H * W, 256)
// @kagent block: 256
// @kagent smem: 0
// @kagent params: x, gamma, beta, stats, y, N, G, CG, H, W
// @kagent scratch stats: 2 * N * G float32
//
// Naive baseline in two kernels. group_stats: one block per (sample, group),
// whose CG * H * W values are contiguous; each thread sums a strided share,
// a shared-memory tree adds the shares, twice (the mean, then the squared
// deviations from it), and thread 0 stores the mean and 1 / sqrt(var + eps).
// group_apply: one thread per element normalises it with its group's
// statistics and its channel's gamma and beta. Slow: only N * G blocks (128
// at the timed size, one per SM) read the tensor twice, then it is read again.

extern "C" __global__ void group_stats(const float* x, float* stats, int N, int G, int CG, int H, int W, float eps) {
    __shared__ float buf[256];
    const int tid = threadIdx.x;
    const long long group = blockIdx.x;                    // n * G + g
    const long long count = (long long)CG * H * W;
    const float* xg = x + group * count;

    float s = 0.f;
    for (long long i = tid; i < count; i += blockDim.x) s += xg[i];
    buf[tid] = s;
    __syncthreads();
    for (int step = blockDim.x / 2; step > 0; step /= 2) {
        if (tid < step) buf[tid] += buf[tid + step];
        __syncthreads();
    }
    const float mean = buf[0] / count;
    __syncthreads();                                       // everyone has read buf[0]

    float q = 0.f;
    for (long long i = tid; i < count; i += blockDim.x) {
        const float d = xg[i] - mean;
        q += d * d;
    }
    buf[tid] = q;
    __syncthreads();
    for (int step = blockDim.x / 2; step > 0; step /= 2) {
        if (tid < step) buf[tid] += buf[tid + step];
        __syncthreads();
    }
    if (tid == 0) {
        stats[2 * group] = mean;
        stats[2 * group + 1] = 1.0f / sqrtf(buf[0] / count + eps);
    }
}

extern "C" __global__ void group_apply(const float* x, const float* gamma, const float* beta, const float* stats,
                                       float* y, int N, int G, int CG, int H, int W) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long hw = (long long)H * W;
    if (idx >= (long long)N * G * CG * hw) return;
    const long long group = idx / (CG * hw);               // n * G + g
    const int channel = (idx / hw) % ((long long)G * CG);   // g * CG + cg: the index into gamma and beta
    const float mean = stats[2 * group];
    const float rstd = stats[2 * group + 1];
    y[idx] = (x[idx] - mean) * rstd * gamma[channel] + beta[channel];
}
