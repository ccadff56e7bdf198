/*
 * test_comm_nccl.c - the NCCL/RCCL mapping (src/gpu/nccl.c) checked in CI without a GPU.
 *
 * How: this test links nccl.c's object (the cpu build compiles it for this test alone,
 * the cuda and hip builds have it in their library), gives it fake runtime hooks (a
 * "native stream" is the cpu stream's address; an event remembers how much work the
 * mock had accepted on its stream), switches the funnel of src/comm.c to it
 * (gp__comm_set_backend), and loads test/mock/nccl_mock.c's libnccl.so.2 through
 * GP_NCCL_LIBRARY. So the public calls run the real funnel and the real mapping down to
 * the NCCL ABI, and the mock's log shows what NCCL would have received. The
 * health-checked wait that the cuda/hip backends' synchronising calls make is called
 * directly (gp__nccl_wait), since the cpu backend's own synchronisation does not use it.
 * What the mapping keeps to itself is read through its test seam (gpu/nccl.h).
 *
 * Checked: the version gate before any other symbol, a missing library, the config
 * (2.14 layout, non-blocking), every dtype and reduction enum, the argument order of
 * every collective (with one rank the mock really copies, so swapped pointers or a
 * wrong element size show in the data), groups and their nesting, ncclInProgress,
 * all-to-all's three spellings (NCCL 2.28, RCCL, send/recv before), fp8 gating, split,
 * finalize/destroy, async errors and timeouts turned into errors with an abort, and an
 * abort that hangs. The cuda and hip builds run the loading case, with or without a
 * device; the rest needs the cpu backend (the mock copies host memory, and the fake
 * hooks take cpu streams).
 */
#include <check.h>
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <gpuport.h>

#include "comm.h"
#include "gpu/nccl.h"
#ifdef GP_BUILD_CPU
#include "cpu/cpu.h"
#endif
#include "check_util.h"
#include "ref_comm.h"

static char g_mock[PATH_MAX];
static const char *(*mock_log)(void);
static void (*mock_clear)(void);
static void (*mock_set)(const char *, long);
static unsigned long (*mock_enqueued)(void *);
static unsigned long (*mock_completed)(void *);

/* ---- fake runtime hooks ------------------------------------------------------------------- */

typedef struct fake_event {
  void *stream;
  unsigned long upto;
} fake_event_t;

static int g_events; /* live fake events */
static int g_set_device[8], g_nset;

static void *fake_native(gp_stream_t s) {
  if (s == NULL || s == GP_STREAM_LEGACY) return (void *)0x1; /* cudaStreamLegacy */
  if (s == GP_STREAM_PER_THREAD) return (void *)0x2;
  return (void *)s;
}
#ifdef GP_BUILD_CPU
static int fake_stream_device(gp_stream_t s) { return gp__cpu_stream_device(s); }
#else
static int fake_stream_device(gp_stream_t s) { (void)s; return 0; } /* loading makes no stream */
#endif
static gp_status_t fake_set_device(int d) {
  if (g_nset < 8) g_set_device[g_nset++] = d;
  return GP_SUCCESS;
}
static gp_status_t fake_event_create(void **e) {
  *e = calloc(1, sizeof(fake_event_t));
  g_events++;
  return *e ? GP_SUCCESS : GP_ERROR_OUT_OF_MEMORY;
}
static gp_status_t fake_event_record(void *e, void *s) {
  fake_event_t *f = e;
  f->stream = s;
  f->upto = mock_enqueued(s);
  return GP_SUCCESS;
}
static int fake_event_query(void *e) {
  fake_event_t *f = e;
  return mock_completed(f->stream) >= f->upto;
}
static void fake_event_destroy(void *e) {
  g_events--;
  free(e);
}

