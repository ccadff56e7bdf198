/*
 * bench.c - `gpuport bench gemm|attention|memcpy|launch`: throughput at model shapes, and
 * the cost of a kernel launch (cli/bench_launch.c: what running a dialect kernel costs,
 * and a chain of kernels launched one by one and replayed as a graph; `bench embed`, a
 * whole model end to end, lives in embed.c).
 *
 * Each figure is the median of --iters timed runs after --warmup untimed ones; every
 * run is bracketed by events on the stream that does the work, so host overhead
 * between runs is not counted. GEMM and attention report TFLOP/s (attention counts
 * FlashAttention-2's 4 * batch * heads * seqlen_q * seqlen_k * head_dim, halved when
 * causal; the backward, timed alone after one forward, counts 2.5 times that, as
 * FlashAttention's benchmarks do); memcpy reports GB/s (10^9 bytes copied per second). The
 * GEMM table also shows an anchor on the same shape, what the machine can do, and
 * gpuport's ratio to it: OpenBLAS cblas_sgemm on the CPU backend (host-timed), cuBLAS's
 * cublasGemmEx on the cuda backend, hipBLASLt's hipblasLtMatmul on the hip backend
 * (anchor_blas.c: same stream, buffers and events); where the vendor library is absent
 * (hipBLASLt is not in Debian's ROCm 5.2) the column says why. On the hip backend the
 * attention table has hipBLASLt in the same column: the two batched GEMMs of the
 * forward's dense FLOPs (S = K Q^T, O^T = V^T S over batch x heads, without softmax or
 * mask: the GEMM work alone).
 * launch (cli/bench_launch.c) is timed on the host, from the first enqueue to the end of
 * the stream synchronisation (launch cost is host time). attention --paged
 * (cli/bench_paged.c) times gp_attention_fwd_kvcache over a paged KV cache beside
 * gp_attention_fwd on the same keys and values, in tokens/s and K/V bytes read per second.
 */
#include "tool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct bench_opts {
  int64_t iters, warmup;
  bool json;
  int64_t m, n, k;                              /* gemm */
  bool tf32;                                    /* gemm: f32 with GP_COMPUTE_TF32 */
  bool ta, tb;                                  /* gemm: --trans: op(A), op(B) transposed */
  bool as_user;                                 /* gemm: host-timed calls on fresh outputs */
  int64_t settle_ms;                            /* gemm (CPU): idle before each timed run; -1 auto */
  int64_t batch, seqlen, heads, kv_heads, hdim; /* attention */
  int64_t causal;                               /* -1: both */
  bool backward;                                /* attention: time gp_attention_bwd */
  int64_t deterministic;                        /* attention backward: desc.deterministic */
  int64_t sweep;                                /* attention: seqlens in the sweep */
  int64_t bytes;                                /* memcpy */
  int64_t kernels;                              /* launch: length of the chain */
  const char *dtype;
  bool paged;                                   /* attention over a paged KV cache */
  tool_paged_opts_t pg;                         /* its lists and options */
} bench_opts_t;

typedef tool_enqueue_fn enqueue_fn;

/* *n = a * b * c * d, or false (with a message) when the shape's element count overflows. */
static bool elements(size_t *n, int64_t a, int64_t b, int64_t c, int64_t d) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || __builtin_mul_overflow(r, c, &r) ||
      __builtin_mul_overflow(r, d, &r)) {
    fprintf(stderr, "gpuport bench: %lld x %lld x %lld x %lld elements overflow 64 bits\n",
            (long long)a, (long long)b, (long long)c, (long long)d);
    return false;
  }
  *n = (size_t)r;
  return true;
}

static int n_results;

/* Times fn: warm-up runs, then iters runs each between two events; *median_ms. */
gp_status_t tool_time_runs(int64_t iters, int64_t warmup, const char *label, tool_enqueue_fn fn, void *ctx,
                           gp_stream_t s, double *median_ms) {
  gp_status_t st = GP_SUCCESS;
  gp_event_t e0 = NULL, e1 = NULL;
  double *ms = calloc((size_t)iters, sizeof(double));
  if (!ms) return GP_ERROR_OUT_OF_MEMORY;
  if ((st = gp_event_create(&e0)) || (st = gp_event_create(&e1))) goto out;
  double t0 = tool_now_ms();
  for (int64_t i = 0; i < warmup; i++)
    if ((st = fn(ctx, s))) goto out;
  if ((st = gp_stream_synchronize(s))) goto out;
  double per_run = (tool_now_ms() - t0) / (double)(warmup > 0 ? warmup : 1);
  /* Runs over 2 s in all get a progress line on stderr: updated in place on a
   * terminal, printed once otherwise. */
  bool progress = per_run * (double)iters > 2000.0, tty = isatty(2);
  if (progress && !tty)
    fprintf(stderr, "gpuport bench: %s: %lld runs of ~%.0f ms\n", label, (long long)iters, per_run);
  for (int64_t i = 0; i < iters; i++) {
    if (progress && tty)
      fprintf(stderr, "\rgpuport bench: %s: run %lld/%lld (~%.0f ms each)", label, (long long)i + 1,
              (long long)iters, per_run);
    float f = 0;
    if ((st = gp_event_record(e0, s)) || (st = fn(ctx, s)) || (st = gp_event_record(e1, s)) ||
        (st = gp_event_synchronize(e1)) || (st = gp_event_elapsed_ms(&f, e0, e1)))
      goto out;
    ms[i] = f;
  }
  if (progress && tty) fputc('\n', stderr);
  *median_ms = tool_median(ms, (int)iters);
out:
  gp_event_destroy(e0);
  gp_event_destroy(e1);
  free(ms);
  return st;
}

static gp_status_t time_runs(const bench_opts_t *o, const char *label, enqueue_fn fn, void *ctx,
                             gp_stream_t s, double *median_ms) {
  return tool_time_runs(o->iters, o->warmup, label, fn, ctx, s, median_ms);
}

static gp_dtype_t parse_dtype(const char *s) {
  if (!strcmp(s, "f32")) return GP_F32;
  if (!strcmp(s, "f16")) return GP_F16;
  if (!strcmp(s, "bf16")) return GP_BF16;
  fprintf(stderr, "gpuport bench: --dtype must be f32, f16 or bf16\n");
  exit(2);
}

