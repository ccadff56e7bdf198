/*
 * test_gemm.c - gp_gemm, gp_gemm_strided_batched and gp_gemm_ex against the float64
 * reference of ref/ref_gemm.c: every element within its worst-case bound and the
 * relative norm within a statistical tolerance, outputs poisoned with NaN before each
 * run (so every element is checked written), padding checked untouched.
 *
 * Inputs are fresh random values (never zero) from one seed per process, printed at
 * the start; GP_TEST_SEED=<seed> replays a run. On the cpu backend each result test
 * runs in five modes (loop index): 0 the default path (direct cblas_sgemm where it
 * applies), 1 the packed OpenBLAS path (GP_CPU_GEMM=packed), 2 the portable dialect
 * kernel on the SIMT executor (GP_CPU_GEMM=portable), also at warp width 64 (test case
 * "portable at width 64": GP_CPU_WARP_SIZE=64 runs the kernel's width-64 build), 3 the
 * sm_80 kernels (kernels/sm80/) on the executor with mma.sync, ldmatrix and cp.async emulated
 * (GP_CPU_GEMM=sm80; warp width 32 only: they are NVIDIA kernels); on GPU backends every
 * mode runs the GPU kernel. The sm80 tests add shapes that reach the sm_80 kernels' other
 * paths: 16-byte aligned operands (cp.async), several 128-wide tiles with edges inside a
 * 16-byte chunk, more k tiles than pipeline stages. Mode 4 runs the AMD MFMA (kernels/mfma/)
 * kernels on the executor at wave64 with each MFMA emulated (GP_CPU_GEMM=mfma), and the
 * mfma tests do for them what the sm80 tests do: several 128 x 128 tiles, k tails inside
 * a 64-byte stage, leading dimensions that do and do not allow 16-byte loads, batches.
 */
#include <check.h>
#include <unistd.h>
#include <math.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuport.h>

#include "dispatch.h"
#include "dispatch_hook.h"
#include "gemm.h"
#include "check_util.h"
#include "ref.h"
#include "ref_gemm.h"
#ifdef GP_BUILD_CPU
#include "cpu/exec.h"
GP_KERNEL_DECLARE(gp__gemm_portable);
GP_KERNEL_DECLARE(gp__gemm_portable_w64);
#endif

static uint64_t g_seed;

/* ---- one case ------------------------------------------------------------------------ */

enum { API_GEMM = 0, API_BATCHED = 1, API_EX = 2 };
enum { MODE_DEFAULT = 0, MODE_PACKED = 1, MODE_PORTABLE = 2, MODE_SM80 = 3, MODE_MFMA = 4, MODE_COUNT = 5 };
enum { MODE_SM90A = MODE_COUNT }; /* run by the sm90a tests only (not by the loops over MODE_COUNT) */

typedef struct gemm_case {
  gp_layout_t layout;
  gp_op_t ta, tb;
  int64_t m, n, k;
  gp_dtype_t ab, c;
  float alpha, beta;
  int64_t pad_a, pad_b, pad_c;       /* leading dimensions above their minimum */
  int64_t batch;                     /* 0 means 1 */
  int64_t gap_a, gap_b, gap_c;       /* elements between consecutive matrices beyond one matrix */
  bool bcast_a, bcast_b;             /* stride 0 */
  gp_epilogue_t epi;
  gp_dtype_t bias_type;
  int api;
  bool nan_ab;                       /* A and B all NaN (alpha == 0 must not read them) */
  bool null_ab;                      /* A and B NULL (k == 0 or alpha == 0) */
  bool use_stream;                   /* a created stream instead of the default one */
  bool align8;                       /* leading dimensions and strides multiples of 8 */
  bool tf32;                         /* GP_COMPUTE_TF32 (gp_gemm_ex): inputs may round to tf32 */
  bool shift_ab;                     /* A and B one element past a 16-byte boundary */
  unsigned id;                       /* distinguishes the seeds of the cases of one test */
} gemm_case_t;

static const char *dt(gp_dtype_t t) { return gp_dtype_name(t); }

static void describe(const gemm_case_t *cs, char *buf, size_t len) {
  snprintf(buf, len,
           "%s-major %s%s m=%lld n=%lld k=%lld %s->%s alpha=%g beta=%g pads=%lld,%lld,%lld "
           "batch=%lld bcast=%d%d epi=%d bias=%s api=%d nan_ab=%d null_ab=%d tf32=%d shift=%d (GP_TEST_SEED=0x%llx)",
           cs->layout == GP_ROW_MAJOR ? "row" : "col", cs->ta == GP_OP_T ? "T" : "N",
           cs->tb == GP_OP_T ? "T" : "N", (long long)cs->m, (long long)cs->n, (long long)cs->k,
           dt(cs->ab), dt(cs->c), (double)cs->alpha, (double)cs->beta, (long long)cs->pad_a,
           (long long)cs->pad_b, (long long)cs->pad_c, (long long)cs->batch, cs->bcast_a,
           cs->bcast_b, (int)cs->epi, dt(cs->bias_type), cs->api, cs->nan_ab, cs->null_ab,
           cs->tf32, cs->shift_ab, (unsigned long long)g_seed);
}

static int64_t max1(int64_t x) { return x > 1 ? x : 1; }

/* x rounded up to a multiple of 8 when the case asks for 16-byte aligned rows. */
static int64_t up8(const gemm_case_t *cs, int64_t x) { return cs->align8 ? (x + 7) / 8 * 8 : x; }

/* Elements spanned by a rows x cols operand stored with leading dimension ld. */
static int64_t span(int64_t rows, int64_t cols, int64_t ld, bool row_major) {
  int64_t outer = row_major ? rows : cols, inner = row_major ? cols : rows;
  if (outer == 0 || inner == 0) return 0;
  return (outer - 1) * ld + inner;
}

/* A device copy of host's bytes starting shift bytes into a fresh allocation (freed
 * with gp_free(p - shift)). */
static void *dev_copy_at(const void *host, size_t bytes, size_t shift) {
  char *d = NULL;
  if (bytes == 0) return NULL;
  ck_assert_int_eq(gp_malloc((void **)&d, bytes + shift), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(d + shift, host, bytes), GP_SUCCESS);
  return d + shift;
}

static void *dev_alloc_copy(const void *host, size_t bytes) {
  void *d = NULL;
  if (bytes == 0) return NULL;
  ck_assert_int_eq(gp_malloc(&d, bytes), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(d, host, bytes), GP_SUCCESS);
  return d;
}

static int g_mode = MODE_DEFAULT;      /* the mode set_mode() last set */
#ifdef GP_BUILD_CPU
static int g_half = GP__CPU_HOST;      /* the host GEMM's f16/bf16 mode: host, convert, sbgemm or half */
static bool g_scalar = false;          /* GP_CPU_CONVERT=scalar forced */
#endif
static int64_t g_blas_limit = INT32_MAX; /* the direct cblas_sgemm's extent limit, as set */

static void set_mode(int mode) {
  g_mode = mode;
#ifdef GP_BUILD_CPU
  g_half = GP__CPU_HOST;
#endif
  gp__cpu_mode_set(GP__OP_GEMM, mode == MODE_SM90A      ? GP__CPU_SM90A
                                 : mode == MODE_MFMA     ? GP__CPU_MFMA
                                 : mode == MODE_SM80     ? GP__CPU_SM80
                                 : mode == MODE_PORTABLE ? GP__CPU_PORTABLE
                                 : mode == MODE_PACKED   ? GP__CPU_PACKED
                                                         : GP__CPU_HOST);
}

/* An operand of the canonical problem TMA can read (16-byte rows and batch strides). */
static bool tma_rows(const void *x, int64_t ld, int64_t stride, int64_t batch) {
  return ((uintptr_t)x & 15u) == 0 && ld % 8 == 0 && (batch == 1 || stride % 8 == 0);
}

#ifdef GP_BUILD_CPU
/* Whether /proc/cpuinfo lists the flag (Linux; the host GEMM's vector conversions run
 * where the processor has F16C (f16) or AVX2 (bf16)). */
static bool cpu_has(const char *flag) {
  static char flags[8192];
  if (!flags[0]) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    while (f && fgets(line, sizeof line, f))
      if (!strncmp(line, "flags", 5)) {
        snprintf(flags, sizeof flags, "%s", line);
        break;
      }
    if (f) fclose(f);
    if (!flags[0]) snprintf(flags, sizeof flags, "?");
  }
  char want[32];
  snprintf(want, sizeof want, " %s", flag);
  const char *p = strstr(flags, want);
  return p && (p[strlen(want)] == ' ' || p[strlen(want)] == '\n');
}
#endif

/* The kernel the cpu backend must choose for the case in the current mode, from the
 * rules each family documents (src/gemm_table.c and the families' *_host.c), written
 * into buf; NULL when the call has nothing to run. a, b, lda, ldb, sa, sb as passed. */
static const char *expected_kernel(const gemm_case_t *cs, const void *a, const void *b, int64_t lda,
                                   int64_t ldb, int64_t sa, int64_t sb, char *buf, size_t len) {
  const int64_t batch = cs->batch > 0 ? cs->batch : 1;
  const bool reads = cs->k > 0 && cs->alpha != 0.0f, bias = cs->epi != GP_EPILOGUE_NONE;
  if (cs->m == 0 || cs->n == 0) return NULL;
  if (!reads && cs->beta == 1.0f && !bias) return NULL;
  /* canonical column-major: a row-major call swaps A and B (and their ops) */
  const bool row = cs->layout == GP_ROW_MAJOR;
  const char ca = (row ? cs->tb : cs->ta) == GP_OP_T ? 't' : 'n', cb = (row ? cs->ta : cs->tb) == GP_OP_T ? 't' : 'n';
  const void *pa = row ? b : a, *pb = row ? a : b;
  const int64_t la = row ? ldb : lda, lb = row ? lda : ldb, xa = row ? sb : sa, xb = row ? sa : sb;
  const char *tname = dt(cs->ab);
  int mode = g_mode;
  if (mode == MODE_SM90A) {
    if (cs->ab != GP_F32 && reads && tma_rows(pa, la, xa, batch) && tma_rows(pb, lb, xb, batch)) {
      snprintf(buf, len, "gp__gemm_sm90a_%s_%c%c", tname, ca, cb);
      return buf;
    }
    mode = MODE_SM80; /* what sm_90a declines, sm_80 takes */
  }
  if (mode == MODE_SM80 && cs->ab == GP_F32) return cs->tf32 ? "gp__gemm_sm80_tf32" : "gp__gemm_sm80_f32";
  if (mode == MODE_SM80) {
    snprintf(buf, len, "gp__gemm_sm80_%s_%c%c", tname, ca, cb);
    return buf;
  }
  if (mode == MODE_MFMA) {
    snprintf(buf, len, "gp__gemm_mfma_%s", tname);
    return buf;
  }
  if (mode == MODE_PORTABLE) return "gp__gemm_portable";
  if (!reads) return "cpu-scale-c";
#ifdef GP_BUILD_CPU
  if (cs->ab != GP_F32 && mode == MODE_DEFAULT) { /* f16/bf16 on the host: sbgemm or conversion */
    const bool sb = cs->ab == GP_BF16 && gp__gemm_cpu_sbgemm_available() &&
                    (g_half == GP__CPU_SBGEMM || (g_half == GP__CPU_HOST && gp__gemm_cpu_sbgemm_faster()));
    if (sb) return "openblas-sbgemm";
    /* the packed half path when forced; by default (sbgemm not taken) for one k block of
     * at most 384 where C, as the column-major problem sees it (a row-major C
     * transposed), has at least as many columns as rows */
    const int64_t cm = row ? cs->n : cs->m, cn = row ? cs->m : cs->n;
    const bool packed_here = !g_scalar && cpu_has("avx2") && cpu_has("fma") && cpu_has("f16c");
    if (packed_here && (g_half == GP__CPU_HALF || (g_half == GP__CPU_HOST && cs->k <= 384 && cn >= cm)))
      return "cpu-packed-half-6x16";
    const bool f16 = cs->ab == GP_F16;
    const bool vec = !g_scalar && cpu_has(f16 ? "f16c" : "avx2");
    snprintf(buf, len, "openblas-sgemm(%s->f32 %s)", tname, vec ? (f16 ? "f16c" : "avx2") : "scalar");
    return buf;
  }
#endif
  const int64_t m = row ? cs->n : cs->m, n = row ? cs->m : cs->n, lim = g_blas_limit;
  const int64_t ldc = (row ? cs->n : cs->m) + cs->pad_c;
  if (mode == MODE_DEFAULT && cs->ab == GP_F32 && cs->c == GP_F32 && m <= lim && n <= lim && cs->k <= lim &&
      la <= lim && lb <= lim && ldc <= lim)
    return "openblas-sgemm";
  return "openblas-sgemm-packed(256x256x256 f32 tiles)";
}

