// launch_forms.cu - launches and declarations as CUDA programs write them, beyond the
// plain <<<>>> of a kernel: a kernel template launched with deduced template arguments
// (reading an instance of a __constant__ variable template), occupancy queries of kernels
// named through a variable or a template parameter, a CUDART_VERSION test,
// launches through a kernel pointer (and one holding no kernel, which must fail), kernels
// of C linkage (extern "C" on the kernel and around it), the qualifier after the type in
// extern __shared__, and an aggregated atomic built on __match_any_sync. Plain CUDA, the
// input of the porting test (test/port/check.sh).
#include <cstdio>
#include <cuda_runtime.h>

template <typename T>
__constant__ T offset[2];

template <typename T, int S = 3>
__global__ void scale(const T *__restrict__ in, T *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * (T)S + offset<T>[1];
}

__global__ void copyK(float *o, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) o[i] = in[i];
}
__global__ void negate(float *o, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) o[i] = -in[i];
}
void notAKernel(float *, const float *, int) {}

// occupancy of a kernel named through a variable and through a template parameter
static int blocksPerSM(void *kernel) {
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, 128, 0) != cudaSuccess) return -1;
  return n;
}
template <class K> int suggestedBlock(K kernel) {
  int minGrid = 0, block = 0;
  if (cudaOccupancyMaxPotentialBlockSize(&minGrid, &block, kernel, 0, 0) != cudaSuccess) return -1;
  return block;
}

#if CUDART_VERSION >= 9000
static const int cooperativeGroups = 1; // a path chosen by the runtime's version
#else
static const int cooperativeGroups = 0;
#endif

// the block's values reversed through dynamic shared memory
extern "C" __global__ void reverseBlock(const float *in, float *out) {
  extern double __shared__ sdata[];
  sdata[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = (float)sdata[blockDim.x - 1 - threadIdx.x];
}

extern "C" {
// every thread adds 1 to counters[threadIdx.x % s]: one atomic per group of lanes
__global__ void aggregate(int *counters, int s) {
  int *ptr = counters + threadIdx.x % s;
  unsigned mask = __match_any_sync(0xffffffff, (unsigned long long)ptr);
  int leader = __ffs(mask) - 1;
  int lane = threadIdx.x % 32;
  int res = 0;
  if (lane == leader) res = atomicAdd(ptr, __popc(mask));
  res = __shfl_sync(mask, res, leader);
  (void)res;
}
}

int main() {
  const int n = 1000, threads = 128, blocks = (n + threads - 1) / threads, total = blocks * threads;
  float h_in[total], h_out[total];
  for (int i = 0; i < total; i++) h_in[i] = (float)(i % 97) - 40.0f;
  float *d_in, *d_out;
  int *d_cnt, h_cnt[8];
  cudaMalloc(&d_in, sizeof h_in);
  cudaMalloc(&d_out, sizeof h_out);
  cudaMalloc(&d_cnt, sizeof h_cnt);
  cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice);
  int errors = 0;

  const float h_off[2] = {0.0f, 0.5f};
  cudaMemcpyToSymbol(offset<float>, h_off, sizeof h_off);
  scale<<<blocks, threads>>>(d_in, d_out, n);
  cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; i++) errors += h_out[i] != 3.0f * h_in[i] + 0.5f;

  void (*kernel)(float *, const float *, int);
  for (int k = 0; k < 2; k++) {
    kernel = k == 0 ? &copyK : negate;
    cudaMemset(d_out, 0, sizeof h_out);
    kernel<<<blocks, threads>>>(d_out, d_in, n);
    if (cudaGetLastError() != cudaSuccess) errors++;
    cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; i++) errors += h_out[i] != (k == 0 ? h_in[i] : -h_in[i]);
  }
  kernel = notAKernel;
  kernel<<<1, 1>>>(d_out, d_in, n);
  if (cudaGetLastError() == cudaSuccess) {
    printf("a launch through a pointer to a host function succeeded\n");
    errors++;
  }

  if (blocksPerSM((void *)copyK) < 1 || suggestedBlock(negate) < 1 || !cooperativeGroups) {
    printf("occupancy through a variable: %d blocks, block %d; CUDART_VERSION path %d\n", blocksPerSM((void *)copyK),
           suggestedBlock(negate), cooperativeGroups);
    errors++;
  }
  if (blocksPerSM((void *)notAKernel) != -1) {
    printf("an occupancy query of a host function succeeded\n");
    errors++;
  }

  reverseBlock<<<blocks, threads, threads * sizeof(double)>>>(d_in, d_out);
  cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost);
  for (int i = 0; i < total; i++) errors += h_out[i] != h_in[i - i % threads + threads - 1 - i % threads];

  for (int s = 1; s <= 8; s *= 2) {
    cudaMemset(d_cnt, 0, sizeof h_cnt);
    aggregate<<<blocks, threads>>>(d_cnt, s);
    cudaMemcpy(h_cnt, d_cnt, sizeof h_cnt, cudaMemcpyDeviceToHost);
    for (int i = 0; i < s; i++) errors += h_cnt[i] != total / s;
  }
  cudaFree(d_in);
  cudaFree(d_out);
  cudaFree(d_cnt);
  printf("%s: %d errors\n", errors ? "FAILED" : "PASSED", errors);
  return errors != 0;
}
