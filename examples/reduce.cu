/*
 * reduce.cu - the classic shuffle reduction, written once for any warp width: a sum of
 * n floats in two launches of one kernel (partial sums per block, then one block sums
 * the partials).
 *
 * Decomposition
 *   grid   any number of blocks; block b writes partial[b].
 *   block  up to 1024 threads, a multiple of GP_WARP_SIZE. Each thread sums a
 *          grid-stride slice of x; each warp folds its lanes with gp_shfl_down
 *          (offsets GP_WARP_SIZE/2 .. 1: 16 .. 1 on NVIDIA, 32 .. 1 on AMD); lane 0
 *          stores the warp's sum in shared memory; after the barrier the first warp
 *          folds the warp sums the same way and thread 0 stores the block's sum.
 */
#include <gpuport/kernel.h>

GP_DEVICE float warp_sum(float v) {
  for (int offset = GP_WARP_SIZE / 2; offset > 0; offset /= 2) v += gp_shfl_down(v, (unsigned)offset);
  return v; /* complete in lane 0 */
}

GP_KERNEL void reduce_sum(int n, const float *x, float *partial) {
  GP_SHARED(float, warp_sums, [1024 / 32]); /* one per warp, for the narrowest warps */
  const unsigned lane = gp_lane_id(), warp = gp_warp_id();
  const unsigned warps = (blockDim.x + GP_WARP_SIZE - 1) / GP_WARP_SIZE;
  float s = 0.0f;
  for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += (int)(gridDim.x * blockDim.x)) s += x[i];
  s = warp_sum(s);
  if (lane == 0) warp_sums[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < warps ? warp_sums[lane] : 0.0f;
    s = warp_sum(s);
    if (lane == 0) partial[blockIdx.x] = s;
  }
}
GP_KERNEL_EXPORT(reduce_sum)
