// @repair task: tasks/level1/histogram.yaml
// @repair from: tasks/level1/histogram/naive.cu
// @repair expect: compile_error
// @repair bug: missing semicolon after const int v = x[i]
// @repair fix: const int v = x[i];
// @kagent entry: histogram
// @kagent grid: ceil_div(n, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per element, one global atomicAdd each. With
// only 256 distinct addresses, the atomics contend heavily in L2.

extern "C" __global__ void histogram(const int* x, int* hist, int n, int bins) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int v = x[i]
    if (v >= 0 && v < bins) atomicAdd(&hist[v], 1);
}
