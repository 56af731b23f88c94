// @skeleton name: full_reduce
// @skeleton summary: a whole input summed to one float, then written as the task's scalar result or used to map every element: one chunk of BLOCK*VEC*ITEMS elements a block (VEC-wide loads, ITEMS in flight a thread, warp shuffles), then one fixed-order pass over the block partials (TWO_PASS=1) or one atomic a block (TWO_PASS=0)
// @skeleton families: reduction
// @skeleton fits: the result is the sum over all N elements of a term of one or two float32 inputs of N elements each (read at the same flat index), written as a scalar output (a loss, a norm, a total) or used to rescale every element (divide by a norm); not for a max, a min or an argmin
// @skeleton indices: i < N
// @skeleton slot N [dim]: the number of elements summed, over the task's dims (e.g. `batch * n`, or `N * C * H * W`)
// @skeleton slot IN_A [expr]: `const float*`: a float32 input of N elements read at every element, e.g. `predictions`
// @skeleton slot IN_B [expr]: `const float*`: a second float32 input of N elements read at the same elements, e.g. `targets`; the same as IN_A when the task has one input, e.g. `x`
// @skeleton slot TERM [body]: `float term(PARAMS, long long i, float va, float vb)`: every parameter of the task is in scope, va is IN_A[i] and vb is IN_B[i]; return element i's term of the sum, e.g. `return va;` (sum, mean), `return va * va;` (squares, l2, norm), `return fabsf(va);` (absolute, l1), `return (va - vb) * (va - vb);` (mse, squared error), `return vb * (logf(vb) - logf(va));` (kl, divergence)
// @skeleton slot RESULT [body, optional]: `void result(PARAMS, float total)`: total is the sum of all N terms; write the task's scalar output(s) from it (leave it empty when MAP writes the outputs), e.g. `y[0] = total;` (sum), `loss[0] = total / batch;` (batchmean, per batch), `y[0] = sqrtf(total);` (l2, norm)
// @skeleton slot MAP [body, optional]: `void map(PARAMS, long long i, float total)`: only for a task that maps every element with the sum: write output element i (leave it empty when the output is the scalar RESULT writes), e.g. `y[i] = x[i] / total;` (sum, l1), `y[i] = x[i] / sqrtf(total);` (l2, frobenius, norm)
// @kagent entry: kagent_full_partial
// @kagent grid: ceil_div({{N}}, BLOCK * VEC * ITEMS)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent params: {{args}}, kg_partials, kg_total
// @kagent scratch kg_partials: ceil_div({{N}}, BLOCK * VEC * ITEMS) if TWO_PASS == 1 else 1 float32
// @kagent scratch kg_total: 1 float32 zeroed
// @kagent entry: kagent_full_final
// @kagent grid: 1
// @kagent block: 1024
// @kagent smem: 0
// @kagent params: {{args}}, kg_partials, kg_total
// @kagent entry: kagent_full_map
// @kagent grid: min(ceil_div({{N}}, BLOCK * ITEMS), 270336 // BLOCK)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent params: {{args}}, kg_total
// @kagent knob TWO_PASS [reduction]: 1 0
// @kagent knob BLOCK [launch]: 512 256 128
// @kagent knob VEC [memory]: 2 4 1
// @kagent knob ITEMS [memory]: 4 8
//
// Skeleton `full_reduce` (kernel_agent/skeletons/full_reduce.cu), the structure of the expert
// tasks/level1/full_sum/blocksum.cu with the loads and the term of each element made slots:
// - kagent_full_partial: block b sums the terms of the contiguous chunk [b*CHUNK, (b+1)*CHUNK),
//   CHUNK = BLOCK*VEC*ITEMS. In a full chunk with aligned inputs each thread issues ITEMS
//   coalesced VEC-wide streaming loads of IN_A (and of IN_B when it is another buffer) before any
//   arithmetic, then adds the ITEMS*VEC terms into two accumulators; the last, partial chunk (and
//   VEC == 1, or a misaligned input) takes guarded scalar loads with the same chunking. A
//   warp-shuffle reduction and one pass over the per-warp sums give the block's partial:
//   TWO_PASS=1 stores it in slot b of the scratch kg_partials (every slot is written);
//   TWO_PASS=0 atomicAdds it into the zeroed scratch kg_total (the last bits then vary by run).
// - kagent_full_final (one block): TWO_PASS=1 adds the partials in a fixed order (bitwise
//   reproducible) and keeps the total in kg_total; then thread 0 hands the total to RESULT.
// - kagent_full_map: a grid-stride map over the N elements (at most one wave of blocks, ITEMS
//   elements in flight a thread) handing each index and the total to MAP; with MAP empty its
//   blocks return at once.

#ifndef TWO_PASS
#define TWO_PASS 1
#endif
#ifndef BLOCK
#define BLOCK 512
#endif
#ifndef VEC
#define VEC 2
#endif
#ifndef ITEMS
#define ITEMS 4
#endif