static void run_case(const gemm_case_t *cs) {
  char what[512];
  describe(cs, what, sizeof what);
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ (0x9e3779b97f4a7c15ull * (cs->id + 1)));

  const bool row = cs->layout == GP_ROW_MAJOR;
  const bool ta = cs->ta == GP_OP_T, tb = cs->tb == GP_OP_T;
  const int64_t batch = cs->batch > 0 ? cs->batch : 1;
  const int64_t a_rows = ta ? cs->k : cs->m, a_cols = ta ? cs->m : cs->k;
  const int64_t b_rows = tb ? cs->n : cs->k, b_cols = tb ? cs->k : cs->n;
  const int64_t lda = up8(cs, max1(row ? a_cols : a_rows) + cs->pad_a);
  const int64_t ldb = up8(cs, max1(row ? b_cols : b_rows) + cs->pad_b);
  const int64_t ldc = max1(row ? cs->n : cs->m) + cs->pad_c;
  const int64_t a1 = span(a_rows, a_cols, lda, row), b1 = span(b_rows, b_cols, ldb, row);
  const int64_t c1 = span(cs->m, cs->n, ldc, row);
  const int64_t sa = cs->bcast_a ? 0 : up8(cs, a1 + cs->gap_a);
  const int64_t sb = cs->bcast_b ? 0 : up8(cs, b1 + cs->gap_b);
  const int64_t sc = c1 + cs->gap_c;
  const size_t na = (size_t)((batch - 1) * sa + a1), nb = (size_t)((batch - 1) * sb + b1);
  const size_t nc = (size_t)((batch - 1) * sc + c1);
  const size_t ea = gp_dtype_size(cs->ab), ec = gp_dtype_size(cs->c);

  void *ha = malloc(na * ea + 1), *hb = malloc(nb * ea + 1), *hc = malloc(nc * ec + 1);
  void *hgot = malloc(nc * ec + 1);
  double *ref = malloc(nc * sizeof(double) + 1), *bound = malloc(nc * sizeof(double) + 1);
  ck_assert(ha && hb && hc && hgot && ref && bound);
  if (cs->nan_ab) {
    gp_ref_poison(ha, cs->ab, na);
    gp_ref_poison(hb, cs->ab, nb);
  } else {
    gp_ref_fill(ha, cs->ab, na, &rng, -1.0, 1.0);
    gp_ref_fill(hb, cs->ab, nb, &rng, -1.0, 1.0);
  }
  if (cs->beta == 0.0f)
    gp_ref_poison(hc, cs->c, nc); /* not read; every element of the windows must be written */
  else
    gp_ref_fill(hc, cs->c, nc, &rng, -1.0, 1.0);
  const bool has_bias = cs->epi != GP_EPILOGUE_NONE;
  const size_t eb = gp_dtype_size(cs->bias_type);
  void *hbias = malloc((size_t)cs->n * eb + 1);
  ck_assert(hbias != NULL);
  if (has_bias) gp_ref_fill(hbias, cs->bias_type, (size_t)cs->n, &rng, -1.0, 1.0);

  const size_t shift = cs->shift_ab ? ea : 0;
  void *da = cs->null_ab ? NULL : dev_copy_at(ha, na * ea, shift);
  void *db = cs->null_ab ? NULL : dev_copy_at(hb, nb * ea, shift);
  void *dc = dev_alloc_copy(hc, nc * ec);
  void *dbias = has_bias ? dev_alloc_copy(hbias, (size_t)cs->n * eb) : NULL;
  gp_stream_t stream = NULL;
  if (cs->use_stream) ck_assert_int_eq(gp_stream_create(&stream), GP_SUCCESS);

  gp_status_t st;
  gp__last_kernel_reset();
  if (cs->api == API_GEMM) {
    ck_assert(batch == 1 && !has_bias);
    st = gp_gemm(stream, cs->layout, cs->ta, cs->tb, cs->m, cs->n, cs->k, cs->alpha, da, cs->ab,
                 lda, db, cs->ab, ldb, cs->beta, dc, cs->c, ldc);
  } else if (cs->api == API_BATCHED) {
    ck_assert(!has_bias);
    st = gp_gemm_strided_batched(stream, cs->layout, cs->ta, cs->tb, cs->m, cs->n, cs->k,
                                 cs->alpha, da, cs->ab, lda, db, cs->ab, ldb, cs->beta, dc, cs->c,
                                 ldc, batch, sa, sb, sc);
  } else {
    gp_gemm_desc_t d;
    gp_gemm_desc_init(&d);
    d.layout = cs->layout; d.transa = cs->ta; d.transb = cs->tb;
    d.m = cs->m; d.n = cs->n; d.k = cs->k; d.alpha = cs->alpha; d.beta = cs->beta;
    d.a = da; d.a_type = cs->ab; d.lda = lda;
    d.b = db; d.b_type = cs->ab; d.ldb = ldb;
    d.c = dc; d.c_type = cs->c; d.ldc = ldc;
    d.batch = batch; d.stride_a = sa; d.stride_b = sb; d.stride_c = sc;
    d.epilogue = cs->epi; d.bias = dbias; d.bias_type = cs->bias_type;
    if (cs->tf32) d.compute = GP_COMPUTE_TF32;
    st = gp_gemm_ex(stream, &d);
  }
  ck_assert_msg(st == GP_SUCCESS, "%s: %s (%s)", what, gp_status_name(st), gp_last_error_message());
  if (gp_backend() == GP_BACKEND_CPU) { /* the kernel that ran is the one the rules name */
    char want_buf[64];
    const char *want = expected_kernel(cs, da, db, lda, ldb, sa, sb, want_buf, sizeof want_buf);
    const char *got = gp__last_kernel(GP__OP_GEMM);
    ck_assert_msg(want ? got && strcmp(got, want) == 0 : got == NULL, "kernel %s, expected %s: %s",
                  got ? got : "(none)", want ? want : "(none)", what);
  }
  ck_assert_int_eq(gp_stream_synchronize(stream), GP_SUCCESS);
  if (nc) ck_assert_int_eq(gp_memcpy(hgot, dc, nc * ec), GP_SUCCESS);

  /* Reference: untouched everywhere, then each batch entry's window. */
  gp_ref_gemm_untouched(hc, cs->c, nc, ref, bound);
  for (int64_t z = 0; z < batch && c1 > 0; z++) {
    gp_ref_gemm_t g = {
        .layout = cs->layout, .transa = cs->ta, .transb = cs->tb, .m = cs->m, .n = cs->n,
        .k = cs->alpha == 0.0f ? 0 : cs->k, .alpha = cs->alpha,
        .a = (const char *)ha + (size_t)(z * sa) * ea, .a_type = cs->ab, .lda = lda,
        .b = (const char *)hb + (size_t)(z * sb) * ea, .b_type = cs->ab, .ldb = ldb,
        .beta = cs->beta, .c = (const char *)hc + (size_t)(z * sc) * ec, .c_type = cs->c,
        .ldc = ldc, .epilogue = cs->epi, .bias = hbias, .bias_type = cs->bias_type};
    /* TF32: inputs rounded to 10 mantissa bits (2^-11), tensor-core sums (2^-23) */
    if (cs->tf32)
      gp_ref_gemm_rounded(&g, 0x1.0p-11, 0x1.0p-23, ref + z * sc, bound + z * sc);
    else
      gp_ref_gemm(&g, ref + z * sc, bound + z * sc);
  }
  gp_ref_cmp_t cmp;
  gp_ref_compare(&cmp, hgot, cs->c, ref, bound, 0.0, nc);
  char res[256];
  gp_ref_cmp_format(&cmp, res, sizeof res);
  ck_assert_msg(cmp.n_bad == 0, "%s: %s", what, res);
  /* Relative norm over the windows (the positions with a nonzero bound). A statistical
   * check: with a handful of elements one cancelling sum dominates it, so it applies from
   * 64 output elements on (the element-wise bound covers every size). */
  double num = 0.0, den = 0.0;
  size_t nwin = 0;
  for (size_t i = 0; i < nc; i++) {
    if (bound[i] == 0.0) continue;
    double e = gp_ref_load(hgot, cs->c, i) - ref[i];
    num += e * e;
    den += ref[i] * ref[i];
    nwin++;
  }
  const double rel = den > 0.0 ? sqrt(num / den) : sqrt(num);
  /* TF32 input rounding: about 0.8 * 2^-11 relative on random data, allowed 2^-9 */
  const double tol = gp_ref_gemm_rel_tol(cs->k, cs->c) + (cs->tf32 ? 0x1.0p-9 : 0.0);
  ck_assert_msg(nwin < 64 || rel <= tol, "%s: relative norm error %.3g above %.3g", what, rel, tol);

  if (stream) ck_assert_int_eq(gp_stream_destroy(stream), GP_SUCCESS);
  if (da) gp_free((char *)da - shift);
  if (db) gp_free((char *)db - shift);
  gp_free(dc);
  gp_free(dbias);
  free(ha);
  free(hb);
  free(hc);
  free(hgot);
  free(ref);
  free(bound);
  free(hbias);
}

static gemm_case_t base_case(void) {
  gemm_case_t cs;
  memset(&cs, 0, sizeof cs);
  cs.layout = GP_ROW_MAJOR;
  cs.ta = cs.tb = GP_OP_N;
  cs.m = 67; cs.n = 45; cs.k = 93;
  cs.ab = cs.c = cs.bias_type = GP_F32;
  cs.alpha = 0.75f; cs.beta = 0.5f;
  cs.api = API_GEMM;
  return cs;
}

static const struct { gp_dtype_t ab, c; } k_types[] = {
    {GP_F32, GP_F32}, {GP_F16, GP_F16}, {GP_F16, GP_F32}, {GP_BF16, GP_BF16}, {GP_BF16, GP_F32}};
#define N_TYPES (sizeof k_types / sizeof k_types[0])

/* ---- result tests (loop index = mode) ---------------------------------------------- */

/* Every type combination x layout x transposes, at a shape no tile divides, leading
 * dimensions above the minimum; beta != 0 (C read) and beta == 0 (C poisoned). */
START_TEST(test_types_layouts_ops) {
  set_mode(_i);
  unsigned id = 0;
  for (size_t t = 0; t < N_TYPES; t++)
    for (int l = 0; l < 2; l++)
      for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
          gemm_case_t cs = base_case();
          cs.ab = k_types[t].ab; cs.c = k_types[t].c;
          cs.layout = l ? GP_COL_MAJOR : GP_ROW_MAJOR;
          cs.ta = a ? GP_OP_T : GP_OP_N; cs.tb = b ? GP_OP_T : GP_OP_N;
          cs.pad_a = 3; cs.pad_b = 5; cs.pad_c = 2;
          cs.beta = (a ^ b) ? 0.0f : -1.25f;
          cs.id = id++;
          run_case(&cs);
        }
}
END_TEST

/* m, n, k in {0, 1} and small, with beta 0 and not, both layouts. */
START_TEST(test_small_and_empty) {
  set_mode(_i);
  const int64_t ext[] = {0, 1, 2, 17};
  unsigned id = 100;
  for (int l = 0; l < 2; l++)
    for (size_t mi = 0; mi < 4; mi++)
      for (size_t ni = 0; ni < 4; ni++)
        for (size_t ki = 0; ki < 4; ki++) {
          gemm_case_t cs = base_case();
          cs.layout = l ? GP_COL_MAJOR : GP_ROW_MAJOR;
          cs.m = ext[mi]; cs.n = ext[ni]; cs.k = ext[ki];
          cs.ta = (mi + ki) & 1 ? GP_OP_T : GP_OP_N;
          cs.tb = (ni + ki) & 2 ? GP_OP_T : GP_OP_N;
          cs.ab = k_types[(mi + ni + ki) % N_TYPES].ab;
          cs.c = k_types[(mi + ni + ki) % N_TYPES].c;
          cs.beta = (mi + ni) & 1 ? 0.0f : 2.0f;
          cs.pad_c = 1;
          cs.null_ab = cs.k == 0;
          cs.id = id++;
          run_case(&cs);
        }
}
END_TEST

/* k == 0 scales C by beta (zeros for beta == 0); alpha == 0 reads neither A nor B (NaN
 * there must not reach C); beta == 1 with k == 0 leaves C as it was. */
START_TEST(test_k0_alpha0) {
  set_mode(_i);
  unsigned id = 300;
  const float betas[] = {0.0f, 1.0f, -0.5f};
  for (size_t t = 0; t < N_TYPES; t++)
    for (size_t bi = 0; bi < 3; bi++)
      for (int which = 0; which < 3; which++) {
        gemm_case_t cs = base_case();
        cs.m = 13; cs.n = 9;
        cs.ab = k_types[t].ab; cs.c = k_types[t].c;
        cs.beta = betas[bi];
        cs.layout = which & 1 ? GP_COL_MAJOR : GP_ROW_MAJOR;
        if (which == 0) { cs.k = 0; cs.null_ab = true; }
        if (which == 1) { cs.k = 7; cs.alpha = 0.0f; cs.nan_ab = true; }
        if (which == 2) { cs.k = 0; cs.alpha = 0.0f; cs.null_ab = true; }
        cs.id = id++;
        run_case(&cs);
      }
}
END_TEST

/* Strided batches: gaps between matrices, broadcast A or B (stride 0), both layouts. */
START_TEST(test_batched) {
  set_mode(_i);
  unsigned id = 400;
  for (size_t t = 0; t < N_TYPES; t++)
    for (int v = 0; v < 4; v++) {
      gemm_case_t cs = base_case();
      cs.api = v == 3 ? API_EX : API_BATCHED;
      cs.m = 19; cs.n = 23; cs.k = 29;
      cs.ab = k_types[t].ab; cs.c = k_types[t].c;
      cs.layout = v & 1 ? GP_COL_MAJOR : GP_ROW_MAJOR;
      cs.ta = v & 2 ? GP_OP_T : GP_OP_N;
      cs.tb = v & 1 ? GP_OP_T : GP_OP_N;
      cs.batch = 3;
      cs.gap_a = 5; cs.gap_b = 1; cs.gap_c = 7;
      cs.bcast_a = v == 1; cs.bcast_b = v == 2;
      cs.pad_a = 1; cs.pad_c = 3;
      cs.beta = v & 1 ? 0.0f : 0.25f;
      cs.use_stream = v == 2;
      cs.id = id++;
      run_case(&cs);
    }
}
END_TEST

/* Epilogues: each form, bias in f32 and in c_type, both layouts, beta 0 and not. */
START_TEST(test_epilogues) {
  set_mode(_i);
  unsigned id = 500;
  const gp_epilogue_t epis[] = {GP_EPILOGUE_BIAS, GP_EPILOGUE_BIAS_RELU, GP_EPILOGUE_BIAS_GELU,
                                GP_EPILOGUE_BIAS_GELU_TANH};
  for (size_t t = 0; t < N_TYPES; t++)
    for (size_t e = 0; e < 4; e++)
      for (int v = 0; v < 2; v++) {
        gemm_case_t cs = base_case();
        cs.api = API_EX;
        cs.m = 33; cs.n = 21; cs.k = 40;
        cs.ab = k_types[t].ab; cs.c = k_types[t].c;
        cs.epi = epis[e];
        cs.bias_type = v ? cs.c : GP_F32;
        cs.layout = (e + v) & 1 ? GP_COL_MAJOR : GP_ROW_MAJOR;
        cs.ta = v ? GP_OP_T : GP_OP_N;
        cs.alpha = 2.0f;
        cs.beta = v ? 0.0f : 1.0f;
        cs.batch = e == 3 ? 2 : 1;
        cs.id = id++;
        run_case(&cs);
      }
  /* An epilogue with k == 0: epi(beta * C). */
  gemm_case_t cs = base_case();
  cs.api = API_EX; cs.k = 0; cs.null_ab = true; cs.epi = GP_EPILOGUE_BIAS_GELU; cs.id = id++;
  run_case(&cs);
}
END_TEST

/* ---- one epilogue ------------------------------------------------------------------------ */

#ifdef GP_BUILD_CPU
/* C = epi(alpha A B + beta C) with k = 1 and B all ones, so every implementation's
 * accumulator is exactly A(i) (one product by 1, no sum to order) and the results differ
 * only by their epilogues. The packed OpenBLAS path, the portable kernel and, for 16-bit
 * inputs, the sm_80 and MFMA kernels (where they take the call) finish C with
 * kernels/common/gemm_epilogue.h: the same bits, every type, epilogue, alpha, beta and
 * bias type. The default path on f32 (direct: alpha and beta go to OpenBLAS's sgemm, whose
 * rounding of beta C + alpha AB is its own; kernels/cpu/gemm_cpu.c) stays within the bound
 * of two roundings of |alpha AB| + |beta C| before the activation (whose slope is below
 * 1.2) plus a few ulps of the result; with GELU, its erf (the AVX2 one where the
 * processor has it: kernels/cpu/gelu_cpu.c, within 4 ulps of erf where libm's erff is
 * within 1) adds 0.5 |v| 2^-21, v = alpha AB + beta C + bias, over libm's. */
