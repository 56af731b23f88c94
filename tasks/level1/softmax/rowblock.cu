// @kagent entry: softmax
// @kagent grid: ceil_div(rows, ROWS_PER_BLOCK)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 128 512
// @kagent knob ROWS_PER_BLOCK [launch]: 1 2
// @kagent knob VEC [memory]: 4 1 2
// @kagent knob ONLINE [reduction]: 1 0
//
// Expert softmax: BLOCK/ROWS_PER_BLOCK threads per row (whole warps; with
// BLOCK=128 and ROWS_PER_BLOCK=4 that is a warp per row, reduced with shuffles
// only). The row is read from HBM once into registers (up to a fixed number of
// floats per thread, enough for 4096 columns in most configurations); columns
// beyond that are re-read in later passes, where they hit L2.
//
// ONLINE=1: each thread keeps (max m, sum s of exp(x - m)) over its values and a
//   single block reduction merges the pairs (m, s) + (m', s') ->
//   (M, s e^(m-M) + s' e^(m'-M)); outputs are exp(x - m) * (e^(m-M) / S), so each
//   element costs one expf and the uncached columns are read twice, not three times.
// ONLINE=0: two block reductions, the row max then the sum of exp(x - max).
//
// Vector loads need each row to start VEC-aligned, which odd `cols` breaks, so
// every row is split into a head of < VEC scalars up to the first aligned
// address, aligned VEC-wide vectors, and a tail of < VEC scalars; threads
// 0..VEC-2 of the row hold one head and one tail element each. Odd sizes thus
// use the vector path too; buffers that are not VEC*4-byte aligned use VEC=1.

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 1
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef ONLINE
#define ONLINE 1
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
static_assert(ONLINE == 0 || ONLINE == 1, "ONLINE must be 0 or 1");

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

// Running (max, sum of exp(x - max)); m = -inf means "no elements yet" (s = 0).
struct MaxSum { float m, s; };

// Merge two partial states. Symmetric in its arguments bit for bit (fmaxf and
// + commute), so butterfly shuffles leave the same total in every lane.
__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return {m, 0.f};
    return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

// Reductions over the threads of one row. Every thread of the block must call
// them (they contain __syncthreads) and every thread of the row gets the same
// result. Each call site passes its own shared buffer, so no barrier is needed
// between two reductions.
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

__device__ __forceinline__ MaxSum shfl_merge(MaxSum a, int o) {
    MaxSum b;
    b.m = __shfl_xor_sync(0xffffffffu, a.m, o);
    b.s = __shfl_xor_sync(0xffffffffu, a.s, o);
    return merge(a, b);
}

__device__ __forceinline__ MaxSum row_maxsum(MaxSum v, float* bm, float* bs) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = shfl_merge(v, o);
    if (WPR == 1) return v;
    if ((threadIdx.x & 31) == 0) { bm[threadIdx.x >> 5] = v.m; bs[threadIdx.x >> 5] = v.s; }
    __syncthreads();
    const int i = (threadIdx.x / TPR) * WPR + (threadIdx.x & 31) % WPR;
    v.m = bm[i];
    v.s = bs[i];
#pragma unroll
    for (int o = WPR / 2; o > 0; o >>= 1) v = shfl_merge(v, o);
    return v;
}

template <int V>
__device__ __forceinline__ void softmax_row(const float* __restrict__ x, float* __restrict__ y,
                                            int row, int rows, int cols, float (*red)[BLOCK / 32]) {
    constexpr int N = CacheDepth<V>::value;
    const int t = threadIdx.x % TPR;
    // Rows past the end still take part in the block barriers, with no data.
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
    const float* xv = xr + h;
    float* yv = yr + h;

    // Load this thread's cached part of the row; missing slots hold -inf, whose
    // exp is 0, so the sums need no masks.
    Vec<V> r[N];
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int k = t + i * TPR;
        if (k < nvec) r[i].load(xv + (size_t)k * V);
        else {
#pragma unroll
            for (int j = 0; j < V; ++j) r[i].v[j] = -INFINITY;
        }
    }
    // This thread's head and tail element, if any (re-read from L1 for the
    // output rather than held across the reduction: registers are scarce).
    const int ct = h + nvec * V;             // first tail column
    float hv = t < h ? xr[t] : -INFINITY;
    float tv = t < tl ? xr[ct + t] : -INFINITY;

    float mc = fmaxf(hv, tv);                // max over the cached values
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int j = 0; j < V; ++j) mc = fmaxf(mc, r[i].v[j]);

