/*
 * test_attention_kvcache.c - gp_attention_fwd_kvcache (attention over a paged KV cache,
 * split-KV) against the float64 reference (ref/ref_attention.h).
 *
 * Every case draws fresh inputs from the seed printed at start (replay with
 * GP_TEST_SEED=<seed>): a cache whose pages are handed to the sequences in a random
 * order (a shuffled block table, never the identity), cached tokens random, every other
 * slot of every page NaN (a read outside a sequence's tokens poisons its output), new
 * tokens appended through k_new / v_new, queries, and NaN-poisoned o and lse. After the
 * call it checks: every output element against its float64 bound and the relative norm
 * (the reference runs dense varlen attention over each sequence's logical keys: its
 * cached tokens then the appended ones), every lse value, the cache (the appended tokens
 * in their pages, every other byte unchanged), and the kernel that ran. On the cpu
 * backend each case runs on the host implementation, the portable kernels on the SIMT
 * executor at warp width 32 and a width-64 build of them (as HIP runs them), and with
 * GP_CPU_ATTENTION=sm80 (the sm_80 kernel where it takes the case, else the portable ones)
 * and GP_CPU_ATTENTION=mfma (the MFMA kernel at wave64 where it takes the case, else the
 * portable ones).
 *
 * Also: the same call twice gives the same bits (split-KV is deterministic for a split
 * count); the paged result equals dense gp_attention_fwd on the same logical K/V; bad
 * block-table entries and cache lengths fail (GP_ERROR_INVALID_VALUE on the host
 * implementation, GP_ERROR_LAUNCH_FAILED from a kernel) naming the sequence, and touch
 * nothing outside the cache; bad descriptors fail at once naming the field.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuport.h>

#include "attention_impl.h"
#include "check_util.h"
#include "dispatch.h"
#include "dispatch_hook.h"
#include "ref.h"
#include "ref_attention.h"

#if defined(GP_BUILD_CPU)
GP_KERNEL_DECLARE(gp__attention_kvcache_append_portable_w64);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_portable_w64);
GP_KERNEL_DECLARE(gp__attention_kvcache_combine_portable_w64);
static gp__attn_kv_kernels_t w64_kernels(void) {
  gp__attn_kv_kernels_t k = {GP_KERNEL_REF(gp__attention_kvcache_append_portable_w64),
                             GP_KERNEL_REF(gp__attention_kvcache_fwd_portable_w64),
                             GP_KERNEL_REF(gp__attention_kvcache_combine_portable_w64)};
  return k;
}
#endif

enum mode { M_DEFAULT = 0, M_PORTABLE = 1, M_W64 = 2, M_SM80 = 3, M_MFMA = 4 };
static const char *const mode_names[] = {"host", "portable", "warp64", "sm80", "mfma"};
static const int mode_cpu[] = {GP__CPU_HOST, GP__CPU_PORTABLE, GP__CPU_HOST, GP__CPU_SM80, GP__CPU_MFMA};

static uint64_t g_seed;

#define MAXB 6
typedef struct kvcase {
  const char *name;
  gp_dtype_t dtype;
  int64_t batch, sq, hq, hkv, d, page;
  int32_t cached[MAXB]; /* cache_seqlens */
  int64_t snew;         /* appended tokens per sequence */
  int causal;
  int64_t wl, wr;
  int splits;           /* num_splits (0: gpuport's choice) */
  int lse;
} kvcase_t;

