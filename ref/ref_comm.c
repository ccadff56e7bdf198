/* ref_comm.c - collective test data and references (see ref_comm.h). */
#include "ref_comm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "comm_dtype.h" /* fp8 conversions (src/, header-only) */

static uint64_t mix(uint64_t seed, int rank, size_t i) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t)(rank + 1) + 0xc2b2ae3d27d4eb4full * (uint64_t)(i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static bool g_native_acc;

void gp_ref_comm_set_native_accumulation(bool native) { g_native_acc = native; }

static bool floating(gp_dtype_t t) {
  return t == GP_F32 || t == GP_F64 || t == GP_F16 || t == GP_BF16 || t == GP_FP8_E4M3 ||
         t == GP_FP8_E5M2;
}

static int int_bits(gp_dtype_t t) {
  switch (t) {
    case GP_I8: case GP_U8: return 8;
    case GP_I32: case GP_U32: return 32;
    default: return 64;
  }
}

static bool int_signed(gp_dtype_t t) { return t == GP_I8 || t == GP_I32 || t == GP_I64; }

/* Stores double v (representable, or rounded) as element i of t. */
static void store(void *dst, gp_dtype_t t, size_t i, double v) {
  float f = (float)v;
  switch (t) {
    case GP_F32: ((float *)dst)[i] = f; break;
    case GP_F64: ((double *)dst)[i] = v; break;
    case GP_F16: ((gp_f16_t *)dst)[i] = gp_f16_from_f32(f); break;
    case GP_BF16: ((gp_bf16_t *)dst)[i] = gp_bf16_from_f32(f); break;
    case GP_FP8_E4M3: ((uint8_t *)dst)[i] = gp__fp8_e4m3_from_f32(f); break;
    case GP_FP8_E5M2: ((uint8_t *)dst)[i] = gp__fp8_e5m2_from_f32(f); break;
    default: break;
  }
}

static double load(const void *src, gp_dtype_t t, size_t i) {
  switch (t) {
    case GP_F32: return ((const float *)src)[i];
    case GP_F64: return ((const double *)src)[i];
    case GP_F16: return gp_f32_from_f16(((const gp_f16_t *)src)[i]);
    case GP_BF16: return gp_f32_from_bf16(((const gp_bf16_t *)src)[i]);
    case GP_FP8_E4M3: return gp__f32_from_fp8_e4m3(((const uint8_t *)src)[i]);
    case GP_FP8_E5M2: return gp__f32_from_fp8_e5m2(((const uint8_t *)src)[i]);
    default: return NAN;
  }
}

/* Integer element as the low bits of a uint64 (sign-extended for signed types). */
static uint64_t load_int(const void *src, gp_dtype_t t, size_t i) {
  switch (t) {
    case GP_I8: return (uint64_t)(int64_t)((const int8_t *)src)[i];
    case GP_U8: return ((const uint8_t *)src)[i];
    case GP_I32: return (uint64_t)(int64_t)((const int32_t *)src)[i];
    case GP_U32: return ((const uint32_t *)src)[i];
    case GP_I64: return (uint64_t)((const int64_t *)src)[i];
    default: return ((const uint64_t *)src)[i];
  }
}

static void store_int(void *dst, gp_dtype_t t, size_t i, uint64_t v) {
  switch (t) {
    case GP_I8: case GP_U8: ((uint8_t *)dst)[i] = (uint8_t)v; break;
    case GP_I32: case GP_U32: ((uint32_t *)dst)[i] = (uint32_t)v; break;
    default: ((uint64_t *)dst)[i] = v; break;
  }
}

/* Sign-extends (signed types) or zero-extends the low bits of v. */
static uint64_t norm_int(gp_dtype_t t, uint64_t v) {
  int b = int_bits(t);
  if (b == 64) return v;
  uint64_t m = (1ull << b) - 1;
  v &= m;
  if (int_signed(t) && (v >> (b - 1))) v |= ~m;
  return v;
}

static double input_value(gp_reduce_op_t op, gp_ref_comm_data_t data, uint64_t h) {
  if (data == GP_REF_COMM_EXACT) return (double)(1 + (h % (op == GP_PROD ? 2u : 4u)));
  double u = (double)(h >> 11) * 0x1.0p-53, lo = op == GP_PROD ? 0.5 : 0.25;
  double v = lo + (2.0 - lo) * u;
  return (h & 1) ? -v : v;
}

void gp_ref_comm_inputs(void *dst, gp_dtype_t t, gp_reduce_op_t op, gp_ref_comm_data_t data,
                        uint64_t seed, int rank, size_t first, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint64_t h = mix(seed, rank, first + i);
    if (floating(t)) {
      store(dst, t, i, input_value(op, data, h));
    } else {
      uint64_t v = data == GP_REF_COMM_EXACT ? (uint64_t)input_value(op, data, h) : h >> 3;
      if (norm_int(t, v) == 0) v = 1;
      store_int(dst, t, i, v);
    }
  }
}

