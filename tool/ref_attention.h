/*
 * ref_attention.h - float64 reference of gp_attention_fwd and the element-wise error
 * bound its results are held to (used by `gpuport selftest` and test/test_attention.c).
 *
 * The reference reads the same rounded inputs as the library, forms every score in
 * float64, applies the mask rules of gpuport/attention.h written as a predicate on
 * (i, j) (independently of the library's key-range helper), and computes the softmax,
 * the output and lse = m + log(sum exp(s - m)) in float64.
 *
 * Error bound (per output element; first-order analysis in the style of Higham,
 * "Accuracy and Stability of Numerical Algorithms", ch. 3). Notation for one query row:
 * n visible keys, scores s_j = scale * q.k_j, weights p_j = exp(s_j - m) / l, exact
 * output o_c = sum_j p_j v_jc, its absolute-value companion A_c = sum_j p_j |v_jc|
 * (so |o_c| <= A_c), d = head_dim, u = 2^-24 (f32 arithmetic inside the kernel),
 * u_in = unit roundoff of the input dtype, u_out = that of the output dtype (the same
 * dtype here). The inputs are exact (the reference reads the stored values), so all
 * error comes from the implementation's arithmetic and the final rounding:
 *   1. scores: an f32 dot product of length d plus the scale product:
 *        |s^_j - s_j| <= eps_s = (d + 2) u |scale| max_j sum_c |q_c k_jc|;
 *   2. weights: softmax is invariant to a shift, so each computed weight is
 *      p_j (1 + theta_j) with |theta_j| <= delta = 2 eps_s + 4u (exp) + u_p (P may be
 *      rounded to the input dtype before the P.V product, as tensor-core kernels do:
 *      u_p = u_in for f16/bf16, u for f32) + 2 (n + 2) u (the sums l and sum p v in f32);
 *   3. output: o^_c - o_c is at most delta A_c for the numerator and delta |o_c| for the
 *      normaliser, so |o^_c - o_c| <= 2 delta A_c; then the rounding to the output dtype
 *      adds u_out |o_c|, and u_out * (smallest normal) covers subnormal results.
 *   bound_c = 2 * (2 delta A_c) + u_out |o_c| + u_out * min_normal(dtype)
 * (the leading factor 2 absorbs second-order terms). A row with no visible key must be
 * exactly zero (bound 0) with lse = -inf.
 *   lse: |lse^ - lse| <= 2 (2 eps_s + (n + 6) u) + 2u |lse|.
 * The bound is a worst case; the relative norm ||o^ - o||_2 / ||o||_2 is held to the
 * tighter gp_ref_attention_rel_tol(), which catches systematic errors (a mask off by
 * one key, a wrong scale) that a per-element worst case would let through on long rows.
 */
#ifndef GP_TOOL_REF_ATTENTION_H
#define GP_TOOL_REF_ATTENTION_H

#include <stddef.h>
#include <stdint.h>
#include <gpuport.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Rows of the dense reference output: batch * seqlen_q, or cu_q[batch] with varlen. */
size_t gp_ref_attention_rows(const gp_attention_desc_t *d, const int32_t *cu_q);

/* Reference forward. d describes the call exactly as passed to gp_attention_fwd, but
 * its q, k and v must be readable on the host (host copies laid out with the same
 * strides); cu_q / cu_k are host copies of the varlen prefix sums (NULL: not varlen).
 * Outputs are dense float64 arrays (any may be NULL):
 *   o_ref, o_bound: [rows][heads_q][head_dim_v] (rows as gp_ref_attention_rows(); with
 *                   varlen, row cu_q[b] + i is query i of sequence b);
 *   lse_ref, lse_bound: the library's lse layout, [batch][heads_q][seqlen_q] or
 *                   [heads_q][cu_q[batch]] with varlen.
 * Returns 0, or -1 when the descriptor is outside the contract (not checked further). */
int gp_ref_attention_fwd(const gp_attention_desc_t *d, const int32_t *cu_q, const int32_t *cu_k,
                         double *o_ref, double *o_bound, double *lse_ref, double *lse_bound);

/* Tolerance of the relative norm error of the output: 1.5 u_out + 0.5 u_p + 64 u. */
double gp_ref_attention_rel_tol(gp_dtype_t dtype);

#ifdef __cplusplus
}
#endif

#endif /* GP_TOOL_REF_ATTENTION_H */
