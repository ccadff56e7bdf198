/*
 * demo.c - `gpuport demo`: the forward pass of one transformer decoder block at model
 * shapes, built from gp_gemm_ex (bias, GELU and residual epilogues) and
 * gp_attention_fwd, timed step by step, with one token's row of every step recomputed
 * in float64 from that step's inputs and held to the references' error bounds.
 *
 *   qkv = x Wqkv + bqkv                    (GEMM, bias epilogue)
 *   a   = attention(q, k, v), causal       (reads q, k, v in place from qkv by strides)
 *   h   = x + a Wo + bo                    (GEMM, bias epilogue, beta = 1 on a copy of x)
 *   g   = GELU(h W1 + b1)                  (GEMM, bias + GELU epilogue)
 *   y   = h + g W2 + b2                    (GEMM, bias epilogue, beta = 1 on a copy of h)
 *
 * Normalisation layers are left out (gpuport has no normalisation call); everything
 * is bf16 with f32 accumulation, weights stored [in, out] row-major.
 */
#include "ref_attention.h"
#include "ref_gemm.h"
#include "tool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

#define NSTEP 5
#define RUNS 3

typedef struct block {
  int64_t t, hid, hq, hkv, d, mlp, qkvw; /* tokens, hidden, heads, kv heads, head_dim, MLP, qkv width */
  void *w[4], *b[4];                     /* device: Wqkv, Wo, W1, W2 and biases */
  void *hw[4], *hb[4];                   /* host copies */
  int64_t win[4], wout[4];               /* in and out features of each weight */
  void *x, *qkv, *att, *h, *g, *y;       /* device activations */
} block_t;

static gp_status_t gemm(gp_stream_t s, const block_t *m, int wi, const void *a, void *c, float beta,
                        gp_epilogue_t epi) {
  gp_gemm_desc_t d;
  gp_gemm_desc_init(&d);
  d.m = m->t, d.n = m->wout[wi], d.k = m->win[wi];
  d.a = a, d.a_type = GP_BF16, d.lda = m->win[wi];
  d.b = m->w[wi], d.b_type = GP_BF16, d.ldb = m->wout[wi];
  d.c = c, d.c_type = GP_BF16, d.ldc = m->wout[wi];
  d.beta = beta, d.epilogue = epi, d.bias = m->b[wi], d.bias_type = GP_BF16;
  return gp_gemm_ex(s, &d);
}

/* q, k, v read in place from the qkv rows ([t][hq + 2 hkv][d]) by strides. */
static void attn_desc(const block_t *m, gp_attention_desc_t *a, const void *qkv, void *o) {
  gp_attention_desc_init(a);
  a->dtype = GP_BF16;
  a->batch = 1, a->seqlen_q = a->seqlen_k = m->t;
  a->heads_q = m->hq, a->heads_kv = m->hkv, a->head_dim = m->d, a->causal = 1;
  const gp_bf16_t *base = qkv;
  a->q = base, a->k = base + m->hq * m->d, a->v = base + (m->hq + m->hkv) * m->d, a->o = o;
  a->q_seq_stride = a->k_seq_stride = a->v_seq_stride = m->qkvw;
  a->q_batch_stride = a->k_batch_stride = a->v_batch_stride = m->t * m->qkvw;
  a->q_head_stride = a->k_head_stride = a->v_head_stride = m->d;
}