#define NOWIN -1, -1
static const kvcase_t cases[] = {
    /* name                                 dtype    b  sq  hq hkv  d  page  cache_seqlens          new c window  splits lse */
    {"decode f16 gqa32/8 d128 p16",         GP_F16,  4, 1,  32, 8, 128, 16, {1, 15, 16, 17},       1, 1, NOWIN, 0, 1},
    {"decode bf16 mqa d64 p16 long",        GP_BF16, 2, 1,  8,  1, 64,  16, {4097, 33},            0, 1, NOWIN, 4, 1},
    {"prefill f32 gqa d64 p256 cross page", GP_F32,  3, 16, 4,  2, 64,  256, {255, 256, 257},      16, 1, NOWIN, 3, 1},
    {"bf16 d128 p256 sq4 window",           GP_BF16, 2, 4,  4,  1, 128, 256, {1, 300},             4, 1, 32, 0, 2, 1},
    {"f16 d32 p16 first prefill mqa",       GP_F16,  2, 16, 4,  1, 32,  16, {0, 5},                16, 0, NOWIN, 1, 1},
    {"f32 d96 p64 mixed lengths 7 splits",  GP_F32,  4, 1,  2,  2, 96,  64, {1, 700, 63, 64},      1, 1, NOWIN, 7, 1},
    {"f16 d64 p32 window no lse",           GP_F16,  2, 4,  4,  2, 64,  32, {90, 31},              0, 0, 20, 3, 5, 0},
    {"bf16 d16 p1 gqa",                     GP_BF16, 2, 4,  6,  2, 16,  1,  {5, 9},                2, 1, NOWIN, 2, 1},
    {"f16 d256 p128 decode splits",         GP_F16,  1, 1,  2,  1, 256, 128, {513},                1, 1, NOWIN, 5, 1},
    {"prefill f16 gqa d64 p16 cross page",  GP_F16,  3, 40, 4,  2, 64,  16, {0, 23, 100},          40, 1, NOWIN, 2, 1},
    {"bf16 d128 p32 prefill window splits", GP_BF16, 2, 24, 8,  2, 128, 32, {70, 9},               24, 1, 40, 0, 3, 1},
    {"prefill bf16 gqa6/2 d32 p16 2 tiles", GP_BF16, 2, 48, 6, 2, 32, 16, {20, 100},              48, 1, 50, 0, 2, 1},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* ---- a prepared call --------------------------------------------------------------------- */

typedef struct kvrun {
  gp_attention_kvcache_desc_t desc;
  int64_t sk[MAXB], maxb, nblocks, total_k;
  size_t es, ncache, nq, nnew, nlse;
  int32_t *table, *cached;      /* host copies */
  void *hkc, *hvc, *hq, *hkn, *hvn, *ho;
  float *hlse;
  void *dkc, *dvc, *dq, *dkn, *dvn, *dout, *ws;
  int32_t *dtable, *dcached;
  float *dlse;
  size_t ws_bytes;
  int nsplit;
} kvrun_t;

static void *upload(const void *host, size_t bytes) {
  void *p = NULL;
  ck_assert_int_eq(gp_malloc(&p, bytes ? bytes : 1), GP_SUCCESS);
  if (bytes) ck_assert_int_eq(gp_memcpy(p, host, bytes), GP_SUCCESS);
  return p;
}

/* A random permutation of n pages that is not the identity (when n > 1). */
static void shuffle_pages(int32_t *perm, int64_t n, gp_ref_rng_t *rng) {
  for (int64_t i = 0; i < n; i++) perm[i] = (int32_t)i;
  for (int64_t i = n - 1; i > 0; i--) {
    const int64_t j = (int64_t)(gp_ref_rng_next(rng) % (uint64_t)(i + 1));
    const int32_t t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  if (n > 1 && perm[0] == 0) { /* never the identity: swap the first two */
    const int32_t t = perm[0];
    perm[0] = perm[1], perm[1] = t;
  }
}

/* Builds the inputs of case c (seeded by id) on the host and the device. */
static void kv_prepare(kvrun_t *r, const kvcase_t *c, uint64_t id) {
  memset(r, 0, sizeof *r);
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ (id + 1) * 0x9e3779b97f4a7c15ull);
  r->es = gp_dtype_size(c->dtype);
  int64_t pages_used = 0;
  for (int64_t b = 0; b < c->batch; b++) {
    r->sk[b] = c->cached[b] + c->snew;
    const int64_t pb = (r->sk[b] + c->page - 1) / c->page;
    pages_used += pb;
    if (pb > r->maxb) r->maxb = pb;
    r->total_k += r->sk[b];
  }
  r->maxb += 1;                   /* a spare column, never read */
  r->nblocks = pages_used + 3;    /* pages no sequence owns */
  int32_t *perm = (int32_t *)malloc((size_t)r->nblocks * sizeof(int32_t));
  shuffle_pages(perm, r->nblocks, &rng);
  r->table = (int32_t *)malloc((size_t)(c->batch * r->maxb) * sizeof(int32_t));
  r->cached = (int32_t *)malloc((size_t)c->batch * sizeof(int32_t));
  int64_t next = 0;
  for (int64_t b = 0; b < c->batch; b++) {
    r->cached[b] = c->cached[b];
    for (int64_t j = 0; j < r->maxb; j++)
      r->table[b * r->maxb + j] = j < (r->sk[b] + c->page - 1) / c->page ? perm[next++] : -7; /* unused: invalid */
  }
  free(perm);
  const int64_t row = c->hkv * c->d;
  r->ncache = (size_t)(r->nblocks * c->page * row);
  r->hkc = malloc(r->ncache * r->es), r->hvc = malloc(r->ncache * r->es);
  gp_ref_poison(r->hkc, c->dtype, r->ncache);
  gp_ref_poison(r->hvc, c->dtype, r->ncache);
  for (int64_t b = 0; b < c->batch; b++) /* the cached tokens */
    for (int64_t t = 0; t < c->cached[b]; t++) {
      const int64_t page = r->table[b * r->maxb + t / c->page], slot = t % c->page;
      const size_t at = (size_t)((page * c->page + slot) * row);
      gp_ref_fill((char *)r->hkc + at * r->es, c->dtype, (size_t)row, &rng, -1.0, 1.0);
      gp_ref_fill((char *)r->hvc + at * r->es, c->dtype, (size_t)row, &rng, -1.0, 1.0);
    }
  r->nq = (size_t)(c->batch * c->sq * c->hq * c->d);
  r->nnew = (size_t)(c->batch * c->snew * row);
  r->nlse = (size_t)(c->batch * c->hq * c->sq);
  r->hq = malloc(r->nq * r->es), r->ho = malloc(r->nq * r->es);
  r->hkn = malloc(r->nnew * r->es + 1), r->hvn = malloc(r->nnew * r->es + 1);
  r->hlse = (float *)malloc(r->nlse * sizeof(float));
  gp_ref_fill(r->hq, c->dtype, r->nq, &rng, -1.0, 1.0);
  gp_ref_fill(r->hkn, c->dtype, r->nnew, &rng, -1.0, 1.0);
  gp_ref_fill(r->hvn, c->dtype, r->nnew, &rng, -1.0, 1.0);
  gp_ref_poison(r->ho, c->dtype, r->nq);
  gp_ref_poison(r->hlse, GP_F32, r->nlse);

  r->dkc = upload(r->hkc, r->ncache * r->es);
  r->dvc = upload(r->hvc, r->ncache * r->es);
  r->dq = upload(r->hq, r->nq * r->es);
  r->dout = upload(r->ho, r->nq * r->es);
  r->dlse = c->lse ? (float *)upload(r->hlse, r->nlse * sizeof(float)) : NULL;
  r->dkn = c->snew ? upload(r->hkn, r->nnew * r->es) : NULL;
  r->dvn = c->snew ? upload(r->hvn, r->nnew * r->es) : NULL;
  r->dtable = (int32_t *)upload(r->table, (size_t)(c->batch * r->maxb) * sizeof(int32_t));
  r->dcached = (int32_t *)upload(r->cached, (size_t)c->batch * sizeof(int32_t));

  gp_attention_kvcache_desc_t *d = &r->desc;
  gp_attention_kvcache_desc_init(d);
  d->dtype = c->dtype;
  d->batch = c->batch, d->seqlen_q = c->sq, d->heads_q = c->hq, d->heads_kv = c->hkv, d->head_dim = c->d;
  d->q = r->dq, d->o = r->dout, d->lse = r->dlse;
  d->k_cache = r->dkc, d->v_cache = r->dvc, d->num_blocks = r->nblocks, d->page_size = c->page;
  d->block_table = r->dtable, d->max_blocks_per_seq = r->maxb, d->cache_seqlens = r->dcached;
  d->k_new = r->dkn, d->v_new = r->dvn, d->seqlen_new = c->snew;
  d->causal = c->causal, d->window_left = c->wl, d->window_right = c->wr;
  d->num_splits = c->splits;
  ck_assert_int_eq(gp_attention_kvcache_workspace_size(d, &r->nsplit, &r->ws_bytes), GP_SUCCESS);
  ck_assert_int_eq(r->nsplit > 1, r->ws_bytes > 0);
  if (r->ws_bytes) {
    ck_assert_int_eq(gp_malloc(&r->ws, r->ws_bytes), GP_SUCCESS);
    ck_assert_int_eq(gp_memset(r->ws, 0xff, r->ws_bytes), GP_SUCCESS); /* NaN partials unless written */
  }
}

static void kv_free(kvrun_t *r) {
  gp_free(r->dkc), gp_free(r->dvc), gp_free(r->dq), gp_free(r->dout), gp_free(r->dtable), gp_free(r->dcached);
  if (r->dlse) gp_free(r->dlse);
  if (r->dkn) gp_free(r->dkn), gp_free(r->dvn);
  if (r->ws) gp_free(r->ws);
  free(r->table), free(r->cached), free(r->hkc), free(r->hvc), free(r->hq), free(r->hkn), free(r->hvn);
  free(r->ho), free(r->hlse);
}

/* Runs the prepared call in mode; the status of the call. */
static gp_status_t kv_call(kvrun_t *r, int mode) {
  gp__cpu_mode_set(GP__OP_ATTN_KVCACHE, mode_cpu[mode]);
  gp__last_kernel_reset();
  gp_status_t st;
#if defined(GP_BUILD_CPU)
  if (mode == M_W64) {
    const gp__attn_kv_kernels_t k = w64_kernels();
    st = gp__attention_fwd_kvcache_kernels(NULL, &r->desc, r->ws, r->ws_bytes, &k);
  } else
#endif
    st = gp_attention_fwd_kvcache(NULL, &r->desc, r->ws, r->ws_bytes);
  gp__cpu_mode_set(GP__OP_ATTN_KVCACHE, -1);
  return st;
}

/* The expected cache after the call: the host cache with the new tokens in their pages. */
static void expected_cache(const kvrun_t *r, const kvcase_t *c, void *kc, void *vc) {
  const int64_t row = c->hkv * c->d;
  memcpy(kc, r->hkc, r->ncache * r->es);
  memcpy(vc, r->hvc, r->ncache * r->es);
  for (int64_t b = 0; b < c->batch; b++)
    for (int64_t t = 0; t < c->snew; t++) {
      const int64_t pos = c->cached[b] + t, page = r->table[b * r->maxb + pos / c->page];
      const size_t at = (size_t)((page * c->page + pos % c->page) * row), from = (size_t)((b * c->snew + t) * row);
      memcpy((char *)kc + at * r->es, (const char *)r->hkn + from * r->es, (size_t)row * r->es);
      memcpy((char *)vc + at * r->es, (const char *)r->hvn + from * r->es, (size_t)row * r->es);
    }
}

/* Gathers each sequence's logical keys and values (cached, then new) from the expected
 * cache into packed [total_k, hkv, d] arrays; cu_k gets the prefix sums. */
static void gather_dense(const kvrun_t *r, const kvcase_t *c, const void *kc, const void *vc, void *k, void *v,
                         int32_t *cu_k) {
  const int64_t row = c->hkv * c->d;
  cu_k[0] = 0;
  for (int64_t b = 0; b < c->batch; b++) {
    for (int64_t t = 0; t < r->sk[b]; t++) {
      const int64_t page = r->table[b * r->maxb + t / c->page];
      const size_t at = (size_t)((page * c->page + t % c->page) * row), to = (size_t)((cu_k[b] + t) * row);
      memcpy((char *)k + to * r->es, (const char *)kc + at * r->es, (size_t)row * r->es);
      memcpy((char *)v + to * r->es, (const char *)vc + at * r->es, (size_t)row * r->es);
    }
    cu_k[b + 1] = cu_k[b] + (int32_t)r->sk[b];
  }
}

/* A dense varlen descriptor of the same logical problem over host or device arrays. */
static void dense_desc(gp_attention_desc_t *d, const kvrun_t *r, const kvcase_t *c, const void *q, const void *k,
                       const void *v, void *o, float *lse, const int32_t *cu_q, const int32_t *cu_k) {
  gp_attention_desc_init(d);
  d->dtype = c->dtype;
  d->batch = c->batch, d->seqlen_q = c->sq, d->heads_q = c->hq, d->heads_kv = c->hkv, d->head_dim = c->d;
  int64_t maxk = 1;
  for (int64_t b = 0; b < c->batch; b++)
    if (r->sk[b] > maxk) maxk = r->sk[b];
  d->seqlen_k = maxk;
  d->q = q, d->k = k, d->v = v, d->o = o, d->lse = lse;
  d->cu_seqlens_q = cu_q, d->cu_seqlens_k = cu_k;
  d->causal = c->causal, d->window_left = c->wl, d->window_right = c->wr;
}

/* ---- the cases ----------------------------------------------------------------------------- */

/* The elements x and its strides hold start every row 16-byte aligned. */
static int rows16(const void *x, int64_t bs, int64_t ss, int64_t hs) {
  return ((uintptr_t)x & 15u) == 0 && bs % 8 == 0 && ss % 8 == 0 && hs % 8 == 0;
}

/* The kernel a case runs in mode, from the documented rules (src/attention_table.c): the
 * sm_80 kernel takes f16/bf16 with head_dim 32, 64, 96 or 128 (not 256) and 16-byte
 * aligned rows of q and the caches; the MFMA kernel takes f16/bf16 with head_dim 32, 64 or
 * 128; everything else runs the portable kernels. */
static const char *expected_kernel(const kvrun_t *r, const kvcase_t *c, int mode, char *buf, size_t len) {
  if (mode == M_DEFAULT) return "cpu-attention-kvcache";
  const gp_attention_kvcache_desc_t *d = &r->desc;
  if (mode == M_SM80 && c->dtype != GP_F32 && (c->d == 32 || c->d == 64 || c->d == 96 || c->d == 128) &&
      rows16(d->q, c->sq * c->hq * c->d, c->hq * c->d, c->d) &&
      rows16(d->k_cache, c->page * c->hkv * c->d, c->hkv * c->d, c->d) &&
      rows16(d->v_cache, c->page * c->hkv * c->d, c->hkv * c->d, c->d)) {
    snprintf(buf, len, "gp__attention_kvcache_fwd_sm80_%s_d%lld", c->dtype == GP_BF16 ? "bf16" : "f16",
             (long long)c->d);
    return buf;
  }
  if (mode == M_MFMA && c->dtype != GP_F32 && (c->d == 32 || c->d == 64 || c->d == 128)) {
    snprintf(buf, len, "gp__attention_kvcache_fwd_mfma_%s_d%lld", c->dtype == GP_BF16 ? "bf16" : "f16",
             (long long)c->d);
    return buf;
  }
  return "gp__attention_kvcache_fwd_portable";
}

static void run_case(const kvcase_t *c, int mode, uint64_t id) {
  const char *mname = mode_names[mode];
  kvrun_t r;
  kv_prepare(&r, c, id);
  gp_status_t st = kv_call(&r, mode);
  ck_assert_msg(st == GP_SUCCESS, "%s (%s): %s: %s", c->name, mname, gp_status_name(st), gp_last_error_message());
  if (gp_backend() == GP_BACKEND_CPU) {
    /* the width-64 build keeps the kernel's name (its descriptor is given explicitly) */
    char buf[96];
    const char *want = expected_kernel(&r, c, mode, buf, sizeof buf);
    const char *got = gp__last_kernel(GP__OP_ATTN_KVCACHE);
    ck_assert_msg(got && strcmp(got, want) == 0, "%s (%s): kernel %s, expected %s", c->name, mname,
                  got ? got : "(none)", want);
  }
  st = gp_device_synchronize();
  ck_assert_msg(st == GP_SUCCESS, "%s (%s): after the call: %s: %s", c->name, mname, gp_status_name(st),
                gp_last_error_message());
  void *kc = malloc(r.ncache * r.es), *vc = malloc(r.ncache * r.es);
  void *got_kc = malloc(r.ncache * r.es), *got_vc = malloc(r.ncache * r.es);
  ck_assert_int_eq(gp_memcpy(r.ho, r.dout, r.nq * r.es), GP_SUCCESS);
  if (r.dlse) ck_assert_int_eq(gp_memcpy(r.hlse, r.dlse, r.nlse * sizeof(float)), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(got_kc, r.dkc, r.ncache * r.es), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(got_vc, r.dvc, r.ncache * r.es), GP_SUCCESS);
  expected_cache(&r, c, kc, vc);
  /* NaN poison compares unequal as a value but equal as bytes: compare bytes */
  ck_assert_msg(memcmp(kc, got_kc, r.ncache * r.es) == 0, "%s (%s): k_cache differs from the expected append",
                c->name, mname);
  ck_assert_msg(memcmp(vc, got_vc, r.ncache * r.es) == 0, "%s (%s): v_cache differs from the expected append",
                c->name, mname);

  /* Reference: dense varlen attention over each sequence's logical keys. */
  void *k = malloc((size_t)(r.total_k * c->hkv * c->d) * r.es + 1);
  void *v = malloc((size_t)(r.total_k * c->hkv * c->d) * r.es + 1);
  int32_t cu_q[MAXB + 1], cu_k[MAXB + 1];
  for (int64_t b = 0; b <= c->batch; b++) cu_q[b] = (int32_t)(b * c->sq);
  gather_dense(&r, c, kc, vc, k, v, cu_k);
  gp_attention_desc_t rd;
  dense_desc(&rd, &r, c, r.hq, k, v, NULL, NULL, cu_q, cu_k);
  double *oref = (double *)malloc(r.nq * sizeof(double)), *obnd = (double *)malloc(r.nq * sizeof(double));
  double *lref = (double *)malloc(r.nlse * sizeof(double)), *lbnd = (double *)malloc(r.nlse * sizeof(double));
  ck_assert_int_eq(gp_ref_attention_fwd(&rd, cu_q, cu_k, oref, obnd, lref, lbnd), 0);

  gp_ref_cmp_t cmp;
  char buf[256];
  gp_ref_compare(&cmp, r.ho, c->dtype, oref, obnd, 0.0, r.nq); /* q's layout is the packed one */
  gp_ref_cmp_format(&cmp, buf, sizeof buf);
  const double tol = gp_ref_attention_rel_tol(c->dtype);
  printf("  %-36s %-8s splits %d: o: %s (rel tol %.2g)\n", c->name, mname, r.nsplit, buf, tol);
  ck_assert_msg(cmp.n_bad == 0, "%s (%s, seed %llu): o: %s", c->name, mname, (unsigned long long)g_seed, buf);
  ck_assert_msg(cmp.rel_norm_err <= tol, "%s (%s, seed %llu): o relative norm error %.3g > %.3g", c->name, mname,
                (unsigned long long)g_seed, cmp.rel_norm_err, tol);
  if (c->lse) { /* ours [b][h][i], the reference's varlen [h][b * sq + i] */
    float *lse = (float *)malloc(r.nlse * sizeof(float));
    for (int64_t b = 0; b < c->batch; b++)
      for (int64_t h = 0; h < c->hq; h++)
        for (int64_t i = 0; i < c->sq; i++) lse[(h * c->batch + b) * c->sq + i] = r.hlse[(b * c->hq + h) * c->sq + i];
    gp_ref_compare(&cmp, lse, GP_F32, lref, lbnd, 0.0, r.nlse);
    gp_ref_cmp_format(&cmp, buf, sizeof buf);
    ck_assert_msg(cmp.n_bad == 0, "%s (%s, seed %llu): lse: %s", c->name, mname, (unsigned long long)g_seed, buf);
    free(lse);
  }
  free(k), free(v), free(oref), free(obnd), free(lref), free(lbnd), free(kc), free(vc), free(got_kc), free(got_vc);
  kv_free(&r);
}

START_TEST(test_host) { run_case(&cases[_i], M_DEFAULT, (uint64_t)_i); }
END_TEST

START_TEST(test_portable) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  run_case(&cases[_i], M_PORTABLE, (uint64_t)_i);
}
END_TEST

