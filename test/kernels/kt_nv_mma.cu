/*
 * kt_nv_mma.cu - what test/test_nv_mma.c needs beyond the lane probes of
 * kernels/sm80/probe_sm80.cu: the faults the emulation must report as a GPU does. HIP
 * builds compile it to nothing (the wrappers are NVIDIA-only), and so does the cpu
 * backend's width-64 build (the Makefile's W64_FLAGS): NVIDIA warps have 32 lanes, so
 * these kernels exist at width 32 only.
 */
#if !defined(GP_BUILD_HIP) && !(defined(GP_WARP_SIZE) && GP_WARP_SIZE != 32)
#include <gpuport/kernel.h>
#include <gpuport/nv_mma.h>

/* Faults the GPU also reports: an ldmatrix row address that is not 16-byte aligned
 * (what = 0), a cp.async source that is not (what = 1). */
GP_KERNEL void kt_nv_misaligned(int what, const unsigned char *src) {
  GP_SHARED(uint4, tile4, [16]);
  uint16_t(*tile)[8] = reinterpret_cast<uint16_t(*)[8]>(&tile4[0]);
  const unsigned l = threadIdx.x;
  for (int e = 0; e < 8; e++) tile[l % 16][e] = 0;
  __syncthreads();
  if (what == 0) {
    uint32_t v[1];
    gp_nv_ldmatrix_x1(v, (const unsigned char *)&tile[l % 8][0] + 2 * (l == 3));
    (void)v;
  } else {
    gp_nv_async_t as;
    gp_nv_async_init(&as);
    gp_nv_cp_async_16(&as, &tile[l % 16][0], src + 4, 16);
    gp_nv_cp_async_commit(&as);
    gp_nv_cp_async_wait(&as, 0);
  }
}
GP_KERNEL_EXPORT(kt_nv_misaligned)

#else
typedef int kt_nv_mma_empty_t;
#endif
