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

/* ---- the GEMM and attention runners (selftest_gemm.c, selftest_attention.c), also
 * used by `selftest --kernels` (selftest_kernels.c) ----------------------------------- */
typedef enum { ST_API_GEMM, ST_API_BATCHED, ST_API_EX } st_gemm_api_t;

typedef struct st_gemm_case {
  gp_layout_t layout;
  gp_op_t ta, tb;
  int64_t m, n, k, pad; /* pad: leading dimensions exceed their minimum by this much */
  gp_dtype_t in, out;
  float alpha, beta;
  gp_epilogue_t epi;
  gp_dtype_t bias_type;
  int64_t batch;
  bool bcast_b; /* stride_b = 0 */
  st_gemm_api_t api;
  bool align8;  /* leading dimensions and batch strides of A and B rounded up to
                   multiples of 8 elements (16-byte rows: cp.async, TMA) */
  bool tf32;    /* GP_COMPUTE_TF32 (ST_API_EX): inputs may be rounded to tf32 */
} st_gemm_case_t;
/* One GEMM case against the float64 reference (C poisoned when beta == 0, padding
 * checked untouched); sample_rows > 0 compares that many rows only. */
bool st_gemm_run(st_ctx_t *c, const st_gemm_case_t *g, int64_t sample_rows);

typedef struct st_attn_case {
  gp_dtype_t dtype;
  int64_t batch, sq, sk, hq, hkv, d, dv;
  int causal;
  int64_t wl, wr;
  float scale;
  bool lse;
  const int32_t *len_q, *len_k; /* varlen: batch lengths each, or NULL */
} st_attn_case_t;
/* The forward (o and lse) and the backward (dq, dk, dv; twice, compared bit for bit,
 * when deterministic) of one case against the float64 references. */
bool st_attn_fwd(st_ctx_t *c, const st_attn_case_t *a);
bool st_attn_bwd(st_ctx_t *c, const st_attn_case_t *a, bool deterministic);

/* ---- attention over a paged KV cache (selftest_kvcache.c) --------------------------- */
#define ST_KV_MAXB 6
typedef struct st_kv_case {
  gp_dtype_t dtype;
  int64_t batch, sq, hq, hkv, d, page;
  int32_t cached[ST_KV_MAXB]; /* cache_seqlens, batch of them */
  int64_t snew;               /* tokens appended per sequence through k_new / v_new */
  int causal;
  int64_t wl, wr;
  int splits;                 /* num_splits (0: gpuport's choice) */
} st_kv_case_t;
/* One gp_attention_fwd_kvcache call (shuffled block table, NaN in every unwritten slot,
 * the append, the splits) against the float64 reference: o, lse, and both caches after
 * the append byte for byte. */
bool st_kv_fwd(st_ctx_t *c, const st_kv_case_t *k);

/* ---- `selftest --hardware` and `selftest --kernels` --------------------------------- */
int tool_selftest_hardware(int argc, char **argv); /* selftest_hardware.c */
int tool_selftest_kernels(int argc, char **argv);  /* selftest_kernels.c */
/* FNV-1a of s: a check's seed is the run's seed XOR the hash of its name. */
uint64_t st_name_hash(const char *s);

/* The checks, by module. Each table ends with a zero entry. */
extern const st_check_t st_runtime_checks[];
extern const st_check_t st_convert_checks[];
extern const st_check_t st_kernel_checks[];
extern const st_check_t st_gemm_checks[];
extern const st_check_t st_attention_checks[];
extern const st_check_t st_graph_checks[];
extern const st_check_t st_comm_checks[];

#endif /* GP_TOOL_SELFTEST_H */