START_TEST(test_warp64) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  run_case(&cases[_i], M_W64, (uint64_t)_i);
}
END_TEST

START_TEST(test_sm80) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  run_case(&cases[_i], M_SM80, (uint64_t)_i);
}
END_TEST

/* The cases the sm_80 kernel must take (so its mode tests it): decode gqa32/8 d128, the
 * long mqa decode with splits, prefill crossing pages, windows, head_dim 32. */
START_TEST(test_sm80_takes) {
  static const int taken[] = {0, 1, 3, 4, 6, 9, 10};
  char buf[96];
  for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
    kvrun_t r;
    kv_prepare(&r, &cases[taken[i]], 500 + i);
    ck_assert_msg(strstr(expected_kernel(&r, &cases[taken[i]], M_SM80, buf, sizeof buf), "_sm80_") != NULL,
                  "%s: not an sm_80 case", cases[taken[i]].name);
    kv_free(&r);
  }
}
END_TEST

/* Rows of q that are not 16-byte aligned (q one element past an aligned address): the
 * sm_80 entry declines and the portable kernels run the call, with the same result as
 * the aligned call within both bounds' sum. */
START_TEST(test_sm80_unaligned) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  const kvcase_t *c = &cases[6]; /* f16 d64: the sm_80 kernel takes it aligned */
  kvrun_t r;
  kv_prepare(&r, c, 600);
  ck_assert_int_eq(kv_call(&r, M_SM80), GP_SUCCESS);
  ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
  ck_assert_str_eq(gp__last_kernel(GP__OP_ATTN_KVCACHE), "gp__attention_kvcache_fwd_sm80_f16_d64");
  void *aligned = malloc(r.nq * r.es), *shifted = malloc(r.nq * r.es);
  ck_assert_int_eq(gp_memcpy(aligned, r.dout, r.nq * r.es), GP_SUCCESS);
  void *q1 = NULL;
  ck_assert_int_eq(gp_malloc(&q1, (r.nq + 8) * r.es), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy((char *)q1 + r.es, r.hq, r.nq * r.es), GP_SUCCESS);
  r.desc.q = (char *)q1 + r.es;
  ck_assert_int_eq(kv_call(&r, M_SM80), GP_SUCCESS);
  ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
  char buf[96];
  ck_assert_str_eq(gp__last_kernel(GP__OP_ATTN_KVCACHE), expected_kernel(&r, c, M_SM80, buf, sizeof buf));
  ck_assert_str_eq(gp__last_kernel(GP__OP_ATTN_KVCACHE), "gp__attention_kvcache_fwd_portable");
  ck_assert_int_eq(gp_memcpy(shifted, r.dout, r.nq * r.es), GP_SUCCESS);
  size_t diff = 0;
  for (size_t i = 0; i < r.nq; i++) /* both within a few units of f16 rounding of each other */
    diff += fabs(gp_ref_load(aligned, c->dtype, i) - gp_ref_load(shifted, c->dtype, i)) > 4e-3;
  ck_assert_msg(diff == 0, "%zu elements of the portable result differ from the sm_80 one", diff);
  printf("  sm80 declines unaligned q: the portable kernels ran, same output\n");
  gp_free(q1);
  free(aligned), free(shifted);
  kv_free(&r);
}
END_TEST

