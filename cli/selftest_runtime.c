/*
 * selftest_runtime.c - checks of the runtime: memory, copies, memset, streams, events,
 * host functions, and error paths that must return the right status and leave the
 * library usable.
 */
#include "selftest.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t pick(const st_ctx_t *c, size_t quick, size_t normal, size_t big) {
  return c->quick ? quick : c->big ? big : normal;
}

/* Host -> device -> device -> host round trip through pageable and page-locked host
 * memory, plus copies at odd offsets and lengths; the data must come back bit-exact. */
static void check_alloc_copy(st_ctx_t *c, const void *arg) {
  (void)arg;
  size_t n = pick(c, 1 << 16, 1 << 22, 1 << 26), bytes = n * sizeof(float);
  unsigned char *src = st_random(c, GP_F32, n, -1e3, 1e3), *want = malloc(bytes);
  void *d1 = NULL, *d2 = NULL, *pinned = NULL;
  if (!src || !want) {
    st_fail(c, "host allocation of %zu bytes failed", bytes);
    goto out;
  }
  ST_TRY(c, gp_malloc(&d1, bytes));
  ST_TRY(c, gp_malloc(&d2, bytes));
  ST_TRY(c, gp_malloc_host(&pinned, bytes));
  gp_pointer_attributes_t a;
  gp_pointer_attributes_init(&a);
  ST_TRY(c, gp_pointer_get_attributes(&a, d1));
  if (a.type != GP_MEMORY_DEVICE) st_fail(c, "gp_malloc memory reports type %d", (int)a.type);
  gp_pointer_attributes_init(&a);
  ST_TRY(c, gp_pointer_get_attributes(&a, pinned));
  if (a.type != GP_MEMORY_HOST) st_fail(c, "gp_malloc_host memory reports type %d", (int)a.type);

  ST_TRY(c, gp_memcpy(d1, src, bytes));    /* pageable H2D */
  ST_TRY(c, gp_memcpy(d2, d1, bytes));     /* D2D */
  ST_TRY(c, gp_memcpy(pinned, d2, bytes)); /* D2H into page-locked memory */
  /* Odd offsets and lengths: d1[3 .. 3+len) = src[5 .. 5+len), then read it back. */
  size_t len = bytes - 11;
  ST_TRY(c, gp_memcpy((char *)d1 + 3, src + 5, len));
  ST_TRY(c, gp_memcpy(want, d1, bytes));
  /* The reference: src everywhere, except the bytes the odd copy overwrote. */
  unsigned char *expect = malloc(bytes);
  if (!expect) {
    st_fail(c, "host allocation failed");
    goto out;
  }
  memcpy(expect, src, bytes);
  memcpy(expect + 3, src + 5, len);
  bool ok = st_compare_bytes(c, "H2D/D2H offsets", want, expect, bytes);
  free(expect);
  if (!ok) goto out;
  /* The full round trip, compared as floats against the source values. */
  double *ref = malloc(n * sizeof(double));
  if (!ref) goto out;
  for (size_t i = 0; i < n; i++) ref[i] = gp_ref_load(src, GP_F32, i);
  st_compare(c, "H2D,D2D,D2H", pinned, GP_F32, ref, NULL, 0.0, n, 0.0);
  free(ref);
out:
  gp_free(d1);
  gp_free(d2);
  gp_free_host(pinned);
  free(src);
  free(want);
}

/* gp_memset over an odd range in the middle of a buffer: the range takes the value,
 * the bytes around it keep theirs. */
static void check_memset(st_ctx_t *c, const void *arg) {
  (void)arg;
  size_t bytes = pick(c, 1 << 16, 1 << 22, 1 << 26) + 13, lo = 7, hi = bytes - 5;
  unsigned char *init = malloc(bytes), *got = malloc(bytes);
  void *d = NULL;
  if (!init || !got) goto out;
  for (size_t i = 0; i < bytes; i++) init[i] = (unsigned char)gp_ref_rng_next(&c->rng);
  int value = (int)(gp_ref_rng_next(&c->rng) & 0xff) | 0x100; /* only the low byte counts */
  ST_TRY(c, tool_upload(&d, init, bytes));
  ST_TRY(c, gp_memset((char *)d + lo, value, hi - lo));
  ST_TRY(c, gp_memcpy(got, d, bytes));
  memset(init + lo, value & 0xff, hi - lo);
  st_compare_bytes(c, "memset", got, init, bytes);
out:
  gp_free(d);
  free(init);
  free(got);
}

