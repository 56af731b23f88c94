// @repair task: tasks/level1/full_sum.yaml
// @repair from: tasks/level1/full_sum/blocksum.cu
// @repair expect: compile_error
// @repair bug: uses the legacy __shfl_down (no _sync, no mask), which does not exist for sm_70 and later
// @repair fix: __shfl_down_sync(0xffffffffu, s, o)
// @kagent entry: partial_sums
// @kagent grid: ceil_div(n, BLOCK * VEC * ITEMS)
// @kagent block: BLOCK
// @kagent params: x, out, partials, n
// @kagent scratch partials: ceil_div(n, BLOCK * VEC * ITEMS) if TWO_PASS == 1 else 1 float32
// @kagent entry: final_sum
// @kagent grid: 1
// @kagent block: 1024
// @kagent params: partials, out, n
// @kagent knob TWO_PASS [reduction]: 1 0
// @kagent knob BLOCK [launch]: 256 128 512
// @kagent knob VEC [memory]: 4 1 2
// @kagent knob ITEMS [memory]: 8 4
//
// Expert full sum. Block b sums the contiguous chunk
// [b*CHUNK, (b+1)*CHUNK), CHUNK = BLOCK*VEC*ITEMS: each thread issues ITEMS
// coalesced VEC-wide loads before adding, then a warp-shuffle reduction and
// one pass over the per-warp sums give the block's partial.
// - TWO_PASS=1: the partial goes to scratch slot b (every slot is written);
//   final_sum (one block) adds the partials in a fixed order and stores the
//   result: bitwise reproducible.
// - TWO_PASS=0: the partial is atomicAdd-ed into the zeroed output (one
//   atomic per block); final_sum returns at once. The atomics' order varies,
//   so the last bits vary between runs (within tolerance).
// The last, partial chunk (and any misaligned input) takes a guarded scalar
// path with the same chunking.

#ifndef TWO_PASS
#define TWO_PASS 1
#endif
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef ITEMS
#define ITEMS 8
#endif

#define CHUNK (BLOCK * VEC * ITEMS)
#define FINAL_BLOCK 1024

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
static_assert(ITEMS >= 1, "ITEMS must be positive");

template <int V> struct Vec { float v[V]; };

template <int V> __device__ __forceinline__ Vec<V> load_vec(const float* p);
template <> __device__ __forceinline__ Vec<1> load_vec<1>(const float* p) {
    Vec<1> r; r.v[0] = __ldcs(p); return r;
}
template <> __device__ __forceinline__ Vec<2> load_vec<2>(const float* p) {
    const float2 t = __ldcs(reinterpret_cast<const float2*>(p));
    Vec<2> r; r.v[0] = t.x; r.v[1] = t.y; return r;
}
template <> __device__ __forceinline__ Vec<4> load_vec<4>(const float* p) {
    const float4 t = __ldcs(reinterpret_cast<const float4*>(p));   // read once: evict first
    Vec<4> r; r.v[0] = t.x; r.v[1] = t.y; r.v[2] = t.z; r.v[3] = t.w; return r;
}

// Sum over a block of NT threads; every thread must call it; valid in thread 0.
template <int NT>
__device__ __forceinline__ float block_sum(float s, float* warp_sums) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down(s, o);
    if (NT == 32) return s;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < NT / 32 ? warp_sums[lane] : 0.f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_down(s, o);
    }
    return s;
}

// At least half occupancy (<= 64 registers per thread).
extern "C" __global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
partial_sums(const float* __restrict__ x, float* __restrict__ out, float* __restrict__ partials, int n) {
    __shared__ float warp_sums[32];
    const int tid = threadIdx.x;
    const long long base = (long long)blockIdx.x * CHUNK;
    const bool aligned = ((unsigned long long)x % (VEC * sizeof(float))) == 0;
    float s;
    if (VEC > 1 && aligned && base + CHUNK <= (long long)n) {
        // Full chunk: vector i of the chunk for this thread is i*BLOCK + tid.
        const float* p = x + base;
        Vec<VEC> r[ITEMS];
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) r[i] = load_vec<VEC>(p + (size_t)(i * BLOCK + tid) * VEC);
        float a0 = 0.f, a1 = 0.f;
#pragma unroll
        for (int i = 0; i < ITEMS; ++i)
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                if (i & 1) a1 += r[i].v[j]; else a0 += r[i].v[j];
            }
        s = a0 + a1;
    } else {
        // Partial chunk, misaligned input or VEC == 1: guarded scalar loads,
        // still coalesced (element i*BLOCK + tid of the chunk).
        float a0 = 0.f, a1 = 0.f;
#pragma unroll
        for (int i = 0; i < ITEMS * VEC; i += 2) {
            const long long i0 = base + (long long)i * BLOCK + tid;
            const long long i1 = i0 + BLOCK;
            if (i0 < n) a0 += __ldcs(x + i0);
            if (i + 1 < ITEMS * VEC && i1 < n) a1 += __ldcs(x + i1);
        }
        s = a0 + a1;
    }
    s = block_sum<BLOCK>(s, warp_sums);
    if (tid == 0) {
        if (TWO_PASS) partials[blockIdx.x] = s;
        else atomicAdd(out, s);
    }
}

extern "C" __global__ void __launch_bounds__(FINAL_BLOCK)
final_sum(const float* __restrict__ partials, float* __restrict__ out, int n) {
    if (!TWO_PASS) return;
    __shared__ float warp_sums[32];
    const long long nparts = ((long long)n + CHUNK - 1) / CHUNK;
    float a0 = 0.f, a1 = 0.f;
    long long i = threadIdx.x;
    for (; i + FINAL_BLOCK < nparts; i += 2 * FINAL_BLOCK) {
        a0 += partials[i];
        a1 += partials[i + FINAL_BLOCK];
    }
    if (i < nparts) a0 += partials[i];
    const float s = block_sum<FINAL_BLOCK>(a0 + a1, warp_sums);
    if (threadIdx.x == 0) out[0] = s;
}