/* Device buffer of n elements of dtype filled with small values (0.01 * (i % 97 - 48)),
 * so that sums stay finite and no denormal slow path is measured. */
static gp_status_t filled(void **dev, gp_dtype_t t, size_t n) {
  size_t es = gp_dtype_size(t);
  unsigned char *h = n <= SIZE_MAX / es ? malloc(n * es) : NULL;
  if (!h) {
    fprintf(stderr, "gpuport bench: no host memory for %zu elements of %s\n", n, gp_dtype_name(t));
    return GP_ERROR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < n; i++) {
    float v = 0.01f * (float)((int)(i % 97) - 48);
    if (t == GP_F32) memcpy(h + i * 4, &v, 4);
    if (t == GP_F16) ((gp_f16_t *)h)[i] = gp_f16_from_f32(v);
    if (t == GP_BF16) ((gp_bf16_t *)h)[i] = gp_bf16_from_f32(v);
  }
  gp_status_t s = tool_upload(dev, h, n * es);
  free(h);
  return s;
}

/* What the GEMM anchor of this backend is (the figures' right-hand column); a CPU GEMM
 * row names its own (sgemm, or conversion + sgemm for f16/bf16). */
static const char *g_anchor_name;
static const char *anchor_name(void) {
  if (g_anchor_name) return g_anchor_name;
  return gp_backend() == GP_BACKEND_CPU ? "OpenBLAS cblas_sgemm" : tool_vendor_gemm_name();
}

/* One row; anchor > 0: the anchor's figure and our ratio to it; else note, when set, says
 * why the anchor column is empty. */
static void result(const bench_opts_t *o, const char *kind, const char *shape, const char *dtype,
                   double ms, const char *unit, double value, double anchor, double ratio,
                   const char *note) {
  const char *name = anchor_name() ? anchor_name() : "anchor";
  char kern[512] = "";
  if (strcmp(kind, "memcpy")) tool_kname_take(kern, sizeof kern); /* the kernels the timed calls chose */
  if (o->json) {
    printf("%s\n    {\"bench\": \"%s\", \"shape\": \"%s\", \"dtype\": \"%s\", \"median_ms\": %.4f, "
           "\"%s\": %.4f",
           n_results ? "," : "", kind, shape, dtype, ms, unit, value);
    if (kern[0]) {
      printf(", \"kernels\": ");
      tool_json_str(kern);
    }
    if (anchor > 0)
      printf(", \"anchor\": \"%s\", \"anchor_tflops\": %.4f, \"ratio\": %.3f", name, anchor, ratio);
    else if (note)
      printf(", \"anchor\": \"%s\", \"anchor_note\": \"%s\"", name, note);
    printf("}");
  } else {
    printf("%-10s %-34s %-5s %10.3f ms %9.3f %s", kind, shape, dtype, ms, value,
           !strcmp(unit, "tflops") ? "TFLOP/s" : !strcmp(unit, "gbps") ? "GB/s" : "us/kernel");
    if (anchor > 0) printf("   %s %.3f TFLOP/s, ratio %.2f", name, anchor, ratio);
    else if (note) printf("   %s: %s", name, note);
    if (kern[0] && strcmp(kern, "?")) printf("   [%s]", kern);
    printf("\n");
  }
  fflush(stdout);
  n_results++;
}

/* ---- gemm ------------------------------------------------------------------------------ */

typedef struct gemm_ctx {
  int64_t m, n, k;
  gp_dtype_t t;
  bool tf32;
  void *a, *b, *c;
  bool ta, tb; /* row-major op(A), op(B) */
} gemm_ctx_t;

static gp_status_t run_gemm(void *p, gp_stream_t s) {
  gemm_ctx_t *g = p;
  const int64_t lda = g->ta ? g->m : g->k, ldb = g->tb ? g->k : g->n;
  if (!g->tf32)
    return gp_gemm(s, GP_ROW_MAJOR, g->ta ? GP_OP_T : GP_OP_N, g->tb ? GP_OP_T : GP_OP_N, g->m, g->n, g->k, 1.0f,
                   g->a, g->t, lda, g->b, g->t, ldb, 0.0f, g->c, g->t, g->n);
  gp_gemm_desc_t d;
  gp_gemm_desc_init(&d);
  d.m = g->m, d.n = g->n, d.k = g->k;
  d.a = g->a, d.a_type = g->t, d.lda = g->k;
  d.b = g->b, d.b_type = g->t, d.ldb = g->n;
  d.c = g->c, d.c_type = g->t, d.ldc = g->n;
  d.compute = GP_COMPUTE_TF32;
  return gp_gemm_ex(s, &d);
}

/* The same product through the vendor BLAS (anchor_blas.c). */
static gp_status_t run_vendor_gemm(void *p, gp_stream_t s) {
  gemm_ctx_t *g = p;
  return tool_vendor_gemm(s, g->m, g->n, g->k, g->t, g->tf32, g->a, g->b, g->c);
}

/* The CPU anchor: OpenBLAS cblas_sgemm on the same product, host-timed; for f16/bf16
 * operands the anchor is what a caller without gpuport does: convert both operands to
 * f32 (a plain loop, counted in the time), then cblas_sgemm. */
typedef struct cpu_anchor {
  tool_sgemm_t_fn sgemm;
  const void *ha, *hb; /* the operands as stored, in the product's type */
  float *fa, *fb, *c;
  size_t na, nb;
} cpu_anchor_t;

static const char *cpu_anchor_name(gp_dtype_t t) {
  return t == GP_F32 ? "OpenBLAS cblas_sgemm" : "OpenBLAS convert+sgemm";
}

static void to_f32(float *dst, const void *src, gp_dtype_t t, size_t n) {
  if (t == GP_F32) return;
  for (size_t i = 0; i < n; i++)
    dst[i] = t == GP_F16 ? gp_f32_from_f16(((const gp_f16_t *)src)[i]) : gp_f32_from_bf16(((const gp_bf16_t *)src)[i]);
}

static double cpu_anchor_run(const cpu_anchor_t *x, const gemm_ctx_t *g) {
  const double t0 = tool_now_ms();
  to_f32(x->fa, x->ha, g->t, x->na);
  to_f32(x->fb, x->hb, g->t, x->nb);
  const int lda = (int)(g->ta ? g->m : g->k), ldb = (int)(g->tb ? g->k : g->n);
  x->sgemm(g->ta, g->tb, (int)g->m, (int)g->n, (int)g->k, 1, x->fa, lda, x->fb, ldb, 0, x->c, (int)g->n);
  return tool_now_ms() - t0;
}

