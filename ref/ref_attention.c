/* ref_attention.c - float64 attention forward and backward and their error bounds (see
 * ref_attention.h). */
#include "ref_attention.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

/* Mask rule of gpuport/attention.h, as a predicate. */
static bool visible(const gp_attention_desc_t *d, int64_t i, int64_t j, int64_t sq, int64_t sk) {
  int64_t diag = i + sk - sq;
  if (d->causal && j > diag) return false;
  if (d->window_left >= 0 && j < diag - d->window_left) return false;
  if (d->window_right >= 0 && j > diag + d->window_right) return false;
  return true;
}

static double min_normal(gp_dtype_t t) {
  return t == GP_F16 ? 0x1.0p-14 : t == GP_F64 ? 0x1.0p-1022 : 0x1.0p-126;
}

static bool dtype_ok(gp_dtype_t t) {
  return t == GP_F32 || t == GP_F16 || t == GP_BF16 || t == GP_F64;
}

size_t gp_ref_attention_rows(const gp_attention_desc_t *d, const int32_t *cu_q) {
  if (cu_q) return (size_t)cu_q[d->batch];
  return (size_t)(d->batch * d->seqlen_q);
}

size_t gp_ref_attention_rows_k(const gp_attention_desc_t *d, const int32_t *cu_k) {
  if (cu_k) return (size_t)cu_k[d->batch];
  return (size_t)(d->batch * d->seqlen_k);
}

double gp_ref_attention_rel_tol(gp_dtype_t dtype) {
  double u = 0x1.0p-24, u_out = gp_ref_unit_roundoff(dtype);
  double u_p = dtype == GP_F32 ? u : u_out;
  return 1.5 * u_out + 0.5 * u_p + 64.0 * u;
}

double gp_ref_attention_bwd_rel_tol(gp_dtype_t dtype) {
  double u = 0x1.0p-24, u_out = gp_ref_unit_roundoff(dtype);
  double u_in = dtype == GP_F32 ? u : u_out; /* u_p = u_ds */
  return 1.5 * u_out + u_in + 128.0 * u; /* u_in: 0.5 u_p + 0.5 u_ds */
}

/* ---- shared geometry ---------------------------------------------------------------- */

/* One call's layout, defaulted here independently of the library. */
typedef struct geom {
  const gp_attention_desc_t *d;
  bool varlen;
  int64_t dq, dv, hq, hkv, group;
  int64_t qs, qh, qb, ks, kh, kb, vs, vh, vb, os, oh, ob;
  double scale;
  /* Dense float64 copies, [packed row][head][dim]; the packed row of query i of sequence
   * b is cu_q[b] + i with varlen, else b * seqlen_q + i (keys alike). */
  double *q, *k, *v, *go;
} geom_t;

static void geom_init(geom_t *g, const gp_attention_desc_t *d, bool varlen) {
  g->d = d;
  g->varlen = varlen;
  g->dq = d->head_dim, g->dv = d->head_dim_v ? d->head_dim_v : d->head_dim;
  g->hq = d->heads_q, g->hkv = d->heads_kv, g->group = g->hq / g->hkv;
  g->qs = d->q_seq_stride ? d->q_seq_stride : g->hq * g->dq;
  g->qh = d->q_head_stride ? d->q_head_stride : g->dq;
  g->qb = varlen ? 0 : d->q_batch_stride ? d->q_batch_stride : d->seqlen_q * g->hq * g->dq;
  g->ks = d->k_seq_stride ? d->k_seq_stride : g->hkv * g->dq;
  g->kh = d->k_head_stride ? d->k_head_stride : g->dq;
  g->kb = varlen ? 0 : d->k_batch_stride ? d->k_batch_stride : d->seqlen_k * g->hkv * g->dq;
  g->vs = d->v_seq_stride ? d->v_seq_stride : g->hkv * g->dv;
  g->vh = d->v_head_stride ? d->v_head_stride : g->dv;
  g->vb = varlen ? 0 : d->v_batch_stride ? d->v_batch_stride : d->seqlen_k * g->hkv * g->dv;
  g->os = d->o_seq_stride ? d->o_seq_stride : g->hq * g->dv;
  g->oh = d->o_head_stride ? d->o_head_stride : g->dv;
  g->ob = varlen ? 0 : d->o_batch_stride ? d->o_batch_stride : d->seqlen_q * g->hq * g->dv;
  g->scale = d->softmax_scale != 0.0f ? (double)d->softmax_scale : 1.0 / sqrt((double)g->dq);
  g->q = g->k = g->v = g->go = NULL;
}