START_TEST(test_epilogue_bits) {
  enum { M = 37, N = 23 };
  const gp_epilogue_t epis[] = {GP_EPILOGUE_NONE, GP_EPILOGUE_BIAS, GP_EPILOGUE_BIAS_RELU, GP_EPILOGUE_BIAS_GELU,
                                GP_EPILOGUE_BIAS_GELU_TANH};
  const float alphas[] = {1.0f, -0.7f}, betas[] = {0.0f, 0.6f, -1.3f};
  const int others[] = {MODE_PACKED, MODE_SM80, MODE_MFMA, MODE_DEFAULT};
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ 0xe9110c0eull);
  size_t compared = 0, bounded = 0;
  for (size_t t = 0; t < N_TYPES; t++)
    for (size_t e = 0; e < 5; e++)
      for (int bt = 0; bt < 2; bt++)
        for (size_t ai = 0; ai < 2; ai++)
          for (size_t bi = 0; bi < 3; bi++) {
            const gp_dtype_t ab = k_types[t].ab, ct = k_types[t].c, bias_t = bt ? ct : GP_F32;
            const size_t ea = gp_dtype_size(ab), ec = gp_dtype_size(ct), eb = gp_dtype_size(bias_t);
            unsigned char ha[M * 4], hb[N * 4], hc[M * N * 4], hbias[N * 4], got[5][M * N * 4];
            gp_ref_fill(ha, ab, M, &rng, -2.0, 2.0);
            for (int j = 0; j < N; j++) /* ones */
              memcpy(hb + j * ea, ab == GP_F32 ? (const void *)&(float){1.0f}
                                  : ab == GP_F16 ? (const void *)&(uint16_t){0x3c00} : (const void *)&(uint16_t){0x3f80}, ea);
            gp_ref_fill(hc, ct, M * N, &rng, -2.0, 2.0);
            gp_ref_fill(hbias, bias_t, N, &rng, -1.0, 1.0);
            void *da = dev_alloc_copy(ha, M * ea), *db = dev_alloc_copy(hb, N * ea);
            void *dbias = dev_alloc_copy(hbias, N * eb), *dc = NULL;
            ck_assert_int_eq(gp_malloc(&dc, M * N * ec), GP_SUCCESS);
            gp_gemm_desc_t d;
            gp_gemm_desc_init(&d);
            d.layout = GP_COL_MAJOR;
            d.m = M, d.n = N, d.k = 1, d.alpha = alphas[ai], d.beta = betas[bi];
            d.a = da, d.a_type = ab, d.lda = M, d.b = db, d.b_type = ab, d.ldb = 1;
            d.c = dc, d.c_type = ct, d.ldc = M;
            d.epilogue = epis[e], d.bias = epis[e] == GP_EPILOGUE_NONE ? NULL : dbias, d.bias_type = bias_t;
            for (int r = 0; r < 5; r++) {
              const int mode = r == 0 ? MODE_PORTABLE : others[r - 1];
              set_mode(mode);
              ck_assert_int_eq(gp_memcpy(dc, hc, M * N * ec), GP_SUCCESS);
              ck_assert_int_eq(gp_gemm_ex(NULL, &d), GP_SUCCESS);
              ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
              ck_assert_int_eq(gp_memcpy(got[r], dc, M * N * ec), GP_SUCCESS);
            }
            set_mode(MODE_DEFAULT);
            for (int r = 1; r < 5; r++) {
              const bool direct = others[r - 1] == MODE_DEFAULT && ab == GP_F32 && ct == GP_F32;
              for (size_t i = 0; i < (size_t)M * N; i++) {
                const double want = gp_ref_load(got[0], ct, i), have = gp_ref_load(got[r], ct, i);
                if (!direct) {
                  ck_assert_msg(memcmp(got[0] + i * ec, got[r] + i * ec, ec) == 0,
                                "%s->%s epi %d bias %s alpha %g beta %g, mode %d: C[%zu] = %a, the portable kernel %a "
                                "(GP_TEST_SEED=0x%llx)", dt(ab), dt(ct), (int)epis[e], dt(bias_t), (double)d.alpha,
                                (double)d.beta, others[r - 1], i, have, want, (unsigned long long)g_seed);
                  compared++;
                  continue;
                }
                const double x = fabs(d.alpha * gp_ref_load(ha, ab, i % M)) + fabs(d.beta * gp_ref_load(hc, ct, i));
                const double v = x + (epis[e] == GP_EPILOGUE_NONE ? 0.0 : fabs(gp_ref_load(hbias, bias_t, i / M)));
                const double erf_term = epis[e] == GP_EPILOGUE_BIAS_GELU ? 0.5 * v * 0x1.0p-21 : 0.0;
                const double bound = 1.2 * 0x1.0p-22 * x + 0x1.0p-21 * fabs(want) + erf_term + 0x1.0p-126;
                ck_assert_msg(fabs(have - want) <= bound,
                              "f32 epi %d alpha %g beta %g, direct path: C[%zu] = %a, the portable kernel %a, "
                              "beyond %g (GP_TEST_SEED=0x%llx)", (int)epis[e], (double)d.alpha, (double)d.beta, i,
                              have, want, bound, (unsigned long long)g_seed);
                bounded++;
              }
            }
            gp_free(da), gp_free(db), gp_free(dbias), gp_free(dc);
          }
  printf("  epilogue: %zu elements bit-identical to the portable kernel, %zu within the direct path's bound\n",
         compared, bounded);
}
END_TEST
#endif

#ifdef GP_BUILD_CPU
/* ulps of got from the float64 want, in f32 ulps of want (subnormal ulp below 2^-126). */
static double ulps_from(float got, double want) {
  if (isnan(want)) return isnan(got) ? 0.0 : INFINITY;
  if ((double)got == want) return 0.0;
  int e;
  frexp(fabs(want), &e);
  const double ulp = fabs(want) < 0x1.0p-126 ? 0x1.0p-149 : ldexp(1.0, e - 24);
  return fabs((double)got - want) / ulp;
}

/* The direct f32 path's GELU (kernels/cpu/gelu_cpu.c). Its erf against the float64 erf:
 * every binade of f32 (2^-149 .. 2^127, both signs, 64 random mantissas each), the
 * subnormals, the two branch points and the clamp, and the special values (+-0, +-inf,
 * NaN, the extremes) exactly as erff gives them; within 4 ulps everywhere (the fit
 * measures 2.8 at worst over every f32 of [0.25, 4)). Then the GELU itself over
 * [-12, 12] against 0.5 v (1 + erf(v / sqrt 2)) in float64, and a GEMM with the GELU
 * epilogue on the direct path with the vector build and the scalar one: both within the
 * erf's bound of the float64 activation of the same f32 product, and not the same bits
 * (so the vector build really ran). */
START_TEST(test_gelu_vector) {
  if (!gp__cpu_isa().avx2 || !gp__cpu_isa().fma) {
    printf("  gelu: no AVX2 + FMA here, the portable build alone\n");
    return;
  }
  gp__cpu_gelu_simd_set(1);
  ck_assert(gp__cpu_gelu_vector());
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ 0x6e1ull);
  enum { PER = 64 };
  static float in[(280 + 3) * 2 * PER + 32], out[sizeof in / sizeof in[0]];
  size_t n = 0;
  for (int e = -150; e < 128; e++)
    for (int i = 0; i < PER; i++) {
      const uint32_t mant = (uint32_t)(gp_ref_rng_next(&rng) & 0x7fffffu);
      const uint32_t bits = e < -126 ? mant : ((uint32_t)(e + 127) << 23) | mant; /* e < -126: subnormal */
      float f;
      memcpy(&f, &bits, 4);
      in[n++] = f, in[n++] = -f;
    }
  const float edges[] = {0.921875f, nextafterf(0.921875f, 0.0f), 3.93f, 3.9187f, 3.92f, 2.4375f, 1.0f, 0.5f, FLT_MIN};
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) in[n++] = edges[i], in[n++] = -edges[i];
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, 0x1p-149f, -0x1p-149f};
  const size_t n_plain = n;
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) in[n++] = special[i];
  ck_assert_uint_le(n, sizeof in / sizeof in[0]);
  gp__cpu_erf_f32(out, in, (int64_t)n, true);
  double worst = 0.0;
  for (size_t i = 0; i < n; i++) {
    if (i >= n_plain) {
      const float want = erff(in[i]);
      ck_assert_msg(memcmp(&want, &out[i], 4) == 0 || (isnan(want) && isnan(out[i])),
                    "vector erf(%a) = %a, erff %a", (double)in[i], (double)out[i], (double)want);
      continue;
    }
    const double u = ulps_from(out[i], erf((double)in[i]));
    ck_assert_msg(u <= 4.0, "vector erf(%a) = %a, %.2f ulps from erf %a (GP_TEST_SEED=0x%llx)", (double)in[i],
                  (double)out[i], u, erf((double)in[i]), (unsigned long long)g_seed);
    if (u > worst) worst = u;
  }
  /* GELU: v = x + bias rounded once, then erf's error (4 ulps of |erf| <= 1) times 0.5 |v|,
   * and the three roundings of 0.5 v (1 + e). */
  enum { G = 1000 };
  float g[G], gs[G], bv[G];
  const float bias = 0.375f;
  for (int i = 0; i < G; i++) {
    g[i] = gs[i] = (float)(-12.0 + 24.0 * (double)(gp_ref_rng_next(&rng) % 1000003) / 1000003.0);
    bv[i] = (float)i / (float)G - 0.5f;
  }
  /* one bias, then a bias per element; tails of 7 and 3 through the padded vector */
  gp__cpu_gelu_bias_f32(g, G / 2 - 3, NULL, bias, true);
  gp__cpu_gelu_bias_f32(g + G / 2 - 3, 3, NULL, bias, true);
  gp__cpu_gelu_bias_f32(g + G / 2, G / 2 - 7, bv + G / 2, 0.0f, true);
  gp__cpu_gelu_bias_f32(g + G - 7, 7, bv + G - 7, 0.0f, true);
  for (int i = 0; i < G; i++) {
    const float b = i < G / 2 ? bias : bv[i];
    const double v = (double)(gs[i] + b), want = 0.5 * v * (1.0 + erf(v * M_SQRT1_2));
    const double bound = 0.5 * fabs(v) * 4.0 * 0x1.0p-24 + 3.0 * 0x1.0p-24 * (0.5 * fabs(v) * 2.0) + 0x1.0p-149;
    ck_assert_msg(fabs((double)g[i] - want) <= bound, "vector GELU(%a + %a) = %a, float64 %a, beyond %g",
                  (double)gs[i], (double)b, (double)g[i], want, bound);
  }
  /* The GEMM: A M x 1 random, B a row of ones, so C(i, j) = A(i) + bias(j) exactly in f32;
   * column-major (the bias along n of the problem the backend runs) and row-major (the
   * model's layout: there the backend's column-major problem has the bias along m). */
  enum { M = 512, N = 16 };
  static float ha[M], hb[N], hbias[N], got[2][M * N];
  for (int i = 0; i < M; i++) ha[i] = (float)(-6.0 + 12.0 * (double)(gp_ref_rng_next(&rng) % 65536) / 65536.0);
  for (int j = 0; j < N; j++) hb[j] = 1.0f, hbias[j] = (float)j / 16.0f - 0.5f;
  void *da = dev_alloc_copy(ha, sizeof ha), *db = dev_alloc_copy(hb, sizeof hb), *dbias = dev_alloc_copy(hbias, sizeof hbias);
  void *dc = NULL;
  ck_assert_int_eq(gp_malloc(&dc, sizeof got[0]), GP_SUCCESS);
  gp_gemm_desc_t d;
  gp_gemm_desc_init(&d);
  d.m = M, d.n = N, d.k = 1;
  d.a = da, d.a_type = GP_F32, d.b = db, d.b_type = GP_F32;
  d.c = dc, d.c_type = GP_F32;
  d.epilogue = GP_EPILOGUE_BIAS_GELU, d.bias = dbias, d.bias_type = GP_F32;
  set_mode(MODE_DEFAULT);
  size_t differ = 0;
  for (int lay = 0; lay < 2; lay++) {
    const bool row = lay == 1;
    size_t differ_lay = 0;
    d.layout = row ? GP_ROW_MAJOR : GP_COL_MAJOR;
    d.lda = row ? 1 : M, d.ldb = row ? N : 1, d.ldc = row ? N : M;
    for (int r = 0; r < 2; r++) {
      gp__cpu_gelu_simd_set(r == 0);
      ck_assert_int_eq(gp_gemm_ex(NULL, &d), GP_SUCCESS);
      ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
      ck_assert_int_eq(gp_memcpy(got[r], dc, sizeof got[r]), GP_SUCCESS);
      for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++) {
          const size_t at = row ? (size_t)i * N + j : (size_t)i + (size_t)j * M;
          const double v = (double)(ha[i] + hbias[j]), want = 0.5 * v * (1.0 + erf(v * M_SQRT1_2));
          const double bound = 0.5 * fabs(v) * 0x1.0p-21 + 0x1.0p-21 * fabs(want) + 0x1.0p-149;
          ck_assert_msg(fabs((double)got[r][at] - want) <= bound,
                        "direct GELU (%s, %s) C[%d][%d] = %a, float64 %a, beyond %g", r == 0 ? "avx2" : "scalar",
                        row ? "row-major" : "column-major", i, j, (double)got[r][at], want, bound);
          if (r == 1) differ_lay += got[0][at] != got[1][at];
        }
    }
    ck_assert_msg(differ_lay > 0, "%s: the avx2 and scalar GELU gave the same bits on all %d elements: did the avx2 "
                  "one run?", row ? "row-major" : "column-major", M * N);
    differ += differ_lay;
  }
  gp__cpu_gelu_simd_set(-1);
  gp_free(da), gp_free(db), gp_free(dbias), gp_free(dc);
  printf("  gelu: avx2 erf within %.2f ulps of float64 over %zu values; direct GEMM GELU avx2 vs scalar: %zu of %d "
         "elements differ (both layouts), both within bound\n", worst, n, differ, 2 * M * N);
}
END_TEST
#endif

/* ---- the sm_80 kernels ---------------------------------------------------------------- */

/* Shapes that reach the sm_80 kernels' other paths, for every input type and transpose
 * pair: 16-byte aligned operands (the cp.async path), several 128 x 128 tiles whose m, n
 * and k edges fall inside a 16-byte chunk, more k tiles than pipeline stages, aligned
 * batch strides, an epilogue, beta 0 and not. On the cpu backend they run with
 * GP_CPU_GEMM=sm80 (the sm_80 and sm_90a kernels under emulation); on a GPU, on its kernels. */
