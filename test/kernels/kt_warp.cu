/*
 * kt_warp.cu - warp operations for test/test_kernel.c, built at GP_WARP_SIZE (32 on
 * the CPU and CUDA, 64 on HIP) and, built again with the Makefile's W64_FLAGS, at 64 on the CPU.
 *
 * kt_warp_ops: one thread per element, 1D blocks; thread g writes NI ints and NF floats
 * and two 64-bit masks (layout in test_kernel.c, which recomputes them on the host).
 */
#include <gpuport/kernel.h>

#define KT_NI 14
#define KT_NF 10

GP_KERNEL void kt_warp_ops(int *oi, float *of, double *od,
                                                       unsigned long long *om) {
  unsigned t = threadIdx.x;
  unsigned g = blockIdx.x * blockDim.x + t;
  int *pi = oi + (size_t)KT_NI * g;
  float *pf = of + (size_t)KT_NF * g;
  unsigned lane = gp_lane_id();
  int vi = (int)(g * 7u + 3u);
  float vf = (float)(g % 97u) * 0.25f + 1.0f;
  pi[0] = (int)lane;
  pi[1] = (int)gp_warp_id();
  pi[2] = gp_shfl(vi, (int)lane + 3);                     /* wraps modulo the width */
  pi[3] = gp_shfl_xor(vi, 5);
  pi[4] = gp_shfl_up(vi, 3u);
  pi[5] = gp_shfl_down(vi, 3u);
  pi[6] = (int)gp_shfl((unsigned)vi, 0);
  pi[7] = gp_any(lane == 7u);
  pi[8] = gp_all(lane < 100u);
  pi[9] = gp_all(lane != 1u);
  pi[10] = gp_warp_reduce_sum(vi);
  pi[11] = gp_warp_reduce_max(vi);
  pi[12] = gp_warp_reduce_min(vi);
  pi[13] = gp_any(0);
  pf[0] = gp_shfl(vf, GP_WARP_SIZE - 1);
  pf[1] = gp_shfl_xor(vf, GP_WARP_SIZE / 2);
  pf[2] = gp_shfl_up(vf, 1u);
  pf[3] = gp_shfl_down(vf, 1u);
  pf[4] = gp_warp_reduce_sum(vf);
  pf[5] = gp_warp_reduce_max(vf);
  pf[6] = gp_warp_reduce_min(vf);
  pf[7] = gp_shfl_down(vf, (unsigned)GP_WARP_SIZE);       /* delta >= width: own value */
  pf[8] = gp_shfl(vf, -1);                                /* -1 wraps to the last lane */
  gp_syncwarp();
  pf[9] = (float)GP_WARP_SIZE;
  od[g] = gp_shfl_xor((double)vi * 1.5, 1);
  om[2 * (size_t)g] = gp_ballot(lane % 3u == 0u);
  om[2 * (size_t)g + 1] = gp_ballot(lane >= 40u);
}
GP_KERNEL_EXPORT(kt_warp_ops)

/* A porting bug on purpose: the butterfly starts at offset 16 and the ballot is cut to
 * 32 bits, as code written for 32-lane warps does. Correct at width 32 only:
 * out[0] += the warp's sums of x (lane 0 adds), out[1] += popcount of the ballot. */
GP_KERNEL void kt_hardcoded32(const int *x, int *out) {
  int v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int o = 16; o > 0; o /= 2) v += gp_shfl_xor(v, o);
  unsigned m = (unsigned)gp_ballot(1);
  if (gp_lane_id() == 0) {
    atomicAdd(&out[0], v);
    atomicAdd(&out[1], __popc(m));
  }
}
GP_KERNEL_EXPORT(kt_hardcoded32)

/* A partial last warp (blockDim.x not a multiple of the width): reductions cover the
 * lanes that exist; reading a lane that does not exist gives poison (CPU; on GPUs it
 * is undefined). out[2t] = warp sum of 1, out[2t+1] = value of lane l+1. */
GP_KERNEL void kt_partial_warp(float *out) {
  unsigned t = threadIdx.x;
  out[2 * t] = gp_warp_reduce_sum(1.0f);
  out[2 * t + 1] = gp_shfl((float)t, (int)gp_lane_id() + 1);
}
GP_KERNEL_EXPORT(kt_partial_warp)
