/* ref_attention.c - float64 attention forward and its error bound (see ref_attention.h). */
#include "ref_attention.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

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
  return t == GP_F16 ? 0x1.0p-14 : t == GP_BF16 ? 0x1.0p-126 : 0x1.0p-126;
}

size_t gp_ref_attention_rows(const gp_attention_desc_t *d, const int32_t *cu_q) {
  if (cu_q) return (size_t)cu_q[d->batch];
  return (size_t)(d->batch * d->seqlen_q);
}

double gp_ref_attention_rel_tol(gp_dtype_t dtype) {
  double u = 0x1.0p-24, u_out = gp_ref_unit_roundoff(dtype);
  double u_p = dtype == GP_F32 ? u : u_out;
  return 1.5 * u_out + 0.5 * u_p + 64.0 * u;
}

int gp_ref_attention_fwd(const gp_attention_desc_t *d, const int32_t *cu_q, const int32_t *cu_k,
                         double *o_ref, double *o_bound, double *lse_ref, double *lse_bound) {
  if (d->dtype != GP_F32 && d->dtype != GP_F16 && d->dtype != GP_BF16) return -1;
  if (d->head_dim < 1 || d->heads_kv < 1 || d->heads_q % d->heads_kv != 0) return -1;
  if ((cu_q == NULL) != (cu_k == NULL)) return -1;
  const bool varlen = cu_q != NULL;
  const int64_t dq = d->head_dim, dv = d->head_dim_v ? d->head_dim_v : d->head_dim;
  const int64_t hq = d->heads_q, hkv = d->heads_kv, group = hq / hkv;
  /* Strides, defaulted here independently of the library. */
  int64_t qs = d->q_seq_stride ? d->q_seq_stride : hq * dq;
  int64_t qh = d->q_head_stride ? d->q_head_stride : dq;
  int64_t qb = varlen ? 0 : d->q_batch_stride ? d->q_batch_stride : d->seqlen_q * hq * dq;
  int64_t ks = d->k_seq_stride ? d->k_seq_stride : hkv * dq;
  int64_t kh = d->k_head_stride ? d->k_head_stride : dq;
  int64_t kb = varlen ? 0 : d->k_batch_stride ? d->k_batch_stride : d->seqlen_k * hkv * dq;
  int64_t vs = d->v_seq_stride ? d->v_seq_stride : hkv * dv;
  int64_t vh = d->v_head_stride ? d->v_head_stride : dv;
  int64_t vb = varlen ? 0 : d->v_batch_stride ? d->v_batch_stride : d->seqlen_k * hkv * dv;
  double scale = d->softmax_scale != 0.0f ? (double)d->softmax_scale : 1.0 / sqrt((double)dq);

  const double u = 0x1.0p-24, u_out = gp_ref_unit_roundoff(d->dtype);
  const double u_p = d->dtype == GP_F32 ? u : u_out;
  const int64_t total_q = varlen ? cu_q[d->batch] : 0;
  double *s = (double *)malloc((size_t)(d->seqlen_k > 0 ? d->seqlen_k : 1) * sizeof(double));
  double *a = (double *)malloc((size_t)dv * sizeof(double));
  double *acc = (double *)malloc((size_t)dv * sizeof(double));
  if (!s || !a || !acc) {
    free(s), free(a), free(acc);
    return -1;
  }
  for (int64_t b = 0; b < d->batch; b++) {
    int64_t sq = varlen ? cu_q[b + 1] - cu_q[b] : d->seqlen_q;
    int64_t sk = varlen ? cu_k[b + 1] - cu_k[b] : d->seqlen_k;
    int64_t q0 = varlen ? cu_q[b] : 0, k0 = varlen ? cu_k[b] : 0;
    for (int64_t h = 0; h < hq; h++) {
      int64_t g = h / group;
      for (int64_t i = 0; i < sq; i++) {
        double m = -INFINITY, maxabs = 0.0;
        int64_t n = 0;
        for (int64_t j = 0; j < sk; j++) {
          if (!visible(d, i, j, sq, sk)) continue;
          double dot = 0.0, absdot = 0.0;
          for (int64_t c = 0; c < dq; c++) {
            double x = gp_ref_load(d->q, d->dtype, (size_t)(b * qb + (q0 + i) * qs + h * qh + c));
            double y = gp_ref_load(d->k, d->dtype, (size_t)(b * kb + (k0 + j) * ks + g * kh + c));
            dot += x * y;
            absdot += fabs(x * y);
          }
          s[j] = scale * dot;
          if (s[j] > m) m = s[j];
          if (fabs(scale) * absdot > maxabs) maxabs = fabs(scale) * absdot;
          n++;
        }
        double l = 0.0;
        for (int64_t c = 0; c < dv; c++) acc[c] = a[c] = 0.0;
        for (int64_t j = 0; j < sk && n > 0; j++) {
          if (!visible(d, i, j, sq, sk)) continue;
          double p = exp(s[j] - m);
          l += p;
          for (int64_t c = 0; c < dv; c++) {
            double x = gp_ref_load(d->v, d->dtype, (size_t)(b * vb + (k0 + j) * vs + g * vh + c));
            acc[c] += p * x;
            a[c] += p * fabs(x);
          }
        }
        double eps_s = (double)(dq + 2) * u * maxabs;
        double delta = 2.0 * eps_s + 4.0 * u + u_p + 2.0 * (double)(n + 2) * u;
        size_t row = (size_t)(varlen ? q0 + i : b * d->seqlen_q + i);
        for (int64_t c = 0; c < dv; c++) {
          size_t e = (row * (size_t)hq + (size_t)h) * (size_t)dv + (size_t)c;
          double o = n > 0 ? acc[c] / l : 0.0, aa = n > 0 ? a[c] / l : 0.0;
          if (o_ref) o_ref[e] = o;
          if (o_bound)
            o_bound[e] = n > 0 ? 4.0 * delta * aa + u_out * fabs(o) + u_out * min_normal(d->dtype) : 0.0;
        }
        size_t le = varlen ? (size_t)(h * total_q + q0 + i) : (size_t)((b * hq + h) * d->seqlen_q + i);
        double lse = n > 0 ? m + log(l) : -INFINITY;
        if (lse_ref) lse_ref[le] = lse;
        if (lse_bound)
          lse_bound[le] = n > 0 ? 2.0 * (2.0 * eps_s + (double)(n + 6) * u) + 2.0 * u * fabs(lse) : 0.0;
      }
    }
  }
  free(s), free(a), free(acc);
  return 0;
}
