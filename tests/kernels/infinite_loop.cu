// cheat: never terminates (spins on y[0] waiting for a bit pattern nobody writes); the sandbox must time out and kill it.
// @kagent entry: layernorm
// @kagent grid: rows
// @kagent block: 256

extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
    // A volatile read is a side effect, so the compiler must keep the loop.
    // y is poisoned with NaN and no thread ever stores 0x12345678.
    volatile int* flag = reinterpret_cast<volatile int*>(y);
    while (flag[0] != 0x12345678) {
    }
}
