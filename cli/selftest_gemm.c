/*
 * selftest_gemm.c - GEMM (gpuport/blas.h) against the float64 reference of
 * ref/ref_gemm.h: the model shape (a Llama-3-8B projection on GPUs, smaller on the
 * CPU), every type combination over both layouts and all transpositions with padded
 * leading dimensions, the epilogues, strided batches with a broadcast operand, k == 0.
 *
 * C is poisoned with NaN when beta == 0, so an element the library forgets to write
 * fails; elements of C outside the m x n window (leading-dimension padding) must keep
 * their values.
 */
#include "ref_gemm.h"
#include "selftest.h"

#include <stdlib.h>
#include <string.h>

/* op(X) is r x cols: the stored extent of the outer dimension and the minimum ld. */
static int64_t outer(gp_layout_t l, gp_op_t t, int64_t r, int64_t cols) {
  bool row = l == GP_ROW_MAJOR, tr = t == GP_OP_T;
  return row ? (tr ? cols : r) : (tr ? r : cols);
}
static int64_t min_ld(gp_layout_t l, gp_op_t t, int64_t r, int64_t cols) {
  bool row = l == GP_ROW_MAJOR, tr = t == GP_OP_T;
  int64_t v = row ? (tr ? r : cols) : (tr ? cols : r);
  return v > 1 ? v : 1;
}

/* The float64 reference; with TF32 allowed, inputs rounded to 10 mantissa bits (2^-11)
 * and tensor-core sums (2^-23) widen the bound. */
static void reference(const st_gemm_case_t *g, const gp_ref_gemm_t *r, double *ref, double *bound) {
  if (g->tf32)
    gp_ref_gemm_rounded(r, 0x1.0p-11, 0x1.0p-23, ref, bound);
  else
    gp_ref_gemm(r, ref, bound);
}

static gp_status_t call(const st_gemm_case_t *g, const void *a, int64_t lda, const void *b, int64_t ldb,
                        void *cc, int64_t ldc, const void *bias, int64_t sa, int64_t sb,
                        int64_t sc) {
  switch (g->api) {
    case ST_API_GEMM:
      return gp_gemm(NULL, g->layout, g->ta, g->tb, g->m, g->n, g->k, g->alpha, a, g->in, lda, b,
                     g->in, ldb, g->beta, cc, g->out, ldc);
    case ST_API_BATCHED:
      return gp_gemm_strided_batched(NULL, g->layout, g->ta, g->tb, g->m, g->n, g->k, g->alpha, a,
                                     g->in, lda, b, g->in, ldb, g->beta, cc, g->out, ldc, g->batch,
                                     sa, sb, sc);
    default: {
      gp_gemm_desc_t d;
      gp_gemm_desc_init(&d);
      d.layout = g->layout;
      d.transa = g->ta;
      d.transb = g->tb;
      d.m = g->m, d.n = g->n, d.k = g->k;
      d.alpha = g->alpha, d.beta = g->beta;
      d.a = a, d.a_type = g->in, d.lda = lda;
      d.b = b, d.b_type = g->in, d.ldb = ldb;
      d.c = cc, d.c_type = g->out, d.ldc = ldc;
      d.batch = g->batch, d.stride_a = sa, d.stride_b = sb, d.stride_c = sc;
      d.epilogue = g->epi, d.bias = bias, d.bias_type = g->bias_type;
      if (g->tf32) d.compute = GP_COMPUTE_TF32;
      return gp_gemm_ex(NULL, &d);
    }
  }
}

/* x rounded up to a multiple of 8 when the case asks for 16-byte aligned rows. */
static int64_t up8(const st_gemm_case_t *g, int64_t x) { return g->align8 ? (x + 7) / 8 * 8 : x; }

/* Runs one case and compares it. sample_rows > 0 (row-major, N/N, batch 1 only) checks
 * that many rows, in four chunks at random offsets, instead of all of C: the float64
 * reference of a model-sized GEMM would take minutes on the host. */
