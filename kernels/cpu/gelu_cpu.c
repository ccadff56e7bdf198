/*
 * gelu_cpu.c - the erf-form GELU of the cpu backend's direct f32 GEMM path
 * (gemm_cpu.c, activate_cols): x = 0.5 v (1 + erf(v / sqrt(2))), v = x + bias, in place
 * over a column of C. Two builds chosen per call: AVX2 + FMA (compiled with target
 * attributes, so the rest of the library keeps the baseline ISA) where the processor has
 * both and GP_CPU_GELU_SIMD (src/dispatch.c) allows it, and the portable loop on libm's
 * erff, which is gemm_epilogue.h's own expression (the kernels' bits).
 *
 * The vector erf, for f32 z, a = |z|:
 *   a < 0.921875   erf(z) = z P(z^2), P of degree 6 (relative error 4e-10 in exact
 *                  arithmetic): no cancellation, so tiny and subnormal z keep their
 *                  relative accuracy.
 *   a >= 0.921875  erf(z) = sign(z) (1 - exp(-a^2) R(a)), R ~ erfc(a) exp(a^2) of degree
 *                  11 in a - 2.4375 (relative error 4e-8), a clamped to 3.93 where erfc
 *                  is below half an ulp of 1 (erf rounds to +-1 from a = 3.9187 on).
 *                  erfc <= 0.19 here, so its few-ulp relative error is at most about one
 *                  ulp of the result; the rounding of a^2 moves exp(-a^2) by at most
 *                  a^2 2^-24 relative, which erfc's size scales down likewise.
 *   exp(y), y in [-15.5, -0.84]: y = n ln2 + r (Cody-Waite, |r| <= ln2 / 2), e^r by a
 *                  degree-6 polynomial (relative error 2e-9), 2^n put in the exponent.
 * NaN takes the first branch (the comparisons are ordered) and stays NaN; +-inf give +-1.
 * The coefficients are least-squares fits on Chebyshev nodes refined towards minimax,
 * rounded to f32. test_gemm.c (test_gelu_vector) measures the error against the float64
 * erf over every exponent range, and the epilogue bound of the direct path includes it.
 */
#include <math.h>
#include <stdint.h>

#include "dispatch.h"
#include "gemm.h"
#include "kernels/common/gemm_epilogue.h"

#define SQRT1_2F 0.70710678118654752f

static void gelu_scalar(float *x, int64_t n, const float *bias_vec, float bias) {
  for (int64_t i = 0; i < n; i++) x[i] = gp__gemm_activate(GP_EPILOGUE_BIAS_GELU, x[i], bias_vec ? bias_vec[i] : bias);
}

static void erf_scalar(float *dst, const float *src, int64_t n) {
  for (int64_t i = 0; i < n; i++) dst[i] = erff(src[i]);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_X86_GELU 1
#define AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline
#define AVX2 __attribute__((target("avx2,fma")))

/* e^y for y in [-15.5, -0.84] (no overflow or subnormal to handle). */
AVX2_INLINE __m256 exp8(__m256 y) {
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(y, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-0.693359375f), y); /* ln2 high part: n ln2_hi is exact */
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.383682596e-03f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.374822326e-03f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.166822508e-02f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.666641980e-01f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.999999106e-01f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

AVX2_INLINE __m256 erf8(__m256 z) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 a = _mm256_andnot_ps(sign, z);
  const __m256 s = _mm256_mul_ps(z, z);
  __m256 p = _mm256_set1_ps(8.370092110e-05f);
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(-8.142702281e-04f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(5.201031920e-03f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(-2.685939893e-02f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(1.128369570e-01f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(-3.761263490e-01f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(1.128379226e+00f));
  const __m256 small = _mm256_mul_ps(z, p);
  const __m256 far = _mm256_cmp_ps(a, _mm256_set1_ps(0.921875f), _CMP_GE_OQ);
  if (_mm256_testz_ps(far, far)) return small; /* every lane in the first branch */
  const __m256 ac = _mm256_min_ps(a, _mm256_set1_ps(3.93f));
  const __m256 t = _mm256_sub_ps(ac, _mm256_set1_ps(2.4375f));
  __m256 q = _mm256_set1_ps(-5.003343517e-07f);
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(2.011408469e-06f));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-4.499963779e-06f));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(1.655818596e-05f));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-6.798499089e-05f));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(2.410035959e-04f));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-8.175549447e-04f));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(2.707886277e-03f));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-8.648065850e-03f));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(2.649820037e-02f));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-7.756083459e-02f));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(2.155524641e-01f));
  const __m256 erfc = _mm256_mul_ps(exp8(_mm256_xor_ps(_mm256_mul_ps(ac, ac), sign)), q);
  const __m256 big = _mm256_or_ps(_mm256_sub_ps(_mm256_set1_ps(1.0f), erfc), _mm256_and_ps(z, sign));
  return _mm256_blendv_ps(small, big, far);
}

/* The tail of n < 8 elements through a zero-padded vector, so every element takes the
 * same instructions. */
AVX2_INLINE __m256 load_tail(const float *p, int64_t n) {
  float buf[8] = {0};
  for (int64_t i = 0; i < n; i++) buf[i] = p[i];
  return _mm256_loadu_ps(buf);
}

AVX2_INLINE void store_tail(float *p, __m256 v, int64_t n) {
  float buf[8];
  _mm256_storeu_ps(buf, v);
  for (int64_t i = 0; i < n; i++) p[i] = buf[i];
}

AVX2_INLINE __m256 gelu8(__m256 x, __m256 bias) {
  const __m256 v = _mm256_add_ps(x, bias);
  const __m256 e = erf8(_mm256_mul_ps(v, _mm256_set1_ps(SQRT1_2F)));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

AVX2 static void gelu_avx2(float *x, int64_t n, const float *bias_vec, float bias) {
  const __m256 b = _mm256_set1_ps(bias);
  int64_t i = 0;
  if (bias_vec) {
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, gelu8(_mm256_loadu_ps(x + i), _mm256_loadu_ps(bias_vec + i)));
    if (i < n) store_tail(x + i, gelu8(load_tail(x + i, n - i), load_tail(bias_vec + i, n - i)), n - i);
    return;
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, gelu8(_mm256_loadu_ps(x + i), b));
  if (i < n) store_tail(x + i, gelu8(load_tail(x + i, n - i), b), n - i);
}

AVX2 static void erf_avx2(float *dst, const float *src, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, erf8(_mm256_loadu_ps(src + i)));
  if (i < n) store_tail(dst + i, erf8(load_tail(src + i, n - i)), n - i);
}
#endif

bool gp__cpu_gelu_vector(void) {
#if HAVE_X86_GELU
  return gp__cpu_gelu_simd();
#else
  return false;
#endif
}

void gp__cpu_gelu_bias_f32(float *x, int64_t n, const float *bias_vec, float bias, bool vector) {
#if HAVE_X86_GELU
  if (vector) return gelu_avx2(x, n, bias_vec, bias);
#endif
  (void)vector;
  gelu_scalar(x, n, bias_vec, bias);
}

void gp__cpu_erf_f32(float *dst, const float *src, int64_t n, bool vector) {
#if HAVE_X86_GELU
  if (vector) return erf_avx2(dst, src, n);
#endif
  (void)vector;
  erf_scalar(dst, src, n);
}
