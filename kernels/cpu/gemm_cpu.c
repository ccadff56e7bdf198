/*
 * gemm_cpu.c - the CPU backend's GEMM on OpenBLAS, enqueued in stream order with
 * gp__be_enqueue_host_work so it is asynchronous like the GPU path.
 *
 * Two paths over the canonical column-major problem (kernels/common/gemm_params.h):
 *  - direct: f32 inputs and output with every extent and leading dimension within
 *    OpenBLAS's blasint: one cblas_sgemm per batch entry on the caller's memory, then
 *    the activation (if any) in place over C. Here alpha and beta go to OpenBLAS, so
 *    beta * C is rounded as OpenBLAS rounds it (typically C scaled by beta first, then
 *    alpha * AB added): the one place where the epilogue is not gemm_epilogue.h's
 *    fmaf(beta, C, alpha * acc). Doing it exactly would need the old C kept aside (an
 *    m x n copy per call), and the results differ by at most an ulp of |beta C| +
 *    |alpha AB| before the activation, inside the bound the accumulation order already
 *    needs (test_gemm.c: test_epilogue_bits checks that bound).
 *  - packed: everything else (f16/bf16 inputs or output, extents beyond blasint, or
 *    GP_CPU_GEMM=packed). C is cut into tiles of at most TILE_M x TILE_N, k into
 *    panels of at most TILE_K; each panel of op(A) and op(B) is converted to f32 into a
 *    per-thread scratch (bounded, reused across calls, freed when the thread exits),
 *    multiplied with cblas_sgemm into an f32 accumulator tile (beta 0 for the first
 *    panel, 1 after: f32 accumulation throughout), and the tile is finished with
 *    kernels/common/gemm_epilogue.h, the kernels' own epilogue (alpha, beta * C, the
 *    activation, the rounding to c_type): from equal accumulators, equal bits. Every extent handed to
 *    OpenBLAS is at most a tile, so sizes beyond 32-bit blasint are split, never
 *    truncated.
 * k == 0 (also alpha == 0, reduced to k == 0 by src/gemm.c) never calls OpenBLAS:
 * C = beta * C (zeros when beta == 0) followed by the epilogue.
 * beta == 0: C is not read on either path (the direct path zeroes C before the call, so
 * a NaN in C cannot reach the result whatever OpenBLAS does with beta == 0).
 */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "kernels/common/elem.h"
#include "kernels/common/gemm_epilogue.h"

/* ---- limits and tiles ------------------------------------------------------------- */

#define BLASINT_MAX ((int64_t)(sizeof(blasint) >= 8 ? INT64_MAX : INT32_MAX))
static _Atomic int64_t g_blas_limit = 0; /* 0: BLASINT_MAX */

void gp__gemm_cpu_set_blas_limit(int64_t limit) {
  atomic_store_explicit(&g_blas_limit, limit > 0 && limit < BLASINT_MAX ? limit : 0,
                        memory_order_relaxed);
}

static int64_t blas_limit(void) {
  int64_t l = atomic_load_explicit(&g_blas_limit, memory_order_relaxed);
  return l > 0 ? l : BLASINT_MAX;
}

/* Tile of the packed path: 3 * 256 * 256 floats = 768 KiB of scratch per thread. */
#define TILE_M 256
#define TILE_N 256
#define TILE_K 256
#define SCRATCH_FLOATS ((size_t)TILE_M * TILE_K + (size_t)TILE_K * TILE_N + (size_t)TILE_M * TILE_N)

static bool direct_applies(const gp__gemm_params_t *p) {
  const int64_t lim = blas_limit();
  return p->ab_type == GP_F32 && p->c_type == GP_F32 && p->m <= lim && p->n <= lim &&
         p->k <= lim && p->lda <= lim && p->ldb <= lim && p->ldc <= lim;
}

