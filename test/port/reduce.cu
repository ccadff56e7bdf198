// reduce.cu - sum of n floats with warp shuffles: each thread accumulates a
// grid-stride slice, warps reduce with __shfl_down_sync, warp sums meet in shared
// memory, the first warp reduces them; a second launch of the same kernel with one
// block sums the per-block results. Plain CUDA, written for 32-lane warps as such
// code usually is (the porting test's input).
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err = (call);                                                         \
    if (err != cudaSuccess) {                                                         \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err));   \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

__inline__ __device__ float warpReduceSum(float val) {
  for (int offset = 16; offset > 0; offset /= 2)
    val += __shfl_down_sync(0xffffffff, val, offset);
  return val;
}

__inline__ __device__ float blockReduceSum(float val) {
  static __shared__ float shared[32];
  int lane = threadIdx.x % 32;
  int wid = threadIdx.x / 32;
  val = warpReduceSum(val);
  if (lane == 0) shared[wid] = val;
  __syncthreads();
  val = (threadIdx.x < blockDim.x / 32) ? shared[lane] : 0.0f;
  if (wid == 0) val = warpReduceSum(val);
  return val;
}

__global__ void reduceSum(const float *in, float *out, int n) {
  float sum = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    sum += in[i];
  sum = blockReduceSum(sum);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}

int main() {
  const int n = 1 << 22;
  const int threads = 512, blocks = 256;
  float *h_in = (float *)malloc(n * sizeof(float));
  srand(42);
  double ref = 0.0, mag = 0.0;
  for (int i = 0; i < n; i++) {
    h_in[i] = rand() / (float)RAND_MAX - 0.25f;
    ref += h_in[i];
    mag += fabs(h_in[i]);
  }
  float *d_in, *d_partial, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CHECK(cudaMalloc(&d_partial, blocks * sizeof(float)));
  CHECK(cudaMalloc(&d_out, sizeof(float)));
  CHECK(cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice));

  reduceSum<<<blocks, threads>>>(d_in, d_partial, n);
  CHECK(cudaGetLastError());
  reduceSum<<<1, 1024>>>(d_partial, d_out, blocks);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  float h_out = 0.0f;
  CHECK(cudaMemcpy(&h_out, d_out, sizeof(float), cudaMemcpyDeviceToHost));
  double bound = (n / (double)(threads * blocks) + 40) * 0x1p-24 * mag;
  bool ok = fabs(h_out - ref) <= bound;
  printf("reduce: sum %.6f, reference %.6f: %s\n", h_out, ref, ok ? "PASSED" : "FAILED");
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_partial));
  CHECK(cudaFree(d_out));
  free(h_in);
  return ok ? 0 : 1;
}
