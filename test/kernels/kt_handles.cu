/*
 * kt_handles.cu - the kernel test/test_handles.c launches while other threads destroy
 * the handles the launches use: one counter incremented once per launch, by thread 0
 * of block 0. No barrier and no warp operation, so every block runs plainly on its
 * executor thread, never as fibers (the ThreadSanitizer build of that suite cannot
 * follow a fiber switch).
 */
#include <gpuport/kernel.h>

GP_KERNEL void kt_handles_count(unsigned *counter) {
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(counter, 1u);
}
GP_KERNEL_EXPORT(kt_handles_count)
