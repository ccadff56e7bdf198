/*
 * test_graph.c - stream capture and graphs (gpuport/graph.h): capture of each kind of
 * operation and replay many times with fresh inputs, dependencies across streams that
 * join a capture (fork and join), capture of gp_gemm and gp_attention_fwd against the
 * float64 references, child graphs, launches of one executable graph in turn, and every
 * error a capture reports (operations it cannot record, misuse of capture, handles);
 * graphs built node by node (a diamond of copies, sets and kernels, host-node order,
 * cycles), updates of executable graphs (per node and whole-graph, pending launches
 * unaffected) and their errors.
 *
 * Inputs are drawn from the printed seed (replay with GP_TEST_SEED=<seed>), never zero;
 * outputs are poisoned before each replay and every element is checked.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <gpuport.h>
#include "internal.h" /* gp__be_enqueue_host_work: the stream work GEMM/attention use */
#include "check_util.h"
#include "ref.h"
#include "ref_attention.h"
#include "ref_gemm.h"

GP_KERNEL_DECLARE(kt_axpb);
GP_KERNEL_DECLARE(kt_add);
GP_KERNEL_DECLARE(kt_fault);

static uint64_t g_seed;
static gp_ref_rng_t g_rng;


static bool cpu(void) { return gp_backend() == GP_BACKEND_CPU; }

/* A word the message must contain: on CUDA and HIP the message carries the native
 * runtime's wording, so only the status is checked there. */
static const char *W(const char *word) { return cpu() ? word : ""; }

/* Uniform in [1, 9), never zero; integers when whole (exact sums in f32). */
static void fill_ints(float *x, int n) {
  for (int i = 0; i < n; i++) x[i] = (float)(1 + (int)gp_ref_rng_uniform(&g_rng, 0, 8));
}

static void poison(float *x, int n) { gp_ref_poison(x, GP_F32, (size_t)n); }

/* Every element of got equals ref exactly (small integers: every step is exact). */
static void expect_exact(const float *got, const double *ref, int n, const char *what) {
  gp_ref_cmp_t c;
  gp_ref_compare(&c, got, GP_F32, ref, NULL, 0.0, (size_t)n);
  char buf[256];
  gp_ref_cmp_format(&c, buf, sizeof buf);
  ck_assert_msg(c.n_bad == 0, "%s (seed %llu): %s", what, (unsigned long long)g_seed, buf);
}

static gp_dim3_t grid_for(int n) { return gp_dim3((unsigned)((n + 127) / 128), 1, 1); }

static gp_status_t launch_axpb(int n, float a, float b, float *x, gp_stream_t s) {
  void *args[] = {&n, &a, &b, &x};
  return gp_launch(GP_KERNEL_REF(kt_axpb), grid_for(n), gp_dim3(128, 1, 1), 0, s, args);
}

static gp_status_t launch_add(int n, const float *x, float *y, gp_stream_t s) {
  void *args[] = {&n, &x, &y};
  return gp_launch(GP_KERNEL_REF(kt_add), grid_for(n), gp_dim3(128, 1, 1), 0, s, args);
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* ---- host functions and host work used as nodes ------------------------------------------- */

typedef struct counter {
  atomic_int calls;
  atomic_int in_flight, max_in_flight;
} counter_t;

static void count_call(void *p) {
  counter_t *c = p;
  int now = atomic_fetch_add(&c->in_flight, 1) + 1;
  int m = atomic_load(&c->max_in_flight);
  while (now > m && !atomic_compare_exchange_weak(&c->max_in_flight, &m, now)) {
  }
  sleep_ms(2);
  atomic_fetch_add(&c->calls, 1);
  atomic_fetch_sub(&c->in_flight, 1);
}

/* A host-work record that is consumed as it runs (a shared counter of work items, as
 * the CPU attention path has): a replay must start again from the captured record. */
typedef struct work_rec {
  atomic_int next;
  int items;
  int *hits; /* hits[i]++ for each item i processed */
} work_rec_t;

static gp_status_t consume_items(void *p) {
  work_rec_t *w = p;
  for (int i; (i = atomic_fetch_add(&w->next, 1)) < w->items;) w->hits[i]++;
  return GP_SUCCESS;
}

static gp_status_t enqueue_items(gp_stream_t s, int items, int *hits) {
  work_rec_t *w = malloc(sizeof(*w));
  if (w == NULL) return GP_ERROR_OUT_OF_MEMORY;
  atomic_init(&w->next, 0);
  w->items = items;
  w->hits = hits;
  return gp__be_enqueue_host_work(s, consume_items, w, true);
}

/* Sets *flag to 1 after a pause: a node that depends on it must see 1. */
static void pause_then_set(void *flag) {
  sleep_ms(20);
  atomic_store((atomic_int *)flag, 1);
}

typedef struct probe {
  atomic_int *flag;
  atomic_int seen; /* 1 + the flag's value when the probe ran */
} probe_t;

static void read_flag(void *p) {
  probe_t *pr = p;
  atomic_store(&pr->seen, 1 + atomic_load(pr->flag));
}

static void reset_flag(void *flag) { atomic_store((atomic_int *)flag, 0); }

/* ---- capture and replay of every kind of operation ---------------------------------------- */

START_TEST(capture_each_kind_and_replay) {
  enum { N = 300, W = 24, H = 5, ITEMS = 37, REPLAYS = 12 };
  gp_stream_t s;
  OK(gp_stream_create(&s));
  float *hin, *hout, *h2d;
  unsigned char *hset;
  uint32_t *hwords;
  OK(gp_malloc_host((void **)&hin, N * sizeof(float)));
  OK(gp_malloc_host((void **)&hout, N * sizeof(float)));
  OK(gp_malloc_host((void **)&h2d, W * H * sizeof(float)));
  OK(gp_malloc_host((void **)&hset, N));
  OK(gp_malloc_host((void **)&hwords, N * sizeof(uint32_t)));
  float *dx, *d2d;
  unsigned char *dset;
  uint32_t *dwords;
  OK(gp_malloc((void **)&dx, N * sizeof(float)));
  OK(gp_malloc((void **)&d2d, 2 * W * H * sizeof(float)));
  OK(gp_malloc((void **)&dset, N));
  OK(gp_malloc((void **)&dwords, N * sizeof(uint32_t)));
  int *hits = calloc(ITEMS, sizeof(int));
  counter_t calls = {0};
  fill_ints(hin, N);
  poison(hout, N);

  gp_capture_status_t cs;
  OK(gp_stream_is_capturing(s, &cs));
  ck_assert_int_eq(cs, GP_CAPTURE_STATUS_NONE);
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  OK(gp_stream_is_capturing(s, &cs));
  ck_assert_int_eq(cs, GP_CAPTURE_STATUS_ACTIVE);
  OK(gp_memcpy_async(dx, hin, N * sizeof(float), s));                       /* 1 H2D copy */
  OK(launch_axpb(N, 2.0f, 1.0f, dx, s));                                    /* 2 kernel */
  OK(gp_memcpy_2d_async(d2d, 2 * W * sizeof(float), dx, W * sizeof(float), W * sizeof(float), H,
                        s));                                                /* 3 2D copy */
  OK(gp_memcpy_2d_async(h2d, W * sizeof(float), d2d, 2 * W * sizeof(float), W * sizeof(float), H,
                        s));                                                /* 4 2D copy back */
  OK(gp_memset_async(dset, 0x5a, N, s));                                    /* 5 memset */
  OK(gp_memset_d32_async(dwords, 0xdeadbeefu, N, s));                       /* 6 memset d32 */
  OK(gp_memcpy_async(hset, dset, N, s));                                    /* 7 */
  OK(gp_memcpy_async(hwords, dwords, N * sizeof(uint32_t), s));             /* 8 */
  OK(gp_launch_host_func(s, count_call, &calls));                           /* 9 host function */
  OK(enqueue_items(s, ITEMS, hits));                                        /* 10 host work */
  OK(gp_memcpy_async(hout, dx, N * sizeof(float), s));                      /* 11 D2H copy */
  gp_graph_t g = NULL;
  OK(gp_stream_end_capture(s, &g));
  ck_assert_ptr_nonnull(g);
  OK(gp_stream_is_capturing(s, &cs));
  ck_assert_int_eq(cs, GP_CAPTURE_STATUS_NONE);
  size_t nodes = 0;
  OK(gp_graph_get_node_count(g, &nodes));
  ck_assert_uint_eq(nodes, 11);
  /* Nothing ran during the capture. */
  OK(gp_stream_synchronize(s));
  ck_assert(isnan(hout[0]) && isnan(hout[N - 1]));
  ck_assert_int_eq(atomic_load(&calls.calls), 0);
  ck_assert_int_eq(hits[0], 0);

  gp_graph_exec_t x = NULL;
  OK(gp_graph_instantiate(&x, g));
  double *ref = malloc(N * sizeof(double));
  for (int r = 1; r <= REPLAYS; r++) {
    fill_ints(hin, N); /* the graph reads its input memory at each launch */
    poison(hout, N);
    poison(h2d, W * H);
    memset(hset, 0, N);
    memset(hwords, 0, N * sizeof(uint32_t));
    OK(gp_graph_launch(x, s));
    OK(gp_stream_synchronize(s));
    for (int i = 0; i < N; i++) ref[i] = 2.0 * hin[i] + 1.0;
    expect_exact(hout, ref, N, "kernel then D2H copy");
    for (int row = 0; row < H; row++)
      for (int j = 0; j < W; j++) ref[row * W + j] = 2.0 * hin[row * W + j] + 1.0;
    expect_exact(h2d, ref, W * H, "2D copies");
    for (int i = 0; i < N; i++) {
      ck_assert_uint_eq(hset[i], 0x5a);
      ck_assert_uint_eq(hwords[i], 0xdeadbeefu);
    }
    ck_assert_int_eq(atomic_load(&calls.calls), r);
    for (int i = 0; i < ITEMS; i++) ck_assert_int_eq(hits[i], r); /* the record was restored */
  }
  OK(gp_graph_exec_destroy(x));
  OK(gp_graph_destroy(g));
  free(ref);
  free(hits);
  OK(gp_free(dx));
  OK(gp_free(d2d));
  OK(gp_free(dset));
  OK(gp_free(dwords));
  OK(gp_free_host(hin));
  OK(gp_free_host(hout));
  OK(gp_free_host(h2d));
  OK(gp_free_host(hset));
  OK(gp_free_host(hwords));
  OK(gp_stream_destroy(s));
}
END_TEST

/* A chain of kernels replayed many times accumulates exactly: each replay is one more
 * run of the whole chain, in order. */
START_TEST(chain_replayed_many_times) {
  enum { N = 1000, CHAIN = 20, REPLAYS = 50 };
  gp_stream_t s;
  OK(gp_stream_create_with_flags(&s, GP_STREAM_NON_BLOCKING));
  float *h = malloc(N * sizeof(float)), *d;
  double *ref = malloc(N * sizeof(double));
  fill_ints(h, N);
  OK(gp_malloc((void **)&d, N * sizeof(float)));
  OK(gp_memcpy(d, h, N * sizeof(float)));
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_THREAD_LOCAL));
  /* x = 2x + 1 then x = (x - 1) / 2 gives x back, exactly; then + 1. */
  for (int i = 0; i < CHAIN; i++) {
    OK(launch_axpb(N, 2.0f, 1.0f, d, s));
    OK(launch_axpb(N, 0.5f, -0.5f, d, s));
    OK(launch_axpb(N, 1.0f, 1.0f, d, s));
  }
  gp_graph_t g;
  OK(gp_stream_end_capture(s, &g));
  gp_graph_exec_t x;
  OK(gp_graph_instantiate(&x, g));
  OK(gp_graph_destroy(g)); /* the executable graph lives on */
  for (int r = 0; r < REPLAYS; r++) OK(gp_graph_launch(x, s));
  float *out = malloc(N * sizeof(float));
  poison(out, N);
  OK(gp_memcpy_async(out, d, N * sizeof(float), s));
  OK(gp_stream_synchronize(s));
  for (int i = 0; i < N; i++) ref[i] = (double)h[i] + (double)CHAIN * REPLAYS;
  expect_exact(out, ref, N, "chain x replays");
  OK(gp_graph_exec_destroy(x));
  OK(gp_free(d));
  OK(gp_stream_destroy(s));
  free(h);
  free(out);
  free(ref);
}
END_TEST