/* The idle time before each timed run of the CPU pairing. OpenBLAS's worker threads spin
 * for a while after a call returns (THREAD_TIMEOUT: 2^28 cycles by default, about 0.1 s)
 * before they sleep; a run started in that time shares its cores with them, so whichever
 * side ran second paid for the first's spinning (at 2 threads up to 1.5x slower). A user
 * calls one or the other, so each run starts after the spinning has ended. */
#define SETTLE_AUTO_MS 150

static int64_t settle_ms(const bench_opts_t *o) {
  if (o->settle_ms >= 0) return o->settle_ms;
  return tool_openblas_threads() > 1 ? SETTLE_AUTO_MS : 0;
}

static void settle(int64_t ms) {
  if (ms <= 0) return;
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* gpuport's runs (event-timed, or with as_user host-timed from the call to the stream's
 * end on a fresh output each time, as a program calling gp_gemm once sees it) and the
 * CPU anchor's, alternated run by run so both see the same machine, each after the
 * settle time; medians. */
static gp_status_t paired_runs(const bench_opts_t *o, const char *shape, gemm_ctx_t *g, const cpu_anchor_t *x,
                               gp_stream_t s, double *ms, double *anchor_ms) {
  double *t = calloc((size_t)o->iters, sizeof(double)), *u = calloc((size_t)o->iters, sizeof(double));
  gp_status_t st = t && u ? GP_SUCCESS : GP_ERROR_OUT_OF_MEMORY;
  const size_t nc = (size_t)(g->m * g->n) * gp_dtype_size(g->t);
  const int64_t idle = x && x->sgemm ? settle_ms(o) : 0;
  if (!o->as_user)
    for (int64_t i = 0; i < o->warmup && st == GP_SUCCESS; i++) {
      st = run_gemm(g, s);
      if (st == GP_SUCCESS) st = gp_stream_synchronize(s);
      if (x && x->sgemm) (void)cpu_anchor_run(x, g);
    }
  for (int64_t i = 0; i < o->iters && st == GP_SUCCESS; i++) {
    settle(idle);
    if (o->as_user) {
      void *c = NULL, *keep = g->c;
      const double t0 = tool_now_ms();
      st = gp_malloc(&c, nc);
      g->c = c;
      if (st == GP_SUCCESS) st = run_gemm(g, s);
      if (st == GP_SUCCESS) st = gp_stream_synchronize(s);
      t[i] = tool_now_ms() - t0;
      g->c = keep;
      gp_free(c);
    } else {
      st = tool_time_runs(1, 0, shape, run_gemm, g, s, &t[i]);
    }
    if (x && x->sgemm) {
      settle(idle);
      u[i] = cpu_anchor_run(x, g);
    }
  }
  if (st == GP_SUCCESS) {
    *ms = tool_median(t, (int)o->iters);
    *anchor_ms = x && x->sgemm ? tool_median(u, (int)o->iters) : 0;
  }
  free(t), free(u);
  return st;
}

/* Host copies of the operands filled as filled() fills the device's. */
static void *host_filled(gp_dtype_t t, size_t n) {
  const size_t es = gp_dtype_size(t);
  unsigned char *h = malloc(n * es);
  for (size_t i = 0; h && i < n; i++) {
    float v = 0.01f * (float)((int)(i % 97) - 48);
    if (t == GP_F32) memcpy(h + i * 4, &v, 4);
    if (t == GP_F16) ((gp_f16_t *)h)[i] = gp_f16_from_f32(v);
    if (t == GP_BF16) ((gp_bf16_t *)h)[i] = gp_bf16_from_f32(v);
  }
  return h;
}

/* One shape and type: gpuport's median ms and the anchor's (0 when none). */
static int gemm_one(const bench_opts_t *o, gp_stream_t s, int64_t m, int64_t n, int64_t k, gp_dtype_t t,
                    bool quiet, double *out_ms) {
  int rc = 0;
  const bool cpu = gp_backend() == GP_BACKEND_CPU;
  const bool vendor = !cpu && !tool_vendor_gemm_unavailable();
  size_t na, nb, nc;
  if (!elements(&na, m, k, 1, 1) || !elements(&nb, k, n, 1, 1) || !elements(&nc, m, n, 4, 1)) return 2;
  gemm_ctx_t g = {m, n, k, t, o->tf32, NULL, NULL, NULL, o->ta, o->tb};
  cpu_anchor_t x = {0};
  char shape[64];
  snprintf(shape, sizeof shape, "%lldx%lldx%lld%s%s", (long long)m, (long long)n, (long long)k,
           o->ta || o->tb ? " " : "", o->ta || o->tb ? (o->ta ? (o->tb ? "TT" : "TN") : "NT") : "");
  double ms = 0, ams = 0, anchor = 0;
  nc = (size_t)(m * n) * gp_dtype_size(t);
  TOOL_TRY(filled(&g.a, t, na));
  TOOL_TRY(filled(&g.b, t, nb));
  TOOL_TRY(gp_malloc(&g.c, nc));
  if (cpu && !quiet && m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX) {
    x.sgemm = tool_anchor_sgemm_t();
    x.na = na, x.nb = nb;
    x.ha = host_filled(t, na), x.hb = host_filled(t, nb);
    x.fa = t == GP_F32 ? (float *)x.ha : malloc(na * 4);
    x.fb = t == GP_F32 ? (float *)x.hb : malloc(nb * 4);
    x.c = malloc((size_t)(m * n) * 4);
    if (!x.ha || !x.hb || !x.fa || !x.fb || !x.c) x.sgemm = NULL;
  }
  TOOL_TRY(paired_runs(o, shape, &g, &x, s, &ms, &ams));
  *out_ms = ms;
  if (!quiet) {
    const double flop = 2e-9 * (double)m * (double)n * (double)k;
    const char *note = !cpu && !vendor ? tool_vendor_gemm_unavailable() : NULL;
    char failed[96];
    if (ams > 0) anchor = flop / ams;
    if (vendor) {
      /* A vendor call that fails (no algorithm for the shape) empties the column only. */
      double vms = 0;
      gp_status_t vst = time_runs(o, shape, run_vendor_gemm, &g, s, &vms);
      if (vst == GP_SUCCESS) anchor = flop / vms;
      snprintf(failed, sizeof failed, "failed on this shape (%s)", gp_status_name(vst));
      if (vst != GP_SUCCESS) note = failed, anchor = 0;
    }
    g_anchor_name = cpu ? cpu_anchor_name(t) : NULL;
    result(o, "gemm", shape, g.tf32 ? "tf32" : gp_dtype_name(g.t), ms, "tflops", flop / ms, anchor,
           anchor > 0 ? (flop / ms) / anchor : 0, note);
    g_anchor_name = NULL;
  }
out:
  gp_free(g.a), gp_free(g.b), gp_free(g.c);
  if (x.fa != x.ha) free(x.fa);
  if (x.fb != x.hb) free(x.fb);
  free((void *)x.ha), free((void *)x.hb), free(x.c);
  return rc;
}

