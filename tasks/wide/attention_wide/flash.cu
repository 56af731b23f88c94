// @kagent entry: attention_partial
// @kagent grid: ceil_div(seq, BLOCK_Q), KSPLIT, ceil_div(d, 64)
// @kagent block: 16 * BLOCK_Q // ROWS
// @kagent smem: 4 * (BLOCK_Q * (round_up(d, 32) + 4) + 2 * BLOCK_K * (round_up(d, 32) + 4 + 64) + BLOCK_Q * (BLOCK_K + 4))
// @kagent params: q, k, v, o_part, m_part, l_part, seq, d
// @kagent entry: attention_combine
// @kagent grid: ceil_div(seq * d, 256)
// @kagent block: 256
// @kagent smem: 0
// @kagent params: o_part, m_part, l_part, out, seq, d
// @kagent scratch o_part: KSPLIT * seq * d float32
// @kagent scratch m_part: KSPLIT * seq float32
// @kagent scratch l_part: KSPLIT * seq float32
// @kagent knob BLOCK_Q [launch]: 64 32 128 16 256
// @kagent knob BLOCK_K [memory]: 64 32 16 128
// @kagent knob KSPLIT [launch]: 4 1 8 2 16
// @kagent knob ROWS [compute]: 4 2 1 8
// @kagent knob PV_UNROLL [compute]: 4 1 8
// @kagent knob MIN_BLOCKS [launch]: 1 2
//
// WIDE SPACE (tasks/wide): the expert kernel of tasks/level2/attention/flash.cu with its knobs
// widened to 2,400 combinations: 16 to 256 queries and 16 to 128 keys per tile, 1 to 16 key
// splits, 1 to 8 query rows per thread, the unroll factor of the P V loop, and the minimum blocks
// per multiprocessor of the launch bounds (2 caps the registers: spills). Combinations that cannot
// work fail loudly: more than 1024 threads (16 * BLOCK_Q / ROWS: static_assert, and the block
// directive), and shared memory over the 227 KiB a block may have (large BLOCK_Q with large
// BLOCK_K, worst at the check size d = 127: a resource error before launch).
//
// Expert attention, flash-attention style on CUDA cores (fp32 FFMA), in two
// launches:
//
// 1. attention_partial: a CTA takes BLOCK_Q queries (held in shared memory),
//    one of KSPLIT contiguous ranges of keys (split-K, so seq = 4096 still
//    fills the GPU: 64 query blocks x 4 splits) and one 64-wide slice of the
//    head dimension for v and the output (grid.z; one slice when d <= 64).
//    It walks its keys in BLOCK_K-key tiles: K and V tiles are double buffered
//    in shared memory and the next tile is fetched with cp.async while the
//    current one is used. Per tile: S = Q K^T in registers, an online softmax
//    (running max m and sum l per query, in the log2 domain), P through shared
//    memory, O += P V in registers. It writes its unnormalised O, m and l.
// 2. attention_combine merges the KSPLIT partial results of each query:
//    out = sum_s 2^(m_s - M) O_s / sum_s 2^(m_s - M) l_s, M = max_s m_s.
//
// Thread layout: 16 lanes (half a warp) share each group of ROWS consecutive
// queries; lane tx scores keys tx, tx + 16, ... of the tile (so K rows are read
// conflict-free, the K row stride being 4 mod 32 words) and owns output dims
// 4 tx .. 4 tx + 3 of the slice. Row max and sum reductions are 16-lane
// butterfly shuffles inside the warp.
//
// Any d >= 1 works (shared memory grows with d; in this wide space large tiles at d = 127 exceed
// the limit and fail before launch): columns of Q and K past d are zero in shared memory, dims of V past
// d are zero, keys past seq score -inf, queries past seq are computed on zeros
// and never stored. cp.async (16-byte chunks) is used when d % 4 == 0 and q, k,
// v are 16-byte aligned, plain loads otherwise.

#ifndef BLOCK_Q
#define BLOCK_Q 64
#endif
#ifndef BLOCK_K
#define BLOCK_K 64
#endif
#ifndef KSPLIT
#define KSPLIT 4
#endif
#ifndef ROWS
#define ROWS 4
#endif
#ifndef PV_UNROLL
#define PV_UNROLL 4
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

#define PRAGMA_(x) _Pragma(#x)
#define PRAGMA(x) PRAGMA_(x)

