/*
 * nccl.h - the NCCL/RCCL mapping's interface (src/gpu/nccl.c). The mapping itself is
 * vendor-neutral: what it needs from the runtime (native streams, events, the device)
 * comes through these hooks, filled from src/gpu/vendor_cuda.h or src/gpu/vendor_hip.h by
 * src/gpu/comm_gpu.c, and by fakes in test/test_comm_nccl.c, which links nccl.c's object
 * (built with the cpu backend's flags: it needs no vendor header) against a mock
 * libnccl.so.2 so CI checks the mapping without a GPU (docs/design/COMM.md "NCCL and
 * RCCL").
 */
#ifndef GP_NCCL_H
#define GP_NCCL_H

#include "comm.h"

typedef struct gp__nccl_hooks {
  const char *library; /* the file dlopen'ed by default: "libnccl.so.2", "librccl.so.1" */
  const char *vendor;  /* "NCCL", "RCCL": for messages */
  bool rccl;           /* RCCL: ncclAllToAll, no OCP fp8 reductions */
  /* The native stream (cudaStream_t / hipStream_t) of a resolved gpuport stream. */
  void *(*native_stream)(gp_stream_t s);
  /* The device a resolved stream's work runs on. */
  int (*stream_device)(gp_stream_t s);
  /* Makes device current for the native runtime (NCCL reads it at initialisation). */
  gp_status_t (*set_device)(int device);
  gp_status_t (*event_create)(void **event);
  gp_status_t (*event_record)(void *event, void *native_stream);
  int (*event_query)(void *event); /* 1 complete, 0 not yet, < 0 failed (counted complete) */
  void (*event_destroy)(void *event);
} gp__nccl_hooks_t;

/* The backend table over hooks (kept by pointer; set before the first communicator). */
const gp__comm_backend_t *gp__nccl_backend(const gp__nccl_hooks_t *hooks);

/* Health-checked wait: returns once every collective enqueued on native_stream (NULL:
 * on any stream) of device has completed, polling ncclCommGetAsyncError and each
 * communicator's deadline meanwhile (sleeping between polls, 20 us growing to 1 ms). A
 * failed or late communicator is aborted and its error returned (GP_ERROR_COMM,
 * GP_ERROR_TIMEOUT) with the message set. Free when no collective is pending. */
gp_status_t gp__nccl_wait(void *native_stream, int device, const char *func);

/* The test seam (test/test_comm_nccl.c), internal like the rest: */
/* Forgets the loaded library, so the next communicator loads it again (GP_NCCL_LIBRARY,
 * the mock's version knob); the handle stays open (an abort left running may use it). */
void gp__nccl_forget_library(void);
/* The loaded library's version as ncclGetVersion gives it (22803), 0 when none is loaded. */
int gp__nccl_library_version(void);
/* Collectives enqueued on every communicator and not yet seen complete. */
int gp__nccl_pending(void);

#endif /* GP_NCCL_H */
