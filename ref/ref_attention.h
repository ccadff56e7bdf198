/*
 * ref_attention.h - float64 references of gp_attention_fwd and gp_attention_bwd and the
 * element-wise error bounds their results are held to (used by `gpuport selftest`,
 * test/test_attention.c and test/test_attention_bwd.c).
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
 *
 * Backward reference (gp_ref_attention_bwd): the gradients of the loss sum(dO * O) from
 * the softmax Jacobian, in float64, from q, k, v and dO alone (not from the library's o
 * or lse): with P the exact weights of a row and dP_j = dO . v_j,
 *   dS_j = P_j (dP_j - sum_k P_k dP_k),  dQ = scale sum_j dS_j k_j,
 *   dK_j = scale sum_i dS_ij q_i,  dV_j = sum_i P_ij dO_i,
 * where dK and dV of a key/value head sum over the query heads of its group. Rows with
 * no visible key contribute nothing (dQ row 0, bound 0: it must be exact), and keys no
 * row sees get dK = dV = 0 exactly. It is itself checked against central finite
 * differences of the float64 forward (test/test_attention_bwd.c); GP_F64 inputs are
 * accepted for that purpose (not a library dtype).
 *
 * Backward bound (first order, same notation; per query row i and visible key j):
 * implementations recompute s and P from the forward's lse and form D from the stored
 * o, so besides their own f32 arithmetic they inherit the forward's errors:
 *   theta_ij = eps_s + lse_bound_i + 2u (|s_ij| + |lse_i|) + 4u   (relative error of P:
 *              the recomputed score, the stored lse, the subtraction and exp);
 *   e_dP_ij  = (dv + 2) u sum_c |dO_ic v_jc|                        (f32 dot product);
 *   e_D_i    = sum_c |dO_ic| obound_ic + (dv + 2) u sum_c |dO_ic o_ic| (D from the stored o);
 *   E_ij     = P_ij (e_dP_ij + e_D_i + (theta_ij + 2u) |dP_ij - D_i|) + u_ds |dS_ij|
 *              (error of dS; u_ds = u_in when dS is rounded to the input dtype before
 *              the dQ/dK products, as tensor-core kernels do, else u);
 *   dQ_ic: 2 |scale| (sum_j E_ij |k_jc| + (n_i + 3) u sum_j |dS_ij k_jc|);
 *   dK_jc: 2 |scale| (sum_i E_ij |q_ic| + (N_j + 3) u sum_i |dS_ij q_ic|);
 *   dV_jc: 2 (sum_i (theta_ij + u_p) P_ij |dO_ic| + (N_j + 2) u sum_i P_ij |dO_ic|);
 * N_j counts the (row, head) terms summed into key j, n_i the keys of row i (any
 * summation order, splits, atomics and the group sum included); each bound then adds
 * u_out |ref| + u_out * min_normal(dtype) for the final rounding, as the forward's.
 * The relative norm of each gradient's error is held to gp_ref_attention_bwd_rel_tol().
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

/* Largest head_dim / head_dim_v the backward reference takes. */
#define GP_REF_ATTN_MAX_DIM 256

/* Rows of the dense key-side arrays: batch * seqlen_k, or cu_k[batch] with varlen. */
size_t gp_ref_attention_rows_k(const gp_attention_desc_t *d, const int32_t *cu_k);

/* Reference backward (see above). d, cu_q and cu_k as for gp_ref_attention_fwd (host
 * copies of q, k, v; o and lse are not read); d_o a host copy of the output gradient
 * with o's strides. Outputs are dense float64 arrays (any may be NULL):
 *   dq_ref, dq_bound: [rows_q][heads_q][head_dim] (rows_q as gp_ref_attention_rows());
 *   dk_ref, dk_bound: [rows_k][heads_kv][head_dim] (rows_k as gp_ref_attention_rows_k());
 *   dv_ref, dv_bound: [rows_k][heads_kv][head_dim_v].
 * Returns 0, or -1 when the descriptor is outside the contract or memory ran out. */
int gp_ref_attention_bwd(const gp_attention_desc_t *d, const int32_t *cu_q, const int32_t *cu_k,
                         const void *d_o, double *dq_ref, double *dq_bound, double *dk_ref,
                         double *dk_bound, double *dv_ref, double *dv_bound);

/* Tolerance of the relative norm error of each gradient: 1.5 u_out + 0.5 u_p + 0.5 u_ds + 128 u
 * (u_p = u_ds = u_in for f16/bf16). */
double gp_ref_attention_bwd_rel_tol(gp_dtype_t dtype);

#ifdef __cplusplus
}
#endif

#endif /* GP_TOOL_REF_ATTENTION_H */
