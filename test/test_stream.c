/*
 * test_stream.c - streams, events and host callbacks: ordering, the legacy default
 * stream's semantics, events and timing, native interop, asynchronous errors, use
 * after fork, threads, and the launch-configuration checks (kernels themselves are
 * tested in test_kernel.c). Adapts to the device count; skips without a device.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <gpuport.h>
#include "internal.h" /* gp__be_enqueue_host_work: the stream work GEMM/attention use */
#include "check_util.h"

static void still_usable(void) {
  gp_stream_t s = NULL;
  void *p = NULL;
  int v = 7, w = 0;
  OK(gp_stream_create(&s));
  OK(gp_malloc(&p, sizeof(int)));
  OK(gp_memcpy_async(p, &v, sizeof v, s));
  OK(gp_memcpy_async(&w, p, sizeof w, s));
  OK(gp_stream_synchronize(s));
  ck_assert_int_eq(w, 7);
  OK(gp_free(p));
  OK(gp_stream_destroy(s));
}

/* ---- host-function helpers ---------------------------------------------------------------- */

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Sleeps 50 ms, then sets the flag: later work that sees the flag ran after it. */
static void sleep_then_set(void *flag) {
  sleep_ms(50);
  atomic_store((atomic_int *)flag, 1);
}

typedef struct probe {
  atomic_int *flag; /* read when the probe runs */
  atomic_int seen;  /* 1 + the flag's value at that time */
} probe_t;

static void read_flag(void *p) {
  probe_t *pr = p;
  atomic_store(&pr->seen, 1 + atomic_load(pr->flag));
}

/* A gate: host functions that block a stream until the test opens it. Gates live in a
 * static pool, and the teardown opens them all: without Check's fork (the GPU runs), a
 * failed test must not leave a stream blocked for the tests after it. */
typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int open;
  atomic_int arrived; /* a stream has reached the gate */
} gate_t;

static gate_t g_gates[8];
static int g_ngates;

static gate_t *gate_new(void) {
  ck_assert_int_lt(g_ngates, 8);
  gate_t *g = &g_gates[g_ngates++];
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  g->open = 0;
  atomic_store(&g->arrived, 0);
  return g;
}

static void gate_pass(void *g) {
  gate_t *gt = g;
  atomic_store(&gt->arrived, 1);
  pthread_mutex_lock(&gt->mu);
  while (!gt->open) pthread_cond_wait(&gt->cv, &gt->mu);
  pthread_mutex_unlock(&gt->mu);
}

static void gate_open(gate_t *gt) {
  pthread_mutex_lock(&gt->mu);
  gt->open = 1;
  pthread_cond_broadcast(&gt->cv);
  pthread_mutex_unlock(&gt->mu);
}

static void teardown(void) {
  for (int i = 0; i < g_ngates; i++) gate_open(&g_gates[i]);
  int n = 0;
  if (gp_device_count(&n) == GP_SUCCESS)
    for (int d = 0; d < n; d++)
      if (gp_device_set(d) == GP_SUCCESS) (void)gp_device_synchronize();
  (void)gp_device_set(0);
  for (int i = 0; i < g_ngates; i++) {
    pthread_cond_destroy(&g_gates[i].cv);
    pthread_mutex_destroy(&g_gates[i].mu);
  }
  g_ngates = 0;
}

/* ---- streams ------------------------------------------------------------------------------- */

START_TEST(stream_create_destroy) {
  NEED_DEVICES(1, n);
  gp_stream_t s = NULL, t = NULL, u = NULL;
  OK(gp_stream_create(&s));
  OK(gp_stream_create_with_flags(&t, GP_STREAM_NON_BLOCKING));
  OK(gp_stream_create_with_priority(&u, -100)); /* clamped, as CUDA */
  ck_assert(s != NULL && t != NULL && u != NULL && s != t);
  OK(gp_stream_query(s));
  OK(gp_stream_synchronize(t));
  OK(gp_stream_destroy(s));
  OK(gp_stream_destroy(t));
  OK(gp_stream_destroy(u));
  OK(gp_stream_destroy(NULL));
  FAILS(gp_stream_create(NULL), GP_ERROR_INVALID_VALUE, "stream");
  FAILS(gp_stream_create_with_flags(&s, 0x80), GP_ERROR_INVALID_VALUE, "flags");
  FAILS(gp_stream_create_with_priority(NULL, 0), GP_ERROR_INVALID_VALUE, "stream");
  still_usable();
}
END_TEST

START_TEST(stream_bad_handles) {
  NEED_DEVICES(1, n);
  gp_stream_t s = NULL;
  OK(gp_stream_create(&s));
  OK(gp_stream_destroy(s));
  gp_stream_t bogus = (gp_stream_t)(uintptr_t)0x12345670;
  int x = 0;
  FAILS(gp_stream_destroy(s), GP_ERROR_INVALID_HANDLE, "stream");
  FAILS(gp_stream_synchronize(s), GP_ERROR_INVALID_HANDLE, "stream");
  FAILS(gp_stream_query(bogus), GP_ERROR_INVALID_HANDLE, "stream");
  FAILS(gp_stream_destroy(bogus), GP_ERROR_INVALID_HANDLE, "stream");
  FAILS(gp_launch_host_func(bogus, sleep_then_set, &x), GP_ERROR_INVALID_HANDLE, "stream");
  FAILS(gp_memset_async(&x, 0, sizeof x, s), GP_ERROR_INVALID_HANDLE, "stream");
  FAILS(gp_stream_destroy(GP_STREAM_LEGACY), GP_ERROR_INVALID_VALUE, "stream");
  FAILS(gp_stream_destroy(GP_STREAM_PER_THREAD), GP_ERROR_INVALID_VALUE, "stream");
  ck_assert_ptr_null(gp_stream_native(bogus));
  /* A handle of another kind is not a stream. */
  gp_event_t e = NULL;
  OK(gp_event_create(&e));
  FAILS(gp_stream_synchronize((gp_stream_t)(void *)e), GP_ERROR_INVALID_HANDLE, "stream");
  OK(gp_event_destroy(e));
  still_usable();
}
END_TEST

START_TEST(host_func_orders_stream) {
  NEED_DEVICES(1, n);
  gp_stream_t s = NULL;
  OK(gp_stream_create(&s));
  atomic_int flag = 0;
  int copy = -1;
  OK(gp_launch_host_func(s, sleep_then_set, &flag));
  /* The copy reads the flag only after the host function has set it. */
  OK(gp_memcpy_async(&copy, &flag, sizeof copy, s));
  OK(gp_stream_synchronize(s));
  ck_assert_int_eq(copy, 1);
  FAILS(gp_launch_host_func(s, NULL, NULL), GP_ERROR_INVALID_VALUE, "fn");
  OK(gp_stream_destroy(s));
}
END_TEST

/* A host function that waits for device work: on the cpu backend each wait is refused
 * (it would wait for the host function itself: the process hung). */
typedef struct waiter {
  gp_stream_t s;
  void *mem;
  gp_status_t st[6];
  char msg[256];
} waiter_t;

static void wait_inside(void *p) {
  waiter_t *w = p;
  int x = 0;
  w->st[0] = gp_stream_synchronize(w->s);
  snprintf(w->msg, sizeof w->msg, "%s", gp_last_error_message());
  w->st[1] = gp_device_synchronize();
  w->st[2] = gp_memcpy(w->mem, &x, sizeof x);
  w->st[3] = gp_free(w->mem);
  w->st[4] = gp_stream_synchronize(NULL);
  w->st[5] = gp_memset_async(w->mem, 0, 4, w->s); /* enqueueing does not wait */
}

