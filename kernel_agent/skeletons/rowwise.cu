// @skeleton name: rowwise
// @skeleton summary: each row reduced to statistics (optionally after a first pass, e.g. the row max), then every element mapped with them or one result per row written; BLOCK/ROWS_PER_BLOCK threads a row, the row held in registers, VEC-wide loads with a scalar head and tail, warp shuffles then shared memory
// @skeleton families: rowwise
// @skeleton fits: the main input is ROWS rows of COLS contiguous float32 values each; every row is reduced to a few numbers (max, sums, a dot product), then either each value of the row gives the value at the same column of an output row (softmax, log_softmax, layernorm, rmsnorm, l2-normalize, group_norm) or one result per row is written (row sums, matvec, a loss added atomically)
// @skeleton indices: row < ROWS, col < COLS
// @skeleton slot ROWS [dim]: the number of rows, over the task's dims, e.g. `rows`, or `N * G` for the (sample, group) rows of a tensor
// @skeleton slot COLS [dim]: the number of values in one row (contiguous in memory, fewer than 2^31), e.g. `cols`, or `CG * H * W`
// @skeleton slot IN_ROW [expr]: `const float*` to the first value of input row `row` (a long long), e.g. `x + row * cols`
// @skeleton slot PRE [body, optional]: `float pre(PARAMS, float u, float v)`: every parameter of the task is in scope; a first pass over the row, before ADD: combine two of its values (or partial results) into one; ADD, FINAL, MAP and FINISH then get the whole row's result as `pre` (0 when PRE is empty), e.g. `return fmaxf(u, v);` (the row max) or `return u + v;` (the row sum)
// @skeleton slot STATE [fields]: the members of the per-row statistics struct `s`, 4-byte types (float, int), each with its empty value, e.g. `float m = -INFINITY; float sum = 0.f;`
// @skeleton slot ADD [body]: `void add(PARAMS, State& s, float& v, long long row, int col, float pre)`: every parameter of the task is in scope; fold the value v at column col of the row into s, touching nothing else; you may replace v by the value MAP should get, computed from v, row, col and pre only (never from s), e.g. `v = expf(v - pre); s.sum += v;` (softmax), `s.acc += v * x[col];` (matvec, dot), `s.sq += v * v;` (rmsnorm, norm)
// @skeleton slot MERGE [body]: `void merge(PARAMS, State& s, const State& o)`: every parameter of the task is in scope; fold o, the state of other values of the same row (never empty), into s, e.g. `s.sum += o.sum;` (sum, softmax), `const float m = fmaxf(s.m, o.m); s.sum = s.sum * expf(s.m - m) + o.sum * expf(o.m - m); s.m = m;` (online softmax)
// @skeleton slot FINAL [body, optional]: `void final(PARAMS, long long row, State& s, float pre)`: every parameter of the task is in scope; once s holds the whole row, turn it into what MAP and FINISH use (change only s), e.g. `s.sum = 1.f / s.sum;` (softmax), `s.sq = rsqrtf(s.sq / cols + eps);` (rmsnorm, norm), `s.sum = logf(s.sum);` (log, logsumexp)
// @skeleton slot OUT_ROW [expr, optional]: `float*` to the first value of output row `row`, written by MAP (give both or neither), e.g. `y + row * cols`
// @skeleton slot MAP [body, optional]: `float map(PARAMS, long long row, int col, float v, const State& s, float pre)`: every parameter of the task is in scope; return the output at column col of the row, v being the value there as ADD left it, e.g. `return v * s.sum;` (softmax), `return v * s.sq * gamma[col] + beta[col];` (norm, affine), `return x[row * cols + col] - pre - s.sum;` (log, logsumexp)
// @skeleton slot FINISH [body, optional]: `void finish(PARAMS, long long row, const State& s, float pre)`: every parameter of the task is in scope; run once a row by one thread, after FINAL, to write one result for the row, e.g. `y[row] = s.acc;` (matvec, dot), `atomicAdd(loss, s.sum / batch);` (loss, batchmean)
// @kagent entry: kagent_rowwise
// @kagent grid: ceil_div({{ROWS}}, ROWS_PER_BLOCK)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 128 512 1024
// @kagent knob ROWS_PER_BLOCK [launch]: 1 2 4
// @kagent knob VEC [memory]: 4 1 2
// @kagent knob CACHE_COLS [memory]: 4096 16384
//
// Skeleton `rowwise` (kernel_agent/skeletons/rowwise.cu): BLOCK/ROWS_PER_BLOCK threads (whole
// warps) work on one row, ROWS_PER_BLOCK rows a block, as the suite's rowblock experts do.
//
// - Loads: the row is split into a head of < VEC scalars up to the first VEC-aligned address, VEC-wide
//   vectors, and a tail of < VEC scalars (threads 0..VEC-2 hold one head and one tail value each), so
//   every row, aligned or not, takes the vector path. With a MAP, the first vectors of the row (up to
//   CACHE_COLS columns, within a register budget) are loaded into registers, all loads issued before
//   any arithmetic, and stay there for the map: those columns are read from DRAM once. Columns
//   beyond the cache are streamed UNROLL vectors at a time and re-read by later passes, each walking
//   them the other way from the pass before (it starts on what is likely still in L2); the last
//   read of a streamed value is an evict-first load, and outputs are written with streaming stores.
//   Without a MAP nothing is cached: the row is streamed.
// - Passes: PRE (optional): each thread combines its values with PRE, then the row's threads combine
//   their partials (a block reduction); ADD: each thread folds its values into a State (a cached
//   value may be replaced by what MAP needs, e.g. its exp, so each is transformed once); MERGE
//   combines the threads' states (a second block reduction); FINAL, then MAP writes the output row
//   and FINISH (one thread) a per-row result.
// - Block reductions: a butterfly of warp shuffles (the State moved word by word), one shared-memory
//   exchange of the warps' partials, then a butterfly over them in every warp of the row, so every
//   thread ends with the whole row. Threads holding no value (short rows; rows past the end, which
//   still reach the barriers) are never merged: the threads of a row that hold values are always
//   its first ones, so each shuffle step knows from indices alone whether its partner has any.
//   MERGE therefore never sees an empty state, and PRE needs no identity value.

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 1
#endif
#ifndef VEC
#define VEC 4
#endif
// Row length the register cache is sized for (capped by the register budget below).
#ifndef CACHE_COLS
#define CACHE_COLS 4096
#endif
// Vectors in flight a thread on the streamed (uncached) columns.
#ifndef UNROLL
#define UNROLL 4
#endif

