/*
 * src/gpu/launch.c - kernel launch and host work on the CUDA and HIP backends.
 *
 * A kernel's descriptor carries gpu_entry, the handle cudaLaunchKernel/hipLaunchKernel
 * expect (on HIP-Clang the handle variable, not the stub: KERNELS.md "Launching from
 * plain C"). A fault of a running kernel surfaces at the next synchronisation, where
 * gp__gpu_fail raises it as the device's sticky asynchronous error.
 */
#include <stdio.h>
#include <stdlib.h>
#include "gpu/gpu.h"

static const char *gp__gpu_backend_name(int backend) {
  static const char *const names[] = {"cpu", "cuda", "hip"};
  return backend >= 0 && backend < 3 ? names[backend] : "unknown";
}

/* A kernel built for another backend (or without a GPU entry) cannot run here. */
static gp_status_t gp__gpu_check_kernel(gp_kernel_t k, const char *func) {
  if (k->backend == GP__BACKEND && k->gpu_entry != NULL) return GP_SUCCESS;
  return gp__gpu_error(GP_ERROR_INVALID_IMAGE, func,
                       "kernel '%s' was built for the %s backend, this library is %s",
                       k->name ? k->name : "?", gp__gpu_backend_name(k->backend),
                       GP__GPU_VENDOR);
}

gp_status_t gp__be_launch(gp_kernel_t kernel, gp_dim3_t grid, gp_dim3_t block,
                          size_t dynamic_shared, gp_stream_t stream, void **args) {
  GP__TRY(gp__gpu_check_kernel(kernel, __func__));
  dim3 g = {grid.x, grid.y, grid.z}, b = {block.x, block.y, block.z};
  char call[160];
  snprintf(call, sizeof(call), "%s of kernel '%s'", GP__GPU_STR(gpuLaunchKernel), kernel->name);
  GP__GPU_TRY_NAMED(gp__gpu_stream_device(stream), call,
                    gpuLaunchKernel(kernel->gpu_entry, g, b, args, dynamic_shared,
                                    gp__gpu_stream(stream)));
  return GP_SUCCESS;
}

gp_status_t gp__be_launch_ex(gp_kernel_t kernel, const gp_launch_config_t *c, gp_stream_t stream,
                             void **args) {
  GP__TRY(gp__gpu_check_kernel(kernel, __func__));
  dim3 g = {c->grid.x, c->grid.y, c->grid.z}, b = {c->block.x, c->block.y, c->block.z};
  int dev = gp__gpu_stream_device(stream);
  char call[160];
#ifdef GP__GPU_HAVE_LAUNCH_EX
  if (c->cluster.x > 1 || c->cluster.y > 1 || c->cluster.z > 1) {
    snprintf(call, sizeof(call), "cudaLaunchKernelExC of kernel '%s'", kernel->name);
    GP__GPU_TRY_NAMED(dev, call,
                      gpu_launch_ex(kernel->gpu_entry, g, b, c->dynamic_shared_bytes, gp__gpu_stream(stream),
                                    args, c->cooperative, c->cluster.x ? c->cluster.x : 1,
                                    c->cluster.y ? c->cluster.y : 1, c->cluster.z ? c->cluster.z : 1));
    return GP_SUCCESS;
  }
#endif
  if (!c->cooperative)
    return gp__be_launch(kernel, c->grid, c->block, c->dynamic_shared_bytes, stream, args);
  snprintf(call, sizeof(call), "%s of kernel '%s'", GP__GPU_STR(gpuLaunchCooperativeKernel), kernel->name);
  GP__GPU_TRY_NAMED(dev, call,
                    gpuLaunchCooperativeKernel(kernel->gpu_entry, g, b, args,
                                               (unsigned)c->dynamic_shared_bytes, gp__gpu_stream(stream)));
  return GP_SUCCESS;
}

gp_status_t gp__be_occupancy_max_active_blocks(int *blocks, gp_kernel_t kernel, int block_threads,
                                               size_t dynamic_shared) {
  GP__TRY(gp__gpu_check_kernel(kernel, __func__));
  int n = 0;
  GP__GPU_TRY(gpuOccupancyMaxActiveBlocksPerMultiprocessor,
              (&n, kernel->gpu_entry, block_threads, dynamic_shared));
  *blocks = n;
  return GP_SUCCESS;
}

gp_status_t gp__be_kernel_set_max_dynamic_shared(gp_kernel_t kernel, size_t bytes) {
  GP__TRY(gp__gpu_check_kernel(kernel, __func__));
  char call[160];
  snprintf(call, sizeof(call), "%s of kernel '%s'", GP__GPU_STR(gpuFuncSetAttribute), kernel->name);
  GP__GPU_TRY_NAMED(gp__current_device(), call,
                    gpuFuncSetAttribute(kernel->gpu_entry, gpuFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)bytes));
  return GP_SUCCESS;
}

/* ---- host work: a host callback that owns its record ----------------------------- */
typedef struct gp__gpu_host_work {
  gp__host_work_fn fn;
  void *user;
  bool free_user;
  int device;
} gp__gpu_host_work_t;

static void gp__gpu_host_work_run(void *p) {
  gp__gpu_host_work_t *w = p;
  gp_status_t s = w->fn(w->user);
  if (s != GP_SUCCESS)
    gp__async_error_raise(w->device, s, "host work enqueued on a stream of device %d failed: %s",
                          w->device, gp_status_name(s));
  if (w->free_user) free(w->user);
  free(w);
}

gp_status_t gp__be_enqueue_host_work(gp_stream_t stream, gp__host_work_fn fn, void *user,
                                     bool free_user) {
  gp__gpu_host_work_t *w = malloc(sizeof(*w));
  if (!w) {
    if (free_user) free(user);
    return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for host work");
  }
  w->fn = fn;
  w->user = user;
  w->free_user = free_user;
  w->device = gp__gpu_stream_device(stream);
  gpuError_t e = gpuLaunchHostFunc(gp__gpu_stream(stream), gp__gpu_host_work_run, w);
  if (e != gpuSuccess) { /* dropped: the work will never run */
    if (free_user) free(user);
    free(w);
    return gp__gpu_fail(e, gp__gpu_stream_device(stream), __func__, gpuLaunchHostFuncName);
  }
  return GP_SUCCESS;
}
