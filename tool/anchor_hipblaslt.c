/*
 * anchor_hipblaslt.c - the anchor of `gpuport bench gemm|attention` on the hip backend:
 * hipBLASLt, AMD's tuned GEMM library, loaded at run time with dlopen so that the tool
 * neither needs its headers to build nor the library to run (Debian's ROCm 5.2 has no
 * hipBLASLt; ROCm 6+ installs it). Where it is missing, the reason is returned and the
 * table says so.
 *
 * The prototypes and enum values below are declared here, from hipBLASLt's public header
 * (github.com/ROCm/hipBLASLt, library/include/hipblaslt.h, ROCm 6.x: hipblasLtCreate,
 * hipblasLtMatmulDescCreate(desc, hipblasComputeType_t, hipDataType), ...,
 * hipblasLtMatmul) and the enums it uses: hipDataType (HIP_R_32F 0, HIP_R_16F 2,
 * HIP_R_16BF 14, the values of CUDA's cudaDataType), hipblasOperation_t (HIPBLAS_OP_N 111,
 * HIPBLAS_OP_T 112), hipblasComputeType_t (HIPBLAS_COMPUTE_32F 2, hipblas-common.h),
 * HIPBLASLT_MATMUL_DESC_TRANSA/B 0/1, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES 1,
 * HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT 0 (int32), ..._STRIDED_BATCH_OFFSET 1 (int64), and
 * the layout of hipblasLtMatmulHeuristicResult_t. ROCm 5.x hipBLASLt used other compute
 * type values; there the heuristic finds no algorithm and the table says so.
 */
#include "tool.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(GP_BUILD_HIP)

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

#else /* cpu, cuda: the hip backend's anchor only */

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
