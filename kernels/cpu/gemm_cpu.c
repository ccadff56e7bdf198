/*
 * gemm_cpu.c - the CPU backend's GEMM on OpenBLAS, enqueued in stream order with
 * gp__be_enqueue_host_work so it is asynchronous like the GPU path.
 *
 * Two paths over the canonical column-major problem (kernels/common/gemm_params.h):
 *  - direct: f32 inputs and output with every extent and leading dimension within
 *    OpenBLAS's blasint: one cblas_sgemm per batch entry on the caller's memory, then
 *    the activation (if any) in place over C. Here alpha and beta go to OpenBLAS, so
 *    beta * C is rounded as OpenBLAS rounds it (typically C scaled by beta first, then
 *    alpha * AB added): the one place where the epilogue is not gemm_epilogue.h's
 *    fmaf(beta, C, alpha * acc). Doing it exactly would need the old C kept aside (an
 *    m x n copy per call), and the results differ by at most an ulp of |beta C| +
 *    |alpha AB| before the activation, inside the bound the accumulation order already
 *    needs (test_gemm.c: test_epilogue_bits checks that bound).
 *  - half: f16/bf16 inputs (GP_CPU_GEMM=convert, sbgemm; by default where the packed
 *    half path below is not available or not preferred). The problem is cut into
 *    blocks as large as a per-thread workspace allows (the whole problem at model
 *    shapes); each block of A and B, as stored, is converted once to f32 (F16C for f16,
 *    AVX2 for bf16 where the processor has them, chosen at run time; plain C otherwise or
 *    with GP_CPU_CONVERT=scalar), both in one loop split over GP_CPU_THREADS threads.
 *    The block's product is then made a panel of C at a time (half_panel: small enough to
 *    stay in cache, so the finish reads it from there), each with one cblas_sgemm that
 *    keeps the caller's transposes (OpenBLAS packs for its own kernels: a second packing
 *    here only costs). bf16 may instead go to cblas_sbgemm on
 *    the caller's memory: host measures both once per process on this machine and takes
 *    sbgemm where it is the faster (without AVX512-BF16 OpenBLAS's sbgemm is a slow generic kernel);
 *    GP_CPU_GEMM=convert and sbgemm force either. The f32 product (alpha 1, beta 0, k
 *    blocks accumulated with beta 1) is finished by gemm_epilogue.h like every path.
 *    The workspace is the calling thread's (a stream's worker), reused across calls, so
 *    the hot path allocates nothing after the first call at a size, and two streams
 *    never share one.
 *  - packed half (the default for f16/bf16 where the processor has AVX2, FMA and F16C
 *    and cblas_sbgemm is not the faster; GP_CPU_GEMM=half forces it): op(A) and op(B)
 *    converted while packed for attention_tile_cpu.c's 6 x 16 kernel, no OpenBLAS (the
 *    section "the packed half path" below). No conversion pass and no f32 copy of either
 *    operand; taken by default only where gp__gemm_cpu_packed_half_prefers says it was
 *    measured the faster (docs/PERFORMANCE.md).
 *  - packed: everything else (f32 extents beyond blasint, or GP_CPU_GEMM=packed). C is cut into tiles of at most TILE_M x TILE_N, k into
 *    panels of at most TILE_K; each panel of op(A) and op(B) is converted to f32 into a
 *    per-thread scratch (bounded, reused across calls, freed when the thread exits),
 *    multiplied with cblas_sgemm into an f32 accumulator tile (beta 0 for the first
 *    panel, 1 after: f32 accumulation throughout), and the tile is finished with
 *    kernels/common/gemm_epilogue.h, the kernels' own epilogue (alpha, beta * C, the
 *    activation, the rounding to c_type): from equal accumulators, equal bits. Every extent handed to
 *    OpenBLAS is at most a tile, so sizes beyond 32-bit blasint are split, never
 *    truncated.
 * k == 0 (also alpha == 0, reduced to k == 0 by src/gemm.c) never calls OpenBLAS:
 * C = beta * C (zeros when beta == 0) followed by the epilogue.
 * beta == 0: C is not read on either path (the direct path zeroes C before the call, or
 * with an f32 bias writes the bias there and passes beta 1 (bias_first), so a NaN in C
 * cannot reach the result whatever OpenBLAS does with beta == 0).
 */
#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/exec.h"
#include "gemm.h"
#include "kernels/common/elem.h"
#include "kernels/common/gemm_epilogue.h"

/* ---- limits and tiles ------------------------------------------------------------- */

#define BLASINT_MAX ((int64_t)(sizeof(blasint) >= 8 ? INT64_MAX : INT32_MAX))
static _Atomic int64_t g_blas_limit = 0; /* 0: BLASINT_MAX */

void gp__gemm_cpu_set_blas_limit(int64_t limit) {
  atomic_store_explicit(&g_blas_limit, limit > 0 && limit < BLASINT_MAX ? limit : 0,
                        memory_order_relaxed);
}

static int64_t blas_limit(void) {
  int64_t l = atomic_load_explicit(&g_blas_limit, memory_order_relaxed);
  return l > 0 ? l : BLASINT_MAX;
}

/* Tile of the packed path: 3 * 256 * 256 floats = 768 KiB of scratch per thread. */
#define TILE_M 256
#define TILE_N 256
#define TILE_K 256
#define SCRATCH_FLOATS ((size_t)TILE_M * TILE_K + (size_t)TILE_K * TILE_N + (size_t)TILE_M * TILE_N)

static bool direct_applies(const gp__gemm_params_t *p) {
  const int64_t lim = blas_limit();
  return p->ab_type == GP_F32 && p->c_type == GP_F32 && p->m <= lim && p->n <= lim &&
         p->k <= lim && p->lda <= lim && p->ldb <= lim && p->ldc <= lim;
}

static bool half_type(int32_t t) { return t == GP_F16 || t == GP_BF16; }

const char *gp__gemm_cpu_kernel_name(const gp__gemm_params_t *p, gp__gemm_cpu_path_t path) {
  if (p->k == 0) return "cpu-scale-c";
  if (path == GP__GEMM_CPU_HOST && direct_applies(p)) return "openblas-sgemm";
  if (path == GP__GEMM_CPU_SBGEMM) return "openblas-sbgemm";
  if (path == GP__GEMM_CPU_HALF) return "cpu-packed-half-6x16";
  if (path == GP__GEMM_CPU_CONVERT) {
    const bool vec = gp__cpu_convert_vector((int)p->ab_type);
    if (p->ab_type == GP_F16) return vec ? "openblas-sgemm(f16->f32 f16c)" : "openblas-sgemm(f16->f32 scalar)";
    return vec ? "openblas-sgemm(bf16->f32 avx2)" : "openblas-sgemm(bf16->f32 scalar)";
  }
  return "openblas-sgemm-packed(256x256x256 f32 tiles)";
}

