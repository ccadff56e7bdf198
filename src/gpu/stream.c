/*
 * src/gpu/stream.c - streams, events and host callbacks on the CUDA and HIP backends,
 * and the list of live handles that gp_device_reset retires.
 *
 * NULL and GP_STREAM_LEGACY are the legacy default stream (cudaStreamLegacy; HIP's
 * null stream), GP_STREAM_PER_THREAD the per-thread default stream (cudaStreamPerThread,
 * hipStreamPerThread).
 */
#include <pthread.h>
#include <stdlib.h>
#include "gpu/gpu.h"

/* ---- live handles --------------------------------------------------------------- */
static pthread_mutex_t gp__gpu_live_lock = PTHREAD_MUTEX_INITIALIZER;
static gp__gpu_node_t gp__gpu_live = {&gp__gpu_live, &gp__gpu_live, GP__H_STREAM, -1};

/* Registers a new handle (its node is its first member, so both share an address). */
static gp_status_t gp__gpu_track(gp__gpu_node_t *n, gp__handle_kind_t kind) {
  n->kind = kind;
  n->device = gp__current_device();
  GP__TRY(gp__handle_add(n, kind));
  pthread_mutex_lock(&gp__gpu_live_lock);
  n->prev = &gp__gpu_live;
  n->next = gp__gpu_live.next;
  gp__gpu_live.next->prev = n;
  gp__gpu_live.next = n;
  pthread_mutex_unlock(&gp__gpu_live_lock);
  return GP_SUCCESS;
}

static void gp__gpu_untrack(gp__gpu_node_t *n) {
  (void)gp__handle_remove(n, n->kind);
  pthread_mutex_lock(&gp__gpu_live_lock);
  n->prev->next = n->next;
  n->next->prev = n->prev;
  pthread_mutex_unlock(&gp__gpu_live_lock);
}

void gp__gpu_drop_device(int device) {
  pthread_mutex_lock(&gp__gpu_live_lock);
  gp__gpu_node_t *n = gp__gpu_live.next;
  while (n != &gp__gpu_live) {
    gp__gpu_node_t *next = n->next;
    if (n->device == device) {
      (void)gp__handle_remove(n, n->kind);
      n->prev->next = n->next;
      n->next->prev = n->prev;
      free(n);
    }
    n = next;
  }
  pthread_mutex_unlock(&gp__gpu_live_lock);
}

/* ---- streams -------------------------------------------------------------------- */
gpuStream_t gp__gpu_stream(gp_stream_t s) {
  if (s == NULL || s == GP_STREAM_LEGACY) return gpuStreamLegacy;
  if (s == GP_STREAM_PER_THREAD) return gpuStreamPerThread;
  return s->native;
}

int gp__gpu_stream_device(gp_stream_t s) {
  if (s == NULL || s == GP_STREAM_LEGACY || s == GP_STREAM_PER_THREAD)
    return gp__current_device();
  return s->node.device;
}

gp_status_t gp__be_stream_create(gp_stream_t *stream, unsigned flags, int priority) {
  struct gp_stream_s *s = calloc(1, sizeof(*s));
  if (!s) return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for a stream");
  unsigned native_flags = (flags & GP_STREAM_NON_BLOCKING) ? gpuStreamNonBlocking : gpuStreamDefault;
  gpuError_t e = gpuStreamCreateWithPriority(&s->native, native_flags, priority);
  if (e != gpuSuccess) {
    free(s);
    return gp__gpu_fail(e, gp__current_device(), __func__,
                        GP__GPU_STR(gpuStreamCreateWithPriority));
  }
  s->flags = flags;
  s->priority = priority;
  gp_status_t st = gp__gpu_track(&s->node, GP__H_STREAM);
  if (st != GP_SUCCESS) {
    (void)gpuStreamDestroy(s->native);
    free(s);
    return st;
  }
  *stream = s;
  return GP_SUCCESS;
}

gp_status_t gp__be_stream_destroy(gp_stream_t s) {
  gp__gpu_untrack(&s->node);
  gpuError_t e = s->wrapped ? gpuSuccess : gpuStreamDestroy(s->native);
  int device = s->node.device;
  free(s);
  if (e != gpuSuccess) return gp__gpu_fail(e, device, __func__, GP__GPU_STR(gpuStreamDestroy));
  return GP_SUCCESS;
}

gp_status_t gp__be_stream_synchronize(gp_stream_t s) {
  GP__TRY(gp__gpu_comm_wait(gp__gpu_stream(s), gp__gpu_stream_device(s), "gp_stream_synchronize"));
  GP__GPU_TRY_DEV(gp__gpu_stream_device(s), gpuStreamSynchronize, (gp__gpu_stream(s)));
  return GP_SUCCESS;
}

gp_status_t gp__be_stream_query(gp_stream_t s) {
  gpuError_t e = gpuStreamQuery(gp__gpu_stream(s));
  if (e == gpuErrorNotReady) return GP_ERROR_NOT_READY; /* not a failure: no message */
  if (e != gpuSuccess)
    return gp__gpu_fail(e, gp__gpu_stream_device(s), __func__, GP__GPU_STR(gpuStreamQuery));
  return GP_SUCCESS;
}

