/*
 * attn_bad_varlen.h - what test_attention.c and test_attention_bwd.c share to prove the
 * varlen rule of kernels/common/attention_seq.h on every implementation: cu_seqlens that
 * do not fit the packed tensors or the limits (one table of shapes), and tensors that end
 * exactly at an unreadable page, so that a read past a packed tensor faults (under ASan
 * the process dies: a signal, never a quiet wrong answer).
 *
 * Geometry: f16, batch 2, seqlen_q = seqlen_k = 64 (the maxima), heads 2 / 1 (GQA),
 * head_dim 64: every matrix-core kernel (sm_80, sm_90a, MFMA) takes it. The packed
 * tensors hold BV_TOKENS = 96 tokens each (lse: 2 x 96 floats).
 */
#ifndef GP_TEST_ATTN_BAD_VARLEN_H
#define GP_TEST_ATTN_BAD_VARLEN_H

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gpuport.h>

#define BV_BATCH 2
#define BV_SEQ 64
#define BV_TOKENS 96
#define BV_HQ 2
#define BV_HKV 1
#define BV_D 64

typedef struct bad_varlen {
  const char *name;
  int32_t cu_q[BV_BATCH + 1], cu_k[BV_BATCH + 1];
  unsigned seqs; /* bit b: sequence b is at fault (a kernel names whichever block fails first) */
  char side;     /* the offsets at fault: 'q' or 'k' */
  int extent;    /* the fault is only visible against the tensors' allocations */
} bad_varlen_t;

#define BV_OKQ {0, 32, 64}
#define BV_OKK {0, 32, 64}
static const bad_varlen_t bv_shapes[] = {
    /* the report: 64 + 66 keys, the second longer than seqlen_k and past the tensors */
    {"k 64+66 keys", BV_OKQ, {0, 64, 130}, 2u, 'k', 0},
    {"k ends past the tensors", BV_OKQ, {0, 64, 100}, 2u, 'k', 1},
    {"k starts past the tensors", BV_OKQ, {100, 100, 110}, 3u, 'k', 1},
    {"k total past the tensors", BV_OKQ, {0, 50, 97}, 2u, 'k', 1},
    {"k decreasing", BV_OKQ, {0, 50, 40}, 2u, 'k', 0},
    {"k negative start", BV_OKQ, {-8, 10, 20}, 3u, 'k', 0},
    {"k longer than seqlen_k", BV_OKQ, {0, 65, 80}, 1u, 'k', 0},
    {"q ends past the tensors", {0, 64, 100}, BV_OKK, 3u, 'q', 1},
    {"q starts past the tensors", {100, 100, 110}, BV_OKK, 3u, 'q', 1},
    {"q total past the tensors", {0, 50, 97}, BV_OKK, 3u, 'q', 1},
    {"q decreasing", {0, 50, 40}, BV_OKK, 3u, 'q', 0},
    {"q negative start", {-8, 10, 20}, BV_OKK, 3u, 'q', 0},
    {"q longer than seqlen_q", {0, 65, 80}, BV_OKK, 1u, 'q', 0},
};
#define BV_NSHAPES ((int)(sizeof(bv_shapes) / sizeof(bv_shapes[0])))

/* bytes of host memory that end where a PROT_NONE page begins, registered with
 * gp_host_register (so gpuport knows where the tensor ends) when reg is set. */
typedef struct guarded {
  unsigned char *map;
  size_t map_bytes;
  void *ptr;
  int reg;
} guarded_t;

static inline void *guarded_alloc(guarded_t *g, size_t bytes, int reg, unsigned char fill) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE), body = (bytes + page - 1) / page * page;
  g->map_bytes = body + page;
  g->map = (unsigned char *)mmap(NULL, g->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ck_assert(g->map != MAP_FAILED);
  ck_assert_int_eq(mprotect(g->map + body, page, PROT_NONE), 0);
  g->ptr = g->map + body - bytes; /* bytes is a multiple of 16: the tensor stays aligned */
  memset(g->ptr, fill, bytes);
  g->reg = reg;
  if (reg) ck_assert_int_eq(gp_host_register(g->ptr, bytes), GP_SUCCESS);
  return g->ptr;
}

static inline void guarded_free(guarded_t *g) {
  if (g->reg) ck_assert_int_eq(gp_host_unregister(g->ptr), GP_SUCCESS);
  ck_assert_int_eq(munmap(g->map, g->map_bytes), 0);
}

/* The tensors of one call: q, o (and d_o, dq) [96, 2, 64]; k, v (dk, dv) [96, 1, 64];
 * lse [2, 96]; cu_seqlens in device memory. */
typedef struct bv_tensors {
  guarded_t g[9];
  void *q, *k, *v, *o, *d_o, *dq, *dk, *dv;
  float *lse;
  int32_t *cu_q, *cu_k;
} bv_tensors_t;