START_TEST(test_sm80_shapes) {
  set_mode(MODE_SM80);
  unsigned id = 700;
  for (size_t t = 0; t < N_TYPES; t++)
    for (int v = 0; v < 4; v++) {
      gemm_case_t cs = base_case();
      cs.api = API_EX;
      cs.ab = k_types[t].ab; cs.c = k_types[t].c;
      cs.layout = (t + (size_t)v) & 1 ? GP_COL_MAJOR : GP_ROW_MAJOR;
      cs.ta = v & 1 ? GP_OP_T : GP_OP_N;
      cs.tb = v & 2 ? GP_OP_T : GP_OP_N;
      cs.m = 203; cs.n = 141; cs.k = 200;
      cs.align8 = v != 3 || t != 1; /* one case of plain loads with the same shape */
      cs.shift_ab = v == 0 && t == 3; /* and one with A and B off every 16-byte boundary */
      cs.beta = v == 1 ? 0.5f : 0.0f;
      cs.epi = v == 2 ? GP_EPILOGUE_BIAS_GELU_TANH : GP_EPILOGUE_NONE;
      cs.batch = v == 3 ? 2 : 1;
      cs.gap_a = 3; cs.gap_b = 5; cs.gap_c = 1;
      cs.id = id++;
      run_case(&cs);
    }
  /* f32 with GP_COMPUTE_TF32 (gp__gemm_sm80_tf32 on the sm_80 path): every transpose
   * pair, edges inside a 4-float chunk, more k tiles than stages, aligned (16-byte copies)
   * and not (4-byte copies), a batch, beta 0 and not, an epilogue. */
  for (int v = 0; v < 4; v++) {
    gemm_case_t cs = base_case();
    cs.api = API_EX;
    cs.tf32 = true;
    cs.layout = v & 1 ? GP_COL_MAJOR : GP_ROW_MAJOR;
    cs.ta = v & 1 ? GP_OP_T : GP_OP_N;
    cs.tb = v & 2 ? GP_OP_T : GP_OP_N;
    cs.m = 141; cs.n = 133; cs.k = 83;
    cs.align8 = v != 2;
    cs.beta = v == 1 ? 0.5f : 0.0f;
    cs.epi = v == 3 ? GP_EPILOGUE_BIAS_RELU : GP_EPILOGUE_NONE;
    cs.batch = v == 0 ? 2 : 1;
    cs.gap_a = 3; cs.gap_b = 5; cs.gap_c = 1;
    cs.id = id++;
    run_case(&cs);
  }
  /* Aligned, within one tile, k below one k tile; and k of exactly one full ring. */
  for (int v = 0; v < 2; v++) {
    gemm_case_t cs = base_case();
    cs.ab = v ? GP_BF16 : GP_F16; cs.c = GP_F32;
    cs.m = v ? 64 : 5; cs.n = v ? 40 : 3; cs.k = v ? 128 : 9;
    cs.align8 = true;
    cs.beta = 0.0f;
    cs.id = id++;
    run_case(&cs);
  }
}
END_TEST

/* ---- the sm_90a kernels ---------------------------------------------------------------- */

/* Shapes for the sm_90a kernels, every input type and transpose pair: m and n edges inside
 * a tile (TMA's zero fill), k = 300 (5 k-steps, one partial), tiles spread over the
 * persistent grid so one block runs several tiles and its 4-stage ring wraps several
 * times, a batch through TMA's third dimension, beta, an epilogue, every output type. On
 * the cpu backend with GP_CPU_GEMM=sm90a (wgmma, TMA, mbarrier emulated); on a GPU, the
 * sm_90a kernels when GP_ENABLE_SM90A=1 on compute capability 9.0, else the sm_80 ones. */
START_TEST(test_sm90_shapes) {
  set_mode(MODE_SM90A);
  unsigned id = 900;
  for (size_t t = 1; t < N_TYPES; t++)
    for (int v = 0; v < 4; v++) {
      gemm_case_t cs = base_case();
      cs.api = API_EX;
      cs.ab = k_types[t].ab; cs.c = k_types[t].c;
      cs.layout = v & 1 ? GP_ROW_MAJOR : GP_COL_MAJOR;
      cs.ta = (v + (int)t / 2) & 1 ? GP_OP_T : GP_OP_N;
      cs.tb = v & 2 ? GP_OP_T : GP_OP_N;
      cs.m = 200; cs.n = 136; cs.k = 300;
      cs.align8 = true;
      cs.beta = v == 1 ? 0.5f : 0.0f;
      cs.epi = v == 2 ? GP_EPILOGUE_BIAS_GELU : GP_EPILOGUE_NONE;
      cs.batch = v == 3 ? 2 : 1;
      cs.gap_a = 3; cs.gap_b = 5; cs.gap_c = 1;
      cs.id = id++;
      run_case(&cs);
    }
  /* A and B one element past a 16-byte boundary: no TMA map, so the sm_90a kernels
   * decline and the sm_80 kernels take them with plain loads (never a misaligned access) */
  for (int v = 0; v < 2; v++) {
    gemm_case_t cs = base_case();
    cs.api = API_EX;
    cs.ab = v ? GP_BF16 : GP_F16; cs.c = GP_F32;
    cs.layout = v ? GP_ROW_MAJOR : GP_COL_MAJOR;
    cs.m = 70; cs.n = 40; cs.k = 72;
    cs.align8 = true; cs.shift_ab = true;
    cs.id = id++;
    run_case(&cs);
  }
  /* one tile, k below one k-step; and a broadcast B over a batch of 3 */
  for (int v = 0; v < 2; v++) {
    gemm_case_t cs = base_case();
    cs.api = v ? API_EX : API_GEMM;
    cs.ab = v ? GP_BF16 : GP_F16; cs.c = v ? GP_BF16 : GP_F32;
    cs.m = v ? 70 : 9; cs.n = v ? 24 : 130; cs.k = v ? 80 : 40;
    cs.align8 = true;
    cs.batch = v ? 3 : 1;
    cs.bcast_b = v != 0;
    cs.beta = 0.0f;
    cs.id = id++;
    run_case(&cs);
  }
}
END_TEST

/* The same inputs through the sm_90a kernels and the sm_80 kernels: each within the float64
 * reference's bound (element by element), and the two within the sum of their bounds of
 * each other. On the cpu backend both run emulated; on a GPU of compute capability 9.0,
 * for real (the gate toggled with GP_ENABLE_SM90A; elsewhere both runs take sm_80). */
START_TEST(test_sm90_vs_sm80) {
  enum { M = 130, N = 136, K = 200 };
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ 0x5390a);
  static uint16_t ha[M * K], hb[K * N];
  static float got[2][M * N];
  static double ref[M * N], bound[M * N];
  gp_ref_fill(ha, GP_BF16, M * K, &rng, -1.0, 1.0);
  gp_ref_fill(hb, GP_BF16, K * N, &rng, -1.0, 1.0);
  void *da = dev_alloc_copy(ha, sizeof ha), *db = dev_alloc_copy(hb, sizeof hb), *dc = NULL;
  ck_assert_int_eq(gp_malloc(&dc, sizeof got[0]), GP_SUCCESS);
  for (int path = 0; path < 2; path++) {
    set_mode(path ? MODE_SM80 : MODE_SM90A);
    setenv("GP_ENABLE_SM90A", path ? "0" : "1", 1);
    ck_assert_int_eq(gp_memset(dc, 0xff, sizeof got[0]), GP_SUCCESS); /* NaN: every element must be written */
    ck_assert_int_eq(gp_gemm(NULL, GP_ROW_MAJOR, GP_OP_N, GP_OP_N, M, N, K, 1.0f, da, GP_BF16, K, db, GP_BF16, N,
                             0.0f, dc, GP_F32, N),
                     GP_SUCCESS);
    ck_assert_int_eq(gp_memcpy(got[path], dc, sizeof got[0]), GP_SUCCESS);
  }
  unsetenv("GP_ENABLE_SM90A");
  set_mode(MODE_DEFAULT);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double s = 0, sa = 0;
      for (int64_t p = 0; p < K; p++) {
        const double x = gp_ref_load(ha, GP_BF16, (size_t)(i * K + p)) * gp_ref_load(hb, GP_BF16, (size_t)(p * N + j));
        s += x;
        sa += fabs(x);
      }
      ref[i * N + j] = s;
      bound[i * N + j] = gp_ref_gamma((double)K + 1, gp_ref_unit_roundoff(GP_F32)) * sa + 1e-30;
    }
  for (int64_t e = 0; e < M * N; e++) {
    for (int path = 0; path < 2; path++)
      ck_assert_msg(fabs(got[path][e] - ref[e]) <= bound[e], "%s: element %lld = %.9g, reference %.9g, bound %.3g (seed 0x%llx)",
                    path ? "sm_80" : "sm_90a", (long long)e, (double)got[path][e], ref[e], bound[e], (unsigned long long)g_seed);
    ck_assert(fabs(got[0][e] - got[1][e]) <= 2 * bound[e]);
  }
  gp_free(da), gp_free(db), gp_free(dc);
}
END_TEST

#ifdef GP_BUILD_CPU
/* Whether the family of GEMM table entry name may run in CPU mode mode. */
static bool enabled_in(int mode, const char *name, gp__family_t f) {
  gp__cpu_mode_set(GP__OP_GEMM, mode);
  gp__dispatch_t d;
  char declined[64], why[128] = "";
  ck_assert_int_eq(gp__dispatch_begin(&d, GP__OP_GEMM, "test", declined, sizeof declined), GP_SUCCESS);
  const bool ok = gp__dispatch_eligible(&d, name, f, why, sizeof why);
  ck_assert_msg(ok || strstr(why, "GP_CPU_GEMM=") != NULL, "%s", why);
  return ok;
}

/* The sm_90a entry (kernels/sm90a/gemm_sm90a_host.c): mode, alignment, types; the sm_80
 * entry takes the rest in sm90a mode. */
START_TEST(test_sm90_choice) {
  static _Alignas(16) uint16_t buf[64];
  gp__gemm_params_t p;
  memset(&p, 0, sizeof p);
  p.m = 300; p.n = 260; p.k = 70; p.batch = 1;
  p.a = buf; p.b = buf; p.c = buf; p.lda = 104; p.ldb = 72; p.ldc = 300;
  p.ab_type = GP_BF16; p.c_type = GP_F32; p.trans_a = 1;
  gp__gemm_plan_t plan, plan80;
  char why[192];
  const gp__gemm_impl_t *sm90 = &gp__gemm_impl_sm90a, *sm80 = &gp__gemm_impl_sm80;
  ck_assert(!enabled_in(GP__CPU_SM80, "sm90a", GP__FAMILY_SM90A));
  ck_assert(enabled_in(GP__CPU_SM90A, "sm90a", GP__FAMILY_SM90A));
  ck_assert(enabled_in(GP__CPU_SM90A, "sm80", GP__FAMILY_SM80));
  ck_assert(sm90->supports(&p, &plan, why, sizeof why));
  ck_assert_str_eq(plan.kernel->name, "gp__gemm_sm90a_bf16_tn");
  ck_assert_str_eq(plan.kernel_name, "gp__gemm_sm90a_bf16_tn");
  ck_assert_uint_eq(plan.grid.x, 3); /* 9 tiles over a persistent grid of 3 on the cpu */
  ck_assert_uint_eq(plan.block.x, 384);
  ck_assert(strstr(plan.name, "gp__gemm_sm90a_bf16_tn (wgmma m64n128k16 + TMA") == plan.name);
  p.lda = 101; /* rows not 16-byte aligned: not for TMA; the sm_80 kernels take it */
  ck_assert(!sm90->supports(&p, &plan, why, sizeof why));
  ck_assert_msg(strstr(why, "16-byte") != NULL, "%s", why);
  ck_assert(sm80->supports(&p, &plan80, why, sizeof why));
  p.lda = 104; p.b = buf + 1;
  ck_assert(!sm90->supports(&p, &plan, why, sizeof why));
  p.b = buf; p.batch = 3; p.stride_a = 4;
  ck_assert(!sm90->supports(&p, &plan, why, sizeof why));
  p.stride_a = 0; p.stride_b = 8 * 70 * 260; /* broadcast A, batched B */
  ck_assert(sm90->supports(&p, &plan, why, sizeof why));
  p.batch = 1; p.ab_type = GP_F16; p.trans_a = 0; p.trans_b = 1;
  ck_assert(sm90->supports(&p, &plan, why, sizeof why));
  ck_assert_str_eq(plan.kernel->name, "gp__gemm_sm90a_f16_nt");
  p.k = 0;
  ck_assert(!sm90->supports(&p, &plan, why, sizeof why));
  p.k = 70; p.ab_type = GP_F32;
  ck_assert(!sm90->supports(&p, &plan, why, sizeof why));
  ck_assert_msg(strstr(why, "f32") != NULL, "%s", why);
  ck_assert(sm80->supports(&p, &plan80, why, sizeof why));
  ck_assert_str_eq(plan80.kernel->name, "gp__gemm_sm80_f32");
  gp__cpu_mode_set(GP__OP_GEMM, -1);
}
END_TEST

/* The sm_80 entry (kernels/sm80/gemm_sm80_host.c); the mode decides where it may run. */
START_TEST(test_sm80_choice) {
  static _Alignas(16) uint16_t buf[64];
  gp__gemm_params_t p;
  memset(&p, 0, sizeof p);
  p.m = 100; p.n = 50; p.k = 70; p.batch = 1;
  p.a = buf; p.b = buf; p.c = buf; p.lda = 104; p.ldb = 72; p.ldc = 100;
  p.ab_type = GP_BF16; p.c_type = GP_F32; p.trans_a = 1;
  gp__gemm_plan_t plan;
  char why[192];
  const gp__gemm_impl_t *sm80 = &gp__gemm_impl_sm80;
  ck_assert(!enabled_in(GP__CPU_HOST, "sm80", GP__FAMILY_SM80));
  ck_assert(!enabled_in(GP__CPU_MFMA, "sm80", GP__FAMILY_SM80));
  ck_assert(enabled_in(GP__CPU_SM80, "sm80", GP__FAMILY_SM80));
  ck_assert(sm80->supports(&p, &plan, why, sizeof why));
  ck_assert_str_eq(plan.kernel->name, "gp__gemm_sm80_bf16_tn");
  ck_assert_int_eq(plan.variant, 1);
  ck_assert_uint_eq(plan.grid.x, 1);
  ck_assert(strstr(plan.name, "gp__gemm_sm80_bf16_tn (mma.sync m16n8k16") == plan.name);
  p.lda = 101; /* rows no longer 16-byte aligned */
  ck_assert(sm80->supports(&p, &plan, why, sizeof why) && plan.variant == 0);
  p.lda = 104; p.b = buf + 1;
  ck_assert(sm80->supports(&p, &plan, why, sizeof why) && plan.variant == 0);
  p.b = buf; p.batch = 3; p.stride_a = 4; /* a batch stride that is not */
  ck_assert(sm80->supports(&p, &plan, why, sizeof why) && plan.variant == 0 && plan.grid.z == 3);
  p.batch = 1; p.ab_type = GP_F16; p.trans_a = 0; p.trans_b = 1; p.m = 300; p.n = 260;
  ck_assert(sm80->supports(&p, &plan, why, sizeof why));
  ck_assert_str_eq(plan.kernel->name, "gp__gemm_sm80_f16_nt");
  ck_assert_uint_eq(plan.grid.x, 9); /* 3 x 3 tiles of 128 */
  ck_assert_uint_eq(plan.smem, 2u * 4u * (32u * 136u + 32u * 136u));
  p.ab_type = GP_F32;
  ck_assert(sm80->supports(&p, &plan, why, sizeof why));
  ck_assert_str_eq(plan.kernel->name, "gp__gemm_sm80_f32");
  ck_assert_int_eq(plan.variant, -1);
  p.allow_tf32 = 1; /* GP_COMPUTE_TF32: the tf32 mma kernel, 16-byte copies when aligned */
  ck_assert(sm80->supports(&p, &plan, why, sizeof why));
  ck_assert_str_eq(plan.kernel->name, "gp__gemm_sm80_tf32");
  ck_assert_int_eq(plan.variant, 1);
  ck_assert(strstr(plan.name, "(mma.sync m16n8k8 tf32, 128x128x16 tiles, 4-stage") != NULL);
  ck_assert_uint_eq(plan.smem, 4u * 4u * (16u * 136u + 16u * 136u)); /* A [k][m], B [k][n] */
  p.lda = 102; /* 8-byte multiple, not 16: 4-byte copies */
  ck_assert(sm80->supports(&p, &plan, why, sizeof why) && plan.variant == 0);
  gp__cpu_mode_set(GP__OP_GEMM, -1);
}
END_TEST