#define TX 16                          // lanes per query group
#define TY (BLOCK_Q / ROWS)            // query groups per CTA
#define THREADS (TX * TY)
#define RK (BLOCK_K / TX)              // keys per lane per tile
#define DV 64                          // output dims per CTA (one float4 per lane)
#define PSTRIDE (BLOCK_K + 4)          // row stride of P in shared memory
#define LOG2E 1.4426950408889634f

static_assert(BLOCK_Q % ROWS == 0 && THREADS % 32 == 0 && THREADS <= 1024, "bad BLOCK_Q / ROWS");
static_assert(BLOCK_K % TX == 0 && BLOCK_K % 4 == 0, "BLOCK_K must be a multiple of 16");
static_assert(DV == 4 * TX, "each lane owns one float4 of the output slice");

// ---- cp.async helpers (sm_80+) ----
// Copies 16 bytes global -> shared; src_bytes = 0 writes 16 zero bytes and reads nothing.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
    const unsigned saddr = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr), "l"(src), "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// Rows [r0, r0 + nrows) of a (seq, d) matrix into dst[r * dp + c] for c < round_up(d, 4),
// zero where r >= seq or c >= d.
template <bool ASYNC>
__device__ __forceinline__ void load_rows(float* dst, const float* __restrict__ src, int r0, int nrows, int seq,
                                          int d, int dp) {
    if (ASYNC) {   // d % 4 == 0: 16-byte chunks, each wholly inside or outside the matrix
        const int per_row = d >> 2;
        for (int i = threadIdx.x; i < nrows * per_row; i += THREADS) {
            const int r = i / per_row, c = (i - r * per_row) * 4;
            const bool ok = r0 + r < seq;
            cp_async16(dst + r * dp + c, ok ? src + (size_t)(r0 + r) * d + c : src, ok ? 16 : 0);
        }
    } else {
        const int dq = (d + 3) & ~3;
        for (int i = threadIdx.x; i < nrows * dq; i += THREADS) {
            const int r = i / dq, c = i - r * dq;
            dst[r * dp + c] = (r0 + r < seq && c < d) ? __ldg(src + (size_t)(r0 + r) * d + c) : 0.0f;
        }
    }
}

// Keys [r0, r0 + BLOCK_K), dims [dv0, dv0 + DV) of v into dst[r * DV + c], zero outside.
template <bool ASYNC>
__device__ __forceinline__ void load_v(float* dst, const float* __restrict__ v, int r0, int dv0, int seq, int d) {
    if (ASYNC) {
        for (int i = threadIdx.x; i < BLOCK_K * (DV / 4); i += THREADS) {
            const int r = i / (DV / 4), c = (i % (DV / 4)) * 4;
            const bool ok = r0 + r < seq && dv0 + c < d;
            cp_async16(dst + r * DV + c, ok ? v + (size_t)(r0 + r) * d + dv0 + c : v, ok ? 16 : 0);
        }
    } else {
        for (int i = threadIdx.x; i < BLOCK_K * DV; i += THREADS) {
            const int r = i / DV, c = i % DV;
            dst[r * DV + c] = (r0 + r < seq && dv0 + c < d) ? __ldg(v + (size_t)(r0 + r) * d + dv0 + c) : 0.0f;
        }
    }
}