void gp_ref_comm_poison(void *dst, gp_dtype_t t, size_t n) {
  memset(dst, 0xff, n * gp_dtype_size(t)); /* all-ones is NaN in every floating type */
}

/* One input as a double (floating) or integer bits, computed without a buffer. */
static double input_f(gp_dtype_t t, gp_reduce_op_t op, gp_ref_comm_data_t data, uint64_t seed,
                      int rank, size_t i) {
  unsigned char b[8];
  gp_ref_comm_inputs(b, t, op, data, seed, rank, i, 1);
  return load(b, t, 0);
}

static uint64_t input_i(gp_dtype_t t, gp_reduce_op_t op, gp_ref_comm_data_t data, uint64_t seed,
                        int rank, size_t i) {
  unsigned char b[8];
  gp_ref_comm_inputs(b, t, op, data, seed, rank, i, 1);
  return norm_int(t, load_int(b, t, 0));
}

static double unit_roundoff(gp_dtype_t t) {
  switch (t) {
    case GP_F64: return 0x1.0p-53;
    case GP_F16: return 0x1.0p-11;
    case GP_BF16: return 0x1.0p-8;
    case GP_FP8_E4M3: return 0x1.0p-4;
    case GP_FP8_E5M2: return 0x1.0p-3;
    default: return 0x1.0p-24;
  }
}

/* Half the spacing of the type's subnormals: the absolute error of rounding a tiny result. */
static double half_subnormal(gp_dtype_t t) {
  switch (t) {
    case GP_F64: return 0x1.0p-1074;
    case GP_F16: return 0x1.0p-25;
    case GP_BF16: return 0x1.0p-134;
    case GP_FP8_E4M3: return 0x1.0p-10;
    case GP_FP8_E5M2: return 0x1.0p-17;
    default: return 0x1.0p-150;
  }
}

static uint64_t int_reduce(gp_dtype_t t, gp_reduce_op_t op, gp_ref_comm_data_t data,
                           uint64_t seed, int nranks, size_t i) {
  uint64_t acc = input_i(t, op, data, seed, 0, i);
  for (int q = 1; q < nranks; q++) {
    uint64_t x = input_i(t, op, data, seed, q, i);
    bool s = int_signed(t);
    switch (op) {
      case GP_SUM: case GP_AVG: acc = norm_int(t, acc + x); break;
      case GP_PROD: acc = norm_int(t, acc * x); break;
      case GP_MAX: acc = s ? ((int64_t)x > (int64_t)acc ? x : acc) : (x > acc ? x : acc); break;
      case GP_MIN: acc = s ? ((int64_t)x < (int64_t)acc ? x : acc) : (x < acc ? x : acc); break;
    }
  }
  if (op == GP_AVG)
    acc = int_signed(t) ? norm_int(t, (uint64_t)((int64_t)acc / (int64_t)nranks))
                        : acc / (uint64_t)nranks;
  return acc;
}