/* Converts a strided tensor to the dense layout of geom_t. */
static double *densify(const geom_t *g, const int32_t *cu, int64_t seq, const void *src,
                       int64_t bs, int64_t ss, int64_t hs, int64_t heads, int64_t dim) {
  const gp_attention_desc_t *d = g->d;
  const int64_t rows = cu ? cu[d->batch] : d->batch * seq;
  double *out = (double *)malloc((size_t)(rows > 0 ? rows * heads * dim : 1) * sizeof(double));
  if (out == NULL) return NULL;
  for (int64_t b = 0; b < d->batch; b++) {
    int64_t n = cu ? cu[b + 1] - cu[b] : seq, r0 = cu ? cu[b] : b * seq;
    for (int64_t i = 0; i < n; i++)
      for (int64_t h = 0; h < heads; h++)
        for (int64_t c = 0; c < dim; c++)
          out[((r0 + i) * heads + h) * dim + c] =
              gp_ref_load(src, d->dtype, (size_t)(b * bs + (cu ? r0 + i : i) * ss + h * hs + c));
  }
  return out;
}

/* The dense copies of q, k, v and (when not NULL) d_o; false when memory ran out. */
static bool geom_load(geom_t *g, const int32_t *cu_q, const int32_t *cu_k, const void *d_o) {
  const gp_attention_desc_t *d = g->d;
  g->q = densify(g, cu_q, d->seqlen_q, d->q, g->qb, g->qs, g->qh, g->hq, g->dq);
  g->k = densify(g, cu_k, d->seqlen_k, d->k, g->kb, g->ks, g->kh, g->hkv, g->dq);
  g->v = densify(g, cu_k, d->seqlen_k, d->v, g->vb, g->vs, g->vh, g->hkv, g->dv);
  g->go = d_o ? densify(g, cu_q, d->seqlen_q, d_o, g->ob, g->os, g->oh, g->hq, g->dv) : NULL;
  return g->q && g->k && g->v && (g->go || !d_o);
}

static void geom_free(geom_t *g) { free(g->q), free(g->k), free(g->v), free(g->go); }

static const double *q_at(const geom_t *g, int64_t row, int64_t h) { return g->q + (row * g->hq + h) * g->dq; }
static const double *k_at(const geom_t *g, int64_t row, int64_t h) { return g->k + (row * g->hkv + h) * g->dq; }
static const double *v_at(const geom_t *g, int64_t row, int64_t h) { return g->v + (row * g->hkv + h) * g->dv; }

/* One query row (h, i) of a sequence with sq queries and sk keys whose first packed rows
 * are pq / pk, in float64: the scores s[j] of its visible keys (vis[j]), m, l, the
 * output o and A = sum p |v| / l, and the forward's bounds (ref_attention.h). */
typedef struct row {
  double *s, *o, *a, *obound;
  unsigned char *vis;
  int64_t n;
  double m, l, lse, eps_s, lse_bound;
} row_t;

static bool row_alloc(row_t *r, int64_t sk, int64_t dv) {
  size_t nk = (size_t)(sk > 0 ? sk : 1);
  r->s = (double *)malloc(nk * sizeof(double));
  r->vis = (unsigned char *)malloc(nk);
  r->o = (double *)malloc((size_t)dv * sizeof(double));
  r->a = (double *)malloc((size_t)dv * sizeof(double));
  r->obound = (double *)malloc((size_t)dv * sizeof(double));
  return r->s && r->vis && r->o && r->a && r->obound;
}

static void row_free(row_t *r) { free(r->s), free(r->vis), free(r->o), free(r->a), free(r->obound); }

