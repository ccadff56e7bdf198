/*
 * selftest_attention.c - gp_attention_fwd and gp_attention_bwd against the float64
 * references of ref/ref_attention.h. Forward: the model shape (batch 1, 32 query heads,
 * 8 KV heads, head_dim 128, causal; seqlen 1024 on GPUs, 256 on the CPU), then GQA/MQA,
 * windows, rows with no visible key, varlen and head_dim_v != head_dim at small shapes.
 * Backward: the model shape (seqlen 1024 on GPUs, 128 on the CPU), GQA with a window and
 * rows with no visible key, varlen, and deterministic mode (two runs, bit for bit).
 * Outputs, lse and gradients are poisoned with NaN before the calls, the backward's
 * workspace with NaN bytes.
 */
#include "ref_attention.h"
#include "selftest.h"

#include <stdlib.h>
#include <string.h>


bool st_attn_fwd(st_ctx_t *c, const st_attn_case_t *a) {
  const int64_t dv = a->dv ? a->dv : a->d;
  int32_t cu_q[17] = {0}, cu_k[17] = {0};
  int64_t sq = a->sq, sk = a->sk;
  if (a->len_q) {
    sq = sk = 0;
    for (int64_t b = 0; b < a->batch; b++) {
      cu_q[b + 1] = cu_q[b] + a->len_q[b];
      cu_k[b + 1] = cu_k[b] + a->len_k[b];
      if (a->len_q[b] > sq) sq = a->len_q[b];
      if (a->len_k[b] > sk) sk = a->len_k[b];
    }
  }
  const size_t tq = a->len_q ? (size_t)cu_q[a->batch] : (size_t)(a->batch * sq);
  const size_t tk = a->len_q ? (size_t)cu_k[a->batch] : (size_t)(a->batch * sk);
  const size_t nq = tq * (size_t)(a->hq * a->d), nk = tk * (size_t)(a->hkv * a->d);
  const size_t nv = tk * (size_t)(a->hkv * dv), no = tq * (size_t)(a->hq * dv);
  const size_t nl = tq * (size_t)a->hq, es = gp_dtype_size(a->dtype);
  bool ok = false;
  void *hq = st_random(c, a->dtype, nq, -1.0, 1.0), *hk = st_random(c, a->dtype, nk, -1.0, 1.0);
  void *hv = st_random(c, a->dtype, nv, -1.0, 1.0), *ho = malloc(no * es + 1);
  float *hl = malloc(nl * sizeof(float) + 1);
  double *oref = malloc(no * sizeof(double)), *obound = malloc(no * sizeof(double));
  double *lref = malloc(nl * sizeof(double)), *lbound = malloc(nl * sizeof(double));
  void *dq = NULL, *dk = NULL, *dvv = NULL, *dout = NULL, *dl = NULL, *dcq = NULL, *dck = NULL;
  if (!hq || !hk || !hv || !ho || !hl || !oref || !obound || !lref || !lbound) {
    st_fail(c, "host allocation failed");
    goto out;
  }
  gp_ref_poison(ho, a->dtype, no);
  gp_ref_poison(hl, GP_F32, nl);
  ST_TRY(c, tool_upload(&dq, hq, nq * es));
  ST_TRY(c, tool_upload(&dk, hk, nk * es));
  ST_TRY(c, tool_upload(&dvv, hv, nv * es));
  ST_TRY(c, tool_upload(&dout, ho, no * es));
  ST_TRY(c, tool_upload(&dl, hl, nl * sizeof(float)));
  if (a->len_q) {
    ST_TRY(c, tool_upload(&dcq, cu_q, sizeof(int32_t) * (size_t)(a->batch + 1)));
    ST_TRY(c, tool_upload(&dck, cu_k, sizeof(int32_t) * (size_t)(a->batch + 1)));
  }
  gp_attention_desc_t d;
  gp_attention_desc_init(&d);
  d.dtype = a->dtype;
  d.batch = a->batch, d.seqlen_q = sq, d.seqlen_k = sk;
  d.heads_q = a->hq, d.heads_kv = a->hkv, d.head_dim = a->d, d.head_dim_v = a->dv;
  d.q = dq, d.k = dk, d.v = dvv, d.o = dout;
  d.softmax_scale = a->scale;
  d.causal = a->causal, d.window_left = a->wl, d.window_right = a->wr;
  d.cu_seqlens_q = dcq, d.cu_seqlens_k = dck;
  d.lse = a->lse ? dl : NULL;
  ST_TRY(c, gp_attention_fwd(NULL, &d));
  ST_TRY(c, gp_device_synchronize());
  ST_TRY(c, gp_memcpy(ho, dout, no * es));
  ST_TRY(c, gp_memcpy(hl, dl, nl * sizeof(float)));

  gp_attention_desc_t hd = d; /* the same call, reading the host copies */
  hd.q = hq, hd.k = hk, hd.v = hv;
  if (gp_ref_attention_fwd(&hd, a->len_q ? cu_q : NULL, a->len_q ? cu_k : NULL, oref, obound,
                           lref, lbound)) {
    st_fail(c, "the reference rejected the case");
    goto out;
  }
  char what[160];
  snprintf(what, sizeof what, "%s b%lld sq%lld sk%lld h%lld/%lld d%lld%s%s o", gp_dtype_name(a->dtype),
           (long long)a->batch, (long long)sq, (long long)sk, (long long)a->hq, (long long)a->hkv,
           (long long)a->d, a->causal ? " causal" : "", a->len_q ? " varlen" : "");
  ok = st_compare(c, what, ho, a->dtype, oref, obound, 0.0, no, gp_ref_attention_rel_tol(a->dtype));
  if (ok && a->lse) {
    char o_note[sizeof c->summary];
    snprintf(o_note, sizeof o_note, "%s", c->summary);
    ok = st_compare(c, "lse", hl, GP_F32, lref, lbound, 0.0, nl, 0.0);
    if (ok) st_note(c, "%s; lse ok", o_note);
  }
out:
  gp_free(dq), gp_free(dk), gp_free(dvv), gp_free(dout), gp_free(dl), gp_free(dcq), gp_free(dck);
  free(hq), free(hk), free(hv), free(ho), free(hl);
  free(oref), free(obound), free(lref), free(lbound);
  return ok && !c->failed;
}