/* GP_DEBUG=INFO names the kernel chosen. Check forks each test on the cpu backend, so
 * the child reads GP_DEBUG afresh; without fork the logger is already set up. */
START_TEST(test_sm80_log_line) {
  const char *fork_env = getenv("CK_FORK");
  if (fork_env && strcmp(fork_env, "no") == 0) return;
  char path[64];
  snprintf(path, sizeof path, "/tmp/gp_test_gemm_%d.log", (int)getpid());
  setenv("GP_DEBUG", "INFO", 1);
  setenv("GP_DEBUG_SUBSYS", "GEMM", 1);
  setenv("GP_DEBUG_FILE", path, 1);
  set_mode(MODE_SM80);
  gemm_case_t cs = base_case();
  cs.ab = GP_BF16; cs.c = GP_BF16; cs.ta = GP_OP_T; cs.m = 20; cs.n = 9; cs.k = 17;
  run_case(&cs);
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "no log file %s", path);
  char line[4096];
  bool found = false;
  while (fgets(line, sizeof line, f))
    /* row-major C = A^T B is column-major C^T = B^T A: the kernel's first operand is B,
     * not transposed, its second A, transposed: _nt */
    if (strstr(line, "INFO GEMM gp_gemm: row-major TN") && strstr(line, "kernel=gp__gemm_sm80_bf16_nt (mma.sync"))
      found = true;
  fclose(f);
  unlink(path);
  ck_assert_msg(found, "no INFO line naming gp__gemm_sm80_bf16_nt");
}
END_TEST
#endif

/* ---- the AMD MFMA kernels --------------------------------------------------------------- */

/* Shapes that reach the MFMA kernels' other paths, each transpose pair with two type
 * combinations (every one of the five appears): several 128 x 128 tiles with m and n
 * edges inside one, k tails inside a 64-byte stage, leading dimensions that do and do
 * not allow 16-byte loads, batches with gaps, beta 0 and not, an epilogue. On the cpu
 * backend they run with GP_CPU_GEMM=mfma (the MFMA kernels (kernels/mfma/) under emulation); on a GPU,
 * on its kernels. */
START_TEST(test_mfma_shapes) {
  set_mode(MODE_MFMA);
  unsigned id = 800;
  static const size_t picks[4][2] = {{0, 2}, {1, 4}, {2, 3}, {3, 0}}; /* k_types indices */
  for (int v = 0; v < 4; v++)
    for (int pi = 0; pi < 2; pi++) {
      const size_t t = picks[v][pi];
      gemm_case_t cs = base_case();
      cs.api = v == 2 ? API_EX : API_BATCHED;
      cs.m = 200; cs.n = 150; cs.k = 70 + 8 * v;
      cs.ab = k_types[t].ab; cs.c = k_types[t].c;
      cs.layout = (t + (size_t)v) & 1 ? GP_COL_MAJOR : GP_ROW_MAJOR;
      cs.ta = v & 1 ? GP_OP_T : GP_OP_N;
      cs.tb = v & 2 ? GP_OP_T : GP_OP_N;
      cs.pad_a = v == 1 ? 3 : 8; cs.pad_b = v == 2 ? 1 : 0; cs.pad_c = 1;
      cs.batch = v == 3 ? 2 : 1;
      cs.gap_a = 8; cs.gap_b = 16; cs.gap_c = 4;
      cs.beta = v & 1 ? 0.0f : 0.5f;
      cs.epi = v == 2 ? GP_EPILOGUE_BIAS_RELU : GP_EPILOGUE_NONE;
      cs.shift_ab = v == 1 && pi == 1; /* element loads: A and B off every 16-byte boundary */
      cs.id = id++;
      run_case(&cs);
    }
}
END_TEST

#ifdef GP_BUILD_CPU
/* The MFMA entry (kernels/mfma/gemm_mfma_host.c); the mode decides where it may run. */
START_TEST(test_mfma_choice) {
  static _Alignas(16) uint16_t buf[64];
  gp__gemm_params_t p;
  memset(&p, 0, sizeof p);
  p.m = 300; p.n = 130; p.k = 70; p.batch = 3;
  p.a = buf; p.b = buf; p.c = buf; p.lda = 300; p.ldb = 72; p.ldc = 300;
  p.ab_type = GP_BF16; p.c_type = GP_F32;
  gp__gemm_plan_t plan;
  char why[192];
  const gp__gemm_impl_t *mfma = &gp__gemm_impl_mfma;
  ck_assert(!enabled_in(GP__CPU_SM80, "mfma", GP__FAMILY_MFMA));
  ck_assert(enabled_in(GP__CPU_MFMA, "mfma", GP__FAMILY_MFMA));
  ck_assert(enabled_in(GP__CPU_MFMA, "portable", GP__FAMILY_PORTABLE));
  ck_assert(!enabled_in(GP__CPU_MFMA, "host", GP__FAMILY_HOST));
  ck_assert(mfma->supports(&p, &plan, why, sizeof why));
  ck_assert_str_eq(plan.kernel->name, "gp__gemm_mfma_bf16");
  ck_assert_uint_eq(plan.grid.x, 3); /* 300 rows: 3 tiles of 128 */
  ck_assert_uint_eq(plan.grid.y, 2);
  ck_assert_uint_eq(plan.grid.z, 3);
  ck_assert_uint_eq(plan.block.x, 256);
  ck_assert(strstr(plan.name, "gp__gemm_mfma_bf16 (v_mfma_f32_32x32x8bf16_1k") == plan.name);
  p.ab_type = GP_F16; p.trans_a = 1; p.lda = 71; /* any layout and alignment: same kernel */
  ck_assert(mfma->supports(&p, &plan, why, sizeof why));
  ck_assert_str_eq(plan.kernel->name, "gp__gemm_mfma_f16");
  p.ab_type = GP_F32; p.batch = 70000; /* the kernel loops over the batch beyond 65535 */
  ck_assert(mfma->supports(&p, &plan, why, sizeof why));
  ck_assert_str_eq(plan.kernel->name, "gp__gemm_mfma_f32");
  ck_assert_uint_eq(plan.grid.z, 65535);
  gp__cpu_mode_set(GP__OP_GEMM, -1);
}
END_TEST

/* GP_DEBUG=INFO names the MFMA kernel chosen (a forked child reads GP_DEBUG afresh). */
START_TEST(test_mfma_log_line) {
  const char *fork_env = getenv("CK_FORK");
  if (fork_env && strcmp(fork_env, "no") == 0) return;
  char path[64];
  snprintf(path, sizeof path, "/tmp/gp_test_gemm_mfma_%d.log", (int)getpid());
  setenv("GP_DEBUG", "INFO", 1);
  setenv("GP_DEBUG_SUBSYS", "GEMM", 1);
  setenv("GP_DEBUG_FILE", path, 1);
  set_mode(MODE_MFMA);
  gemm_case_t cs = base_case();
  cs.ab = GP_F16; cs.c = GP_F32; cs.m = 20; cs.n = 9; cs.k = 17;
  run_case(&cs);
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "no log file %s", path);
  char line[4096];
  bool found = false;
  while (fgets(line, sizeof line, f))
    if (strstr(line, "INFO GEMM gp_gemm: row-major NN") &&
        strstr(line, "kernel=gp__gemm_mfma_f16 (v_mfma_f32_32x32x8f16"))
      found = true;
  fclose(f);
  unlink(path);
  ck_assert_msg(found, "no INFO line naming gp__gemm_mfma_f16");
}
END_TEST
#endif

/* ---- every kernel of every family ------------------------------------------------------- */

/* One small case per kernel each family of the cpu backend's GEMM table has, the mode
 * choosing the family: the sm_90a and sm_80 mma kernels for each input type and
 * canonical transpose pair (column-major calls: the canonical problem is the call), the
 * sm_80 f32 and tf32 kernels, the MFMA kernel of each input type, the portable kernel, and
 * the host's direct, packed and scale-only paths. run_case checks each against the
 * reference and the kernel the walk chose against the one the rules name. `make
 * check-dispatch` runs this test case with each table entry switched off in turn. */
START_TEST(test_every_kernel) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  unsigned id = 1000;
  const gp_dtype_t half[2] = {GP_F16, GP_BF16};
  const int mma_modes[2] = {MODE_SM90A, MODE_SM80};
  for (int mi = 0; mi < 2; mi++)
    for (int h = 0; h < 2; h++)
      for (int v = 0; v < 4; v++) {
        set_mode(mma_modes[mi]);
        gemm_case_t cs = base_case();
        cs.api = API_EX;
        cs.layout = GP_COL_MAJOR;
        cs.ab = half[h]; cs.c = v & 1 ? GP_F32 : half[h];
        cs.ta = v & 1 ? GP_OP_T : GP_OP_N; cs.tb = v & 2 ? GP_OP_T : GP_OP_N;
        cs.m = 20; cs.n = 24; cs.k = 40;
        cs.align8 = true;
        cs.id = id++;
        run_case(&cs);
      }
  for (int tf32 = 0; tf32 < 2; tf32++) { /* sm_80: f32 on FFMA, and on tf32 mma.sync */
    set_mode(MODE_SM80);
    gemm_case_t cs = base_case();
    cs.api = API_EX; cs.tf32 = tf32 != 0; cs.align8 = true; cs.id = id++;
    run_case(&cs);
  }
  for (size_t t = 0; t < 3; t++) { /* MFMA: each input type */
    set_mode(MODE_MFMA);
    gemm_case_t cs = base_case();
    cs.ab = cs.c = t == 0 ? GP_F32 : half[t - 1];
    cs.id = id++;
    run_case(&cs);
  }
  const int host_modes[5] = {MODE_PORTABLE, MODE_DEFAULT, MODE_DEFAULT, MODE_PACKED, MODE_DEFAULT};
  for (int v = 0; v < 5; v++) { /* portable; host direct (f32), scale-only (k = 0), packed, bf16 */
    set_mode(host_modes[v]);
    gemm_case_t cs = base_case();
    cs.ab = cs.c = v == 0 || v == 4 ? GP_BF16 : GP_F32;
    if (v == 2) { cs.k = 0; cs.null_ab = true; }
    cs.id = id++;
    run_case(&cs);
  }
  gp__cpu_convert_set(-1);
#ifdef GP_BUILD_CPU
  g_scalar = false;
#endif
  set_mode(MODE_DEFAULT);
}
END_TEST

/* A declining family leaves the last failure's message alone, and so do successful calls
 * (the API's promise): a failed call, then successful sm90a-mode calls that the sm_90a
 * kernels take and decline (their TMA maps encoded or refused on the way). */
START_TEST(test_message_survives) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  void *a = NULL, *c = NULL;
  ck_assert_int_eq(gp_malloc(&a, 64 * 64 * 2), GP_SUCCESS);
  ck_assert_int_eq(gp_malloc(&c, 64 * 64 * 4), GP_SUCCESS);
  ck_assert_int_eq(gp_memset(a, 0, 64 * 64 * 2), GP_SUCCESS);
  ck_assert_int_eq(gp_gemm(NULL, GP_ROW_MAJOR, GP_OP_N, GP_OP_N, -1, 4, 4, 1, a, GP_F16, 4, a, GP_F16, 4, 0, c,
                           GP_F32, 4),
                   GP_ERROR_INVALID_VALUE);
  char msg[256];
  snprintf(msg, sizeof msg, "%s", gp_last_error_message());
  ck_assert(strstr(msg, "'m'") != NULL);
  set_mode(MODE_SM90A);
  for (int v = 0; v < 3; v++) { /* taken by sm_90a; lda not a multiple of 8; f32 */
    gp__last_kernel_reset();
    const int64_t ld = v == 1 ? 60 : 64;
    const gp_dtype_t t = v == 2 ? GP_F32 : GP_F16;
    ck_assert_int_eq(gp_gemm(NULL, GP_COL_MAJOR, GP_OP_N, GP_OP_N, 32, 32, 32, 1, a, t, ld, a, t, ld, 0, c, GP_F32, 32),
                     GP_SUCCESS);
    ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
    ck_assert_pstr_eq(gp__last_kernel(GP__OP_GEMM), v == 0 ? "gp__gemm_sm90a_f16_nn"
                                                   : v == 1 ? "gp__gemm_sm80_f16_nn"
                                                            : "gp__gemm_sm80_f32");
    ck_assert_str_eq(gp_last_error_message(), msg);
  }
  set_mode(MODE_DEFAULT);
  gp_free(a);
  gp_free(c);
}
END_TEST

/* The CPU modes are read once, in one vocabulary for both variables: GP_CPU_GEMM's
 * "openblas" is host's alias, GP_CPU_ATTENTION has no "packed" (a warning naming the
 * valid values, then host), the test override returns to the environment with -1. A
 * forked child reads the environment afresh (without fork it was read already). */
START_TEST(test_cpu_modes) {
  const char *fork_env = getenv("CK_FORK");
  if (gp_backend() != GP_BACKEND_CPU || (fork_env && strcmp(fork_env, "no") == 0)) return;
  char path[64];
  snprintf(path, sizeof path, "/tmp/gp_test_modes_%d.log", (int)getpid());
  setenv("GP_DEBUG_FILE", path, 1);
  setenv("GP_CPU_GEMM", "openblas", 1);
  setenv("GP_CPU_ATTENTION", "packed", 1);
  gp__cpu_mode_set(GP__OP_GEMM, -1);
  gp__cpu_mode_set(GP__OP_ATTN_FWD, -1);
  ck_assert_int_eq(gp__cpu_mode(GP__OP_GEMM), GP__CPU_HOST);
  ck_assert_int_eq(gp__cpu_mode(GP__OP_ATTN_FWD), GP__CPU_HOST);
  ck_assert_int_eq(gp__cpu_mode(GP__OP_ATTN_BWD), GP__CPU_HOST);
  setenv("GP_CPU_GEMM", "mfma", 1); /* read once: no effect now */
  ck_assert_int_eq(gp__cpu_mode(GP__OP_GEMM), GP__CPU_HOST);
  gp__cpu_mode_set(GP__OP_GEMM, GP__CPU_PACKED);
  ck_assert_int_eq(gp__cpu_mode(GP__OP_GEMM), GP__CPU_PACKED);
  gp__cpu_mode_set(GP__OP_ATTN_BWD, GP__CPU_PACKED); /* attention has no packed mode */
  ck_assert_int_eq(gp__cpu_mode(GP__OP_ATTN_FWD), GP__CPU_HOST);
  gp__cpu_mode_set(GP__OP_ATTN_BWD, GP__CPU_SM90A); /* forward and backward share it */
  ck_assert_int_eq(gp__cpu_mode(GP__OP_ATTN_FWD), GP__CPU_SM90A);
  gp__cpu_mode_set(GP__OP_ATTN_FWD, -1);
  gp__cpu_mode_set(GP__OP_GEMM, -1);
  ck_assert_int_eq(gp__cpu_mode(GP__OP_ATTN_BWD), GP__CPU_HOST);
  ck_assert_str_eq(gp__cpu_mode_name(GP__CPU_SM80), "sm80");
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "no log file %s", path);
  char line[1024];
  int warned = 0, gemm_warned = 0;
  while (fgets(line, sizeof line, f)) {
    if (strstr(line, "GP_CPU_ATTENTION=packed is not one of host, portable, sm80, sm90a, mfma: using host"))
      warned++;
    if (strstr(line, "GP_CPU_GEMM=")) gemm_warned++;
  }
  fclose(f);
  unlink(path);
  ck_assert_int_eq(warned, 1);
  ck_assert_int_eq(gemm_warned, 0);
  unsetenv("GP_CPU_GEMM");
  unsetenv("GP_CPU_ATTENTION");
}
END_TEST