/* ---- dependencies across streams ----------------------------------------------------------- */

/* Fork into two streams, join back; the second stream's probe depends on the first
 * stream's slow host function through an event, and the origin's last copy depends on
 * both branches. Any dependency the graph lost would show as a wrong value. */
START_TEST(fork_join_across_streams) {
  enum { N = 512, REPLAYS = 4 };
  gp_stream_t s0, s1, s2;
  OK(gp_stream_create(&s0));
  OK(gp_stream_create(&s1));
  OK(gp_stream_create_with_flags(&s2, GP_STREAM_NON_BLOCKING));
  gp_event_t fork, j1, j2, slow;
  OK(gp_event_create(&fork));
  OK(gp_event_create_with_flags(&j1, GP_EVENT_DISABLE_TIMING));
  OK(gp_event_create(&j2));
  OK(gp_event_create(&slow));
  float *ha, *hb, *hout, *da, *db;
  OK(gp_malloc_host((void **)&ha, N * sizeof(float)));
  OK(gp_malloc_host((void **)&hb, N * sizeof(float)));
  OK(gp_malloc_host((void **)&hout, N * sizeof(float)));
  OK(gp_malloc((void **)&da, N * sizeof(float)));
  OK(gp_malloc((void **)&db, N * sizeof(float)));
  atomic_int flag;
  atomic_init(&flag, 0);
  probe_t pr;
  pr.flag = &flag;
  atomic_init(&pr.seen, 0);

  OK(gp_stream_begin_capture(s0, GP_CAPTURE_MODE_GLOBAL));
  OK(gp_launch_host_func(s0, reset_flag, &flag));
  OK(gp_memcpy_async(da, ha, N * sizeof(float), s0));
  OK(gp_event_record(fork, s0));
  FAILS(gp_event_query(fork), GP_ERROR_NOT_SUPPORTED, W("capture")); /* a captured event */
  OK(gp_stream_wait_event(s1, fork)); /* s1 joins */
  OK(gp_stream_wait_event(s2, fork)); /* s2 joins */
  gp_capture_status_t cs;
  OK(gp_stream_is_capturing(s2, &cs));
  ck_assert_int_eq(cs, GP_CAPTURE_STATUS_ACTIVE);
  /* branch 1: a = 3a + 1, then a slow host function sets the flag */
  OK(launch_axpb(N, 3.0f, 1.0f, da, s1));
  OK(gp_launch_host_func(s1, pause_then_set, &flag));
  OK(gp_event_record(slow, s1));
  /* branch 2: b = H2D(hb) * 2; the probe waits for branch 1's slow function */
  OK(gp_memcpy_async(db, hb, N * sizeof(float), s2));
  OK(launch_axpb(N, 2.0f, 0.0f, db, s2));
  OK(gp_stream_wait_event(s2, slow));
  OK(gp_launch_host_func(s2, read_flag, &pr));
  /* join: out = a + b on the origin after both branches */
  OK(gp_event_record(j1, s1));
  OK(gp_event_record(j2, s2));
  OK(gp_stream_wait_event(s0, j1));
  OK(gp_stream_wait_event(s0, j2));
  OK(launch_add(N, da, db, s0));
  OK(gp_memcpy_async(hout, db, N * sizeof(float), s0));
  gp_graph_t g;
  OK(gp_stream_end_capture(s0, &g));
  OK(gp_stream_is_capturing(s1, &cs)); /* the joined streams left the capture */
  ck_assert_int_eq(cs, GP_CAPTURE_STATUS_NONE);
  size_t nodes = 0;
  OK(gp_graph_get_node_count(g, &nodes));
  ck_assert_uint_eq(nodes, 9);
  gp_graph_exec_t x;
  OK(gp_graph_instantiate(&x, g));
  double *ref = malloc(N * sizeof(double));
  for (int r = 0; r < REPLAYS; r++) {
    fill_ints(ha, N);
    fill_ints(hb, N);
    poison(hout, N);
    atomic_store(&pr.seen, 0);
    OK(gp_graph_launch(x, r % 2 ? s1 : s0)); /* any stream */
    OK(gp_device_synchronize());
    ck_assert_int_eq(atomic_load(&pr.seen), 2); /* the probe ran after the slow function */
    for (int i = 0; i < N; i++) ref[i] = (3.0 * ha[i] + 1.0) + 2.0 * hb[i];
    expect_exact(hout, ref, N, "fork/join result");
  }
  /* Events recorded during the capture mark nothing once it ended: they are as they were
   * before it (never recorded), so waiting on them is no wait (the cpu backend's rule;
   * CUDA leaves it unspecified). */
  if (cpu()) OK(gp_event_query(fork));
  OK(gp_graph_exec_destroy(x));
  OK(gp_graph_destroy(g));
  free(ref);
  OK(gp_event_destroy(fork));
  OK(gp_event_destroy(j1));
  OK(gp_event_destroy(j2));
  OK(gp_event_destroy(slow));
  OK(gp_free(da));
  OK(gp_free(db));
  OK(gp_free_host(ha));
  OK(gp_free_host(hb));
  OK(gp_free_host(hout));
  OK(gp_stream_destroy(s0));
  OK(gp_stream_destroy(s1));
  OK(gp_stream_destroy(s2));
}
END_TEST

/* Streams of other devices join a capture too; each node runs on its own device. */
START_TEST(capture_across_devices) {
  NEED_DEVICES(2, n);
  enum { N = 256 };
  gp_stream_t s0, s1;
  gp_event_t e0, e1;
  float *h = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float)), *d0, *d1;
  double *ref = malloc(N * sizeof(double));
  fill_ints(h, N);
  OK(gp_device_set(0));
  OK(gp_stream_create(&s0));
  OK(gp_event_create(&e0));
  OK(gp_malloc((void **)&d0, N * sizeof(float)));
  OK(gp_device_set(1));
  OK(gp_stream_create(&s1));
  OK(gp_event_create(&e1));
  OK(gp_malloc((void **)&d1, N * sizeof(float)));
  OK(gp_device_set(0));
  OK(gp_stream_begin_capture(s0, GP_CAPTURE_MODE_GLOBAL));
  OK(gp_memcpy_async(d0, h, N * sizeof(float), s0));
  OK(gp_event_record(e0, s0));
  OK(gp_stream_wait_event(s1, e0));
  OK(gp_memcpy_peer_async(d1, 1, d0, 0, N * sizeof(float), s1));
  OK(gp_device_set(1)); /* a kernel goes into a stream of the current device, as in CUDA */
  OK(launch_axpb(N, 5.0f, 2.0f, d1, s1));
  OK(gp_device_set(0));
  OK(gp_event_record(e1, s1));
  OK(gp_stream_wait_event(s0, e1));
  OK(gp_memcpy_peer_async(d0, 0, d1, 1, N * sizeof(float), s0));
  gp_graph_t g;
  OK(gp_stream_end_capture(s0, &g));
  gp_graph_exec_t x;
  OK(gp_graph_instantiate(&x, g));
  for (int r = 0; r < 2; r++) {
    fill_ints(h, N);
    OK(gp_graph_launch(x, s0));
    poison(out, N);
    OK(gp_memcpy_async(out, d0, N * sizeof(float), s0));
    OK(gp_stream_synchronize(s0));
    for (int i = 0; i < N; i++) ref[i] = 5.0 * h[i] + 2.0;
    expect_exact(out, ref, N, "two devices");
  }
  OK(gp_graph_exec_destroy(x));
  OK(gp_graph_destroy(g));
  OK(gp_free(d0));
  OK(gp_free(d1));
  OK(gp_event_destroy(e0));
  OK(gp_event_destroy(e1));
  OK(gp_stream_destroy(s0));
  OK(gp_stream_destroy(s1));
  free(h);
  free(out);
  free(ref);
}
END_TEST

