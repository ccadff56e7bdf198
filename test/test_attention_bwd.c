/*
 * test_attention_bwd.c - gp_attention_bwd against the float64 reference backward
 * (ref/ref_attention.h), and that reference against central finite differences of the
 * float64 forward.
 *
 * Every case draws fresh inputs q, k, v and dO (uniform in [-1, 1), never zero) from the
 * seed printed at start (replay with GP_TEST_SEED=<seed>), runs the forward once for o
 * and lse, computes the reference once, then for each implementation: poisons dq, dk,
 * dv (NaN, and every gap of their strided layouts) and the workspace (NaN bytes), runs
 * the backward, and checks every gradient element against its bound, the relative norm
 * of each gradient's error, and that nothing outside the gradients was written. On the
 * cpu backend the implementations are the host one, the portable dialect kernels under
 * the SIMT executor (GP_CPU_ATTENTION=portable, warp width 32 as on CUDA) and a width-64
 * build of the same kernels (as HIP runs them; the Makefile's W64_FLAGS build of
 * kernels/portable/attention_bwd_portable.cu), and the sm_80 main kernel (kernels/sm80/) between the portable
 * pre- and postprocess kernels with its mma.sync, ldmatrix and cp.async emulated
 * (GP_CPU_ATTENTION=sm80, warp width 32 only: an NVIDIA kernel; cases it does not take
 * run the portable kernels there, as on a GPU), and the AMD MFMA kernels (kernels/mfma/) (dq, then
 * dk/dv) at wave64 with each MFMA emulated (GP_CPU_ATTENTION=mfma), for every case they
 * take: f16/bf16 at head_dim 32, 64 and 128, causal with seqlen_q != seqlen_k, GQA/MQA,
 * sliding windows, varlen, packed layouts, deterministic mode.
 * Deterministic mode runs twice and the two results must be equal bit for bit (the
 * host implementation's two runs use different thread counts).
 *
 * Shapes follow the FlashAttention test suite's kinds (seqlen pairs such as (113, 203),
 * (128, 217), (1024, 1023); head dims 32 to 256; MQA/GQA; causal and local windows;
 * varlen with unequal lengths), at head counts small enough for CI. The (1024, 1023) case
 * runs on the host implementation only, with one head.
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
#include "attn_bad_varlen.h"
#include "kernels/sm80/sm80.h"
#include "ref.h"
#include "ref_attention.h"

#if defined(GP_BUILD_CPU)
GP_KERNEL_DECLARE(gp__attention_bwd_portable_pre_w64);
GP_KERNEL_DECLARE(gp__attention_bwd_portable_main_w64);
GP_KERNEL_DECLARE(gp__attention_bwd_portable_dq_w64);
GP_KERNEL_DECLARE(gp__attention_bwd_portable_dkv_w64);
GP_KERNEL_DECLARE(gp__attention_bwd_portable_pre);
GP_KERNEL_DECLARE(gp__attention_bwd_portable_main);
GP_KERNEL_DECLARE(gp__attention_bwd_portable_dq);
GP_KERNEL_DECLARE(gp__attention_bwd_portable_dkv);
GP_KERNEL_DECLARE(kt_attn_bwd_skip);
#endif

enum mode { M_DEFAULT = 0, M_PORTABLE = 1, M_W64 = 2, M_SM80 = 3, M_MFMA = 4 };
static const char *const mode_names[] = {"host", "portable", "warp64", "sm80", "mfma"};
/* The CPU mode (GP_CPU_ATTENTION) each test mode sets; warp64 runs given kernel builds. */
static const int mode_cpu[] = {GP__CPU_HOST, GP__CPU_PORTABLE, GP__CPU_HOST, GP__CPU_SM80, GP__CPU_MFMA};

static uint64_t g_seed;

enum layout {
  L_DEFAULT = 0, /* [batch, seq, heads, dim] */
  L_QKV = 1,     /* q, k, v slices of one packed [batch, seq, hq + 2 hkv, dim] tensor
                    (so dq, dk, dv are slices of one packed gradient); o padded */
  L_BHSD = 2,    /* [batch, heads, seq, dim] */
  L_PAD = 3      /* every tensor with gaps between heads, rows and sequences */
};

typedef struct bcase {
  const char *name;
  gp_dtype_t dtype;
  int64_t batch, sq, sk, hq, hkv, d, dv;
  int causal;
  int64_t wl, wr;
  int layout;
  float scale;
  int portable;          /* also the portable kernels on the executor (warp 32 and 64) */
  int det;               /* also deterministic mode, twice, compared bit for bit */
  const int32_t *lens_q; /* varlen: per-sequence lengths, else NULL */
  const int32_t *lens_k;
  int own_stream;        /* a created stream with asynchronous copies */
} bcase_t;

static const int32_t vq1[] = {17, 64, 1}, vk1[] = {40, 5, 33};
static const int32_t vq2[] = {50, 13}, vk2[] = {50, 100};
static const int32_t vq3[] = {9, 1, 30, 0}, vk3[] = {12, 31, 0, 16};

