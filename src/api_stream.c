/*
 * api_stream.c - public entry points for streams, events and host callbacks, and the
 * stream-handle resolution every api file shares. Handles are looked up in the handle
 * registry and held (a reference) until the call no longer uses them, so a destroyed or
 * foreign handle is an error, not a read of freed memory, and a handle destroyed by
 * another thread meanwhile stays allocated until this call is done with it (internal.h
 * "handle registry"); the backends register them when they create them.
 */
#include "api.h"

static bool is_default_stream(gp_stream_t s) {
  return s == NULL || s == GP_STREAM_LEGACY || s == GP_STREAM_PER_THREAD;
}

gp_status_t gp__stream_resolve(gp_stream_t s, const char *func, gp_stream_t *out) {
  /* The named default streams pass through: each backend maps them to its own object. */
  if (is_default_stream(s) || gp__handle_acquire(s, GP__H_STREAM)) {
    *out = s;
    return GP_SUCCESS;
  }
  return gp__error(GP_ERROR_INVALID_HANDLE, func,
                   "'stream' (%p) is not a live gpuport stream (destroyed, or never created)",
                   (void *)s);
}

gp_status_t gp__api_check_launch_stream(const char *func, gp_stream_t stream) {
  const int dev = gp__be_stream_device(stream), cur = gp__current_device();
  if (dev < 0 || dev == cur) return GP_SUCCESS;
  return gp__error(GP_ERROR_INVALID_HANDLE, func,
                   "'stream' (%p) belongs to device %d but the current device is %d: kernel "
                   "work goes into a stream of the current device (gp_device_set(%d) first)",
                   (void *)stream, dev, cur, dev);
}

void gp__stream_put(gp_stream_t s) {
  if (is_default_stream(s)) return;
  const void *h = s;
  gp__handle_put_ref(&h);
}

void gp__stream_put_ref(gp_stream_t *s) { gp__stream_put(*s); }

/* A destroy holds a reference, retires the handle through the backend, then drops the
 * reference: the finaliser runs here unless another call still uses the handle, and its
 * status is this call's. */
static gp_status_t finish_destroy(const void *h, gp_status_t retired) {
  gp_status_t fini = gp__handle_release(h);
  return retired != GP_SUCCESS ? retired : fini;
}

/* A wait returns the faults of the work it waited for (docs/design/API.md
 * "Asynchronous errors"). */
static gp_status_t sync_result(const char *func, gp_status_t s) {
  if (s != GP_SUCCESS) return s;
  return gp__async_error_report(gp__current_device(), func);
}

/* ---- streams ---------------------------------------------------------------------------- */

static gp_status_t stream_create(const char *func, gp_stream_t *stream, unsigned flags,
                                 int priority) {
  if (stream == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'stream' is NULL");
  *stream = NULL;
  if (flags & ~GP_STREAM_NON_BLOCKING)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'flags' (0x%x) has bits other than GP_STREAM_NON_BLOCKING", flags);
  int n = 0;
  GP__TRY(gp__api_device_count(func, &n));
  int least = 0, greatest = 0;
  GP__TRY(gp__be_stream_priority_range(&least, &greatest));
  /* Out-of-range priorities are clamped, as cudaStreamCreateWithPriority does. */
  if (priority > least) priority = least;
  if (priority < greatest) priority = greatest;
  return gp__be_stream_create(stream, flags, priority);
}

GP_API gp_status_t gp_stream_create(gp_stream_t *stream) {
  return stream_create(__func__, stream, GP_STREAM_DEFAULT, 0);
}

GP_API gp_status_t gp_stream_create_with_flags(gp_stream_t *stream, unsigned flags) {
  return stream_create(__func__, stream, flags, 0);
}

GP_API gp_status_t gp_stream_create_with_priority(gp_stream_t *stream, int priority) {
  return stream_create(__func__, stream, GP_STREAM_DEFAULT, priority);
}

GP_API gp_status_t gp_stream_destroy(gp_stream_t stream) {
  if (stream == NULL) return GP_SUCCESS;
  GP__TRY(gp__api_init(__func__));
  GP__CHECK_ARG(stream != GP_STREAM_LEGACY && stream != GP_STREAM_PER_THREAD,
                "'stream' is a default stream, which cannot be destroyed");
  gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  return finish_destroy(s, gp__be_stream_destroy(s));
}

GP_API gp_status_t gp_stream_synchronize(gp_stream_t stream) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  return sync_result(__func__, gp__be_stream_synchronize(s));
}

