/*
 * telemetry.c - gp_device_get_telemetry and gp_device_get_telemetry_fields (argument
 * checks, the per-device cache of offered fields, struct_size handling), the field
 * table, and the worker threads that keep a hung vendor library from blocking the
 * caller past its deadline (TELEMETRY.md "Timeouts").
 *
 * Why a worker thread: NVML and AMD SMI calls are plain blocking C calls with no
 * timeout of their own (nvmlInit can take seconds while the driver wakes a GPU without
 * persistence mode; a GPU falling off the bus can stall every call). The only way to
 * bound the caller's wait without killing the process is to make the call elsewhere
 * and stop waiting: each vendor library gets one long-lived thread that makes all of
 * its calls (so the reader's state needs no lock), and callers post a job and wait on
 * a condition variable with a deadline. A job whose caller gave up runs to its end and
 * its results are dropped; until then, later callers are told at once.
 */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "api.h"
#include "telemetry.h"

/* ---- fields ------------------------------------------------------------------------- */

typedef struct field_info {
  const char *name;
  size_t offset;
  bool integer; /* uint64_t, else double */
} field_info_t;

#define F_D(f) {#f, offsetof(gp_telemetry_t, f), false}
#define F_U(f) {#f, offsetof(gp_telemetry_t, f), true}
static const field_info_t g_fields[GP_TELEMETRY_FIELD_COUNT] = {
    [GP_TELEMETRY_TEMP_DIE] = F_D(temp_die_c),
    [GP_TELEMETRY_TEMP_EDGE] = F_D(temp_edge_c),
    [GP_TELEMETRY_TEMP_JUNCTION] = F_D(temp_junction_c),
    [GP_TELEMETRY_TEMP_MEMORY] = F_D(temp_memory_c),
    [GP_TELEMETRY_POWER] = F_D(power_w),
    [GP_TELEMETRY_POWER_AVERAGE] = F_D(power_average_w),
    [GP_TELEMETRY_ENERGY] = F_D(energy_j),
    [GP_TELEMETRY_POWER_LIMIT] = F_D(power_limit_w),
    [GP_TELEMETRY_CLOCK_SM] = F_D(clock_sm_mhz),
    [GP_TELEMETRY_CLOCK_SM_MAX] = F_D(clock_sm_max_mhz),
    [GP_TELEMETRY_CLOCK_MEMORY] = F_D(clock_memory_mhz),
    [GP_TELEMETRY_CLOCK_MEMORY_MAX] = F_D(clock_memory_max_mhz),
    [GP_TELEMETRY_MEMORY_USED] = F_U(memory_used_bytes),
    [GP_TELEMETRY_MEMORY_TOTAL] = F_U(memory_total_bytes),
    [GP_TELEMETRY_UTIL_COMPUTE] = F_D(util_compute_pct),
    [GP_TELEMETRY_UTIL_MEMORY] = F_D(util_memory_pct),
    [GP_TELEMETRY_ECC_CORRECTED] = F_U(ecc_corrected),
    [GP_TELEMETRY_ECC_UNCORRECTED] = F_U(ecc_uncorrected),
    [GP_TELEMETRY_PCIE_TX] = F_D(pcie_tx_bytes_per_s),
    [GP_TELEMETRY_PCIE_RX] = F_D(pcie_rx_bytes_per_s),
    [GP_TELEMETRY_THROTTLE] = F_U(throttle),
};

GP_API const char *gp_telemetry_field_name(gp_telemetry_field_t field) {
  if ((int)field < 0 || field >= GP_TELEMETRY_FIELD_COUNT) return "unknown";
  return g_fields[field].name;
}

void gp__telemetry_reset(gp_telemetry_t *t) {
  gp_telemetry_init(t);
  t->timestamp_s = NAN;
  for (int f = 0; f < GP_TELEMETRY_FIELD_COUNT; f++)
    if (!g_fields[f].integer) *(double *)((char *)t + g_fields[f].offset) = NAN;
}

