// @repair task: tasks/level1/layernorm.yaml
// @repair from: tasks/level1/layernorm/rowblock.cu
// @repair expect: wrong_result
// @repair bug: the variance divides by cols - 1 (unbiased) instead of cols (biased, as the reference); NaN at cols = 1
// @repair fix: rsqrtf(row_sum(q, red[1]) / (float)cols + eps)
// @kagent entry: layernorm
// @kagent grid: ceil_div(rows, ROWS_PER_BLOCK)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 128 512 1024
// @kagent knob VEC [memory]: 4 1 2
// @kagent knob ROWS_PER_BLOCK [launch]: 1 2 4
//
// Expert layernorm: BLOCK/ROWS_PER_BLOCK threads per row (>= one warp).
// The row is read from HBM exactly once into registers (up to a fixed number
// of floats per thread, enough for 4096 columns in most configurations); any
// columns beyond that are re-read in later passes, where they hit L1/L2.
// Mean and variance are computed in two passes over the cached values
// (sum, then sum of squared deviations), which stays accurate in fp32 for
// data with a large mean, unlike a single-pass sum/sum-of-squares.

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 1
#endif
// Row length the register cache is sized for (the timed shape).
#ifndef CACHE_COLS
#define CACHE_COLS 4096
#endif

#define TPR (BLOCK / ROWS_PER_BLOCK)   // threads per row
#define WPR (TPR / 32)                 // warps per row

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(TPR >= 32 && TPR % 32 == 0, "each row needs whole warps");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");

// Register budget for the row cache: 1024-thread blocks are limited to 64
// registers per thread, smaller blocks can afford more.
#define MAX_FLOATS (16384 / BLOCK < 16 ? 16 : (16384 / BLOCK > 64 ? 64 : 16384 / BLOCK))

// Number of V-wide vectors each thread keeps in registers.
template <int V> struct CacheDepth {
    enum {
        want = (CACHE_COLS + TPR * V - 1) / (TPR * V),
        cap = MAX_FLOATS / V,
        value = want < cap ? want : cap
    };
};

// Register use is roughly the cached floats plus ~48 for addresses, sums and
// gamma/beta; asking for the occupancy that budget allows stops ptxas from
// either spilling (too few registers) or hoarding them (too many).
constexpr int cmax(int a, int b) { return a > b ? a : b; }
constexpr int kCachedFloats = cmax(CacheDepth<VEC>::value * VEC, (int)CacheDepth<1>::value);
constexpr int kMinBlocks = cmax(1, 65536 / (BLOCK * (kCachedFloats + 48)));

template <int V> struct Vec;
template <> struct Vec<1> {
    float v[1];
    __device__ __forceinline__ void load(const float* p) { v[0] = *p; }
    __device__ __forceinline__ void store(float* p) const { __stcs(p, v[0]); }
};
template <> struct Vec<2> {
    float v[2];
    __device__ __forceinline__ void load(const float* p) {
        float2 t = *reinterpret_cast<const float2*>(p); v[0] = t.x; v[1] = t.y;
    }
    __device__ __forceinline__ void store(float* p) const {
        __stcs(reinterpret_cast<float2*>(p), make_float2(v[0], v[1]));
    }
};
template <> struct Vec<4> {
    float v[4];
    __device__ __forceinline__ void load(const float* p) {
        float4 t = *reinterpret_cast<const float4*>(p); v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
    }
    __device__ __forceinline__ void store(float* p) const {
        // Streaming store: y is never re-read, so keep L2 for x.
        __stcs(reinterpret_cast<float4*>(p), make_float4(v[0], v[1], v[2], v[3]));
    }
};

