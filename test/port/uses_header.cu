// uses_header.cu - no CUDA include (nvcc includes cuda_runtime.h implicitly) and a
// kernel from a header of the same run (test/port/check.sh: exit 0, built and run).
#include <cstdio>
#include "kernels.cuh"

int main() {
  const int n = 1000;
  float *x, *y;
  cudaMallocManaged(&x, n * sizeof(float));
  cudaMallocManaged(&y, n * sizeof(float));
  for (int i = 0; i < n; i++) { x[i] = (float)i; y[i] = 1.0f; }
  axpy<<<(n + 127) / 128, 128>>>(2.0f, x, y, n);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  int bad = 0;
  for (int i = 0; i < n; i++) bad += y[i] != 1.0f + 2.0f * i;
  printf("uses_header: %d errors: %s\n", bad, bad ? "FAILED" : "PASSED");
  cudaFree(x);
  cudaFree(y);
  return bad != 0;
}