gp__gemm_cpu_path_t gp__gemm_cpu_path(const gp__gemm_params_t *p, gp__cpu_mode_t mode) {
  if (mode == GP__CPU_PACKED) return GP__GEMM_CPU_PACKED;
  if (p->k == 0 || !half_type(p->ab_type)) return direct_applies(p) || p->k == 0 ? GP__GEMM_CPU_HOST : GP__GEMM_CPU_PACKED;
  const gp__gemm_cpu_path_t packed = gp__gemm_cpu_packed_half_available() ? GP__GEMM_CPU_HALF : GP__GEMM_CPU_CONVERT;
  if (mode == GP__CPU_HALF) return packed;
  if (mode == GP__CPU_CONVERT) return GP__GEMM_CPU_CONVERT;
  if (mode == GP__CPU_SBGEMM)
    return p->ab_type == GP_BF16 && gp__gemm_cpu_sbgemm_available() ? GP__GEMM_CPU_SBGEMM : GP__GEMM_CPU_CONVERT;
  /* host: cblas_sbgemm where it beats conversion + sgemm here (an OpenBLAS with
   * BUILD_BFLOAT16 on AVX512-BF16: bf16 dot products in hardware); else the packed path
   * where it was measured ahead of conversion + sgemm, else conversion. */
  if (p->ab_type == GP_BF16 && gp__gemm_cpu_sbgemm_faster()) return GP__GEMM_CPU_SBGEMM;
  return gp__gemm_cpu_packed_half_prefers(p->m, p->n, p->k) ? packed : GP__GEMM_CPU_CONVERT;
}

/* ---- element access and the epilogue: kernels/common/elem.h and gemm_epilogue.h, the
 * kernels' own, so the packed path finishes C exactly as they do -------------------- */

/* x[0..n) rounded to bf16 into dst, as gp_bf16_from_f32 rounds (nearest even, NaN kept
 * quiet). */
static void store_bf16_scalar(uint16_t *dst, const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) dst[i] = gp_bf16_from_f32(x[i]).bits;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_X86_CONVERT 1

/* Eight floats rounded as gp_bf16_from_f32 rounds, each in the low half of its lane. */
__attribute__((target("avx2"))) static inline __m256i round_bf16_avx2(__m256i u) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), quiet = _mm256_set1_epi32(0x40);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
  const __m256i hi = _mm256_srli_epi32(u, 16);
  const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, bias), _mm256_and_si256(hi, one)), 16);
  return _mm256_blendv_epi8(r, _mm256_or_si256(hi, quiet), nan);
}

/* Sixteen at a time (two vectors packed into one store: the pack and the store are the
 * loop's cost), then eight, then the scalar tail. */
__attribute__((target("avx2"))) static void store_bf16_avx2(uint16_t *dst, const float *x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i v0 = round_bf16_avx2(_mm256_loadu_si256((const __m256i *)(x + i)));
    const __m256i v1 = round_bf16_avx2(_mm256_loadu_si256((const __m256i *)(x + i + 8)));
    _mm256_storeu_si256((__m256i *)(dst + i), _mm256_permute4x64_epi64(_mm256_packus_epi32(v0, v1), 0xd8));
  }
  for (; i + 8 <= n; i += 8) {
    const __m256i v = round_bf16_avx2(_mm256_loadu_si256((const __m256i *)(x + i)));
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(v, v), 0xd8);
    _mm_storeu_si128((__m128i *)(dst + i), _mm256_castsi256_si128(packed));
  }
  store_bf16_scalar(dst + i, x + i, n - i);
}

/* x[0..n) rounded to f16 with F16C: IEEE round to nearest even, NaNs quieted with their
 * payload's top bits kept, as gp_f16_from_f32 rounds (test_half_bits checks the bits). */
__attribute__((target("avx,f16c"))) static void store_f16_f16c(uint16_t *dst, const float *x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; i++) dst[i] = gp_f16_from_f32(x[i]).bits;
}
#endif

/* Column j's values x[0..mb) (before rounding) stored at rows [i0, i0 + mb) of C. */
static void store_col(const gp__gemm_params_t *p, void *c, int64_t i0, int64_t j, const float *x, int64_t mb) {
  const int64_t off = i0 + j * p->ldc;
  if (p->c_type == GP_F32) {
    memcpy((float *)c + off, x, (size_t)mb * sizeof(float));
  } else if (p->c_type == GP_BF16) {
#if HAVE_X86_CONVERT
    if (gp__cpu_convert_vector(GP_BF16)) return store_bf16_avx2((uint16_t *)c + off, x, mb);
#endif
    store_bf16_scalar((uint16_t *)c + off, x, mb);
#if HAVE_X86_CONVERT
  } else if (p->c_type == GP_F16 && gp__cpu_convert_vector(GP_F16)) {
    store_f16_f16c((uint16_t *)c + off, x, mb);
#endif
  } else {
    for (int64_t i = 0; i < mb; i++) gp__elem_store(c, p->c_type, off + i, x[i]);
  }
}

/* Finishes rows [i0, i0 + mb) x columns [j0, j0 + nb) of C (batch entry c): acc is the
 * f32 product tile (column-major, ld acc_ld) or NULL for a zero product. Each column is
 * worked in chunks in the order of gp__gemm_epilogue (alpha * acc, then fmaf with
 * beta * C, then the activation): the same operations, so the same bits, in loops the
 * compiler can vectorise. */
static void finish_tile(const gp__gemm_params_t *p, void *c, int64_t i0, int64_t j0, int64_t mb,
                        int64_t nb, const float *acc, int64_t acc_ld) {
  enum { CHUNK = 512 };
  float x[CHUNK];
  const bool has_bias = p->epilogue != GP_EPILOGUE_NONE;
  const float alpha = p->alpha, beta = p->beta;
  if (acc && alpha == 1.0f && beta == 0.0f && !has_bias) { /* the product as it is: rounding alone */
    for (int64_t jj = 0; jj < nb; jj++) store_col(p, c, i0, j0 + jj, acc + jj * acc_ld, mb);
    return;
  }
  for (int64_t jj = 0; jj < nb; jj++) {
    const int64_t j = j0 + jj;
    const float bias_j = has_bias && !p->bias_along_m ? gp__elem_load(p->bias, p->bias_type, j) : 0.0f;
    for (int64_t s = 0; s < mb; s += CHUNK) {
      const int64_t n = mb - s < CHUNK ? mb - s : CHUNK;
      const float *a = acc ? acc + s + jj * acc_ld : NULL;
      if (a)
        for (int64_t i = 0; i < n; i++) x[i] = alpha * a[i];
      else
        for (int64_t i = 0; i < n; i++) x[i] = 0.0f;
      if (beta != 0.0f)
        for (int64_t i = 0; i < n; i++)
          x[i] = fmaf(beta, gp__elem_load(c, p->c_type, i0 + s + i + j * p->ldc), x[i]);
      if (has_bias)
        for (int64_t i = 0; i < n; i++)
          x[i] = gp__gemm_activate(p->epilogue, x[i],
                                   p->bias_along_m ? gp__elem_load(p->bias, p->bias_type, i0 + s + i) : bias_j);
      store_col(p, c, i0 + s, j, x, n);
    }
  }
}

/* ---- per-thread scratch ------------------------------------------------------------- */

static pthread_key_t g_scratch_key;
static pthread_once_t g_scratch_once = PTHREAD_ONCE_INIT;
static bool g_scratch_key_ok;

static void scratch_key_create(void) { g_scratch_key_ok = pthread_key_create(&g_scratch_key, free) == 0; }

static float *scratch_get(void) {
  pthread_once(&g_scratch_once, scratch_key_create);
  if (!g_scratch_key_ok) return NULL;
  float *s = (float *)pthread_getspecific(g_scratch_key);
  if (s == NULL) {
    s = (float *)malloc(SCRATCH_FLOATS * sizeof(float));
    if (s == NULL) return NULL;
    if (pthread_setspecific(g_scratch_key, s) != 0) {
      free(s);
      return NULL;
    }
  }
  return s;
}

