/*
 * kt_graph.cu - dialect kernels for test/test_graph.c: small element-wise steps whose
 * results after a chain of launches are exact in f32 (small integers), so a replayed
 * graph can be checked element by element against a float64 reference.
 */
#include <gpuport/kernel.h>

/* x[i] = a * x[i] + b for i < n; 1D grid of 1D blocks. */
GP_KERNEL void kt_axpb(int n, float a, float b, float *x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = a * x[i] + b;
}
GP_KERNEL_EXPORT(kt_axpb)

/* y[i] = x[i] + y[i] for i < n; 1D grid of 1D blocks. */
GP_KERNEL void kt_add(int n, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + y[i];
}
GP_KERNEL_EXPORT(kt_add)