/* The scaling exponent of time over work (m n k) on cubes from 256 to 1024. */
static int gemm_sweep(const bench_opts_t *o, gp_stream_t s, gp_dtype_t t) {
  const int64_t sizes[5] = {256, 384, 512, 768, 1024};
  double work[5], ms[5];
  for (int i = 0; i < 5; i++) {
    int rc = gemm_one(o, s, sizes[i], sizes[i], sizes[i], t, true, &ms[i]);
    if (rc) return rc;
    work[i] = (double)sizes[i] * (double)sizes[i] * (double)sizes[i];
  }
  char kern[512] = "";
  tool_kname_take(kern, sizeof kern);
  const double e = tool_fit_exponent(work, ms, 5);
  if (o->json)
    printf("%s\n    {\"bench\": \"gemm-scaling\", \"dtype\": \"%s\", \"sizes\": \"256..1024 cubes\", "
           "\"exponent\": %.3f, \"ms\": [%.3f, %.3f, %.3f, %.3f, %.3f]}",
           n_results ? "," : "", gp_dtype_name(t), e, ms[0], ms[1], ms[2], ms[3], ms[4]);
  else
    printf("scaling    %s n^3 for n = 256..1024: time ~ (m n k)^%.2f (1.00 is linear in the work; "
           "ms %.2f %.2f %.2f %.2f %.2f)\n", gp_dtype_name(t), e, ms[0], ms[1], ms[2], ms[3], ms[4]);
  n_results++;
  return 0;
}

static int bench_gemm(const bench_opts_t *o, gp_stream_t s) {
  /* GPUs: 4096^3 and 8192^3, then the Llama-3-8B projections for 4096 tokens (tokens x
   * out x in): fused QKV (4096 + 2 x 1024 outputs), fused gate and up (2 x 14336), down.
   * The CPU: 1024^3, the down projection's aspect at a quarter of each size, and the
   * all-MiniLM-L6-v2 up-projection of a 64 x 64-token batch (4096 x 1536 x 384). */
  int64_t gpu[5][3] = {{4096, 4096, 4096}, {8192, 8192, 8192}, {4096, 6144, 4096},
                       {4096, 28672, 4096}, {4096, 4096, 14336}};
  int64_t cpu[3][3] = {{1024, 1024, 1024}, {512, 1024, 3584}, {4096, 1536, 384}};
  int64_t (*shapes)[3] = gp_backend() == GP_BACKEND_CPU ? cpu : gpu, custom[1][3] = {{o->m, o->n, o->k}};
  int nshapes = gp_backend() == GP_BACKEND_CPU ? 3 : 5;
  const bool custom_shape = o->m || o->n || o->k;
  if (custom_shape) {
    if (!o->m || !o->n || !o->k) {
      fprintf(stderr, "gpuport bench gemm: give all of --m, --n, --k\n");
      return 2;
    }
    shapes = custom, nshapes = 1;
  }
  gp_dtype_t types[2] = {GP_BF16, GP_F32};
  int ntypes = gp_backend() == GP_BACKEND_CPU ? 2 : 1;
  if (o->dtype) types[0] = parse_dtype(o->dtype), ntypes = 1;
  if (o->tf32) types[0] = GP_F32, ntypes = 1;
  if (gp_backend() != GP_BACKEND_CPU && tool_vendor_gemm_unavailable())
    fprintf(stderr, "gpuport bench gemm: no vendor anchor: %s\n", tool_vendor_gemm_unavailable());
  for (int i = 0; i < nshapes; i++)
    for (int j = 0; j < ntypes; j++) {
      double ms;
      int rc = gemm_one(o, s, shapes[i][0], shapes[i][1], shapes[i][2], types[j], false, &ms);
      if (rc) return rc;
    }
  if (gp_backend() == GP_BACKEND_CPU && !custom_shape && !o->as_user)
    for (int j = 0; j < ntypes; j++) {
      int rc = gemm_sweep(o, s, types[j]);
      if (rc) return rc;
    }
  return 0;
}

/* ---- attention -------------------------------------------------------------------------- */

static gp_status_t run_attn(void *p, gp_stream_t s) { return gp_attention_fwd(s, p); }

/* One backward call: its descriptor (o and lse set by a forward) and buffers. */
typedef struct attn_bwd_ctx {
  gp_attention_desc_t *a;
  void *d_o, *dq, *dk, *dv, *ws;
  size_t ws_bytes;
} attn_bwd_ctx_t;

static gp_status_t run_attn_bwd(void *p, gp_stream_t s) {
  attn_bwd_ctx_t *b = p;
  return gp_attention_bwd(s, b->a, b->d_o, b->dq, b->dk, b->dv, b->ws, b->ws_bytes);
}

/* Times gp_attention_bwd on a (q, k, v, o set): lse, dO, gradients and the workspace
 * are allocated here, the forward runs once; *ms is the backward's median. */