template <bool ASYNC>
__device__ __forceinline__ void partial(const float* __restrict__ q, const float* __restrict__ k,
                                        const float* __restrict__ v, float* __restrict__ o_part,
                                        float* __restrict__ m_part, float* __restrict__ l_part, int seq, int d,
                                        float* smem) {
    const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
    const int q0 = blockIdx.x * BLOCK_Q;
    const int split = blockIdx.y;
    const int dv0 = blockIdx.z * DV;
    const int dp = ((d + 31) & ~31) + 4;   // Q/K row stride: 4 mod 32 words, float4-aligned
    const int dq = (d + 3) & ~3;           // columns the score loop reads (zero past d)

    float* Qs = smem;                                  // [BLOCK_Q][dp]
    float* Ks = Qs + BLOCK_Q * dp;                     // [2][BLOCK_K][dp]
    float* Vs = Ks + 2 * BLOCK_K * dp;                 // [2][BLOCK_K][DV]
    float* Ps = Vs + 2 * BLOCK_K * DV;                 // [BLOCK_Q][PSTRIDE]

    // This CTA's key tiles.
    const int tiles = (seq + BLOCK_K - 1) / BLOCK_K;
    const int per_split = (tiles + KSPLIT - 1) / KSPLIT;
    const int t_begin = split * per_split;
    const int t_end = min(t_begin + per_split, tiles);

    if (t_begin >= t_end) {   // an empty split (short sequences): contributes nothing
        if (blockIdx.z == 0 && tx == 0) {
#pragma unroll
            for (int i = 0; i < ROWS; ++i) {
                const int row = q0 + ty * ROWS + i;
                if (row < seq) {
                    m_part[(size_t)split * seq + row] = -INFINITY;
                    l_part[(size_t)split * seq + row] = 0.0f;
                }
            }
        }
        return;   // uniform over the CTA: no barrier is skipped by only some threads
    }

    const float scale2 = LOG2E / sqrtf((float)d);   // softmax in base 2: 2^(s * log2 e)
    float m[ROWS], l[ROWS], o[ROWS][4];
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
        m[i] = -INFINITY;
        l[i] = 0.0f;   // this lane's share of the row sum; reduced over the 16 lanes at the end
#pragma unroll
        for (int e = 0; e < 4; ++e) o[i][e] = 0.0f;
    }

    load_rows<ASYNC>(Qs, q, q0, BLOCK_Q, seq, d, dp);
    load_rows<ASYNC>(Ks, k, t_begin * BLOCK_K, BLOCK_K, seq, d, dp);
    load_v<ASYNC>(Vs, v, t_begin * BLOCK_K, dv0, seq, d);
    if (ASYNC) cp_async_commit();

    for (int t = t_begin; t < t_end; ++t) {
        const int st = (t - t_begin) & 1;
        const int key0 = t * BLOCK_K;
        if (ASYNC) cp_async_wait_all();
        // Tile t has landed (all threads' copies); every thread has finished tile t-1,
        // so stage st ^ 1 and P are free.
        __syncthreads();
        if (t + 1 < t_end) {
            load_rows<ASYNC>(Ks + (st ^ 1) * BLOCK_K * dp, k, key0 + BLOCK_K, BLOCK_K, seq, d, dp);
            load_v<ASYNC>(Vs + (st ^ 1) * BLOCK_K * DV, v, key0 + BLOCK_K, dv0, seq, d);
            if (ASYNC) cp_async_commit();
        }

        // S = Q K^T for rows ty*ROWS + i, keys tx + j*TX.
        const float* kt = Ks + st * BLOCK_K * dp;
        float s[ROWS][RK];
#pragma unroll
        for (int i = 0; i < ROWS; ++i)
#pragma unroll
            for (int j = 0; j < RK; ++j) s[i][j] = 0.0f;
        // Not unrolled: one iteration already has ROWS + RK independent float4 loads and
        // 4 * ROWS * RK FMAs, and unrolling makes ptxas spill.
#pragma unroll 1
        for (int c = 0; c < dq; c += 4) {
            float4 qv[ROWS], kv[RK];
#pragma unroll
            for (int i = 0; i < ROWS; ++i) qv[i] = *reinterpret_cast<const float4*>(Qs + (ty * ROWS + i) * dp + c);
#pragma unroll
            for (int j = 0; j < RK; ++j) kv[j] = *reinterpret_cast<const float4*>(kt + (tx + j * TX) * dp + c);
#pragma unroll
            for (int i = 0; i < ROWS; ++i)
#pragma unroll
                for (int j = 0; j < RK; ++j) {
                    s[i][j] = fmaf(qv[i].x, kv[j].x, s[i][j]);
                    s[i][j] = fmaf(qv[i].y, kv[j].y, s[i][j]);
                    s[i][j] = fmaf(qv[i].z, kv[j].z, s[i][j]);
                    s[i][j] = fmaf(qv[i].w, kv[j].w, s[i][j]);
                }
        }

        // Online softmax. Key key0 (lane 0, j = 0) is always < seq, so each row's
        // tile max is finite.
#pragma unroll
        for (int i = 0; i < ROWS; ++i) {
            float mx = -INFINITY;
#pragma unroll
            for (int j = 0; j < RK; ++j) {
                s[i][j] = key0 + tx + j * TX < seq ? s[i][j] * scale2 : -INFINITY;
                mx = fmaxf(mx, s[i][j]);
            }
#pragma unroll
            for (int off = TX / 2; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            const float mnew = fmaxf(m[i], mx);
            const float alpha = exp2f(m[i] - mnew);   // first tile: 2^-inf = 0
            m[i] = mnew;
            l[i] *= alpha;
#pragma unroll
            for (int e = 0; e < 4; ++e) o[i][e] *= alpha;
            float* prow = Ps + (ty * ROWS + i) * PSTRIDE;
#pragma unroll
            for (int j = 0; j < RK; ++j) {
                const float p = exp2f(s[i][j] - mnew);   // 0 for keys past seq
                l[i] += p;
                prow[tx + j * TX] = p;
            }
        }
        __syncthreads();   // P complete

        // O += P V over the tile's keys (this lane's 4 dims).
        const float* vt = Vs + st * BLOCK_K * DV + tx * 4;
        PRAGMA(unroll PV_UNROLL)
        for (int kk = 0; kk < BLOCK_K; kk += 4) {
            float4 pv[ROWS];
#pragma unroll
            for (int i = 0; i < ROWS; ++i) pv[i] = *reinterpret_cast<const float4*>(Ps + (ty * ROWS + i) * PSTRIDE + kk);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float4 vv = *reinterpret_cast<const float4*>(vt + (kk + e) * DV);
#pragma unroll
                for (int i = 0; i < ROWS; ++i) {
                    const float p = e == 0 ? pv[i].x : e == 1 ? pv[i].y : e == 2 ? pv[i].z : pv[i].w;
                    o[i][0] = fmaf(p, vv.x, o[i][0]);
                    o[i][1] = fmaf(p, vv.y, o[i][1]);
                    o[i][2] = fmaf(p, vv.z, o[i][2]);
                    o[i][3] = fmaf(p, vv.w, o[i][3]);
                }
            }
        }
    }

    // Write the unnormalised partial output, the max and the sum.
    const bool vec_out = (d % 4 == 0) && ((unsigned long long)o_part % 16 == 0);
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
        float li = l[i];