START_TEST(host_func_must_not_wait) {
  NEED_DEVICES(1, n);
  if (gp_backend() != GP_BACKEND_CPU) return; /* CUDA leaves it undefined */
  waiter_t w;
  memset(&w, 0, sizeof w);
  OK(gp_stream_create(&w.s));
  OK(gp_malloc(&w.mem, 64));
  OK(gp_launch_host_func(w.s, wait_inside, &w));
  OK(gp_stream_synchronize(w.s));
  for (int i = 0; i < 5; i++)
    ck_assert_msg(w.st[i] == GP_ERROR_NOT_SUPPORTED, "wait %d -> %s", i, gp_status_name(w.st[i]));
  ck_assert_msg(strstr(w.msg, "host function") != NULL, "message '%s'", w.msg);
  ck_assert_int_eq(w.st[5], GP_SUCCESS);
  OK(gp_free(w.mem)); /* the refused gp_free left the allocation intact */
  OK(gp_stream_destroy(w.s));
  still_usable();
}
END_TEST

START_TEST(stream_query_not_ready) {
  NEED_DEVICES(1, n);
  gp_stream_t s = NULL;
  gate_t *g = gate_new();
  OK(gp_stream_create(&s));
  OK(gp_launch_host_func(s, gate_pass, g));
  ck_assert_int_eq(gp_stream_query(s), GP_ERROR_NOT_READY);
  gate_open(g);
  OK(gp_stream_synchronize(s));
  OK(gp_stream_query(s));
  OK(gp_stream_destroy(s));
}
END_TEST

START_TEST(destroy_with_pending_work) {
  NEED_DEVICES(1, n);
  gp_stream_t s = NULL;
  gate_t *g = gate_new();
  atomic_int flag = 0;
  OK(gp_stream_create(&s));
  OK(gp_launch_host_func(s, gate_pass, g));
  OK(gp_launch_host_func(s, sleep_then_set, &flag));
  OK(gp_stream_destroy(s)); /* returns at once; the work still runs */
  FAILS(gp_stream_query(s), GP_ERROR_INVALID_HANDLE, "stream");
  gate_open(g);
  OK(gp_device_synchronize());
  ck_assert_int_eq(atomic_load(&flag), 1);
}
END_TEST

START_TEST(legacy_waits_for_blocking_stream) {
  NEED_DEVICES(1, n);
  gp_stream_t s = NULL;
  OK(gp_stream_create(&s));
  atomic_int flag = 0;
  probe_t pr = {&flag, 0};
  OK(gp_launch_host_func(s, sleep_then_set, &flag));
  OK(gp_launch_host_func(NULL, read_flag, &pr));
  OK(gp_stream_synchronize(NULL));
  ck_assert_int_eq(atomic_load(&pr.seen), 2);
  /* And the other way: a blocking stream waits for earlier legacy work. */
  atomic_store(&flag, 0);
  atomic_store(&pr.seen, 0);
  OK(gp_launch_host_func(GP_STREAM_LEGACY, sleep_then_set, &flag));
  OK(gp_launch_host_func(s, read_flag, &pr));
  OK(gp_stream_synchronize(s));
  ck_assert_int_eq(atomic_load(&pr.seen), 2);
  /* A synchronous copy runs in the legacy stream: it waits for the blocking stream. */
  atomic_store(&flag, 0);
  int copy = -1;
  OK(gp_launch_host_func(s, sleep_then_set, &flag));
  OK(gp_memcpy(&copy, &flag, sizeof copy));
  ck_assert_int_eq(copy, 1);
  OK(gp_stream_destroy(s));
}
END_TEST

START_TEST(legacy_skips_non_blocking_stream) {
  NEED_DEVICES(1, n);
  gp_stream_t nb = NULL;
  gate_t *g = gate_new();
  atomic_int flag = 0;
  probe_t pr = {&flag, 0};
  OK(gp_stream_create_with_flags(&nb, GP_STREAM_NON_BLOCKING));
  OK(gp_launch_host_func(nb, gate_pass, g));
  /* If the legacy stream waited for nb, these would hang (and the test time out). */
  OK(gp_launch_host_func(NULL, read_flag, &pr));
  OK(gp_stream_synchronize(NULL));
  ck_assert_int_eq(atomic_load(&pr.seen), 1);
  int v = 5, w = 0;
  OK(gp_memcpy(&w, &v, sizeof v));
  ck_assert_int_eq(w, 5);
  ck_assert_int_eq(gp_stream_query(nb), GP_ERROR_NOT_READY);
  /* Nor does nb wait for the legacy stream. */
  gate_t *g2 = gate_new();
  gp_stream_t nb2 = NULL;
  OK(gp_stream_create_with_flags(&nb2, GP_STREAM_NON_BLOCKING));
  OK(gp_launch_host_func(NULL, gate_pass, g2));
  OK(gp_launch_host_func(nb2, read_flag, &pr));
  OK(gp_stream_synchronize(nb2));
  gate_open(g2);
  gate_open(g);
  OK(gp_device_synchronize());
  OK(gp_stream_destroy(nb));
  OK(gp_stream_destroy(nb2));
}
END_TEST

START_TEST(per_thread_stream) {
  NEED_DEVICES(1, n);
  gate_t *g = gate_new();
  atomic_int flag = 0;
  probe_t pr = {&flag, 0};
  OK(gp_launch_host_func(GP_STREAM_PER_THREAD, gate_pass, g));
  /* The per-thread stream does not synchronise with the legacy stream. */
  OK(gp_launch_host_func(NULL, read_flag, &pr));
  OK(gp_stream_synchronize(NULL));
  ck_assert_int_eq(gp_stream_query(GP_STREAM_PER_THREAD), GP_ERROR_NOT_READY);
  gate_open(g);
  int v = 9, w = 0;
  OK(gp_memcpy_async(&w, &v, sizeof v, GP_STREAM_PER_THREAD));
  OK(gp_stream_synchronize(GP_STREAM_PER_THREAD));
  ck_assert_int_eq(w, 9);
}
END_TEST

/* ---- events ------------------------------------------------------------------------------- */

START_TEST(event_basics) {
  NEED_DEVICES(1, n);
  gp_event_t e = NULL;
  gp_stream_t s = NULL;
  OK(gp_event_create(&e));
  OK(gp_stream_create(&s));
  OK(gp_event_query(e)); /* never recorded: complete */
  OK(gp_event_synchronize(e));
  OK(gp_event_record(e, s));
  OK(gp_event_synchronize(e));
  OK(gp_event_query(e));
  OK(gp_event_record(e, NULL));
  OK(gp_event_record(e, GP_STREAM_PER_THREAD));
  OK(gp_event_synchronize(e));
  FAILS(gp_event_create(NULL), GP_ERROR_INVALID_VALUE, "event");
  gp_event_t e2 = e;
  FAILS(gp_event_create_with_flags(&e2, 0x100), GP_ERROR_INVALID_VALUE, "flags");
  ck_assert_ptr_null(e2);
  OK(gp_event_destroy(e));
  OK(gp_event_destroy(NULL));
  FAILS(gp_event_destroy(e), GP_ERROR_INVALID_HANDLE, "event");
  FAILS(gp_event_query(e), GP_ERROR_INVALID_HANDLE, "event");
  FAILS(gp_event_record(e, s), GP_ERROR_INVALID_HANDLE, "event");
  FAILS(gp_event_synchronize((gp_event_t)(uintptr_t)0x4440), GP_ERROR_INVALID_HANDLE, "event");
  FAILS(gp_event_record(NULL, s), GP_ERROR_INVALID_HANDLE, "event");
  OK(gp_event_create(&e));
  FAILS(gp_event_record(e, (gp_stream_t)(uintptr_t)0x4440), GP_ERROR_INVALID_HANDLE, "stream");
  FAILS(gp_event_record(e, (gp_stream_t)(void *)e), GP_ERROR_INVALID_HANDLE, "stream");
  ck_assert_ptr_null(gp_event_native((gp_event_t)(uintptr_t)0x4440));
  OK(gp_event_destroy(e));
  OK(gp_stream_destroy(s));
  still_usable();
}
END_TEST

