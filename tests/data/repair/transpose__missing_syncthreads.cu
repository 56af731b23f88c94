// @repair task: tasks/level1/transpose.yaml
// @repair from: tasks/level1/transpose/tiled.cu
// @repair expect: nondeterministic
// @repair bug: no __syncthreads() between loading the tile and storing its columns: threads read tile entries other warps have not written yet
// @repair fix: __syncthreads(); between the load and the store phases
// @kagent entry: transpose
// @kagent grid: ceil_div(cols, TILE), ceil_div(rows, TILE)
// @kagent block: TILE // VEC, BLOCK_ROWS
// @kagent smem: 0
// @kagent knob TILE [memory]: 32 64 16
// @kagent knob VEC [memory]: 4 1 2
// @kagent knob PAD [memory]: 1 0
// @kagent knob BLOCK_ROWS [launch]: 8 4
//
// Expert transpose through a shared-memory tile. Block (bx, by) moves the
// TILE x TILE tile whose top-left element is x[by*TILE, bx*TILE]:
// - load: each thread row ty reads tile rows ty, ty+BLOCK_ROWS, ...;
//   coalesced along x's rows, VEC floats per thread per row;
// - store: the same threads write rows of y (columns of the tile),
//   coalesced along y's rows, VEC floats per thread per row.
// PAD=1 pads tile rows to TILE+1 floats so a tile column spreads over the
// banks (PAD=0 shows the bank conflicts). Vector loads need cols % VEC == 0
// and an aligned x; vector stores need rows % VEC == 0 and an aligned y;
// otherwise that phase uses coalesced scalar accesses. Edge tiles are
// guarded per element (or per vector, which then lies wholly in or out).

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

#define TX (TILE / VEC)   // threads along a tile row

static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
static_assert(TILE % VEC == 0 && TILE <= 64, "TILE must be a multiple of VEC, at most 64");
static_assert(TX * BLOCK_ROWS <= 1024, "block too large");

extern "C" __global__ void __launch_bounds__(TX * BLOCK_ROWS)
transpose(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    __shared__ float tile[TILE][TILE + PAD];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int r0 = blockIdx.y * TILE;   // first row of x in this tile
    const int c0 = blockIdx.x * TILE;   // first column of x in this tile

    // Load x[r0 + i, c0 + j] into tile[i][j].
    const bool vec_load = VEC > 1 && cols % VEC == 0 && (unsigned long long)x % (VEC * sizeof(float)) == 0;
    if (vec_load) {
        const int c = c0 + tx * VEC;   // cols % VEC == 0: the vector lies wholly in or out
#pragma unroll
        for (int i = ty; i < TILE; i += BLOCK_ROWS) {
            const int r = r0 + i;
            if (r < rows && c < cols) {
                const float* p = x + (size_t)r * cols + c;
                if (VEC == 4) {
                    const float4 v = __ldg(reinterpret_cast<const float4*>(p));
                    tile[i][tx * 4 + 0] = v.x; tile[i][tx * 4 + 1] = v.y;
                    tile[i][tx * 4 + 2] = v.z; tile[i][tx * 4 + 3] = v.w;
                } else {
                    const float2 v = __ldg(reinterpret_cast<const float2*>(p));
                    tile[i][tx * 2 + 0] = v.x; tile[i][tx * 2 + 1] = v.y;
                }
            }
        }
    } else {
#pragma unroll
        for (int i = ty; i < TILE; i += BLOCK_ROWS) {
            const int r = r0 + i;
#pragma unroll
            for (int j = tx; j < TILE; j += TX) {   // neighbouring threads, neighbouring columns
                if (r < rows && c0 + j < cols) tile[i][j] = __ldg(x + (size_t)r * cols + c0 + j);
            }
        }
    }

    // Store y[c0 + i, r0 + j] = tile[j][i] (rows of y are columns of x).
    const bool vec_store = VEC > 1 && rows % VEC == 0 && (unsigned long long)y % (VEC * sizeof(float)) == 0;
    if (vec_store) {
        const int r = r0 + tx * VEC;   // rows % VEC == 0: the vector lies wholly in or out
#pragma unroll
        for (int i = ty; i < TILE; i += BLOCK_ROWS) {
            const int c = c0 + i;
            if (c < cols && r < rows) {
                float* p = y + (size_t)c * rows + r;
                if (VEC == 4) {
                    const float4 v = make_float4(tile[tx * 4 + 0][i], tile[tx * 4 + 1][i],
                                                 tile[tx * 4 + 2][i], tile[tx * 4 + 3][i]);
                    __stcs(reinterpret_cast<float4*>(p), v);   // written once: streaming store
                } else {
                    const float2 v = make_float2(tile[tx * 2 + 0][i], tile[tx * 2 + 1][i]);
                    __stcs(reinterpret_cast<float2*>(p), v);
                }
            }
        }
    } else {
#pragma unroll
        for (int i = ty; i < TILE; i += BLOCK_ROWS) {
            const int c = c0 + i;
#pragma unroll
            for (int j = tx; j < TILE; j += TX) {
                if (c < cols && r0 + j < rows) __stcs(y + (size_t)c * rows + r0 + j, tile[j][i]);
            }
        }
    }
}