/* ---- the two paths ------------------------------------------------------------------- */

/* op(X) panel rows [r0, r0 + rb) x columns [q0, q0 + qb) into dst (column-major, ld rb)
 * where element (r, q) of op(X) is x[r + q * ld] (trans == 0) or x[q + r * ld]. */
static void pack_panel(float *dst, const void *x, int32_t type, int64_t ld, int32_t trans,
                       int64_t r0, int64_t q0, int64_t rb, int64_t qb) {
  if (!trans) {
    for (int64_t q = 0; q < qb; q++)
      for (int64_t r = 0; r < rb; r++) dst[r + q * rb] = gp__elem_load(x, type, (r0 + r) + (q0 + q) * ld);
  } else {
    for (int64_t r = 0; r < rb; r++)
      for (int64_t q = 0; q < qb; q++) dst[r + q * rb] = gp__elem_load(x, type, (q0 + q) + (r0 + r) * ld);
  }
}

static gp_status_t run_packed(const gp__gemm_params_t *p) {
  float *scratch = p->k > 0 ? scratch_get() : NULL;
  if (p->k > 0 && scratch == NULL)
    return GP__ERR(GP_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes of GEMM scratch",
                   SCRATCH_FLOATS * sizeof(float));
  float *ap = scratch, *bp = scratch ? scratch + (size_t)TILE_M * TILE_K : NULL;
  float *acc = scratch ? bp + (size_t)TILE_K * TILE_N : NULL;
  for (int64_t z = 0; z < p->batch; z++) {
    const void *a = p->k > 0 ? gemm_offset(p->a, p->ab_type, z * p->stride_a) : NULL;
    const void *b = p->k > 0 ? gemm_offset(p->b, p->ab_type, z * p->stride_b) : NULL;
    void *c = (void *)gemm_offset(p->c, p->c_type, z * p->stride_c);
    for (int64_t j0 = 0; j0 < p->n; j0 += TILE_N) {
      const int64_t nb = p->n - j0 < TILE_N ? p->n - j0 : TILE_N;
      for (int64_t i0 = 0; i0 < p->m; i0 += TILE_M) {
        const int64_t mb = p->m - i0 < TILE_M ? p->m - i0 : TILE_M;
        if (p->k == 0) {
          finish_tile(p, c, i0, j0, mb, nb, NULL, 0);
          continue;
        }
        for (int64_t p0 = 0; p0 < p->k; p0 += TILE_K) {
          const int64_t kb = p->k - p0 < TILE_K ? p->k - p0 : TILE_K;
          pack_panel(ap, a, p->ab_type, p->lda, p->trans_a, i0, p0, mb, kb);
          pack_panel(bp, b, p->ab_type, p->ldb, p->trans_b, p0, j0, kb, nb);
          cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (blasint)mb, (blasint)nb,
                      (blasint)kb, 1.0f, ap, (blasint)mb, bp, (blasint)kb, p0 == 0 ? 0.0f : 1.0f,
                      acc, (blasint)mb);
        }
        finish_tile(p, c, i0, j0, mb, nb, acc, mb);
      }
    }
  }
  return GP_SUCCESS;
}

/* The direct path's activation over columns [c0, c1) of one batch entry's C. */
typedef struct activate_job {
  const gp__gemm_params_t *p;
  float *c;
  bool bias_done; /* C already holds the bias (bias_first): the activation alone */
} activate_job_t;

/* One column of C with its bias: bias_vec[i] (an f32 bias along m, the row-major
 * problems' case) or bj. The bias alone and GELU get loops of their own (the compiler
 * vectorises the first; the second is gelu_cpu.c's): the same bits as gp__gemm_activate
 * for the bias, within its erf's error for GELU. */
static void activate_col(const gp__gemm_params_t *p, float *col, const float *bias_vec, float bj, bool gelu_vec) {
  if (p->epilogue == GP_EPILOGUE_BIAS) {
    if (bias_vec)
      for (int64_t i = 0; i < p->m; i++) col[i] += bias_vec[i];
    else
      for (int64_t i = 0; i < p->m; i++) col[i] += bj;
    return;
  }
  if (p->epilogue == GP_EPILOGUE_BIAS_GELU) return gp__cpu_gelu_bias_f32(col, p->m, bias_vec, bj, gelu_vec);
  for (int64_t i = 0; i < p->m; i++) col[i] = gp__gemm_activate(p->epilogue, col[i], bias_vec ? bias_vec[i] : bj);
}

static void activate_cols(void *ctx, int64_t c0, int64_t c1) {
  const activate_job_t *a = (const activate_job_t *)ctx;
  const gp__gemm_params_t *p = a->p;
  const bool vec = gp__cpu_gelu_vector();
  if (a->bias_done) {
    for (int64_t j = c0; j < c1; j++) activate_col(p, a->c + j * p->ldc, NULL, 0.0f, vec);
    return;
  }
  if (!p->bias_along_m) {
    for (int64_t j = c0; j < c1; j++)
      activate_col(p, a->c + j * p->ldc, NULL, gp__elem_load(p->bias, p->bias_type, j), vec);
    return;
  }
  if (p->bias_type == GP_F32) {
    for (int64_t j = c0; j < c1; j++) activate_col(p, a->c + j * p->ldc, (const float *)p->bias, 0.0f, vec);
    return;
  }
  for (int64_t j = c0; j < c1; j++) {
    float *col = a->c + j * p->ldc;
    for (int64_t i = 0; i < p->m; i++)
      col[i] = gp__gemm_activate(p->epilogue, col[i], gp__elem_load(p->bias, p->bias_type, i));
  }
}

static void parallel_ranges(void (*fn)(void *, int64_t, int64_t), void *ctx, int64_t items, int64_t work_per_item);

/* Whether the direct path writes the f32 bias into C and lets OpenBLAS add alpha AB to it
 * (beta 1): with beta == 0 this replaces the zeroing of C, OpenBLAS's own pass over C for
 * beta, and the bias pass of the epilogue with one store. OpenBLAS rounds bias + alpha AB
 * in one operation or two where gemm_epilogue.h rounds alpha * acc, then adds the bias:
 * at most an ulp of |alpha AB| apart, inside the bound the direct path already has
 * (test_gemm.c: test_epilogue_bits). */
static bool bias_first(const gp__gemm_params_t *p) {
  return p->beta == 0.0f && p->epilogue != GP_EPILOGUE_NONE && p->bias_type == GP_F32;
}

/* C's columns of one batch entry set to the bias (f32, along m or n). */
static void fill_bias(const gp__gemm_params_t *p, float *c) {
  const float *bias = (const float *)p->bias;
  for (int64_t j = 0; j < p->n; j++) {
    float *col = c + j * p->ldc;
    if (p->bias_along_m) {
      memcpy(col, bias, (size_t)p->m * sizeof(float));
    } else {
      for (int64_t i = 0; i < p->m; i++) col[i] = bias[j];
    }
  }
}