size_t gp_ref_comm_check_reduce(const void *got, gp_dtype_t t, gp_reduce_op_t op,
                                gp_ref_comm_data_t data, uint64_t seed, int nranks, size_t first,
                                size_t n, char *msg, size_t len) {
  size_t bad = 0;
  double num = 0, den = 0, bnd = 0;
  msg[0] = 0;
  if (!floating(t)) {
    for (size_t i = 0; i < n; i++) {
      uint64_t want = int_reduce(t, op, data, seed, nranks, first + i);
      uint64_t g = norm_int(t, load_int(got, t, i));
      if (g != want && bad++ == 0)
        snprintf(msg, len, "element %zu: got %lld, want %lld (%s %s over %d ranks)", i,
                 (long long)g, (long long)want, gp_dtype_name(t),
                 op == GP_SUM ? "sum" : op == GP_PROD ? "prod" : op == GP_MAX ? "max" : op == GP_MIN ? "min" : "avg",
                 nranks);
    }
    return bad;
  }
  /* (T)(1/n), the scale every input of an average is multiplied by */
  unsigned char sb[8];
  store(sb, t == GP_F64 ? GP_F64 : t, 0, 1.0 / nranks);
  double scale = t == GP_F64 ? 1.0 / nranks : load(sb, t, 0);
  double ut = unit_roundoff(t), ua = t == GP_F64 ? 0x1.0p-53 : g_native_acc ? ut : 0x1.0p-24;
  for (size_t i = 0; i < n; i++) {
    double ref = 0, mag = 0;
    for (int q = 0; q < nranks; q++) {
      double x = input_f(t, op, data, seed, q, first + i), term = op == GP_AVG ? x * scale : x;
      if (q == 0) {
        ref = term;
      } else {
        switch (op) {
          case GP_SUM: case GP_AVG: ref += term; break;
          case GP_PROD: ref *= term; break;
          case GP_MAX: ref = fmax(ref, term); break;
          case GP_MIN: ref = fmin(ref, term); break;
        }
      }
      mag += fabs(term);
    }
    double bound;
    if (data == GP_REF_COMM_EXACT)
      bound = op == GP_AVG ? 2.0 * ut * fabs(ref) * 2.0 : 0.0; /* 2 ulp = 2 * (2u |ref|) */
    else if (op == GP_MAX || op == GP_MIN)
      bound = 0.0;
    else if (op == GP_PROD)
      bound = (2.0 * nranks * ua + ut) * fabs(ref);
    else
      bound = 2.0 * nranks * ua * mag + ut * fabs(ref);
    if (bound > 0 || op == GP_AVG) bound += half_subnormal(t);
    double g = load(got, t, i), err = fabs(g - ref);
    num += err * err;
    den += ref * ref;
    bnd += bound * bound;
    if (!(err <= bound) && bad++ == 0)
      snprintf(msg, len, "element %zu: got %.9g, want %.9g, |err| %.3g > bound %.3g (%s over %d ranks)",
               i, g, ref, err, bound, gp_dtype_name(t), nranks);
  }
  /* The norm of the bounds relative to the result's: cancellation in sums of mixed signs
   * makes the relative error of a result large while its absolute error stays small. */
  double rel = den > 0 ? sqrt(num / den) : sqrt(num);
  double rel_tol = den > 0 ? sqrt(bnd / den) : sqrt(bnd);
  if (!(rel <= rel_tol)) {
    if (bad == 0) snprintf(msg, len, "relative norm error %.3g > %.3g", rel, rel_tol);
    bad += bad == 0;
  }
  return bad;
}

size_t gp_ref_comm_check_copy(const void *got, gp_dtype_t t, gp_reduce_op_t op,
                              gp_ref_comm_data_t data, uint64_t seed, int rank, size_t first,
                              size_t n, char *msg, size_t len) {
  size_t es = gp_dtype_size(t), bad = 0;
  unsigned char want[8];
  msg[0] = 0;
  for (size_t i = 0; i < n; i++) {
    gp_ref_comm_inputs(want, t, op, data, seed, rank, first + i, 1);
    if (memcmp((const char *)got + i * es, want, es) != 0 && bad++ == 0)
      snprintf(msg, len, "element %zu differs from rank %d's element %zu (%s)", i, rank, first + i,
               gp_dtype_name(t));
  }
  return bad;
}
