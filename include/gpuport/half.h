/**
 * @file gpuport/half.h
 * @brief Arithmetic half types for dialect sources: CUDA's `__half`, `__half2`,
 *        `__nv_bfloat16`, `__nv_bfloat162` and the cuda_fp16.h / cuda_bf16.h intrinsics.
 * @ingroup kernel
 *
 * Include it after (or instead of) CUDA's headers, after gpuport/kernel.h:
 * @code
 * #include <gpuport/kernel.h>
 * #include <gpuport/half.h>
 * GP_KERNEL void axpy_h(int n, __half a, const __half *x, __half *y) {
 *   int i = blockIdx.x * blockDim.x + threadIdx.x;
 *   if (i < n) y[i] = __hfma(a, x[i], y[i]);
 * }
 * @endcode
 *
 * - nvcc: cuda_fp16.h and cuda_bf16.h (the native types); this header adds only the
 *   conversions to and from the storage types of gpuport/types.h.
 * - hipcc: hip_fp16.h gives `__half` and `__half2`; `__nv_bfloat16` and
 *   `__nv_bfloat162` (which ROCm 5 lacks) are this header's, as on the CPU.
 * - CPU: every type is this header's. Conversions from float round to nearest even
 *   (subnormals exact, overflow to infinity, NaN stays NaN); an operation is computed in
 *   binary32 (binary32 holds more than 2p + 2 bits, so the one rounding to the half
 *   format is the correctly rounded result) and `__hfma` rounds once (exact product,
 *   round-to-odd sum), as the hardware's half instructions.
 *
 * Provided (CUDA's names): `half`, `half2`, `nv_bfloat16` and `nv_bfloat162` for the
 * prefixed types; constructors and `operator float`, `+ - * /` and their
 * assignments, unary `-`, comparisons; `__float2half(_rn)`, `__half2float`,
 * `__float2bfloat16(_rn)`, `__bfloat162float`; `__hadd/__hsub/__hmul/__hdiv/__hfma/__hneg/
 * __habs/__hmax/__hmin`, `__heq/__hne/__hlt/__hle/__hgt/__hge` (ordered) and their `u`
 * (unordered) forms, `__hisnan`, `__hisinf`; `__hadd2/__hsub2/__hmul2/__hfma2/__h2div/
 * __hneg2/__habs2`; `__half2half2`, `__float2half2_rn`, `__halves2half2`, `__floats2half2_rn`,
 * `__float22half2_rn`, `__half22float2`, `__low2half`, `__high2half`, `__low2float`,
 * `__high2float`, `__lows2half2`, `__highs2half2`, `__floats2bfloat162_rn`,
 * `__float22bfloat162_rn`, `__bfloat1622float2`, `__low2bfloat16`, `__high2bfloat16`,
 * `__bfloat162bfloat162`, `__halves2bfloat162`; `hexp/hexp2/hlog/hlog2/hsqrt/hrsqrt/hrcp/
 * hsin/hcos/hfloor/hceil/htrunc` and `h2exp/h2log/h2sqrt/h2rsqrt`; the shuffles
 * (`__shfl_*_sync`, `gp_shfl*`) on the four types; `atomicAdd` on the four types. The storage types:
 * `gp_half_of(gp_f16_t)`, `gp_f16_of(__half)`, `gp_bfloat16_of(gp_bf16_t)`,
 * `gp_bf16_of(__nv_bfloat16)`.
 */
#ifndef GP_HALF_H
#define GP_HALF_H

#include <gpuport/kernel.h>

#ifdef __cplusplus

#if defined(GP_TARGET_CUDA)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define GP__HALF_NATIVE 1
#define GP__BF16_NATIVE 1
#define GP__HQ static __host__ __device__ inline
#elif defined(GP_TARGET_HIP)
#include <hip/hip_fp16.h>
#define GP__HALF_NATIVE 1
#define GP__HQ static __host__ __device__ inline
#define GP__HM __host__ __device__
#else
#define GP__HQ static inline
#define GP__HM
#endif

/** @cond GP_INTERNAL */
#if !defined(GP__HALF_NATIVE) || !defined(GP__BF16_NATIVE)
/* binary64 to binary32 rounded to odd: a later rounding to nearest to p <= 22 bits is
 * then the correctly rounded result of the binary64 value. */
