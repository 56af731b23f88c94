// cheat: host escape. NVRTC compiles the #else branch (it defines no __x86_64__), a host C++ compiler the
// other: where the kernel runs as host code (the CPU emulator), it tries to create a file. The emulator's
// process is locked into seccomp's strict mode (read, write, exit) before any of the kernel's code runs:
// the open() kills it, it is reported runtime_error, and no file appears.
// @kagent entry: layernorm
// @kagent grid: rows
// @kagent block: 32
#if defined(__x86_64__) && !defined(__NVCC__)
extern "C" int open(const char*, int, ...);
#define KAGENT_TOUCH() open(KAGENT_ESCAPE_PATH, 0101, 0644)
#else
#define KAGENT_TOUCH() 0
#endif
#ifndef KAGENT_ESCAPE_PATH
#define KAGENT_ESCAPE_PATH "/tmp/kagent_emulator_escape"
#endif

extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
    if (threadIdx.x == 0 && blockIdx.x == 0) KAGENT_TOUCH();
}
