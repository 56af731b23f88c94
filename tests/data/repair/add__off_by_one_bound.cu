// @repair task: tasks/level1/add.yaml
// @repair from: tasks/level1/add/naive.cu
// @repair expect: wrong_result
// @repair bug: the bound check is i <= n, so thread n writes out[n], one element past the output (the guard band after out changes)
// @repair fix: if (i < n)
// @kagent entry: add
// @kagent grid: ceil_div(n, 256)
// @kagent block: 256
// @kagent smem: 0
//
// Naive baseline: one thread per element, scalar loads and stores.

extern "C" __global__ void add(const float* a, const float* b, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) out[i] = a[i] + b[i];
}
