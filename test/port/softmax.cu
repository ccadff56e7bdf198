// softmax.cu - softmax over each row of a rows x cols matrix, one 256-thread block
// per row: a strided pass finds the row maximum (butterfly warp reductions with
// __shfl_xor_sync, then across warps in shared memory), a second pass sums
// exp(x - max) the same way, a third writes exp(x - max) / sum. Pinned host buffers
// and a stream. Plain CUDA (the porting test's input).
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cfloat>
#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err = (call);                                                         \
    if (err != cudaSuccess) {                                                         \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err));   \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

__device__ float warpMax(float v) {
  for (int mask = 16; mask > 0; mask >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, mask));
  return v;
}

__device__ float warpSum(float v) {
  for (int mask = 16; mask > 0; mask >>= 1) v += __shfl_xor_sync(0xffffffff, v, mask);
  return v;
}

__global__ void softmaxRows(const float *in, float *out, int cols) {
  __shared__ float red[32];
  __shared__ float rowStat;
  const float *x = in + (size_t)blockIdx.x * cols;
  float *y = out + (size_t)blockIdx.x * cols;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;

  float m = -FLT_MAX;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, x[c]);
  m = warpMax(m);
  if (lane == 0) red[warp] = m;
  __syncthreads();
  if (warp == 0) {
    m = lane < warps ? red[lane] : -FLT_MAX;
    m = warpMax(m);
    if (lane == 0) rowStat = m;
  }
  __syncthreads();
  m = rowStat;

  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(x[c] - m);
  s = warpSum(s);
  __syncthreads();
  if (lane == 0) red[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < warps ? red[lane] : 0.0f;
    s = warpSum(s);
    if (lane == 0) rowStat = s;
  }
  __syncthreads();
  float inv = 1.0f / rowStat;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[c] = expf(x[c] - m) * inv;
}

int main() {
  const int rows = 512, cols = 1000;
  size_t bytes = (size_t)rows * cols * sizeof(float);
  float *h_in, *h_out, *d_in, *d_out;
  CHECK(cudaMallocHost(&h_in, bytes));
  CHECK(cudaMallocHost(&h_out, bytes));
  srand(5);
  for (int i = 0; i < rows * cols; i++) h_in[i] = 8.0f * (rand() / (float)RAND_MAX) - 4.0f;
  CHECK(cudaMalloc(&d_in, bytes));
  CHECK(cudaMalloc(&d_out, bytes));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaMemcpyAsync(d_in, h_in, bytes, cudaMemcpyHostToDevice, stream));
  softmaxRows<<<rows, 256, 0, stream>>>(d_in, d_out, cols);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));

  int errors = 0;
  for (int r = 0; r < rows; r++) {
    const float *x = h_in + (size_t)r * cols;
    double m = -1e300, s = 0.0;
    for (int c = 0; c < cols; c++) m = x[c] > m ? x[c] : m;
    for (int c = 0; c < cols; c++) s += exp((double)x[c] - m);
    for (int c = 0; c < cols; c++) {
      double ref = exp((double)x[c] - m) / s;
      if (!(fabs(h_out[(size_t)r * cols + c] - ref) <= (cols + 16) * 0x1p-24 * ref)) errors++;
    }
  }
  printf("softmax of %d rows of %d: %s (%d errors)\n", rows, cols, errors ? "FAILED" : "PASSED", errors);
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFreeHost(h_in));
  CHECK(cudaFreeHost(h_out));
  return errors ? 1 : 0;
}
