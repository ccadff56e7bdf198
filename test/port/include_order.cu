// include_order.cu - a namespace alias of cooperative_groups between two includes, and a
// program's own helper_cuda.h: the dialect headers must come before the alias, and the
// helper's include must stay. Pair's members keep __device__ (its alignas is not a
// parameter list). The kernel's test of the architecture is decided as on sm_70.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#include <stdio.h>
#include "helper_cuda.h"

#if __CUDA_ARCH__ >= 700
#define ARCH_SCALE 1
#else
#define ARCH_SCALE 2
#endif

struct alignas(8) Pair {
  int a, b;
  __device__ explicit Pair(int v) : a(v), b(0) {}
  __device__ static Pair of(int v) { return Pair(v); }
  __device__ int first() const { return a; }
};

__global__ void blockSums(const int *in, int *out) {
  cg::thread_block block = cg::this_thread_block();
  __shared__ int sum;
  if (threadIdx.x == 0) sum = 0;
  block.sync();
  atomicAdd(&sum, Pair::of(in[blockIdx.x * blockDim.x + threadIdx.x]).first());
  block.sync();
  if (threadIdx.x == 0) out[blockIdx.x] = ARCH_SCALE * sum;
}

int main() {
  const int blocks = 4, threads = 128, n = blocks * threads;
  int h[n], sums[blocks], *d_in, *d_out;
  for (int i = 0; i < n; i++) h[i] = i % 7;
  checkCudaErrors(cudaMalloc((void **)&d_in, sizeof h));
  checkCudaErrors(cudaMalloc((void **)&d_out, sizeof sums));
  checkCudaErrors(cudaMemcpy(d_in, h, sizeof h, cudaMemcpyHostToDevice));
  blockSums<<<blocks, threads>>>(d_in, d_out);
  checkCudaErrors(cudaGetLastError());
  checkCudaErrors(cudaMemcpy(sums, d_out, sizeof sums, cudaMemcpyDeviceToHost));
  int errors = 0;
  for (int b = 0; b < blocks; b++) {
    int want = 0;
    for (int i = b * threads; i < (b + 1) * threads; i++) want += h[i];
    if (sums[b] != want || roundToBf16((float)(want & 255)) != (float)(want & 255)) errors++;
  }
  cudaFree(d_in);
  cudaFree(d_out);
  printf("include_order: %d errors: %s\n", errors, errors ? "FAILED" : "PASSED");
  return errors != 0;
}
