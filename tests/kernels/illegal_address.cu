// cheat: stores through a wild pointer (address 0x10, never mapped); the sandbox must report CUDA_ERROR_ILLEGAL_ADDRESS (and survive it).
// @kagent entry: layernorm
// @kagent grid: rows
// @kagent block: 256

extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
    // volatile: the store must really be issued, not folded away as UB.
    volatile float* wild = reinterpret_cast<volatile float*>(0x10);
    if (threadIdx.x == 0) wild[blockIdx.x % 4] = (float)rows;
}
