// kagent prelude: prepended to every kernel before NVRTC compiles it.
// NVRTC has no C standard headers, so the constants kernels usually take from <math.h>, <float.h>
// and <limits.h> are defined here (constant expressions, usable in __device__ initialisers too).
// Kernels may still include <cuda_fp16.h>, <cuda_bf16.h> and <mma.h>: the sandbox passes their folder.
#ifndef INFINITY
#define INFINITY (1.0f / 0.0f)
#endif
#ifndef NAN
#define NAN (0.0f / 0.0f)
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define FLT_EPSILON 1.192092896e-07F
#define DBL_MAX 1.7976931348623158e+308
#define DBL_MIN 2.2250738585072014e-308
#endif
#ifndef INT_MAX
#define INT_MAX 2147483647
#define INT_MIN (-INT_MAX - 1)
#define UINT_MAX 4294967295U
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
