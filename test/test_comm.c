/*
 * test_comm.c - collectives on the cpu engine: every operation x dtype x reduction, in
 * place and out of place, at 1 to 4 ranks, as threads of this process (gp_comm_init_all
 * over virtual devices: the GP_CPU_DEVICES=4 run) and as processes (gp_comm_init_rank
 * over a shared-memory rendezvous: the GP_CPU_DEVICES=1 run); odd counts (1, 7, 1M+3);
 * send/recv groups; splits; non-blocking and threaded initialisation; argument checks;
 * and the faults: a rank killed mid-all-reduce, a rank alive but absent, a slow rank,
 * mismatched calls, an abort, a planted segment. Inputs come from ref/ref_comm.h (a
 * function of the printed seed, so every rank can check every result); reductions are
 * compared with a float64 reference (integers exactly), copies bit for bit.
 *
 * cuda/hip: the every-op matrix through NCCL/RCCL, one rank per device (skipped, 77, with
 * no device or no NCCL); the mapping itself is checked in CI by test_comm_nccl.c.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <gpuport.h>
#include "check_util.h"
#include "ref.h"
#include "ref_comm.h"
#ifdef GP_BUILD_CPU
#include "cpu/comm_cpu.h" /* gp__cpu_comm_shm_name: the segment a test plants */
#endif

static uint64_t g_seed;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* ---- one case, checked on the ranks this process holds ------------------------------------ */

typedef enum { C_ALL_REDUCE, C_BROADCAST, C_REDUCE, C_ALL_GATHER, C_REDUCE_SCATTER, C_ALL_TO_ALL,
               C_SENDRECV, C_COUNT } coll_t;
static const char *const coll_names[C_COUNT] = {"all_reduce", "broadcast", "reduce", "all_gather",
                                                "reduce_scatter", "all_to_all", "sendrecv"};

static bool reduces(coll_t c) { return c == C_ALL_REDUCE || c == C_REDUCE || c == C_REDUCE_SCATTER; }

typedef struct rankbuf {
  gp_comm_t comm;
  gp_stream_t stream;
  int rank, device;
  void *send, *recv; /* device memory, the largest case's size */
} rankbuf_t;

typedef struct tcase {
  coll_t coll;
  gp_dtype_t t;
  gp_reduce_op_t op;
  size_t count;
  bool inplace;
  int root;
  uint64_t seed;
} tcase_t;

/* Elements of send and recv a case needs per rank. */
static void extents(const tcase_t *c, int n, size_t *se, size_t *re) {
  size_t k = c->count, nn = (size_t)n;
  switch (c->coll) {
    case C_ALL_GATHER: *se = k, *re = nn * k; break;
    case C_REDUCE_SCATTER: *se = nn * k, *re = k; break;
    case C_ALL_TO_ALL: *se = *re = nn * k; break;
    default: *se = *re = k; break;
  }
}

/* Fills rank's input, poisons its output and enqueues the case on its stream. */
static gp_status_t post(const tcase_t *c, rankbuf_t *b, int n, void *host) {
  size_t es = gp_dtype_size(c->t), se, re, k = c->count;
  extents(c, n, &se, &re);
  gp_ref_comm_poison(host, c->t, re);
  gp_status_t s = gp_memcpy(b->recv, host, re * es);
  if (s) return s;
  char *send = b->send, *recv = b->recv;
  if (c->inplace) {
    if (c->coll == C_ALL_GATHER) send = recv + (size_t)b->rank * k * es;
    else if (c->coll == C_REDUCE_SCATTER) { send = recv; recv = send + (size_t)b->rank * k * es; }
    else send = recv;
  }
  /* Inputs (in place: written into recv, where the collective reads them). */
  gp_ref_comm_inputs(host, c->t, c->op, GP_REF_COMM_RANDOM, c->seed, b->rank, 0, se);
  if ((s = gp_memcpy(send, host, se * es))) return s;
  switch (c->coll) {
    case C_ALL_REDUCE: return gp_all_reduce(send, recv, k, c->t, c->op, b->comm, b->stream);
    case C_BROADCAST: return gp_broadcast(send, recv, k, c->t, c->root, b->comm, b->stream);
    case C_REDUCE: return gp_reduce(send, recv, k, c->t, c->op, c->root, b->comm, b->stream);
    case C_ALL_GATHER: return gp_all_gather(send, b->recv, k, c->t, b->comm, b->stream);
    case C_REDUCE_SCATTER: return gp_reduce_scatter(send, recv, k, c->t, c->op, b->comm, b->stream);
    case C_ALL_TO_ALL: return gp_all_to_all(send, recv, k, c->t, b->comm, b->stream);
    case C_SENDRECV: {
      /* a ring, receive first: only a group makes this order safe */
      char *dst = c->inplace ? (char *)b->recv : (char *)b->recv; /* separate buffers always */
      if ((s = gp_group_start())) return s;
      gp_status_t a = gp_recv(dst, k, c->t, (b->rank + n - 1) % n, b->comm, b->stream);
      gp_status_t d = gp_send(b->send, k, c->t, (b->rank + 1) % n, b->comm, b->stream);
      if (c->inplace) (void)0;
      s = gp_group_end();
      return a ? a : d ? d : s;
    }
    default: return GP_ERROR_INVALID_VALUE;
  }
}

/* Checks rank's output; returns the number of bad elements, message in msg. */
static size_t verify(const tcase_t *c, rankbuf_t *b, int n, void *host, char *msg, size_t len) {
  size_t es = gp_dtype_size(c->t), se, re, k = c->count, bad = 0;
  extents(c, n, &se, &re);
  if (c->inplace && c->coll == C_REDUCE_SCATTER) re = se; /* recv is inside send */
  if (gp_memcpy(host, b->recv, re * es) != GP_SUCCESS) {
    snprintf(msg, len, "copy back: %s", gp_last_error_message());
    return 1;
  }
  const char *h = host;
  switch (c->coll) {
    case C_ALL_REDUCE:
      return gp_ref_comm_check_reduce(h, c->t, c->op, GP_REF_COMM_RANDOM, c->seed, n, 0, k, msg, len);
    case C_REDUCE:
      if (b->rank == c->root)
        return gp_ref_comm_check_reduce(h, c->t, c->op, GP_REF_COMM_RANDOM, c->seed, n, 0, k, msg, len);
      if (c->inplace) return 0; /* its send buffer: left as it was or not, NCCL says nothing */
      for (size_t i = 0; i < k * es; i++)
        if ((unsigned char)h[i] != 0xff && bad++ == 0)
          snprintf(msg, len, "a non-root rank's recv was written (byte %zu)", i);
      return bad;
    case C_BROADCAST:
      return gp_ref_comm_check_copy(h, c->t, c->op, GP_REF_COMM_RANDOM, c->seed, c->root, 0, k, msg, len);
    case C_ALL_GATHER:
      for (int q = 0; q < n && !bad; q++)
        bad += gp_ref_comm_check_copy(h + (size_t)q * k * es, c->t, c->op, GP_REF_COMM_RANDOM,
                                      c->seed, q, 0, k, msg, len);
      return bad;
    case C_REDUCE_SCATTER:
      if (c->inplace) h += (size_t)b->rank * k * es;
      return gp_ref_comm_check_reduce(h, c->t, c->op, GP_REF_COMM_RANDOM, c->seed, n,
                                      (size_t)b->rank * k, k, msg, len);
    case C_ALL_TO_ALL:
      for (int q = 0; q < n && !bad; q++)
        bad += gp_ref_comm_check_copy(h + (size_t)q * k * es, c->t, c->op, GP_REF_COMM_RANDOM,
                                      c->seed, q, (size_t)b->rank * k, k, msg, len);
      return bad;
    case C_SENDRECV:
      return gp_ref_comm_check_copy(h, c->t, c->op, GP_REF_COMM_RANDOM, c->seed, (b->rank + n - 1) % n,
                                    0, k, msg, len);
    default:
      return 1;
  }
}

static void describe(char *buf, size_t len, const tcase_t *c, int n) {
  snprintf(buf, len, "%s %s%s%s count %zu root %d, %d ranks, %s, seed %llu (GP_TEST_SEED=%llu)",
           coll_names[c->coll], gp_dtype_name(c->t), reduces(c->coll) ? " op " : "",
           reduces(c->coll) ? (const char *[]){"sum", "prod", "max", "min", "avg"}[c->op] : "",
           c->count, c->root, n, c->inplace ? "in place" : "out of place",
           (unsigned long long)c->seed, (unsigned long long)g_seed);
}