bool st_gemm_run(st_ctx_t *c, const st_gemm_case_t *g, int64_t sample_rows) {
  const int64_t batch = g->batch > 0 ? g->batch : 1;
  const int64_t lda = up8(g, min_ld(g->layout, g->ta, g->m, g->k) + g->pad);
  const int64_t ldb = up8(g, min_ld(g->layout, g->tb, g->k, g->n) + g->pad);
  const int64_t ldc = min_ld(g->layout, GP_OP_N, g->m, g->n) + g->pad;
  const int64_t sa = up8(g, lda * outer(g->layout, g->ta, g->m, g->k));
  const int64_t sb = g->bcast_b ? 0 : up8(g, ldb * outer(g->layout, g->tb, g->k, g->n));
  const int64_t sc = ldc * outer(g->layout, GP_OP_N, g->m, g->n);
  const size_t na = (size_t)(sa * batch), nb = (size_t)(g->bcast_b ? ldb * outer(g->layout, g->tb, g->k, g->n) : sb * batch);
  const size_t nc = (size_t)(sc * batch), es_in = gp_dtype_size(g->in), es_out = gp_dtype_size(g->out);
  bool ok = false;
  void *ha = st_random(c, g->in, na, -1.0, 1.0), *hb = st_random(c, g->in, nb, -1.0, 1.0);
  void *hbias = g->epi ? st_random(c, g->bias_type, (size_t)g->n, -1.0, 1.0) : NULL;
  void *hc0 = malloc(nc * es_out + 1), *hc = malloc(nc * es_out + 1);
  void *da = NULL, *db = NULL, *dc = NULL, *dbias = NULL;
  double *ref = NULL, *bound = NULL;
  if (!ha || !hb || !hc0 || !hc || (g->epi && !hbias)) {
    st_fail(c, "host allocation failed");
    goto out;
  }
  if (g->beta != 0.0f)
    gp_ref_fill(hc0, g->out, nc, &c->rng, -1.0, 1.0);
  else
    gp_ref_poison(hc0, g->out, nc);
  ST_TRY(c, tool_upload(&da, ha, na * es_in));
  ST_TRY(c, tool_upload(&db, hb, nb * es_in));
  ST_TRY(c, tool_upload(&dc, hc0, nc * es_out));
  if (hbias) ST_TRY(c, tool_upload(&dbias, hbias, (size_t)g->n * gp_dtype_size(g->bias_type)));
  ST_TRY(c, call(g, da, lda, db, ldb, dc, ldc, dbias, sa, sb, sc));
  ST_TRY(c, gp_device_synchronize());
  ST_TRY(c, gp_memcpy(hc, dc, nc * es_out));

  gp_ref_gemm_t r = {g->layout, g->ta, g->tb, g->m, g->n, g->k, g->alpha, NULL, g->in, lda, NULL,
                     g->in, ldb, g->beta, NULL, g->out, ldc, g->epi, hbias, g->bias_type};
  char what[160];
  snprintf(what, sizeof what, "%lldx%lldx%lld %s->%s", (long long)g->m, (long long)g->n,
           (long long)g->k, gp_dtype_name(g->in), gp_dtype_name(g->out));
  /* TF32 input rounding: about 0.8 * 2^-11 relative on random data, allowed 2^-9 more */
  double tol = gp_ref_gemm_rel_tol(g->k, g->out) + (g->tf32 ? 0x1.0p-9 : 0.0);
  if (sample_rows > 0) {
    /* Gather four chunks of rows of the got and reference C. */
    int64_t chunk = sample_rows / 4 > 0 ? sample_rows / 4 : 1, rows = 4 * chunk;
    ref = malloc((size_t)(rows * ldc) * sizeof(double));
    bound = malloc((size_t)(rows * ldc) * sizeof(double));
    unsigned char *got = malloc((size_t)(rows * ldc) * es_out);
    if (!ref || !bound || !got) {
      free(got);
      st_fail(c, "host allocation failed");
      goto out;
    }
    for (int q = 0; q < 4; q++) {
      int64_t i0 = (int64_t)(gp_ref_rng_next(&c->rng) % (uint64_t)(g->m - chunk + 1));
      size_t off = (size_t)(q * chunk * ldc);
      r.m = chunk;
      r.a = (const char *)ha + (size_t)(i0 * lda) * es_in;
      r.b = hb;
      r.c = (const char *)hc0 + (size_t)(i0 * ldc) * es_out;
      gp_ref_gemm_untouched(r.c, g->out, (size_t)(chunk * ldc), ref + off, bound + off);
      reference(g, &r, ref + off, bound + off);
      memcpy(got + off * es_out, (const char *)hc + (size_t)(i0 * ldc) * es_out,
             (size_t)(chunk * ldc) * es_out);
    }
    ok = st_compare(c, what, got, g->out, ref, bound, 0.0, (size_t)(rows * ldc), tol);
    free(got);
  } else {
    ref = malloc(nc * sizeof(double));
    bound = malloc(nc * sizeof(double));
    if (!ref || !bound) {
      st_fail(c, "host allocation failed");
      goto out;
    }
    gp_ref_gemm_untouched(hc0, g->out, nc, ref, bound);
    for (int64_t p = 0; p < batch; p++) {
      r.a = (const char *)ha + (size_t)(p * sa) * es_in;
      r.b = (const char *)hb + (size_t)(p * sb) * es_in;
      r.c = (const char *)hc0 + (size_t)(p * sc) * es_out;
      reference(g, &r, ref + p * sc, bound + p * sc);
    }
    ok = st_compare(c, what, hc, g->out, ref, bound, 0.0, nc, tol);
  }
out:
  gp_free(da);
  gp_free(db);
  gp_free(dc);
  gp_free(dbias);
  free(ha);
  free(hb);
  free(hbias);
  free(hc0);
  free(hc);
  free(ref);
  free(bound);
  return ok && !c->failed;
}

/* The model shape: 2048 tokens x 4096 x 4096 (a Llama-3-8B attention projection) on
 * GPUs, 256 x 512 x 512 on the CPU. */
