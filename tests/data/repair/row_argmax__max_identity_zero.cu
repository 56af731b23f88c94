// @repair task: tasks/level1/row_argmax.yaml
// @repair from: tasks/level1/row_argmax/rowblock.cu
// @repair expect: wrong_result
// @repair bug: a thread's best value starts at 0 instead of -INFINITY, so a row whose values are all negative gets index INT_MAX
// @repair fix: Best b = {-INFINITY, INT_MAX}; in thread_row_best
// @kagent entry: row_argmax
// @kagent grid: ceil_div(rows, ROWS_PER_BLOCK)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 128 512
// @kagent knob ROWS_PER_BLOCK [launch]: 1 2
// @kagent knob VEC [memory]: 4 1 2
// @kagent knob UNROLL [memory]: 4 1
//
// Expert row argmax: BLOCK/ROWS_PER_BLOCK threads (whole warps) per row.
// - Coalesced VEC-wide loads; each row is peeled to VEC alignment (scalar
//   head and tail of < VEC elements), so odd column counts keep the vector
//   path. UNROLL vector loads are issued before any compare.
// - Each thread keeps its best (value, index); warps merge pairs with
//   butterfly shuffles, then the row's first warp merges the per-warp pairs
//   from shared memory.
// - The merge order is a total order, numpy's: NaN above everything, then
//   larger value, then smaller index. So the result is the first index of
//   the maximum whatever order the pairs meet in (and is deterministic).

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 1
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef UNROLL
#define UNROLL 4
#endif

#define TPR (BLOCK / ROWS_PER_BLOCK)   // threads per row
#define WPR (TPR / 32)                 // warps per row

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(TPR >= 32 && TPR % 32 == 0 && (TPR & (TPR - 1)) == 0, "each row needs a power-of-two number of whole warps");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
static_assert(UNROLL >= 1, "UNROLL must be positive");

template <int V> struct Vec { float v[V]; };

template <int V> __device__ __forceinline__ Vec<V> load_vec(const float* p);
template <> __device__ __forceinline__ Vec<1> load_vec<1>(const float* p) {
    Vec<1> r; r.v[0] = __ldg(p); return r;
}
template <> __device__ __forceinline__ Vec<2> load_vec<2>(const float* p) {
    const float2 t = __ldg(reinterpret_cast<const float2*>(p));
    Vec<2> r; r.v[0] = t.x; r.v[1] = t.y; return r;
}
template <> __device__ __forceinline__ Vec<4> load_vec<4>(const float* p) {
    const float4 t = __ldg(reinterpret_cast<const float4*>(p));
    Vec<4> r; r.v[0] = t.x; r.v[1] = t.y; r.v[2] = t.z; r.v[3] = t.w; return r;
}

// Does (v, i) come before (bv, bi) in numpy's argmax order?
__device__ __forceinline__ bool better(float v, int i, float bv, int bi) {
    if (v != v) return bv == bv || i < bi;   // NaN beats numbers; the first NaN wins
    return v > bv || (v == bv && i < bi);    // a number never beats NaN (both compares false)
}

struct Best {
    float v;
    int i;
    __device__ __forceinline__ void offer(float ov, int oi) {
        if (better(ov, oi, v, i)) { v = ov; i = oi; }
    }
};

// This thread's best pair over its share (thread t of TPR) of xr[0..cols).
__device__ __forceinline__ Best thread_row_best(const float* __restrict__ xr, int cols, int t) {
    Best b = {0.f, INT_MAX};   // nothing seen yet
    int head = 0;
    if (VEC > 1) {
        const int mis = (int)(((unsigned long long)xr / sizeof(float)) % VEC);
        head = (VEC - mis) % VEC;
        if (head > cols) head = cols;
    }
    const int nvec = (cols - head) / VEC;
    const int tail = head + nvec * VEC;
    const float* body = xr + head;   // VEC-aligned

    if (t < head) b.offer(__ldg(xr + t), t);
    int k = t;
    for (; k + (UNROLL - 1) * TPR < nvec; k += UNROLL * TPR) {
        Vec<VEC> r[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) r[u] = load_vec<VEC>(body + (size_t)(k + u * TPR) * VEC);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int j = 0; j < VEC; ++j) b.offer(r[u].v[j], head + (k + u * TPR) * VEC + j);
    }
    for (; k < nvec; k += TPR) {
        const Vec<VEC> r = load_vec<VEC>(body + (size_t)k * VEC);
#pragma unroll
        for (int j = 0; j < VEC; ++j) b.offer(r.v[j], head + k * VEC + j);
    }
    if (tail + t < cols) b.offer(__ldg(xr + tail + t), tail + t);
    return b;
}

__device__ __forceinline__ Best warp_best(Best b) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, b.v, o);
        const int oi = __shfl_xor_sync(0xffffffffu, b.i, o);
        b.offer(ov, oi);
    }
    return b;
}

// At least half occupancy (<= 64 registers per thread).
extern "C" __global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
row_argmax(const float* __restrict__ x, int* __restrict__ idx, int rows, int cols) {
    __shared__ float wv[BLOCK / 32];
    __shared__ int wi[BLOCK / 32];
    const int rib = threadIdx.x / TPR;   // row in block
    const int t = threadIdx.x % TPR;
    const int row = blockIdx.x * ROWS_PER_BLOCK + rib;
    Best b = {-INFINITY, INT_MAX};
    // Rows past the end still take part in the barrier, with no data.
    if (row < rows) b = thread_row_best(x + (size_t)row * cols, cols, t);
    b = warp_best(b);
    if (WPR > 1) {
        if ((threadIdx.x & 31) == 0) { wv[threadIdx.x >> 5] = b.v; wi[threadIdx.x >> 5] = b.i; }
        __syncthreads();
        if (t < 32) {   // the row's first warp merges its WPR pairs
            if (t < WPR) { b.v = wv[rib * WPR + t]; b.i = wi[rib * WPR + t]; }
            else { b.v = -INFINITY; b.i = INT_MAX; }
            b = warp_best(b);
        }
    }
    if (row < rows && t == 0) idx[row] = b.i;
}