START_TEST(event_elapsed) {
  NEED_DEVICES(1, n);
  gp_event_t a = NULL, b = NULL, nt = NULL;
  gp_stream_t s = NULL;
  atomic_int flag = 0;
  OK(gp_stream_create(&s));
  OK(gp_event_create(&a));
  OK(gp_event_create_with_flags(&b, GP_EVENT_BLOCKING_SYNC));
  OK(gp_event_create_with_flags(&nt, GP_EVENT_DISABLE_TIMING));
  float ms = -1.0f;
  FAILS(gp_event_elapsed_ms(&ms, a, b), GP_ERROR_INVALID_VALUE, "start"); /* never recorded */
  OK(gp_event_record(a, s));
  OK(gp_launch_host_func(s, sleep_then_set, &flag)); /* 50 ms */
  OK(gp_event_record(b, s));
  OK(gp_event_record(nt, s));
  OK(gp_event_synchronize(b));
  OK(gp_event_elapsed_ms(&ms, a, b));
  ck_assert_msg(ms >= 49.5f && ms < 5000.0f, "elapsed %f ms", (double)ms);
  FAILS(gp_event_elapsed_ms(&ms, a, nt), GP_ERROR_INVALID_VALUE, "end");
  FAILS(gp_event_elapsed_ms(&ms, nt, b), GP_ERROR_INVALID_VALUE, "GP_EVENT_DISABLE_TIMING");
  FAILS(gp_event_elapsed_ms(NULL, a, b), GP_ERROR_INVALID_VALUE, "ms");
  FAILS(gp_event_elapsed_ms(&ms, NULL, b), GP_ERROR_INVALID_HANDLE, "start");
  FAILS(gp_event_elapsed_ms(&ms, a, (gp_event_t)(uintptr_t)0x80), GP_ERROR_INVALID_HANDLE, "end");
  /* Not complete yet: NOT_READY. */
  gate_t *g = gate_new();
  OK(gp_launch_host_func(s, gate_pass, g));
  OK(gp_event_record(b, s));
  ck_assert_int_eq(gp_event_query(b), GP_ERROR_NOT_READY);
  ck_assert_int_eq(gp_event_elapsed_ms(&ms, a, b), GP_ERROR_NOT_READY);
  gate_open(g);
  OK(gp_event_synchronize(b));
  OK(gp_event_elapsed_ms(&ms, a, b));
  OK(gp_event_destroy(a));
  OK(gp_event_destroy(b));
  OK(gp_event_destroy(nt));
  OK(gp_stream_destroy(s));
}
END_TEST

START_TEST(stream_wait_event) {
  NEED_DEVICES(1, n);
  gp_stream_t s1 = NULL, s2 = NULL;
  gp_event_t e = NULL;
  gate_t *g = gate_new();
  atomic_int flag = 0;
  probe_t pr = {&flag, 0};
  OK(gp_stream_create_with_flags(&s1, GP_STREAM_NON_BLOCKING));
  OK(gp_stream_create_with_flags(&s2, GP_STREAM_NON_BLOCKING));
  OK(gp_event_create_with_flags(&e, GP_EVENT_DISABLE_TIMING));
  OK(gp_stream_wait_event(s2, e)); /* never recorded: no wait */
  OK(gp_stream_synchronize(s2));
  OK(gp_launch_host_func(s1, gate_pass, g));
  OK(gp_launch_host_func(s1, sleep_then_set, &flag));
  OK(gp_event_record(e, s1));
  OK(gp_stream_wait_event(s2, e));
  OK(gp_launch_host_func(s2, read_flag, &pr));
  sleep_ms(20);
  ck_assert_int_eq(gp_stream_query(s2), GP_ERROR_NOT_READY);
  gate_open(g);
  OK(gp_stream_synchronize(s2));
  ck_assert_int_eq(atomic_load(&pr.seen), 2);
  FAILS(gp_stream_wait_event(s2, NULL), GP_ERROR_INVALID_HANDLE, "event");
  FAILS(gp_stream_wait_event((gp_stream_t)(uintptr_t)0x90, e), GP_ERROR_INVALID_HANDLE, "stream");
  OK(gp_event_destroy(e));
  FAILS(gp_stream_wait_event(s2, e), GP_ERROR_INVALID_HANDLE, "event");
  OK(gp_stream_destroy(s1));
  OK(gp_stream_destroy(s2));
}
END_TEST

START_TEST(event_destroyed_while_pending) {
  NEED_DEVICES(1, n);
  gp_stream_t s = NULL, s2 = NULL;
  gp_event_t e = NULL;
  gate_t *g = gate_new();
  atomic_int flag = 0;
  probe_t pr = {&flag, 0};
  OK(gp_stream_create(&s));
  OK(gp_stream_create(&s2));
  OK(gp_event_create(&e));
  OK(gp_launch_host_func(s, gate_pass, g));
  OK(gp_launch_host_func(s, sleep_then_set, &flag));
  OK(gp_event_record(e, s));
  OK(gp_stream_wait_event(s2, e));
  OK(gp_launch_host_func(s2, read_flag, &pr));
  OK(gp_event_destroy(e)); /* the pending record and wait complete normally */
  gate_open(g);
  OK(gp_stream_synchronize(s2));
  ck_assert_int_eq(atomic_load(&pr.seen), 2);
  OK(gp_stream_destroy(s));
  OK(gp_stream_destroy(s2));
}
END_TEST

/* ---- native interop ---------------------------------------------------------------------------- */

START_TEST(stream_and_event_wrap) {
  NEED_DEVICES(1, n);
  gp_stream_t s = NULL, w = NULL;
  gp_event_t e = NULL, we = NULL;
  OK(gp_stream_create(&s));
  OK(gp_event_create(&e));
  void *ns = gp_stream_native(s), *ne = gp_event_native(e);
  ck_assert_ptr_nonnull(ns);
  ck_assert_ptr_nonnull(ne);
  if (gp_backend() == GP_BACKEND_CPU) {
    ck_assert_ptr_eq(ns, s);
    ck_assert_ptr_eq(ne, e);
  }
  OK(gp_stream_wrap(&w, ns));
  OK(gp_event_wrap(&we, ne));
  ck_assert_ptr_eq(gp_stream_native(w), ns);
  ck_assert_ptr_eq(gp_event_native(we), ne);
  /* Work through the wrapper lands on the wrapped stream. */
  atomic_int flag = 0;
  int copy = -1;
  OK(gp_launch_host_func(w, sleep_then_set, &flag));
  OK(gp_event_record(we, w));
  OK(gp_memcpy_async(&copy, &flag, sizeof copy, s));
  OK(gp_event_synchronize(e));
  OK(gp_stream_synchronize(s));
  ck_assert_int_eq(copy, 1);
  /* Destroying a wrapper leaves what it wraps. */
  OK(gp_stream_destroy(w));
  OK(gp_event_destroy(we));
  OK(gp_stream_synchronize(s));
  OK(gp_event_query(e));
  FAILS(gp_stream_wrap(NULL, ns), GP_ERROR_INVALID_VALUE, "stream");
  FAILS(gp_stream_wrap(&w, NULL), GP_ERROR_INVALID_VALUE, "native");
  FAILS(gp_event_wrap(NULL, ne), GP_ERROR_INVALID_VALUE, "event");
  FAILS(gp_event_wrap(&we, NULL), GP_ERROR_INVALID_VALUE, "native");
  if (gp_backend() == GP_BACKEND_CPU) {
    int junk = 0;
    FAILS(gp_stream_wrap(&w, &junk), GP_ERROR_INVALID_VALUE, "native");
    FAILS(gp_event_wrap(&we, &junk), GP_ERROR_INVALID_VALUE, "native");
  }
  OK(gp_stream_destroy(s));
  OK(gp_event_destroy(e));
  if (gp_backend() == GP_BACKEND_CPU) {
    /* The wrapped stream and event destroyed first: their wrappers go with them (they
     * kept a pointer to freed memory: heap-use-after-free under ASan). One stream has
     * run work (a worker frees it later), the other none (freed at once). */
    for (int worked = 0; worked < 2; worked++) {
      OK(gp_stream_create(&s));
      OK(gp_event_create(&e));
      OK(gp_stream_wrap(&w, gp_stream_native(s)));
      OK(gp_event_wrap(&we, gp_event_native(e)));
      if (worked) {
        OK(gp_launch_host_func(w, sleep_then_set, &flag));
        OK(gp_event_record(we, w));
      }
      OK(gp_stream_destroy(s));
      OK(gp_event_destroy(e));
      FAILS(gp_stream_synchronize(w), GP_ERROR_INVALID_HANDLE, "stream");
      FAILS(gp_launch_host_func(w, sleep_then_set, &flag), GP_ERROR_INVALID_HANDLE, "stream");
      FAILS(gp_event_query(we), GP_ERROR_INVALID_HANDLE, "event");
      FAILS(gp_event_record(we, NULL), GP_ERROR_INVALID_HANDLE, "event");
      ck_assert_ptr_null(gp_stream_native(w));
      ck_assert_ptr_null(gp_event_native(we));
      FAILS(gp_stream_destroy(w), GP_ERROR_INVALID_HANDLE, "stream");
      FAILS(gp_event_destroy(we), GP_ERROR_INVALID_HANDLE, "event");
    }
    OK(gp_device_synchronize());
  }
  still_usable();
}
END_TEST