/* ---- gpuport's own GEMM and attention ------------------------------------------------------ */

static void check_gemm(const float *a, const float *b, const float *c, int m, int n, int k) {
  gp_ref_gemm_t g = {GP_ROW_MAJOR, GP_OP_N, GP_OP_T, m, n, k, 1.25, a, GP_F32, k, b, GP_F32, k,
                     0.0, NULL, GP_F32, n, GP_EPILOGUE_NONE, NULL, GP_F32};
  double *ref = malloc((size_t)m * n * sizeof(double)), *bound = malloc((size_t)m * n * sizeof(double));
  gp_ref_gemm(&g, ref, bound);
  gp_ref_cmp_t cmp;
  gp_ref_compare(&cmp, c, GP_F32, ref, bound, 0.0, (size_t)m * n);
  char buf[256];
  gp_ref_cmp_format(&cmp, buf, sizeof buf);
  ck_assert_msg(cmp.n_bad == 0 && cmp.rel_norm_err <= gp_ref_gemm_rel_tol(k, GP_F32),
                "captured gemm (seed %llu): %s", (unsigned long long)g_seed, buf);
  free(ref);
  free(bound);
}

START_TEST(capture_gemm_and_attention) {
  enum { M = 40, NN = 24, K = 33, B = 1, S = 45, HQ = 4, HKV = 2, D = 32, REPLAYS = 3 };
  gp_stream_t s;
  OK(gp_stream_create(&s));
  /* GEMM operands */
  size_t na = (size_t)M * K, nb = (size_t)NN * K, nc = (size_t)M * NN;
  float *ha, *hb, *hc, *da, *db, *dc;
  OK(gp_malloc_host((void **)&ha, na * 4));
  OK(gp_malloc_host((void **)&hb, nb * 4));
  OK(gp_malloc_host((void **)&hc, nc * 4));
  OK(gp_malloc((void **)&da, na * 4));
  OK(gp_malloc((void **)&db, nb * 4));
  OK(gp_malloc((void **)&dc, nc * 4));
  /* attention operands (f32, [batch, seq, heads, dim], causal, with lse) */
  size_t nq = (size_t)B * S * HQ * D, nk = (size_t)B * S * HKV * D, nl = (size_t)B * HQ * S;
  float *hq, *hk, *hv, *ho, *hl, *dq, *dk, *dv, *dout, *dl;
  OK(gp_malloc_host((void **)&hq, nq * 4));
  OK(gp_malloc_host((void **)&hk, nk * 4));
  OK(gp_malloc_host((void **)&hv, nk * 4));
  OK(gp_malloc_host((void **)&ho, nq * 4));
  OK(gp_malloc_host((void **)&hl, nl * 4));
  OK(gp_malloc((void **)&dq, nq * 4));
  OK(gp_malloc((void **)&dk, nk * 4));
  OK(gp_malloc((void **)&dv, nk * 4));
  OK(gp_malloc((void **)&dout, nq * 4));
  OK(gp_malloc((void **)&dl, nl * 4));
  gp_attention_desc_t ad;
  gp_attention_desc_init(&ad);
  ad.dtype = GP_F32;
  ad.batch = B;
  ad.seqlen_q = ad.seqlen_k = S;
  ad.heads_q = HQ;
  ad.heads_kv = HKV;
  ad.head_dim = D;
  ad.causal = 1;
  ad.q = dq;
  ad.k = dk;
  ad.v = dv;
  ad.o = dout;
  ad.lse = dl;

  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  OK(gp_memcpy_async(da, ha, na * 4, s));
  OK(gp_memcpy_async(db, hb, nb * 4, s));
  OK(gp_gemm(s, GP_ROW_MAJOR, GP_OP_N, GP_OP_T, M, NN, K, 1.25f, da, GP_F32, K, db, GP_F32, K, 0.0f,
             dc, GP_F32, NN));
  OK(gp_memcpy_async(hc, dc, nc * 4, s));
  OK(gp_memcpy_async(dq, hq, nq * 4, s));
  OK(gp_memcpy_async(dk, hk, nk * 4, s));
  OK(gp_memcpy_async(dv, hv, nk * 4, s));
  OK(gp_attention_fwd(s, &ad));
  OK(gp_memcpy_async(ho, dout, nq * 4, s));
  OK(gp_memcpy_async(hl, dl, nl * 4, s));
  gp_graph_t g;
  OK(gp_stream_end_capture(s, &g));
  gp_graph_exec_t x;
  OK(gp_graph_instantiate(&x, g));
  OK(gp_graph_destroy(g));

  size_t rows = (size_t)B * S;
  double *oref = malloc(rows * HQ * D * sizeof(double)), *obound = malloc(rows * HQ * D * sizeof(double));
  double *lref = malloc(nl * sizeof(double)), *lbound = malloc(nl * sizeof(double));
  for (int r = 0; r < REPLAYS; r++) {
    gp_ref_fill(ha, GP_F32, na, &g_rng, -1, 1);
    gp_ref_fill(hb, GP_F32, nb, &g_rng, -1, 1);
    gp_ref_fill(hq, GP_F32, nq, &g_rng, -1, 1);
    gp_ref_fill(hk, GP_F32, nk, &g_rng, -1, 1);
    gp_ref_fill(hv, GP_F32, nk, &g_rng, -1, 1);
    poison(hc, (int)nc);
    poison(ho, (int)nq);
    poison(hl, (int)nl);
    OK(gp_graph_launch(x, s));
    OK(gp_stream_synchronize(s));
    check_gemm(ha, hb, hc, M, NN, K);
    gp_attention_desc_t hd = ad; /* the reference reads host copies with the same layout */
    hd.q = hq;
    hd.k = hk;
    hd.v = hv;
    ck_assert_int_eq(gp_ref_attention_fwd(&hd, NULL, NULL, oref, obound, lref, lbound), 0);
    gp_ref_cmp_t c;
    char buf[256];
    gp_ref_compare(&c, ho, GP_F32, oref, obound, 0.0, nq);
    gp_ref_cmp_format(&c, buf, sizeof buf);
    ck_assert_msg(c.n_bad == 0 && c.rel_norm_err <= gp_ref_attention_rel_tol(GP_F32),
                  "captured attention o, replay %d (seed %llu): %s", r, (unsigned long long)g_seed,
                  buf);
    gp_ref_compare(&c, hl, GP_F32, lref, lbound, 0.0, nl);
    gp_ref_cmp_format(&c, buf, sizeof buf);
    ck_assert_msg(c.n_bad == 0, "captured attention lse, replay %d (seed %llu): %s", r,
                  (unsigned long long)g_seed, buf);
  }
  free(oref);
  free(obound);
  free(lref);
  free(lbound);
  OK(gp_graph_exec_destroy(x));
  void *bufs[] = {da, db, dc, dq, dk, dv, dout, dl};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) OK(gp_free(bufs[i]));
  void *hbufs[] = {ha, hb, hc, hq, hk, hv, ho, hl};
  for (size_t i = 0; i < sizeof hbufs / sizeof hbufs[0]; i++) OK(gp_free_host(hbufs[i]));
  OK(gp_stream_destroy(s));
}
END_TEST

/* ---- launches: order, child graphs, lifetime, faults --------------------------------------- */

/* Launches of one executable graph run one after another, even on different streams. */
START_TEST(launches_of_one_exec_in_turn) {
  gp_stream_t a, b, c;
  OK(gp_stream_create_with_flags(&a, GP_STREAM_NON_BLOCKING));
  OK(gp_stream_create_with_flags(&b, GP_STREAM_NON_BLOCKING));
  OK(gp_stream_create_with_flags(&c, GP_STREAM_NON_BLOCKING));
  counter_t cnt = {0};
  OK(gp_stream_begin_capture(c, GP_CAPTURE_MODE_GLOBAL));
  OK(gp_launch_host_func(c, count_call, &cnt));
  gp_graph_t g;
  OK(gp_stream_end_capture(c, &g));
  gp_graph_exec_t x;
  OK(gp_graph_instantiate(&x, g));
  for (int i = 0; i < 6; i++) {
    OK(gp_graph_launch(x, a));
    OK(gp_graph_launch(x, b));
  }
  OK(gp_graph_exec_destroy(x)); /* the pending launches still run */
  OK(gp_graph_destroy(g));
  OK(gp_stream_synchronize(a));
  OK(gp_stream_synchronize(b));
  ck_assert_int_eq(atomic_load(&cnt.calls), 12);
  ck_assert_int_eq(atomic_load(&cnt.max_in_flight), 1);
  OK(gp_stream_destroy(a));
  OK(gp_stream_destroy(b));
  OK(gp_stream_destroy(c));
}
END_TEST

