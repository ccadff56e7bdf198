/*
 * test_attention_bwd_amd.c - the AMD MFMA attention backward (hip/attention_bwd_mfma.cu,
 * src/attention_amd.h) against a float64 reference: the MFMA emulation at wave64 on the
 * cpu backend, the real kernels on an AMD GPU with the hip backend. Until the public
 * gp_attention_bwd is merged, the test builds the kernels' parameters itself (with the
 * assumptions listed in src/attention_amd.h: d_o, dq, dk, dv have the strides of o, q, k,
 * v) and launches them through gp__attn_amd_bwd_launch().
 *
 * Each case: fresh random q, k, v, dO (uniform in [-1, 1), never zero; the seed printed,
 * GP_TEST_SEED replays), the forward through gp_attention_fwd (the MFMA kernels: o and lse
 * as the backward will get them), dq, dk, dv poisoned with NaN, the backward twice (the
 * two results must be bitwise equal: no atomics), every element of dq, dk, dv checked
 * against its bound, the relative norm of each, and the padding between rows untouched.
 *
 * Reference and bound (first order, Higham-style, per element; u = 2^-24, u_in = unit
 * roundoff of the input type, which is also the output's; row i of head h, key j):
 *   s_ij = scale q_i.k_j, lse_i and O exact in float64 (tool/ref_attention.h, which also
 *   bounds the device's lse and O: lse_bound_i, o_bound_ic), P_ij = exp(s_ij - lse_i),
 *   D_i = dO_i.O_i, dP_ij = dO_i.v_j, dS_ij = P_ij (dP_ij - D_i).
 *   delta_i = (d + 2) u |scale| max_j sum_c |q_ic k_jc| + lse_bound_i + 4u |lse_i| + 6u
 *     bounds the relative error of the kernel's P_ij (score, lse, base-2 exponential);
 *   E_dP_ij = gamma_dv sum_c |dO_ic v_jc|;  E_D_i = sum_c |dO_ic| o_bound_ic + gamma_dv sum_c |dO_ic O_ic|;
 *   E_dS_ij = P_ij (E_dP_ij + E_D_i) + delta_i |dS_ij| + (u_in + u) |dS_ij|   (dS rounded to u_in);
 *   dV_jc = sum_hi P_ij dO_ic:        err <= sum |P_ij dO_ic| (delta_i + u_in + gamma_N);
 *   dQ_ic = scale sum_j dS_ij k_jc:   err <= |scale| sum_j (E_dS_ij + gamma_N |dS_ij|) |k_jc|;
 *   dK_jc = scale sum_hi dS_ij q_ic:  err <= |scale| sum_hi (E_dS_ij + gamma_N |dS_ij|) |q_ic|;
 *   each doubled for second-order terms, plus u_in |g| (the output rounding) and u_in times
 *   the smallest normal of the type (subnormal results). N is the number of terms.
 * The relative norm of each gradient's error is held to 4 u_in: the element bounds are
 * worst cases, this catches systematic errors (a wrong scale, a mask off by one key).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuport.h>

#include "ref.h"
#include "ref_attention.h"
#include "ref_gemm.h"

static uint64_t g_seed;

#if defined(GP_BUILD_CPU) || defined(GP_BUILD_HIP)
#include "attention_amd.h"

typedef struct bcase {
  const char *name;
  gp_dtype_t dtype;
  int64_t batch, sq, sk, hq, hkv, d;
  int causal;
  int64_t wl, wr;
  int pad;               /* sequence strides padded by 3 elements */
  float scale;
  const int32_t *lens_q; /* varlen lengths, or NULL */
  const int32_t *lens_k;
} bcase_t;

static const int32_t vq[] = {17, 40}, vk[] = {30, 5};