/* Runs one case on the nb ranks held here: post all, synchronise all, verify all. */
static size_t run_case(const tcase_t *c, rankbuf_t *b, int nb, int n, void *host, char *msg,
                       size_t len) {
  for (int i = 0; i < nb; i++) {
    gp_status_t s = post(c, &b[i], n, host);
    /* NCCL/RCCL lack fp8 reductions before 2.24 and in-place all-to-all: not a failure. */
    if (s == GP_ERROR_NOT_SUPPORTED && gp_backend() != GP_BACKEND_CPU) {
      for (int j = 0; j < i; j++) gp_stream_synchronize(b[j].stream);
      return 0;
    }
    if (s) {
      snprintf(msg, len, "rank %d: enqueue: %s: %s", b[i].rank, gp_status_name(s), gp_last_error_message());
      return 1;
    }
  }
  for (int i = 0; i < nb; i++) {
    gp_status_t s = gp_stream_synchronize(b[i].stream);
    if (s) {
      snprintf(msg, len, "rank %d: synchronize: %s: %s", b[i].rank, gp_status_name(s),
               gp_last_error_message());
      return 1;
    }
  }
  size_t bad = 0;
  char m[400];
  for (int i = 0; i < nb; i++) {
    size_t e = verify(c, &b[i], n, host, m, sizeof m);
    if (e && !bad) snprintf(msg, len, "rank %d: %zu bad: %s", b[i].rank, e, m);
    bad += e;
  }
  return bad;
}

static const gp_dtype_t all_types[] = {GP_F32, GP_F64, GP_F16, GP_BF16, GP_I8, GP_U8, GP_I32,
                                       GP_U32, GP_I64, GP_U64, GP_FP8_E4M3, GP_FP8_E5M2};
#define NTYPES (sizeof all_types / sizeof all_types[0])

/* The whole matrix on the ranks held here; returns failures, first described in msg. */
static int run_matrix(rankbuf_t *b, int nb, int n, void *host, char *msg, size_t len) {
  int failed = 0;
  uint64_t k = 0;
  for (int coll = 0; coll < C_COUNT; coll++)
    for (size_t ti = 0; ti < NTYPES; ti++)
      for (int op = 0; op < (reduces((coll_t)coll) ? 5 : 1); op++)
        for (int ip = 0; ip < 2; ip++) {
          if (coll == C_SENDRECV && ip) continue;
          tcase_t c = {(coll_t)coll, all_types[ti], (gp_reduce_op_t)op, ip ? 1 : 7, ip == 1,
                       (int)(k % (uint64_t)n), g_seed ^ (0x5851f42d4c957f2dull * ++k)};
          char m[600];
          if (run_case(&c, b, nb, n, host, m, sizeof m)) {
            if (failed++ == 0) {
              char d[200];
              describe(d, sizeof d, &c, n);
              snprintf(msg, len, "%s: %s", d, m);
            }
          }
        }
  return failed;
}

/* Large odd counts: the chunked and sliced paths with remainders. */
static int run_large(rankbuf_t *b, int nb, int n, void *host, char *msg, size_t len) {
  const tcase_t cases[] = {
      {C_ALL_REDUCE, GP_F32, GP_SUM, (1u << 20) + 3, false, 0, g_seed ^ 11},
      {C_ALL_REDUCE, GP_BF16, GP_AVG, (1u << 20) + 3, true, 0, g_seed ^ 12},
      {C_REDUCE_SCATTER, GP_I32, GP_SUM, ((1u << 20) + 3) / 4, false, 0, g_seed ^ 13},
      {C_ALL_GATHER, GP_F16, GP_SUM, ((1u << 20) + 3) / 4, true, 0, g_seed ^ 14},
      {C_BROADCAST, GP_U8, GP_SUM, (1u << 20) + 3, false, n - 1, g_seed ^ 15},
      {C_SENDRECV, GP_F64, GP_SUM, 100003, false, 0, g_seed ^ 16},
  };
  int failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char m[600];
    if (run_case(&cases[i], b, nb, n, host, m, sizeof m) && failed++ == 0) {
      char d[200];
      describe(d, sizeof d, &cases[i], n);
      snprintf(msg, len, "%s: %s", d, m);
    }
  }
  return failed;
}

#define MAX_BYTES ((size_t)4 * ((1u << 20) + 3) * 8)

static gp_status_t rank_setup(rankbuf_t *b) {
  gp_status_t s;
  if ((s = gp_device_set(b->device))) return s;
  if ((s = gp_stream_create(&b->stream))) return s;
  if ((s = gp_malloc(&b->send, MAX_BYTES))) return s;
  return gp_malloc(&b->recv, MAX_BYTES);
}

static void rank_teardown(rankbuf_t *b) {
  gp_device_set(b->device);
  gp_stream_destroy(b->stream);
  gp_free(b->send);
  gp_free(b->recv);
  gp_comm_destroy(b->comm);
  memset(b, 0, sizeof(*b));
}

/* ---- threads: gp_comm_init_all over virtual devices ------------------------------------------ */

START_TEST(threads_every_op) {
  int ndev = devices();
  SKIP_IF(ndev < 2 && gp_backend() == GP_BACKEND_CPU,
          "one device: the processes_* tests run these");
  void *host = malloc(MAX_BYTES);
  ck_assert_ptr_nonnull(host);
  for (int n = 1; n <= (ndev < 4 ? ndev : 4); n++) {
    gp_comm_t comms[4];
    rankbuf_t b[4];
    memset(b, 0, sizeof b);
    OK(gp_comm_init_all(comms, n, NULL));
    for (int r = 0; r < n; r++) {
      int rank = -1, size = 0, dev = -1;
      OK(gp_device_set(r));
      OK(gp_comm_rank(comms[r], &rank));
      OK(gp_comm_size(comms[r], &size));
      OK(gp_comm_device(comms[r], &dev));
      ck_assert_int_eq(rank, r);
      ck_assert_int_eq(size, n);
      ck_assert_int_eq(dev, r);
      b[r].comm = comms[r];
      b[r].rank = r;
      b[r].device = r;
      OK(rank_setup(&b[r]));
    }
    char msg[1024] = "";
    int failed = run_matrix(b, n, n, host, msg, sizeof msg);
    ck_assert_msg(failed == 0, "%d cases failed; first: %s", failed, msg);
    if (n == 4 || n == ndev) {
      failed = run_large(b, n, n, host, msg, sizeof msg);
      ck_assert_msg(failed == 0, "%d large cases failed; first: %s", failed, msg);
    }
    for (int r = 0; r < n; r++) rank_teardown(&b[r]);
  }
  gp_device_set(0);
  free(host);
}
END_TEST

/* Every rank of an all-reduce holds the same bits (one rank reduces each element). */
START_TEST(threads_identical_bits) {
  int ndev = devices();
  SKIP_IF(ndev < 3, "needs 3 devices, %d here", ndev);
  gp_comm_t comms[3];
  OK(gp_comm_init_all(comms, 3, NULL));
  const size_t k = 4099;
  void *buf[3];
  gp_stream_t st[3];
  for (int r = 0; r < 3; r++) {
    OK(gp_device_set(r));
    OK(gp_stream_create(&st[r]));
    OK(gp_malloc(&buf[r], k * 2));
    gp_ref_comm_inputs(buf[r], GP_BF16, GP_SUM, GP_REF_COMM_RANDOM, g_seed, r, 0, k);
  }
  for (int r = 0; r < 3; r++) OK(gp_all_reduce(buf[r], buf[r], k, GP_BF16, GP_SUM, comms[r], st[r]));
  for (int r = 0; r < 3; r++) OK(gp_stream_synchronize(st[r]));
  ck_assert_int_eq(memcmp(buf[0], buf[1], k * 2), 0);
  ck_assert_int_eq(memcmp(buf[0], buf[2], k * 2), 0);
  for (int r = 0; r < 3; r++) {
    OK(gp_device_set(r));
    OK(gp_free(buf[r]));
    OK(gp_stream_destroy(st[r]));
    OK(gp_comm_destroy(comms[r]));
  }
  gp_device_set(0);
}
END_TEST

/* A group's sends and receives in any order, several messages per pair, to itself too,
 * one thread driving every rank; on the default streams. */
