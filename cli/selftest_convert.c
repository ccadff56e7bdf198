/*
 * selftest_convert.c - f16 and bf16 conversions (gpuport/types.h) against references
 * computed in float64: every one of the 65536 bit patterns of each 16-bit type is
 * decoded, and f32 -> 16-bit rounding (to nearest, ties to even) is checked on random
 * floats weighted towards ties, subnormals and the overflow boundary.
 */
#include "selftest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Decodes a binary16 pattern from its fields, in float64. */
static double ref_f16_decode(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0x1f ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

static double ref_bf16_decode(uint16_t b) {
  int e = (b >> 7) & 0xff, m = b & 0x7f;
  double v = e == 0xff ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
  return (b & 0x8000) ? -v : v;
}

/* Rounds x to a format with `bits` significand bits (including the implicit one),
 * minimum normal exponent emin, and overflow threshold at 2^(emax+1): round to
 * nearest, ties to even (nearbyint in the default rounding mode), in float64. */
static double ref_round(double x, int bits, int emin, int emax) {
  if (isnan(x) || isinf(x) || x == 0.0) return x;
  double ax = fabs(x);
  int e = ilogb(ax);
  if (e < emin) e = emin;
  double ulp = ldexp(1.0, e - (bits - 1));
  double r = nearbyint(ax / ulp) * ulp;
  if (r >= ldexp(1.0, emax + 1)) r = INFINITY;
  return copysign(r, x);
}

/* Counts results whose zero has the wrong sign (the value comparison cannot see it). */
static size_t zero_sign_errors(const float *got, const double *ref, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    if (ref[i] == 0.0 && got[i] == 0.0f && !signbit(ref[i]) != !signbit(got[i])) bad++;
  return bad;
}

/* Random f32 inputs: a quarter arbitrary bit patterns (NaN, inf, huge, tiny included),
 * a quarter log-uniform magnitudes over [2^lo_exp, 2^hi_exp), half exact ties of the
 * target format (low `drop` bits = 100..0) nudged by -1, 0 or +1 f32 ulp. */
/* A biased f32 exponent field for 2^e, clamped to the subnormal / largest finite binade. */
static uint32_t exp_field(int e) {
  e += 127;
  return (uint32_t)(e < 0 ? 0 : e > 254 ? 254 : e);
}

static void random_inputs(st_ctx_t *c, float *x, size_t n, int lo_exp, int hi_exp, int drop) {
  for (size_t i = 0; i < n; i++) {
    uint64_t r = gp_ref_rng_next(&c->rng);
    uint32_t sign = (uint32_t)(r >> 63) << 31, u;
    switch (r & 3) {
      case 0: u = (uint32_t)(r >> 16); break;
      case 1: {
        uint32_t e = exp_field(lo_exp + (int)((r >> 2) % (uint64_t)(hi_exp - lo_exp)));
        u = sign | (e << 23) | (uint32_t)((r >> 20) & 0x7fffffu);
        break;
      }
      default: {
        uint32_t e = exp_field(lo_exp + (int)((r >> 2) % (uint64_t)(hi_exp - lo_exp)));
        uint32_t keep = (uint32_t)(r >> 20) & (0x7fffffu & ~((1u << drop) - 1u));
        u = sign | (e << 23) | keep | (1u << (drop - 1));
        u += (uint32_t)((int)((r >> 40) % 3) - 1);
        break;
      }
    }
    x[i] = f32_from_bits(u);
  }
}

static void check_f16(st_ctx_t *c, const void *arg) {
  (void)arg;
  size_t nr = c->quick ? 1 << 18 : 1 << 21, n = nr > 65536 ? nr : 65536;
  float *got = malloc(n * sizeof(float)), *x = malloc(nr * sizeof(float));
  double *ref = malloc(n * sizeof(double));
  if (!got || !ref || !x) {
    st_fail(c, "host allocation failed");
    goto out;
  }
  /* 1. Every binary16 pattern decodes exactly, and encodes back to itself. */
  size_t back_bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    gp_f16_t v = {(uint16_t)h};
    got[h] = gp_f32_from_f16(v);
    ref[h] = ref_f16_decode((uint16_t)h);
    gp_f16_t w = gp_f16_from_f32(got[h]);
    if (isnan(ref[h]) ? !isnan(gp_f32_from_f16(w)) : w.bits != h) back_bad++;
  }
  if (!st_compare(c, "all 65536 f16 -> f32", got, GP_F32, ref, NULL, 0.0, 65536, 0.0)) goto out;
  if (zero_sign_errors(got, ref, 65536)) st_fail(c, "f16 -> f32: signed zero lost");
  if (back_bad) st_fail(c, "f16 -> f32 -> f16: %zu of 65536 patterns do not return", back_bad);
  /* 2. f32 -> f16 rounding, ties to even, subnormals and overflow. */
  random_inputs(c, x, nr, -27, 17, 13);
  for (size_t i = 0; i < nr; i++) {
    got[i] = gp_f32_from_f16(gp_f16_from_f32(x[i]));
    ref[i] = ref_round(x[i], 11, -14, 15);
  }
  if (!st_compare(c, "f32 -> f16", got, GP_F32, ref, NULL, 0.0, nr, 0.0)) goto out;
  if (zero_sign_errors(got, ref, nr)) st_fail(c, "f32 -> f16: signed zero lost");
  st_note(c, "65536 patterns exact and round-trip; %zu random f32 -> f16 exact", nr);
out:
  free(got);
  free(ref);
  free(x);
}

static void check_bf16(st_ctx_t *c, const void *arg) {
  (void)arg;
  size_t nr = c->quick ? 1 << 18 : 1 << 21, n = nr > 65536 ? nr : 65536;
  float *got = malloc(n * sizeof(float)), *x = malloc(nr * sizeof(float));
  double *ref = malloc(n * sizeof(double));
  if (!got || !ref || !x) {
    st_fail(c, "host allocation failed");
    goto out;
  }
  for (uint32_t b = 0; b < 65536; b++) {
    gp_bf16_t v = {(uint16_t)b};
    got[b] = gp_f32_from_bf16(v);
    ref[b] = ref_bf16_decode((uint16_t)b);
  }
  if (!st_compare(c, "all 65536 bf16 -> f32", got, GP_F32, ref, NULL, 0.0, 65536, 0.0)) goto out;
  random_inputs(c, x, nr, -140, 128, 16);
  for (size_t i = 0; i < nr; i++) {
    got[i] = gp_f32_from_bf16(gp_bf16_from_f32(x[i]));
    ref[i] = ref_round(x[i], 8, -126, 127);
  }
  if (!st_compare(c, "f32 -> bf16", got, GP_F32, ref, NULL, 0.0, nr, 0.0)) goto out;
  if (zero_sign_errors(got, ref, nr)) st_fail(c, "f32 -> bf16: signed zero lost");
  st_note(c, "65536 patterns exact; %zu random f32 -> bf16 exact (RNE)", nr);
out:
  free(got);
  free(ref);
  free(x);
}

const st_check_t st_convert_checks[] = {
    {"convert.f16", check_f16, NULL},
    {"convert.bf16", check_bf16, NULL},
    {NULL, NULL, NULL},
};
