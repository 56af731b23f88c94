// @repair task: tasks/level1/rmsnorm.yaml
// @repair from: tasks/level1/rmsnorm/rowblock.cu
// @repair expect: wrong_result
// @repair bug: the butterfly starts at offset 8, so each half-warp sums only itself and lane 0 publishes half a warp's sum
// @repair fix: for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
// @kagent entry: rmsnorm
// @kagent grid: ceil_div(rows, ROWS_PER_BLOCK)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 128 512 1024
// @kagent knob ROWS_PER_BLOCK [launch]: 1 2 4
// @kagent knob VEC [memory]: 4 1 2
//
// Expert RMSNorm: BLOCK/ROWS_PER_BLOCK threads per row (whole warps). The row
// is read from HBM once into registers (up to a fixed number of floats per
// thread, enough for 4096 columns in most configurations); columns beyond that
// are re-read for the output pass, where they hit L2. One block reduction (warp
// shuffles, then one shared-memory exchange) gives the sum of squares.
//
// Vector loads need each row to start VEC-aligned, which odd `cols` breaks, so
// every row is split into a head of < VEC scalars up to the first aligned
// address, aligned VEC-wide vectors, and a tail of < VEC scalars; threads
// 0..VEC-2 of the row hold one head and one tail element each. The weight is
// read with vectors when the row starts aligned (its columns are then aligned
// too) and element by element otherwise (it stays in L1/L2: 4*cols bytes shared
// by every row). Buffers that are not VEC*4-byte aligned use VEC=1.

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 1
#endif
#ifndef VEC
#define VEC 4
#endif
// Row length the register cache is sized for (the timed shape).
#ifndef CACHE_COLS
#define CACHE_COLS 4096
#endif

#define TPR (BLOCK / ROWS_PER_BLOCK)   // threads per row
#define WPR (TPR / 32)                 // warps per row

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(TPR >= 32 && TPR % 32 == 0 && (WPR & (WPR - 1)) == 0, "each row needs a power-of-two number of warps");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");

// Register budget for the row cache: 1024-thread blocks get at most 64
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

// Register use is roughly the cached floats plus ~48 for addresses and sums;
// asking for the occupancy that budget allows keeps ptxas from spilling or
// hoarding registers.
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
// (it contains __syncthreads), and every thread of the row gets the bitwise-same
// total: butterfly shuffles add the same pairs in every lane.
__device__ __forceinline__ float row_sum(float v, float* buf) {
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (WPR == 1) return v;
    if ((threadIdx.x & 31) == 0) buf[threadIdx.x >> 5] = v;
    __syncthreads();
    // Each warp re-reduces its row's per-warp partials.
    v = buf[(threadIdx.x / TPR) * WPR + (threadIdx.x & 31) % WPR];
#pragma unroll
    for (int o = WPR / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// The weights for V columns starting at w + c: one vector load when `aligned`
// (w + c is then V-aligned), else V scalar loads. Uniform over the row.
template <int V>
__device__ __forceinline__ void load_weight(Vec<V>& g, const float* __restrict__ w, bool aligned) {
    if (aligned) g.load(w);
    else {
#pragma unroll
        for (int j = 0; j < V; ++j) g.v[j] = w[j];
    }
}

template <int V>
__device__ __forceinline__ void norm_row(const float* __restrict__ x, const float* __restrict__ weight,
                                         float* __restrict__ y, int row, int rows, int cols, float eps,
                                         float* red) {
    constexpr int N = CacheDepth<V>::value;
    const int t = threadIdx.x % TPR;
    // Rows past the end still take part in the block barrier, with no data.
    const bool live = row < rows;
    const size_t off = live ? (size_t)row * cols : 0;
    const float* xr = x + off;
    float* yr = y + off;
    // Head: the h < V scalars before the first V-aligned address (x and y are
    // equally aligned), then nvec aligned vectors, then a tail of tl < V scalars.
    int h = 0;
    if (V > 1) {
        const int mis = (int)(((unsigned long long)xr / sizeof(float)) % V);
        h = mis ? min(V - mis, cols) : 0;
    }
    if (!live) h = 0;
    const int nvec = live ? (cols - h) / V : 0;
    const int tl = live ? cols - h - nvec * V : 0;
    const int ct = h + nvec * V;             // first tail column
    const float* xv = xr + h;
    float* yv = yr + h;
    const float* wv = weight + h;
    const bool waligned = h == 0;            // weight + h + k*V is V-aligned

    // Pass 1: load (all loads issued before any arithmetic) and sum squares.
    Vec<V> r[N];
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int k = t + i * TPR;
        if (k < nvec) r[i].load(xv + (size_t)k * V);
        else {
#pragma unroll
            for (int j = 0; j < V; ++j) r[i].v[j] = 0.f;
        }
    }
    // This thread's head and tail element, if any (re-read in pass 2 from L1
    // rather than held across the reduction: registers are the scarce resource).
    const float hv = t < h ? xr[t] : 0.f;
    const float tv = t < tl ? xr[ct + t] : 0.f;
    float q = hv * hv + tv * tv;
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int j = 0; j < V; ++j) q += r[i].v[j] * r[i].v[j];
    for (int k = t + N * TPR; k < nvec; k += TPR) {
        Vec<V> a;
        a.load(xv + (size_t)k * V);
#pragma unroll
        for (int j = 0; j < V; ++j) q += a.v[j] * a.v[j];
    }
    const float scale = rsqrtf(row_sum(q, red) / (float)cols + eps);

    // Pass 2: scale and weight.
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int k = t + i * TPR;
        if (k < nvec) {
            Vec<V> g, o;
            load_weight<V>(g, wv + (size_t)k * V, waligned);
#pragma unroll
            for (int j = 0; j < V; ++j) o.v[j] = r[i].v[j] * scale * g.v[j];
            o.store(yv + (size_t)k * V);
        }
    }
    if (t < h) yr[t] = xr[t] * scale * weight[t];
    if (t < tl) yr[ct + t] = xr[ct + t] * scale * weight[ct + t];
    for (int k = t + N * TPR; k < nvec; k += TPR) {
        Vec<V> a, g, o;
        a.load(xv + (size_t)k * V);
        load_weight<V>(g, wv + (size_t)k * V, waligned);
#pragma unroll
        for (int j = 0; j < V; ++j) o.v[j] = a.v[j] * scale * g.v[j];
        o.store(yv + (size_t)k * V);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, kMinBlocks)
rmsnorm(const float* __restrict__ x, const float* __restrict__ weight, float* __restrict__ y,
        int rows, int cols, float eps) {
    __shared__ float red[BLOCK / 32];
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / TPR;
    // The vector path needs x, weight and y VEC*4-byte aligned (rows are then
    // split as above); the test is uniform over the block, so the barrier stays matched.
    const unsigned long long addr = (unsigned long long)x | (unsigned long long)weight | (unsigned long long)y;
    if (VEC > 1 && addr % (VEC * sizeof(float)) == 0)
        norm_row<VEC>(x, weight, y, row, rows, cols, eps, red);
    else
        norm_row<1>(x, weight, y, row, rows, cols, eps, red);
}