#define KG_CHUNK (BLOCK * VEC * ITEMS)
#define KG_FINAL_BLOCK 1024

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
static_assert(ITEMS >= 1, "ITEMS must be positive");

__device__ __forceinline__ float kagent_term({{params}}, long long i, float va, float vb) {
    {{TERM}}
}

__device__ __forceinline__ void kagent_result({{params}}, float total) {
    {{RESULT}}
}

__device__ __forceinline__ void kagent_map({{params}}, long long i, float total) {
    {{MAP}}
}

template <int kg_v> struct kagent_vec { float v[kg_v]; };

template <int kg_v> __device__ __forceinline__ kagent_vec<kg_v> kagent_load_vec(const float* kg_p);
template <> __device__ __forceinline__ kagent_vec<1> kagent_load_vec<1>(const float* kg_p) {
    kagent_vec<1> kg_r; kg_r.v[0] = __ldcs(kg_p); return kg_r;
}
template <> __device__ __forceinline__ kagent_vec<2> kagent_load_vec<2>(const float* kg_p) {
    const float2 kg_t = __ldcs(reinterpret_cast<const float2*>(kg_p));
    kagent_vec<2> kg_r; kg_r.v[0] = kg_t.x; kg_r.v[1] = kg_t.y; return kg_r;
}
template <> __device__ __forceinline__ kagent_vec<4> kagent_load_vec<4>(const float* kg_p) {
    const float4 kg_t = __ldcs(reinterpret_cast<const float4*>(kg_p));   // read once: evict first
    kagent_vec<4> kg_r; kg_r.v[0] = kg_t.x; kg_r.v[1] = kg_t.y; kg_r.v[2] = kg_t.z; kg_r.v[3] = kg_t.w;
    return kg_r;
}

// Sum over a block of kg_nt threads; every thread must call it; valid in thread 0.
template <int kg_nt>
__device__ __forceinline__ float kagent_block_sum(float kg_s, float* kg_warp_sums) {
#pragma unroll
    for (int kg_o = 16; kg_o > 0; kg_o >>= 1) kg_s += __shfl_down_sync(0xffffffffu, kg_s, kg_o);
    if (kg_nt == 32) return kg_s;
    const int kg_lane = threadIdx.x & 31, kg_warp = threadIdx.x >> 5;
    if (kg_lane == 0) kg_warp_sums[kg_warp] = kg_s;
    __syncthreads();
    if (kg_warp == 0) {
        kg_s = kg_lane < kg_nt / 32 ? kg_warp_sums[kg_lane] : 0.f;
#pragma unroll
        for (int kg_o = 16; kg_o > 0; kg_o >>= 1) kg_s += __shfl_down_sync(0xffffffffu, kg_s, kg_o);
    }
    return kg_s;
}

// This thread's share of chunk kg_base's sum. kg_two: IN_B is another buffer than IN_A, loaded
// too; then, where 2*ITEMS*VEC loads would not fit in registers, they go out in two halves.
template <bool kg_two>
__device__ __forceinline__ float kagent_chunk_sum({{params}}, const float* __restrict__ kg_a,
                                                  const float* __restrict__ kg_b, long long kg_base,
                                                  long long kg_n) {
    constexpr bool kg_halves = kg_two && ITEMS * VEC >= 16 && ITEMS >= 2;
    constexpr int kg_g = kg_halves ? (ITEMS + 1) / 2 : ITEMS;          // vectors in flight
    const int kg_tid = threadIdx.x;
    const bool kg_aligned =
        (((unsigned long long)kg_a | (unsigned long long)kg_b) % (VEC * sizeof(float))) == 0;
    float kg_a0 = 0.f, kg_a1 = 0.f;
    if (VEC > 1 && kg_aligned && kg_base + KG_CHUNK <= kg_n) {
        // Full chunk: vector k of the chunk for this thread is k*BLOCK + tid.
#pragma unroll
        for (int kg_k0 = 0; kg_k0 < ITEMS; kg_k0 += kg_g) {
            kagent_vec<VEC> kg_ra[kg_g], kg_rb[kg_g];
#pragma unroll
            for (int kg_k = 0; kg_k < kg_g && kg_k0 + kg_k < ITEMS; ++kg_k) {
                const long long kg_off = kg_base + (long long)((kg_k0 + kg_k) * BLOCK + kg_tid) * VEC;
                kg_ra[kg_k] = kagent_load_vec<VEC>(kg_a + kg_off);
                if (kg_two) kg_rb[kg_k] = kagent_load_vec<VEC>(kg_b + kg_off);
            }
#pragma unroll
            for (int kg_k = 0; kg_k < kg_g && kg_k0 + kg_k < ITEMS; ++kg_k) {
                const long long kg_off = kg_base + (long long)((kg_k0 + kg_k) * BLOCK + kg_tid) * VEC;
#pragma unroll
                for (int kg_j = 0; kg_j < VEC; ++kg_j) {
                    const float kg_va = kg_ra[kg_k].v[kg_j];
                    const float kg_t =
                        kagent_term({{args}}, kg_off + kg_j, kg_va, kg_two ? kg_rb[kg_k].v[kg_j] : kg_va);
                    if ((kg_k0 + kg_k) & 1) kg_a1 += kg_t; else kg_a0 += kg_t;
                }
            }
        }
    } else {
        // Partial chunk, misaligned input or VEC == 1: guarded scalar loads, still coalesced
        // (element k*BLOCK + tid of the chunk), two elements a step as in blocksum.cu.
#pragma unroll
        for (int kg_k = 0; kg_k < ITEMS * VEC; kg_k += 2) {
            const long long kg_i0 = kg_base + (long long)kg_k * BLOCK + kg_tid;
            const long long kg_i1 = kg_i0 + BLOCK;
            if (kg_i0 < kg_n) {
                const float kg_va = __ldcs(kg_a + kg_i0);
                kg_a0 += kagent_term({{args}}, kg_i0, kg_va, kg_two ? __ldcs(kg_b + kg_i0) : kg_va);
            }
            if (kg_k + 1 < ITEMS * VEC && kg_i1 < kg_n) {
                const float kg_va = __ldcs(kg_a + kg_i1);
                kg_a1 += kagent_term({{args}}, kg_i1, kg_va, kg_two ? __ldcs(kg_b + kg_i1) : kg_va);
            }
        }
    }
    return kg_a0 + kg_a1;
}