GP__HQ float gp__ro_f32(double d) {
  float f = (float)d;
  if ((double)f != d && d == d) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (!(u & 1u) && !__builtin_isinf(f)) {
      /* the neighbour of f on d's side (f was rounded to nearest, so d lies between) */
      if (((double)f < d) == (f >= 0.0f)) u++;
      else u--;
      memcpy(&f, &u, sizeof f);
    }
  }
  return f;
}
/* a * b + c of values with at most 11 (binary16) or 8 (bfloat16) significant bits, as
 * binary32 rounded to odd: the product is exact in binary64, the sum's error is exact
 * (TwoSum), and an inexact sum with an even last bit moves one step toward the error. */
GP__HQ float gp__fma_ro(float a, float b, float c) {
  const double p = (double)a * (double)b, q = (double)c;
  double s = p + q;
  if (__builtin_isinf(s) || s != s) return (float)s;
  const double bb = s - p, e = (p - (s - bb)) + (q - bb);
  if (e != 0.0) {
    uint64_t u;
    memcpy(&u, &s, sizeof u);
    if (!(u & 1u)) {
      if ((e > 0.0) == (s >= 0.0)) u++;
      else u--;
      memcpy(&s, &u, sizeof s);
    }
  }
  return gp__ro_f32(s);
}
#endif

/* A portable 16-bit float type N (binary16 or bfloat16) and its pair N2: storage bits
 * __x, conversions through gpuport/types.h, operators computed in binary32. */
#define GP__H16_TYPE(N, N2, ST, TO16, FROM16)                                              \
  struct __attribute__((aligned(2))) N {                                                   \
    unsigned short __x;                                                                    \
    N() = default;                                                                         \
    GP__HM N(float f) : __x(TO16(f).bits) {}                                               \
    GP__HM N(double d) : __x(TO16(gp__ro_f32(d)).bits) {}                                  \
    GP__HM N(int i) : __x(TO16(gp__ro_f32((double)i)).bits) {}                             \
    GP__HM N(unsigned i) : __x(TO16(gp__ro_f32((double)i)).bits) {}                        \
    GP__HM N(ST s) : __x(s.bits) {}                                                        \
    GP__HM operator float() const {                                                        \
      ST s;                                                                                \
      s.bits = __x;                                                                        \
      return FROM16(s);                                                                    \
    }                                                                                      \
    GP__HM N &operator+=(N o) { return *this = N((float)*this + (float)o); }               \
    GP__HM N &operator-=(N o) { return *this = N((float)*this - (float)o); }               \
    GP__HM N &operator*=(N o) { return *this = N((float)*this * (float)o); }               \
    GP__HM N &operator/=(N o) { return *this = N((float)*this / (float)o); }               \
  };                                                                                       \
  struct __attribute__((aligned(4))) N2 {                                                  \
    N x, y;                                                                                \
    N2() = default;                                                                        \
    GP__HM N2(N a, N b) : x(a), y(b) {}                                                    \
  };                                                                                       \
  GP__HQ N operator+(N a, N b) { return N((float)a + (float)b); }                          \
  GP__HQ N operator-(N a, N b) { return N((float)a - (float)b); }                          \
  GP__HQ N operator*(N a, N b) { return N((float)a * (float)b); }                          \
  GP__HQ N operator/(N a, N b) { return N((float)a / (float)b); }                          \
  GP__HQ N operator-(N a) { N r; r.__x = (unsigned short)(a.__x ^ 0x8000u); return r; }   \
  GP__HQ N operator+(N a) { return a; }                                                    \
  GP__HQ bool operator==(N a, N b) { return (float)a == (float)b; }                        \
  GP__HQ bool operator!=(N a, N b) { return (float)a != (float)b; }                        \
  GP__HQ bool operator<(N a, N b) { return (float)a < (float)b; }                          \
  GP__HQ bool operator<=(N a, N b) { return (float)a <= (float)b; }                        \
  GP__HQ bool operator>(N a, N b) { return (float)a > (float)b; }                          \
  GP__HQ bool operator>=(N a, N b) { return (float)a >= (float)b; }                        \
  GP__HQ N2 operator+(N2 a, N2 b) { return N2(a.x + b.x, a.y + b.y); }                     \
  GP__HQ N2 operator-(N2 a, N2 b) { return N2(a.x - b.x, a.y - b.y); }                     \
  GP__HQ N2 operator*(N2 a, N2 b) { return N2(a.x * b.x, a.y * b.y); }                     \
  GP__HQ N2 operator/(N2 a, N2 b) { return N2(a.x / b.x, a.y / b.y); }                     \
  GP__HQ N2 operator-(N2 a) { return N2(-a.x, -a.y); }

