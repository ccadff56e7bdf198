/*
 * gemm.c - gp_gemm, gp_gemm_strided_batched and gp_gemm_ex: argument checks (once, for
 * every backend), the reduction of a row-major call to the canonical column-major
 * problem (kernels/common/gemm_params.h), the walk over the GEMM table
 * (src/gemm_table.c: which kernel family runs the problem on each backend, and why the
 * others did not) and the INFO log line naming the kernel chosen.
 *
 * GP_COMPUTE_TF32 allows, never requires, TF32 rounding (cuBLAS's
 * CUBLAS_COMPUTE_32F_FAST_TF32): the sm_80 family then runs f32 inputs on tf32 mma.sync
 * (gp__gemm_sm80_tf32); every other family computes exact f32 products.
 *
 * BLAS rules (reference BLAS sgemm, cblas_sgemm): m == 0, n == 0 (or batch == 0) is a
 * no-op; k == 0 or alpha == 0 scales C by beta without reading A or B; beta == 0 means
 * C is not read. The checks follow CBLAS's order of leading-dimension minima.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "dispatch.h"
#include "internal.h"

/* ---- names for messages and the log line ------------------------------------------ */

static const char *layout_name(gp_layout_t l) { return l == GP_ROW_MAJOR ? "row" : "col"; }
static const char *op_name(gp_op_t o) { return o == GP_OP_T ? "T" : "N"; }

static const char *epilogue_name(gp_epilogue_t e) {
  switch (e) {
    case GP_EPILOGUE_NONE: return "none";
    case GP_EPILOGUE_BIAS: return "bias";
    case GP_EPILOGUE_BIAS_RELU: return "bias+relu";
    case GP_EPILOGUE_BIAS_GELU: return "bias+gelu";
    case GP_EPILOGUE_BIAS_GELU_TANH: return "bias+gelu_tanh";
  }
  return "invalid";
}

static bool gemm_input_type(gp_dtype_t t) { return t == GP_F32 || t == GP_F16 || t == GP_BF16; }

/* Bytes spanned by a batch of rows x cols operands with leading dimension ld (storage
 * order given by col_major) and the given stride: from the first element to one past
 * the last. False when that overflows ptrdiff_t. */
static bool extent_ok(int64_t rows, int64_t cols, int64_t ld, bool col_major, int64_t batch,
                      int64_t stride, size_t elem, size_t *bytes) {
  int64_t inner = col_major ? rows : cols, outer = col_major ? cols : rows, last, t;
  if (__builtin_mul_overflow(outer - 1, ld, &last)) return false;
  if (__builtin_add_overflow(last, inner - 1, &last)) return false;
  if (__builtin_mul_overflow(batch - 1, stride, &t)) return false;
  if (__builtin_add_overflow(last, t, &last)) return false;
  if (__builtin_mul_overflow(last + 1, (int64_t)elem, &t)) return false;
  *bytes = (size_t)t;
  return t <= PTRDIFF_MAX;
}

/* ---- the one funnel ------------------------------------------------------------------ */

