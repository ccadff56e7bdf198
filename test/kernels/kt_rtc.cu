/*
 * kt_rtc.cu - the kernel test/test_module.c compiles at run time from this file's text
 * (gp_program_compile with -DKT_SCALE=<v>); the test binaries also link it, built ahead
 * of time with the default KT_SCALE of 3, to compare the two builds.
 *
 * Decomposition: 1D grid of 1D blocks (any block size up to 1024). Thread i computes
 * y[i] = KT_SCALE * x[i]; each warp sums its values (gp_warp_reduce_sum), lane 0 stores
 * the warp's sum in GP_SHARED memory, and after the barrier thread 0 adds the warps' sums
 * into block_sum[blockIdx.x]. So a module built from it calls the executor (warp
 * exchange, shared-memory slots, barrier) of the library it is loaded into.
 */
#include <gpuport/kernel.h>

#ifndef KT_SCALE
#define KT_SCALE 3
#endif

GP_KERNEL void kt_rtc_scale(int n, const float *x, float *y, float *block_sum) {
  GP_SHARED(float, part, [1024 / GP_WARP_SIZE]);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = 0.0f;
  if (i < n) {
    v = (float)(KT_SCALE) * x[i];
    y[i] = v;
  }
  v = gp_warp_reduce_sum(v);
  if (gp_lane_id() == 0) part[gp_warp_id()] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (unsigned w = 0; w < (blockDim.x + GP_WARP_SIZE - 1) / GP_WARP_SIZE; w++) s += part[w];
    block_sum[blockIdx.x] = s;
  }
}
GP_KERNEL_EXPORT(kt_rtc_scale)