static gp_status_t run_direct(const gp__gemm_params_t *p) {
  const bool bias_in_c = bias_first(p);
  for (int64_t z = 0; z < p->batch; z++) {
    const float *a = (const float *)p->a + z * p->stride_a;
    const float *b = (const float *)p->b + z * p->stride_b;
    float *c = (float *)p->c + z * p->stride_c;
    if (bias_in_c)
      fill_bias(p, c);
    else if (p->beta == 0.0f)
      for (int64_t j = 0; j < p->n; j++) memset(c + j * p->ldc, 0, (size_t)p->m * sizeof(float));
    cblas_sgemm(CblasColMajor, p->trans_a ? CblasTrans : CblasNoTrans,
                p->trans_b ? CblasTrans : CblasNoTrans, (blasint)p->m, (blasint)p->n, (blasint)p->k,
                p->alpha, a, (blasint)p->lda, b, (blasint)p->ldb, bias_in_c ? 1.0f : p->beta, c, (blasint)p->ldc);
    if (p->epilogue != GP_EPILOGUE_NONE && !(bias_in_c && p->epilogue == GP_EPILOGUE_BIAS)) {
      activate_job_t job = {p, c, bias_in_c};
      parallel_ranges(activate_cols, &job, p->n, p->m);
    }
  }
  return GP_SUCCESS;
}

/* ---- f16/bf16 to f32 ---------------------------------------------------------------- */

static void convert_scalar(float *dst, const void *src, int type, int64_t n) {
  if (type == GP_F16) {
    const gp_f16_t *h = (const gp_f16_t *)src;
    for (int64_t i = 0; i < n; i++) dst[i] = gp_f32_from_f16(h[i]);
  } else {
    const uint16_t *b = (const uint16_t *)src;
    for (int64_t i = 0; i < n; i++) {
      const uint32_t u = (uint32_t)b[i] << 16;
      memcpy(&dst[i], &u, 4);
    }
  }
}

#if HAVE_X86_CONVERT
__attribute__((target("avx,f16c"))) static void convert_f16c(float *dst, const void *src, int64_t n) {
  const uint16_t *h = (const uint16_t *)src;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
  convert_scalar(dst + i, h + i, GP_F16, n - i);
}

__attribute__((target("avx2"))) static void convert_bf16_avx2(float *dst, const void *src, int64_t n) {
  const uint16_t *b = (const uint16_t *)src;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(b + i)));
    _mm256_storeu_si256((__m256i *)(dst + i), _mm256_slli_epi32(w, 16));
  }
  convert_scalar(dst + i, b + i, GP_BF16, n - i);
}
#endif


bool gp__cpu_convert_vector(int type) {
  if (gp__cpu_convert() == GP__CONVERT_SCALAR) return false;
#if HAVE_X86_CONVERT
  const gp__cpu_isa_t isa = gp__cpu_isa();
  return type == GP_F16 ? isa.f16c : isa.avx2;
#else
  (void)type;
  return false;
#endif
}

void gp__cpu_convert_f32(float *dst, const void *src, int type, int64_t n, bool vector) {
#if HAVE_X86_CONVERT
  if (vector && type == GP_F16) return convert_f16c(dst, src, n);
  if (vector && type == GP_BF16) return convert_bf16_avx2(dst, src, n);
#endif
  (void)vector;
  convert_scalar(dst, src, type, n);
}

/* ---- a parallel loop over the GEMM's helper threads ------------------------------------ */

/* fn(ctx, begin, end) over [0, items) in contiguous ranges, on up to GP_CPU_THREADS
 * threads (this one included); small loops stay on this thread, where a thread's start
 * would cost more than the work. */
typedef void (*range_fn)(void *ctx, int64_t begin, int64_t end);
typedef struct range_job {
  range_fn fn;
  void *ctx;
  int64_t begin, end;
} range_job_t;

static void *range_run(void *arg) {
  range_job_t *j = (range_job_t *)arg;
  j->fn(j->ctx, j->begin, j->end);
  return NULL;
}

#define PAR_MAX_THREADS 64
#define PAR_MIN_WORK ((int64_t)1 << 16) /* elements a helper thread is worth */

static void parallel_ranges(range_fn fn, void *ctx, int64_t items, int64_t work_per_item) {
  int64_t t = gp__cpu_exec_threads();
  if (t > PAR_MAX_THREADS) t = PAR_MAX_THREADS;
  if (t > items) t = items;
  const int64_t work = items * (work_per_item > 0 ? work_per_item : 1);
  if (t > work / PAR_MIN_WORK) t = work / PAR_MIN_WORK;
  if (t <= 1) {
    fn(ctx, 0, items);
    return;
  }
  pthread_t tid[PAR_MAX_THREADS];
  range_job_t job[PAR_MAX_THREADS];
  bool started[PAR_MAX_THREADS];
  for (int64_t i = 0; i < t; i++) {
    job[i] = (range_job_t){fn, ctx, items * i / t, items * (i + 1) / t};
    started[i] = i > 0 && pthread_create(&tid[i], NULL, range_run, &job[i]) == 0;
  }
  for (int64_t i = 0; i < t; i++)
    if (!started[i]) range_run(&job[i]); /* this thread's range, and any a thread did not take */
  for (int64_t i = 1; i < t; i++)
    if (started[i]) pthread_join(tid[i], NULL);
}

/* cblas_sbgemm where the OpenBLAS loaded has it: cblas.h declares it in every build, but
 * only a library built with BUILD_BFLOAT16 defines it (Debian's 0.3.21 does not), so it
 * is looked up at run time rather than linked. */
typedef void (*sbgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint,
                          blasint, float, const bfloat16 *, blasint, const bfloat16 *, blasint, float, float *,
                          blasint);
static pthread_once_t g_sbgemm_once = PTHREAD_ONCE_INIT;
static sbgemm_fn g_sbgemm;

static void sbgemm_lookup(void) {
  void *sym = dlsym(RTLD_DEFAULT, "cblas_sbgemm");
  memcpy(&g_sbgemm, &sym, sizeof sym);
}

bool gp__gemm_cpu_sbgemm_available(void) {
  pthread_once(&g_sbgemm_once, sbgemm_lookup);
  return g_sbgemm != NULL;
}

/* ---- the half path --------------------------------------------------------------------- */

/* Workspace of the half path per thread (A and B blocks in f32, the f32 product). */
#define HALF_WS_FLOATS ((int64_t)24 << 20) /* 96 MiB at most */

typedef struct workspace {
  float *p;
  size_t floats;
} workspace_t;

static pthread_key_t g_ws_key;
static pthread_once_t g_ws_once = PTHREAD_ONCE_INIT;
static bool g_ws_key_ok;

static void ws_free(void *v) {
  workspace_t *w = (workspace_t *)v;
  free(w->p);
  free(w);
}

static void ws_key_create(void) { g_ws_key_ok = pthread_key_create(&g_ws_key, ws_free) == 0; }

/* The calling thread's workspace of at least floats, grown (never shrunk) as needed. */
static float *ws_get(size_t floats) {
  pthread_once(&g_ws_once, ws_key_create);
  if (!g_ws_key_ok) return NULL;
  workspace_t *w = (workspace_t *)pthread_getspecific(g_ws_key);
  if (w == NULL) {
    w = (workspace_t *)calloc(1, sizeof *w);
    if (w == NULL) return NULL;
    if (pthread_setspecific(g_ws_key, w) != 0) {
      free(w);
      return NULL;
    }
  }
  if (w->floats < floats) {
    free(w->p);
    w->p = NULL, w->floats = 0;
    void *np = NULL;
    if (posix_memalign(&np, 64, floats * sizeof(float)) != 0) return NULL;
    w->p = (float *)np, w->floats = floats;
  }
  return w->p;
}

/* The f32 product is made and finished a panel of C at a time, so the rounding pass
 * reads it from cache, not from memory: at most g_panel_floats f32 (4 MiB: a share of
 * the L3 cache, a few times the L2), reused for every panel. 0: HALF_PANEL_FLOATS; tests
 * lower it to cut small products into many panels. */
