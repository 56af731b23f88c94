// @kagent entry: bias_gelu
// @kagent grid: ceil_div(cols, BLOCK * VEC * ITEMS), min(rows, 65535)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 128 512 1024
// @kagent knob VEC [memory]: 4 1 2
// @kagent knob ITEMS [memory]: 2 1 4
//
// Expert bias + GELU: a 2-D grid, blockIdx.y walks rows (grid-stride past
// 65535), blockIdx.x a span of BLOCK * VEC * ITEMS columns. For each of its
// rows a thread issues all ITEMS streaming vector loads of x (and the bias
// vectors, cached) before any arithmetic (memory-level parallelism), and
// writes y with streaming stores. No integer division.
// GELU uses the identity 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)) with the
// hardware exp: ~1e-6 relative, and exact limits (v for large v, -0 for very
// negative v, where exp overflows to inf).
// Vector loads only when cols % VEC == 0 and the buffers are aligned (then a
// vector is wholly inside the row or wholly past its end); otherwise the same
// columns are covered with scalar accesses.

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef ITEMS
#define ITEMS 2
#endif

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");

__device__ __forceinline__ float gelu(float v) {
    // u = sqrt(2/pi) * (v + 0.044715 v^3)
    const float u = v * fmaf(0.035677408136300125f, v * v, 0.7978845608028654f);
    return __fdividef(v, 1.0f + __expf(-2.0f * u));
}

template <int V> struct Vec { float v[V]; };

__device__ __forceinline__ Vec<1> load_cs(const float* p, Vec<1>*) { Vec<1> r; r.v[0] = __ldcs(p); return r; }
__device__ __forceinline__ Vec<2> load_cs(const float* p, Vec<2>*) {
    const float2 t = __ldcs(reinterpret_cast<const float2*>(p));
    Vec<2> r; r.v[0] = t.x; r.v[1] = t.y; return r;
}
__device__ __forceinline__ Vec<4> load_cs(const float* p, Vec<4>*) {
    const float4 t = __ldcs(reinterpret_cast<const float4*>(p));
    Vec<4> r; r.v[0] = t.x; r.v[1] = t.y; r.v[2] = t.z; r.v[3] = t.w; return r;
}
__device__ __forceinline__ Vec<1> load_ro(const float* p, Vec<1>*) { Vec<1> r; r.v[0] = __ldg(p); return r; }
__device__ __forceinline__ Vec<2> load_ro(const float* p, Vec<2>*) {
    const float2 t = __ldg(reinterpret_cast<const float2*>(p));
    Vec<2> r; r.v[0] = t.x; r.v[1] = t.y; return r;
}
__device__ __forceinline__ Vec<4> load_ro(const float* p, Vec<4>*) {
    const float4 t = __ldg(reinterpret_cast<const float4*>(p));
    Vec<4> r; r.v[0] = t.x; r.v[1] = t.y; r.v[2] = t.z; r.v[3] = t.w; return r;
}
__device__ __forceinline__ void store_cs(float* p, const Vec<1>& a) { __stcs(p, a.v[0]); }
__device__ __forceinline__ void store_cs(float* p, const Vec<2>& a) {
    __stcs(reinterpret_cast<float2*>(p), make_float2(a.v[0], a.v[1]));
}
__device__ __forceinline__ void store_cs(float* p, const Vec<4>& a) {
    __stcs(reinterpret_cast<float4*>(p), make_float4(a.v[0], a.v[1], a.v[2], a.v[3]));
}

// This thread's columns: vector `it * BLOCK + threadIdx.x` (it < ITEMS) of the
// span of BLOCK * ITEMS * V columns starting at span0. All ITEMS loads of x
// (and of the bias, an L1/L2 hit after the first row) are issued before any
// arithmetic.
template <int V>
__device__ __forceinline__ void run(const float* __restrict__ x, const float* __restrict__ bias,
                                    float* __restrict__ y, int rows, int cols, int span0) {
    const int col0 = span0 + (int)threadIdx.x * V;
    for (int row = blockIdx.y; row < rows; row += gridDim.y) {
        const size_t base = (size_t)row * cols;
        Vec<V> a[ITEMS], b[ITEMS];
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            const int col = col0 + it * (BLOCK * V);
            if (col < cols) {
                a[it] = load_cs(x + base + col, (Vec<V>*)nullptr);
                b[it] = load_ro(bias + col, (Vec<V>*)nullptr);
            }
        }
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            const int col = col0 + it * (BLOCK * V);
            if (col < cols) {
                Vec<V> o;
#pragma unroll
                for (int j = 0; j < V; ++j) o.v[j] = gelu(a[it].v[j] + b[it].v[j]);
                store_cs(y + base + col, o);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
bias_gelu(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y, int rows, int cols) {
    // The block's span: BLOCK * VEC * ITEMS columns.
    const int span0 = blockIdx.x * (BLOCK * VEC * ITEMS);
    const unsigned long long addr = (unsigned long long)x | (unsigned long long)bias | (unsigned long long)y;
    if (VEC > 1 && cols % VEC == 0 && addr % (VEC * sizeof(float)) == 0) {
        run<VEC>(x, bias, y, rows, cols, span0);
    } else {
        // Scalar fallback over the same span, as VEC consecutive scalar sub-spans.
#pragma unroll 1
        for (int p = 0; p < VEC; ++p) run<1>(x, bias, y, rows, cols, span0 + p * (BLOCK * ITEMS));
    }
}
