/*
 * selftest.cu - the dialect kernel `gpuport selftest` launches (cli/selftest_kernel.c),
 * built into the library for every backend so the installed tool can run it. Small,
 * but it passes through each part of the launch path: arguments of several sizes, a 2D
 * grid, global loads and stores, an atomic, a warp reduction, dynamic shared memory and
 * a barrier.
 *
 * Decomposition
 *   grid   any 2D grid; block b = blockIdx.x + gridDim.x * blockIdx.y covers elements
 *          b * blockDim.x .. + blockDim.x - 1 (1D blocks).
 *   block  thread i computes y[i] = alpha * x[i] + y[i] and counts itself in *count;
 *          each warp sums its new y values (gp_warp_reduce_sum), lane 0 stores the
 *          warp's sum in dynamic shared memory (one float per warp); after the
 *          barrier thread 0 adds the warps' sums into block_sum[b].
 */
#include <gpuport/kernel.h>

GP_KERNEL void gp_selftest_axpy_sum(int n, float alpha, const float *x, float *y,
                                    float *block_sum, unsigned *count) {
  GP_DYNAMIC_SHARED(float, warp_sum);
  const unsigned block = blockIdx.x + gridDim.x * blockIdx.y;
  const long long i = (long long)block * blockDim.x + threadIdx.x;
  float v = 0.0f;
  if (i < n) {
    v = alpha * x[i] + y[i];
    y[i] = v;
    atomicAdd(count, 1u);
  }
  v = gp_warp_reduce_sum(v);
  if (gp_lane_id() == 0) warp_sum[gp_warp_id()] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned warps = (blockDim.x + GP_WARP_SIZE - 1) / GP_WARP_SIZE;
    float s = 0.0f;
    for (unsigned w = 0; w < warps; w++) s += warp_sum[w];
    block_sum[block] = s;
  }
}
GP_KERNEL_EXPORT(gp_selftest_axpy_sum)
