// @repair task: tasks/level1/prefix_scan.yaml
// @repair from: tasks/level1/prefix_scan/blockscan.cu
// @repair expect: resource_error
// @repair bug: the smem directive sizes a segment per thread instead of per warp: 540672 bytes, over the 232448 a block may have on sm_90
// @repair fix: // @kagent smem: 4 * (BLOCK // 32) * 33 * ITEMS
// @kagent entry: prefix_scan
// @kagent grid: rows
// @kagent block: BLOCK
// @kagent smem: 4 * BLOCK * 33 * ITEMS
// @kagent knob BLOCK [launch]: 256 128 512 1024
// @kagent knob ITEMS [memory]: 16 8 4
// @kagent knob VEC [memory]: 4 1 2
//
// Expert row scan: one block per row, the row in tiles of BLOCK*ITEMS
// columns (one tile per row at the timed size with the defaults).
// Warp w owns the tile's w-th segment of 32*ITEMS columns:
// 1. coalesced VEC-wide loads (all issued before any arithmetic), written to
//    the warp's own shared-memory segment;
// 2. each lane reads ITEMS consecutive columns back (a warp transpose; one
//    pad float per 32 makes both directions free of bank conflicts), scans
//    them sequentially in registers, and a warp-shuffle scan of the lane
//    totals gives each lane its offset within the warp;
// 3. the warp totals go to shared memory (double-buffered by tile: one
//    __syncthreads per tile); each thread adds the totals of the warps before
//    it and the carry of earlier tiles, all summed in one fixed order, so the
//    block carry is bitwise the same in every thread;
// 4. the results go back through the warp's segment and out as coalesced
//    VEC-wide streaming stores.
// The vector path needs cols % VEC == 0 and aligned buffers; otherwise the
// same code runs with scalar global accesses. Columns past the end load as 0
// and are not stored.

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 16
#endif
#ifndef VEC
#define VEC 4
#endif

#define WARPS (BLOCK / 32)
#define SEG (32 * ITEMS)            // columns per warp per tile
#define SEG_PAD (33 * ITEMS)        // its shared-memory footprint: one pad float per 32
#define TILE_COLS (BLOCK * ITEMS)   // columns per tile

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
static_assert(ITEMS % VEC == 0, "ITEMS must be a multiple of VEC");

#define FULL 0xffffffffu

// Element i of a warp segment sits at ws[i + i / 32] (one pad float per 32).
// Both access patterns below add a compile-time offset to a per-lane base
// (V | 32 and ITEMS | 32, so no access crosses a 32-float row):
// - striped, element j*32*V + lane*V + e: j*33*V + (lane*V + lane*V/32) + e;
// - blocked, element lane*ITEMS + k: (lane*ITEMS + lane*ITEMS/32) + k.
static_assert(32 % ITEMS == 0, "ITEMS must divide 32");

template <int V> __device__ __forceinline__ void load_vec(float (&v)[V], const float* p);
template <> __device__ __forceinline__ void load_vec<1>(float (&v)[1], const float* p) { v[0] = __ldcs(p); }
template <> __device__ __forceinline__ void load_vec<2>(float (&v)[2], const float* p) {
    const float2 t = __ldcs(reinterpret_cast<const float2*>(p)); v[0] = t.x; v[1] = t.y;
}
template <> __device__ __forceinline__ void load_vec<4>(float (&v)[4], const float* p) {
    const float4 t = __ldcs(reinterpret_cast<const float4*>(p)); v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
}
template <int V> __device__ __forceinline__ void store_vec(float* p, const float (&v)[V]);
template <> __device__ __forceinline__ void store_vec<1>(float* p, const float (&v)[1]) { __stcs(p, v[0]); }
template <> __device__ __forceinline__ void store_vec<2>(float* p, const float (&v)[2]) {
    __stcs(reinterpret_cast<float2*>(p), make_float2(v[0], v[1]));
}
template <> __device__ __forceinline__ void store_vec<4>(float* p, const float (&v)[4]) {
    __stcs(reinterpret_cast<float4*>(p), make_float4(v[0], v[1], v[2], v[3]));
}

