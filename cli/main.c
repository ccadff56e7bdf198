/*
 * main.c - the `gpuport` program: subcommand dispatch, usage, and the helpers every
 * subcommand shares (tool.h).
 */
#include "tool.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef GP_BUILD_CPU
#include <dlfcn.h>
#endif

static const char usage[] =
    "usage: gpuport <command> [options]\n"
    "\n"
    "commands:\n"
    "  info [--json]                       backend, version, devices and their properties\n"
    "  selftest [--seed N] [--json] [--quick] [--check NAME]\n"
    "                                      check every capability against a float64 reference\n"
    "                                      (GP_SELFTEST_INJECT=<check> corrupts that check's output)\n"
    "  selftest --hardware [--seed N] [--json] [--check NAME]\n"
    "                                      lane probes: each matrix, copy and barrier instruction\n"
    "                                      the kernels use, against the vendors' documented layouts\n"
    "  selftest --kernels [--quick] [--mode M] [--seed N] [--json] [--check NAME]\n"
    "                                      every dispatched kernel family against the float64\n"
    "                                      reference, naming the kernel that ran (cpu: each\n"
    "                                      emulation mode; GP_ENABLE_SM90A=1: sm_90a beside sm_80)\n"
    "  bench gemm|attention|memcpy|launch|embed [--json] [--iters N] [shape options] [--backward]\n"
    "                                      TFLOP/s or GB/s at model shapes (see 'gpuport bench --help')\n"
    "  bench allreduce|allgather|reducescatter|alltoall|broadcast [--check] [--json] [...]\n"
    "                                      collectives over every device, as nccl-tests\n"
    "  bench telemetry [--iters N] [--json] the cost of one telemetry reading per device\n"
    "  demo                                one transformer block forward, timed and verified\n"
    "  embed [--bf16] [--json] SENTENCE... all-MiniLM-L6-v2 sentence embeddings and cosine\n"
    "                                      similarities (needs `make model`; see 'gpuport embed --help')\n"
    "  monitor [-i S] [-c N] [--json]      temperature, power, clocks, memory, utilisation, ECC\n"
    "                                      per device per interval, like nvidia-smi dmon\n"
    "  monitor --prometheus [--listen H:P] the same as a Prometheus exporter (see\n"
    "                                      'gpuport monitor --help')\n"
    "  version                             print the library version and backend\n"
    "  --help                              this text\n"
    "\n"
    "The backend is fixed when the program is built (gpuport-cpu, gpuport-cuda, gpuport-hip).\n";

const char *tool_argv0 = "gpuport";

int main(int argc, char **argv) {
  if (argc > 0 && argv[0]) tool_argv0 = argv[0];
  if (argc < 2) {
    fputs(usage, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    fputs(usage, stdout);
    return 0;
  }
  if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
    int major = 0, minor = 0, patch = 0;
    gp_status_t s = gp_version(&major, &minor, &patch);
    if (s != GP_SUCCESS) {
      tool_report("version", "gp_version", s);
      return 1;
    }
    printf("gpuport %d.%d.%d (backend %s; built against headers %d.%d.%d)\n", major, minor, patch,
           gp_backend_name(), GP_VERSION_MAJOR, GP_VERSION_MINOR, GP_VERSION_PATCH);
    return 0;
  }
  if (!strcmp(cmd, "info")) return tool_info(argc - 1, argv + 1);
  if (!strcmp(cmd, "selftest")) return tool_selftest(argc - 1, argv + 1);
  if (!strcmp(cmd, "bench")) return tool_bench(argc - 1, argv + 1);
  if (!strcmp(cmd, "demo")) return tool_demo(argc - 1, argv + 1);
  if (!strcmp(cmd, "embed")) return tool_embed(argc - 1, argv + 1);
  if (!strcmp(cmd, "monitor")) return tool_monitor(argc - 1, argv + 1);
  fprintf(stderr, "gpuport: unknown command '%s'\n\n", cmd);
  fputs(usage, stderr);
  return 2;
}

/* ---- shared helpers ------------------------------------------------------------------ */

void tool_report(const char *where, const char *expr, gp_status_t s) {
  fprintf(stderr, "gpuport: %s: %s failed: %s: %s\n", where, expr, gp_status_name(s),
          gp_last_error_message());
}

