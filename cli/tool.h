/*
 * tool.h - shared by the files of the `gpuport` program: subcommand entry points,
 * checked gpuport calls, timing and small argument helpers.
 */
#ifndef GP_TOOL_H
#define GP_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <gpuport.h>

/* ---- subcommands (each returns the process exit status) -------------------------- */
int tool_info(int argc, char **argv);
int tool_selftest(int argc, char **argv);
int tool_bench(int argc, char **argv);
int tool_demo(int argc, char **argv);
int tool_embed(int argc, char **argv);       /* embed.c: all-MiniLM-L6-v2 embeddings */
int tool_bench_embed(int argc, char **argv); /* embed.c: `bench embed` (argv[1] is "embed") */
int tool_monitor(int argc, char **argv);     /* monitor.c: telemetry table, JSON, exporter */
int tool_bench_telemetry(int argc, char **argv); /* monitor.c: `bench telemetry` */
/* `gpuport bench launch` (cli/bench_launch.c), called by tool_bench with its options;
 * kernels: the length of the chain replayed as a graph. */
int tool_bench_launch(int64_t iters, int64_t warmup, bool json, int64_t kernels, gp_stream_t s);
/* `gpuport bench allreduce|allgather|reducescatter|alltoall|broadcast`: argv[1] names the
 * collective; returns -1 when it names none of them (another benchmark). */
int tool_bench_comm(int argc, char **argv);
const char *gp_reduce_op_name_tool(gp_reduce_op_t op);

/* ---- the bench timer (bench.c) and `bench attention --paged` (bench_paged.c) ---------- */
/* Enqueues one run of a benchmarked call on s. */
typedef gp_status_t (*tool_enqueue_fn)(void *ctx, gp_stream_t s);
/* warmup untimed runs of fn, then iters runs each between two events on s: the median
 * in *median_ms (a progress line on stderr when the runs take over 2 s in all). */
gp_status_t tool_time_runs(int64_t iters, int64_t warmup, const char *label, tool_enqueue_fn fn, void *ctx,
                           gp_stream_t s, double *median_ms);

/* The options of `bench attention --paged`; a list with n == 0 takes its default. */
typedef struct tool_paged_opts {
  int64_t iters, warmup;
  bool json;
  int64_t batch[16], context[16], seqlen_q[16];
  int n_batch, n_context, n_seqlen_q;
  int64_t heads, kv_heads, head_dim; /* 0: 32, 8, 128 */
  int64_t page_size;                 /* 0: 16 */
  int64_t num_splits;                /* desc.num_splits: 0 gpuport's choice */
  int64_t append;                    /* 1: each call appends seqlen_q tokens (k_new, v_new) */
  gp_dtype_t dtype;
  uint64_t seed;
  double mem_bw_gbps; /* the device's memory bandwidth (GB/s) when given; else a D2D copy is timed */
} tool_paged_opts_t;
int tool_bench_paged(const tool_paged_opts_t *o, gp_stream_t s);

/* ---- checked calls ---------------------------------------------------------------- */
/* Prints "where: expr: GP_ERROR_X: <gp_last_error_message()>" to stderr. */
void tool_report(const char *where, const char *expr, gp_status_t s);

/* Evaluates a gpuport call; on failure reports it, sets `rc` to 1 and jumps to the
 * enclosing function's `out:` label (which releases what was acquired). */
