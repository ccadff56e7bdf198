// width_errors.cu - warp-width-64 bugs gpuport-port cannot rewrite for certain, and
// what it cannot map: each is reported as unmapped and the exit status is 2
// (test/port/check.sh checks each report; not built), a host warp_size = 32 too.
#include <cuda_runtime.h>
#define WARP_SIZE 32
#define MASK32 0xffffffff

__global__ void rowSums(const float *in, float *out, int rows, int cols) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / WARP_SIZE;
  int lane = threadIdx.x % WARP_SIZE;
  if (warp >= rows) return;
  float s = 0.0f;
  for (int c = lane; c < cols; c += WARP_SIZE) s += in[warp * cols + c];
  for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(MASK32, s, o);
  if (lane == 0) out[warp] = s;
}

__global__ void leader(const int *in, int *out) {
  unsigned a, b = 0;
  a = __ballot_sync(0xffffffff, in[threadIdx.x] > 0);
  out[threadIdx.x] = __clz(a) + (MASK32 & b);
}

__global__ void other(int *out) { out[threadIdx.x] = 1; }

int main() {
  float *in, *out;
  int *o;
  const int rows = 100, cols = 64;
  cudaMalloc(&in, rows * cols * sizeof(float));
  cudaMalloc(&out, rows * sizeof(float));
  cudaMalloc(&o, 64 * sizeof(int));
  rowSums<<<(rows * 32 + 255) / 256, 256>>>(in, out, rows, cols);
  rowSums<<<rows, WARP_SIZE>>>(in, out, rows, cols);
  leader<<<1, 32>>>(o, o);
  void (*k)(int *) = other;
  k<<<1, 64>>>(o);
  cudaMemPrefetchAsync(in, 64, 0, 0);
  return 0;
}

static void launchRows(const float *in, float *out, int rows, int cols) {
  dim3 block(32, 8);
  rowSums<<<(rows + 7) / 8, block>>>(in, out, rows, cols);
}

__managed__ int managedCount;

__global__ void scanRows(int *data, int width) {
  int v = data[threadIdx.x];
  for (int i = 1; i < width; i *= 2) {
    int n = __shfl_up_sync(0xffffffff, v, i, width);
    if (threadIdx.x % width >= i) v += n;
  }
  data[threadIdx.x] = v;
}

int launchScan(int *d) {
  int devices, warp_size = 32;
  scanRows<<<1, 4 * warp_size>>>(d, 32);
  return devices;
}