gp_status_t gp__be_stream_wait_event(gp_stream_t s, gp_event_t event) {
  GP__GPU_TRY_DEV(gp__gpu_stream_device(s), gpuStreamWaitEvent,
                  (gp__gpu_stream(s), event->native, 0));
  return GP_SUCCESS;
}

gp_status_t gp__be_launch_host_func(gp_stream_t s, void (*fn)(void *), void *user) {
  GP__GPU_TRY_NAMED(gp__gpu_stream_device(s), gpuLaunchHostFuncName,
                    gpuLaunchHostFunc(gp__gpu_stream(s), fn, user));
  return GP_SUCCESS;
}

void *gp__be_stream_native(gp_stream_t s) { return (void *)gp__gpu_stream(s); }

gp_status_t gp__be_stream_wrap(gp_stream_t *stream, void *native) {
  struct gp_stream_s *s = calloc(1, sizeof(*s));
  if (!s) return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for a stream wrapper");
  s->native = (gpuStream_t)native;
  s->wrapped = true;
  gp_status_t st = gp__gpu_track(&s->node, GP__H_STREAM);
  if (st != GP_SUCCESS) {
    free(s);
    return st;
  }
  *stream = s;
  return GP_SUCCESS;
}

/* ---- events --------------------------------------------------------------------- */
gp_status_t gp__be_event_create(gp_event_t *event, unsigned flags) {
  struct gp_event_s *ev = calloc(1, sizeof(*ev));
  if (!ev) return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for an event");
  unsigned native_flags = gpuEventDefault;
  if (flags & GP_EVENT_BLOCKING_SYNC) native_flags |= gpuEventBlockingSync;
  if (flags & GP_EVENT_DISABLE_TIMING) native_flags |= gpuEventDisableTiming;
  gpuError_t e = gpuEventCreateWithFlags(&ev->native, native_flags);
  if (e != gpuSuccess) {
    free(ev);
    return gp__gpu_fail(e, gp__current_device(), __func__, GP__GPU_STR(gpuEventCreateWithFlags));
  }
  ev->flags = flags;
  gp_status_t st = gp__gpu_track(&ev->node, GP__H_EVENT);
  if (st != GP_SUCCESS) {
    (void)gpuEventDestroy(ev->native);
    free(ev);
    return st;
  }
  *event = ev;
  return GP_SUCCESS;
}

gp_status_t gp__be_event_destroy(gp_event_t ev) {
  gp__gpu_untrack(&ev->node);
  gpuError_t e = ev->wrapped ? gpuSuccess : gpuEventDestroy(ev->native);
  int device = ev->node.device;
  free(ev);
  if (e != gpuSuccess) return gp__gpu_fail(e, device, __func__, GP__GPU_STR(gpuEventDestroy));
  return GP_SUCCESS;
}

gp_status_t gp__be_event_record(gp_event_t ev, gp_stream_t s) {
  GP__GPU_TRY_DEV(gp__gpu_stream_device(s), gpuEventRecord, (ev->native, gp__gpu_stream(s)));
  ev->recorded = true;
  return GP_SUCCESS;
}

gp_status_t gp__be_event_synchronize(gp_event_t ev) {
  GP__TRY(gp__gpu_comm_wait(gpuStreamLegacy, ev->node.device, "gp_event_synchronize"));
  GP__GPU_TRY_DEV(ev->node.device, gpuEventSynchronize, (ev->native));
  return GP_SUCCESS;
}

gp_status_t gp__be_event_query(gp_event_t ev) {
  gpuError_t e = gpuEventQuery(ev->native);
  if (e == gpuErrorNotReady) return GP_ERROR_NOT_READY; /* not a failure: no message */
  if (e != gpuSuccess) return gp__gpu_fail(e, ev->node.device, __func__, GP__GPU_STR(gpuEventQuery));
  return GP_SUCCESS;
}

gp_status_t gp__be_event_elapsed_ms(float *ms, gp_event_t start, gp_event_t end) {
  /* The runtimes say "invalid handle" for these; the API says invalid value. */
  if ((start->flags | end->flags) & GP_EVENT_DISABLE_TIMING)
    return GP__GPU_ERR(GP_ERROR_INVALID_VALUE, "an event was created with GP_EVENT_DISABLE_TIMING");
  if (!start->recorded || !end->recorded)
    return GP__GPU_ERR(GP_ERROR_INVALID_VALUE, "argument '%s' was never recorded",
                       start->recorded ? "end" : "start");
  gpuError_t e = gpuEventElapsedTime(ms, start->native, end->native);
  if (e == gpuErrorNotReady) return GP_ERROR_NOT_READY;
  if (e != gpuSuccess)
    return gp__gpu_fail(e, end->node.device, __func__, GP__GPU_STR(gpuEventElapsedTime));
  return GP_SUCCESS;
}

void *gp__be_event_native(gp_event_t ev) { return (void *)ev->native; }

gp_status_t gp__be_event_wrap(gp_event_t *event, void *native) {
  struct gp_event_s *ev = calloc(1, sizeof(*ev));
  if (!ev) return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for an event wrapper");
  ev->native = (gpuEvent_t)native;
  ev->wrapped = true;
  ev->recorded = true; /* unknown: let the native runtime judge */
  gp_status_t st = gp__gpu_track(&ev->node, GP__H_EVENT);
  if (st != GP_SUCCESS) {
    free(ev);
    return st;
  }
  *event = ev;
  return GP_SUCCESS;
}
