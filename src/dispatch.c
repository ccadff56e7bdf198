/*
 * dispatch.c - what the implementation tables (src/gemm_table.c, src/attention_table.c)
 * share: the CPU modes, parsed once in one vocabulary for GP_CPU_GEMM and
 * GP_CPU_ATTENTION; which families a device or a CPU mode enables; the reasons gathered
 * for the INFO line; the test builds' hooks (src/dispatch.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "dispatch.h"

static const char *const k_op_names[GP__OP_COUNT] = {"gemm", "attention_fwd", "attention_bwd",
                                                            "attention_kvcache"};

const char *gp__op_name(gp__op_t op) { return (unsigned)op < GP__OP_COUNT ? k_op_names[op] : "?"; }

/* ---- CPU modes --------------------------------------------------------------------------- */

static const char *const k_mode_names[GP__CPU_MODE_COUNT] = {"host", "packed", "portable", "sm80",
                                                              "sm90a", "mfma", "convert", "sbgemm", "half"};

const char *gp__cpu_mode_name(gp__cpu_mode_t mode) {
  return (unsigned)mode < GP__CPU_MODE_COUNT ? k_mode_names[mode] : "?";
}

/* The two variables: GEMM's, and attention's (forward and backward). */
enum { VAR_GEMM = 0, VAR_ATTENTION = 1, VAR_COUNT = 2 };
static const char *const k_var_names[VAR_COUNT] = {"GP_CPU_GEMM", "GP_CPU_ATTENTION"};

static int var_of(gp__op_t op) { return op == GP__OP_GEMM ? VAR_GEMM : VAR_ATTENTION; }

/* Whether the variable has mode m (packed, convert and sbgemm are GEMM's alone). */
static bool var_has(int var, gp__cpu_mode_t m) {
  return (m != GP__CPU_PACKED && m != GP__CPU_CONVERT && m != GP__CPU_SBGEMM && m != GP__CPU_HALF) ||
         var == VAR_GEMM;
}

/* Parses one variable's value: the mode names, and "openblas" for GEMM's host. */
static bool parse_mode(int var, const char *s, gp__cpu_mode_t *out) {
  if (s == NULL || *s == '\0') {
    *out = GP__CPU_HOST;
    return true;
  }
  if (var == VAR_GEMM && strcmp(s, "openblas") == 0) {
    *out = GP__CPU_HOST;
    return true;
  }
  for (int m = 0; m < GP__CPU_MODE_COUNT; m++)
    if (var_has(var, (gp__cpu_mode_t)m) && strcmp(s, k_mode_names[m]) == 0) {
      *out = (gp__cpu_mode_t)m;
      return true;
    }
  return false;
}

static pthread_once_t g_env_once = PTHREAD_ONCE_INIT;
static gp__cpu_mode_t g_env_mode[VAR_COUNT];
static atomic_int g_override[VAR_COUNT] = {-1, -1};

static void read_env(void) {
  for (int v = 0; v < VAR_COUNT; v++) {
    const char *e = getenv(k_var_names[v]);
    if (parse_mode(v, e, &g_env_mode[v])) continue;
    g_env_mode[v] = GP__CPU_HOST;
    char valid[96] = "";
    size_t n = 0;
    for (int m = 0; m < GP__CPU_MODE_COUNT && n < sizeof valid; m++)
      if (var_has(v, (gp__cpu_mode_t)m))
        n += (size_t)snprintf(valid + n, sizeof valid - n, "%s%s%s", n ? ", " : "", k_mode_names[m],
                              v == VAR_GEMM && m == GP__CPU_HOST ? " (or openblas)" : "");
    GP__WARN(GP__SUB_ALL, "%s=%s is not one of %s: using host", k_var_names[v], e, valid);
  }
}

gp__cpu_mode_t gp__cpu_mode(gp__op_t op) {
  const int v = var_of(op);
  const int o = atomic_load_explicit(&g_override[v], memory_order_relaxed);
  if (o >= 0) return (gp__cpu_mode_t)o;
  pthread_once(&g_env_once, read_env);
  return g_env_mode[v];
}

void gp__cpu_mode_set(gp__op_t op, int mode) {
  const int v = var_of(op);
  if (mode >= GP__CPU_MODE_COUNT) mode = -1;
  if (mode >= 0 && !var_has(v, (gp__cpu_mode_t)mode)) mode = GP__CPU_HOST;
  atomic_store_explicit(&g_override[v], mode, memory_order_relaxed);
}

/* ---- f16/bf16 conversion ------------------------------------------------------------------ */

static const char *const k_convert_names[GP__CONVERT_COUNT] = {"auto", "vector", "scalar"};
static pthread_once_t g_convert_once = PTHREAD_ONCE_INIT;
static gp__cpu_convert_t g_convert_env;
static atomic_int g_convert_override = -1;