#define NOWIN -1, -1
static const bcase_t cases[] = {
    /* name                          dtype    b  sq    sk   hq hkv  d   dv c  window  layout   scale port det */
    {"f16 d64 113x203 gqa causal",   GP_F16,  2, 113,  203, 4, 2, 64,  0, 1, NOWIN,  L_DEFAULT, 0, 1, 1, NULL, NULL, 0},
    {"bf16 d128 128x217 mqa",        GP_BF16, 1, 128,  217, 3, 1, 128, 0, 0, NOWIN,  L_DEFAULT, 0, 1, 0, NULL, NULL, 1},
    {"f32 d32 113x203 window",       GP_F32,  1, 113,  203, 2, 2, 32,  0, 0, 32, 8,  L_DEFAULT, 0, 1, 1, NULL, NULL, 0},
    {"f16 d256 64x97 gqa window",    GP_F16,  1, 64,   97,  2, 1, 256, 0, 0, 16, 8,  L_DEFAULT, 0, 1, 0, NULL, NULL, 0},
    {"bf16 d96 128x217 causal",      GP_BF16, 1, 128,  217, 2, 2, 96,  0, 1, NOWIN,  L_DEFAULT, 0, 1, 0, NULL, NULL, 0},
    {"f16 d192 80x80 causal+win",    GP_F16,  1, 80,   80,  2, 1, 192, 0, 1, 24, -1, L_DEFAULT, 0, 1, 0, NULL, NULL, 0},
    {"f32 d64/40 77x33 causal sq>sk", GP_F32, 1, 77,   33,  3, 1, 64,  40, 1, NOWIN, L_DEFAULT, 0.3f, 1, 1, NULL, NULL, 0},
    {"bf16 d32 40x400 band sk>>sq",  GP_BF16, 1, 40,   400, 2, 2, 32,  0, 0, 3, 2,   L_DEFAULT, 0, 1, 0, NULL, NULL, 0},
    {"f16 d64 varlen causal gqa",    GP_F16,  3, 64,   40,  4, 2, 64,  0, 1, NOWIN,  L_DEFAULT, 0, 1, 1, vq1, vk1, 0},
    {"bf16 d128 varlen mqa window",  GP_BF16, 2, 50,   100, 2, 1, 128, 0, 0, 8, 8,   L_DEFAULT, 0, 1, 0, vq2, vk2, 1},
    {"f32 d72 varlen empty seqs",    GP_F32,  4, 30,   31,  2, 2, 72,  0, 0, NOWIN,  L_DEFAULT, 0, 1, 0, vq3, vk3, 0},
    {"f16 d64 qkv-packed causal",    GP_F16,  2, 96,   96,  4, 2, 64,  0, 1, NOWIN,  L_QKV,     0, 1, 0, NULL, NULL, 0},
    {"f32 d32 bhsd layout",          GP_F32,  2, 33,   77,  2, 2, 32,  0, 0, NOWIN,  L_BHSD,    0, 1, 0, NULL, NULL, 0},
    {"bf16 d40 padded gqa",          GP_BF16, 2, 45,   31,  4, 2, 40,  0, 0, NOWIN,  L_PAD,     0, 1, 0, NULL, NULL, 0},
    {"f32 d96 1x1",                  GP_F32,  3, 1,    1,   2, 2, 96,  0, 0, NOWIN,  L_DEFAULT, 0, 1, 0, NULL, NULL, 0},
    /* the host tiles' edges (64 query rows, 128 keys): partial tiles, head_dim 80, GQA */
    {"f32 d80 150x200 gqa causal",   GP_F32,  1, 150,  200, 4, 2, 80,  0, 1, NOWIN,  L_DEFAULT, 0, 0, 1, NULL, NULL, 0},
    {"bf16 d256 70x130 causal",      GP_BF16, 1, 70,   130, 2, 1, 256, 0, 1, NOWIN,  L_DEFAULT, 0, 0, 0, NULL, NULL, 0},
    {"f16 d96/24 129x65 gqa",        GP_F16,  1, 129,  65,  4, 2, 96,  24, 0, NOWIN, L_DEFAULT, 0, 0, 0, NULL, NULL, 0},
    {"bf16 d64 1024x1023 causal",    GP_BF16, 1, 1024, 1023, 1, 1, 64, 0, 1, NOWIN,  L_DEFAULT, 0, 0, 1, NULL, NULL, 0},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* ---- helpers ------------------------------------------------------------------------ */

typedef struct strides {
  int64_t bs, ss, hs;
} strides_t;

/* One layout: q, k and v (and dq, dk, dv, at the same offsets) in one buffer of nin
 * elements; o and dO in buffers of no elements. */
typedef struct geom {
  int varlen;
  int64_t dv, nb, rows_q, rows_k; /* nb: batches in the allocation (1 with varlen) */
  int32_t cu_q[8], cu_k[8];
  strides_t tq, tk, tv, to;
  size_t q_off, k_off, v_off, nin, no, nlse;
} geom_t;

/* Elements spanned by a tensor with these strides. */
static size_t span(const strides_t *t, int64_t nb, int64_t rows, int64_t heads, int64_t dim) {
  return (size_t)((nb - 1) * t->bs + (rows - 1) * t->ss + (heads - 1) * t->hs + dim);
}

static strides_t dense(int64_t rows, int64_t heads, int64_t dim) {
  return (strides_t){rows * heads * dim, heads * dim, dim};
}

static void geom_init(geom_t *g, const bcase_t *c) {
  memset(g, 0, sizeof(*g));
  g->varlen = c->lens_q != NULL;
  g->dv = c->dv ? c->dv : c->d;
  if (g->varlen)
    for (int64_t b = 0; b < c->batch; b++) {
      g->cu_q[b + 1] = g->cu_q[b] + c->lens_q[b];
      g->cu_k[b + 1] = g->cu_k[b] + c->lens_k[b];
    }
  g->rows_q = g->varlen ? g->cu_q[c->batch] : c->sq;
  g->rows_k = g->varlen ? g->cu_k[c->batch] : c->sk;
  g->nb = g->varlen ? 1 : c->batch;
  const int64_t rq = g->rows_q > 0 ? g->rows_q : 1, rk = g->rows_k > 0 ? g->rows_k : 1;
  if (c->layout == L_QKV) {
    const int64_t w = (c->hq + 2 * c->hkv) * c->d;
    g->tq = g->tk = g->tv = (strides_t){rq * w, w, c->d};
    g->k_off = (size_t)(c->hq * c->d), g->v_off = (size_t)((c->hq + c->hkv) * c->d);
    g->nin = (size_t)(g->nb * rq * w);
    g->to = (strides_t){0, 0, g->dv + 5};
    g->to.ss = c->hq * g->to.hs + 7;
    g->to.bs = rq * g->to.ss + 11;
  } else {
    if (c->layout == L_BHSD) {
      g->tq = (strides_t){c->hq * rq * c->d, c->d, rq * c->d};
      g->tk = (strides_t){c->hkv * rk * c->d, c->d, rk * c->d};
      g->tv = (strides_t){c->hkv * rk * g->dv, g->dv, rk * g->dv};
      g->to = (strides_t){c->hq * rq * g->dv, g->dv, rq * g->dv};
    } else if (c->layout == L_PAD) {
      g->tq.hs = c->d + 3, g->tq.ss = c->hq * g->tq.hs + 5, g->tq.bs = rq * g->tq.ss + 7;
      g->tk.hs = c->d + 1, g->tk.ss = c->hkv * g->tk.hs + 2, g->tk.bs = rk * g->tk.ss + 3;
      g->tv.hs = g->dv + 2, g->tv.ss = c->hkv * g->tv.hs + 1, g->tv.bs = rk * g->tv.ss + 9;
      g->to.hs = g->dv + 4, g->to.ss = c->hq * g->to.hs + 3, g->to.bs = rq * g->to.ss + 1;
    } else {
      g->tq = dense(rq, c->hq, c->d), g->tk = dense(rk, c->hkv, c->d);
      g->tv = dense(rk, c->hkv, g->dv), g->to = dense(rq, c->hq, g->dv);
    }
    /* A gap of 3 to 10 elements between tensors, each starting 16-byte aligned (as the
     * sm_80 kernels' copies need; the other layouts and the forward's tests cover the
     * fallback of unaligned tensors to the portable kernels). */
    g->k_off = (span(&g->tq, g->nb, rq, c->hq, c->d) + 3 + 7) / 8 * 8;
    g->v_off = (g->k_off + span(&g->tk, g->nb, rk, c->hkv, c->d) + 3 + 7) / 8 * 8;
    g->nin = g->v_off + span(&g->tv, g->nb, rk, c->hkv, g->dv);
  }
  g->no = span(&g->to, g->nb, rq, c->hq, g->dv);
  g->nlse = (size_t)(g->varlen ? c->hq * rq : c->batch * c->hq * c->sq);
  if (g->varlen) g->tq.bs = g->tk.bs = g->tv.bs = g->to.bs = 0;
}

static void *dev_upload(const void *host, size_t bytes, gp_stream_t s, int async) {
  void *p = NULL;
  ck_assert_int_eq(gp_malloc(&p, bytes), GP_SUCCESS);
  if (async)
    ck_assert_int_eq(gp_memcpy_async(p, host, bytes, s), GP_SUCCESS);
  else
    ck_assert_int_eq(gp_memcpy(p, host, bytes), GP_SUCCESS);
  return p;
}

static gp_status_t sync_and_read(gp_stream_t s, int async, void *host, const void *dev, size_t bytes) {
  if (async) {
    gp_status_t st = gp_memcpy_async(host, dev, bytes, s);
    return st != GP_SUCCESS ? st : gp_stream_synchronize(s);
  }
  gp_status_t st = gp_device_synchronize();
  return st != GP_SUCCESS ? st : gp_memcpy(host, dev, bytes);
}

/* Everything one case needs across its runs. */
typedef struct run {
  const bcase_t *c;
  geom_t g;
  gp_stream_t s;
  size_t es;
  void *hin, *hdo, *hgrad;      /* host: inputs, dO, gradients read back */
  void *din, *ddo, *dout, *dgrad, *dws;
  float *dlse;
  int32_t *dcu_q, *dcu_k;
  size_t ws_bytes;
  gp_attention_desc_t desc;
  double *ref[3], *bnd[3];      /* dq, dk, dv: dense reference and bounds */
  size_t nref[3];
} run_t;

static const char *const grad_names[] = {"dq", "dk", "dv"};

/* id picks the inputs' seed. */
static void setup(run_t *r, const bcase_t *c, uint64_t id) {
  memset(r, 0, sizeof(*r));
  r->c = c;
  geom_t *g = &r->g;
  geom_init(g, c);
  r->es = gp_dtype_size(c->dtype);
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ id * 0x9e3779b97f4a7c15ull);
  if (c->own_stream) ck_assert_int_eq(gp_stream_create(&r->s), GP_SUCCESS);

  r->hin = malloc(g->nin * r->es);
  r->hdo = malloc(g->no * r->es);
  r->hgrad = malloc(g->nin * r->es);
  gp_ref_fill(r->hin, c->dtype, g->nin, &rng, -1.0, 1.0);
  gp_ref_fill(r->hdo, c->dtype, g->no, &rng, -1.0, 1.0);
  r->din = dev_upload(r->hin, g->nin * r->es, r->s, c->own_stream);
  r->ddo = dev_upload(r->hdo, g->no * r->es, r->s, c->own_stream);
  ck_assert_int_eq(gp_malloc(&r->dout, g->no * r->es), GP_SUCCESS);
  ck_assert_int_eq(gp_malloc((void **)&r->dlse, g->nlse * sizeof(float)), GP_SUCCESS);
  ck_assert_int_eq(gp_malloc(&r->dgrad, g->nin * r->es), GP_SUCCESS);
  if (g->varlen) {
    r->dcu_q = (int32_t *)dev_upload(g->cu_q, sizeof(g->cu_q), r->s, c->own_stream);
    r->dcu_k = (int32_t *)dev_upload(g->cu_k, sizeof(g->cu_k), r->s, c->own_stream);
  }

  gp_attention_desc_t *d = &r->desc;
  gp_attention_desc_init(d);
  d->dtype = c->dtype;
  d->batch = c->batch, d->seqlen_q = c->sq, d->seqlen_k = c->sk;
  d->heads_q = c->hq, d->heads_kv = c->hkv, d->head_dim = c->d, d->head_dim_v = c->dv;
  d->q = r->din;
  d->k = (const char *)r->din + g->k_off * r->es;
  d->v = (const char *)r->din + g->v_off * r->es;
  d->o = r->dout, d->lse = r->dlse;
  d->cu_seqlens_q = r->dcu_q, d->cu_seqlens_k = r->dcu_k;
  d->causal = c->causal, d->window_left = c->wl, d->window_right = c->wr;
  d->softmax_scale = c->scale;
  if (c->layout != L_DEFAULT) {
    d->q_batch_stride = g->tq.bs, d->q_seq_stride = g->tq.ss, d->q_head_stride = g->tq.hs;
    d->k_batch_stride = g->tk.bs, d->k_seq_stride = g->tk.ss, d->k_head_stride = g->tk.hs;
    d->v_batch_stride = g->tv.bs, d->v_seq_stride = g->tv.ss, d->v_head_stride = g->tv.hs;
    d->o_batch_stride = g->to.bs, d->o_seq_stride = g->to.ss, d->o_head_stride = g->to.hs;
  }
  /* Workspace: the larger of the two modes' needs (each run asks again). */
  size_t b0 = 0, b1 = 0;
  ck_assert_int_eq(gp_attention_bwd_workspace_size(d, &b0), GP_SUCCESS);
  d->deterministic = 1;
  ck_assert_int_eq(gp_attention_bwd_workspace_size(d, &b1), GP_SUCCESS);
  d->deterministic = 0;
  ck_assert_msg(b0 > 0 && b1 >= b0, "workspace sizes %zu (deterministic %zu)", b0, b1);
  r->ws_bytes = b1;
  ck_assert_int_eq(gp_malloc(&r->dws, r->ws_bytes), GP_SUCCESS);

  /* The forward, once: o and lse for every backward run. */
  gp__cpu_mode_set(GP__OP_ATTN_FWD, GP__CPU_HOST);
  gp_status_t st = gp_attention_fwd(r->s, d);
  ck_assert_msg(st == GP_SUCCESS, "%s: gp_attention_fwd: %s: %s", c->name, gp_status_name(st),
                gp_last_error_message());

  /* The reference, once, on the host copies (same strides). */
  gp_attention_desc_t rd = *d;
  rd.q = r->hin;
  rd.k = (const char *)r->hin + g->k_off * r->es;
  rd.v = (const char *)r->hin + g->v_off * r->es;
  const int32_t *cq = g->varlen ? g->cu_q : NULL, *ck = g->varlen ? g->cu_k : NULL;
  r->nref[0] = gp_ref_attention_rows(&rd, cq) * (size_t)(c->hq * c->d);
  r->nref[1] = gp_ref_attention_rows_k(&rd, ck) * (size_t)(c->hkv * c->d);
  r->nref[2] = gp_ref_attention_rows_k(&rd, ck) * (size_t)(c->hkv * g->dv);
  for (int t = 0; t < 3; t++) {
    r->ref[t] = (double *)malloc((r->nref[t] ? r->nref[t] : 1) * sizeof(double));
    r->bnd[t] = (double *)malloc((r->nref[t] ? r->nref[t] : 1) * sizeof(double));
  }
  ck_assert_int_eq(gp_ref_attention_bwd(&rd, cq, ck, r->hdo, r->ref[0], r->bnd[0], r->ref[1],
                                        r->bnd[1], r->ref[2], r->bnd[2]),
                   0);
}