// Sum over the threads of one row. Every thread of the block must call it
// (it contains __syncthreads), and every thread gets the bitwise-same total:
// butterfly shuffles add the same pairs in every lane.
__device__ __forceinline__ float row_sum(float v, float* buf) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (WPR == 1) return v;
    if ((threadIdx.x & 31) == 0) buf[threadIdx.x >> 5] = v;
    __syncthreads();
    // Each warp re-reduces its row's per-warp partials.
    v = buf[(threadIdx.x / TPR) * WPR + (threadIdx.x & 31) % WPR];
#pragma unroll
    for (int o = WPR / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <int V>
__device__ __forceinline__ void norm_row(const float* __restrict__ x, const float* __restrict__ gamma,
                                         const float* __restrict__ beta, float* __restrict__ y,
                                         int row, int rows, int cols, float eps, float (*red)[BLOCK / 32]) {
    constexpr int N = CacheDepth<V>::value;
    const int t = threadIdx.x % TPR;
    // Rows past the end still take part in the block barriers, with no data.
    const int nvec = row < rows ? cols / V : 0;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;

    // Pass 1: load (all loads issued before any reduction) and sum.
    Vec<V> r[N];
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int k = t + i * TPR;
        if (k < nvec) r[i].load(xr + (size_t)k * V);
        else {
#pragma unroll
            for (int j = 0; j < V; ++j) r[i].v[j] = 0.f;
        }
    }
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int j = 0; j < V; ++j) s += r[i].v[j];
    for (int k = t + N * TPR; k < nvec; k += TPR) {
        Vec<V> a; a.load(xr + (size_t)k * V);
#pragma unroll
        for (int j = 0; j < V; ++j) s += a.v[j];
    }
    const float mean = row_sum(s, red[0]) / (float)cols;

    // Pass 2: squared deviations from the exact mean.
    float q = 0.f;
#pragma unroll
    for (int i = 0; i < N; ++i)
        if (t + i * TPR < nvec) {
#pragma unroll
            for (int j = 0; j < V; ++j) { const float d = r[i].v[j] - mean; q += d * d; }
        }
    for (int k = t + N * TPR; k < nvec; k += TPR) {
        Vec<V> a; a.load(xr + (size_t)k * V);
#pragma unroll
        for (int j = 0; j < V; ++j) { const float d = a.v[j] - mean; q += d * d; }
    }
    const float rstd = rsqrtf(row_sum(q, red[1]) / (float)(cols - 1) + eps);

    // Pass 3: normalise, scale, shift.
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int k = t + i * TPR;
        if (k < nvec) {
            Vec<V> g, b, o;
            g.load(gamma + (size_t)k * V);
            b.load(beta + (size_t)k * V);
#pragma unroll
            for (int j = 0; j < V; ++j) o.v[j] = (r[i].v[j] - mean) * rstd * g.v[j] + b.v[j];
            o.store(yr + (size_t)k * V);
        }
    }
    for (int k = t + N * TPR; k < nvec; k += TPR) {
        Vec<V> a, g, b, o;
        a.load(xr + (size_t)k * V);
        g.load(gamma + (size_t)k * V);
        b.load(beta + (size_t)k * V);
#pragma unroll
        for (int j = 0; j < V; ++j) o.v[j] = (a.v[j] - mean) * rstd * g.v[j] + b.v[j];
        o.store(yr + (size_t)k * V);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, kMinBlocks)
layernorm(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
          float* __restrict__ y, int rows, int cols, float eps) {
    __shared__ float red[2][BLOCK / 32];   // separate buffers: no barrier needed between the two sums
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / TPR;
    // Vector path only when every row start and every buffer is VEC-aligned;
    // the decision is uniform over the block, so the barriers stay matched.
    const unsigned long long addr = (unsigned long long)x | (unsigned long long)gamma |
                                    (unsigned long long)beta | (unsigned long long)y;
    if (VEC > 1 && cols % VEC == 0 && addr % (VEC * sizeof(float)) == 0)
        norm_row<VEC>(x, gamma, beta, y, row, rows, cols, eps, red);
    else
        norm_row<1>(x, gamma, beta, y, row, rows, cols, eps, red);
}