GP_API gp_status_t gp_stream_query(gp_stream_t stream) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  /* NOT_READY is an answer, not a failure: it sets no message. */
  return sync_result(__func__, gp__be_stream_query(s));
}

GP_API gp_status_t gp_stream_wait_event(gp_stream_t stream, gp_event_t event) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  GP__HANDLE_REF const void *e = NULL;
  GP__TRY(gp__handle_hold(event, GP__H_EVENT, __func__, "event", &e));
  return gp__be_stream_wait_event(s, event);
}

GP_API gp_status_t gp_launch_host_func(gp_stream_t stream, void (*fn)(void *), void *user) {
  GP__CHECK_NOT_NULL(fn);
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  return gp__be_launch_host_func(s, fn, user);
}

GP_API gp_status_t gp_stream_add_callback(gp_stream_t stream, gp_stream_callback_t callback, void *user,
                                          unsigned flags) {
  GP__CHECK_NOT_NULL(callback);
  GP__CHECK_ARG(flags == 0, "'flags' is 0x%x; it is reserved and must be 0", flags);
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  return gp__be_stream_add_callback(s, callback, user);
}

GP_API void *gp_stream_native(gp_stream_t stream) {
  GP__STREAM_REF gp_stream_t s = NULL;
  if (gp__api_init(__func__) != GP_SUCCESS || gp__stream_resolve(stream, __func__, &s) != GP_SUCCESS)
    return NULL;
  return gp__be_stream_native(s);
}

GP_API gp_status_t gp_stream_wrap(gp_stream_t *stream, void *native) {
  GP__CHECK_NOT_NULL(stream);
  *stream = NULL;
  GP__CHECK_ARG(native != NULL,
                "'native' is NULL (the default stream needs no wrapper: pass NULL as the "
                "gp_stream_t)");
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  return gp__be_stream_wrap(stream, native);
}

/* ---- events ------------------------------------------------------------------------------ */

GP_API gp_status_t gp_event_create(gp_event_t *event) {
  return gp_event_create_with_flags(event, GP_EVENT_DEFAULT);
}

GP_API gp_status_t gp_event_create_with_flags(gp_event_t *event, unsigned flags) {
  GP__CHECK_NOT_NULL(event);
  *event = NULL;
  GP__CHECK_ARG(!(flags & ~(GP_EVENT_BLOCKING_SYNC | GP_EVENT_DISABLE_TIMING)),
                "'flags' (0x%x) has bits other than GP_EVENT_BLOCKING_SYNC and "
                "GP_EVENT_DISABLE_TIMING",
                flags);
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  return gp__be_event_create(event, flags);
}

GP_API gp_status_t gp_event_record(gp_event_t event, gp_stream_t stream) {
  GP__TRY(gp__api_init(__func__));
  GP__HANDLE_REF const void *e = NULL;
  GP__TRY(gp__handle_hold(event, GP__H_EVENT, __func__, "event", &e));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  /* cudaEventRecord fails with cudaErrorInvalidResourceHandle when the event and the
   * stream belong to different devices (CUDA C++ Programming Guide, "Stream and Event
   * Behavior"); a stream may wait for another device's event (gp_stream_wait_event). */
  const int ed = gp__be_event_device(event), sd = gp__be_stream_device(s);
  if (ed >= 0 && sd >= 0 && ed != sd)
    return GP__ERR(GP_ERROR_INVALID_HANDLE,
                   "'event' (%p) belongs to device %d but 'stream' (%p) to device %d: an "
                   "event is recorded into a stream of its own device",
                   (void *)event, ed, (void *)stream, sd);
  return gp__be_event_record(event, s);
}

