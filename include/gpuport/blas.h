/**
 * @file gpuport/blas.h
 * @brief Matrix multiplication: C = alpha * op(A) * op(B) + beta * C.
 * @ingroup blas
 *
 * Layout, transposition and leading dimensions have CBLAS's meaning (cblas_sgemm):
 * with ::GP_ROW_MAJOR, op(A) is m x k and element (i, p) of A (no transpose) is
 * a[i * lda + p]; with ::GP_COL_MAJOR it is a[i + p * lda]. Accumulation is in f32.
 * Supported types (a_type == b_type): f32 -> f32; f16 -> f16 or f32; bf16 -> bf16 or f32.
 * BLAS rules hold: beta == 0 means C is not read (NaN in C does not propagate);
 * k == 0 scales C by beta; m == 0 or n == 0 is a no-op.
 */
#ifndef GP_BLAS_H
#define GP_BLAS_H

#include <stdint.h>
#include <gpuport/export.h>
#include <gpuport/runtime.h>

GP_EXTERN_C_BEGIN

/** @brief Storage order of all three matrices (CBLAS_ORDER). */
typedef enum gp_layout {
  GP_ROW_MAJOR = 101, /**< rows contiguous (CblasRowMajor) */
  GP_COL_MAJOR = 102  /**< columns contiguous (CblasColMajor) */
} gp_layout_t;

/** @brief Transposition of an operand (CBLAS_TRANSPOSE). */
typedef enum gp_op {
  GP_OP_N = 111, /**< op(X) = X */
  GP_OP_T = 112  /**< op(X) = X^T */
} gp_op_t;

/** @brief Arithmetic allowed for f32 inputs (cublasComputeType_t). */
typedef enum gp_compute {
  GP_COMPUTE_F32 = 0, /**< exact f32 products and sums */
  GP_COMPUTE_TF32 = 1 /**< f32 inputs may be rounded to TF32 (10-bit mantissa) for tensor cores */
} gp_compute_t;

/** @brief Epilogue applied to alpha * op(A) op(B) + beta * C before the store
 *         (cublasLtEpilogue_t). The bias is a vector of length n added to every row. */
typedef enum gp_epilogue {
  GP_EPILOGUE_NONE = 0,          /**< no epilogue */
  GP_EPILOGUE_BIAS = 1,          /**< + bias[j] */
  GP_EPILOGUE_BIAS_RELU = 2,     /**< max(0, x + bias[j]) */
  GP_EPILOGUE_BIAS_GELU = 3,     /**< GELU(x + bias[j]), erf form: x/2 (1 + erf(x/sqrt 2)) */
  GP_EPILOGUE_BIAS_GELU_TANH = 4 /**< GELU, tanh approximation (Hendrycks and Gimpel) */
} gp_epilogue_t;

/**
 * @brief Full description of a (batched) GEMM for gp_gemm_ex(). Initialise with
 *        gp_gemm_desc_init(): it sets struct_size, batch = 1, alpha = 1, beta = 0,
 *        ::GP_COMPUTE_F32, ::GP_EPILOGUE_NONE and ::GP_ROW_MAJOR / ::GP_OP_N.
 */
typedef struct gp_gemm_desc {
  size_t struct_size;      /**< set by gp_gemm_desc_init() */
  gp_layout_t layout;      /**< ::GP_ROW_MAJOR or ::GP_COL_MAJOR */
  gp_op_t transa;          /**< op on A */
  gp_op_t transb;          /**< op on B */
  int64_t m;               /**< rows of op(A) and C, >= 0 */
  int64_t n;               /**< columns of op(B) and C, >= 0 */
  int64_t k;               /**< columns of op(A), rows of op(B), >= 0 */
  float alpha;             /**< scale of the product */
  const void *a;           /**< A, device memory */
  gp_dtype_t a_type;       /**< ::GP_F32, ::GP_F16 or ::GP_BF16 */
  int64_t lda;             /**< leading dimension of A in elements (CBLAS rule) */
  const void *b;           /**< B, device memory */
  gp_dtype_t b_type;       /**< must equal a_type */
  int64_t ldb;             /**< leading dimension of B in elements */
  float beta;              /**< scale of C; 0 means C is not read */
  void *c;                 /**< C, device memory, written */
  gp_dtype_t c_type;       /**< a_type or ::GP_F32 */
  int64_t ldc;             /**< leading dimension of C in elements */
  int64_t batch;           /**< number of GEMMs, >= 0 */
  int64_t stride_a;        /**< elements between consecutive A; 0 broadcasts A */
  int64_t stride_b;        /**< elements between consecutive B; 0 broadcasts B */
  int64_t stride_c;        /**< elements between consecutive C; must not make C overlap */
  gp_compute_t compute;    /**< ::GP_COMPUTE_F32 or ::GP_COMPUTE_TF32 */
  gp_epilogue_t epilogue;  /**< ::GP_EPILOGUE_NONE or a bias form */
  const void *bias;        /**< length n, device memory; NULL unless a bias epilogue */
  gp_dtype_t bias_type;    /**< c_type or ::GP_F32 */
} gp_gemm_desc_t;

/** @brief Sets the defaults listed at ::gp_gemm_desc_t. */
static inline void gp_gemm_desc_init(gp_gemm_desc_t *d) {
  unsigned char *p = (unsigned char *)d;
  for (size_t i = 0; i < sizeof(*d); i++) p[i] = 0;
  d->struct_size = sizeof(*d);
  d->layout = GP_ROW_MAJOR;
  d->transa = GP_OP_N;
  d->transb = GP_OP_N;
  d->alpha = 1.0f;
  d->beta = 0.0f;
  d->a_type = d->b_type = d->c_type = d->bias_type = GP_F32;
  d->batch = 1;
  d->compute = GP_COMPUTE_F32;
  d->epilogue = GP_EPILOGUE_NONE;
}

