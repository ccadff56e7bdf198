/*
 * comm_reduce.c - the cpu engine's reduction of n rank buffers into one, for every
 * dtype and operator, in a fixed rank order (source 0 first), so the rank that owns an
 * element computes the same bits whatever the timing. Blocks of GP__RED_BLK elements
 * are accumulated in a small buffer and stored once, so the destination may alias any
 * source (in-place collectives).
 *
 * Accumulation: f32 for f32, f16, bf16 and fp8 (rounded once at the store); f64 for
 * f64; integers in their own width with wrap-around (unsigned arithmetic, so signed
 * overflow is defined). GP_AVG: floating inputs are multiplied by (T)(1/nranks) and
 * summed; integers are summed and divided by nranks, truncating (NCCL's ncclAvg).
 * Max and min of floating types are fmax/fmin (a NaN operand loses to a number).
 */
#include <math.h>
#include <string.h>

#include "comm.h"
#include "comm_dtype.h"
#include "cpu/comm_cpu.h"

#define GP__RED_BLK 1024

/* acc[i] op= x[i]; the operator switch is outside the loops, so each loop vectorises. */
#define COMBINE(ACC, X, M, OP, SCALE)                                                         \
  do {                                                                                        \
    switch (OP) {                                                                             \
      case GP_SUM: for (size_t i = 0; i < (M); i++) (ACC)[i] += (X)[i]; break;              \
      case GP_PROD: for (size_t i = 0; i < (M); i++) (ACC)[i] *= (X)[i]; break;             \
      case GP_MAX: for (size_t i = 0; i < (M); i++) (ACC)[i] = FMAX((ACC)[i], (X)[i]); break; \
      case GP_MIN: for (size_t i = 0; i < (M); i++) (ACC)[i] = FMIN((ACC)[i], (X)[i]); break; \
      case GP_AVG: for (size_t i = 0; i < (M); i++) (ACC)[i] += (X)[i] * (SCALE); break;    \
    }                                                                                         \
  } while (0)

#define FMAX fmaxf
#define FMIN fminf
static void reduce_f32(float *dst, const float *const *src, int n, size_t count,
                       gp_reduce_op_t op, float scale) {
  float acc[GP__RED_BLK];
  for (size_t b = 0; b < count; b += GP__RED_BLK) {
    size_t m = count - b < GP__RED_BLK ? count - b : GP__RED_BLK;
    const float *s0 = src[0] + b;
    if (op == GP_AVG)
      for (size_t i = 0; i < m; i++) acc[i] = s0[i] * scale;
    else
      memcpy(acc, s0, m * sizeof(float));
    for (int q = 1; q < n; q++) {
      const float *x = src[q] + b;
      COMBINE(acc, x, m, op, scale);
    }
    memcpy(dst + b, acc, m * sizeof(float));
  }
}

/* f16, bf16, fp8: widened to f32 block by block. */
static void reduce_widened(void *dst, const void *const *src, int n, size_t count,
                           gp_dtype_t t, gp_reduce_op_t op, float scale) {
  float acc[GP__RED_BLK], x[GP__RED_BLK];
  size_t es = gp_dtype_size(t);
  for (size_t b = 0; b < count; b += GP__RED_BLK) {
    size_t m = count - b < GP__RED_BLK ? count - b : GP__RED_BLK;
    gp__load_f32(acc, (const char *)src[0] + b * es, m, t);
    if (op == GP_AVG)
      for (size_t i = 0; i < m; i++) acc[i] *= scale;
    for (int q = 1; q < n; q++) {
      gp__load_f32(x, (const char *)src[q] + b * es, m, t);
      COMBINE(acc, x, m, op, scale);
    }
    gp__store_f32((char *)dst + b * es, acc, m, t);
  }
}
#undef FMAX
#undef FMIN

#define FMAX fmax
#define FMIN fmin
static void reduce_f64(double *dst, const double *const *src, int n, size_t count,
                       gp_reduce_op_t op, double scale) {
  double acc[GP__RED_BLK];
  for (size_t b = 0; b < count; b += GP__RED_BLK) {
    size_t m = count - b < GP__RED_BLK ? count - b : GP__RED_BLK;
    const double *s0 = src[0] + b;
    if (op == GP_AVG)
      for (size_t i = 0; i < m; i++) acc[i] = s0[i] * scale;
    else
      memcpy(acc, s0, m * sizeof(double));
    for (int q = 1; q < n; q++) {
      const double *x = src[q] + b;
      COMBINE(acc, x, m, op, scale);
    }
    memcpy(dst + b, acc, m * sizeof(double));
  }
}
#undef FMAX
#undef FMIN