/* One forward pass; ev[i] is recorded before step i and ev[NSTEP] after the last. */
static gp_status_t forward(gp_stream_t s, const block_t *m, gp_event_t *ev) {
  gp_status_t st;
  gp_attention_desc_t a;
  attn_desc(m, &a, m->qkv, m->att);
  size_t hbytes = (size_t)(m->t * m->hid) * 2;
  if ((st = gp_event_record(ev[0], s)) || (st = gemm(s, m, 0, m->x, m->qkv, 0, GP_EPILOGUE_BIAS)) ||
      (st = gp_event_record(ev[1], s)) || (st = gp_attention_fwd(s, &a)) ||
      (st = gp_event_record(ev[2], s)) || (st = gp_memcpy_async(m->h, m->x, hbytes, s)) ||
      (st = gemm(s, m, 1, m->att, m->h, 1, GP_EPILOGUE_BIAS)) || (st = gp_event_record(ev[3], s)) ||
      (st = gemm(s, m, 2, m->h, m->g, 0, GP_EPILOGUE_BIAS_GELU)) || (st = gp_event_record(ev[4], s)) ||
      (st = gp_memcpy_async(m->y, m->h, hbytes, s)) ||
      (st = gemm(s, m, 3, m->g, m->y, 1, GP_EPILOGUE_BIAS)) || (st = gp_event_record(ev[5], s)))
    return st;
  return GP_SUCCESS;
}

/* Downloads row r of a device [t][width] bf16 activation. */
static gp_status_t row_of(const void *dev, int64_t width, int64_t r, gp_bf16_t *out) {
  return gp_memcpy(out, (const gp_bf16_t *)dev + r * width, (size_t)width * 2);
}

/* Checks row r of GEMM step wi: a_row (host) times W + bias (+ c_row if beta) vs got. */
static double check_gemm_row(const block_t *m, int wi, const void *a_row, const void *c_row,
                             gp_epilogue_t epi, const void *got, int *bad) {
  int64_t n = m->wout[wi];
  double *ref = malloc((size_t)n * sizeof(double)), *bound = malloc((size_t)n * sizeof(double));
  if (!ref || !bound) {
    free(ref), free(bound);
    *bad = 1;
    return INFINITY;
  }
  gp_ref_gemm_t g = {GP_ROW_MAJOR, GP_OP_N, GP_OP_N, 1, n, m->win[wi], 1.0, a_row, GP_BF16,
                     m->win[wi], m->hw[wi], GP_BF16, n, c_row ? 1.0 : 0.0, c_row, GP_BF16, n, epi,
                     m->hb[wi], GP_BF16};
  gp_ref_gemm(&g, ref, bound);
  gp_ref_cmp_t cmp;
  gp_ref_compare(&cmp, got, GP_BF16, ref, bound, 0.0, (size_t)n);
  if (cmp.n_bad) *bad = 1;
  free(ref), free(bound);
  return cmp.rel_norm_err;
}

/* Row r of every step, recomputed in float64 from that step's inputs as the device
 * produced them. rel[i] receives each step's relative norm error. */
static int verify(const block_t *m, int64_t r, double *rel) {
  int bad = 0, rc = 0;
  size_t maxw = (size_t)(m->mlp > m->qkvw ? m->mlp : m->qkvw);
  gp_bf16_t *x = malloc(maxw * 2), *qkv_all = malloc((size_t)((r + 1) * m->qkvw) * 2);
  gp_bf16_t *att = malloc(maxw * 2), *h = malloc(maxw * 2), *g = malloc(maxw * 2), *y = malloc(maxw * 2);
  size_t nh = (size_t)(m->hq * m->d);
  double *oref = malloc(nh * sizeof(double)), *obound = malloc(nh * sizeof(double));
  if (!x || !qkv_all || !att || !h || !g || !y || !oref || !obound) {
    rc = 1;
    goto out;
  }
  TOOL_TRY(row_of(m->x, m->hid, r, x));
  TOOL_TRY(gp_memcpy(qkv_all, m->qkv, (size_t)((r + 1) * m->qkvw) * 2));
  TOOL_TRY(row_of(m->att, m->hq * m->d, r, att));
  TOOL_TRY(row_of(m->h, m->hid, r, h));
  TOOL_TRY(row_of(m->g, m->mlp, r, g));
  TOOL_TRY(row_of(m->y, m->hid, r, y));
  rel[0] = check_gemm_row(m, 0, x, NULL, GP_EPILOGUE_BIAS, qkv_all + r * m->qkvw, &bad);
  /* Query r against keys 0..r: seqlen_q = 1, seqlen_k = r + 1 (bottom-right causal). */
  gp_attention_desc_t a;
  attn_desc(m, &a, qkv_all, NULL);
  a.seqlen_q = 1, a.seqlen_k = r + 1;
  a.q = qkv_all + r * m->qkvw;
  a.q_batch_stride = a.k_batch_stride = a.v_batch_stride = 0;
  if (gp_ref_attention_fwd(&a, NULL, NULL, oref, obound, NULL, NULL)) {
    rc = 1;
    goto out;
  }
  gp_ref_cmp_t cmp;
  gp_ref_compare(&cmp, att, GP_BF16, oref, obound, 0.0, nh);
  if (cmp.n_bad) bad = 1;
  rel[1] = cmp.rel_norm_err;
  rel[2] = check_gemm_row(m, 1, att, x, GP_EPILOGUE_BIAS, h, &bad);
  rel[3] = check_gemm_row(m, 2, h, NULL, GP_EPILOGUE_BIAS_GELU, g, &bad);
  rel[4] = check_gemm_row(m, 3, g, h, GP_EPILOGUE_BIAS, y, &bad);
  rc = bad;
out:
  free(x), free(qkv_all), free(att), free(h), free(g), free(y), free(oref), free(obound);
  return rc;
}