static gp_status_t time_attn_bwd(const bench_opts_t *o, const char *label, gp_attention_desc_t *a,
                                 gp_stream_t s, double *ms) {
  size_t es = gp_dtype_size(a->dtype);
  size_t nq = (size_t)(a->batch * a->seqlen_q * a->heads_q * a->head_dim);
  size_t nk = (size_t)(a->batch * a->seqlen_k * a->heads_kv * a->head_dim);
  attn_bwd_ctx_t b = {a, NULL, NULL, NULL, NULL, NULL, 0};
  gp_status_t st;
  a->deterministic = (int)o->deterministic;
  if ((st = gp_malloc((void **)&a->lse, (size_t)(a->batch * a->heads_q * a->seqlen_q) * sizeof(float))) ||
      (st = filled(&b.d_o, a->dtype, nq)) || (st = gp_malloc(&b.dq, nq * es)) ||
      (st = gp_malloc(&b.dk, nk * es)) || (st = gp_malloc(&b.dv, nk * es)) ||
      (st = gp_attention_bwd_workspace_size(a, &b.ws_bytes)) || (st = gp_malloc(&b.ws, b.ws_bytes)) ||
      (st = gp_attention_fwd(s, a)))
    goto out;
  st = time_runs(o, label, run_attn_bwd, &b, s, ms);
out:
  gp_free(a->lse), gp_free(b.d_o), gp_free(b.dq), gp_free(b.dk), gp_free(b.dv), gp_free(b.ws);
  a->lse = NULL;
  return st;
}

/* hipBLASLt on each product of sh[0..n-1], run one after the other on s: *tflops for
 * flops over their summed medians, or the reason there is none in note. */
static void lt_anchor(const bench_opts_t *o, gp_stream_t s, const tool_lt_shape_t *sh, int n,
                      double flops, double *tflops, char *note, size_t note_len) {
  double total = 0;
  for (int i = 0; i < n; i++) {
    tool_lt_gemm_t *g = tool_lt_gemm_create(&sh[i], note, note_len);
    double ms = 0;
    if (!g) return;
    gp_status_t st = time_runs(o, "hipBLASLt", tool_lt_gemm_run, g, s, &ms);
    tool_lt_gemm_destroy(g);
    if (st != GP_SUCCESS) {
      snprintf(note, note_len, "failed on this shape (%s)", gp_status_name(st));
      return;
    }
    total += ms;
  }
  if (total > 0) *tflops = flops * 1e-9 / total;
}

/* The hip backend's attention anchor: hipBLASLt's two batched GEMMs of the forward's
 * dense FLOPs over batch x heads_q, on contiguous scratch buffers: S (seqlen_k x
 * seqlen_q) = K Q^T, then O^T (head_dim x seqlen_q) = V^T S (the causal mask and the
 * softmax are not the GEMM library's work). An absent library or scratch that does not
 * fit leaves the reason in note. */
static void attn_anchor(const bench_opts_t *o, gp_stream_t s, const gp_attention_desc_t *d,
                        double *tflops, char *note, size_t note_len) {
  const int64_t bh = d->batch * d->heads_q, sq = d->seqlen_q, sk = d->seqlen_k, hd = d->head_dim;
  size_t nq, nk, ns;
  if (!elements(&nq, bh, sq, hd, 1) || !elements(&nk, bh, sk, hd, 1) || !elements(&ns, bh, sq, sk, 1))
    return;
  const size_t es = gp_dtype_size(d->dtype);
  void *q = NULL, *k = NULL, *v = NULL, *sm = NULL, *out = NULL;
  gp_status_t st;
  if ((st = filled(&q, d->dtype, nq)) == GP_SUCCESS && (st = filled(&k, d->dtype, nk)) == GP_SUCCESS &&
      (st = filled(&v, d->dtype, nk)) == GP_SUCCESS && (st = gp_malloc(&sm, ns * es)) == GP_SUCCESS &&
      (st = gp_malloc(&out, nq * es)) == GP_SUCCESS) {
    /* Column-major views: Q^T, K^T and V^T are head_dim x seq (ld head_dim) per head. */
    const tool_lt_shape_t sh[2] = {
        {d->dtype, 1, 0, sk, sq, hd, bh, k, q, sm, hd, hd, sk, sk * hd, sq * hd, sk * sq},
        {d->dtype, 0, 0, hd, sq, sk, bh, v, sm, out, hd, sk, hd, sk * hd, sk * sq, sq * hd}};
    lt_anchor(o, s, sh, 2, 4.0 * (double)bh * (double)sq * (double)sk * (double)hd, tflops, note,
              note_len);
  } else {
    snprintf(note, note_len, "no device memory for the GEMMs' scratch (%s)", gp_status_name(st));
  }
  gp_free(q), gp_free(k), gp_free(v), gp_free(sm), gp_free(out);
}

/* Times one attention shape (forward, or backward with --backward) and prints its row;
 * *ms_out: the median. */
static int attention_row(const bench_opts_t *o, gp_stream_t s, gp_dtype_t t, int64_t batch, int64_t seq,
                         int64_t hq, int64_t hkv, int64_t d, int causal, double *ms_out) {
  int rc = 0;
  gp_attention_desc_t a;
  gp_attention_desc_init(&a);
  a.dtype = t, a.batch = batch, a.seqlen_q = a.seqlen_k = seq;
  a.heads_q = hq, a.heads_kv = hkv, a.head_dim = d, a.causal = causal;
  void *q = NULL, *k = NULL, *v = NULL, *out_o = NULL;
  double ms = 0;
  char shape[96];
  snprintf(shape, sizeof shape, "b%lld s%lld h%lld/%lld d%lld%s", (long long)batch,
           (long long)seq, (long long)hq, (long long)hkv, (long long)d, causal ? " causal" : "");
  size_t nq, nkv;
  if (!elements(&nq, batch, seq, hq, d) || !elements(&nkv, batch, seq, hkv, d)) return 2;
  TOOL_TRY(filled(&q, t, nq));
  TOOL_TRY(filled(&k, t, nkv));
  TOOL_TRY(filled(&v, t, nkv));
  TOOL_TRY(gp_malloc(&out_o, nq * gp_dtype_size(t)));
  a.q = q, a.k = k, a.v = v, a.o = out_o;
  double flops = 4.0 * (double)batch * (double)hq * (double)seq * (double)seq * (double)d;
  if (causal) flops /= 2;
  if (o->backward) {
    if (o->deterministic) snprintf(shape + strlen(shape), sizeof shape - strlen(shape), " det");
    TOOL_TRY(time_attn_bwd(o, shape, &a, s, &ms));
    result(o, "attn-bwd", shape, gp_dtype_name(t), ms, "tflops", 2.5 * flops * 1e-9 / ms, 0, 0, NULL);
  } else {
    TOOL_TRY(time_runs(o, shape, run_attn, &a, s, &ms));
    const double tf = flops * 1e-9 / ms;
    double anchor = 0;
    char note[200] = "";
    if (gp_backend() == GP_BACKEND_HIP) attn_anchor(o, s, &a, &anchor, note, sizeof note);
    result(o, "attention", shape, gp_dtype_name(t), ms, "tflops", tf, anchor,
           anchor > 0 ? tf / anchor : 0, note[0] ? note : NULL);
  }
  *ms_out = ms;
out:
  gp_free(q), gp_free(k), gp_free(v), gp_free(out_o);
  return rc;
}

