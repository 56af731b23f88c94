// @kagent entry: maxpool1d
// @kagent grid: ceil_div(batch_size * features * out_d2, 256)
// @kagent block: 256
// @kagent smem: 0
//
// KernelBench level1/41_Max_Pooling_1D.py: nn.MaxPool1d(kernel_size=8, stride=1,
// padding=4, dilation=3), so out_d2 = sequence_length + 2*4 - 3*(8-1) - 1 + 1
// = sequence_length - 13 (the task's derived dim). One thread per output: the 8 taps
// at o*1 - 4 + 3*j; taps in the padding are skipped (torch pads with -inf, so
// padding never wins). A NaN tap propagates, as in torch's max pooling.

#define KSIZE 8
#define STRIDE 1
#define PAD 4
#define DIL 3

extern "C" __global__ void maxpool1d(const float* x, float* out, int batch_size, int features,
                                     int sequence_length, int out_d2) {
    const long long total = (long long)batch_size * features * out_d2;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    const long long row = i / out_d2;  // b * features + f
    const int o = (int)(i - row * out_d2);
    const float* xr = x + row * sequence_length;
    float m = -INFINITY;
    for (int j = 0; j < KSIZE; ++j) {
        const int pos = o * STRIDE - PAD + j * DIL;
        if (pos >= 0 && pos < sequence_length) {
            const float v = xr[pos];
            if (v > m || isnan(v)) m = v;
        }
    }
    out[i] = m;
}