#define TOOL_TRY(expr)                                                                   \
  do {                                                                                   \
    gp_status_t tool_s_ = (expr);                                                        \
    if (tool_s_ != GP_SUCCESS) {                                                         \
      tool_report(__func__, #expr, tool_s_);                                             \
      rc = 1;                                                                            \
      goto out;                                                                          \
    }                                                                                    \
  } while (0)

/* ---- time and sizes --------------------------------------------------------------- */
double tool_now_ms(void);                     /* monotonic clock, milliseconds */
double tool_median(double *v, int n);         /* sorts v in place */
/* The exponent p of the least-squares fit t = c * work^p over n > 1 points (log-log),
 * the scaling a benchmark sweep shows: 1.0 when time grows as the work counted (m*n*k
 * for GEMM, seqlen_q*seqlen_k for attention). NaN for n < 2 or a non-positive value. */
double tool_fit_exponent(const double *work, const double *t, int n);
void tool_fmt_bytes(char *buf, size_t len, double bytes); /* "15.6 GiB" */

/* Prints s as a JSON string (quotes, backslashes escaped; control characters dropped). */
void tool_json_str(const char *s);

/* ---- arguments -------------------------------------------------------------------- */
/* When argv[*i] is `name`, parses the next argument as an integer into *out, advances
 * *i and returns true; exits with status 2 and a message when the value is missing. */
bool tool_arg_i64(int argc, char **argv, int *i, const char *name, int64_t *out);
bool tool_arg_u64(int argc, char **argv, int *i, const char *name, uint64_t *out);
/* Prints "gpuport <cmd>: unknown option '<arg>'" and returns 2. */
int tool_bad_arg(const char *cmd, const char *arg);

/* ---- the kernel each GEMM and attention call chose (kernel_name.c) -------------------- */
/* Before the process's first library call: routes the library's per-call INFO lines to
 * this process. False (why set) when the caller's GP_DEBUG / GP_DEBUG_FILE are kept. */
bool tool_kname_start(char *why, size_t why_len);
/* The kernels chosen since the last take, "op:name, ..." in call order without repeats
 * (op: gemm, fwd, bwd, kvcache); "" when no call was logged, "?" when capture is off. */
void tool_kname_take(char *out, size_t len);
/* The program's path as started (main's argv[0]), for commands that run it again. */
extern const char *tool_argv0;

/* ---- host mirrors of device data ------------------------------------------------------ */
/* gp_malloc + gp_memcpy from host; *dev is NULL on failure. */
gp_status_t tool_upload(void **dev, const void *host, size_t bytes);

/* The anchor for CPU GEMM figures: OpenBLAS cblas_sgemm (row-major, no transposes),
 * found in the process (the CPU library links OpenBLAS). NULL elsewhere. */
typedef void (*tool_sgemm_fn)(int m, int n, int k, float alpha, const float *a, int lda,
                              const float *b, int ldb, float beta, float *c, int ldc);
tool_sgemm_fn tool_anchor_sgemm(void);
/* The same with op(A), op(B) (row-major; ta, tb: transposed); NULL where there is none. */
typedef void (*tool_sgemm_t_fn)(bool ta, bool tb, int m, int n, int k, float alpha, const float *a, int lda,
                                const float *b, int ldb, float beta, float *c, int ldc);
tool_sgemm_t_fn tool_anchor_sgemm_t(void);
/* openblas_get_config() of the OpenBLAS in the process (its version and build), or NULL. */
const char *tool_openblas_config(void);
/* openblas_get_num_threads() of the OpenBLAS in the process, or 0 where there is none. */
int tool_openblas_threads(void);

/* The anchor for GPU GEMM figures (anchor_blas.c): the vendor BLAS, loaded on first use.
 * tool_vendor_gemm_name: "cuBLAS" or "hipBLASLt", or NULL where there is none; _unavailable: NULL when
 * it can run, else why not; tool_vendor_gemm: row-major C = A B (m x k by k x n, dense,
 * type t in and out, f32 accumulation, tf32: TF32 allowed) enqueued on s. */
const char *tool_vendor_gemm_name(void);
const char *tool_vendor_gemm_unavailable(void);
gp_status_t tool_vendor_gemm(gp_stream_t s, int64_t m, int64_t n, int64_t k, gp_dtype_t t,
                             bool tf32, const void *a, const void *b, void *c);

/* The hip backend's attention anchor (anchor_blas.c): one hipBLASLt product C (m x n,
 * column-major, ldc) = op(A) op(B) of one type (f32 accumulation, alpha 1, beta 0), batch
 * strided, on device buffers. Elsewhere create returns NULL with the reason. */
typedef struct tool_lt_shape {
  gp_dtype_t type;
  int trans_a, trans_b;
  int64_t m, n, k, batch;
  const void *a, *b;
  void *c;
  int64_t lda, ldb, ldc, stride_a, stride_b, stride_c;
} tool_lt_shape_t;
typedef struct tool_lt_gemm tool_lt_gemm_t;
/* Loads hipBLASLt (once) and picks its algorithm for the shape; NULL with the reason in
 * why (not the hip backend, library absent, no algorithm). */
tool_lt_gemm_t *tool_lt_gemm_create(const tool_lt_shape_t *shape, char *why, size_t why_len);
/* Enqueues the product on s (an enqueue function for the bench timer; ctx is the plan). */
gp_status_t tool_lt_gemm_run(void *ctx, gp_stream_t s);
void tool_lt_gemm_destroy(tool_lt_gemm_t *g);

#endif /* GP_TOOL_H */
