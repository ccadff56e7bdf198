/*
 * status.c - status names and strings, the calling thread's error message (kept in its
 * state, src/thread.c), and the per-device asynchronous error (docs/design/API.md
 * "Asynchronous errors").
 */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GP__MAX_DEVICES 256

const char *gp_status_name(gp_status_t status) {
  switch (status) {
#define GP__STATUS_NAME(name, value, text) \
  case name: return #name;
    GP_STATUS_LIST(GP__STATUS_NAME)
#undef GP__STATUS_NAME
  }
  return "GP_ERROR_UNKNOWN";
}

const char *gp_status_string(gp_status_t status) {
  switch (status) {
#define GP__STATUS_TEXT(name, value, text) \
  case name: return text;
    GP_STATUS_LIST(GP__STATUS_TEXT)
#undef GP__STATUS_TEXT
  }
  return "unknown status";
}

/* A thread that never failed has no state to read: its message is "". */
const char *gp_last_error_message(void) {
  const gp__thread_t *t = gp__thread_peek();
  return t ? t->message : "";
}

void gp__clear_error(void) {
  gp__thread_t *t = gp__thread_peek();
  if (t) t->message[0] = '\0';
}

static void set_message_v(char *msg, size_t len, const char *func, const char *fmt, va_list ap) {
  int n = snprintf(msg, len, "%s: ", func);
  if (n < 0 || (size_t)n >= len) return;
  vsnprintf(msg + n, len - (size_t)n, fmt, ap);
}

gp_status_t gp__error(gp_status_t status, const char *func, const char *fmt, ...) {
  gp__thread_t *t = gp__thread();
  char spare[256]; /* without memory for the thread's state the log still names the failure */
  char *msg = t ? t->message : spare;
  size_t len = t ? sizeof(t->message) : sizeof(spare);
  va_list ap;
  va_start(ap, fmt);
  set_message_v(msg, len, func, fmt, ap);
  va_end(ap);
  /* NOT_READY is an answer, not a failure: CUDA's last error never holds it. */
  if (t && status != GP_SUCCESS && status != GP_ERROR_NOT_READY) t->last_status = status;
  if (t)
    gp__log(GP__LOG_INFO, GP__SUB_ALL, "%s (%s)", msg, gp_status_name(status));
  else
    gp__log(GP__LOG_WARN, GP__SUB_ALL, "%s (%s; no host memory to keep the message for "
            "gp_last_error_message)", msg, gp_status_name(status));
  return status;
}

/* ---- asynchronous errors -------------------------------------------------------- */
/* One pending error per device. The message is kept beside it so the call that
 * reports the error can say what faulted (kernel, block, thread). */
typedef struct async_slot {
  gp_status_t status;
  char message[GP__MSG_LEN];
} async_slot_t;

static pthread_mutex_t async_lock = PTHREAD_MUTEX_INITIALIZER;
static async_slot_t async_slots[GP__MAX_DEVICES];

static bool sticky(void) { return GP__BACKEND != GP_BACKEND_CPU; }

static async_slot_t *slot_of(int device) {
  if (device < 0 || device >= GP__MAX_DEVICES) device = 0;
  return &async_slots[device];
}

void gp__async_error_raise(int device, gp_status_t status, const char *fmt, ...) {
  char msg[GP__MSG_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&async_lock);
  async_slot_t *s = slot_of(device);
  const bool first = s->status == GP_SUCCESS; /* the first fault is the one worth reporting */
  if (first) {
    s->status = status;
    snprintf(s->message, sizeof(s->message), "%s", msg);
  }
  pthread_mutex_unlock(&async_lock);
  /* The reason at the default level, once per pending error: the call that reports it
   * puts it in gp_last_error_message() too; faults after the first until then only at INFO. */
  gp__log(first ? GP__LOG_WARN : GP__LOG_INFO, GP__SUB_ALL, "device %d: asynchronous error %s: %s",
          device, gp_status_name(status), msg);
}

static gp_status_t async_get(int device, bool clear, char *msg, size_t len) {
  pthread_mutex_lock(&async_lock);
  async_slot_t *s = slot_of(device);
  gp_status_t st = s->status;
  if (msg) snprintf(msg, len, "%s", s->message);
  if (clear && !sticky()) {
    s->status = GP_SUCCESS;
    s->message[0] = '\0';
  }
  pthread_mutex_unlock(&async_lock);
  return st;
}

gp_status_t gp__async_error_peek(int device) { return async_get(device, false, NULL, 0); }

gp_status_t gp__async_error_take(int device) { return async_get(device, true, NULL, 0); }

gp_status_t gp__async_error_report(int device, const char *func) {
  char msg[GP__MSG_LEN];
  gp_status_t st = async_get(device, true, msg, sizeof(msg));
  if (st == GP_SUCCESS) return st;
  return gp__error(st, func, "asynchronous error from earlier work on device %d: %s%s", device,
                   msg, sticky() ? " (sticky: the context is unusable until the process exits)" : "");
}

/* Clears a device's error on gp_device_reset, sticky or not. */
void gp__async_error_reset(int device) {
  pthread_mutex_lock(&async_lock);
  async_slot_t *s = slot_of(device);
  s->status = GP_SUCCESS;
  s->message[0] = '\0';
  pthread_mutex_unlock(&async_lock);
}

/* The calling thread's last failure and, ahead of it, the current device's pending
 * asynchronous error: a fault of enqueued work is what cudaGetLastError reports first
 * once the runtime has seen it (and sticky faults are never reset). */
gp_status_t gp_get_last_error(void) {
  gp__thread_t *t = gp__thread_peek();
  gp_status_t last = t ? t->last_status : GP_SUCCESS;
  gp_status_t pending = gp__async_error_report(gp__current_device(), "gp_get_last_error");
  if (t) t->last_status = GP_SUCCESS; /* what the report just recorded too */
  return pending != GP_SUCCESS ? pending : last;
}

gp_status_t gp_peek_at_last_error(void) {
  int device = gp__current_device();
  char msg[GP__MSG_LEN];
  gp_status_t st = async_get(device, false, msg, sizeof(msg));
  if (st != GP_SUCCESS)
    return gp__error(st, "gp_peek_at_last_error", "asynchronous error pending on device %d: %s",
                     device, msg);
  const gp__thread_t *t = gp__thread_peek();
  return t ? t->last_status : GP_SUCCESS;
}

long gp__env_long(const char *name, long def) {
  const char *v = getenv(name);
  if (!v || !*v) return def;
  char *end = NULL;
  long x = strtol(v, &end, 0);
  if (end == v || *end != '\0') {
    gp__log(GP__LOG_WARN, GP__SUB_INIT, "ignoring %s=%s: not an integer", name, v);
    return def;
  }
  return x;
}