#define KG_TPR (BLOCK / ROWS_PER_BLOCK)   // threads a row
#define KG_WPR (KG_TPR / 32)              // warps a row

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(KG_TPR >= 32 && KG_TPR % 32 == 0 && (KG_WPR & (KG_WPR - 1)) == 0,
              "each row needs a power-of-two number of whole warps (BLOCK / ROWS_PER_BLOCK)");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
static_assert(UNROLL >= 1, "UNROLL must be at least 1");

// Register budget for the row cache: 1024-thread blocks get at most 64 registers a thread,
// smaller blocks can afford more.
#define KG_MAX_FLOATS (16384 / BLOCK < 16 ? 16 : (16384 / BLOCK > 64 ? 64 : 16384 / BLOCK))

// ---- the task's slots -------------------------------------------------------------------------

struct kg_state {
    {{STATE}}
};
static_assert(sizeof(kg_state) % sizeof(unsigned) == 0, "STATE: use 4-byte members (float, int, unsigned)");
constexpr int KG_WORDS = (int)(sizeof(kg_state) / sizeof(unsigned));
typedef kg_state State;  // the contracts' name for it: a fill may declare one (`State t = s;`)

// OUT_ROW left empty reads `kagent_pick_out()`: no output row, no map pass.
struct kg_no_out {};
__device__ __forceinline__ kg_no_out kagent_pick_out() { return kg_no_out(); }
__device__ __forceinline__ float* kagent_pick_out(float* kg_p) { return kg_p; }

