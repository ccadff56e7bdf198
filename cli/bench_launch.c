/*
 * bench_launch.c - `gpuport bench launch`: what running a dialect kernel costs, each
 * figure against a plain C loop over the same arrays in the same process (on the CPU
 * backend device memory is host memory, so the loop reads the kernel's own arrays):
 *   - vector add of 2^24 floats, and a fused multiply-add with erf-GELU over 2^24
 *     floats (one thread per element, blocks of 256);
 *   - a reduction of 2^24 floats with shuffles, shared memory and a barrier (64 elements
 *     per thread; elements per second), and the cost of one __syncthreads for blocks of
 *     256 and 1024 threads;
 *   - the latency of an empty kernel (launch + synchronize) and the cost of a launch in
 *     a stream of launches;
 *   - microseconds per kernel of a chain of --kernels small dependent kernels on one
 *     stream, enqueued one by one and replayed as one graph (gpuport/graph.h).
 * Kernels: kernels/portable/bench.cu. Times are host wall-clock medians of --iters runs
 * after --warmup, each run from launch to the end of gp_stream_synchronize.
 */
#include "tool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

GP_KERNEL_DECLARE(gp__bench_vadd);
GP_KERNEL_DECLARE(gp__bench_fma_gelu);
GP_KERNEL_DECLARE(gp__bench_reduce);
GP_KERNEL_DECLARE(gp__bench_barriers);
GP_KERNEL_DECLARE(gp__bench_empty);
GP_KERNEL_DECLARE(gp__bench_increment);

/* ---- the plain loops (called through volatile pointers: nothing is hoisted or fused) ----- */
static void loop_vadd(int n, const float *a, const float *b, float *c) {
  for (int i = 0; i < n; i++) c[i] = a[i] + b[i];
}
static void loop_fma_gelu(int n, const float *a, const float *x, const float *b, float *y) {
  for (int i = 0; i < n; i++) {
    float v = fmaf(a[i], x[i], b[i]);
    y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  }
}
static float loop_sum(long long n, const float *x) {
  float s = 0.0f;
  for (long long i = 0; i < n; i++) s += x[i];
  return s;
}
static void (*volatile p_vadd)(int, const float *, const float *, float *) = loop_vadd;
static void (*volatile p_gelu)(int, const float *, const float *, const float *, float *) = loop_fma_gelu;
static float (*volatile p_sum)(long long, const float *) = loop_sum;
static volatile float g_sink;

typedef struct lb_opts {
  int64_t iters, warmup;
  bool json;
  int64_t kernels; /* length of the chain */
} lb_opts_t;

static int n_out;

static void emit(const lb_opts_t *o, const char *name, const char *shape, double ms, const char *unit,
                 double value, double loop_ms) {
  if (o->json) {
    printf("%s\n    {\"bench\": \"launch\", \"name\": \"%s\", \"shape\": \"%s\", \"median_ms\": %.6f", n_out ? "," : "",
           name, shape, ms);
    if (unit) printf(", \"%s\": %.6g", unit, value);
    if (loop_ms > 0) printf(", \"plain_loop_ms\": %.6f, \"ratio\": %.3f", loop_ms, ms / loop_ms);
    printf("}");
  } else {
    printf("%-22s %-28s %11.4f ms", name, shape, ms);
    if (unit) printf("  %12.4g %s", value, unit);
    if (loop_ms > 0) printf("  plain C loop %.4f ms, ratio %.2f", loop_ms, ms / loop_ms);
    printf("\n");
  }
  fflush(stdout);
  n_out++;
}

/* Median over o->iters of one gp_launch + synchronize, in ms. */
static gp_status_t time_kernel(const lb_opts_t *o, gp_kernel_t k, gp_dim3_t grid, gp_dim3_t block, void **args,
                               gp_stream_t s, double *ms) {
  double *v = calloc((size_t)o->iters, sizeof(double));
  if (!v) return GP_ERROR_OUT_OF_MEMORY;
  gp_status_t st = GP_SUCCESS;
  for (int64_t i = 0; i < o->warmup + o->iters && st == GP_SUCCESS; i++) {
    double t0 = tool_now_ms();
    st = gp_launch(k, grid, block, 0, s, args);
    if (st == GP_SUCCESS) st = gp_stream_synchronize(s);
    if (i >= o->warmup) v[i - o->warmup] = tool_now_ms() - t0;
  }
  *ms = tool_median(v, (int)o->iters);
  free(v);
  return st;
}

