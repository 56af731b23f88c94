// @skeleton name: transpose
// @skeleton summary: a batch of 2-D transposes through a padded shared-memory tile: each block moves a TILE x TILE tile with coalesced (float4) loads along the input's rows and coalesced (float4, streaming) stores along the output's rows, an element map applied on the way
// @skeleton families: data_movement
// @skeleton fits: float32 input of BATCH contiguous ROWS x COLS matrices and output of BATCH contiguous COLS x ROWS matrices, y[b, c, r] = value(x[b, r, c]); transposes, swaps of two adjacent axis groups such as NCHW -> NHWC (BATCH = N, ROWS = C, COLS = H * W), optionally with an elementwise map
// @skeleton indices: b < BATCH, r < ROWS, c < COLS
// @skeleton slot BATCH [dim]: the number of matrices transposed, over the task's dims, e.g. `N` (`1` for a single matrix)
// @skeleton slot ROWS [dim]: the rows of an input matrix (= the columns of an output matrix), e.g. `rows`, or `C` for NCHW -> NHWC
// @skeleton slot COLS [dim]: the columns of an input matrix, contiguous (= the rows of an output matrix), e.g. `cols`, or `H * W` for NCHW -> NHWC
// @skeleton slot IN [expr]: the float32 input buffer (BATCH, ROWS, COLS), e.g. `x`
// @skeleton slot OUT [expr]: the float32 output buffer (BATCH, COLS, ROWS), e.g. `y`
// @skeleton slot VALUE [body]: `float value(PARAMS, float v, long long b, int r, int c)`: every parameter of the task is in scope; return output y[b, c, r] from v = x[b, r, c], e.g. `return v;`, or `return v * scale;`
// @kagent entry: kagent_transpose
// @kagent grid: {{BATCH}} * ceil_div({{ROWS}}, TILE) * ceil_div({{COLS}}, TILE)
// @kagent block: TILE // VEC, BLOCK_ROWS
// @kagent smem: 0
// @kagent knob TILE [memory]: 32 64 16
// @kagent knob VEC [memory]: 4 1 2
// @kagent knob PAD [memory]: 1 0
// @kagent knob BLOCK_ROWS [launch]: 8 4
//
// Skeleton `transpose` (kernel_agent/skeletons/transpose.cu), the structure of the expert variant
// tasks/level1/transpose/tiled.cu. Block (bx, by, b) (bx fastest in the flat grid) moves the TILE x
// TILE tile of matrix b whose top-left element is x[b, by*TILE, bx*TILE]:
// - load: each thread row ty reads tile rows ty, ty+BLOCK_ROWS, ...; coalesced along x's rows,
//   VEC floats a thread a row;
// - store: the same threads write rows of y (columns of the tile), coalesced along y's rows, VEC
//   floats a thread a row, through value().
// PAD=1 pads tile rows to TILE+1 floats so a tile column spreads over the banks. Vector loads need
// COLS % VEC == 0 and an aligned x; vector stores need ROWS % VEC == 0 and an aligned y; otherwise
// that phase uses coalesced scalar accesses. Edge tiles are guarded per element (or per vector,
// which then lies wholly in or out).

#ifndef TILE
#define TILE 32
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef PAD
#define PAD 1
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif

constexpr int kg_tx_count = TILE / VEC;   // threads along a tile row

static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
static_assert(TILE % VEC == 0 && TILE <= 64, "TILE must be a multiple of VEC, at most 64");
static_assert(kg_tx_count * BLOCK_ROWS <= 1024, "block too large");

__device__ __forceinline__ float kagent_value({{params}}, float v, long long b, int r, int c) {
    {{VALUE}}
}