static void teardown(run_t *r) {
  for (int t = 0; t < 3; t++) free(r->ref[t]), free(r->bnd[t]);
  free(r->hin), free(r->hdo), free(r->hgrad);
  gp_free(r->din), gp_free(r->ddo), gp_free(r->dout), gp_free(r->dlse), gp_free(r->dgrad);
  gp_free(r->dws);
  if (r->dcu_q) gp_free(r->dcu_q), gp_free(r->dcu_k);
  if (r->s) gp_stream_destroy(r->s);
}

/* Every row of a tensor at x (strides in 2-byte elements) starts 16-byte aligned. */
static int rows16(const void *x, const strides_t *t, int varlen) {
  return ((uintptr_t)x & 15u) == 0 && t->ss % 8 == 0 && t->hs % 8 == 0 && (varlen || t->bs % 8 == 0);
}

/* The kernel the cpu backend must choose for the backward in mode, from the rules each
 * family documents (src/attention_table.c, kernels/<family>/attention_<family>_host.c):
 * the sm_80 main kernel, the MFMA dq kernel, the portable main kernel, the host's. */
static const char *expected_kernel(const run_t *r, int mode, char *buf, size_t len) {
  const bcase_t *c = r->c;
  const geom_t *g = &r->g;
  const int half = c->dtype != GP_F32 && g->dv == c->d;
  const char *tn = c->dtype == GP_BF16 ? "bf16" : "f16";
  if (mode == M_DEFAULT) return gp__cpu_attn_simd() ? "cpu-attention-bwd-avx2" : "cpu-attention-bwd";
  if (mode == M_SM80 && half && (c->d == 32 || c->d == 64 || c->d == 96 || c->d == 128 || c->d == 256) &&
      rows16(r->desc.q, &g->tq, g->varlen) && rows16(r->desc.k, &g->tk, g->varlen) &&
      rows16(r->desc.v, &g->tv, g->varlen) && rows16(r->ddo, &g->to, g->varlen)) {
    snprintf(buf, len, "gp__attention_bwd_sm80_%s_d%lld", tn, (long long)c->d);
    return buf;
  }
  if (mode == M_MFMA && half && (c->d == 32 || c->d == 64 || c->d == 128)) {
    snprintf(buf, len, "gp__attention_bwd_mfma_%s_dq_d%lld", tn, (long long)c->d);
    return buf;
  }
  return "gp__attention_bwd_portable_main";
}

/* Poisons the gradient buffer and the workspace, runs the backward in mode, reads the
 * gradients back into r->hgrad. */
