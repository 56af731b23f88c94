// @kagent entry: matmul
// @kagent grid: ceil_div(n, WARPS_N * FRAG_N * 16), ceil_div(m, WARPS_M * FRAG_M * 16)
// @kagent block: WARPS_M * WARPS_N * 32
// @kagent smem: max(STAGES * (WARPS_M * FRAG_M * 16 * (BK + 8) + BK * (WARPS_N * FRAG_N * 16 + 8)) * 2, WARPS_M * WARPS_N * 1024)
// @kagent knob WARPS_M [launch]: 2 4 1 8
// @kagent knob WARPS_N [launch]: 2 1 4 8
// @kagent knob FRAG_M [compute]: 4 2 1
// @kagent knob FRAG_N [compute]: 4 2 1 8
// @kagent knob BK [memory]: 32 64 16 128
// @kagent knob STAGES [memory]: 3 2 4
//
// WIDE SPACE (tasks/wide): the expert kernel of tasks/level1/matmul_fp16/wmma.cu with its knobs
// widened to 2,304 combinations: 1 to 8 warps along each side, the warp tile's FRAG_M (fixed at 4
// there) made a knob, FRAG_N up to 8, BK from 16 to 128 and 2 to 4 pipeline stages. Combinations that
// cannot work fail loudly: more than 1024 threads (8 x 8 warps: static_assert, and the block directive),
// shared memory over the 227 KiB a block may have (large tiles with deep pipelines: a resource error
// before launch); FRAG_M x FRAG_N = 32 accumulator fragments (256 floats) need more registers than a
// thread has and spill (slow, but correct).
//
// Expert fp16 GEMM on tensor cores (wmma 16x16x16, fp32 accumulators).
//
// A block of WARPS_M x WARPS_N warps computes a BM x BN tile of C, each warp a
// (16 * FRAG_M) x (16 * FRAG_N) sub-tile: FRAG_M x FRAG_N accumulator fragments in registers.
// The k dimension is walked in steps of BK through a STAGES-deep ring of
// shared-memory tiles filled by cp.async (16-byte copies, 8 halves): while the
// tensor cores work on tile t, tiles t+1 .. t+STAGES-1 are in flight. One
// barrier per k-step: after it, every warp is done with tile t-1, whose slot
// is refilled with tile t+STAGES-1.
//
// Shared rows are padded by 8 halves (16 bytes) so the 8-row fragment loads
// hit distinct banks. Edges: cp.async with a source size of 0 zero-fills a
// chunk outside A or B, so partial tiles contribute nothing. The 16-byte
// path needs k % 8 == 0 and n % 8 == 0 (each chunk wholly inside or outside)
// and 16-byte aligned inputs; otherwise the tiles are staged element by
// element with guards (odd sizes only). Fragments of C that lie wholly inside
// C (with n % 4 == 0) are stored directly; edge fragments go through a
// per-warp shared scratch tile and are copied with per-element guards.

#include <mma.h>
#include <cuda_fp16.h>

using namespace nvcuda;

#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef WARPS_N
#define WARPS_N 2
#endif
#ifndef FRAG_M
#define FRAG_M 4
#endif
#ifndef FRAG_N
#define FRAG_N 4
#endif
#ifndef BK
#define BK 32
#endif
#ifndef STAGES
#define STAGES 3
#endif

#define WM (FRAG_M * 16)
#define WN (FRAG_N * 16)
#define BM (WARPS_M * WM)
#define BN (WARPS_N * WN)
#define THREADS (WARPS_M * WARPS_N * 32)
#define LDA (BK + 8)             // halves per shared row of the A tile (BM x BK)
#define LDB (BN + 8)             // halves per shared row of the B tile (BK x BN)
#define A_STAGE (BM * LDA)
#define B_STAGE (BK * LDB)

static_assert(BK % 16 == 0, "BK must be a multiple of 16");
static_assert(STAGES >= 2, "at least two stages");
static_assert(THREADS <= 1024, "more than 1024 threads per block");

