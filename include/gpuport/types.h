/**
 * @file gpuport/types.h
 * @brief Element types, 16-bit float storage types and their conversions.
 * @ingroup types
 *
 * The conversions have one name on the host and in kernels, on every backend.
 * They round to nearest even and keep NaN (as quiet NaN) and infinities, as the
 * IEEE 754 convertFormat operation and CUDA's __float2half_rn / __float2bfloat16_rn.
 */
#ifndef GP_TYPES_H
#define GP_TYPES_H

#include <gpuport/export.h>
#ifndef GP__RTC
#include <stddef.h>
#include <stdint.h>
#endif

GP_EXTERN_C_BEGIN

/** @brief Element types. Values are stable once released. */
typedef enum gp_dtype {
  GP_F32 = 0,        /**< IEEE binary32 */
  GP_F64 = 1,        /**< IEEE binary64 */
  GP_F16 = 2,        /**< IEEE binary16, stored as ::gp_f16_t */
  GP_BF16 = 3,       /**< bfloat16 (8-bit exponent, 7-bit mantissa), stored as ::gp_bf16_t */
  GP_I8 = 4,         /**< int8_t */
  GP_U8 = 5,         /**< uint8_t */
  GP_I32 = 6,        /**< int32_t */
  GP_U32 = 7,        /**< uint32_t */
  GP_I64 = 8,        /**< int64_t */
  GP_U64 = 9,        /**< uint64_t */
  GP_FP8_E4M3 = 10,  /**< OCP fp8 E4M3 (where supported) */
  GP_FP8_E5M2 = 11,  /**< OCP fp8 E5M2 (where supported) */
  GP_DTYPE_COUNT = 12 /**< number of element types (not a type) */
} gp_dtype_t;

#ifndef GP__RTC /* host functions: not under NVRTC / hipRTC */
/**
 * @brief Size of one element of @p dtype in bytes.
 * @return the size in bytes, or 0 when @p dtype is not a ::gp_dtype_t value.
 */
GP_API size_t gp_dtype_size(gp_dtype_t dtype);

/**
 * @brief Short name of @p dtype: "f32", "f64", "f16", "bf16", "i8", ...
 * @return a static string; "invalid" for values outside ::gp_dtype_t.
 */
GP_API const char *gp_dtype_name(gp_dtype_t dtype);
#endif

/** @brief Storage type of an IEEE binary16 value (its 16 bits). */
typedef struct gp_f16 {
  uint16_t bits; /**< sign, 5-bit exponent, 10-bit mantissa */
} gp_f16_t;

/** @brief Storage type of a bfloat16 value (the upper 16 bits of a binary32). */
typedef struct gp_bf16 {
  uint16_t bits; /**< sign, 8-bit exponent, 7-bit mantissa */
} gp_bf16_t;

/** @cond GP_INTERNAL */
typedef union gp__f32_bits {
  float f;
  uint32_t u;
} gp__f32_bits_t;
/** @endcond */

/**
 * @brief binary32 to binary16, round to nearest even; overflow gives infinity,
 *        NaN stays NaN (quiet), subnormal results are produced exactly.
 * @param[in] f the value.
 * @return the nearest binary16 value.
 */
static inline GP_HOST_DEVICE gp_f16_t gp_f16_from_f32(float f) {
  gp__f32_bits_t v;
  v.f = f;
  uint32_t sign = (v.u >> 16) & 0x8000u, ax = v.u & 0x7fffffffu;
  gp_f16_t h;
  if (ax >= 0x7f800000u) { /* inf or NaN */
    h.bits = (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
  } else if (ax >= 0x477ff000u) { /* >= 65520 rounds to infinity */
    h.bits = (uint16_t)(sign | 0x7c00u);
  } else if (ax >= 0x38800000u) { /* normal binary16 result */
    uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
    h.bits = (uint16_t)(sign | ((r - (112u << 23)) >> 13));
  } else if (ax > 0x33000000u) { /* subnormal binary16 result */
    uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, shift = 126u - e;
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    h.bits = (uint16_t)(sign | q);
  } else { /* |f| <= 2^-25 rounds to (signed) zero */
    h.bits = (uint16_t)sign;
  }
  return h;
}

/**
 * @brief binary16 to binary32 (exact).
 * @param[in] h the value.
 * @return the same value as binary32.
 */
static inline GP_HOST_DEVICE float gp_f32_from_f16(gp_f16_t h) {
  uint32_t sign = ((uint32_t)h.bits & 0x8000u) << 16, e = ((uint32_t)h.bits >> 10) & 0x1fu,
           m = (uint32_t)h.bits & 0x3ffu;
  gp__f32_bits_t v;
  if (e == 0x1fu) {
    v.u = sign | 0x7f800000u | (m << 13);
  } else if (e == 0u) { /* zero or subnormal: m * 2^-24, exact in binary32 */
    v.f = (float)m * 5.9604644775390625e-8f;
    v.u |= sign;
  } else {
    v.u = sign | ((e + 112u) << 23) | (m << 13);
  }
  return v.f;
}

/**
 * @brief binary32 to bfloat16, round to nearest even; NaN stays NaN (quiet).
 * @param[in] f the value.
 * @return the nearest bfloat16 value.
 */
static inline GP_HOST_DEVICE gp_bf16_t gp_bf16_from_f32(float f) {
  gp__f32_bits_t v;
  v.f = f;
  gp_bf16_t b;
  if ((v.u & 0x7fffffffu) > 0x7f800000u)
    b.bits = (uint16_t)((v.u >> 16) | 0x40u);
  else
    b.bits = (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
  return b;
}

/**
 * @brief bfloat16 to binary32 (exact).
 * @param[in] b the value.
 * @return the same value as binary32.
 */
static inline GP_HOST_DEVICE float gp_f32_from_bf16(gp_bf16_t b) {
  gp__f32_bits_t v;
  v.u = (uint32_t)b.bits << 16;
  return v.f;
}

GP_EXTERN_C_END

#endif /* GP_TYPES_H */