/**
 * @brief C = alpha * op(A) * op(B) + beta * C (cblas_sgemm / cublasGemmEx semantics).
 *
 * Enqueued on @p stream; returns before the product is complete.
 * @param[in] stream the stream.
 * @param[in] layout ::GP_ROW_MAJOR or ::GP_COL_MAJOR (applies to A, B and C).
 * @param[in] transa ::GP_OP_N or ::GP_OP_T.
 * @param[in] transb ::GP_OP_N or ::GP_OP_T.
 * @param[in] m rows of op(A) and C.
 * @param[in] n columns of op(B) and C.
 * @param[in] k inner dimension.
 * @param[in] alpha scale.
 * @param[in] a A: op(A) is m x k. Row-major: lda >= max(1, transa == N ? k : m).
 * @param[in] a_type element type of A.
 * @param[in] lda leading dimension of A in elements.
 * @param[in] b B: op(B) is k x n. Row-major: ldb >= max(1, transb == N ? n : k).
 * @param[in] b_type element type of B (== a_type).
 * @param[in] ldb leading dimension of B in elements.
 * @param[in] beta scale of C; 0 means C is not read.
 * @param[in,out] c C, m x n. Row-major: ldc >= max(1, n). Column-major: the minima are
 *                the other extents (lda >= max(1, transa == N ? m : k), ldc >= max(1, m)).
 * @param[in] c_type element type of C.
 * @param[in] ldc leading dimension of C in elements.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (negative sizes, leading dimension below
 *         its minimum, NULL matrix with a non-empty product, bad layout or op, a matrix
 *         whose address is not a multiple of its element size: a GPU faults on such
 *         loads, CUDA C++ Programming Guide, "Device Memory Accesses"; a matrix running
 *         past its gpuport allocation; on the cpu backend, a matrix in device memory
 *         already freed, or in memory gpuport neither allocated nor registered (plain
 *         malloc), which is not device-accessible: a GPU faults on it; the message names
 *         the matrix); ::GP_ERROR_NOT_SUPPORTED (type combination);
 *         ::GP_ERROR_INVALID_HANDLE (a destroyed stream, or a stream of another device
 *         than the current one: a GEMM is kernel work, see gp_launch()).
 */
GP_API gp_status_t gp_gemm(gp_stream_t stream, gp_layout_t layout, gp_op_t transa, gp_op_t transb,
                           int64_t m, int64_t n, int64_t k, float alpha, const void *a,
                           gp_dtype_t a_type, int64_t lda, const void *b, gp_dtype_t b_type,
                           int64_t ldb, float beta, void *c, gp_dtype_t c_type, int64_t ldc);

/**
 * @brief @p batch independent GEMMs (cublasGemmStridedBatchedEx): matrix i of each
 *        operand starts stride_x * i elements after the first. A stride of 0 broadcasts
 *        that operand (not allowed for C when batch > 1).
 * @param[in] stream the stream.
 * @param[in] layout ::GP_ROW_MAJOR or ::GP_COL_MAJOR.
 * @param[in] transa ::GP_OP_N or ::GP_OP_T.
 * @param[in] transb ::GP_OP_N or ::GP_OP_T.
 * @param[in] m rows of op(A) and C.
 * @param[in] n columns of op(B) and C.
 * @param[in] k inner dimension.
 * @param[in] alpha scale.
 * @param[in] a first A matrix (see gp_gemm()).
 * @param[in] a_type element type of A.
 * @param[in] lda leading dimension of A in elements.
 * @param[in] b first B matrix.
 * @param[in] b_type element type of B (== a_type).
 * @param[in] ldb leading dimension of B in elements.
 * @param[in] beta scale of C; 0 means C is not read.
 * @param[in,out] c first C matrix.
 * @param[in] c_type element type of C.
 * @param[in] ldc leading dimension of C in elements.
 * @param[in] batch number of products, >= 0 (0 is a no-op).
 * @param[in] stride_a elements between consecutive A matrices, >= 0.
 * @param[in] stride_b elements between consecutive B matrices, >= 0.
 * @param[in] stride_c elements between consecutive C matrices, > 0 when batch > 1.
 * @return as gp_gemm(), plus ::GP_ERROR_INVALID_VALUE for negative batch or strides.
 */
GP_API gp_status_t gp_gemm_strided_batched(gp_stream_t stream, gp_layout_t layout, gp_op_t transa,
                                           gp_op_t transb, int64_t m, int64_t n, int64_t k,
                                           float alpha, const void *a, gp_dtype_t a_type,
                                           int64_t lda, const void *b, gp_dtype_t b_type,
                                           int64_t ldb, float beta, void *c, gp_dtype_t c_type,
                                           int64_t ldc, int64_t batch, int64_t stride_a,
                                           int64_t stride_b, int64_t stride_c);

/**
 * @brief The extensible GEMM: everything of gp_gemm_strided_batched() plus a compute
 *        mode and an epilogue (cublasLtMatmul's model).
 * @param[in] stream the stream.
 * @param[in] desc initialised with gp_gemm_desc_init().
 * @return as gp_gemm_strided_batched(), plus ::GP_ERROR_INVALID_VALUE (NULL desc,
 *         struct_size too small, bias missing for a bias epilogue, bad bias_type, bias not
 *         aligned to its elements),
 *         ::GP_ERROR_NOT_SUPPORTED (TF32 with 16-bit inputs).
 */
GP_API gp_status_t gp_gemm_ex(gp_stream_t stream, const gp_gemm_desc_t *desc);

GP_EXTERN_C_END

#endif /* GP_BLAS_H */