/* ---- asynchronous errors ------------------------------------------------------------------------ */

static gp_status_t failing_work(void *user) {
  (void)user;
  return GP__ERR(GP_ERROR_LAUNCH_FAILED, "simulated fault in stream work");
}

static gp_status_t counting_work(void *user) {
  atomic_fetch_add((atomic_int *)user, 1);
  return GP_SUCCESS;
}

START_TEST(async_error_reported_once) {
  NEED_DEVICES(1, n);
  if (gp_backend() != GP_BACKEND_CPU) return; /* sticky on the GPU backends */
  gp_stream_t s = NULL;
  OK(gp_stream_create_with_flags(&s, GP_STREAM_NON_BLOCKING));
  OK(gp__be_enqueue_host_work(s, failing_work, NULL, false));
  FAILS(gp_stream_synchronize(s), GP_ERROR_LAUNCH_FAILED, "simulated fault");
  OK(gp_stream_synchronize(s)); /* not sticky on the CPU */
  /* The fault belongs to the device: a wait that does not cover the failing work
   * returns before it happens; the device-wide wait returns it, once. */
  gate_t *g = gate_new();
  OK(gp_launch_host_func(s, gate_pass, g));
  OK(gp__be_enqueue_host_work(s, failing_work, NULL, false));
  OK(gp_stream_synchronize(GP_STREAM_PER_THREAD));
  gate_open(g);
  ck_assert_int_eq(gp_device_synchronize(), GP_ERROR_LAUNCH_FAILED);
  OK(gp_device_synchronize());
  /* free_user: the argument is released after the work (ASan checks the leak). */
  atomic_int *count = malloc(sizeof *count);
  atomic_store(count, 0);
  atomic_int local = 0;
  OK(gp__be_enqueue_host_work(s, counting_work, &local, false));
  OK(gp__be_enqueue_host_work(s, counting_work, count, true));
  OK(gp_stream_synchronize(s));
  ck_assert_int_eq(atomic_load(&local), 1);
  OK(gp_stream_destroy(s));
  still_usable();
}
END_TEST

START_TEST(async_error_other_device) {
  NEED_DEVICES(2, n);
  SKIP_IF(gp_backend() != GP_BACKEND_CPU, "a failing host work item is the cpu backend's");
  gp_stream_t s = NULL;
  OK(gp_device_set(1));
  OK(gp_stream_create(&s));
  OK(gp_device_set(0));
  OK(gp__be_enqueue_host_work(s, failing_work, NULL, false));
  ck_assert_int_eq(gp_stream_synchronize(s), GP_ERROR_LAUNCH_FAILED);
  OK(gp_stream_synchronize(s));
  OK(gp_stream_destroy(s));
}
END_TEST

/* ---- devices, threads, fork ------------------------------------------------------------------------ */

START_TEST(streams_on_every_device) {
  NEED_DEVICES(1, n);
  gp_stream_t s[64];
  gp_event_t e[64];
  int *buf[64];
  for (int d = 0; d < n; d++) {
    OK(gp_device_set(d));
    OK(gp_stream_create(&s[d]));
    OK(gp_event_create(&e[d]));
    OK(gp_malloc((void **)&buf[d], 256 * sizeof(int)));
    OK(gp_memset_d32_async(buf[d], (uint32_t)d + 1, 256, s[d]));
    OK(gp_event_record(e[d], s[d]));
  }
  /* Device 0's legacy stream waits for every device's event. */
  OK(gp_device_set(0));
  for (int d = 0; d < n; d++) OK(gp_stream_wait_event(NULL, e[d]));
  int back[256];
  for (int d = 0; d < n; d++) {
    OK(gp_memcpy_async(back, buf[d], sizeof back, NULL));
    OK(gp_stream_synchronize(NULL));
    ck_assert_int_eq(back[255], d + 1);
  }
  for (int d = 0; d < n; d++) {
    OK(gp_device_set(d));
    OK(gp_device_synchronize());
    OK(gp_free(buf[d]));
    OK(gp_event_destroy(e[d]));
    OK(gp_stream_destroy(s[d]));
  }
  OK(gp_device_set(0));
}
END_TEST

typedef struct thread_arg {
  int device;
  atomic_int *counter;
  int failures;
} thread_arg_t;

static void count_up(void *c) { atomic_fetch_add((atomic_int *)c, 1); }

static void *stream_thread(void *p) {
  thread_arg_t *a = p;
  gp_stream_t s = NULL;
  a->failures += gp_device_set(a->device) != GP_SUCCESS;
  for (int round = 0; round < 20; round++) {
    a->failures += gp_stream_create_with_flags(&s, round % 2 ? GP_STREAM_NON_BLOCKING : 0) != GP_SUCCESS;
    for (int i = 0; i < 10; i++) a->failures += gp_launch_host_func(s, count_up, a->counter) != GP_SUCCESS;
    a->failures += gp_launch_host_func(GP_STREAM_PER_THREAD, count_up, a->counter) != GP_SUCCESS;
    a->failures += gp_stream_synchronize(s) != GP_SUCCESS;
    a->failures += gp_stream_destroy(s) != GP_SUCCESS;
  }
  a->failures += gp_stream_synchronize(GP_STREAM_PER_THREAD) != GP_SUCCESS;
  return NULL;
}

START_TEST(threads_share_streams) {
  NEED_DEVICES(1, n);
  enum { T = 4 };
  pthread_t t[T];
  atomic_int counter = 0;
  thread_arg_t a[T];
  for (int i = 0; i < T; i++) {
    a[i] = (thread_arg_t){i % n, &counter, 0};
    ck_assert_int_eq(pthread_create(&t[i], NULL, stream_thread, &a[i]), 0);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(t[i], NULL);
    ck_assert_int_eq(a[i].failures, 0);
  }
  for (int d = 0; d < n; d++) {
    OK(gp_device_set(d));
    OK(gp_device_synchronize());
  }
  ck_assert_int_eq(atomic_load(&counter), T * 20 * 11);
  OK(gp_device_set(0));
}
END_TEST

/* Everything a child does after fork: 0 on success. */
static int child_uses_gpuport(void) {
  gp_stream_t s = NULL;
  gp_event_t e = NULL;
  int *p = NULL, v = 42, w = 0;
  atomic_int flag = 0;
  if (gp_stream_create(&s) || gp_event_create(&e) || gp_malloc((void **)&p, sizeof v)) return 1;
  if (gp_launch_host_func(s, sleep_then_set, &flag) || gp_memcpy_async(p, &v, sizeof v, s)) return 2;
  if (gp_event_record(e, s) || gp_event_synchronize(e) || atomic_load(&flag) != 1) return 3;
  if (gp_memcpy(&w, p, sizeof w) || w != 42) return 4;
  if (gp_launch_host_func(NULL, count_up, &flag) || gp_device_synchronize() || flag != 2) return 5;
  if (gp_free(p) || gp_event_destroy(e) || gp_stream_destroy(s)) return 6;
  return 0;
}

