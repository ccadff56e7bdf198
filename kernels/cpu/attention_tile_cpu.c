/*
 * attention_tile_cpu.c - the tile operations of the CPU backend's attention
 * (attention_cpu.h): a register-blocked GEMM for the products of f32 tiles and the
 * row operations of the online softmax, each in two builds chosen per call: AVX2 + FMA
 * (x86-64 processors that have both, compiled with target attributes so the rest of the
 * library keeps the baseline ISA) and portable C, which the compiler vectorises for
 * the baseline. GP_CPU_ATTENTION_SIMD (src/dispatch.c) picks the portable build on a
 * machine that has AVX2, so both are tested.
 *
 * The GEMM is the NN form C[m][n] (+)= A[m][k] B[k][n] on row-major operands with any
 * leading dimensions, or the TN form with A stored transposed (the backward's P^T dO and
 * dS^T Q, whose A is read down its columns in place of a transposed copy); K is
 * transposed once per tile for the NN form of Q K^T. The AVX2 build keeps a 6 x 16
 * block of C in twelve registers while k advances: per step two loads of B and six
 * broadcasts of A feed twelve FMAs.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention_cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_X86 1
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) static inline
#else
#define HAVE_X86 0
#endif

/* ---- portable builds ----------------------------------------------------------------- */

/* A's element (i, p) is a[i * sai + p * sap]: (lda, 1) for A, (1, lda) for A^T stored. */
static void gemm_c(int64_t m, int64_t n, int64_t k, const float *restrict a, int64_t sai, int64_t sap,
                   const float *restrict b, int64_t ldb, float *restrict c, int64_t ldc, bool acc) {
  for (int64_t i = 0; i < m; i++) {
    float *restrict ci = c + i * ldc;
    if (!acc) memset(ci, 0, (size_t)n * sizeof(float));
    for (int64_t p = 0; p < k; p++) {
      const float aip = a[i * sai + p * sap], *restrict bp = b + p * ldb;
      for (int64_t j = 0; j < n; j++) ci[j] += aip * bp[j];
    }
  }
}

static float max_scaled_c(const float *s, int64_t n, float scale) {
  float mx = -INFINITY;
  for (int64_t c = 0; c < n; c++) {
    const float x = s[c] * scale;
    mx = x > mx ? x : mx;
  }
  return mx;
}

static float exp2_sum_c(float *s, int64_t n, float scale, float sub) {
  float sum = 0.0f;
  for (int64_t c = 0; c < n; c++) {
    s[c] = exp2f(s[c] * scale - sub); /* no fmaf: the baseline ISA has no FMA (a libm call) */
    sum += s[c];
  }
  return sum;
}

static void ds_row_c(float *restrict ds, const float *restrict p, int64_t n, float d) {
  for (int64_t c = 0; c < n; c++) ds[c] = p[c] * (ds[c] - d);
}

static void transpose_c(int64_t rows, int64_t cols, const float *restrict src, int64_t lds,
                        float *restrict dst, int64_t ldd) {
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) dst[c * ldd + r] = src[r * lds + c];
}

/* ---- AVX2 + FMA ------------------------------------------------------------------------- */
#if HAVE_X86

/* C[0..MR)[0..8 NV) (+)= A[0..MR)[0..k) B[0..k)[0..8 NV), A's element (i, p) at
 * a[i * sai + p * sap]: MR and NV are constants at every call, so the loops unroll and the
 * accumulators stay in registers. */
