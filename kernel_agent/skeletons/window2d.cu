// @skeleton name: window2d
// @skeleton summary: 2-D sliding windows over the H x W planes of an N x C x H x W tensor (pooling, depthwise convolution): a block stages its output tile's input, halo and padding included, in shared memory with coalesced float4 loads (or reads it through the cache), then each thread folds the windows of OUT_H x OUT_W outputs
// @skeleton families: pooling, convolution
// @skeleton fits: float32 input (N, C, H, W) and output (N, C, HO, WO), both contiguous; output (n, c, oy, ox) folds the KH x KW taps at input rows oy * SH - PH + ky * DH and columns ox * SW - PW + kx * DW of the same plane (n, c), with a constant window geometry; max/avg pooling, depthwise convolution; not a convolution that mixes channels
// @skeleton indices: c < CHANNELS
// @skeleton slot BATCH [dim]: the batch size N of the input (N, C, H, W), e.g. `N` (`1` for a (C, H, W) input)
// @skeleton slot CHANNELS [dim]: the channel count C of the input (N, C, H, W), e.g. `C`
// @skeleton slot H [dim]: the height of an input plane, e.g. `H`
// @skeleton slot W [dim]: the width of an input plane (its values are contiguous), e.g. `W`
// @skeleton slot HO [dim]: the height of an output plane, e.g. `HO`
// @skeleton slot WO [dim]: the width of an output plane, e.g. `WO`
// @skeleton slot IN [expr]: the float32 input buffer (N, C, H, W), e.g. `x`
// @skeleton slot OUT [expr]: the float32 output buffer (N, C, HO, WO), e.g. `y`
// @skeleton slot KH [expr]: the window's height in taps, an integer constant: the task's own number (its reference's constant, its naive kernel's loop)
// @skeleton slot KW [expr]: the window's width in taps, an integer constant: the task's own number (its reference's constant, its naive kernel's loop)
// @skeleton slot SH [expr]: the stride between output rows, in input rows, an integer constant: the task's own number (its reference's constant, its naive kernel's loop)
// @skeleton slot SW [expr]: the stride between output columns, in input columns, an integer constant: the task's own number (its reference's constant, its naive kernel's loop)
// @skeleton slot PH [expr]: the padding rows above the input, an integer constant (0 for none): output row oy starts at input row oy * SH - PH; the task's own number (its reference's constant, its naive kernel's loop)
// @skeleton slot PW [expr]: the padding columns left of the input, an integer constant (0 for none): output column ox starts at input column ox * SW - PW; the task's own number (its reference's constant, its naive kernel's loop)
// @skeleton slot DH [expr]: the dilation, input rows from one tap to the next, an integer constant (1 for none): the task's own number (its reference's constant, its naive kernel's loop)
// @skeleton slot DW [expr]: the dilation, input columns from one tap to the next, an integer constant (1 for none): the task's own number (its reference's constant, its naive kernel's loop)
// @skeleton slot IDENTITY [expr]: the float an accumulator starts from, also the value of every tap in the padding, so ACCUMULATE must leave the accumulator unchanged with it, e.g. `-INFINITY` (max), `0.f` (sum, average, convolution)
// @skeleton slot ACCUMULATE [body]: `float accumulate(PARAMS, float acc, float v, int c, int ky, int kx)`: every parameter of the task is in scope; return acc with tap (ky, kx) of value v folded in (c is the channel), e.g. `return fmaxf(acc, v);` (max), `return acc + v;` (sum, average), `return acc + w[c * 9 + ky * 3 + kx] * v;` (convolution, 3x3)
// @skeleton slot FINALIZE [body]: `float finalize(PARAMS, float acc, int count, int c)`: return the output from its window's accumulator; count is the number of taps inside the input (padding left out), c the channel; e.g. `return acc;` (max, convolution), `return acc / count;` (average, avgpool)
// @kagent entry: kagent_window2d
// @kagent grid: ceil_div({{BATCH}} * {{CHANNELS}} * ceil_div({{HO}}, OUT_H) * ceil_div({{WO}}, OUT_W), BLOCK) if STAGE == 0 else {{BATCH}} * {{CHANNELS}} * ceil_div({{HO}}, (BLOCK // 32) * OUT_H) * ceil_div({{WO}}, 32 * OUT_W) if STAGE == 1 else ceil_div({{BATCH}} * {{CHANNELS}} * ceil_div({{HO}}, OUT_H) * ceil_div({{WO}}, 32 * OUT_W), BLOCK // 32)
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 128 512
// @kagent knob OUT_W [compute]: 4 2 1
// @kagent knob OUT_H [compute]: 1 2
// @kagent knob VEC [memory]: 4 1
// @kagent knob STAGE [memory]: 0 1 2
//
// Skeleton `window2d` (kernel_agent/skeletons/window2d.cu). Three ways to feed the windows:
//
// STAGE=0 (the default; also STAGE=1 or 2 when its staged rows would exceed 48 KiB): registers and
// the cache, the structure of the hand-written tasks/level1/maxpool2d/tiled.cu. Thread t of the
// grid owns a patch of OUT_H x OUT_W adjacent outputs, patches numbered with the column fastest
// (then the row, then the plane n * C + c), so a warp covers 32 neighbouring patches of a row.
// The patch at (oy0, ox0) reads input rows oy0 * SH - PH + r, r < (OUT_H - 1) * SH + (KH - 1) * DH + 1,
// and of each the SPAN = (OUT_W - 1) * SW + (KW - 1) * DW + 1 contiguous columns from
// c0 = ox0 * SW - PW: each input row is loaded once a thread, into registers, then folded into
// every output of the patch whose window holds it. With VEC=4 and OUT_W * SW % 4 == 0, c0 is
// -PW modulo 4 in every thread, so the row is read as the float4s from a0 = c0 - LEAD
// (LEAD = -PW mod 4, a multiple of 4) on: with W % 4 == 0 and an aligned input each float4 lies
// wholly inside the plane or wholly outside it (then it holds IDENTITY), so a warp issues the
// same float4 loads in every lane, predicated, with no divergent edge path; otherwise the
// columns are read one by one (coalesced: neighbouring lanes read neighbouring patches). Rows
// outside the plane are skipped: a padding tap is IDENTITY and leaves the accumulator as it is.
// Stores are float4 (OUT_W % 4 == 0) or float2 streaming stores where the patch is whole and
// aligned, scalar otherwise. Every index into the register arrays is a compile-time constant.
//
// STAGE=1: a block of BLOCK threads owns a tile of (BLOCK / 32) * OUT_H output rows by
// 32 * OUT_W output columns of one plane (blocks ordered with the tile column fastest, then the
// tile row, then the plane, so neighbouring blocks share their halo rows in L2). Thread (tx, ty)
// (tx = lane) computes outputs (ty * OUT_H + i, tx + 32 * j): stores are coalesced rows of 32,
// and vertically adjacent outputs of a thread share rows. The tile's input rectangle is staged in
// shared memory: rows iy0 .. iy0 + IN_ROWS - 1 (iy0 = oy0 * SH - PH) and columns from a0, the
// first window's first column ix0 = ox0 * SW - PW rounded down to a multiple of 4, so that with
// W % 4 == 0 and an aligned input every float4 lies wholly inside the plane or wholly outside it
// (VEC=4; otherwise coalesced scalar loads). Positions outside the plane hold IDENTITY, which is
// how padding is handled: the fold has no bounds checks. A warp reads a shared row with a stride
// of SW words (conflict free for odd strides, two-way for 2). A tile whose input exceeds 48 KiB
// (large strides or windows) is staged in chunks of rows of about 24 KiB, the accumulators
// carried in registers from chunk to chunk. Staging pays for small overlapping windows read
// many times; for large or non-overlapping windows (every input read once) it only adds a
// shared-memory round trip and barriers, and STAGE=0 or STAGE=2 is the better choice.
//
// STAGE=2: a warp owns OUT_H output rows by 32 * OUT_W output columns of one plane (warps ordered
// with the column segment fastest, then the rows, then the plane); lane tx computes outputs
// (i, tx + 32 * j). The warp reads each input row its outputs need once, as a whole contiguous
// segment: neighbouring lanes load neighbouring float4s (VEC=4: from a0, the first column rounded
// down to a multiple of 4; VEC=1 or an unaligned input: neighbouring floats), every sector used by
// the instruction that loads it, into the warp's own shared row, then each lane folds its windows
// from it (stride SW words). Only __syncwarp orders the row's writes and reads, no block barrier.
// This suits large windows that do not overlap (every input read once, a thread-per-patch read
// would leave most of each sector to the cache): a coalesced stream with the fold order of the
// other paths (row by row, tap by tap).

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
#ifndef STAGE
#define STAGE 0
#endif

