// rules.cu - constructs the six programs do not use, for the rules of gpuport-port
// (test/port/check.sh checks the converted text; this file is not built).
#include <cstdio>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cublas_v2.h>
namespace cg = cooperative_groups;

__constant__ float coeffs[16];
__device__ int counter;

__global__ void kernelDeclaredFirst(int *out);

__global__ void __launch_bounds__(256) vote(const int *in, unsigned long long *out, unsigned *pop) {
  unsigned ballot = __ballot_sync(0xffffffff, in[threadIdx.x] > 0);
  unsigned half = __ballot_sync(0x0000ffff, in[threadIdx.x] > 1);
  int lane = threadIdx.x & 31;
  if (lane == 0) pop[threadIdx.x / 32] = __popc(__ballot_sync(0xffffffff, in[threadIdx.x] != 0));
  out[threadIdx.x] = ballot + half + __shfl_sync(0xffffffff, in[threadIdx.x], 0, 32) + __shfl_xor_sync(0xff, 1, 1);
  __syncwarp();
  __syncwarp(0xffff);
  if (__any_sync(__activemask(), lane == 3)) atomicAdd(&counter, 1);
  out[0] += __match_any_sync(0xffffffff, lane);
}

__global__ void coop(float *data) {
  cg::grid_group grid = cg::this_grid();
  data[blockIdx.x] = coeffs[0];
  grid.sync();
  data[0] += data[gridDim.x - 1];
}

int main() {
  float h[16] = {0};
  int *d_out;
  cudaStream_t s;
  cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -1);
  cudaMemcpyToSymbol(coeffs, h, sizeof h);
  cudaMemcpyToSymbolAsync(coeffs, h, 4 * sizeof(float), 8, cudaMemcpyHostToDevice, s);
  int c0 = 0;
  cudaMemcpyFromSymbol(&c0, counter, sizeof c0);
  cudaMallocManaged(&d_out, 64, cudaMemAttachGlobal);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("%d %d %zu\n", prop.multiProcessorCount, prop.warpSize, prop.sharedMemPerBlock);
  int value = 0;
  cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, 0);
  void *args[] = {&d_out};
  cudaLaunchCooperativeKernel((void *)coop, dim3(2), dim3(64), args, 0, s);
  kernelDeclaredFirst<<<dim3(2, 1), dim3(32), 0, s>>>(d_out);
  cudaEvent_t e;
  cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  cudaEventRecord(e);
  cudaMemcpy2DAsync(d_out, 8, h, 8, 8, 2, cudaMemcpyHostToDevice, s);
  cudaMalloc3D(nullptr, make_cudaExtent(1, 1, 1));
  return 0;
}

__global__ void kernelDeclaredFirst(int *out) { out[threadIdx.x] = warpSize; }

void afterDirective(float **p) {
#ifdef SOME_FLAG
#endif
  cudaMalloc(p, 4);
}