/* The exponent e of time ~ work^e over a seqlen sweep (work = seqlen_q * seqlen_k, halved
 * when causal): about 1.0 when the time is the quadratic work, below it where fixed
 * costs dominate the short sequences. In --json mode on stderr, so stdout stays one
 * document. */
static void attention_scaling(const bench_opts_t *o, const int64_t *seqs, const double *ms, int n,
                              int causal) {
  double work[16];
  for (int i = 0; i < n; i++) work[i] = (double)seqs[i] * (double)seqs[i] * (causal ? 0.5 : 1.0);
  const double e = tool_fit_exponent(work, ms, n);
  fprintf(o->json ? stderr : stdout,
          "scaling    seqlen %lld..%lld%s: time ~ work^%.2f (work = seqlen_q * seqlen_k%s; "
          "expected ~1.0)\n",
          (long long)seqs[0], (long long)seqs[n - 1], causal ? " causal" : "", e,
          causal ? ", halved when causal" : "");
}

static int bench_attention(const bench_opts_t *o, gp_stream_t s) {
  bool cpu = gp_backend() == GP_BACKEND_CPU;
  /* Llama-3-8B attention: 32 query heads, 8 KV heads, head_dim 128. */
  int64_t batch = o->batch ? o->batch : cpu ? 1 : 4, seq = o->seqlen ? o->seqlen : cpu ? 512 : 4096;
  int64_t hq = o->heads ? o->heads : 32, hkv = o->kv_heads ? o->kv_heads : (o->heads ? o->heads : 8);
  int64_t d = o->hdim ? o->hdim : 128;
  gp_dtype_t t = o->dtype ? parse_dtype(o->dtype) : GP_BF16;
  /* --sweep N: seqlen / 2^(N-1), ..., seqlen / 2, seqlen */
  int points = o->sweep > 1 ? (int)(o->sweep < 16 ? o->sweep : 16) : 1;
  while (points > 1 && (seq >> (points - 1)) < 1) points--;
  for (int causal = 0; causal < 2; causal++) {
    if (o->causal >= 0 && causal != o->causal) continue;
    int64_t seqs[16];
    double ms[16];
    for (int i = 0; i < points; i++) {
      seqs[i] = seq >> (points - 1 - i);
      int rc = attention_row(o, s, t, batch, seqs[i], hq, hkv, d, causal, &ms[i]);
      if (rc) return rc;
    }
    if (points > 1) attention_scaling(o, seqs, ms, points, causal);
  }
  return 0;
}

/* bench attention --paged (cli/bench_paged.c). */
static int bench_paged(const bench_opts_t *o, gp_stream_t s) { return tool_bench_paged(&o->pg, s); }

/* ---- memcpy ------------------------------------------------------------------------------ */

typedef struct copy_ctx {
  void *dst;
  const void *src;
  size_t bytes;
} copy_ctx_t;

static gp_status_t run_copy(void *p, gp_stream_t s) {
  copy_ctx_t *c = p;
  return gp_memcpy_async(c->dst, c->src, c->bytes, s);
}

static int bench_memcpy(const bench_opts_t *o, gp_stream_t s) {
  size_t bytes = o->bytes ? (size_t)o->bytes : gp_backend() == GP_BACKEND_CPU ? (64u << 20) : (256u << 20);
  void *pinned = NULL, *d1 = NULL, *d2 = NULL, *pageable = malloc(bytes);
  int rc = 0;
  if (!pageable) {
    fprintf(stderr, "gpuport bench memcpy: no host memory for %zu bytes\n", bytes);
    return 1;
  }
  memset(pageable, 1, bytes);
  TOOL_TRY(gp_malloc_host(&pinned, bytes));
  memset(pinned, 1, bytes);
  TOOL_TRY(gp_malloc(&d1, bytes));
  TOOL_TRY(gp_malloc(&d2, bytes));
  TOOL_TRY(gp_memset(d1, 2, bytes));
  struct {
    const char *name;
    copy_ctx_t c;
  } runs[] = {{"H2D pinned", {d1, pinned, bytes}},
              {"D2H pinned", {pinned, d1, bytes}},
              {"D2D", {d2, d1, bytes}},
              {"H2D pageable", {d1, pageable, bytes}},
              {"D2H pageable", {pageable, d1, bytes}}};
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    char shape[64], sz[32];
    tool_fmt_bytes(sz, sizeof sz, (double)bytes);
    snprintf(shape, sizeof shape, "%s %s", runs[i].name, sz);
    double ms = 0;
    TOOL_TRY(time_runs(o, shape, run_copy, &runs[i].c, s, &ms));
    result(o, "memcpy", shape, "u8", ms, "gbps", (double)bytes / ms * 1e-6, 0, 0, NULL);
  }
out:
  gp_free_host(pinned), gp_free(d1), gp_free(d2), free(pageable);
  return rc;
}

/* ---- launch (cli/bench_launch.c) --------------------------------------------------------- */

static int bench_launch(const bench_opts_t *o, gp_stream_t s) {
  return tool_bench_launch(o->iters, o->warmup, o->json, o->kernels > 0 ? o->kernels : 1000, s);
}

/* ---- command line ----------------------------------------------------------------------- */

/* When argv[*i] is name: the next argument, a comma-separated list of up to 16 integers
 * >= 1, into out[0 .. *n - 1]; exits with status 2 and a message when it is not one. */
static bool arg_list(int argc, char **argv, int *i, const char *name, int64_t *out, int *n) {
  if (strcmp(argv[*i], name)) return false;
  const char *v = *i + 1 < argc ? argv[++*i] : NULL, *p = v;
  *n = 0;
  while (p && *p && *n < 16) {
    char *end;
    errno = 0;
    const long long x = strtoll(p, &end, 10);
    if (end == p || x < 1 || errno || (*end && *end != ',')) break;
    out[(*n)++] = x;
    p = *end ? end + 1 : end;
  }
  if (!v || *n == 0 || *p) {
    fprintf(stderr, "gpuport bench: %s takes a list of up to 16 integers >= 1, e.g. 1,4,32%s%s\n", name,
            v ? "; got " : "", v ? v : "");
    exit(2);
  }
  return true;
}

