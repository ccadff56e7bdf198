/*
 * histogram.cu - a 256-bin histogram of bytes with shared-memory atomics.
 *
 * Decomposition
 *   grid   a few blocks per multiprocessor; each counts a grid-stride share of data.
 *   block  any size: the block clears its shared histogram, counts its bytes into it
 *          with atomicAdd on shared memory, meets at a barrier, and adds each nonzero
 *          bin to the global histogram with one global atomicAdd.
 */
#include <gpuport/kernel.h>

#define NUM_BINS 256

GP_KERNEL void histogram_shared(int n, const unsigned char *data, unsigned *bins) {
  GP_SHARED(unsigned, local, [NUM_BINS]);
  for (unsigned i = threadIdx.x; i < NUM_BINS; i += blockDim.x) local[i] = 0;
  __syncthreads();
  for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += (int)(gridDim.x * blockDim.x))
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (unsigned i = threadIdx.x; i < NUM_BINS; i += blockDim.x)
    if (local[i]) atomicAdd(&bins[i], local[i]);
}
GP_KERNEL_EXPORT(histogram_shared)
