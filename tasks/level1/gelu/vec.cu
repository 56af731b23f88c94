// @kagent entry: gelu
// @kagent grid: ceil_div(n, BLOCK * VEC * UNROLL)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 128 512
// @kagent knob VEC [memory]: 4 1 2
// @kagent knob UNROLL [memory]: 2 1
// @kagent knob FAST_TANH [compute]: 2 0
//
// Expert GELU: VEC-wide streaming loads and stores, UNROLL vectors per thread
// with every load issued before any math (memory-level parallelism), and a
// grid-stride loop (correct for any grid). FAST_TANH picks the formula:
//   0: 0.5 * x * (1 + tanhf(u))                  (the textbook form)
//   1: x / (1 + expf(-2u))                       (the same function: 0.5*(1 + tanh u) = 1/(1 + e^-2u))
//   2: __fdividef(x, 1 + __expf(-2u))            (MUFU ex2 + rcp; relative error ~1e-6 at most
//                                                 where the result is not negligible)
// Forms 1 and 2 avoid the 1 + tanh cancellation, so they are more accurate than 0
// for negative x; at x -> -inf e^-2u overflows to inf and the result is -0, the
// correct limit. The hardware tanh.approx.f32 (~5e-4 relative error) would not
// meet the tolerance and is not offered.
//
// The vector path needs x and y to be VEC*4-byte aligned: it covers the first
// n - n % VEC elements and block 0 does the last n % VEC, so odd sizes use the
// vector path too. Misaligned buffers fall back to VEC=1.

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef FAST_TANH
#define FAST_TANH 2
#endif

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
static_assert(UNROLL >= 1 && UNROLL <= 8, "UNROLL must be 1..8");
static_assert(FAST_TANH >= 0 && FAST_TANH <= 2, "FAST_TANH must be 0, 1 or 2");

__device__ __forceinline__ float gelu1(float x) {
    // u = sqrt(2/pi) * (x + 0.044715 x^3)
    const float u = 0.7978845608028654f * fmaf(0.044715f * x, x * x, x);
#if FAST_TANH == 0
    return 0.5f * x * (1.0f + tanhf(u));
#elif FAST_TANH == 1
    return x / (1.0f + expf(-2.0f * u));
#else
    return __fdividef(x, 1.0f + __expf(-2.0f * u));
#endif
}

template <int V> struct VecT;
template <> struct VecT<1> { typedef float T; };
template <> struct VecT<2> { typedef float2 T; };
template <> struct VecT<4> { typedef float4 T; };

__device__ __forceinline__ float vgelu(float a) { return gelu1(a); }
__device__ __forceinline__ float2 vgelu(float2 a) { return make_float2(gelu1(a.x), gelu1(a.y)); }
__device__ __forceinline__ float4 vgelu(float4 a) {
    return make_float4(gelu1(a.x), gelu1(a.y), gelu1(a.z), gelu1(a.w));
}

// GELU of the first nv V-wide vectors of x into y.
template <int V>
__device__ __forceinline__ void gelu_vectors(const float* __restrict__ x, float* __restrict__ y, long long nv) {
    typedef typename VecT<V>::T T;
    const T* xv = reinterpret_cast<const T*>(x);
    T* yv = reinterpret_cast<T*>(y);
    const long long stride = (long long)gridDim.x * (BLOCK * UNROLL);
    for (long long base = (long long)blockIdx.x * (BLOCK * UNROLL) + threadIdx.x; base < nv; base += stride) {
        T r[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const long long i = base + (long long)u * BLOCK;
            if (i < nv) r[u] = __ldcs(xv + i);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const long long i = base + (long long)u * BLOCK;
            if (i < nv) __stcs(yv + i, vgelu(r[u]));
        }
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
gelu(const float* __restrict__ x, float* __restrict__ y, int n) {
    const unsigned long long addr = (unsigned long long)x | (unsigned long long)y;
    if (VEC > 1 && addr % (VEC * sizeof(float)) == 0) {
        const long long nv = (long long)n / VEC;
        gelu_vectors<VEC>(x, y, nv);
        // The last n % VEC elements (fewer than VEC <= BLOCK), one thread each.
        const long long done = nv * VEC;
        if (blockIdx.x == 0 && threadIdx.x < n - done) y[done + threadIdx.x] = gelu1(x[done + threadIdx.x]);
    } else {
        gelu_vectors<1>(x, y, (long long)n);
    }
}