static const bcase_t cases[] = {
    /* name                          dtype    b  sq  sk  hq hkv  d  causal  wl  wr pad scale */
    {"bf16 d64 70x90 gqa causal",    GP_BF16, 1, 70, 90, 4, 2, 64,  1,     -1, -1, 0, 0, NULL, NULL},
    {"f16 d32 40x40 window",         GP_F16,  2, 40, 40, 2, 1, 32,  0,      8,  4, 0, 0, NULL, NULL},
    {"bf16 d128 33x65",              GP_BF16, 1, 33, 65, 2, 2, 128, 0,     -1, -1, 0, 0.2f, NULL, NULL},
    {"f16 d64 varlen causal mqa",    GP_F16,  2, 40, 30, 2, 1, 64,  1,     -1, -1, 0, 0, vq, vk},
    {"f16 d64 64x20 causal sq>sk",   GP_F16,  1, 64, 20, 2, 2, 64,  1,     -1, -1, 1, 0, NULL, NULL},
    {"bf16 d32 150x140 pad",         GP_BF16, 1, 150, 140, 2, 1, 32, 0,    -1, -1, 1, 0, NULL, NULL},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

typedef struct lay {
  int64_t bs, ss, hs;
} lay_t;

static int visible(const bcase_t *c, int64_t i, int64_t j, int64_t sq, int64_t sk) {
  const int64_t diag = i + sk - sq;
  int64_t wr = c->wr;
  if (c->causal && (wr < 0 || wr > 0)) wr = 0;
  if (j < 0 || j >= sk) return 0;
  if (wr >= 0 && j > diag + wr) return 0;
  if (c->wl >= 0 && j < diag - c->wl) return 0;
  return 1;
}

static void *dev_copy(const void *h, size_t bytes) {
  void *p = NULL;
  ck_assert_int_eq(gp_malloc(&p, bytes), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(p, h, bytes), GP_SUCCESS);
  return p;
}

static double ld(const void *a, gp_dtype_t t, int64_t i) { return gp_ref_load(a, t, (size_t)i); }

/* Compares one gradient (n elements at host h) with ref/bound at the positions listed
 * (pos[e] = element offset of dense entry e), and the gaps (not listed) untouched. */
static void check_grad(const char *what, const bcase_t *c, const void *h, size_t nall, const int64_t *pos,
                       const double *ref, const double *bnd, size_t n) {
  gp_ref_cmp_t cmp;
  void *dense = malloc(n * 2 + 2);
  unsigned char *covered = calloc(nall, 1);
  for (size_t e = 0; e < n; e++) {
    memcpy((char *)dense + 2 * e, (const char *)h + 2 * pos[e], 2);
    covered[pos[e]] = 1;
  }
  gp_ref_compare(&cmp, dense, c->dtype, ref, bnd, 0.0, n);
  char buf[256];
  gp_ref_cmp_format(&cmp, buf, sizeof buf);
  const double tol = 4.0 * gp_ref_unit_roundoff(c->dtype);
  printf("  %-28s %s: %s (rel tol %.2g)\n", c->name, what, buf, tol);
  ck_assert_msg(cmp.n_bad == 0, "%s (seed 0x%llx): %s: %s", c->name, (unsigned long long)g_seed, what, buf);
  ck_assert_msg(cmp.rel_norm_err <= tol, "%s (seed 0x%llx): %s relative norm error %.3g > %.3g", c->name,
                (unsigned long long)g_seed, what, cmp.rel_norm_err, tol);
  size_t touched = 0;
  for (size_t i = 0; i < nall; i++)
    if (!covered[i] && !isnan(gp_ref_load(h, c->dtype, i))) touched++;
  ck_assert_msg(touched == 0, "%s: %s: %zu elements outside the tensor written", c->name, what, touched);
  free(dense);
  free(covered);
}

START_TEST(test_bwd) {
  const bcase_t *c = &cases[_i];
  int n = 0;
  if (gp_device_count(&n) != GP_SUCCESS || n == 0) return;
  const gp_dtype_t t = c->dtype;
  const size_t es = 2;
  const int64_t d = c->d, G = c->hq / c->hkv;
  const int varlen = c->lens_q != NULL;
  int32_t cu_q[4] = {0}, cu_k[4] = {0};
  if (varlen)
    for (int64_t b = 0; b < c->batch; b++) cu_q[b + 1] = cu_q[b] + c->lens_q[b], cu_k[b + 1] = cu_k[b] + c->lens_k[b];
  const int64_t rows_q = varlen ? cu_q[c->batch] : c->sq, rows_k = varlen ? cu_k[c->batch] : c->sk;
  const int64_t nb = varlen ? 1 : c->batch, pad = c->pad ? 3 : 0;
  const lay_t lq = {rows_q * (c->hq * d + pad), c->hq * d + pad, d};
  const lay_t lk = {rows_k * (c->hkv * d + pad), c->hkv * d + pad, d};
  const size_t nq = (size_t)(nb * lq.bs), nk = (size_t)(nb * lk.bs);
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ (0x2545f4914f6cdd1dull * (uint64_t)(_i + 1)));
  void *hq = malloc(nq * es), *hk = malloc(nk * es), *hv = malloc(nk * es), *hdo = malloc(nq * es);
  void *ho = malloc(nq * es), *hdq = malloc(nq * es), *hdk = malloc(nk * es), *hdv = malloc(nk * es);
  void *hdq2 = malloc(nq * es), *hdk2 = malloc(nk * es), *hdv2 = malloc(nk * es);
  gp_ref_fill(hq, t, nq, &rng, -1.0, 1.0);
  gp_ref_fill(hk, t, nk, &rng, -1.0, 1.0);
  gp_ref_fill(hv, t, nk, &rng, -1.0, 1.0);
  gp_ref_fill(hdo, t, nq, &rng, -1.0, 1.0);
  gp_ref_poison(ho, t, nq);
  const size_t nlse = (size_t)(c->batch * c->hq * c->sq);
  float *hlse = malloc(nlse * sizeof(float));
  gp_ref_poison(hlse, GP_F32, nlse);
  void *dq_ = dev_copy(hq, nq * es), *dk_ = dev_copy(hk, nk * es), *dv_ = dev_copy(hv, nk * es);
  void *ddo = dev_copy(hdo, nq * es), *dout = dev_copy(ho, nq * es);
  float *dlse = dev_copy(hlse, nlse * sizeof(float));
  int32_t *dcu_q = varlen ? dev_copy(cu_q, sizeof cu_q) : NULL, *dcu_k = varlen ? dev_copy(cu_k, sizeof cu_k) : NULL;

  /* Forward: o and lse as the backward gets them. */
  gp_attention_desc_t desc;
  gp_attention_desc_init(&desc);
  desc.dtype = t;
  desc.batch = c->batch;
  desc.seqlen_q = c->sq;
  desc.seqlen_k = c->sk;
  desc.heads_q = c->hq;
  desc.heads_kv = c->hkv;
  desc.head_dim = d;
  desc.q = dq_, desc.k = dk_, desc.v = dv_, desc.o = dout, desc.lse = dlse;
  desc.q_batch_stride = varlen ? 0 : lq.bs, desc.q_seq_stride = lq.ss, desc.q_head_stride = lq.hs;
  desc.k_batch_stride = varlen ? 0 : lk.bs, desc.k_seq_stride = lk.ss, desc.k_head_stride = lk.hs;
  desc.v_batch_stride = varlen ? 0 : lk.bs, desc.v_seq_stride = lk.ss, desc.v_head_stride = lk.hs;
  desc.o_batch_stride = varlen ? 0 : lq.bs, desc.o_seq_stride = lq.ss, desc.o_head_stride = lq.hs;
  desc.causal = c->causal;
  desc.window_left = c->wl;
  desc.window_right = c->wr;
  desc.softmax_scale = c->scale;
  desc.cu_seqlens_q = dcu_q;
  desc.cu_seqlens_k = dcu_k;
  if (gp_backend() == GP_BACKEND_CPU) setenv("GP_CPU_ATTENTION", "mfma", 1);
  ck_assert_msg(gp_attention_fwd(NULL, &desc) == GP_SUCCESS, "%s: forward: %s", c->name, gp_last_error_message());
  unsetenv("GP_CPU_ATTENTION");
  ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);

  /* The backward's parameters (what gp_attention_bwd would build). */
  gp__attn_bwd_params_t bp;
  memset(&bp, 0, sizeof bp);
  gp__attn_params_t *f = &bp.f;
  f->q = dq_, f->k = dk_, f->v = dv_, f->o = dout, f->lse = dlse, f->cu_q = dcu_q, f->cu_k = dcu_k;
  f->batch = c->batch, f->seqlen_q = c->sq, f->seqlen_k = c->sk, f->heads_q = c->hq, f->heads_kv = c->hkv;
  f->head_dim = f->head_dim_v = d;
  f->q_bs = f->o_bs = varlen ? 0 : lq.bs, f->q_ss = f->o_ss = lq.ss, f->q_hs = f->o_hs = lq.hs;
  f->k_bs = f->v_bs = varlen ? 0 : lk.bs, f->k_ss = f->v_ss = lk.ss, f->k_hs = f->v_hs = lk.hs;
  f->window_left = c->wl;
  f->window_right = c->causal && c->wr != 0 ? 0 : c->wr;
  f->scale = c->scale != 0.0f ? c->scale : (float)(1.0 / sqrt((double)d));
  f->dtype = (int)t;
  char why[96];
  ck_assert_msg(gp__attn_amd_bwd_choose(f, why, sizeof why), "%s: not taken: %s", c->name, why);
  bp.do_bs = bp.dq_bs = f->q_bs, bp.do_ss = bp.dq_ss = lq.ss, bp.do_hs = bp.dq_hs = lq.hs;
  bp.dk_bs = bp.dv_bs = f->k_bs, bp.dk_ss = bp.dv_ss = lk.ss, bp.dk_hs = bp.dv_hs = lk.hs;
  void *ws = NULL;
  ck_assert_int_eq(gp_malloc(&ws, gp__attn_amd_bwd_workspace(f)), GP_SUCCESS);
  bp.delta = ws;
  bp.d_o = ddo;
  void *out[3][2];
  void *hgot[3][2] = {{hdq, hdq2}, {hdk, hdk2}, {hdv, hdv2}};
  const size_t cnt[3] = {nq, nk, nk};
  for (int run = 0; run < 2; run++) {
    for (int g = 0; g < 3; g++) {
      gp_ref_poison(hgot[g][run], t, cnt[g]);
      out[g][run] = dev_copy(hgot[g][run], cnt[g] * es);
    }
    bp.dq = out[0][run], bp.dk = out[1][run], bp.dv = out[2][run];
    char what[320];
    gp_status_t st = gp__attn_amd_bwd_launch(NULL, &bp, what, sizeof what);
    ck_assert_msg(st == GP_SUCCESS, "%s: backward: %s", c->name, gp_last_error_message());
    ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
    for (int g = 0; g < 3; g++) ck_assert_int_eq(gp_memcpy(hgot[g][run], out[g][run], cnt[g] * es), GP_SUCCESS);
  }
  ck_assert_msg(memcmp(hdq, hdq2, nq * es) == 0 && memcmp(hdk, hdk2, nk * es) == 0 &&
                    memcmp(hdv, hdv2, nk * es) == 0,
                "%s: two runs of the backward differ (it must be bitwise reproducible)", c->name);

  /* Forward reference (exact lse and O, and the bounds of the device's lse and O). */
  gp_attention_desc_t rd = desc;
  rd.q = hq, rd.k = hk, rd.v = hv;
  const size_t rows = gp_ref_attention_rows(&rd, varlen ? cu_q : NULL);
  double *oref = malloc(rows * c->hq * d * sizeof(double)), *obnd = malloc(rows * c->hq * d * sizeof(double));
  double *lref = malloc(nlse * sizeof(double)), *lbnd = malloc(nlse * sizeof(double));
  ck_assert_int_eq(gp_ref_attention_fwd(&rd, varlen ? cu_q : NULL, varlen ? cu_k : NULL, oref, obnd, lref, lbnd), 0);

  /* Backward reference, dense [rows][heads][d] for dq, [rows_k * batch][hkv][d] for dk, dv. */
  const size_t nkrows = (size_t)(varlen ? rows_k : c->batch * c->sk);
  double *rq = calloc(rows * c->hq * d, sizeof(double)), *bq = calloc(rows * c->hq * d, sizeof(double));
  double *rk = calloc(nkrows * c->hkv * d, sizeof(double)), *bk = calloc(nkrows * c->hkv * d, sizeof(double));
  double *rv = calloc(nkrows * c->hkv * d, sizeof(double)), *bv = calloc(nkrows * c->hkv * d, sizeof(double));
  int64_t *pq = malloc(rows * c->hq * d * sizeof(int64_t)), *pk = malloc(nkrows * c->hkv * d * sizeof(int64_t));
  const double u = ldexp(1.0, -24), uin = gp_ref_unit_roundoff(t), scale = f->scale;
  double *P = malloc((size_t)c->sk * sizeof(double)), *dS = malloc((size_t)c->sk * sizeof(double));
  double *EdS = malloc((size_t)c->sk * sizeof(double));
  for (int64_t b = 0; b < c->batch; b++) {
    const int64_t sq = varlen ? c->lens_q[b] : c->sq, sk = varlen ? c->lens_k[b] : c->sk;
    const int64_t r0 = varlen ? cu_q[b] : b * c->sq, k0r = varlen ? cu_k[b] : b * c->sk;
    const int64_t qb = varlen ? 0 : b * lq.bs, kb = varlen ? 0 : b * lk.bs;
    const int64_t qrow0 = varlen ? cu_q[b] : 0, krow0 = varlen ? cu_k[b] : 0;
    for (int64_t h = 0; h < c->hq; h++) {
      const int64_t kvh = h / G;
      for (int64_t i = 0; i < sq; i++) {
        const int64_t qo = qb + (qrow0 + i) * lq.ss + h * lq.hs;
        const size_t li = varlen ? (size_t)(h * cu_q[c->batch] + qrow0 + i) : (size_t)((b * c->hq + h) * c->sq + i);
        const double *orow = oref + ((r0 + i) * c->hq + h) * d, *obrow = obnd + ((r0 + i) * c->hq + h) * d;
        double Di = 0.0, EDi = 0.0, aDi = 0.0, smax = 0.0;
        for (int64_t e = 0; e < d; e++) {
          const double g_ = ld(hdo, t, qo + e);
          Di += g_ * orow[e];
          aDi += fabs(g_ * orow[e]);
          EDi += fabs(g_) * obrow[e];
        }
        EDi += gp_ref_gamma((double)d + 1, u) * aDi;
        for (int64_t j = 0; j < sk; j++) {
          double a = 0.0;
          for (int64_t e = 0; e < d; e++)
            a += fabs(ld(hq, t, qo + e) * ld(hk, t, kb + (krow0 + j) * lk.ss + kvh * lk.hs + e));
          if (a > smax) smax = a;
        }
        const double delta_i = ((double)d + 2) * u * fabs(scale) * smax + lbnd[li] + 4 * u * fabs(lref[li]) + 6 * u;
        for (int64_t e = 0; e < d; e++) pq[((r0 + i) * c->hq + h) * d + e] = qo + e;
        for (int64_t j = 0; j < sk; j++) {
          P[j] = dS[j] = EdS[j] = 0.0;
          if (!visible(c, i, j, sq, sk)) continue;
          const int64_t ko = kb + (krow0 + j) * lk.ss + kvh * lk.hs;
          double s = 0.0, dp = 0.0, adp = 0.0;
          for (int64_t e = 0; e < d; e++) {
            s += ld(hq, t, qo + e) * ld(hk, t, ko + e);
            dp += ld(hdo, t, qo + e) * ld(hv, t, ko + e);
            adp += fabs(ld(hdo, t, qo + e) * ld(hv, t, ko + e));
          }
          P[j] = exp(scale * s - lref[li]);
          dS[j] = P[j] * (dp - Di);
          EdS[j] = P[j] * (gp_ref_gamma((double)d + 1, u) * adp + EDi + u * (fabs(dp) + fabs(Di))) +
                   (delta_i + uin + u) * fabs(dS[j]);
        }
        const double gN = gp_ref_gamma((double)((sk > sq ? sk : sq) * G) + 2, u);
        for (int64_t e = 0; e < d; e++) {
          double g_ = 0.0, bb = 0.0;
          for (int64_t j = 0; j < sk; j++) {
            if (P[j] == 0.0) continue;
            const double kv = ld(hk, t, kb + (krow0 + j) * lk.ss + kvh * lk.hs + e);
            g_ += dS[j] * kv;
            bb += (EdS[j] + gN * fabs(dS[j])) * fabs(kv);
          }
          const size_t x = (size_t)(((r0 + i) * c->hq + h) * d + e);
          rq[x] = scale * g_;
          bq[x] += 2 * fabs(scale) * bb;
        }
        for (int64_t j = 0; j < sk; j++) {
          if (P[j] == 0.0) continue;
          const size_t kx = (size_t)(((k0r + j) * c->hkv + kvh) * d);
          for (int64_t e = 0; e < d; e++) {
            const double qv = ld(hq, t, qo + e), gv = ld(hdo, t, qo + e);
            rk[kx + e] += scale * dS[j] * qv;
            bk[kx + e] += 2 * fabs(scale) * (EdS[j] + gN * fabs(dS[j])) * fabs(qv);
            rv[kx + e] += P[j] * gv;
            bv[kx + e] += 2 * P[j] * fabs(gv) * (delta_i + uin + gN);
          }
        }
      }
    }
    for (int64_t j = 0; j < sk; j++)
      for (int64_t kvh = 0; kvh < c->hkv; kvh++)
        for (int64_t e = 0; e < d; e++)
          pk[((k0r + j) * c->hkv + kvh) * d + e] = kb + (krow0 + j) * lk.ss + kvh * lk.hs + e;
  }
  /* The output rounding and the subnormal floor. */
  const double tiny = t == GP_F16 ? ldexp(1.0, -14) : ldexp(1.0, -126);
  for (size_t x = 0; x < rows * c->hq * d; x++) bq[x] += uin * fabs(rq[x]) + uin * tiny;
  for (size_t x = 0; x < nkrows * c->hkv * d; x++) {
    bk[x] += uin * fabs(rk[x]) + uin * tiny;
    bv[x] += uin * fabs(rv[x]) + uin * tiny;
  }
  check_grad("dq", c, hdq, nq, pq, rq, bq, rows * c->hq * d);
  check_grad("dk", c, hdk, nk, pk, rk, bk, nkrows * c->hkv * d);
  check_grad("dv", c, hdv, nk, pk, rv, bv, nkrows * c->hkv * d);

  for (int g = 0; g < 3; g++) gp_free(out[g][0]), gp_free(out[g][1]);
  gp_free(ws), gp_free(dq_), gp_free(dk_), gp_free(dv_), gp_free(ddo), gp_free(dout), gp_free(dlse);
  if (varlen) gp_free(dcu_q), gp_free(dcu_k);
  free(hq), free(hk), free(hv), free(hdo), free(ho), free(hdq), free(hdk), free(hdv), free(hdq2), free(hdk2);
  free(hdv2), free(hlse), free(oref), free(obnd), free(lref), free(lbnd), free(rq), free(bq), free(rk), free(bk);
  free(rv), free(bv), free(pq), free(pk), free(P), free(dS), free(EdS);
}
END_TEST