START_TEST(threads_group_sendrecv) {
  int n = devices() < 4 ? devices() : 4;
  SKIP_IF(n < 2, "needs 2 devices, %d here", n);
  gp_comm_t comms[4];
  OK(gp_comm_init_all(comms, n, NULL));
  enum { M = 3 };
  const size_t sizes[M] = {5, 70001, 0};
  float *out[4], *in[4][M][4];
  for (int r = 0; r < n; r++) {
    OK(gp_device_set(r));
    OK(gp_malloc((void **)&out[r], 70001 * 4));
    gp_ref_comm_inputs(out[r], GP_F32, GP_SUM, GP_REF_COMM_RANDOM, g_seed + (uint64_t)r, 0, 0, 70001);
    for (int m = 0; m < M; m++)
      for (int p = 0; p < n; p++) OK(gp_malloc((void **)&in[r][m][p], sizes[m] * 4 + 4));
  }
  OK(gp_group_start());
  for (int r = 0; r < n; r++) {
    OK(gp_device_set(r));
    for (int m = 0; m < M; m++)
      for (int p = 0; p < n; p++) {
        int peer = (r + p) % n; /* receives before sends on some ranks, after on others */
        if (r % 2) OK(gp_recv(in[r][m][peer], sizes[m], GP_F32, peer, comms[r], NULL));
        OK(gp_send(out[r], sizes[m], GP_F32, peer, comms[r], NULL));
        if (!(r % 2)) OK(gp_recv(in[r][m][peer], sizes[m], GP_F32, peer, comms[r], NULL));
      }
  }
  OK(gp_group_end());
  for (int r = 0; r < n; r++) {
    OK(gp_device_set(r));
    OK(gp_stream_synchronize(NULL));
  }
  for (int r = 0; r < n; r++)
    for (int m = 0; m < M; m++)
      for (int p = 0; p < n; p++) {
        char msg[300];
        size_t bad = gp_ref_comm_check_copy(in[r][m][p], GP_F32, GP_SUM, GP_REF_COMM_RANDOM,
                                            g_seed + (uint64_t)p, 0, 0, sizes[m], msg, sizeof msg);
        ck_assert_msg(bad == 0, "rank %d message %d from %d: %s", r, m, p, msg);
      }
  for (int r = 0; r < n; r++) {
    OK(gp_device_set(r));
    OK(gp_free(out[r]));
    for (int m = 0; m < M; m++)
      for (int p = 0; p < n; p++) OK(gp_free(in[r][m][p]));
    OK(gp_comm_destroy(comms[r]));
  }
  gp_device_set(0);
}
END_TEST

/* gp_comm_split in a group (one thread owns every rank), then a collective on the halves. */
START_TEST(threads_split) {
  SKIP_IF(devices() < 4, "needs 4 devices, %d here", devices());
  gp_comm_t comms[4], sub[4];
  OK(gp_comm_init_all(comms, 4, NULL));
  OK(gp_group_start());
  for (int r = 0; r < 4; r++)
    OK(gp_comm_split(comms[r], r == 3 ? GP_COMM_SPLIT_NOCOLOR : r % 2, -r, &sub[r]));
  OK(gp_group_end());
  ck_assert_ptr_null(sub[3]);
  int rank = -1, size = 0;
  OK(gp_comm_rank(sub[0], &rank));
  OK(gp_comm_size(sub[0], &size));
  ck_assert_int_eq(size, 2);
  ck_assert_int_eq(rank, 1); /* keys -0 and -2: rank 2 comes first */
  OK(gp_comm_rank(sub[2], &rank));
  ck_assert_int_eq(rank, 0);
  OK(gp_comm_size(sub[1], &size));
  ck_assert_int_eq(size, 1);
  int64_t *v[3];
  for (int r = 0; r < 3; r++) {
    OK(gp_device_set(r));
    OK(gp_malloc((void **)&v[r], 8));
    *v[r] = 10 + r;
    OK(gp_all_reduce(v[r], v[r], 1, GP_I64, GP_SUM, sub[r], NULL));
  }
  for (int r = 0; r < 3; r++) {
    OK(gp_device_set(r));
    OK(gp_stream_synchronize(NULL));
  }
  ck_assert_int_eq(*v[0], 22);
  ck_assert_int_eq(*v[2], 22);
  ck_assert_int_eq(*v[1], 11);
  for (int r = 0; r < 4; r++) {
    OK(gp_device_set(r));
    if (r < 3) OK(gp_free(v[r]));
    OK(gp_comm_destroy(sub[r]));
    OK(gp_comm_destroy(comms[r]));
  }
  gp_device_set(0);
}
END_TEST

typedef struct init_arg {
  gp_comm_id_t id;
  int rank, n;
  gp_comm_t comm;
  gp_status_t st;
  double value;
} init_arg_t;

static void *init_thread(void *p) {
  init_arg_t *a = p;
  gp_device_set(a->rank);
  a->st = gp_comm_init_rank(&a->comm, a->n, a->id, a->rank);
  if (a->st) return NULL;
  double *d = NULL;
  if ((a->st = gp_malloc((void **)&d, 8))) return NULL;
  *d = 1.5 * (a->rank + 1);
  a->st = gp_all_reduce(d, d, 1, GP_F64, GP_SUM, a->comm, NULL);
  if (!a->st) a->st = gp_stream_synchronize(NULL);
  a->value = *d;
  gp_free(d);
  return NULL;
}

/* gp_comm_init_rank from threads (NCCL's one-thread-per-GPU pattern), from one thread in a
 * group, and non-blocking. */
START_TEST(threads_init_rank) {
  int n = devices() < 3 ? devices() : 3;
  SKIP_IF(n < 2, "needs 2 devices, %d here", n);
  init_arg_t a[3];
  pthread_t th[3];
  gp_comm_id_t id;
  OK(gp_comm_get_unique_id(&id));
  for (int r = 0; r < n; r++) {
    a[r] = (init_arg_t){id, r, n, NULL, GP_SUCCESS, 0};
    ck_assert_int_eq(pthread_create(&th[r], NULL, init_thread, &a[r]), 0);
  }
  for (int r = 0; r < n; r++) {
    pthread_join(th[r], NULL);
    ck_assert_msg(a[r].st == GP_SUCCESS, "rank %d: %s", r, gp_status_name(a[r].st));
    ck_assert(a[r].value == 1.5 * n * (n + 1) / 2);
    OK(gp_comm_destroy(a[r].comm));
  }
  /* One thread, a group. */
  gp_comm_t c[3];
  OK(gp_comm_get_unique_id(&id));
  OK(gp_group_start());
  for (int r = 0; r < n; r++) {
    OK(gp_device_set(r));
    OK(gp_comm_init_rank(&c[r], n, id, r));
  }
  OK(gp_group_end());
  for (int r = 0; r < n; r++) {
    ck_assert_ptr_nonnull(c[r]);
    OK(gp_comm_destroy(c[r]));
  }
  /* Non-blocking: returns at once, NOT_READY until the clique is complete. */
  gp_comm_config_t cfg;
  gp_comm_config_init(&cfg);
  cfg.blocking = 0;
  OK(gp_comm_get_unique_id(&id));
  for (int r = 0; r < n; r++) {
    OK(gp_device_set(r));
    OK(gp_comm_init_rank_config(&c[r], n, id, r, &cfg));
    gp_status_t st = GP_SUCCESS;
    OK(gp_comm_get_async_error(c[r], &st));
    if (r == 0) ck_assert_int_eq(st, GP_ERROR_NOT_READY); /* rank 1 has not joined yet */
  }
  for (int r = 0; r < n; r++) {
    gp_status_t st = GP_ERROR_NOT_READY;
    double t0 = now_s();
    while (st == GP_ERROR_NOT_READY && now_s() - t0 < 10) {
      OK(gp_comm_get_async_error(c[r], &st));
      if (st == GP_ERROR_NOT_READY) sleep_ms(1);
    }
    ck_assert_int_eq(st, GP_SUCCESS);
    OK(gp_comm_destroy(c[r]));
  }
  gp_device_set(0);
}
END_TEST

/* Mismatched calls fail on every rank, naming the collective. */
START_TEST(threads_mismatch) {
  SKIP_IF(devices() < 2, "needs 2 devices, %d here", devices());
  gp_comm_t comms[2];
  OK(gp_comm_init_all(comms, 2, NULL));
  float *x[2];
  for (int r = 0; r < 2; r++) {
    OK(gp_device_set(r));
    OK(gp_malloc((void **)&x[r], 64));
  }
  OK(gp_device_set(0));
  OK(gp_all_reduce(x[0], x[0], 8, GP_F32, GP_SUM, comms[0], NULL));
  OK(gp_device_set(1));
  OK(gp_all_reduce(x[1], x[1], 9, GP_F32, GP_SUM, comms[1], NULL));
  for (int r = 0; r < 2; r++) {
    OK(gp_device_set(r));
    FAILS(gp_stream_synchronize(NULL), GP_ERROR_COMM, "mismatched calls at collective #1");
    gp_status_t st = GP_SUCCESS;
    OK(gp_comm_get_async_error(comms[r], &st));
    ck_assert_int_eq(st, GP_ERROR_COMM);
    /* the communicator stays failed */
    FAILS(gp_all_reduce(x[r], x[r], 8, GP_F32, GP_SUM, comms[r], NULL), GP_ERROR_COMM, "mismatched");
  }
  for (int r = 0; r < 2; r++) {
    OK(gp_device_set(r));
    OK(gp_free(x[r]));
    OK(gp_comm_destroy(comms[r]));
  }
  gp_device_set(0);
}
END_TEST

