// @kagent entry: matmul
// @kagent grid: ceil_div(n, BN), ceil_div(m, BM)
// @kagent block: (BM // TM) * (BN // TN)
// @kagent smem: (1 + DOUBLE_BUFFER) * BK * (BM + 4 + BN) * 4
// @kagent knob BM [launch]: 128 64 256 32
// @kagent knob BN [launch]: 128 64 256 32
// @kagent knob TM [compute]: 8 4 16
// @kagent knob TN [compute]: 8 4 16
// @kagent knob BK [memory]: 8 16 32 64
// @kagent knob UNROLL [compute]: 8 1 4
// @kagent knob DOUBLE_BUFFER [memory]: 1 0
//
// WIDE SPACE (tasks/wide): the expert kernel of tasks/level1/matmul_fp32/tiled.cu with its knobs
// widened to 3,456 combinations: the thread tile split into TM x TN (4, 8 or 16 each), block tiles
// from 32 to 256, BK up to 64, and double buffering made optional. Combinations that cannot work fail
// loudly: fewer than 32 or more than 1024 threads (static_assert, and the block directive over 1024),
// shared memory over the 227 KiB a block may have (BM = BN = 256 with BK = 64, double-buffered:
// a resource error before launch); TM = TN = 16 needs more than 255 registers and spills (slow, but
// correct). With DOUBLE_BUFFER = 0 one shared tile is used: the next tile waits in registers (fast
// path) or is copied after a barrier (scalar path).
//
// Expert fp32 SGEMM: shared-memory tiling with register blocking.
//
// Each block computes a BM x BN tile of C; each thread a TM x TN
// micro-tile held in registers. Per k-step of BK, the block stages a BM x BK tile
// of A (stored transposed, k-major, so a thread reads its rows as float4s) and a
// BK x BN tile of B in shared memory. The tiles are double-buffered: the next
// tile is fetched from global memory into registers while the current one is
// multiplied, then written to the other shared buffer, one barrier per step.
//
// A thread's micro-tile is not contiguous: its rows (and columns) come in groups
// of 4 spaced 4 * BM / TM (4 * BN / TN) apart, so the float4 shared-memory reads of a
// quarter-warp cover 128 contiguous bytes (no bank conflicts), and the float4
// stores of C by a warp are contiguous.
//
// Edges: loads outside A or B are zero-filled in shared memory (so partial tiles
// add nothing), stores outside C are skipped. float4 global loads/stores are used
// only when k and n are multiples of 4 and every buffer is 16-byte aligned;
// otherwise a scalar path with per-element guards is used (template V = 1).

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
#ifndef DOUBLE_BUFFER
#define DOUBLE_BUFFER 1
#endif

#define NBUF (1 + DOUBLE_BUFFER)   // shared tiles of A and of B
#define THREADS ((BM / TM) * (BN / TN))
#define AS_LD (BM + 4)   // padded row of transposed A: conflict-free transposing stores
#define BS_LD BN

static_assert(TM % 4 == 0 && TN % 4 == 0, "TM and TN must be multiples of 4");
static_assert(DOUBLE_BUFFER == 0 || DOUBLE_BUFFER == 1, "DOUBLE_BUFFER is 0 or 1");
static_assert(BM % TM == 0 && BN % TN == 0, "tile must divide the block tile");
static_assert(BK % 4 == 0, "BK must be a multiple of 4");
static_assert(BK % UNROLL == 0, "UNROLL must divide BK");
static_assert(THREADS >= 32 && THREADS <= 1024, "bad thread count");

// Rows of the micro-tile: group g (of TM/4) starts at g * ROW_STRIDE + ty * 4.
#define ROW_STRIDE (4 * BM / TM)
#define COL_STRIDE (4 * BN / TN)

