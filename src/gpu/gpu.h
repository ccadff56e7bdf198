/*
 * src/gpu/gpu.h - private to the CUDA and HIP backends: the handle layouts, the one
 * native-error table's interface, and the call macro every src/gpu/ file uses.
 *
 * The same sources build for both vendors through one vendor shim, src/gpu/vendor_cuda.h
 * or src/gpu/vendor_hip.h, chosen by the backend's build macro (GP_BUILD_CUDA or
 * GP_BUILD_HIP): the gpu* names below are spelled once per vendor there, as ggml's
 * vendors/hip.h does.
 */
#ifndef GP_GPU_H
#define GP_GPU_H

#include <stdbool.h>
#include "internal.h"
#if defined(GP_BUILD_CUDA)
#include "gpu/vendor_cuda.h"
#elif defined(GP_BUILD_HIP)
#include "gpu/vendor_hip.h"
#endif

/* ---- handles ------------------------------------------------------------------ */
/* Every live stream and event is on one list, so gp_device_reset can invalidate the
 * handles of the device it resets (the native objects die with the reset). Each is a
 * reference-counted handle (internal.h "handle registry"): its finaliser destroys the
 * native object and frees it when the last call using it is done. */
typedef struct gp__gpu_node {
  struct gp__gpu_node *prev, *next;
  gp__handle_kind_t kind;
  int device;       /* the device current when the handle was created or wrapped */
  bool native_gone; /* a device reset destroyed the native object: only the wrapper is left */
} gp__gpu_node_t;

struct gp_stream_s {
  gp__gpu_node_t node; /* first: the list holds node pointers */
  gpuStream_t native;
  unsigned flags;      /* GP_STREAM_* */
  int priority;
  bool wrapped;        /* the application owns native: destroy frees the wrapper only */
};

struct gp_event_s {
  gp__gpu_node_t node;
  gpuEvent_t native;
  unsigned flags;      /* GP_EVENT_* */
  bool wrapped;
  bool recorded;       /* elapsed time needs two recorded events */
};

/* The native stream behind NULL, GP_STREAM_LEGACY, GP_STREAM_PER_THREAD or a handle. */
gpuStream_t gp__gpu_stream(gp_stream_t s);
/* The device a stream's work runs on (the current device for the default streams). */
int gp__gpu_stream_device(gp_stream_t s);
/* Retires every stream and event of device (after a native device reset). */
void gp__gpu_drop_device(int device);

/* ---- collectives ---------------------------------------------------------------- */
/* Before a synchronising call blocks: waits for the collectives on stream (the legacy
 * stream: on any stream) of device while polling their communicators' health, so a dead
 * or absent peer becomes GP_ERROR_COMM / GP_ERROR_TIMEOUT instead of a hang
 * (docs/design/COMM.md "Never a silent hang"). Free when no collective is pending. */
gp_status_t gp__gpu_comm_wait(gpuStream_t stream, int device, const char *func);

/* ---- errors ------------------------------------------------------------------- */
/* The one mapping of native error codes: the gpuport status of native, and whether it
 * is a fault of work already running (sticky: the context is lost). Unknown codes map
 * to GP_ERROR_BACKEND. Exposed for test/test_gpu_errors.c. */
gp_status_t gp__gpu_map_error(int native, bool *fault);
/* The native name of a code ("cudaErrorNoDevice"); never NULL. */
const char *gp__gpu_error_name(int native);
/* Maps err, sets the message "<public call>: <call> failed on device <d>: <name> (<text>)"
 * (device < 0: no device named), raises faults as the device's sticky asynchronous
 * error, returns the status. */
gp_status_t gp__gpu_fail(gpuError_t err, int device, const char *func, const char *call);
/* GP__ERR for src/gpu/: the message names the public call (gp_malloc), not gp__be_malloc. */
gp_status_t gp__gpu_error(gp_status_t status, const char *func, const char *fmt, ...) GP__PRINTF(3, 4);
#define GP__GPU_ERR(status, ...) gp__gpu_error((status), __func__, __VA_ARGS__)

#define GP__GPU_STR2(x) #x
#define GP__GPU_STR(x) GP__GPU_STR2(x) /* expands the shim name to the native one */

/* Calls fn args; on failure returns gp__gpu_fail's status from the enclosing function,
 * the message naming the native function. */
#define GP__GPU_TRY_NAMED(dev, name, call)                                                \
  do {                                                                                    \
    gpuError_t gp__e_ = (call);                                                           \
    if (gp__e_ != gpuSuccess) return gp__gpu_fail(gp__e_, (dev), __func__, (name));       \
  } while (0)
#define GP__GPU_TRY_DEV(dev, fn, args) GP__GPU_TRY_NAMED(dev, GP__GPU_STR(fn), fn args)
#define GP__GPU_TRY(fn, args) GP__GPU_TRY_DEV(gp__current_device(), fn, args)

#endif /* GP_GPU_H */
