/*
 * anchor_blas.c - the vendor GEMM that `gpuport bench gemm` measures beside gpuport on a
 * GPU backend, on the same stream, buffers and shape: cuBLAS's cublasGemmEx on the cuda
 * backend, hipBLASLt's hipblasLtMatmul on the hip backend (which also gives `bench
 * attention` its anchor: the batched GEMMs of the same FLOPs, tool_lt_gemm_*). Each
 * library is loaded with dlopen when the benchmark first asks for it, so neither the
 * library nor the tool links it; its prototypes are declared here, so the build needs no
 * vendor header either:
 *   cuBLAS: API reference (cublasCreate, cublasSetStream, cublasGemmEx); the enum values
 *     are those of cublas_api.h and library_types.h.
 *   hipBLASLt: its public header (github.com/ROCm/hipBLASLt, library/include/hipblaslt.h,
 *     ROCm 6.x): hipblasLtCreate, hipblasLtMatmulDescCreate(desc, hipblasComputeType_t,
 *     hipDataType), hipblasLtMatrixLayoutCreate/SetAttribute, hipblasLtMatmulPreference*,
 *     hipblasLtMatmulAlgoGetHeuristic, hipblasLtMatmul, and the layout of
 *     hipblasLtMatmulAlgo_t and hipblasLtMatmulHeuristicResult_t; enum values: hipDataType
 *     (HIP_R_32F 0, HIP_R_16F 2, HIP_R_16BF 14, those of CUDA's cudaDataType),
 *     hipblasOperation_t (HIPBLAS_OP_N 111, HIPBLAS_OP_T 112), hipblasComputeType_t
 *     (HIPBLAS_COMPUTE_32F 2, hipblas-common.h), HIPBLASLT_MATMUL_DESC_TRANSA/B 0/1,
 *     HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES 1, HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT 0
 *     (int32) and _STRIDED_BATCH_OFFSET 1 (int64). Debian's ROCm 5.2 has no hipBLASLt
 *     (the table says so); ROCm 5.x's hipBLASLt used other compute-type values, where the
 *     heuristic finds no algorithm and the table says that instead.
 * The cpu build has no vendor GEMM here (the cpu figures use OpenBLAS, main.c).
 */
#include "tool.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>

#if defined(GP_BUILD_CUDA)

typedef void *cublas_handle_t;
typedef int (*create_fn)(cublas_handle_t *);
typedef int (*set_stream_fn)(cublas_handle_t, void *);
typedef int (*gemm_ex_fn)(cublas_handle_t, int transa, int transb, int m, int n, int k,
                          const void *alpha, const void *a, int a_type, int lda, const void *b,
                          int b_type, int ldb, const void *beta, void *c, int c_type, int ldc,
                          int compute, int algo);

enum { CUBLAS_OP_N = 0, CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77, CUBLAS_GEMM_DEFAULT = -1 };

static struct {
  pthread_once_t once;
  cublas_handle_t handle;
  set_stream_fn set_stream;
  gemm_ex_fn gemm_ex;
  char why[160]; /* empty when loaded */
} g = {PTHREAD_ONCE_INIT, NULL, NULL, NULL, ""};

static void load(void) {
  static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  void *lib = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(g.why, sizeof g.why, "cuBLAS not found (libcublas.so.13/.12)");
    return;
  }
  create_fn create;
  void *p = dlsym(lib, "cublasCreate_v2");
  memcpy(&create, &p, sizeof p);
  p = dlsym(lib, "cublasSetStream_v2");
  memcpy(&g.set_stream, &p, sizeof p);
  p = dlsym(lib, "cublasGemmEx");
  memcpy(&g.gemm_ex, &p, sizeof p);
  if (!create || !g.set_stream || !g.gemm_ex) {
    snprintf(g.why, sizeof g.why, "cuBLAS lacks cublasCreate_v2, cublasSetStream_v2 or cublasGemmEx");
    return;
  }
  int st = create(&g.handle);
  if (st != 0) snprintf(g.why, sizeof g.why, "cublasCreate failed (cublasStatus_t %d)", st);
}

const char *tool_vendor_gemm_name(void) { return "cuBLAS"; }

const char *tool_vendor_gemm_unavailable(void) {
  pthread_once(&g.once, load);
  return g.why[0] ? g.why : NULL;
}