/* Integers: sums and products in the unsigned type U of the same width (wrap-around);
 * max and min in T; GP_AVG divides the wrapped sum, as T, by nranks. */
#define INT_REDUCE(NAME, T, U)                                                                \
  static void NAME(T *dst, const T *const *src, int n, size_t count, gp_reduce_op_t op,       \
                   int nranks) {                                                              \
    U acc[GP__RED_BLK];                                                                       \
    for (size_t b = 0; b < count; b += GP__RED_BLK) {                                         \
      size_t m = count - b < GP__RED_BLK ? count - b : GP__RED_BLK;                           \
      for (size_t i = 0; i < m; i++) acc[i] = (U)src[0][b + i];                               \
      for (int q = 1; q < n; q++) {                                                           \
        const T *x = src[q] + b;                                                              \
        switch (op) {                                                                         \
          case GP_SUM: case GP_AVG:                                                           \
            for (size_t i = 0; i < m; i++) acc[i] = (U)(acc[i] + (U)x[i]);                   \
            break;                                                                            \
          case GP_PROD:                                                                       \
            for (size_t i = 0; i < m; i++) acc[i] = (U)(acc[i] * (U)x[i]);                   \
            break;                                                                            \
          case GP_MAX:                                                                        \
            for (size_t i = 0; i < m; i++) acc[i] = (T)acc[i] > x[i] ? acc[i] : (U)x[i];     \
            break;                                                                            \
          case GP_MIN:                                                                        \
            for (size_t i = 0; i < m; i++) acc[i] = (T)acc[i] < x[i] ? acc[i] : (U)x[i];     \
            break;                                                                            \
        }                                                                                     \
      }                                                                                       \
      if (op == GP_AVG)                                                                       \
        for (size_t i = 0; i < m; i++) dst[b + i] = (T)((T)acc[i] / (int64_t)nranks);             \
      else                                                                                    \
        for (size_t i = 0; i < m; i++) dst[b + i] = (T)acc[i];                                \
    }                                                                                         \
  }

INT_REDUCE(reduce_i8, int8_t, uint8_t)
INT_REDUCE(reduce_u8, uint8_t, uint8_t)
INT_REDUCE(reduce_i32, int32_t, uint32_t)
INT_REDUCE(reduce_u32, uint32_t, uint32_t)
INT_REDUCE(reduce_i64, int64_t, uint64_t)
INT_REDUCE(reduce_u64, uint64_t, uint64_t)

void gp__cpu_reduce(void *dst, const void *const *src, int nsrc, size_t count, gp_dtype_t t,
                    gp_reduce_op_t op, int nranks) {
  if (count == 0) return;
  switch (t) {
    case GP_F32:
      reduce_f32(dst, (const float *const *)src, nsrc, count, op, gp__avg_scale_f32(t, nranks));
      break;
    case GP_F16: case GP_BF16: case GP_FP8_E4M3: case GP_FP8_E5M2:
      reduce_widened(dst, src, nsrc, count, t, op, gp__avg_scale_f32(t, nranks));
      break;
    case GP_F64:
      reduce_f64(dst, (const double *const *)src, nsrc, count, op, 1.0 / (double)nranks);
      break;
    case GP_I8: reduce_i8(dst, (const int8_t *const *)src, nsrc, count, op, nranks); break;
    case GP_U8: reduce_u8(dst, (const uint8_t *const *)src, nsrc, count, op, nranks); break;
    case GP_I32: reduce_i32(dst, (const int32_t *const *)src, nsrc, count, op, nranks); break;
    case GP_U32: reduce_u32(dst, (const uint32_t *const *)src, nsrc, count, op, nranks); break;
    case GP_I64: reduce_i64(dst, (const int64_t *const *)src, nsrc, count, op, nranks); break;
    case GP_U64: reduce_u64(dst, (const uint64_t *const *)src, nsrc, count, op, nranks); break;
    default: break;
  }
}