#define HALF_PANEL_FLOATS ((int64_t)1 << 20)
#define HALF_PANEL_MIN 32 /* the shorter side of a panel at least, where C has it */
static _Atomic int64_t g_panel_floats = 0;

void gp__gemm_cpu_set_panel_floats(int64_t floats) {
  atomic_store_explicit(&g_panel_floats, floats > 0 && floats < HALF_PANEL_FLOATS ? floats : 0,
                        memory_order_relaxed);
}

static int64_t panel_floats(void) {
  const int64_t f = atomic_load_explicit(&g_panel_floats, memory_order_relaxed);
  return f > 0 ? f : HALF_PANEL_FLOATS;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Block sizes: the whole problem where the workspace allows (both operands converted
 * once), each extent within blasint; the largest extent halved until the blocks fit. */
static void half_blocks(const gp__gemm_params_t *p, bool convert, int64_t panel, int64_t *mb, int64_t *nb,
                        int64_t *kb) {
  const int64_t lim = blas_limit();
  *mb = min64(p->m, lim);
  *nb = min64(p->n, lim);
  *kb = min64(p->k, lim);
  for (;;) {
    const int64_t need = (convert ? *mb * *kb + *kb * *nb : 0) + panel;
    if (need <= HALF_WS_FLOATS || (*mb <= 64 && *nb <= 64 && *kb <= 64)) return;
    int64_t *big = *mb >= *nb && *mb >= *kb ? mb : *nb >= *kb ? nb : kb;
    *big = (*big + 1) / 2;
  }
}

/* A panel of a block of mb x nb within floats: OpenBLAS packs op(B) once per call and
 * op(A) once per call too (its column blocks are wider than these panels), so cutting
 * along n repacks op(A) per panel and along m op(B): the panel keeps the shorter side
 * whole (up to what leaves the longer at least HALF_PANEL_MIN) and cuts the longer. */
static void half_panel(int64_t mb, int64_t nb, int64_t floats, int64_t *pm, int64_t *pn) {
  if (mb * nb <= floats) {
    *pm = mb, *pn = nb;
    return;
  }
  const int64_t side_max = floats / HALF_PANEL_MIN > 0 ? floats / HALF_PANEL_MIN : 1;
  if (mb <= nb) {
    *pm = min64(mb, side_max);
    *pn = min64(nb, floats / *pm > 0 ? floats / *pm : 1);
  } else {
    *pn = min64(nb, side_max);
    *pm = min64(mb, floats / *pn > 0 ? floats / *pn : 1);
  }
}

/* One stored block of an operand converted to f32: cols columns of rows elements
 * (column-major, leading dimension ld) into dst (leading dimension rows). */
typedef struct convert_job {
  float *dst;
  const void *src;
  int type;
  int64_t rows, cols, ld;
  bool vector;
} convert_job_t;

/* Block (r0, q0) of rb x qb of op(X) as stored (rows of the stored matrix are op's rows
 * unless trans), to be converted into dst with leading dimension its stored rows. */
static convert_job_t convert_plan(float *dst, const void *x, int type, int64_t ld, int32_t trans, int64_t r0,
                                  int64_t q0, int64_t rb, int64_t qb, bool vector) {
  const int64_t srow0 = trans ? q0 : r0, scol0 = trans ? r0 : q0;
  const size_t es = gp_dtype_size((gp_dtype_t)type);
  return (convert_job_t){dst, (const char *)x + (size_t)(srow0 + scol0 * ld) * es, type, trans ? qb : rb,
                         trans ? rb : qb, ld, vector};
}

/* Both operands' blocks converted in one parallel loop (one set of helper threads per
 * pair) over CONVERT_SLICES slices, slice s being the same share of each operand's
 * columns: the threads' shares of the work are equal whatever the operands' shapes. */
#define CONVERT_SLICES 64
typedef struct convert_pair {
  convert_job_t j[2];
} convert_pair_t;

static void convert_cols(const convert_job_t *j, int64_t c0, int64_t c1) {
  const size_t es = gp_dtype_size((gp_dtype_t)j->type);
  for (int64_t c = c0; c < c1; c++)
    gp__cpu_convert_f32(j->dst + c * j->rows, (const char *)j->src + (size_t)(c * j->ld) * es, j->type,
                        j->rows, j->vector);
}

static void convert_pair_slices(void *ctx, int64_t s0, int64_t s1) {
  const convert_pair_t *pr = (const convert_pair_t *)ctx;
  for (int i = 0; i < 2; i++) {
    const convert_job_t *j = &pr->j[i];
    convert_cols(j, j->cols * s0 / CONVERT_SLICES, j->cols * s1 / CONVERT_SLICES);
  }
}

static void convert_both(const convert_job_t *a, const convert_job_t *b) {
  convert_pair_t pr = {{*a, *b}};
  const int64_t elems = a->cols * a->rows + b->cols * b->rows;
  parallel_ranges(convert_pair_slices, &pr, CONVERT_SLICES, elems / CONVERT_SLICES);
}

/* The finish of columns [c0, c1) of a panel of C. */
typedef struct finish_job {
  const gp__gemm_params_t *p;
  void *c;
  int64_t i0, j0, mb;
  const float *acc;
} finish_job_t;

static void finish_cols(void *ctx, int64_t c0, int64_t c1) {
  const finish_job_t *f = (const finish_job_t *)ctx;
  finish_tile(f->p, f->c, f->i0, f->j0 + c0, f->mb, c1 - c0, f->acc + c0 * f->mb, f->mb);
}

/* Offset of stored element (r, q) of op(X) (trans: X holds op(X)^T). */
static const void *op_at(const void *x, int type, int64_t ld, int32_t trans, int64_t r, int64_t q) {
  const int64_t off = trans ? q + r * ld : r + q * ld;
  return (const char *)x + (size_t)off * gp_dtype_size((gp_dtype_t)type);
}

/* A half product's state: the caller's parameters, the workspace's parts and sizes. */
typedef struct half_run {
  const gp__gemm_params_t *p;
  bool sbgemm, vec;
  int64_t mb, nb, kb, pm, pn;
  float *acc, *ap, *bp;
} half_run_t;

/* Panel [i0, i0 + mi) x [j0, j0 + nj) of batch entry (a, b, c): the k blocks accumulated
 * into the f32 panel, then finished. ap/bp hold the block's op(A) rows from bi0 and op(B)
 * columns from bj0 already converted (whole: one k block), or NULL to convert the
 * panel's part of each k block here. */
static void half_panel_run(const half_run_t *h, const void *a, const void *b, void *c, int64_t i0, int64_t j0,
                           int64_t mi, int64_t nj, int64_t bi0, int64_t bj0, int64_t lda_w, int64_t ldb_w,
                           bool whole) {
  const gp__gemm_params_t *p = h->p;
  const int type = p->ab_type;
  const CBLAS_TRANSPOSE ta = p->trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = p->trans_b ? CblasTrans : CblasNoTrans;
  for (int64_t p0 = 0; p0 < p->k; p0 += h->kb) {
    const int64_t kp = min64(p->k - p0, h->kb);
    const float beta = p0 == 0 ? 0.0f : 1.0f;
    if (h->sbgemm) {
      g_sbgemm(CblasColMajor, ta, tb, (blasint)mi, (blasint)nj, (blasint)kp, 1.0f,
               (const bfloat16 *)op_at(a, type, p->lda, p->trans_a, i0, p0), (blasint)p->lda,
               (const bfloat16 *)op_at(b, type, p->ldb, p->trans_b, p0, j0), (blasint)p->ldb, beta, h->acc,
               (blasint)mi);
      continue;
    }
    const float *pa = h->ap, *pb = h->bp;
    int64_t lda_f = lda_w, ldb_f = ldb_w;
    if (whole) { /* the panel's rows and columns within the converted block */
      pa += p->trans_a ? (i0 - bi0) * lda_f : i0 - bi0;
      pb += p->trans_b ? j0 - bj0 : (j0 - bj0) * ldb_f;
    } else {
      const convert_job_t ja = convert_plan(h->ap, a, type, p->lda, p->trans_a, i0, p0, mi, kp, h->vec);
      const convert_job_t jb = convert_plan(h->bp, b, type, p->ldb, p->trans_b, p0, j0, kp, nj, h->vec);
      convert_both(&ja, &jb);
      lda_f = ja.rows, ldb_f = jb.rows;
    }
    cblas_sgemm(CblasColMajor, ta, tb, (blasint)mi, (blasint)nj, (blasint)kp, 1.0f, pa, (blasint)lda_f, pb,
                (blasint)ldb_f, beta, h->acc, (blasint)mi);
  }
  /* On this thread alone: OpenBLAS's threads still spin for a while after the call
   * returns, and helper threads started now would share the cores with them (at 2
   * threads 10% slower); the panel is in cache, so its rounding is a small part of it. */
  finish_job_t f = {p, c, i0, j0, mi, h->acc};
  finish_cols(&f, 0, nj);
}

/* Block [i0, i0 + mi) x [j0, j0 + nj): its operands converted once where one k block
 * covers k, then its panels. */
static void half_block_run(const half_run_t *h, const void *a, const void *b, void *c, int64_t i0, int64_t j0,
                           int64_t mi, int64_t nj) {
  const gp__gemm_params_t *p = h->p;
  const bool whole = !h->sbgemm && h->kb == p->k;
  int64_t lda_w = 0, ldb_w = 0;
  if (whole) {
    const convert_job_t ja = convert_plan(h->ap, a, p->ab_type, p->lda, p->trans_a, i0, 0, mi, p->k, h->vec);
    const convert_job_t jb = convert_plan(h->bp, b, p->ab_type, p->ldb, p->trans_b, 0, j0, p->k, nj, h->vec);
    convert_both(&ja, &jb);
    lda_w = ja.rows, ldb_w = jb.rows;
  }
  for (int64_t pj = j0; pj < j0 + nj; pj += h->pn)
    for (int64_t pi = i0; pi < i0 + mi; pi += h->pm)
      half_panel_run(h, a, b, c, pi, pj, min64(i0 + mi - pi, h->pm), min64(j0 + nj - pj, h->pn), i0, j0, lda_w,
                     ldb_w, whole);
}

/* The blocks and panels of a half product: one place for run_half and the tests. */
static void half_plan(const gp__gemm_params_t *p, bool sbgemm, half_run_t *h) {
  const int64_t panel = panel_floats();
  half_blocks(p, !sbgemm, panel, &h->mb, &h->nb, &h->kb);
  half_panel(h->mb, h->nb, panel, &h->pm, &h->pn);
}

void gp__gemm_cpu_half_plan(const gp__gemm_params_t *p, int64_t plan[5]) {
  half_run_t h = {.p = p};
  half_plan(p, false, &h);
  plan[0] = h.mb, plan[1] = h.nb, plan[2] = h.kb, plan[3] = h.pm, plan[4] = h.pn;
}

static gp_status_t run_half(const gp__gemm_params_t *p, bool sbgemm) {
  half_run_t h = {.p = p, .sbgemm = sbgemm, .vec = gp__cpu_convert_vector(p->ab_type)};
  half_plan(p, sbgemm, &h);
  const size_t acc_floats = (size_t)(h.pm * h.pn), a_floats = sbgemm ? 0 : (size_t)(h.mb * h.kb);
  const size_t floats = acc_floats + a_floats + (sbgemm ? 0 : (size_t)(h.kb * h.nb));
  float *ws = ws_get(floats);
  if (ws == NULL)
    return GP__ERR(GP_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes of GEMM workspace", floats * sizeof(float));
  h.acc = ws, h.ap = ws + acc_floats, h.bp = h.ap + a_floats;
  for (int64_t z = 0; z < p->batch; z++) {
    const void *a = gemm_offset(p->a, p->ab_type, z * p->stride_a);
    const void *b = gemm_offset(p->b, p->ab_type, z * p->stride_b);
    void *c = (void *)gemm_offset(p->c, p->c_type, z * p->stride_c);
    for (int64_t j0 = 0; j0 < p->n; j0 += h.nb)
      for (int64_t i0 = 0; i0 < p->m; i0 += h.mb)
        half_block_run(&h, a, b, c, i0, j0, min64(p->m - i0, h.mb), min64(p->n - j0, h.nb));
  }
  return GP_SUCCESS;
}

/* ---- the packed half path: conversion while packing, the 6 x 16 micro-kernel ---------
 *
 * op(A) and op(B) are converted to f32 as they are packed into the micro-panels of
 * attention_tile_cpu.c's register-blocked kernel, so no f32 copy of either operand is
 * made apart from the packs. The kernel computes a row-major block, so it is handed the
 * transposed problem: its rows are C's columns (op(B) packed in panels of 6 columns),
 * its columns C's rows (op(A) packed in panels of 16 rows), and its row-major f32 output
 * with leading dimension ld is C's column-major tile.
 *  - op(A) is packed once per call for a run of up to PH_A_FLOATS / k rows (the whole of
 *    m at model shapes), all of k, k block after k block (the panels of one k block
 *    contiguous), split over the threads;
 *  - the work items are blocks of PH_NC rows x PH_MC columns of C: per item and k block
 *    op(B)'s PH_MC columns are packed (in L2, reused by every 16-row panel of op(A)),
 *    the kernel accumulates into the item's f32 tile (in L2), and after the last k block
 *    the tile is finished by finish_tile (alpha, beta * C, bias, activation, rounding:
 *    the bits of every other path from the same accumulators);
 *  - k blocks are at most PH_KC, balanced: a 16-row panel of op(A) (16 kc floats, 24 KiB
 *    at 384, of the 32 KiB L1) stays in L1 while op(B)'s panels pass; 384 (one k block
 *    at the models' k) measured 3-5% faster than 256 on 4096 x 1536 x 384.
 * The threads' workspaces are parts of the caller's (one allocation, reused). */
#define PH_KC 384
#define PH_MC 96  /* columns of C per item: op(B)'s pack 144 KiB at kc 384, in L2 */
#define PH_NC 512 /* rows of C per item: the f32 tile 96 x 528 floats, 198 KiB */
#define PH_LD (PH_NC + 16) /* the tile's leading dimension, off a multiple of 4 KiB */
#define PH_A_FLOATS ((int64_t)4 << 20)

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* Where the packed path beat conversion + sgemm (docs/PERFORMANCE.md, "f16/bf16 GEMM on
 * the CPU"): one k block (k <= PH_KC, so each f32 tile is finished once) and n >= m, the
 * op(A) rows packed once per call being the fewer; there, the conversion pass it saves
 * is a large share (4096 x 1536 x 384 row-major: 5-15% ahead; 4096 x 64 x 384: 1.7x).
 * With more k blocks or m > n (512 x 512 x 4096, 1024^3, 64 x 4096 x 384 row-major)
 * conversion + OpenBLAS came out level to 15% ahead at one thread. In the canonical column-major
 * problem: a row-major m x n C is n x m here. */
bool gp__gemm_cpu_packed_half_prefers(int64_t m, int64_t n, int64_t k) { return k <= PH_KC && n >= m; }

/* GP_CPU_CONVERT=scalar turns it off with the other vector conversions, so the portable
 * route (a processor without AVX2) is tested on any machine. */
bool gp__gemm_cpu_packed_half_available(void) {
#if HAVE_X86_CONVERT
  if (gp__cpu_convert() == GP__CONVERT_SCALAR) return false;
  const gp__cpu_isa_t isa = gp__cpu_isa();
  return isa.avx2 && isa.fma && isa.f16c;
#else
  return false;
#endif
}

#if HAVE_X86_CONVERT
#include "attention_cpu.h"

typedef struct ph_run {
  const gp__gemm_params_t *p;
  const void *a, *b;
  void *c;
  int64_t r0, rows; /* the run of rows of C whose op(A) is packed */
  int64_t kc, nkb;  /* k block and their count */
  float *ap;        /* op(A) packed: k block after k block, panels of 16 rows */
  float *ws;        /* the threads' parts: PH_WS_FLOATS each */
  int64_t items, items_m; /* items, and items along m */
  int64_t threads;
  _Atomic int64_t next;   /* the next item not taken */
} ph_run_t;

/* op(B)'s pack (and 8 floats of slack: ph_pack), then the f32 tile */
#define PH_WS_FLOATS ((int64_t)PH_MC * PH_KC + 8 + (int64_t)PH_MC * PH_LD)

/* n (f16 or bf16) elements at x + off as f32 into dst: 8 at a time, the tail one by one. */
__attribute__((target("avx2,f16c"))) static inline void ph_load(float *dst, const void *x, int type, int64_t off,
                                                                  int64_t n) {
  const uint16_t *h = (const uint16_t *)x + off;
  int64_t i = 0;
  if (type == GP_BF16) {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_si256((__m256i *)(dst + i),
                          _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(h + i))), 16));
    for (; i < n; i++) {
      const uint32_t u = (uint32_t)h[i] << 16;
      memcpy(&dst[i], &u, 4);
    }
  } else {
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
    for (; i < n; i++) dst[i] = _cvtsh_ss(h[i]);
  }
}