/* A graph launched into a capturing stream becomes one node of the new graph. */
START_TEST(child_graph_and_empty_graph) {
  enum { N = 200 };
  gp_stream_t s;
  OK(gp_stream_create(&s));
  float *h = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float)), *d;
  double *ref = malloc(N * sizeof(double));
  fill_ints(h, N);
  OK(gp_malloc((void **)&d, N * sizeof(float)));
  OK(gp_memcpy(d, h, N * sizeof(float)));
  gp_graph_t inner, outer, empty;
  gp_graph_exec_t xi, xo, xe;
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  OK(launch_axpb(N, 1.0f, 3.0f, d, s));
  OK(gp_stream_end_capture(s, &inner));
  OK(gp_graph_instantiate(&xi, inner));
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  OK(gp_graph_launch(xi, s));
  OK(launch_axpb(N, 2.0f, 0.0f, d, s));
  OK(gp_graph_launch(xi, s));
  OK(gp_stream_end_capture(s, &outer));
  size_t nodes = 0;
  OK(gp_graph_get_node_count(outer, &nodes));
  ck_assert_uint_eq(nodes, 3);
  OK(gp_graph_instantiate(&xo, outer));
  OK(gp_graph_exec_destroy(xi)); /* the outer graph keeps what it launches */
  OK(gp_graph_destroy(inner));
  OK(gp_graph_destroy(outer));
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  OK(gp_stream_end_capture(s, &empty));
  OK(gp_graph_get_node_count(empty, &nodes));
  ck_assert_uint_eq(nodes, 0);
  OK(gp_graph_instantiate(&xe, empty));
  OK(gp_graph_launch(xe, s));
  OK(gp_graph_launch(xo, s));
  OK(gp_graph_launch(xe, s));
  OK(gp_graph_launch(xo, s));
  poison(out, N);
  OK(gp_memcpy_async(out, d, N * sizeof(float), s));
  OK(gp_stream_synchronize(s));
  for (int i = 0; i < N; i++) {
    double v = h[i];
    for (int r = 0; r < 2; r++) v = 2.0 * (v + 3.0) + 3.0;
    ref[i] = v;
  }
  expect_exact(out, ref, N, "child graphs");
  OK(gp_graph_exec_destroy(xo));
  OK(gp_graph_exec_destroy(xe));
  OK(gp_graph_destroy(empty));
  OK(gp_free(d));
  OK(gp_stream_destroy(s));
  free(h);
  free(out);
  free(ref);
}
END_TEST

/* The per-thread default stream can be captured; a kernel fault in a graph is reported
 * by the next synchronisation, and the library stays usable (cpu backend: GPU faults are
 * sticky, so this part runs on the cpu backend only). */
START_TEST(per_thread_stream_and_fault_in_graph) {
  enum { N = 64 };
  float *d;
  OK(gp_malloc((void **)&d, N * sizeof(float)));
  OK(gp_memset(d, 0, N * sizeof(float)));
  gp_graph_t g;
  gp_graph_exec_t x;
  OK(gp_stream_begin_capture(GP_STREAM_PER_THREAD, GP_CAPTURE_MODE_GLOBAL));
  OK(launch_axpb(N, 1.0f, 1.0f, d, GP_STREAM_PER_THREAD));
  OK(gp_stream_end_capture(GP_STREAM_PER_THREAD, &g));
  OK(gp_graph_instantiate(&x, g));
  OK(gp_graph_launch(x, GP_STREAM_PER_THREAD));
  OK(gp_graph_launch(x, GP_STREAM_PER_THREAD));
  float out[N];
  OK(gp_stream_synchronize(GP_STREAM_PER_THREAD));
  OK(gp_memcpy(out, d, sizeof out));
  for (int i = 0; i < N; i++) ck_assert_float_eq(out[i], 2.0f);
  OK(gp_graph_exec_destroy(x));
  OK(gp_graph_destroy(g));
  if (cpu()) {
    gp_stream_t s;
    OK(gp_stream_create(&s));
    int bad_block = 1, bad = 37, mode = 0, sync = 0, *dummy;
    OK(gp_malloc((void **)&dummy, 128 * sizeof(int)));
    void *args[] = {&dummy, &bad_block, &bad, &mode, &sync};
    OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
    OK(gp_launch(GP_KERNEL_REF(kt_fault), gp_dim3(2, 1, 1), gp_dim3(64, 1, 1), 0, s, args));
    OK(gp_stream_end_capture(s, &g));
    OK(gp_graph_instantiate(&x, g));
    OK(gp_graph_launch(x, s));
    FAILS(gp_stream_synchronize(s), GP_ERROR_LAUNCH_FAILED, "kt_fault");
    OK(gp_graph_launch(x, s)); /* usable again, and the fault is reported again */
    FAILS(gp_stream_synchronize(s), GP_ERROR_LAUNCH_FAILED, "kt_fault");
    OK(gp_graph_exec_destroy(x));
    OK(gp_graph_destroy(g));
    OK(gp_free(dummy));
    OK(gp_stream_destroy(s));
  }
  OK(gp_free(d));
}
END_TEST

/* ---- what a capture forbids ------------------------------------------------------------------ */

/* Ends the capture on s expecting status and word, and checks that no graph came out
 * and that s no longer captures. */
static void end_fails(gp_stream_t s, gp_status_t status, const char *word) {
  gp_graph_t g = (gp_graph_t)(uintptr_t)0x1;
  FAILS(gp_stream_end_capture(s, &g), status, word);
  ck_assert_ptr_null(g);
  gp_capture_status_t cs;
  OK(gp_stream_is_capturing(s, &cs));
  ck_assert_int_eq(cs, GP_CAPTURE_STATUS_NONE);
}

START_TEST(operations_a_capture_forbids) {
  gp_stream_t s, nb;
  OK(gp_stream_create(&s));
  OK(gp_stream_create_with_flags(&nb, GP_STREAM_NON_BLOCKING));
  float host[16] = {0}, *d, *d2 = NULL;
  OK(gp_malloc((void **)&d, sizeof host));
  gp_capture_status_t cs;

  /* Synchronising or querying the capturing stream. */
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  OK(gp_memset_async(d, 0, sizeof host, s));
  FAILS(gp_stream_synchronize(s), GP_ERROR_NOT_SUPPORTED, W("captur"));
  OK(gp_stream_is_capturing(s, &cs));
  ck_assert_int_eq(cs, GP_CAPTURE_STATUS_INVALIDATED);
  /* later operations on the invalidated capture fail too */
  FAILS(gp_memset_async(d, 0, sizeof host, s), GP_ERROR_NOT_SUPPORTED, W("invalidated"));
  end_fails(s, GP_ERROR_NOT_SUPPORTED, W("gp_stream_synchronize"));
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  FAILS(gp_stream_query(s), GP_ERROR_NOT_SUPPORTED, W("captur"));
  end_fails(s, GP_ERROR_NOT_SUPPORTED, W("gp_stream_query"));

  /* A synchronous copy, set, device synchronisation. */
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  FAILS(gp_memcpy(host, d, sizeof host), GP_ERROR_NOT_SUPPORTED, W("synchronous copies"));
  end_fails(s, GP_ERROR_NOT_SUPPORTED, W("gp_memcpy"));
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_THREAD_LOCAL));
  FAILS(gp_memset(d, 1, sizeof host), GP_ERROR_NOT_SUPPORTED, W("captur"));
  end_fails(s, GP_ERROR_NOT_SUPPORTED, W("gp_memset"));
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  FAILS(gp_device_synchronize(), GP_ERROR_NOT_SUPPORTED, W("captur"));
  end_fails(s, GP_ERROR_NOT_SUPPORTED, W("gp_device_synchronize"));

  /* Allocation and release. */
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  FAILS(gp_malloc((void **)&d2, 64), GP_ERROR_NOT_SUPPORTED, W("allocation"));
  ck_assert_ptr_null(d2);
  end_fails(s, GP_ERROR_NOT_SUPPORTED, W("gp_malloc"));
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  FAILS(gp_free(d), GP_ERROR_NOT_SUPPORTED, W("captur"));
  end_fails(s, GP_ERROR_NOT_SUPPORTED, W("gp_free"));
  void *ph = NULL;
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  FAILS(gp_malloc_host(&ph, 64), GP_ERROR_NOT_SUPPORTED, W("captur"));
  end_fails(s, GP_ERROR_NOT_SUPPORTED, W("gp_malloc_host"));
  if (cpu()) { /* CUDA records stream-ordered allocations as memory nodes */
    OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
    FAILS(gp_malloc_async((void **)&d2, 64, s), GP_ERROR_NOT_SUPPORTED, W("allocation"));
    end_fails(s, GP_ERROR_NOT_SUPPORTED, W("gp_malloc_async"));
    void *p;
    OK(gp_malloc(&p, 64));
    OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_RELAXED));
    FAILS(gp_free_async(p, s), GP_ERROR_NOT_SUPPORTED, W("free"));
    end_fails(s, GP_ERROR_NOT_SUPPORTED, W("gp_free_async"));
    OK(gp_free(p)); /* still allocated after the refused free */
  }
  /* d is still allocated and usable after the refused free */
  OK(gp_memset(d, 0, sizeof host));

  /* In relaxed mode the same calls are allowed and the capture stays valid. */
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_RELAXED));
  OK(gp_malloc((void **)&d2, 64));
  OK(gp_free(d2));
  OK(gp_memcpy_async(d, host, sizeof host, s));
  gp_graph_t g;
  OK(gp_stream_end_capture(s, &g));
  OK(gp_graph_destroy(g));

  /* The legacy default stream while a blocking stream captures (it would wait for it). */
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_RELAXED));
  FAILS(gp_memset_async(d, 0, sizeof host, NULL), GP_ERROR_NOT_SUPPORTED, W("legacy"));
  end_fails(s, GP_ERROR_NOT_SUPPORTED, W("legacy"));
  /* ... but not while a non-blocking stream captures */
  OK(gp_stream_begin_capture(nb, GP_CAPTURE_MODE_RELAXED));
  OK(gp_memset_async(d, 0, sizeof host, NULL));
  OK(gp_memcpy(host, d, sizeof host));
  OK(gp_stream_end_capture(nb, &g));
  OK(gp_graph_destroy(g));

  OK(gp_free(d));
  OK(gp_stream_destroy(s));
  OK(gp_stream_destroy(nb));
}
END_TEST