static void run_bwd(run_t *r, int mode, int det) {
  const bcase_t *c = r->c;
  gp_ref_poison(r->hgrad, c->dtype, r->g.nin);
  ck_assert_int_eq(gp_memcpy(r->dgrad, r->hgrad, r->g.nin * r->es), GP_SUCCESS);
  ck_assert_int_eq(gp_memset(r->dws, 0xff, r->ws_bytes), GP_SUCCESS); /* NaN in f32 */
  gp_attention_desc_t d = r->desc;
  d.deterministic = det;
  size_t need = 0;
  ck_assert_int_eq(gp_attention_bwd_workspace_size(&d, &need), GP_SUCCESS);
  ck_assert(need <= r->ws_bytes);
  void *dq = r->dgrad, *dk = (char *)r->dgrad + r->g.k_off * r->es;
  void *dv = (char *)r->dgrad + r->g.v_off * r->es;
  gp__cpu_mode_set(GP__OP_ATTN_BWD, mode_cpu[mode]);
  gp_status_t st;
  gp__last_kernel_reset();
#if defined(GP_BUILD_CPU)
  if (mode == M_W64) {
    const gp__attn_bwd_kernels_t k = {GP_KERNEL_REF(gp__attention_bwd_portable_pre_w64),
                                      GP_KERNEL_REF(gp__attention_bwd_portable_main_w64),
                                      GP_KERNEL_REF(gp__attention_bwd_portable_dq_w64),
                                      GP_KERNEL_REF(gp__attention_bwd_portable_dkv_w64)};
    st = gp__attention_bwd_kernels(r->s, &d, r->ddo, dq, dk, dv, r->dws, need, &k);
  } else
#endif
    st = gp_attention_bwd(r->s, &d, r->ddo, dq, dk, dv, r->dws, need);
  gp__cpu_mode_set(GP__OP_ATTN_BWD, -1);
  ck_assert_msg(st == GP_SUCCESS, "%s (%s): gp_attention_bwd: %s: %s", c->name, mode_names[mode],
                gp_status_name(st), gp_last_error_message());
  if (gp_backend() == GP_BACKEND_CPU) { /* the kernel that ran is the one the rules name */
    char want_buf[64];
    const char *want = expected_kernel(r, mode, want_buf, sizeof want_buf);
    const char *got = gp__last_kernel(GP__OP_ATTN_BWD);
    ck_assert_msg(got && strcmp(got, want) == 0, "%s (%s): kernel %s, expected %s", c->name, mode_names[mode],
                  got ? got : "(none)", want);
  }
  st = sync_and_read(r->s, c->own_stream, r->hgrad, r->dgrad, r->g.nin * r->es);
  ck_assert_msg(st == GP_SUCCESS, "%s (%s): after the call: %s: %s", c->name, mode_names[mode],
                gp_status_name(st), gp_last_error_message());
}

/* Gathers gradient t (0 dq, 1 dk, 2 dv) of r->hgrad into dense [rows][heads][dim],
 * marking the elements it covers. */
static void gather(const run_t *r, int t, void *dense, unsigned char *covered) {
  const bcase_t *c = r->c;
  const geom_t *g = &r->g;
  const strides_t *st = t == 0 ? &g->tq : t == 1 ? &g->tk : &g->tv;
  const size_t off = t == 0 ? 0 : t == 1 ? g->k_off : g->v_off;
  const int64_t heads = t == 0 ? c->hq : c->hkv, dim = t == 2 ? g->dv : c->d;
  const int32_t *lens = t == 0 ? c->lens_q : c->lens_k, *cu = t == 0 ? g->cu_q : g->cu_k;
  const int64_t seq = t == 0 ? c->sq : c->sk;
  for (int64_t b = 0; b < c->batch; b++) {
    int64_t n = lens ? lens[b] : seq, r0 = lens ? cu[b] : b * seq;
    for (int64_t i = 0; i < n; i++)
      for (int64_t h = 0; h < heads; h++)
        for (int64_t e = 0; e < dim; e++) {
          size_t src = off + (size_t)((lens ? 0 : b) * st->bs + (lens ? r0 + i : i) * st->ss + h * st->hs + e);
          size_t dst = (size_t)(((r0 + i) * heads + h) * dim + e);
          memcpy((char *)dense + dst * r->es, (const char *)r->hgrad + src * r->es, r->es);
          covered[src] = 1;
        }
  }
}

static void check_grads(const run_t *r, const char *what) {
  const bcase_t *c = r->c;
  unsigned char *covered = (unsigned char *)calloc(r->g.nin, 1);
  double tol = gp_ref_attention_bwd_rel_tol(c->dtype);
  for (int t = 0; t < 3; t++) {
    void *dense = malloc((r->nref[t] ? r->nref[t] : 1) * r->es);
    gather(r, t, dense, covered);
    gp_ref_cmp_t cmp;
    char buf[256];
    gp_ref_compare(&cmp, dense, c->dtype, r->ref[t], r->bnd[t], 0.0, r->nref[t]);
    gp_ref_cmp_format(&cmp, buf, sizeof(buf));
    printf("  %-30s %-13s %s: %s\n", c->name, what, grad_names[t], buf);
    ck_assert_msg(cmp.n_bad == 0, "%s (%s, seed %llu): %s: %s", c->name, what,
                  (unsigned long long)g_seed, grad_names[t], buf);
    ck_assert_msg(cmp.rel_norm_err <= tol, "%s (%s, seed %llu): %s relative norm error %.3g > %.3g",
                  c->name, what, (unsigned long long)g_seed, grad_names[t], cmp.rel_norm_err, tol);
    free(dense);
  }
  size_t touched = 0;
  for (size_t i = 0; i < r->g.nin; i++)
    if (!covered[i] && !isnan(gp_ref_load(r->hgrad, c->dtype, i))) touched++;
  ck_assert_msg(touched == 0, "%s (%s): %zu elements outside dq/dk/dv were written", c->name, what,
                touched);
  free(covered);
}

/* Deterministic mode: checked against the reference, run again, compared bit for bit. */
static void check_deterministic(run_t *r, int mode) {
  char what[32];
  snprintf(what, sizeof what, "%s det", mode_names[mode]);
  const char *threads = getenv("GP_CPU_THREADS");
  char *saved = threads ? strdup(threads) : NULL;
  if (mode == M_DEFAULT) setenv("GP_CPU_THREADS", "1", 1);
  run_bwd(r, mode, 1);
  check_grads(r, what);
  void *first = malloc(r->g.nin * r->es);
  memcpy(first, r->hgrad, r->g.nin * r->es);
  if (mode == M_DEFAULT) setenv("GP_CPU_THREADS", "3", 1);
  run_bwd(r, mode, 1);
  if (saved)
    setenv("GP_CPU_THREADS", saved, 1);
  else
    unsetenv("GP_CPU_THREADS");
  free(saved);
  ck_assert_msg(memcmp(first, r->hgrad, r->g.nin * r->es) == 0,
                "%s (%s): two deterministic runs differ", r->c->name, what);
  printf("  %-30s %-13s two runs bitwise equal\n", r->c->name, what);
  free(first);
}

/* Whether the MFMA backward (kernels/mfma/) takes the case (f16/bf16, head_dim == head_dim_v in 32,
 * 64, 128): the mfma mode runs only those (the others would run the portable kernels
 * again, already covered). */
static int mfma_takes(const bcase_t *c) {
  const int64_t dv = c->dv ? c->dv : c->d;
  return c->dtype != GP_F32 && dv == c->d && (c->d == 32 || c->d == 64 || c->d == 128);
}

START_TEST(test_case) {
  const bcase_t *c = &cases[_i];
  run_t r;
  setup(&r, c, (uint64_t)(c - cases + 1));
  const int cpu = gp_backend() == GP_BACKEND_CPU;
  for (int mode = M_DEFAULT; mode <= M_MFMA; mode++) {
    if (mode != M_DEFAULT && (!cpu || !c->portable)) continue;
    if (mode == M_MFMA && !mfma_takes(c)) continue;
    run_bwd(&r, mode, 0);
    check_grads(&r, mode_names[mode]);
  }
  if (cpu) { /* the host implementation's portable tiles (GP_CPU_ATTENTION_SIMD=scalar) */
    gp__cpu_attn_simd_set(0);
    run_bwd(&r, M_DEFAULT, 0);
    check_grads(&r, "host scalar");
    gp__cpu_attn_simd_set(-1);
  }
  if (c->det) {
    check_deterministic(&r, M_DEFAULT);
    if (cpu && c->portable) check_deterministic(&r, M_PORTABLE);
    if (cpu && c->portable) check_deterministic(&r, M_SM80);
    if (cpu && c->portable && mfma_takes(c)) check_deterministic(&r, M_MFMA);
  }
  teardown(&r);
}
END_TEST

/* ---- every kernel of every family -------------------------------------------------------- */

/* One small case per kernel each family of the cpu backend's backward table has, the mode
 * choosing the family: sm_80 (f16, bf16 x head_dim 32, 64, 96, 128, 256), MFMA (x 32, 64,
 * 128), the portable kernels and the host implementation; each checked against the
 * reference (check_grads) and for the kernel the walk chose (run_bwd). `make
 * check-dispatch` runs this test case with each table entry switched off in turn. */