static void check_model(st_ctx_t *c, const void *arg) {
  (void)arg;
  st_gemm_case_t g = {GP_ROW_MAJOR, GP_OP_N, GP_OP_N, 256, 512, 512, 0, GP_BF16, GP_BF16, 1.0f, 0.0f,
               GP_EPILOGUE_NONE, GP_F32, 1, false, ST_API_GEMM, false, false};
  if (c->big) g.m = 2048, g.n = 4096, g.k = 4096;
  if (c->quick) g.m = 64, g.n = 128, g.k = 128;
  if (!st_gemm_run(c, &g, c->big ? 32 : 0)) return;
  if (c->big) {
    char cmp[sizeof c->summary];
    snprintf(cmp, sizeof cmp, "%s", c->summary);
    st_note(c, "%s (4 x 8 sampled rows)", cmp);
  }
}

/* Every layout x transa x transb at odd shapes with ld padding, beta 0 and 0.5. */
static void check_combo(st_ctx_t *c, const void *arg) {
  const gp_dtype_t *t = arg;
  for (int v = 0; v < 8; v++) {
    st_gemm_case_t g = {v & 4 ? GP_COL_MAJOR : GP_ROW_MAJOR, v & 2 ? GP_OP_T : GP_OP_N,
                 v & 1 ? GP_OP_T : GP_OP_N, 67, 45, 129, 3, t[0], t[1], 0.75f,
                 v & 1 ? 0.5f : 0.0f, GP_EPILOGUE_NONE, GP_F32, 1, false, ST_API_GEMM, false, false};
      if (!st_gemm_run(c, &g, 0)) return;
  }
  st_note(c, "67x45x129 %s->%s, 8 layout/op variants, ld+3, beta 0 and 0.5: worst rel_norm=%.3g",
          gp_dtype_name(t[0]), gp_dtype_name(t[1]), c->worst_rel);
}

static void check_epilogue(st_ctx_t *c, const void *arg) {
  (void)arg;
  static const gp_epilogue_t epi[] = {GP_EPILOGUE_BIAS, GP_EPILOGUE_BIAS_RELU,
                                      GP_EPILOGUE_BIAS_GELU, GP_EPILOGUE_BIAS_GELU_TANH};
  for (int v = 0; v < 8; v++) {
    st_gemm_case_t g = {GP_ROW_MAJOR, GP_OP_N, v & 1 ? GP_OP_T : GP_OP_N, 64, 96, 80, 0, GP_BF16,
                 v & 1 ? GP_BF16 : GP_F32, 1.0f, 0.0f, epi[v / 2], v & 1 ? GP_BF16 : GP_F32, 1,
                 false, ST_API_EX, false, false};
      if (!st_gemm_run(c, &g, 0)) return;
  }
  st_note(c, "64x96x80 bf16, bias/relu/gelu/gelu_tanh, f32 and bf16 bias: worst rel_norm=%.3g",
          c->worst_rel);
}

static void check_batched(st_ctx_t *c, const void *arg) {
  (void)arg;
  st_gemm_case_t g = {GP_ROW_MAJOR, GP_OP_N, GP_OP_T, 33, 40, 72, 1, GP_F16, GP_F32, 1.0f, 0.25f,
               GP_EPILOGUE_NONE, GP_F32, 3, true, ST_API_BATCHED, false, false};
  if (!st_gemm_run(c, &g, 0)) return;
  g.bcast_b = false, g.layout = GP_COL_MAJOR, g.in = g.out = GP_BF16, g.beta = 0.0f;
  if (!st_gemm_run(c, &g, 0)) return;
  st_note(c, "3 x 33x40x72, broadcast B and strided, f16->f32 and bf16: worst rel_norm=%.3g",
          c->worst_rel);
}

/* k == 0 scales C by beta (BLAS rule). */
static void check_k0(st_ctx_t *c, const void *arg) {
  (void)arg;
  st_gemm_case_t g = {GP_ROW_MAJOR, GP_OP_N, GP_OP_N, 5, 7, 0, 2, GP_F32, GP_F32, 1.0f, 0.5f,
               GP_EPILOGUE_NONE, GP_F32, 1, false, ST_API_GEMM, false, false};
  st_gemm_run(c, &g, 0);
}

static const gp_dtype_t t_f32[2] = {GP_F32, GP_F32}, t_f16[2] = {GP_F16, GP_F16},
                        t_f16f32[2] = {GP_F16, GP_F32}, t_bf16[2] = {GP_BF16, GP_BF16},
                        t_bf16f32[2] = {GP_BF16, GP_F32};

const st_check_t st_gemm_checks[] = {
    {"gemm.model_bf16", check_model, NULL},
    {"gemm.f32", check_combo, t_f32},
    {"gemm.f16", check_combo, t_f16},
    {"gemm.f16_f32", check_combo, t_f16f32},
    {"gemm.bf16", check_combo, t_bf16},
    {"gemm.bf16_f32", check_combo, t_bf16f32},
    {"gemm.epilogue", check_epilogue, NULL},
    {"gemm.batched", check_batched, NULL},
    {"gemm.k0", check_k0, NULL},
    {NULL, NULL, NULL},
};
