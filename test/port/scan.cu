// scan.cu - inclusive prefix sum of 2^20 floats: every block scans its 512 elements
// (warps scan with __shfl_up_sync, the warp totals are scanned by the first warp in
// dynamic shared memory) and writes its total; the block totals are scanned the same
// way, recursively, and added back. Plain CUDA (the porting test's input).
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define BLOCK 512

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err = (call);                                                         \
    if (err != cudaSuccess) {                                                         \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err));   \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

__device__ float warpInclusiveScan(float v) {
  int lane = threadIdx.x & 31;
  for (int offset = 1; offset < 32; offset <<= 1) {
    float up = __shfl_up_sync(0xffffffff, v, offset);
    if (lane >= offset) v += up;
  }
  return v;
}

__global__ void scanBlocks(const float *in, float *out, float *blockSums, int n) {
  extern __shared__ float warpSums[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float v = i < n ? in[i] : 0.0f;
  v = warpInclusiveScan(v);
  if (lane == 31) warpSums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float s = lane < blockDim.x / 32 ? warpSums[lane] : 0.0f;
    s = warpInclusiveScan(s);
    if (lane < blockDim.x / 32) warpSums[lane] = s;
  }
  __syncthreads();
  if (warp > 0) v += warpSums[warp - 1];
  if (i < n) out[i] = v;
  if (threadIdx.x == blockDim.x - 1) blockSums[blockIdx.x] = v;
}

__global__ void addOffsets(float *out, const float *scannedSums, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (blockIdx.x > 0 && i < n) out[i] += scannedSums[blockIdx.x - 1];
}

static void scanRecursive(const float *d_in, float *d_out, int n) {
  int blocks = (n + BLOCK - 1) / BLOCK;
  float *d_sums;
  CHECK(cudaMalloc(&d_sums, blocks * sizeof(float)));
  scanBlocks<<<blocks, BLOCK, (BLOCK / 32) * sizeof(float)>>>(d_in, d_out, d_sums, n);
  CHECK(cudaGetLastError());
  if (blocks > 1) {
    float *d_scanned;
    CHECK(cudaMalloc(&d_scanned, blocks * sizeof(float)));
    scanRecursive(d_sums, d_scanned, blocks);
    addOffsets<<<blocks, BLOCK>>>(d_out, d_scanned, n);
    CHECK(cudaGetLastError());
    CHECK(cudaFree(d_scanned));
  }
  CHECK(cudaFree(d_sums));
}

int main() {
  const int n = 1 << 20;
  float *h_in = (float *)malloc(n * sizeof(float)), *h_out = (float *)malloc(n * sizeof(float));
  srand(99);
  for (int i = 0; i < n; i++) h_in[i] = rand() / (float)RAND_MAX + 0.001f;
  float *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  CHECK(cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice));
  scanRecursive(d_in, d_out, n);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h_out, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));

  int errors = 0;
  double ref = 0.0;
  for (int i = 0; i < n; i++) {
    ref += h_in[i];
    if (!(fabs(h_out[i] - ref) <= 64 * 0x1p-24 * ref)) errors++;
  }
  printf("scan of %d floats: %s (%d errors)\n", n, errors ? "FAILED" : "PASSED", errors);
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  free(h_in);
  free(h_out);
  return errors ? 1 : 0;
}
