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
static gp__gpu_node_t gp__gpu_live = {&gp__gpu_live, &gp__gpu_live, GP__H_STREAM, -1, false};

/* Registers a new handle (its node is its first member, so both share an address). */
static gp_status_t gp__gpu_track(gp__gpu_node_t *n, gp__handle_kind_t kind, gp__handle_fini_t fini) {
  n->kind = kind;
  n->device = gp__current_device();
  n->native_gone = false;
  pthread_mutex_lock(&gp__gpu_live_lock);
  n->prev = &gp__gpu_live;
  n->next = gp__gpu_live.next;
  gp__gpu_live.next->prev = n;
  gp__gpu_live.next = n;
  pthread_mutex_unlock(&gp__gpu_live_lock);
  gp_status_t st = gp__handle_add(n, kind, fini);
  if (st != GP_SUCCESS) {
    pthread_mutex_lock(&gp__gpu_live_lock);
    n->prev->next = n->next;
    n->next->prev = n->prev;
    pthread_mutex_unlock(&gp__gpu_live_lock);
  }
  return st;
}

static void gp__gpu_untrack(gp__gpu_node_t *n) {
  pthread_mutex_lock(&gp__gpu_live_lock);
  n->prev->next = n->next;
  n->next->prev = n->prev;
  pthread_mutex_unlock(&gp__gpu_live_lock);
}

/* A live handle of device with a reference taken, or NULL (the lock is not held when
 * the caller kills it: the finaliser takes it). The native object died with the reset. */
static gp__gpu_node_t *next_of_device(int device) {
  gp__gpu_node_t *found = NULL;
  pthread_mutex_lock(&gp__gpu_live_lock);
  for (gp__gpu_node_t *n = gp__gpu_live.next; n != &gp__gpu_live && !found; n = n->next)
    if (n->device == device && gp__handle_acquire(n, n->kind)) {
      n->native_gone = true;
      found = n;
    }
  pthread_mutex_unlock(&gp__gpu_live_lock);
  return found;
}

void gp__gpu_drop_device(int device) {
  for (gp__gpu_node_t *n; (n = next_of_device(device)) != NULL;) {
    (void)gp__handle_kill(n, n->kind, NULL);
    (void)gp__handle_release(n);
  }
}

/* ---- finalisers (the last reference of a handle went) ------------------------------ */
static gp_status_t stream_fini(void *h) {
  struct gp_stream_s *s = h;
  gp__gpu_untrack(&s->node);
  bool owned = !s->wrapped && !s->node.native_gone;
  gpuError_t e = owned ? gpuStreamDestroy(s->native) : gpuSuccess;
  int device = s->node.device;
  free(s);
  if (e != gpuSuccess) return gp__gpu_fail(e, device, "gp_stream_destroy", GP__GPU_STR(gpuStreamDestroy));
  return GP_SUCCESS;
}

static gp_status_t event_fini(void *h) {
  struct gp_event_s *ev = h;
  gp__gpu_untrack(&ev->node);
  bool owned = !ev->wrapped && !ev->node.native_gone;
  gpuError_t e = owned ? gpuEventDestroy(ev->native) : gpuSuccess;
  int device = ev->node.device;
  free(ev);
  if (e != gpuSuccess) return gp__gpu_fail(e, device, "gp_event_destroy", GP__GPU_STR(gpuEventDestroy));
  return GP_SUCCESS;
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
  gp_status_t st = gp__gpu_track(&s->node, GP__H_STREAM, stream_fini);
  if (st != GP_SUCCESS) {
    (void)gpuStreamDestroy(s->native);
    free(s);
    return GP__GPU_ERR(st, "cannot register the stream");
  }
  *stream = s;
  return GP_SUCCESS;
}