gp_status_t tool_vendor_gemm(gp_stream_t s, int64_t m, int64_t n, int64_t k, gp_dtype_t t,
                             bool tf32, const void *a, const void *b, void *c) {
  if (tool_vendor_gemm_unavailable()) return GP_ERROR_NOT_SUPPORTED;
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) return GP_ERROR_NOT_SUPPORTED;
  const int type = t == GP_BF16 ? CUDA_R_16BF : t == GP_F16 ? CUDA_R_16F : CUDA_R_32F;
  const int compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float alpha = 1.0f, beta = 0.0f;
  if (g.set_stream(g.handle, gp_stream_native(s)) != 0) return GP_ERROR_LAUNCH_FAILED;
  /* Row-major C = A B is column-major C^T = B^T A^T: B (n x k in those terms) first. */
  int st = g.gemm_ex(g.handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, b, type,
                     (int)n, a, type, (int)k, &beta, c, type, (int)n, compute, CUBLAS_GEMM_DEFAULT);
  return st == 0 ? GP_SUCCESS : GP_ERROR_LAUNCH_FAILED;
}

#elif defined(GP_BUILD_HIP)

typedef int lt_status_t; /* hipblasStatus_t: 0 is HIPBLAS_STATUS_SUCCESS */
typedef void *lt_handle_t, *lt_desc_t, *lt_layout_t, *lt_pref_t;
typedef struct lt_algo {
  uint8_t data[16];
  size_t max_workspace_bytes;
} lt_algo_t;
typedef struct lt_heuristic {
  lt_algo_t algo;
  size_t workspace_size;
  lt_status_t state;
  float waves_count;
  int reserved[4];
} lt_heuristic_t;

enum {
  LT_R_32F = 0, LT_R_16F = 2, LT_R_16BF = 14, /* hipDataType */
  LT_OP_N = 111, LT_OP_T = 112,               /* hipblasOperation_t */
  LT_COMPUTE_32F = 2,                         /* hipblasComputeType_t */
  LT_DESC_TRANSA = 0, LT_DESC_TRANSB = 1,     /* hipblasLtMatmulDescAttributes_t */
  LT_PREF_MAX_WORKSPACE_BYTES = 1,            /* hipblasLtMatmulPreferenceAttributes_t */
  LT_LAYOUT_BATCH_COUNT = 0, LT_LAYOUT_STRIDED_BATCH_OFFSET = 1 /* hipblasLtMatrixLayoutAttribute_t */
};

typedef struct lt_api {
  lt_status_t (*create)(lt_handle_t *);
  lt_status_t (*desc_create)(lt_desc_t *, int compute, int scale_type);
  lt_status_t (*desc_destroy)(lt_desc_t);
  lt_status_t (*desc_set)(lt_desc_t, int attr, const void *buf, size_t size);
  lt_status_t (*layout_create)(lt_layout_t *, int type, uint64_t rows, uint64_t cols, int64_t ld);
  lt_status_t (*layout_destroy)(lt_layout_t);
  lt_status_t (*layout_set)(lt_layout_t, int attr, const void *buf, size_t size);
  lt_status_t (*pref_create)(lt_pref_t *);
  lt_status_t (*pref_destroy)(lt_pref_t);
  lt_status_t (*pref_set)(lt_pref_t, int attr, const void *buf, size_t size);
  lt_status_t (*heuristic)(lt_handle_t, lt_desc_t, lt_layout_t, lt_layout_t, lt_layout_t,
                           lt_layout_t, lt_pref_t, int, lt_heuristic_t *, int *);
  lt_status_t (*matmul)(lt_handle_t, lt_desc_t, const void *, const void *, lt_layout_t,
                        const void *, lt_layout_t, const void *, const void *, lt_layout_t, void *,
                        lt_layout_t, const lt_algo_t *, void *, size_t, void *);
} lt_api_t;

static lt_api_t g_lt;
static lt_handle_t g_handle;
static char g_load_error[200];