static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(OUT_W >= 1 && OUT_H >= 1, "OUT_W and OUT_H must be at least 1");
static_assert(VEC == 1 || VEC == 4, "VEC must be 1 or 4");
static_assert(STAGE == 0 || STAGE == 1 || STAGE == 2, "STAGE must be 0, 1 or 2");

constexpr int kg_kh = {{KH}}, kg_kw = {{KW}}, kg_sh = {{SH}}, kg_sw = {{SW}};
constexpr int kg_ph = {{PH}}, kg_pw = {{PW}}, kg_dh = {{DH}}, kg_dw = {{DW}};
static_assert(kg_kh >= 1 && kg_kw >= 1 && kg_sh >= 1 && kg_sw >= 1 && kg_dh >= 1 && kg_dw >= 1 &&
              kg_ph >= 0 && kg_pw >= 0, "window sizes, strides and dilations are at least 1, paddings at least 0");

constexpr int kg_tile_oh = (BLOCK / 32) * OUT_H;                                // output rows of a tile
constexpr int kg_tile_ow = 32 * OUT_W;                                          // output columns of a tile
constexpr int kg_in_rows = (kg_tile_oh - 1) * kg_sh + (kg_kh - 1) * kg_dh + 1;  // input rows it reads
constexpr int kg_in_cols = (kg_tile_ow - 1) * kg_sw + (kg_kw - 1) * kg_dw + 1;  // input columns it reads
constexpr int kg_pitch = (kg_in_cols + 3 + 3) / 4 * 4;  // a shared row: 3 columns of alignment slack, whole float4s
constexpr int kg_vecs = kg_pitch / 4;
constexpr bool kg_staged = STAGE == 1 && kg_pitch <= 12288;  // else (STAGE=0, or a row over 48 KiB) registers
constexpr bool kg_rowwise = STAGE == 2 && (BLOCK / 32) * kg_pitch <= 12288;  // a shared row a warp: its columns are a tile's
constexpr int kg_chunk = !kg_staged ? 1                                                   // no staging
                         : kg_in_rows * kg_pitch <= 12288 ? kg_in_rows                    // the tile fits in 48 KiB
                         : (6144 / kg_pitch >= 1 ? 6144 / kg_pitch : 1);                  // else ~24 KiB of rows
