/*
 * bench.cu - the dialect kernels `gpuport bench launch` times (cli/bench_launch.c),
 * built into the library for every backend so the installed tool can run them. Each is
 * what a user would write; nothing in the executor knows them. Launch overhead is
 * what they measure, so they do little.
 *
 * Decomposition
 *   gp__bench_vadd, gp__bench_fma_gelu: one thread per element, 1D blocks.
 *   gp__bench_reduce: grid-stride loop per thread, then a warp-shuffle reduction, one
 *     partial per warp in shared memory, a barrier, warp 0 reduces the partials and
 *     thread 0 adds the block's sum to *out (an atomic).
 *   gp__bench_barriers: iters __syncthreads() in one block.
 *   gp__bench_empty: nothing (launch latency).
 *   gp__bench_increment: x[i] += 1 for i < n, one thread per element, one block (the
 *     chain of dependent kernels that `bench launch` also replays as a graph, and the
 *     graph selftest).
 */
#include <gpuport/kernel.h>

GP_KERNEL void gp__bench_vadd(int n, const float *a, const float *b, float *c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
GP_KERNEL_EXPORT(gp__bench_vadd)

/* y = gelu(a * x + b) with the erf form of GELU: 0.5 v (1 + erf(v / sqrt(2))). */
GP_KERNEL void gp__bench_fma_gelu(int n, const float *a, const float *x, const float *b, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = fmaf(a[i], x[i], b[i]);
    y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  }
}
GP_KERNEL_EXPORT(gp__bench_fma_gelu)

/* *out += sum of x[0 .. n-1]; blocks of at most 1024 threads. */
GP_KERNEL void gp__bench_reduce(long long n, const float *x, float *out) {
  GP_SHARED(float, partial, [1024 / 32]);
  const unsigned t = threadIdx.x, warps = (blockDim.x + GP_WARP_SIZE - 1) / GP_WARP_SIZE;
  float acc = 0.0f;
  for (long long i = (long long)blockIdx.x * blockDim.x + t; i < n; i += (long long)gridDim.x * blockDim.x)
    acc += x[i];
  for (int o = GP_WARP_SIZE / 2; o > 0; o /= 2) acc += gp_shfl_down(acc, (unsigned)o);
  if (gp_lane_id() == 0) partial[gp_warp_id()] = acc;
  __syncthreads();
  if (gp_warp_id() == 0) {
    acc = gp_lane_id() < warps ? partial[gp_lane_id()] : 0.0f;
    for (int o = GP_WARP_SIZE / 2; o > 0; o /= 2) acc += gp_shfl_down(acc, (unsigned)o);
    if (t == 0) atomicAdd(out, acc);
  }
}
GP_KERNEL_EXPORT(gp__bench_reduce)

/* iters barriers; out[blockIdx.x] = threads that passed them all. */
GP_KERNEL void gp__bench_barriers(int iters, int *out) {
  GP_SHARED(int, passed, );
  if (threadIdx.x == 0) passed = 0;
  __syncthreads();
  for (int i = 0; i < iters; i++) __syncthreads();
  atomicAdd(&passed, 1);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = passed;
}
GP_KERNEL_EXPORT(gp__bench_barriers)

GP_KERNEL void gp__bench_empty(void) {}
GP_KERNEL_EXPORT(gp__bench_empty)

/* x[i] += 1 for i < n. */
GP_KERNEL void gp__bench_increment(int n, float *x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
GP_KERNEL_EXPORT(gp__bench_increment)
