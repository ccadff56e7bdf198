/* kt_warp_w64.cu - kt_warp.cu again at warp width 64 on the CPU backend (descriptors
 * get the suffix _w64). GPU builds compile it to nothing: nvcc warps have 32 lanes and
 * HIP's default build already has 64. */
#if defined(GP_BUILD_CPU)
#define GP_WARP_SIZE 64
#define GP_KERNEL_SUFFIX _w64
#include "kt_warp.cu"
#else
typedef int kt_warp_w64_empty_t;
#endif
