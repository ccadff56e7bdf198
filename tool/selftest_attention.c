/*
 * selftest_attention.c - gp_attention_fwd against the float64 reference of
 * tool/ref_attention.h: the model shape (batch 1, 32 query heads, 8 KV heads,
 * head_dim 128, causal; seqlen 1024 on GPUs, 256 on the CPU), then GQA/MQA, windows,
 * rows with no visible key, varlen and head_dim_v != head_dim at small shapes.
 * The output and lse are poisoned with NaN before the call.
 */
#include "ref_attention.h"
#include "selftest.h"

#include <stdlib.h>
#include <string.h>

typedef struct acase {
  gp_dtype_t dtype;
  int64_t batch, sq, sk, hq, hkv, d, dv;
  int causal;
  int64_t wl, wr;
  float scale;
  bool lse;
  const int32_t *len_q, *len_k; /* varlen: batch lengths each, or NULL */
} acase_t;

static bool run_case(st_ctx_t *c, const acase_t *a) {
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

static void check_model(st_ctx_t *c, const void *arg) {
  (void)arg;
  acase_t a = {GP_BF16, 1, 256, 256, 32, 8, 128, 0, 1, -1, -1, 0.0f, true, NULL, NULL};
  if (c->big) a.sq = a.sk = 1024;
  if (c->quick) a.sq = a.sk = 64, a.hq = 8, a.hkv = 2, a.d = 64;
  run_case(c, &a);
}

static void check_case(st_ctx_t *c, const void *arg) {
  run_case(c, arg);
}

static const int32_t vq[3] = {17, 1, 40}, vk[3] = {17, 30, 64};
static const acase_t gqa = {GP_F16, 2, 37, 53, 6, 2, 64, 0, 0, -1, -1, 0.0f, true, NULL, NULL};
static const acase_t window = {GP_F32, 2, 48, 80, 4, 4, 32, 0, 1, 16, -1, 0.3f, true, NULL, NULL};
static const acase_t empty = {GP_BF16, 1, 40, 24, 4, 1, 128, 0, 1, -1, -1, 0.0f, true, NULL, NULL};
static const acase_t varlen = {GP_F16, 3, 0, 0, 4, 2, 64, 0, 1, -1, -1, 0.0f, true, vq, vk};
static const acase_t dimv = {GP_BF16, 1, 33, 47, 4, 2, 80, 48, 0, 8, 4, 0.0f, false, NULL, NULL};

const st_check_t st_attention_checks[] = {
    {"attention.model_causal_gqa", check_model, NULL},
    {"attention.f16_gqa", check_case, &gqa},
    {"attention.f32_window", check_case, &window},
    {"attention.empty_rows", check_case, &empty},
    {"attention.varlen", check_case, &varlen},
    {"attention.head_dim_v", check_case, &dimv},
    {NULL, NULL, NULL},
};
