/*
 * selftest_comm.c - checks of the collectives over every device of this process (one
 * rank per device: gp_comm_init_all; on the cpu backend GP_CPU_DEVICES virtual devices,
 * so a one-device run checks the one-rank paths). Inputs and references come from
 * ref/ref_comm.h: reductions against float64 with a bound that grows with the number
 * of ranks, copies bit for bit. On cuda/hip without NCCL/RCCL the checks say so and pass:
 * a single-GPU machine need not have it.
 */
#include "selftest.h"
#include "ref_comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXR 8

typedef struct ranks {
  int n;
  gp_comm_t comm[MAXR];
  gp_stream_t stream[MAXR];
  void *send[MAXR], *recv[MAXR];
} ranks_t;

/* One rank per device (at most MAXR); false (with a note) when collectives are absent. */
static bool setup(st_ctx_t *c, ranks_t *r, size_t bytes) {
  memset(r, 0, sizeof(*r));
  int ndev = 0;
  ST_TRY(c, gp_device_count(&ndev));
  r->n = ndev < MAXR ? ndev : MAXR;
  gp_status_t s = gp_comm_init_all(r->comm, r->n, NULL);
  if (s == GP_ERROR_NOT_SUPPORTED) {
    st_note(c, "skipped: %s", gp_last_error_message());
    return false;
  }
  ST_TRY(c, s);
  for (int i = 0; i < r->n; i++) {
    ST_TRY(c, gp_device_set(i));
    ST_TRY(c, gp_stream_create(&r->stream[i]));
    ST_TRY(c, gp_malloc(&r->send[i], bytes));
    ST_TRY(c, gp_malloc(&r->recv[i], bytes));
  }
  return true;
out:
  return false;
}

static void teardown(ranks_t *r) {
  for (int i = 0; i < r->n; i++) {
    gp_device_set(i);
    gp_free(r->send[i]);
    gp_free(r->recv[i]);
    gp_stream_destroy(r->stream[i]);
    gp_comm_destroy(r->comm[i]);
  }
  gp_device_set(0);
}

static gp_status_t sync_all(ranks_t *r) {
  for (int i = 0; i < r->n; i++) {
    gp_status_t s = gp_device_set(i);
    if (!s) s = gp_stream_synchronize(r->stream[i]);
    if (s) return s;
  }
  return gp_device_set(0);
}

/* Copies rank i's output (n elements) to host and checks it; the injection point. */
static bool verify(st_ctx_t *c, const char *what, ranks_t *r, int i, gp_dtype_t t, size_t n,
                   bool reduction, gp_reduce_op_t op, uint64_t seed, int src_rank, size_t first) {
  size_t es = gp_dtype_size(t);
  char *h = malloc(n * es + 8), msg[400];
  if (h == NULL || gp_memcpy(h, r->recv[i], n * es) != GP_SUCCESS) {
    st_fail(c, "%s: copy back failed", what);
    free(h);
    return false;
  }
  st_inject(c, h, t == GP_F32 || t == GP_BF16 ? t : GP_F32, t == GP_F32 || t == GP_BF16 ? n : n * es / 4);
  size_t bad = reduction ? gp_ref_comm_check_reduce(h, t, op, GP_REF_COMM_RANDOM, seed, r->n, first, n, msg, sizeof msg)
                         : gp_ref_comm_check_copy(h, t, op, GP_REF_COMM_RANDOM, seed, src_rank, first, n, msg, sizeof msg);
  free(h);
  if (bad) st_fail(c, "%s, rank %d of %d: %zu bad: %s", what, i, r->n, bad, msg);
  return bad == 0;
}

/* All-reduce: f32 sum and bf16 average over every rank, one in place. */
static void check_all_reduce(st_ctx_t *c, const void *arg) {
  (void)arg;
  size_t n = c->quick ? 4099 : c->big ? (1u << 24) + 3 : (1u << 18) + 3;
  ranks_t r;
  if (!setup(c, &r, n * 4)) goto out;
  static const struct { gp_dtype_t t; gp_reduce_op_t op; bool inplace; } cases[] = {
      {GP_F32, GP_SUM, false}, {GP_BF16, GP_AVG, true}};
  for (size_t k = 0; k < 2 && !c->failed; k++) {
    uint64_t seed = c->seed + k;
    gp_dtype_t t = cases[k].t;
    size_t es = gp_dtype_size(t);
    char *h = malloc(n * es);
    for (int i = 0; i < r.n && h; i++) {
      gp_ref_comm_inputs(h, t, cases[k].op, GP_REF_COMM_RANDOM, seed, i, 0, n);
      ST_TRY(c, gp_device_set(i));
      ST_TRY(c, gp_memcpy(cases[k].inplace ? r.recv[i] : r.send[i], h, n * es));
    }
    free(h);
    ST_TRY(c, gp_group_start());
    for (int i = 0; i < r.n; i++) {
      ST_TRY(c, gp_device_set(i));
      ST_TRY(c, gp_all_reduce(cases[k].inplace ? r.recv[i] : r.send[i], r.recv[i], n, t, cases[k].op,
                              r.comm[i], r.stream[i]));
    }
    ST_TRY(c, gp_group_end());
    ST_TRY(c, sync_all(&r));
    const char *what = k ? "bf16 avg (in place)" : "f32 sum";
    /* The cpu engine reduces each element on one rank, so every rank holds the same bits:
     * rank 0 against float64, the others against rank 0. */
    bool same_bits = gp_backend() == GP_BACKEND_CPU;
    for (int i = 0; i < r.n && !c->failed; i++) {
      if (i == 0 || !same_bits) {
        verify(c, what, &r, i, t, n, true, cases[k].op, seed, 0, 0);
        continue;
      }
      unsigned char *a = malloc(n * es), *b = malloc(n * es);
      if (a && b && gp_memcpy(a, r.recv[0], n * es) == GP_SUCCESS &&
          gp_memcpy(b, r.recv[i], n * es) == GP_SUCCESS) {
        char label[64];
        snprintf(label, sizeof label, "%s, rank %d vs rank 0", what, i);
        st_compare_bytes(c, label, b, a, n * es);
      }
      free(a);
      free(b);
    }
  }
  if (!c->failed) st_note(c, "%d ranks, %zu elements: f32 sum, bf16 avg in place", r.n, n);
out:
  teardown(&r);
}