// Scan one row with V-wide global accesses (V == 1, or cols % V == 0 and aligned rows).
template <int V>
__device__ __forceinline__ void scan_row(const float* __restrict__ xr, float* __restrict__ yr, int cols,
                                         float* __restrict__ ws, float (*tot)[WARPS]) {
    constexpr int NV = ITEMS / V;   // V-wide accesses per lane per tile
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float* ws_striped = ws + lane * V + (lane * V >> 5);
    float* ws_blocked = ws + lane * ITEMS + (lane * ITEMS >> 5);
    float block_carry = 0.f;        // sum of all earlier tiles (uniform over the block)
    int parity = 0;
    for (int t0 = 0; t0 < cols; t0 += TILE_COLS) {
        // 1. Striped, coalesced loads: access j covers columns seg + j*32*V + [0, 32*V)
        // and this lane's part starts at column c0 + j*32*V. One base pointer and
        // one limit keep the per-access offsets compile-time constants.
        const int c0 = t0 + warp * SEG + lane * V;
        const int left = cols - c0;            // access j is in the row iff j*32*V < left
        const float* xs = xr + c0;             // (V | cols: a vector lies wholly in or out)
        float* ys = yr + c0;
        float r[NV][V];
#pragma unroll
        for (int j = 0; j < NV; ++j) {
            if (j * 32 * V < left) load_vec<V>(r[j], xs + j * 32 * V);
            else {
#pragma unroll
                for (int e = 0; e < V; ++e) r[j][e] = 0.f;
            }
        }
        __syncwarp();   // the previous tile's reads of ws are done
#pragma unroll
        for (int j = 0; j < NV; ++j)
#pragma unroll
            for (int e = 0; e < V; ++e) ws_striped[j * 33 * V + e] = r[j][e];
        __syncwarp();

        // 2. Blocked: lane owns segment elements lane*ITEMS + [0, ITEMS).
        float a[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) a[k] = ws_blocked[k];
#pragma unroll
        for (int k = 1; k < ITEMS; ++k) a[k] += a[k - 1];
        float inc = a[ITEMS - 1];
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const float n = __shfl_up_sync(FULL, inc, o);
            if (lane >= o) inc += n;
        }
        float excl = __shfl_up_sync(FULL, inc, 1);
        if (lane == 0) excl = 0.f;

        // 3. Block level. One barrier per tile: tile k+2 rewrites tot[parity]
        // only after every thread has passed tile k+1's barrier, i.e. after it
        // finished reading tot[parity] here.
        if (lane == 31) tot[parity][warp] = inc;   // the warp's total
        __syncthreads();
        float before = 0.f, total = 0.f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            if (w == warp) before = total;
            total += tot[parity][w];
        }
        const float base = (block_carry + before) + excl;

        // 4. Back through ws (every lane's reads of ws finished before the
        // barrier above) and out, striped and coalesced.
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) ws_blocked[k] = a[k] + base;
        __syncwarp();
#pragma unroll
        for (int j = 0; j < NV; ++j) {
            if (j * 32 * V < left) {
#pragma unroll
                for (int e = 0; e < V; ++e) r[j][e] = ws_striped[j * 33 * V + e];
                store_vec<V>(ys + j * 32 * V, r[j]);
            }
        }
        block_carry += total;
        parity ^= 1;
    }
}

// At least half occupancy by registers (<= 64 per thread).
extern "C" __global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
prefix_scan(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    extern __shared__ float segments[];   // WARPS * SEG_PAD floats (dynamic)
    __shared__ float tot[2][WARPS];
    const int row = blockIdx.x;   // grid == rows
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float* ws = segments + (threadIdx.x >> 5) * SEG_PAD;
    const unsigned long long addr = (unsigned long long)x | (unsigned long long)y;
    if (VEC > 1 && cols % VEC == 0 && addr % (VEC * sizeof(float)) == 0)
        scan_row<VEC>(xr, yr, cols, ws, tot);
    else
        scan_row<1>(xr, yr, cols, ws, tot);
}