static gp_status_t gemm_run(gp_stream_t stream, const gp_gemm_desc_t *d, const char *func) {
  GP__TRY(gp__api_init(func));
  const bool row = d->layout == GP_ROW_MAJOR;
  if (d->layout != GP_ROW_MAJOR && d->layout != GP_COL_MAJOR)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "argument 'layout' (%d) is neither GP_ROW_MAJOR nor GP_COL_MAJOR",
                     (int)d->layout);
  if (d->transa != GP_OP_N && d->transa != GP_OP_T)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "argument 'transa' (%d) is neither GP_OP_N nor GP_OP_T", (int)d->transa);
  if (d->transb != GP_OP_N && d->transb != GP_OP_T)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "argument 'transb' (%d) is neither GP_OP_N nor GP_OP_T", (int)d->transb);

  /* Types. */
  if (!gemm_input_type(d->a_type))
    return gp__error(GP_ERROR_NOT_SUPPORTED, func,
                     "a_type %s is not supported (f32, f16 or bf16 inputs)",
                     gp_dtype_name(d->a_type));
  if (d->b_type != d->a_type)
    return gp__error(GP_ERROR_NOT_SUPPORTED, func,
                     "b_type %s differs from a_type %s (both inputs must have one type)",
                     gp_dtype_name(d->b_type), gp_dtype_name(d->a_type));
  if (d->c_type != d->a_type && d->c_type != GP_F32)
    return gp__error(GP_ERROR_NOT_SUPPORTED, func,
                     "c_type %s is not supported with %s inputs (%s%s)",
                     gp_dtype_name(d->c_type), gp_dtype_name(d->a_type), gp_dtype_name(d->a_type),
                     d->a_type == GP_F32 ? " only" : " or f32");
  if (d->compute != GP_COMPUTE_F32 && d->compute != GP_COMPUTE_TF32)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "argument 'compute' (%d) is neither GP_COMPUTE_F32 nor GP_COMPUTE_TF32",
                     (int)d->compute);
  if (d->compute == GP_COMPUTE_TF32 && d->a_type != GP_F32)
    return gp__error(GP_ERROR_NOT_SUPPORTED, func,
                     "GP_COMPUTE_TF32 applies to f32 inputs only, not %s", gp_dtype_name(d->a_type));

  /* Sizes. */
  if (d->m < 0) return gp__error(GP_ERROR_INVALID_VALUE, func, "argument 'm' (%" PRId64 ") is negative", d->m);
  if (d->n < 0) return gp__error(GP_ERROR_INVALID_VALUE, func, "argument 'n' (%" PRId64 ") is negative", d->n);
  if (d->k < 0) return gp__error(GP_ERROR_INVALID_VALUE, func, "argument 'k' (%" PRId64 ") is negative", d->k);
  if (d->batch < 0)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "argument 'batch' (%" PRId64 ") is negative", d->batch);
  if (d->stride_a < 0 || d->stride_b < 0 || d->stride_c < 0)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "argument '%s' (%" PRId64 ") is negative",
                     d->stride_a < 0 ? "stride_a" : d->stride_b < 0 ? "stride_b" : "stride_c",
                     d->stride_a < 0 ? d->stride_a : d->stride_b < 0 ? d->stride_b : d->stride_c);

  /* Leading dimensions (CBLAS): the stored extent that is contiguous. */
  const bool ta = d->transa == GP_OP_T, tb = d->transb == GP_OP_T;
  const int64_t a_rows = ta ? d->k : d->m, a_cols = ta ? d->m : d->k; /* A as stored */
  const int64_t b_rows = tb ? d->n : d->k, b_cols = tb ? d->k : d->n; /* B as stored */
  const int64_t lda_min = row ? a_cols : a_rows, ldb_min = row ? b_cols : b_rows;
  const int64_t ldc_min = row ? d->n : d->m;
#define LD_MIN(x) ((x) > 1 ? (x) : 1)
  if (d->lda < LD_MIN(lda_min))
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "argument 'lda' (%" PRId64 ") is below its minimum %" PRId64
                     " (%s-major, transa = %s: lda >= max(1, %s))",
                     d->lda, LD_MIN(lda_min), layout_name(d->layout), op_name(d->transa),
                     (row != ta) ? "k" : "m");
  if (d->ldb < LD_MIN(ldb_min))
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "argument 'ldb' (%" PRId64 ") is below its minimum %" PRId64
                     " (%s-major, transb = %s: ldb >= max(1, %s))",
                     d->ldb, LD_MIN(ldb_min), layout_name(d->layout), op_name(d->transb),
                     (row != tb) ? "n" : "k");
  if (d->ldc < LD_MIN(ldc_min))
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "argument 'ldc' (%" PRId64 ") is below its minimum %" PRId64
                     " (%s-major: ldc >= max(1, %s))",
                     d->ldc, LD_MIN(ldc_min), layout_name(d->layout), row ? "n" : "m");