void gp__telemetry_set(gp_telemetry_t *t, gp_telemetry_field_t f, double v) {
  if (!isfinite(v)) return;
  if (g_fields[f].integer) {
    if (v < 0 || v >= 18446744073709551616.0) return;
    gp__telemetry_set_u64(t, f, (uint64_t)v);
    return;
  }
  *(double *)((char *)t + g_fields[f].offset) = v;
  t->available |= GP_TELEMETRY_BIT(f);
}

void gp__telemetry_set_u64(gp_telemetry_t *t, gp_telemetry_field_t f, uint64_t v) {
  if (!g_fields[f].integer) {
    gp__telemetry_set(t, f, (double)v);
    return;
  }
  *(uint64_t *)((char *)t + g_fields[f].offset) = v;
  t->available |= GP_TELEMETRY_BIT(f);
}

/* ---- deadlines ------------------------------------------------------------------------- */

double gp__telemetry_timeout_s(bool first) {
  const char *name = first ? "GP_TELEMETRY_INIT_TIMEOUT_MS" : "GP_TELEMETRY_TIMEOUT_MS";
  long def = first ? 10000 : 1000;
  long ms = gp__env_long(name, def);
  if (ms <= 0 || ms > 3600L * 1000) {
    GP__WARN(GP__SUB_INIT, "ignoring %s=%ld: not in 1..3600000; using %ld", name, ms, def);
    ms = def;
  }
  return (double)ms * 1e-3;
}

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct timespec abs_time(double t) {
  struct timespec ts;
  ts.tv_sec = (time_t)t;
  ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
  if (ts.tv_nsec < 0) ts.tv_nsec = 0;
  return ts;
}

/* ---- the worker -------------------------------------------------------------------------- */

static void *worker_main(void *arg) {
  gp__tm_worker_t *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (w->taken == w->posted) pthread_cond_wait(&w->cv, &w->mu);
    unsigned long seq = w->posted;
    w->taken = seq;
    bool forget = w->forget;
    w->forget = false;
    pthread_mutex_unlock(&w->mu);
    /* The caller does not touch w->job until done == seq. */
    w->run(&w->job, forget);
    pthread_mutex_lock(&w->mu);
    w->done = seq;
    w->ever_done = true;
    if (w->abandoned) { /* nobody collects: free the slot here */
      w->abandoned = false;
      w->busy = false;
    }
    pthread_cond_broadcast(&w->cv);
  }
  return NULL;
}

/* fork(): the child has no worker threads. Every worker is locked across the fork (so
 * its state is consistent) and, in the child, reset to "not started", its library to be
 * loaded and initialised again by the child's first reading. */
#define TM_WORKERS 4
static pthread_mutex_t g_workers_mu = PTHREAD_MUTEX_INITIALIZER;
static gp__tm_worker_t *g_workers[TM_WORKERS];
static int g_n_workers;
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void) {
  pthread_mutex_lock(&g_workers_mu);
  for (int i = 0; i < g_n_workers; i++) pthread_mutex_lock(&g_workers[i]->mu);
}
static void fork_parent(void) {
  for (int i = g_n_workers - 1; i >= 0; i--) pthread_mutex_unlock(&g_workers[i]->mu);
  pthread_mutex_unlock(&g_workers_mu);
}
static void fork_child(void) {
  for (int i = g_n_workers - 1; i >= 0; i--) {
    gp__tm_worker_t *w = g_workers[i];
    w->started = w->busy = w->abandoned = w->ever_done = false;
    w->forget = true;
    w->posted = w->taken = w->done = 0;
    pthread_cond_init(&w->cv, NULL); /* its waiters are gone; worker_start sets the clock */
    pthread_mutex_unlock(&w->mu);
  }
  g_n_workers = 0; /* they register again when they start */
  pthread_mutex_unlock(&g_workers_mu);
}
static void atfork_once(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

/* Starts w's thread once (w->mu held). The thread blocks every signal: they belong to
 * the application's threads. */
static bool worker_start(gp__tm_worker_t *w) {
  if (w->started) return true;
  pthread_once(&g_atfork_once, atfork_once);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_destroy(&w->cv);
  pthread_cond_init(&w->cv, &ca);
  pthread_condattr_destroy(&ca);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  int rc = pthread_create(&t, &attr, worker_main, w);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) return false;
  w->started = true;
  /* Lock order: g_workers_mu before any worker's mu (fork_prepare); w->mu is held here,
   * so only try: a worker that cannot register is not reset in a forked child. */
  if (pthread_mutex_trylock(&g_workers_mu) == 0) {
    bool known = false;
    for (int i = 0; i < g_n_workers; i++) known |= g_workers[i] == w;
    if (!known && g_n_workers < TM_WORKERS) g_workers[g_n_workers++] = w;
    pthread_mutex_unlock(&g_workers_mu);
  }
  return true;
}