/* The backward of case a: the forward for o and lse, then gp_attention_bwd (twice with
 * deterministic set, the runs compared byte for byte), dq, dk and dv against the
 * reference. */
bool st_attn_bwd(st_ctx_t *c, const st_attn_case_t *a, bool deterministic) {
  const int64_t dv = a->dv ? a->dv : a->d;
  int32_t cu_q[17] = {0}, cu_k[17] = {0};
  int64_t sq = a->sq, sk = a->sk;
  if (a->len_q) {
    sq = sk = 0;
    for (int64_t b = 0; b < a->batch; b++) {
      cu_q[b + 1] = cu_q[b] + a->len_q[b];
      cu_k[b + 1] = cu_k[b] + a->len_k[b];
      if (a->len_q[b] > sq) sq = a->len_q[b];
      if (a->len_k[b] > sk) sk = a->len_k[b];
    }
  }
  const size_t tq = a->len_q ? (size_t)cu_q[a->batch] : (size_t)(a->batch * sq);
  const size_t tk = a->len_q ? (size_t)cu_k[a->batch] : (size_t)(a->batch * sk);
  const size_t n[3] = {tq * (size_t)(a->hq * a->d), tk * (size_t)(a->hkv * a->d), tk * (size_t)(a->hkv * dv)};
  const size_t no = tq * (size_t)(a->hq * dv), nl = tq * (size_t)a->hq, es = gp_dtype_size(a->dtype);
  static const char *const names[3] = {"dq", "dk", "dv"};
  bool ok = false;
  void *hin[3] = {NULL, NULL, NULL}, *hg[3] = {NULL, NULL, NULL}, *first[3] = {NULL, NULL, NULL};
  void *din[3] = {NULL, NULL, NULL}, *dg[3] = {NULL, NULL, NULL};
  double *ref[3] = {NULL, NULL, NULL}, *bnd[3] = {NULL, NULL, NULL};
  void *hdo = st_random(c, a->dtype, no, -1.0, 1.0), *ddo = NULL, *dout = NULL, *dl = NULL;
  void *dcq = NULL, *dck = NULL, *ws = NULL;
  size_t ws_bytes = 0;
  for (int t = 0; t < 3; t++) {
    hin[t] = st_random(c, a->dtype, n[t], -1.0, 1.0);
    hg[t] = malloc(n[t] * es + 1);
    first[t] = malloc(n[t] * es + 1);
    ref[t] = malloc(n[t] * sizeof(double) + 1);
    bnd[t] = malloc(n[t] * sizeof(double) + 1);
    if (!hin[t] || !hg[t] || !first[t] || !ref[t] || !bnd[t]) hdo = (free(hdo), NULL);
  }
  if (!hdo) {
    st_fail(c, "host allocation failed");
    goto out;
  }
  for (int t = 0; t < 3; t++) {
    ST_TRY(c, tool_upload(&din[t], hin[t], n[t] * es));
    ST_TRY(c, gp_malloc(&dg[t], n[t] * es));
  }
  ST_TRY(c, tool_upload(&ddo, hdo, no * es));
  ST_TRY(c, gp_malloc(&dout, no * es));
  ST_TRY(c, gp_malloc(&dl, nl * sizeof(float)));
  if (a->len_q) {
    ST_TRY(c, tool_upload(&dcq, cu_q, sizeof(int32_t) * (size_t)(a->batch + 1)));
    ST_TRY(c, tool_upload(&dck, cu_k, sizeof(int32_t) * (size_t)(a->batch + 1)));
  }
  gp_attention_desc_t d;
  gp_attention_desc_init(&d);
  d.dtype = a->dtype;
  d.batch = a->batch, d.seqlen_q = sq, d.seqlen_k = sk;
  d.heads_q = a->hq, d.heads_kv = a->hkv, d.head_dim = a->d, d.head_dim_v = a->dv;
  d.q = din[0], d.k = din[1], d.v = din[2], d.o = dout, d.lse = (float *)dl;
  d.softmax_scale = a->scale;
  d.causal = a->causal, d.window_left = a->wl, d.window_right = a->wr;
  d.cu_seqlens_q = dcq, d.cu_seqlens_k = dck;
  d.deterministic = deterministic;
  ST_TRY(c, gp_attention_fwd(NULL, &d));
  ST_TRY(c, gp_attention_bwd_workspace_size(&d, &ws_bytes));
  ST_TRY(c, gp_malloc(&ws, ws_bytes));
  for (int run = 0; run < (deterministic ? 2 : 1); run++) {
    for (int t = 0; t < 3; t++) {
      gp_ref_poison(hg[t], a->dtype, n[t]);
      ST_TRY(c, gp_memcpy(dg[t], hg[t], n[t] * es));
    }
    ST_TRY(c, gp_memset(ws, 0xff, ws_bytes));
    ST_TRY(c, gp_attention_bwd(NULL, &d, ddo, dg[0], dg[1], dg[2], ws, ws_bytes));
    ST_TRY(c, gp_device_synchronize());
    for (int t = 0; t < 3; t++) {
      ST_TRY(c, gp_memcpy(hg[t], dg[t], n[t] * es));
      if (run == 0) memcpy(first[t], hg[t], n[t] * es);
    }
  }

  gp_attention_desc_t hd = d; /* the same call, reading the host copies */
  hd.q = hin[0], hd.k = hin[1], hd.v = hin[2];
  if (gp_ref_attention_bwd(&hd, a->len_q ? cu_q : NULL, a->len_q ? cu_k : NULL, hdo, ref[0], bnd[0],
                           ref[1], bnd[1], ref[2], bnd[2])) {
    st_fail(c, "the reference rejected the case");
    goto out;
  }
  ok = true;
  for (int t = 0; t < 3 && ok; t++) {
    char what[160];
    snprintf(what, sizeof what, "%s b%lld sq%lld sk%lld h%lld/%lld d%lld%s%s%s %s", gp_dtype_name(a->dtype),
             (long long)a->batch, (long long)sq, (long long)sk, (long long)a->hq, (long long)a->hkv,
             (long long)a->d, a->causal ? " causal" : "", a->wl >= 0 || a->wr >= 0 ? " window" : "",
             a->len_q ? " varlen" : "", names[t]);
    ok = st_compare(c, what, first[t], a->dtype, ref[t], bnd[t], 0.0, n[t],
                    gp_ref_attention_bwd_rel_tol(a->dtype));
  }
  for (int t = 0; t < 3 && ok && deterministic; t++)
    ok = st_compare_bytes(c, names[t], (unsigned char *)hg[t], first[t], n[t] * es);
  if (ok)
    st_note(c, "%s b%lld sq%lld sk%lld h%lld/%lld d%lld: dq, dk, dv worst rel_norm=%.3g%s",
            gp_dtype_name(a->dtype), (long long)a->batch, (long long)sq, (long long)sk,
            (long long)a->hq, (long long)a->hkv, (long long)a->d, c->worst_rel,
            deterministic ? "; deterministic: two runs bitwise equal" : "");
out:
  for (int t = 0; t < 3; t++) {
    gp_free(din[t]), gp_free(dg[t]);
    free(hin[t]), free(hg[t]), free(first[t]), free(ref[t]), free(bnd[t]);
  }
  gp_free(ddo), gp_free(dout), gp_free(dl), gp_free(dcq), gp_free(dck), gp_free(ws);
  free(hdo);
  return ok && !c->failed;
}