/* A rank that never arrives: GP_ERROR_TIMEOUT after the timeout, not a hang. */
START_TEST(threads_timeout) {
  SKIP_IF(devices() < 2, "needs 2 devices, %d here", devices());
  setenv("GP_COMM_TIMEOUT_S", "0.5", 1);
  gp_comm_t comms[2];
  OK(gp_comm_init_all(comms, 2, NULL));
  unsetenv("GP_COMM_TIMEOUT_S");
  float *x;
  OK(gp_malloc((void **)&x, 64));
  double t0 = now_s();
  OK(gp_all_reduce(x, x, 8, GP_F32, GP_SUM, comms[0], NULL));
  FAILS(gp_stream_synchronize(NULL), GP_ERROR_TIMEOUT, "rank 1");
  double dt = now_s() - t0;
  ck_assert_msg(dt >= 0.45 && dt < 5, "timed out after %.2f s", dt);
  OK(gp_free(x));
  OK(gp_comm_destroy(comms[0]));
  OK(gp_comm_destroy(comms[1]));
}
END_TEST

typedef struct abort_arg {
  gp_comm_t comm;
  int delay_ms;
} abort_arg_t;

static void *abort_later(void *p) {
  abort_arg_t *a = p;
  sleep_ms(a->delay_ms);
  gp_comm_abort(a->comm);
  return NULL;
}

/* gp_comm_abort of an absent peer fails a waiting rank at once (the timeout is long). */
START_TEST(threads_abort) {
  SKIP_IF(devices() < 2, "needs 2 devices, %d here", devices());
  gp_comm_t comms[2];
  OK(gp_comm_init_all(comms, 2, NULL));
  float *x;
  OK(gp_malloc((void **)&x, 64));
  abort_arg_t a = {comms[1], 150};
  pthread_t th;
  double t0 = now_s();
  OK(gp_all_reduce(x, x, 8, GP_F32, GP_SUM, comms[0], NULL));
  ck_assert_int_eq(pthread_create(&th, NULL, abort_later, &a), 0);
  FAILS(gp_stream_synchronize(NULL), GP_ERROR_COMM, "aborted");
  ck_assert_msg(now_s() - t0 < 3, "the abort took %.2f s to be noticed", now_s() - t0);
  pthread_join(th, NULL);
  OK(gp_comm_abort(comms[0])); /* abort of a failed communicator, with nothing pending */
  FAILS(gp_comm_destroy(comms[1]), GP_ERROR_INVALID_HANDLE, "comm");
  OK(gp_free(x));
}
END_TEST

/* Bad arguments: the documented status and a message, nothing enqueued. */
START_TEST(arguments) {
  gp_comm_t c = NULL;
  gp_comm_id_t id;
  memset(&id, 0, sizeof id);
  FAILS(gp_comm_init_rank(NULL, 1, id, 0), GP_ERROR_INVALID_VALUE, "comm");
  FAILS(gp_comm_init_rank(&c, 0, id, 0), GP_ERROR_INVALID_VALUE, "nranks");
  FAILS(gp_comm_init_rank(&c, 2, id, 2), GP_ERROR_INVALID_VALUE, "rank");
  FAILS(gp_comm_init_rank(&c, 2, id, 0), GP_ERROR_INVALID_VALUE, "id");
  ck_assert_ptr_null(c);
  gp_comm_config_t cfg;
  gp_comm_config_init(&cfg);
  cfg.blocking = 2;
  OK(gp_comm_get_unique_id(&id));
  FAILS(gp_comm_init_rank_config(&c, 1, id, 0, &cfg), GP_ERROR_INVALID_VALUE, "blocking");
  cfg.blocking = 1;
  cfg.timeout_s = -1;
  FAILS(gp_comm_init_rank_config(&c, 1, id, 0, &cfg), GP_ERROR_INVALID_VALUE, "timeout_s");
  cfg.struct_size = 0;
  FAILS(gp_comm_init_rank_config(&c, 1, id, 0, &cfg), GP_ERROR_INVALID_VALUE, "struct_size");
  gp_comm_t all[2];
  FAILS(gp_comm_init_all(all, 0, NULL), GP_ERROR_INVALID_VALUE, "ndev");
  int dup[2] = {0, 0};
  FAILS(gp_comm_init_all(all, 2, dup), GP_ERROR_INVALID_VALUE, "twice");
  int far[1] = {devices()};
  FAILS(gp_comm_init_all(all, 1, far), GP_ERROR_INVALID_DEVICE, "devices[0]");
  FAILS(gp_group_end(), GP_ERROR_INVALID_VALUE, "group");

  /* A one-rank communicator made with a config: a timeout is accepted as given. */
  gp_comm_config_init(&cfg);
  cfg.timeout_s = 7;
  OK(gp_comm_init_rank_config(&c, 1, id, 0, &cfg));
  float *x = NULL, *y = NULL; /* collectives read and write device-accessible memory only */
  OK(gp_malloc((void **)&x, 16));
  OK(gp_malloc_host((void **)&y, 8 * sizeof(float)));
  FAILS(gp_all_reduce(x, x, 4, (gp_dtype_t)99, GP_SUM, c, NULL), GP_ERROR_INVALID_VALUE, "dtype");
  FAILS(gp_all_reduce(x, x, 4, GP_F32, (gp_reduce_op_t)9, c, NULL), GP_ERROR_INVALID_VALUE, "op");
  FAILS(gp_all_reduce(NULL, x, 4, GP_F32, GP_SUM, c, NULL), GP_ERROR_INVALID_VALUE, "send");
  FAILS(gp_all_reduce(x, x, 5, GP_F32, GP_SUM, c, NULL), GP_ERROR_INVALID_VALUE, "send");
  FAILS(gp_all_reduce(y, x, 5, GP_F32, GP_SUM, c, NULL), GP_ERROR_INVALID_VALUE, "recv");
  FAILS(gp_broadcast(x, x, 4, GP_F32, 1, c, NULL), GP_ERROR_INVALID_VALUE, "root");
  FAILS(gp_send(x, 4, GP_F32, -1, c, NULL), GP_ERROR_INVALID_VALUE, "peer");
  FAILS(gp_all_reduce(x, x, 4, GP_F32, GP_SUM, NULL, NULL), GP_ERROR_INVALID_HANDLE, "comm");
  FAILS(gp_all_reduce(x, x, 4, GP_F32, GP_SUM, c, (gp_stream_t)y), GP_ERROR_INVALID_HANDLE, "stream");
  if (devices() > 1) {
    gp_stream_t other;
    OK(gp_device_set(1));
    OK(gp_stream_create(&other));
    OK(gp_device_set(0));
    FAILS(gp_all_reduce(x, x, 4, GP_F32, GP_SUM, c, other), GP_ERROR_INVALID_VALUE, "device 1");
    OK(gp_stream_destroy(other));
  }
  /* One rank: every collective is a copy or an identity reduction; count 0 is fine. */
  for (int i = 0; i < 4; i++) x[i] = (float)i + 0.5f;
  OK(gp_all_reduce(x, y, 4, GP_F32, GP_AVG, c, NULL));
  OK(gp_all_reduce(x, x, 0, GP_F32, GP_SUM, c, NULL));
  OK(gp_stream_synchronize(NULL));
  for (int i = 0; i < 4; i++) ck_assert(y[i] == (float)i + 0.5f);
  int rank = -1;
  FAILS(gp_comm_rank(c, NULL), GP_ERROR_INVALID_VALUE, "rank");
  OK(gp_comm_destroy(c));
  FAILS(gp_comm_rank(c, &rank), GP_ERROR_INVALID_HANDLE, "comm");
  FAILS(gp_all_reduce(x, x, 4, GP_F32, GP_SUM, c, NULL), GP_ERROR_INVALID_HANDLE, "comm");
  OK(gp_comm_destroy(NULL));
  OK(gp_comm_abort(NULL));
  OK(gp_free(x));
  OK(gp_free_host(y));
}
END_TEST

/* Buffers gpuport neither allocated nor registered (malloc, the stack) are refused by every
 * collective on the cpu backend, naming the buffer, as not device-accessible: NCCL's kernels
 * fault on them on a GPU. Freed device memory is refused too; registered memory runs. */
