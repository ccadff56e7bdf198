/*
 * test_comm_mpi.c - gp_comm_init_mpi (gpuport/mpi.h), run by test/mpi/run.sh under
 * `mpirun -np 4`: on the cpu backend every collective x dtype x reduction over the MPI
 * transport, in place and out of place, compared with the float64 references of
 * ref/ref_comm.h (a function of the seed, which rank 0 broadcasts); a group of
 * send/recv in both orders; a split; a rank that arrives after the others' timeout. On
 * cuda/hip the bootstrap alone (one all-reduce checks it) when a device answers.
 *
 * Check without fork (MPI forbids it), one process per rank; each rank checks its own
 * results, and mpirun's exit status is the verdict. GP_TEST_MPI_THREAD=single makes the
 * program ask for MPI_THREAD_SINGLE, so the blocking (in-caller) path runs.
 */
#include <check.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <gpuport.h>
#include <gpuport/mpi.h>
#include "check_util.h"
#include "ref.h"
#include "ref_comm.h"

/* check_util.h's OK, naming the rank that failed. */
#undef OK
#define OK(expr)                                                                           \
  do {                                                                                     \
    gp_status_t ok_s_ = (expr);                                                            \
    ck_assert_msg(ok_s_ == GP_SUCCESS, "rank %d: %s -> %s: %s", g_rank, #expr,             \
                  gp_status_name(ok_s_), gp_last_error_message());                         \
  } while (0)

static int g_rank, g_size;
static uint64_t g_seed;

enum { C_ALL_REDUCE, C_BROADCAST, C_REDUCE, C_ALL_GATHER, C_REDUCE_SCATTER, C_ALL_TO_ALL, C_COUNT };
static const char *const names[C_COUNT] = {"all_reduce", "broadcast", "reduce", "all_gather",
                                           "reduce_scatter", "all_to_all"};
static bool reduces(int c) { return c == C_ALL_REDUCE || c == C_REDUCE || c == C_REDUCE_SCATTER; }

/* One case on this rank; returns the number of bad elements (msg says which). */
static size_t run_case(gp_comm_t comm, int coll, gp_dtype_t t, gp_reduce_op_t op, size_t k,
                       bool inplace, int root, uint64_t seed, char *host, char *msg, size_t len) {
  size_t es = gp_dtype_size(t), n = (size_t)g_size, se = k, re = k;
  if (coll == C_ALL_GATHER) re = n * k;
  if (coll == C_REDUCE_SCATTER) se = n * k;
  if (coll == C_ALL_TO_ALL) se = re = n * k;
  char *send = NULL, *recv = NULL;
  if (gp_malloc((void **)&send, se * es + 8) || gp_malloc((void **)&recv, se * es + re * es + 8)) {
    snprintf(msg, len, "gp_malloc failed");
    return 1;
  }
  gp_ref_comm_poison(recv, t, se + re);
  char *in = send, *out = recv;
  if (inplace) {
    if (coll == C_ALL_GATHER) in = recv + (size_t)g_rank * k * es;
    else if (coll == C_REDUCE_SCATTER) in = recv, out = recv + (size_t)g_rank * k * es;
    else in = recv;
  }
  gp_ref_comm_inputs(in, t, op, GP_REF_COMM_RANDOM, seed, g_rank, 0, se);
  gp_status_t s;
  switch (coll) {
    case C_ALL_REDUCE: s = gp_all_reduce(in, out, k, t, op, comm, NULL); break;
    case C_BROADCAST: s = gp_broadcast(in, out, k, t, root, comm, NULL); break;
    case C_REDUCE: s = gp_reduce(in, out, k, t, op, root, comm, NULL); break;
    case C_ALL_GATHER: s = gp_all_gather(in, out, k, t, comm, NULL); break;
    case C_REDUCE_SCATTER: s = gp_reduce_scatter(in, out, k, t, op, comm, NULL); break;
    default: s = gp_all_to_all(in, out, k, t, comm, NULL); break;
  }
  if (s == GP_SUCCESS) s = gp_stream_synchronize(NULL);
  size_t bad = 0;
  if (s != GP_SUCCESS) {
    snprintf(msg, len, "%s: %s", gp_status_name(s), gp_last_error_message());
    bad = 1;
  } else {
    memcpy(host, out, re * es);
    switch (coll) {
      case C_ALL_REDUCE:
        bad = gp_ref_comm_check_reduce(host, t, op, GP_REF_COMM_RANDOM, seed, g_size, 0, k, msg, len);
        break;
      case C_REDUCE:
        if (g_rank == root)
          bad = gp_ref_comm_check_reduce(host, t, op, GP_REF_COMM_RANDOM, seed, g_size, 0, k, msg, len);
        break;
      case C_BROADCAST:
        bad = gp_ref_comm_check_copy(host, t, op, GP_REF_COMM_RANDOM, seed, root, 0, k, msg, len);
        break;
      case C_REDUCE_SCATTER:
        bad = gp_ref_comm_check_reduce(host, t, op, GP_REF_COMM_RANDOM, seed, g_size,
                                       (size_t)g_rank * k, k, msg, len);
        break;
      case C_ALL_GATHER:
        for (int q = 0; q < g_size && !bad; q++)
          bad = gp_ref_comm_check_copy(host + (size_t)q * k * es, t, op, GP_REF_COMM_RANDOM, seed, q, 0, k, msg, len);
        break;
      default:
        for (int q = 0; q < g_size && !bad; q++)
          bad = gp_ref_comm_check_copy(host + (size_t)q * k * es, t, op, GP_REF_COMM_RANDOM, seed, q,
                                       (size_t)g_rank * k, k, msg, len);
        break;
    }
  }
  gp_free(send);
  gp_free(recv);
  return bad;
}