START_TEST(test_mfma) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  run_case(&cases[_i], M_MFMA, (uint64_t)_i);
}
END_TEST

/* The cases the MFMA kernel must take (so its mode tests it): decode gqa32/8 d128, the
 * long mqa decode with splits, first prefill, prefill crossing pages, windows, two row
 * tiles that split a query's group. */
START_TEST(test_mfma_takes) {
  static const int taken[] = {0, 1, 3, 4, 6, 9, 10, 11};
  char buf[96];
  for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
    kvrun_t r;
    kv_prepare(&r, &cases[taken[i]], 600 + i);
    ck_assert_msg(strstr(expected_kernel(&r, &cases[taken[i]], M_MFMA, buf, sizeof buf), "_mfma_") != NULL,
                  "%s: not an MFMA case", cases[taken[i]].name);
    kv_free(&r);
  }
}
END_TEST

/* One small case per kvcache table entry, naming the kernel (run by make check-dispatch). */
START_TEST(test_every_kernel) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  run_case(&cases[4], M_DEFAULT, 4);
  run_case(&cases[4], M_PORTABLE, 4);
  run_case(&cases[6], M_SM80, 6); /* the sm80 entry */
  run_case(&cases[6], M_MFMA, 6); /* the mfma entry */
}
END_TEST