static void row_fwd(const geom_t *g, int64_t h, int64_t i, int64_t sq, int64_t sk, int64_t pq,
                    int64_t pk, row_t *r) {
  const gp_attention_desc_t *d = g->d;
  const double u = 0x1.0p-24, u_out = gp_ref_unit_roundoff(d->dtype);
  const double u_p = d->dtype == GP_F32 ? u : u_out;
  const int64_t hk = h / g->group;
  const double *qr = q_at(g, pq + i, h);
  double maxabs = 0.0;
  r->m = -INFINITY;
  r->n = 0;
  for (int64_t j = 0; j < sk; j++) {
    r->vis[j] = visible(d, i, j, sq, sk);
    if (!r->vis[j]) continue;
    const double *kr = k_at(g, pk + j, hk);
    double dot = 0.0, absdot = 0.0;
    for (int64_t c = 0; c < g->dq; c++) {
      dot += qr[c] * kr[c];
      absdot += fabs(qr[c] * kr[c]);
    }
    r->s[j] = g->scale * dot;
    if (r->s[j] > r->m) r->m = r->s[j];
    if (fabs(g->scale) * absdot > maxabs) maxabs = fabs(g->scale) * absdot;
    r->n++;
  }
  r->l = 0.0;
  for (int64_t c = 0; c < g->dv; c++) r->o[c] = r->a[c] = 0.0;
  for (int64_t j = 0; j < sk && r->n > 0; j++) {
    if (!r->vis[j]) continue;
    const double p = exp(r->s[j] - r->m), *vr = v_at(g, pk + j, hk);
    r->l += p;
    for (int64_t c = 0; c < g->dv; c++) {
      r->o[c] += p * vr[c];
      r->a[c] += p * fabs(vr[c]);
    }
  }
  r->eps_s = (double)(g->dq + 2) * u * maxabs;
  double delta = 2.0 * r->eps_s + 4.0 * u + u_p + 2.0 * (double)(r->n + 2) * u;
  for (int64_t c = 0; c < g->dv; c++) {
    double o = r->n > 0 ? r->o[c] / r->l : 0.0, aa = r->n > 0 ? r->a[c] / r->l : 0.0;
    r->o[c] = o;
    r->a[c] = aa;
    r->obound[c] = r->n > 0 ? 4.0 * delta * aa + u_out * fabs(o) + u_out * min_normal(d->dtype) : 0.0;
  }
  r->lse = r->n > 0 ? r->m + log(r->l) : -INFINITY;
  r->lse_bound = r->n > 0 ? 2.0 * (2.0 * r->eps_s + (double)(r->n + 6) * u) + 2.0 * u * fabs(r->lse) : 0.0;
}

/* ---- forward ------------------------------------------------------------------------ */

int gp_ref_attention_fwd(const gp_attention_desc_t *d, const int32_t *cu_q, const int32_t *cu_k,
                         double *o_ref, double *o_bound, double *lse_ref, double *lse_bound) {
  if (!dtype_ok(d->dtype)) return -1;
  if (d->head_dim < 1 || d->heads_kv < 1 || d->heads_q % d->heads_kv != 0) return -1;
  if ((cu_q == NULL) != (cu_k == NULL)) return -1;
  geom_t g;
  geom_init(&g, d, cu_q != NULL);
  row_t r;
  if (!row_alloc(&r, d->seqlen_k, g.dv) || !geom_load(&g, cu_q, cu_k, NULL)) {
    row_free(&r);
    geom_free(&g);
    return -1;
  }
  const int64_t total_q = g.varlen ? cu_q[d->batch] : 0;
  for (int64_t b = 0; b < d->batch; b++) {
    int64_t sq = g.varlen ? cu_q[b + 1] - cu_q[b] : d->seqlen_q;
    int64_t sk = g.varlen ? cu_k[b + 1] - cu_k[b] : d->seqlen_k;
    int64_t q0 = g.varlen ? cu_q[b] : 0;
    int64_t pq = g.varlen ? cu_q[b] : b * d->seqlen_q, pk = g.varlen ? cu_k[b] : b * d->seqlen_k;
    for (int64_t h = 0; h < g.hq; h++)
      for (int64_t i = 0; i < sq; i++) {
        row_fwd(&g, h, i, sq, sk, pq, pk, &r);
        size_t row = (size_t)(pq + i);
        for (int64_t c = 0; c < g.dv; c++) {
          size_t e = (row * (size_t)g.hq + (size_t)h) * (size_t)g.dv + (size_t)c;
          if (o_ref) o_ref[e] = r.o[c];
          if (o_bound) o_bound[e] = r.obound[c];
        }
        size_t le = g.varlen ? (size_t)(h * total_q + q0 + i) : (size_t)((b * g.hq + h) * d->seqlen_q + i);
        if (lse_ref) lse_ref[le] = r.lse;
        if (lse_bound) lse_bound[le] = r.lse_bound;
      }
  }
  row_free(&r);
  geom_free(&g);
  return 0;
}

/* ---- backward ----------------------------------------------------------------------- */