AVX2_INLINE void block(int MR, int NV, int64_t k, const float *a, int64_t sai, int64_t sap, const float *b,
                       int64_t ldb, float *c, int64_t ldc, bool acc) {
  __m256 r[6][2];
#pragma GCC unroll 6
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 2
    for (int j = 0; j < NV; j++) r[i][j] = acc ? _mm256_loadu_ps(c + i * ldc + 8 * j) : _mm256_setzero_ps();
  /* unrolled by four: the packed half GEMM (4096 x 1536 x 384 bf16) measured 5-10% ahead
   * of the plain loop (docs/PERFORMANCE.md) */
#pragma GCC unroll 4
  for (int64_t p = 0; p < k; p++) {
    __m256 bv[2];
#pragma GCC unroll 2
    for (int j = 0; j < NV; j++) bv[j] = _mm256_loadu_ps(b + p * ldb + 8 * j);
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
      const __m256 av = _mm256_broadcast_ss(a + i * sai + p * sap);
#pragma GCC unroll 2
      for (int j = 0; j < NV; j++) r[i][j] = _mm256_fmadd_ps(av, bv[j], r[i][j]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 2
    for (int j = 0; j < NV; j++) _mm256_storeu_ps(c + i * ldc + 8 * j, r[i][j]);
}

#define BLOCK_CASE(MR, NV) \
  case MR * 2 + NV - 1: block(MR, NV, k, a, sai, sap, b, ldb, c, ldc, acc); break

/* The block of mr (1..6) rows and nv (1..2) vectors of eight columns. */
static AVX2 void block_any(int mr, int nv, int64_t k, const float *a, int64_t sai, int64_t sap, const float *b,
                           int64_t ldb, float *c, int64_t ldc, bool acc) {
  switch (mr * 2 + nv - 1) {
    BLOCK_CASE(1, 1); BLOCK_CASE(1, 2); BLOCK_CASE(2, 1); BLOCK_CASE(2, 2);
    BLOCK_CASE(3, 1); BLOCK_CASE(3, 2); BLOCK_CASE(4, 1); BLOCK_CASE(4, 2);
    BLOCK_CASE(5, 1); BLOCK_CASE(5, 2); BLOCK_CASE(6, 1); BLOCK_CASE(6, 2);
    default: break;
  }
}
#undef BLOCK_CASE

static AVX2 void gemm_avx2(int64_t m, int64_t n, int64_t k, const float *a, int64_t sai, int64_t sap,
                           const float *b, int64_t ldb, float *c, int64_t ldc, bool acc) {
  const int64_t n8 = n & ~(int64_t)7;
  for (int64_t j = 0; j < n8; j += 16) {
    const int nv = n8 - j >= 16 ? 2 : 1;
    for (int64_t i = 0; i < m; i += 6) {
      const int64_t mr = m - i < 6 ? m - i : 6;
      if (mr == 6 && nv == 2)
        block(6, 2, k, a + i * sai, sai, sap, b + j, ldb, c + i * ldc + j, ldc, acc);
      else
        block_any((int)mr, nv, k, a + i * sai, sai, sap, b + j, ldb, c + i * ldc + j, ldc, acc);
    }
  }
  if (n8 < n) { /* the last columns (fewer than eight) */
    for (int64_t i = 0; i < m; i++) {
      float *ci = c + i * ldc + n8;
      for (int64_t j = 0; j < n - n8; j++) {
        float s = acc ? ci[j] : 0.0f;
        for (int64_t p = 0; p < k; p++) s += a[i * sai + p * sap] * b[p * ldb + n8 + j];
        ci[j] = s;
      }
    }
  }
}

/* The packed form of the same block, for the host GEMM's half path (gemm_cpu.c): A in
 * micro-panels of 6 rows (element (i, p) of panel u at a[u * 6 k + p * 6 + i]), B in
 * micro-panels of 16 columns (element (p, j) of panel t at b[t * 16 k + p * 16 + j]), C
 * (rows 6 mp, columns 16 np, leading dimension ldc) written, or added to when acc. The
 * packer pads the panels with zeros, so every block is a full 6 x 16 one. */
AVX2 void gp__cpu_tile_gemm_packed(int64_t mp, int64_t np, int64_t k, const float *a, const float *b, float *c,
                                   int64_t ldc, bool acc) {
  for (int64_t t = 0; t < np; t++) /* B's panel stays in L1 while A's panels pass */
    for (int64_t u = 0; u < mp; u++)
      block(6, 2, k, a + u * 6 * k, 1, 6, b + t * 16 * k, 16, c + u * 6 * ldc + t * 16, ldc, acc);
}

/* 2^u for eight lanes: u = n + f with n an integer and |f| <= 1/2, 2^f by a degree-5
 * polynomial (relative-error minimax on [-1/2, 1/2], fitted for this file: 9e-8 in exact
 * arithmetic, under 1.9e-7 (3 ulp) in float with its FMAs), 2^n added to the exponent
 * field as an integer. n comes from one addition: adding 1.5 * 2^23 rounds u to an
 * integer and leaves it in the low mantissa bits, which the shift moves to the exponent
 * field (a negative n wraps modulo 2^32, as the addition to y's bits needs). u is clamped
 * to [-125, 127], so every result is a normal float: 2^-125 (2.4e-38) stands for anything
 * smaller, -inf included, and 2^127 for anything larger. Base 2 and no multiplication by
 * 2^n: the softmax's exponentials are the forward's largest cost besides its GEMMs, and
 * this form needs six FMAs where exp(x) (a reduction by ln2 in two parts) needs ten. */
AVX2_INLINE __m256 exp2_8(__m256 u) {
  const __m256 magic = _mm256_set1_ps(12582912.0f); /* 1.5 * 2^23 */
  u = _mm256_min_ps(_mm256_max_ps(u, _mm256_set1_ps(-125.0f)), _mm256_set1_ps(127.0f));
  const __m256 t = _mm256_add_ps(u, magic);
  const __m256 f = _mm256_sub_ps(u, _mm256_sub_ps(t, magic));
  __m256 y = _mm256_set1_ps(1.3264726149e-3f);
  y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(9.6715129912e-3f));
  y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(5.5507335812e-2f));
  y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(2.4022242427e-1f));
  y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(6.9314700365e-1f));
  y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(t), 23);
  return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(y), e));
}