static void read_convert_env(void) {
  const char *e = getenv("GP_CPU_CONVERT");
  g_convert_env = GP__CONVERT_AUTO;
  if (e == NULL || *e == '\0') return;
  for (int m = 0; m < GP__CONVERT_COUNT; m++)
    if (strcmp(e, k_convert_names[m]) == 0) {
      g_convert_env = (gp__cpu_convert_t)m;
      return;
    }
  GP__WARN(GP__SUB_ALL, "GP_CPU_CONVERT=%s is not one of auto, vector, scalar: using auto", e);
}

gp__cpu_convert_t gp__cpu_convert(void) {
  const int o = atomic_load_explicit(&g_convert_override, memory_order_relaxed);
  if (o >= 0) return (gp__cpu_convert_t)o;
  pthread_once(&g_convert_once, read_convert_env);
  return g_convert_env;
}

void gp__cpu_convert_set(int mode) {
  atomic_store_explicit(&g_convert_override, mode >= 0 && mode < GP__CONVERT_COUNT ? mode : -1,
                        memory_order_relaxed);
}

/* ---- the host attention's instruction set ------------------------------------------------ */

static pthread_once_t g_simd_once = PTHREAD_ONCE_INIT;
static bool g_simd_env;
static atomic_int g_simd_override = -1;

static void read_simd_env(void) {
  const char *e = getenv("GP_CPU_ATTENTION_SIMD");
  g_simd_env = true;
  if (e == NULL || *e == '\0' || strcmp(e, "avx2") == 0) return;
  if (strcmp(e, "scalar") == 0)
    g_simd_env = false;
  else
    GP__WARN(GP__SUB_ALL, "GP_CPU_ATTENTION_SIMD=%s is not one of avx2, scalar: using avx2", e);
}

/* ---- what this processor and its OS give ------------------------------------------------ */

static pthread_once_t g_isa_once = PTHREAD_ONCE_INIT;
static gp__cpu_isa_t g_isa;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
/* CPUID and XGETBV: AVX2, FMA and F16C need the ymm state enabled by the OS. Read by hand:
 * clang 14's __builtin_cpu_supports does not know "f16c". */
static void isa_read(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return;
  const bool osxsave = (c >> 27) & 1u, avx = (c >> 28) & 1u;
  if (!osxsave || !avx) return;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  (void)hi;
  if ((lo & 6u) != 6u) return; /* xmm and ymm state saved by the OS */
  g_isa.f16c = (c >> 29) & 1u;
  g_isa.fma = (c >> 12) & 1u;
  if (__get_cpuid_max(0, NULL) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    g_isa.avx2 = (b >> 5) & 1u;
  }
}
#else
static void isa_read(void) {}
#endif

gp__cpu_isa_t gp__cpu_isa(void) {
  pthread_once(&g_isa_once, isa_read);
  return g_isa;
}


bool gp__cpu_attn_simd(void) {
  bool want;
  const int o = atomic_load_explicit(&g_simd_override, memory_order_relaxed);
  if (o >= 0) {
    want = o != 0;
  } else {
    pthread_once(&g_simd_once, read_simd_env);
    want = g_simd_env;
  }
  /* F16C too (the f16 tile loads): every AVX2 processor has it, but it is its own bit */
  const gp__cpu_isa_t isa = gp__cpu_isa();
  return want && isa.avx2 && isa.fma && isa.f16c;
}

void gp__cpu_attn_simd_set(int simd) {
  atomic_store_explicit(&g_simd_override, simd < 0 ? -1 : simd != 0, memory_order_relaxed);
}

/* ---- the direct GEMM path's GELU ----------------------------------------------------------- */

static pthread_once_t g_gelu_once = PTHREAD_ONCE_INIT;
static bool g_gelu_env;
static atomic_int g_gelu_override = -1;

static void read_gelu_env(void) {
  const char *e = getenv("GP_CPU_GELU_SIMD");
  g_gelu_env = true;
  if (e == NULL || *e == '\0' || strcmp(e, "avx2") == 0) return;
  if (strcmp(e, "scalar") == 0)
    g_gelu_env = false;
  else
    GP__WARN(GP__SUB_ALL, "GP_CPU_GELU_SIMD=%s is not one of avx2, scalar: using avx2", e);
}

bool gp__cpu_gelu_simd(void) {
  bool want;
  const int o = atomic_load_explicit(&g_gelu_override, memory_order_relaxed);
  if (o >= 0) {
    want = o != 0;
  } else {
    pthread_once(&g_gelu_once, read_gelu_env);
    want = g_gelu_env;
  }
  const gp__cpu_isa_t isa = gp__cpu_isa();
  return want && isa.avx2 && isa.fma;
}

void gp__cpu_gelu_simd_set(int simd) {
  atomic_store_explicit(&g_gelu_override, simd < 0 ? -1 : simd != 0, memory_order_relaxed);
}

/* ---- which families run here --------------------------------------------------------------- */

