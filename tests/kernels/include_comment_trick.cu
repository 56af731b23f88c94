// cheat: hides the directive behind comments, which the preprocessor takes as whitespace: between the # and include (one comment spanning lines), and before a # on the line where a multi-line comment ends; the sandbox must refuse each.
// @kagent entry: layernorm
// @kagent grid: rows
// @kagent block: 256
# /* a comment */ include "/etc/hostname"
#/* a comment
*/include "/etc/hostname"
int hide; /* a comment that ends on the next line
*/ #include "/etc/hostname"
extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* y,
                                     int rows, int cols, float eps) {
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[(size_t)blockIdx.x * cols + c] = x[(size_t)blockIdx.x * cols + c];
}