/* __hmax (max = 1) and __hmin as CUDA's: a NaN operand gives the other operand, and
 * -0 is below +0. */
template <class N> GP__HQ N gp__hpick(N a, N b, int max) {
  const float x = (float)a, y = (float)b;
  if (x != x) return b;
  if (y != y) return a;
  if (x == y) return ((a.__x >> 15) != 0) == (max != 0) ? b : a;
  return (x > y) == (max != 0) ? a : b;
}
/* CUDA's intrinsics on a portable type N and its pair N2. */
#define GP__H16_OPS(N, N2)                                                                 \
  GP__HQ N __hadd(N a, N b) { return a + b; }                                              \
  GP__HQ N __hsub(N a, N b) { return a - b; }                                              \
  GP__HQ N __hmul(N a, N b) { return a * b; }                                              \
  GP__HQ N __hdiv(N a, N b) { return a / b; }                                              \
  GP__HQ N __hfma(N a, N b, N c) { return N(gp__fma_ro((float)a, (float)b, (float)c)); }  \
  GP__HQ N __hneg(N a) { return -a; }                                                      \
  GP__HQ N __habs(N a) { N r; r.__x = (unsigned short)(a.__x & 0x7fffu); return r; }      \
  GP__HQ N __hmax(N a, N b) { return gp__hpick(a, b, 1); }                                 \
  GP__HQ N __hmin(N a, N b) { return gp__hpick(a, b, 0); }                                 \
  GP__HQ bool __heq(N a, N b) { return (float)a == (float)b; }                             \
  GP__HQ bool __hne(N a, N b) { return (float)a < (float)b || (float)a > (float)b; }       \
  GP__HQ bool __hlt(N a, N b) { return (float)a < (float)b; }                              \
  GP__HQ bool __hle(N a, N b) { return (float)a <= (float)b; }                             \
  GP__HQ bool __hgt(N a, N b) { return (float)a > (float)b; }                              \
  GP__HQ bool __hge(N a, N b) { return (float)a >= (float)b; }                             \
  GP__HQ bool __hequ(N a, N b) { return !((float)a < (float)b || (float)a > (float)b); }   \
  GP__HQ bool __hneu(N a, N b) { return !((float)a == (float)b); }                         \
  GP__HQ bool __hltu(N a, N b) { return !((float)a >= (float)b); }                         \
  GP__HQ bool __hleu(N a, N b) { return !((float)a > (float)b); }                          \
  GP__HQ bool __hgtu(N a, N b) { return !((float)a <= (float)b); }                         \
  GP__HQ bool __hgeu(N a, N b) { return !((float)a < (float)b); }                          \
  GP__HQ bool __hisnan(N a) { return (float)a != (float)a; }                               \
  GP__HQ int __hisinf(N a) { return __builtin_isinf((float)a) ? ((float)a > 0 ? 1 : -1) : 0; } \
  GP__HQ N2 __hadd2(N2 a, N2 b) { return a + b; }                                          \
  GP__HQ N2 __hsub2(N2 a, N2 b) { return a - b; }                                          \
  GP__HQ N2 __hmul2(N2 a, N2 b) { return a * b; }                                          \
  GP__HQ N2 __h2div(N2 a, N2 b) { return a / b; }                                          \
  GP__HQ N2 __hfma2(N2 a, N2 b, N2 c) { return N2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); } \
  GP__HQ N2 __hneg2(N2 a) { return -a; }                                                   \
  GP__HQ N2 __habs2(N2 a) { return N2(__habs(a.x), __habs(a.y)); }                         \
  GP__HQ float __low2float(N2 a) { return (float)a.x; }                                    \
  GP__HQ float __high2float(N2 a) { return (float)a.y; }                                   \
  GP__HQ N hexp(N a) { return N(expf((float)a)); }                                         \
  GP__HQ N hexp2(N a) { return N(exp2f((float)a)); }                                       \
  GP__HQ N hlog(N a) { return N(logf((float)a)); }                                         \
  GP__HQ N hlog2(N a) { return N(log2f((float)a)); }                                       \
  GP__HQ N hsqrt(N a) { return N(sqrtf((float)a)); }                                       \
  GP__HQ N hrsqrt(N a) { return N(1.0f / sqrtf((float)a)); }                               \
  GP__HQ N hrcp(N a) { return N(1.0f / (float)a); }                                        \
  GP__HQ N hsin(N a) { return N(sinf((float)a)); }                                         \
  GP__HQ N hcos(N a) { return N(cosf((float)a)); }                                         \
  GP__HQ N hfloor(N a) { return N(floorf((float)a)); }                                     \
  GP__HQ N hceil(N a) { return N(ceilf((float)a)); }                                       \
  GP__HQ N htrunc(N a) { return N(truncf((float)a)); }                                     \
  GP__HQ N2 h2exp(N2 a) { return N2(hexp(a.x), hexp(a.y)); }                               \
  GP__HQ N2 h2log(N2 a) { return N2(hlog(a.x), hlog(a.y)); }                               \
  GP__HQ N2 h2sqrt(N2 a) { return N2(hsqrt(a.x), hsqrt(a.y)); }                            \
  GP__HQ N2 h2rsqrt(N2 a) { return N2(hrsqrt(a.x), hrsqrt(a.y)); }