__device__ __forceinline__ const float* kagent_in_row({{params}}, long long row) {
    return {{IN_ROW}};
}

__device__ __forceinline__ auto kagent_out_row({{params}}, long long row) {
    return kagent_pick_out{{OUT_ROW}};
}

__device__ __forceinline__ auto kagent_pre({{params}}, float u, float v) {
    {{PRE}}
}

__device__ __forceinline__ void kagent_add({{params}}, kg_state& s, float& v, long long row, int col, float pre) {
    {{ADD}}
}

__device__ __forceinline__ void kagent_merge({{params}}, kg_state& s, const kg_state& o) {
    {{MERGE}}
}

__device__ __forceinline__ void kagent_final({{params}}, long long row, kg_state& s, float pre) {
    {{FINAL}}
}

__device__ __forceinline__ auto kagent_map({{params}}, long long row, int col, float v, const kg_state& s,
                                           float pre) {
    {{MAP}}
}

__device__ __forceinline__ void kagent_finish({{params}}, long long row, const kg_state& s, float pre) {
    {{FINISH}}
}

// ---- which optional slots are filled (an empty body returns void) ----------------------------

template <typename KgT> struct kg_returns;
template <typename KgR, typename... KgA> struct kg_returns<KgR (*)(KgA...)> { typedef KgR type; };
template <typename KgA, typename KgB> struct kg_same { static constexpr bool value = false; };
template <typename KgA> struct kg_same<KgA, KgA> { static constexpr bool value = true; };

typedef kg_returns<decltype(&kagent_out_row)>::type kg_out_t;
constexpr bool kg_has_map = !kg_same<kg_out_t, kg_no_out>::value;
constexpr bool kg_has_pre = !kg_same<kg_returns<decltype(&kagent_pre)>::type, void>::value;
static_assert(kg_has_map == !kg_same<kg_returns<decltype(&kagent_map)>::type, void>::value,
              "OUT_ROW and MAP go together: fill both (an output row) or neither (FINISH writes the result)");

// Vectors of the row each thread keeps in registers (none without a map: the row is streamed).
constexpr int kg_cmin(int a, int b) { return a < b ? a : b; }
constexpr int kg_cmax(int a, int b) { return a > b ? a : b; }
constexpr int KG_CACHE = kg_has_map ? kg_cmin((CACHE_COLS + KG_TPR * VEC - 1) / (KG_TPR * VEC), KG_MAX_FLOATS / VEC) : 0;
// Register use is roughly the cached floats plus ~48 for addresses and statistics; asking for the
// occupancy that budget allows keeps ptxas from spilling or hoarding registers.
constexpr int KG_MIN_BLOCKS = kg_has_map ? kg_cmax(1, 65536 / (BLOCK * (KG_CACHE * VEC + 48))) : 1;

// ---- vectors ----------------------------------------------------------------------------------

template <int V> struct kg_vec;
template <> struct kg_vec<1> {
    float v[1];
    __device__ __forceinline__ void load(const float* p) { v[0] = *p; }
    __device__ __forceinline__ void load_last(const float* p) { v[0] = __ldcs(p); }
    __device__ __forceinline__ void store(float* p, bool) const { __stcs(p, v[0]); }
};
template <> struct kg_vec<2> {
    float v[2];
    __device__ __forceinline__ void load(const float* p) {
        const float2 t = *reinterpret_cast<const float2*>(p); v[0] = t.x; v[1] = t.y;
    }
    __device__ __forceinline__ void load_last(const float* p) {
        const float2 t = __ldcs(reinterpret_cast<const float2*>(p)); v[0] = t.x; v[1] = t.y;
    }
    __device__ __forceinline__ void store(float* p, bool aligned) const {
        if (aligned) __stcs(reinterpret_cast<float2*>(p), make_float2(v[0], v[1]));
        else { __stcs(p, v[0]); __stcs(p + 1, v[1]); }
    }
};
template <> struct kg_vec<4> {
    float v[4];
    __device__ __forceinline__ void load(const float* p) {
        const float4 t = *reinterpret_cast<const float4*>(p); v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
    }
    __device__ __forceinline__ void load_last(const float* p) {
        const float4 t = __ldcs(reinterpret_cast<const float4*>(p)); v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
    }
    __device__ __forceinline__ void store(float* p, bool aligned) const {
        if (aligned) __stcs(reinterpret_cast<float4*>(p), make_float4(v[0], v[1], v[2], v[3]));
        else {
#pragma unroll
            for (int j = 0; j < 4; ++j) __stcs(p + j, v[j]);
        }
    }
};