/* ---- cpu-only paths ------------------------------------------------------------------- */

/* Larger shapes: the direct cblas_sgemm (f32) and, for the packed path, several
 * 256-wide tiles in m and k (k panels accumulated in f32). */
START_TEST(test_larger) {
  unsigned id = 600;
  for (int v = 0; v < 3; v++) {
    gemm_case_t cs = base_case();
    cs.m = 300; cs.n = 20; cs.k = 600;
    cs.ab = k_types[v * 2 % N_TYPES].ab; cs.c = k_types[v * 2 % N_TYPES].c;
    cs.layout = v & 1 ? GP_COL_MAJOR : GP_ROW_MAJOR;
    cs.ta = v == 2 ? GP_OP_T : GP_OP_N;
    cs.tb = v == 1 ? GP_OP_T : GP_OP_N;
    cs.pad_a = 4;
    cs.beta = v == 1 ? 0.0f : 0.5f;
    cs.id = id++;
    set_mode(v == 0 ? MODE_DEFAULT : MODE_PACKED);
    run_case(&cs);
  }
#ifdef GP_BUILD_CPU
  /* Extents beyond the BLAS integer limit are split, not truncated: lower the limit so
   * small sizes take that path. */
  set_mode(MODE_DEFAULT);
  gp__gemm_cpu_set_blas_limit(40);
  g_blas_limit = 40;
  gemm_case_t cs = base_case();
  cs.m = 70; cs.n = 50; cs.k = 300; cs.pad_a = 2; cs.id = id++;
  run_case(&cs);
  gp__gemm_cpu_set_blas_limit(0);
  g_blas_limit = INT32_MAX;
#endif
}
END_TEST

/* ---- errors ----------------------------------------------------------------------------- */

#define EXPECT_FAIL(call, status, text)                                                     \
  do {                                                                                      \
    gp_status_t s_ = (call);                                                                \
    ck_assert_msg(s_ == (status), "%s returned %s, expected %s (%s)", #call,                \
                  gp_status_name(s_), gp_status_name(status), gp_last_error_message());     \
    ck_assert_msg(strstr(gp_last_error_message(), (text)) != NULL,                          \
                  "message of %s lacks \"%s\": %s", #call, (text), gp_last_error_message()); \
  } while (0)

START_TEST(test_errors) {
  float *a = NULL, *b = NULL, *c = NULL;
  ck_assert_int_eq(gp_malloc((void **)&a, 64 * 64 * 4), GP_SUCCESS);
  ck_assert_int_eq(gp_malloc((void **)&b, 64 * 64 * 4), GP_SUCCESS);
  ck_assert_int_eq(gp_malloc((void **)&c, 64 * 64 * 4), GP_SUCCESS);
  const gp_layout_t R = GP_ROW_MAJOR, C = GP_COL_MAJOR;
  const gp_op_t N = GP_OP_N, T = GP_OP_T;

  /* Sizes. */
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, -1, 4, 4, 1, a, GP_F32, 4, b, GP_F32, 4, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'m'");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, -2, 4, 1, a, GP_F32, 4, b, GP_F32, 4, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'n'");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 4, -3, 1, a, GP_F32, 4, b, GP_F32, 4, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'k'");
  /* Leading dimensions, every CBLAS minimum. */
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 5, 6, 1, a, GP_F32, 5, b, GP_F32, 5, 0, c, GP_F32, 5),
              GP_ERROR_INVALID_VALUE, "'lda' (5) is below its minimum 6");
  EXPECT_FAIL(gp_gemm(NULL, R, T, N, 4, 5, 6, 1, a, GP_F32, 3, b, GP_F32, 5, 0, c, GP_F32, 5),
              GP_ERROR_INVALID_VALUE, "'lda' (3) is below its minimum 4");
  EXPECT_FAIL(gp_gemm(NULL, C, N, N, 4, 5, 6, 1, a, GP_F32, 3, b, GP_F32, 6, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'lda' (3) is below its minimum 4");
  EXPECT_FAIL(gp_gemm(NULL, C, T, N, 4, 5, 6, 1, a, GP_F32, 5, b, GP_F32, 6, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'lda' (5) is below its minimum 6");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 5, 6, 1, a, GP_F32, 6, b, GP_F32, 4, 0, c, GP_F32, 5),
              GP_ERROR_INVALID_VALUE, "'ldb' (4) is below its minimum 5");
  EXPECT_FAIL(gp_gemm(NULL, R, N, T, 4, 5, 6, 1, a, GP_F32, 6, b, GP_F32, 5, 0, c, GP_F32, 5),
              GP_ERROR_INVALID_VALUE, "'ldb' (5) is below its minimum 6");
  EXPECT_FAIL(gp_gemm(NULL, C, N, N, 4, 5, 6, 1, a, GP_F32, 4, b, GP_F32, 5, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'ldb' (5) is below its minimum 6");
  EXPECT_FAIL(gp_gemm(NULL, C, N, T, 4, 5, 6, 1, a, GP_F32, 4, b, GP_F32, 4, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'ldb' (4) is below its minimum 5");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 5, 6, 1, a, GP_F32, 6, b, GP_F32, 5, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'ldc' (4) is below its minimum 5");
  EXPECT_FAIL(gp_gemm(NULL, C, N, N, 4, 5, 6, 1, a, GP_F32, 4, b, GP_F32, 6, 0, c, GP_F32, 3),
              GP_ERROR_INVALID_VALUE, "'ldc' (3) is below its minimum 4");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 0, 0, 0, 1, a, GP_F32, 0, b, GP_F32, 1, 0, c, GP_F32, 1),
              GP_ERROR_INVALID_VALUE, "'lda' (0) is below its minimum 1");
  /* Layout and ops. */
  EXPECT_FAIL(gp_gemm(NULL, (gp_layout_t)7, N, N, 4, 4, 4, 1, a, GP_F32, 4, b, GP_F32, 4, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'layout'");
  EXPECT_FAIL(gp_gemm(NULL, R, (gp_op_t)0, N, 4, 4, 4, 1, a, GP_F32, 4, b, GP_F32, 4, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'transa'");
  EXPECT_FAIL(gp_gemm(NULL, R, N, (gp_op_t)113, 4, 4, 4, 1, a, GP_F32, 4, b, GP_F32, 4, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'transb'");
  /* NULL operands with a non-empty product. */
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 4, 4, 1, NULL, GP_F32, 4, b, GP_F32, 4, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'a' is NULL");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 4, 4, 1, a, GP_F32, 4, NULL, GP_F32, 4, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'b' is NULL");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 4, 0, 1, NULL, GP_F32, 1, NULL, GP_F32, 4, 0, NULL, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'c' is NULL");
  /* Empty outputs: C may be anything; A and B may be NULL when k == 0. */
  ck_assert_int_eq(gp_gemm(NULL, R, N, N, 0, 4, 4, 1, NULL, GP_F32, 4, NULL, GP_F32, 4, 0, NULL, GP_F32, 4),
                   GP_SUCCESS);
  ck_assert_int_eq(gp_gemm(NULL, C, N, N, 4, 0, 4, 1, NULL, GP_F32, 4, NULL, GP_F32, 4, 0, NULL, GP_F32, 4),
                   GP_SUCCESS);
  /* Types. */
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 4, 4, 1, a, GP_F64, 4, b, GP_F64, 4, 0, c, GP_F64, 4),
              GP_ERROR_NOT_SUPPORTED, "a_type f64");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 4, 4, 1, a, GP_I8, 4, b, GP_I8, 4, 0, c, GP_I32, 4),
              GP_ERROR_NOT_SUPPORTED, "a_type i8");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 4, 4, 1, a, GP_F16, 4, b, GP_BF16, 4, 0, c, GP_F32, 4),
              GP_ERROR_NOT_SUPPORTED, "b_type bf16 differs from a_type f16");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 4, 4, 1, a, GP_F16, 4, b, GP_F16, 4, 0, c, GP_BF16, 4),
              GP_ERROR_NOT_SUPPORTED, "c_type bf16");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 4, 4, 1, a, GP_F32, 4, b, GP_F32, 4, 0, c, GP_F16, 4),
              GP_ERROR_NOT_SUPPORTED, "c_type f16");
  /* Batches. */
  EXPECT_FAIL(gp_gemm_strided_batched(NULL, R, N, N, 4, 4, 4, 1, a, GP_F32, 4, b, GP_F32, 4, 0, c,
                                      GP_F32, 4, -1, 16, 16, 16),
              GP_ERROR_INVALID_VALUE, "'batch'");
  EXPECT_FAIL(gp_gemm_strided_batched(NULL, R, N, N, 4, 4, 4, 1, a, GP_F32, 4, b, GP_F32, 4, 0, c,
                                      GP_F32, 4, 2, -16, 16, 16),
              GP_ERROR_INVALID_VALUE, "'stride_a'");
  EXPECT_FAIL(gp_gemm_strided_batched(NULL, R, N, N, 4, 4, 4, 1, a, GP_F32, 4, b, GP_F32, 4, 0, c,
                                      GP_F32, 4, 2, 16, 16, 0),
              GP_ERROR_INVALID_VALUE, "'stride_c' is 0");
  ck_assert_int_eq(gp_gemm_strided_batched(NULL, R, N, N, 4, 4, 4, 1, a, GP_F32, 4, b, GP_F32, 4, 0,
                                           c, GP_F32, 4, 0, 16, 16, 0),
                   GP_SUCCESS);
  /* gp_gemm_ex: descriptor, compute mode, epilogue. */
  EXPECT_FAIL(gp_gemm_ex(NULL, NULL), GP_ERROR_INVALID_VALUE, "'desc' is NULL");
  gp_gemm_desc_t d;
  gp_gemm_desc_init(&d);
  d.m = d.n = d.k = 4; d.lda = d.ldb = d.ldc = 4; d.a = a; d.b = b; d.c = c;
  ck_assert_int_eq(gp_gemm_ex(NULL, &d), GP_SUCCESS);
  gp_gemm_desc_t e = d;
  e.struct_size = 16;
  EXPECT_FAIL(gp_gemm_ex(NULL, &e), GP_ERROR_INVALID_VALUE, "struct_size");
  e = d; e.compute = GP_COMPUTE_TF32;
  ck_assert_int_eq(gp_gemm_ex(NULL, &e), GP_SUCCESS);
  e.a_type = e.b_type = GP_F16;
  EXPECT_FAIL(gp_gemm_ex(NULL, &e), GP_ERROR_NOT_SUPPORTED, "TF32");
  e = d; e.compute = (gp_compute_t)9;
  EXPECT_FAIL(gp_gemm_ex(NULL, &e), GP_ERROR_INVALID_VALUE, "'compute'");
  e = d; e.epilogue = GP_EPILOGUE_BIAS_RELU;
  EXPECT_FAIL(gp_gemm_ex(NULL, &e), GP_ERROR_INVALID_VALUE, "'bias' is NULL");
  e.bias = a; e.bias_type = GP_F16;
  EXPECT_FAIL(gp_gemm_ex(NULL, &e), GP_ERROR_INVALID_VALUE, "bias_type f16");
  e.bias_type = GP_F32;
  ck_assert_int_eq(gp_gemm_ex(NULL, &e), GP_SUCCESS);
  e.epilogue = (gp_epilogue_t)42;
  EXPECT_FAIL(gp_gemm_ex(NULL, &e), GP_ERROR_INVALID_VALUE, "'epilogue'");
  /* Operands past the end of their allocation (gpuport knows its own allocations). */
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 64, 64, 64, 1, a, GP_F32, 65, b, GP_F32, 64, 0, c, GP_F32, 64),
              GP_ERROR_INVALID_VALUE, "'a'");
  /* Operands not aligned to their elements (a GPU faults on such an access): refused,
   * naming the operand, before anything reads them (under UBSan the loads aborted). */
  const char *a8 = (const char *)a, *b8 = (const char *)b;
  char *c8 = (char *)c;
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 4, 4, 1, a8 + 1, GP_F16, 4, b, GP_F16, 4, 0, c, GP_F16, 4),
              GP_ERROR_INVALID_VALUE, "'a' (");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 4, 4, 1, a8 + 2, GP_F32, 4, b, GP_F32, 4, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "not aligned to its f32 elements");
  EXPECT_FAIL(gp_gemm(NULL, C, T, N, 4, 4, 4, 1, a, GP_BF16, 4, b8 + 3, GP_BF16, 4, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'b' (");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 4, 4, 1, a, GP_F16, 4, b, GP_F16, 4, 0, c8 + 1, GP_F16, 4),
              GP_ERROR_INVALID_VALUE, "'c' (");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 4, 0, 1, NULL, GP_F32, 4, NULL, GP_F32, 4, 2, c8 + 2, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "'c' (");
  e = d; e.epilogue = GP_EPILOGUE_BIAS; e.bias = a8 + 2; e.bias_type = GP_F32;
  EXPECT_FAIL(gp_gemm_ex(NULL, &e), GP_ERROR_INVALID_VALUE, "'bias' (");
  /* Address arithmetic that overflows. */
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 4, 4, 4, 1, a, GP_F32, INT64_MAX / 2, b, GP_F32, 4, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_VALUE, "extent of A");
  /* Streams. */
  gp_stream_t s;
  ck_assert_int_eq(gp_stream_create(&s), GP_SUCCESS);
  ck_assert_int_eq(gp_stream_destroy(s), GP_SUCCESS);
  EXPECT_FAIL(gp_gemm(s, R, N, N, 4, 4, 4, 1, a, GP_F32, 4, b, GP_F32, 4, 0, c, GP_F32, 4),
              GP_ERROR_INVALID_HANDLE, "");
  ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
  gp_free(a);
  gp_free(b);
  gp_free(c);
}
END_TEST

/* Operands in memory gpuport neither allocated nor registered (malloc) are refused on the
 * cpu backend, naming the operand, as not device-accessible: a GPU faults on them. The
 * same operands registered with gp_host_register run; freed device memory is refused. */