#pragma unroll
        for (int off = TX / 2; off > 0; off >>= 1) li += __shfl_xor_sync(0xffffffffu, li, off);
        const int row = q0 + ty * ROWS + i;
        if (row >= seq) continue;
        const int c = dv0 + tx * 4;
        float* dst = o_part + ((size_t)split * seq + row) * d + c;
        if (vec_out) {
            if (c < d) *reinterpret_cast<float4*>(dst) = make_float4(o[i][0], o[i][1], o[i][2], o[i][3]);
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e)
                if (c + e < d) dst[e] = o[i][e];
        }
        if (blockIdx.z == 0 && tx == 0) {
            m_part[(size_t)split * seq + row] = m[i];
            l_part[(size_t)split * seq + row] = li;
        }
    }
}

// (An explicit minimum of one block by default: without it ptxas trades registers for
// occupancy and spills a few bytes in several configurations.)
extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
attention_partial(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                  float* __restrict__ o_part, float* __restrict__ m_part, float* __restrict__ l_part, int seq,
                  int d) {
    extern __shared__ __align__(16) float smem[];
    const bool async = (d % 4 == 0) &&
                       (((unsigned long long)q | (unsigned long long)k | (unsigned long long)v) % 16 == 0);
    if (async) partial<true>(q, k, v, o_part, m_part, l_part, seq, d, smem);
    else partial<false>(q, k, v, o_part, m_part, l_part, seq, d, smem);
}

// out[row, c] = sum_s 2^(m_s - M) O_s[row, c] / sum_s 2^(m_s - M) l_s. Split 0 is never
// empty, so M is finite and the denominator >= 1; empty splits (m = -inf) are skipped.
extern "C" __global__ void __launch_bounds__(256)
attention_combine(const float* __restrict__ o_part, const float* __restrict__ m_part,
                  const float* __restrict__ l_part, float* __restrict__ out, int seq, int d) {
    const long long idx = (long long)blockIdx.x * 256 + threadIdx.x;
    if (idx >= (long long)seq * d) return;
    const int row = (int)(idx / d);
    float mmax = -INFINITY;
#pragma unroll
    for (int s = 0; s < KSPLIT; ++s) mmax = fmaxf(mmax, m_part[(size_t)s * seq + row]);
    float num = 0.0f, den = 0.0f;
#pragma unroll
    for (int s = 0; s < KSPLIT; ++s) {
        const float ms = m_part[(size_t)s * seq + row];
        if (ms == -INFINITY) continue;
        const float w = exp2f(ms - mmax);
        den = fmaf(w, l_part[(size_t)s * seq + row], den);
        num = fmaf(w, o_part[(size_t)s * seq * d + idx], num);
    }
    out[idx] = num / den;
}