/* The choice: what the MFMA backward leaves to others, with the reason. */
START_TEST(test_choice) {
  gp__attn_params_t p;
  memset(&p, 0, sizeof p);
  float lse = 0.0f;
  p.dtype = GP_BF16, p.head_dim = p.head_dim_v = 64, p.lse = &lse;
  char why[96];
  ck_assert(gp__attn_amd_bwd_choose(&p, why, sizeof why));
  p.head_dim = p.head_dim_v = 96;
  ck_assert(!gp__attn_amd_bwd_choose(&p, why, sizeof why) && strstr(why, "head_dim 96"));
  p.head_dim = 64, p.head_dim_v = 32;
  ck_assert(!gp__attn_amd_bwd_choose(&p, why, sizeof why) && strstr(why, "head_dim_v"));
  p.head_dim_v = 64, p.dtype = GP_F32;
  ck_assert(!gp__attn_amd_bwd_choose(&p, why, sizeof why) && strstr(why, "f32"));
  p.dtype = GP_F16, p.lse = NULL;
  ck_assert(!gp__attn_amd_bwd_choose(&p, why, sizeof why) && strstr(why, "lse"));
  p.batch = 3, p.heads_q = 4, p.seqlen_q = 50;
  ck_assert_uint_eq(gp__attn_amd_bwd_workspace(&p), 3 * 4 * 50 * sizeof(float));
}
END_TEST

static Suite *bwd_suite(void) {
  Suite *s = suite_create("attention_bwd_amd");
  TCase *tc = tcase_create("mfma");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_choice);
  tcase_add_loop_test(tc, test_bwd, 0, NCASES);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  printf("test_attention_bwd_amd: seed 0x%llx (replay with GP_TEST_SEED=0x%llx)\n", (unsigned long long)g_seed,
         (unsigned long long)g_seed);
  fflush(stdout);
  SRunner *sr = srunner_create(bwd_suite());
  if (gp_backend() != GP_BACKEND_CPU) {
    srunner_set_fork_status(sr, CK_NOFORK);
    int n = 0;
    if (gp_device_count(&n) != GP_SUCCESS || n == 0) {
      printf("test_attention_bwd_amd: no %s device: skipped\n", gp_backend_name());
      srunner_free(sr);
      return 77;
    }
  }
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
#else
/* The MFMA kernels exist on the hip and cpu backends only: nothing to test here. */
int main(void) {
  (void)g_seed;
  printf("test_attention_bwd_amd: the AMD MFMA backward is not built on the %s backend\n", gp_backend_name());
  return EXIT_SUCCESS;
}
#endif