/* Sums per key/value element: the gradient and the two parts of its bound. */
typedef struct kv_sums {
  double *dk, *dk_err, *dk_abs; /* sum dS q, sum E |q|, sum |dS q| */
  double *dv, *dv_err, *dv_abs; /* sum P dO, sum (theta + u_p) P |dO|, sum P |dO| */
  int64_t *terms;               /* [rows_k][heads_kv]: query rows (of every head) summed */
} kv_sums_t;

/* The backward of one query row, given its forward (r): dq (and its bound) into
 * dq_ref / dq_bound at element offset e0, the row's terms added to the key/value sums. */
static void row_bwd(const geom_t *g, const row_t *r, int64_t h, int64_t i, int64_t sk, int64_t pq,
                    int64_t pk, double *dpv, kv_sums_t *kv, double *dq_ref, double *dq_bound) {
  const gp_attention_desc_t *d = g->d;
  const double u = 0x1.0p-24, u_out = gp_ref_unit_roundoff(d->dtype);
  const double u_in = d->dtype == GP_F32 ? u : u_out; /* u_p and u_ds */
  const int64_t hk = h / g->group, dq = g->dq, dv = g->dv;
  const double *go = g->go + ((pq + i) * g->hq + h) * dv, *qv = q_at(g, pq + i, h);
  double acc[GP_REF_ATTN_MAX_DIM], err[GP_REF_ATTN_MAX_DIM], absacc[GP_REF_ATTN_MAX_DIM];
  for (int64_t c = 0; c < dq; c++) acc[c] = err[c] = absacc[c] = 0.0;
  if (r->n > 0) {
    /* dP_j = dO . v_j and D = sum_j P_j dP_j (the softmax Jacobian's row term). */
    double D = 0.0, e_d = 0.0;
    for (int64_t j = 0; j < sk; j++) {
      if (!r->vis[j]) continue;
      const double *vr = v_at(g, pk + j, hk);
      double dp = 0.0, adp = 0.0;
      for (int64_t c = 0; c < dv; c++) {
        double y = go[c] * vr[c];
        dp += y;
        adp += fabs(y);
      }
      dpv[2 * j] = dp;
      dpv[2 * j + 1] = adp;
      D += exp(r->s[j] - r->lse) * dp;
    }
    /* D as implementations form it, from the stored o: sum dO (o + e_o) in f32. */
    for (int64_t c = 0; c < dv; c++)
      e_d += fabs(go[c]) * r->obound[c] + (double)(dv + 2) * u * fabs(go[c] * r->o[c]);
    for (int64_t j = 0; j < sk; j++) {
      if (!r->vis[j]) continue;
      const double p = exp(r->s[j] - r->lse), ds = p * (dpv[2 * j] - D);
      const double theta = r->eps_s + r->lse_bound + 2.0 * u * (fabs(r->s[j]) + fabs(r->lse)) + 4.0 * u;
      const double e_ds = p * ((double)(dv + 2) * u * dpv[2 * j + 1] + e_d +
                               (theta + 2.0 * u) * fabs(dpv[2 * j] - D)) +
                          u_in * fabs(ds);
      const size_t kvrow = (size_t)((pk + j) * g->hkv + hk);
      const double *kr = k_at(g, pk + j, hk);
      kv->terms[kvrow]++;
      for (int64_t c = 0; c < dq; c++) {
        const double kc = kr[c];
        acc[c] += ds * kc;
        err[c] += e_ds * fabs(kc);
        absacc[c] += fabs(ds * kc);
        const size_t e = kvrow * (size_t)dq + (size_t)c;
        kv->dk[e] += ds * qv[c];
        kv->dk_err[e] += e_ds * fabs(qv[c]);
        kv->dk_abs[e] += fabs(ds * qv[c]);
      }
      for (int64_t c = 0; c < dv; c++) {
        const size_t e = kvrow * (size_t)dv + (size_t)c;
        kv->dv[e] += p * go[c];
        kv->dv_err[e] += (theta + u_in) * p * fabs(go[c]);
        kv->dv_abs[e] += p * fabs(go[c]);
      }
    }
  }
  const size_t e0 = (size_t)(((pq + i) * g->hq + h) * dq);
  for (int64_t c = 0; c < dq; c++) {
    const double x = g->scale * acc[c];
    if (dq_ref) dq_ref[e0 + (size_t)c] = x;
    if (dq_bound)
      dq_bound[e0 + (size_t)c] =
          r->n > 0 ? 2.0 * fabs(g->scale) * (err[c] + (double)(r->n + 3) * u * absacc[c]) +
                         u_out * fabs(x) + u_out * min_normal(d->dtype)
                   : 0.0;
  }
}

