/*
 * kt_template2.cu - the second source that includes kt_template.cuh (its kernel links
 * twice without a duplicate descriptor), and launches it and a template instance that
 * kt_template.cu launches too.
 */
#include <gpuport/kernel.h>
#include "kt_template.cuh"

template <class T> GP_KERNEL_TEMPLATE void kt_fill(T *out, T v) { out[threadIdx.x] = v + (T)threadIdx.x; }

extern "C" gp_status_t GP__CAT(kt_launch_header2, GP_KERNEL_SUFFIX)(int *out, int k) {
  gp_status_t s = GP_LAUNCH(kt_header_kernel, 1, 32, 0, NULL, out, k);
  if (s == GP_SUCCESS) s = GP_LAUNCH((kt_fill<int>), dim3(1), dim3(32), 0, NULL, out + 32, k);
  return s;
}
