// @skeleton name: matmul_tc
// @skeleton summary: fp16 (batched) GEMM on tensor cores (wmma 16x16x16, fp32 accumulate) with a fused fp32 epilogue: each warp a 64 x (16 * FRAG_N) tile of C, A and B tiles BK deep through a STAGES-deep ring of shared memory filled by 16-byte cp.async copies (element-wise copies where the operand is not contiguous and aligned)
// @skeleton families: matmul_tensor_core
// @skeleton fits: every output element is (a function of) a sum over kk < K of A[p][row][kk] * B[p][kk][col] for BATCH independent M x N outputs, A and B being __half tensors in memory with a strided layout (each element at an address affine in its indices: row-major, batched, or transposed like an nn.Linear weight); fp32 accumulation
// @skeleton indices: p < BATCH, row < M, col < N
// @skeleton slot BATCH [dim]: the number of independent products C[p] = A[p] @ B[p] (1 for a single matmul; at most 65535), e.g. `batch` or `1`
// @skeleton slot M [dim]: the number of rows of each C (and of A), e.g. `m`
// @skeleton slot N [dim]: the number of columns of each C (and of B), e.g. `n`
// @skeleton slot K [dim]: the length of the summed dimension (columns of A, rows of B), e.g. `k`
// @skeleton slot ADDR_A [body]: `const __half* addr_a(PARAMS, long long p, long long row, long long kk)`: every parameter of the task is in scope; return the address of element (row, kk) of the p-th A (affine in p, row and kk; it may be called with indices past the end, only to compare addresses), e.g. `return a + (p * m + row) * k + kk;`
// @skeleton slot ADDR_B [body]: `const __half* addr_b(PARAMS, long long p, long long kk, long long col)`: every parameter of the task is in scope; return the address of element (kk, col) of the p-th B (affine, as ADDR_A), e.g. `return b + (p * k + kk) * n + col;` (a weight stored N x K, as nn.Linear keeps it: `return w + col * k + kk;`)
// @skeleton slot EPILOGUE [body]: `void epilogue(PARAMS, long long p, long long row, long long col, float acc)`: acc is the fp32 sum over kk < K of A(p, row, kk) * B(p, kk, col); every parameter of the task is in scope, p < BATCH, row < M, col < N; write output element (p, row, col), e.g. `c[(p * m + row) * n + col] = acc;` (bmm, batched), `y[row * n + col] = fmaxf(acc + bias[col], 0.f);` (bias, relu), `y[row * n + col] = (acc + bias[col]) * scale;` (bias, scale)
// @kagent entry: kagent_matmul_tc
// @kagent grid: ceil_div({{N}}, WARPS_N * FRAG_N * 16), ceil_div({{M}}, WARPS_M * 64), {{BATCH}}
// @kagent block: WARPS_M * WARPS_N * 32
// @kagent smem: max(STAGES * (WARPS_M * 64 * (BK + 8) + (1 - B_KMAJOR) * BK * (WARPS_N * FRAG_N * 16 + 8) + B_KMAJOR * WARPS_N * FRAG_N * 16 * (BK + 8)) * 2, WARPS_M * WARPS_N * 1024)
// @kagent knob WARPS_M [launch]: 2 4
// @kagent knob WARPS_N [launch]: 2 1
// @kagent knob FRAG_N [compute]: 4 2
// @kagent knob BK [memory]: 32 64
// @kagent knob STAGES [memory]: 3 2
// @kagent knob B_KMAJOR [memory]: 0 1
//
// Skeleton `matmul_tc` (kernel_agent/skeletons/matmul_tc.cu): an fp16 GEMM on tensor cores whose
// operands are located through the slots ADDR_A and ADDR_B (an address for each element, so
// batched, strided and transposed layouts all fit) and whose output is written through the slot
// EPILOGUE.
//
// A block of WARPS_M x WARPS_N warps computes a BM x BN tile of C[p] (p = blockIdx.z), each warp a
// 64 x (16 * FRAG_N) sub-tile: 4 x FRAG_N wmma accumulator fragments in registers. K is walked in
// steps of BK through a STAGES-deep ring of shared-memory tiles filled by cp.async (16-byte
// copies, 8 halves): while the tensor cores work on tile t, tiles t+1 .. t+STAGES-1 are in flight.
// One barrier per k-step: after it every warp is done with tile t-1, whose slot is refilled.
// A's tile is stored row-major (BM x BK); B's row-major (BK x BN) when B_KMAJOR = 0, or
// column-major (BN rows of BK, a col_major wmma operand) when B_KMAJOR = 1, which is the
// contiguous direction of a weight stored N x K. Rows are padded by 8 halves (conflict-free
// fragment loads).
//
// Edges and layouts: an operand is copied 16 bytes at a time when, for this p, it is contiguous
// along the staged direction (k for A; n, or k when B_KMAJOR = 1), that extent is a multiple of 8,
// its other stride is a multiple of 8 elements and its base is 16-byte aligned: each chunk is then
// wholly inside or outside the matrix (outside: zero-filled by a 0-byte cp.async). Otherwise
// (odd sizes, the other B_KMAJOR layout) it is copied element by element with guards. Either
// knob value is correct for any layout. The accumulators go through a per-warp 16 x 16 shared
// scratch tile to the epilogue, one element a lane at a time, outputs outside C skipped.

