// @kagent entry: masked_softmax
// @kagent grid: ceil_div(rows, ROWS_PER_BLOCK)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 128 512 1024
// @kagent knob VEC [memory]: 4 1 2
// @kagent knob ROWS_PER_BLOCK [launch]: 1 2 4
//
// Expert masked softmax: BLOCK/ROWS_PER_BLOCK threads per row (>= one warp).
// x and the byte mask are read from HBM exactly once; the masked logits
// z = mask ? x * scale * log2(e) : -inf are kept in registers (up to a fixed
// number per thread, enough for 4096 columns in most configurations; columns
// beyond that are re-read from L2 in later passes). A block-wide max, then
// exp2(z - max) overwrites z in place, a block-wide sum, and y = e / sum is
// written with streaming stores. Masked positions give exp2(-inf) = 0 exactly;
// a fully masked row (max = -inf) has sum 0 and writes zeros.

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

// Register use is roughly the cached floats, one mask word per cached vector,
// and ~40 for addresses and reductions; asking for the occupancy that budget
// allows stops ptxas from either spilling or hoarding registers.
constexpr int cmax(int a, int b) { return a > b ? a : b; }
constexpr int kCachedFloats = cmax(CacheDepth<VEC>::value * (VEC + 1), (int)CacheDepth<1>::value * 2);
constexpr int kMinBlocks = cmax(1, 65536 / (BLOCK * (kCachedFloats + 40)));

#define LOG2E 1.4426950408889634f

// V logits: z = mask ? x * scale2 : -inf (scale2 = scale * log2(e)).
template <int V> struct Logits { float v[V]; };

__device__ __forceinline__ Logits<1> load_logits(const float* xp, const unsigned char* mp, float scale2, Logits<1>*) {
    Logits<1> z;
    const float x = *xp;
    z.v[0] = *mp ? x * scale2 : -INFINITY;
    return z;
}
__device__ __forceinline__ Logits<2> load_logits(const float* xp, const unsigned char* mp, float scale2, Logits<2>*) {
    Logits<2> z;
    const float2 x = *reinterpret_cast<const float2*>(xp);
    const uchar2 m = *reinterpret_cast<const uchar2*>(mp);
    z.v[0] = m.x ? x.x * scale2 : -INFINITY;
    z.v[1] = m.y ? x.y * scale2 : -INFINITY;
    return z;
}
__device__ __forceinline__ Logits<4> load_logits(const float* xp, const unsigned char* mp, float scale2, Logits<4>*) {
    Logits<4> z;
    const float4 x = *reinterpret_cast<const float4*>(xp);
    const uchar4 m = *reinterpret_cast<const uchar4*>(mp);
    z.v[0] = m.x ? x.x * scale2 : -INFINITY;
    z.v[1] = m.y ? x.y * scale2 : -INFINITY;
    z.v[2] = m.z ? x.z * scale2 : -INFINITY;
    z.v[3] = m.w ? x.w * scale2 : -INFINITY;
    return z;
}
template <int V>
__device__ __forceinline__ Logits<V> logits(const float* xp, const unsigned char* mp, float scale2) {
    return load_logits(xp, mp, scale2, (Logits<V>*)nullptr);
}

// Streaming stores: y is never re-read, so keep L2 for the inputs.
__device__ __forceinline__ void store(float* p, const float (&o)[1]) { __stcs(p, o[0]); }
__device__ __forceinline__ void store(float* p, const float (&o)[2]) {
    __stcs(reinterpret_cast<float2*>(p), make_float2(o[0], o[1]));
}
__device__ __forceinline__ void store(float* p, const float (&o)[4]) {
    __stcs(reinterpret_cast<float4*>(p), make_float4(o[0], o[1], o[2], o[3]));
}

// Reductions over the threads of one row. Every thread of the block must call
// them (they contain __syncthreads), and every thread gets the bitwise-same
// result: butterfly shuffles combine the same pairs in every lane.
__device__ __forceinline__ float row_max(float v, float* buf) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (WPR == 1) return v;
    if ((threadIdx.x & 31) == 0) buf[threadIdx.x >> 5] = v;
    __syncthreads();
    v = buf[(threadIdx.x / TPR) * WPR + (threadIdx.x & 31) % WPR];
