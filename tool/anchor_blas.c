/*
 * anchor_blas.c - the vendor GEMM that `gpuport bench gemm` measures beside gpuport on a
 * GPU backend, on the same stream, buffers and shape: cuBLAS's cublasGemmEx on the cuda
 * backend. cuBLAS is loaded with dlopen when the benchmark first asks for it, so neither
 * the library nor the tool links it; its prototypes are declared here (cuBLAS API
 * reference: cublasCreate, cublasSetStream, cublasGemmEx; the enum values are those of
 * cublas_api.h and library_types.h), so the build needs no cuBLAS header either. The hip
 * and cpu builds have no vendor GEMM here (the cpu figures use OpenBLAS, main.c).
 */
#include "tool.h"

#include <dlfcn.h>
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

#else /* hip and cpu: no vendor GEMM anchor in this file */

const char *tool_vendor_gemm_name(void) { return NULL; }
const char *tool_vendor_gemm_unavailable(void) { return "no vendor GEMM anchor in this build"; }
gp_status_t tool_vendor_gemm(gp_stream_t s, int64_t m, int64_t n, int64_t k, gp_dtype_t t,
                             bool tf32, const void *a, const void *b, void *c) {
  (void)s, (void)m, (void)n, (void)k, (void)t, (void)tf32, (void)a, (void)b, (void)c;
  return GP_ERROR_NOT_SUPPORTED;
}

#endif