static AVX2 float hmax8(__m256 v) {
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

static AVX2 float hsum8(__m256 v) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

static AVX2 float max_scaled_avx2(const float *s, int64_t n, float scale) {
  const __m256 sc = _mm256_set1_ps(scale);
  __m256 mv = _mm256_set1_ps(-INFINITY);
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) mv = _mm256_max_ps(mv, _mm256_mul_ps(_mm256_loadu_ps(s + c), sc));
  float mx = hmax8(mv);
  for (; c < n; c++) {
    const float x = s[c] * scale;
    mx = x > mx ? x : mx;
  }
  return mx;
}

static AVX2 float exp2_sum_avx2(float *s, int64_t n, float scale, float sub) {
  const __m256 sc = _mm256_set1_ps(scale), m = _mm256_set1_ps(-sub);
  __m256 acc = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m256 y = exp2_8(_mm256_fmadd_ps(_mm256_loadu_ps(s + c), sc, m));
    _mm256_storeu_ps(s + c, y);
    acc = _mm256_add_ps(acc, y);
  }
  float sum = hsum8(acc);
  if (c < n) { /* the tail through one vector; only its n - c lanes are summed */
    float t[8] = {0};
    for (int64_t u = 0; c + u < n; u++) t[u] = fmaf(s[c + u], scale, -sub);
    _mm256_storeu_ps(t, exp2_8(_mm256_loadu_ps(t)));
    for (int64_t u = 0; c + u < n; u++) s[c + u] = t[u], sum += t[u];
  }
  return sum;
}
static AVX2 void ds_row_avx2(float *ds, const float *p, int64_t n, float d) {
  const __m256 dv = _mm256_set1_ps(d);
  int64_t c = 0;
  for (; c + 8 <= n; c += 8)
    _mm256_storeu_ps(ds + c, _mm256_mul_ps(_mm256_loadu_ps(p + c), _mm256_sub_ps(_mm256_loadu_ps(ds + c), dv)));
  ds_row_c(ds + c, p + c, n - c, d);
}

/* dst[c][r] = src[r][c] for an 8 x 8 block, in registers. */
AVX2_INLINE void transpose8(const float *src, int64_t lds, float *dst, int64_t ldd) {
  __m256 r[8], t[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + i * lds);
#pragma GCC unroll 4
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 2
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++) {
    _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

static AVX2 void transpose_avx2(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst,
                                int64_t ldd) {
  const int64_t r8 = rows & ~(int64_t)7, c8 = cols & ~(int64_t)7;
  for (int64_t r = 0; r < r8; r += 8)
    for (int64_t c = 0; c < c8; c += 8) transpose8(src + r * lds + c, lds, dst + c * ldd + r, ldd);
  if (c8 < cols) transpose_c(r8, cols - c8, src + c8, lds, dst + c8 * ldd, ldd);
  if (r8 < rows) transpose_c(rows - r8, cols, src + r8 * lds, lds, dst + r8, ldd);
}

static AVX2 void load_avx2(float *dst, const void *src, int64_t off, int dtype, int64_t n) {
  int64_t c = 0;
  if (dtype == GP_BF16) {
    const uint16_t *s = (const uint16_t *)src + off;
    for (; c + 8 <= n; c += 8) {
      const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(s + c)));
      _mm256_storeu_ps(dst + c, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
  } else if (dtype == GP_F16) {
    const uint16_t *s = (const uint16_t *)src + off;
    for (; c + 8 <= n; c += 8) _mm256_storeu_ps(dst + c, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + c))));
  }
  if (c < n) gp__cpu_attn_load_row(dst + c, 1, src, off + c, dtype, n - c);
}
/* f32 and bf16 eight at a time (bf16 rounded as gp_bf16_from_f32: to nearest even, a NaN
 * kept quiet); f16 and the tail by the portable loop. */
