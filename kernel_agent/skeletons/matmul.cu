// @skeleton name: matmul
// @skeleton summary: fp32 (batched) GEMM C[p] = A[p] @ B[p] with a fused epilogue: BM x BN block tiles of C, TM x TN register tiles a thread, A and B staged through double-buffered shared-memory tiles BK deep (the next tile's loads in flight during the FMAs, one barrier a tile); no TF32
// @skeleton families: matmul, convolution
// @skeleton fits: every output element is (a function of) a sum over kk < K of A[p][row][kk] * B[p][kk][col] for BATCH independent M x N float32 outputs, where each A and B element can be read (or computed) from the inputs given its indices: matmuls, batched matmuls, linear layers (transposed weights), and channel-mixing convolutions as implicit GEMMs (K = in channels * taps)
// @skeleton indices: p < BATCH, row < M, col < N
// @skeleton slot BATCH [dim]: the number of independent products C[p] = A[p] @ B[p] (1 for a single matmul; at most 65535), e.g. `batch` or `1`
// @skeleton slot M [dim]: the number of rows of each C (and of A), e.g. `m`
// @skeleton slot N [dim]: the number of columns of each C (and of B), e.g. `n`
// @skeleton slot K [dim]: the length of the summed dimension (columns of A, rows of B), e.g. `k`
// @skeleton slot LOAD_A [body]: `float load_a(PARAMS, long long p, long long row, long long kk)`: every parameter of the task is in scope, and p < BATCH, row < M, kk < K always hold; return element (row, kk) of the p-th A, e.g. `return a[(p * m + row) * k + kk];`
// @skeleton slot LOAD_B [body]: `float load_b(PARAMS, long long p, long long kk, long long col)`: every parameter of the task is in scope, and p < BATCH, kk < K, col < N always hold; return element (kk, col) of the p-th B, e.g. `return b[(p * k + kk) * n + col];` (a weight stored N x K, as nn.Linear keeps it: `return w[col * k + kk];`)
// @skeleton slot EPILOGUE [body]: `void epilogue(PARAMS, long long p, long long row, long long col, float acc)`: acc is the sum over kk < K of load_a(p, row, kk) * load_b(p, kk, col); every parameter of the task is in scope, p < BATCH, row < M, col < N; write output element (p, row, col), e.g. `c[(p * m + row) * n + col] = acc;` (bmm, batched), `y[row * n + col] = fmaxf(acc + bias[col], 0.f);` (bias, relu), `y[row * n + col] = (acc + bias[col]) * scale;` (bias, scale)
// @kagent entry: kagent_matmul
// @kagent grid: ceil_div({{N}}, BN), ceil_div({{M}}, BM), {{BATCH}}
// @kagent block: (BM // TM) * (BN // TN)
// @kagent smem: 0
// @kagent knob BM [launch]: 128 64
// @kagent knob BN [launch]: 128 64
// @kagent knob TM [compute]: 8 4
// @kagent knob TN [compute]: 8 4
// @kagent knob BK [memory]: 8 16
// @kagent knob UNROLL [compute]: 8 1
// @kagent knob A_ALONG_K [memory]: 1 0
// @kagent knob B_ALONG_K [memory]: 0 1
//
// Skeleton `matmul` (kernel_agent/skeletons/matmul.cu): an fp32 SGEMM (FFMA, no TF32) whose operands
// are read element by element through the slots LOAD_A and LOAD_B, and whose output is written through the
// slot EPILOGUE, so one kernel serves plain, batched and transposed matmuls and implicit-GEMM
// convolutions.
//
// A block computes a BM x BN tile of C[p] (p = blockIdx.z) with (BM/TM) * (BN/TN) threads, each
// owning a TM x TN register tile. K is walked in BK-deep slabs: A's slab is stored k-major
// (As[k][m], rows padded by 4) and so is B's (Bs[k][n], padded by 4), both double-buffered in
// shared memory; the next slab is read into registers while the current one is multiplied, then
// written to the idle buffer, so there is one barrier a slab. A thread's rows are TM/4 groups of 4
// consecutive rows spaced 4 * BM / TM apart (and likewise its columns), so its fragments are
// conflict-free float4 shared-memory reads. The inner k loop runs UNROLL steps a trip.
//
// The slab loaders call the slots only for elements inside the matrices (the rest is zero, so
// partial tiles add nothing) and are coalesced when consecutive threads read consecutive addresses:
// A_ALONG_K = 1 walks A's slab along k (A row-major, k contiguous), 0 along m (A stored K x M);
// B_ALONG_K = 0 walks B's slab along n (B row-major K x N), 1 along k (a weight stored N x K).
// Either value is correct for any layout; the padding keeps both store patterns conflict-free.
// When the walked dimensions are multiples of 4 and every pointer is 16-byte aligned (kg_vec, one
// grid-uniform test), a group is wholly inside or outside (one guard a group) and the compiler is told
// so (the group's start a multiple of 4, the pointers aligned): a slot whose index runs along the walked
// dimension with that dimension as its stride (a[row * k + kk] walked along k) becomes one 16-byte load
// a group, as a hand-written float4 kernel does; any other slot still reads 4 scalars, correctly.
// Outputs outside C are not written; any M, N, K >= 1 works.

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef BK
#define BK 8
#endif
#ifndef UNROLL
#define UNROLL 8
#endif
#ifndef A_ALONG_K
#define A_ALONG_K 1
#endif
#ifndef B_ALONG_K
#define B_ALONG_K 0
#endif

