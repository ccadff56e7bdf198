// user_names.cu - a program that defines names starting with cuda/CUDA_/cublas itself,
// and kernels in the forms gpuport-port rewrites without a note: static kernels, a
// kernel overloaded by its host launcher, default kernel arguments, __device__ members,
// named full masks, 32-bit lane masks, 1u << lane, lane == 31, a WARP_SIZE macro. The
// porting test converts it (exit 0 expected), builds it at warp widths 32 and 64 and
// runs both.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                              \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));     \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)
#define WARP_SIZE 32
constexpr int kWarpSize = 32;
#define FULL 0xffffffff

#ifdef __CUDACC__
#define HD __host__ __device__
#else
#define HD
#endif

static void cudaCheck(cudaError_t e) { CUDA_CHECK(e); }

struct Ctx {
  int cudaDeviceID;
  int n;
};

struct Scale {
  float f;
  __device__ float apply(float x) const { return f * x; }
};

static HD int twice(int x) { return 2 * x; }

__global__ static void fill(int *out, int n, int value = 7) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = twice(value) / 2;
}

static __global__ void scale(float *x, int n, Scale s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) __stcs(&x[i], s.apply(__ldcs(&x[i])));
}

__device__ unsigned oddLanes(int v) { return __ballot_sync(0xffffffff, v & 1); }

// Per warp: lanes with an odd value, the rank of each such lane among them, the
// highest such lane and the warp sum (a butterfly over a named full mask).
__global__ void warpStats(const int *in, int *count, int *rank, int *last, int *sum) {
  int lane = threadIdx.x % WARP_SIZE;
  const int warpSize = 32;
  int warp = threadIdx.x / kWarpSize;
  int v = in[threadIdx.x];
  unsigned odd = oddLanes(v);
  unsigned odd2 = __ballot_sync(FULL, v & 1);
  odd &= odd2;
  unsigned live;
  live = __activemask();
  if (v & 1) rank[threadIdx.x] = __popc(odd & ((1u << lane) - 1));
  else rank[threadIdx.x] = -1;
  int s = v;
  for (int o = WARP_SIZE / 2; o > 0; o /= 2) s += __shfl_xor_sync(FULL, s, o);
  int width = 0;
  for (int j = 0; j < 2; j++) {
    width += WARP_SIZE / 2; // in a kernel, inside a for body: device code
  }
  if (lane == 31) {
    count[warp] = __popc(odd);
    last[warp] = odd ? 31 - __clz(odd) : -1;
    sum[warp] = __popc(live) == warpSize && width == warpSize ? s : -1;
  }
}

// The kernel's host launcher has the kernel's name.
__global__ void addOne(int *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1;
}
static void addOne(int *x, int n, int threads) { addOne<<<(n + threads - 1) / threads, threads>>>(x, n); }

int main() {
  Ctx ctx = {0, 1000};
  cudaCheck(cudaSetDevice(ctx.cudaDeviceID));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, ctx.cudaDeviceID));
  const int ws = prop.warpSize, threads = 256, warps = threads / ws;
  int n = ctx.n, bad = 0;
  // the fields helper headers and llm.c read, and the compute modes they test
  if (prop.computeMode == cudaComputeModeProhibited || prop.maxThreadsPerMultiProcessor < prop.maxThreadsPerBlock ||
      prop.major < 1 || prop.clockRate <= 0 || prop.asyncEngineCount < 0 || !prop.cooperativeLaunch) {
    printf("device properties: computeMode %d maxThreadsPerMultiProcessor %d major %d clockRate %d\n",
           prop.computeMode, prop.maxThreadsPerMultiProcessor, prop.major, prop.clockRate);
    bad++;
  }
  int *d, *h = (int *)malloc(n * sizeof(int));
  CUDA_CHECK(cudaMalloc(&d, n * sizeof(int)));
  fill<<<(n + 255) / 256, 256>>>(d, n);
  CUDA_CHECK(cudaGetLastError());
  addOne(d, n, 128);
  CUDA_CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) bad += h[i] != 8;

  float *x;
  CUDA_CHECK(cudaMallocManaged(&x, n * sizeof(float)));
  for (int i = 0; i < n; i++) x[i] = (float)i;
  scale<<<(n + 127) / 128, 128>>>(x, n, Scale{0.5f});
  CUDA_CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < n; i++) bad += x[i] != 0.5f * i;

  int hin[threads], hcount[8], hrank[threads], hlast[8], hsum[8];
  for (int i = 0; i < threads; i++) hin[i] = (i * 7 + i / 5) % 11;
  int *din, *dcount, *drank, *dlast, *dsum;
  CUDA_CHECK(cudaMalloc(&din, sizeof hin));
  CUDA_CHECK(cudaMalloc(&dcount, sizeof hcount));
  CUDA_CHECK(cudaMalloc(&drank, sizeof hrank));
  CUDA_CHECK(cudaMalloc(&dlast, sizeof hlast));
  CUDA_CHECK(cudaMalloc(&dsum, sizeof hsum));
  CUDA_CHECK(cudaMemcpy(din, hin, sizeof hin, cudaMemcpyHostToDevice));
  warpStats<<<1, threads>>>(din, dcount, drank, dlast, dsum);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemcpy(hcount, dcount, warps * sizeof(int), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hrank, drank, sizeof hrank, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hlast, dlast, warps * sizeof(int), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hsum, dsum, warps * sizeof(int), cudaMemcpyDeviceToHost));
  for (int w = 0; w < warps; w++) {
    int c = 0, l = -1, s = 0;
    for (int j = 0; j < ws; j++) {
      int i = w * ws + j;
      s += hin[i];
      if (hin[i] & 1) { bad += hrank[i] != c; c++; l = j; }
      else bad += hrank[i] != -1;
    }
    bad += hcount[w] != c || hlast[w] != l || hsum[w] != s;
  }
  printf("user_names: warp width %d, %d errors: %s\n", ws, bad, bad ? "FAILED" : "PASSED");
  CUDA_CHECK(cudaFree(d));
  CUDA_CHECK(cudaFree(x));
  free(h);
  return bad != 0;
}