typedef struct thread_try {
  gp_status_t malloc_status;
  gp_status_t end_status;
  gp_stream_t stream;
} thread_try_t;

static void *try_malloc(void *p) {
  thread_try_t *t = p;
  void *q = NULL;
  t->malloc_status = gp_malloc(&q, 64);
  if (q) gp_free(q);
  return NULL;
}

static void *try_end(void *p) {
  thread_try_t *t = p;
  gp_graph_t g = NULL;
  t->end_status = gp_stream_end_capture(t->stream, &g);
  if (g) gp_graph_destroy(g);
  return NULL;
}

/* Global mode forbids other threads' unsafe calls too; thread-local mode does not. A
 * non-relaxed capture is ended by the thread that began it. */
START_TEST(capture_modes_and_threads) {
  gp_stream_t s;
  OK(gp_stream_create(&s));
  thread_try_t t = {GP_SUCCESS, GP_SUCCESS, s};
  pthread_t th;
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  pthread_create(&th, NULL, try_malloc, &t);
  pthread_join(th, NULL);
  ck_assert_int_eq(t.malloc_status, GP_ERROR_NOT_SUPPORTED);
  pthread_create(&th, NULL, try_end, &t);
  pthread_join(th, NULL);
  ck_assert_int_eq(t.end_status, GP_ERROR_INVALID_VALUE); /* wrong thread: still capturing */
  gp_graph_t g = NULL;
  if (cpu()) {
    OK(gp_stream_end_capture(s, &g)); /* another thread's refused call left it valid */
  } else { /* whether CUDA invalidates it then is not documented */
    gp_status_t st = gp_stream_end_capture(s, &g);
    ck_assert_msg(st == GP_SUCCESS || st == GP_ERROR_NOT_SUPPORTED, "%s", gp_status_name(st));
  }
  OK(gp_graph_destroy(g));

  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_THREAD_LOCAL));
  pthread_create(&th, NULL, try_malloc, &t);
  pthread_join(th, NULL);
  ck_assert_int_eq(t.malloc_status, GP_SUCCESS);
  OK(gp_stream_end_capture(s, &g));
  OK(gp_graph_destroy(g));

  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_RELAXED));
  pthread_create(&th, NULL, try_end, &t);
  pthread_join(th, NULL);
  ck_assert_int_eq(t.end_status, GP_SUCCESS);
  OK(gp_stream_destroy(s));
}
END_TEST

/* Misuse of capture itself. */
START_TEST(capture_misuse) {
  gp_stream_t s, s2, s3;
  OK(gp_stream_create(&s));
  OK(gp_stream_create(&s2));
  OK(gp_stream_create(&s3));
  gp_event_t e, e2, plain;
  OK(gp_event_create(&e));
  OK(gp_event_create(&e2));
  OK(gp_event_create(&plain));
  float *d;
  OK(gp_malloc((void **)&d, 256));
  gp_graph_t g = NULL;
  gp_capture_status_t cs;

  FAILS(gp_stream_begin_capture(NULL, GP_CAPTURE_MODE_GLOBAL), GP_ERROR_NOT_SUPPORTED, "legacy");
  FAILS(gp_stream_begin_capture(GP_STREAM_LEGACY, GP_CAPTURE_MODE_GLOBAL), GP_ERROR_NOT_SUPPORTED,
        "legacy");
  FAILS(gp_stream_begin_capture(s, (gp_capture_mode_t)7), GP_ERROR_INVALID_VALUE, "mode");
  FAILS(gp_stream_begin_capture((gp_stream_t)(uintptr_t)0x40, GP_CAPTURE_MODE_GLOBAL),
        GP_ERROR_INVALID_HANDLE, "stream");
  FAILS(gp_stream_end_capture(s, &g), GP_ERROR_INVALID_VALUE, W("not capturing"));
  FAILS(gp_stream_end_capture(s, NULL), GP_ERROR_INVALID_VALUE, "graph");
  FAILS(gp_stream_end_capture(NULL, &g), GP_ERROR_INVALID_VALUE, "legacy");
  FAILS(gp_stream_is_capturing(s, NULL), GP_ERROR_INVALID_VALUE, "status");
  OK(gp_stream_is_capturing(NULL, &cs));
  ck_assert_int_eq(cs, GP_CAPTURE_STATUS_NONE);

  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  FAILS(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL), GP_ERROR_INVALID_VALUE, W("already"));
  if (cpu()) FAILS(gp_stream_destroy(s), GP_ERROR_NOT_SUPPORTED, "capture");
  /* a fork that is never joined back */
  OK(gp_memset_async(d, 0, 256, s));
  OK(gp_event_record(e, s));
  OK(gp_stream_wait_event(s2, e));
  FAILS(gp_stream_begin_capture(s2, GP_CAPTURE_MODE_GLOBAL), GP_ERROR_INVALID_VALUE, W("joined"));
  OK(gp_memset_async(d, 1, 256, s2));
  FAILS(gp_stream_end_capture(s2, &g), GP_ERROR_INVALID_VALUE, W("joined the capture begun"));
  end_fails(s, GP_ERROR_INVALID_VALUE, W("not joined back"));
  OK(gp_stream_is_capturing(s2, &cs));
  ck_assert_int_eq(cs, GP_CAPTURE_STATUS_NONE);

  /* two captures cannot depend on each other */
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  OK(gp_stream_begin_capture(s3, GP_CAPTURE_MODE_GLOBAL));
  OK(gp_event_record(e, s));
  FAILS(gp_stream_wait_event(s3, e), GP_ERROR_INVALID_VALUE, W("captures cannot depend"));
  end_fails(s3, GP_ERROR_NOT_SUPPORTED, W("another capture"));
  OK(gp_stream_end_capture(s, &g));
  OK(gp_graph_destroy(g));

  /* captured events cannot be synchronised; the legacy stream cannot join (cpu backend:
   * whether CUDA invalidates the capture then is not documented) */
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_RELAXED));
  OK(gp_event_record(e, s));
  FAILS(gp_event_synchronize(e), GP_ERROR_NOT_SUPPORTED, W("capture"));
  if (cpu()) {
    FAILS(gp_stream_wait_event(NULL, e), GP_ERROR_NOT_SUPPORTED, "legacy");
    end_fails(s, GP_ERROR_NOT_SUPPORTED, "legacy");
  } else {
    OK(gp_stream_end_capture(s, &g));
    OK(gp_graph_destroy(g));
  }

  /* cpu backend: a wait on work outside the capture that is complete is no dependency */
  if (cpu()) {
    OK(gp_event_record(plain, s2));
    OK(gp_stream_synchronize(s2));
    OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
    OK(gp_stream_wait_event(s, plain));
    OK(gp_stream_end_capture(s, &g));
    OK(gp_graph_destroy(g));
  }

  /* handles */
  FAILS(gp_graph_instantiate(NULL, g), GP_ERROR_INVALID_VALUE, "exec");
  gp_graph_exec_t x = (gp_graph_exec_t)(uintptr_t)0x1;
  FAILS(gp_graph_instantiate(&x, g), GP_ERROR_INVALID_HANDLE, "graph"); /* destroyed */
  ck_assert_ptr_null(x);
  FAILS(gp_graph_instantiate(&x, NULL), GP_ERROR_INVALID_HANDLE, "graph");
  FAILS(gp_graph_destroy(g), GP_ERROR_INVALID_HANDLE, "graph");
  size_t nodes;
  FAILS(gp_graph_get_node_count(g, &nodes), GP_ERROR_INVALID_HANDLE, "graph");
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  OK(gp_stream_end_capture(s, &g));
  FAILS(gp_graph_get_node_count(g, NULL), GP_ERROR_INVALID_VALUE, "count");
  OK(gp_graph_instantiate(&x, g));
  FAILS(gp_graph_launch(x, (gp_stream_t)(uintptr_t)0x40), GP_ERROR_INVALID_HANDLE, "stream");
  OK(gp_graph_exec_destroy(x));
  FAILS(gp_graph_launch(x, s), GP_ERROR_INVALID_HANDLE, "exec");
  FAILS(gp_graph_exec_destroy(x), GP_ERROR_INVALID_HANDLE, "exec");
  FAILS(gp_graph_launch(NULL, s), GP_ERROR_INVALID_HANDLE, "exec");
  FAILS(gp_graph_launch((gp_graph_exec_t)g, s), GP_ERROR_INVALID_HANDLE, "exec"); /* a graph */
  OK(gp_graph_destroy(g));
  OK(gp_graph_destroy(NULL));
  OK(gp_graph_exec_destroy(NULL));

  OK(gp_free(d));
  OK(gp_event_destroy(e));
  OK(gp_event_destroy(e2));
  OK(gp_event_destroy(plain));
  OK(gp_stream_destroy(s));
  OK(gp_stream_destroy(s2));
  OK(gp_stream_destroy(s3));
}
END_TEST