#pragma unroll
    for (int o = WPR / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float row_sum(float v, float* buf) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (WPR == 1) return v;
    if ((threadIdx.x & 31) == 0) buf[threadIdx.x >> 5] = v;
    __syncthreads();
    v = buf[(threadIdx.x / TPR) * WPR + (threadIdx.x & 31) % WPR];
#pragma unroll
    for (int o = WPR / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <int V>
__device__ __forceinline__ void softmax_row(const float* __restrict__ x, const unsigned char* __restrict__ mask,
                                            float* __restrict__ y, int row, int rows, int cols, float scale2,
                                            float (*red)[BLOCK / 32]) {
    constexpr int N = CacheDepth<V>::value;
    const int t = threadIdx.x % TPR;
    // Rows past the end still take part in the block barriers, with no data.
    const int nvec = row < rows ? cols / V : 0;
    const size_t base = (size_t)(row < rows ? row : 0) * cols;
    const float* xr = x + base;
    const unsigned char* mr = mask + base;
    float* yr = y + base;

    // Pass 1: load (all loads issued before any reduction) and take the max.
    Logits<V> z[N];
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int k = t + i * TPR;
        if (k < nvec) z[i] = logits<V>(xr + (size_t)k * V, mr + (size_t)k * V, scale2);
        else {
#pragma unroll
            for (int j = 0; j < V; ++j) z[i].v[j] = -INFINITY;
        }
    }
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int j = 0; j < V; ++j) m = fmaxf(m, z[i].v[j]);
    for (int k = t + N * TPR; k < nvec; k += TPR) {
        const Logits<V> a = logits<V>(xr + (size_t)k * V, mr + (size_t)k * V, scale2);
#pragma unroll
        for (int j = 0; j < V; ++j) m = fmaxf(m, a.v[j]);
    }
    m = row_max(m, red[0]);
    // A fully masked row has m = -inf: shift by 0 instead, so every exp2 is 0.
    if (m == -INFINITY) m = 0.0f;

    // Pass 2: exponentials (in place) and their sum.
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int j = 0; j < V; ++j) { z[i].v[j] = exp2f(z[i].v[j] - m); s += z[i].v[j]; }
    for (int k = t + N * TPR; k < nvec; k += TPR) {
        const Logits<V> a = logits<V>(xr + (size_t)k * V, mr + (size_t)k * V, scale2);
#pragma unroll
        for (int j = 0; j < V; ++j) s += exp2f(a.v[j] - m);
    }
    s = row_sum(s, red[1]);
    const float inv = s > 0.f ? 1.0f / s : 0.0f;

    // Pass 3: normalise and store.
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int k = t + i * TPR;
        if (k < nvec) {
            float o[V];
#pragma unroll
            for (int j = 0; j < V; ++j) o[j] = z[i].v[j] * inv;
            store(yr + (size_t)k * V, o);
        }
    }
    for (int k = t + N * TPR; k < nvec; k += TPR) {
        const Logits<V> a = logits<V>(xr + (size_t)k * V, mr + (size_t)k * V, scale2);
        float o[V];
#pragma unroll
        for (int j = 0; j < V; ++j) o[j] = exp2f(a.v[j] - m) * inv;
        store(yr + (size_t)k * V, o);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, kMinBlocks)
masked_softmax(const float* __restrict__ x, const unsigned char* __restrict__ mask, float* __restrict__ y,
               int rows, int cols, float scale) {
    __shared__ float red[2][BLOCK / 32];   // separate buffers: no barrier needed between max and sum
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / TPR;
    const float scale2 = scale * LOG2E;
    // Vector path only when every row start and every buffer is aligned for
    // VEC floats (x, y) and VEC bytes (mask); uniform over the block, so the
    // barriers stay matched.
    const unsigned long long faddr = (unsigned long long)x | (unsigned long long)y;
    const bool aligned = faddr % (VEC * sizeof(float)) == 0 && (unsigned long long)mask % VEC == 0;
    if (VEC > 1 && cols % VEC == 0 && aligned)
        softmax_row<VEC>(x, mask, y, row, rows, cols, scale2, red);
    else
        softmax_row<1>(x, mask, y, row, rows, cols, scale2, red);
}
