// kagent's CPU emulator: CUDA C device code compiled by the host's C++ compiler and run on the CPU.
// Pre-included before the kernel's source. Each CUDA thread of a block is a fiber with its own stack;
// __syncthreads and the warp operations (shuffles, votes, __syncwarp) switch fibers, so a block's
// threads run one at a time, deterministically, in a schedule the host picks (forward or reverse).
// Blocks run one after another, so __shared__ variables are plain statics. What the emulator cannot run
// (inline PTX, tensor-core fragments, cooperative groups) fails to build here and is reported as such.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstddef>
#include <type_traits>
#include <utility>

#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#define __CUDA_ARCH__ 900
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __shared__ static
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__
#define warpSize 32
#define __builtin_assume(x) ((void)0)

struct uint3 { unsigned int x, y, z; };
struct dim3 {
    unsigned int x = 1, y = 1, z = 1;
    dim3() = default;
    dim3(unsigned a, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
    dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    operator uint3() const { return uint3{x, y, z}; }
};

struct kg_fiber {
    void* sp;
    uint3 tid;
    unsigned int lane, warp;
    int state;  // 0 runnable, 1 at a block barrier, 2 at a warp barrier, 3 done
    unsigned mask;  // at a warp barrier: the lanes it waits for
};
extern kg_fiber* kg_cur;
extern dim3 kg_block_idx, kg_block_dim, kg_grid_dim;
extern unsigned long long kg_exchange[32][32];  // a warp's lanes' values during a shuffle or a vote
extern unsigned char kg_lane_live[32][32];
extern unsigned long long kg_clock;
void kg_wait(int kind, unsigned mask = 0xffffffffu);  // 1: __syncthreads, 2: the lanes `mask` of its warp
[[noreturn]] void kg_fail(int code, const char* what);

#define threadIdx (kg_cur->tid)
#define blockIdx kg_block_idx
#define blockDim kg_block_dim
#define gridDim kg_grid_dim

inline void __syncthreads() { kg_wait(1); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { kg_wait(2, mask); }
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}
inline void __trap() { kg_fail(4, "__trap() was called"); }
inline void __nanosleep(unsigned) {}
inline long long clock64() { return (long long)++kg_clock; }
inline long long clock() { return (long long)++kg_clock; }

// Warp exchanges: every live lane publishes a value, waits for the warp, reads a partner's, waits again.
template <class T> inline T kg_shuffle(unsigned mask, T v, int src) {
    static_assert(sizeof(T) <= 8, "a shuffled value has at most 8 bytes");
    unsigned w = kg_cur->warp, lane = kg_cur->lane;
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    kg_exchange[w][lane] = bits;
    kg_wait(2, mask);
    T r = v;
    if (src >= 0 && src < 32 && kg_lane_live[w][src]) std::memcpy(&r, &kg_exchange[w][src], sizeof(T));
    kg_wait(2, mask);
    return r;
}
template <class T> inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    int lane = (int)kg_cur->lane;
    return kg_shuffle(mask, v, (lane / width) * width + ((src % width) + width) % width);
}
template <class T> inline T __shfl_xor_sync(unsigned mask, T v, int lanes, int width = 32) {
    int lane = (int)kg_cur->lane, src = lane ^ lanes;
    return kg_shuffle(mask, v, src / width == lane / width ? src : lane);
}
template <class T> inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    int lane = (int)kg_cur->lane, src = lane + (int)delta;
    return kg_shuffle(mask, v, src / width == lane / width ? src : lane);
}
template <class T> inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    int lane = (int)kg_cur->lane, src = lane - (int)delta;
    return kg_shuffle(mask, v, src >= 0 && src / width == lane / width ? src : lane);
}
inline unsigned kg_vote(unsigned mask, bool p) {
    unsigned w = kg_cur->warp, lane = kg_cur->lane;
    kg_exchange[w][lane] = p;
    kg_wait(2, mask);
    unsigned bits = 0;
    for (int i = 0; i < 32; ++i)
        if (kg_lane_live[w][i] && (mask >> i & 1u) && kg_exchange[w][i]) bits |= 1u << i;
    kg_wait(2, mask);
    return bits;
}
inline unsigned kg_live_mask() {
    unsigned bits = 0;
    for (int i = 0; i < 32; ++i)
        if (kg_lane_live[kg_cur->warp][i]) bits |= 1u << i;
    return bits;
}
inline unsigned __ballot_sync(unsigned mask, int p) { return kg_vote(mask, p != 0); }
inline int __any_sync(unsigned mask, int p) { return kg_vote(mask, p != 0) != 0; }
inline int __all_sync(unsigned mask, int p) { return kg_vote(mask, p != 0) == (kg_live_mask() & mask); }
inline unsigned __activemask() { return kg_live_mask(); }
extern int kg_block_count;
inline int kg_block_vote(int p, int how) {
    static int count, seen;
    if (kg_cur->tid.x == 0 && kg_cur->tid.y == 0 && kg_cur->tid.z == 0) count = 0;
    kg_wait(1);
    count += p != 0;
    kg_wait(1);
    seen = count;
    kg_wait(1);
    return how == 0 ? seen : how == 1 ? seen != 0 : seen == kg_block_count;
}
inline int __syncthreads_count(int p) { return kg_block_vote(p, 0); }
inline int __syncthreads_or(int p) { return kg_block_vote(p, 1); }
inline int __syncthreads_and(int p) { return kg_block_vote(p, 2); }