/* Median of the plain loop fn(ctx) over o->iters, in ms. */
typedef void (*loop_fn)(void *ctx);
static double time_loop(const lb_opts_t *o, loop_fn fn, void *ctx) {
  double *v = calloc((size_t)o->iters, sizeof(double)), med = 0;
  if (!v) return 0;
  for (int64_t i = 0; i < o->warmup + o->iters; i++) {
    double t0 = tool_now_ms();
    fn(ctx);
    if (i >= o->warmup) v[i - o->warmup] = tool_now_ms() - t0;
  }
  med = tool_median(v, (int)o->iters);
  free(v);
  return med;
}

typedef struct arrays {
  int n;
  float *a, *b, *x, *y; /* what the loops read and write */
} arrays_t;
static void run_vadd(void *p) {
  arrays_t *r = p;
  p_vadd(r->n, r->a, r->b, r->y);
}
static void run_gelu(void *p) {
  arrays_t *r = p;
  p_gelu(r->n, r->a, r->x, r->b, r->y);
}
static void run_sum(void *p) {
  arrays_t *r = p;
  g_sink = p_sum(r->n, r->x);
}

static int bench_launch_run(const lb_opts_t *o, gp_stream_t s) {
  const int n = 1 << 24;
  const size_t bytes = (size_t)n * sizeof(float);
  const bool cpu = gp_backend() == GP_BACKEND_CPU;
  int rc = 0;
  float *h = malloc(bytes), *da = NULL, *db = NULL, *dx = NULL, *dy = NULL, *dsum = NULL;
  float *ha = NULL, *hb = NULL, *hx = NULL, *hy = NULL;
  int *dcount = NULL;
  if (!h) return 1;
  for (int i = 0; i < n; i++) h[i] = 0.001f * (float)((i % 2001) - 1000) + 0.0005f;
  TOOL_TRY(tool_upload((void **)&da, h, bytes));
  TOOL_TRY(tool_upload((void **)&db, h, bytes));
  TOOL_TRY(tool_upload((void **)&dx, h, bytes));
  TOOL_TRY(gp_malloc((void **)&dy, bytes));
  TOOL_TRY(gp_malloc((void **)&dsum, sizeof(float)));
  TOOL_TRY(gp_malloc((void **)&dcount, sizeof(int)));
  /* The loops' arrays: the kernel's own on the CPU backend, host copies elsewhere. */
  if (cpu) {
    ha = da, hb = db, hx = dx, hy = dy;
  } else {
    ha = malloc(bytes), hb = malloc(bytes), hx = malloc(bytes), hy = malloc(bytes);
    if (!ha || !hb || !hx || !hy) {
      rc = 1;
      goto out;
    }
    memcpy(ha, h, bytes), memcpy(hb, h, bytes), memcpy(hx, h, bytes);
  }
  arrays_t arr = {n, ha, hb, hx, hy};
  char shape[64];
  double ms = 0, loop = 0;

  /* Element-wise kernels. */
  int nn = n;
  gp_dim3_t grid = gp_dim3((unsigned)(n / 256), 1, 1), block = gp_dim3(256, 1, 1);
  void *vargs[] = {&nn, &da, &db, &dy};
  TOOL_TRY(time_kernel(o, GP_KERNEL_REF(gp__bench_vadd), grid, block, vargs, s, &ms));
  loop = time_loop(o, run_vadd, &arr);
  emit(o, "vector add", "2^24 f32, blocks of 256", ms, "GB/s", 3.0 * (double)bytes / ms * 1e-6, loop);
  void *gargs[] = {&nn, &da, &dx, &db, &dy};
  TOOL_TRY(time_kernel(o, GP_KERNEL_REF(gp__bench_fma_gelu), grid, block, gargs, s, &ms));
  loop = time_loop(o, run_gelu, &arr);
  emit(o, "fma + erf-GELU", "2^24 f32, blocks of 256", ms, "Gelem/s", (double)n / ms * 1e-6, loop);

  /* Reduction: 64 elements per thread in a grid-stride loop (a grid of a few blocks per
   * multiprocessor, as reductions are launched). */
  long long nl = n;
  for (unsigned threads = 256; threads <= 1024; threads *= 4) {
    unsigned blocks = (unsigned)(n / (threads * 64));
    void *rargs[] = {&nl, &dx, &dsum};
    TOOL_TRY(gp_memset(dsum, 0, sizeof(float)));
    TOOL_TRY(time_kernel(o, GP_KERNEL_REF(gp__bench_reduce), gp_dim3(blocks, 1, 1), gp_dim3(threads, 1, 1), rargs, s,
                         &ms));
    loop = time_loop(o, run_sum, &arr);
    snprintf(shape, sizeof shape, "2^24 f32, blocks of %u", threads);
    emit(o, "reduction", shape, ms, "Gelem/s", (double)n / ms * 1e-6, loop);
  }

  /* One barrier: (t(iters) - t(0)) / iters for one block. */
  for (unsigned threads = 256; threads <= 1024; threads *= 4) {
    int iters = cpu ? 2000 : 20000, zero = 0;
    double ms0 = 0;
    void *bargs[] = {&iters, &dcount}, *b0args[] = {&zero, &dcount};
    TOOL_TRY(time_kernel(o, GP_KERNEL_REF(gp__bench_barriers), gp_dim3(1, 1, 1), gp_dim3(threads, 1, 1), bargs, s, &ms));
    TOOL_TRY(time_kernel(o, GP_KERNEL_REF(gp__bench_barriers), gp_dim3(1, 1, 1), gp_dim3(threads, 1, 1), b0args, s,
                         &ms0));
    double per = (ms - ms0) / iters;
    snprintf(shape, sizeof shape, "one block of %u threads", threads);
    emit(o, "__syncthreads", shape, per, "ns/thread", per * 1e6 / threads, 0);
  }

  /* Launch latency, alone and in a stream of launches. */
  TOOL_TRY(time_kernel(o, GP_KERNEL_REF(gp__bench_empty), gp_dim3(1, 1, 1), gp_dim3(1, 1, 1), NULL, s, &ms));
  emit(o, "empty kernel", "1 x 1, launch + synchronize", ms, "us", ms * 1e3, 0);
  {
    const int burst = 1000;
    double *v = calloc((size_t)o->iters, sizeof(double));
    if (!v) {
      rc = 1;
      goto out;
    }
    for (int64_t r = 0; r < o->iters && rc == 0; r++) {
      double t0 = tool_now_ms();
      for (int i = 0; i < burst; i++) {
        gp_status_t st = gp_launch(GP_KERNEL_REF(gp__bench_empty), gp_dim3(1, 1, 1), gp_dim3(1, 1, 1), 0, s, NULL);
        if (st != GP_SUCCESS) {
          tool_report(__func__, "gp_launch", st);
          rc = 1;
          break;
        }
      }
      if (rc == 0 && gp_stream_synchronize(s) != GP_SUCCESS) rc = 1;
      v[r] = (tool_now_ms() - t0) / burst;
    }
    ms = tool_median(v, (int)o->iters);
    free(v);
    if (rc) goto out;
    emit(o, "empty kernel", "1 x 1, each of 1000 launches", ms, "us", ms * 1e3, 0);
  }
out:
  gp_free(da), gp_free(db), gp_free(dx), gp_free(dy), gp_free(dsum), gp_free(dcount);
  if (!cpu) free(ha), free(hb), free(hx), free(hy);
  free(h);
  return rc;
}

