// @kagent entry: transpose
// @kagent grid: ceil_div(cols, TILE), ceil_div(rows, TILE * TILES_PER_BLOCK)
// @kagent block: TILE // VEC, BLOCK_ROWS
// @kagent smem: DYN_SMEM * TILE * (TILE + PAD) * 4
// @kagent knob TILE [memory]: 32 64 16 128
// @kagent knob VEC [memory]: 4 1 2
// @kagent knob PAD [memory]: 1 0
// @kagent knob BLOCK_ROWS [launch]: 8 4 16 32 2 1
// @kagent knob TILES_PER_BLOCK [launch]: 1 2 4
// @kagent knob STREAM [memory]: 1 0
// @kagent knob DYN_SMEM [memory]: 0 1
//
// WIDE SPACE (tasks/wide): the expert kernel of tasks/level1/transpose/tiled.cu with its knobs
// widened to 1,728 combinations: tiles up to 128 x 128, 1 to 32 thread rows, several tiles per block
// (TILES_PER_BLOCK tiles stacked along x's rows, one after another through the same shared tile),
// streaming or plain stores, and the tile in static or dynamic shared memory. Combinations that
// cannot work fail loudly: more than 1024 threads (static_assert, and the block directive), and a
// 128 x 128 tile in static shared memory (64.5 KiB, over the 48 KiB static limit: ptxas refuses it;
// in dynamic shared memory it builds).
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
#ifndef TILES_PER_BLOCK
#define TILES_PER_BLOCK 1
#endif
#ifndef STREAM
#define STREAM 1
#endif
#ifndef DYN_SMEM
#define DYN_SMEM 0
#endif

#define TX (TILE / VEC)   // threads along a tile row

static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
static_assert(TILE % VEC == 0, "TILE must be a multiple of VEC");
static_assert(TX * BLOCK_ROWS <= 1024, "block too large");
static_assert(STREAM == 0 || STREAM == 1, "STREAM is 0 or 1");
static_assert(DYN_SMEM == 0 || DYN_SMEM == 1, "DYN_SMEM is 0 or 1");

// A store of y: streaming (written once, evict first) or plain.
template <typename T>
__device__ __forceinline__ void put(T* p, T v) {
#if STREAM
    __stcs(p, v);
#else
    *p = v;
#endif
}

extern "C" __global__ void __launch_bounds__(TX * BLOCK_ROWS)
transpose(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
#if DYN_SMEM
    extern __shared__ float4 smem4[];
    float (*tile)[TILE + PAD] = reinterpret_cast<float (*)[TILE + PAD]>(smem4);
#else
    __shared__ float tile[TILE][TILE + PAD];
#endif
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int c0 = blockIdx.x * TILE;   // first column of x in this tile
#pragma unroll 1
    for (int tb = 0; tb < TILES_PER_BLOCK; ++tb) {
        const int r0 = (blockIdx.y * TILES_PER_BLOCK + tb) * TILE;   // first row of x in this tile
        if (r0 >= rows) break;              // uniform over the block
        if (tb > 0) __syncthreads();        // every thread is done reading the previous tile

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
        __syncthreads();

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
                        put(reinterpret_cast<float4*>(p), v);   // written once: streaming store if STREAM
                    } else {
                        const float2 v = make_float2(tile[tx * 2 + 0][i], tile[tx * 2 + 1][i]);
                        put(reinterpret_cast<float2*>(p), v);
                    }
                }
            }
        } else {
#pragma unroll
            for (int i = ty; i < TILE; i += BLOCK_ROWS) {
                const int c = c0 + i;
#pragma unroll
                for (int j = tx; j < TILE; j += TX) {
                    if (c < cols && r0 + j < rows) put(y + (size_t)c * rows + r0 + j, tile[j][i]);
                }
            }
        }
    }   // tiles of this block
}