/* Waits on w->cv (w->mu held) until w is idle, or until job seq is done; false when
 * the deadline passes first. */
static bool wait_until(gp__tm_worker_t *w, unsigned long seq, double deadline) {
  struct timespec ts = abs_time(deadline);
  for (;;) {
    bool ready = seq == 0 ? !w->busy : w->done == seq;
    if (ready) return true;
    if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT) {
      ready = seq == 0 ? !w->busy : w->done == seq;
      return ready;
    }
  }
}

gp_status_t gp__telemetry_run(gp__tm_worker_t *w, gp__tm_job_t *job) {
  pthread_mutex_lock(&w->mu);
  if (!worker_start(w)) {
    pthread_mutex_unlock(&w->mu);
    gp__tm_fmt(job->why, sizeof job->why, "cannot start the %s worker thread", w->name);
    return job->st = GP_ERROR_OUT_OF_MEMORY;
  }
  bool first = !w->ever_done;
  double limit = gp__telemetry_timeout_s(first);
  double start = mono_now(), deadline = start + limit;
  if (w->busy && w->abandoned) {
    double stuck = start - w->job_started;
    pthread_mutex_unlock(&w->mu);
    gp__tm_fmt(job->why, sizeof job->why,
             "an earlier %s query has not returned after %.1f s (the library hangs; "
             "later readings fail at once until it returns)",
             w->name, stuck);
    return job->st = GP_ERROR_TIMEOUT;
  }
  /* Another thread's reading is in progress: wait for it within our own deadline. */
  if (!wait_until(w, 0, deadline)) {
    pthread_mutex_unlock(&w->mu);
    gp__tm_fmt(job->why, sizeof job->why,
             "another thread's %s query did not finish within %.3g s "
             "(GP_TELEMETRY_TIMEOUT_MS)", w->name, limit);
    return job->st = GP_ERROR_TIMEOUT;
  }
  w->busy = true;
  w->abandoned = false;
  w->job = *job;
  w->job_started = start;
  unsigned long seq = ++w->posted;
  pthread_cond_broadcast(&w->cv);
  if (!wait_until(w, seq, deadline)) {
    w->abandoned = true;
    pthread_mutex_unlock(&w->mu);
    gp__tm_fmt(job->why, sizeof job->why,
             "%s did not answer within %.3g s (%s); the query is left running",
             w->name, limit, first ? "GP_TELEMETRY_INIT_TIMEOUT_MS, loading and initialising it"
                                   : "GP_TELEMETRY_TIMEOUT_MS");
    return job->st = GP_ERROR_TIMEOUT;
  }
  *job = w->job;
  w->busy = false;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  return job->st;
}

void gp__tm_fmt(char *buf, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, n, fmt, ap);
  va_end(ap);
}

void gp__tm_pick_library(char *out, size_t n, const char *given, const char *env,
                         const char *def) {
  const char *e = getenv(env);
  gp__tm_fmt(out, n, "%s", given && *given ? given : e && *e ? e : def);
}

gp_status_t gp__tm_finish(const gp__tm_job_t *job, gp_telemetry_t *t, uint64_t *offered) {
  *t = job->t;
  *offered = job->offered;
  if (job->st != GP_SUCCESS)
    return gp__error(job->st, "gp_device_get_telemetry", "%s", job->why);
  return GP_SUCCESS;
}

void gp__telemetry_forget(void) {
  gp__telemetry_nvml_forget();
  gp__telemetry_amd_forget();
}

/* ---- public entry points ------------------------------------------------------------------ */

/* The fields each device offers, found by its first reading that succeeded. Devices
 * beyond the cache are answered by a reading each time. */
#define TM_CACHED 64
static pthread_mutex_t g_offered_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_offered[TM_CACHED];
static bool g_offered_valid[TM_CACHED];

