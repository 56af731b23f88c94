// @skeleton name: axis_reduce
// @skeleton summary: a float32 tensor of shape OUTER x R x INNER reduced over its middle axis R (a sum, mean, max, min, or the index of the max or min); a block takes BLOCK_X*VEC neighbouring columns of one outer slice, its threads split R in RSPLIT strided parts with UNROLL rows of coalesced (VEC-wide where aligned) loads in flight, then merge the parts in shared memory
// @skeleton families: reduction
// @skeleton fits: the input is float32 of shape (OUTER, R, INNER) with R the reduced axis (a middle or first axis: INNER > 1), and output (o, c) is a function of the combined values x[o, r, c] over r, or of the index r where the max or min is (argmax, argmin: first index on ties); for a reduction over the last axis use a rowwise skeleton
// @skeleton indices: o < OUTER, c < INNER
// @skeleton slot OUTER [dim]: the product of the dims before the reduced axis, e.g. `B` (`1` when there are none)
// @skeleton slot R [dim]: the length of the reduced axis, e.g. `N`
// @skeleton slot INNER [dim]: the product of the dims after the reduced axis, e.g. `D`
// @skeleton slot IN [expr]: `const float*`: the float32 input of OUTER * R * INNER elements, e.g. `x`
// @skeleton slot IDENTITY [expr]: `float`: the combine's start value, e.g. `0.f` (sum, mean), `INFINITY` (min, argmin), `-INFINITY` (max, argmax)
// @skeleton slot COMBINE [body]: `float combine(PARAMS, float acc, float v)`: fold value v into acc and return it; it also merges two partial results, so it must be associative: e.g. `return acc + v;` (sum, mean), `return fminf(acc, v);` (min, argmin), `return fmaxf(acc, v);` (max, argmax)
// @skeleton slot FINALIZE [body]: `void finalize(PARAMS, long long o, long long c, float acc, long long arg)`: acc is the combined value over the reduced axis for output (o, c), arg the index along that axis where acc was first reached (for max/min); write output (o, c), e.g. `y[o * D + c] = acc;` (sum), `y[o * D + c] = acc / N;` (mean) or `idx[o * D + c] = arg;` (argmax)
// @kagent entry: kagent_axis_reduce
// @kagent grid: {{OUTER}} * ceil_div({{INNER}}, BLOCK_X * VEC)
// @kagent block: BLOCK_X * RSPLIT
// @kagent smem: 0
// @kagent knob RSPLIT [reduction]: 16 8 4
// @kagent knob BLOCK_X [launch]: 32 64
// @kagent knob VEC [memory]: 4 2 1
// @kagent knob UNROLL [memory]: 4 2 8
//
// Skeleton `axis_reduce` (kernel_agent/skeletons/axis_reduce.cu). Block b takes outer slice
// o = b / tiles and the tile of TILE = BLOCK_X*VEC columns [c0, c0 + TILE) of it. Thread
// (tx, ty) = (tid % BLOCK_X, tid / BLOCK_X) folds rows r = ty, ty + RSPLIT, ... of its VEC
// columns: when INNER % VEC == 0 and IN is VEC-aligned, columns c0 + tx*VEC + j with one VEC-wide
// streaming load a row (every row start is then aligned); otherwise columns c0 + j*BLOCK_X + tx
// with scalar loads (each load instruction still covers 32 neighbouring columns of a warp).
// UNROLL rows (UNROLL*VEC loads) are issued before any is folded. A fold that changes acc records
// the row as arg (a strictly better value: the first index wins ties). The RSPLIT partial results
// of each column go through shared memory and are merged in order of ty (ties in value: the
// smaller index); FINALIZE writes each column once, neighbouring threads neighbouring columns.

#ifndef RSPLIT
#define RSPLIT 16
#endif
#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef UNROLL
#define UNROLL 4
#endif

#define KG_TILE (BLOCK_X * VEC)
#define KG_THREADS (BLOCK_X * RSPLIT)

static_assert(BLOCK_X % 32 == 0 && KG_THREADS <= 1024, "BLOCK_X must be a multiple of 32, BLOCK_X*RSPLIT at most 1024");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
static_assert(UNROLL >= 1 && RSPLIT >= 1, "UNROLL and RSPLIT must be positive");