/* Eight f16 or bf16 elements at x + off as f32. */
__attribute__((target("avx2,f16c"), always_inline)) static inline __m256 ph_load8(const void *x, int type, int64_t off) {
  const __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)x + off));
  if (type == GP_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  return _mm256_cvtph_ps(h);
}

/* r[i][j] = r[j][i] for an 8 x 8 block of floats. */
__attribute__((target("avx2"), always_inline)) static inline void ph_transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; i++) {
    u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
  }
  for (int i = 0; i < 4; i++) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

/* Panel of w (6 or 16) lanes: dst[q * w + l] = X(i0 + l, q0 + q) for l < nl, 0 for
 * nl <= l < w, q < kb, where X(l, q) is x[l * sl + q * sq] (one of sl, sq is 1). */
__attribute__((target("avx2,f16c"))) static void ph_pack(float *dst, int w, const void *x, int type, int64_t sl,
                                                          int64_t sq, int64_t i0, int64_t nl, int64_t q0, int64_t kb) {
  if (sl == 1) { /* the lanes contiguous: each k step converted in place */
    for (int64_t q = 0; q < kb; q++) {
      float *d = dst + q * w;
      ph_load(d, x, type, i0 + (q0 + q) * sq, nl);
      for (int64_t l = nl; l < w; l++) d[l] = 0.0f;
    }
    return;
  }
  /* k contiguous: eight k steps of up to eight lanes converted, transposed in
   * registers, and stored a k step (a row of the panel) at a time. With w == 6 a row's
   * store of eight floats runs two into the next row, which its own store overwrites
   * next (the last row's two land in the next panel, packed after, or the slack). */
  int64_t q = 0;
  for (; q + 8 <= kb; q += 8)
    for (int l0 = 0; l0 < w; l0 += 8) {
      __m256 r[8];
      for (int l = 0; l < 8; l++)
        r[l] = l0 + l < nl ? ph_load8(x, type, (i0 + l0 + l) * sl + q0 + q) : _mm256_setzero_ps();
      ph_transpose8(r);
      for (int e = 0; e < 8; e++) _mm256_storeu_ps(dst + (q + e) * w + l0, r[e]);
    }
  for (; q < kb; q++) /* the last k steps one element at a time */
    for (int64_t l = 0; l < w; l++) {
      float v = 0.0f;
      if (l < nl) ph_load(&v, x, type, (i0 + l) * sl + q0 + q, 1);
      dst[q * w + l] = v;
    }
}

