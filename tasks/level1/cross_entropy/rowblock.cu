// @kagent entry: ce_rows
// @kagent grid: ceil_div(batch, ROWS_PER_BLOCK)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent params: logits, targets, loss, partial, batch, classes
// @kagent entry: ce_finish
// @kagent grid: 1
// @kagent block: 1024 if FINAL == 0 else 32
// @kagent smem: 0
// @kagent params: partial, loss, batch
// @kagent scratch partial: ceil_div(batch, ROWS_PER_BLOCK) float32
// @kagent knob BLOCK [launch]: 256 512 128
// @kagent knob ROWS_PER_BLOCK [launch]: 1 2 4
// @kagent knob VEC [memory]: 4 1
// @kagent knob FINAL [reduction]: 0 1
//
// Expert cross-entropy: BLOCK / ROWS_PER_BLOCK threads (whole warps) per row,
// one pass over the logits. Each thread keeps an online softmax state
// (running max m, sum s of exp(x - m)), rescaling s when the max grows; the
// states are merged with warp shuffles, then across the row's warps through
// shared memory. The row loss is m + log(s) - x[target % classes].
//
// Loads: float4 (VEC = 4) when classes % 4 == 0 and logits is 16-byte aligned,
// scalar otherwise; four vectors per thread are issued before any is used.
//
// Final mean (FINAL): 0 = each block writes the sum of its row losses to a
// scratch buffer and a second, single-block launch adds them in a fixed
// order (deterministic); 1 = each block atomically adds its sum / batch to
// the zeroed output (one launch of work; the second launch returns at once).

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 1
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef FINAL
#define FINAL 0
#endif

#define TPR (BLOCK / ROWS_PER_BLOCK)   // threads per row
#define WPR (TPR / 32)                 // warps per row
#define LOADS 4                        // vectors in flight per thread

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(TPR >= 32 && TPR % 32 == 0, "each row needs whole warps");
static_assert(VEC == 1 || VEC == 4, "VEC must be 1 or 4");

// Merge softmax state (m2, s2) into (m, s); m = -inf means "no element yet".
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    if (m2 == -INFINITY) return;
    if (m == -INFINITY) { m = m2; s = s2; return; }
    const float mx = fmaxf(m, m2);
    s = s * __expf(m - mx) + s2 * __expf(m2 - mx);
    m = mx;
}

// Fold values v[0..V) into the state (m, s).
template <int V>
__device__ __forceinline__ void update(float& m, float& s, const float* v) {
    float mx = v[0];
#pragma unroll
    for (int j = 1; j < V; ++j) mx = fmaxf(mx, v[j]);
    if (mx > m) { s *= __expf(m - mx); m = mx; }   // m = -inf: s is 0 and stays 0
#pragma unroll
    for (int j = 0; j < V; ++j) s += __expf(v[j] - m);
}

template <int V>
__device__ __forceinline__ void row_state(const float* __restrict__ x, int nvec, int t, float& m, float& s) {
    for (int base = t; base < nvec; base += TPR * LOADS) {
        float v[LOADS][V];
#pragma unroll
        for (int u = 0; u < LOADS; ++u) {
            const int i = base + u * TPR;
            if (i < nvec) {
                if constexpr (V == 4) {
                    const float4 f = __ldcs(reinterpret_cast<const float4*>(x) + i);   // read once: stream
                    v[u][0] = f.x; v[u][1] = f.y; v[u][2] = f.z; v[u][3] = f.w;
                } else {
                    v[u][0] = __ldcs(x + i);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < LOADS; ++u)
            if (base + u * TPR < nvec) update<V>(m, s, v[u]);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
ce_rows(const float* __restrict__ logits, const int* __restrict__ targets, float* __restrict__ loss,
        float* __restrict__ partial, int batch, int classes) {
    __shared__ float red_m[BLOCK / 32], red_s[BLOCK / 32];
    __shared__ float row_loss[ROWS_PER_BLOCK];
    const int local = threadIdx.x / TPR;               // row within the block
    const int t = threadIdx.x % TPR;                   // thread within the row
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row = blockIdx.x * ROWS_PER_BLOCK + local;
    const bool live = row < batch;                     // dead rows still reach every barrier
    const float* __restrict__ x = logits + (size_t)(live ? row : 0) * classes;

    float m = -INFINITY, s = 0.f;
    if (live) {
        if (VEC == 4 && classes % 4 == 0 && ((unsigned long long)logits % 16) == 0)
            row_state<VEC>(x, classes / VEC, t, m, s);
        else
            row_state<1>(x, classes, t, m, s);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        merge(m, s, m2, s2);
    }
    if (lane == 0) { red_m[warp] = m; red_s[warp] = s; }
    __syncthreads();
    if (t < 32) {                                      // the row's first warp merges its warps
        m = lane < WPR ? red_m[local * WPR + lane] : -INFINITY;
        s = lane < WPR ? red_s[local * WPR + lane] : 0.f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
            const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
            merge(m, s, m2, s2);
        }
        if (lane == 0) row_loss[local] = live ? m + logf(s) - x[targets[row] % classes] : 0.f;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float sum = 0.f;
#pragma unroll
        for (int r = 0; r < ROWS_PER_BLOCK; ++r) sum += row_loss[r];
        if (FINAL == 0) partial[blockIdx.x] = sum;
        else atomicAdd(loss, sum / (float)batch);
    }
}

extern "C" __global__ void ce_finish(const float* __restrict__ partial, float* __restrict__ loss, int batch) {
    if (FINAL != 0) return;                            // the rows kernel already added everything
    __shared__ float red[32];
    const int nparts = (batch + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
    float s = 0.f;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) s += partial[i];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (threadIdx.x == 0) loss[0] = s / (float)batch;
    }
}
