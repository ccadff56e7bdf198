/*
 * selftest.h - what the checks of `gpuport selftest` share: the per-check context,
 * failure recording, the injection point and element-wise comparison.
 *
 * A check gets fresh random data from its own generator, seeded from the run's seed
 * and the check's name (so `--seed` replays any subset of checks), calls the library,
 * copies the output to the host, calls st_compare*() against a float64 reference, and
 * releases what it acquired. GP_SELFTEST_INJECT=<name> makes st_compare*() and
 * st_expect_status() corrupt what they were given before comparing, so the check must
 * fail: a selftest that cannot fail proves nothing.
 */
#ifndef GP_TOOL_SELFTEST_H
#define GP_TOOL_SELFTEST_H

#include "ref.h"
#include "tool.h"

typedef struct st_ctx {
  const char *name;   /* check name, e.g. "runtime.memset" */
  uint64_t seed;      /* this check's seed (derived from the run's seed and name) */
  gp_ref_rng_t rng;   /* seeded with seed */
  bool quick;         /* --quick: smaller shapes */
  bool big;           /* a GPU backend: model-sized shapes */
  bool inject;        /* GP_SELFTEST_INJECT names this check */
  bool injected;      /* an injection point was reached */
  bool failed;
  double worst_rel;   /* largest relative norm error seen by st_compare() */
  char summary[640];  /* error summary of the first failure, else of the last comparison */
} st_ctx_t;

typedef void (*st_fn_t)(st_ctx_t *c, const void *arg);

typedef struct st_check {
  const char *name;
  st_fn_t fn;
  const void *arg;
} st_check_t;

/* Records a failure (the first one's text is kept as the summary). */
void st_fail(st_ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets the summary of a passing check (unless a failure was recorded). */
void st_note(st_ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Evaluates a gpuport call; on failure records "expr: STATUS: message" and jumps to
 * the check's `out:` label. */
#define ST_TRY(c, expr)                                                                  \
  do {                                                                                   \
    gp_status_t st_s_ = (expr);                                                          \
    if (st_s_ != GP_SUCCESS) {                                                           \
      st_fail((c), "%s: %s: %s", #expr, gp_status_name(st_s_), gp_last_error_message());  \
      goto out;                                                                          \
    }                                                                                    \
  } while (0)

/* Corrupts element n/2 of got when the check is injected (after the library call,
 * before the comparison). */
void st_inject(st_ctx_t *c, void *got, gp_dtype_t dtype, size_t n);
/* Compares got (dtype, host memory) with the float64 ref element by element
 * (|got - ref| <= bound[i], or abs_bound when bound is NULL) and, when rel_tol > 0,
 * the relative norm error ||got - ref|| / ||ref|| against rel_tol; what names the output. */
bool st_compare(st_ctx_t *c, const char *what, void *got, gp_dtype_t dtype, const double *ref,
                const double *bound, double abs_bound, size_t n, double rel_tol);
/* Compares bytes exactly. */
bool st_compare_bytes(st_ctx_t *c, const char *what, unsigned char *got,
                      const unsigned char *ref, size_t n);
/* Expects status want from the call named what. */
bool st_expect_status(st_ctx_t *c, const char *what, gp_status_t got, gp_status_t want);

/* Fills a host array with fresh uniform values in [lo, hi) (representable in dtype). */
void *st_random(st_ctx_t *c, gp_dtype_t dtype, size_t n, double lo, double hi);

/* The checks, by module. Each table ends with a zero entry. */
extern const st_check_t st_runtime_checks[];
extern const st_check_t st_convert_checks[];
extern const st_check_t st_kernel_checks[];
extern const st_check_t st_gemm_checks[];
extern const st_check_t st_attention_checks[];
extern const st_check_t st_graph_checks[];
extern const st_check_t st_comm_checks[];

#endif /* GP_TOOL_SELFTEST_H */