START_TEST(test_host_memory_refused) {
  SKIP_IF(gp_backend() != GP_BACKEND_CPU,
          "only the cpu backend knows every device-accessible byte");
  const size_t bytes = 16 * 16 * sizeof(float);
  float *a = NULL, *b = NULL, *c = NULL, *bias = NULL, *m = malloc(bytes), *freed = NULL;
  ck_assert_ptr_nonnull(m);
  memset(m, 0, bytes);
  ck_assert_int_eq(gp_malloc((void **)&a, bytes), GP_SUCCESS);
  ck_assert_int_eq(gp_malloc((void **)&b, bytes), GP_SUCCESS);
  ck_assert_int_eq(gp_malloc((void **)&c, bytes), GP_SUCCESS);
  ck_assert_int_eq(gp_malloc((void **)&bias, 16 * sizeof(float)), GP_SUCCESS);
  ck_assert_int_eq(gp_memset(a, 0, bytes), GP_SUCCESS);
  ck_assert_int_eq(gp_memset(b, 0, bytes), GP_SUCCESS);
  const gp_layout_t R = GP_ROW_MAJOR;
  const gp_op_t N = GP_OP_N;
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 16, 16, 16, 1, m, GP_F32, 16, b, GP_F32, 16, 0, c, GP_F32, 16),
              GP_ERROR_INVALID_VALUE, "'a' (");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "not device-accessible"));
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 16, 16, 16, 1, a, GP_F32, 16, m, GP_F32, 16, 0, c, GP_F32, 16),
              GP_ERROR_INVALID_VALUE, "'b' (");
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 16, 16, 16, 1, a, GP_F32, 16, b, GP_F32, 16, 0, m, GP_F32, 16),
              GP_ERROR_INVALID_VALUE, "'c' (");
  EXPECT_FAIL(gp_gemm_strided_batched(NULL, R, N, N, 4, 4, 4, 1, a, GP_F32, 4, b, GP_F32, 4, 0, m,
                                      GP_F32, 4, 2, 16, 16, 16),
              GP_ERROR_INVALID_VALUE, "'c' (");
  gp_gemm_desc_t d;
  gp_gemm_desc_init(&d);
  d.layout = R, d.transa = d.transb = N;
  d.m = d.n = d.k = 16;
  d.alpha = 1;
  d.a = a, d.b = b, d.c = c;
  d.a_type = d.b_type = d.c_type = GP_F32;
  d.lda = d.ldb = d.ldc = 16;
  d.epilogue = GP_EPILOGUE_BIAS;
  d.bias = m;
  d.bias_type = GP_F32;
  EXPECT_FAIL(gp_gemm_ex(NULL, &d), GP_ERROR_INVALID_VALUE, "'bias' (");
  d.bias = bias;
  ck_assert_int_eq(gp_gemm_ex(NULL, &d), GP_SUCCESS);
  /* Registered, the same host memory is device-accessible. */
  ck_assert_int_eq(gp_host_register(m, bytes), GP_SUCCESS);
  ck_assert_int_eq(gp_gemm(NULL, R, N, N, 16, 16, 16, 1, a, GP_F32, 16, b, GP_F32, 16, 0, m, GP_F32, 16),
                   GP_SUCCESS);
  ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
  ck_assert_int_eq(gp_host_unregister(m), GP_SUCCESS);
  /* Freed device memory. */
  ck_assert_int_eq(gp_malloc((void **)&freed, bytes), GP_SUCCESS);
  ck_assert_int_eq(gp_free(freed), GP_SUCCESS);
  EXPECT_FAIL(gp_gemm(NULL, R, N, N, 16, 16, 16, 1, a, GP_F32, 16, b, GP_F32, 16, 0, freed, GP_F32, 16),
              GP_ERROR_INVALID_VALUE, "'c' (");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "freed"));
  gp_free(a);
  gp_free(b);
  gp_free(c);
  gp_free(bias);
  free(m);
}
END_TEST

/* Work is enqueued, not run inline: a chain of dependent GEMMs on one stream (after an
 * async copy) completes in order by gp_stream_synchronize. X <- X (2 I), ten times,
 * alternating buffers, gives 2^10 I exactly. */
START_TEST(test_stream_order) {
  set_mode(_i);
  gp_stream_t s;
  ck_assert_int_eq(gp_stream_create(&s), GP_SUCCESS);
  const int64_t n = 24;
  const size_t bytes = (size_t)(n * n) * sizeof(float);
  float *h = malloc(bytes), *two = malloc(bytes), *d0, *d1, *dtwo;
  for (int64_t i = 0; i < n * n; i++) {
    h[i] = (i % (n + 1) == 0) ? 1.0f : 0.0f;
    two[i] = 2.0f * h[i];
  }
  ck_assert_int_eq(gp_malloc((void **)&d0, bytes), GP_SUCCESS);
  ck_assert_int_eq(gp_malloc((void **)&d1, bytes), GP_SUCCESS);
  ck_assert_int_eq(gp_malloc((void **)&dtwo, bytes), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(dtwo, two, bytes), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy_async(d0, h, bytes, s), GP_SUCCESS);
  for (int r = 0; r < 10; r++) {
    float *src = r & 1 ? d1 : d0, *dst = r & 1 ? d0 : d1;
    ck_assert_int_eq(gp_gemm(s, GP_ROW_MAJOR, GP_OP_N, GP_OP_N, n, n, n, 1.0f, src, GP_F32, n,
                             dtwo, GP_F32, n, 0.0f, dst, GP_F32, n),
                     GP_SUCCESS);
  }
  ck_assert_int_eq(gp_stream_synchronize(s), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(h, d0, bytes), GP_SUCCESS);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++)
      ck_assert_msg(h[i * n + j] == (i == j ? 1024.0f : 0.0f), "(%lld,%lld) = %g", (long long)i,
                    (long long)j, (double)h[i * n + j]);
  gp_free(d0);
  gp_free(d1);
  gp_free(dtwo);
  free(h);
  free(two);
  ck_assert_int_eq(gp_stream_destroy(s), GP_SUCCESS);
}
END_TEST

/* ---- the portable kernel at warp width 64 (cpu) ----------------------------------------- */
#ifdef GP_BUILD_CPU
static void width64_setup(void) { setenv("GP_CPU_WARP_SIZE", "64", 1); }

START_TEST(test_width64_build_runs) {
  ck_assert_int_eq(GP_KERNEL_REF(gp__gemm_portable_w64)->warp_size, 64);
  ck_assert_ptr_eq(gp__cpu_kernel_for_width(GP_KERNEL_REF(gp__gemm_portable)), GP_KERNEL_REF(gp__gemm_portable_w64));
}
END_TEST

/* ---- the host GEMM's f16/bf16 paths ---------------------------------------------------- */

/* The conversions to f32, vector and scalar, against the reference rule (gp_f32_from_f16,
 * gp_f32_from_bf16) for every one of the 65536 inputs, at every length remainder. */
START_TEST(test_convert_all_values) {
  enum { N = 65536 };
  uint16_t *src = malloc(N * sizeof(uint16_t));
  float *got = malloc((N + 8) * sizeof(float));
  ck_assert(src && got);
  for (int i = 0; i < N; i++) src[i] = (uint16_t)i;
  const int types[2] = {GP_F16, GP_BF16};
  for (int t = 0; t < 2; t++)
    for (int v = 0; v < 2; v++) {
      const bool vec = v == 1;
      if (vec && !gp__cpu_convert_vector(types[t])) {
        printf("  convert: no vector conversion of %s on this processor\n", dt((gp_dtype_t)types[t]));
        continue;
      }
      for (int tail = 0; tail < 9; tail++) { /* lengths N - tail: every remainder of the vector loop */
        got[N - tail] = -7.0f;
        gp__cpu_convert_f32(got, src, types[t], N - tail, vec);
        ck_assert_msg(got[N - tail] == -7.0f, "conversion wrote past its length");
        for (int i = 0; i < N - tail; i++) {
          const float want = types[t] == GP_F16 ? gp_f32_from_f16((gp_f16_t){src[i]}) : gp_f32_from_bf16((gp_bf16_t){src[i]});
          uint32_t a, b;
          memcpy(&a, &got[i], 4), memcpy(&b, &want, 4);
          /* a NaN stays a NaN of the same sign and payload, quieted (F16C quiets) */
          const bool nan_ok = isnan(want) && isnan(got[i]) && ((a ^ b) & ~0x00400000u) == 0;
          ck_assert_msg(a == b || nan_ok, "%s 0x%04x -> 0x%08x, expected 0x%08x (%s)", dt((gp_dtype_t)types[t]),
                        src[i], a, b, vec ? "vector" : "scalar");
        }
      }
    }
  free(src);
  free(got);
}
END_TEST

/* Each f16/bf16 path of the host GEMM forced in turn (GP_CPU_GEMM=convert with vector
 * and scalar conversion, GP_CPU_GEMM=sbgemm where OpenBLAS has cblas_sbgemm): every
 * layout, transpose pair and output type, an epilogue, a batch, and blocks split by a
 * lowered BLAS limit; each checked against the reference and for the kernel named. */
START_TEST(test_half_paths) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  unsigned id = 1500;
  const int halves[3] = {GP__CPU_CONVERT, GP__CPU_CONVERT, GP__CPU_SBGEMM};
  for (int hm = 0; hm < 3; hm++) {
    if (halves[hm] == GP__CPU_SBGEMM && !gp__gemm_cpu_sbgemm_available()) {
      printf("  half paths: this OpenBLAS has no cblas_sbgemm: sbgemm not run\n");
      continue;
    }
    for (int t = 0; t < 4; t++)
      for (int v = 0; v < 8; v++) {
        set_mode(MODE_DEFAULT);
        g_half = halves[hm];
        g_scalar = hm == 1;
        gp__cpu_mode_set(GP__OP_GEMM, g_half);
        gp__cpu_convert_set(g_scalar ? GP__CONVERT_SCALAR : GP__CONVERT_VECTOR);
        gemm_case_t cs = base_case();
        cs.api = API_EX;
        cs.ab = k_types[1 + t].ab, cs.c = k_types[1 + t].c;
        cs.layout = v & 4 ? GP_COL_MAJOR : GP_ROW_MAJOR;
        cs.ta = v & 1 ? GP_OP_T : GP_OP_N, cs.tb = v & 2 ? GP_OP_T : GP_OP_N;
        cs.m = 37 + v, cs.n = 29, cs.k = 45 + 3 * t; /* odd sizes: vector tails */
        cs.pad_a = v, cs.pad_b = 1, cs.pad_c = 2;
        cs.beta = v & 1 ? 0.0f : -0.5f;
        cs.epi = v == 3 ? GP_EPILOGUE_BIAS_GELU : v == 6 ? GP_EPILOGUE_BIAS : GP_EPILOGUE_NONE;
        cs.bias_type = v == 6 ? cs.c : GP_F32;
        cs.batch = v == 5 ? 3 : 1;
        if (v == 7) { /* blocks of at most 16 rows, columns and k: the k blocks accumulate */
          gp__gemm_cpu_set_blas_limit(16);
          cs.m = 50, cs.n = 40, cs.k = 70;
        }
        cs.id = id++;
        run_case(&cs);
        gp__gemm_cpu_set_blas_limit(0);
      }
  }
  gp__cpu_convert_set(-1);
  g_scalar = false;
  set_mode(MODE_DEFAULT);
}
END_TEST

/* The conversion path's panels of C: the shorter side kept whole and the longer cut at
 * model shapes, and at a lowered panel size both cut; every product cut so (m and n not
 * multiples of the panel, both directions, transposes, row-major (C^T), batches, beta,
 * bias and GELU epilogues, k blocks under a lowered BLAS limit, f16 and bf16 with half
 * and f32 outputs) checked against the reference. */
START_TEST(test_half_panels) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  enum { PANEL = 97 };
  int64_t plan[5];
  gp__gemm_params_t pp;
  memset(&pp, 0, sizeof pp);
  pp.ab_type = GP_BF16, pp.m = 1536, pp.n = 4096, pp.k = 384;
  gp__gemm_cpu_half_plan(&pp, plan);
  ck_assert_msg(plan[0] == 1536 && plan[1] == 4096 && plan[2] == 384, "one block: %lld %lld %lld",
                (long long)plan[0], (long long)plan[1], (long long)plan[2]);
  ck_assert_msg(plan[3] == 1536 && plan[4] > 0 && plan[4] < 4096 && plan[3] * plan[4] <= ((int64_t)1 << 20),
                "m whole, n cut: panel %lld x %lld", (long long)plan[3], (long long)plan[4]);
  pp.m = 4096, pp.n = 1536;
  gp__gemm_cpu_half_plan(&pp, plan);
  ck_assert_msg(plan[4] == 1536 && plan[3] > 0 && plan[3] < 4096, "n whole, m cut: panel %lld x %lld",
                (long long)plan[3], (long long)plan[4]);
  pp.m = 300, pp.n = 200;
  gp__gemm_cpu_half_plan(&pp, plan);
  ck_assert_msg(plan[3] == 300 && plan[4] == 200, "a small product is one panel");
  gp__gemm_cpu_set_panel_floats(PANEL);
  pp.m = 70, pp.n = 23, pp.k = 19;
  gp__gemm_cpu_half_plan(&pp, plan);
  ck_assert_msg(plan[3] < 70 && plan[4] < 23 && plan[3] * plan[4] <= PANEL && 70 % plan[3] && 23 % plan[4],
                "lowered: panel %lld x %lld", (long long)plan[3], (long long)plan[4]);
  unsigned id = 1700;
  const int types[4] = {3, 1, 4, 2}; /* bf16->bf16, f16->f16, bf16->f32, f16->f32 */
  for (int t = 0; t < 8; t++)
    for (int v = 0; v < 8; v++) {
      set_mode(MODE_DEFAULT);
      g_half = GP__CPU_CONVERT;
      g_scalar = t >= 4; /* the scalar conversion and rounding too */
      gp__cpu_mode_set(GP__OP_GEMM, g_half);
      gp__cpu_convert_set(g_scalar ? GP__CONVERT_SCALAR : GP__CONVERT_VECTOR);
      gemm_case_t cs = base_case();
      cs.api = API_EX;
      cs.ab = k_types[types[t % 4]].ab, cs.c = k_types[types[t % 4]].c;
      cs.layout = v & 4 ? GP_ROW_MAJOR : GP_COL_MAJOR;
      cs.ta = v & 1 ? GP_OP_T : GP_OP_N, cs.tb = v & 2 ? GP_OP_T : GP_OP_N;
      cs.m = v & 1 ? 70 : 21, cs.n = v & 1 ? 23 : 75, cs.k = 19 + 7 * (t % 4);
      cs.pad_a = 1, cs.pad_b = v, cs.pad_c = 3;
      cs.beta = v & 2 ? 0.0f : 0.25f;
      cs.epi = v == 1 || v == 4 ? GP_EPILOGUE_BIAS_GELU : v == 2 ? GP_EPILOGUE_BIAS : GP_EPILOGUE_NONE;
      cs.bias_type = v == 2 ? cs.c : GP_F32;
      cs.batch = v == 3 || v == 4 ? 3 : 1;
      gp__gemm_cpu_set_panel_floats(PANEL);
      if (v == 6) { /* k blocks of 16: each panel converts its part of each */
        gp__gemm_cpu_set_blas_limit(16);
        cs.k = 45;
      }
      cs.id = id++;
      run_case(&cs);
      gp__gemm_cpu_set_blas_limit(0);
    }
  gp__gemm_cpu_set_panel_floats(0);
  gp__cpu_convert_set(-1);
  g_scalar = false;
  /* At the default panel size, products large enough for the helper threads (with
   * GP_CPU_THREADS > 1) to share the conversion and each panel's finish: one panel of
   * 300 x 520, and 1100 x 1000 cut into panels of 1048 rows and a last of 52. */
  for (int w = 0; w < 4; w++) {
    const int v = w & 1;
    set_mode(MODE_DEFAULT);
    g_half = GP__CPU_CONVERT;
    g_scalar = w >= 2;
    gp__cpu_mode_set(GP__OP_GEMM, g_half);
    gp__cpu_convert_set(g_scalar ? GP__CONVERT_SCALAR : GP__CONVERT_VECTOR);
    gemm_case_t cs = base_case();
    cs.api = API_EX;
    cs.layout = GP_COL_MAJOR;
    cs.ab = v ? GP_F16 : GP_BF16, cs.c = cs.ab;
    cs.ta = v ? GP_OP_T : GP_OP_N, cs.tb = v ? GP_OP_N : GP_OP_T;
    cs.m = v ? 1100 : 300, cs.n = v ? 1000 : 520, cs.k = v ? 40 : 260;
    cs.epi = v ? GP_EPILOGUE_BIAS_GELU : GP_EPILOGUE_NONE;
    cs.beta = v ? 0.0f : 0.5f;
    cs.id = id++;
    run_case(&cs);
  }
  gp__cpu_convert_set(-1);
  g_scalar = false;
  set_mode(MODE_DEFAULT);
}
END_TEST

