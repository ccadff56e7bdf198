/*
 * attention_amd.h - the attention backward of the AMD MFMA kernels
 * (hip/attention_bwd_mfma.cu): the parameters of one call, the choice and the launch
 * (src/attention_amd.c). The public entry point gp_attention_bwd (API.md) is built on
 * another branch; this is what it calls on the hip backend, and what the cpu backend runs
 * under MFMA emulation. Nothing here is public.
 *
 * Assumptions about that entry point, to be checked when it is merged: d_o has o's
 * strides, dq q's, dk k's and dv v's (the API passes no strides for them); they have the
 * descriptor's dtype; o and lse are the forward's outputs (lse required, natural log,
 * the layout of gpuport/attention.h); the workspace holds one f32 per lse element
 * (delta = rowsum(dO o O)). The kernels never use atomics: dq, dk and dv are each the
 * sum of their terms in one fixed order, so they are bitwise reproducible whether or not
 * `deterministic` is set.
 *
 * Included from C and from dialect sources: plain data only.
 */
#ifndef GP_ATTENTION_AMD_H
#define GP_ATTENTION_AMD_H

#include "attention_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One checked backward call. f is the forward's call (q, k, v, o, lse, masks, strides,
 * varlen: as gp__attn_params_t); delta is the workspace, laid out as lse. */
typedef struct gp__attn_bwd_params {
  gp__attn_params_t f;
  const void *d_o;
  void *dq, *dk, *dv;
  float *delta;
  int64_t do_bs, do_ss, do_hs;
  int64_t dq_bs, dq_ss, dq_hs;
  int64_t dk_bs, dk_ss, dk_hs;
  int64_t dv_bs, dv_ss, dv_hs;
} gp__attn_bwd_params_t;

/* Whether the MFMA backward takes the call (f16/bf16, head_dim == head_dim_v in 32, 64,
 * 128, lse given): 1, or 0 with the reason in why. */
int gp__attn_amd_bwd_choose(const gp__attn_params_t *p, char *why, size_t why_len);

/* Bytes of workspace the MFMA backward needs: one f32 per lse element. */
size_t gp__attn_amd_bwd_workspace(const gp__attn_params_t *p);

/* Enqueues the two kernels on stream (dq and delta, then dk and dv); what receives a
 * description for the INFO line. The caller has checked the call and the choice. */
gp_status_t gp__attn_amd_bwd_launch(gp_stream_t stream, const gp__attn_bwd_params_t *p, char *what,
                                    size_t what_len);

#ifdef __cplusplus
}
#endif

#endif /* GP_ATTENTION_AMD_H */
