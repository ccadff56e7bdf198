/*
 * comm_dtype.h - element conversions the collectives need beyond gpuport/types.h: the
 * OCP fp8 formats (E4M3: bias 7, no infinity, NaN S.1111.111, largest 448; E5M2:
 * bias 15, IEEE-like, largest 57344) to and from f32, and a widening load/store of the
 * floating types an f32 accumulator serves. Header-only, so the cpu engine and
 * libgpuport-mpi share one definition. Nothing here is public.
 *
 * f32 -> fp8 rounds to nearest even and saturates to the largest finite value (what
 * CUDA's __nv_cvt_float_to_fp8 does with __NV_SATFINITE, the conversion NCCL's fp8
 * reductions use); NaN stays NaN.
 */
#ifndef GP_COMM_DTYPE_H
#define GP_COMM_DTYPE_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <gpuport/types.h>

/* mbits mantissa bits, bias, largest finite value and its encoding. */
static inline uint8_t gp__fp8_encode(float f, int mbits, int bias, float maxval, uint8_t maxbits) {
  uint8_t sign = signbit(f) ? 0x80u : 0u;
  if (isnan(f)) return (uint8_t)(sign | 0x7fu);
  float a = fabsf(f);
  if (a >= maxval) return (uint8_t)(sign | maxbits);
  int e = 0;
  (void)frexpf(a, &e);
  int ex = e - 1; /* exponent of the leading bit */
  if (ex < 1 - bias) ex = 1 - bias; /* subnormal range: fixed spacing */
  float spacing = ldexpf(1.0f, ex - mbits);
  float q = nearbyintf(a / spacing) * spacing; /* exact scaling; ties to even */
  if (q == 0.0f) return sign;
  (void)frexpf(q, &e);
  int qe = e - 1;
  if (qe < 1 - bias) return (uint8_t)(sign | (uint8_t)(q / ldexpf(1.0f, 1 - bias - mbits)));
  unsigned mant = (unsigned)(q / ldexpf(1.0f, qe - mbits)) - (1u << mbits);
  return (uint8_t)(sign | (unsigned)(qe + bias) << mbits | mant);
}

static inline uint8_t gp__fp8_e4m3_from_f32(float f) { return gp__fp8_encode(f, 3, 7, 448.0f, 0x7eu); }
static inline uint8_t gp__fp8_e5m2_from_f32(float f) { return gp__fp8_encode(f, 2, 15, 57344.0f, 0x7bu); }

static inline float gp__f32_from_fp8_e4m3(uint8_t b) {
  unsigned e = (b >> 3) & 15u, m = b & 7u;
  float v;
  if (e == 15u && m == 7u) v = NAN;
  else if (e == 0u) v = ldexpf((float)m, -9);
  else v = ldexpf((float)(8u + m), (int)e - 10);
  return (b & 0x80u) ? -v : v;
}

static inline float gp__f32_from_fp8_e5m2(uint8_t b) {
  unsigned e = (b >> 2) & 31u, m = b & 3u;
  float v;
  if (e == 31u) v = m ? NAN : INFINITY;
  else if (e == 0u) v = ldexpf((float)m, -16);
  else v = ldexpf((float)(4u + m), (int)e - 17);
  return (b & 0x80u) ? -v : v;
}

/* Whether f32 is the accumulation type of dtype (f32 itself, f16, bf16, fp8). */
static inline bool gp__dtype_widens_to_f32(gp_dtype_t t) {
  return t == GP_F32 || t == GP_F16 || t == GP_BF16 || t == GP_FP8_E4M3 || t == GP_FP8_E5M2;
}

/* out[i] = (float)src[i] for n elements of a gp__dtype_widens_to_f32 type. */
static inline void gp__load_f32(float *out, const void *src, size_t n, gp_dtype_t t) {
  switch (t) {
    case GP_F32:
      for (size_t i = 0; i < n; i++) out[i] = ((const float *)src)[i];
      break;
    case GP_F16:
      for (size_t i = 0; i < n; i++) out[i] = gp_f32_from_f16(((const gp_f16_t *)src)[i]);
      break;
    case GP_BF16:
      for (size_t i = 0; i < n; i++) out[i] = gp_f32_from_bf16(((const gp_bf16_t *)src)[i]);
      break;
    case GP_FP8_E4M3:
      for (size_t i = 0; i < n; i++) out[i] = gp__f32_from_fp8_e4m3(((const uint8_t *)src)[i]);
      break;
    case GP_FP8_E5M2:
      for (size_t i = 0; i < n; i++) out[i] = gp__f32_from_fp8_e5m2(((const uint8_t *)src)[i]);
      break;
    default:
      break;
  }
}

/* dst[i] = src[i] rounded to t (round to nearest even). */
static inline void gp__store_f32(void *dst, const float *src, size_t n, gp_dtype_t t) {
  switch (t) {
    case GP_F32:
      for (size_t i = 0; i < n; i++) ((float *)dst)[i] = src[i];
      break;
    case GP_F16:
      for (size_t i = 0; i < n; i++) ((gp_f16_t *)dst)[i] = gp_f16_from_f32(src[i]);
      break;
    case GP_BF16:
      for (size_t i = 0; i < n; i++) ((gp_bf16_t *)dst)[i] = gp_bf16_from_f32(src[i]);
      break;
    case GP_FP8_E4M3:
      for (size_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = gp__fp8_e4m3_from_f32(src[i]);
      break;
    case GP_FP8_E5M2:
      for (size_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = gp__fp8_e5m2_from_f32(src[i]);
      break;
    default:
      break;
  }
}

/* (T)(1/n) as a float: NCCL's ncclAvg scale, 1/n rounded to the element type t. */
static inline float gp__avg_scale_f32(gp_dtype_t t, int n) {
  float s = (float)(1.0 / (double)n), r = s;
  gp__store_f32(&r, &s, 1, GP_F32);
  if (t != GP_F32) {
    unsigned char tmp[4];
    gp__store_f32(tmp, &s, 1, t);
    gp__load_f32(&r, tmp, 1, t);
  }
  return r;
}

#endif /* GP_COMM_DTYPE_H */