// Atomics: one fiber runs at a time and never in the middle of one, so a plain update is atomic.
template <class T, class U> inline T atomicAdd(T* p, U v) { T old = *p; *p = (T)(old + v); return old; }
template <class T, class U> inline T atomicSub(T* p, U v) { T old = *p; *p = (T)(old - v); return old; }
template <class T, class U> inline T atomicExch(T* p, U v) { T old = *p; *p = (T)v; return old; }
template <class T, class U> inline T atomicMax(T* p, U v) { T old = *p; if ((T)v > old) *p = (T)v; return old; }
template <class T, class U> inline T atomicMin(T* p, U v) { T old = *p; if ((T)v < old) *p = (T)v; return old; }
template <class T, class U> inline T atomicAnd(T* p, U v) { T old = *p; *p = old & (T)v; return old; }
template <class T, class U> inline T atomicOr(T* p, U v) { T old = *p; *p = old | (T)v; return old; }
template <class T, class U> inline T atomicXor(T* p, U v) { T old = *p; *p = old ^ (T)v; return old; }
template <class T, class U, class V> inline T atomicCAS(T* p, U cmp, V v) {
    T old = *p; if (old == (T)cmp) *p = (T)v; return old;
}
inline unsigned atomicInc(unsigned* p, unsigned v) { unsigned o = *p; *p = o >= v ? 0 : o + 1; return o; }
inline unsigned atomicDec(unsigned* p, unsigned v) { unsigned o = *p; *p = (o == 0 || o > v) ? v : o - 1; return o; }
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd

// Loads and stores with cache hints are plain ones here.
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { *p = v; }

// Vector types.
#define KG_VEC2(T, N, A) struct __attribute__((aligned(A))) N##2 { T x, y; }; \
    inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define KG_VEC3(T, N) struct N##3 { T x, y, z; }; \
    inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }
#define KG_VEC4(T, N, A) struct __attribute__((aligned(A))) N##4 { T x, y, z, w; }; \
    inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
#define KG_VECS(T, N, S) KG_VEC2(T, N, 2 * S) KG_VEC3(T, N) KG_VEC4(T, N, 4 * S)
KG_VECS(float, float, 4)
KG_VECS(int, int, 4)
KG_VEC2(unsigned int, uint, 8) KG_VEC4(unsigned int, uint, 16)
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }
KG_VECS(short, short, 2)
KG_VECS(unsigned short, ushort, 2)
KG_VECS(signed char, char, 1)
KG_VECS(unsigned char, uchar, 1)
KG_VEC2(double, double, 16) KG_VEC3(double, double) KG_VEC4(double, double, 16)
KG_VEC2(long long, longlong, 16) KG_VEC4(long long, longlong, 16)
KG_VEC2(unsigned long long, ulonglong, 16) KG_VEC4(unsigned long long, ulonglong, 16)
KG_VEC2(long, long, 16) KG_VEC4(long, long, 16)

