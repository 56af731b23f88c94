// @repair task: tasks/level1/histogram.yaml
// @repair from: tasks/level1/histogram/shared.cu
// @repair expect: runtime_error
// @repair bug: the shared histogram holds NBINS ints, but it is indexed as NBINS * SUB (bin * SUB + copy): writes run 31 KiB past the array
// @repair fix: __shared__ int h[NBINS * SUB];
// @kagent entry: histogram
// @kagent grid: min(ceil_div(n, BLOCK * ITEMS_PER_THREAD * VEC), 132 * max(1, min(1024 // BLOCK, 232448 // (SUB_HISTOGRAMS * 1024 + 1024))))
// @kagent block: BLOCK
// @kagent smem: 0
// @kagent knob BLOCK [launch]: 256 512 1024
// @kagent knob ITEMS_PER_THREAD [compute]: 4 2
// @kagent knob VEC [memory]: 4 1
// @kagent knob SUB_HISTOGRAMS [reduction]: 32 8 1
//
// Expert histogram: per-block shared-memory histograms, merged into the
// output with one global atomicAdd per (block, non-empty bin).
//
// Each block keeps SUB_HISTOGRAMS copies of the 256 bins, interleaved so that
// bin b of copy c sits at b * SUB_HISTOGRAMS + c, and thread t uses copy
// t % SUB_HISTOGRAMS. With 32 copies every lane of a warp owns a copy in its
// own bank: no two lanes collide on an address or a bank, whatever the data.
// Fewer copies trade smem (and occupancy) for contention.
//
// The grid is sized to about 1024 resident threads per SM of an H200 (132 SMs),
// capped by the shared memory the copies take, and each block walks the input
// in a grid-stride loop: ITEMS_PER_THREAD loads (int4 when VEC = 4 and x is
// 16-byte aligned) are issued before their values are counted. The n % 4
// trailing elements of the vector path are counted by block 0.
//
// Only values in [0, min(bins, 256)) are counted; the task has bins = 256.

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS_PER_THREAD
#define ITEMS_PER_THREAD 4
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef SUB_HISTOGRAMS
#define SUB_HISTOGRAMS 32
#endif

#define NBINS 256   // shared-memory bins: the task's bins dim must not exceed this
#define SUB SUB_HISTOGRAMS

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(VEC == 1 || VEC == 4, "VEC must be 1 or 4");
static_assert(SUB >= 1 && SUB <= 32 && (32 % SUB) == 0, "SUB_HISTOGRAMS must divide 32");

__device__ __forceinline__ void count(int* h, int v, unsigned limit, int copy) {
    if ((unsigned)v < limit) atomicAdd(&h[v * SUB + copy], 1);   // negative v wraps to a huge unsigned
}

extern "C" __global__ void __launch_bounds__(BLOCK)
histogram(const int* __restrict__ x, int* __restrict__ hist, int n, int bins) {
    __shared__ int h[NBINS];
    const int tid = threadIdx.x;
    for (int i = tid; i < NBINS * SUB; i += BLOCK) h[i] = 0;
    __syncthreads();

    const unsigned limit = (unsigned)min(bins, NBINS);
    const int copy = tid % SUB;
    const long long step = (long long)gridDim.x * BLOCK * ITEMS_PER_THREAD;
    if (VEC == 4 && ((unsigned long long)x % 16) == 0) {
        const long long nv = n / 4;
        const int4* __restrict__ x4 = reinterpret_cast<const int4*>(x);
        for (long long base = (long long)blockIdx.x * BLOCK * ITEMS_PER_THREAD; base < nv; base += step) {
            int4 v[ITEMS_PER_THREAD];
#pragma unroll
            for (int it = 0; it < ITEMS_PER_THREAD; ++it) {
                const long long i = base + it * BLOCK + tid;
                if (i < nv) v[it] = __ldcs(x4 + i);   // read once: stream past L2
            }
#pragma unroll
            for (int it = 0; it < ITEMS_PER_THREAD; ++it) {
                if (base + it * BLOCK + tid < nv) {
                    count(h, v[it].x, limit, copy);
                    count(h, v[it].y, limit, copy);
                    count(h, v[it].z, limit, copy);
                    count(h, v[it].w, limit, copy);
                }
            }
        }
        const int tail = n - (int)(nv * 4);   // 0 .. 3
        if (blockIdx.x == 0 && tid < tail) count(h, x[nv * 4 + tid], limit, copy);
    } else {
        for (long long base = (long long)blockIdx.x * BLOCK * ITEMS_PER_THREAD; base < n; base += step) {
            int v[ITEMS_PER_THREAD];
#pragma unroll
            for (int it = 0; it < ITEMS_PER_THREAD; ++it) {
                const long long i = base + it * BLOCK + tid;
                if (i < n) v[it] = __ldcs(x + i);
            }
#pragma unroll
            for (int it = 0; it < ITEMS_PER_THREAD; ++it)
                if (base + it * BLOCK + tid < n) count(h, v[it], limit, copy);
        }
    }
    __syncthreads();

    // Merge: thread b adds up bin b over the copies, starting at copy b % SUB so that the
    // lanes of a warp read different banks, and adds the total to the output.
    for (int b = tid; b < (int)limit; b += BLOCK) {
        int total = 0;
#pragma unroll
        for (int c = 0; c < SUB; ++c) total += h[b * SUB + (c + b) % SUB];
        if (total) atomicAdd(&hist[b], total);
    }
}