START_TEST(host_memory_refused) {
  gp_comm_t c = NULL;
  gp_comm_id_t id;
  OK(gp_comm_get_unique_id(&id));
  OK(gp_comm_init_rank(&c, 1, id, 0));
  float *x = NULL, *freed = NULL, *m = malloc(64 * sizeof(float));
  ck_assert_ptr_nonnull(m);
  memset(m, 0, 64 * sizeof(float));
  OK(gp_malloc((void **)&x, 64 * sizeof(float)));
  OK(gp_memset(x, 0, 64 * sizeof(float)));
  FAILS(gp_all_reduce(m, x, 16, GP_F32, GP_SUM, c, NULL), GP_ERROR_INVALID_VALUE, "'send'");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "not device-accessible"));
  FAILS(gp_all_reduce(x, m, 16, GP_F32, GP_SUM, c, NULL), GP_ERROR_INVALID_VALUE, "'recv'");
  FAILS(gp_broadcast(m, x, 16, GP_F32, 0, c, NULL), GP_ERROR_INVALID_VALUE, "'send'");
  FAILS(gp_reduce(x, m, 16, GP_F32, GP_SUM, 0, c, NULL), GP_ERROR_INVALID_VALUE, "'recv'");
  FAILS(gp_all_gather(m, x, 16, GP_F32, c, NULL), GP_ERROR_INVALID_VALUE, "'send'");
  FAILS(gp_reduce_scatter(x, m, 16, GP_F32, GP_SUM, c, NULL), GP_ERROR_INVALID_VALUE, "'recv'");
  FAILS(gp_all_to_all(m, x, 16, GP_F32, c, NULL), GP_ERROR_INVALID_VALUE, "'send'");
  OK(gp_malloc((void **)&freed, 64 * sizeof(float)));
  OK(gp_free(freed));
  FAILS(gp_all_reduce(x, freed, 16, GP_F32, GP_SUM, c, NULL), GP_ERROR_INVALID_VALUE, "'recv'");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "freed"));
  OK(gp_host_register(m, 64 * sizeof(float)));
  OK(gp_all_reduce(x, m, 16, GP_F32, GP_SUM, c, NULL));
  OK(gp_stream_synchronize(NULL));
  OK(gp_host_unregister(m));
  OK(gp_comm_destroy(c));
  OK(gp_free(x));
  free(m);
}
END_TEST

/* ---- processes: gp_comm_init_rank over the host rendezvous ------------------------------------------- */

/* Runs body(rank) in n child processes; returns how many failed (exit status != 0). */
typedef int (*child_fn)(int rank, int n, const gp_comm_id_t *id, void *arg);

/* Write end of a pipe on which each child of run_children writes one byte once its
 * communicator exists (-1: none), so a rank is killed only after the clique formed,
 * however loaded the machine is. */
static int g_ready_fd = -1;

static void child_ready(void) {
  char c = 1;
  if (g_ready_fd >= 0 && write(g_ready_fd, &c, 1) != 1) _exit(9);
}

/* Forks n children running fn; their pids in pids. */
static void spawn_children(int n, child_fn fn, void *arg, const gp_comm_id_t *id, pid_t *pids) {
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      alarm(60); /* a hang is a failure, not a stuck suite */
      int rc = fn(r, n, id, arg);
      fflush(stderr);
      _exit(rc);
    }
  }
}

/* Waits for the n children; returns how many failed (kill_rank's end is not counted). */
static int reap_children(int n, const pid_t *pids, int kill_rank) {
  int failed = 0;
  for (int r = 0; r < n; r++) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (r == kill_rank) continue;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d of %d: %s %d\n", r, n, WIFEXITED(status) ? "exit" : "signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      failed++;
    }
  }
  return failed;
}

