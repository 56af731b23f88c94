// @skeleton name: row_scan
// @skeleton summary: an inclusive scan (cumsum, cumprod, cummax) along each contiguous row: one block a row in tiles of BLOCK*ITEMS columns, VEC-wide coalesced loads and streaming stores, a warp transpose through padded shared memory, a sequential scan in registers, a warp-shuffle scan and a fixed-order block carry
// @skeleton families: rowwise
// @skeleton fits: the output is float32 ROWS x COLS, element (row, col) the inclusive scan (with an associative combine) of the values v(row, k), k <= col, where v is computed from a float32 input of ROWS x COLS at the same index (and other inputs at that index, e.g. a mask)
// @skeleton needs: cumsum cumprod cummax cummin cumulative accumulate scan
// @skeleton slot ROWS [dim]: the number of rows scanned, over the task's dims, e.g. `rows` (`B * H` for a 3-D tensor scanned along its last axis)
// @skeleton slot COLS [dim]: the length of each row, the scanned axis, e.g. `cols`
// @skeleton slot IN [expr]: `const float*`: the float32 input of ROWS * COLS elements read at every element, e.g. `x`
// @skeleton slot OUT [expr]: `float*`: the float32 output of ROWS * COLS elements, e.g. `y`
// @skeleton slot IDENTITY [expr]: `float`: the combine's neutral value, e.g. `0.f` (sum), `1.f` (product), `-INFINITY` (max)
// @skeleton slot LOAD [body]: `float load(PARAMS, long long i, float v)`: v is IN[i], i the flat index row * COLS + col; return the value scanned at i, e.g. `return v;` (cumsum, cumprod), `return mask[i] ? v : 0.f;` (masked, mask), `return v * v;` (squares)
// @skeleton slot COMBINE [body]: `float combine(PARAMS, float a, float b)`: an associative combine of a (earlier columns) and b (later ones), e.g. `return a + b;` (cumsum), `return a * b;` (cumprod), `return fmaxf(a, b);` (cummax)
// @kagent entry: kagent_row_scan
// @kagent grid: {{ROWS}}
// @kagent block: BLOCK
// @kagent smem: 4 * (BLOCK // 32) * 33 * ITEMS
// @kagent knob BLOCK [launch]: 256 128 512 1024
// @kagent knob ITEMS [memory]: 16 8 4
// @kagent knob VEC [memory]: 4 1 2
//
// Skeleton `row_scan` (kernel_agent/skeletons/row_scan.cu), the structure of the expert
// tasks/level1/prefix_scan/blockscan.cu with the values and the combine made slots. One block a
// row, the row in tiles of BLOCK*ITEMS columns; warp w owns the tile's w-th segment of 32*ITEMS:
// 1. coalesced VEC-wide loads of IN (all issued before any arithmetic), each value passed through
//    LOAD at its flat index, written to the warp's own shared-memory segment (columns past the
//    end hold IDENTITY);
// 2. each lane reads ITEMS consecutive columns back (a warp transpose; one pad float per 32 makes
//    both directions free of bank conflicts), scans them in registers, and a warp-shuffle scan of
//    the lane totals gives each lane the combine of the lanes before it;
// 3. the warp totals go to shared memory (double-buffered by tile: one __syncthreads a tile);
//    each thread combines the totals of the warps before it and the carry of earlier tiles in one
//    fixed order, so the block carry is bitwise the same in every thread;
// 4. the results go back through the warp's segment and out as coalesced VEC-wide streaming stores.
// The vector path needs COLS % VEC == 0 and VEC-aligned IN and OUT; otherwise the same code runs
// with scalar global accesses.

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 16
#endif
#ifndef VEC
#define VEC 4
#endif

#define KG_WARPS (BLOCK / 32)
#define KG_SEG (32 * ITEMS)            // columns a warp a tile
#define KG_SEG_PAD (33 * ITEMS)        // its shared-memory footprint: one pad float per 32
#define KG_TILE_COLS (BLOCK * ITEMS)   // columns a tile

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
static_assert(ITEMS % VEC == 0, "ITEMS must be a multiple of VEC");
// Element i of a warp segment sits at ws[i + i / 32] (one pad float per 32). Both access patterns
// add a compile-time offset to a per-lane base (VEC | 32 and ITEMS | 32, so no access crosses a
// 32-float row): striped, element j*32*V + lane*V + e: j*33*V + (lane*V + lane*V/32) + e;
// blocked, element lane*ITEMS + k: (lane*ITEMS + lane*ITEMS/32) + k.
static_assert(32 % ITEMS == 0, "ITEMS must divide 32");

