// @kagent entry: matmul_bias_relu
// @kagent grid: ceil_div(n, BN), ceil_div(m, BM)
// @kagent block: (BM // TM) * (BN // TN)
// @kagent smem: 0
// @kagent knob BM [launch]: 128 64
// @kagent knob BN [launch]: 128 64
// @kagent knob TM [compute]: 8 4
// @kagent knob TN [compute]: 8 4
// @kagent knob BK [memory]: 8 16
//
// Expert SGEMM with a fused bias + ReLU epilogue (FFMA, no TF32).
// A block computes a BM x BN tile of y with (BM/TM) * (BN/TN) threads, each
// owning a TM x TN register tile. K is walked in BK-deep slabs: A's slab is
// stored transposed (As[k][m], padded) and B's as is (Bs[k][n]), both double
// buffered in shared memory; the next slab is prefetched into registers while
// the current one is multiplied, so there is one barrier per slab.
// A thread's rows are TM/4 groups of 4 consecutive rows, spaced BM/TM*4 apart
// (and likewise its columns), so its shared-memory fragments are float4 reads
// without bank conflicts and its output rows are written as coalesced float4s.
// Global loads are float4 when k % 4 == 0 and n % 4 == 0 and A, B are 16-byte
// aligned; otherwise scalar. Out-of-range elements load as 0 (they add
// nothing) and out-of-range outputs are not written, so any m, n, k >= 1 work.

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

#define TX (BN / TN)              // threads along n
#define TY (BM / TM)              // threads along m
#define THREADS (TX * TY)
#define APAD 4                    // As row padding (keeps float4 alignment, spreads banks)

static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are made of float4 groups");
static_assert(BM % TM == 0 && BN % TN == 0, "tile sizes must divide");
static_assert(BK % 4 == 0, "BK must be a multiple of 4");
static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps, at most 1024 threads");

// Per-thread counts of the cooperative slab loads.
#define A_VECS (BM * BK / 4)
#define B_VECS (BK * BN / 4)
#define A_VLOADS ((A_VECS + THREADS - 1) / THREADS)
#define B_VLOADS ((B_VECS + THREADS - 1) / THREADS)

// Registers: the accumulators, fragments (double, for software pipelining) and
// prefetch registers plus ~24 for addresses. Where that budget fits two blocks
// per SM, ask for two (an 8x8 tile with BK = 8 fits two 256-thread blocks in
// 128 registers); asking for more only makes ptxas spill.
#define EST_REGS (TM * TN + 2 * (TM + TN) + 4 * (A_VLOADS + B_VLOADS) + 24)
#define MIN_BLOCKS (65536 / (THREADS * EST_REGS) >= 2 ? 2 : 1)

struct Smem {
    float a[2][BK][BM + APAD];
    float b[2][BK][BN];
};

// Slab loaders. VECTOR: float4 along k for A and along n for B (needs
// k % 4 == 0, n % 4 == 0), staged in registers.
template <bool VECTOR> struct Loader;

template <> struct Loader<true> {
    float4 ra[A_VLOADS], rb[B_VLOADS];
    // Global -> registers; the registers go to shared memory in commit(), after the FMAs.
    __device__ __forceinline__ void fetch(const float* __restrict__ a, const float* __restrict__ b, int m,
                                          int n, int k, int bm, int bn, int k0, Smem&, int) {
        const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int l = 0; l < A_VLOADS; ++l) {
            const int i = threadIdx.x + l * THREADS;
            const int row = i / (BK / 4), kq = i % (BK / 4);
            const int gr = bm + row, gk = k0 + kq * 4;
            ra[l] = (i < A_VECS && gr < m && gk < k)
                        ? __ldg(reinterpret_cast<const float4*>(a + (size_t)gr * k + gk)) : zero;
        }
#pragma unroll
        for (int l = 0; l < B_VLOADS; ++l) {
            const int i = threadIdx.x + l * THREADS;
            const int kk = i / (BN / 4), cq = i % (BN / 4);
            const int gk = k0 + kk, gc = bn + cq * 4;
            rb[l] = (i < B_VECS && gk < k && gc < n)
                        ? __ldg(reinterpret_cast<const float4*>(b + (size_t)gk * n + gc)) : zero;
        }
    }
    __device__ __forceinline__ void commit(Smem& s, int buf) const {
#pragma unroll
        for (int l = 0; l < A_VLOADS; ++l) {
            const int i = threadIdx.x + l * THREADS;
            if (A_VECS % THREADS == 0 || i < A_VECS) {
                const int row = i / (BK / 4), kq = i % (BK / 4);
                s.a[buf][kq * 4 + 0][row] = ra[l].x;
                s.a[buf][kq * 4 + 1][row] = ra[l].y;
                s.a[buf][kq * 4 + 2][row] = ra[l].z;
                s.a[buf][kq * 4 + 3][row] = ra[l].w;
            }
        }
#pragma unroll
        for (int l = 0; l < B_VLOADS; ++l) {
            const int i = threadIdx.x + l * THREADS;
            if (B_VECS % THREADS == 0 || i < B_VECS) {
                const int kk = i / (BN / 4), cq = i % (BN / 4);
                *reinterpret_cast<float4*>(&s.b[buf][kk][cq * 4]) = rb[l];
            }
        }
    }
};