__device__ __forceinline__ float kagent_combine({{params}}, float acc, float v) {
    {{COMBINE}}
}

__device__ __forceinline__ void kagent_finalize({{params}}, long long o, long long c, float acc, long long arg) {
    {{FINALIZE}}
}

template <int kg_v> struct kagent_vec { float v[kg_v]; };

template <int kg_v> __device__ __forceinline__ kagent_vec<kg_v> kagent_load_vec(const float* kg_p);
template <> __device__ __forceinline__ kagent_vec<1> kagent_load_vec<1>(const float* kg_p) {
    kagent_vec<1> kg_r; kg_r.v[0] = __ldcs(kg_p); return kg_r;
}
template <> __device__ __forceinline__ kagent_vec<2> kagent_load_vec<2>(const float* kg_p) {
    const float2 kg_t = __ldcs(reinterpret_cast<const float2*>(kg_p));
    kagent_vec<2> kg_r; kg_r.v[0] = kg_t.x; kg_r.v[1] = kg_t.y; return kg_r;
}
template <> __device__ __forceinline__ kagent_vec<4> kagent_load_vec<4>(const float* kg_p) {
    const float4 kg_t = __ldcs(reinterpret_cast<const float4*>(kg_p));   // read once: evict first
    kagent_vec<4> kg_r; kg_r.v[0] = kg_t.x; kg_r.v[1] = kg_t.y; kg_r.v[2] = kg_t.z; kg_r.v[3] = kg_t.w;
    return kg_r;
}