__device__ __forceinline__ float kagent_load({{params}}, long long i, float v) {
    {{LOAD}}
}

__device__ __forceinline__ float kagent_combine({{params}}, float a, float b) {
    {{COMBINE}}
}

template <int kg_v> __device__ __forceinline__ void kagent_load_vec(float (&kg_r)[kg_v], const float* kg_p);
template <> __device__ __forceinline__ void kagent_load_vec<1>(float (&kg_r)[1], const float* kg_p) {
    kg_r[0] = __ldcs(kg_p);
}
template <> __device__ __forceinline__ void kagent_load_vec<2>(float (&kg_r)[2], const float* kg_p) {
    const float2 kg_t = __ldcs(reinterpret_cast<const float2*>(kg_p)); kg_r[0] = kg_t.x; kg_r[1] = kg_t.y;
}
template <> __device__ __forceinline__ void kagent_load_vec<4>(float (&kg_r)[4], const float* kg_p) {
    const float4 kg_t = __ldcs(reinterpret_cast<const float4*>(kg_p));
    kg_r[0] = kg_t.x; kg_r[1] = kg_t.y; kg_r[2] = kg_t.z; kg_r[3] = kg_t.w;
}
template <int kg_v> __device__ __forceinline__ void kagent_store_vec(float* kg_p, const float (&kg_r)[kg_v]);
template <> __device__ __forceinline__ void kagent_store_vec<1>(float* kg_p, const float (&kg_r)[1]) {
    __stcs(kg_p, kg_r[0]);
}
template <> __device__ __forceinline__ void kagent_store_vec<2>(float* kg_p, const float (&kg_r)[2]) {
    __stcs(reinterpret_cast<float2*>(kg_p), make_float2(kg_r[0], kg_r[1]));
}
template <> __device__ __forceinline__ void kagent_store_vec<4>(float* kg_p, const float (&kg_r)[4]) {
    __stcs(reinterpret_cast<float4*>(kg_p), make_float4(kg_r[0], kg_r[1], kg_r[2], kg_r[3]));
}