GP_API gp_status_t gp_event_synchronize(gp_event_t event) {
  GP__TRY(gp__api_init(__func__));
  GP__HANDLE_REF const void *e = NULL;
  GP__TRY(gp__handle_hold(event, GP__H_EVENT, __func__, "event", &e));
  return sync_result(__func__, gp__be_event_synchronize(event));
}

GP_API gp_status_t gp_event_query(gp_event_t event) {
  GP__TRY(gp__api_init(__func__));
  GP__HANDLE_REF const void *e = NULL;
  GP__TRY(gp__handle_hold(event, GP__H_EVENT, __func__, "event", &e));
  return gp__be_event_query(event);
}

GP_API gp_status_t gp_event_elapsed_ms(float *ms, gp_event_t start, gp_event_t end) {
  GP__CHECK_NOT_NULL(ms);
  *ms = 0.0f;
  GP__TRY(gp__api_init(__func__));
  GP__HANDLE_REF const void *a = NULL, *b = NULL;
  GP__TRY(gp__handle_hold(start, GP__H_EVENT, __func__, "start", &a));
  GP__TRY(gp__handle_hold(end, GP__H_EVENT, __func__, "end", &b));
  return gp__be_event_elapsed_ms(ms, start, end);
}

GP_API gp_status_t gp_event_destroy(gp_event_t event) {
  if (event == NULL) return GP_SUCCESS;
  GP__TRY(gp__api_init(__func__));
  GP__TRY(gp__handle_get(event, GP__H_EVENT, __func__, "event"));
  return finish_destroy(event, gp__be_event_destroy(event));
}

GP_API void *gp_event_native(gp_event_t event) {
  GP__HANDLE_REF const void *e = NULL;
  if (gp__api_init(__func__) != GP_SUCCESS ||
      gp__handle_hold(event, GP__H_EVENT, __func__, "event", &e) != GP_SUCCESS)
    return NULL;
  return gp__be_event_native(event);
}

GP_API gp_status_t gp_event_wrap(gp_event_t *event, void *native) {
  GP__CHECK_NOT_NULL(event);
  *event = NULL;
  GP__CHECK_NOT_NULL(native);
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  return gp__be_event_wrap(event, native);
}

GP_API gp_status_t gp_stream_attach_mem_async(gp_stream_t stream, void *ptr, size_t length,
                                              unsigned flags) {
  GP__CHECK_NOT_NULL(ptr);
  GP__CHECK_ARG(flags == GP_MEM_ATTACH_GLOBAL || flags == GP_MEM_ATTACH_HOST ||
                    flags == GP_MEM_ATTACH_SINGLE,
                "'flags' is 0x%x; one of GP_MEM_ATTACH_GLOBAL, GP_MEM_ATTACH_HOST, "
                "GP_MEM_ATTACH_SINGLE", flags);
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  GP__CHECK_ARG(flags != GP_MEM_ATTACH_SINGLE ||
                    (stream != NULL && stream != GP_STREAM_LEGACY && stream != GP_STREAM_PER_THREAD),
                "GP_MEM_ATTACH_SINGLE needs a created stream, not a default one");
  gp__alloc_info_t info;
  const bool known = gp__alloc_find(ptr, &info);
  /* Memory gpuport does not hold may be a managed variable of the native runtime (which
   * checks it); where the registry knows every device-accessible byte, it is not managed. */
  GP__CHECK_ARG(known || !GP__REGISTRY_COMPLETE, "'ptr' (%p) is not managed memory (gp_malloc_managed)", ptr);
  if (known) {
    GP__CHECK_ARG(info.kind == GP__ALLOC_MANAGED, "'ptr' (%p) is not managed memory (gp_malloc_managed)", ptr);
    GP__CHECK_ARG(info.base == ptr, "'ptr' (%p) is inside an allocation at %p: pass its start", ptr, info.base);
    GP__CHECK_ARG(length == 0 || length == info.bytes,
                  "'length' is %zu; 0 or the allocation's %zu bytes, as cudaStreamAttachMemAsync requires",
                  length, info.bytes);
  }
  return gp__be_stream_attach_mem_async(s, ptr, length, flags);
}