/* Loads the library and a handle once; false with the reason in g_load_error. */
static bool lt_load(void) {
  static int state; /* 0 not tried, 1 loaded, -1 failed */
  if (state) return state > 0;
  state = -1;
  const char *names[] = {"libhipblaslt.so", "libhipblaslt.so.0", "libhipblaslt.so.1",
                         "/opt/rocm/lib/libhipblaslt.so"};
  void *lib = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) lib = dlopen(names[i], RTLD_NOW);
  if (!lib) {
    snprintf(g_load_error, sizeof g_load_error,
             "not available (libhipblaslt.so not found; Debian's ROCm 5.2 has none, ROCm 6+ installs it)");
    return false;
  }
  struct { const char *name; void **slot; } syms[] = {
      {"hipblasLtCreate", (void **)&g_lt.create},
      {"hipblasLtMatmulDescCreate", (void **)&g_lt.desc_create},
      {"hipblasLtMatmulDescDestroy", (void **)&g_lt.desc_destroy},
      {"hipblasLtMatmulDescSetAttribute", (void **)&g_lt.desc_set},
      {"hipblasLtMatrixLayoutCreate", (void **)&g_lt.layout_create},
      {"hipblasLtMatrixLayoutDestroy", (void **)&g_lt.layout_destroy},
      {"hipblasLtMatrixLayoutSetAttribute", (void **)&g_lt.layout_set},
      {"hipblasLtMatmulPreferenceCreate", (void **)&g_lt.pref_create},
      {"hipblasLtMatmulPreferenceDestroy", (void **)&g_lt.pref_destroy},
      {"hipblasLtMatmulPreferenceSetAttribute", (void **)&g_lt.pref_set},
      {"hipblasLtMatmulAlgoGetHeuristic", (void **)&g_lt.heuristic},
      {"hipblasLtMatmul", (void **)&g_lt.matmul},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *sym = dlsym(lib, syms[i].name);
    if (!sym) {
      snprintf(g_load_error, sizeof g_load_error, "libhipblaslt has no %s", syms[i].name);
      return false;
    }
    memcpy(syms[i].slot, &sym, sizeof sym);
  }
  lt_status_t st = g_lt.create(&g_handle);
  if (st != 0) {
    snprintf(g_load_error, sizeof g_load_error, "hipblasLtCreate failed (status %d)", st);
    return false;
  }
  state = 1;
  return true;
}

#define LT_WORKSPACE ((size_t)32 << 20) /* what the heuristic may ask for */

struct tool_lt_gemm {
  lt_desc_t desc;
  lt_layout_t la, lb, lc;
  lt_heuristic_t h;
  const void *a, *b;
  void *c, *ws;
};