// Scan row kg_row with V-wide global accesses (V == 1, or COLS % V == 0 and aligned buffers).
template <int kg_V>
__device__ __forceinline__ void kagent_scan_row({{params}}, const float* __restrict__ kg_in,
                                                float* __restrict__ kg_out, long long kg_row, int kg_cols,
                                                float* __restrict__ kg_ws, float (*kg_tot)[KG_WARPS]) {
    constexpr int kg_nv = ITEMS / kg_V;   // V-wide accesses a lane a tile
    const int kg_lane = threadIdx.x & 31, kg_warp = threadIdx.x >> 5;
    const long long kg_row0 = kg_row * kg_cols;   // flat index of the row's first element
    float* kg_ws_striped = kg_ws + kg_lane * kg_V + (kg_lane * kg_V >> 5);
    float* kg_ws_blocked = kg_ws + kg_lane * ITEMS + (kg_lane * ITEMS >> 5);
    float kg_carry = {{IDENTITY}};   // the combine of all earlier tiles (uniform over the block)
    int kg_parity = 0;
    for (int kg_t0 = 0; kg_t0 < kg_cols; kg_t0 += KG_TILE_COLS) {
        // 1. Striped, coalesced loads: access j covers columns seg + j*32*V + [0, 32*V); this
        // lane's part starts at column c0 + j*32*V (V | COLS: a vector lies wholly in or out).
        const int kg_c0 = kg_t0 + kg_warp * KG_SEG + kg_lane * kg_V;
        const int kg_left = kg_cols - kg_c0;   // access j is in the row iff j*32*V < left
        const long long kg_i0 = kg_row0 + kg_c0;   // flat index of this lane's first column
        const float* kg_xs = kg_in + kg_i0;
        float* kg_ys = kg_out + kg_i0;
        float kg_r[kg_nv][kg_V];
#pragma unroll
        for (int kg_j = 0; kg_j < kg_nv; ++kg_j) {
            if (kg_j * 32 * kg_V < kg_left) kagent_load_vec<kg_V>(kg_r[kg_j], kg_xs + kg_j * 32 * kg_V);
            else {
#pragma unroll
                for (int kg_e = 0; kg_e < kg_V; ++kg_e) kg_r[kg_j][kg_e] = {{IDENTITY}};
            }
        }
#pragma unroll
        for (int kg_j = 0; kg_j < kg_nv; ++kg_j) {
            if (kg_j * 32 * kg_V < kg_left) {
#pragma unroll
                for (int kg_e = 0; kg_e < kg_V; ++kg_e)
                    kg_r[kg_j][kg_e] = kagent_load({{args}}, kg_i0 + kg_j * 32 * kg_V + kg_e, kg_r[kg_j][kg_e]);
            }
        }
        __syncwarp();   // the previous tile's reads of ws are done
#pragma unroll
        for (int kg_j = 0; kg_j < kg_nv; ++kg_j)
#pragma unroll
            for (int kg_e = 0; kg_e < kg_V; ++kg_e) kg_ws_striped[kg_j * 33 * kg_V + kg_e] = kg_r[kg_j][kg_e];
        __syncwarp();

        // 2. Blocked: the lane owns segment elements lane*ITEMS + [0, ITEMS).
        float kg_a[ITEMS];
#pragma unroll
        for (int kg_k = 0; kg_k < ITEMS; ++kg_k) kg_a[kg_k] = kg_ws_blocked[kg_k];
#pragma unroll
        for (int kg_k = 1; kg_k < ITEMS; ++kg_k) kg_a[kg_k] = kagent_combine({{args}}, kg_a[kg_k - 1], kg_a[kg_k]);
        float kg_inc = kg_a[ITEMS - 1];   // after the scan: the combine of lanes 0..lane
#pragma unroll
        for (int kg_o = 1; kg_o < 32; kg_o <<= 1) {
            const float kg_n = __shfl_up_sync(0xffffffffu, kg_inc, kg_o);
            if (kg_lane >= kg_o) kg_inc = kagent_combine({{args}}, kg_n, kg_inc);
        }
        float kg_excl = __shfl_up_sync(0xffffffffu, kg_inc, 1);   // lanes 0..lane-1
        if (kg_lane == 0) kg_excl = {{IDENTITY}};

        // 3. Block level. One barrier a tile: tile k+2 rewrites tot[parity] only after every
        // thread has passed tile k+1's barrier, i.e. after it finished reading tot[parity] here.
        if (kg_lane == 31) kg_tot[kg_parity][kg_warp] = kg_inc;   // the warp's total
        __syncthreads();
        float kg_before = {{IDENTITY}}, kg_total = {{IDENTITY}};
#pragma unroll
        for (int kg_w = 0; kg_w < KG_WARPS; ++kg_w) {
            if (kg_w == kg_warp) kg_before = kg_total;
            kg_total = kagent_combine({{args}}, kg_total, kg_tot[kg_parity][kg_w]);
        }
        const float kg_base = kagent_combine({{args}}, kagent_combine({{args}}, kg_carry, kg_before), kg_excl);

        // 4. Back through ws (every lane's reads of ws finished before the barrier above) and
        // out, striped and coalesced.
#pragma unroll
        for (int kg_k = 0; kg_k < ITEMS; ++kg_k) kg_ws_blocked[kg_k] = kagent_combine({{args}}, kg_base, kg_a[kg_k]);
        __syncwarp();
#pragma unroll
        for (int kg_j = 0; kg_j < kg_nv; ++kg_j) {
            if (kg_j * 32 * kg_V < kg_left) {
#pragma unroll
                for (int kg_e = 0; kg_e < kg_V; ++kg_e) kg_r[kg_j][kg_e] = kg_ws_striped[kg_j * 33 * kg_V + kg_e];
                kagent_store_vec<kg_V>(kg_ys + kg_j * 32 * kg_V, kg_r[kg_j]);
            }
        }
        kg_carry = kagent_combine({{args}}, kg_carry, kg_total);
        kg_parity ^= 1;
    }
}

// At least half occupancy by registers (<= 64 a thread).
extern "C" __global__ void __launch_bounds__(BLOCK, 1024 / BLOCK) kagent_row_scan({{params}}) {
    extern __shared__ float kg_segments[];   // KG_WARPS * KG_SEG_PAD floats (dynamic)
    __shared__ float kg_tot[2][KG_WARPS];
    const int kg_row = blockIdx.x;           // grid == ROWS
    const int kg_cols = (int)({{COLS}});
    const float* kg_in = {{IN}};
    float* kg_out = {{OUT}};
    float* kg_ws = kg_segments + (threadIdx.x >> 5) * KG_SEG_PAD;
    const unsigned long long kg_addr = (unsigned long long)kg_in | (unsigned long long)kg_out;
    if (VEC > 1 && kg_cols % VEC == 0 && kg_addr % (VEC * sizeof(float)) == 0)
        kagent_scan_row<VEC>({{args}}, kg_in, kg_out, kg_row, kg_cols, kg_ws, kg_tot);
    else
        kagent_scan_row<1>({{args}}, kg_in, kg_out, kg_row, kg_cols, kg_ws, kg_tot);
}