START_TEST(fork_child_starts_afresh) {
  NEED_DEVICES(1, n);
  if (gp_backend() != GP_BACKEND_CPU) return; /* the child of a GPU process may not use it */
  gp_stream_t s = NULL;
  gate_t *g = gate_new();
  atomic_int flag = 0, count = 0;
  OK(gp_stream_create_with_flags(&s, GP_STREAM_NON_BLOCKING));
  OK(gp_launch_host_func(s, gate_pass, g)); /* the parent's work is pending at the fork */
  OK(gp_launch_host_func(s, sleep_then_set, &flag));
  OK(gp_launch_host_func(NULL, count_up, &count));
  OK(gp_stream_synchronize(NULL));
  /* Fork once the workers are parked: the sanitizers' allocator (GCC 12) is not
   * fork-safe, so a thread allocating at the fork (one starting up) would leave its
   * lock held in the child. Plain builds are safe either way (glibc malloc is). */
  while (!atomic_load(&g->arrived)) sleep_ms(1);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) _exit(child_uses_gpuport());
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed at step %d",
                WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  ck_assert_int_eq(atomic_load(&flag), 0); /* the parent's queue is intact */
  gate_open(g);
  OK(gp_device_synchronize());
  ck_assert_int_eq(atomic_load(&flag), 1);
  ck_assert_int_eq(atomic_load(&count), 1);
  OK(gp_stream_destroy(s));
}
END_TEST

/* ---- launch configuration checks (before anything runs) --------------------------------------------- */

static void never_run(void **args) { (void)args; }
static const uint16_t one_int[1] = {sizeof(int)};

static struct gp_kernel_s fake_kernel(void) {
  struct gp_kernel_s k;
  memset(&k, 0, sizeof k);
  k.magic = GP_KERNEL_MAGIC;
  k.abi_version = GP_KERNEL_ABI_VERSION;
  k.name = "fake";
  k.backend = (int)gp_backend();
  k.warp_size = 32;
  k.num_params = 1;
  k.param_sizes = one_int;
  k.gpu_entry = (const void *)one_int; /* never launched: the checks fail first */
  k.cpu_run_block = never_run;
  k.cpu_run_thread = never_run;
  k.max_threads_per_block = 1024;
  return k;
}

START_TEST(launch_rejects_bad_configurations) {
  NEED_DEVICES(1, n);
  /* Descriptors are looked up before they are read: these two are registered as a
   * kernel's object registers its own (gp__abi_register), so their fields are checked. */
  struct gp_kernel_s k = fake_kernel(), bad = k;
  ck_assert_int_eq(gp__abi_register(&k), 0);
  ck_assert_int_eq(gp__abi_register(&bad), 0);
  int x = 0;
  void *args[1] = {&x};
  gp_dim3_t one = gp_dim3(1, 1, 1);
  FAILS(gp_launch(&k, one, gp_dim3(2048, 1, 1), 0, NULL, args), GP_ERROR_INVALID_CONFIGURATION,
        "block");
  FAILS(gp_launch(&k, one, gp_dim3(64, 32, 1), 0, NULL, args), GP_ERROR_INVALID_CONFIGURATION,
        "block");
  FAILS(gp_launch(&k, one, gp_dim3(1, 1, 65), 0, NULL, args), GP_ERROR_INVALID_CONFIGURATION,
        "block.z");
  FAILS(gp_launch(&k, gp_dim3(1, 70000, 1), one, 0, NULL, args), GP_ERROR_INVALID_CONFIGURATION,
        "grid.y");
  FAILS(gp_launch(&k, gp_dim3(0, 1, 1), one, 0, NULL, args), GP_ERROR_INVALID_CONFIGURATION,
        "grid.x");
  FAILS(gp_launch(&k, one, gp_dim3(32, 0, 1), 0, NULL, args), GP_ERROR_INVALID_CONFIGURATION,
        "block.y");
  FAILS(gp_launch(&k, one, one, (size_t)1 << 20, NULL, args), GP_ERROR_INVALID_CONFIGURATION,
        "dynamic_shared_bytes");
  FAILS(gp_launch(&k, one, one, 0, NULL, NULL), GP_ERROR_INVALID_VALUE, "args");
  void *null_arg[1] = {NULL};
  FAILS(gp_launch(&k, one, one, 0, NULL, null_arg), GP_ERROR_INVALID_VALUE, "args[0]");
  FAILS(gp_launch(NULL, one, one, 0, NULL, args), GP_ERROR_INVALID_VALUE, "kernel");
  FAILS(gp_launch(&k, one, one, 0, (gp_stream_t)(uintptr_t)0x50, args), GP_ERROR_INVALID_HANDLE,
        "stream");
  bad.magic = 0;
  FAILS(gp_launch(&bad, one, one, 0, NULL, args), GP_ERROR_INVALID_HANDLE, "kernel");
  ck_assert_ptr_null(gp_kernel_name(&bad));
  bad = k;
  bad.backend = gp_backend() == GP_BACKEND_CPU ? GP_BACKEND_HIP : GP_BACKEND_CPU;
  FAILS(gp_launch(&bad, one, one, 0, NULL, args), GP_ERROR_INVALID_IMAGE, "kernel");
  bad = k;
  bad.abi_version = 99;
  FAILS(gp_launch(&bad, one, one, 0, NULL, args), GP_ERROR_INVALID_IMAGE, "kernel");
  /* Descriptors the executor cannot run fail here, not later as an asynchronous error. */
  bad = k;
  bad.warp_size = 48;
  FAILS(gp_launch(&bad, one, one, 0, NULL, args), GP_ERROR_INVALID_IMAGE, "warp");
  if (gp_backend() == GP_BACKEND_CPU) {
    bad = k;
    bad.cpu_run_thread = NULL;
    FAILS(gp_launch(&bad, one, one, 0, NULL, args), GP_ERROR_INVALID_IMAGE, "kernel");
  }
  OK(gp_device_synchronize());
  /* Stray pointers: an error, not a segfault reading the magic. */
  FAILS(gp_launch((gp_kernel_t)(uintptr_t)0x10, one, one, 0, NULL, args), GP_ERROR_INVALID_HANDLE,
        "kernel");
  FAILS(gp_launch((gp_kernel_t)((uintptr_t)&k + 1), one, one, 0, NULL, args),
        GP_ERROR_INVALID_HANDLE, "kernel");
  FAILS(gp_kernel_set_max_dynamic_shared((gp_kernel_t)(uintptr_t)0x7000, 16),
        GP_ERROR_INVALID_HANDLE, "kernel");
  ck_assert_ptr_null(gp_kernel_name((gp_kernel_t)(uintptr_t)0x20));
  ck_assert_str_eq(gp_kernel_name(&k), "fake");
  ck_assert_ptr_null(gp_kernel_name(NULL));
  /* Raising the limit: up to the opt-in maximum, and still checked. */
  gp_device_props_t p;
  gp_device_props_init(&p);
  OK(gp_device_get_props(&p, 0));
  FAILS(gp_kernel_set_max_dynamic_shared(&k, p.shared_memory_per_block_optin + 1),
        GP_ERROR_INVALID_VALUE, "bytes");
  FAILS(gp_kernel_set_max_dynamic_shared(NULL, 1024), GP_ERROR_INVALID_VALUE, "kernel");
  FAILS(gp_kernel_set_max_dynamic_shared(&bad, 1024), GP_ERROR_INVALID_IMAGE, "kernel");
  OK(gp_kernel_set_max_dynamic_shared(&k, p.shared_memory_per_block_optin));
  FAILS(gp_launch(&k, one, one, p.shared_memory_per_block_optin + 1, NULL, args),
        GP_ERROR_INVALID_CONFIGURATION, "dynamic_shared_bytes");
  /* A descriptor no object registered (a copy of a good one) is not a kernel. */
  struct gp_kernel_s copy = k;
  FAILS(gp_launch(&copy, one, one, 0, NULL, args), GP_ERROR_INVALID_HANDLE, "kernel");
  ck_assert_ptr_null(gp_kernel_name(&copy));
  gp__abi_unregister(&k);
  gp__abi_unregister(&bad);
  FAILS(gp_launch(&k, one, one, 0, NULL, args), GP_ERROR_INVALID_HANDLE, "kernel");
  still_usable();
}
END_TEST

