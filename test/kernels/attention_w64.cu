/* attention_w64.cu - the portable attention kernel (src/kernels/attention.cu) again at
 * warp width 64 on the CPU backend (descriptor gp__kernel_gp__attention_fwd_tiled_w64),
 * the width HIP runs it at. GPU builds compile it to nothing: nvcc warps have 32 lanes
 * and HIP's default build already has 64. */
#if defined(GP_BUILD_CPU)
#define GP_WARP_SIZE 64
#define GP_KERNEL_SUFFIX _w64
#include "kernels/attention.cu"
#else
typedef int attention_w64_empty_t;
#endif
