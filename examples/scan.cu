/*
 * scan.cu - inclusive prefix sum (scan) of floats, for any warp width: block scans and
 * an offset pass that the host applies recursively to the block totals.
 *
 * Decomposition
 *   scan_blocks: block b scans elements b*blockDim.x .. + blockDim.x - 1 (one per
 *     thread; blockDim.x a multiple of GP_WARP_SIZE, at most GP_WARP_SIZE warps).
 *     Each warp scans its lanes with gp_shfl_up (offsets 1, 2, .. GP_WARP_SIZE/2); the
 *     last lane of each warp stores the warp's total in dynamic shared memory (one
 *     float per warp); the first warp scans those totals the same way; every thread
 *     adds the total of the warps before it. The block's last thread writes the
 *     block's total to sums[b].
 *   add_offsets: thread i of block b > 0 adds the scanned total of blocks 0 .. b-1.
 */
#include <gpuport/kernel.h>

GP_DEVICE float warp_inclusive_scan(float v) {
  const unsigned lane = gp_lane_id();
  for (unsigned offset = 1; offset < GP_WARP_SIZE; offset *= 2) {
    float up = gp_shfl_up(v, offset);
    if (lane >= offset) v += up;
  }
  return v;
}

GP_KERNEL void scan_blocks(int n, const float *in, float *out, float *sums) {
  GP_DYNAMIC_SHARED(float, warp_totals);
  const unsigned lane = gp_lane_id(), warp = gp_warp_id(), warps = blockDim.x / GP_WARP_SIZE;
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  float v = i < n ? in[i] : 0.0f;
  v = warp_inclusive_scan(v);
  if (lane == GP_WARP_SIZE - 1) warp_totals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float t = lane < warps ? warp_totals[lane] : 0.0f;
    t = warp_inclusive_scan(t);
    if (lane < warps) warp_totals[lane] = t;
  }
  __syncthreads();
  if (warp > 0) v += warp_totals[warp - 1];
  if (i < n) out[i] = v;
  if (threadIdx.x == blockDim.x - 1) sums[blockIdx.x] = v;
}
GP_KERNEL_EXPORT(scan_blocks)

GP_KERNEL void add_offsets(int n, float *out, const float *scanned_sums) {
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (blockIdx.x > 0 && i < n) out[i] += scanned_sums[blockIdx.x - 1];
}
GP_KERNEL_EXPORT(add_offsets)