/* ---- the thread's last error (cudaGetLastError, cudaPeekAtLastError) ------------------------- */

GP_KERNEL_DECLARE(kt_vadd);

/* A refused launch is the thread's last error until gp_get_last_error returns it, through
 * successful calls; gp_get_last_error then resets it, gp_peek_at_last_error does not. */
START_TEST(last_error_of_refused_launch) {
  NEED_DEVICES(1, n);
  (void)gp_get_last_error(); /* whatever earlier tests of this process left */
  ck_assert_int_eq(gp_get_last_error(), GP_SUCCESS);
  int nn = 1;
  float *a = NULL;
  void *args[] = {&nn, &a, &a, &a};
  OK(gp_malloc((void **)&a, 64 * sizeof(float)));
  /* cuda: kt_vadd<<<1, 2048>>> then cudaGetLastError() == cudaErrorInvalidConfiguration */
  FAILS(gp_launch(GP_KERNEL_REF(kt_vadd), gp_dim3(1, 1, 1), gp_dim3(2048, 1, 1), 0, NULL, args),
        GP_ERROR_INVALID_CONFIGURATION, "block");
  OK(gp_memset(a, 0, 64 * sizeof(float))); /* a success does not reset it */
  OK(gp_device_synchronize());
  ck_assert_int_eq(gp_peek_at_last_error(), GP_ERROR_INVALID_CONFIGURATION);
  ck_assert_int_eq(gp_peek_at_last_error(), GP_ERROR_INVALID_CONFIGURATION);
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "block"));
  ck_assert_int_eq(gp_get_last_error(), GP_ERROR_INVALID_CONFIGURATION);
  ck_assert_int_eq(gp_get_last_error(), GP_SUCCESS);
  ck_assert_int_eq(gp_peek_at_last_error(), GP_SUCCESS);
  /* The last failure wins; NOT_READY is an answer, not an error. */
  FAILS(gp_launch(GP_KERNEL_REF(kt_vadd), gp_dim3(0, 1, 1), gp_dim3(1, 1, 1), 0, NULL, args),
        GP_ERROR_INVALID_CONFIGURATION, "grid.x");
  FAILS(gp_launch(GP_KERNEL_REF(kt_vadd), gp_dim3(1, 1, 1), gp_dim3(1, 1, 1), 0,
                  (gp_stream_t)(uintptr_t)0x50, args),
        GP_ERROR_INVALID_HANDLE, "stream");
  gp_stream_t s = NULL;
  gate_t *g = gate_new();
  OK(gp_stream_create_with_flags(&s, GP_STREAM_NON_BLOCKING));
  OK(gp_launch_host_func(s, gate_pass, g));
  ck_assert_int_eq(gp_stream_query(s), GP_ERROR_NOT_READY);
  gate_open(g);
  OK(gp_stream_synchronize(s));
  ck_assert_int_eq(gp_get_last_error(), GP_ERROR_INVALID_HANDLE);
  ck_assert_int_eq(gp_get_last_error(), GP_SUCCESS);
  OK(gp_stream_destroy(s));
  OK(gp_free(a));
}
END_TEST

/* A failed allocation is the last error; each host thread has its own. */
static void *other_thread_last_error(void *arg) {
  *(gp_status_t *)arg = gp_peek_at_last_error();
  return NULL;
}

START_TEST(last_error_of_failed_malloc) {
  NEED_DEVICES(1, n);
  (void)gp_get_last_error();
  void *p = (void *)1;
  FAILS(gp_malloc(&p, SIZE_MAX / 2), GP_ERROR_OUT_OF_MEMORY, "gp_malloc");
  ck_assert_ptr_null(p);
  pthread_t t;
  gp_status_t other = GP_ERROR_INTERNAL;
  ck_assert_int_eq(pthread_create(&t, NULL, other_thread_last_error, &other), 0);
  pthread_join(t, NULL);
  ck_assert_int_eq(other, GP_SUCCESS);
  ck_assert_int_eq(gp_peek_at_last_error(), GP_ERROR_OUT_OF_MEMORY);
  ck_assert_int_eq(gp_get_last_error(), GP_ERROR_OUT_OF_MEMORY);
  ck_assert_int_eq(gp_get_last_error(), GP_SUCCESS);
  still_usable();
  ck_assert_int_eq(gp_get_last_error(), GP_SUCCESS);
}
END_TEST

/* An asynchronous fault comes first; on the cpu backend it is reset like the rest. */
START_TEST(last_error_async_fault_first) {
  NEED_DEVICES(1, n);
  SKIP_IF(gp_backend() != GP_BACKEND_CPU, "a failing host work item is the cpu backend's; "
                                          "faults are sticky on the GPU backends");
  (void)gp_get_last_error();
  FAILS(gp_malloc(NULL, 4), GP_ERROR_INVALID_VALUE, "ptr");
  gp_stream_t s = NULL;
  OK(gp_stream_create(&s));
  OK(gp__be_enqueue_host_work(s, failing_work, NULL, false));
  /* Wait without reporting: a host function behind it on the same stream. */
  atomic_int ran = 0;
  OK(gp_launch_host_func(s, count_up, &ran));
  while (!atomic_load(&ran)) sleep_ms(1);
  ck_assert_int_eq(gp_peek_at_last_error(), GP_ERROR_LAUNCH_FAILED);
  ck_assert_int_eq(gp_get_last_error(), GP_ERROR_LAUNCH_FAILED);
  ck_assert_int_eq(gp_get_last_error(), GP_SUCCESS);
  OK(gp_stream_synchronize(s));
  OK(gp_stream_destroy(s));
}
END_TEST

/* ---- occupancy and managed-memory attach ------------------------------------------------------ */

START_TEST(occupancy_potential_block_size) {
  NEED_DEVICES(1, n);
  gp_device_props_t p;
  gp_device_props_init(&p);
  OK(gp_device_get_props(&p, 0));
  int grid = -1, block = -1;
  OK(gp_occupancy_max_potential_block_size(&grid, &block, GP_KERNEL_REF(kt_vadd), 0, 0));
  ck_assert_int_gt(block, 0);
  ck_assert_int_le(block, p.max_threads_per_block);
  int per_sm = 0;
  OK(gp_occupancy_max_active_blocks(&per_sm, GP_KERNEL_REF(kt_vadd), block, 0));
  ck_assert_int_eq(grid, per_sm * p.multiprocessor_count);
  /* No other block size keeps more threads resident. */
  for (int b = p.warp_size; b <= p.max_threads_per_block; b += p.warp_size) {
    int k = 0;
    OK(gp_occupancy_max_active_blocks(&k, GP_KERNEL_REF(kt_vadd), b, 0));
    ck_assert_int_le(k * b, per_sm * block);
  }
  OK(gp_occupancy_max_potential_block_size(&grid, &block, GP_KERNEL_REF(kt_vadd), 0, 100));
  ck_assert_int_le(block, 100);
  if (gp_backend() == GP_BACKEND_CPU) {
    /* One block per executor thread: the largest block allowed, one per multiprocessor. */
    ck_assert_int_eq(block, 100);
    OK(gp_occupancy_max_potential_block_size(&grid, &block, GP_KERNEL_REF(kt_vadd), 0, 0));
    ck_assert_int_eq(block, 1024);
    ck_assert_int_eq(grid, p.multiprocessor_count);
  }
  /* Too much shared memory for any block: 0 and 0. */
  OK(gp_occupancy_max_potential_block_size(&grid, &block, GP_KERNEL_REF(kt_vadd),
                                           p.shared_memory_per_block_optin + 1, 0));
  ck_assert_int_eq(block, 0);
  ck_assert_int_eq(grid, 0);
  FAILS(gp_occupancy_max_potential_block_size(NULL, &block, GP_KERNEL_REF(kt_vadd), 0, 0),
        GP_ERROR_INVALID_VALUE, "min_grid");
  FAILS(gp_occupancy_max_potential_block_size(&grid, NULL, GP_KERNEL_REF(kt_vadd), 0, 0),
        GP_ERROR_INVALID_VALUE, "block");
  FAILS(gp_occupancy_max_potential_block_size(&grid, &block, GP_KERNEL_REF(kt_vadd), 0, -1),
        GP_ERROR_INVALID_VALUE, "block_size_limit");
  FAILS(gp_occupancy_max_potential_block_size(&grid, &block, NULL, 0, 0), GP_ERROR_INVALID_VALUE,
        "kernel");
}
END_TEST