int tool_demo(int argc, char **argv) {
  for (int i = 1; i < argc; i++) return tool_bad_arg("demo", argv[i]);
  bool cpu = gp_backend() == GP_BACKEND_CPU;
  /* CPU: a BERT-large-sized block made causal; GPU: Llama-3-8B's widths, GELU MLP. */
  block_t m;
  memset(&m, 0, sizeof m);
  if (cpu)
    m.t = 512, m.hid = 1024, m.hq = 16, m.hkv = 16, m.d = 64, m.mlp = 4096;
  else
    m.t = 2048, m.hid = 4096, m.hq = 32, m.hkv = 8, m.d = 128, m.mlp = 14336;
  m.qkvw = (m.hq + 2 * m.hkv) * m.d;
  int64_t win[4] = {m.hid, m.hq * m.d, m.hid, m.mlp}, wout[4] = {m.qkvw, m.hid, m.mlp, m.hid};
  memcpy(m.win, win, sizeof win), memcpy(m.wout, wout, sizeof wout);
  int rc = 0, dev = 0;
  gp_stream_t s = NULL;
  gp_event_t ev[NSTEP + 1] = {0};
  gp_device_props_t p;
  gp_device_props_init(&p);
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, 2024);
  void *hx = malloc((size_t)(m.t * m.hid) * 2);
  if (!hx) return 1;
  TOOL_TRY(gp_device_get(&dev));
  TOOL_TRY(gp_device_get_props(&p, dev));
  printf("gpuport demo: one transformer decoder block forward, backend %s, device %d (%s)\n",
         gp_backend_name(), dev, p.name);
  printf("  tokens %lld, hidden %lld, heads %lld (kv %lld) x %lld, MLP %lld with GELU; bf16, "
         "causal; no normalisation layers\n",
         (long long)m.t, (long long)m.hid, (long long)m.hq, (long long)m.hkv, (long long)m.d,
         (long long)m.mlp);
  fflush(stdout);
  /* Weights ~ U(-a, a), a = sqrt(3 / in): unit-variance activations stay O(1). */
  gp_ref_fill(hx, GP_BF16, (size_t)(m.t * m.hid), &rng, -1.0, 1.0);
  TOOL_TRY(tool_upload(&m.x, hx, (size_t)(m.t * m.hid) * 2));
  for (int i = 0; i < 4; i++) {
    double a = sqrt(3.0 / (double)m.win[i]);
    size_t nw = (size_t)(m.win[i] * m.wout[i]);
    m.hw[i] = malloc(nw * 2), m.hb[i] = malloc((size_t)m.wout[i] * 2);
    if (!m.hw[i] || !m.hb[i]) {
      rc = 1;
      goto out;
    }
    gp_ref_fill(m.hw[i], GP_BF16, nw, &rng, -a, a);
    gp_ref_fill(m.hb[i], GP_BF16, (size_t)m.wout[i], &rng, -0.1, 0.1);
    TOOL_TRY(tool_upload(&m.w[i], m.hw[i], nw * 2));
    TOOL_TRY(tool_upload(&m.b[i], m.hb[i], (size_t)m.wout[i] * 2));
  }
  TOOL_TRY(gp_malloc(&m.qkv, (size_t)(m.t * m.qkvw) * 2));
  TOOL_TRY(gp_malloc(&m.att, (size_t)(m.t * m.hq * m.d) * 2));
  TOOL_TRY(gp_malloc(&m.h, (size_t)(m.t * m.hid) * 2));
  TOOL_TRY(gp_malloc(&m.g, (size_t)(m.t * m.mlp) * 2));
  TOOL_TRY(gp_malloc(&m.y, (size_t)(m.t * m.hid) * 2));
  TOOL_TRY(gp_stream_create(&s));
  for (int i = 0; i <= NSTEP; i++) TOOL_TRY(gp_event_create(&ev[i]));

  /* A warm-up pass, then RUNS timed passes: the median of each step. */
  double ms[NSTEP + 1][RUNS];
  for (int run = -1; run < RUNS; run++) {
    TOOL_TRY(forward(s, &m, ev));
    TOOL_TRY(gp_event_synchronize(ev[NSTEP]));
    for (int i = 0; i < NSTEP && run >= 0; i++) {
      float f = 0;
      TOOL_TRY(gp_event_elapsed_ms(&f, ev[i], ev[i + 1]));
      ms[i][run] = f;
    }
    float tot = 0;
    TOOL_TRY(gp_event_elapsed_ms(&tot, ev[0], ev[NSTEP]));
    if (run >= 0) ms[NSTEP][run] = tot;
  }
  static const char *names[NSTEP] = {"QKV projection + bias", "attention (causal)",
                                     "out projection + bias + residual", "MLP up + bias + GELU",
                                     "MLP down + bias + residual"};
  double flops[NSTEP], all = 0;
  for (int i = 0; i < 4; i++) flops[i < 1 ? 0 : i + 1] = 2.0 * (double)m.t * (double)m.win[i] * (double)m.wout[i];
  flops[1] = 4.0 * (double)(m.hq * m.t) * (double)m.t * (double)m.d / 2.0;
  int64_t row = m.t - 1;
  double rel[NSTEP] = {0};
  int bad = verify(&m, row, rel);
  double total = tool_median(ms[NSTEP], RUNS);
  printf("\n  %-34s %10s %9s %6s   row %lld vs float64 (rel err)\n", "step", "ms", "TFLOP/s",
         "share", (long long)row);
  for (int i = 0; i < NSTEP; i++) {
    double t = tool_median(ms[i], RUNS);
    all += flops[i];
    printf("  %d %-32s %10.2f %9.3f %5.1f%%   %.2e\n", i + 1, names[i], t, flops[i] * 1e-9 / t,
           100.0 * t / total, rel[i]);
  }
  printf("  %-34s %10.2f %9.3f\n", "block", total, all * 1e-9 / total);
  printf("\n  median of %d runs after a warm-up; times by events on one stream.\n", RUNS);
  printf("  verification: row %lld of every step recomputed in float64 from that step's inputs: %s\n",
         (long long)row, bad ? "FAILED (outside the error bounds of ref/ref_*.h)" : "within bounds");
  rc = bad ? 1 : 0;
out:
  for (int i = 0; i <= NSTEP; i++) gp_event_destroy(ev[i]);
  gp_stream_destroy(s);
  for (int i = 0; i < 4; i++) gp_free(m.w[i]), gp_free(m.b[i]), free(m.hw[i]), free(m.hb[i]);
  gp_free(m.x), gp_free(m.qkv), gp_free(m.att), gp_free(m.h), gp_free(m.g), gp_free(m.y);
  free(hx);
  return rc;
}