__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src, bool valid) {
    const unsigned dst = (unsigned)__cvta_generic_to_shared(smem_dst);
    const int src_bytes = valid ? 16 : 0;   // 0: nothing is read, the 16 bytes are zero-filled
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// Stage the k-tile starting at k0: A rows row0.., B columns col0.. (zero outside).
__device__ __forceinline__ void load_tile(const __half* __restrict__ A, const __half* __restrict__ B,
                                          __half* __restrict__ As, __half* __restrict__ Bs, int m, int n, int k,
                                          int row0, int col0, int k0, int tid, bool vec) {
    if (vec) {
        constexpr int A_PER_ROW = BK / 8, A_CHUNKS = BM * A_PER_ROW;
#pragma unroll
        for (int c = tid; c < A_CHUNKS; c += THREADS) {
            const int r = c / A_PER_ROW, col = (c % A_PER_ROW) * 8;
            const int gr = row0 + r, gc = k0 + col;
            const bool ok = gr < m && gc < k;
            cp_async_16(As + r * LDA + col, ok ? A + (size_t)gr * k + gc : A, ok);
        }
        constexpr int B_PER_ROW = BN / 8, B_CHUNKS = BK * B_PER_ROW;
#pragma unroll
        for (int c = tid; c < B_CHUNKS; c += THREADS) {
            const int r = c / B_PER_ROW, col = (c % B_PER_ROW) * 8;
            const int gr = k0 + r, gc = col0 + col;
            const bool ok = gr < k && gc < n;
            cp_async_16(Bs + r * LDB + col, ok ? B + (size_t)gr * n + gc : B, ok);
        }
    } else {
        const __half zero = __float2half(0.f);
        for (int e = tid; e < BM * BK; e += THREADS) {
            const int r = e / BK, col = e % BK;
            const int gr = row0 + r, gc = k0 + col;
            As[r * LDA + col] = (gr < m && gc < k) ? A[(size_t)gr * k + gc] : zero;
        }
        for (int e = tid; e < BK * BN; e += THREADS) {
            const int r = e / BN, col = e % BN;
            const int gr = k0 + r, gc = col0 + col;
            Bs[r * LDB + col] = (gr < k && gc < n) ? B[(size_t)gr * n + gc] : zero;
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
matmul(const __half* __restrict__ a, const __half* __restrict__ b, float* __restrict__ c, int m, int n, int k) {
    extern __shared__ __align__(128) unsigned char smem[];
    __half* As = reinterpret_cast<__half*>(smem);      // [STAGES][BM][LDA]
    __half* Bs = As + STAGES * A_STAGE;                // [STAGES][BK][LDB]

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool vec = k % 8 == 0 && n % 8 == 0 &&
                     (((unsigned long long)a | (unsigned long long)b) % 16) == 0;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FRAG_M][FRAG_N];
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) wmma::fill_fragment(acc[i][j], 0.f);

    const int ntiles = (k + BK - 1) / BK;
    // Prologue: tiles 0 .. STAGES-2 in flight, one commit group per tile (empty groups past the end
    // keep the group count, and so the wait below, uniform).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ntiles) load_tile(a, b, As + s * A_STAGE, Bs + s * B_STAGE, m, n, k, row0, col0, s * BK, tid, vec);
        cp_async_commit();
    }

    for (int t = 0; t < ntiles; ++t) {
        cp_async_wait<STAGES - 2>();   // this thread's copies of tile t have landed
        __syncthreads();               // everyone's have; and everyone is done with tile t-1
        const int next = t + STAGES - 1;
        if (next < ntiles)
            load_tile(a, b, As + (next % STAGES) * A_STAGE, Bs + (next % STAGES) * B_STAGE, m, n, k, row0, col0,
                      next * BK, tid, vec);
        cp_async_commit();

        const __half* as = As + (t % STAGES) * A_STAGE + (wm * WM) * LDA;
        const __half* bs = Bs + (t % STAGES) * B_STAGE + wn * WN;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> bf[FRAG_N];
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j) wmma::load_matrix_sync(bf[j], bs + kk * LDB + j * 16, LDB);
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> af;
                wmma::load_matrix_sync(af, as + (i * 16) * LDA + kk, LDA);
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j) wmma::mma_sync(acc[i][j], af, bf[j], acc[i][j]);
            }
        }
    }

    // Epilogue. The pipeline's shared memory is reused as per-warp 16x16 scratch for edge
    // fragments: wait until no copy is pending and every warp is done reading its tiles.
    cp_async_wait<0>();
    __syncthreads();
    float* scratch = reinterpret_cast<float*>(smem) + warp * 256;
    const bool direct = n % 4 == 0 && ((unsigned long long)c % 32) == 0;
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            const int r = row0 + wm * WM + i * 16, col = col0 + wn * WN + j * 16;   // warp-uniform
            if (r >= m || col >= n) continue;
            if (direct && r + 16 <= m && col + 16 <= n) {
                wmma::store_matrix_sync(c + (size_t)r * n + col, acc[i][j], n, wmma::mem_row_major);
            } else {
                wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
                __syncwarp();
                for (int e = lane; e < 256; e += 32) {
                    const int rr = r + e / 16, cc = col + e % 16;
                    if (rr < m && cc < n) c[(size_t)rr * n + cc] = scratch[e];
                }
                __syncwarp();
            }
        }
    }
}