constexpr int kg_slots = VEC == 4 ? kg_chunk * kg_vecs : kg_chunk * kg_pitch;  // loads of a full chunk
// STAGE=0: a patch's input rows and columns, in registers.
constexpr int kg_span_rows = (OUT_H - 1) * kg_sh + (kg_kh - 1) * kg_dh + 1;  // input rows a patch reads
constexpr int kg_span = (OUT_W - 1) * kg_sw + (kg_kw - 1) * kg_dw + 1;       // input columns of each
constexpr bool kg_vec_ok = VEC == 4 && (OUT_W * kg_sw) % 4 == 0;             // c0 == -PW (mod 4) in every thread
constexpr int kg_lead = kg_vec_ok ? (4 - kg_pw % 4) % 4 : 0;                  // a0 = c0 - kg_lead, a multiple of 4
constexpr int kg_nq = (kg_lead + kg_span + 3) / 4;                            // float4s of a row
constexpr int kg_nv = kg_vec_ok ? 4 * kg_nq : kg_span;                        // registers of a row
// Occupancy: a small patch of small float4 rows fits in 40 registers, so ask for 75% (1536 threads an
// SM), as the hand-written maxpool2d/tiled.cu gets on its own; a larger one is left to the compiler
// (capping an 11-wide window's 4 outputs at 64 registers spills).
constexpr int kg_min_blocks = !kg_staged && kg_vec_ok && kg_nv <= 16 && OUT_H * OUT_W <= 8 && 1536 / BLOCK >= 1 ? 1536 / BLOCK : 1;

__device__ __forceinline__ float kagent_accumulate({{params}}, float acc, float v, int c, int ky, int kx) {
    {{ACCUMULATE}}
}

__device__ __forceinline__ float kagent_finalize({{params}}, float acc, int count, int c) {
    {{FINALIZE}}
}

