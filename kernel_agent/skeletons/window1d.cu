// @skeleton name: window1d
// @skeleton summary: 1-D sliding windows over the rows of length L of an N x C x L tensor (pooling, depthwise 1-D convolution): a block stages its output tile's input segment, halo and padding included, in shared memory with coalesced float4 loads (or reads it through the cache), then each thread folds the windows of ITEMS outputs
// @skeleton families: pooling, convolution
// @skeleton fits: float32 input (N, C, L) and output (N, C, LO), both contiguous; output (n, c, o) folds the K taps at input positions o * S - P + k * D of the same row (n, c), with a constant window geometry; 1-D max/avg pooling, depthwise 1-D convolution; not a convolution that mixes channels
// @skeleton indices: c < CHANNELS
// @skeleton slot BATCH [dim]: the batch size N of the input (N, C, L), e.g. `B` (`1` for a (C, L) input)
// @skeleton slot CHANNELS [dim]: the channel count C of the input (N, C, L), e.g. `C`
// @skeleton slot L [dim]: the length of an input row (its values are contiguous), e.g. `L`
// @skeleton slot LO [dim]: the length of an output row, e.g. `LO`
// @skeleton slot IN [expr]: the float32 input buffer (N, C, L), e.g. `x`
// @skeleton slot OUT [expr]: the float32 output buffer (N, C, LO), e.g. `y`
// @skeleton slot K [expr]: the window's size in taps, an integer constant: the task's own number (its reference's constant, its naive kernel's loop)
// @skeleton slot S [expr]: the stride between outputs, in input positions, an integer constant: the task's own number (its reference's constant, its naive kernel's loop)
// @skeleton slot P [expr]: the padding positions left of the input, an integer constant (0 for none): output o starts at input position o * S - P; the task's own number (its reference's constant, its naive kernel's loop)
// @skeleton slot D [expr]: the dilation, input positions from one tap to the next, an integer constant (1 for none): the task's own number (its reference's constant, its naive kernel's loop)
// @skeleton slot IDENTITY [expr]: the float an accumulator starts from, also the value of every tap in the padding, so ACCUMULATE must leave the accumulator unchanged with it, e.g. `-INFINITY` (max), `0.f` (sum, average, convolution)
// @skeleton slot ACCUMULATE [body]: `float accumulate(PARAMS, float acc, float v, int c, int k)`: every parameter of the task is in scope; return acc with tap k of value v folded in (c is the channel), e.g. `return fmaxf(acc, v);` (max), `return acc + v;` (sum, average), `return acc + w[c * 3 + k] * v;` (convolution)
// @skeleton slot FINALIZE [body]: `float finalize(PARAMS, float acc, int count, int c)`: return the output from its window's accumulator; count is the number of taps inside the input (padding left out), c the channel; e.g. `return acc;` (max, convolution), `return acc / count;` (average, avgpool)
// @kagent entry: kagent_window1d
// @kagent grid: {{BATCH}} * {{CHANNELS}} * ceil_div({{LO}}, BLOCK * ITEMS)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 128 512
// @kagent knob ITEMS [compute]: 4 2 8 1
// @kagent knob VEC [memory]: 4 1
// @kagent knob STAGE [memory]: 1 0
//
// Skeleton `window1d` (kernel_agent/skeletons/window1d.cu). A block of BLOCK threads owns a tile of
// BLOCK * ITEMS consecutive outputs of one row (blocks ordered with the tile fastest, so
// neighbouring blocks share their halo in L2); thread t computes outputs t + BLOCK * i, so every
// store is a coalesced run of 32. STAGE=1 stages the tile's input segment in shared memory:
// positions from a0, the first window's first position i0 = o0 * S - P rounded down to a multiple
// of 4, so that with L % 4 == 0 and an aligned input every float4 lies wholly inside the row or
// wholly outside it (VEC=4; otherwise coalesced scalar loads). Positions outside the row hold
// IDENTITY, which is how padding is handled: the fold has no bounds checks, and a warp reads
// shared memory with a stride of S words (conflict free for odd strides). STAGE=0 (or a segment
// over 48 KiB: large strides) reads every tap through the cache (__ldg), skipping the padding.

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 4
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef STAGE
#define STAGE 1
#endif

static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(ITEMS >= 1, "ITEMS must be at least 1");
static_assert(VEC == 1 || VEC == 4, "VEC must be 1 or 4");
static_assert(STAGE == 0 || STAGE == 1, "STAGE must be 0 or 1");

constexpr int kg_k = {{K}}, kg_s = {{S}}, kg_p = {{P}}, kg_d = {{D}};
static_assert(kg_k >= 1 && kg_s >= 1 && kg_d >= 1 && kg_p >= 0,
              "the window size, stride and dilation are at least 1, the padding at least 0");