int gp_ref_attention_bwd(const gp_attention_desc_t *d, const int32_t *cu_q, const int32_t *cu_k,
                         const void *d_o, double *dq_ref, double *dq_bound, double *dk_ref,
                         double *dk_bound, double *dv_ref, double *dv_bound) {
  if (!dtype_ok(d->dtype) || d_o == NULL) return -1;
  if (d->head_dim < 1 || d->head_dim > GP_REF_ATTN_MAX_DIM || d->heads_kv < 1 ||
      d->heads_q % d->heads_kv != 0)
    return -1;
  if ((d->head_dim_v ? d->head_dim_v : d->head_dim) > GP_REF_ATTN_MAX_DIM) return -1;
  if ((cu_q == NULL) != (cu_k == NULL)) return -1;
  geom_t g;
  geom_init(&g, d, cu_q != NULL);
  const size_t rows_k = gp_ref_attention_rows_k(d, cu_k), nkv = rows_k * (size_t)g.hkv;
  const size_t nk = nkv * (size_t)g.dq, nv = nkv * (size_t)g.dv;
  kv_sums_t kv = {
      (double *)calloc(nk, sizeof(double)),  (double *)calloc(nk, sizeof(double)),
      (double *)calloc(nk, sizeof(double)),  (double *)calloc(nv, sizeof(double)),
      (double *)calloc(nv, sizeof(double)),  (double *)calloc(nv, sizeof(double)),
      (int64_t *)calloc(nkv ? nkv : 1, sizeof(int64_t))};
  double *dpv = (double *)malloc(2 * (size_t)(d->seqlen_k > 0 ? d->seqlen_k : 1) * sizeof(double));
  row_t r;
  int rc = -1;
  if (!row_alloc(&r, d->seqlen_k, g.dv) || !geom_load(&g, cu_q, cu_k, d_o) || !kv.dk ||
      !kv.dk_err || !kv.dk_abs || !kv.dv || !kv.dv_err || !kv.dv_abs || !kv.terms || !dpv)
    goto out;
  for (int64_t b = 0; b < d->batch; b++) {
    int64_t sq = g.varlen ? cu_q[b + 1] - cu_q[b] : d->seqlen_q;
    int64_t sk = g.varlen ? cu_k[b + 1] - cu_k[b] : d->seqlen_k;
    int64_t pq = g.varlen ? cu_q[b] : b * d->seqlen_q, pk = g.varlen ? cu_k[b] : b * d->seqlen_k;
    for (int64_t h = 0; h < g.hq; h++)
      for (int64_t i = 0; i < sq; i++) {
        row_fwd(&g, h, i, sq, sk, pq, pk, &r);
        row_bwd(&g, &r, h, i, sk, pq, pk, dpv, &kv, dq_ref, dq_bound);
      }
  }
  const double u = 0x1.0p-24, u_out = gp_ref_unit_roundoff(d->dtype), tiny = u_out * min_normal(d->dtype);
  for (size_t e = 0; e < nk; e++) {
    const double n = (double)kv.terms[e / (size_t)g.dq], x = g.scale * kv.dk[e];
    if (dk_ref) dk_ref[e] = x;
    if (dk_bound)
      dk_bound[e] = n > 0 ? 2.0 * fabs(g.scale) * (kv.dk_err[e] + (n + 3.0) * u * kv.dk_abs[e]) +
                                u_out * fabs(x) + tiny
                          : 0.0;
  }
  for (size_t e = 0; e < nv; e++) {
    const double n = (double)kv.terms[e / (size_t)g.dv];
    if (dv_ref) dv_ref[e] = kv.dv[e];
    if (dv_bound)
      dv_bound[e] = n > 0 ? 2.0 * (kv.dv_err[e] + (n + 2.0) * u * kv.dv_abs[e]) + u_out * fabs(kv.dv[e]) + tiny
                          : 0.0;
  }
  rc = 0;
out:
  row_free(&r);
  geom_free(&g);
  free(kv.dk), free(kv.dk_err), free(kv.dk_abs), free(kv.dv), free(kv.dv_err), free(kv.dv_abs);
  free(kv.terms), free(dpv);
  return rc;
}
