/* kernels_w64.cu - kernels.cu again at warp width 64 on the CPU backend (descriptors get
 * the suffix _w64), so the encoder runs with AMD's wavefront width on machines without
 * one. GPU builds compile it to nothing: nvcc warps have 32 lanes, and HIP's own build
 * of kernels.cu is already 64 wide. */
#if defined(GP_BUILD_CPU)
#define GP_WARP_SIZE 64
#define GP_KERNEL_SUFFIX _w64
#include "kernels.cu"
#else
typedef int minilm_kernels_w64_empty_t;
#endif