gp_status_t gp__be_stream_destroy(gp_stream_t s) {
  /* The kill is the claim: of two racing destroys, one wins; stream_fini runs when the
   * last call using the stream is done. */
  if (!gp__handle_kill(s, GP__H_STREAM, NULL))
    return GP__GPU_ERR(GP_ERROR_INVALID_HANDLE, "'stream' (%p) was destroyed concurrently",
                       (void *)s);
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

/* The native callback receives the native stream and status: the record gives the
 * callback the caller's gp_stream_t and gpuport's status. It runs once (the native
 * runtime does not capture such callbacks), so it frees the record. */
typedef struct stream_cb {
  gp_stream_callback_t cb;
  gp_stream_t stream;
  void *user;
} stream_cb_t;

static void stream_cb_run(gpuStream_t native, gpuError_t status, void *p) {
  stream_cb_t c = *(stream_cb_t *)p;
  (void)native;
  free(p);
  bool fault = false;
  c.cb(c.stream, status == gpuSuccess ? GP_SUCCESS : gp__gpu_map_error((int)status, &fault), c.user);
}

gp_status_t gp__be_stream_add_callback(gp_stream_t s, gp_stream_callback_t cb, void *user) {
  stream_cb_t *c = (stream_cb_t *)malloc(sizeof(*c));
  if (c == NULL) return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for a stream callback");
  c->cb = cb;
  c->stream = s;
  c->user = user;
  gpuError_t e = gpuStreamAddCallback(gp__gpu_stream(s), stream_cb_run, c, 0);
  if (e != gpuSuccess) {
    free(c);
    return gp__gpu_fail(e, gp__gpu_stream_device(s), __func__, GP__GPU_STR(gpuStreamAddCallback));
  }
  return GP_SUCCESS;
}

gp_status_t gp__be_stream_attach_mem_async(gp_stream_t s, void *ptr, size_t length, unsigned flags) {
  /* GP_MEM_ATTACH_* are CUDA's and HIP's values (cudaMemAttachGlobal 1, Host 2, Single 4). */
  GP__GPU_TRY_NAMED(gp__gpu_stream_device(s), GP__GPU_STR(gpuStreamAttachMemAsync),
                    gpuStreamAttachMemAsync(gp__gpu_stream(s), ptr, length, flags));
  return GP_SUCCESS;
}

void *gp__be_stream_native(gp_stream_t s) { return (void *)gp__gpu_stream(s); }

/* The native runtime applies the device rules of launches and event records itself
 * (cudaErrorInvalidResourceHandle -> GP_ERROR_INVALID_HANDLE, errors.c); and the device
 * of a wrapped native stream or event is the native runtime's to know. */
int gp__be_stream_device(gp_stream_t s) {
  (void)s;
  return -1;
}

gp_status_t gp__be_stream_wrap(gp_stream_t *stream, void *native) {
  struct gp_stream_s *s = calloc(1, sizeof(*s));
  if (!s) return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for a stream wrapper");
  s->native = (gpuStream_t)native;
  s->wrapped = true;
  gp_status_t st = gp__gpu_track(&s->node, GP__H_STREAM, stream_fini);
  if (st != GP_SUCCESS) {
    free(s);
    return GP__GPU_ERR(st, "cannot register the stream wrapper");
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
  gp_status_t st = gp__gpu_track(&ev->node, GP__H_EVENT, event_fini);
  if (st != GP_SUCCESS) {
    (void)gpuEventDestroy(ev->native);
    free(ev);
    return GP__GPU_ERR(st, "cannot register the event");
  }
  *event = ev;
  return GP_SUCCESS;
}

gp_status_t gp__be_event_destroy(gp_event_t ev) {
  if (!gp__handle_kill(ev, GP__H_EVENT, NULL))
    return GP__GPU_ERR(GP_ERROR_INVALID_HANDLE, "'event' (%p) was destroyed concurrently",
                       (void *)ev);
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

int gp__be_event_device(gp_event_t ev) {
  (void)ev; /* as gp__be_stream_device */
  return -1;
}

gp_status_t gp__be_event_wrap(gp_event_t *event, void *native) {
  struct gp_event_s *ev = calloc(1, sizeof(*ev));
  if (!ev) return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for an event wrapper");
  ev->native = (gpuEvent_t)native;
  ev->wrapped = true;
  ev->recorded = true; /* unknown: let the native runtime judge */
  gp_status_t st = gp__gpu_track(&ev->node, GP__H_EVENT, event_fini);
  if (st != GP_SUCCESS) {
    free(ev);
    return GP__GPU_ERR(st, "cannot register the event wrapper");
  }
  *event = ev;
  return GP_SUCCESS;
}
