/*
 * src/gpu/comm_gpu.c - the cuda/hip backend's collectives: the NCCL/RCCL mapping of
 * src/gpu/nccl.c over this vendor's runtime (the hooks), and the health-checked wait
 * the backend's synchronising calls make before they block (gp__gpu_comm_wait).
 */
#include "gpu/gpu.h"
#include "gpu/nccl.h"

#if defined(GP_BUILD_HIP)
#define GP__NCCL_FILE "librccl.so.1"
#define GP__NCCL_VENDOR "RCCL"
#define GP__NCCL_IS_RCCL true
#else
#define GP__NCCL_FILE "libnccl.so.2"
#define GP__NCCL_VENDOR "NCCL"
#define GP__NCCL_IS_RCCL false
#endif

static void *native_stream(gp_stream_t s) { return (void *)gp__gpu_stream(s); }

static int stream_device(gp_stream_t s) { return gp__gpu_stream_device(s); }

static gp_status_t set_device(int device) {
  GP__GPU_TRY_DEV(device, gpuSetDevice, (device));
  return GP_SUCCESS;
}

static gp_status_t event_create(void **event) {
  gpuEvent_t e;
  GP__GPU_TRY(gpuEventCreateWithFlags, (&e, gpuEventDisableTiming));
  *event = (void *)e;
  return GP_SUCCESS;
}

static gp_status_t event_record(void *event, void *stream) {
  GP__GPU_TRY(gpuEventRecord, ((gpuEvent_t)event, (gpuStream_t)stream));
  return GP_SUCCESS;
}

static int event_query(void *event) {
  gpuError_t e = gpuEventQuery((gpuEvent_t)event);
  return e == gpuSuccess ? 1 : e == gpuErrorNotReady ? 0 : -1;
}

static void event_destroy(void *event) { (void)gpuEventDestroy((gpuEvent_t)event); }

static const gp__nccl_hooks_t hooks = {
    .library = GP__NCCL_FILE,
    .vendor = GP__NCCL_VENDOR,
    .rccl = GP__NCCL_IS_RCCL,
    .native_stream = native_stream,
    .stream_device = stream_device,
    .set_device = set_device,
    .event_create = event_create,
    .event_record = event_record,
    .event_query = event_query,
    .event_destroy = event_destroy,
};

/* The backend table: a forwarding copy, filled on first use (C has no constant
 * initialiser from a function's result). */
static gp_status_t fwd_unique_id(gp_comm_id_t *id) { return gp__nccl_backend(&hooks)->unique_id(id); }
static gp_status_t fwd_init(gp__comm_init_t *i, size_t n, bool all) { return gp__nccl_backend(&hooks)->init(i, n, all); }
static gp_status_t fwd_split(gp__comm_split_t *s, size_t n) { return gp__nccl_backend(&hooks)->split(s, n); }
static gp_status_t fwd_check(const gp__comm_call_t *c, const char *f) { return gp__nccl_backend(&hooks)->check(c, f); }
static gp_status_t fwd_calls(const gp__comm_call_t *c, size_t n, bool g) { return gp__nccl_backend(&hooks)->calls(c, n, g); }
static gp_status_t fwd_destroy(gp_comm_t c) { return gp__nccl_backend(&hooks)->destroy(c); }
static gp_status_t fwd_abort(gp_comm_t c) { return gp__nccl_backend(&hooks)->abort(c); }
static void fwd_poll(gp_comm_t c) { gp__nccl_backend(&hooks)->poll(c); }

const gp__comm_backend_t gp__comm_native_backend = {
    .name = GP__NCCL_IS_RCCL ? "rccl" : "nccl",
    .unique_id = fwd_unique_id,
    .init = fwd_init,
    .split = fwd_split,
    .check = fwd_check,
    .calls = fwd_calls,
    .destroy = fwd_destroy,
    .abort = fwd_abort,
    .poll = fwd_poll,
};

gp_status_t gp__gpu_comm_wait(gpuStream_t stream, int device, const char *func) {
  /* The legacy stream waits for every blocking stream: any collective of the device. */
  void *s = stream == gpuStreamLegacy ? NULL : (void *)stream;
  return gp__nccl_wait(s, device, func);
}