constexpr int kg_tile = BLOCK * ITEMS;                              // outputs of a tile
constexpr int kg_in_cols = (kg_tile - 1) * kg_s + (kg_k - 1) * kg_d + 1;  // input positions it reads
constexpr int kg_pitch = (kg_in_cols + 3 + 3) / 4 * 4;  // 3 positions of alignment slack, whole float4s
constexpr int kg_vecs = kg_pitch / 4;
constexpr bool kg_staged = STAGE == 1 && kg_pitch <= 12288;  // the segment fits in 48 KiB

__device__ __forceinline__ float kagent_accumulate({{params}}, float acc, float v, int c, int k) {
    {{ACCUMULATE}}
}

__device__ __forceinline__ float kagent_finalize({{params}}, float acc, int count, int c) {
    {{FINALIZE}}
}

extern "C" __global__ void __launch_bounds__(BLOCK) kagent_window1d({{params}}) {
    const int kg_l = {{L}}, kg_lo = {{LO}};
    const int kg_tiles = (kg_lo + kg_tile - 1) / kg_tile;
    const int kg_bx = (int)(blockIdx.x % (unsigned)kg_tiles);
    const long long kg_row = blockIdx.x / (unsigned)kg_tiles;   // n * C + c
    const int kg_c = (int)(kg_row % ({{CHANNELS}}));
    const int kg_o0 = kg_bx * kg_tile;
    const int kg_i0 = kg_o0 * kg_s - kg_p;   // input position of the tile's first tap
    const float* __restrict__ kg_in = {{IN}} + kg_row * kg_l;
    const int kg_t = threadIdx.x;

    float kg_acc[ITEMS];
#pragma unroll
    for (int kg_i = 0; kg_i < ITEMS; ++kg_i) kg_acc[kg_i] = {{IDENTITY}};

    if constexpr (!kg_staged) {
#pragma unroll
        for (int kg_i = 0; kg_i < ITEMS; ++kg_i) {
            const int kg_x0 = kg_i0 + (kg_t + BLOCK * kg_i) * kg_s;
#pragma unroll
            for (int kg_j = 0; kg_j < kg_k; ++kg_j) {
                const int kg_x = kg_x0 + kg_j * kg_d;
                if (kg_x >= 0 && kg_x < kg_l)
                    kg_acc[kg_i] = kagent_accumulate({{args}}, kg_acc[kg_i], __ldg(kg_in + kg_x), kg_c, kg_j);
            }
        }
    } else {
        __shared__ __align__(16) float kg_seg[kg_pitch];
        const int kg_a0 = kg_i0 & ~3;        // input position of shared position 0 (a multiple of 4)
        const int kg_off = kg_i0 - kg_a0;    // 0..3
        const bool kg_vec = VEC == 4 && (kg_l & 3) == 0 && ((unsigned long long)({{IN}}) & 15) == 0;
        if (kg_vec) {
#pragma unroll
            for (int kg_q = kg_t; kg_q < kg_vecs; kg_q += BLOCK) {
                const int kg_x = kg_a0 + 4 * kg_q;
                float4 kg_v = make_float4({{IDENTITY}}, {{IDENTITY}}, {{IDENTITY}}, {{IDENTITY}});
                if (kg_x >= 0 && kg_x < kg_l)   // L % 4 == 0: all 4 inside
                    kg_v = __ldg(reinterpret_cast<const float4*>(kg_in + kg_x));
                *reinterpret_cast<float4*>(kg_seg + 4 * kg_q) = kg_v;
            }
        } else {
#pragma unroll 4
            for (int kg_e = kg_t; kg_e < kg_pitch; kg_e += BLOCK) {
                const int kg_x = kg_a0 + kg_e;
                kg_seg[kg_e] = kg_x >= 0 && kg_x < kg_l ? __ldg(kg_in + kg_x) : {{IDENTITY}};
            }
        }
        __syncthreads();
        // Output o0 + t + BLOCK * i reads shared position (t + BLOCK * i) * S + j * D + kg_off.
#pragma unroll
        for (int kg_i = 0; kg_i < ITEMS; ++kg_i) {
            const float* kg_w = kg_seg + (kg_t + BLOCK * kg_i) * kg_s + kg_off;
#pragma unroll
            for (int kg_j = 0; kg_j < kg_k; ++kg_j)
                kg_acc[kg_i] = kagent_accumulate({{args}}, kg_acc[kg_i], kg_w[kg_j * kg_d], kg_c, kg_j);
        }
    }

    float* kg_out = {{OUT}} + kg_row * kg_lo;
#pragma unroll
    for (int kg_i = 0; kg_i < ITEMS; ++kg_i) {
        const int kg_o = kg_o0 + kg_t + BLOCK * kg_i;
        if (kg_o < kg_lo) {
            int kg_count = 0;   // taps inside the input
#pragma unroll
            for (int kg_j = 0; kg_j < kg_k; ++kg_j) {
                const int kg_x = kg_o * kg_s - kg_p + kg_j * kg_d;
                kg_count += kg_x >= 0 && kg_x < kg_l;
            }
            __stcs(kg_out + kg_o, kagent_finalize({{args}}, kg_acc[kg_i], kg_count, kg_c));
        }
    }
}