START_TEST(every_op) {
  gp_comm_t comm = NULL;
  OK(gp_comm_init_mpi(&comm, MPI_COMM_WORLD));
  int r = -1, n = 0;
  OK(gp_comm_rank(comm, &r));
  OK(gp_comm_size(comm, &n));
  ck_assert_int_eq(r, g_rank);
  ck_assert_int_eq(n, g_size);
  static const gp_dtype_t types[] = {GP_F32, GP_F64, GP_F16, GP_BF16, GP_I8, GP_U8, GP_I32,
                                     GP_U32, GP_I64, GP_U64, GP_FP8_E4M3, GP_FP8_E5M2};
  char *host = malloc(1 << 22);
  int failed = 0;
  uint64_t id = 0;
  char first[700] = "";
  for (int coll = 0; coll < C_COUNT; coll++)
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
      for (int op = 0; op < (reduces(coll) ? 5 : 1); op++)
        for (int ip = 0; ip < 2; ip++) {
          size_t k = ip ? 1 : 7;
          int root = (int)(id % (uint64_t)g_size);
          char msg[500];
          if (run_case(comm, coll, types[ti], (gp_reduce_op_t)op, k, ip, root,
                       g_seed ^ (0x9e3779b97f4a7c15ull * ++id), host, msg, sizeof msg) &&
              failed++ == 0)
            snprintf(first, sizeof first, "%s %s op %d count %zu %s root %d: %s", names[coll],
                     gp_dtype_name(types[ti]), op, k, ip ? "in place" : "out of place", root, msg);
        }
  /* a large odd count: many MPI messages' worth, still one call */
  char msg[500];
  if (run_case(comm, C_ALL_REDUCE, GP_BF16, GP_AVG, (1u << 20) + 3, false, 0, g_seed ^ 77, host,
               msg, sizeof msg) && failed++ == 0)
    snprintf(first, sizeof first, "all_reduce bf16 avg 1M+3: %s", msg);
  ck_assert_msg(failed == 0, "rank %d: %d cases failed; first: %s (seed %llu)", g_rank, failed,
                first, (unsigned long long)g_seed);
  free(host);
  OK(gp_comm_destroy(comm));
}
END_TEST