/* The same call twice gives the same bits, for each split count; and the paged result
 * equals dense gp_attention_fwd over the same logical K/V (within both bounds). */
START_TEST(test_deterministic_and_dense) {
  const int mode = _i;
  if (mode != M_DEFAULT && gp_backend() != GP_BACKEND_CPU) return;
  kvcase_t c = cases[5]; /* mixed lengths */
  c.snew = 0;            /* the cache stays the same between calls */
  if (mode == M_SM80) c.dtype = GP_F16, c.d = 64; /* a case the sm_80 kernel takes */
  for (int splits = 1; splits <= 9; splits += 4) {
    c.splits = splits;
    kvrun_t r;
    kv_prepare(&r, &c, 100 + (uint64_t)splits);
    ck_assert_int_eq(kv_call(&r, mode), GP_SUCCESS);
    ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
    if (gp_backend() == GP_BACKEND_CPU) {
      char buf[96];
      const char *want = expected_kernel(&r, &c, mode, buf, sizeof buf), *got = gp__last_kernel(GP__OP_ATTN_KVCACHE);
      ck_assert_msg(got && strcmp(got, want) == 0, "%s: kernel %s, expected %s", mode_names[mode], got ? got : "(none)",
                    want);
    }
    void *first = malloc(r.nq * r.es), *second = malloc(r.nq * r.es);
    ck_assert_int_eq(gp_memcpy(first, r.dout, r.nq * r.es), GP_SUCCESS);
    ck_assert_int_eq(gp_memset(r.dout, 0, r.nq * r.es), GP_SUCCESS);
    ck_assert_int_eq(kv_call(&r, mode), GP_SUCCESS);
    ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
    ck_assert_int_eq(gp_memcpy(second, r.dout, r.nq * r.es), GP_SUCCESS);
    ck_assert_msg(memcmp(first, second, r.nq * r.es) == 0, "%s, %d splits: two runs differ", mode_names[mode], splits);

    /* dense on the device over the gathered K/V */
    int32_t cu_q[MAXB + 1], cu_k[MAXB + 1];
    for (int64_t b = 0; b <= c.batch; b++) cu_q[b] = (int32_t)(b * c.sq);
    const size_t nk = (size_t)(r.total_k * c.hkv * c.d);
    void *k = malloc(nk * r.es), *v = malloc(nk * r.es);
    gather_dense(&r, &c, r.hkc, r.hvc, k, v, cu_k);
    void *dk = upload(k, nk * r.es), *dv = upload(v, nk * r.es), *dod = upload(first, r.nq * r.es);
    int32_t *dcq = (int32_t *)upload(cu_q, sizeof cu_q), *dck = (int32_t *)upload(cu_k, sizeof cu_k);
    gp_attention_desc_t dd;
    dense_desc(&dd, &r, &c, r.dq, dk, dv, dod, NULL, dcq, dck);
    gp__cpu_mode_set(GP__OP_ATTN_FWD, mode_cpu[mode]);
    ck_assert_int_eq(gp_attention_fwd(NULL, &dd), GP_SUCCESS);
    gp__cpu_mode_set(GP__OP_ATTN_FWD, -1);
    ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
    void *dense = malloc(r.nq * r.es);
    ck_assert_int_eq(gp_memcpy(dense, dod, r.nq * r.es), GP_SUCCESS);
    double *oref = (double *)malloc(r.nq * sizeof(double)), *obnd = (double *)malloc(r.nq * sizeof(double));
    gp_attention_desc_t rd;
    dense_desc(&rd, &r, &c, r.hq, k, v, NULL, NULL, cu_q, cu_k);
    ck_assert_int_eq(gp_ref_attention_fwd(&rd, cu_q, cu_k, oref, obnd, NULL, NULL), 0);
    for (size_t i = 0; i < r.nq; i++) {
      const double a = gp_ref_load(first, c.dtype, i), b = gp_ref_load(dense, c.dtype, i);
      ck_assert_msg(fabs(a - b) <= 2.0 * obnd[i], "%s, %d splits: element %zu paged %.9g, dense %.9g (bound %.3g)",
                    mode_names[mode], splits, i, a, b, 2.0 * obnd[i]);
    }
    printf("  deterministic and = dense: %s, %d splits\n", mode_names[mode], splits);
    free(first), free(second), free(k), free(v), free(dense), free(oref), free(obnd);
    gp_free(dk), gp_free(dv), gp_free(dod), gp_free(dcq), gp_free(dck);
    kv_free(&r);
  }
}
END_TEST

