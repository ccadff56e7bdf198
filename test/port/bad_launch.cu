// bad_launch.cu - launch errors checked the CUDA way: a launch CUDA refuses (a block of
// 2048 threads) is reported by cudaGetLastError, which then resets it; cudaPeekAtLastError
// reports without resetting; a failed cudaMalloc is the last error too; good launches after
// that run. Plain CUDA, an input of the porting test (test/port/check.sh).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err = (call);                                                         \
    if (err != cudaSuccess) {                                                         \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err));   \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

__global__ void fill(int *out, int n, int v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = v;
}

int main() {
  const int n = 4096;
  int *d_out;
  int failures = 0;
  CHECK(cudaMalloc(&d_out, n * sizeof(int)));
  CHECK(cudaMemset(d_out, 0, n * sizeof(int)));

  fill<<<n / 2048, 2048>>>(d_out, n, 1); // more threads per block than any device allows
  cudaError_t peek1 = cudaPeekAtLastError();
  cudaError_t peek2 = cudaPeekAtLastError();
  cudaError_t err = cudaGetLastError();
  cudaError_t after = cudaGetLastError();
  if (err == cudaSuccess || peek1 != err || peek2 != err) failures++;
  if (after != cudaSuccess) failures++;
  printf("bad launch: cudaGetLastError said '%s', then '%s'\n", cudaGetErrorString(err),
         cudaGetErrorString(after));

  void *huge = NULL;
  cudaError_t oom = cudaMalloc(&huge, (size_t)1 << 62);
  CHECK(cudaMemset(d_out, 0, n * sizeof(int))); // a success does not reset the last error
  if (oom == cudaSuccess || cudaGetLastError() != oom || cudaGetLastError() != cudaSuccess) failures++;

  fill<<<n / 256, 256>>>(d_out, n, 7);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int *h = (int *)malloc(n * sizeof(int));
  CHECK(cudaMemcpy(h, d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) failures += h[i] != 7;
  printf("bad_launch: %s (%d failures)\n", failures ? "FAILED" : "PASSED", failures);
  CHECK(cudaFree(d_out));
  free(h);
  return failures ? 1 : 0;
}