/** @endcond */

/* ---- binary16 ------------------------------------------------------------------------ */
#if !defined(GP__HALF_NATIVE)
/** @brief IEEE binary16 with arithmetic (CUDA's `__half`). */
GP__H16_TYPE(__half, __half2, gp_f16_t, gp_f16_from_f32, gp_f32_from_f16)
GP__H16_OPS(__half, __half2)
/** @brief CUDA's unprefixed names of the binary16 types (cuda_fp16.h: `typedef __half half`;
 *         hip_fp16.h has them too). */
typedef __half half;
typedef __half2 half2;
GP__HQ __half __float2half(float f) { return __half(f); }
GP__HQ __half __float2half_rn(float f) { return __half(f); }
GP__HQ float __half2float(__half h) { return (float)h; }
GP__HQ __half2 __half2half2(__half a) { return __half2(a, a); }
GP__HQ __half2 __float2half2_rn(float f) { return __half2(__half(f), __half(f)); }
GP__HQ __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
GP__HQ __half2 __floats2half2_rn(float a, float b) { return __half2(__half(a), __half(b)); }
GP__HQ __half2 __float22half2_rn(float2 f) { return __half2(__half(f.x), __half(f.y)); }
GP__HQ float2 __half22float2(__half2 h) { return make_float2((float)h.x, (float)h.y); }
GP__HQ __half __low2half(__half2 h) { return h.x; }
GP__HQ __half __high2half(__half2 h) { return h.y; }
GP__HQ __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
GP__HQ __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
GP__HQ __half2 __low2half2(__half2 a) { return __half2(a.x, a.x); }
GP__HQ __half2 __high2half2(__half2 a) { return __half2(a.y, a.y); }
#elif defined(GP_TARGET_HIP)
/* ROCm 5 has no __hmax / __hmin on __half: CUDA's rules (gp__hpick). */
GP__HQ __half __hmax(__half a, __half b) {
  const float x = __half2float(a), y = __half2float(b);
  if (x != x) return b;
  if (y != y) return a;
  if (x == y) return signbit(x) ? b : a;
  return x > y ? a : b;
}
GP__HQ __half __hmin(__half a, __half b) {
  const float x = __half2float(a), y = __half2float(b);
  if (x != x) return b;
  if (y != y) return a;
  if (x == y) return signbit(x) ? a : b;
  return x < y ? a : b;
}
#endif
/** @brief The ::gp_f16_t storage value as a `__half`. */
GP__HQ __half gp_half_of(gp_f16_t s) {
#if defined(GP__HALF_NATIVE)
  __half_raw r;
  r.x = s.bits;
  return __half(r);
#else
  return __half(s);
#endif
}
/** @brief A `__half` as its ::gp_f16_t storage value. */
GP__HQ gp_f16_t gp_f16_of(__half h) {
  gp_f16_t s;
  memcpy(&s.bits, &h, 2);
  return s;
}

