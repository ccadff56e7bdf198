/*
 * selftest_graph.c - graphs and runtime compilation: a captured fork/join of kernels,
 * copies and a host function replayed several times with fresh inputs; and a dialect
 * kernel compiled at run time (NVRTC, hipRTC or the host compiler) with a constant set
 * by a compile option, compared with float64, plus a source that must not compile.
 */
#include "selftest.h"

#include <dirent.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

GP_KERNEL_DECLARE(gp__bench_increment);

static void count_run(void *p) { atomic_fetch_add((atomic_int *)p, 1); }

/* origin: H2D copy; fork: branch 1 adds 1 (k1 times), branch 2 copies into a second
 * buffer and adds 1 (k2 times); join: D2H copies and a host function. */
static void check_graph(st_ctx_t *c, const void *arg) {
  (void)arg;
  enum { N = 256, K1 = 3, K2 = 5, REPLAYS = 4 };
  gp_stream_t s0 = NULL, s1 = NULL, s2 = NULL;
  gp_event_t fork = NULL, j1 = NULL, j2 = NULL;
  gp_graph_t g = NULL;
  gp_graph_exec_t x = NULL;
  float *a = NULL, *b = NULL, *in = NULL, *outa = malloc(N * 4), *outb = malloc(N * 4);
  double *ref = malloc(N * sizeof(double));
  atomic_int runs;
  atomic_init(&runs, 0);
  int n = N;
  void *args_a[] = {&n, &a}, *args_b[] = {&n, &b};
  if (!outa || !outb || !ref) {
    st_fail(c, "host allocation failed");
    goto out;
  }
  ST_TRY(c, gp_stream_create(&s0));
  ST_TRY(c, gp_stream_create(&s1));
  ST_TRY(c, gp_stream_create(&s2));
  ST_TRY(c, gp_event_create(&fork));
  ST_TRY(c, gp_event_create(&j1));
  ST_TRY(c, gp_event_create(&j2));
  ST_TRY(c, gp_malloc((void **)&a, N * 4));
  ST_TRY(c, gp_malloc((void **)&b, N * 4));
  ST_TRY(c, gp_malloc_host((void **)&in, N * 4));
  ST_TRY(c, gp_stream_begin_capture(s0, GP_CAPTURE_MODE_GLOBAL));
  ST_TRY(c, gp_memcpy_async(a, in, N * 4, s0));
  ST_TRY(c, gp_event_record(fork, s0));
  ST_TRY(c, gp_stream_wait_event(s1, fork));
  ST_TRY(c, gp_stream_wait_event(s2, fork));
  for (int i = 0; i < K1; i++)
    ST_TRY(c, gp_launch(GP_KERNEL_REF(gp__bench_increment), gp_dim3(1, 1, 1), gp_dim3(N, 1, 1), 0,
                        s1, args_a));
  ST_TRY(c, gp_memcpy_async(b, in, N * 4, s2));
  for (int i = 0; i < K2; i++)
    ST_TRY(c, gp_launch(GP_KERNEL_REF(gp__bench_increment), gp_dim3(1, 1, 1), gp_dim3(N, 1, 1), 0,
                        s2, args_b));
  ST_TRY(c, gp_event_record(j1, s1));
  ST_TRY(c, gp_event_record(j2, s2));
  ST_TRY(c, gp_stream_wait_event(s0, j1));
  ST_TRY(c, gp_stream_wait_event(s0, j2));
  ST_TRY(c, gp_memcpy_async(outa, a, N * 4, s0));
  ST_TRY(c, gp_memcpy_async(outb, b, N * 4, s0));
  ST_TRY(c, gp_launch_host_func(s0, count_run, &runs));
  ST_TRY(c, gp_stream_end_capture(s0, &g));
  ST_TRY(c, gp_graph_instantiate(&x, g));
  size_t nodes = 0;
  ST_TRY(c, gp_graph_get_node_count(g, &nodes));
  if (nodes != 2 + K1 + K2 + 3) st_fail(c, "the graph has %zu nodes, expected %d", nodes, 2 + K1 + K2 + 3);
  for (int r = 0; r < REPLAYS && !c->failed; r++) {
    float *h = st_random(c, GP_F32, N, -4.0, 4.0);
    if (h == NULL) {
      st_fail(c, "host allocation failed");
      goto out;
    }
    memcpy(in, h, N * 4);
    free(h);
    gp_ref_poison(outa, GP_F32, N);
    gp_ref_poison(outb, GP_F32, N);
    ST_TRY(c, gp_graph_launch(x, s0));
    ST_TRY(c, gp_stream_synchronize(s0));
    for (int i = 0; i < N; i++) ref[i] = (double)in[i] + K1;
    /* |values| < 16: each addition rounds by at most 2^-20 */
    if (!st_compare(c, "branch 1", outa, GP_F32, ref, NULL, (K1 + 1) * 0x1.0p-20, N, 0.0)) goto out;
    for (int i = 0; i < N; i++) ref[i] = (double)in[i] + K2;
    if (!st_compare(c, "branch 2", outb, GP_F32, ref, NULL, (K2 + 1) * 0x1.0p-20, N, 0.0)) goto out;
  }
  if (atomic_load(&runs) != REPLAYS) st_fail(c, "the host function ran %d times, not %d", atomic_load(&runs), REPLAYS);
  st_note(c, "fork/join of %zu nodes over 3 streams, replayed %d times", nodes, REPLAYS);
out:
  gp_graph_exec_destroy(x);
  gp_graph_destroy(g);
  gp_event_destroy(fork), gp_event_destroy(j1), gp_event_destroy(j2);
  gp_stream_destroy(s0), gp_stream_destroy(s1), gp_stream_destroy(s2);
  gp_free(a), gp_free(b), gp_free_host(in);
  free(outa), free(outb), free(ref);
}