START_TEST(stream_attach_mem) {
  NEED_DEVICES(1, n);
  gp_stream_t s = NULL;
  void *m = NULL, *d = NULL;
  OK(gp_stream_create(&s));
  OK(gp_malloc_managed(&m, 4096));
  OK(gp_malloc(&d, 64));
  OK(gp_stream_attach_mem_async(s, m, 0, GP_MEM_ATTACH_SINGLE));
  OK(gp_stream_attach_mem_async(s, m, 4096, GP_MEM_ATTACH_HOST));
  OK(gp_stream_attach_mem_async(NULL, m, 0, GP_MEM_ATTACH_GLOBAL));
  OK(gp_stream_synchronize(s));
  ((char *)m)[0] = 1; /* the host touches it after the attach */
  FAILS(gp_stream_attach_mem_async(s, m, 100, GP_MEM_ATTACH_GLOBAL), GP_ERROR_INVALID_VALUE, "length");
  FAILS(gp_stream_attach_mem_async(s, (char *)m + 64, 0, GP_MEM_ATTACH_GLOBAL), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_stream_attach_mem_async(s, m, 0, 0), GP_ERROR_INVALID_VALUE, "flags");
  FAILS(gp_stream_attach_mem_async(s, m, 0, GP_MEM_ATTACH_HOST | GP_MEM_ATTACH_SINGLE),
        GP_ERROR_INVALID_VALUE, "flags");
  FAILS(gp_stream_attach_mem_async(NULL, m, 0, GP_MEM_ATTACH_SINGLE), GP_ERROR_INVALID_VALUE,
        "GP_MEM_ATTACH_SINGLE");
  FAILS(gp_stream_attach_mem_async(s, NULL, 0, GP_MEM_ATTACH_GLOBAL), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_stream_attach_mem_async(s, d, 0, GP_MEM_ATTACH_GLOBAL), GP_ERROR_INVALID_VALUE, "managed");
  FAILS(gp_stream_attach_mem_async((gp_stream_t)(uintptr_t)0x50, m, 0, GP_MEM_ATTACH_GLOBAL),
        GP_ERROR_INVALID_HANDLE, "stream");
  OK(gp_free(m));
  OK(gp_free(d));
  OK(gp_stream_destroy(s));
}
END_TEST

/* ---- the device rules of CUDA's "Stream and Event Behavior" ------------------------------- */

static gp_status_t launch_vadd(int n, const float *a, const float *b, float *c, gp_stream_t s) {
  void *args[] = {&n, &a, &b, &c};
  return gp_launch(GP_KERNEL_REF(kt_vadd), gp_dim3(1, 1, 1), gp_dim3(64, 1, 1), 0, s, args);
}

/* Kernel work goes into a stream of the current device: a launch (and GEMM, attention)
 * into another device's stream is refused as CUDA refuses it
 * (cudaErrorInvalidResourceHandle), naming the stream; copies (which CUDA allows there),
 * sets, host functions and event waits on another device's stream stay allowed. */
START_TEST(launch_into_other_device_stream) {
  NEED_DEVICES(2, n);
  SKIP_IF(gp_backend() != GP_BACKEND_CPU,
          "the GPU backends leave the rule to the native runtime (CUDA: cudaErrorInvalidResourceHandle)");
  enum { N = 64 };
  gp_stream_t s1 = NULL;
  float *a = NULL, *c = NULL, h[N];
  OK(gp_device_set(1));
  OK(gp_stream_create(&s1));
  OK(gp_malloc((void **)&a, N * sizeof(float)));
  OK(gp_malloc((void **)&c, N * sizeof(float)));
  OK(gp_device_set(0));
  for (int i = 0; i < N; i++) h[i] = (float)i;
  OK(gp_memcpy_async(a, h, sizeof h, s1)); /* a copy may use another device's stream */
  OK(gp_memset_async(c, 0, sizeof h, s1));
  atomic_int ran = 0;
  OK(gp_launch_host_func(s1, count_up, &ran));
  FAILS(launch_vadd(N, a, a, c, s1), GP_ERROR_INVALID_HANDLE, "'stream'");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "device 1"));
  gp_launch_config_t cfg;
  gp_launch_config_init(&cfg);
  cfg.grid = gp_dim3(1, 1, 1);
  cfg.block = gp_dim3(64, 1, 1);
  cfg.stream = s1;
  int nn = N;
  void *args[] = {&nn, &a, &a, &c};
  FAILS(gp_launch_ex(GP_KERNEL_REF(kt_vadd), &cfg, args), GP_ERROR_INVALID_HANDLE, "'stream'");
  FAILS(gp_gemm(s1, GP_ROW_MAJOR, GP_OP_N, GP_OP_N, 8, 8, 1, 1.0f, a, GP_F32, 1, a, GP_F32, 8, 0.0f,
                c, GP_F32, 8),
        GP_ERROR_INVALID_HANDLE, "'stream'");
  gp_attention_desc_t d;
  gp_attention_desc_init(&d);
  d.dtype = GP_F32;
  d.batch = d.seqlen_q = d.seqlen_k = d.heads_q = d.heads_kv = 1;
  d.head_dim = 8;
  d.q = d.k = d.v = a;
  d.o = c;
  FAILS(gp_attention_fwd(s1, &d), GP_ERROR_INVALID_HANDLE, "'stream'");
  /* The default streams are the current device's: fine from either device. */
  OK(launch_vadd(N, a, a, c, NULL));
  OK(gp_device_synchronize());
  /* With device 1 current the launch into its stream runs. */
  OK(gp_device_set(1));
  OK(launch_vadd(N, a, a, c, s1));
  OK(gp_stream_synchronize(s1));
  OK(gp_memcpy(h, c, sizeof h));
  for (int i = 0; i < N; i++) ck_assert_float_eq(h[i], 2.0f * (float)i);
  ck_assert_int_eq(atomic_load(&ran), 1);
  OK(gp_device_set(0));
  OK(gp_free(a));
  OK(gp_free(c));
  OK(gp_stream_destroy(s1));
}
END_TEST

/* An event is recorded into a stream of its own device (cudaEventRecord:
 * cudaErrorInvalidResourceHandle otherwise), whichever device is current; a stream may
 * wait for another device's event, and an event of another device may be queried and
 * waited for. */