#define KG_TX (BN / TN)                 // threads along n
#define KG_TY (BM / TM)                 // threads along m
#define KG_THREADS (KG_TX * KG_TY)
#define KG_AS_LD (BM + 4)               // padded k-major rows: float4-aligned, conflict-free stores
#define KG_BS_LD (BN + (B_ALONG_K ? 4 : 0))   // B's float4 stores (B_ALONG_K = 0) need no padding
#define KG_A_GROUPS (BM * BK / 4)       // groups of 4 consecutive elements in a slab of A
#define KG_B_GROUPS (BK * BN / 4)
#define KG_A_ITERS ((KG_A_GROUPS + KG_THREADS - 1) / KG_THREADS)   // groups a thread loads
#define KG_B_ITERS ((KG_B_GROUPS + KG_THREADS - 1) / KG_THREADS)

static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are made of float4 groups");
static_assert(BM % TM == 0 && BN % TN == 0, "TM must divide BM and TN divide BN");
static_assert(BK % UNROLL == 0, "UNROLL must divide BK");
static_assert(KG_THREADS % 32 == 0 && KG_THREADS <= 1024, "whole warps, at most 1024 threads");
static_assert(BK % 4 == 0, "BK must be a multiple of 4 (groups of 4 along k)");

__device__ __forceinline__ float kagent_load_a({{params}}, long long p, long long row, long long kk) {
    {{LOAD_A}}
}

__device__ __forceinline__ float kagent_load_b({{params}}, long long p, long long kk, long long col) {
    {{LOAD_B}}
}

__device__ __forceinline__ void kagent_epilogue({{params}}, long long p, long long row, long long col, float acc) {
    {{EPILOGUE}}
}

// The vector path's accessors: the slots called with every pointer parameter declared 16-byte aligned
// (only where it is: see kg_vec), so that the 4 loads of a group at consecutive addresses become one
// 16-byte load when the slot's index makes them so (a row stride that is the walked dimension).
template <class T> __device__ __forceinline__ T* kagent_aligned16(T* kg_x) {
    return static_cast<T*>(__builtin_assume_aligned(kg_x, 16));
}
template <class T> __device__ __forceinline__ T kagent_aligned16(T kg_x) { return kg_x; }
template <class T> __device__ __forceinline__ bool kagent_is_aligned16(T* kg_x) {
    return (reinterpret_cast<unsigned long long>(kg_x) & 15) == 0;
}
template <class T> __device__ __forceinline__ bool kagent_is_aligned16(T) { return true; }
template <class... T> __device__ __forceinline__ bool kagent_all_aligned16(T... kg_x) {
    return (kagent_is_aligned16(kg_x) && ...);
}
// A group's element e: the group starts at a multiple of 4 along the walked dimension (row0, col0, k0
// and the group's offset all are), which the compiler is told, with the pointers' alignment.
template <class... T>
__device__ __forceinline__ float kagent_load_a4(long long p, long long row, long long kk, int e, T... kg_x) {
    if (A_ALONG_K) {
        __builtin_assume((kk & 3) == 0);
        return kagent_load_a(kagent_aligned16(kg_x)..., p, row, kk + e);
    }
    __builtin_assume((row & 3) == 0);
    return kagent_load_a(kagent_aligned16(kg_x)..., p, row + e, kk);
}
template <class... T>
__device__ __forceinline__ float kagent_load_b4(long long p, long long kk, long long col, int e, T... kg_x) {
    if (B_ALONG_K) {
        __builtin_assume((kk & 3) == 0);
        return kagent_load_b(kagent_aligned16(kg_x)..., p, kk + e, col);
    }
    __builtin_assume((col & 3) == 0);
    return kagent_load_b(kagent_aligned16(kg_x)..., p, kk, col + e);
}