/* ---- a chain of kernels: plain launches against graph replay ------------------------------ */

typedef struct chain_ctx {
  int64_t kernels;
  int n;
  float *x;
  gp_graph_exec_t exec;
} chain_ctx_t;

typedef gp_status_t (*enqueue_fn)(void *ctx, gp_stream_t s);

static gp_status_t run_chain(void *p, gp_stream_t s) {
  chain_ctx_t *c = p;
  void *args[] = {&c->n, &c->x};
  for (int64_t i = 0; i < c->kernels; i++) {
    gp_status_t st = gp_launch(GP_KERNEL_REF(gp__bench_increment), gp_dim3(1, 1, 1),
                               gp_dim3((unsigned)c->n, 1, 1), 0, s, args);
    if (st != GP_SUCCESS) return st;
  }
  return GP_SUCCESS;
}

static gp_status_t run_graph(void *p, gp_stream_t s) { return gp_graph_launch(((chain_ctx_t *)p)->exec, s); }

/* Median over o->iters of fn + synchronize, host clock, in ms. */
static gp_status_t time_wall(const lb_opts_t *o, enqueue_fn fn, void *ctx, gp_stream_t s, double *median_ms) {
  gp_status_t st = GP_SUCCESS;
  double *ms = calloc((size_t)o->iters, sizeof(double));
  if (!ms) return GP_ERROR_OUT_OF_MEMORY;
  for (int64_t i = 0; i < o->warmup + o->iters && st == GP_SUCCESS; i++) {
    double t0 = tool_now_ms();
    if ((st = fn(ctx, s)) == GP_SUCCESS) st = gp_stream_synchronize(s);
    if (i >= o->warmup) ms[i - o->warmup] = tool_now_ms() - t0;
  }
  if (st == GP_SUCCESS) *median_ms = tool_median(ms, (int)o->iters);
  free(ms);
  return st;
}

