/* code_first.cu - a table that uses NULL before the first #include, as nvcc allows (it
 * includes cuda_runtime.h before anything): the dialect header must come first. A host
 * function marked CUDART_CB runs once. */

const char *names[] = {"copy", "scale", NULL};

#include <stdio.h>

__global__ void scale(float *x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

static void CUDART_CB countDone(void *data) { ++*(int *)data; }

int main() {
  const int n = 1000;
  float h[n], *d;
  for (int i = 0; i < n; i++) h[i] = (float)i;
  cudaMalloc((void **)&d, sizeof h);
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  scale<<<(n + 127) / 128, 128>>>(d, 2.0f, n);
  int done = 0;
  cudaLaunchHostFunc(0, countDone, &done);
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaFree(d);
  int errors = 0, count = 0;
  for (int i = 0; i < n; i++) errors += h[i] != 2.0f * i;
  while (names[count]) count++;
  errors += done != 1;
  printf("code_first: %d names, %d errors: %s\n", count, errors, errors || count != 2 ? "FAILED" : "PASSED");
  return errors != 0 || count != 2;
}
