/*
 * vector_add.cu - a kernel written once in the gpuport dialect. The same file
 * is built by nvcc (cuda), hipcc (hip) and the host C++ compiler (cpu); vector_add.c
 * launches it from plain C.
 *
 * Decomposition: one thread per element, 1D blocks; the last block may be partial.
 */
#include <gpuport/kernel.h>

GP_KERNEL void vector_add(int n, const float *a, const float *b, float *c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
GP_KERNEL_EXPORT(vector_add)