double tool_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double tool_median(double *v, int n) {
  if (n <= 0) return 0.0;
  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double tool_fit_exponent(const double *work, const double *t, int n) {
  if (n < 2) return NAN;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int i = 0; i < n; i++) {
    if (!(work[i] > 0) || !(t[i] > 0)) return NAN;
    double x = log(work[i]), y = log(t[i]);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  double den = n * sxx - sx * sx;
  return den > 0 ? (n * sxy - sx * sy) / den : NAN;
}

void tool_fmt_bytes(char *buf, size_t len, double bytes) {
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    u++;
  }
  snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
}

void tool_json_str(const char *s) {
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') putchar('\\');
    if ((unsigned char)*s >= 0x20) putchar(*s);
  }
  putchar('"');
}

static bool arg_value(int argc, char **argv, int *i, const char *name, const char **val) {
  if (strcmp(argv[*i], name)) return false;
  if (*i + 1 >= argc) {
    fprintf(stderr, "gpuport: option %s needs a value\n", name);
    exit(2);
  }
  *val = argv[++*i];
  return true;
}

bool tool_arg_u64(int argc, char **argv, int *i, const char *name, uint64_t *out) {
  const char *v;
  if (!arg_value(argc, argv, i, name, &v)) return false;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 0);
  if (errno || *end || *v == '-') {
    fprintf(stderr, "gpuport: option %s: '%s' is not a non-negative integer\n", name, v);
    exit(2);
  }
  *out = x;
  return true;
}

bool tool_arg_i64(int argc, char **argv, int *i, const char *name, int64_t *out) {
  uint64_t x;
  if (!tool_arg_u64(argc, argv, i, name, &x)) return false;
  if (x > (uint64_t)INT64_MAX) {
    fprintf(stderr, "gpuport: option %s: value too large\n", name);
    exit(2);
  }
  *out = (int64_t)x;
  return true;
}

int tool_bad_arg(const char *cmd, const char *arg) {
  fprintf(stderr, "gpuport %s: unknown option '%s' (see gpuport --help)\n", cmd, arg);
  return 2;
}

gp_status_t tool_upload(void **dev, const void *host, size_t bytes) {
  *dev = NULL;
  gp_status_t s = gp_malloc(dev, bytes);
  if (s != GP_SUCCESS) return s;
  s = gp_memcpy(*dev, host, bytes);
  if (s != GP_SUCCESS) {
    gp_free(*dev);
    *dev = NULL;
  }
  return s;
}

#ifdef GP_BUILD_CPU
/* cblas_sgemm with CBLAS's enum values (CblasRowMajor = 101, CblasNoTrans = 111). */
typedef void (*cblas_sgemm_fn)(int order, int transa, int transb, int m, int n, int k,
                               float alpha, const float *a, int lda, const float *b, int ldb,
                               float beta, float *c, int ldc);
static cblas_sgemm_fn anchor;

static void anchor_sgemm(int m, int n, int k, float alpha, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c, int ldc) {
  anchor(101, 111, 111, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* CblasTrans = 112 */
static void anchor_sgemm_t(bool ta, bool tb, int m, int n, int k, float alpha, const float *a, int lda,
                           const float *b, int ldb, float beta, float *c, int ldc) {
  anchor(101, ta ? 112 : 111, tb ? 112 : 111, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

tool_sgemm_t_fn tool_anchor_sgemm_t(void) { return tool_anchor_sgemm() ? anchor_sgemm_t : NULL; }

int tool_openblas_threads(void) {
  typedef int (*threads_fn)(void);
  threads_fn f;
  void *sym = dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
  memcpy(&f, &sym, sizeof f);
  return f ? f() : 0;
}

const char *tool_openblas_config(void) {
  typedef char *(*config_fn)(void);
  config_fn f;
  void *sym = dlsym(RTLD_DEFAULT, "openblas_get_config");
  memcpy(&f, &sym, sizeof f);
  return f ? f() : NULL;
}

/* Looked up at run time: the CPU library brings OpenBLAS into the process, and the
 * program is linked against the library alone. */
tool_sgemm_fn tool_anchor_sgemm(void) {
  if (!anchor) {
    void *sym = dlsym(RTLD_DEFAULT, "cblas_sgemm");
    memcpy(&anchor, &sym, sizeof(anchor));
  }
  return anchor ? anchor_sgemm : NULL;
}
#else
tool_sgemm_fn tool_anchor_sgemm(void) { return NULL; }
tool_sgemm_t_fn tool_anchor_sgemm_t(void) { return NULL; }
const char *tool_openblas_config(void) { return NULL; }
int tool_openblas_threads(void) { return 0; }
#endif
