// @repair task: tasks/level1/row_sum.yaml
// @repair from: tasks/level1/row_sum/rowblock.cu
// @repair expect: runtime_error
// @repair bug: the scalar head that peels each row to VEC alignment is gone (head = 0): rows of odd length start misaligned and the float4 load faults
// @repair fix: head = (VEC - (xr / 4) % VEC) % VEC, capped at cols, when VEC > 1
// @kagent entry: row_sum
// @kagent grid: ceil_div(rows, ROWS_PER_BLOCK)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 128 512
// @kagent knob ROWS_PER_BLOCK [launch]: 1 2
// @kagent knob VEC [memory]: 4 1
// @kagent knob UNROLL [memory]: 4 1
// @kagent knob SHFL [reduction]: 1 0
//
// Expert row sum: BLOCK/ROWS_PER_BLOCK threads (whole warps) per row.
// - Loads are coalesced and VEC wide. Each row is peeled to VEC alignment
//   (a scalar head of < VEC elements, a vector body, a scalar tail of
//   < VEC elements), so odd column counts keep the vector path.
// - UNROLL independent vector loads are issued before any add (two add
//   chains), to keep enough bytes in flight per thread.
// - SHFL=1: warp-shuffle reduction, then one shuffle pass over the per-warp
//   partials; SHFL=0: classic shared-memory tree (__syncthreads while the
//   stride spans warps, __syncwarp inside the last warp).
// The summation order is fixed, so results are bitwise reproducible.

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
#ifndef SHFL
#define SHFL 1
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

// This thread's share (thread t of TPR) of the sum of xr[0..cols).
__device__ __forceinline__ float thread_row_sum(const float* __restrict__ xr, int cols, int t) {
    const int head = 0;
    const int nvec = (cols - head) / VEC;
    const int tail = head + nvec * VEC;         // first element of the scalar tail
    const float* body = xr + head;              // VEC-aligned

    float s = 0.f;
    if (t < head) s = __ldg(xr + t);            // head < VEC <= TPR
    if (tail + t < cols) s += __ldg(xr + tail + t);  // cols - tail < VEC <= TPR

    float acc[2] = {0.f, 0.f};   // two add chains: enough, and keeps registers for loads
    int k = t;
    for (; k + (UNROLL - 1) * TPR < nvec; k += UNROLL * TPR) {
        Vec<VEC> r[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) r[u] = load_vec<VEC>(body + (size_t)(k + u * TPR) * VEC);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int j = 0; j < VEC; ++j) acc[u & 1] += r[u].v[j];
    }
    for (; k < nvec; k += TPR) {
        const Vec<VEC> r = load_vec<VEC>(body + (size_t)k * VEC);
#pragma unroll
        for (int j = 0; j < VEC; ++j) acc[0] += r.v[j];
    }
    return s + (acc[0] + acc[1]);
}

// Sum over the TPR threads of row `rib` of the block. Every thread of the
// block must call it (barriers); the total is valid in thread t == 0.
__device__ __forceinline__ float row_reduce(float s, float* buf, int rib, int t) {
#if SHFL
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (WPR == 1) return s;
    if ((threadIdx.x & 31) == 0) buf[threadIdx.x >> 5] = s;
    __syncthreads();
    if (t < 32) {   // the row's first warp folds its WPR partials
        s = t < WPR ? buf[rib * WPR + t] : 0.f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    }
    return s;
#else
    float* seg = buf + rib * TPR;
    seg[t] = s;
    __syncthreads();
#pragma unroll
    for (int st = TPR / 2; st >= 32; st >>= 1) {
        if (t < st) seg[t] += seg[t + st];
        __syncthreads();
    }
    if (t < 32) {   // one whole warp: lanes t < st write seg[t], read seg[t + st] (never written this step)
#pragma unroll
        for (int st = 16; st > 0; st >>= 1) {
            if (t < st) seg[t] += seg[t + st];
            __syncwarp();
        }
    }
    return t == 0 ? seg[0] : 0.f;   // only the row's thread 0 may read: warp 0 wrote it
#endif
}

// At least half occupancy (<= 64 registers); without a minimum, ptxas caps
// 1024-thread blocks at 32 registers and spills.
extern "C" __global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
row_sum(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    __shared__ float buf[SHFL ? BLOCK / 32 : BLOCK];
    const int rib = threadIdx.x / TPR;   // row in block
    const int t = threadIdx.x % TPR;
    const int row = blockIdx.x * ROWS_PER_BLOCK + rib;
    // Rows past the end still take part in the barriers, with no data.
    float s = 0.f;
    if (row < rows) s = thread_row_sum(x + (size_t)row * cols, cols, t);
    s = row_reduce(s, buf, rib, t);
    if (row < rows && t == 0) y[row] = s;
}
