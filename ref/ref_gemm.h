/*
 * ref_gemm.h - float64 reference GEMM with an element-wise error bound, for
 * `gpuport selftest` and test/test_gemm.c.
 *
 * The bound (derivation in ref_gemm.c) holds for any implementation that converts
 * f16/bf16 inputs exactly to f32, forms every product and sum in IEEE f32 in any order
 * or blocking (with or without FMA), applies alpha, beta * C and the epilogue in f32,
 * and rounds once to the output type. For C(i, j) before the epilogue it is
 *   gamma_{k+2} * (|alpha| (|op(A)| |op(B)|)_ij + |beta| |C_ij|),
 *   gamma_n = n u / (1 - n u), u = 2^-24,
 * then grows through the epilogue and adds u_out * |result| for the final rounding
 * (u_out = 2^-24 f32, 2^-11 f16, 2^-8 bf16) and the subnormal spacing of the output type.
 */
#ifndef GP_TOOL_REF_GEMM_H
#define GP_TOOL_REF_GEMM_H

#include <stddef.h>
#include <stdint.h>
#include <gpuport.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One (non-batched) GEMM in the public API's terms (CBLAS meaning of layout, ops, ld). */
typedef struct gp_ref_gemm {
  gp_layout_t layout;
  gp_op_t transa, transb;
  int64_t m, n, k;
  double alpha;
  const void *a; /* host memory */
  gp_dtype_t a_type;
  int64_t lda;
  const void *b;
  gp_dtype_t b_type;
  int64_t ldb;
  double beta;
  const void *c; /* C before the call (host); not read when beta == 0 */
  gp_dtype_t c_type;
  int64_t ldc;
  gp_epilogue_t epilogue;
  const void *bias; /* length n; NULL unless a bias epilogue */
  gp_dtype_t bias_type;
} gp_ref_gemm_t;

/* Writes ref and bound at the positions of C's m x n window only (indices as in C's
 * storage: i * ldc + j row-major, i + j * ldc column-major); the caller sets the other
 * positions (typically ref = C's prior value and bound = 0: untouched). */
void gp_ref_gemm(const gp_ref_gemm_t *g, double *ref, double *bound);

/* gp_ref_gemm for implementations that round each input with relative error <= u_in
 * before multiplying (TF32: 2^-11) and sum with unit roundoff u_acc (2^-24 IEEE f32,
 * 2^-23 tensor cores); gp_ref_gemm is (0, 2^-24). Derivation in ref_gemm.c, item 5. */
void gp_ref_gemm_rounded(const gp_ref_gemm_t *g, double u_in, double u_acc, double *ref,
                         double *bound);

/* Positions of C's storage outside every window stay as they were: fills ref[i] with
 * element i of c (c_type) and bound[i] with 0 for i < n. */
void gp_ref_gemm_untouched(const void *c, gp_dtype_t c_type, size_t n, double *ref, double *bound);

/* Tolerance for the relative norm ||got - ref||_2 / ||ref||_2 of a GEMM with inner
 * dimension k and output type c_type: a statistical (not worst-case) allowance of
 * 4 sqrt(k + 2) 2^-24 for the f32 accumulation plus u_out for the output rounding. */
double gp_ref_gemm_rel_tol(int64_t k, gp_dtype_t c_type);

/* Element-wise bound helpers, exposed for other references that finish with a GEMM-like
 * accumulation: gamma_n for unit roundoff u. */
double gp_ref_gamma(double n, double u);

#ifdef __cplusplus
}
#endif

#endif /* GP_TOOL_REF_GEMM_H */