START_TEST(test_every_kernel) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  static const struct { int mode; int dims[5]; } fams[] = {{M_SM80, {32, 64, 96, 128, 256}},
                                                           {M_MFMA, {32, 64, 128}}};
  uint64_t id = 1000;
  for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++)
    for (int t = 0; t < 2; t++)
      for (int i = 0; i < 5 && fams[f].dims[i]; i++) {
        const bcase_t c = {"every kernel", t ? GP_BF16 : GP_F16, 1, 20, 33, 2, 1, fams[f].dims[i], 0, (t + i) & 1,
                           NOWIN, L_DEFAULT, 0, 1, 0, NULL, NULL, 0};
        run_t r;
        setup(&r, &c, id++);
        run_bwd(&r, fams[f].mode, 0);
        check_grads(&r, mode_names[fams[f].mode]);
        teardown(&r);
      }
  const bcase_t c = {"every kernel", GP_F32, 1, 20, 33, 2, 1, 40, 0, 1, NOWIN, L_DEFAULT, 0, 1, 0, NULL, NULL, 0};
  run_t r;
  setup(&r, &c, id++);
  for (int mode = M_DEFAULT; mode <= M_PORTABLE; mode++) {
    run_bwd(&r, mode, 0);
    check_grads(&r, mode_names[mode]);
  }
  teardown(&r);
}
END_TEST

/* ---- the reference against finite differences ---------------------------------------- */

typedef struct fdcase {
  int64_t batch, sq, sk, hq, hkv, d, dv;
  int causal;
  int64_t wl, wr;
  float scale;
  const int32_t *lens_q, *lens_k;
} fdcase_t;

static const int32_t fq[] = {3, 1, 4}, fk[] = {2, 5, 0};
static const fdcase_t fd_cases[] = {
    {2, 5, 7, 4, 2, 6, 5, 1, -1, -1, 0.7f, NULL, NULL}, /* GQA, causal with sq < sk */
    {1, 7, 4, 2, 1, 4, 4, 1, 1, -1, 0.0f, NULL, NULL},  /* MQA, rows with no key, window */
    {3, 4, 5, 2, 2, 5, 3, 0, 2, 1, 0.0f, fq, fk},       /* varlen, an empty key sequence */
};

/* sum(dO * O) of the float64 forward. */
static double loss(const gp_attention_desc_t *d, const int32_t *cq, const int32_t *ck,
                   const double *go, double *o, size_t no) {
  ck_assert_int_eq(gp_ref_attention_fwd(d, cq, ck, o, NULL, NULL, NULL), 0);
  double l = 0.0;
  for (size_t i = 0; i < no; i++) l += go[i] * o[i];
  return l;
}

START_TEST(test_reference_fd) {
  const fdcase_t *f = &fd_cases[_i];
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ 0x5eedfdull ^ (uint64_t)_i);
  int32_t cq[8] = {0}, ck[8] = {0};
  const int varlen = f->lens_q != NULL;
  if (varlen)
    for (int64_t b = 0; b < f->batch; b++) cq[b + 1] = cq[b] + f->lens_q[b], ck[b + 1] = ck[b] + f->lens_k[b];
  const int64_t rq = varlen ? cq[f->batch] : f->batch * f->sq, rk = varlen ? ck[f->batch] : f->batch * f->sk;
  const size_t nq = (size_t)(rq * f->hq * f->d), nk = (size_t)(rk * f->hkv * f->d);
  const size_t nv = (size_t)(rk * f->hkv * f->dv), no = (size_t)(rq * f->hq * f->dv);
  double *x[3] = {malloc(nq * 8), malloc(nk * 8), malloc(nv * 8)}, *go = malloc(no * 8);
  double *o = malloc(no * 8), *g[3] = {malloc(nq * 8), malloc(nk * 8), malloc(nv * 8)};
  const size_t n[3] = {nq, nk, nv};
  for (int t = 0; t < 3; t++) gp_ref_fill(x[t], GP_F64, n[t], &rng, -1.0, 1.0);
  gp_ref_fill(go, GP_F64, no, &rng, -1.0, 1.0);
  gp_attention_desc_t d;
  gp_attention_desc_init(&d);
  d.dtype = GP_F64;
  d.batch = f->batch, d.seqlen_q = f->sq, d.seqlen_k = f->sk;
  d.heads_q = f->hq, d.heads_kv = f->hkv, d.head_dim = f->d, d.head_dim_v = f->dv;
  d.causal = f->causal, d.window_left = f->wl, d.window_right = f->wr, d.softmax_scale = f->scale;
  d.q = x[0], d.k = x[1], d.v = x[2];
  const int32_t *pq = varlen ? cq : NULL, *pk = varlen ? ck : NULL;
  ck_assert_int_eq(gp_ref_attention_bwd(&d, pq, pk, go, g[0], NULL, g[1], NULL, g[2], NULL), 0);

  /* Central differences: error O(h^2) from truncation, O(eps / h) from rounding. */
  const double h = 1e-4;
  double worst = 0.0;
  size_t zeros = 0;
  for (int t = 0; t < 3; t++)
    for (size_t i = 0; i < n[t]; i++) {
      double x0 = x[t][i];
      x[t][i] = x0 + h;
      double lp = loss(&d, pq, pk, go, o, no);
      x[t][i] = x0 - h;
      double lm = loss(&d, pq, pk, go, o, no);
      x[t][i] = x0;
      double fd = (lp - lm) / (2.0 * h), err = fabs(fd - g[t][i]);
      if (g[t][i] == 0.0) zeros++;
      if (err > worst) worst = err;
      ck_assert_msg(err <= 1e-7 + 1e-7 * fabs(g[t][i]),
                    "fd case %d: d%s[%zu] reference %.12g, central difference %.12g (seed %llu)", _i,
                    t == 0 ? "q" : t == 1 ? "k" : "v", i, g[t][i], fd, (unsigned long long)g_seed);
    }
  printf("  reference vs central differences, case %d: %zu gradients, max |error| %.3g, %zu exact zeros\n",
         _i, nq + nk + nv, worst, zeros);
  for (int t = 0; t < 3; t++) free(x[t]), free(g[t]);
  free(go), free(o);
}
END_TEST

/* ---- argument checks -------------------------------------------------------------------- */

static void *g_buf;

/* A valid 4x4 call, one head, head_dim 8, f16: q, k, v, o, lse, d_o and the gradients in
 * g_buf; the workspace after them. */
enum { OFF_O = 1024, OFF_LSE = 1536, OFF_DO = 1600, OFF_DQ = 2048, OFF_DK = 2560, OFF_DV = 3072, OFF_WS = 4096 };

static void valid_desc(gp_attention_desc_t *d) {
  gp_attention_desc_init(d);
  d->dtype = GP_F16;
  d->batch = 1;
  d->seqlen_q = d->seqlen_k = 4;
  d->heads_q = d->heads_kv = 1;
  d->head_dim = 8;
  d->q = d->k = d->v = g_buf;
  d->o = (char *)g_buf + OFF_O;
  d->lse = (float *)((char *)g_buf + OFF_LSE);
}

static char *at(size_t off) { return (char *)g_buf + off; }

static void expect_fail(const gp_attention_desc_t *d, const void *d_o, void *dq, void *dk, void *dv,
                        void *ws, size_t ws_bytes, gp_status_t want, const char *needle) {
  gp_status_t st = gp_attention_bwd(NULL, d, d_o, dq, dk, dv, ws, ws_bytes);
  const char *msg = gp_last_error_message();
  ck_assert_msg(st == want, "expected %s, got %s (%s)", gp_status_name(want), gp_status_name(st),
                msg ? msg : "");
  ck_assert_msg(msg && strstr(msg, needle) && strstr(msg, "gp_attention_bwd"),
                "message '%s' does not name '%s' and the function", msg ? msg : "(null)", needle);
}

#define GRADS at(OFF_DO), at(OFF_DQ), at(OFF_DK), at(OFF_DV)