static const char bench_usage[] =
    "usage: gpuport bench gemm|attention|memcpy|launch|embed|telemetry [options]\n"
    "       gpuport bench allreduce|allgather|reducescatter|alltoall|broadcast [options]\n"
    "             (collectives, nccl-tests' sizes and bandwidths: gpuport bench allreduce --help)\n"
    "  common:    --iters N (median of N timed runs)  --warmup N  --json\n"
    "  gemm:      --m M --n N --k K  --dtype f32|f16|bf16 | --tf32   (row-major C = A B;\n"
    "             --tf32: f32 inputs with GP_COMPUTE_TF32)  --trans NN|NT|TN|TT (op(A), op(B))\n"
    "             --as-user: each call timed on the host from gp_gemm to the stream's end,\n"
    "             on a freshly allocated output, as a program calling gp_gemm sees it\n"
    "             --settle MS: idle time before each timed run beside the OpenBLAS anchor\n"
    "             (default 150 where OpenBLAS runs more than one thread: its threads spin\n"
    "             after a call and would share the cores with the next run; 0: none)\n"
    "             default (GPU): bf16 at 4096^3, 8192^3 and the Llama-3-8B projections for\n"
    "             4096 tokens (4096x6144x4096, 4096x28672x4096, 4096x4096x14336), beside\n"
    "             cuBLAS on the cuda backend, hipBLASLt on the hip backend (when installed);\n"
    "             1024x1024x1024, 512x1024x3584 and 4096x1536x384, bf16 and f32 (CPU), each\n"
    "             run alternated with the OpenBLAS anchor (cblas_sgemm; for bf16/f16 the\n"
    "             operands converted to f32 in the timed run, then cblas_sgemm), then the\n"
    "             fitted scaling exponent over cubes 256..1024\n"
    "  attention: --batch B --seqlen S --heads H --kv-heads H --head-dim D --causal 0|1 --dtype\n"
    "             --backward (time gp_attention_bwd; TFLOP/s count 2.5x the forward's)\n"
    "             --deterministic 0|1 (backward)\n"
    "             --sweep N (also seqlen / 2, ..., seqlen / 2^(N-1), at most 16 points, and\n"
    "             the fitted exponent of time ~ (seqlen_q * seqlen_k)^e, halved when causal)\n"
    "             default: 32/8 heads, head_dim 128, bf16, causal and not;\n"
    "             batch 4 x 4096 (GPU), batch 1 x 512 (CPU); on the hip backend beside\n"
    "             hipBLASLt's two batched GEMMs of the same FLOPs (when installed)\n"
    "  attention --paged: gp_attention_fwd_kvcache over a paged KV cache whose pages are in a\n"
    "             random order, beside gp_attention_fwd on the same K/V gathered into\n"
    "             contiguous tensors (causal, aligned to the end of each sequence):\n"
    "             --batch LIST --context LIST (keys per sequence) --seqlen-q LIST (1: decode,\n"
    "             16: a prefill chunk) --page-size N --append 0|1 (each call writes its\n"
    "             query tokens' K/V into the cache first; default 1) --num-splits N (0:\n"
    "             gpuport's choice) --heads --kv-heads --head-dim --dtype --seed N\n"
    "             --mem-bw GB/s (the device's memory bandwidth, from its data sheet; else\n"
    "             a device-to-device copy timed in the same run is the reference);\n"
    "             reports ms per call, tokens/s, K/V bytes read per second and its\n"
    "             fraction of the reference, the split count, the dense call, paged/dense\n"
    "             default: 32/8 heads, head_dim 128, bf16, page 16, seqlen_q 1,16, seed 1;\n"
    "             batch 1,4,16,32,64 x context 1024,4096,8192,16384,32768 (GPU),\n"
    "             batch 1,4 x context 1024,4096 (CPU)\n"
    "  memcpy:    --bytes N (default 256 MiB GPU, 64 MiB CPU)\n"
    "  launch:    dialect kernels against plain C loops over the same arrays: vector add and\n"
    "             fma + erf-GELU over 2^24 floats, a shuffle/shared-memory reduction, the cost\n"
    "             of __syncthreads (256 and 1024 threads), empty-kernel latency; then\n"
    "             --kernels N (default 1000): a chain of N dependent one-block kernels,\n"
    "             launched one by one and replayed as one graph (us per kernel)\n"
    "  embed:     all-MiniLM-L6-v2 sentences/s and tokens/s (see 'gpuport bench embed --help')\n"
    "  telemetry: the host time of one gp_device_get_telemetry per device (--iters N, default\n"
    "             1000; median, 99th percentile, worst)\n";