// ---- block reductions over the threads of one row ---------------------------------------------

template <typename KgT>
__device__ __forceinline__ KgT kagent_shfl_xor(const KgT& kg_v, int kg_o) {
    constexpr int KG_N = (int)(sizeof(KgT) / sizeof(unsigned));
    unsigned kg_w[KG_N];
    memcpy(kg_w, &kg_v, sizeof(KgT));
#pragma unroll
    for (int kg_i = 0; kg_i < KG_N; ++kg_i) kg_w[kg_i] = __shfl_xor_sync(0xffffffffu, kg_w[kg_i], kg_o);
    KgT kg_r;
    memcpy(&kg_r, kg_w, sizeof(KgT));
    return kg_r;
}

// Combine kg_v over the row's threads. Threads 0..kg_cnt-1 of the row hold values, the others
// none: after the step of stride o, a lane holds the aligned group of 2o lanes around it, and a
// group holds values exactly when its first thread does. Every thread of the block must call it
// (a barrier when a row spans warps); each thread of the row gets the whole row. Each call site
// passes its own shared buffer (KG_N words a warp), so two reductions need no barrier between them.
template <typename KgT, typename KgMerge>
__device__ __forceinline__ KgT kagent_row_reduce(KgT kg_v, int kg_cnt, unsigned* kg_buf, KgMerge kg_merge) {
    constexpr int KG_N = (int)(sizeof(KgT) / sizeof(unsigned));
    const int kg_lane = threadIdx.x & 31;
    const int kg_first = (int)(threadIdx.x % KG_TPR) - kg_lane;   // the warp's first thread in the row
#pragma unroll
    for (int kg_o = 1; kg_o < 32; kg_o <<= 1) {
        const KgT kg_other = kagent_shfl_xor(kg_v, kg_o);
        const bool kg_mine = kg_first + (kg_lane & ~(kg_o - 1)) < kg_cnt;
        const bool kg_theirs = kg_first + ((kg_lane ^ kg_o) & ~(kg_o - 1)) < kg_cnt;
        if (kg_theirs) {
            if (kg_mine) kg_merge(kg_v, kg_other);
            else kg_v = kg_other;
        }
    }
    if (KG_WPR == 1) return kg_v;
    if (kg_lane == 0) memcpy(kg_buf + (threadIdx.x >> 5) * KG_N, &kg_v, sizeof(KgT));
    __syncthreads();
    // Each warp of the row re-reduces the row's per-warp partials: lane l takes warp l % KG_WPR's.
    const int kg_q = kg_lane % KG_WPR;
    memcpy(&kg_v, kg_buf + ((threadIdx.x / KG_TPR) * KG_WPR + kg_q) * KG_N, sizeof(KgT));
#pragma unroll
    for (int kg_o = 1; kg_o < KG_WPR; kg_o <<= 1) {
        const KgT kg_other = kagent_shfl_xor(kg_v, kg_o);
        const bool kg_mine = (kg_q & ~(kg_o - 1)) * 32 < kg_cnt;
        const bool kg_theirs = ((kg_q ^ kg_o) & ~(kg_o - 1)) * 32 < kg_cnt;
        if (kg_theirs) {
            if (kg_mine) kg_merge(kg_v, kg_other);
            else kg_v = kg_other;
        }
    }
    return kg_v;
}

// ---- one row ----------------------------------------------------------------------------------