static AVX2 void store_avx2(void *dst, int64_t off, int dtype, const float *src, float mul, int64_t n) {
  const __m256 mv = _mm256_set1_ps(mul);
  int64_t c = 0;
  if (dtype == GP_F32) {
    float *d = (float *)dst + off;
    for (; c + 8 <= n; c += 8) _mm256_storeu_ps(d + c, _mm256_mul_ps(_mm256_loadu_ps(src + c), mv));
  } else if (dtype == GP_BF16) {
    uint16_t *d = (uint16_t *)dst + off;
    const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i half = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), quiet = _mm256_set1_epi32(0x40);
    for (; c + 8 <= n; c += 8) {
      const __m256i u = _mm256_castps_si256(_mm256_mul_ps(_mm256_loadu_ps(src + c), mv));
      const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
      const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
      const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(half, odd)), 16);
      const __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
      const __m256i b = _mm256_blendv_epi8(r, q, nan);
      /* 32-bit lanes to 16: the pack works within each 128-bit half, the permute joins them */
      const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(b, b), 0x08);
      _mm_storeu_si128((__m128i *)(d + c), _mm256_castsi256_si128(p));
    }
  }
  if (c < n) gp__cpu_attn_store_row(dst, off + c, dtype, src + c, mul, n - c);
}
#endif /* HAVE_X86 */

/* ---- the entry points ------------------------------------------------------------------ */

/* Both forms through one GEMM: A's element (i, p) at a[i * sai + p * sap]. */
static void gemm_any(bool simd, int64_t m, int64_t n, int64_t k, const float *a, int64_t sai, int64_t sap,
                     const float *b, int64_t ldb, float *c, int64_t ldc, bool acc) {
  if (m <= 0 || n <= 0) return;
#if HAVE_X86
  if (simd) {
    gemm_avx2(m, n, k, a, sai, sap, b, ldb, c, ldc, acc);
    return;
  }
#endif
  (void)simd;
  gemm_c(m, n, k, a, sai, sap, b, ldb, c, ldc, acc);
}

void gp__cpu_attn_gemm(bool simd, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                       const float *b, int64_t ldb, float *c, int64_t ldc, bool acc) {
  gemm_any(simd, m, n, k, a, lda, 1, b, ldb, c, ldc, acc);
}

void gp__cpu_attn_gemm_tn(bool simd, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                          const float *b, int64_t ldb, float *c, int64_t ldc, bool acc) {
  gemm_any(simd, m, n, k, a, 1, lda, b, ldb, c, ldc, acc);
}

void gp__cpu_attn_transpose(bool simd, int64_t rows, int64_t cols, const float *src, int64_t lds,
                            float *dst, int64_t ldd) {
#if HAVE_X86
  if (simd) {
    transpose_avx2(rows, cols, src, lds, dst, ldd);
    return;
  }
#endif
  (void)simd;
  transpose_c(rows, cols, src, lds, dst, ldd);
}

void gp__cpu_attn_load(bool simd, float *dst, const void *src, int64_t off, int dtype, int64_t n) {
  if (dtype == GP_F32) { /* the portable build copies too */
    memcpy(dst, (const float *)src + off, (size_t)n * sizeof(float));
    return;
  }
#if HAVE_X86
  if (simd) {
    load_avx2(dst, src, off, dtype, n);
    return;
  }
#endif
  (void)simd;
  gp__cpu_attn_load_row(dst, 1, src, off, dtype, n);
}

void gp__cpu_attn_store(bool simd, void *dst, int64_t off, int dtype, const float *src, float mul, int64_t n) {
#if HAVE_X86
  if (simd) {
    store_avx2(dst, off, dtype, src, mul, n);
    return;
  }
#endif
  (void)simd;
  gp__cpu_attn_store_row(dst, off, dtype, src, mul, n);
}

float gp__cpu_attn_max_scaled(bool simd, const float *s, int64_t n, float scale) {
#if HAVE_X86
  if (simd) return max_scaled_avx2(s, n, scale);
#endif
  (void)simd;
  return max_scaled_c(s, n, scale);
}

void gp__cpu_attn_ds_row(bool simd, float *ds, const float *p, int64_t n, float d) {
#if HAVE_X86
  if (simd) {
    ds_row_avx2(ds, p, n, d);
    return;
  }
#endif
  (void)simd;
  ds_row_c(ds, p, n, d);
}

float gp__cpu_attn_exp2_sum(bool simd, float *s, int64_t n, float scale, float sub) {
#if HAVE_X86
  if (simd) return exp2_sum_avx2(s, n, scale, sub);
#endif
  (void)simd;
  return exp2_sum_c(s, n, scale, sub);
}