/* gp_memset_d32 over count words starting one word in: exact words, neighbours kept. */
static void check_memset_d32(st_ctx_t *c, const void *arg) {
  (void)arg;
  size_t words = pick(c, 1 << 14, 1 << 20, 1 << 24) + 3, count = words - 3;
  size_t bytes = words * 4;
  uint32_t *init = malloc(bytes), *got = malloc(bytes);
  void *d = NULL;
  if (!init || !got) goto out;
  for (size_t i = 0; i < words; i++) init[i] = (uint32_t)gp_ref_rng_next(&c->rng);
  uint32_t value = (uint32_t)gp_ref_rng_next(&c->rng);
  ST_TRY(c, tool_upload(&d, init, bytes));
  ST_TRY(c, gp_memset_d32((uint32_t *)d + 1, value, count));
  ST_TRY(c, gp_memcpy(got, d, bytes));
  for (size_t i = 1; i <= count; i++) init[i] = value;
  st_compare_bytes(c, "memset_d32", (unsigned char *)got, (unsigned char *)init, bytes);
out:
  gp_free(d);
  free(init);
  free(got);
}

/* ---- streams and events ------------------------------------------------------------- */

typedef struct order_log {
  int next;
  int seen[64];
  uint32_t *slot; /* page-locked word the delayed host function writes */
  uint32_t value;
} order_log_t;

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Writes the value late, so work enqueued after it that ran early would read stale data. */
static void delayed_write(void *user) {
  order_log_t *log = user;
  sleep_ms(30);
  *log->slot = log->value;
  log->seen[log->next++ & 63] = 1;
}

static void mark(void *user) {
  order_log_t *log = user;
  log->seen[log->next & 63] = log->next + 100;
  log->next++;
}

/* Stream 1: a slow host function writes a page-locked word, a copy takes it to the
 * device, an event is recorded. Stream 2 waits for the event and copies the word back.
 * Only stream 2 is synchronised: the word must have made the whole trip. */
static void check_stream_order(st_ctx_t *c, const void *arg) {
  (void)arg;
  gp_stream_t s1 = NULL, s2 = NULL;
  gp_event_t e = NULL;
  uint32_t *in = NULL, *out_w = NULL;
  void *d = NULL;
  order_log_t log;
  memset(&log, 0, sizeof log);
  ST_TRY(c, gp_stream_create(&s1));
  ST_TRY(c, gp_stream_create_with_flags(&s2, GP_STREAM_NON_BLOCKING));
  ST_TRY(c, gp_event_create_with_flags(&e, GP_EVENT_DISABLE_TIMING));
  ST_TRY(c, gp_malloc_host((void **)&in, 4));
  ST_TRY(c, gp_malloc_host((void **)&out_w, 4));
  ST_TRY(c, gp_malloc(&d, 4));
  *in = 0;
  *out_w = 0;
  log.slot = in;
  log.value = (uint32_t)gp_ref_rng_next(&c->rng) | 1u;
  ST_TRY(c, gp_memset_d32_async(d, 0, 1, s1));
  ST_TRY(c, gp_launch_host_func(s1, delayed_write, &log));
  ST_TRY(c, gp_memcpy_async(d, in, 4, s1));
  ST_TRY(c, gp_event_record(e, s1));
  ST_TRY(c, gp_stream_wait_event(s2, e));
  ST_TRY(c, gp_memcpy_async(out_w, d, 4, s2));
  ST_TRY(c, gp_stream_synchronize(s2));
  st_compare_bytes(c, "word through host func, copy, event wait", (unsigned char *)out_w,
                   (const unsigned char *)&log.value, 4);
  ST_TRY(c, gp_stream_synchronize(s1));
  gp_status_t q = gp_stream_query(s1);
  st_expect_status(c, "gp_stream_query(idle stream)", q, GP_SUCCESS);
  q = gp_event_query(e);
  st_expect_status(c, "gp_event_query(completed event)", q, GP_SUCCESS);
out:
  if (s1) gp_stream_synchronize(s1);
  if (s2) gp_stream_synchronize(s2);
  gp_event_destroy(e);
  gp_stream_destroy(s1);
  gp_stream_destroy(s2);
  gp_free(d);
  gp_free_host(in);
  gp_free_host(out_w);
}