static int64_t ph_kb(const ph_run_t *r, int64_t kblk) { return min64(r->p->k - kblk * r->kc, r->kc); }

/* op(A)'s 16-row panels [t0, t1) of the run, every k block. */
static void ph_pack_a(void *ctx, int64_t t0, int64_t t1) {
  const ph_run_t *r = (const ph_run_t *)ctx;
  const gp__gemm_params_t *p = r->p;
  const int64_t sl = p->trans_a ? p->lda : 1, sq = p->trans_a ? 1 : p->lda;
  const int64_t np = round_up(r->rows, 16) / 16;
  for (int64_t kblk = 0; kblk < r->nkb; kblk++) {
    const int64_t kb = ph_kb(r, kblk);
    float *base = r->ap + kblk * r->kc * np * 16;
    for (int64_t t = t0; t < t1; t++)
      ph_pack(base + t * 16 * kb, 16, r->a, p->ab_type, sl, sq, r->r0 + t * 16, min64(r->rows - t * 16, 16),
              kblk * r->kc, kb);
  }
}

/* Items taken one at a time until none is left (items along m first, so consecutive
 * ones share op(B)'s columns): a thread that loses its core for a while (OpenBLAS's
 * threads still spinning after a call, another process) leaves its share to the others
 * instead of holding the call up, as fixed shares did. */
static void ph_items(ph_run_t *r, float *ws) {
  const gp__gemm_params_t *p = r->p;
  const int64_t sl = p->trans_b ? 1 : p->ldb, sq = p->trans_b ? p->ldb : 1;
  const int64_t np_all = round_up(r->rows, 16) / 16;
  float *bp = ws, *acc = ws + (int64_t)PH_MC * PH_KC + 8;
  for (;;) {
    const int64_t it = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
    if (it >= r->items) break;
    const int64_t im = it % r->items_m, in = it / r->items_m;
    const int64_t rr = im * PH_NC, mb = min64(r->rows - rr, PH_NC);
    const int64_t j0 = in * PH_MC, nb = min64(p->n - j0, PH_MC);
    const int64_t mp = round_up(nb, 6) / 6, np = round_up(mb, 16) / 16;
    for (int64_t kblk = 0; kblk < r->nkb; kblk++) {
      const int64_t kb = ph_kb(r, kblk);
      for (int64_t u = 0; u < mp; u++)
        ph_pack(bp + u * 6 * kb, 6, r->b, p->ab_type, sl, sq, j0 + u * 6, min64(nb - u * 6, 6), kblk * r->kc, kb);
      const float *apk = r->ap + kblk * r->kc * np_all * 16 + (rr / 16) * 16 * kb;
      gp__cpu_tile_gemm_packed(mp, np, kb, bp, apk, acc, PH_LD, kblk > 0);
    }
    finish_tile(p, r->c, r->r0 + rr, j0, mb, nb, acc, PH_LD);
  }
}

