// templates.cu - kernel templates launched by block size, cooperative groups, half
// precision, cuBLAS and the profiler (test/port/check.sh checks the converted text and
// the exit status: 1, notes to review; not built here).
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_profiler_api.h>
#include <cublas_v2.h>
#include <cublasLt.h>
namespace cg = cooperative_groups;
using namespace cooperative_groups;

template <typename T, int BLOCK>
__global__ void blockSum(const T *in, T *out, int n) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  T v = threadIdx.x < n ? in[threadIdx.x] : T(0);
  v = cg::reduce(tile, v, cg::plus<T>());
  if (tile.thread_rank() == 0) atomicAdd(out, v);
}

__global__ void toHalf(const float *in, __half *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2half(in[i]);
}

void launchSum(const float *in, float *out, int n, int threads, cudaStream_t st) {
  switch (threads) {
    case 512: blockSum<float, 512><<<1, 512, 0, st>>>(in, out, n); break;
    case 256: blockSum<float, 256><<<1, 256, 0, st>>>(in, out, n); break;
    default: blockSum<float, 128><<<1, 128>>>(in, out, n); break;
  }
}

int main() {
  float *a, *b, *c;
  cudaMalloc(&a, 64 * sizeof(float));
  cudaMalloc(&b, 64 * sizeof(float));
  cudaMalloc(&c, 64 * sizeof(float));
  cublasHandle_t handle;
  cublasCreate(&handle);
  cudaStream_t st;
  cudaStreamCreate(&st);
  cublasSetStream(handle, st);
  const float alpha = 1.0f, beta = 0.0f;
  cudaProfilerStart();
  cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, 8, 8, 8, &alpha, a, 8, b, 8, &beta, c, 8);
  cudaProfilerStop();
  launchSum(a, c, 64, 256, st);
  int value = 0;
  cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
  cudaDeviceGetAttribute(&value, cudaDevAttrL2CacheSize, 0);
  int minGrid, blockSize;
  cudaOccupancyMaxPotentialBlockSize(&minGrid, &blockSize, toHalf);
  cudaFuncAttributes attr;
  cudaFuncGetAttributes(&attr, toHalf); int most = attr.maxThreadsPerBlock + attr.numRegs; (void)most;
  cudaHostRegister(a, 64, cudaHostRegisterMapped); float *da; cudaHostGetDevicePointer((void **)&da, a, 0); float *h; cudaHostAlloc(&h, 64, cudaHostAllocMapped | cudaHostAllocPortable);
  cublasDestroy(handle);
  return 0;
}

extern __device__ int sharedCounter;
struct Acc {
  int n;
  __device__ void add(int v) { atomicAdd(&sharedCounter, v + n); }
};

void graphOf() {
  cudaGraph_t g;
  cudaGraphNode_t node;
  cudaKernelNodeParams prm = {};
  prm.func = (void *)toHalf;
  cudaGraphCreate(&g, 0);
  cudaGraphAddKernelNode(&node, g, NULL, 0, &prm);
  cublasLtHandle_t lt;
  cublasLtCreate(&lt);
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
  cublasSetMathMode(handle, mode);
  cublasLtDestroy(lt);
}