// Math: the device functions CUDA adds to C's.
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log10(x); }
inline float __exp10f(float x) { return std::pow(10.0f, x); }
inline float exp10f(float x) { return std::pow(10.0f, x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline void __sincosf(float x, float* s, float* c) { *s = std::sin(x); *c = std::cos(x); }
inline void sincosf(float x, float* s, float* c) { *s = std::sin(x); *c = std::cos(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __frsqrt_rn(float x) { return 1.0f / std::sqrt(x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fadd_rz(float a, float b) { return a + b; }
inline float __fmul_rz(float a, float b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline double __drcp_rn(double x) { return 1.0 / x; }
inline float __saturatef(float x) { return x < 0.f ? 0.f : x > 1.f ? 1.f : x; }
inline float saturate(float x) { return __saturatef(x); }
inline float normcdff(float x) { return 0.5f * std::erfc(-x * 0.70710678f); }
inline double normcdf(double x) { return 0.5 * std::erfc(-x * 0.7071067811865476); }
inline float erfcinvf(float) { kg_fail(5, "erfcinvf is not emulated"); }
inline float sinpif(float x) { return std::sin(x * 3.14159265358979f); }
inline float cospif(float x) { return std::cos(x * 3.14159265358979f); }
inline int __float2int_rn(float x) { return (int)std::nearbyint(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline int __float2int_rd(float x) { return (int)std::floor(x); }
inline int __float2int_ru(float x) { return (int)std::ceil(x); }
inline unsigned __float2uint_rn(float x) { return (unsigned)std::nearbyint(x); }
inline long long __float2ll_rn(float x) { return (long long)std::nearbyint(x); }
inline long long __double2ll_rn(double x) { return (long long)std::nearbyint(x); }
inline int __double2int_rn(double x) { return (int)std::nearbyint(x); }
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline float __ll2float_rn(long long x) { return (float)x; }
inline double __int2double_rn(int x) { return (double)x; }
inline float __double2float_rn(double x) { return (float)x; }
template <class To, class From> inline To kg_bits(From v) { To t; std::memcpy(&t, &v, sizeof(To)); return t; }
inline int __float_as_int(float x) { return kg_bits<int>(x); }
inline unsigned __float_as_uint(float x) { return kg_bits<unsigned>(x); }
inline float __int_as_float(int x) { return kg_bits<float>(x); }
inline float __uint_as_float(unsigned x) { return kg_bits<float>(x); }
inline long long __double_as_longlong(double x) { return kg_bits<long long>(x); }
inline double __longlong_as_double(long long x) { return kg_bits<double>(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
inline int __mul24(int a, int b) { return a * b; }
inline unsigned __umul24(unsigned a, unsigned b) { return a * b; }
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    s &= 31; return s ? (hi << s) | (lo >> (32 - s)) : hi;
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    s &= 31; return s ? (lo >> s) | (hi << (32 - s)) : lo;
}
using std::isnan; using std::isinf; using std::isfinite; using std::signbit;
// CUDA's min/max overloads for every pair of arithmetic types (the wider type wins).
template <class A, class B, class = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline auto max(A a, B b) -> std::common_type_t<A, B> { return a > b ? a : b; }
template <class A, class B, class = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline auto min(A a, B b) -> std::common_type_t<A, B> { return a < b ? a : b; }
inline int abs(int x) { return x < 0 ? -x : x; }
inline long long llabs(long long x) { return x < 0 ? -x : x; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a > b ? a : b; }
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }

// Half and bfloat16: storage types with float arithmetic.
struct __half {
    unsigned short bits;
    __half() = default;
    __half(float f) { _Float16 h = (_Float16)f; std::memcpy(&bits, &h, 2); }
    __half(double f) : __half((float)f) {}
    __half(int i) : __half((float)i) {}
    operator float() const { _Float16 h; std::memcpy(&h, &bits, 2); return (float)h; }
};
struct __nv_bfloat16 {
    unsigned short bits;
    __nv_bfloat16() = default;
    __nv_bfloat16(float f) {
        unsigned u; std::memcpy(&u, &f, 4);
        bits = std::isnan(f) ? (unsigned short)0x7FC0 : (unsigned short)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
    }
    __nv_bfloat16(double f) : __nv_bfloat16((float)f) {}
    __nv_bfloat16(int i) : __nv_bfloat16((float)i) {}
    operator float() const { unsigned u = (unsigned)bits << 16; float f; std::memcpy(&f, &u, 4); return f; }
};
typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;
struct __attribute__((aligned(4))) __half2 { __half x, y; };
struct __attribute__((aligned(4))) __nv_bfloat162 { __nv_bfloat16 x, y; };
typedef __half2 half2;
typedef __nv_bfloat162 nv_bfloat162;
#define KG_HALF_OPS(H)                                                                        \
    inline H operator+(H a, H b) { return H((float)a + (float)b); }                           \
    inline H operator-(H a, H b) { return H((float)a - (float)b); }                           \
    inline H operator*(H a, H b) { return H((float)a * (float)b); }                           \
    inline H operator/(H a, H b) { return H((float)a / (float)b); }                           \
    inline H operator-(H a) { return H(-(float)a); }                                          \
    inline H& operator+=(H& a, H b) { return a = a + b; }                                     \
    inline H& operator-=(H& a, H b) { return a = a - b; }                                     \
    inline H& operator*=(H& a, H b) { return a = a * b; }                                     \
    inline H& operator/=(H& a, H b) { return a = a / b; }                                     \
    inline bool operator<(H a, H b) { return (float)a < (float)b; }                           \
    inline bool operator>(H a, H b) { return (float)a > (float)b; }                           \
    inline bool operator<=(H a, H b) { return (float)a <= (float)b; }                         \
    inline bool operator>=(H a, H b) { return (float)a >= (float)b; }                         \
    inline bool operator==(H a, H b) { return (float)a == (float)b; }                         \
    inline bool operator!=(H a, H b) { return (float)a != (float)b; }
KG_HALF_OPS(__half)
KG_HALF_OPS(__nv_bfloat16)
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return (float)h; }
inline __half __int2half_rn(int i) { return __half((float)i); }
inline __half __hadd(__half a, __half b) { return a + b; }
inline __half __hsub(__half a, __half b) { return a - b; }
inline __half __hmul(__half a, __half b) { return a * b; }
inline __half __hdiv(__half a, __half b) { return a / b; }
inline __half __hfma(__half a, __half b, __half c) { return __half((float)a * (float)b + (float)c); }
inline __half __hmax(__half a, __half b) { return (float)a > (float)b ? a : b; }
inline __half __hmin(__half a, __half b) { return (float)a < (float)b ? a : b; }
inline __half __hneg(__half a) { return -a; }
inline __half hexp(__half a) { return __half(std::exp((float)a)); }
inline __half hsqrt(__half a) { return __half(std::sqrt((float)a)); }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
inline __half2 __float2half2_rn(float a) { return __half2{__half(a), __half(a)}; }
inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
inline float2 __half22float2(__half2 h) { return float2{(float)h.x, (float)h.y}; }
inline float __low2float(__half2 h) { return (float)h.x; }
inline float __high2float(__half2 h) { return (float)h.y; }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline __half2 __hadd2(__half2 a, __half2 b) { return __half2{a.x + b.x, a.y + b.y}; }
inline __half2 __hmul2(__half2 a, __half2 b) { return __half2{a.x * b.x, a.y * b.y}; }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __half2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 h) { return (float)h; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(b)}; }
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return float2{(float)h.x, (float)h.y}; }
inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return a + b; }
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return a * b; }
inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) { return (float)a > (float)b ? a : b; }

// printf from a kernel goes to the emulator's log (stderr), up to a limit.
int kg_printf(const char* format, ...);
#define printf kg_printf
#define assert(c) ((c) ? (void)0 : kg_fail(4, "assert(" #c ") failed"))

// Dynamic shared memory: `extern __shared__ T name[];` is rewritten (emulate.py) to name this arena.
extern unsigned char kg_dynamic_smem[];