/* Broadcast, all-gather, reduce-scatter, all-to-all and a send/recv ring, f32. */
static void check_collectives(st_ctx_t *c, const void *arg) {
  (void)arg;
  size_t k = c->quick ? 1001 : 65537;
  ranks_t r;
  if (!setup(c, &r, k * 4 * MAXR)) goto out;
  int n = r.n;
  float *h = malloc(k * 4 * MAXR);
  if (h == NULL) goto out;
  for (int op = 0; op < 5 && !c->failed; op++) {
    uint64_t seed = c->seed ^ (uint64_t)(op + 1);
    size_t in = op == 1 ? k : op == 2 || op == 3 ? k * (size_t)n : k; /* elements per rank */
    for (int i = 0; i < n; i++) {
      gp_ref_comm_inputs(h, GP_F32, GP_MIN, GP_REF_COMM_RANDOM, seed, i, 0, in);
      ST_TRY(c, gp_device_set(i));
      ST_TRY(c, gp_memcpy(r.send[i], h, in * 4));
    }
    ST_TRY(c, gp_group_start());
    for (int i = 0; i < n; i++) {
      ST_TRY(c, gp_device_set(i));
      gp_comm_t cm = r.comm[i];
      gp_stream_t s = r.stream[i];
      switch (op) {
        case 0: ST_TRY(c, gp_broadcast(r.send[i], r.recv[i], k, GP_F32, n - 1, cm, s)); break;
        case 1: ST_TRY(c, gp_all_gather(r.send[i], r.recv[i], k, GP_F32, cm, s)); break;
        case 2: ST_TRY(c, gp_reduce_scatter(r.send[i], r.recv[i], k, GP_F32, GP_MIN, cm, s)); break;
        case 3: ST_TRY(c, gp_all_to_all(r.send[i], r.recv[i], k, GP_F32, cm, s)); break;
        default:
          ST_TRY(c, gp_recv(r.recv[i], k, GP_F32, (i + n - 1) % n, cm, s));
          ST_TRY(c, gp_send(r.send[i], k, GP_F32, (i + 1) % n, cm, s));
          break;
      }
    }
    ST_TRY(c, gp_group_end());
    ST_TRY(c, sync_all(&r));
    static const char *const what[] = {"broadcast", "all_gather", "reduce_scatter min", "all_to_all", "send/recv ring"};
    for (int i = 0; i < n && !c->failed; i++) {
      if (op == 0) verify(c, what[op], &r, i, GP_F32, k, false, GP_MIN, seed, n - 1, 0);
      if (op == 2) verify(c, what[op], &r, i, GP_F32, k, true, GP_MIN, seed, 0, (size_t)i * k);
      if (op == 4) verify(c, what[op], &r, i, GP_F32, k, false, GP_MIN, seed, (i + n - 1) % n, 0);
      if (op == 1 || op == 3) {
        /* blocks from every rank: check block by block through a shifted view */
        for (int q = 0; q < n && !c->failed; q++) {
          void *save = r.recv[i];
          r.recv[i] = (char *)save + (size_t)q * k * 4;
          verify(c, what[op], &r, i, GP_F32, k, false, GP_MIN, seed, q, op == 3 ? (size_t)i * k : 0);
          r.recv[i] = save;
        }
      }
    }
  }
  free(h);
  if (!c->failed) st_note(c, "%d ranks, %zu elements: broadcast, all-gather, reduce-scatter, all-to-all, ring", n, k);
out:
  teardown(&r);
}

const st_check_t st_comm_checks[] = {
    {"comm.all_reduce", check_all_reduce, NULL},
    {"comm.collectives", check_collectives, NULL},
    {NULL, NULL, NULL},
};