#undef LD_MIN
  if (d->batch > 1 && d->stride_c == 0)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "argument 'stride_c' is 0 with batch %" PRId64
                     " (the products would overwrite one C)", d->batch);

  /* Epilogue. */
  const bool has_bias = d->epilogue != GP_EPILOGUE_NONE;
  if ((int)d->epilogue < (int)GP_EPILOGUE_NONE || (int)d->epilogue > (int)GP_EPILOGUE_BIAS_GELU_TANH)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "argument 'epilogue' (%d) is not a gp_epilogue_t",
                     (int)d->epilogue);
  if (has_bias && d->bias_type != GP_F32 && d->bias_type != d->c_type)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "bias_type %s is neither f32 nor c_type %s", gp_dtype_name(d->bias_type),
                     gp_dtype_name(d->c_type));

  /* Pointers: C must exist when the output is non-empty; A and B when they are read. */
  const bool empty = d->m == 0 || d->n == 0 || d->batch == 0;
  const bool reads_ab = !empty && d->k > 0 && d->alpha != 0.0f;
  if (!empty && d->c == NULL)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "argument 'c' is NULL with m = %" PRId64
                     ", n = %" PRId64 " (a non-empty output)", d->m, d->n);
  if (!empty && d->k > 0 && d->a == NULL)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "argument 'a' is NULL with a non-empty product (m = %" PRId64 ", k = %" PRId64 ")",
                     d->m, d->k);
  if (!empty && d->k > 0 && d->b == NULL)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "argument 'b' is NULL with a non-empty product (k = %" PRId64 ", n = %" PRId64 ")",
                     d->k, d->n);
  if (!empty && has_bias && d->bias == NULL)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "argument 'bias' is NULL with epilogue %s",
                     epilogue_name(d->epilogue));

  /* Each operand aligned to its elements (src/api.h, gp__api_check_aligned): what a
   * kernel family needs beyond that (16-byte rows for cp.async or TMA) its supports()
   * asks for, declining otherwise. */
  if (!empty) {
    const char *ab = gp_dtype_name(d->a_type);
    const size_t abytes = gp_dtype_size(d->a_type);
    if (d->k > 0) GP__TRY(gp__api_check_aligned(func, "argument 'a'", d->a, abytes, ab));
    if (d->k > 0) GP__TRY(gp__api_check_aligned(func, "argument 'b'", d->b, abytes, ab));
    GP__TRY(gp__api_check_aligned(func, "argument 'c'", d->c, gp_dtype_size(d->c_type), gp_dtype_name(d->c_type)));
    if (has_bias)
      GP__TRY(gp__api_check_aligned(func, "argument 'bias'", d->bias, gp_dtype_size(d->bias_type),
                                    gp_dtype_name(d->bias_type)));
  }

  /* Address arithmetic of every operand touched must fit, and the operands must lie
   * inside their allocations where gpuport knows them. */
  if (!empty) {
    const size_t ab = gp_dtype_size(d->a_type), cb = gp_dtype_size(d->c_type);
    size_t bytes = 0;
    if (reads_ab) {
      if (!extent_ok(a_rows, a_cols, d->lda, !row, d->batch, d->stride_a, ab, &bytes))
        return gp__error(GP_ERROR_INVALID_VALUE, func,
                         "the extent of A (lda, stride_a) overflows the address space");
      GP__TRY(gp__api_check_device_range(func, "a", d->a, bytes));
      if (!extent_ok(b_rows, b_cols, d->ldb, !row, d->batch, d->stride_b, ab, &bytes))
        return gp__error(GP_ERROR_INVALID_VALUE, func,
                         "the extent of B (ldb, stride_b) overflows the address space");
      GP__TRY(gp__api_check_device_range(func, "b", d->b, bytes));
    }
    if (!extent_ok(d->m, d->n, d->ldc, !row, d->batch, d->stride_c, cb, &bytes))
      return gp__error(GP_ERROR_INVALID_VALUE, func,
                       "the extent of C (ldc, stride_c) overflows the address space");
    GP__TRY(gp__api_check_device_range(func, "c", d->c, bytes));
    if (has_bias) GP__TRY(gp__api_check_device_range(func, "bias", d->bias, (size_t)d->n * gp_dtype_size(d->bias_type)));
  }

  /* The stream is checked here, for every family (gp_launch would check it too); that
   * it is a stream of the current device, before any work (a GPU's GEMM is a kernel). */
  GP__STREAM_REF gp_stream_t resolved = NULL;
  GP__TRY(gp__stream_resolve(stream, func, &resolved));

  if (empty) {
    GP__INFO(GP__SUB_GEMM, "%s: m=%" PRId64 " n=%" PRId64 " k=%" PRId64 " batch=%" PRId64
             ": empty output, nothing to do", func, d->m, d->n, d->k, d->batch);
    return GP_SUCCESS;
  }
  if ((!reads_ab) && d->beta == 1.0f && !has_bias) {
    GP__INFO(GP__SUB_GEMM, "%s: m=%" PRId64 " n=%" PRId64 " k=%" PRId64 " alpha=%g beta=1"
             ": C unchanged, nothing to do", func, d->m, d->n, d->k, (double)d->alpha);
    return GP_SUCCESS;
  }

  /* Canonical column-major problem. Row-major C (m x n) is column-major C^T (n x m):
   * C^T = op(B)^T op(A)^T, so B plays A's part with B's op, and m, n swap. */
  gp__gemm_params_t p;
  memset(&p, 0, sizeof(p));
  p.k = reads_ab ? d->k : 0;
  p.ldc = d->ldc;
  p.stride_c = d->batch > 1 ? d->stride_c : 0;
  p.batch = d->batch;
  p.c = d->c;
  p.bias = has_bias ? d->bias : NULL;
  p.alpha = d->alpha;
  p.beta = d->beta;
  p.ab_type = (int32_t)d->a_type;
  p.c_type = (int32_t)d->c_type;
  p.bias_type = (int32_t)(has_bias ? d->bias_type : d->c_type);
  p.epilogue = (int32_t)d->epilogue;
  p.allow_tf32 = d->compute == GP_COMPUTE_TF32;
  if (row) {
    p.m = d->n; p.n = d->m;
    p.a = reads_ab ? d->b : NULL; p.lda = d->ldb; p.stride_a = d->batch > 1 ? d->stride_b : 0; p.trans_a = tb;
    p.b = reads_ab ? d->a : NULL; p.ldb = d->lda; p.stride_b = d->batch > 1 ? d->stride_a : 0; p.trans_b = ta;
    p.bias_along_m = 1;
  } else {
    p.m = d->m; p.n = d->n;
    p.a = reads_ab ? d->a : NULL; p.lda = d->lda; p.stride_a = d->batch > 1 ? d->stride_a : 0; p.trans_a = ta;
    p.b = reads_ab ? d->b : NULL; p.ldb = d->ldb; p.stride_b = d->batch > 1 ? d->stride_b : 0; p.trans_b = tb;
    p.bias_along_m = 0;
  }

  GP__TRY(gp__api_check_launch_stream(func, resolved));
  gp__dispatch_t dsp;
  char declined[512];
  GP__TRY(gp__dispatch_begin(&dsp, GP__OP_GEMM, func, declined, sizeof declined));
  gp__gemm_plan_t plan;
  const gp__gemm_impl_t *impl = gp__gemm_choose(&dsp, &p, &plan);
  if (impl == NULL) return gp__dispatch_none(&dsp, func);
  const gp_status_t st = impl->launch(stream, &p, &plan);
  GP__INFO(GP__SUB_GEMM,
           "%s: %s-major %s%s m=%" PRId64 " n=%" PRId64 " k=%" PRId64 " batch=%" PRId64
           " lda=%" PRId64 " ldb=%" PRId64 " ldc=%" PRId64 " strides=%" PRId64 ",%" PRId64 ",%" PRId64
           " %s*%s->%s alpha=%g beta=%g compute=%s epilogue=%s%s%s kernel=%s%s%s%s",
           func, layout_name(d->layout), op_name(d->transa), op_name(d->transb), d->m, d->n, d->k,
           d->batch, d->lda, d->ldb, d->ldc, d->stride_a, d->stride_b, d->stride_c,
           gp_dtype_name(d->a_type), gp_dtype_name(d->b_type), gp_dtype_name(d->c_type),
           (double)d->alpha, (double)d->beta, d->compute == GP_COMPUTE_TF32 ? "tf32" : "f32",
           epilogue_name(d->epilogue), has_bias ? " bias_type=" : "",
           has_bias ? gp_dtype_name(d->bias_type) : "", plan.name, declined[0] ? "; declined: " : "",
           declined, st == GP_SUCCESS ? "" : " (failed)");
  return st;
}