// KgF is float: it makes the calls of optional slots dependent, so that an empty slot's function
// (which returns void) is only looked at when its pass is compiled in.
template <typename KgF, typename KgOut>
__device__ __forceinline__ void kagent_row({{params}}, unsigned* kg_pre_buf, unsigned* kg_state_buf) {
    constexpr int KG_V = VEC;
    constexpr int KG_N = KG_CACHE;
    // Streamed values are read by each pass; the last read (ADD's without a map) evicts first.
    constexpr bool KG_ADD_READS_LAST = !kg_has_map;
    const int kg_t = threadIdx.x % KG_TPR;
    const long long kg_row = (long long)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / KG_TPR;
    const long long kg_rows = {{ROWS}};
    const int kg_cols = (int){{COLS}};
    // Rows past the end still take part in the block reductions, with no values.
    const bool kg_live = kg_row < kg_rows;
    const float* kg_in = kg_live ? kagent_in_row({{args}}, kg_row) : nullptr;
    // Head: the kg_h < VEC scalars before the first VEC-aligned address, then kg_nvec aligned vectors,
    // then a tail of kg_tl < VEC scalars.
    int kg_h = 0;
    if (KG_V > 1 && kg_live) {
        const int kg_mis = (int)(((unsigned long long)kg_in / sizeof(float)) % KG_V);
        kg_h = kg_mis ? min(KG_V - kg_mis, kg_cols) : 0;
    }
    const int kg_nvec = kg_live ? (kg_cols - kg_h) / KG_V : 0;
    const int kg_tl = kg_live ? kg_cols - kg_h - kg_nvec * KG_V : 0;
    const int kg_ct = kg_h + kg_nvec * KG_V;                      // first tail column
    const int kg_cnt = max(kg_nvec, max(kg_h, kg_tl));        // threads 0..kg_cnt-1 hold values
    const float* kg_xv = kg_in + kg_h;                          // VEC-aligned
    // Streamed vectors (those past the cache): this thread's are kg_s0 + (it * UNROLL + u) * KG_TPR.
    // Each pass walks them the other way from the pass before it, so that it starts on the vectors
    // read last, those most likely still in L2.
    const int kg_s0 = kg_t + KG_N * KG_TPR;
    const int kg_its = kg_s0 < kg_nvec ? (kg_nvec - kg_s0 + UNROLL * KG_TPR - 1) / (UNROLL * KG_TPR) : 0;
    constexpr bool KG_ADD_BACK = kg_has_pre;     // PRE walks forward, ADD the other way, MAP back again

    // Load the cached vectors (all loads issued before any arithmetic), the head and the tail value.
    kg_vec<KG_V> kg_r[KG_N > 0 ? KG_N : 1];
#pragma unroll
    for (int kg_i = 0; kg_i < KG_N; ++kg_i) {
        const int kg_k = kg_t + kg_i * KG_TPR;
        if (kg_k < kg_nvec) kg_r[kg_i].load(kg_xv + (long long)kg_k * KG_V);
    }
    float kg_hv = kg_t < kg_h ? kg_in[kg_t] : 0.f;
    float kg_tv = kg_t < kg_tl ? kg_in[kg_ct + kg_t] : 0.f;

    // Pass PRE: combine the row's values with PRE.
    float kg_pre = 0.f;
    if constexpr (kg_has_pre) {
        float kg_p = 0.f;
        bool kg_any = false;
        if (KG_N > 0 && kg_t < kg_nvec) {   // vector 0 of this thread is cached: start from it
            kg_p = kg_r[0].v[0];
#pragma unroll
            for (int kg_j = 1; kg_j < KG_V; ++kg_j) kg_p = kagent_pre({{args}}, KgF(kg_p), KgF(kg_r[0].v[kg_j]));
#pragma unroll
            for (int kg_i = 1; kg_i < KG_N; ++kg_i)
                if (kg_t + kg_i * KG_TPR < kg_nvec) {
#pragma unroll
                    for (int kg_j = 0; kg_j < KG_V; ++kg_j)
                        kg_p = kagent_pre({{args}}, KgF(kg_p), KgF(kg_r[kg_i].v[kg_j]));
                }
            kg_any = true;
        }
        if (kg_t < kg_h) { kg_p = kg_any ? kagent_pre({{args}}, KgF(kg_p), KgF(kg_hv)) : kg_hv; kg_any = true; }
        if (kg_t < kg_tl) { kg_p = kg_any ? kagent_pre({{args}}, KgF(kg_p), KgF(kg_tv)) : kg_tv; kg_any = true; }
        for (int kg_it = 0; kg_it < kg_its; ++kg_it) {
            const int kg_k0 = kg_s0 + kg_it * UNROLL * KG_TPR;
            kg_vec<KG_V> kg_a[UNROLL];
#pragma unroll
            for (int kg_u = 0; kg_u < UNROLL; ++kg_u)
                if (kg_k0 + kg_u * KG_TPR < kg_nvec) kg_a[kg_u].load(kg_xv + (long long)(kg_k0 + kg_u * KG_TPR) * KG_V);
#pragma unroll
            for (int kg_u = 0; kg_u < UNROLL; ++kg_u)
                if (kg_k0 + kg_u * KG_TPR < kg_nvec) {
#pragma unroll
                    for (int kg_j = 0; kg_j < KG_V; ++kg_j) {
                        kg_p = kg_any ? kagent_pre({{args}}, KgF(kg_p), KgF(kg_a[kg_u].v[kg_j])) : kg_a[kg_u].v[kg_j];
                        kg_any = true;
                    }
                }
        }
        kg_pre = kagent_row_reduce(kg_p, kg_cnt, kg_pre_buf, [&](float& kg_a, const float& kg_b) {
            kg_a = kagent_pre({{args}}, KgF(kg_a), KgF(kg_b));
        });
    }

    // Pass ADD: fold the row's values into a state (cached and head/tail values transformed in place).
    kg_state kg_s{};
#pragma unroll
    for (int kg_i = 0; kg_i < KG_N; ++kg_i) {
        const int kg_k = kg_t + kg_i * KG_TPR;
        if (kg_k < kg_nvec) {
#pragma unroll
            for (int kg_j = 0; kg_j < KG_V; ++kg_j) kagent_add({{args}}, kg_s, kg_r[kg_i].v[kg_j], kg_row, kg_h + kg_k * KG_V + kg_j, kg_pre);
        }
    }
    if (kg_t < kg_h) kagent_add({{args}}, kg_s, kg_hv, kg_row, kg_t, kg_pre);
    if (kg_t < kg_tl) kagent_add({{args}}, kg_s, kg_tv, kg_row, kg_ct + kg_t, kg_pre);
    for (int kg_it = 0; kg_it < kg_its; ++kg_it) {
        const int kg_k0 = kg_s0 + (KG_ADD_BACK ? kg_its - 1 - kg_it : kg_it) * UNROLL * KG_TPR;
        kg_vec<KG_V> kg_a[UNROLL];
#pragma unroll
        for (int kg_u = 0; kg_u < UNROLL; ++kg_u) {
            const int kg_k = kg_k0 + kg_u * KG_TPR;
            if (kg_k < kg_nvec) {
                if (KG_ADD_READS_LAST) kg_a[kg_u].load_last(kg_xv + (long long)kg_k * KG_V);
                else kg_a[kg_u].load(kg_xv + (long long)kg_k * KG_V);
            }
        }
#pragma unroll
        for (int kg_u = 0; kg_u < UNROLL; ++kg_u) {
            const int kg_k = kg_k0 + kg_u * KG_TPR;
            if (kg_k < kg_nvec) {
#pragma unroll
                for (int kg_j = 0; kg_j < KG_V; ++kg_j) kagent_add({{args}}, kg_s, kg_a[kg_u].v[kg_j], kg_row, kg_h + kg_k * KG_V + kg_j, kg_pre);
            }
        }
    }
    kg_s = kagent_row_reduce(kg_s, kg_cnt, kg_state_buf, [&](kg_state& kg_a, const kg_state& kg_b) {
        kagent_merge({{args}}, kg_a, kg_b);
    });
    if (!kg_live) return;   // no barrier below
    kagent_final({{args}}, kg_row, kg_s, kg_pre);

    // Pass MAP: the output row, from the cached values, then the re-read streamed ones.
    if constexpr (kg_has_map) {
        const KgOut kg_out = kagent_out_row({{args}}, kg_row);
        // Vector stores need the output row as misaligned as the input row; else scalar stores.
        const bool kg_oal = (unsigned long long)(kg_out + kg_h) % (KG_V * sizeof(float)) == 0;
#pragma unroll
        for (int kg_i = 0; kg_i < KG_N; ++kg_i) {
            const int kg_k = kg_t + kg_i * KG_TPR;
            if (kg_k < kg_nvec) {
                kg_vec<KG_V> kg_o;
#pragma unroll
                for (int kg_j = 0; kg_j < KG_V; ++kg_j)
                    kg_o.v[kg_j] = kagent_map({{args}}, kg_row, kg_h + kg_k * KG_V + kg_j, KgF(kg_r[kg_i].v[kg_j]), kg_s, kg_pre);
                kg_o.store(kg_out + kg_h + (long long)kg_k * KG_V, kg_oal);
            }
        }
        if (kg_t < kg_h) __stcs(kg_out + kg_t, (float)kagent_map({{args}}, kg_row, kg_t, KgF(kg_hv), kg_s, kg_pre));
        if (kg_t < kg_tl)
            __stcs(kg_out + kg_ct + kg_t, (float)kagent_map({{args}}, kg_row, kg_ct + kg_t, KgF(kg_tv), kg_s, kg_pre));
        for (int kg_it = 0; kg_it < kg_its; ++kg_it) {
            const int kg_k0 = kg_s0 + (KG_ADD_BACK ? kg_it : kg_its - 1 - kg_it) * UNROLL * KG_TPR;
            kg_vec<KG_V> kg_a[UNROLL];
#pragma unroll
            for (int kg_u = 0; kg_u < UNROLL; ++kg_u)
                if (kg_k0 + kg_u * KG_TPR < kg_nvec) kg_a[kg_u].load_last(kg_xv + (long long)(kg_k0 + kg_u * KG_TPR) * KG_V);
#pragma unroll
            for (int kg_u = 0; kg_u < UNROLL; ++kg_u) {
                const int kg_k = kg_k0 + kg_u * KG_TPR;
                if (kg_k < kg_nvec) {
                    kg_vec<KG_V> kg_o;
#pragma unroll
                    for (int kg_j = 0; kg_j < KG_V; ++kg_j) {
                        // Redo ADD's change of the value on a scratch state (the compiler drops the rest).
                        kg_state kg_scratch{};
                        float kg_x = kg_a[kg_u].v[kg_j];
                        kagent_add({{args}}, kg_scratch, kg_x, kg_row, kg_h + kg_k * KG_V + kg_j, kg_pre);
                        kg_o.v[kg_j] = kagent_map({{args}}, kg_row, kg_h + kg_k * KG_V + kg_j, KgF(kg_x), kg_s, kg_pre);
                    }
                    kg_o.store(kg_out + kg_h + (long long)kg_k * KG_V, kg_oal);
                }
            }
        }
    }
    if (kg_t == 0) kagent_finish({{args}}, kg_row, kg_s, kg_pre);
}

extern "C" __global__ void __launch_bounds__(BLOCK, KG_MIN_BLOCKS) kagent_rowwise({{params}}) {
    // One buffer a reduction: no barrier is needed between them.
    __shared__ unsigned kg_pre_buf[BLOCK / 32];
    __shared__ unsigned kg_state_buf[BLOCK / 32 * KG_WORDS];
    kagent_row<float, kg_out_t>({{args}}, kg_pre_buf, kg_state_buf);
}