START_TEST(group_sendrecv_split) {
  gp_comm_t comm = NULL, sub = NULL;
  OK(gp_comm_init_mpi(&comm, MPI_COMM_WORLD));
  size_t k = 100003;
  float *out, *in;
  OK(gp_malloc((void **)&out, k * 4));
  OK(gp_malloc((void **)&in, 2 * k * 4));
  gp_ref_comm_inputs(out, GP_F32, GP_SUM, GP_REF_COMM_RANDOM, g_seed, g_rank, 0, k);
  int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
  OK(gp_group_start());
  if (g_rank % 2) { /* receive first on odd ranks: only a group makes that safe */
    OK(gp_recv(in, k, GP_F32, prev, comm, NULL));
    OK(gp_recv(in + k, 5, GP_F32, next, comm, NULL));
  }
  OK(gp_send(out, k, GP_F32, next, comm, NULL));
  OK(gp_send(out, 5, GP_F32, prev, comm, NULL));
  if (!(g_rank % 2)) {
    OK(gp_recv(in, k, GP_F32, prev, comm, NULL));
    OK(gp_recv(in + k, 5, GP_F32, next, comm, NULL));
  }
  OK(gp_group_end());
  OK(gp_stream_synchronize(NULL));
  char msg[300];
  ck_assert_msg(gp_ref_comm_check_copy(in, GP_F32, GP_SUM, GP_REF_COMM_RANDOM, g_seed, prev, 0, k, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(gp_ref_comm_check_copy(in + k, GP_F32, GP_SUM, GP_REF_COMM_RANDOM, g_seed, next, 0, 5, msg, sizeof msg) == 0, "%s", msg);

  OK(gp_comm_split(comm, g_rank % 2, -g_rank, &sub));
  int r = -1, n = 0;
  OK(gp_comm_rank(sub, &r));
  OK(gp_comm_size(sub, &n));
  ck_assert_int_eq(n, (g_size + 1 - g_rank % 2) / 2);
  int64_t *v;
  OK(gp_malloc((void **)&v, 8));
  *v = g_rank;
  OK(gp_all_reduce(v, v, 1, GP_I64, GP_MAX, sub, NULL));
  OK(gp_stream_synchronize(NULL));
  int64_t want = g_rank % 2 ? (g_size % 2 ? g_size - 2 : g_size - 1) : (g_size % 2 ? g_size - 1 : g_size - 2);
  ck_assert_int_eq(*v, want);
  ck_assert_int_eq(r, n - 1 - g_rank / 2); /* keys -rank: the highest rank first */
  OK(gp_comm_destroy(sub));
  OK(gp_free(v));
  OK(gp_free(in));
  OK(gp_free(out));
  OK(gp_comm_destroy(comm));
}
END_TEST

/* Rank 0 arrives after the others' timeout: they get GP_ERROR_TIMEOUT, not a hang. */
START_TEST(late_rank_times_out) {
  setenv("GP_COMM_TIMEOUT_S", "0.5", 1);
  gp_comm_t comm = NULL;
  OK(gp_comm_init_mpi(&comm, MPI_COMM_WORLD));
  unsetenv("GP_COMM_TIMEOUT_S");
  /* Device-accessible (the cpu backend refuses plain host memory, as a GPU would), and
   * never freed: it outlives the abandoned request. */
  static float *x;
  if (!x) OK(gp_malloc_host((void **)&x, 8 * sizeof(float)));
  for (int i = 0; i < 8; i++) x[i] = 1;
  if (g_rank != 0) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gp_status_t s = gp_all_reduce(x, x, 8, GP_F32, GP_SUM, comm, NULL);
    if (s == GP_SUCCESS) s = gp_stream_synchronize(NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    ck_assert_msg(s == GP_ERROR_TIMEOUT, "rank %d: %s: %s", g_rank, gp_status_name(s), gp_last_error_message());
    ck_assert_msg(dt >= 0.45 && dt < 10, "rank %d timed out after %.2f s", g_rank, dt);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) { /* completes the others' abandoned all-reduce */
    OK(gp_all_reduce(x, x, 8, GP_F32, GP_SUM, comm, NULL));
    OK(gp_stream_synchronize(NULL));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  OK(gp_comm_destroy(comm));
}
END_TEST

START_TEST(bootstrap_only) { /* cuda/hip: the id over MPI, then one all-reduce on the GPU */
  gp_comm_t comm = NULL;
  OK(gp_comm_init_mpi(&comm, MPI_COMM_WORLD));
  float *x;
  OK(gp_malloc((void **)&x, 4));
  float one = 1;
  OK(gp_memcpy(x, &one, 4));
  OK(gp_all_reduce(x, x, 1, GP_F32, GP_SUM, comm, NULL));
  OK(gp_memcpy(&one, x, 4));
  ck_assert(one == (float)g_size);
  OK(gp_free(x));
  OK(gp_comm_destroy(comm));
}
END_TEST

int main(int argc, char **argv) {
  const char *th = getenv("GP_TEST_MPI_THREAD");
  int want = th && !strcmp(th, "single") ? MPI_THREAD_SINGLE : MPI_THREAD_MULTIPLE, got = 0;
  MPI_Init_thread(&argc, &argv, want, &got);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  unsigned long long seed = g_rank == 0 ? gp_ref_default_seed() : 0;
  MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  g_seed = seed;
  bool cpu = gp_backend() == GP_BACKEND_CPU;
  int ndev = cpu ? 0 : devices(); /* the cpu backend is not started before the tests */
  if (ndev > 0) gp_device_set(g_rank % ndev);
  if (g_rank == 0)
    printf("test_comm_mpi: %d ranks, %s backend, MPI thread level %d, seed %llu (GP_TEST_SEED)\n",
           g_size, gp_backend_name(), got, seed);
  fflush(stdout);
  Suite *s = suite_create("comm_mpi");
  TCase *tc = tcase_create("comm_mpi");
  tcase_set_timeout(tc, 120);
  if (cpu) {
    tcase_add_test(tc, every_op);
    tcase_add_test(tc, group_sendrecv_split);
    tcase_add_test(tc, late_rank_times_out);
  } else {
    tcase_add_test(tc, bootstrap_only);
  }
  suite_add_tcase(s, tc);
  /* Every rank runs the suite (skipped alike on every rank when no device answers);
   * rank 0 reports, and the failures of all ranks decide. */
  int failed = 0;
  int rc = run_suite_with("test_comm_mpi", s, RUN_NOFORK | (g_rank ? RUN_QUIET : 0), &failed);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) printf("test_comm_mpi: %d failure(s) over %d ranks\n", any, g_size);
  MPI_Finalize();
  return any ? 1 : rc;
}
