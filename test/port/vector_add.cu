// vector_add.cu - element-wise c = a + b, the first CUDA program: one thread per
// element, a grid of 256-thread blocks rounded up to cover n. Plain CUDA, the input
// of the porting test (test/port/check.sh).
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

__global__ void vecAdd(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main() {
  const int n = 1 << 20;
  size_t bytes = n * sizeof(float);
  float *h_a = (float *)malloc(bytes), *h_b = (float *)malloc(bytes), *h_c = (float *)malloc(bytes);
  srand(1234);
  for (int i = 0; i < n; i++) {
    h_a[i] = rand() / (float)RAND_MAX + 0.5f;
    h_b[i] = rand() / (float)RAND_MAX - 1.5f;
  }
  float *d_a, *d_b, *d_c;
  CHECK(cudaMalloc(&d_a, bytes));
  CHECK(cudaMalloc(&d_b, bytes));
  CHECK(cudaMalloc(&d_c, bytes));
  CHECK(cudaMemcpy(d_a, h_a, bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, h_b, bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_c, 0xff, bytes));

  int threads = 256;
  int blocks = (n + threads - 1) / threads;
  vecAdd<<<blocks, threads>>>(d_a, d_b, d_c, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(h_c, d_c, bytes, cudaMemcpyDeviceToHost));

  int errors = 0;
  for (int i = 0; i < n; i++) {
    double ref = (double)h_a[i] + (double)h_b[i];
    if (!(fabs(h_c[i] - ref) <= 0x1p-24 * fabs(ref))) errors++;
  }
  printf("vector_add: %s (%d errors)\n", errors ? "FAILED" : "PASSED", errors);
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_c));
  free(h_a);
  free(h_b);
  free(h_c);
  return errors ? 1 : 0;
}