// Fast path (k, n multiples of 4, aligned buffers): one k-tile is fetched from
// global memory as float4s into registers (while the previous tile is being
// multiplied), then written to shared memory. Vectors never straddle an edge:
// k % 4 == 0 and the vector starts at a multiple of 4, so it is wholly inside
// or wholly outside the matrix (then zero-filled).
struct Stage {
    static constexpr int A_PER_ROW = BK / 4;                // float4s per row of the A tile
    static constexpr int A_VECS = BM * A_PER_ROW;
    static constexpr int A_ITERS = (A_VECS + THREADS - 1) / THREADS;
    static constexpr int B_PER_ROW = BN / 4;                // float4s per row of the B tile
    static constexpr int B_VECS = BK * B_PER_ROW;
    static constexpr int B_ITERS = (B_VECS + THREADS - 1) / THREADS;

    float4 ra[A_ITERS];
    float4 rb[B_ITERS];

    __device__ __forceinline__ void load(const float* __restrict__ A, const float* __restrict__ B, int m, int n,
                                         int k, int row0, int col0, int k0, int tid) {
#pragma unroll
        for (int it = 0; it < A_ITERS; ++it) {
            const int idx = tid + it * THREADS;
            const int gr = row0 + idx / A_PER_ROW, gc = k0 + (idx % A_PER_ROW) * 4;
            ra[it] = make_float4(0.f, 0.f, 0.f, 0.f);
            if ((A_VECS % THREADS == 0 || idx < A_VECS) && gr < m && gc < k)
                ra[it] = *reinterpret_cast<const float4*>(A + (size_t)gr * k + gc);
        }
#pragma unroll
        for (int it = 0; it < B_ITERS; ++it) {
            const int idx = tid + it * THREADS;
            const int gr = k0 + idx / B_PER_ROW, gc = col0 + (idx % B_PER_ROW) * 4;
            rb[it] = make_float4(0.f, 0.f, 0.f, 0.f);
            if ((B_VECS % THREADS == 0 || idx < B_VECS) && gr < k && gc < n)
                rb[it] = *reinterpret_cast<const float4*>(B + (size_t)gr * n + gc);
        }
    }

    __device__ __forceinline__ void store(float* __restrict__ As, float* __restrict__ Bs, int tid) const {
#pragma unroll
        for (int it = 0; it < A_ITERS; ++it) {
            const int idx = tid + it * THREADS;
            if (A_VECS % THREADS == 0 || idx < A_VECS) {
                const int r = idx / A_PER_ROW, c = (idx % A_PER_ROW) * 4;
                As[(c + 0) * AS_LD + r] = ra[it].x;   // transposed: k-major
                As[(c + 1) * AS_LD + r] = ra[it].y;
                As[(c + 2) * AS_LD + r] = ra[it].z;
                As[(c + 3) * AS_LD + r] = ra[it].w;
            }
        }
#pragma unroll
        for (int it = 0; it < B_ITERS; ++it) {
            const int idx = tid + it * THREADS;
            if (B_VECS % THREADS == 0 || idx < B_VECS) {
                const int r = idx / B_PER_ROW, c = (idx % B_PER_ROW) * 4;
                *reinterpret_cast<float4*>(Bs + r * BS_LD + c) = rb[it];
            }
        }
    }
};

// Scalar fallback (odd sizes): copy straight into shared memory, per-element guards.
__device__ __forceinline__ void copy_tile(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ As, float* __restrict__ Bs, int m, int n, int k,
                                          int row0, int col0, int k0, int tid) {
    for (int idx = tid; idx < BM * BK; idx += THREADS) {
        const int r = idx / BK, c = idx % BK;
        const int gr = row0 + r, gc = k0 + c;
        As[c * AS_LD + r] = (gr < m && gc < k) ? A[(size_t)gr * k + gc] : 0.f;
    }
    for (int idx = tid; idx < BK * BN; idx += THREADS) {
        const int r = idx / BN, c = idx % BN;
        const int gr = k0 + r, gc = col0 + c;
        Bs[r * BS_LD + c] = (gr < k && gc < n) ? B[(size_t)gr * n + gc] : 0.f;
    }
}