/* Reads n bytes from fd within seconds; false on timeout or EOF. */
static bool read_bytes(int fd, void *buf, size_t n, double seconds) {
  size_t got = 0;
  double t0 = now_s();
  while (got < n) {
    double left = seconds - (now_s() - t0);
    if (left <= 0) return false;
    struct pollfd pf = {fd, POLLIN, 0};
    int r = poll(&pf, 1, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    ssize_t k = read(fd, (char *)buf + got, n - got);
    if (k <= 0) return false;
    got += (size_t)k;
  }
  return true;
}

static double g_killed_at; /* when run_children killed its rank */

static int run_children(int n, child_fn fn, void *arg, const gp_comm_id_t *id, pid_t *pids,
                        int kill_rank, int kill_after_ms) {
  pid_t local[8];
  if (pids == NULL) pids = local;
  int ready[2] = {-1, -1};
  if (kill_rank >= 0) {
    ck_assert_int_eq(pipe(ready), 0);
    g_ready_fd = ready[1];
  }
  spawn_children(n, fn, arg, id, pids);
  double killed_at = 0;
  if (kill_rank >= 0) {
    g_ready_fd = -1;
    close(ready[1]);
    char buf[8];
    bool all = read_bytes(ready[0], buf, (size_t)n, 40);
    close(ready[0]);
    if (!all) fprintf(stderr, "run_children: not every rank made its communicator\n");
    sleep_ms(kill_after_ms);
    kill(pids[kill_rank], SIGKILL);
    killed_at = g_killed_at = now_s();
  }
  int failed = reap_children(n, pids, kill_rank);
  if (kill_rank >= 0)
    printf("rank %d killed: the other %d ranks had returned their errors %.2f s later\n", kill_rank,
           n - 1, now_s() - killed_at);
  return failed;
}

static int child_matrix(int rank, int n, const gp_comm_id_t *id, void *arg) {
  (void)arg;
  rankbuf_t b;
  memset(&b, 0, sizeof b);
  b.rank = rank;
  gp_status_t s = gp_comm_init_rank(&b.comm, n, *id, rank);
  if (s == GP_SUCCESS) s = rank_setup(&b);
  if (s) {
    fprintf(stderr, "rank %d: setup: %s: %s\n", rank, gp_status_name(s), gp_last_error_message());
    return 2;
  }
  void *host = malloc(MAX_BYTES);
  char msg[1024] = "";
  int failed = run_matrix(&b, 1, n, host, msg, sizeof msg);
  if (n == 4 && !failed) failed = run_large(&b, 1, n, host, msg, sizeof msg);
  if (failed) fprintf(stderr, "rank %d: %d cases failed; first: %s\n", rank, failed, msg);
  free(host);
  rank_teardown(&b);
  return failed ? 1 : 0;
}

START_TEST(processes_every_op) {
  SKIP_IF(devices() != 1, "%d devices: the threads_* tests run these", devices());
  for (int n = 2; n <= 4; n++) {
    gp_comm_id_t id;
    OK(gp_comm_get_unique_id(&id));
    ck_assert_msg(run_children(n, child_matrix, NULL, &id, NULL, -1, 0) == 0,
                  "%d processes: see the ranks' messages above (seed %llu)", n,
                  (unsigned long long)g_seed);
  }
}
END_TEST

static bool segment_exists(const gp_comm_id_t *id) {
#ifdef GP_BUILD_CPU
  char name[64], path[96];
  gp__cpu_comm_shm_name(id, name, sizeof name);
  snprintf(path, sizeof path, "/dev/shm%s", name);
  return access(path, F_OK) == 0;
#else
  (void)id;
  return false;
#endif
}

typedef struct fault_arg {
  int mode;       /* 0 kill, 1 absent, 2 slow, 3 mismatch, 4 split, 5 sendrecv */
  double timeout; /* seconds */
} fault_arg_t;

/* Each rank: init with the test's timeout, then the mode's scenario; exits 0 when what it
 * saw is what the scenario expects. */
static int child_fault(int rank, int n, const gp_comm_id_t *id, void *p) {
  fault_arg_t *a = p;
  gp_comm_config_t cfg;
  gp_comm_config_init(&cfg);
  cfg.timeout_s = a->timeout;
  gp_comm_t c = NULL;
  gp_status_t s = gp_comm_init_rank_config(&c, n, *id, rank, &cfg);
  if (s) {
    fprintf(stderr, "rank %d: init: %s: %s\n", rank, gp_status_name(s), gp_last_error_message());
    return 2;
  }
  child_ready();
  size_t k = (1u << 20) + 3;
  float *x = NULL;
  if (gp_malloc((void **)&x, k * 4)) return 3;
  gp_ref_comm_inputs(x, GP_F32, GP_SUM, GP_REF_COMM_RANDOM, g_seed, rank, 0, k);
  int rc = 0;
  double t0 = now_s();
  switch (a->mode) {
    case 0: /* rank 3 is killed mid-run: the others must fail fast, never hang */
      for (;;) {
        s = gp_all_reduce(x, x, k, GP_F32, GP_MAX, c, NULL);
        if (!s) s = gp_stream_synchronize(NULL);
        if (s) break;
      }
      if (s != GP_ERROR_COMM || !strstr(gp_last_error_message(), "died")) rc = 10;
      if (now_s() - t0 > 20) rc = 11;
      if (rc) fprintf(stderr, "rank %d: %s: %s\n", rank, gp_status_name(s), gp_last_error_message());
      else fprintf(stderr, "rank %d: noticed the dead peer: %s\n", rank, gp_last_error_message());
      break;
    case 1: /* the last rank is alive but never calls until the others gave up */
      if (rank == n - 1) {
        sleep_ms((int)(a->timeout * 1000) + 500);
        s = gp_all_reduce(x, x, 8, GP_F32, GP_SUM, c, NULL);
        if (!s) s = gp_stream_synchronize(NULL);
        if (s != GP_ERROR_TIMEOUT && s != GP_ERROR_COMM) rc = 20;
        break;
      }
      s = gp_all_reduce(x, x, 8, GP_F32, GP_SUM, c, NULL);
      if (!s) s = gp_stream_synchronize(NULL);
      if (s != GP_ERROR_TIMEOUT) rc = 21;
      if (now_s() - t0 > a->timeout + 3) rc = 22;
      if (rc) fprintf(stderr, "rank %d: %s after %.2f s: %s\n", rank, gp_status_name(s), now_s() - t0, gp_last_error_message());
      break;
    case 2: /* a slow rank within the timeout: nobody fails */
      if (rank == 1) sleep_ms(2000);
      s = gp_all_reduce(x, x, 1000, GP_F32, GP_SUM, c, NULL);
      if (!s) s = gp_stream_synchronize(NULL);
      if (s) {
        fprintf(stderr, "rank %d: %s: %s\n", rank, gp_status_name(s), gp_last_error_message());
        rc = 30;
      }
      break;
    case 3: /* mismatched counts, then a mismatched operation */
      s = gp_all_reduce(x, x, 8 + (size_t)rank, GP_F32, GP_SUM, c, NULL);
      if (!s) s = gp_stream_synchronize(NULL);
      if (s != GP_ERROR_COMM || !strstr(gp_last_error_message(), "collective #1")) {
        fprintf(stderr, "rank %d: %s: %s\n", rank, gp_status_name(s), gp_last_error_message());
        rc = 40;
      }
      break;
    case 4: { /* split across processes: ranks {0,2} and {1,3} */
      gp_comm_t sub = NULL;
      s = gp_comm_split(c, rank % 2, rank, &sub);
      int64_t *v = (int64_t *)x;
      *v = rank + 1;
      if (!s) s = gp_all_reduce(v, v, 1, GP_I64, GP_SUM, sub, NULL);
      if (!s) s = gp_stream_synchronize(NULL);
      if (s || *v != (rank % 2 ? 2 + 4 : 1 + 3)) {
        fprintf(stderr, "rank %d: split: %s: %s (got %lld)\n", rank, gp_status_name(s),
                gp_last_error_message(), (long long)*v);
        rc = 50;
      }
      gp_comm_destroy(sub);
      break;
    }
    case 5: { /* group send/recv with large messages (many chunks), both orders */
      float *in = NULL;
      if (gp_malloc((void **)&in, k * 4 * 2)) return 3;
      int next = (rank + 1) % n, prev = (rank + n - 1) % n;
      s = gp_group_start();
      if (rank % 2) {
        gp_recv(in, k, GP_F32, prev, c, NULL);
        gp_recv(in + k, 3, GP_F32, next, c, NULL);
        gp_send(x, k, GP_F32, next, c, NULL);
        gp_send(x, 3, GP_F32, prev, c, NULL);
      } else {
        gp_send(x, k, GP_F32, next, c, NULL);
        gp_send(x, 3, GP_F32, prev, c, NULL);
        gp_recv(in, k, GP_F32, prev, c, NULL);
        gp_recv(in + k, 3, GP_F32, next, c, NULL);
      }
      s = gp_group_end();
      if (!s) s = gp_stream_synchronize(NULL);
      char msg[300] = "";
      size_t bad = s ? 1 : gp_ref_comm_check_copy(in, GP_F32, GP_SUM, GP_REF_COMM_RANDOM, g_seed, prev, 0, k, msg, sizeof msg);
      if (!bad) bad = gp_ref_comm_check_copy(in + k, GP_F32, GP_SUM, GP_REF_COMM_RANDOM, g_seed, next, 0, 3, msg, sizeof msg);
      if (bad) {
        fprintf(stderr, "rank %d: sendrecv: %s %s %s\n", rank, gp_status_name(s), gp_last_error_message(), msg);
        rc = 60;
      }
      gp_free(in);
      break;
    }
  }
  gp_free(x);
  gp_comm_destroy(c);
  return rc;
}

START_TEST(processes_killed_rank) {
  SKIP_IF(devices() != 1, "%d devices: the run with one runs these", devices());
  gp_comm_id_t id;
  OK(gp_comm_get_unique_id(&id));
  fault_arg_t a = {0, 60.0};
  ck_assert_int_eq(run_children(4, child_fault, &a, &id, NULL, 3, 700), 0);
  ck_assert_msg(now_s() - g_killed_at < 15, "the survivors took %.1f s", now_s() - g_killed_at);
  ck_assert_msg(!segment_exists(&id), "the segment outlived the clique");
}
END_TEST

START_TEST(processes_absent_slow_mismatch) {
  SKIP_IF(devices() != 1, "%d devices: the run with one runs these", devices());
  gp_comm_id_t id;
  fault_arg_t absent = {1, 1.0}, slow = {2, 30.0}, mismatch = {3, 30.0};
  OK(gp_comm_get_unique_id(&id));
  ck_assert_int_eq(run_children(3, child_fault, &absent, &id, NULL, -1, 0), 0);
  OK(gp_comm_get_unique_id(&id));
  ck_assert_int_eq(run_children(2, child_fault, &slow, &id, NULL, -1, 0), 0);
  OK(gp_comm_get_unique_id(&id));
  ck_assert_int_eq(run_children(2, child_fault, &mismatch, &id, NULL, -1, 0), 0);
  ck_assert(!segment_exists(&id));
}
END_TEST

START_TEST(processes_split_sendrecv) {
  SKIP_IF(devices() != 1, "%d devices: the run with one runs these", devices());
  gp_comm_id_t id;
  fault_arg_t split = {4, 30.0}, sr = {5, 30.0};
  OK(gp_comm_get_unique_id(&id));
  ck_assert_int_eq(run_children(4, child_fault, &split, &id, NULL, -1, 0), 0);
  OK(gp_comm_get_unique_id(&id));
  ck_assert_int_eq(run_children(3, child_fault, &sr, &id, NULL, -1, 0), 0);
}
END_TEST

/* ---- ids that cannot be confused: one clique per id --------------------------------------------- */

/* What each child of a join test does: claim rank[i] of a clique of nranks[i] after
 * delay_ms[i]; once in, all-reduce value[i] (int64) and wait for a byte on hold_fd before
 * leaving. Each child writes one report to report_fd. */
typedef struct join_plan {
  int nranks[8], rank[8], delay_ms[8];
  int64_t value[8];
  double timeout;
  int report_fd, hold_fd;
} join_plan_t;

typedef struct join_report {
  int child, rank, status;
  double seconds; /* in gp_comm_init_rank_config */
  int64_t sum;
  char msg[400];
} join_report_t; /* smaller than PIPE_BUF: one write is atomic */

static int child_join(int i, int n, const gp_comm_id_t *id, void *p) {
  (void)n;
  join_plan_t *plan = p;
  if (plan->delay_ms[i]) sleep_ms(plan->delay_ms[i]);
  gp_comm_config_t cfg;
  gp_comm_config_init(&cfg);
  cfg.timeout_s = plan->timeout;
  join_report_t rep;
  memset(&rep, 0, sizeof rep);
  rep.child = i;
  rep.rank = plan->rank[i];
  gp_comm_t c = NULL;
  double t0 = now_s();
  gp_status_t s = gp_comm_init_rank_config(&c, plan->nranks[i], *id, plan->rank[i], &cfg);
  rep.seconds = now_s() - t0;
  if (s == GP_SUCCESS) {
    int64_t *v = NULL;
    s = gp_malloc((void **)&v, sizeof *v);
    if (s == GP_SUCCESS) {
      *v = plan->value[i];
      s = gp_all_reduce(v, v, 1, GP_I64, GP_SUM, c, NULL);
      if (s == GP_SUCCESS) s = gp_stream_synchronize(NULL);
      rep.sum = *v;
      gp_free(v);
    }
  }
  rep.status = (int)s;
  snprintf(rep.msg, sizeof rep.msg, "%s", s ? gp_last_error_message() : "");
  if (write(plan->report_fd, &rep, sizeof rep) != (ssize_t)sizeof rep) return 8;
  if (c && plan->hold_fd >= 0) {
    char b;
    if (read(plan->hold_fd, &b, 1) != 1) return 7;
  }
  gp_comm_destroy(c);
  return 0;
}

/* Runs the plan's n children (spawned, not reaped) and collects their reports. */
static void join_collect(int n, int report_rd, join_report_t *reps) {
  for (int k = 0; k < n; k++) {
    join_report_t r;
    ck_assert_msg(read_bytes(report_rd, &r, sizeof r, 50), "%d of %d children reported", k, n);
    ck_assert(r.child >= 0 && r.child < n);
    reps[r.child] = r;
  }
}

static void plan_init(join_plan_t *plan, int nchildren, int nranks, double timeout, int fds[2]) {
  memset(plan, 0, sizeof *plan);
  ck_assert_int_eq(pipe(fds), 0);
  plan->report_fd = fds[1];
  plan->hold_fd = -1;
  plan->timeout = timeout;
  for (int i = 0; i < nchildren; i++) {
    plan->nranks[i] = nranks;
    plan->rank[i] = i % nranks;
    plan->value[i] = 100 * (i / nranks) + (i % nranks) + 1;
  }
}

/* A refused arrival: GP_ERROR_INVALID_VALUE at once (well before the timeout), naming why. */
static void assert_refused(const join_report_t *r, const char *why, double timeout) {
  ck_assert_msg(r->status == GP_ERROR_INVALID_VALUE && strstr(r->msg, why) != NULL,
                "child %d (rank %d): %s: '%s' (expected GP_ERROR_INVALID_VALUE naming '%s')", r->child, r->rank,
                gp_status_name((gp_status_t)r->status), r->msg, why);
  ck_assert_msg(r->seconds < timeout / 2, "child %d was refused after %.2f s, not at once", r->child, r->seconds);
}

/* Two 4-rank jobs on one id. One after the other: the first job's clique consumes the id
 * and keeps working; every rank of the second fails at once. At the same time: whichever
 * process first claims a rank number gets it, the clique forms from those four (the
 * library cannot tell two copies of one id apart: each job then has ranks that failed,
 * never a silent success for all eight), every other rank fails at once, and the
 * formed clique's all-reduce sums exactly its own members. */
START_TEST(processes_two_jobs_one_id) {
  if (devices() != 1) return;
  join_plan_t plan;
  int rep_fd[2], hold[2];
  pid_t pids[8];
  join_report_t reps[8];
  gp_comm_id_t id;
  /* One after the other. */
  OK(gp_comm_get_unique_id(&id));
  plan_init(&plan, 4, 4, 20.0, rep_fd);
  ck_assert_int_eq(pipe(hold), 0);
  plan.hold_fd = hold[0];
  spawn_children(4, child_join, &plan, &id, pids);
  join_collect(4, rep_fd[0], reps);
  for (int i = 0; i < 4; i++)
    ck_assert_msg(reps[i].status == GP_SUCCESS && reps[i].sum == 1 + 2 + 3 + 4, "job A rank %d: %s (sum %lld): %s",
                  i, gp_status_name((gp_status_t)reps[i].status), (long long)reps[i].sum, reps[i].msg);
  ck_assert_msg(!segment_exists(&id), "the formed clique left its segment");
  plan.hold_fd = -1;
  pid_t late[4];
  spawn_children(4, child_join, &plan, &id, late);
  join_collect(4, rep_fd[0], reps);
  for (int i = 0; i < 4; i++) assert_refused(&reps[i], "no clique is forming for this id", plan.timeout);
  ck_assert_int_eq(reap_children(4, late, -1), 0);
  ck_assert_int_eq(write(hold[1], "xxxx", 4), 4); /* job A may leave now */
  ck_assert_int_eq(reap_children(4, pids, -1), 0);
  close(hold[0]);
  close(hold[1]);
  /* At the same time. */
  close(rep_fd[0]);
  close(rep_fd[1]);
  OK(gp_comm_get_unique_id(&id));
  plan_init(&plan, 8, 4, 20.0, rep_fd);
  spawn_children(8, child_join, &plan, &id, pids);
  join_collect(8, rep_fd[0], reps);
  int in = 0, ranks_in = 0;
  int64_t members = 0;
  for (int i = 0; i < 8; i++) {
    if (reps[i].status != GP_SUCCESS) continue;
    in++;
    ck_assert_msg(!(ranks_in >> reps[i].rank & 1), "rank %d was given twice", reps[i].rank);
    ranks_in |= 1 << reps[i].rank;
    members += plan.value[i];
  }
  ck_assert_msg(in == 4 && ranks_in == 15, "%d ranks formed the clique (ranks 0x%x)", in, ranks_in);
  for (int i = 0; i < 8; i++) {
    if (reps[i].status == GP_SUCCESS) {
      ck_assert_msg(reps[i].sum == members, "child %d summed %lld, its clique holds %lld", i,
                    (long long)reps[i].sum, (long long)members);
      continue;
    }
    ck_assert_msg(strstr(reps[i].msg, "already claimed") || strstr(reps[i].msg, "no clique is forming"),
                  "child %d: '%s'", i, reps[i].msg);
    assert_refused(&reps[i], "", plan.timeout);
  }
  ck_assert_int_eq(reap_children(8, pids, -1), 0);
  ck_assert(!segment_exists(&id));
  close(rep_fd[0]);
  close(rep_fd[1]);
}
END_TEST

/* An id whose clique is gone cannot be used again: GP_ERROR_INVALID_VALUE at once. */
START_TEST(processes_reuse_id) {
  if (devices() != 1) return;
  join_plan_t plan;
  int rep_fd[2];
  pid_t pids[2];
  join_report_t reps[2];
  gp_comm_id_t id;
  OK(gp_comm_get_unique_id(&id));
  plan_init(&plan, 2, 2, 20.0, rep_fd);
  spawn_children(2, child_join, &plan, &id, pids);
  join_collect(2, rep_fd[0], reps);
  ck_assert_int_eq(reap_children(2, pids, -1), 0);
  for (int i = 0; i < 2; i++) ck_assert_int_eq(reps[i].status, GP_SUCCESS);
  spawn_children(2, child_join, &plan, &id, pids);
  join_collect(2, rep_fd[0], reps);
  ck_assert_int_eq(reap_children(2, pids, -1), 0);
  for (int i = 0; i < 2; i++) assert_refused(&reps[i], "an id serves one communicator", plan.timeout);
  gp_comm_t c = NULL;
  FAILS(gp_comm_init_rank(&c, 2, id, 0), GP_ERROR_INVALID_VALUE, "no clique is forming");
  ck_assert(!segment_exists(&id));
  close(rep_fd[0]);
  close(rep_fd[1]);
}
END_TEST

/* A rank with another nranks, and a rank number claimed twice, fail at once with a
 * message that says which; the ranks waiting for the clique time out saying why
 * (nobody claimed the missing rank; the refused arrival), and no segment stays. */
START_TEST(processes_nranks_mismatch_duplicate_rank) {
  if (devices() != 1) return;
  join_plan_t plan;
  int rep_fd[2];
  pid_t pids[3];
  join_report_t reps[3];
  gp_comm_id_t id;
  double timeout = 2.0;
  /* nranks 2 and 3: whichever comes second is refused. */
  OK(gp_comm_get_unique_id(&id));
  plan_init(&plan, 2, 2, timeout, rep_fd);
  plan.nranks[1] = 3;
  plan.delay_ms[1] = 300;
  spawn_children(2, child_join, &plan, &id, pids);
  join_collect(2, rep_fd[0], reps);
  ck_assert_int_eq(reap_children(2, pids, -1), 0);
  int refused = reps[0].status == GP_ERROR_INVALID_VALUE ? 0 : 1, waited = 1 - refused;
  assert_refused(&reps[refused], "every rank must pass the same nranks", timeout);
  ck_assert_msg(reps[waited].status == GP_ERROR_TIMEOUT && strstr(reps[waited].msg, "no process has claimed it") &&
                    strstr(reps[waited].msg, "refused") && strstr(reps[waited].msg, "nranks"),
                "child %d: %s: '%s'", waited, gp_status_name((gp_status_t)reps[waited].status), reps[waited].msg);
  ck_assert_msg(reps[waited].seconds < timeout + 3, "the waiting rank took %.2f s", reps[waited].seconds);
  ck_assert(!segment_exists(&id));
  /* ranks 0, 0 and 1 of three: one rank 0 is refused, the others wait for rank 2. */
  close(rep_fd[0]);
  close(rep_fd[1]);
  OK(gp_comm_get_unique_id(&id));
  plan_init(&plan, 3, 3, timeout, rep_fd);
  plan.rank[1] = 0;
  plan.rank[2] = 1;
  plan.delay_ms[1] = 300;
  spawn_children(3, child_join, &plan, &id, pids);
  join_collect(3, rep_fd[0], reps);
  ck_assert_int_eq(reap_children(3, pids, -1), 0);
  int nref = 0;
  for (int i = 0; i < 3; i++) {
    if (reps[i].status == GP_ERROR_INVALID_VALUE) {
      nref++;
      ck_assert_int_eq(reps[i].rank, 0);
      assert_refused(&reps[i], "is already claimed by process", timeout);
      continue;
    }
    ck_assert_msg(reps[i].status == GP_ERROR_TIMEOUT && strstr(reps[i].msg, "for rank 2") &&
                      strstr(reps[i].msg, "no process has claimed it") && strstr(reps[i].msg, "already claimed"),
                  "child %d: %s: '%s'", i, gp_status_name((gp_status_t)reps[i].status), reps[i].msg);
  }
  ck_assert_int_eq(nref, 1);
  ck_assert(!segment_exists(&id));
  close(rep_fd[0]);
  close(rep_fd[1]);
}
END_TEST

#ifdef GP_BUILD_CPU
/* Ranks of id's clique that have joined (read from its segment; -1 when there is none). */
static int joined_ranks(const gp_comm_id_t *id) {
  char name[64];
  gp__cpu_comm_shm_name(id, name, sizeof name);
  int fd = shm_open(name, O_RDONLY, 0);
  if (fd < 0) return -1;
  struct stat st;
  int n = -1;
  if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(gp__ctl_t)) {
    void *p = mmap(NULL, sizeof(gp__ctl_t), PROT_READ, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) {
      n = (int)atomic_load(&((gp__ctl_t *)p)->joined);
      munmap(p, sizeof(gp__ctl_t));
    }
  }
  close(fd);
  return n;
}

