/*
 * src/gpu/launch.c - kernel launch and host work on the CUDA and HIP backends.
 *
 * A kernel's descriptor carries gpu_entry, the handle cudaLaunchKernel/hipLaunchKernel
 * expect (on HIP-Clang the handle variable, not the stub: docs/design/KERNELS.md
 * "Launching from C"). A fault of a running kernel surfaces at the next synchronisation, where
 * gp__gpu_fail raises it as the device's sticky asynchronous error.
 *
 * GP_LAUNCH_TIMEOUT_S (the cpu backend's launch watchdog) has no effect here: a kernel
 * running on a GPU cannot be stopped without destroying its context. The driver's own
 * watchdog (on a GPU that drives a display: cudaDevAttrKernelExecTimeout) ends a kernel
 * after a few seconds with cudaErrorLaunchTimeout / hipErrorLaunchTimeOut, which map to
 * GP_ERROR_TIMEOUT, sticky like every fault (src/gpu/errors.c).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Says once that GP_LAUNCH_TIMEOUT_S is the cpu backend's. */
static void gp__gpu_note_launch_timeout(void) {
  static int noted;
  if (__atomic_load_n(&noted, __ATOMIC_RELAXED)) return;
  const char *e = getenv("GP_LAUNCH_TIMEOUT_S");
  if (e && *e && !__atomic_exchange_n(&noted, 1, __ATOMIC_RELAXED))
    GP__WARN(GP__SUB_LAUNCH,
             "GP_LAUNCH_TIMEOUT_S=%s has no effect on the %s backend (a running kernel cannot be stopped "
             "there); the driver's watchdog, where it runs, reports GP_ERROR_TIMEOUT",
             e, GP__GPU_VENDOR);
}

gp_status_t gp__be_launch(gp_kernel_t kernel, gp_dim3_t grid, gp_dim3_t block,
                          size_t dynamic_shared, gp_stream_t stream, void **args) {
  GP__TRY(gp__gpu_check_kernel(kernel, __func__));
  gp__gpu_note_launch_timeout();
  dim3 g = {grid.x, grid.y, grid.z}, b = {block.x, block.y, block.z};
  char call[160];
  bool module = (kernel->flags & GP__KFLAG_MODULE) != 0; /* from gpuport/module.h */
  snprintf(call, sizeof(call), "%s of kernel '%s'",
           module ? gpuModuleLaunchName : GP__GPU_STR(gpuLaunchKernel), kernel->name);
  gpuError_t e = module ? gpuModuleLaunch(kernel->gpu_entry, g, b, args, dynamic_shared,
                                          gp__gpu_stream(stream))
                        : gpuLaunchKernel(kernel->gpu_entry, g, b, args, dynamic_shared,
                                          gp__gpu_stream(stream));
  if (e != gpuSuccess) return gp__gpu_fail(e, gp__gpu_stream_device(stream), __func__, call);
  return GP_SUCCESS;
}

