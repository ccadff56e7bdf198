/*
 * bench.cu - the small kernel `gpuport bench launch` chains (tool/bench.c), built into
 * the library for every backend so the installed tool can run it: launch overhead is
 * what it measures, so it does almost nothing.
 *
 * Decomposition: 1D grid of 1D blocks; thread i adds 1 to x[i] for i < n.
 */
#include <gpuport/kernel.h>

GP_KERNEL void gp_bench_increment(int n, float *x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
GP_KERNEL_EXPORT(gp_bench_increment)