// Scalar fallback (odd sizes): no register staging; fetch() writes the next
// slab straight into the idle shared buffer (safe for the same reason as the
// vector path's commit()), commit() has nothing left to do.
template <> struct Loader<false> {
    __device__ __forceinline__ void fetch(const float* __restrict__ a, const float* __restrict__ b, int m,
                                          int n, int k, int bm, int bn, int k0, Smem& s, int buf) {
        for (int i = threadIdx.x; i < BM * BK; i += THREADS) {
            const int row = i / BK, kk = i % BK;
            const int gr = bm + row, gk = k0 + kk;
            s.a[buf][kk][row] = (gr < m && gk < k) ? __ldg(a + (size_t)gr * k + gk) : 0.f;
        }
        for (int i = threadIdx.x; i < BK * BN; i += THREADS) {
            const int kk = i / BN, c = i % BN;
            const int gk = k0 + kk, gc = bn + c;
            s.b[buf][kk][c] = (gk < k && gc < n) ? __ldg(b + (size_t)gk * n + gc) : 0.f;
        }
    }
    __device__ __forceinline__ void commit(Smem&, int) const {}
};

template <bool VECTOR>
__device__ __forceinline__ void gemm(const float* __restrict__ a, const float* __restrict__ b,
                                     const float* __restrict__ bias, float* __restrict__ y, int m, int n,
                                     int k, Smem& s) {
    const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    Loader<VECTOR> ld;
    const int slabs = (k + BK - 1) / BK;
    ld.fetch(a, b, m, n, k, bm, bn, 0, s, 0);
    ld.commit(s, 0);
    __syncthreads();

    for (int t = 0; t < slabs; ++t) {
        const int cur = t & 1;
        // Prefetch the next slab (into registers, or for the scalar path straight into
        // the idle buffer cur ^ 1, last read in iteration t-1, before the barrier that
        // ended it); its latency hides behind the FMAs below.
        if (t + 1 < slabs) ld.fetch(a, b, m, n, k, bm, bn, (t + 1) * BK, s, cur ^ 1);
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float af[TM], bf[TN];
#pragma unroll
            for (int g = 0; g < TM / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(&s.a[cur][kk][g * (TY * 4) + ty * 4]);
                af[g * 4 + 0] = v.x; af[g * 4 + 1] = v.y; af[g * 4 + 2] = v.z; af[g * 4 + 3] = v.w;
            }
#pragma unroll
            for (int g = 0; g < TN / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(&s.b[cur][kk][g * (TX * 4) + tx * 4]);
                bf[g * 4 + 0] = v.x; bf[g * 4 + 1] = v.y; bf[g * 4 + 2] = v.z; bf[g * 4 + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(af[i], bf[j], acc[i][j]);
        }
        if (t + 1 < slabs) ld.commit(s, cur ^ 1);
        __syncthreads();
    }

    // Epilogue: + bias, ReLU, store (float4 where the row is 16-byte aligned and n % 4 == 0).
    const bool vec_out = (n % 4 == 0) && ((unsigned long long)y % 16 == 0);
#pragma unroll
    for (int g = 0; g < TN / 4; ++g) {
        const int col = bn + g * (TX * 4) + tx * 4;
        if (col >= n) continue;
        float bv[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) bv[e] = col + e < n ? __ldg(bias + col + e) : 0.f;
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = bm + (i / 4) * (TY * 4) + ty * 4 + (i % 4);
            if (row >= m) continue;
            float o[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) o[e] = fmaxf(acc[i][g * 4 + e] + bv[e], 0.f);
            float* dst = y + (size_t)row * n + col;
            if (vec_out) {
                *reinterpret_cast<float4*>(dst) = make_float4(o[0], o[1], o[2], o[3]);
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    if (col + e < n) dst[e] = o[e];
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
matmul_bias_relu(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ bias,
                 float* __restrict__ y, int m, int n, int k) {
    __shared__ __align__(16) Smem s;
    const bool vec_in = (k % 4 == 0) && (n % 4 == 0) &&
                        (((unsigned long long)a | (unsigned long long)b) % 16 == 0);
    if (vec_in) gemm<true>(a, b, bias, y, m, n, k, s);
    else gemm<false>(a, b, bias, y, m, n, k, s);
}
