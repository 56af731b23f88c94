// @skeleton name: elementwise
// @skeleton summary: an n-ary map: each output element from the inputs at its own index; grid-stride loop, ITEMS elements a thread in flight
// @skeleton families: elementwise
// @skeleton fits: one float32 output of N elements, each a function of the inputs (and scalars) at the same flat index; activations, bias adds, scalings, clamps
// @skeleton indices: i < N
// @skeleton slot N [dim]: the number of output elements, over the task's dims (e.g. `n`, or `rows * cols`)
// @skeleton slot OUT [expr]: the output buffer this kernel writes, e.g. `y`
// @skeleton slot VALUE [body]: `float value(PARAMS, long long i)`: every parameter of the task is in scope; return output element i, e.g. `const float v = x[i]; return v > 0.f ? v : 0.01f * v;`
// @kagent entry: kagent_elementwise
// @kagent grid: min(ceil_div({{N}}, BLOCK * ITEMS), WAVES * 1024)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 128 512
// @kagent knob ITEMS [memory]: 4 1 2 8
// @kagent knob WAVES [launch]: 16 4 64
//
// Skeleton `elementwise` (kernel_agent/skeletons/elementwise.cu): every output element is
// value(i), computed by the slot VALUE from the inputs at index i. Each thread keeps ITEMS
// independent elements in flight (loads issued before any store, strided BLOCK apart so each
// load instruction is coalesced across the warp); the grid is capped at WAVES * 1024 blocks and
// strides over the rest, so tiny and huge sizes both launch sensibly.

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 4
#endif
#ifndef WAVES
#define WAVES 16
#endif

__device__ __forceinline__ float kagent_value({{params}}, long long i) {
    {{VALUE}}
}

extern "C" __global__ void __launch_bounds__(BLOCK) kagent_elementwise({{params}}) {
    const long long kg_n = {{N}};
    const long long kg_step = (long long)gridDim.x * BLOCK * ITEMS;
    for (long long kg_base = (long long)blockIdx.x * BLOCK * ITEMS + threadIdx.x; kg_base < kg_n;
         kg_base += kg_step) {
        float kg_v[ITEMS];
#pragma unroll
        for (int kg_k = 0; kg_k < ITEMS; ++kg_k) {
            const long long kg_i = kg_base + (long long)kg_k * BLOCK;
            if (kg_i < kg_n) kg_v[kg_k] = kagent_value({{args}}, kg_i);
        }
#pragma unroll
        for (int kg_k = 0; kg_k < ITEMS; ++kg_k) {
            const long long kg_i = kg_base + (long long)kg_k * BLOCK;
            if (kg_i < kg_n) {{OUT}}[kg_i] = kg_v[kg_k];
        }
    }
}