/* ---- graphs built node by node (cudaGraphCreate, cudaGraphAdd*Node) ------------------------- */

/* Host memory the graph's copies read and write (pinned, as cudaMemcpyAsync needs to be
 * asynchronous) and the device buffers of the diamond below. */
enum { DN = 1000 }; /* elements of the diamond's buffers */

typedef struct diamond {
  int n;
  float *hin, *hout, *dx, *dy, *dz;
  float a, b;                /* kt_axpb's arguments: the values the graph copied */
  gp_graph_t g;
  gp_graph_node_t copy_in, set_y, set_z, k1, k2, k3, k4, copy_out;
} diamond_t;

static gp_kernel_node_params_t add_params(int *n, float **x, float **y, void **args) {
  args[0] = n;
  args[1] = x;
  args[2] = y;
  return (gp_kernel_node_params_t){GP_KERNEL_REF(kt_add), grid_for(*n), gp_dim3(128, 1, 1), 0, args};
}

static gp_kernel_node_params_t axpb_params(int *n, float *a, float *b, float **x, void **args) {
  args[0] = n;
  args[1] = a;
  args[2] = b;
  args[3] = x;
  return (gp_kernel_node_params_t){GP_KERNEL_REF(kt_axpb), grid_for(*n), gp_dim3(128, 1, 1), 0, args};
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* copy_in (hin -> dx) and set_y (dy = 1), set_z (dz = 2) first; then
 *   k1: dy = dx + dy  (after copy_in, set_y)      k2: dz = dx + dz  (after copy_in, set_z)
 *   k3: dz = dy + dz  (after k1 and k2: the join)  k4: dz = a * dz + b  (after k3)
 * and copy_out (dz -> hout): hout = a * (2 x + 3) + b. The argument arrays and variables
 * are locals that die with this function: the graph copied them. */
static void diamond_build(diamond_t *d, float a, float b) {
  d->n = DN;
  d->a = a;
  d->b = b;
  OK(gp_malloc_host((void **)&d->hin, DN * sizeof(float)));
  OK(gp_malloc_host((void **)&d->hout, DN * sizeof(float)));
  OK(gp_malloc((void **)&d->dx, DN * sizeof(float)));
  OK(gp_malloc((void **)&d->dy, DN * sizeof(float)));
  OK(gp_malloc((void **)&d->dz, DN * sizeof(float)));
  OK(gp_graph_create(&d->g, 0));
  int n = DN;
  float *dx = d->dx, *dy = d->dy, *dz = d->dz;
  void *args[4];
  OK(gp_graph_add_memcpy_node(&d->copy_in, d->g, NULL, 0, dx, d->hin, DN * sizeof(float)));
  gp_memset_params_t sy = {dy, f32_bits(1.0f), 4, DN}, sz = {dz, f32_bits(2.0f), 4, DN};
  OK(gp_graph_add_memset_node(&d->set_y, d->g, NULL, 0, &sy));
  OK(gp_graph_add_memset_node(&d->set_z, d->g, NULL, 0, &sz));
  gp_graph_node_t d1[] = {d->copy_in, d->set_y}, d2[] = {d->copy_in, d->set_z};
  gp_kernel_node_params_t p = add_params(&n, &dx, &dy, args);
  OK(gp_graph_add_kernel_node(&d->k1, d->g, d1, 2, &p));
  p = add_params(&n, &dx, &dz, args);
  OK(gp_graph_add_kernel_node(&d->k2, d->g, d2, 2, &p));
  gp_graph_node_t d3[] = {d->k1, d->k2};
  p = add_params(&n, &dy, &dz, args);
  OK(gp_graph_add_kernel_node(&d->k3, d->g, d3, 2, &p));
  p = axpb_params(&n, &a, &b, &dz, args);
  OK(gp_graph_add_kernel_node(&d->k4, d->g, &d->k3, 1, &p));
  n = -1; /* changes after the add do not reach the node */
  a = b = 0.0f;
  dz = NULL;
  OK(gp_graph_add_memcpy_node(&d->copy_out, d->g, &d->k4, 1, d->hout, d->dz, DN * sizeof(float)));
}

static void diamond_free(diamond_t *d) {
  OK(gp_graph_destroy(d->g));
  OK(gp_free_host(d->hin));
  OK(gp_free_host(d->hout));
  OK(gp_free(d->dx));
  OK(gp_free(d->dy));
  OK(gp_free(d->dz));
}

/* Fresh inputs, poisoned output; one launch of x; hout checked against a * (2 x + 3) + b. */
static void diamond_run(const diamond_t *d, gp_graph_exec_t x, gp_stream_t s, float a, float b,
                        const char *what) {
  fill_ints(d->hin, d->n);
  poison(d->hout, d->n);
  OK(gp_graph_launch(x, s));
  OK(gp_stream_synchronize(s));
  double *ref = malloc((size_t)d->n * sizeof(double));
  ck_assert_ptr_nonnull(ref);
  for (int i = 0; i < d->n; i++) ref[i] = (double)a * (2.0 * d->hin[i] + 3.0) + b;
  expect_exact(d->hout, ref, d->n, what);
  free(ref);
}

START_TEST(explicit_diamond_and_exec_set_params) {
  gp_stream_t s;
  OK(gp_stream_create(&s));
  diamond_t d;
  diamond_build(&d, 2.0f, 1.0f);

  size_t count = 0;
  OK(gp_graph_get_node_count(d.g, &count));
  ck_assert_uint_eq(count, 8);
  gp_graph_node_t nodes[10];
  count = 10;
  OK(gp_graph_get_nodes(d.g, nodes, &count));
  ck_assert_uint_eq(count, 8);
  ck_assert_ptr_null(nodes[8]);
  ck_assert_ptr_null(nodes[9]);
  const gp_graph_node_t want[] = {d.copy_in, d.set_y, d.set_z, d.k1, d.k2, d.k3, d.k4, d.copy_out};
  const gp_graph_node_type_t types[] = {GP_GRAPH_NODE_TYPE_MEMCPY, GP_GRAPH_NODE_TYPE_MEMSET,
                                        GP_GRAPH_NODE_TYPE_MEMSET, GP_GRAPH_NODE_TYPE_KERNEL,
                                        GP_GRAPH_NODE_TYPE_KERNEL, GP_GRAPH_NODE_TYPE_KERNEL,
                                        GP_GRAPH_NODE_TYPE_KERNEL, GP_GRAPH_NODE_TYPE_MEMCPY};
  for (int i = 0; i < 8; i++) {
    gp_graph_node_type_t t;
    OK(gp_graph_node_get_type(want[i], &t));
    ck_assert_int_eq(t, types[i]);
    if (cpu()) ck_assert_ptr_eq(nodes[i], want[i]); /* CUDA does not promise the order */
  }
  count = 0;
  OK(gp_graph_get_nodes(d.g, NULL, &count));
  ck_assert_uint_eq(count, 8);

  gp_kernel_node_params_t got;
  OK(gp_graph_kernel_node_get_params(d.k4, &got));
  ck_assert_ptr_eq(got.kernel, GP_KERNEL_REF(kt_axpb));
  ck_assert_uint_eq(got.grid.x, (DN + 127) / 128);
  ck_assert_uint_eq(got.block.x, 128);
  ck_assert_int_eq(*(int *)got.args[0], DN);
  ck_assert_float_eq(*(float *)got.args[1], 2.0f);
  ck_assert_ptr_eq(*(float **)got.args[3], d.dz);

  gp_graph_exec_t x;
  OK(gp_graph_instantiate(&x, d.g));
  for (int r = 0; r < 3; r++) diamond_run(&d, x, s, 2.0f, 1.0f, "diamond (kt_add x3, kt_axpb a=2 b=1)");

  /* The executable graph's node changes; the graph's does not. */
  int n = DN;
  float a = 3.0f, b = -4.0f, *dz = d.dz;
  void *args[4];
  gp_kernel_node_params_t p = axpb_params(&n, &a, &b, &dz, args);
  OK(gp_graph_exec_kernel_node_set_params(x, d.k4, &p));
  a = 100.0f; /* copied at the call */
  diamond_run(&d, x, s, 3.0f, -4.0f, "diamond after exec_kernel_node_set_params (kt_axpb a=3 b=-4)");
  OK(gp_graph_kernel_node_get_params(d.k4, &got));
  ck_assert_float_eq(*(float *)got.args[1], 2.0f);
  gp_graph_exec_t x2;
  OK(gp_graph_instantiate(&x2, d.g));
  diamond_run(&d, x2, s, 2.0f, 1.0f, "second instantiation of the unchanged graph (kt_axpb a=2 b=1)");
  OK(gp_graph_exec_destroy(x2));

  /* The graph may go before its executable graph. */
  OK(gp_graph_destroy(d.g));
  d.g = NULL;
  diamond_run(&d, x, s, 3.0f, -4.0f, "executable graph after its graph was destroyed");
  OK(gp_graph_exec_destroy(x));
  diamond_free(&d);
  OK(gp_stream_destroy(s));
}
END_TEST

/* Blocks the stream until the test opens it: launches enqueued behind it are pending. */
static void wait_gate(void *p) {
  for (int i = 0; i < 5000 && atomic_load((atomic_int *)p) == 0; i++) sleep_ms(1);
}

/* Launches enqueued before an update run with the parameters they were enqueued with. */
START_TEST(update_leaves_pending_launches) {
  gp_stream_t s;
  OK(gp_stream_create(&s));
  enum { N = 300 };
  float *h0, *h1, *h2, *dx;
  OK(gp_malloc_host((void **)&h0, N * sizeof(float)));
  OK(gp_malloc_host((void **)&h1, N * sizeof(float)));
  OK(gp_malloc_host((void **)&h2, N * sizeof(float)));
  OK(gp_malloc((void **)&dx, N * sizeof(float)));
  atomic_int gate = 0;
  gp_graph_t g;
  gp_graph_node_t wait, in, k, out;
  OK(gp_graph_create(&g, 0));
  gp_host_node_params_t hp = {wait_gate, &gate};
  OK(gp_graph_add_host_node(&wait, g, NULL, 0, &hp));
  OK(gp_graph_add_memcpy_node(&in, g, &wait, 1, dx, h0, N * sizeof(float)));
  int n = N;
  float a = 2.0f, b = 0.0f;
  void *args[4];
  gp_kernel_node_params_t p = axpb_params(&n, &a, &b, &dx, args);
  OK(gp_graph_add_kernel_node(&k, g, &in, 1, &p));
  OK(gp_graph_add_memcpy_node(&out, g, &k, 1, h1, dx, N * sizeof(float)));
  gp_graph_exec_t x;
  OK(gp_graph_instantiate(&x, g));
  fill_ints(h0, N);
  poison(h1, N);
  poison(h2, N);
  OK(gp_graph_launch(x, s));                                /* a = 2, held by the gate */
  OK(gp_memcpy_async(h2, h1, N * sizeof(float), s));        /* keeps the first result */
  a = 5.0f;
  p = axpb_params(&n, &a, &b, &dx, args);
  OK(gp_graph_exec_kernel_node_set_params(x, k, &p));
  OK(gp_graph_launch(x, s));                                /* a = 5 */
  atomic_store(&gate, 1);
  OK(gp_stream_synchronize(s));
  double ref2[N], ref5[N];
  for (int i = 0; i < N; i++) {
    ref2[i] = 2.0 * h0[i];
    ref5[i] = 5.0 * h0[i];
  }
  expect_exact(h2, ref2, N, "launch pending during exec_kernel_node_set_params (kt_axpb a=2)");
  expect_exact(h1, ref5, N, "launch after exec_kernel_node_set_params (kt_axpb a=5)");
  OK(gp_graph_exec_destroy(x));
  OK(gp_graph_destroy(g));
  OK(gp_free_host(h0));
  OK(gp_free_host(h1));
  OK(gp_free_host(h2));
  OK(gp_free(dx));
  OK(gp_stream_destroy(s));
}
END_TEST

START_TEST(exec_update_parameters_and_topology) {
  gp_stream_t s;
  OK(gp_stream_create(&s));
  diamond_t d;
  diamond_build(&d, 2.0f, 1.0f);
  gp_graph_exec_t x;
  OK(gp_graph_instantiate(&x, d.g));
  diamond_run(&d, x, s, 2.0f, 1.0f, "diamond before the update (kt_axpb a=2 b=1)");

  /* Same topology, a changed kernel argument: the update succeeds. */
  int n = DN;
  float a = 7.0f, b = 2.0f, *dz = d.dz;
  void *args[4];
  gp_kernel_node_params_t p = axpb_params(&n, &a, &b, &dz, args);
  OK(gp_graph_kernel_node_set_params(d.k4, &p));
  gp_graph_exec_update_result_info_t info;
  OK(gp_graph_exec_update(x, d.g, &info));
  ck_assert_int_eq(info.result, GP_GRAPH_EXEC_UPDATE_SUCCESS);
  ck_assert_ptr_null(info.error_node);
  diamond_run(&d, x, s, 7.0f, 2.0f, "diamond after exec_update (kt_axpb a=7 b=2)");

  /* A node added: the topology changed, exec keeps its parameters. */
  gp_graph_node_t extra;
  OK(gp_graph_add_empty_node(&extra, d.g, &d.copy_out, 1));
  p = axpb_params(&n, &(float){9.0f}, &b, &dz, args);
  OK(gp_graph_kernel_node_set_params(d.k4, &p));
  FAILS(gp_graph_exec_update(x, d.g, &info), GP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, W("topology"));
  ck_assert_int_eq(info.result, GP_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  diamond_run(&d, x, s, 7.0f, 2.0f, "diamond after a refused exec_update (kt_axpb a=7 b=2)");
  OK(gp_graph_exec_destroy(x));

  /* A dependency added between existing nodes: topology changed, at the node and from. */
  OK(gp_graph_instantiate(&x, d.g));
  OK(gp_graph_add_dependencies(d.g, &d.set_y, &d.set_z, 1));
  FAILS(gp_graph_exec_update(x, d.g, &info), GP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, W("topology"));
  ck_assert_int_eq(info.result, GP_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  if (cpu()) {
    ck_assert_ptr_eq(info.error_node, d.set_z);
    ck_assert_ptr_eq(info.error_from_node, d.set_y);
  }
  OK(gp_graph_exec_destroy(x));

  /* Same shape, another node type. */
  gp_graph_t g1, g2;
  gp_graph_node_t e1, h2;
  OK(gp_graph_create(&g1, 0));
  OK(gp_graph_create(&g2, 0));
  OK(gp_graph_add_empty_node(&e1, g1, NULL, 0));
  counter_t cnt = {0};
  gp_host_node_params_t hp = {count_call, &cnt};
  OK(gp_graph_add_host_node(&h2, g2, NULL, 0, &hp));
  OK(gp_graph_instantiate(&x, g1));
  FAILS(gp_graph_exec_update(x, g2, &info), GP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, W("type"));
  ck_assert_int_eq(info.result, GP_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
  ck_assert_ptr_eq(info.error_node, h2);
  OK(gp_graph_launch(x, s));
  OK(gp_stream_synchronize(s));
  ck_assert_int_eq(atomic_load(&cnt.calls), 0); /* still the empty node */
  FAILS(gp_graph_exec_update(x, g2, NULL), GP_ERROR_INVALID_VALUE, "result_info");
  FAILS(gp_graph_exec_update(NULL, g2, &info), GP_ERROR_INVALID_HANDLE, "exec");
  FAILS(gp_graph_exec_update(x, NULL, &info), GP_ERROR_INVALID_HANDLE, "graph");
  OK(gp_graph_exec_destroy(x));
  OK(gp_graph_destroy(g1));
  OK(gp_graph_destroy(g2));
  diamond_free(&d);
  OK(gp_stream_destroy(s));
}
END_TEST

/* Host nodes run after their dependencies, given when added or later. */
START_TEST(host_node_ordering) {
  gp_stream_t s;
  OK(gp_stream_create(&s));
  atomic_int flag = 0;
  probe_t probe = {&flag, 0};
  counter_t cnt = {0};
  gp_graph_t g;
  OK(gp_graph_create(&g, 0));
  gp_graph_node_t reset, set, read, side, join;
  gp_host_node_params_t hr = {reset_flag, &flag}, hs = {pause_then_set, &flag}, hd = {read_flag, &probe},
                        hc = {count_call, &cnt};
  /* read added first and without dependencies: only add_dependencies orders it. */
  OK(gp_graph_add_host_node(&read, g, NULL, 0, &hd));
  OK(gp_graph_add_host_node(&reset, g, NULL, 0, &hr));
  OK(gp_graph_add_host_node(&set, g, &reset, 1, &hs));
  OK(gp_graph_add_host_node(&side, g, NULL, 0, &hc));
  OK(gp_graph_add_empty_node(&join, g, (gp_graph_node_t[]){set, side}, 2));
  OK(gp_graph_add_dependencies(g, &join, &read, 1));
  gp_graph_exec_t x;
  OK(gp_graph_instantiate(&x, g));
  for (int r = 0; r < 3; r++) {
    atomic_store(&probe.seen, 0);
    OK(gp_graph_launch(x, s));
    OK(gp_stream_synchronize(s));
    ck_assert_msg(atomic_load(&probe.seen) == 2, "launch %d: the read ran before the set (seen %d)", r,
                  atomic_load(&probe.seen));
  }
  ck_assert_int_eq(atomic_load(&cnt.calls), 3);

  /* A cycle through add_dependencies: instantiation refuses it. */
  OK(gp_graph_add_dependencies(g, &read, &reset, 1));
  gp_graph_exec_t bad = (gp_graph_exec_t)(uintptr_t)1;
  FAILS(gp_graph_instantiate(&bad, g), GP_ERROR_INVALID_VALUE, W("cycle"));
  ck_assert_ptr_null(bad);
  OK(gp_graph_exec_destroy(x));
  OK(gp_graph_destroy(g));
  OK(gp_stream_destroy(s));
}
END_TEST

START_TEST(explicit_graph_errors) {
  float *d;
  OK(gp_malloc((void **)&d, 1024));
  gp_graph_t g, other;
  gp_graph_node_t nd = NULL, e, o;
  FAILS(gp_graph_create(NULL, 0), GP_ERROR_INVALID_VALUE, "graph");
  FAILS(gp_graph_create(&g, 1), GP_ERROR_INVALID_VALUE, "flags");
  ck_assert_ptr_null(g);
  OK(gp_graph_create(&g, 0));
  OK(gp_graph_create(&other, 0));
  OK(gp_graph_add_empty_node(&e, g, NULL, 0));
  OK(gp_graph_add_empty_node(&o, other, NULL, 0));

  FAILS(gp_graph_add_empty_node(NULL, g, NULL, 0), GP_ERROR_INVALID_VALUE, "node");
  FAILS(gp_graph_add_empty_node(&nd, NULL, NULL, 0), GP_ERROR_INVALID_HANDLE, "graph");
  FAILS(gp_graph_add_empty_node(&nd, (gp_graph_t)(uintptr_t)0x40, NULL, 0), GP_ERROR_INVALID_HANDLE,
        "graph");
  FAILS(gp_graph_add_empty_node(&nd, g, NULL, 1), GP_ERROR_INVALID_VALUE, "deps");
  if (cpu()) {
    FAILS(gp_graph_add_empty_node(&nd, g, &o, 1), GP_ERROR_INVALID_VALUE, "another graph");
    FAILS(gp_graph_add_empty_node(&nd, g, (gp_graph_node_t[]){e, e}, 2), GP_ERROR_INVALID_VALUE, "repeats");
    FAILS(gp_graph_add_empty_node(&nd, g, (gp_graph_node_t[]){(gp_graph_node_t)(uintptr_t)0x40}, 1),
          GP_ERROR_INVALID_HANDLE, "deps[0]");
    FAILS(gp_graph_add_dependencies(g, &e, &o, 1), GP_ERROR_INVALID_VALUE, "another graph");
    FAILS(gp_graph_add_dependencies(g, &e, &e, 1), GP_ERROR_INVALID_VALUE, "same node");
  }
  ck_assert_ptr_null(nd);
  FAILS(gp_graph_add_dependencies(g, NULL, &e, 1), GP_ERROR_INVALID_VALUE, "from");
  OK(gp_graph_add_dependencies(g, NULL, NULL, 0));

  /* kernel nodes: gp_launch's checks */
  int n = 4;
  void *args[] = {&n, &d, &d};
  gp_kernel_node_params_t p = {GP_KERNEL_REF(kt_add), gp_dim3(1, 1, 1), gp_dim3(32, 1, 1), 0, args};
  FAILS(gp_graph_add_kernel_node(&nd, g, NULL, 0, NULL), GP_ERROR_INVALID_VALUE, "params");
  p.kernel = NULL;
  FAILS(gp_graph_add_kernel_node(&nd, g, NULL, 0, &p), GP_ERROR_INVALID_VALUE, "kernel");
  p.kernel = (gp_kernel_t)(uintptr_t)0x40;
  FAILS(gp_graph_add_kernel_node(&nd, g, NULL, 0, &p), GP_ERROR_INVALID_HANDLE, "kernel");
  p.kernel = GP_KERNEL_REF(kt_add);
  p.grid = gp_dim3(0, 1, 1);
  FAILS(gp_graph_add_kernel_node(&nd, g, NULL, 0, &p), GP_ERROR_INVALID_CONFIGURATION, "grid");
  p.grid = gp_dim3(1, 1, 1);
  p.args = NULL;
  FAILS(gp_graph_add_kernel_node(&nd, g, NULL, 0, &p), GP_ERROR_INVALID_VALUE, "args");
  p.args = args;
  gp_graph_node_t k;
  OK(gp_graph_add_kernel_node(&k, g, &e, 1, &p));

  /* copies, sets, host functions */
  FAILS(gp_graph_add_memcpy_node(&nd, g, NULL, 0, d, d + 128, 0), GP_ERROR_INVALID_VALUE, "bytes");
  FAILS(gp_graph_add_memcpy_node(&nd, g, NULL, 0, NULL, d, 4), GP_ERROR_INVALID_VALUE, "dst");
  FAILS(gp_graph_add_memcpy_node(&nd, g, NULL, 0, d, NULL, 4), GP_ERROR_INVALID_VALUE, "src");
  FAILS(gp_graph_add_memcpy_node(&nd, g, NULL, 0, d, d + 128, 1024), GP_ERROR_INVALID_VALUE, "src");
  gp_memset_params_t sp = {d, 7, 3, 4};
  FAILS(gp_graph_add_memset_node(&nd, g, NULL, 0, &sp), GP_ERROR_INVALID_VALUE, "element_size");
  sp.element_size = 2;
  sp.width = 0;
  FAILS(gp_graph_add_memset_node(&nd, g, NULL, 0, &sp), GP_ERROR_INVALID_VALUE, "width");
  sp.width = 4;
  sp.dst = (char *)d + 1;
  FAILS(gp_graph_add_memset_node(&nd, g, NULL, 0, &sp), GP_ERROR_INVALID_VALUE, "aligned");
  sp.dst = d;
  sp.width = 1024;
  FAILS(gp_graph_add_memset_node(&nd, g, NULL, 0, &sp), GP_ERROR_INVALID_VALUE, "params->dst");
  FAILS(gp_graph_add_memset_node(&nd, g, NULL, 0, NULL), GP_ERROR_INVALID_VALUE, "params");
  gp_host_node_params_t hp = {NULL, NULL};
  FAILS(gp_graph_add_host_node(&nd, g, NULL, 0, &hp), GP_ERROR_INVALID_VALUE, "fn");
  FAILS(gp_graph_add_host_node(&nd, g, NULL, 0, NULL), GP_ERROR_INVALID_VALUE, "params");

  /* queries */
  gp_graph_node_type_t t;
  gp_kernel_node_params_t got;
  FAILS(gp_graph_node_get_type(e, NULL), GP_ERROR_INVALID_VALUE, "type");
  FAILS(gp_graph_get_nodes(g, NULL, NULL), GP_ERROR_INVALID_VALUE, "count");
  FAILS(gp_graph_kernel_node_get_params(e, &got), GP_ERROR_INVALID_VALUE, W("kernel node"));
  FAILS(gp_graph_kernel_node_get_params(k, NULL), GP_ERROR_INVALID_VALUE, "params");
  FAILS(gp_graph_kernel_node_set_params(e, &p), GP_ERROR_INVALID_VALUE, W("kernel node"));
  gp_graph_node_t one[1] = {NULL};
  size_t count = 1;
  OK(gp_graph_get_nodes(g, one, &count)); /* fewer than there are: as many as fit */
  ck_assert_uint_eq(count, 1);
  ck_assert_ptr_nonnull(one[0]);

  /* executable graphs */
  gp_graph_exec_t x;
  OK(gp_graph_instantiate(&x, g));
  FAILS(gp_graph_exec_kernel_node_set_params(x, k, NULL), GP_ERROR_INVALID_VALUE, "params");
  FAILS(gp_graph_exec_kernel_node_set_params(NULL, k, &p), GP_ERROR_INVALID_HANDLE, "exec");
  FAILS(gp_graph_exec_kernel_node_set_params(x, e, &p), GP_ERROR_INVALID_VALUE, W("kernel node"));
  p.block = gp_dim3(100000, 1, 1);
  FAILS(gp_graph_exec_kernel_node_set_params(x, k, &p), GP_ERROR_INVALID_CONFIGURATION, "block");
  p.block = gp_dim3(32, 1, 1);
  gp_graph_node_t late;
  OK(gp_graph_add_kernel_node(&late, g, NULL, 0, &p));
  if (cpu()) {
    FAILS(gp_graph_exec_kernel_node_set_params(x, late, &p), GP_ERROR_INVALID_VALUE, "after");
    gp_graph_node_t ok2;
    OK(gp_graph_add_kernel_node(&ok2, other, NULL, 0, &p));
    FAILS(gp_graph_exec_kernel_node_set_params(x, ok2, &p), GP_ERROR_INVALID_VALUE, "instantiated from");
  }
  OK(gp_graph_exec_kernel_node_set_params(x, k, &p));
  OK(gp_graph_exec_destroy(x));

  /* nodes die with their graph (the cpu backend checks; CUDA's are dangling) */
  OK(gp_graph_destroy(other));
  if (cpu()) {
    FAILS(gp_graph_node_get_type(o, &t), GP_ERROR_INVALID_HANDLE, "node");
    FAILS(gp_graph_node_get_type(NULL, &t), GP_ERROR_INVALID_HANDLE, "node");
    FAILS(gp_graph_node_get_type((gp_graph_node_t)(uintptr_t)0x40, &t), GP_ERROR_INVALID_HANDLE, "node");
    FAILS(gp_graph_kernel_node_set_params(o, &p), GP_ERROR_INVALID_HANDLE, "node");
  }
  FAILS(gp_graph_get_nodes(other, NULL, &count), GP_ERROR_INVALID_HANDLE, "graph");
  OK(gp_graph_destroy(g));
  OK(gp_free(d));
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("graph");
  TCase *tc = tcase_create("graph");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, capture_each_kind_and_replay);
  tcase_add_test(tc, chain_replayed_many_times);
  tcase_add_test(tc, fork_join_across_streams);
  tcase_add_test(tc, capture_across_devices);
  tcase_add_test(tc, capture_gemm_and_attention);
  tcase_add_test(tc, launches_of_one_exec_in_turn);
  tcase_add_test(tc, child_graph_and_empty_graph);
  tcase_add_test(tc, per_thread_stream_and_fault_in_graph);
  tcase_add_test(tc, operations_a_capture_forbids);
  tcase_add_test(tc, capture_modes_and_threads);
  tcase_add_test(tc, capture_misuse);
  tcase_add_test(tc, explicit_diamond_and_exec_set_params);
  tcase_add_test(tc, update_leaves_pending_launches);
  tcase_add_test(tc, exec_update_parameters_and_topology);
  tcase_add_test(tc, host_node_ordering);
  tcase_add_test(tc, explicit_graph_errors);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  gp_ref_rng_seed(&g_rng, g_seed);
  print_seed("test_graph", (unsigned long long)g_seed);
  return run_suite("test_graph", suite());
}