#include <mma.h>
#include <cuda_fp16.h>

#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef WARPS_N
#define WARPS_N 2
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
#ifndef B_KMAJOR
#define B_KMAJOR 0
#endif

#define KG_FRAG_M 4
#define KG_WM (KG_FRAG_M * 16)                  // rows of C a warp
#define KG_WN (FRAG_N * 16)                     // columns of C a warp
#define KG_BM (WARPS_M * KG_WM)
#define KG_BN (WARPS_N * KG_WN)
#define KG_THREADS (WARPS_M * WARPS_N * 32)
#define KG_LDA (BK + 8)                         // halves a shared row of the A tile (BM x BK)
#define KG_LDB (B_KMAJOR ? BK + 8 : KG_BN + 8)  // halves a shared row of the B tile (BK x BN, or BN x BK)
#define KG_A_STAGE (KG_BM * KG_LDA)
#define KG_B_STAGE (B_KMAJOR ? KG_BN * KG_LDB : BK * KG_LDB)

static_assert(BK % 16 == 0, "BK must be a multiple of 16");
static_assert(STAGES >= 2, "at least two stages");
static_assert(B_KMAJOR == 0 || B_KMAJOR == 1, "B_KMAJOR is 0 or 1");
#if B_KMAJOR
#define KG_B_LAYOUT nvcuda::wmma::col_major
#else
#define KG_B_LAYOUT nvcuda::wmma::row_major
#endif

__device__ __forceinline__ const __half* kagent_addr_a({{params}}, long long p, long long row, long long kk) {
    {{ADDR_A}}
}

__device__ __forceinline__ const __half* kagent_addr_b({{params}}, long long p, long long kk, long long col) {
    {{ADDR_B}}
}

__device__ __forceinline__ void kagent_epilogue({{params}}, long long p, long long row, long long col, float acc) {
    {{EPILOGUE}}
}

__device__ __forceinline__ void kagent_cp_async_16(void* kg_dst, const void* kg_src, bool kg_valid) {
    const unsigned kg_d = (unsigned)__cvta_generic_to_shared(kg_dst);
    const int kg_bytes = kg_valid ? 16 : 0;   // 0: nothing is read, the 16 bytes are zero-filled
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(kg_d), "l"(kg_src), "r"(kg_bytes)
                 : "memory");
}
__device__ __forceinline__ void kagent_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int KG_PENDING>
__device__ __forceinline__ void kagent_cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(KG_PENDING) : "memory");
}

// Whether an operand can be copied 16 bytes at a time: contiguous along the staged direction
// (d_along == 1 element), the other stride a multiple of 8 elements, the base 16-byte aligned and the
// staged extent a multiple of 8.
__device__ __forceinline__ bool kagent_vec_ok(const __half* kg_base, long long kg_along, long long kg_across,
                                              int kg_extent) {
    return kg_along == 1 && kg_across % 8 == 0 && ((unsigned long long)kg_base) % 16 == 0 && kg_extent % 8 == 0;
}