extern "C" __global__ void __launch_bounds__(KG_THREADS)
kagent_matmul({{params}}) {
    __shared__ __align__(16) float kg_as[2][BK][KG_AS_LD];
    __shared__ __align__(16) float kg_bs[2][BK][KG_BS_LD];
    const int kg_m = {{M}}, kg_n = {{N}}, kg_k = {{K}};
    const long long kg_p = blockIdx.z;
    const int kg_tid = threadIdx.x;
    const int kg_tx = kg_tid % KG_TX, kg_ty = kg_tid / KG_TX;
    const int kg_row0 = blockIdx.y * BM, kg_col0 = blockIdx.x * BN;
    // The vector path: the walked dimensions multiples of 4 (a group starts at a multiple of 4, so it
    // is wholly inside or outside) and every pointer 16-byte aligned.
    const bool kg_vec = ((A_ALONG_K ? kg_k : kg_m) & 3) == 0 && ((B_ALONG_K ? kg_k : kg_n) & 3) == 0 &&
                        kagent_all_aligned16({{args}});

    float kg_acc[TM][TN];
#pragma unroll
    for (int kg_i = 0; kg_i < TM; ++kg_i)
#pragma unroll
        for (int kg_j = 0; kg_j < TN; ++kg_j) kg_acc[kg_i][kg_j] = 0.f;

    // The slab at k0 read into registers (zero outside A and B), later stored to buffer kg_buf.
    // Each thread reads groups of 4 consecutive elements along the walked dimension (consecutive
    // threads take consecutive groups, so a warp's loads are coalesced): the accessor is inlined and
    // the 4 addresses are one address and 3 constant offsets. A slab wholly inside A (or B), as all
    // but the edge blocks' are, is read without guards (one block-uniform branch).
    float kg_ra[KG_A_ITERS][4], kg_rb[KG_B_ITERS][4];
    auto kg_fetch = [&](int kg_k0) {
        if (kg_vec) {   // grid-uniform: a group is wholly inside or wholly outside, one guard a group
            __builtin_assume(((A_ALONG_K ? kg_k : kg_m) & 3) == 0);   // what lets 4 loads be one
            __builtin_assume(((B_ALONG_K ? kg_k : kg_n) & 3) == 0);
#pragma unroll
            for (int kg_l = 0; kg_l < KG_A_ITERS; ++kg_l) {
                const int kg_g = kg_tid + kg_l * KG_THREADS;
                const int kg_r = A_ALONG_K ? kg_g / (BK / 4) : (kg_g % (BM / 4)) * 4;
                const int kg_c = A_ALONG_K ? (kg_g % (BK / 4)) * 4 : kg_g / (BM / 4);
                const int kg_gr = kg_row0 + kg_r, kg_gk = kg_k0 + kg_c;
#pragma unroll
                for (int kg_e = 0; kg_e < 4; ++kg_e) kg_ra[kg_l][kg_e] = 0.f;
                if ((KG_A_GROUPS % KG_THREADS == 0 || kg_g < KG_A_GROUPS) && kg_gr < kg_m && kg_gk < kg_k) {
#pragma unroll
                    for (int kg_e = 0; kg_e < 4; ++kg_e)
                        kg_ra[kg_l][kg_e] = kagent_load_a4(kg_p, kg_gr, kg_gk, kg_e, {{args}});
                }
            }
#pragma unroll
            for (int kg_l = 0; kg_l < KG_B_ITERS; ++kg_l) {
                const int kg_g = kg_tid + kg_l * KG_THREADS;
                const int kg_c = B_ALONG_K ? kg_g / (BK / 4) : (kg_g % (BN / 4)) * 4;
                const int kg_r = B_ALONG_K ? (kg_g % (BK / 4)) * 4 : kg_g / (BN / 4);
                const int kg_gk = kg_k0 + kg_r, kg_gc = kg_col0 + kg_c;
#pragma unroll
                for (int kg_e = 0; kg_e < 4; ++kg_e) kg_rb[kg_l][kg_e] = 0.f;
                if ((KG_B_GROUPS % KG_THREADS == 0 || kg_g < KG_B_GROUPS) && kg_gk < kg_k && kg_gc < kg_n) {
#pragma unroll
                    for (int kg_e = 0; kg_e < 4; ++kg_e)
                        kg_rb[kg_l][kg_e] = kagent_load_b4(kg_p, kg_gk, kg_gc, kg_e, {{args}});
                }
            }
            return;
        }
        const bool kg_a_full = kg_row0 + BM <= kg_m && kg_k0 + BK <= kg_k;
#pragma unroll
        for (int kg_l = 0; kg_l < KG_A_ITERS; ++kg_l) {
            const int kg_g = kg_tid + kg_l * KG_THREADS;
            const bool kg_in = KG_A_GROUPS % KG_THREADS == 0 || kg_g < KG_A_GROUPS;
            const int kg_r = A_ALONG_K ? kg_g / (BK / 4) : (kg_g % (BM / 4)) * 4;
            const int kg_c = A_ALONG_K ? (kg_g % (BK / 4)) * 4 : kg_g / (BM / 4);
            const int kg_gr = kg_row0 + kg_r, kg_gk = kg_k0 + kg_c;
#pragma unroll
            for (int kg_e = 0; kg_e < 4; ++kg_e) {
                const int kg_er = kg_gr + (A_ALONG_K ? 0 : kg_e), kg_ek = kg_gk + (A_ALONG_K ? kg_e : 0);
                const bool kg_ok = kg_in && (kg_a_full || (kg_er < kg_m && kg_ek < kg_k));
                kg_ra[kg_l][kg_e] = kg_ok ? kagent_load_a({{args}}, kg_p, (long long)kg_er, (long long)kg_ek) : 0.f;
            }
        }
        const bool kg_b_full = kg_k0 + BK <= kg_k && kg_col0 + BN <= kg_n;
#pragma unroll
        for (int kg_l = 0; kg_l < KG_B_ITERS; ++kg_l) {
            const int kg_g = kg_tid + kg_l * KG_THREADS;
            const bool kg_in = KG_B_GROUPS % KG_THREADS == 0 || kg_g < KG_B_GROUPS;
            const int kg_c = B_ALONG_K ? kg_g / (BK / 4) : (kg_g % (BN / 4)) * 4;
            const int kg_r = B_ALONG_K ? (kg_g % (BK / 4)) * 4 : kg_g / (BN / 4);
            const int kg_gk = kg_k0 + kg_r, kg_gc = kg_col0 + kg_c;
#pragma unroll
            for (int kg_e = 0; kg_e < 4; ++kg_e) {
                const int kg_ek = kg_gk + (B_ALONG_K ? kg_e : 0), kg_ec = kg_gc + (B_ALONG_K ? 0 : kg_e);
                const bool kg_ok = kg_in && (kg_b_full || (kg_ek < kg_k && kg_ec < kg_n));
                kg_rb[kg_l][kg_e] = kg_ok ? kagent_load_b({{args}}, kg_p, (long long)kg_ek, (long long)kg_ec) : 0.f;
            }
        }
    };
    auto kg_commit = [&](int kg_buf) {
#pragma unroll
        for (int kg_l = 0; kg_l < KG_A_ITERS; ++kg_l) {
            const int kg_g = kg_tid + kg_l * KG_THREADS;
            if (KG_A_GROUPS % KG_THREADS == 0 || kg_g < KG_A_GROUPS) {
                if (A_ALONG_K) {   // a group runs down a column of the k-major tile
                    const int kg_r = kg_g / (BK / 4), kg_c = (kg_g % (BK / 4)) * 4;
#pragma unroll
                    for (int kg_e = 0; kg_e < 4; ++kg_e) kg_as[kg_buf][kg_c + kg_e][kg_r] = kg_ra[kg_l][kg_e];
                } else {           // along a row of it: one float4
                    const int kg_r = (kg_g % (BM / 4)) * 4, kg_c = kg_g / (BM / 4);
                    *reinterpret_cast<float4*>(&kg_as[kg_buf][kg_c][kg_r]) =
                        make_float4(kg_ra[kg_l][0], kg_ra[kg_l][1], kg_ra[kg_l][2], kg_ra[kg_l][3]);
                }
            }
        }
#pragma unroll
        for (int kg_l = 0; kg_l < KG_B_ITERS; ++kg_l) {
            const int kg_g = kg_tid + kg_l * KG_THREADS;
            if (KG_B_GROUPS % KG_THREADS == 0 || kg_g < KG_B_GROUPS) {
                if (B_ALONG_K) {
                    const int kg_c = kg_g / (BK / 4), kg_r = (kg_g % (BK / 4)) * 4;
#pragma unroll
                    for (int kg_e = 0; kg_e < 4; ++kg_e) kg_bs[kg_buf][kg_r + kg_e][kg_c] = kg_rb[kg_l][kg_e];
                } else {
                    const int kg_c = (kg_g % (BN / 4)) * 4, kg_r = kg_g / (BN / 4);
                    *reinterpret_cast<float4*>(&kg_bs[kg_buf][kg_r][kg_c]) =
                        make_float4(kg_rb[kg_l][0], kg_rb[kg_l][1], kg_rb[kg_l][2], kg_rb[kg_l][3]);
                }
            }
        }
    };

    const int kg_slabs = (kg_k + BK - 1) / BK;
    kg_fetch(0);
    kg_commit(0);
    __syncthreads();

    for (int kg_t = 0; kg_t < kg_slabs; ++kg_t) {
        const int kg_cur = kg_t & 1;
        const bool kg_more = kg_t + 1 < kg_slabs;
        if (kg_more) kg_fetch((kg_t + 1) * BK);   // in flight during the FMAs below
#pragma unroll 1
        for (int kg_k1 = 0; kg_k1 < BK; kg_k1 += UNROLL) {
#pragma unroll
            for (int kg_u = 0; kg_u < UNROLL; ++kg_u) {
                const int kg_kk = kg_k1 + kg_u;
                float kg_af[TM], kg_bf[TN];
#pragma unroll
                for (int kg_g = 0; kg_g < TM / 4; ++kg_g) {
                    const float4 kg_v =
                        *reinterpret_cast<const float4*>(&kg_as[kg_cur][kg_kk][kg_g * (KG_TY * 4) + kg_ty * 4]);
                    kg_af[kg_g * 4 + 0] = kg_v.x; kg_af[kg_g * 4 + 1] = kg_v.y;
                    kg_af[kg_g * 4 + 2] = kg_v.z; kg_af[kg_g * 4 + 3] = kg_v.w;
                }
#pragma unroll
                for (int kg_g = 0; kg_g < TN / 4; ++kg_g) {
                    const float4 kg_v =
                        *reinterpret_cast<const float4*>(&kg_bs[kg_cur][kg_kk][kg_g * (KG_TX * 4) + kg_tx * 4]);
                    kg_bf[kg_g * 4 + 0] = kg_v.x; kg_bf[kg_g * 4 + 1] = kg_v.y;
                    kg_bf[kg_g * 4 + 2] = kg_v.z; kg_bf[kg_g * 4 + 3] = kg_v.w;
                }
#pragma unroll
                for (int kg_i = 0; kg_i < TM; ++kg_i)
#pragma unroll
                    for (int kg_j = 0; kg_j < TN; ++kg_j)
                        kg_acc[kg_i][kg_j] = fmaf(kg_af[kg_i], kg_bf[kg_j], kg_acc[kg_i][kg_j]);
            }
        }
        // The idle buffer was last read in step t - 1, before the barrier that ended it.
        if (kg_more) kg_commit(kg_cur ^ 1);
        __syncthreads();
    }

#pragma unroll
    for (int kg_i = 0; kg_i < TM; ++kg_i) {
        const int kg_row = kg_row0 + (kg_i / 4) * (KG_TY * 4) + kg_ty * 4 + (kg_i % 4);
        if (kg_row >= kg_m) continue;
#pragma unroll
        for (int kg_j = 0; kg_j < TN; ++kg_j) {
            const int kg_col = kg_col0 + (kg_j / 4) * (KG_TX * 4) + kg_tx * 4 + (kg_j % 4);
            if (kg_col < kg_n) kagent_epilogue({{args}}, kg_p, kg_row, kg_col, kg_acc[kg_i][kg_j]);
        }
    }
}