const char *gp__gemm_cpu_kernel_name(const gp__gemm_params_t *p, bool packed) {
  if (p->k == 0) return "cpu-scale-c";
  if (!packed && direct_applies(p)) return "openblas-sgemm";
  return "openblas-sgemm-packed(256x256x256 f32 tiles)";
}

/* ---- element access and the epilogue: kernels/common/elem.h and gemm_epilogue.h, the
 * kernels' own, so the packed path finishes C exactly as they do -------------------- */

/* Finishes rows [i0, i0 + mb) x columns [j0, j0 + nb) of C (batch entry c): acc is the
 * f32 product tile (column-major, ld acc_ld) or NULL for a zero product. */
static void finish_tile(const gp__gemm_params_t *p, void *c, int64_t i0, int64_t j0, int64_t mb,
                        int64_t nb, const float *acc, int64_t acc_ld) {
  const bool has_bias = p->epilogue != GP_EPILOGUE_NONE;
  for (int64_t jj = 0; jj < nb; jj++) {
    const int64_t j = j0 + jj;
    const float bias_j = has_bias && !p->bias_along_m ? gp__elem_load(p->bias, p->bias_type, j) : 0.0f;
    for (int64_t ii = 0; ii < mb; ii++) {
      const int64_t i = i0 + ii, off = i + j * p->ldc;
      const float bias = has_bias && p->bias_along_m ? gp__elem_load(p->bias, p->bias_type, i) : bias_j;
      const float x = gp__gemm_epilogue(p->alpha, p->beta, acc != NULL, acc ? acc[ii + jj * acc_ld] : 0.0f, c,
                                        p->c_type, off, p->epilogue, bias);
      gp__elem_store(c, p->c_type, off, x);
    }
  }
}

/* ---- per-thread scratch ------------------------------------------------------------- */

static pthread_key_t g_scratch_key;
static pthread_once_t g_scratch_once = PTHREAD_ONCE_INIT;
static bool g_scratch_key_ok;

static void scratch_key_create(void) { g_scratch_key_ok = pthread_key_create(&g_scratch_key, free) == 0; }

static float *scratch_get(void) {
  pthread_once(&g_scratch_once, scratch_key_create);
  if (!g_scratch_key_ok) return NULL;
  float *s = (float *)pthread_getspecific(g_scratch_key);
  if (s == NULL) {
    s = (float *)malloc(SCRATCH_FLOATS * sizeof(float));
    if (s == NULL) return NULL;
    if (pthread_setspecific(g_scratch_key, s) != 0) {
      free(s);
      return NULL;
    }
  }
  return s;
}

/* ---- the two paths ------------------------------------------------------------------- */

/* op(X) panel rows [r0, r0 + rb) x columns [q0, q0 + qb) into dst (column-major, ld rb)
 * where element (r, q) of op(X) is x[r + q * ld] (trans == 0) or x[q + r * ld]. */
static void pack_panel(float *dst, const void *x, int32_t type, int64_t ld, int32_t trans,
                       int64_t r0, int64_t q0, int64_t rb, int64_t qb) {
  if (!trans) {
    for (int64_t q = 0; q < qb; q++)
      for (int64_t r = 0; r < rb; r++) dst[r + q * rb] = gp__elem_load(x, type, (r0 + r) + (q0 + q) * ld);
  } else {
    for (int64_t r = 0; r < rb; r++)
      for (int64_t q = 0; q < qb; q++) dst[r + q * rb] = gp__elem_load(x, type, (q0 + q) + (r0 + r) * ld);
  }
}