extern "C" __global__ void __launch_bounds__(KG_THREADS)
kagent_matmul_tc({{params}}) {
    extern __shared__ __align__(128) unsigned char kg_smem[];
    __half* kg_as = reinterpret_cast<__half*>(kg_smem);    // [STAGES][BM][LDA]
    __half* kg_bs = kg_as + STAGES * KG_A_STAGE;            // [STAGES][BK][LDB] or [STAGES][BN][LDB]

    const int kg_m = {{M}}, kg_n = {{N}}, kg_k = {{K}};
    const long long kg_p = blockIdx.z;
    const int kg_tid = threadIdx.x, kg_warp = kg_tid / 32, kg_lane = kg_tid % 32;
    const int kg_wm = kg_warp / WARPS_N, kg_wn = kg_warp % WARPS_N;
    const int kg_row0 = blockIdx.y * KG_BM, kg_col0 = blockIdx.x * KG_BN;

    const __half* kg_a00 = kagent_addr_a({{args}}, kg_p, 0, 0);
    const __half* kg_b00 = kagent_addr_b({{args}}, kg_p, 0, 0);
    const bool kg_vec_a = kagent_vec_ok(kg_a00, kagent_addr_a({{args}}, kg_p, 0, 1) - kg_a00,
                                        kagent_addr_a({{args}}, kg_p, 1, 0) - kg_a00, kg_k);
    const bool kg_vec_b = B_KMAJOR
        ? kagent_vec_ok(kg_b00, kagent_addr_b({{args}}, kg_p, 1, 0) - kg_b00,
                        kagent_addr_b({{args}}, kg_p, 0, 1) - kg_b00, kg_k)
        : kagent_vec_ok(kg_b00, kagent_addr_b({{args}}, kg_p, 0, 1) - kg_b00,
                        kagent_addr_b({{args}}, kg_p, 1, 0) - kg_b00, kg_n);

    // Stage the k-tile starting at k0 into ring slot kg_s (zero outside A and B).
    auto kg_load_tile = [&](int kg_s, int kg_k0) {
        __half* kg_at = kg_as + kg_s * KG_A_STAGE;
        __half* kg_bt = kg_bs + kg_s * KG_B_STAGE;
        const __half kg_zero = __float2half(0.f);
        if (kg_vec_a) {
            constexpr int kg_per_row = BK / 8, kg_chunks = KG_BM * kg_per_row;
#pragma unroll
            for (int kg_c = kg_tid; kg_c < kg_chunks; kg_c += KG_THREADS) {
                const int kg_r = kg_c / kg_per_row, kg_col = (kg_c % kg_per_row) * 8;
                const int kg_gr = kg_row0 + kg_r, kg_gk = kg_k0 + kg_col;
                const bool kg_ok = kg_gr < kg_m && kg_gk < kg_k;
                kagent_cp_async_16(kg_at + kg_r * KG_LDA + kg_col,
                                   kg_ok ? kagent_addr_a({{args}}, kg_p, kg_gr, kg_gk) : kg_a00, kg_ok);
            }
        } else {
            for (int kg_e = kg_tid; kg_e < KG_BM * BK; kg_e += KG_THREADS) {
                const int kg_r = kg_e / BK, kg_col = kg_e % BK;
                const int kg_gr = kg_row0 + kg_r, kg_gk = kg_k0 + kg_col;
                kg_at[kg_r * KG_LDA + kg_col] =
                    (kg_gr < kg_m && kg_gk < kg_k) ? *kagent_addr_a({{args}}, kg_p, kg_gr, kg_gk) : kg_zero;
            }
        }
        if (kg_vec_b) {
            // Chunks of 8 along the staged direction: n (B_KMAJOR = 0) or k (B_KMAJOR = 1).
            constexpr int kg_per_row = (B_KMAJOR ? BK : KG_BN) / 8;
            constexpr int kg_chunks = (B_KMAJOR ? KG_BN : BK) * kg_per_row;
#pragma unroll
            for (int kg_c = kg_tid; kg_c < kg_chunks; kg_c += KG_THREADS) {
                const int kg_r = kg_c / kg_per_row, kg_col = (kg_c % kg_per_row) * 8;
                const int kg_gk = kg_k0 + (B_KMAJOR ? kg_col : kg_r), kg_gn = kg_col0 + (B_KMAJOR ? kg_r : kg_col);
                const bool kg_ok = kg_gk < kg_k && kg_gn < kg_n;
                kagent_cp_async_16(kg_bt + kg_r * KG_LDB + kg_col,
                                   kg_ok ? kagent_addr_b({{args}}, kg_p, kg_gk, kg_gn) : kg_b00, kg_ok);
            }
        } else {
            // Element by element, consecutive threads along the staged direction.
            constexpr int kg_along = B_KMAJOR ? BK : KG_BN;
            for (int kg_e = kg_tid; kg_e < KG_BN * BK; kg_e += KG_THREADS) {
                const int kg_r = kg_e / kg_along, kg_col = kg_e % kg_along;
                const int kg_gk = kg_k0 + (B_KMAJOR ? kg_col : kg_r), kg_gn = kg_col0 + (B_KMAJOR ? kg_r : kg_col);
                kg_bt[kg_r * KG_LDB + kg_col] =
                    (kg_gk < kg_k && kg_gn < kg_n) ? *kagent_addr_b({{args}}, kg_p, kg_gk, kg_gn) : kg_zero;
            }
        }
    };

    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> kg_acc[KG_FRAG_M][FRAG_N];
#pragma unroll
    for (int kg_i = 0; kg_i < KG_FRAG_M; ++kg_i)
#pragma unroll
        for (int kg_j = 0; kg_j < FRAG_N; ++kg_j) nvcuda::wmma::fill_fragment(kg_acc[kg_i][kg_j], 0.f);

    const int kg_tiles = (kg_k + BK - 1) / BK;
    // Prologue: tiles 0 .. STAGES-2 in flight, one commit group per tile (empty groups past the end
    // keep the group count, and so the wait below, uniform).
#pragma unroll
    for (int kg_s = 0; kg_s < STAGES - 1; ++kg_s) {
        if (kg_s < kg_tiles) kg_load_tile(kg_s, kg_s * BK);
        kagent_cp_async_commit();
    }

    for (int kg_t = 0; kg_t < kg_tiles; ++kg_t) {
        kagent_cp_async_wait<STAGES - 2>();   // this thread's copies of tile t have landed
        __syncthreads();                      // everyone's have; and everyone is done with tile t-1
        const int kg_next = kg_t + STAGES - 1;
        if (kg_next < kg_tiles) kg_load_tile(kg_next % STAGES, kg_next * BK);
        kagent_cp_async_commit();

        const __half* kg_at = kg_as + (kg_t % STAGES) * KG_A_STAGE + (kg_wm * KG_WM) * KG_LDA;
        const __half* kg_bt = kg_bs + (kg_t % STAGES) * KG_B_STAGE + (B_KMAJOR ? kg_wn * KG_WN * KG_LDB : kg_wn * KG_WN);
#pragma unroll
        for (int kg_kk = 0; kg_kk < BK; kg_kk += 16) {
            nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __half, KG_B_LAYOUT> kg_bf[FRAG_N];
#pragma unroll
            for (int kg_j = 0; kg_j < FRAG_N; ++kg_j)
                nvcuda::wmma::load_matrix_sync(
                    kg_bf[kg_j], kg_bt + (B_KMAJOR ? kg_j * 16 * KG_LDB + kg_kk : kg_kk * KG_LDB + kg_j * 16), KG_LDB);
#pragma unroll
            for (int kg_i = 0; kg_i < KG_FRAG_M; ++kg_i) {
                nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, nvcuda::wmma::row_major> kg_af;
                nvcuda::wmma::load_matrix_sync(kg_af, kg_at + (kg_i * 16) * KG_LDA + kg_kk, KG_LDA);
#pragma unroll
                for (int kg_j = 0; kg_j < FRAG_N; ++kg_j)
                    nvcuda::wmma::mma_sync(kg_acc[kg_i][kg_j], kg_af, kg_bf[kg_j], kg_acc[kg_i][kg_j]);
            }
        }
    }

    // Epilogue. The pipeline's shared memory is reused as per-warp 16x16 scratch: wait until no
    // copy is pending and every warp is done reading its tiles.
    kagent_cp_async_wait<0>();
    __syncthreads();
    float* kg_scratch = reinterpret_cast<float*>(kg_smem) + kg_warp * 256;
#pragma unroll
    for (int kg_i = 0; kg_i < KG_FRAG_M; ++kg_i) {
#pragma unroll
        for (int kg_j = 0; kg_j < FRAG_N; ++kg_j) {
            const int kg_r = kg_row0 + kg_wm * KG_WM + kg_i * 16, kg_c = kg_col0 + kg_wn * KG_WN + kg_j * 16;
            if (kg_r >= kg_m || kg_c >= kg_n) continue;   // warp-uniform
            nvcuda::wmma::store_matrix_sync(kg_scratch, kg_acc[kg_i][kg_j], 16, nvcuda::wmma::mem_row_major);
            __syncwarp();
#pragma unroll
            for (int kg_e = kg_lane; kg_e < 256; kg_e += 32) {
                const int kg_rr = kg_r + kg_e / 16, kg_cc = kg_c + kg_e % 16;
                if (kg_rr < kg_m && kg_cc < kg_n) kagent_epilogue({{args}}, kg_p, kg_rr, kg_cc, kg_scratch[kg_e]);
            }
            __syncwarp();
        }
    }
}