static void ph_slots(void *ctx, int64_t s0, int64_t s1) {
  ph_run_t *r = (ph_run_t *)ctx;
  for (int64_t s = s0; s < s1; s++) ph_items(r, r->ws + s * PH_WS_FLOATS);
}

static gp_status_t run_packed_half(const gp__gemm_params_t *p) {
  const int64_t nkb = (p->k + PH_KC - 1) / PH_KC, kc = round_up((p->k + nkb - 1) / nkb, 8);
  int64_t rows = round_up(PH_A_FLOATS / p->k, PH_NC);
  if (rows > round_up(p->m, 16)) rows = round_up(p->m, 16);
  if (rows < 16) rows = 16;
  int64_t threads = gp__cpu_exec_threads();
  if (threads > PAR_MAX_THREADS) threads = PAR_MAX_THREADS;
  if (threads < 1) threads = 1;
  const size_t floats = (size_t)(rows * p->k + threads * PH_WS_FLOATS);
  float *ws = ws_get(floats);
  if (ws == NULL)
    return GP__ERR(GP_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes of GEMM workspace", floats * sizeof(float));
  ph_run_t r = {.p = p, .kc = kc, .nkb = nkb, .ap = ws, .ws = ws + rows * p->k};
  for (int64_t z = 0; z < p->batch; z++) {
    r.a = gemm_offset(p->a, p->ab_type, z * p->stride_a);
    r.b = gemm_offset(p->b, p->ab_type, z * p->stride_b);
    r.c = (void *)gemm_offset(p->c, p->c_type, z * p->stride_c);
    for (r.r0 = 0; r.r0 < p->m; r.r0 += rows) {
      r.rows = min64(p->m - r.r0, rows);
      parallel_ranges(ph_pack_a, &r, round_up(r.rows, 16) / 16, 16 * p->k);
      r.items_m = (r.rows + PH_NC - 1) / PH_NC;
      r.items = r.items_m * ((p->n + PH_MC - 1) / PH_MC);
      /* one slot per thread at most, none with fewer than an item */
      r.threads = threads < r.items ? threads : r.items;
      atomic_store_explicit(&r.next, 0, memory_order_relaxed);
      parallel_ranges(ph_slots, &r, r.threads, (PH_NC * PH_MC * p->k) >> 4);
    }
  }
  return GP_SUCCESS;
}
#else
static gp_status_t run_packed_half(const gp__gemm_params_t *p) { return run_half(p, false); }
#endif

/* ---- whether cblas_sbgemm beats conversion + cblas_sgemm here --------------------------- */


/* Measured once per process, the first time a bf16 product asks, at a model-sized block
 * (512 x 512 x 384: the MiniLM projections' inner size), best of three each. */
static pthread_once_t g_sb_once = PTHREAD_ONCE_INIT;
static bool g_sb_faster;
static double g_sb_ms, g_conv_ms;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void measure_sbgemm(void) {
  enum { M = 512, N = 512, K = 384 };
  if (!gp__gemm_cpu_sbgemm_available()) {
    GP__INFO(GP__SUB_GEMM, "bf16 GEMM on this machine: the OpenBLAS loaded has no cblas_sbgemm: conversion + sgemm");
    return;
  }
  gp_bf16_t *a = (gp_bf16_t *)malloc(sizeof(gp_bf16_t) * M * K), *b = (gp_bf16_t *)malloc(sizeof(gp_bf16_t) * K * N);
  float *c = (float *)malloc(sizeof(float) * M * N), *fa = (float *)malloc(sizeof(float) * M * K);
  float *fb = (float *)malloc(sizeof(float) * K * N);
  if (a && b && c && fa && fb) {
    for (int i = 0; i < M * K; i++) a[i] = gp_bf16_from_f32(0.01f * (float)(i % 97 - 48));
    for (int i = 0; i < K * N; i++) b[i] = gp_bf16_from_f32(0.01f * (float)(i % 89 - 44));
    const bool vec = gp__cpu_convert_vector(GP_BF16);
    double best_sb = 1e30, best_cv = 1e30;
    for (int r = 0; r < 4; r++) { /* the first of each warms up */
      double t0 = now_ms();
      g_sbgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, (const bfloat16 *)a, M,
                   (const bfloat16 *)b, K, 0.0f, c, M);
      double t1 = now_ms();
      gp__cpu_convert_f32(fa, a, GP_BF16, (int64_t)M * K, vec);
      gp__cpu_convert_f32(fb, b, GP_BF16, (int64_t)K * N, vec);
      cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, fa, M, fb, K, 0.0f, c, M);
      double t2 = now_ms();
      if (r > 0 && t1 - t0 < best_sb) best_sb = t1 - t0;
      if (r > 0 && t2 - t1 < best_cv) best_cv = t2 - t1;
    }
    g_sb_ms = best_sb, g_conv_ms = best_cv;
    g_sb_faster = best_sb < best_cv;
    GP__INFO(GP__SUB_GEMM, "bf16 GEMM on this machine: cblas_sbgemm %.3f ms, conversion + cblas_sgemm %.3f ms "
             "(512x512x384): %s", best_sb, best_cv, g_sb_faster ? "sbgemm" : "conversion + sgemm");
  }
  free(a), free(b), free(c), free(fa), free(fb);
}

bool gp__gemm_cpu_sbgemm_faster(void) {
  pthread_once(&g_sb_once, measure_sbgemm);
  return g_sb_faster;
}

void gp__gemm_cpu_sbgemm_times(double *sbgemm_ms, double *convert_ms) {
  pthread_once(&g_sb_once, measure_sbgemm);
  *sbgemm_ms = g_sb_ms, *convert_ms = g_conv_ms;
}

/* ---- enqueue --------------------------------------------------------------------- */

typedef struct gemm_job {
  gp__gemm_params_t p;
  gp__gemm_cpu_path_t path;
} gemm_job_t;

static gp_status_t gemm_job_run(void *user) {
  const gemm_job_t *job = (const gemm_job_t *)user;
  const gp__gemm_params_t *p = &job->p;
  if (p->k == 0) return run_packed(p);
  switch (job->path) {
    case GP__GEMM_CPU_HOST: return direct_applies(p) ? run_direct(p) : run_packed(p);
    case GP__GEMM_CPU_CONVERT: return run_half(p, false);
    case GP__GEMM_CPU_SBGEMM: return run_half(p, true);
    case GP__GEMM_CPU_HALF: return run_packed_half(p);
    case GP__GEMM_CPU_PACKED: break;
  }
  return run_packed(p);
}

gp_status_t gp__gemm_cpu_enqueue(gp_stream_t stream, const gp__gemm_params_t *p, gp__gemm_cpu_path_t path) {
  gemm_job_t *job = (gemm_job_t *)malloc(sizeof(*job));
  if (job == NULL) return GP__ERR(GP_ERROR_OUT_OF_MEMORY, "cannot allocate a GEMM job");
  job->p = *p;
  job->path = path;
  return gp__be_enqueue_host_work(stream, gemm_job_run, job, true);
}