/* 48 host functions on one stream run in order, each exactly once, and a query of the
 * stream while the first one sleeps says GP_ERROR_NOT_READY. */
static void check_host_func(st_ctx_t *c, const void *arg) {
  (void)arg;
  gp_stream_t s = NULL;
  order_log_t log;
  memset(&log, 0, sizeof log);
  uint32_t word = 0;
  log.slot = &word;
  log.value = 7;
  ST_TRY(c, gp_stream_create(&s));
  ST_TRY(c, gp_launch_host_func(s, delayed_write, &log));
  for (int i = 1; i < 48; i++) ST_TRY(c, gp_launch_host_func(s, mark, &log));
  st_expect_status(c, "gp_stream_query(busy stream)", gp_stream_query(s), GP_ERROR_NOT_READY);
  ST_TRY(c, gp_stream_synchronize(s));
  double got[48], ref[48];
  for (int i = 0; i < 48; i++) {
    got[i] = log.seen[i];
    ref[i] = i == 0 ? 1 : i + 100;
  }
  if (log.next != 48) st_fail(c, "%d host functions ran, expected 48", log.next);
  st_compare(c, "host function order", got, GP_F64, ref, NULL, 0.0, 48, 0.0);
out:
  if (s) gp_stream_synchronize(s);
  gp_stream_destroy(s);
}

/* Events time a copy (elapsed >= 0 and plausible) and synchronise on it. */
static void check_events(st_ctx_t *c, const void *arg) {
  (void)arg;
  size_t bytes = pick(c, 1 << 20, 1 << 24, 1 << 28);
  gp_stream_t s = NULL;
  gp_event_t e0 = NULL, e1 = NULL;
  void *a = NULL, *b = NULL;
  ST_TRY(c, gp_stream_create(&s));
  ST_TRY(c, gp_event_create(&e0));
  ST_TRY(c, gp_event_create_with_flags(&e1, GP_EVENT_BLOCKING_SYNC));
  ST_TRY(c, gp_malloc(&a, bytes));
  ST_TRY(c, gp_malloc(&b, bytes));
  ST_TRY(c, gp_memset_async(a, 1, bytes, s));
  ST_TRY(c, gp_event_record(e0, s));
  ST_TRY(c, gp_memcpy_async(b, a, bytes, s));
  ST_TRY(c, gp_event_record(e1, s));
  double t0 = tool_now_ms();
  ST_TRY(c, gp_event_synchronize(e1));
  double host_ms = tool_now_ms() - t0;
  float ms = -1.0f;
  ST_TRY(c, gp_event_elapsed_ms(&ms, e0, e1));
  st_expect_status(c, "gp_event_query(after synchronize)", gp_event_query(e1), GP_SUCCESS);
  if (!(ms >= 0.0f) || ms > 60e3f) st_fail(c, "elapsed %.3f ms is not plausible", (double)ms);
  st_note(c, "copy of %zu MiB: %.3f ms by events (host waited %.3f ms)", bytes >> 20, (double)ms,
          host_ms);
out:
  if (s) gp_stream_synchronize(s);
  gp_event_destroy(e0);
  gp_event_destroy(e1);
  gp_stream_destroy(s);
  gp_free(a);
  gp_free(b);
}

/* Wrong arguments return the documented status with a message, and the library keeps
 * working afterwards. */
