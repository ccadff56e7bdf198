/*
 * attention_sm90a.h - the sm_90a attention forward (kernels/sm90a/attention_fwd_sm90a.cu;
 * kernels/sm90a/attention_sm90a_host.c), for src/attention.c. Nothing here is public.
 */
#ifndef GP_ATTENTION_SM90_H
#define GP_ATTENTION_SM90_H

#include "attention_impl.h"
#include "kernels/sm90a/sm90a.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gp__attn_sm90_plan {
  gp_kernel_t kernel;
  unsigned blocks, threads;
  size_t smem;               /* dynamic shared memory, bytes */
  gp_nv_tensor_map_t map_k;  /* TMA maps of K and V */
  gp_nv_tensor_map_t map_v;
  int kv_bh;                 /* the maps' rows: 0 keys of all sequences, 1 one sequence's */
  int bf16, dim_index;
  char name[192];            /* the kernel and its configuration, for the log line */
} gp__attn_sm90_plan_t;

/* Whether the sm_90a forward runs p (the gate of gp__sm90a_enabled, or
 * GP_CPU_ATTENTION=sm90a on the cpu backend; f16/bf16, head_dim == head_dim_v in {64,
 * 128}, 16-byte aligned rows, K and V laid out so one 3D tensor map covers them, and for
 * varlen K and V in memory gpuport allocated); why says why not when it is enabled. */
bool gp__attn_sm90_choose(const gp__attn_params_t *p, gp__attn_sm90_plan_t *plan, char *why, size_t why_len);
/* Launches the chosen kernel on the caller's (unresolved) stream. */
gp_status_t gp__attn_sm90_launch(gp_stream_t stream, const gp__attn_params_t *p, const gp__attn_sm90_plan_t *plan);

#ifdef __cplusplus
}
#endif

#endif /* GP_ATTENTION_SM90_H */