START_TEST(test_errors) {
  const size_t total = 16384;
  ck_assert_int_eq(gp_malloc(&g_buf, total), GP_SUCCESS);
  ck_assert_int_eq(gp_memset(g_buf, 0x11, total), GP_SUCCESS);
  gp_attention_desc_t d;
  size_t ws = 0;

  /* The workspace query. */
  valid_desc(&d);
  ck_assert_int_eq(gp_attention_bwd_workspace_size(&d, NULL), GP_ERROR_INVALID_VALUE);
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "bytes"));
  ck_assert_int_eq(gp_attention_bwd_workspace_size(NULL, &ws), GP_ERROR_INVALID_VALUE);
  d.heads_q = 3, d.heads_kv = 2;
  ck_assert_int_eq(gp_attention_bwd_workspace_size(&d, &ws), GP_ERROR_INVALID_VALUE);
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "gp_attention_bwd_workspace_size"));
  valid_desc(&d), d.dtype = GP_F64;
  ck_assert_int_eq(gp_attention_bwd_workspace_size(&d, &ws), GP_ERROR_NOT_SUPPORTED);
  valid_desc(&d), d.q = d.k = d.v = d.o = NULL, d.lse = NULL; /* pointers are not read */
  ck_assert_int_eq(gp_attention_bwd_workspace_size(&d, &ws), GP_SUCCESS);
  ck_assert(ws > 0 && ws <= total - OFF_WS);
  /* GQA adds the per-query-head dk and dv; deterministic mode never needs less. */
  size_t ws_gqa = 0, ws_det = 0;
  valid_desc(&d), d.heads_q = 4, d.heads_kv = 2, d.seqlen_k = 1000;
  ck_assert_int_eq(gp_attention_bwd_workspace_size(&d, &ws_gqa), GP_SUCCESS);
  d.deterministic = 1;
  ck_assert_int_eq(gp_attention_bwd_workspace_size(&d, &ws_det), GP_SUCCESS);
  ck_assert_msg(ws_gqa >= 4 * 4 * 4 + 2 * 1000 * 4 * 8 * 4 && ws_det > ws_gqa,
                "workspace: gqa %zu, deterministic %zu", ws_gqa, ws_det);

  /* The call. */
  valid_desc(&d);
  expect_fail(NULL, GRADS, at(OFF_WS), ws, GP_ERROR_INVALID_VALUE, "desc");
  valid_desc(&d), d.struct_size = 8;
  expect_fail(&d, GRADS, at(OFF_WS), ws, GP_ERROR_INVALID_VALUE, "struct_size");
  valid_desc(&d), d.dtype = GP_I32;
  expect_fail(&d, GRADS, at(OFF_WS), ws, GP_ERROR_NOT_SUPPORTED, "dtype");
  valid_desc(&d), d.head_dim = 300;
  expect_fail(&d, GRADS, at(OFF_WS), ws, GP_ERROR_INVALID_VALUE, "head_dim");
  valid_desc(&d), d.window_left = -4;
  expect_fail(&d, GRADS, at(OFF_WS), ws, GP_ERROR_INVALID_VALUE, "window_left");
  valid_desc(&d), d.o = NULL;
  expect_fail(&d, GRADS, at(OFF_WS), ws, GP_ERROR_INVALID_VALUE, "desc->o");
  valid_desc(&d), d.lse = NULL;
  expect_fail(&d, GRADS, at(OFF_WS), ws, GP_ERROR_INVALID_VALUE, "desc->lse");
  valid_desc(&d);
  expect_fail(&d, NULL, at(OFF_DQ), at(OFF_DK), at(OFF_DV), at(OFF_WS), ws, GP_ERROR_INVALID_VALUE, "d_o");
  expect_fail(&d, at(OFF_DO), NULL, at(OFF_DK), at(OFF_DV), at(OFF_WS), ws, GP_ERROR_INVALID_VALUE, "dq");
  expect_fail(&d, at(OFF_DO), at(OFF_DQ), NULL, at(OFF_DV), at(OFF_WS), ws, GP_ERROR_INVALID_VALUE, "dk");
  expect_fail(&d, at(OFF_DO), at(OFF_DQ), at(OFF_DK), NULL, at(OFF_WS), ws, GP_ERROR_INVALID_VALUE, "dv");
  expect_fail(&d, GRADS, NULL, ws, GP_ERROR_INVALID_VALUE, "workspace");
  expect_fail(&d, GRADS, at(OFF_WS), ws - 1, GP_ERROR_INVALID_VALUE, "workspace_bytes");
  expect_fail(&d, GRADS, at(OFF_WS + 4), ws, GP_ERROR_INVALID_VALUE, "aligned");
  /* Tensors not aligned to their elements (a GPU faults on such an access): refused,
   * naming the tensor, before anything reads or writes them. */
  expect_fail(&d, at(OFF_DO + 1), at(OFF_DQ), at(OFF_DK), at(OFF_DV), at(OFF_WS), ws,
              GP_ERROR_INVALID_VALUE, "'d_o' (");
  expect_fail(&d, at(OFF_DO), at(OFF_DQ + 1), at(OFF_DK), at(OFF_DV), at(OFF_WS), ws,
              GP_ERROR_INVALID_VALUE, "'dq' (");
  expect_fail(&d, at(OFF_DO), at(OFF_DQ), at(OFF_DK + 3), at(OFF_DV), at(OFF_WS), ws,
              GP_ERROR_INVALID_VALUE, "'dk' (");
  expect_fail(&d, at(OFF_DO), at(OFF_DQ), at(OFF_DK), at(OFF_DV + 1), at(OFF_WS), ws,
              GP_ERROR_INVALID_VALUE, "'dv' (");
  valid_desc(&d), d.q = at(1);
  expect_fail(&d, GRADS, at(OFF_WS), ws, GP_ERROR_INVALID_VALUE, "desc->q (");
  valid_desc(&d), d.lse = (float *)at(OFF_LSE + 2);
  expect_fail(&d, GRADS, at(OFF_WS), ws, GP_ERROR_INVALID_VALUE, "desc->lse (");
  valid_desc(&d);
  /* Tensors and the workspace running past the end of their allocation. */
  expect_fail(&d, GRADS, at(total - ws + 16), ws, GP_ERROR_INVALID_VALUE, "workspace");
  expect_fail(&d, at(total - 32), at(OFF_DQ), at(OFF_DK), at(OFF_DV), at(OFF_WS), ws,
              GP_ERROR_INVALID_VALUE, "d_o");
  expect_fail(&d, at(OFF_DO), at(total - 32), at(OFF_DK), at(OFF_DV), at(OFF_WS), ws,
              GP_ERROR_INVALID_VALUE, "dq");
  expect_fail(&d, at(OFF_DO), at(OFF_DQ), at(OFF_DK), at(total - 2), at(OFF_WS), ws,
              GP_ERROR_INVALID_VALUE, "dv");
  valid_desc(&d), d.lse = (float *)at(total - 8);
  expect_fail(&d, GRADS, at(OFF_WS), ws, GP_ERROR_INVALID_VALUE, "desc->lse");

  /* A destroyed stream. */
  gp_stream_t s;
  ck_assert_int_eq(gp_stream_create(&s), GP_SUCCESS);
  ck_assert_int_eq(gp_stream_destroy(s), GP_SUCCESS);
  valid_desc(&d);
  ck_assert_int_eq(gp_attention_bwd(s, &d, GRADS, at(OFF_WS), ws), GP_ERROR_INVALID_HANDLE);

  /* Varlen offsets longer than seqlen_q: an asynchronous error of the host implementation. */
  if (gp_backend() == GP_BACKEND_CPU) {
    gp__cpu_mode_set(GP__OP_ATTN_BWD, GP__CPU_HOST);
    int32_t cu_host[2] = {0, 9}, *cu = NULL;
    ck_assert_int_eq(gp_malloc((void **)&cu, sizeof(cu_host)), GP_SUCCESS);
    ck_assert_int_eq(gp_memcpy(cu, cu_host, sizeof(cu_host)), GP_SUCCESS);
    valid_desc(&d);
    d.cu_seqlens_q = d.cu_seqlens_k = cu;
    ck_assert_int_eq(gp_attention_bwd(NULL, &d, GRADS, at(OFF_WS), ws), GP_SUCCESS);
    gp_status_t st = gp_device_synchronize();
    ck_assert_msg(st == GP_ERROR_INVALID_VALUE, "bad cu_seqlens: got %s (%s)", gp_status_name(st),
                  gp_last_error_message());
    ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "gp_attention_bwd"));
    gp_free(cu);
  }

  /* A valid call succeeds, with a larger (newer) descriptor too. */
  struct {
    gp_attention_desc_t d;
    char future[32];
  } big;
  valid_desc(&big.d);
  big.d.struct_size = sizeof(big);
  ck_assert_int_eq(gp_attention_fwd(NULL, &big.d), GP_SUCCESS);
  ck_assert_int_eq(gp_attention_bwd(NULL, &big.d, GRADS, at(OFF_WS), ws), GP_SUCCESS);
  ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
  gp_free(g_buf);
}
END_TEST

