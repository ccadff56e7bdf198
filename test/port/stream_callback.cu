// stream_callback.cu - runtime calls of programs that tune how the host waits and where
// memory comes from: device flags (blocking sync, mapped host memory), a stream callback
// that checks the stream's status, zero-copy mapped memory, the default memory pool
// with a release threshold, and a CUDART_VERSION test. Plain CUDA, an input of the
// porting test (test/port/check.sh).
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err = (call);                                                         \
    if (err != cudaSuccess) {                                                         \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err));   \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

struct Work {
  cudaStream_t stream;
  int *host;
  int n;
  int sum;
  bool statusOk;
};

__global__ void increment(int *data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

// Runs once the copy back is complete: the results are on the host.
void CUDART_CB done(cudaStream_t stream, cudaError_t status, void *userData) {
  Work *w = (Work *)userData;
  w->statusOk = status == cudaSuccess && stream == w->stream;
  int s = 0;
  for (int i = 0; i < w->n; i++) s += w->host[i];
  w->sum = s;
}

int main() {
#if CUDART_VERSION >= 4000
  CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync | cudaDeviceMapHost));
#else
  printf("CUDA too old\n");
  return 1;
#endif
  unsigned flags = 0;
  CHECK(cudaGetDeviceFlags(&flags));
  if ((flags & cudaDeviceScheduleMask) != cudaDeviceBlockingSync) { printf("flags 0x%x\n", flags); return 1; }
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int overlap = 0, pools = 0;
  CHECK(cudaDeviceGetAttribute(&overlap, cudaDevAttrGpuOverlap, 0));
  CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0));
  if (!prop.canMapHostMemory || !pools) { printf("no mapped memory or pools\n"); return 1; }
  printf("overlap %d, async engines %d\n", overlap, prop.asyncEngineCount);

  // The default pool keeps what it frees between synchronisations.
  cudaMemPool_t pool;
  CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  uint64_t threshold = UINT64_MAX, back = 0;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &back));
  if (back != threshold) { printf("threshold not kept\n"); return 1; }

  Work w;
  w.n = 4096;
  w.sum = -1;
  w.statusOk = false;
  CHECK(cudaStreamCreateWithFlags(&w.stream, cudaStreamNonBlocking));
  CHECK(cudaHostAlloc((void **)&w.host, w.n * sizeof(int), cudaHostAllocPortable));
  for (int i = 0; i < w.n; i++) w.host[i] = i;
  int *d = NULL;
  CHECK(cudaMallocAsync((void **)&d, w.n * sizeof(int), w.stream));
  CHECK(cudaMemcpyAsync(d, w.host, w.n * sizeof(int), cudaMemcpyHostToDevice, w.stream));
  increment<<<(w.n + 255) / 256, 256, 0, w.stream>>>(d, w.n);
  CHECK(cudaMemcpyAsync(w.host, d, w.n * sizeof(int), cudaMemcpyDeviceToHost, w.stream));
  CHECK(cudaFreeAsync(d, w.stream));
  CHECK(cudaStreamAddCallback(w.stream, done, &w, 0));
  CHECK(cudaStreamSynchronize(w.stream));
  int want = w.n * (w.n - 1) / 2 + w.n;

  // Zero copy: the kernel writes mapped host memory through its device pointer.
  int *mapped = NULL, *dmapped = NULL;
  CHECK(cudaHostAlloc((void **)&mapped, w.n * sizeof(int), cudaHostAllocMapped));
  for (int i = 0; i < w.n; i++) mapped[i] = 2 * i;
  CHECK(cudaHostGetDevicePointer((void **)&dmapped, mapped, 0));
  increment<<<(w.n + 255) / 256, 256>>>(dmapped, w.n);
  CHECK(cudaDeviceSynchronize());
  int bad = 0;
  for (int i = 0; i < w.n; i++) bad += mapped[i] != 2 * i + 1;

  CHECK(cudaFreeHost(mapped));
  CHECK(cudaFreeHost(w.host));
  CHECK(cudaStreamDestroy(w.stream));
  bool ok = w.statusOk && w.sum == want && bad == 0;
  printf("callback sum %d (want %d), status %s, mapped errors %d\n", w.sum, want, w.statusOk ? "ok" : "bad", bad);
  printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