/* ---- bad block tables and cache lengths ---------------------------------------------------- */

/* Breaks a case's inputs (kind: 0 a table entry past the cache, 1 a negative entry, 2 a
 * cache length beyond the table, 3 a negative cache length) for sequence 1; the call fails
 * naming sequence 1, on every implementation, and the cache is untouched. With appends
 * the append kernel meets the fault first; without, the attention kernel does. */
START_TEST(test_bad_table) {
  const int mode = _i / 8, kind = _i % 4, append = _i / 4 % 2; /* sm80, mfma: the no-append case is their kernel's */
  if (mode != M_DEFAULT && gp_backend() != GP_BACKEND_CPU) return;
  const kvcase_t *c = append ? &cases[4] : &cases[6]; /* 2 sequences, with and without appends */
  kvrun_t r;
  kv_prepare(&r, c, 200 + (uint64_t)_i);
  int32_t *table = r.table, *cached = r.cached;
  const int64_t last = (r.sk[1] - 1) / c->page; /* sequence 1's last page column */
  if (kind == 0) table[1 * r.maxb + last] = (int32_t)r.nblocks;
  if (kind == 1) table[1 * r.maxb + 0] = -1;
  if (kind == 2) cached[1] = (int32_t)(r.maxb * c->page - c->snew + 1);
  if (kind == 3) cached[1] = -3;
  ck_assert_int_eq(gp_memcpy(r.dtable, table, (size_t)(c->batch * r.maxb) * sizeof(int32_t)), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(r.dcached, cached, (size_t)c->batch * sizeof(int32_t)), GP_SUCCESS);
  gp_status_t st = kv_call(&r, mode);
  if (st == GP_SUCCESS) st = gp_device_synchronize();
  const gp_status_t want = mode == M_DEFAULT ? GP_ERROR_INVALID_VALUE : GP_ERROR_LAUNCH_FAILED;
  const char *msg = gp_last_error_message();
  printf("  bad kvcache %d%s %-8s %s: %s\n", kind, append ? " (append)" : "", mode_names[mode], gp_status_name(st), msg);
  ck_assert_msg(st == want, "kind %d (%s): %s, expected %s (%s)", kind, mode_names[mode], gp_status_name(st),
                gp_status_name(want), msg);
  ck_assert_msg(strstr(msg, "sequence 1") != NULL, "kind %d (%s): the message names no sequence: %s", kind,
                mode_names[mode], msg);
  if (gp_backend() == GP_BACKEND_CPU) { /* a fault is sticky on a GPU; the cpu device goes on */
    void *kc = malloc(r.ncache * r.es);
    ck_assert_int_eq(gp_memcpy(kc, r.dkc, r.ncache * r.es), GP_SUCCESS);
    if (mode == M_DEFAULT) /* checked before anything is written */
      ck_assert_msg(memcmp(kc, r.hkc, r.ncache * r.es) == 0, "kind %d: the cache was written", kind);
    free(kc);
  }
  kv_free(&r);
}
END_TEST

