/*
 * kt_template.cu - kernel templates for test/test_dialect.c: a block reduction over the
 * block sizes the CUDA samples' reduction switches over, exported to C as instances and
 * launched from C++ host code with GP_LAUNCH((reduce<T, B>), ...) without an export;
 * `static __global__` and `__global__ static` kernels; a kernel defined in a header
 * included by this file and by kt_template2.cu.
 */
#include <gpuport/kernel.h>
#include "kt_template.cuh"

/* out[blockIdx.x] = sum of the block's B elements of in (0 past n), B threads a block,
 * a tree in shared memory down to one warp, then the warp's shuffles. */
template <class T, unsigned B> GP_KERNEL_TEMPLATE void kt_reduce(const T *in, T *out, int n) {
  GP_SHARED(T, buf, [B]);
  const unsigned t = threadIdx.x;
  const int i = (int)(blockIdx.x * B + t);
  buf[t] = i < n ? in[i] : (T)0;
  __syncthreads();
  for (unsigned s = B / 2; s >= (unsigned)GP_WARP_SIZE; s /= 2) {
    if (t < s) buf[t] += buf[t + s];
    __syncthreads();
  }
  if (t < (unsigned)GP_WARP_SIZE && t < B) {
    /* A block smaller than a warp shuffles within its own lanes (width B). */
    const int w = B < GP_WARP_SIZE ? (int)B : GP_WARP_SIZE;
    T v = buf[t];
    for (int o = w / 2; o > 0; o /= 2) v += gp_shfl_down(v, (unsigned)o, w);
    if (t == 0) out[blockIdx.x] = v;
  }
}
GP_KERNEL_EXPORT_INSTANCE(kt_reduce_f32_256, kt_reduce<float, 256>)
GP_KERNEL_EXPORT_INSTANCE(kt_reduce_i32_64, kt_reduce<int, 64>)

/* out[i] = i * k for one block. */
static __global__ void kt_static_first(int *out, int k) { out[threadIdx.x] = (int)threadIdx.x * k; }
__global__ static void kt_static_second(int *out, int k) { out[threadIdx.x] = (int)threadIdx.x * k + 1; }
GP_KERNEL_EXPORT(kt_static_first)

/* The host side of the samples' reduction: one launch per block size, chosen at run
 * time by a switch over the template's instances; returns the launch's status. */
template <class T> static gp_status_t kt_reduce_switch(unsigned threads, const T *in, T *out, int n) {
  const unsigned blocks = (unsigned)((n + (int)threads - 1) / (int)threads);
  switch (threads) {
  case 1024: return GP_LAUNCH((kt_reduce<T, 1024>), blocks, 1024, 0, NULL, in, out, n);
  case 512: return GP_LAUNCH((kt_reduce<T, 512>), blocks, 512, 0, NULL, in, out, n);
  case 256: return GP_LAUNCH((kt_reduce<T, 256>), blocks, 256, 0, NULL, in, out, n);
  case 128: return GP_LAUNCH((kt_reduce<T, 128>), blocks, 128, 0, NULL, in, out, n);
  case 64: return GP_LAUNCH((kt_reduce<T, 64>), blocks, 64, 0, NULL, in, out, n);
  case 32: return GP_LAUNCH((kt_reduce<T, 32>), blocks, 32, 0, NULL, in, out, n);
  case 16: return GP_LAUNCH((kt_reduce<T, 16>), blocks, 16, 0, NULL, in, out, n);
  case 8: return GP_LAUNCH((kt_reduce<T, 8>), blocks, 8, 0, NULL, in, out, n);
  case 4: return GP_LAUNCH((kt_reduce<T, 4>), blocks, 4, 0, NULL, in, out, n);
  case 2: return GP_LAUNCH((kt_reduce<T, 2>), blocks, 2, 0, NULL, in, out, n);
  case 1: return GP_LAUNCH((kt_reduce<T, 1>), blocks, 1, 0, NULL, in, out, n);
  default: return GP_ERROR_INVALID_VALUE;
  }
}

/* C entry points of the host code (one set per warp-width build). */
extern "C" gp_status_t GP__CAT(kt_reduce_switch_f32, GP_KERNEL_SUFFIX)(unsigned threads, const float *in,
                                                                      float *out, int n) {
  return kt_reduce_switch<float>(threads, in, out, n);
}
extern "C" gp_status_t GP__CAT(kt_reduce_switch_i32, GP_KERNEL_SUFFIX)(unsigned threads, const int *in,
                                                                      int *out, int n) {
  return kt_reduce_switch<int>(threads, in, out, n);
}
/* The static kernels and the header's kernel, launched with GP_LAUNCH (the first one has
 * an export, the others none); out gets 3 x 32 ints. */
extern "C" gp_status_t GP__CAT(kt_launch_statics, GP_KERNEL_SUFFIX)(int *out, int k) {
  gp_status_t s = GP_LAUNCH(kt_static_first, 1, 32, 0, NULL, out, k);
  if (s == GP_SUCCESS) s = GP_LAUNCH(kt_static_second, 1, 32, 0, NULL, out + 32, k);
  if (s == GP_SUCCESS) s = GP_LAUNCH(kt_header_kernel, 1, 32, 0, NULL, out + 64, k);
  return s;
}
/* The descriptor GP_LAUNCH uses for kt_reduce<float, 256> (the exported one) and for
 * kt_reduce<float, 128> (made for the launch). */
extern "C" gp_kernel_t GP__CAT(kt_reduce_desc_256, GP_KERNEL_SUFFIX)(void) {
  return gp__kdesc<&kt_reduce<float, 256>>::get();
}
extern "C" gp_kernel_t GP__CAT(kt_reduce_desc_128, GP_KERNEL_SUFFIX)(void) {
  return gp__kdesc<&kt_reduce<float, 128>>::get();
}