static gp_status_t run_packed(const gp__gemm_params_t *p) {
  float *scratch = p->k > 0 ? scratch_get() : NULL;
  if (p->k > 0 && scratch == NULL)
    return GP__ERR(GP_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes of GEMM scratch",
                   SCRATCH_FLOATS * sizeof(float));
  float *ap = scratch, *bp = scratch ? scratch + (size_t)TILE_M * TILE_K : NULL;
  float *acc = scratch ? bp + (size_t)TILE_K * TILE_N : NULL;
  for (int64_t z = 0; z < p->batch; z++) {
    const void *a = p->k > 0 ? gemm_offset(p->a, p->ab_type, z * p->stride_a) : NULL;
    const void *b = p->k > 0 ? gemm_offset(p->b, p->ab_type, z * p->stride_b) : NULL;
    void *c = (void *)gemm_offset(p->c, p->c_type, z * p->stride_c);
    for (int64_t j0 = 0; j0 < p->n; j0 += TILE_N) {
      const int64_t nb = p->n - j0 < TILE_N ? p->n - j0 : TILE_N;
      for (int64_t i0 = 0; i0 < p->m; i0 += TILE_M) {
        const int64_t mb = p->m - i0 < TILE_M ? p->m - i0 : TILE_M;
        if (p->k == 0) {
          finish_tile(p, c, i0, j0, mb, nb, NULL, 0);
          continue;
        }
        for (int64_t p0 = 0; p0 < p->k; p0 += TILE_K) {
          const int64_t kb = p->k - p0 < TILE_K ? p->k - p0 : TILE_K;
          pack_panel(ap, a, p->ab_type, p->lda, p->trans_a, i0, p0, mb, kb);
          pack_panel(bp, b, p->ab_type, p->ldb, p->trans_b, p0, j0, kb, nb);
          cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (blasint)mb, (blasint)nb,
                      (blasint)kb, 1.0f, ap, (blasint)mb, bp, (blasint)kb, p0 == 0 ? 0.0f : 1.0f,
                      acc, (blasint)mb);
        }
        finish_tile(p, c, i0, j0, mb, nb, acc, mb);
      }
    }
  }
  return GP_SUCCESS;
}

static gp_status_t run_direct(const gp__gemm_params_t *p) {
  for (int64_t z = 0; z < p->batch; z++) {
    const float *a = (const float *)p->a + z * p->stride_a;
    const float *b = (const float *)p->b + z * p->stride_b;
    float *c = (float *)p->c + z * p->stride_c;
    if (p->beta == 0.0f)
      for (int64_t j = 0; j < p->n; j++) memset(c + j * p->ldc, 0, (size_t)p->m * sizeof(float));
    cblas_sgemm(CblasColMajor, p->trans_a ? CblasTrans : CblasNoTrans,
                p->trans_b ? CblasTrans : CblasNoTrans, (blasint)p->m, (blasint)p->n, (blasint)p->k,
                p->alpha, a, (blasint)p->lda, b, (blasint)p->ldb, p->beta, c, (blasint)p->ldc);
    if (p->epilogue != GP_EPILOGUE_NONE) {
      const bool along_m = p->bias_along_m != 0;
      for (int64_t j = 0; j < p->n; j++) {
        const float bj = along_m ? 0.0f : gp__elem_load(p->bias, p->bias_type, j);
        float *col = c + j * p->ldc;
        for (int64_t i = 0; i < p->m; i++)
          col[i] = gp__gemm_activate(p->epilogue, col[i], along_m ? gp__elem_load(p->bias, p->bias_type, i) : bj);
      }
    }
  }
  return GP_SUCCESS;
}

/* ---- enqueue --------------------------------------------------------------------- */

typedef struct gemm_job {
  gp__gemm_params_t p;
  bool direct;
} gemm_job_t;

static gp_status_t gemm_job_run(void *user) {
  const gemm_job_t *job = (const gemm_job_t *)user;
  return job->direct ? run_direct(&job->p) : run_packed(&job->p);
}

gp_status_t gp__gemm_cpu_enqueue(gp_stream_t stream, const gp__gemm_params_t *p, bool packed) {
  gemm_job_t *job = (gemm_job_t *)malloc(sizeof(*job));
  if (job == NULL) return GP__ERR(GP_ERROR_OUT_OF_MEMORY, "cannot allocate a GEMM job");
  job->p = *p;
  job->direct = !packed && p->k > 0 && direct_applies(p);
  return gp__be_enqueue_host_work(stream, gemm_job_run, job, true);
}