static const char rtc_source[] =
    "#include <gpuport/kernel.h>\n"
    "GP_KERNEL void st_rtc_affine(int n, const float *x, float *y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = (float)ST_SCALE * x[i] + 1.0f;\n"
    "}\n"
    "GP_KERNEL_EXPORT(st_rtc_affine)\n";

/* Removes dir and the files in it. */
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL) return;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    char p[600];
    if (e->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

/* Runtime compilation with a constant from an option (a fresh value each run: a stale
 * cached build would give the old one), in a cache directory of its own. */
static void check_compile(st_ctx_t *c, const void *arg) {
  (void)arg;
  enum { N = 1000 };
  int scale = 2 + (int)gp_ref_rng_uniform(&c->rng, 0, 1000);
  char opt[64], cache[256] = "", *log = NULL;
  const char *old = getenv("GP_CACHE_DIR");
  char *saved = old ? strdup(old) : NULL;
  snprintf(opt, sizeof opt, "-DST_SCALE=%d", scale);
  const char *opts[] = {opt};
  gp_module_t m = NULL, bad = NULL;
  gp_kernel_t k = NULL;
  float *x = st_random(c, GP_F32, N, -1.0, 1.0), *y = malloc(N * 4), *dx = NULL, *dy = NULL;
  double *ref = malloc(N * sizeof(double)), *bound = malloc(N * sizeof(double));
  if (!x || !y || !ref || !bound) {
    st_fail(c, "host allocation failed");
    goto out;
  }
  if (gp_backend() == GP_BACKEND_CPU) {
    const char *tmp = getenv("TMPDIR");
    snprintf(cache, sizeof cache, "%s/gpuport-selftest-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(cache) == NULL) {
      st_fail(c, "cannot create a cache directory in %s", cache);
      goto out;
    }
    setenv("GP_CACHE_DIR", cache, 1);
  }
  ST_TRY(c, gp_program_compile(&m, rtc_source, "st_rtc.cu", opts, 1, &log));
  ST_TRY(c, gp_module_get_kernel(&k, m, "st_rtc_affine"));
  ST_TRY(c, tool_upload((void **)&dx, x, N * 4));
  ST_TRY(c, gp_malloc((void **)&dy, N * 4));
  int n = N;
  void *args[] = {&n, &dx, &dy};
  ST_TRY(c, gp_launch(k, gp_dim3((N + 127) / 128, 1, 1), gp_dim3(128, 1, 1), 0, NULL, args));
  gp_ref_poison(y, GP_F32, N);
  ST_TRY(c, gp_memcpy(y, dy, N * 4));
  for (int i = 0; i < N; i++) {
    ref[i] = (double)scale * x[i] + 1.0;
    bound[i] = 2 * 0x1.0p-24 * (fabs((double)scale * x[i]) + 1.0);
  }
  if (!st_compare(c, "y = scale x + 1", y, GP_F32, ref, bound, 0.0, N, 0.0)) goto out;
  char *blog = NULL;
  gp_status_t st = gp_program_compile(&bad, "GP_KERNEL void broken(\n", "broken.cu", NULL, 0, &blog);
  bool logged = blog != NULL;
  free(blog);
  if (!st_expect_status(c, "gp_program_compile(a syntax error)", st, GP_ERROR_INVALID_IMAGE)) goto out;
  if (!logged) st_fail(c, "a failed compile gave no log");
  st_note(c, "-DST_SCALE=%d compiled by the %s backend's compiler: %d outputs ok; a syntax error "
          "is GP_ERROR_INVALID_IMAGE with a log", scale, gp_backend_name(), N);
out:
  gp_module_unload(m);
  gp_module_unload(bad);
  gp_free(dx), gp_free(dy);
  free(x), free(y), free(ref), free(bound), free(log);
  if (cache[0]) { /* restore the caller's setting, remove the run's cache */
    if (saved)
      setenv("GP_CACHE_DIR", saved, 1);
    else
      unsetenv("GP_CACHE_DIR");
    remove_dir(cache);
  }
  free(saved);
}

const st_check_t st_graph_checks[] = {
    {"graph.fork_join_replay", check_graph, NULL},
    {"module.compile", check_compile, NULL},
    {NULL, NULL, NULL},
};