static inline void bv_alloc(bv_tensors_t *t, int reg) {
  const size_t qb = (size_t)BV_TOKENS * BV_HQ * BV_D * 2, kb = (size_t)BV_TOKENS * BV_HKV * BV_D * 2;
  /* 0x3c00: f16 1.0 everywhere, so a run that does not fail computes finite values */
  t->q = guarded_alloc(&t->g[0], qb, reg, 0x3c);
  t->k = guarded_alloc(&t->g[1], kb, reg, 0x3c);
  t->v = guarded_alloc(&t->g[2], kb, reg, 0x3c);
  t->o = guarded_alloc(&t->g[3], qb, reg, 0x3c);
  t->d_o = guarded_alloc(&t->g[4], qb, reg, 0x3c);
  t->dq = guarded_alloc(&t->g[5], qb, reg, 0);
  t->dk = guarded_alloc(&t->g[6], kb, reg, 0);
  t->dv = guarded_alloc(&t->g[7], kb, reg, 0);
  t->lse = (float *)guarded_alloc(&t->g[8], (size_t)BV_HQ * BV_TOKENS * sizeof(float), reg, 0);
  ck_assert_int_eq(gp_malloc((void **)&t->cu_q, (BV_BATCH + 1) * sizeof(int32_t)), GP_SUCCESS);
  ck_assert_int_eq(gp_malloc((void **)&t->cu_k, (BV_BATCH + 1) * sizeof(int32_t)), GP_SUCCESS);
}

static inline void bv_free(bv_tensors_t *t) {
  for (int i = 0; i < 9; i++) guarded_free(&t->g[i]);
  gp_free(t->cu_q);
  gp_free(t->cu_k);
}

/* The descriptor of shape s over t (its offsets copied into t's cu_seqlens). */
static inline void bv_desc(gp_attention_desc_t *d, bv_tensors_t *t, const bad_varlen_t *s) {
  ck_assert_int_eq(gp_memcpy(t->cu_q, s->cu_q, sizeof(s->cu_q)), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(t->cu_k, s->cu_k, sizeof(s->cu_k)), GP_SUCCESS);
  gp_attention_desc_init(d);
  d->dtype = GP_F16;
  d->batch = BV_BATCH;
  d->seqlen_q = d->seqlen_k = BV_SEQ;
  d->heads_q = BV_HQ, d->heads_kv = BV_HKV;
  d->head_dim = BV_D;
  d->q = t->q, d->k = t->k, d->v = t->v, d->o = t->o, d->lse = t->lse;
  d->cu_seqlens_q = t->cu_q, d->cu_seqlens_k = t->cu_k;
}

/* Unregistered tensors (reg 0): the cpu backend knows every byte of device-accessible
 * memory, so it refuses the call before any implementation runs, naming desc->q (the
 * first tensor checked) as not device-accessible: a GPU would fault on such memory. */
static inline void bv_expect_refused(gp_status_t st, const char *what) {
  const char *msg = gp_last_error_message();
  ck_assert_msg(st == GP_ERROR_INVALID_VALUE && strstr(msg, "'desc->q'") && strstr(msg, "not device-accessible"),
                "%s: expected GP_ERROR_INVALID_VALUE naming desc->q as not device-accessible, got %s (%s)",
                what, gp_status_name(st), msg);
}

/* The call's status st (then the next synchronisation's) is want, and the message names
 * the public function, a sequence at fault and its offsets, and, for a kernel (kernel
 * non-NULL), that kernel: the message of the launch names the kernel that failed. */
static inline void bv_expect(gp_status_t st, gp_status_t want, const bad_varlen_t *s, const char *func,
                      const char *const *kernels, const char *what) {
  if (st == GP_SUCCESS) st = gp_device_synchronize();
  const char *msg = gp_last_error_message();
  ck_assert_msg(st == want, "%s, %s: expected %s, got %s (%s)", what, s->name, gp_status_name(want),
                gp_status_name(st), msg);
  int named = 0;
  for (int b = 0; b < BV_BATCH; b++) {
    char seq[48];
    snprintf(seq, sizeof seq, "varlen sequence %d:", b);
    if ((s->seqs >> b & 1u) && strstr(msg, seq)) named = 1;
  }
  ck_assert_msg(named, "%s, %s: the message names no sequence at fault (mask %u): %s", what, s->name,
                s->seqs, msg);
  const char cu[] = {'c', 'u', '_', 's', 'e', 'q', 'l', 'e', 'n', 's', '_', s->side, '\0'};
  ck_assert_msg(strstr(msg, cu) != NULL, "%s, %s: the message does not name %s: %s", what, s->name, cu, msg);
  ck_assert_msg(strstr(msg, func) != NULL || kernels != NULL, "%s, %s: the message does not name %s: %s",
                what, s->name, func, msg);
  if (kernels) {
    int found = 0;
    for (int i = 0; kernels[i]; i++)
      if (strstr(msg, kernels[i])) found = 1;
    ck_assert_msg(found, "%s, %s: the failed launch is not one of this mode's kernels (%s...): %s", what,
                  s->name, kernels[0], msg);
  }
}

#endif /* GP_TEST_ATTN_BAD_VARLEN_H */