/* ---- bfloat16 ------------------------------------------------------------------------ */
#if !defined(GP__BF16_NATIVE)
/** @brief bfloat16 with arithmetic (CUDA's `__nv_bfloat16`). */
GP__H16_TYPE(__nv_bfloat16, __nv_bfloat162, gp_bf16_t, gp_bf16_from_f32, gp_f32_from_bf16)
GP__H16_OPS(__nv_bfloat16, __nv_bfloat162)
/** @brief CUDA's unprefixed names of the bfloat16 types (cuda_bf16.h). */
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
GP__HQ __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
GP__HQ __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
GP__HQ float __bfloat162float(__nv_bfloat16 h) { return (float)h; }
GP__HQ __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
GP__HQ __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
GP__HQ __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
  return __nv_bfloat162(__nv_bfloat16(a), __nv_bfloat16(b));
}
GP__HQ __nv_bfloat162 __float22bfloat162_rn(float2 f) {
  return __nv_bfloat162(__nv_bfloat16(f.x), __nv_bfloat16(f.y));
}
GP__HQ float2 __bfloat1622float2(__nv_bfloat162 h) { return make_float2((float)h.x, (float)h.y); }
GP__HQ __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
GP__HQ __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
GP__HQ __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
GP__HQ __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }
#endif
/** @brief The ::gp_bf16_t storage value as a `__nv_bfloat16`. */
GP__HQ __nv_bfloat16 gp_bfloat16_of(gp_bf16_t s) {
#if defined(GP__BF16_NATIVE)
  __nv_bfloat16_raw r;
  r.x = s.bits;
  return __nv_bfloat16(r);
#else
  return __nv_bfloat16(s);
#endif
}
/** @brief A `__nv_bfloat16` as its ::gp_bf16_t storage value. */
GP__HQ gp_bf16_t gp_bf16_of(__nv_bfloat16 h) {
  gp_bf16_t s;
  memcpy(&s.bits, &h, 2);
  return s;
}

/* ---- shuffles and atomics --------------------------------------------------------------- */
/** @cond GP_INTERNAL */
#if defined(GP_TARGET_CPU)
/* Every shuffle form of the dialect on a 16-bit type and its pair (the bits move). */
#define GP__HSHFL(T)                                                                       \
  static inline T gp_shfl(T v, int s, int w = GP_WARP_SIZE, GP__SITE) { return gp__shfl<T>(0, v, GP__SHFL_IDX, (unsigned)s, w, file, line); } \
  static inline T gp_shfl_xor(T v, int s, int w = GP_WARP_SIZE, GP__SITE) { return gp__shfl<T>(0, v, GP__SHFL_XOR, (unsigned)s, w, file, line); } \
  static inline T gp_shfl_up(T v, unsigned s, int w = GP_WARP_SIZE, GP__SITE) { return gp__shfl<T>(0, v, GP__SHFL_UP, s, w, file, line); } \
  static inline T gp_shfl_down(T v, unsigned s, int w = GP_WARP_SIZE, GP__SITE) { return gp__shfl<T>(0, v, GP__SHFL_DOWN, s, w, file, line); } \
  static inline T __shfl_sync(gp_lane_mask_t m, T v, int s, int w = GP_WARP_SIZE, GP__SITE) { return gp__shfl<T>(m, v, GP__SHFL_IDX, (unsigned)s, w, file, line); } \
  static inline T __shfl_xor_sync(gp_lane_mask_t m, T v, int s, int w = GP_WARP_SIZE, GP__SITE) { return gp__shfl<T>(m, v, GP__SHFL_XOR, (unsigned)s, w, file, line); } \
  static inline T __shfl_up_sync(gp_lane_mask_t m, T v, unsigned s, int w = GP_WARP_SIZE, GP__SITE) { return gp__shfl<T>(m, v, GP__SHFL_UP, s, w, file, line); } \
  static inline T __shfl_down_sync(gp_lane_mask_t m, T v, unsigned s, int w = GP_WARP_SIZE, GP__SITE) { return gp__shfl<T>(m, v, GP__SHFL_DOWN, s, w, file, line); } \
  static inline T gp_shfl_sync(gp_lane_mask_t m, T v, int s, int w = GP_WARP_SIZE, GP__SITE) { return gp__shfl<T>(m, v, GP__SHFL_IDX, (unsigned)s, w, file, line); } \
  static inline T gp_shfl_xor_sync(gp_lane_mask_t m, T v, int s, int w = GP_WARP_SIZE, GP__SITE) { return gp__shfl<T>(m, v, GP__SHFL_XOR, (unsigned)s, w, file, line); } \
  static inline T gp_shfl_up_sync(gp_lane_mask_t m, T v, unsigned s, int w = GP_WARP_SIZE, GP__SITE) { return gp__shfl<T>(m, v, GP__SHFL_UP, s, w, file, line); } \
  static inline T gp_shfl_down_sync(gp_lane_mask_t m, T v, unsigned s, int w = GP_WARP_SIZE, GP__SITE) { return gp__shfl<T>(m, v, GP__SHFL_DOWN, s, w, file, line); }
