/*
 * ref.h - float64 references and test-data helpers shared by `gpuport selftest`
 * and the Check suites: a seeded generator (the seed is printed so a run replays),
 * output poisoning, and element-wise error bounds.
 */
#ifndef GP_TOOL_REF_H
#define GP_TOOL_REF_H

#include <stddef.h>
#include <stdint.h>
#include <gpuport.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- random data (xoshiro256** seeded by splitmix64) ---------------------------- */
typedef struct gp_ref_rng {
  uint64_t s[4];
} gp_ref_rng_t;

void gp_ref_rng_seed(gp_ref_rng_t *rng, uint64_t seed);
uint64_t gp_ref_rng_next(gp_ref_rng_t *rng);
/* Uniform in [lo, hi). */
double gp_ref_rng_uniform(gp_ref_rng_t *rng, double lo, double hi);
/* A seed from the clock and pid, or from GP_TEST_SEED when set (for replay). */
uint64_t gp_ref_default_seed(void);

/* Fills n elements of dtype (f32, f64, f16, bf16) with uniform values in [lo, hi),
 * never exactly zero; the values are representable in dtype. */
void gp_ref_fill(void *dst, gp_dtype_t dtype, size_t n, gp_ref_rng_t *rng, double lo, double hi);
/* Reads element i of a dtype array as double. */
double gp_ref_load(const void *src, gp_dtype_t dtype, size_t i);
/* Writes v rounded to dtype at element i. */
void gp_ref_store(void *dst, gp_dtype_t dtype, size_t i, double v);
/* Poisons n elements with NaN (floating types) so unwritten outputs are caught. */
void gp_ref_poison(void *dst, gp_dtype_t dtype, size_t n);
/* Unit roundoff of dtype: 2^-24 f32, 2^-11 f16, 2^-8 bf16, 2^-53 f64. */
double gp_ref_unit_roundoff(gp_dtype_t dtype);

/* Result of comparing got against a float64 reference element by element. */
typedef struct gp_ref_cmp {
  size_t n;            /* elements compared */
  size_t n_bad;        /* elements over their bound, NaN, or unwritten (poison) */
  size_t first_bad;    /* index of the first bad element (valid when n_bad > 0) */
  double got_bad;      /* its value */
  double ref_bad;      /* its reference */
  double bound_bad;    /* its bound */
  double max_abs_err;  /* max |got - ref| */
  double rel_norm_err; /* ||got - ref||_2 / ||ref||_2 (0 when ref is 0) */
} gp_ref_cmp_t;

/* Compares got (dtype) with ref (f64) where element i must satisfy
 * |got_i - ref_i| <= bound_i; bound may be NULL to use abs_bound for all. */
void gp_ref_compare(gp_ref_cmp_t *out, const void *got, gp_dtype_t dtype, const double *ref,
                    const double *bound, double abs_bound, size_t n);
/* One line: "n_bad=.. first_bad=.. (got .. ref .. bound ..) max_abs=.. rel_norm=.." */
void gp_ref_cmp_format(const gp_ref_cmp_t *c, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* GP_TOOL_REF_H */
