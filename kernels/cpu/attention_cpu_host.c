/*
 * attention_cpu_host.c - the host family's entries of the attention tables
 * (src/attention_table.c) on the cpu backend: the tiled host implementations of
 * kernels/cpu/attention_fwd_cpu.c and kernels/cpu/attention_bwd_cpu.c, in stream order on
 * the stream's worker. Enabled by GP_CPU_ATTENTION=host (the default); they take every
 * checked call (the varlen offsets, in device memory, are checked in stream order).
 */
#include <stdio.h>

#include "dispatch.h"

/* The kernel names tests see (gp__last_kernel): the tiles' instruction set
 * (gp__cpu_attn_simd, decided here once per call) is part of the name. */
static const char k_fwd_avx2[] = "cpu-attention-fwd-avx2", k_fwd_scalar[] = "cpu-attention-fwd";

static bool fwd_supports(const gp__attn_params_t *p, gp__attn_plan_t *plan, char *why, size_t why_len) {
  (void)p, (void)why, (void)why_len; /* takes every call */
  plan->kernel = NULL;
  plan->kernel_name = gp__cpu_attn_simd() ? k_fwd_avx2 : k_fwd_scalar;
  snprintf(plan->name, sizeof plan->name, "%s", plan->kernel_name);
  return true;
}

/* The implementation names its tiles and threads in plan->name when it enqueues. */
static gp_status_t fwd_launch(gp_stream_t stream, const gp__attn_params_t *p, gp__attn_plan_t *plan) {
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, "gp_attention_fwd", &s));
  return gp__cpu_attention_fwd(s, p, plan->kernel_name == k_fwd_avx2, plan->name, sizeof plan->name);
}

static const char k_bwd_avx2[] = "cpu-attention-bwd-avx2", k_bwd_scalar[] = "cpu-attention-bwd";

static bool bwd_supports(const gp__attn_bwd_params_t *p, gp__attn_plan_t *plan, char *why, size_t why_len) {
  (void)p, (void)why, (void)why_len; /* takes every call */
  plan->kernel = NULL;
  plan->kernel_name = gp__cpu_attn_simd() ? k_bwd_avx2 : k_bwd_scalar;
  snprintf(plan->name, sizeof plan->name, "%s", plan->kernel_name);
  return true;
}

static gp_status_t bwd_launch(gp_stream_t stream, const gp__attn_bwd_params_t *p, gp__attn_plan_t *plan) {
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, "gp_attention_bwd", &s));
  return gp__cpu_attention_bwd(s, p, plan->kernel_name == k_bwd_avx2, plan->name, sizeof plan->name);
}

const gp__attn_fwd_impl_t gp__attn_fwd_impl_host = {"host", GP__FAMILY_HOST, fwd_supports, fwd_launch};
const gp__attn_bwd_impl_t gp__attn_bwd_impl_host = {"host", GP__FAMILY_HOST, bwd_supports, bwd_launch};

static bool kv_supports(const gp__attn_kv_params_t *p, gp__attn_plan_t *plan, char *why, size_t why_len) {
  (void)p, (void)why, (void)why_len; /* takes every call */
  plan->kernel = NULL;
  plan->kernel_name = "cpu-attention-kvcache";
  snprintf(plan->name, sizeof plan->name, "%s", plan->kernel_name);
  return true;
}

static gp_status_t kv_launch(gp_stream_t stream, const gp__attn_kv_params_t *p, gp__attn_plan_t *plan) {
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, "gp_attention_fwd_kvcache", &s));
  return gp__cpu_attention_kvcache(s, p, plan->name, sizeof plan->name);
}

const gp__attn_kv_impl_t gp__attn_kv_impl_host = {"host", GP__FAMILY_HOST, kv_supports, kv_launch};