static int child_make_id(int rank, int n, const gp_comm_id_t *id, void *arg) {
  (void)rank, (void)n, (void)id;
  int *fds = arg;
  gp_comm_id_t made;
  if (gp_comm_get_unique_id(&made) != GP_SUCCESS) return 2;
  if (write(fds[1], &made, sizeof made) != (ssize_t)sizeof made) return 3;
  char b;
  if (fds[2] >= 0 && read(fds[2], &b, 1) != 1) return 4; /* wait to be killed */
  exit(0); /* normal exit: the library's destructor ends the rendezvous it made */
}
#endif

/* Nothing stays in /dev/shm: when every rank dies during initialisation (the next
 * gp_comm_get_unique_id of this user removes the segment that can never complete),
 * when the id's maker exits without a rank ever coming, and when it is killed. */
START_TEST(processes_all_die_during_init) {
#ifdef GP_BUILD_CPU
  if (devices() != 1) return;
  join_plan_t plan;
  int rep_fd[2];
  pid_t pids[2];
  gp_comm_id_t id, other;
  OK(gp_comm_get_unique_id(&id));
  plan_init(&plan, 2, 3, 50.0, rep_fd); /* ranks 0 and 1 of three; rank 2 never comes */
  spawn_children(2, child_join, &plan, &id, pids);
  double t0 = now_s();
  while (joined_ranks(&id) < 2 && now_s() - t0 < 30) sleep_ms(5);
  ck_assert_int_eq(joined_ranks(&id), 2);
  kill(pids[0], SIGKILL);
  kill(pids[1], SIGKILL);
  for (int i = 0; i < 2; i++) waitpid(pids[i], NULL, 0);
  OK(gp_comm_get_unique_id(&other));
  ck_assert_msg(!segment_exists(&id), "the segment of a clique whose ranks all died stayed in /dev/shm");
  close(rep_fd[0]);
  close(rep_fd[1]);
  /* A maker that exits, and one that is killed, with no rank ever coming. */
  for (int killed = 0; killed < 2; killed++) {
    int fds[3], wait_fd[2] = {-1, -1};
    ck_assert_int_eq(pipe(fds), 0);
    fds[2] = -1;
    if (killed) {
      ck_assert_int_eq(pipe(wait_fd), 0);
      fds[2] = wait_fd[0];
    }
    pid_t maker;
    spawn_children(1, child_make_id, fds, NULL, &maker);
    gp_comm_id_t made;
    ck_assert(read_bytes(fds[0], &made, sizeof made, 30));
    if (killed) {
      ck_assert(segment_exists(&made));
      kill(maker, SIGKILL);
    }
    waitpid(maker, NULL, 0);
    if (killed) OK(gp_comm_get_unique_id(&other));
    ck_assert_msg(!segment_exists(&made), "the segment of an unused id outlived its maker (%s)",
                  killed ? "killed" : "exited");
    gp_comm_t c = NULL;
    FAILS(gp_comm_init_rank(&c, 2, made, 0), GP_ERROR_INVALID_VALUE, "has exited");
    close(fds[0]);
    close(fds[1]);
    if (killed) {
      close(wait_fd[0]);
      close(wait_fd[1]);
    }
  }
#endif
}
END_TEST