/* Gradients must not overlap each other, the inputs or the workspace: refused with
 * GP_ERROR_INVALID_VALUE naming both, before anything runs. Dense tensors are compared
 * byte for byte; strided ones that interleave without sharing an element (slices of one
 * packed tensor: the "qkv-packed" case) are accepted. */
START_TEST(test_overlap) {
  const size_t total = 16384;
  ck_assert_int_eq(gp_malloc(&g_buf, total), GP_SUCCESS);
  ck_assert_int_eq(gp_memset(g_buf, 0, total), GP_SUCCESS);
  gp_attention_desc_t d;
  size_t ws = 0;
  valid_desc(&d);
  ck_assert_int_eq(gp_attention_bwd_workspace_size(&d, &ws), GP_SUCCESS);
  /* 4 x 1 x 8 f16: 64 bytes per tensor. */
  expect_fail(&d, at(OFF_DO), at(OFF_DQ), at(OFF_DQ), at(OFF_DV), at(OFF_WS), ws,
              GP_ERROR_INVALID_VALUE, "'dq' (");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "'dk' ("));
  expect_fail(&d, at(OFF_DO), at(OFF_DQ), at(OFF_DQ + 32), at(OFF_DV), at(OFF_WS), ws,
              GP_ERROR_INVALID_VALUE, "'dk' (");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "'dq' ("));
  expect_fail(&d, at(OFF_DO), at(0), at(OFF_DK), at(OFF_DV), at(OFF_WS), ws,
              GP_ERROR_INVALID_VALUE, "'desc->q' (");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "'dq' ("));
  expect_fail(&d, at(OFF_DO), at(OFF_DQ), at(OFF_DK), at(OFF_DO + 16), at(OFF_WS), ws,
              GP_ERROR_INVALID_VALUE, "'dv' (");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "'d_o' ("));
  expect_fail(&d, at(OFF_DO), at(OFF_LSE), at(OFF_DK), at(OFF_DV), at(OFF_WS), ws,
              GP_ERROR_INVALID_VALUE, "'desc->lse' (");
  expect_fail(&d, at(OFF_DO), at(OFF_DQ), at(OFF_DK), at(OFF_WS + 256), at(OFF_WS), ws,
              GP_ERROR_INVALID_VALUE, "'workspace' (");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "'dv' ("));
  /* Adjacent, not overlapping: fine. */
  ck_assert_int_eq(gp_attention_fwd(NULL, &d), GP_SUCCESS);
  ck_assert_int_eq(gp_attention_bwd(NULL, &d, at(OFF_DO), at(OFF_DQ), at(OFF_DQ + 64), at(OFF_DQ + 128),
                                    at(OFF_WS), ws),
                   GP_SUCCESS);
  /* Strided q (rows 16 elements apart, 8 used) and dq with q's layout: dq one element
   * after q shares bytes with it and is refused; dq 8 elements after q fills q's gaps
   * without sharing an element and runs. */
  valid_desc(&d), d.q_seq_stride = 16, d.k = at(256), d.v = at(384);
  expect_fail(&d, at(OFF_DO), at(2), at(OFF_DK), at(OFF_DV), at(OFF_WS), ws, GP_ERROR_INVALID_VALUE,
              "'dq' (");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "'desc->q' ("));
  ck_assert_int_eq(gp_attention_fwd(NULL, &d), GP_SUCCESS);
  ck_assert_int_eq(gp_attention_bwd(NULL, &d, at(OFF_DO), at(16), at(OFF_DK), at(OFF_DV), at(OFF_WS), ws),
                   GP_SUCCESS);
  ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
  gp_free(g_buf);
}
END_TEST

#if defined(GP_BUILD_CPU)
/* Every shape of attn_bad_varlen.h on backward implementation _i (a mode), over tensors,
 * gradients and a workspace that end at an unreadable page: the host implementation
 * fails the call with GP_ERROR_INVALID_VALUE, the kernels their launch
 * (GP_ERROR_LAUNCH_FAILED), naming the sequence; no kernel reads or writes past a buffer
 * (every kernel of the call runs: the first failure is the one reported, so a later
 * kernel without the check would fault, or under ASan end the process). Registered
 * (gpuport knows where each buffer ends); unregistered, every call is refused before any
 * implementation runs (bv_expect_refused: not device-accessible memory). */
START_TEST(test_bad_varlen) {
  const int mode = _i;
  static const char *const k_portable[] = {"gp__attention_bwd_portable_pre", NULL};
  /* the portable preprocess runs before the sm_80 main kernel */
  static const char *const k_sm80[] = {"gp__attention_bwd_portable_pre", "gp__attention_bwd_sm80_f16_d64", NULL};
  static const char *const k_mfma[] = {"gp__attention_bwd_mfma_f16_dq_d64", "gp__attention_bwd_mfma_f16_dkv_d64", NULL};
  const char *const *kernels = mode == M_PORTABLE || mode == M_W64 ? k_portable
                               : mode == M_SM80                    ? k_sm80
                               : mode == M_MFMA                    ? k_mfma
                                                                   : NULL;
  const gp__attn_bwd_kernels_t k64 = {GP_KERNEL_REF(gp__attention_bwd_portable_pre_w64), GP_KERNEL_REF(gp__attention_bwd_portable_main_w64),
                                      GP_KERNEL_REF(gp__attention_bwd_portable_dq_w64), GP_KERNEL_REF(gp__attention_bwd_portable_dkv_w64)};
  for (int reg = 1; reg >= 0; reg--) {
    bv_tensors_t t;
    bv_alloc(&t, reg);
    gp_attention_desc_t d;
    bv_desc(&d, &t, &bv_shapes[0]);
    size_t need = 0;
    ck_assert_int_eq(gp_attention_bwd_workspace_size(&d, &need), GP_SUCCESS);
    guarded_t gws;
    void *ws = guarded_alloc(&gws, (need + 15) / 16 * 16, reg, 0);
    for (int i = 0; i <= BV_NSHAPES; i++) {
      /* the last round: offsets that fit, and the call succeeds */
      static const bad_varlen_t ok = {"fits", BV_OKQ, BV_OKK, 0, 'q', 0};
      const bad_varlen_t *sh = i < BV_NSHAPES ? &bv_shapes[i] : &ok;
      if (!reg && sh->extent) continue;
      bv_desc(&d, &t, sh);
      gp__cpu_mode_set(GP__OP_ATTN_BWD, mode_cpu[mode]);
      gp_status_t st = mode == M_W64 ? gp__attention_bwd_kernels(NULL, &d, t.d_o, t.dq, t.dk, t.dv, ws, need, &k64)
                                     : gp_attention_bwd(NULL, &d, t.d_o, t.dq, t.dk, t.dv, ws, need);
      gp__cpu_mode_set(GP__OP_ATTN_BWD, -1);
      char what[96];
      snprintf(what, sizeof what, "%s%s", mode_names[mode], reg ? "" : " (unregistered)");
      if (!reg) {
        bv_expect_refused(st, what);
        continue;
      }
      if (sh == &ok) {
        if (st == GP_SUCCESS) st = gp_device_synchronize();
        ck_assert_msg(st == GP_SUCCESS, "%s: offsets that fit: %s (%s)", what, gp_status_name(st),
                      gp_last_error_message());
        continue;
      }
      bv_expect(st, mode == M_DEFAULT ? GP_ERROR_INVALID_VALUE : GP_ERROR_LAUNCH_FAILED, sh, "gp_attention_bwd",
                kernels, what);
      printf("  bad varlen %-26s %-22s %s\n", sh->name, what, gp_last_error_message());
    }
    guarded_free(&gws);
    bv_free(&t);
  }
}
END_TEST