/* The packed half path (GP_CPU_GEMM=half: op(A) and op(B) converted while packed, the
 * 6 x 16 AVX2 + FMA kernel): shapes around its panels (16 rows, 6 columns), items (512
 * rows, 96 columns), k blocks (256, balanced) and op(A)'s runs (4 Mi floats / k rows),
 * k = 1, every layout and transpose pair, f16 and bf16 to every output, beta with C
 * read, bias along m and n, GELU, batches and padded leading dimensions; each checked
 * against the reference and for the kernel named (the conversion path where the
 * processor lacks AVX2, FMA or F16C). */
START_TEST(test_packed_half) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  if (!gp__gemm_cpu_packed_half_available())
    printf("  packed half: no AVX2 + FMA + F16C here: the conversion path is checked instead\n");
  static const int64_t shapes[][3] = {
      {1, 1, 1},     {5, 7, 3},     {16, 6, 1},     {17, 7, 9},     {33, 13, 256}, {47, 95, 257},
      {100, 97, 300}, {515, 101, 40}, {600, 200, 513}, {31, 190, 77}, {1030, 9, 21},  {600, 7, 9000},
  };
  const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
  unsigned id = 1900;
  for (int s = 0; s < nshapes; s++)
    for (int v = 0; v < 8; v++) {
      set_mode(MODE_DEFAULT);
      g_half = GP__CPU_HALF;
      gp__cpu_mode_set(GP__OP_GEMM, g_half);
      gemm_case_t cs = base_case();
      cs.api = API_EX;
      const int t = (s + v) % 4; /* bf16->bf16, f16->f16, bf16->f32, f16->f32 */
      const int types[4] = {3, 1, 4, 2};
      cs.ab = k_types[types[t]].ab, cs.c = k_types[types[t]].c;
      cs.layout = v & 4 ? GP_ROW_MAJOR : GP_COL_MAJOR;
      cs.ta = v & 1 ? GP_OP_T : GP_OP_N, cs.tb = v & 2 ? GP_OP_T : GP_OP_N;
      cs.m = shapes[s][0], cs.n = shapes[s][1], cs.k = shapes[s][2];
      cs.pad_a = v & 1, cs.pad_b = (v >> 1) & 1, cs.pad_c = v & 3;
      cs.beta = v == 1 || v == 6 ? 0.5f : 0.0f;
      cs.alpha = v == 2 ? -1.5f : 1.0f;
      cs.epi = v == 3 || v == 6 ? GP_EPILOGUE_BIAS_GELU : v == 2 || v == 7 ? GP_EPILOGUE_BIAS : GP_EPILOGUE_NONE;
      cs.bias_type = v == 7 ? cs.c : GP_F32;
      cs.batch = v == 4 && s < 8 ? 3 : 1;
      cs.id = id++;
      run_case(&cs);
    }
  /* The default's choice either side of its rule (one k block of at most 384, C with at
   * least as many columns as rows in the column-major problem): each case is named
   * (run_case checks the kernel) and checked against the reference. */
  static const int64_t rule[][4] = {/* layout (1: row-major), m, n, k */
                                    {0, 40, 60, 384}, {0, 40, 60, 385}, {0, 60, 40, 100},
                                    {1, 60, 40, 100}, {1, 40, 60, 100}, {0, 50, 50, 1}};
  for (int r = 0; r < (int)(sizeof rule / sizeof rule[0]); r++) {
    set_mode(MODE_DEFAULT);
    gemm_case_t cs = base_case();
    cs.api = API_EX;
    cs.ab = r & 1 ? GP_F16 : GP_BF16, cs.c = cs.ab;
    cs.layout = rule[r][0] ? GP_ROW_MAJOR : GP_COL_MAJOR;
    cs.m = rule[r][1], cs.n = rule[r][2], cs.k = rule[r][3];
    cs.beta = 0.5f, cs.epi = r == 2 ? GP_EPILOGUE_BIAS_GELU : GP_EPILOGUE_NONE;
    cs.id = id++;
    run_case(&cs);
  }
  /* With the vector conversions off (as on a processor without AVX2) GP_CPU_GEMM=half
   * converts for OpenBLAS instead. */
  for (int w = 0; w < 4; w++) {
    set_mode(MODE_DEFAULT);
    g_half = GP__CPU_HALF;
    gp__cpu_mode_set(GP__OP_GEMM, g_half);
    g_scalar = w >= 2;
    gp__cpu_convert_set(g_scalar ? GP__CONVERT_SCALAR : GP__CONVERT_VECTOR);
    gemm_case_t cs = base_case();
    cs.api = API_EX;
    cs.ab = w & 1 ? GP_F16 : GP_BF16, cs.c = cs.ab;
    cs.layout = GP_ROW_MAJOR;
    cs.m = 70, cs.n = 33, cs.k = 41;
    cs.beta = 0.25f, cs.epi = GP_EPILOGUE_BIAS_GELU;
    cs.id = id++;
    run_case(&cs);
  }
  gp__cpu_convert_set(-1);
  g_scalar = false;
  set_mode(MODE_DEFAULT);
}
END_TEST

/* The forced paths and the vector/scalar conversion give the same bits as the portable
 * kernel on products every order of summation gives exactly (k = 1, as
 * test_epilogue_bits), for bf16 and f16 outputs with beta and an epilogue. */
START_TEST(test_half_bits) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  enum { M = 45, N = 19 };
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ 0x4a1fb175ull);
  const gp_dtype_t types[2] = {GP_BF16, GP_F16};
  for (int t = 0; t < 2; t++) {
    const gp_dtype_t ty = types[t];
    unsigned char ha[M * 2], hb[N * 2], hc[M * N * 2], hbias[N * 4], got[5][M * N * 2];
    gp_ref_fill(ha, ty, M, &rng, -2.0, 2.0);
    gp_ref_fill(hb, ty, N, &rng, -2.0, 2.0);
    gp_ref_fill(hc, ty, M * N, &rng, -2.0, 2.0);
    gp_ref_fill(hbias, GP_F32, N, &rng, -1.0, 1.0);
    void *da = dev_alloc_copy(ha, sizeof ha), *db = dev_alloc_copy(hb, sizeof hb);
    void *dbias = dev_alloc_copy(hbias, sizeof hbias), *dc = NULL;
    ck_assert_int_eq(gp_malloc(&dc, sizeof hc), GP_SUCCESS);
    gp_gemm_desc_t d;
    gp_gemm_desc_init(&d);
    d.layout = GP_COL_MAJOR;
    d.m = M, d.n = N, d.k = 1, d.alpha = -0.7f, d.beta = 0.6f;
    d.a = da, d.a_type = ty, d.lda = M, d.b = db, d.b_type = ty, d.ldb = 1;
    d.c = dc, d.c_type = ty, d.ldc = M;
    d.epilogue = GP_EPILOGUE_BIAS_GELU_TANH, d.bias = dbias, d.bias_type = GP_F32;
    for (int r = 0; r < 5; r++) {
      const int mode = r == 0 ? GP__CPU_PORTABLE : r == 3 ? GP__CPU_SBGEMM : r == 4 ? GP__CPU_HALF : GP__CPU_CONVERT;
      gp__cpu_mode_set(GP__OP_GEMM, mode);
      gp__cpu_convert_set(r == 2 ? GP__CONVERT_SCALAR : GP__CONVERT_VECTOR);
      for (int pass = 0; pass < 2; pass++) { /* beta != 0, then the plain product (the direct rounding) */
        if (pass == 1) d.alpha = 1.0f, d.beta = 0.0f, d.epilogue = GP_EPILOGUE_NONE;
        ck_assert_int_eq(gp_memcpy(dc, hc, sizeof hc), GP_SUCCESS);
        ck_assert_int_eq(gp_gemm_ex(NULL, &d), GP_SUCCESS);
        ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
        if (pass == 0) ck_assert_int_eq(gp_memcpy(got[r], dc, sizeof hc), GP_SUCCESS);
        if (pass == 1) {
          unsigned char plain[M * N * 2];
          ck_assert_int_eq(gp_memcpy(plain, dc, sizeof plain), GP_SUCCESS);
          for (int i = 0; i < M * N; i++) { /* a * b once rounded */
            const float want = gp_ref_load(ha, ty, i % M) * gp_ref_load(hb, ty, i / M);
            const uint16_t bits = ty == GP_BF16 ? gp_bf16_from_f32(want).bits : gp_f16_from_f32(want).bits;
            unsigned char w[2];
            memcpy(w, &bits, 2);
            ck_assert_msg(memcmp(w, plain + 2 * i, 2) == 0, "%s mode %d conversion %s: C[%d] rounded differently",
                          dt(ty), mode, r == 2 ? "scalar" : "vector", i);
          }
        }
        d.alpha = -0.7f, d.beta = 0.6f, d.epilogue = GP_EPILOGUE_BIAS_GELU_TANH;
      }
    }
    for (int r = 1; r < 5; r++)
      ck_assert_msg(memcmp(got[0], got[r], sizeof hc) == 0, "%s: path %d differs from the portable kernel", dt(ty), r);
    gp_free(da), gp_free(db), gp_free(dbias), gp_free(dc);
  }
  gp__cpu_convert_set(-1);
  set_mode(MODE_DEFAULT);
}
END_TEST
#endif

/* ---- suite ------------------------------------------------------------------------------ */

static Suite *gemm_suite(void) {
  Suite *s = suite_create("gemm");
  TCase *tc = tcase_create("results");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_types_layouts_ops, 0, MODE_COUNT);
  tcase_add_loop_test(tc, test_small_and_empty, 0, MODE_COUNT);
  tcase_add_loop_test(tc, test_k0_alpha0, 0, MODE_COUNT);
  tcase_add_loop_test(tc, test_batched, 0, MODE_COUNT);
  tcase_add_loop_test(tc, test_epilogues, 0, MODE_COUNT);
  tcase_add_loop_test(tc, test_stream_order, 0, MODE_COUNT);
  tcase_add_test(tc, test_larger);
#ifdef GP_BUILD_CPU
  tcase_add_test(tc, test_epilogue_bits);
  tcase_add_test(tc, test_gelu_vector);
#endif
  suite_add_tcase(s, tc);
  TCase *t80 = tcase_create("sm80");
  tcase_set_timeout(t80, 240);
  tcase_add_test(t80, test_sm80_shapes);
#ifdef GP_BUILD_CPU
  tcase_add_test(t80, test_sm80_choice);
  tcase_add_test(t80, test_sm80_log_line);
#endif
  suite_add_tcase(s, t80);
  TCase *t90 = tcase_create("sm90a");
  tcase_set_timeout(t90, 240);
  tcase_add_test(t90, test_sm90_shapes);
  tcase_add_test(t90, test_sm90_vs_sm80);
#ifdef GP_BUILD_CPU
  tcase_add_test(t90, test_sm90_choice);
#endif
  suite_add_tcase(s, t90);
  TCase *tmf = tcase_create("mfma");
  tcase_set_timeout(tmf, 240);
  tcase_add_test(tmf, test_mfma_shapes);
#ifdef GP_BUILD_CPU
  tcase_add_test(tmf, test_mfma_choice);
  tcase_add_test(tmf, test_mfma_log_line);
#endif
  suite_add_tcase(s, tmf);
  TCase *te = tcase_create("errors");
  tcase_add_test(te, test_errors);
  tcase_add_test(te, test_host_memory_refused);
  tcase_add_test(te, test_cpu_modes);
  suite_add_tcase(s, te);
#ifdef GP_BUILD_CPU
  TCase *th = tcase_create("half");
  tcase_set_timeout(th, 120);
  tcase_add_test(th, test_convert_all_values);
  tcase_add_test(th, test_half_paths);
  tcase_add_test(th, test_half_panels);
  tcase_add_test(th, test_half_bits);
  tcase_add_test(th, test_packed_half);
  suite_add_tcase(s, th);
#endif
  TCase *td = tcase_create("dispatch"); /* run by make check-dispatch */
  tcase_set_timeout(td, 120);
  tcase_add_test(td, test_every_kernel);
  tcase_add_test(td, test_message_survives);
  suite_add_tcase(s, td);
#ifdef GP_BUILD_CPU
  /* Fork mode only: each test is a fresh process that reads GP_CPU_WARP_SIZE. */
  if (!getenv("CK_FORK") || strcmp(getenv("CK_FORK"), "no") != 0) {
    TCase *t64 = tcase_create("portable at width 64");
    tcase_set_timeout(t64, 120);
    tcase_add_checked_fixture(t64, width64_setup, NULL);
    tcase_add_test(t64, test_width64_build_runs);
    tcase_add_loop_test(t64, test_types_layouts_ops, MODE_PORTABLE, MODE_PORTABLE + 1);
    tcase_add_loop_test(t64, test_epilogues, MODE_PORTABLE, MODE_PORTABLE + 1);
    tcase_add_loop_test(t64, test_batched, MODE_PORTABLE, MODE_PORTABLE + 1);
    suite_add_tcase(s, t64);
  }
#endif
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  print_seed("test_gemm", (unsigned long long)g_seed);
  return run_suite("test_gemm", gemm_suite());
}