static lt_layout_t lt_layout(int type, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                             int64_t stride, lt_status_t *st) {
  lt_layout_t l = NULL;
  int32_t count = (int32_t)batch;
  if (*st == 0) *st = g_lt.layout_create(&l, type, (uint64_t)rows, (uint64_t)cols, ld);
  if (*st == 0 && batch > 1) *st = g_lt.layout_set(l, LT_LAYOUT_BATCH_COUNT, &count, sizeof count);
  if (*st == 0 && batch > 1) *st = g_lt.layout_set(l, LT_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
  return l;
}

tool_lt_gemm_t *tool_lt_gemm_create(const tool_lt_shape_t *sh, char *why, size_t why_len) {
  if (!lt_load()) {
    snprintf(why, why_len, "%s", g_load_error);
    return NULL;
  }
  if (sh->type != GP_BF16 && sh->type != GP_F16 && sh->type != GP_F32) {
    snprintf(why, why_len, "no anchor for %s", gp_dtype_name(sh->type));
    return NULL;
  }
  const int type = sh->type == GP_BF16 ? LT_R_16BF : sh->type == GP_F16 ? LT_R_16F : LT_R_32F;
  tool_lt_gemm_t *g = calloc(1, sizeof *g);
  if (!g) {
    snprintf(why, why_len, "no host memory");
    return NULL;
  }
  const int32_t ta = sh->trans_a ? LT_OP_T : LT_OP_N, tb = sh->trans_b ? LT_OP_T : LT_OP_N;
  const uint64_t ws_bytes = LT_WORKSPACE;
  lt_pref_t pref = NULL;
  int found = 0;
  lt_status_t st = g_lt.desc_create(&g->desc, LT_COMPUTE_32F, LT_R_32F);
  if (st == 0) st = g_lt.desc_set(g->desc, LT_DESC_TRANSA, &ta, sizeof ta);
  if (st == 0) st = g_lt.desc_set(g->desc, LT_DESC_TRANSB, &tb, sizeof tb);
  g->la = lt_layout(type, sh->trans_a ? sh->k : sh->m, sh->trans_a ? sh->m : sh->k, sh->lda,
                    sh->batch, sh->stride_a, &st);
  g->lb = lt_layout(type, sh->trans_b ? sh->n : sh->k, sh->trans_b ? sh->k : sh->n, sh->ldb,
                    sh->batch, sh->stride_b, &st);
  g->lc = lt_layout(type, sh->m, sh->n, sh->ldc, sh->batch, sh->stride_c, &st);
  if (st == 0) st = g_lt.pref_create(&pref);
  if (st == 0) st = g_lt.pref_set(pref, LT_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes);
  if (st == 0) st = g_lt.heuristic(g_handle, g->desc, g->la, g->lb, g->lc, g->lc, pref, 1, &g->h, &found);
  if (pref) g_lt.pref_destroy(pref);
  if (st != 0 || found < 1) {
    snprintf(why, why_len, "hipBLASLt found no algorithm for this shape (status %d)", st);
    tool_lt_gemm_destroy(g);
    return NULL;
  }
  if (gp_malloc(&g->ws, LT_WORKSPACE) != GP_SUCCESS) {
    snprintf(why, why_len, "no device memory for hipBLASLt's workspace");
    tool_lt_gemm_destroy(g);
    return NULL;
  }
  g->a = sh->a, g->b = sh->b, g->c = sh->c;
  return g;
}

gp_status_t tool_lt_gemm_run(void *ctx, gp_stream_t s) {
  tool_lt_gemm_t *g = ctx;
  const float one = 1.0f, zero = 0.0f;
  lt_status_t st = g_lt.matmul(g_handle, g->desc, &one, g->a, g->la, g->b, g->lb, &zero, g->c,
                               g->lc, g->c, g->lc, &g->h.algo, g->ws, LT_WORKSPACE,
                               gp_stream_native(s));
  return st == 0 ? GP_SUCCESS : GP_ERROR_BACKEND;
}

void tool_lt_gemm_destroy(tool_lt_gemm_t *g) {
  if (!g) return;
  if (g->la) g_lt.layout_destroy(g->la);
  if (g->lb) g_lt.layout_destroy(g->lb);
  if (g->lc) g_lt.layout_destroy(g->lc);
  if (g->desc) g_lt.desc_destroy(g->desc);
  gp_free(g->ws);
  free(g);
}

/* ---- the tool_vendor_gemm interface: row-major C = A B, one plan kept per product ---- */

static tool_lt_gemm_t *g_plan;
static tool_lt_shape_t g_plan_shape;
static char g_plan_error[200];

const char *tool_vendor_gemm_name(void) { return "hipBLASLt"; }

const char *tool_vendor_gemm_unavailable(void) { return lt_load() ? NULL : g_load_error; }

gp_status_t tool_vendor_gemm(gp_stream_t s, int64_t m, int64_t n, int64_t k, gp_dtype_t t,
                             bool tf32, const void *a, const void *b, void *c) {
  (void)tf32; /* hipBLASLt's f32 compute on f32 inputs: exact products */
  if (!lt_load()) return GP_ERROR_NOT_SUPPORTED;
  /* Row-major C = A B is column-major C^T (n x m) = B^T A^T: B first. */
  const tool_lt_shape_t sh = {t, 0, 0, n, m, k, 1, b, a, c, n, k, n, 0, 0, 0};
  if (!g_plan || memcmp(&sh, &g_plan_shape, sizeof sh) != 0) {
    tool_lt_gemm_destroy(g_plan);
    g_plan_shape = sh;
    g_plan = tool_lt_gemm_create(&sh, g_plan_error, sizeof g_plan_error);
    if (!g_plan) return GP_ERROR_NOT_SUPPORTED;
  }
  return tool_lt_gemm_run(g_plan, s);
}

#else /* cpu: no vendor GEMM anchor in this file */

const char *tool_vendor_gemm_name(void) { return NULL; }
const char *tool_vendor_gemm_unavailable(void) { return "no vendor GEMM anchor in this build"; }
gp_status_t tool_vendor_gemm(gp_stream_t s, int64_t m, int64_t n, int64_t k, gp_dtype_t t,
                             bool tf32, const void *a, const void *b, void *c) {
  (void)s, (void)m, (void)n, (void)k, (void)t, (void)tf32, (void)a, (void)b, (void)c;
  return GP_ERROR_NOT_SUPPORTED;
}

#endif

#if !defined(GP_BUILD_HIP) /* the attention anchor's batched GEMMs: hipBLASLt only */
struct tool_lt_gemm {
  int unused;
};

tool_lt_gemm_t *tool_lt_gemm_create(const tool_lt_shape_t *sh, char *why, size_t why_len) {
  (void)sh;
  snprintf(why, why_len, "hipBLASLt is the hip backend's anchor");
  return NULL;
}

gp_status_t tool_lt_gemm_run(void *ctx, gp_stream_t s) {
  (void)ctx, (void)s;
  return GP_ERROR_NOT_SUPPORTED;
}

void tool_lt_gemm_destroy(tool_lt_gemm_t *g) { (void)g; }
#endif