/* The rendezvous: an incomplete clique times out and leaves no segment; a segment that
 * others can read, or that another user owns, is refused. */
START_TEST(rendezvous_security) {
#ifdef GP_BUILD_CPU
  gp_comm_id_t id;
  gp_comm_config_t cfg;
  gp_comm_config_init(&cfg);
  cfg.timeout_s = 0.3;
  gp_comm_t c = NULL;
  OK(gp_comm_get_unique_id(&id));
  double t0 = now_s();
  FAILS(gp_comm_init_rank_config(&c, 2, id, 0, &cfg), GP_ERROR_TIMEOUT, "rank 1");
  ck_assert(now_s() - t0 < 3);
  ck_assert_ptr_null(c);
  ck_assert(!segment_exists(&id));

  char name[64];
  OK(gp_comm_get_unique_id(&id));
  gp__cpu_comm_shm_name(&id, name, sizeof name);
  ck_assert_int_eq(shm_unlink(name), 0); /* the id's own segment, replaced by a planted one */
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(fchmod(fd, 0600), 0);
  FAILS(gp_comm_init_rank_config(&c, 2, id, 1, &cfg), GP_ERROR_INVALID_VALUE, "less than a rendezvous header");
  /* A header of another clique (another job nonce): foreign. */
  ck_assert_int_eq(ftruncate(fd, GP__CTL_HEADER_BYTES), 0);
  gp__ctl_t *h = mmap(NULL, GP__CTL_HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ck_assert(h != MAP_FAILED);
  h->version = GP__CTL_VERSION;
  h->shared = 1;
  h->nonce = 12345;
  atomic_store(&h->magic, GP__CTL_MAGIC);
  FAILS(gp_comm_init_rank_config(&c, 2, id, 1, &cfg), GP_ERROR_INVALID_VALUE, "belongs to another clique");
  ck_assert_int_eq(atomic_load(&h->claim), 0); /* refused before touching it */
  munmap(h, GP__CTL_HEADER_BYTES);
  ck_assert_int_eq(fchmod(fd, 0644), 0);
  FAILS(gp_comm_init_rank_config(&c, 2, id, 1, &cfg), GP_ERROR_COMM, "mode 644");
  if (geteuid() == 0) {
    ck_assert_int_eq(fchmod(fd, 0600), 0);
    ck_assert_int_eq(fchown(fd, 65534, 65534), 0);
    FAILS(gp_comm_init_rank_config(&c, 2, id, 1, &cfg), GP_ERROR_COMM, "owned by uid 65534");
  }
  close(fd);
  shm_unlink(name);
  /* A segment this process made has mode 0600 while it exists. */
#endif
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("comm");
  TCase *tc = tcase_create("comm");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, arguments);
  tcase_add_test(tc, host_memory_refused);
  tcase_add_test(tc, threads_every_op);
  tcase_add_test(tc, threads_identical_bits);
  tcase_add_test(tc, threads_group_sendrecv);
  tcase_add_test(tc, threads_split);
  tcase_add_test(tc, threads_init_rank);
  tcase_add_test(tc, threads_mismatch);
  tcase_add_test(tc, threads_timeout);
  tcase_add_test(tc, threads_abort);
  tcase_add_test(tc, processes_every_op);
  tcase_add_test(tc, processes_killed_rank);
  tcase_add_test(tc, processes_absent_slow_mismatch);
  tcase_add_test(tc, processes_split_sendrecv);
  tcase_add_test(tc, processes_two_jobs_one_id);
  tcase_add_test(tc, processes_reuse_id);
  tcase_add_test(tc, processes_nranks_mismatch_duplicate_rank);
  tcase_add_test(tc, processes_all_die_during_init);
  tcase_add_test(tc, rendezvous_security);
  suite_add_tcase(s, tc);
  return s;
}

/* cuda/hip: the whole matrix through NCCL/RCCL, one rank per device, in one process. */
/* The GPU backends run the threaded case only: one process owns every device. */
static Suite *gpu_suite(void) {
  Suite *s = suite_create("comm");
  TCase *tc = tcase_create("comm");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, threads_every_op);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  setenv("GP_COMM_TIMEOUT_S", "30", 0); /* a bug fails in 30 s, not 300 */
  print_seed("test_comm", (unsigned long long)g_seed);
  if (gp_backend() == GP_BACKEND_CPU) return run_suite("test_comm", suite());
  gp_comm_id_t id;
  if (have_device() && gp_comm_get_unique_id(&id) == GP_ERROR_NOT_SUPPORTED)
    return skip_suite("test_comm", "%s", gp_last_error_message());
  gp_ref_comm_set_native_accumulation(true);
  return run_suite("test_comm", gpu_suite());
}