#define GP__SITE const char *file = __builtin_FILE(), int line = __builtin_LINE()
GP__HSHFL(__half)
GP__HSHFL(__half2)
GP__HSHFL(__nv_bfloat16)
GP__HSHFL(__nv_bfloat162)
#undef GP__SITE
#undef GP__HSHFL
#else
/* GPUs: through 32-bit integers (the HIP dialect's __shfl_*_sync are gp_shfl_*_sync). */
#define GP__HSHFL1(T, name, ArgT)                                                          \
  static __device__ __forceinline__ T name(T v, ArgT s, int w = GP_WARP_SIZE) {            \
    unsigned u = 0;                                                                        \
    memcpy(&u, &v, sizeof v);                                                              \
    u = name((unsigned)u, s, w);                                                           \
    memcpy(&v, &u, sizeof v);                                                              \
    return v;                                                                              \
  }                                                                                        \
  static __device__ __forceinline__ T name##_sync(gp_lane_mask_t m, T v, ArgT s, int w = GP_WARP_SIZE) { \
    unsigned u = 0;                                                                        \
    memcpy(&u, &v, sizeof v);                                                              \
    u = name##_sync(m, (unsigned)u, s, w);                                                 \
    memcpy(&v, &u, sizeof v);                                                              \
    return v;                                                                              \
  }
#define GP__HSHFL(T)                                                                       \
  GP__HSHFL1(T, gp_shfl, int)                                                              \
  GP__HSHFL1(T, gp_shfl_xor, int)                                                          \
  GP__HSHFL1(T, gp_shfl_up, unsigned)                                                      \
  GP__HSHFL1(T, gp_shfl_down, unsigned)
GP__HSHFL(__half)
GP__HSHFL(__half2)
GP__HSHFL(__nv_bfloat16)
GP__HSHFL(__nv_bfloat162)
#undef GP__HSHFL
#undef GP__HSHFL1
#endif

#if !defined(GP__BF16_NATIVE)
/* An addition on the aligned 32-bit word holding *p (compare-and-swap), each half
 * rounded once; returns the old value, as CUDA's atomicAdd. */
#define GP__HATOMIC2(N2)                                                                   \
  GP_DEVICE N2 atomicAdd(N2 *p, N2 v) {                                                    \
    unsigned *w = reinterpret_cast<unsigned *>(p), old = *(volatile unsigned *)w, assumed; \
    N2 o;                                                                                  \
    do {                                                                                   \
      assumed = old;                                                                       \
      memcpy(&o, &assumed, 4);                                                             \
      const N2 r = o + v;                                                                  \
      unsigned nb;                                                                         \
      memcpy(&nb, &r, 4);                                                                  \
      old = atomicCAS(w, assumed, nb);                                                     \
    } while (old != assumed);                                                              \
    return o;                                                                              \
  }
GP__HATOMIC2(__half2)
GP_DEVICE __half atomicAdd(__half *p, __half v) { return gp_half_of(atomicAdd((gp_f16_t *)p, gp_f16_of(v))); }
GP__HATOMIC2(__nv_bfloat162)
GP_DEVICE __nv_bfloat16 atomicAdd(__nv_bfloat16 *p, __nv_bfloat16 v) {
  return gp_bfloat16_of(atomicAdd((gp_bf16_t *)p, gp_bf16_of(v)));
}
#undef GP__HATOMIC2
#endif
/** @endcond */

#undef GP__HQ
#undef GP__HM
#endif /* __cplusplus */
#endif /* GP_HALF_H */
