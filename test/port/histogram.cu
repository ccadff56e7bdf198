// histogram.cu - 256-bin histogram of bytes: each block counts its grid-stride share
// into a shared-memory histogram with shared atomics, then adds it to the global one
// with one global atomic per bin. Plain CUDA (the porting test's input).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define NUM_BINS 256

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err = (call);                                                         \
    if (err != cudaSuccess) {                                                         \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err));   \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

__global__ void histogramShared(const unsigned char *data, unsigned int *bins, int n) {
  __shared__ unsigned int local[NUM_BINS];
  for (int i = threadIdx.x; i < NUM_BINS; i += blockDim.x) local[i] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int i = threadIdx.x; i < NUM_BINS; i += blockDim.x)
    if (local[i]) atomicAdd(&bins[i], local[i]);
}

int main() {
  const int n = 1 << 22;
  unsigned char *h_data = (unsigned char *)malloc(n);
  unsigned int h_bins[NUM_BINS], ref[NUM_BINS] = {0};
  srand(7);
  for (int i = 0; i < n; i++) {
    h_data[i] = (unsigned char)((rand() % 256 + rand() % 64) % 256);
    ref[h_data[i]]++;
  }
  unsigned char *d_data;
  unsigned int *d_bins;
  CHECK(cudaMalloc((void **)&d_data, n));
  CHECK(cudaMalloc((void **)&d_bins, NUM_BINS * sizeof(unsigned int)));
  CHECK(cudaMemcpy(d_data, h_data, n, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_bins, 0, NUM_BINS * sizeof(unsigned int)));

  int device = 0, sms = 0;
  CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, device));
  sms = prop.multiProcessorCount;
  histogramShared<<<sms * 4, 256>>>(d_data, d_bins, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(h_bins, d_bins, sizeof h_bins, cudaMemcpyDeviceToHost));

  int errors = 0;
  for (int b = 0; b < NUM_BINS; b++) errors += h_bins[b] != ref[b];
  printf("histogram of %d bytes on %d multiprocessors: %s\n", n, sms, errors ? "FAILED" : "PASSED");
  CHECK(cudaFree(d_data));
  CHECK(cudaFree(d_bins));
  free(h_data);
  return errors ? 1 : 0;
}