static void check_model(st_ctx_t *c, const void *arg) {
  (void)arg;
  st_attn_case_t a = {GP_BF16, 1, 256, 256, 32, 8, 128, 0, 1, -1, -1, 0.0f, true, NULL, NULL};
  if (c->big) a.sq = a.sk = 1024;
  if (c->quick) a.sq = a.sk = 64, a.hq = 8, a.hkv = 2, a.d = 64;
  st_attn_fwd(c, &a);
}

static void check_case(st_ctx_t *c, const void *arg) {
  st_attn_fwd(c, arg);
}

static void check_bwd_model(st_ctx_t *c, const void *arg) {
  (void)arg;
  st_attn_case_t a = {GP_BF16, 1, 128, 128, 32, 8, 128, 0, 1, -1, -1, 0.0f, true, NULL, NULL};
  if (c->big) a.sq = a.sk = 1024;
  if (c->quick) a.sq = a.sk = 64, a.hq = 8, a.hkv = 2, a.d = 64;
  st_attn_bwd(c, &a, false);
}

static void check_bwd(st_ctx_t *c, const void *arg) { st_attn_bwd(c, arg, false); }
static void check_bwd_det(st_ctx_t *c, const void *arg) { st_attn_bwd(c, arg, true); }

static const int32_t vq[3] = {17, 1, 40}, vk[3] = {17, 30, 64};
static const st_attn_case_t gqa = {GP_F16, 2, 37, 53, 6, 2, 64, 0, 0, -1, -1, 0.0f, true, NULL, NULL};
static const st_attn_case_t window = {GP_F32, 2, 48, 80, 4, 4, 32, 0, 1, 16, -1, 0.3f, true, NULL, NULL};
static const st_attn_case_t empty = {GP_BF16, 1, 40, 24, 4, 1, 128, 0, 1, -1, -1, 0.0f, true, NULL, NULL};
static const st_attn_case_t varlen = {GP_F16, 3, 0, 0, 4, 2, 64, 0, 1, -1, -1, 0.0f, true, vq, vk};
static const st_attn_case_t dimv = {GP_BF16, 1, 33, 47, 4, 2, 80, 48, 0, 8, 4, 0.0f, false, NULL, NULL};
/* Backward: sq > sk with causal leaves rows with no visible key. */
static const st_attn_case_t bwd_gqa = {GP_F16, 2, 45, 37, 6, 2, 64, 0, 1, 12, -1, 0.0f, true, NULL, NULL};
static const st_attn_case_t bwd_det = {GP_F32, 1, 70, 90, 4, 1, 96, 48, 0, -1, -1, 0.3f, true, NULL, NULL};

const st_check_t st_attention_checks[] = {
    {"attention.model_causal_gqa", check_model, NULL},
    {"attention.f16_gqa", check_case, &gqa},
    {"attention.f32_window", check_case, &window},
    {"attention.empty_rows", check_case, &empty},
    {"attention.varlen", check_case, &varlen},
    {"attention.head_dim_v", check_case, &dimv},
    {"attention.bwd_model_causal_gqa", check_bwd_model, NULL},
    {"attention.bwd_gqa_empty_rows", check_bwd, &bwd_gqa},
    {"attention.bwd_varlen", check_bwd, &varlen},
    {"attention.bwd_deterministic", check_bwd_det, &bwd_det},
    {NULL, NULL, NULL},
};
