// @kagent entry: maxpool2d
// @kagent grid: ceil_div(N * C * ceil_div(HO, OUT_H) * ceil_div(WO, OUT_W), BLOCK)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 128 512 64 1024 32
// @kagent knob OUT_W [compute]: 4 2 1 8
// @kagent knob OUT_H [compute]: 1 2 4 8
// @kagent knob VEC [memory]: 4 1 2
// @kagent knob BOUNDS [launch]: 1 0 2
// @kagent knob STREAM [memory]: 1 0
//
// WIDE SPACE (tasks/wide): the expert kernel of tasks/level1/maxpool2d/tiled.cu with its knobs
// widened to 1,728 combinations: blocks of 32 to 1024 threads, patches up to 8 x 8 outputs per
// thread, float2 as well as float4 loads (VEC = 2; VEC = 4 needs OUT_W >= 2, VEC = 2 any OUT_W) with
// stores of min(OUT_W, 4) outputs (VEC > 1), streaming or plain stores, and the launch bounds a knob:
// BOUNDS = 1 __launch_bounds__(BLOCK), 0 none (ptxas may use up to 255 registers), 2
// __launch_bounds__(BLOCK, 2048 / BLOCK) (a full multiprocessor: at most 32 registers, spills).
// Combinations that cannot work fail loudly: with BOUNDS = 0, large patches in large blocks need more
// registers than a multiprocessor has (BLOCK x registers > 65,536: a resource error before launch).
//
// Expert max pooling (3x3, stride 2, padding 1): each thread computes an
// OUT_H x OUT_W patch of outputs. Output (oh, ow) covers input rows
// 2*oh-1 .. 2*oh+1 and columns 2*ow-1 .. 2*ow+1, so the patch starting at
// (oh0, ow0) needs rows 2*oh0-1 .. 2*oh0+2*OUT_H-1 and columns
// 2*ow0-1 .. 2*ow0+2*OUT_W-1: one column on the left (the previous thread's
// last, an L1 hit) and 2*OUT_W columns starting at 2*ow0, which are read as
// float4s when W % 4 == 0, x is 16-byte aligned and the patch is wholly
// inside (then those columns are too, and aligned). Each input row is loaded
// once per thread and max-reduced across the 3 columns of each output, then
// folded into the (up to two) output rows that use it: with OUT_H > 1 the
// rows shared by vertically adjacent outputs are read once.
//
// Threads are ordered with the output column fastest, so a warp reads
// contiguous input row segments and writes contiguous output segments
// (float4/float2 streaming stores where aligned, scalar otherwise).

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef OUT_W
#define OUT_W 4
#endif
#ifndef OUT_H
#define OUT_H 1
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef BOUNDS
#define BOUNDS 1
#endif
#ifndef STREAM
#define STREAM 1
#endif

static_assert(OUT_W == 1 || OUT_W == 2 || OUT_W == 4 || OUT_W == 8, "OUT_W must be 1, 2, 4 or 8");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC must be 1, 2 or 4");
static_assert(BOUNDS >= 0 && BOUNDS <= 2, "BOUNDS is 0, 1 or 2");

#define SW (OUT_W < 4 ? OUT_W : 4)   // outputs per vector store

#if BOUNDS == 1
#define BOUNDS_ATTR __launch_bounds__(BLOCK)
#elif BOUNDS == 2
#define BOUNDS_ATTR __launch_bounds__(BLOCK, 2048 / BLOCK)
#else
#define BOUNDS_ATTR
#endif

template <typename T>
__device__ __forceinline__ void put(T* p, T v) {
#if STREAM
    __stcs(p, v);
#else
    *p = v;
#endif
}