#define TM_END(f) (offsetof(gp_telemetry_t, f) + sizeof(((gp_telemetry_t *)0)->f))
static const size_t g_ends[] = {
    TM_END(available),       TM_END(failed),           TM_END(source),
    TM_END(timestamp_s),     TM_END(temp_die_c),       TM_END(temp_edge_c),
    TM_END(temp_junction_c), TM_END(temp_memory_c),    TM_END(power_w),
    TM_END(power_average_w), TM_END(energy_j),         TM_END(power_limit_w),
    TM_END(clock_sm_mhz),    TM_END(clock_sm_max_mhz), TM_END(clock_memory_mhz),
    TM_END(clock_memory_max_mhz), TM_END(memory_used_bytes), TM_END(memory_total_bytes),
    TM_END(util_compute_pct), TM_END(util_memory_pct), TM_END(ecc_corrected),
    TM_END(ecc_uncorrected), TM_END(pcie_tx_bytes_per_s), TM_END(pcie_rx_bytes_per_s),
    TM_END(throttle),
};
#define N_ENDS (sizeof(g_ends) / sizeof(g_ends[0]))

/* Copies what fits in the caller's struct; the masks keep only the bits of fields that
 * were written (a field cut off by struct_size is not available to that caller). */
static void copy_out(gp_telemetry_t *dst, const gp_telemetry_t *src) {
  size_t size = dst->struct_size;
  gp__api_copy_fields(dst, src, size, g_ends, N_ENDS);
  uint64_t keep = 0;
  for (int f = 0; f < GP_TELEMETRY_FIELD_COUNT; f++) {
    size_t end = g_fields[f].offset + (g_fields[f].integer ? sizeof(uint64_t) : sizeof(double));
    if (end <= size) keep |= GP_TELEMETRY_BIT(f);
  }
  dst->available = src->available & keep;
  if (size >= TM_END(failed)) dst->failed = src->failed & keep;
}

static gp_status_t read_device(const char *func, int device, gp_telemetry_t *full,
                               uint64_t *offered) {
  GP__TRY(gp__api_check_device(func, "device", device));
  gp__telemetry_reset(full);
  *offered = 0;
  gp_status_t st = gp__be_device_get_telemetry(device, full, offered);
  if (st != GP_SUCCESS) {
    uint64_t failed = full->failed;
    gp__telemetry_reset(full); /* nothing half-read leaks out of a failed call */
    full->failed = failed;
    return st;
  }
  if (device < TM_CACHED) {
    pthread_mutex_lock(&g_offered_mu);
    if (!g_offered_valid[device]) {
      g_offered[device] = *offered;
      g_offered_valid[device] = true;
    }
    pthread_mutex_unlock(&g_offered_mu);
  }
  return GP_SUCCESS;
}

GP_API gp_status_t gp_device_get_telemetry(int device, gp_telemetry_t *t) {
  GP__CHECK_NOT_NULL(t);
  GP__CHECK_ARG(t->struct_size >= TM_END(available),
                "'t->struct_size' is %zu, too small for the 'available' mask (initialise 't' "
                "with gp_telemetry_init())",
                t->struct_size);
  gp_telemetry_t full;
  gp__telemetry_reset(&full);
  uint64_t offered = 0;
  gp_status_t st = read_device(__func__, device, &full, &offered);
  copy_out(t, &full);
  return st;
}

GP_API gp_status_t gp_device_get_telemetry_fields(int device, uint64_t *fields) {
  GP__CHECK_NOT_NULL(fields);
  *fields = 0;
  GP__TRY(gp__api_check_device(__func__, "device", device));
  if (device < TM_CACHED) {
    pthread_mutex_lock(&g_offered_mu);
    bool valid = g_offered_valid[device];
    uint64_t f = g_offered[device];
    pthread_mutex_unlock(&g_offered_mu);
    if (valid) {
      *fields = f;
      return GP_SUCCESS;
    }
  }
  gp_telemetry_t full;
  uint64_t offered = 0;
  GP__TRY(read_device(__func__, device, &full, &offered));
  *fields = offered;
  return GP_SUCCESS;
}
