/*
 * test_rtc.c - the dialect headers under NVRTC and hipRTC, without a GPU: what
 * gp_program_compile runs on the cuda and hip backends. Each compiler found on this
 * machine (libnvrtc from the CUDA toolkit, hipRTC from ROCm) compiles dialect kernel
 * sources of this tree for a real architecture, and must produce code; a source with an
 * error must fail with a log naming it. A compiler that is not installed is skipped
 * (said so on stdout). The device side of these modules runs in gpuport selftest
 * (module.compile) on a GPU machine.
 *
 * Skipped in the sanitizer build (the compilers are large uninstrumented libraries
 * whose internal allocations LeakSanitizer would report, and the headers compile the
 * same there) and in the runs with several virtual devices (nothing here uses them).
 */
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"

/* NVRTC's and hipRTC's common C interface (results are int-sized enums). */
typedef int (*create_fn)(void **, const char *, const char *, int, const char *const *,
                         const char *const *);
typedef int (*compile_fn)(void *, int, const char *const *);
typedef int (*size_fn)(void *, size_t *);
typedef int (*get_fn)(void *, char *);
typedef int (*destroy_fn)(void **);

typedef struct rtc {
  const char *name;
  const char *prefix;    /* nvrtc / hiprtc */
  const char *code_size; /* the machine code's size getter */
  const char *arch;      /* a real architecture */
  const char *const *libs;
} rtc_t;

static const char *const nvrtc_libs[] = {"libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so", NULL};
static const char *const hiprtc_libs[] = {"libhiprtc.so", "libamdhip64.so", NULL};
static const rtc_t g_rtcs[] = {
    {"NVRTC", "nvrtc", "nvrtcGetCUBINSize", "--gpu-architecture=sm_90", nvrtc_libs},
    {"hipRTC", "hiprtc", "hiprtcGetCodeSize", "--offload-arch=gfx90a", hiprtc_libs},
};

#define FN(type, lib, name) ((type)(uintptr_t)dlsym((lib), (name)))

static void *open_rtc(const rtc_t *r) {
  for (int i = 0; r->libs[i]; i++) {
    void *lib = dlopen(r->libs[i], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) continue;
    char sym[64];
    snprintf(sym, sizeof sym, "%sCreateProgram", r->prefix);
    if (dlsym(lib, sym)) return lib;
    dlclose(lib);
  }
  return NULL;
}

/* Compiles src with the gpuport include path; returns the compiler's result, the code
 * size in *code and the log in *log (free it). */
static int compile(void *lib, const rtc_t *r, const char *src, const char *name, const char *opt,
                   size_t *code, char **log) {
  char sym[64], inc[600];
  const char *me = __FILE__, *slash = strrchr(me, '/');
  snprintf(inc, sizeof inc, "-I%.*s../include", slash ? (int)(slash - me + 1) : 0, me);
#define SYM(x) (snprintf(sym, sizeof sym, "%s" x, r->prefix), sym)
  create_fn create = FN(create_fn, lib, SYM("CreateProgram"));
  compile_fn comp = FN(compile_fn, lib, SYM("CompileProgram"));
  size_fn log_size = FN(size_fn, lib, SYM("GetProgramLogSize"));
  get_fn get_log = FN(get_fn, lib, SYM("GetProgramLog"));
  destroy_fn destroy = FN(destroy_fn, lib, SYM("DestroyProgram"));
  size_fn code_size = FN(size_fn, lib, r->code_size);
#undef SYM
  ck_assert(create && comp && log_size && get_log && destroy && code_size);
  void *prog = NULL;
  ck_assert_int_eq(create(&prog, src, name, 0, NULL, NULL), 0);
  const char *opts[] = {inc, r->arch, opt};
  int rc = comp(prog, opt ? 3 : 2, opts);
  size_t n = 0;
  *log = NULL;
  if (log_size(prog, &n) == 0 && n > 0) {
    *log = calloc(1, n + 1);
    get_log(prog, *log);
  }
  *code = 0;
  if (rc == 0) code_size(prog, code);
  destroy(&prog);
  return rc;
}

static char *read_source(const char *rel) {
  char path[600];
  const char *me = __FILE__, *slash = strrchr(me, '/');
  snprintf(path, sizeof path, "%.*s%s", slash ? (int)(slash - me + 1) : 0, me, rel);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s (run the tests from the source tree)", path);
  char *text = calloc(1, 1 << 17);
  size_t n = fread(text, 1, (1 << 17) - 1, f);
  fclose(f);
  ck_assert_uint_gt(n, 0);
  return text;
}

START_TEST(dialect_compiles) {
  const rtc_t *r = &g_rtcs[_i];
  void *lib = open_rtc(r);
  SKIP_IF(lib == NULL, "%s not found on this machine", r->name);
  static const char *const sources[] = {"kernels/kt_rtc.cu", "kernels/kt_basic.cu",
                                        "kernels/kt_warp.cu", "../kernels/portable/selftest.cu"};
  for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
    char *src = read_source(sources[i]), *log = NULL;
    size_t code = 0;
    int rc = compile(lib, r, src, sources[i], "-DKT_SCALE=5", &code, &log);
    /* The log's start (Check's messages have a size limit; the first errors tell). */
    ck_assert_msg(rc == 0 && code > 0, "%s: %s does not compile (result %d): %.3000s", r->name,
                  sources[i], rc, log ? log : "");
    free(log);
    free(src);
  }
  /* An error is an error, with a log naming the file. */
  char *log = NULL;
  size_t code = 0;
  int rc = compile(lib, r,
                   "#include <gpuport/kernel.h>\nGP_KERNEL void k(float *x) { x[0] = nope; }\n"
                   "GP_KERNEL_EXPORT(k)\n",
                   "broken.cu", NULL, &code, &log);
  ck_assert_int_ne(rc, 0);
  ck_assert_msg(log && strstr(log, "nope"), "%s: the log does not name the error: %s", r->name,
                log ? log : "(none)");
  free(log);
  dlclose(lib);
}
END_TEST

int main(void) {
#if defined(__SANITIZE_ADDRESS__)
  return skip_suite("test_rtc", "not in the sanitizer build (see the top of test_rtc.c)");
#endif
  /* Nothing here depends on the number of virtual devices: run once. */
  const char *devs = getenv("GP_CPU_DEVICES");
  if (devs && strcmp(devs, "1") != 0)
    return skip_suite("test_rtc", "runs with GP_CPU_DEVICES=1 only (it uses no device)");
  Suite *s = suite_create("rtc");
  TCase *tc = tcase_create("rtc");
  tcase_set_timeout(tc, 120);
  case_runs_without_device(tc); /* the compilers alone */
  tcase_add_loop_test(tc, dialect_compiles, 0, (int)(sizeof g_rtcs / sizeof g_rtcs[0]));
  suite_add_tcase(s, tc);
  return run_suite("test_rtc", s);
}