/* Each portable backward kernel alone (the others replaced by a kernel that reads
 * nothing): in a call every kernel runs and the first failure is the one reported, so
 * here each kernel's own check must be the one that fails the launch. */
START_TEST(test_bad_varlen_each_kernel) {
  const struct gp_kernel_s *skip = GP_KERNEL_REF(kt_attn_bwd_skip);
  const gp__attn_bwd_kernels_t sets[] = {
      {GP_KERNEL_REF(gp__attention_bwd_portable_pre), skip, skip, skip},
      {skip, GP_KERNEL_REF(gp__attention_bwd_portable_main), skip, skip},
      {skip, skip, GP_KERNEL_REF(gp__attention_bwd_portable_dq), skip},
      {skip, skip, skip, GP_KERNEL_REF(gp__attention_bwd_portable_dkv)},
  };
  static const char *const names[][2] = {{"gp__attention_bwd_portable_pre", NULL},
                                         {"gp__attention_bwd_portable_main", NULL},
                                         {"gp__attention_bwd_portable_dq", NULL},
                                         {"gp__attention_bwd_portable_dkv", NULL}};
  bv_tensors_t t;
  bv_alloc(&t, 1);
  gp_attention_desc_t d;
  bv_desc(&d, &t, &bv_shapes[0]);
  size_t need = 0;
  ck_assert_int_eq(gp_attention_bwd_workspace_size(&d, &need), GP_SUCCESS);
  guarded_t gws;
  void *ws = guarded_alloc(&gws, (need + 15) / 16 * 16, 1, 0);
  for (int k = 0; k < 4; k++)
    for (int i = 0; i < BV_NSHAPES; i++) {
      bv_desc(&d, &t, &bv_shapes[i]);
      gp_status_t st = gp__attention_bwd_kernels(NULL, &d, t.d_o, t.dq, t.dk, t.dv, ws, need, &sets[k]);
      bv_expect(st, GP_ERROR_LAUNCH_FAILED, &bv_shapes[i], "gp_attention_bwd", names[k], names[k][0]);
    }
  guarded_free(&gws);
  bv_free(&t);
}
END_TEST

/* The sm_80 main kernel alone (in a call the portable preprocess runs first and reports
 * first): the parameters src/attention.c would build for bv_desc's call, launched with
 * gp__attn_bwd_sm80_launch; offsets that fit run, the others fail its launch. */
START_TEST(test_bad_varlen_sm80_main) {
  enum { ROWS = BV_BATCH * BV_SEQ };
  bv_tensors_t t;
  bv_alloc(&t, 1);
  guarded_t gw[4];
  gp__attn_bwd_params_t bp;
  memset(&bp, 0, sizeof bp);
  gp__attn_params_t *f = &bp.f;
  f->q = t.q, f->k = t.k, f->v = t.v, f->o = t.o, f->lse = t.lse, f->cu_q = t.cu_q, f->cu_k = t.cu_k;
  f->batch = BV_BATCH, f->seqlen_q = f->seqlen_k = BV_SEQ, f->heads_q = BV_HQ, f->heads_kv = BV_HKV;
  f->head_dim = f->head_dim_v = BV_D;
  f->q_ss = f->o_ss = BV_HQ * BV_D, f->k_ss = f->v_ss = BV_HKV * BV_D;
  f->q_hs = f->k_hs = f->v_hs = f->o_hs = BV_D;
  f->window_left = f->window_right = -1, f->scale = 0.125f, f->dtype = GP_F16;
  f->tokens_q = f->tokens_k = BV_TOKENS; /* every buffer holds 96 tokens (attn_bad_varlen.h) */
  bp.d_o = t.d_o, bp.dq = t.dq, bp.dk = t.dk, bp.dv = t.dv;
  bp.ws_d = (float *)guarded_alloc(&gw[0], ROWS * BV_HQ * sizeof(float), 1, 0);
  bp.ws_dq = (float *)guarded_alloc(&gw[1], ROWS * BV_HQ * BV_D * sizeof(float), 1, 0);
  bp.ws_dk = (float *)guarded_alloc(&gw[2], ROWS * BV_HQ * BV_D * sizeof(float), 1, 0);
  bp.ws_dv = (float *)guarded_alloc(&gw[3], ROWS * BV_HQ * BV_D * sizeof(float), 1, 0);
  bp.rows_q = bp.rows_k = ROWS, bp.nslices = 1;
  bp.nsplit = (BV_SEQ + GP__SM80_BWD_BN(BV_D) - 1) / GP__SM80_BWD_BN(BV_D);
  static const char *const names[] = {"gp__attention_bwd_sm80_f16_d64", NULL};
  static const bad_varlen_t ok = {"fits", BV_OKQ, BV_OKK, 0, 'q', 0};
  for (int i = 0; i <= BV_NSHAPES; i++) {
    const bad_varlen_t *sh = i < BV_NSHAPES ? &bv_shapes[i] : &ok;
    ck_assert_int_eq(gp_memcpy(t.cu_q, sh->cu_q, sizeof sh->cu_q), GP_SUCCESS);
    ck_assert_int_eq(gp_memcpy(t.cu_k, sh->cu_k, sizeof sh->cu_k), GP_SUCCESS);
    gp__attn_plan_t plan;
    char why[128] = "";
    const bool chosen = gp__attn_bwd_impl_sm80.supports(&bp, &plan, why, sizeof why);
    ck_assert_msg(chosen, "the sm_80 backward does not take the call: %s", why);
    gp__attn_bwd_params_t args_bp = bp;
    args_bp.nsplit = plan.nsplit, args_bp.nslices = plan.nslices;
    void *args[] = {&args_bp};
    if (plan.smem > 48 * 1024) ck_assert_int_eq(gp_kernel_set_max_dynamic_shared(plan.kernel, plan.smem), GP_SUCCESS);
    gp_status_t st = gp_launch(plan.kernel, gp_dim3(plan.blocks, 1, 1), gp_dim3(plan.threads, 1, 1), plan.smem, NULL, args);
    if (sh == &ok) {
      if (st == GP_SUCCESS) st = gp_device_synchronize();
      ck_assert_msg(st == GP_SUCCESS, "offsets that fit: %s (%s)", gp_status_name(st), gp_last_error_message());
    } else {
      bv_expect(st, GP_ERROR_LAUNCH_FAILED, sh, "gp_attention_bwd", names, "sm80 main kernel alone");
    }
  }
  for (int i = 0; i < 4; i++) guarded_free(&gw[i]);
  bv_free(&t);
}
END_TEST
#endif

static Suite *attention_bwd_suite(void) {
  Suite *s = suite_create("attention_bwd");
  TCase *tc = tcase_create("errors");
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_overlap);
  suite_add_tcase(s, tc);
#if defined(GP_BUILD_CPU)
  tc = tcase_create("bad_varlen");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_bad_varlen, M_DEFAULT, M_MFMA + 1);
  tcase_add_test(tc, test_bad_varlen_each_kernel);
  tcase_add_test(tc, test_bad_varlen_sm80_main);
  suite_add_tcase(s, tc);
#endif
  tc = tcase_create("reference");
  case_runs_without_device(tc); /* the float64 reference against finite differences */
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_reference_fd, 0, (int)(sizeof(fd_cases) / sizeof(fd_cases[0])));
  suite_add_tcase(s, tc);
  tc = tcase_create("dispatch"); /* run by make check-dispatch */
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_every_kernel);
  suite_add_tcase(s, tc);
  tc = tcase_create("cases");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_case, 0, NCASES);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  print_seed("test_attention_bwd", (unsigned long long)g_seed);
  return run_suite("test_attention_bwd", attention_bwd_suite());
}