/* Every element was incremented once per kernel run: the chain ran, completely. */
static int check_chain(const chain_ctx_t *c, double runs) {
  float h[256];
  if (gp_memcpy(h, c->x, (size_t)c->n * sizeof(float)) != GP_SUCCESS) return 1;
  for (int i = 0; i < c->n; i++)
    if ((double)h[i] != runs) {
      fprintf(stderr, "gpuport bench launch: x[%d] is %g after %.0f kernel runs\n", i, (double)h[i], runs);
      return 1;
    }
  return 0;
}

static int bench_chain(const lb_opts_t *o, gp_stream_t s) {
  chain_ctx_t c = {o->kernels, 256, NULL, NULL};
  gp_graph_t g = NULL;
  int rc = 0;
  double ms = 0, runs = 0;
  char shape[64];
  TOOL_TRY(gp_malloc((void **)&c.x, (size_t)c.n * sizeof(float)));
  TOOL_TRY(gp_memset(c.x, 0, (size_t)c.n * sizeof(float)));
  snprintf(shape, sizeof shape, "chain of %lld, plain launches", (long long)c.kernels);
  TOOL_TRY(time_wall(o, run_chain, &c, s, &ms));
  runs += (double)(o->warmup + o->iters) * (double)c.kernels;
  emit(o, "kernel chain", shape, ms, "us/kernel", ms * 1e3 / (double)c.kernels, 0);
  double t0 = tool_now_ms();
  TOOL_TRY(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  gp_status_t cst = run_chain(&c, s);
  gp_status_t est = gp_stream_end_capture(s, &g); /* ends the capture even when cst failed */
  TOOL_TRY(cst);
  TOOL_TRY(est);
  TOOL_TRY(gp_graph_instantiate(&c.exec, g));
  double build_ms = tool_now_ms() - t0;
  snprintf(shape, sizeof shape, "chain of %lld, graph replay", (long long)c.kernels);
  TOOL_TRY(time_wall(o, run_graph, &c, s, &ms));
  runs += (double)(o->warmup + o->iters) * (double)c.kernels;
  emit(o, "kernel chain", shape, ms, "us/kernel", ms * 1e3 / (double)c.kernels, 0);
  if (!o->json) printf("  (capture and instantiation of the graph, once: %.3f ms)\n", build_ms);
  rc = check_chain(&c, runs);
out:
  gp_graph_exec_destroy(c.exec);
  gp_graph_destroy(g);
  gp_free(c.x);
  return rc;
}

int tool_bench_launch(int64_t iters, int64_t warmup, bool json, int64_t kernels, gp_stream_t s) {
  lb_opts_t o = {iters, warmup, json, kernels};
  int rc = bench_launch_run(&o, s);
  return rc ? rc : bench_chain(&o, s);
}