static void check_errors(st_ctx_t *c, const void *arg) {
  (void)arg;
  int count = 0, local = 0;
  void *d = NULL, *p = NULL;
  float ms;
  ST_TRY(c, gp_device_count(&count));
  st_expect_status(c, "gp_malloc(NULL, 16)", gp_malloc(NULL, 16), GP_ERROR_INVALID_VALUE);
  if (!c->failed && gp_last_error_message()[0] == 0)
    st_fail(c, "a failing call left gp_last_error_message() empty");
  st_expect_status(c, "gp_device_set(count)", gp_device_set(count), GP_ERROR_INVALID_DEVICE);
  st_expect_status(c, "gp_free(stack address)", gp_free(&local), GP_ERROR_INVALID_VALUE);
  ST_TRY(c, gp_malloc(&p, 64));
  ST_TRY(c, gp_free(p));
  st_expect_status(c, "gp_free twice", gp_free(p), GP_ERROR_INVALID_VALUE);
  st_expect_status(c, "gp_memcpy(NULL dst)", gp_memcpy(NULL, &local, 4), GP_ERROR_INVALID_VALUE);
  st_expect_status(c, "gp_stream_create(NULL)", gp_stream_create(NULL), GP_ERROR_INVALID_VALUE);
  st_expect_status(c, "gp_event_elapsed_ms(NULL events)", gp_event_elapsed_ms(&ms, NULL, NULL),
                   GP_ERROR_INVALID_HANDLE);
  /* GEMM and attention with valid device buffers, so only the named argument is wrong. */
  ST_TRY(c, gp_malloc(&d, 4096));
  st_expect_status(c, "gp_gemm(lda < k)",
                   gp_gemm(NULL, GP_ROW_MAJOR, GP_OP_N, GP_OP_N, 4, 4, 8, 1.0f, d, GP_F32, 4, d,
                           GP_F32, 4, 0.0f, d, GP_F32, 4),
                   GP_ERROR_INVALID_VALUE);
  st_expect_status(c, "gp_gemm(f32 x f16)",
                   gp_gemm(NULL, GP_ROW_MAJOR, GP_OP_N, GP_OP_N, 4, 4, 4, 1.0f, d, GP_F32, 4, d,
                           GP_F16, 4, 0.0f, d, GP_F32, 4),
                   GP_ERROR_NOT_SUPPORTED);
  gp_attention_desc_t ad;
  gp_attention_desc_init(&ad);
  ad.seqlen_q = ad.seqlen_k = 4;
  ad.heads_q = 3;
  ad.heads_kv = 2;
  ad.head_dim = 8;
  ad.q = ad.k = ad.v = d;
  ad.o = d;
  st_expect_status(c, "gp_attention_fwd(heads_q % heads_kv != 0)", gp_attention_fwd(NULL, &ad),
                   GP_ERROR_INVALID_VALUE);
  ST_TRY(c, gp_free(d));
  d = NULL;
  /* Still usable: an allocation, a memset and a copy work, and nothing is pending. */
  uint32_t back = 0;
  ST_TRY(c, gp_malloc(&d, 4));
  ST_TRY(c, gp_memset_d32(d, 0xfeedbeefu, 1));
  ST_TRY(c, gp_memcpy(&back, d, 4));
  if (back != 0xfeedbeefu) st_fail(c, "after the errors, a memset read back 0x%08x", back);
  /* The last wrong call stays the thread's last error through the successes, as
   * cudaGetLastError's, until gp_get_last_error resets it. */
  st_expect_status(c, "gp_peek_at_last_error()", gp_peek_at_last_error(), GP_ERROR_INVALID_VALUE);
  st_expect_status(c, "gp_get_last_error()", gp_get_last_error(), GP_ERROR_INVALID_VALUE);
  st_expect_status(c, "gp_peek_at_last_error()", gp_peek_at_last_error(), GP_SUCCESS);
  st_note(c, "10 wrong calls returned their status; library usable afterwards");
out:
  gp_free(d);
}

const st_check_t st_runtime_checks[] = {
    {"runtime.alloc_copy", check_alloc_copy, NULL},
    {"runtime.memset", check_memset, NULL},
    {"runtime.memset_d32", check_memset_d32, NULL},
    {"runtime.stream_order", check_stream_order, NULL},
    {"runtime.host_func", check_host_func, NULL},
    {"runtime.events", check_events, NULL},
    {"runtime.errors", check_errors, NULL},
    {NULL, NULL, NULL},
};