gp_status_t gp__be_launch_ex(gp_kernel_t kernel, const gp_launch_config_t *c, gp_stream_t stream,
                             void **args) {
  GP__TRY(gp__gpu_check_kernel(kernel, __func__));
  gp__gpu_note_launch_timeout();
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

int gp__be_kernel_warp_size(gp_kernel_t kernel) { return kernel->warp_size; }

gp_status_t gp__be_kernel_set_max_dynamic_shared(gp_kernel_t kernel, size_t bytes) {
  GP__TRY(gp__gpu_check_kernel(kernel, __func__));
  char call[160];
  snprintf(call, sizeof(call), "%s of kernel '%s'", GP__GPU_STR(gpuFuncSetAttribute), kernel->name);
  gpuError_t e = (kernel->flags & GP__KFLAG_MODULE)
                     ? gpuModuleSetMaxDynamicShared(kernel->gpu_entry, (int)bytes)
                     : gpuFuncSetAttribute(kernel->gpu_entry,
                                           gpuFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  if (e != gpuSuccess) return gp__gpu_fail(e, gp__current_device(), __func__, call);
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

/* ---- host work in a capture: owned by the graph, run from a fresh copy each launch --- */
/* internal.h: a captured record runs at every launch of the graph, each time from a copy
 * of the record as captured; the graph frees it (a user object: after the last launch
 * of the last executable graph that holds it). */
typedef struct gp__gpu_captured_work {
  gp__host_work_fn fn;
  void *user;   /* as captured */
  size_t bytes; /* free_user: its size, copied at each launch */
  bool free_user;
  int device;
} gp__gpu_captured_work_t;

static void gp__gpu_captured_work_run(void *p) {
  gp__gpu_captured_work_t *w = p;
  void *copy = w->user;
  if (w->free_user) {
    copy = malloc(w->bytes ? w->bytes : 1);
    if (copy == NULL) {
      gp__async_error_raise(w->device, GP_ERROR_OUT_OF_MEMORY,
                            "no host memory to run captured host work");
      return;
    }
    memcpy(copy, w->user, w->bytes);
  }
  gp_status_t s = w->fn(copy);
  if (s != GP_SUCCESS)
    gp__async_error_raise(w->device, s, "host work captured on a stream of device %d failed: %s",
                          w->device, gp_status_name(s));
  if (w->free_user) free(copy);
}

#ifdef GP__GPU_USER_OBJECTS
static void gp__gpu_captured_work_free(void *p) {
  gp__gpu_captured_work_t *w = p;
  if (w->free_user) free(w->user);
  free(w);
}
#endif

static gp_status_t gp__gpu_capture_host_work(gp_stream_t stream, gp__host_work_fn fn, void *user,
                                             bool free_user) {
  int dev = gp__gpu_stream_device(stream);
#ifdef GP__GPU_USER_OBJECTS
  gp__gpu_captured_work_t *w = malloc(sizeof(*w));
  if (!w) {
    if (free_user) free(user);
    return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for host work");
  }
  w->fn = fn;
  w->user = user;
  w->bytes = free_user ? malloc_usable_size(user) : 0;
  w->free_user = free_user;
  w->device = dev;
  gpuGraph_t g = NULL;
  gpuError_t e = gpuStreamCaptureGraph(gp__gpu_stream(stream), &g);
  if (e != gpuSuccess) {
    gp__gpu_captured_work_free(w);
    return gp__gpu_fail(e, dev, __func__, gpuStreamCaptureGraphName);
  }
  /* From here the graph owns w (and frees it on failure too). */
  if ((e = gpuGraphOwn(g, w, gp__gpu_captured_work_free)) != gpuSuccess)
    return gp__gpu_fail(e, dev, __func__, "the graph's user object");
  GP__GPU_TRY_NAMED(dev, gpuLaunchHostFuncName,
                    gpuLaunchHostFunc(gp__gpu_stream(stream), gp__gpu_captured_work_run, w));
  return GP_SUCCESS;
#else
  (void)fn;
  (void)dev;
  (void)gp__gpu_captured_work_run;
  if (free_user) free(user);
  return GP__GPU_ERR(GP_ERROR_NOT_SUPPORTED,
                     "host work cannot be captured with this HIP runtime (no hipUserObjectCreate "
                     "before ROCm 6)");
#endif
}

gp_status_t gp__be_enqueue_host_work(gp_stream_t stream, gp__host_work_fn fn, void *user,
                                     bool free_user) {
  gpuStreamCaptureStatus cs = gpuStreamCaptureStatusNone;
  if (gpuStreamIsCapturing(gp__gpu_stream(stream), &cs) != gpuSuccess) {
    (void)gpuGetLastError(); /* the enqueue below reports what is wrong with the stream */
    cs = gpuStreamCaptureStatusNone;
  }
  if (cs != gpuStreamCaptureStatusNone) return gp__gpu_capture_host_work(stream, fn, user, free_user);
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
