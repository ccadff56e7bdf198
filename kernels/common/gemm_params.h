/*
 * gemm_params.h - the canonical GEMM problem, shared by src/gemm.c (which builds it),
 * the CPU implementation (kernels/cpu/gemm_cpu.c) and the portable dialect kernel
 * (kernels/portable/gemm_portable.cu, which receives it by value as its only parameter).
 *
 * Canonical form: every matrix is column-major. src/gemm.c reduces a row-major call to
 * this form once (C^T = op(B)^T op(A)^T: swap A and B, m and n, the two ops), so the
 * implementations know one layout. Element (i, p) of op(A), m x k, is
 *   a[i + p * lda] (trans_a == 0) or a[p + i * lda] (trans_a == 1);
 * element (p, j) of op(B), k x n, is b[p + j * ldb] or b[j + p * ldb]; C(i, j) is
 * c[i + j * ldc]. Matrix z of a batch starts stride_x * z elements after the first.
 *
 * Plain C, included by C and by the dialect (C++) compilers: fixed-width members only,
 * so the layout is the same on both sides of gp_launch.
 */
#ifndef GP_KERNELS_GEMM_PARAMS_H
#define GP_KERNELS_GEMM_PARAMS_H

#include <stdint.h>

/* Tiling of the portable kernel (documented in kernels/portable/gemm_portable.cu): a block of
 * GP__GEMM_THREADS_X x GP__GEMM_THREADS_Y threads computes a GP__GEMM_TILE_M x
 * GP__GEMM_TILE_N tile of C, stepping through k GP__GEMM_TILE_K at a time. */
#define GP__GEMM_TILE_M 64
#define GP__GEMM_TILE_N 64
#define GP__GEMM_TILE_K 16
#define GP__GEMM_THREADS_X 16
#define GP__GEMM_THREADS_Y 16

typedef struct gp__gemm_params {
  int64_t m, n, k;                      /* canonical extents; k == 0: A and B not read */
  int64_t lda, ldb, ldc;                /* leading dimensions in elements */
  int64_t stride_a, stride_b, stride_c; /* batch strides in elements (0 broadcasts A/B) */
  int64_t batch;                        /* >= 1 */
  const void *a;                        /* op(A) source; NULL allowed when k == 0 */
  const void *b;                        /* op(B) source; NULL allowed when k == 0 */
  void *c;                              /* C, read only when beta != 0 */
  const void *bias;                     /* NULL unless a bias epilogue */
  float alpha, beta;                    /* beta == 0: C is not read */
  int32_t trans_a, trans_b;             /* 1: the operand is transposed */
  int32_t ab_type, c_type, bias_type;   /* gp_dtype_t values */
  int32_t epilogue;                     /* gp_epilogue_t */
  int32_t bias_along_m;                 /* 1: bias[i] (row of canonical C); 0: bias[j] */
  int32_t allow_tf32;                   /* 1: f32 inputs may be rounded to tf32 (GP_COMPUTE_TF32) */
} gp__gemm_params_t;

#endif /* GP_KERNELS_GEMM_PARAMS_H */