START_TEST(event_record_other_device) {
  NEED_DEVICES(2, n);
  SKIP_IF(gp_backend() != GP_BACKEND_CPU,
          "the GPU backends leave the rule to the native runtime (CUDA: cudaErrorInvalidResourceHandle)");
  gp_stream_t s0 = NULL, s1 = NULL;
  gp_event_t e1 = NULL;
  OK(gp_device_set(0));
  OK(gp_stream_create(&s0));
  OK(gp_device_set(1));
  OK(gp_stream_create(&s1));
  OK(gp_event_create(&e1));
  OK(gp_device_set(0));
  FAILS(gp_event_record(e1, s0), GP_ERROR_INVALID_HANDLE, "'event'");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "'stream'"));
  FAILS(gp_event_record(e1, NULL), GP_ERROR_INVALID_HANDLE, "'event'"); /* device 0's stream */
  FAILS(gp_event_record(e1, GP_STREAM_PER_THREAD), GP_ERROR_INVALID_HANDLE, "'event'");
  OK(gp_event_record(e1, s1)); /* its own device's stream, device 0 current */
  OK(gp_stream_wait_event(s0, e1));
  OK(gp_stream_wait_event(NULL, e1));
  OK(gp_event_synchronize(e1));
  OK(gp_event_query(e1));
  OK(gp_stream_synchronize(s0));
  OK(gp_device_set(1));
  OK(gp_event_record(e1, NULL)); /* device 1's default stream */
  OK(gp_event_synchronize(e1));
  OK(gp_device_set(0));
  OK(gp_event_destroy(e1));
  OK(gp_stream_destroy(s0));
  OK(gp_stream_destroy(s1));
}
END_TEST

/* ---- stream callbacks (gp_stream_add_callback) ---------------------------------------------- */

typedef struct cb_seen {
  atomic_int calls;
  gp_stream_t stream;
  gp_status_t status;
  void *user;
} cb_seen_t;

static void record_callback(gp_stream_t stream, gp_status_t status, void *user) {
  cb_seen_t *c = user;
  usleep(20000); /* later work of the stream must wait for it */
  c->stream = stream;
  c->status = status;
  c->user = user;
  atomic_fetch_add(&c->calls, 1);
}

START_TEST(stream_callback_orders_stream) {
  NEED_DEVICES(1, n);
  gp_stream_t s = NULL;
  OK(gp_stream_create(&s));
  cb_seen_t c = {0};
  int copy = -1;
  OK(gp_stream_add_callback(s, record_callback, &c, 0));
  /* The copy reads the count only after the callback has run. */
  OK(gp_memcpy_async(&copy, &c.calls, sizeof copy, s));
  OK(gp_stream_synchronize(s));
  ck_assert_int_eq(copy, 1);
  ck_assert_ptr_eq(c.stream, s);
  ck_assert_int_eq(c.status, GP_SUCCESS);
  ck_assert_ptr_eq(c.user, &c);
  /* A default stream is given to the callback as it was named. */
  cb_seen_t d = {0};
  d.stream = s;
  OK(gp_stream_add_callback(NULL, record_callback, &d, 0));
  OK(gp_device_synchronize());
  ck_assert_int_eq(atomic_load(&d.calls), 1);
  ck_assert_ptr_null(d.stream);
  OK(gp_stream_add_callback(GP_STREAM_PER_THREAD, record_callback, &d, 0));
  OK(gp_stream_synchronize(GP_STREAM_PER_THREAD));
  ck_assert_ptr_eq(d.stream, GP_STREAM_PER_THREAD);
  /* Bad input: nothing is enqueued. */
  FAILS(gp_stream_add_callback(s, NULL, &c, 0), GP_ERROR_INVALID_VALUE, "callback");
  FAILS(gp_stream_add_callback(s, record_callback, &c, 1), GP_ERROR_INVALID_VALUE, "flags");
  gp_stream_t gone = s;
  OK(gp_stream_destroy(s));
  FAILS(gp_stream_add_callback(gone, record_callback, &c, 0), GP_ERROR_INVALID_HANDLE, "stream");
  FAILS(gp_stream_add_callback((gp_stream_t)(uintptr_t)0x12345670, record_callback, &c, 0),
        GP_ERROR_INVALID_HANDLE, "stream");
  ck_assert_int_eq(atomic_load(&c.calls), 1);
  still_usable();
}
END_TEST

/* The callback receives the error of earlier work, without taking it from the waits. */
START_TEST(stream_callback_status) {
  NEED_DEVICES(1, n);
  if (gp_backend() != GP_BACKEND_CPU) return; /* the simulated fault is the cpu backend's */
  gp_stream_t s = NULL;
  OK(gp_stream_create_with_flags(&s, GP_STREAM_NON_BLOCKING));
  OK(gp__be_enqueue_host_work(s, failing_work, NULL, false));
  cb_seen_t c = {0};
  OK(gp_stream_add_callback(s, record_callback, &c, 0));
  FAILS(gp_stream_synchronize(s), GP_ERROR_LAUNCH_FAILED, "simulated fault");
  ck_assert_int_eq(atomic_load(&c.calls), 1);
  ck_assert_int_eq(c.status, GP_ERROR_LAUNCH_FAILED);
  /* Reported once: a later callback sees success again. */
  OK(gp_stream_add_callback(s, record_callback, &c, 0));
  OK(gp_stream_synchronize(s));
  ck_assert_int_eq(atomic_load(&c.calls), 2);
  ck_assert_int_eq(c.status, GP_SUCCESS);
  OK(gp_stream_destroy(s));
}
END_TEST

/* As CUDA, a capture does not take stream callbacks (host functions it does). */
START_TEST(stream_callback_not_captured) {
  NEED_DEVICES(1, n);
  gp_stream_t s = NULL;
  OK(gp_stream_create_with_flags(&s, GP_STREAM_NON_BLOCKING));
  cb_seen_t c = {0};
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_RELAXED));
  ck_assert_int_eq(gp_stream_add_callback(s, record_callback, &c, 0), GP_ERROR_NOT_SUPPORTED);
  gp_graph_t g = NULL;
  ck_assert_int_ne(gp_stream_end_capture(s, &g), GP_SUCCESS);
  ck_assert_ptr_null(g);
  OK(gp_stream_synchronize(s));
  ck_assert_int_eq(atomic_load(&c.calls), 0);
  OK(gp_stream_destroy(s));
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("stream");
  TCase *tc = tcase_create("stream");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, NULL, teardown);
  tcase_add_test(tc, stream_create_destroy);
  tcase_add_test(tc, stream_bad_handles);
  tcase_add_test(tc, host_func_orders_stream);
  tcase_add_test(tc, stream_callback_orders_stream);
  tcase_add_test(tc, stream_callback_status);
  tcase_add_test(tc, stream_callback_not_captured);
  tcase_add_test(tc, host_func_must_not_wait);
  tcase_add_test(tc, stream_query_not_ready);
  tcase_add_test(tc, destroy_with_pending_work);
  tcase_add_test(tc, legacy_waits_for_blocking_stream);
  tcase_add_test(tc, legacy_skips_non_blocking_stream);
  tcase_add_test(tc, per_thread_stream);
  tcase_add_test(tc, event_basics);
  tcase_add_test(tc, event_elapsed);
  tcase_add_test(tc, stream_wait_event);
  tcase_add_test(tc, event_destroyed_while_pending);
  tcase_add_test(tc, stream_and_event_wrap);
  tcase_add_test(tc, async_error_reported_once);
  tcase_add_test(tc, async_error_other_device);
  tcase_add_test(tc, streams_on_every_device);
  tcase_add_test(tc, threads_share_streams);
  tcase_add_test(tc, fork_child_starts_afresh);
  tcase_add_test(tc, launch_rejects_bad_configurations);
  tcase_add_test(tc, launch_into_other_device_stream);
  tcase_add_test(tc, event_record_other_device);
  tcase_add_test(tc, last_error_of_refused_launch);
  tcase_add_test(tc, last_error_of_failed_malloc);
  tcase_add_test(tc, last_error_async_fault_first);
  tcase_add_test(tc, occupancy_potential_block_size);
  tcase_add_test(tc, stream_attach_mem);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return run_suite("test_stream", suite()); }