extern "C" __global__ void BOUNDS_ATTR
maxpool2d(const float* __restrict__ x, float* __restrict__ y, int N, int C, int H, int W, int HO, int WO) {
    const int GW = (WO + OUT_W - 1) / OUT_W;   // patches per output row
    const int GH = (HO + OUT_H - 1) / OUT_H;   // patches per output column
    const long long idx = (long long)blockIdx.x * BLOCK + threadIdx.x;
    const long long total = (long long)N * C * GH * GW;
    if (idx >= total) return;
    const int gw = (int)(idx % GW);
    const long long t = idx / GW;
    const int gh = (int)(t % GH);
    const long long plane = t / GH;            // n * C + c
    const int ow0 = gw * OUT_W, oh0 = gh * OUT_H;
    const float* __restrict__ xp = x + plane * H * W;
    float* __restrict__ yp = y + plane * HO * WO;

    const bool full_w = ow0 + OUT_W <= WO;    // every output column of the patch exists
    // Vectors of VEC columns from column c0 = 2 * OUT_W * gw: aligned when VEC divides 2 * OUT_W and W.
    const bool vec_in = VEC > 1 && (2 * OUT_W) % VEC == 0 && full_w && W % VEC == 0 &&
                        ((unsigned long long)x % (VEC * sizeof(float))) == 0;

    float res[OUT_H][OUT_W];
#pragma unroll
    for (int i = 0; i < OUT_H; ++i)
#pragma unroll
        for (int j = 0; j < OUT_W; ++j) res[i][j] = -INFINITY;

    const int c0 = 2 * ow0;                    // <= 2 * (WO - 1) <= W - 1: inside
#pragma unroll
    for (int r = 0; r < 2 * OUT_H + 1; ++r) {
        const int h = 2 * oh0 - 1 + r;
        if (h < 0 || h >= H) continue;         // padding rows never win
        const float* __restrict__ row = xp + (long long)h * W;
        float v[2 * OUT_W + 1];                // v[0]: column c0 - 1; v[1 + j]: column c0 + j
        v[0] = c0 >= 1 ? row[c0 - 1] : -INFINITY;
        if (vec_in) {
            // W % VEC == 0 makes W even, so WO = W / 2 and c0 + 2 * OUT_W - 1 <= 2 * WO - 1 = W - 1.
            if constexpr (VEC == 4 && (2 * OUT_W) % 4 == 0) {
#pragma unroll
                for (int q = 0; q < (2 * OUT_W) / 4; ++q) {
                    const float4 f = *reinterpret_cast<const float4*>(row + c0 + 4 * q);
                    v[1 + 4 * q] = f.x; v[2 + 4 * q] = f.y; v[3 + 4 * q] = f.z; v[4 + 4 * q] = f.w;
                }
            } else if constexpr (VEC == 2) {
#pragma unroll
                for (int q = 0; q < OUT_W; ++q) {
                    const float2 f = *reinterpret_cast<const float2*>(row + c0 + 2 * q);
                    v[1 + 2 * q] = f.x; v[2 + 2 * q] = f.y;
                }
            }
        } else {
#pragma unroll
            for (int j = 0; j < 2 * OUT_W; ++j) v[1 + j] = c0 + j < W ? row[c0 + j] : -INFINITY;
        }
#pragma unroll
        for (int j = 0; j < OUT_W; ++j) {
            // Output column ow0 + j covers input columns c0 + 2j - 1 .. c0 + 2j + 1.
            const float hm = fmaxf(fmaxf(v[2 * j], v[2 * j + 1]), v[2 * j + 2]);
#pragma unroll
            for (int i = 0; i < OUT_H; ++i)
                if (r >= 2 * i && r <= 2 * i + 2) res[i][j] = fmaxf(res[i][j], hm);   // output row oh0 + i
        }
    }

    // Stores of SW outputs from column ow0 (a multiple of SW): aligned when SW divides WO.
    const bool vec_out = VEC > 1 && SW >= 2 && full_w && WO % SW == 0 &&
                         ((unsigned long long)y % (SW * sizeof(float))) == 0;
#pragma unroll
    for (int i = 0; i < OUT_H; ++i) {
        const int oh = oh0 + i;
        if (oh >= HO) break;
        float* __restrict__ yr = yp + (long long)oh * WO + ow0;
        if constexpr (SW == 4) {
            if (vec_out) {
#pragma unroll
                for (int q = 0; q < OUT_W / 4; ++q)
                    put(reinterpret_cast<float4*>(yr) + q,
                        make_float4(res[i][4 * q], res[i][4 * q + 1], res[i][4 * q + 2], res[i][4 * q + 3]));
                continue;
            }
        }
        if constexpr (SW == 2) {
            if (vec_out) {
                put(reinterpret_cast<float2*>(yr), make_float2(res[i][0], res[i][1]));
                continue;
            }
        }
#pragma unroll
        for (int j = 0; j < OUT_W; ++j)
            if (ow0 + j < WO) put(yr + j, res[i][j]);
    }
}
