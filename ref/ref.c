/* ref.c - seeded data, poisoning and element-wise comparison (see ref.h). */
#include "ref.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void gp_ref_rng_seed(gp_ref_rng_t *rng, uint64_t seed) {
  for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t gp_ref_rng_next(gp_ref_rng_t *rng) {
  uint64_t *s = rng->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double gp_ref_rng_uniform(gp_ref_rng_t *rng, double lo, double hi) {
  double u = (double)(gp_ref_rng_next(rng) >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * u;
}

uint64_t gp_ref_default_seed(void) {
  const char *e = getenv("GP_TEST_SEED");
  if (e && *e) return strtoull(e, NULL, 0);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
  return splitmix64(&x) & 0xffffffffffffull;
}

double gp_ref_load(const void *src, gp_dtype_t dtype, size_t i) {
  switch (dtype) {
    case GP_F32: return ((const float *)src)[i];
    case GP_F64: return ((const double *)src)[i];
    case GP_F16: return gp_f32_from_f16(((const gp_f16_t *)src)[i]);
    case GP_BF16: return gp_f32_from_bf16(((const gp_bf16_t *)src)[i]);
    case GP_I32: return ((const int32_t *)src)[i];
    default: return NAN;
  }
}

void gp_ref_store(void *dst, gp_dtype_t dtype, size_t i, double v) {
  switch (dtype) {
    case GP_F32: ((float *)dst)[i] = (float)v; break;
    case GP_F64: ((double *)dst)[i] = v; break;
    case GP_F16: ((gp_f16_t *)dst)[i] = gp_f16_from_f32((float)v); break;
    case GP_BF16: ((gp_bf16_t *)dst)[i] = gp_bf16_from_f32((float)v); break;
    case GP_I32: ((int32_t *)dst)[i] = (int32_t)v; break;
    default: break;
  }
}

void gp_ref_fill(void *dst, gp_dtype_t dtype, size_t n, gp_ref_rng_t *rng, double lo, double hi) {
  for (size_t i = 0; i < n; i++) {
    double v;
    do {
      gp_ref_store(dst, dtype, i, gp_ref_rng_uniform(rng, lo, hi));
      v = gp_ref_load(dst, dtype, i);
    } while (v == 0.0);
  }
}

void gp_ref_poison(void *dst, gp_dtype_t dtype, size_t n) {
  for (size_t i = 0; i < n; i++) gp_ref_store(dst, dtype, i, NAN);
}

double gp_ref_unit_roundoff(gp_dtype_t dtype) {
  switch (dtype) {
    case GP_F64: return 0x1.0p-53;
    case GP_F32: return 0x1.0p-24;
    case GP_F16: return 0x1.0p-11;
    case GP_BF16: return 0x1.0p-8;
    default: return 0.0;
  }
}

void gp_ref_compare(gp_ref_cmp_t *out, const void *got, gp_dtype_t dtype, const double *ref,
                    const double *bound, double abs_bound, size_t n) {
  memset(out, 0, sizeof(*out));
  out->n = n;
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; i++) {
    double g = gp_ref_load(got, dtype, i), r = ref[i], b = bound ? bound[i] : abs_bound;
    double e = fabs(g - r);
    bool ok = isfinite(r) ? (e <= b) : (g == r || (isnan(g) && isnan(r)));
    if (isnan(g) && !isnan(r)) ok = false;
    if (!ok) {
      if (out->n_bad == 0) {
        out->first_bad = i;
        out->got_bad = g;
        out->ref_bad = r;
        out->bound_bad = b;
      }
      out->n_bad++;
    }
    if (isfinite(e) && e > out->max_abs_err) out->max_abs_err = e;
    if (isfinite(r)) {
      num += isfinite(e) ? e * e : INFINITY;
      den += r * r;
    }
  }
  out->rel_norm_err = den > 0 ? sqrt(num / den) : sqrt(num);
}

void gp_ref_cmp_format(const gp_ref_cmp_t *c, char *buf, size_t len) {
  if (c->n_bad)
    snprintf(buf, len, "n_bad=%zu/%zu first_bad=%zu (got %.9g ref %.9g bound %.3g) max_abs=%.3g rel_norm=%.3g",
             c->n_bad, c->n, c->first_bad, c->got_bad, c->ref_bad, c->bound_bad, c->max_abs_err,
             c->rel_norm_err);
  else
    snprintf(buf, len, "n=%zu max_abs=%.3g rel_norm=%.3g", c->n, c->max_abs_err, c->rel_norm_err);
}