// How many of output o's TAPS taps (input positions o * STRIDE - PAD + k * DIL) lie in [0, n): a window's rows
// or columns inside the input (padding taps are left out of an average's count).
template <int TAPS, int STRIDE, int PAD, int DIL>
__device__ __forceinline__ int kagent_taps_inside(int kg_o, int kg_n) {
    int kg_count = 0;
#pragma unroll
    for (int kg_k = 0; kg_k < TAPS; ++kg_k) {
        const int kg_x = kg_o * STRIDE - PAD + kg_k * DIL;
        kg_count += kg_x >= 0 && kg_x < kg_n;
    }
    return kg_count;
}

// The shared-memory paths' stores: output (oy + i, ox + 32 * j) from acc[i][j], where it exists; a warp
// stores rows of 32 neighbouring outputs.
__device__ __forceinline__ void kagent_store_lanes({{params}}, const float (&kg_acc)[OUT_H][OUT_W], long long kg_plane,
                                                   int kg_c, int kg_oy_first, int kg_ox_lane) {
    const int kg_h = {{H}}, kg_w = {{W}}, kg_ho = {{HO}}, kg_wo = {{WO}};
#pragma unroll
    for (int kg_i = 0; kg_i < OUT_H; ++kg_i) {
        const int kg_oy = kg_oy_first + kg_i;
        if (kg_oy >= kg_ho) break;
        const int kg_ny = kagent_taps_inside<kg_kh, kg_sh, kg_ph, kg_dh>(kg_oy, kg_h);
        float* kg_out = {{OUT}} + (kg_plane * kg_ho + kg_oy) * kg_wo;
#pragma unroll
        for (int kg_j = 0; kg_j < OUT_W; ++kg_j) {
            const int kg_ox = kg_ox_lane + 32 * kg_j;
            if (kg_ox < kg_wo) {
                const int kg_count = kg_ny * kagent_taps_inside<kg_kw, kg_sw, kg_pw, kg_dw>(kg_ox, kg_w);
                __stcs(kg_out + kg_ox, kagent_finalize({{args}}, kg_acc[kg_i][kg_j], kg_count, kg_c));
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, kg_min_blocks) kagent_window2d({{params}}) {
    const int kg_h = {{H}}, kg_w = {{W}}, kg_ho = {{HO}}, kg_wo = {{WO}};

    if constexpr (kg_rowwise) {
        // A shared row a warp (STAGE=2): warp w owns the outputs (oy0 + i, ox0 + tx + 32 * j).
        __shared__ __align__(16) float kg_rows[kg_rowwise ? (BLOCK / 32) * kg_pitch : 4];
        const int kg_segs = (kg_wo + kg_tile_ow - 1) / kg_tile_ow, kg_gh = (kg_ho + OUT_H - 1) / OUT_H;
        const long long kg_warp = ((long long)blockIdx.x * BLOCK + threadIdx.x) >> 5;
        if (kg_warp >= (long long)({{BATCH}}) * ({{CHANNELS}}) * kg_gh * kg_segs) return;   // the whole warp
        const int kg_seg = (int)(kg_warp % kg_segs);
        const long long kg_t = kg_warp / kg_segs;
        const int kg_oy0 = (int)(kg_t % kg_gh) * OUT_H;
        const long long kg_plane = kg_t / kg_gh;   // n * C + c
        const int kg_c = (int)(kg_plane % ({{CHANNELS}}));
        const int kg_tx = threadIdx.x & 31;
        const int kg_ox0 = kg_seg * kg_tile_ow;
        const int kg_iy0 = kg_oy0 * kg_sh - kg_ph;   // input row of the first tap
        const int kg_ix0 = kg_ox0 * kg_sw - kg_pw;   // input column of the first tap
        const int kg_a0 = kg_ix0 & ~3;               // input column of shared column 0 (a multiple of 4)
        const int kg_off = kg_ix0 - kg_a0;           // 0..3
        const float* __restrict__ kg_in = {{IN}} + kg_plane * kg_h * kg_w;
        float* kg_row = kg_rows + (threadIdx.x >> 5) * kg_pitch;
        const bool kg_vec = VEC == 4 && (kg_w & 3) == 0 && ((unsigned long long)({{IN}}) & 15) == 0;

        float kg_acc[OUT_H][OUT_W];
#pragma unroll
        for (int kg_i = 0; kg_i < OUT_H; ++kg_i)
#pragma unroll
            for (int kg_j = 0; kg_j < OUT_W; ++kg_j) kg_acc[kg_i][kg_j] = {{IDENTITY}};

#pragma unroll
        for (int kg_r = 0; kg_r < kg_span_rows; ++kg_r) {
            const int kg_iy = kg_iy0 + kg_r;
            if (kg_iy < 0 || kg_iy >= kg_h) continue;   // a padding row (the same in every lane)
            const float* __restrict__ kg_src = kg_in + (long long)kg_iy * kg_w;
            __syncwarp();   // every lane has folded the previous row
            if (kg_vec) {   // W % 4 == 0: each float4 from a0 lies wholly inside the row or wholly outside
#pragma unroll
                for (int kg_k = 0; kg_k < (kg_vecs + 31) / 32; ++kg_k) {
                    const int kg_q = kg_tx + 32 * kg_k, kg_ix = kg_a0 + 4 * kg_q;
                    if (kg_q < kg_vecs) {
                        float4 kg_v = make_float4({{IDENTITY}}, {{IDENTITY}}, {{IDENTITY}}, {{IDENTITY}});
                        if (kg_ix >= 0 && kg_ix < kg_w) kg_v = __ldg(reinterpret_cast<const float4*>(kg_src + kg_ix));
                        *reinterpret_cast<float4*>(kg_row + 4 * kg_q) = kg_v;
                    }
                }
            } else {
#pragma unroll 4
                for (int kg_k = 0; kg_k < (kg_pitch + 31) / 32; ++kg_k) {
                    const int kg_col = kg_tx + 32 * kg_k, kg_ix = kg_a0 + kg_col;
                    if (kg_col < kg_pitch) kg_row[kg_col] = kg_ix >= 0 && kg_ix < kg_w ? __ldg(kg_src + kg_ix) : {{IDENTITY}};
                }
            }
            __syncwarp();   // the row is in shared memory
            // Fold row r into output row i where r = i * SH + ky * DH (decided at compile time).
#pragma unroll
            for (int kg_i = 0; kg_i < OUT_H; ++kg_i) {
                const int kg_d = kg_r - kg_i * kg_sh;
                if (kg_d < 0 || kg_d % kg_dh != 0 || kg_d / kg_dh >= kg_kh) continue;
                const int kg_ky = kg_d / kg_dh;
#pragma unroll
                for (int kg_j = 0; kg_j < OUT_W; ++kg_j) {
                    const float* kg_win = kg_row + kg_off + (kg_tx + 32 * kg_j) * kg_sw;
#pragma unroll
                    for (int kg_kx = 0; kg_kx < kg_kw; ++kg_kx)
                        kg_acc[kg_i][kg_j] = kagent_accumulate({{args}}, kg_acc[kg_i][kg_j], kg_win[kg_kx * kg_dw], kg_c, kg_ky, kg_kx);
                }
            }
        }

        kagent_store_lanes({{args}}, kg_acc, kg_plane, kg_c, kg_oy0, kg_ox0 + kg_tx);
    } else if constexpr (!kg_staged) {
        // Registers and the cache (STAGE=0): thread t owns the patch of outputs (oy0 + i, ox0 + j),
        // i < OUT_H, j < OUT_W; the grid holds at least one thread a patch (either grid expression).
        const int kg_gw = (kg_wo + OUT_W - 1) / OUT_W, kg_gh = (kg_ho + OUT_H - 1) / OUT_H;
        const long long kg_idx = (long long)blockIdx.x * BLOCK + threadIdx.x;
        if (kg_idx >= (long long)({{BATCH}}) * ({{CHANNELS}}) * kg_gh * kg_gw) return;   // no barrier follows
        const int kg_px = (int)(kg_idx % kg_gw);
        const long long kg_t = kg_idx / kg_gw;
        const int kg_py = (int)(kg_t % kg_gh);
        const long long kg_plane = kg_t / kg_gh;   // n * C + c
        const int kg_c = (int)(kg_plane % ({{CHANNELS}}));
        const int kg_oy0 = kg_py * OUT_H, kg_ox0 = kg_px * OUT_W;
        const int kg_iy0 = kg_oy0 * kg_sh - kg_ph;              // input row of the patch's first tap
        const int kg_a0 = kg_ox0 * kg_sw - kg_pw - kg_lead;     // register column s holds input column a0 + s
        const float* __restrict__ kg_in = {{IN}} + kg_plane * kg_h * kg_w;

        float kg_acc[OUT_H][OUT_W];
#pragma unroll
        for (int kg_i = 0; kg_i < OUT_H; ++kg_i)
#pragma unroll
            for (int kg_j = 0; kg_j < OUT_W; ++kg_j) kg_acc[kg_i][kg_j] = {{IDENTITY}};

        // VEC=4: a0 is a multiple of 4 (OUT_W * SW % 4 == 0), so with W % 4 == 0 (rows, planes and
        // a0 aligned) each float4 a0 + 4q .. a0 + 4q + 3 is wholly inside the row or wholly outside.
        bool kg_vec = false;
        if constexpr (kg_vec_ok) kg_vec = (kg_w & 3) == 0 && ((unsigned long long)({{IN}}) & 15) == 0;

#pragma unroll
        for (int kg_r = 0; kg_r < kg_span_rows; ++kg_r) {
            const int kg_iy = kg_iy0 + kg_r;
            if (kg_iy < 0 || kg_iy >= kg_h) continue;   // a padding row: IDENTITY taps change nothing
            const float* __restrict__ kg_row = kg_in + (long long)kg_iy * kg_w;
            float kg_v[kg_nv];
            if (kg_vec) {
#pragma unroll
                for (int kg_q = 0; kg_q < kg_nv / 4; ++kg_q) {
                    // Registers lo .. hi - 1 of this float4 are used: a lone one (the first float4 with
                    // LEAD = 3, the last with one column left) is a scalar load, an aligned pair a float2.
                    const int kg_lo = 4 * kg_q > kg_lead ? 4 * kg_q : kg_lead;
                    const int kg_hi = 4 * kg_q + 4 < kg_lead + kg_span ? 4 * kg_q + 4 : kg_lead + kg_span;
                    const float* __restrict__ kg_p = kg_row + kg_a0 + 4 * kg_q;
                    const bool kg_in_row = (unsigned)(kg_a0 + 4 * kg_q) < (unsigned)kg_w;   // all 4 inside, or none
                    if (kg_hi - kg_lo == 1) {
                        kg_v[kg_lo] = kg_in_row ? __ldg(kg_row + kg_a0 + kg_lo) : {{IDENTITY}};
                    } else if (kg_hi - kg_lo == 2 && kg_lo % 2 == 0) {
                        float2 kg_f = make_float2({{IDENTITY}}, {{IDENTITY}});
                        if (kg_in_row) kg_f = __ldg(reinterpret_cast<const float2*>(kg_row + kg_a0 + kg_lo));
                        kg_v[kg_lo] = kg_f.x; kg_v[kg_lo + 1] = kg_f.y;
                    } else {
                        float4 kg_f = make_float4({{IDENTITY}}, {{IDENTITY}}, {{IDENTITY}}, {{IDENTITY}});
                        if (kg_in_row) kg_f = __ldg(reinterpret_cast<const float4*>(kg_p));
                        kg_v[4 * kg_q] = kg_f.x; kg_v[4 * kg_q + 1] = kg_f.y;
                        kg_v[4 * kg_q + 2] = kg_f.z; kg_v[4 * kg_q + 3] = kg_f.w;
                    }
                }
            } else {
#pragma unroll
                for (int kg_s = kg_lead; kg_s < kg_lead + kg_span; ++kg_s) {
                    const int kg_x = kg_a0 + kg_s;
                    kg_v[kg_s] = kg_x >= 0 && kg_x < kg_w ? __ldg(kg_row + kg_x) : {{IDENTITY}};
                }
            }
            // Fold row r into output row i of the patch where r = i * SH + ky * DH for a tap row ky
            // (decided at compile time once the loops are unrolled).
#pragma unroll
            for (int kg_i = 0; kg_i < OUT_H; ++kg_i) {
                const int kg_d = kg_r - kg_i * kg_sh;
                if (kg_d < 0 || kg_d % kg_dh != 0 || kg_d / kg_dh >= kg_kh) continue;
                const int kg_ky = kg_d / kg_dh;
#pragma unroll
                for (int kg_j = 0; kg_j < OUT_W; ++kg_j)
#pragma unroll
                    for (int kg_kx = 0; kg_kx < kg_kw; ++kg_kx)
                        kg_acc[kg_i][kg_j] = kagent_accumulate({{args}}, kg_acc[kg_i][kg_j],
                                                               kg_v[kg_lead + kg_j * kg_sw + kg_kx * kg_dw], kg_c, kg_ky, kg_kx);
            }
        }

        const bool kg_whole = kg_ox0 + OUT_W <= kg_wo;   // every output column of the patch exists
        bool kg_vout = false;
        if constexpr (OUT_W % 4 == 0) kg_vout = kg_whole && (kg_wo & 3) == 0 && ((unsigned long long)({{OUT}}) & 15) == 0;
        else if constexpr (OUT_W % 2 == 0) kg_vout = kg_whole && (kg_wo & 1) == 0 && ((unsigned long long)({{OUT}}) & 7) == 0;
        int kg_nx[OUT_W];   // window columns inside the input, output column j
#pragma unroll
        for (int kg_j = 0; kg_j < OUT_W; ++kg_j)
            kg_nx[kg_j] = kagent_taps_inside<kg_kw, kg_sw, kg_pw, kg_dw>(kg_ox0 + kg_j, kg_w);
#pragma unroll
        for (int kg_i = 0; kg_i < OUT_H; ++kg_i) {
            const int kg_oy = kg_oy0 + kg_i;
            if (kg_oy >= kg_ho) break;
            const int kg_ny = kagent_taps_inside<kg_kh, kg_sh, kg_ph, kg_dh>(kg_oy, kg_h);
            float* __restrict__ kg_out = {{OUT}} + (kg_plane * kg_ho + kg_oy) * kg_wo + kg_ox0;
            if (kg_vout) {   // OUT_W is even; the row start and ox0 are multiples of 4 (or 2)
#pragma unroll
                for (int kg_j = 0; kg_j < OUT_W; kg_j += (OUT_W % 4 == 0 ? 4 : 2)) {
                    const float kg_y0 = kagent_finalize({{args}}, kg_acc[kg_i][kg_j], kg_ny * kg_nx[kg_j], kg_c);
                    const float kg_y1 = kagent_finalize({{args}}, kg_acc[kg_i][kg_j + 1], kg_ny * kg_nx[kg_j + 1], kg_c);
                    if constexpr (OUT_W % 4 == 0) {
                        const float kg_y2 = kagent_finalize({{args}}, kg_acc[kg_i][kg_j + 2], kg_ny * kg_nx[kg_j + 2], kg_c);
                        const float kg_y3 = kagent_finalize({{args}}, kg_acc[kg_i][kg_j + 3], kg_ny * kg_nx[kg_j + 3], kg_c);
                        __stcs(reinterpret_cast<float4*>(kg_out + kg_j), make_float4(kg_y0, kg_y1, kg_y2, kg_y3));
                    } else {
                        __stcs(reinterpret_cast<float2*>(kg_out + kg_j), make_float2(kg_y0, kg_y1));
                    }
                }
            } else {
#pragma unroll
                for (int kg_j = 0; kg_j < OUT_W; ++kg_j)
                    if (kg_ox0 + kg_j < kg_wo)
                        __stcs(kg_out + kg_j, kagent_finalize({{args}}, kg_acc[kg_i][kg_j], kg_ny * kg_nx[kg_j], kg_c));
            }
        }
    } else {
        // Staged in shared memory (STAGE=1): a block a tile of (BLOCK / 32) * OUT_H x 32 * OUT_W outputs.
        const int kg_tiles_x = (kg_wo + kg_tile_ow - 1) / kg_tile_ow;
        const int kg_tiles_y = (kg_ho + kg_tile_oh - 1) / kg_tile_oh;
        const int kg_bx = (int)(blockIdx.x % (unsigned)kg_tiles_x);
        const long long kg_rest = blockIdx.x / (unsigned)kg_tiles_x;
        const int kg_by = (int)(kg_rest % kg_tiles_y);
        const long long kg_plane = kg_rest / kg_tiles_y;
        const int kg_c = (int)(kg_plane % ({{CHANNELS}}));
        const int kg_oy0 = kg_by * kg_tile_oh, kg_ox0 = kg_bx * kg_tile_ow;
        const int kg_iy0 = kg_oy0 * kg_sh - kg_ph;   // input row of the tile's first tap
        const int kg_ix0 = kg_ox0 * kg_sw - kg_pw;   // input column of the tile's first tap
        const float* __restrict__ kg_in = {{IN}} + kg_plane * kg_h * kg_w;
        const int kg_tx = threadIdx.x & 31, kg_ty = threadIdx.x >> 5;

        float kg_acc[OUT_H][OUT_W];
#pragma unroll
        for (int kg_i = 0; kg_i < OUT_H; ++kg_i)
#pragma unroll
            for (int kg_j = 0; kg_j < OUT_W; ++kg_j) kg_acc[kg_i][kg_j] = {{IDENTITY}};

        __shared__ __align__(16) float kg_tile[kg_staged ? kg_chunk * kg_pitch : 4];
        const int kg_a0 = kg_ix0 & ~3;               // input column of shared column 0 (a multiple of 4)
        const int kg_off = kg_ix0 - kg_a0;           // 0..3
        const bool kg_vec = VEC == 4 && (kg_w & 3) == 0 && ((unsigned long long)({{IN}}) & 15) == 0;
        for (int kg_r0 = 0; kg_r0 < kg_in_rows; kg_r0 += kg_chunk) {
            const int kg_rows = kg_in_rows - kg_r0 < kg_chunk ? kg_in_rows - kg_r0 : kg_chunk;
            // Stage shared rows 0 .. kg_rows - 1 = input rows kg_iy0 + kg_r0 + r, columns kg_a0 + col.
            if (kg_vec) {
#pragma unroll
                for (int kg_k = 0; kg_k < (kg_slots + BLOCK - 1) / BLOCK; ++kg_k) {
                    const int kg_e = (int)threadIdx.x + kg_k * BLOCK;
                    if (kg_e < kg_rows * kg_vecs) {
                        const int kg_r = kg_e / kg_vecs, kg_q = kg_e - kg_r * kg_vecs;
                        const int kg_iy = kg_iy0 + kg_r0 + kg_r, kg_ix = kg_a0 + 4 * kg_q;
                        float4 kg_v = make_float4({{IDENTITY}}, {{IDENTITY}}, {{IDENTITY}}, {{IDENTITY}});
                        if (kg_iy >= 0 && kg_iy < kg_h && kg_ix >= 0 && kg_ix < kg_w)   // W % 4 == 0: all 4 inside
                            kg_v = __ldg(reinterpret_cast<const float4*>(kg_in + (long long)kg_iy * kg_w + kg_ix));
                        *reinterpret_cast<float4*>(kg_tile + kg_r * kg_pitch + 4 * kg_q) = kg_v;
                    }
                }
            } else {
#pragma unroll 4
                for (int kg_k = 0; kg_k < (kg_chunk * kg_pitch + BLOCK - 1) / BLOCK; ++kg_k) {
                    const int kg_e = (int)threadIdx.x + kg_k * BLOCK;
                    if (kg_e < kg_rows * kg_pitch) {
                        const int kg_r = kg_e / kg_pitch, kg_col = kg_e - kg_r * kg_pitch;
                        const int kg_iy = kg_iy0 + kg_r0 + kg_r, kg_ix = kg_a0 + kg_col;
                        kg_tile[kg_e] = kg_iy >= 0 && kg_iy < kg_h && kg_ix >= 0 && kg_ix < kg_w
                                            ? __ldg(kg_in + (long long)kg_iy * kg_w + kg_ix) : {{IDENTITY}};
                    }
                }
            }
            __syncthreads();
            // Fold the taps in these rows: output (ly, lx) of the tile reads shared row
            // ly * SH + ky * DH - kg_r0 and column lx * SW + kx * DW + kg_off.
#pragma unroll
            for (int kg_i = 0; kg_i < OUT_H; ++kg_i) {
                const int kg_ly = kg_ty * OUT_H + kg_i;
#pragma unroll
                for (int kg_ky = 0; kg_ky < kg_kh; ++kg_ky) {
                    const int kg_r = kg_ly * kg_sh + kg_ky * kg_dh - kg_r0;
                    if (kg_chunk < kg_in_rows && (kg_r < 0 || kg_r >= kg_rows)) continue;  // chunked: another chunk's row
                    const float* kg_row = kg_tile + kg_r * kg_pitch + kg_off;
#pragma unroll
                    for (int kg_j = 0; kg_j < OUT_W; ++kg_j) {
                        const int kg_col = (kg_tx + 32 * kg_j) * kg_sw;
#pragma unroll
                        for (int kg_kx = 0; kg_kx < kg_kw; ++kg_kx)
                            kg_acc[kg_i][kg_j] = kagent_accumulate({{args}}, kg_acc[kg_i][kg_j],
                                                                   kg_row[kg_col + kg_kx * kg_dw], kg_c, kg_ky, kg_kx);
                    }
                }
            }
            if (kg_r0 + kg_chunk < kg_in_rows) __syncthreads();   // the next chunk overwrites the tile
        }

        kagent_store_lanes({{args}}, kg_acc, kg_plane, kg_c, kg_oy0 + kg_ty * OUT_H, kg_ox0 + kg_tx);
    }
}
