// @repair task: tasks/level1/add.yaml
// @repair from: tasks/level1/add/vec.cu
// @repair expect: timeout
// @repair bug: the grid-stride step is blockIdx.x * (BLOCK * UNROLL), 0 in block 0: its loop never ends once n >= VEC (from n = 33 among the check sizes)
// @repair fix: stride = (long long)gridDim.x * (BLOCK * UNROLL)
// @kagent entry: add
// @kagent grid: (min(ceil_div(n, BLOCK * VEC * UNROLL), 132 * (2048 // BLOCK) * WAVES) if WAVES > 0 else ceil_div(n, BLOCK * VEC * UNROLL))
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 128 512
// @kagent knob VEC [memory]: 4 1 2
// @kagent knob UNROLL [compute]: 2 1
// @kagent knob WAVES [launch]: 0 4
//
// Expert add: VEC-wide loads and stores (float4 for VEC=4), UNROLL vectors per
// thread with every load issued before the first store (memory-level
// parallelism), streaming cache hints (each byte is touched once), and a
// grid-stride loop. WAVES=0 launches one block per tile (the loop runs once);
// WAVES=k caps the grid at k full waves of an H200 (132 SMs x 2048/BLOCK
// resident blocks), and each block loops over several tiles.
//
// The vector path needs only the three buffers to be VEC*4-byte aligned: it
// covers the first n - n % VEC elements and block 0 adds the last n % VEC
// one at a time, so odd sizes use the vector path too. Misaligned buffers fall
// back to VEC=1. The loop is correct for any grid size.

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef UNROLL
#define UNROLL 2
#endif

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
static_assert(UNROLL >= 1 && UNROLL <= 8, "UNROLL must be 1..8");

template <int V> struct VecT;
template <> struct VecT<1> { typedef float T; };
template <> struct VecT<2> { typedef float2 T; };
template <> struct VecT<4> { typedef float4 T; };

__device__ __forceinline__ float vadd(float a, float b) { return a + b; }
__device__ __forceinline__ float2 vadd(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ float4 vadd(float4 a, float4 b) {
    return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// Adds the first nv V-wide vectors of a and b into out.
template <int V>
__device__ __forceinline__ void add_vectors(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ out, long long nv) {
    typedef typename VecT<V>::T T;
    const T* av = reinterpret_cast<const T*>(a);
    const T* bv = reinterpret_cast<const T*>(b);
    T* ov = reinterpret_cast<T*>(out);
    const long long stride = (long long)blockIdx.x * (BLOCK * UNROLL);
    for (long long base = (long long)blockIdx.x * (BLOCK * UNROLL) + threadIdx.x; base < nv; base += stride) {
        T ra[UNROLL], rb[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const long long i = base + (long long)u * BLOCK;
            if (i < nv) { ra[u] = __ldcs(av + i); rb[u] = __ldcs(bv + i); }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const long long i = base + (long long)u * BLOCK;
            if (i < nv) __stcs(ov + i, vadd(ra[u], rb[u]));
        }
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    const unsigned long long addr = (unsigned long long)a | (unsigned long long)b | (unsigned long long)out;
    if (VEC > 1 && addr % (VEC * sizeof(float)) == 0) {
        const long long nv = (long long)n / VEC;
        add_vectors<VEC>(a, b, out, nv);
        // The last n % VEC elements (fewer than VEC <= BLOCK), one thread each.
        const long long done = nv * VEC;
        if (blockIdx.x == 0 && threadIdx.x < n - done) {
            const long long i = done + threadIdx.x;
            out[i] = a[i] + b[i];
        }
    } else {
        add_vectors<1>(a, b, out, (long long)n);
    }
}