// At least half occupancy (<= 64 registers per thread).
extern "C" __global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
kagent_full_partial({{params}}, float* __restrict__ kg_partials, float* __restrict__ kg_total) {
    __shared__ float kg_warp_sums[32];
    const long long kg_n = {{N}};
    const float* kg_a = {{IN_A}};
    const float* kg_b = {{IN_B}};
    const long long kg_base = (long long)blockIdx.x * KG_CHUNK;
    float kg_s = kg_a == kg_b ? kagent_chunk_sum<false>({{args}}, kg_a, kg_a, kg_base, kg_n)
                              : kagent_chunk_sum<true>({{args}}, kg_a, kg_b, kg_base, kg_n);
    kg_s = kagent_block_sum<BLOCK>(kg_s, kg_warp_sums);
    if (threadIdx.x == 0) {
        if (TWO_PASS) kg_partials[blockIdx.x] = kg_s;
        else atomicAdd(kg_total, kg_s);
    }
}

extern "C" __global__ void __launch_bounds__(KG_FINAL_BLOCK)
kagent_full_final({{params}}, const float* __restrict__ kg_partials, float* __restrict__ kg_total) {
    if (!TWO_PASS) {   // the partials were added into kg_total already
        if (threadIdx.x == 0) kagent_result({{args}}, kg_total[0]);
        return;
    }
    __shared__ float kg_warp_sums[32];
    const long long kg_parts = ((long long)({{N}}) + KG_CHUNK - 1) / KG_CHUNK;
    float kg_a0 = 0.f, kg_a1 = 0.f;
    long long kg_i = threadIdx.x;
    for (; kg_i + KG_FINAL_BLOCK < kg_parts; kg_i += 2 * KG_FINAL_BLOCK) {
        kg_a0 += kg_partials[kg_i];
        kg_a1 += kg_partials[kg_i + KG_FINAL_BLOCK];
    }
    if (kg_i < kg_parts) kg_a0 += kg_partials[kg_i];
    const float kg_s = kagent_block_sum<KG_FINAL_BLOCK>(kg_a0 + kg_a1, kg_warp_sums);
    if (threadIdx.x == 0) {
        kg_total[0] = kg_s;   // for kagent_full_map
        kagent_result({{args}}, kg_s);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
kagent_full_map({{params}}, const float* __restrict__ kg_total) {
    const long long kg_n = {{N}};
    const float kg_sum = kg_total[0];
    const long long kg_step = (long long)gridDim.x * BLOCK * ITEMS;
    for (long long kg_base = (long long)blockIdx.x * BLOCK * ITEMS + threadIdx.x; kg_base < kg_n;
         kg_base += kg_step) {
        if (kg_base + (long long)(ITEMS - 1) * BLOCK < kg_n) {   // unguarded: the loads go out together
#pragma unroll
            for (int kg_k = 0; kg_k < ITEMS; ++kg_k) kagent_map({{args}}, kg_base + (long long)kg_k * BLOCK, kg_sum);
        } else {
#pragma unroll
            for (int kg_k = 0; kg_k < ITEMS; ++kg_k) {
                const long long kg_i = kg_base + (long long)kg_k * BLOCK;
                if (kg_i < kg_n) kagent_map({{args}}, kg_i, kg_sum);
            }
        }
    }
}