/* cpu backend: the families mode m enables (src/dispatch.h, gp__cpu_mode_t). */
static bool cpu_enables(gp__cpu_mode_t m, gp__family_t f) {
  switch (f) {
    case GP__FAMILY_HOST:
      return m == GP__CPU_HOST || m == GP__CPU_PACKED || m == GP__CPU_CONVERT || m == GP__CPU_SBGEMM ||
             m == GP__CPU_HALF;
    case GP__FAMILY_SM90A: return m == GP__CPU_SM90A;
    case GP__FAMILY_SM80: return m == GP__CPU_SM80 || m == GP__CPU_SM90A;
    case GP__FAMILY_MFMA: return m == GP__CPU_MFMA;
    case GP__FAMILY_PORTABLE:
      return m == GP__CPU_PORTABLE || m == GP__CPU_SM80 || m == GP__CPU_SM90A || m == GP__CPU_MFMA;
  }
  return false;
}

/* The sm_90a kernels stay gated on cuda until a GPU run validates them (docs/PERFORMANCE.md). */
static bool sm90a_gate_open(void) {
  const char *e = getenv("GP_ENABLE_SM90A");
  return e != NULL && strcmp(e, "1") == 0;
}

/* cuda and hip: the families the device runs. */
static bool gpu_enables(const gp__dispatch_t *d, gp__family_t f, char *why, size_t why_len) {
  const bool cuda = GP__BACKEND == GP_BACKEND_CUDA;
  switch (f) {
    case GP__FAMILY_PORTABLE: return true;
    case GP__FAMILY_MFMA:
      if (!cuda) return true;
      snprintf(why, why_len, "not an AMD device");
      return false;
    case GP__FAMILY_SM80:
      if (cuda && d->cc_major >= 8) return true;
      snprintf(why, why_len, "compute capability %d.%d (8.0 and above)", d->cc_major, d->cc_minor);
      return false;
    case GP__FAMILY_SM90A:
      if (cuda && d->cc_major == 9 && d->cc_minor == 0 && sm90a_gate_open()) return true;
      if (cuda && d->cc_major == 9 && d->cc_minor == 0)
        snprintf(why, why_len, "gated until a GPU run validates it: GP_ENABLE_SM90A=1 enables it");
      else
        snprintf(why, why_len, "compute capability %d.%d (9.0)", d->cc_major, d->cc_minor);
      return false;
    case GP__FAMILY_HOST:
      snprintf(why, why_len, "the cpu backend's");
      return false;
  }
  return false;
}

gp_status_t gp__dispatch_begin(gp__dispatch_t *d, gp__op_t op, const char *func, char *declined,
                               size_t declined_len) {
  memset(d, 0, sizeof *d);
  d->op = op;
  d->declined = declined;
  d->declined_len = declined_len;
  if (declined_len) declined[0] = '\0';
  if (GP__BACKEND == GP_BACKEND_CPU) {
    d->mode = gp__cpu_mode(op);
    return GP_SUCCESS;
  }
  const gp_device_props_t *props;
  GP__TRY(gp__api_props(func, gp__current_device(), &props));
  d->cc_major = props->compute_capability_major;
  d->cc_minor = props->compute_capability_minor;
  d->multiprocessors = props->multiprocessor_count;
  return GP_SUCCESS;
}

bool gp__dispatch_eligible(const gp__dispatch_t *d, const char *entry, gp__family_t f, char *why,
                           size_t why_len) {
  if (gp__dispatch_test_off) {
    char full[64];
    snprintf(full, sizeof full, "%s.%s", gp__op_name(d->op), entry);
    if (gp__dispatch_test_off(full)) {
      snprintf(why, why_len, "switched off (GP__DISPATCH_DISABLE=%s)", full);
      return false;
    }
  }
  if (GP__BACKEND != GP_BACKEND_CPU) return gpu_enables(d, f, why, why_len);
  if (cpu_enables(d->mode, f)) return true;
  snprintf(why, why_len, "%s=%s", k_var_names[var_of(d->op)], gp__cpu_mode_name(d->mode));
  return false;
}

void gp__dispatch_declined(gp__dispatch_t *d, const char *entry, const char *why) {
  if (d->declined_len == 0) return;
  const size_t n = strlen(d->declined);
  if (n + 1 < d->declined_len)
    snprintf(d->declined + n, d->declined_len - n, "%s%s: %s", n ? "; " : "", entry, why);
}

void gp__dispatch_chose(const gp__dispatch_t *d, const char *kernel) {
  if (gp__dispatch_test_chose) gp__dispatch_test_chose(d->op, kernel);
}

gp_status_t gp__dispatch_none(const gp__dispatch_t *d, const char *func) {
  return gp__error(GP_ERROR_NOT_SUPPORTED, func, "no %s implementation takes this call (%s)",
                   gp__op_name(d->op), d->declined_len ? d->declined : "");
}