/* ---- argument checks ------------------------------------------------------------------------ */

static void expect(const gp_attention_kvcache_desc_t *d, void *ws, size_t bytes, gp_status_t want,
                   const char *needle) {
  const gp_status_t st = gp_attention_fwd_kvcache(NULL, d, ws, bytes);
  const char *msg = gp_last_error_message();
  ck_assert_msg(st == want, "expected %s, got %s (%s)", gp_status_name(want), gp_status_name(st), msg);
  ck_assert_msg(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg, needle);
}

START_TEST(test_errors) {
  kvrun_t r;
  kv_prepare(&r, &cases[4], 300);
  gp_attention_kvcache_desc_t d = r.desc;
  ck_assert_int_eq(gp_attention_fwd_kvcache(NULL, NULL, NULL, 0), GP_ERROR_INVALID_VALUE);
  size_t bytes;
  ck_assert_int_eq(gp_attention_kvcache_workspace_size(&d, NULL, NULL), GP_ERROR_INVALID_VALUE);
  d.page_size = 24;
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "page_size");
  ck_assert_int_eq(gp_attention_kvcache_workspace_size(&d, NULL, &bytes), GP_ERROR_INVALID_VALUE);
  d = r.desc, d.page_size = 0;
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "page_size");
  d = r.desc, d.v_new = NULL;
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "v_new");
  d = r.desc, d.k_new = d.v_new = NULL;
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "seqlen_new");
  d = r.desc, d.block_table = NULL;
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "block_table");
  d = r.desc, d.cache_seqlens = NULL;
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "cache_seqlens");
  d = r.desc, d.heads_q = 3, d.heads_kv = 2;
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "heads_q");
  d = r.desc, d.head_dim = 300;
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "head_dim");
  d = r.desc, d.block_table_batch_stride = 1;
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "block_table_batch_stride");
  d = r.desc, d.num_splits = 257;
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "num_splits");
  d = r.desc, d.window_left = -2;
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "window_left");
  d = r.desc, d.dtype = GP_F64;
  expect(&d, NULL, 0, GP_ERROR_NOT_SUPPORTED, "dtype");
  d = r.desc, d.q = (const char *)r.dq + 1;
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "desc->q");
  d = r.desc, d.num_blocks = r.nblocks + 1; /* the cache would run past its allocation */
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "k_cache");
  d = r.desc, d.max_blocks_per_seq = r.maxb + 1; /* so would the block table */
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "block_table");
  /* split-KV without its workspace */
  d = r.desc, d.num_splits = 3;
  ck_assert_int_eq(gp_attention_kvcache_workspace_size(&d, NULL, &bytes), GP_SUCCESS);
  ck_assert(bytes > 0);
  expect(&d, NULL, 0, GP_ERROR_INVALID_VALUE, "workspace");
  void *ws = NULL;
  ck_assert_int_eq(gp_malloc(&ws, bytes), GP_SUCCESS);
  expect(&d, ws, bytes - 4, GP_ERROR_INVALID_VALUE, "workspace_bytes");
  expect(&d, (char *)ws + 4, bytes - 4, GP_ERROR_INVALID_VALUE, "workspace");
  ck_assert_int_eq(gp_attention_fwd_kvcache(NULL, &d, ws, bytes), GP_SUCCESS);
  ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
  /* a bad stream */
  ck_assert_int_eq(gp_attention_fwd_kvcache((gp_stream_t)(uintptr_t)0x1000, &r.desc, r.ws, r.ws_bytes),
                   GP_ERROR_INVALID_HANDLE);
  gp_free(ws);
  kv_free(&r);
}
END_TEST