extern "C" __global__ void __launch_bounds__(KG_THREADS) kagent_axis_reduce({{params}}) {
    __shared__ float kg_sv[RSPLIT][KG_TILE];
    __shared__ int kg_si[RSPLIT][KG_TILE];
    const long long kg_r = {{R}};
    const long long kg_inner = {{INNER}};
    const long long kg_tiles = (kg_inner + KG_TILE - 1) / KG_TILE;
    const long long kg_o = (long long)blockIdx.x / kg_tiles;
    const long long kg_c0 = ((long long)blockIdx.x - kg_o * kg_tiles) * KG_TILE;
    const int kg_tx = threadIdx.x % BLOCK_X, kg_ty = threadIdx.x / BLOCK_X;
    const float* kg_in = {{IN}};
    const float* kg_slice = kg_in + kg_o * kg_r * kg_inner;   // row r of the slice at kg_slice + r * INNER
    const bool kg_vec = VEC > 1 && kg_inner % VEC == 0 &&
                        ((unsigned long long)kg_in % (VEC * sizeof(float))) == 0;

    float kg_acc[VEC];
    int kg_arg[VEC];
#pragma unroll
    for (int kg_j = 0; kg_j < VEC; ++kg_j) { kg_acc[kg_j] = {{IDENTITY}}; kg_arg[kg_j] = 0; }

    if (kg_vec) {
        // Columns c0 + tx*VEC + j: the whole vector is in range or none of it (INNER % VEC == 0).
        const long long kg_c = kg_c0 + (long long)kg_tx * VEC;
        if (kg_c < kg_inner) {
            const float* kg_p = kg_slice + kg_c;
            long long kg_row = kg_ty;
            for (; kg_row + (long long)(UNROLL - 1) * RSPLIT < kg_r; kg_row += (long long)UNROLL * RSPLIT) {
                kagent_vec<VEC> kg_x[UNROLL];
#pragma unroll
                for (int kg_u = 0; kg_u < UNROLL; ++kg_u)
                    kg_x[kg_u] = kagent_load_vec<VEC>(kg_p + (kg_row + (long long)kg_u * RSPLIT) * kg_inner);
#pragma unroll
                for (int kg_u = 0; kg_u < UNROLL; ++kg_u)
#pragma unroll
                    for (int kg_j = 0; kg_j < VEC; ++kg_j) {
                        const float kg_n = kagent_combine({{args}}, kg_acc[kg_j], kg_x[kg_u].v[kg_j]);
                        if (kg_n != kg_acc[kg_j]) kg_arg[kg_j] = (int)(kg_row + kg_u * RSPLIT);
                        kg_acc[kg_j] = kg_n;
                    }
            }
            for (; kg_row < kg_r; kg_row += RSPLIT) {
                const kagent_vec<VEC> kg_x = kagent_load_vec<VEC>(kg_p + kg_row * kg_inner);
#pragma unroll
                for (int kg_j = 0; kg_j < VEC; ++kg_j) {
                    const float kg_n = kagent_combine({{args}}, kg_acc[kg_j], kg_x.v[kg_j]);
                    if (kg_n != kg_acc[kg_j]) kg_arg[kg_j] = (int)kg_row;
                    kg_acc[kg_j] = kg_n;
                }
            }
        }
    } else {
        // Columns c0 + j*BLOCK_X + tx, scalar loads; a column past INNER is not read.
        bool kg_in_range[VEC];
#pragma unroll
        for (int kg_j = 0; kg_j < VEC; ++kg_j) kg_in_range[kg_j] = kg_c0 + kg_j * BLOCK_X + kg_tx < kg_inner;
        const float* kg_p = kg_slice + kg_c0 + kg_tx;
        long long kg_row = kg_ty;
        for (; kg_row + (long long)(UNROLL - 1) * RSPLIT < kg_r; kg_row += (long long)UNROLL * RSPLIT) {
            float kg_x[UNROLL][VEC];
#pragma unroll
            for (int kg_u = 0; kg_u < UNROLL; ++kg_u)
#pragma unroll
                for (int kg_j = 0; kg_j < VEC; ++kg_j)
                    kg_x[kg_u][kg_j] = kg_in_range[kg_j]
                        ? __ldg(kg_p + (kg_row + (long long)kg_u * RSPLIT) * kg_inner + kg_j * BLOCK_X) : 0.f;
#pragma unroll
            for (int kg_u = 0; kg_u < UNROLL; ++kg_u)
#pragma unroll
                for (int kg_j = 0; kg_j < VEC; ++kg_j) {
                    const float kg_n = kagent_combine({{args}}, kg_acc[kg_j], kg_x[kg_u][kg_j]);
                    if (kg_n != kg_acc[kg_j]) kg_arg[kg_j] = (int)(kg_row + kg_u * RSPLIT);
                    kg_acc[kg_j] = kg_n;
                }
        }
        for (; kg_row < kg_r; kg_row += RSPLIT) {
#pragma unroll
            for (int kg_j = 0; kg_j < VEC; ++kg_j) {
                const float kg_v = kg_in_range[kg_j] ? __ldg(kg_p + kg_row * kg_inner + kg_j * BLOCK_X) : 0.f;
                const float kg_n = kagent_combine({{args}}, kg_acc[kg_j], kg_v);
                if (kg_n != kg_acc[kg_j]) kg_arg[kg_j] = (int)kg_row;
                kg_acc[kg_j] = kg_n;
            }
        }
    }

    // The RSPLIT partial results of each column of the tile, merged in order of ty.
#pragma unroll
    for (int kg_j = 0; kg_j < VEC; ++kg_j) {
        const int kg_t = kg_vec ? kg_tx * VEC + kg_j : kg_j * BLOCK_X + kg_tx;
        kg_sv[kg_ty][kg_t] = kg_acc[kg_j];
        kg_si[kg_ty][kg_t] = kg_arg[kg_j];
    }
    __syncthreads();
    for (int kg_t = threadIdx.x; kg_t < KG_TILE; kg_t += KG_THREADS) {
        const long long kg_c = kg_c0 + kg_t;
        if (kg_c >= kg_inner) continue;
        float kg_v = kg_sv[0][kg_t];
        int kg_i = kg_si[0][kg_t];
#pragma unroll
        for (int kg_s = 1; kg_s < RSPLIT; ++kg_s) {
            const float kg_b = kg_sv[kg_s][kg_t];
            const int kg_bi = kg_si[kg_s][kg_t];
            const float kg_n = kagent_combine({{args}}, kg_v, kg_b);
            // b strictly better: its index; a tie of a and b: the smaller index.
            if (kg_n != kg_v || (kg_n == kg_b && kg_bi < kg_i)) kg_i = kg_bi;
            kg_v = kg_n;
        }
        kagent_finalize({{args}}, kg_o, kg_c, kg_v, (long long)kg_i);
    }
}
