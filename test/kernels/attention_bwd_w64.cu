/* attention_bwd_w64.cu - the portable attention backward kernels
 * (src/kernels/attention_bwd.cu) again at warp width 64 on the CPU backend (descriptors
 * gp__kernel_gp__attention_bwd_*_w64), the width HIP runs them at. GPU builds compile it
 * to nothing: nvcc warps have 32 lanes and HIP's default build already has 64. */
#if defined(GP_BUILD_CPU)
#define GP_WARP_SIZE 64
#define GP_KERNEL_SUFFIX _w64
#include "kernels/attention_bwd.cu"
#else
typedef int attention_bwd_w64_empty_t;
#endif