/* gpuport's split choice: no split when the work fills the device, splits for one long
 * sequence with one key/value head, and never more than the context's 128-key blocks. */
START_TEST(test_split_choice) {
  kvrun_t r;
  kv_prepare(&r, &cases[1], 400); /* batch 2, mqa, 4097 keys */
  gp_attention_kvcache_desc_t d = r.desc;
  gp_device_props_t props;
  gp_device_props_init(&props);
  ck_assert_int_eq(gp_device_get_props(&props, 0), GP_SUCCESS);
  int splits;
  size_t bytes;
  d.num_splits = 0, d.batch = 1, d.heads_q = d.heads_kv = 1;
  ck_assert_int_eq(gp_attention_kvcache_workspace_size(&d, &splits, &bytes), GP_SUCCESS);
  printf("  split choice: %d multiprocessors, 1 sequence, 1 head, %lld keys: %d splits\n",
         props.multiprocessor_count, (long long)(d.max_blocks_per_seq * d.page_size), splits);
  if (props.multiprocessor_count >= 2) ck_assert_int_gt(splits, 1);
  ck_assert_int_le(splits, props.multiprocessor_count);
  d.batch = 2, d.heads_q = 32, d.heads_kv = 8 * props.multiprocessor_count;
  d.heads_q = d.heads_kv;
  ck_assert_int_eq(gp_attention_kvcache_workspace_size(&d, &splits, &bytes), GP_SUCCESS);
  ck_assert_int_eq(splits, 1);
  ck_assert_int_eq(bytes, 0);
  kv_free(&r);
}
END_TEST

static Suite *kvcache_suite(void) {
  Suite *s = suite_create("attention_kvcache");
  TCase *tc = tcase_create("errors");
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_split_choice);
  suite_add_tcase(s, tc);
  tc = tcase_create("host");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_host, 0, NCASES);
  suite_add_tcase(s, tc);
  tc = tcase_create("portable");
  tcase_set_timeout(tc, 240);
  tcase_add_loop_test(tc, test_portable, 0, NCASES);
  suite_add_tcase(s, tc);
  tc = tcase_create("warp64");
  tcase_set_timeout(tc, 240);
  tcase_add_loop_test(tc, test_warp64, 0, NCASES);
  suite_add_tcase(s, tc);
  tc = tcase_create("sm80");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, test_sm80_takes);
  tcase_add_test(tc, test_sm80_unaligned);
  tcase_add_loop_test(tc, test_sm80, 0, NCASES);
  suite_add_tcase(s, tc);
  tc = tcase_create("mfma");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, test_mfma_takes);
  tcase_add_loop_test(tc, test_mfma, 0, NCASES);
  suite_add_tcase(s, tc);
  tc = tcase_create("determinism");
  tcase_set_timeout(tc, 240);
  tcase_add_loop_test(tc, test_deterministic_and_dense, M_DEFAULT, M_SM80 + 1);
  suite_add_tcase(s, tc);
  tc = tcase_create("bad_table");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_bad_table, 0, 5 * 8);
  suite_add_tcase(s, tc);
  tc = tcase_create("dispatch"); /* run by make check-dispatch */
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_every_kernel);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  print_seed("test_attention_kvcache", (unsigned long long)g_seed);
  return run_suite("test_attention_kvcache", kvcache_suite());
}