#if ONLINE
    // Cached values become exp(x - mc); a thread with none keeps -inf -> 0.
    const float mref = mc == -INFINITY ? 0.f : mc;
    hv = expf(hv - mref);
    tv = expf(tv - mref);
    float sc = hv + tv;
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int j = 0; j < V; ++j) { r[i].v[j] = expf(r[i].v[j] - mref); sc += r[i].v[j]; }
    // Uncached columns: online update of (mo, so).
    MaxSum o = {-INFINITY, 0.f};
    for (int k = t + N * TPR; k < nvec; k += TPR) {
        Vec<V> a;
        a.load(xv + (size_t)k * V);
        float am = a.v[0];
#pragma unroll
        for (int j = 1; j < V; ++j) am = fmaxf(am, a.v[j]);
        const float mn = fmaxf(o.m, am);     // finite: a holds real data
        float s = o.s * expf(o.m - mn);      // expf(-inf) = 0 on the first vector
#pragma unroll
        for (int j = 0; j < V; ++j) s += expf(a.v[j] - mn);
        o = {mn, s};
    }
    const MaxSum tot = row_maxsum(merge({mc, sc}, o), red[0], red[1]);
    const float M = tot.m;
    const float inv = 1.0f / tot.s;
    const float scale = expf(mref - M) * inv;   // turns exp(x - mc) into the output
    const float base = mref;                    // cached values are exp(x - base)
#else
    float m = mc;
    for (int k = t + N * TPR; k < nvec; k += TPR) {
        Vec<V> a;
        a.load(xv + (size_t)k * V);
#pragma unroll
        for (int j = 0; j < V; ++j) m = fmaxf(m, a.v[j]);
    }
    const float M = row_max(m, red[0]);
    hv = expf(hv - M);
    tv = expf(tv - M);
    float s = hv + tv;
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int j = 0; j < V; ++j) { r[i].v[j] = expf(r[i].v[j] - M); s += r[i].v[j]; }
    for (int k = t + N * TPR; k < nvec; k += TPR) {
        Vec<V> a;
        a.load(xv + (size_t)k * V);
#pragma unroll
        for (int j = 0; j < V; ++j) s += expf(a.v[j] - M);
    }
    const float inv = 1.0f / row_sum(s, red[1]);
    const float scale = inv;
    const float base = M;
#endif

    // Write: cached values times `scale`, uncached ones recomputed.
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int k = t + i * TPR;
        if (k < nvec) {
            Vec<V> out;
#pragma unroll
            for (int j = 0; j < V; ++j) out.v[j] = r[i].v[j] * scale;
            out.store(yv + (size_t)k * V);
        }
    }
    if (t < h) yr[t] = expf(xr[t] - base) * scale;
    if (t < tl) yr[ct + t] = expf(xr[ct + t] - base) * scale;
    for (int k = t + N * TPR; k < nvec; k += TPR) {
        Vec<V> a, out;
        a.load(xv + (size_t)k * V);
#pragma unroll
        for (int j = 0; j < V; ++j) out.v[j] = expf(a.v[j] - M) * inv;
        out.store(yv + (size_t)k * V);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, kMinBlocks)
softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    __shared__ float red[2][BLOCK / 32];   // one buffer per reduction: no barrier between them
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / TPR;
    // The vector path needs x and y VEC*4-byte aligned (rows are then split as
    // above); the test is uniform over the block, so the barriers stay matched.
    const unsigned long long addr = (unsigned long long)x | (unsigned long long)y;
    if (VEC > 1 && addr % (VEC * sizeof(float)) == 0)
        softmax_row<VEC>(x, y, row, rows, cols, red);
    else
        softmax_row<1>(x, y, row, rows, cols, red);
}