template <int V>
__device__ __forceinline__ void gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                     int m, int n, int k, float* smem) {
    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN), ty = tid / (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float* As0 = smem;                         // [NBUF][BK][AS_LD]
    float* Bs0 = smem + NBUF * BK * AS_LD;     // [NBUF][BK][BS_LD]

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    const int ntiles = (k + BK - 1) / BK;
    Stage st;
    if constexpr (V == 4) {
        st.load(A, B, m, n, k, row0, col0, 0, tid);
        st.store(As0, Bs0, tid);
    } else {
        copy_tile(A, B, As0, Bs0, m, n, k, row0, col0, 0, tid);
    }
    __syncthreads();

    for (int t = 0; t < ntiles; ++t) {
        const int buf = DOUBLE_BUFFER ? (t & 1) : 0;
        const int nbuf = DOUBLE_BUFFER ? (buf ^ 1) : 0;   // where tile t + 1 goes
        const float* As = As0 + buf * (BK * AS_LD);
        const float* Bs = Bs0 + buf * (BK * BS_LD);
        const bool more = t + 1 < ntiles;
        if constexpr (V == 4) {
            if (more) st.load(A, B, m, n, k, row0, col0, (t + 1) * BK, tid);   // in flight during the FMAs
        } else if (DOUBLE_BUFFER) {
            // The other buffer was last read in step t - 1, before the barrier that ended it.
            if (more) copy_tile(A, B, As0 + nbuf * (BK * AS_LD), Bs0 + nbuf * (BK * BS_LD),
                                     m, n, k, row0, col0, (t + 1) * BK, tid);
        }

#pragma unroll 1
        for (int k1 = 0; k1 < BK; k1 += UNROLL) {
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int kk = k1 + u;
                float a[TM], b[TN];
#pragma unroll
                for (int g = 0; g < TM / 4; ++g) {
                    const float4 v = *reinterpret_cast<const float4*>(As + kk * AS_LD + g * ROW_STRIDE + ty * 4);
                    a[g * 4 + 0] = v.x; a[g * 4 + 1] = v.y; a[g * 4 + 2] = v.z; a[g * 4 + 3] = v.w;
                }
#pragma unroll
                for (int g = 0; g < TN / 4; ++g) {
                    const float4 v = *reinterpret_cast<const float4*>(Bs + kk * BS_LD + g * COL_STRIDE + tx * 4);
                    b[g * 4 + 0] = v.x; b[g * 4 + 1] = v.y; b[g * 4 + 2] = v.z; b[g * 4 + 3] = v.w;
                }
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
        }

        // Double-buffered: the other buffer was last read in step t - 1, before the barrier that ended
        // it. Single-buffered: every thread must be done reading the one buffer before it is refilled.
        if (!DOUBLE_BUFFER) __syncthreads();
        if constexpr (V == 4) {
            if (more) st.store(As0 + nbuf * (BK * AS_LD), Bs0 + nbuf * (BK * BS_LD), tid);
        } else if (!DOUBLE_BUFFER) {
            if (more) copy_tile(A, B, As0, Bs0, m, n, k, row0, col0, (t + 1) * BK, tid);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + (i / 4) * ROW_STRIDE + ty * 4 + (i % 4);
        if (row >= m) continue;
        float* crow = C + (size_t)row * n;
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            const int col = col0 + g * COL_STRIDE + tx * 4;
            if constexpr (V == 4) {
                // n % 4 == 0 and col % 4 == 0: the 4 columns are all inside or all outside.
                if (col < n)
                    *reinterpret_cast<float4*>(crow + col) =
                        make_float4(acc[i][g * 4 + 0], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (col + j < n) crow[col + j] = acc[i][g * 4 + j];
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
matmul(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m, int n, int k) {
    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);
    const unsigned long long addr = (unsigned long long)a | (unsigned long long)b | (unsigned long long)c;
    if (k % 4 == 0 && n % 4 == 0 && addr % 16 == 0)
        gemm<4>(a, b, c, m, n, k, smem);
    else
        gemm<1>(a, b, c, m, n, k, smem);
}