int tool_bench(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help")) {
    fputs(bench_usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "embed")) return tool_bench_embed(argc, argv);
  if (!strcmp(argv[1], "telemetry")) return tool_bench_telemetry(argc, argv);
  int crc = tool_bench_comm(argc, argv);
  if (crc >= 0) return crc;
  const char *what = argv[1];
  /* before the first library call: the log line of each GEMM and attention call names
   * the kernel chosen, which the results report */
  char why[160];
  if (!strcmp(what, "gemm") || !strcmp(what, "attention")) (void)tool_kname_start(why, sizeof why);
  bool cpu = gp_backend() == GP_BACKEND_CPU;
  bench_opts_t o = {.iters = cpu ? 5 : 20, .warmup = cpu ? 1 : 3, .causal = -1, .settle_ms = -1};
  o.pg.append = 1, o.pg.seed = 1;
  int64_t blist[16];
  int nblist = 0;
  bool iters_set = false;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--json"))
      o.json = true;
    else if (!strcmp(argv[i], "--paged"))
      o.paged = true;
    else if (arg_list(argc, argv, &i, "--batch", blist, &nblist))
      o.batch = blist[0];
    else if (arg_list(argc, argv, &i, "--context", o.pg.context, &o.pg.n_context) ||
             arg_list(argc, argv, &i, "--seqlen-q", o.pg.seqlen_q, &o.pg.n_seqlen_q))
      continue;
    else if (!strcmp(argv[i], "--mem-bw") && i + 1 < argc) {
      char *end;
      o.pg.mem_bw_gbps = strtod(argv[++i], &end);
      if (*end || !(o.pg.mem_bw_gbps > 0)) {
        fprintf(stderr, "gpuport bench: --mem-bw takes GB/s, a number > 0\n");
        return 2;
      }
    }
    else if (!strcmp(argv[i], "--backward"))
      o.backward = true;
    else if (!strcmp(argv[i], "--tf32"))
      o.tf32 = true;
    else if (!strcmp(argv[i], "--as-user"))
      o.as_user = true;
    else if (!strcmp(argv[i], "--trans") && i + 1 < argc) {
      const char *t = argv[++i];
      if (strlen(t) != 2 || !strchr("NT", t[0]) || !strchr("NT", t[1])) {
        fprintf(stderr, "gpuport bench: --trans takes NN, NT, TN or TT\n");
        return 2;
      }
      o.ta = t[0] == 'T', o.tb = t[1] == 'T';
    }
    else if (!strcmp(argv[i], "--dtype") && i + 1 < argc)
      o.dtype = argv[++i];
    else if (!(tool_arg_i64(argc, argv, &i, "--iters", &o.iters) ||
               tool_arg_i64(argc, argv, &i, "--warmup", &o.warmup) ||
               tool_arg_i64(argc, argv, &i, "--settle", &o.settle_ms) ||
               tool_arg_i64(argc, argv, &i, "--m", &o.m) || tool_arg_i64(argc, argv, &i, "--n", &o.n) ||
               tool_arg_i64(argc, argv, &i, "--k", &o.k) ||
               tool_arg_i64(argc, argv, &i, "--seqlen", &o.seqlen) ||
               tool_arg_i64(argc, argv, &i, "--heads", &o.heads) ||
               tool_arg_i64(argc, argv, &i, "--kv-heads", &o.kv_heads) ||
               tool_arg_i64(argc, argv, &i, "--head-dim", &o.hdim) ||
               tool_arg_i64(argc, argv, &i, "--causal", &o.causal) ||
               tool_arg_i64(argc, argv, &i, "--deterministic", &o.deterministic) ||
               tool_arg_i64(argc, argv, &i, "--sweep", &o.sweep) ||
               tool_arg_i64(argc, argv, &i, "--bytes", &o.bytes) ||
               tool_arg_i64(argc, argv, &i, "--kernels", &o.kernels) ||
               tool_arg_i64(argc, argv, &i, "--page-size", &o.pg.page_size) ||
               tool_arg_i64(argc, argv, &i, "--num-splits", &o.pg.num_splits) ||
               tool_arg_i64(argc, argv, &i, "--append", &o.pg.append) ||
               tool_arg_u64(argc, argv, &i, "--seed", &o.pg.seed)))
      return tool_bad_arg("bench", argv[i]);
  }
  for (int i = 2; i < argc; i++) iters_set |= !strcmp(argv[i], "--iters");
  /* The CPU's paged sweep (16 calls of up to a second under load): 3 runs unless told */
  if (o.paged && cpu && !iters_set) o.iters = 3;
  if (o.iters < 1) o.iters = 1;
  if (o.paged && strcmp(what, "attention")) {
    fprintf(stderr, "gpuport bench: --paged is an option of bench attention\n");
    return 2;
  }
  if (o.paged && (o.backward || o.seqlen || o.causal == 0 || o.deterministic)) {
    fprintf(stderr, "gpuport bench attention --paged: no %s (the paged calls are causal forwards; --context and "
                    "--seqlen-q give the lengths)\n",
            o.backward ? "--backward" : o.seqlen ? "--seqlen" : o.causal == 0 ? "--causal 0" : "--deterministic");
    return 2;
  }
  if (!o.paged && nblist > 1) {
    fprintf(stderr, "gpuport bench: --batch takes one value (lists are for bench attention --paged)\n");
    return 2;
  }
  if (o.paged) {
    memcpy(o.pg.batch, blist, sizeof blist);
    o.pg.n_batch = nblist;
    o.pg.iters = o.iters, o.pg.warmup = o.warmup, o.pg.json = o.json;
    o.pg.heads = o.heads, o.pg.kv_heads = o.kv_heads, o.pg.head_dim = o.hdim;
    o.pg.dtype = o.dtype ? parse_dtype(o.dtype) : GP_BF16;
  }
  int (*fn)(const bench_opts_t *, gp_stream_t) = o.paged                       ? bench_paged
                                                 : !strcmp(what, "gemm")        ? bench_gemm
                                                 : !strcmp(what, "attention") ? bench_attention
                                                 : !strcmp(what, "memcpy")    ? bench_memcpy
                                                 : !strcmp(what, "launch")    ? bench_launch
                                                                              : NULL;
  if (!fn) {
    fprintf(stderr, "gpuport bench: unknown benchmark '%s'\n", what);
    fputs(bench_usage, stderr);
    return 2;
  }
  int rc = 0, dev = 0;
  gp_stream_t s = NULL;
  gp_device_props_t p;
  gp_device_props_init(&p);
  TOOL_TRY(gp_device_get(&dev));
  TOOL_TRY(gp_device_get_props(&p, dev));
  TOOL_TRY(gp_stream_create(&s));
  if (o.json) {
    printf("{\n  \"backend\": \"%s\", \"device\": ", gp_backend_name());
    tool_json_str(p.name);
    printf(", \"iters\": %lld, ", (long long)o.iters);
    if (!strcmp(what, "gemm") && tool_openblas_config()) {
      printf("\"openblas\": ");
      tool_json_str(tool_openblas_config());
      printf(", \"openblas_threads\": %d, \"settle_ms\": %lld, ", tool_openblas_threads(), (long long)settle_ms(&o));
    }
    if (o.paged) printf("\"paged\": true, \"seed\": %llu, ", (unsigned long long)o.pg.seed);
    printf("\"results\": [");
  } else {
    printf("gpuport bench %s%s: backend %s, device %d (%s), median of %lld runs\n", what,
           o.paged ? " --paged" : "", gp_backend_name(), dev, p.name, (long long)o.iters);
    if (!strcmp(what, "gemm") && tool_openblas_config())
      printf("OpenBLAS: %s, %d threads; each timed run after %lld ms idle\n", tool_openblas_config(),
             tool_openblas_threads(), (long long)settle_ms(&o));
  }
  rc = fn(&o, s);
  if (o.json) printf("\n  ]\n}\n");
out:
  gp_stream_destroy(s);
  return rc;
}
