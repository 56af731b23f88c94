// @repair task: tasks/level1/cross_entropy.yaml
// @repair from: tasks/level1/cross_entropy/naive.cu
// @repair expect: wrong_result
// @repair bug: the mean divides by a constant BATCH 16384 (the timed size) instead of batch: wrong at every check size with a nonzero loss
// @repair fix: loss[0] = (float)(total / batch);
// @kagent entry: ce_rows
// @kagent grid: ceil_div(batch, 256)
// @kagent block: 256
// @kagent smem: 0
// @kagent params: logits, targets, row_loss, batch, classes
// @kagent entry: ce_mean
// @kagent grid: 1
// @kagent block: 1
// @kagent smem: 0
// @kagent params: row_loss, loss, batch
// @kagent scratch row_loss: batch float32
//
// Naive baseline: one thread per row computes the row's loss (a pass for the
// maximum, a pass for the sum of exponentials) into a scratch buffer; then a
// single thread averages the row losses. Neighbouring threads read addresses
// `classes` floats apart, so no load is coalesced.

#define BATCH 16384

extern "C" __global__ void ce_rows(const float* logits, const int* targets, float* row_loss, int batch, int classes) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= batch) return;
    const float* x = logits + (size_t)row * classes;
    float m = -INFINITY;
    for (int c = 0; c < classes; ++c) m = fmaxf(m, x[c]);
    float s = 0.f;
    for (int c = 0; c < classes; ++c) s += expf(x[c] - m);
    row_loss[row] = m + logf(s) - x[targets[row] % classes];
}

extern "C" __global__ void ce_mean(const float* row_loss, float* loss, int batch) {
    double total = 0.0;
    for (int r = 0; r < batch; ++r) total += row_loss[r];
    loss[0] = (float)(total / BATCH);
}
