/*
 * kt_nv_wgmma.cu - what test/test_nv_wgmma.c needs beyond the lane probes of
 * kernels/sm90a/probe_sm90a.cu: a kernel bug the emulation must catch. HIP builds compile
 * it to nothing, and so would a width-64 build for the CPU (NVIDIA warps have 32 lanes).
 */
#if !defined(GP_BUILD_HIP) && !(defined(GP_WARP_SIZE) && GP_WARP_SIZE != 32)
#include <gpuport/kernel.h>
#include <gpuport/nv_wgmma.h>

/* The first 1024-aligned address of the shared window at or after p (swizzle atoms). */
GP_DEVICE unsigned char *kt_align1024(unsigned char *p) {
  return p + ((1024u - gp_nv_smem_addr(p) % 1024u) % 1024u);
}

/* A wgmma whose B stage is overwritten before wgmma.wait_group (a kernel bug): the
 * emulation must fail the launch (on a GPU the result is undefined, so the test skips). */
GP_KERNEL void kt_wgmma_hazard(float *out) {
  GP_DYNAMIC_SHARED(unsigned char, raw);
  unsigned char *s = kt_align1024(raw);
  const int t = (int)threadIdx.x;
  for (int i = t; i < 4096; i += 128) s[i] = (unsigned char)(i % 7 == 0 ? 0x3c : 0);
  __syncthreads();
  gp_nv_wgmma_state_t st;
  gp_nv_wgmma_init(&st);
  float d[4] = {0, 0, 0, 0};
  gp_nv_wgmma_fence(&st);
  gp_nv_wgmma(&st, d, 8, gp_nv_wgmma_desc(s, 128, 256, 0), gp_nv_wgmma_desc(s + 2048, 128, 256, 0), 0, 0, 0, 0);
  gp_nv_wgmma_commit(&st);
  __syncthreads();
  if (t == 0) s[2048] ^= 0x11; /* B changes while the wgmma may still read it */
  __syncthreads();
  gp_nv_wgmma_wait(&st, 0);
  out[t] = d[0];
}
GP_KERNEL_EXPORT(kt_wgmma_hazard)

#endif