static gp__nccl_hooks_t g_hooks = {
    .library = "libnccl.so.2", .vendor = "NCCL", .rccl = false,
    .native_stream = fake_native, .stream_device = fake_stream_device,
    .set_device = fake_set_device, .event_create = fake_event_create,
    .event_record = fake_event_record, .event_query = fake_event_query,
    .event_destroy = fake_event_destroy,
};

/* Forgets the loaded library, so the next communicator loads it again (version knobs). */
static void reload(long version, bool rccl) {
  gp__nccl_forget_library();
  mock_set("version", version);
  g_hooks.rccl = rccl;
  g_hooks.vendor = rccl ? "RCCL" : "NCCL";
  gp__comm_set_backend(gp__nccl_backend(&g_hooks));
  mock_clear();
  g_nset = 0;
}

static void setup(void) {
  setenv("GP_NCCL_LIBRARY", g_mock, 1);
  mock_set("hang", 0);
  mock_set("async_error", 0);
  mock_set("abort_sleep_ms", 0);
  mock_set("init_polls", 2);
  reload(22803, false);
}

/* ---- loading (every build) ---------------------------------------------------------------- */

START_TEST(loading) {
  setenv("GP_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  reload(22803, false);
  gp_comm_id_t id;
  FAILS(gp_comm_get_unique_id(&id), GP_ERROR_NOT_SUPPORTED, "/nonexistent/libnccl.so.2");
  FAILS(gp_comm_get_unique_id(&id), GP_ERROR_NOT_SUPPORTED, "GP_NCCL_LIBRARY");
  /* Too old: refused after ncclGetVersion alone. */
  setenv("GP_NCCL_LIBRARY", g_mock, 1);
  reload(21203, false);
  FAILS(gp_comm_get_unique_id(&id), GP_ERROR_NOT_SUPPORTED, "2.12.3");
  ck_assert_str_eq(mock_log(), "ncclGetVersion\n");
  reload(30000, false);
  FAILS(gp_comm_get_unique_id(&id), GP_ERROR_NOT_SUPPORTED, "3.0.0");
  reload(21403, false);
  OK(gp_comm_get_unique_id(&id));
  ck_assert_int_eq(gp__nccl_library_version(), 21403);
}
END_TEST

#ifdef GP_BUILD_CPU
static void expect_log(const char *needle) {
  ck_assert_msg(strstr(mock_log(), needle) != NULL, "the mock did not see \"%s\"; it saw:\n%s",
                needle, mock_log());
}

static int count_log(const char *needle) {
  int n = 0;
  for (const char *p = mock_log(); (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
  return n;
}

static gp_comm_t one_rank(const gp_comm_config_t *cfg) {
  gp_comm_id_t id;
  gp_comm_t c = NULL;
  OK(gp_comm_get_unique_id(&id));
  OK(gp_comm_init_rank_config(&c, 1, id, 0, cfg));
  return c;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the mapping (cpu build) -------------------------------------------------------------- */


START_TEST(init_config_destroy) {
  gp_comm_t c = one_rank(NULL);
  expect_log("ncclCommInitRankConfig nranks=1 rank=0 id=mock-id-1 blocking=0 size=40 version=21400 "
             "cga=-2147483648 minCTAs=-2147483648 maxCTAs=-2147483648");
  ck_assert_int_eq(g_nset, 2); /* the comm's device, then the caller's again */
  int v = -1;
  OK(gp_comm_rank(c, &v));
  ck_assert_int_eq(v, 0);
  OK(gp_comm_size(c, &v));
  ck_assert_int_eq(v, 1);
  gp_status_t st = GP_ERROR_INTERNAL;
  OK(gp_comm_get_async_error(c, &st));
  ck_assert_int_eq(st, GP_SUCCESS);
  OK(gp_comm_destroy(c));
  expect_log("ncclCommFinalize rank=0\nncclCommDestroy rank=0");
  ck_assert_int_eq(g_events, 0);

  /* Non-blocking: NOT_READY while the mock answers ncclInProgress. */
  gp_comm_config_t cfg;
  gp_comm_config_init(&cfg);
  cfg.blocking = 0;
  mock_set("init_polls", 3);
  c = one_rank(&cfg);
  int not_ready = 0;
  st = GP_ERROR_INTERNAL;
  for (int i = 0; i < 10 && st != GP_SUCCESS; i++) {
    OK(gp_comm_get_async_error(c, &st));
    not_ready += st == GP_ERROR_NOT_READY;
  }
  ck_assert_int_eq(st, GP_SUCCESS);
  ck_assert_int_eq(not_ready, 3);
  OK(gp_comm_destroy(c));
}
END_TEST

/* nccl.h's values, written out again here. */
static int nccl_type(gp_dtype_t t, bool reduces) {
  switch (t) {
    case GP_I8: return 0;
    case GP_U8: return 1;
    case GP_I32: return 2;
    case GP_U32: return 3;
    case GP_I64: return 4;
    case GP_U64: return 5;
    case GP_F16: return 6;
    case GP_F32: return 7;
    case GP_F64: return 8;
    case GP_BF16: return 9;
    case GP_FP8_E4M3: return reduces ? 10 : 1;
    case GP_FP8_E5M2: return reduces ? 11 : 1;
    default: return -1;
  }
}

START_TEST(every_dtype_and_op) {
  gp_comm_t c = one_rank(NULL);
  gp_stream_t s;
  OK(gp_stream_create(&s));
  void *send, *recv;
  OK(gp_malloc(&send, 64));
  OK(gp_malloc(&recv, 64));
  for (int t = 0; t < GP_DTYPE_COUNT; t++)
    for (int op = 0; op < 5; op++) {
      mock_clear();
      gp_ref_comm_inputs(send, (gp_dtype_t)t, (gp_reduce_op_t)op, GP_REF_COMM_RANDOM, 7, 0, 0, 7);
      gp_ref_comm_poison(recv, (gp_dtype_t)t, 7);
      OK(gp_all_reduce(send, recv, 7, (gp_dtype_t)t, (gp_reduce_op_t)op, c, s));
      char want[256];
      snprintf(want, sizeof want, "ncclAllReduce send=%p recv=%p count=7 type=%d op=%d rank=0 stream=%p",
               send, recv, nccl_type((gp_dtype_t)t, true), op, (void *)s);
      expect_log(want);
      char msg[256];
      ck_assert_msg(gp_ref_comm_check_copy(recv, (gp_dtype_t)t, (gp_reduce_op_t)op, GP_REF_COMM_RANDOM, 7, 0,
                                           0, 7, msg, sizeof msg) == 0,
                    "%s", msg);
    }
  /* the default stream is the legacy stream */
  mock_clear();
  OK(gp_all_reduce(send, send, 3, GP_F32, GP_SUM, c, NULL));
  char want[256];
  snprintf(want, sizeof want, "ncclAllReduce send=%p recv=%p count=3 type=7 op=0 rank=0 stream=%p",
           send, send, (void *)0x1);
  expect_log(want);
  OK(gp__nccl_wait(NULL, 0, "test"));
  OK(gp_free(send));
  OK(gp_free(recv));
  OK(gp_stream_destroy(s));
  OK(gp_comm_destroy(c));
  ck_assert_int_eq(g_events, 0);
}
END_TEST

START_TEST(every_collective) {
  gp_comm_t c = one_rank(NULL);
  char *a, *b, want[256];
  OK(gp_malloc((void **)&a, 64));
  OK(gp_malloc((void **)&b, 64));
  mock_clear();
  OK(gp_broadcast(a, b, 5, GP_F64, 0, c, NULL));
  OK(gp_reduce(a, b, 6, GP_I32, GP_MAX, 0, c, NULL));
  OK(gp_all_gather(a, b, 7, GP_FP8_E4M3, c, NULL));
  OK(gp_reduce_scatter(a, b, 8, GP_BF16, GP_AVG, c, NULL));
  OK(gp_all_to_all(a, b, 8, GP_U64, c, NULL));
  void *L1 = (void *)0x1;
  snprintf(want, sizeof want, "ncclBroadcast send=%p recv=%p count=5 type=8 root=0 rank=0 stream=%p", a, b, L1);
  expect_log(want);
  snprintf(want, sizeof want, "ncclReduce send=%p recv=%p count=6 type=2 op=2 root=0 rank=0 stream=%p", a, b, L1);
  expect_log(want);
  snprintf(want, sizeof want, "ncclAllGather send=%p recv=%p sendcount=7 type=1 rank=0 stream=%p", a, b, L1);
  expect_log(want);
  snprintf(want, sizeof want, "ncclReduceScatter send=%p recv=%p recvcount=8 type=9 op=4 rank=0 stream=%p", a, b, L1);
  expect_log(want);
  snprintf(want, sizeof want, "ncclAlltoAll send=%p recv=%p count=8 type=5 rank=0 stream=%p", a, b, L1);
  expect_log(want);
  FAILS(gp_all_to_all(a, a, 8, GP_U64, c, NULL), GP_ERROR_NOT_SUPPORTED, "in-place");

  /* A group: nested groups issue once, every call between one start and one end. */
  mock_clear();
  OK(gp_group_start());
  OK(gp_group_start());
  OK(gp_send(a, 4, GP_F16, 0, c, NULL));
  OK(gp_group_end());
  OK(gp_recv(b, 4, GP_F16, 0, c, NULL));
  ck_assert_str_eq(mock_log(), "");
  OK(gp_group_end());
  snprintf(want, sizeof want,
           "ncclGroupStart\nncclSend buf=%p count=4 type=6 peer=0 rank=0 stream=%p\n"
           "ncclRecv buf=%p count=4 type=6 peer=0 rank=0 stream=%p\nncclGroupEnd\n",
           a, L1, b, L1);
  ck_assert_str_eq(mock_log(), want);
  OK(gp__nccl_wait(NULL, 0, "test"));
  OK(gp_free(a));
  OK(gp_free(b));
  OK(gp_comm_destroy(c));
}
END_TEST

/* Older NCCL and RCCL: what they lack is emulated or refused, naming the version. */
START_TEST(versions_and_rccl) {
  reload(22304, false);
  gp_comm_t c = one_rank(NULL), sub = NULL;
  char *a, *b;
  OK(gp_malloc((void **)&a, 64));
  OK(gp_malloc((void **)&b, 64));
  FAILS(gp_all_reduce(a, b, 4, GP_FP8_E5M2, GP_SUM, c, NULL), GP_ERROR_NOT_SUPPORTED, "2.24");
  OK(gp_broadcast(a, b, 4, GP_FP8_E5M2, 0, c, NULL)); /* moving fp8 is fine */
  mock_clear();
  OK(gp_all_to_all(a, b, 3, GP_I8, c, NULL));
  char want[256];
  snprintf(want, sizeof want, "ncclGroupStart\nncclSend buf=%p count=3 type=0 peer=0 rank=0 stream=%p\n"
           "ncclRecv buf=%p count=3 type=0 peer=0 rank=0 stream=%p\nncclGroupEnd\n", a, (void *)0x1, b, (void *)0x1);
  ck_assert_str_eq(mock_log(), want);
  OK(gp_comm_split(c, 0, 5, &sub)); /* 2.23 has ncclCommSplit */
  expect_log("ncclCommSplit rank=0 color=0 key=5 blocking=0");
  int v = -1;
  OK(gp_comm_size(sub, &v));
  ck_assert_int_eq(v, 1);
  OK(gp_comm_destroy(sub));
  OK(gp_comm_split(c, GP_COMM_SPLIT_NOCOLOR, 0, &sub));
  ck_assert_ptr_null(sub);
  expect_log("ncclCommSplit rank=0 color=-1 key=0");
  OK(gp__nccl_wait(NULL, 0, "test"));
  OK(gp_comm_destroy(c));

  reload(21403, false);
  c = one_rank(NULL);
  FAILS(gp_comm_split(c, 0, 0, &sub), GP_ERROR_NOT_SUPPORTED, "2.18");
  OK(gp_comm_destroy(c));

  reload(22803, true);
  c = one_rank(NULL);
  FAILS(gp_all_reduce(a, b, 4, GP_FP8_E4M3, GP_SUM, c, NULL), GP_ERROR_NOT_SUPPORTED, "FNUZ");
  mock_clear();
  OK(gp_all_to_all(a, b, 2, GP_F32, c, NULL));
  expect_log("ncclAllToAll send=");
  OK(gp__nccl_wait(NULL, 0, "test"));
  OK(gp_comm_destroy(c));
  OK(gp_free(a));
  OK(gp_free(b));
}
END_TEST

/* gp_comm_init_all: one group of non-blocking inits, one per device. */
START_TEST(init_all_group) {
  int n = 0;
  OK(gp_device_count(&n));
  if (n > 4) n = 4;
  gp_comm_t comms[4];
  OK(gp_comm_init_all(comms, n, NULL));
  if (n > 1) {
    expect_log("ncclGroupStart\nncclCommInitRankConfig nranks=");
    ck_assert_int_eq(count_log("ncclCommInitRankConfig"), n);
    for (int r = 0; r < n; r++) ck_assert_int_eq(g_set_device[r], r);
    /* a stream of another device is refused before NCCL sees it */
    gp_stream_t s;
    OK(gp_device_set(1));
    OK(gp_stream_create(&s));
    OK(gp_device_set(0));
    float *x;
    OK(gp_malloc((void **)&x, 16));
    FAILS(gp_all_reduce(x, x, 4, GP_F32, GP_SUM, comms[0], s), GP_ERROR_INVALID_VALUE, "device 1");
    OK(gp_free(x));
    OK(gp_stream_destroy(s));
  }
  for (int r = 0; r < n; r++) OK(gp_comm_destroy(comms[r]));
}
END_TEST

typedef struct release_arg {
  int ms;
} release_arg_t;

static void *release_later(void *p) {
  release_arg_t *a = p;
  struct timespec ts = {0, a->ms * 1000000L};
  nanosleep(&ts, NULL);
  mock_set("hang", 0);
  return NULL;
}

/* The wait synchronising calls make: returns when the work completes, fails on an async
 * error or the deadline, aborting the communicator. */
START_TEST(health_checked_wait) {
  gp_comm_config_t cfg;
  gp_comm_config_init(&cfg);
  cfg.timeout_s = 0.3;
  gp_comm_t c = one_rank(&cfg);
  float *x;
  OK(gp_malloc((void **)&x, 16));
  /* slow work, within the timeout: success */
  mock_set("hang", 1);
  OK(gp_all_reduce(x, x, 4, GP_F32, GP_SUM, c, NULL));
  release_arg_t rel = {100};
  pthread_t th;
  pthread_create(&th, NULL, release_later, &rel);
  double t0 = now_s();
  OK(gp__nccl_wait(NULL, 0, "gp_stream_synchronize"));
  ck_assert(now_s() - t0 >= 0.09);
  pthread_join(th, NULL);
  ck_assert_int_eq(gp__nccl_pending(), 0);

  /* an async error: GP_ERROR_COMM with NCCL's own words, and an abort */
  mock_set("hang", 1);
  OK(gp_all_reduce(x, x, 4, GP_F32, GP_SUM, c, NULL));
  mock_set("async_error", 6);
  mock_clear();
  FAILS(gp__nccl_wait((void *)0x1, 0, "gp_stream_synchronize"), GP_ERROR_COMM,
        "mock: peer rank 1 vanished");
  ck_assert(strstr(gp_last_error_message(), "remote process exited"));
  expect_log("ncclCommAbort rank=0");
  gp_status_t st = GP_SUCCESS;
  OK(gp_comm_get_async_error(c, &st));
  ck_assert_int_eq(st, GP_ERROR_COMM);
  FAILS(gp_all_reduce(x, x, 4, GP_F32, GP_SUM, c, NULL), GP_ERROR_COMM, "vanished");
  OK(gp_comm_destroy(c));
  mock_set("async_error", 0);

  /* no progress before the deadline: GP_ERROR_TIMEOUT, and an abort */
  c = one_rank(&cfg);
  OK(gp_all_reduce(x, x, 4, GP_F32, GP_SUM, c, NULL));
  mock_clear();
  t0 = now_s();
  FAILS(gp__nccl_wait(NULL, 0, "gp_event_synchronize"), GP_ERROR_TIMEOUT, "has not completed");
  double dt = now_s() - t0;
  ck_assert_msg(dt >= 0.25 && dt < 3, "timed out after %.2f s", dt);
  expect_log("ncclCommAbort rank=0");
  OK(gp_comm_destroy(c));
  mock_set("hang", 0);
  OK(gp_free(x));
  ck_assert_int_eq(g_events, 0);
}
END_TEST

/* An abort that hangs is left behind after the (short) timeout. */
START_TEST(abort_that_hangs) {
  gp_comm_config_t cfg;
  gp_comm_config_init(&cfg);
  cfg.timeout_s = 0.3;
  gp_comm_t c = one_rank(&cfg);
  mock_set("abort_sleep_ms", 3000);
  double t0 = now_s();
  FAILS(gp_comm_abort(c), GP_ERROR_TIMEOUT, "ncclCommAbort did not return");
  ck_assert(now_s() - t0 < 2);
  mock_set("abort_sleep_ms", 0);
  c = one_rank(&cfg);
  OK(gp_comm_abort(c));
}
END_TEST

#endif /* GP_BUILD_CPU */

static Suite *suite(void) {
  Suite *s = suite_create("comm_nccl");
  TCase *tc = tcase_create("loading");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, loading);
  case_runs_without_device(tc); /* dlopen and ncclGetVersion, no device call */
  suite_add_tcase(s, tc);
#ifdef GP_BUILD_CPU
  tc = tcase_create("mapping");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, init_config_destroy);
  tcase_add_test(tc, every_dtype_and_op);
  tcase_add_test(tc, every_collective);
  tcase_add_test(tc, versions_and_rccl);
  tcase_add_test(tc, init_all_group);
  tcase_add_test(tc, health_checked_wait);
  tcase_add_test(tc, abort_that_hangs);
  suite_add_tcase(s, tc);
#else
  skip_case("mapping", "the mock copies host memory and the fake hooks take cpu streams: the "
                       "cpu build checks the mapping");
#endif
  return s;
}

int main(void) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = 0;
  snprintf(g_mock, sizeof g_mock, "%s/mock/libnccl.so.2", dirname(self));
  void *h = dlopen(g_mock, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    fprintf(stderr, "test_comm_nccl: cannot load the mock %s: %s\n", g_mock, dlerror());
    return 1;
  }
#define GET(v, name)                                                                       \
  do {                                                                                     \
    void *p_ = dlsym(h, name);                                                             \
    if (p_ == NULL) {                                                                      \
      fprintf(stderr, "test_comm_nccl: the mock has no %s\n", name);                       \
      return 1;                                                                            \
    }                                                                                      \
    memcpy(&v, &p_, sizeof p_);                                                            \
  } while (0)
  GET(mock_log, "mock_nccl_log");
  GET(mock_clear, "mock_nccl_clear");
  GET(mock_set, "mock_nccl_set");
  GET(mock_enqueued, "mock_nccl_enqueued");
  GET(mock_completed, "mock_nccl_completed");
  printf("test_comm_nccl: the NCCL mapping against %s\n", g_mock);
  return run_suite("test_comm_nccl", suite());
}