extern "C" __global__ void __launch_bounds__(TILE / VEC * BLOCK_ROWS) kagent_transpose({{params}}) {
    __shared__ float kg_tile[TILE][TILE + PAD];
    const int kg_rows = {{ROWS}}, kg_cols = {{COLS}};
    const int kg_tx = threadIdx.x, kg_ty = threadIdx.y;
    const int kg_tiles_c = (kg_cols + TILE - 1) / TILE, kg_tiles_r = (kg_rows + TILE - 1) / TILE;
    const int kg_bx = (int)(blockIdx.x % (unsigned)kg_tiles_c);
    const long long kg_rest = blockIdx.x / (unsigned)kg_tiles_c;
    const int kg_by = (int)(kg_rest % kg_tiles_r);
    const long long kg_b = kg_rest / kg_tiles_r;
    const int kg_r0 = kg_by * TILE;   // first row of x in this tile
    const int kg_c0 = kg_bx * TILE;   // first column of x in this tile
    const float* __restrict__ kg_x = {{IN}} + kg_b * kg_rows * kg_cols;
    float* __restrict__ kg_y = {{OUT}} + kg_b * kg_rows * kg_cols;

    // Load x[b, r0 + i, c0 + j] into tile[i][j].
    const bool kg_vec_load = VEC > 1 && kg_cols % VEC == 0 &&
                             (unsigned long long)({{IN}}) % (VEC * sizeof(float)) == 0;
    if (kg_vec_load) {
        const int kg_c = kg_c0 + kg_tx * VEC;   // cols % VEC == 0: the vector lies wholly in or out
#pragma unroll
        for (int kg_i = kg_ty; kg_i < TILE; kg_i += BLOCK_ROWS) {
            const int kg_r = kg_r0 + kg_i;
            if (kg_r < kg_rows && kg_c < kg_cols) {
                const float* kg_p = kg_x + (long long)kg_r * kg_cols + kg_c;
                if (VEC == 4) {
                    const float4 kg_v = __ldg(reinterpret_cast<const float4*>(kg_p));
                    kg_tile[kg_i][kg_tx * 4 + 0] = kg_v.x; kg_tile[kg_i][kg_tx * 4 + 1] = kg_v.y;
                    kg_tile[kg_i][kg_tx * 4 + 2] = kg_v.z; kg_tile[kg_i][kg_tx * 4 + 3] = kg_v.w;
                } else {
                    const float2 kg_v = __ldg(reinterpret_cast<const float2*>(kg_p));
                    kg_tile[kg_i][kg_tx * 2 + 0] = kg_v.x; kg_tile[kg_i][kg_tx * 2 + 1] = kg_v.y;
                }
            }
        }
    } else {
#pragma unroll
        for (int kg_i = kg_ty; kg_i < TILE; kg_i += BLOCK_ROWS) {
            const int kg_r = kg_r0 + kg_i;
#pragma unroll
            for (int kg_j = kg_tx; kg_j < TILE; kg_j += kg_tx_count) {   // neighbouring threads, neighbouring columns
                if (kg_r < kg_rows && kg_c0 + kg_j < kg_cols)
                    kg_tile[kg_i][kg_j] = __ldg(kg_x + (long long)kg_r * kg_cols + kg_c0 + kg_j);
            }
        }
    }
    __syncthreads();

    // Store y[b, c0 + i, r0 + j] = value(tile[j][i]) (rows of y are columns of x).
    const bool kg_vec_store = VEC > 1 && kg_rows % VEC == 0 &&
                              (unsigned long long)({{OUT}}) % (VEC * sizeof(float)) == 0;
    if (kg_vec_store) {
        const int kg_r = kg_r0 + kg_tx * VEC;   // rows % VEC == 0: the vector lies wholly in or out
#pragma unroll
        for (int kg_i = kg_ty; kg_i < TILE; kg_i += BLOCK_ROWS) {
            const int kg_c = kg_c0 + kg_i;
            if (kg_c < kg_cols && kg_r < kg_rows) {
                float* kg_p = kg_y + (long long)kg_c * kg_rows + kg_r;
                if (VEC == 4) {
                    const float4 kg_v = make_float4(
                        kagent_value({{args}}, kg_tile[kg_tx * 4 + 0][kg_i], kg_b, kg_r + 0, kg_c),
                        kagent_value({{args}}, kg_tile[kg_tx * 4 + 1][kg_i], kg_b, kg_r + 1, kg_c),
                        kagent_value({{args}}, kg_tile[kg_tx * 4 + 2][kg_i], kg_b, kg_r + 2, kg_c),
                        kagent_value({{args}}, kg_tile[kg_tx * 4 + 3][kg_i], kg_b, kg_r + 3, kg_c));
                    __stcs(reinterpret_cast<float4*>(kg_p), kg_v);   // written once: streaming store
                } else {
                    const float2 kg_v = make_float2(
                        kagent_value({{args}}, kg_tile[kg_tx * 2 + 0][kg_i], kg_b, kg_r + 0, kg_c),
                        kagent_value({{args}}, kg_tile[kg_tx * 2 + 1][kg_i], kg_b, kg_r + 1, kg_c));
                    __stcs(reinterpret_cast<float2*>(kg_p), kg_v);
                }
            }
        }
    } else {
#pragma unroll
        for (int kg_i = kg_ty; kg_i < TILE; kg_i += BLOCK_ROWS) {
            const int kg_c = kg_c0 + kg_i;
#pragma unroll
            for (int kg_j = kg_tx; kg_j < TILE; kg_j += kg_tx_count) {
                if (kg_c < kg_cols && kg_r0 + kg_j < kg_rows)
                    __stcs(kg_y + (long long)kg_c * kg_rows + kg_r0 + kg_j,
                           kagent_value({{args}}, kg_tile[kg_j][kg_i], kg_b, kg_r0 + kg_j, kg_c));
            }
        }
    }
}