/* ---- public entry points ----------------------------------------------------------- */

GP_API gp_status_t gp_gemm_ex(gp_stream_t stream, const gp_gemm_desc_t *desc) {
  if (desc == NULL) return GP__ERR(GP_ERROR_INVALID_VALUE, "argument 'desc' is NULL");
  if (desc->struct_size < sizeof(gp_gemm_desc_t))
    return GP__ERR(GP_ERROR_INVALID_VALUE,
                   "desc->struct_size (%zu) is smaller than this library's gp_gemm_desc_t (%zu): "
                   "initialise it with gp_gemm_desc_init()",
                   desc->struct_size, sizeof(gp_gemm_desc_t));
  return gemm_run(stream, desc, __func__);
}

GP_API gp_status_t gp_gemm_strided_batched(gp_stream_t stream, gp_layout_t layout, gp_op_t transa,
                                           gp_op_t transb, int64_t m, int64_t n, int64_t k,
                                           float alpha, const void *a, gp_dtype_t a_type,
                                           int64_t lda, const void *b, gp_dtype_t b_type,
                                           int64_t ldb, float beta, void *c, gp_dtype_t c_type,
                                           int64_t ldc, int64_t batch, int64_t stride_a,
                                           int64_t stride_b, int64_t stride_c) {
  gp_gemm_desc_t d;
  gp_gemm_desc_init(&d);
  d.layout = layout; d.transa = transa; d.transb = transb;
  d.m = m; d.n = n; d.k = k;
  d.alpha = alpha; d.a = a; d.a_type = a_type; d.lda = lda;
  d.b = b; d.b_type = b_type; d.ldb = ldb;
  d.beta = beta; d.c = c; d.c_type = c_type; d.ldc = ldc;
  d.batch = batch; d.stride_a = stride_a; d.stride_b = stride_b; d.stride_c = stride_c;
  return gemm_run(stream, &d, __func__);
}

GP_API gp_status_t gp_gemm(gp_stream_t stream, gp_layout_t layout, gp_op_t transa, gp_op_t transb,
                           int64_t m, int64_t n, int64_t k, float alpha, const void *a,
                           gp_dtype_t a_type, int64_t lda, const void *b, gp_dtype_t b_type,
                           int64_t ldb, float beta, void *c, gp_dtype_t c_type, int64_t ldc) {
  gp_gemm_desc_t d;
  gp_gemm_desc_init(&d);
  d.layout = layout; d.transa = transa; d.transb = transb;
  d.m = m; d.n = n; d.k = k;
  d.alpha = alpha; d.a = a; d.a_type = a_type; d.lda = lda;
  d.b = b; d.b_type = b_type; d.ldb = ldb;
  d.beta = beta; d.c = c; d.c_type = c_type; d.ldc = ldc;
  return gemm_run(stream, &d, __func__);
}
