/*
 * attention_mfma_host.c - the AMD MFMA attention family's entries of the attention tables
 * (src/attention_table.c): whether the kernels of kernels/mfma/attention_fwd_mfma.cu (and
 * the backward's two kernels in kernels/mfma/attention_bwd_mfma.cu) run a checked call,
 * which ones, and their launch. Built for the backends that run the family: hip (every
 * call they take) and cpu (GP_CPU_ATTENTION=mfma: the same kernels built for the CPU
 * executor at wave64, each MFMA emulated lane by lane), so the choice CI tests is the one
 * an AMD GPU makes. The kernels take f16 and bf16 with head_dim == head_dim_v in {32, 64,
 * 128}, every mask, GQA/MQA, varlen and lse, at any element-aligned address (16-byte
 * loads where the pointers and strides allow them, element loads otherwise); anything
 * else is declined with the reason, and the portable kernels run it.
 *
 * The backward (FlashAttention-2 with dQ in its own kernel) uses no atomics: kernel 1
 * writes dq and delta = rowsum(dO o O) (the workspace's ws_d), kernel 2 then writes dk and
 * dv, summing a GQA group's query heads itself. Every gradient element is one sum in a
 * fixed order, so results are bitwise reproducible with or without `deterministic`, and
 * the rest of the workspace gp_attention_bwd_workspace_size() sizes is left unused.
 *
 * The kvcache entry (kernels/mfma/attention_kvcache_mfma.cu) runs its split kernel between
 * the portable append and combine kernels, for f16/bf16 with head_dim 32, 64 or 128.
 */
#include <stdio.h>

#include "api.h"
#include "dispatch.h"
#include "kernels/mfma/mfma.h"

GP_KERNEL_DECLARE(gp__attention_fwd_mfma_bf16_d32);
GP_KERNEL_DECLARE(gp__attention_fwd_mfma_bf16_d64);
GP_KERNEL_DECLARE(gp__attention_fwd_mfma_bf16_d128);
GP_KERNEL_DECLARE(gp__attention_fwd_mfma_f16_d32);
GP_KERNEL_DECLARE(gp__attention_fwd_mfma_f16_d64);
GP_KERNEL_DECLARE(gp__attention_fwd_mfma_f16_d128);
GP_KERNEL_DECLARE(gp__attention_bwd_mfma_bf16_dq_d32);
GP_KERNEL_DECLARE(gp__attention_bwd_mfma_bf16_dq_d64);
GP_KERNEL_DECLARE(gp__attention_bwd_mfma_bf16_dq_d128);
GP_KERNEL_DECLARE(gp__attention_bwd_mfma_f16_dq_d32);
GP_KERNEL_DECLARE(gp__attention_bwd_mfma_f16_dq_d64);
GP_KERNEL_DECLARE(gp__attention_bwd_mfma_f16_dq_d128);
GP_KERNEL_DECLARE(gp__attention_bwd_mfma_bf16_dkv_d32);
GP_KERNEL_DECLARE(gp__attention_bwd_mfma_bf16_dkv_d64);
GP_KERNEL_DECLARE(gp__attention_bwd_mfma_bf16_dkv_d128);
GP_KERNEL_DECLARE(gp__attention_bwd_mfma_f16_dkv_d32);
GP_KERNEL_DECLARE(gp__attention_bwd_mfma_f16_dkv_d64);
GP_KERNEL_DECLARE(gp__attention_bwd_mfma_f16_dkv_d128);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_mfma_bf16_d32);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_mfma_bf16_d64);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_mfma_bf16_d128);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_mfma_f16_d32);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_mfma_f16_d64);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_mfma_f16_d128);

#define N_DIMS 3
static const int k_dims[N_DIMS] = {32, 64, 128};
/* [bf16][head_dim index] */
static const struct gp_kernel_s *const k_fwd[2][N_DIMS] = {
    {GP_KERNEL_REF(gp__attention_fwd_mfma_f16_d32), GP_KERNEL_REF(gp__attention_fwd_mfma_f16_d64),
     GP_KERNEL_REF(gp__attention_fwd_mfma_f16_d128)},
    {GP_KERNEL_REF(gp__attention_fwd_mfma_bf16_d32), GP_KERNEL_REF(gp__attention_fwd_mfma_bf16_d64),
     GP_KERNEL_REF(gp__attention_fwd_mfma_bf16_d128)}};
static const struct gp_kernel_s *const k_dq[2][N_DIMS] = {
    {GP_KERNEL_REF(gp__attention_bwd_mfma_f16_dq_d32), GP_KERNEL_REF(gp__attention_bwd_mfma_f16_dq_d64),
     GP_KERNEL_REF(gp__attention_bwd_mfma_f16_dq_d128)},
    {GP_KERNEL_REF(gp__attention_bwd_mfma_bf16_dq_d32), GP_KERNEL_REF(gp__attention_bwd_mfma_bf16_dq_d64),
     GP_KERNEL_REF(gp__attention_bwd_mfma_bf16_dq_d128)}};
static const struct gp_kernel_s *const k_dkv[2][N_DIMS] = {
    {GP_KERNEL_REF(gp__attention_bwd_mfma_f16_dkv_d32), GP_KERNEL_REF(gp__attention_bwd_mfma_f16_dkv_d64),
     GP_KERNEL_REF(gp__attention_bwd_mfma_f16_dkv_d128)},
    {GP_KERNEL_REF(gp__attention_bwd_mfma_bf16_dkv_d32), GP_KERNEL_REF(gp__attention_bwd_mfma_bf16_dkv_d64),
     GP_KERNEL_REF(gp__attention_bwd_mfma_bf16_dkv_d128)}};
static const struct gp_kernel_s *const k_kv[2][N_DIMS] = {
    {GP_KERNEL_REF(gp__attention_kvcache_fwd_mfma_f16_d32), GP_KERNEL_REF(gp__attention_kvcache_fwd_mfma_f16_d64),
     GP_KERNEL_REF(gp__attention_kvcache_fwd_mfma_f16_d128)},
    {GP_KERNEL_REF(gp__attention_kvcache_fwd_mfma_bf16_d32), GP_KERNEL_REF(gp__attention_kvcache_fwd_mfma_bf16_d64),
     GP_KERNEL_REF(gp__attention_kvcache_fwd_mfma_bf16_d128)}};

/* Whether the MFMA kernels take p (why says why not); *di: the head_dim's index. */
static bool fits(const gp__attn_params_t *p, int *di, char *why, size_t why_len) {
  *di = -1;
  for (int i = 0; i < N_DIMS; i++)
    if (p->head_dim == k_dims[i]) *di = i;
  if (p->dtype != GP_F16 && p->dtype != GP_BF16) {
    snprintf(why, why_len, "f32 has no MFMA kernel");
    return false;
  }
  if (p->head_dim_v != p->head_dim) {
    snprintf(why, why_len, "head_dim_v %lld differs from head_dim %lld", (long long)p->head_dim_v,
             (long long)p->head_dim);
    return false;
  }
  if (*di < 0) {
    snprintf(why, why_len, "head_dim %lld has no MFMA kernel (32, 64, 128)", (long long)p->head_dim);
    return false;
  }
  return true;
}

/* tiles x heads x batch blocks in one grid dimension; false (why set) when they overflow. */
static bool grid_blocks(int64_t rows, int64_t heads, int64_t batch, unsigned *blocks, char *why,
                        size_t why_len) {
  const int64_t tiles = (rows + GP__AMD_ATTN_BM - 1) / GP__AMD_ATTN_BM;
  int64_t n;
  if (__builtin_mul_overflow(tiles, heads, &n) || __builtin_mul_overflow(n, batch, &n) ||
      n > (int64_t)INT32_MAX) {
    snprintf(why, why_len, "%lld tiles x %lld heads x %lld sequences exceed one grid dimension",
             (long long)tiles, (long long)heads, (long long)batch);
    return false;
  }
  *blocks = (unsigned)n;
  return true;
}

static bool fwd_supports(const gp__attn_params_t *p, gp__attn_plan_t *plan, char *why, size_t why_len) {
  int di;
  if (!fits(p, &di, why, why_len)) return false;
  if (!grid_blocks(p->seqlen_q, p->heads_q, p->batch, &plan->blocks, why, why_len)) return false;
  const int d = k_dims[di];
  plan->kernel = k_fwd[p->dtype == GP_BF16][di];
  plan->kernel_name = plan->kernel->name;
  plan->kernel_dkv = NULL;
  plan->blocks_dkv = 0;
  plan->threads = GP__AMD_ATTN_THREADS;
  plan->smem = (size_t)gp__amd_attn_lds_bytes(d, d);
  plan->smem_dkv = 0;
  snprintf(plan->name, sizeof plan->name,
           "%s (v_mfma_f32_32x32x8, wave64, %d query rows x %d keys per step, %d waves, grid %u, "
           "%zu B LDS)", plan->kernel->name, GP__AMD_ATTN_BM, GP__AMD_ATTN_BN,
           GP__AMD_ATTN_THREADS / 64, plan->blocks, plan->smem);
  return true;
}

static bool bwd_supports(const gp__attn_bwd_params_t *bp, gp__attn_plan_t *plan, char *why, size_t why_len) {
  const gp__attn_params_t *p = &bp->f;
  int di;
  if (!fits(p, &di, why, why_len)) return false;
  if (!grid_blocks(p->seqlen_q, p->heads_q, p->batch, &plan->blocks, why, why_len) ||
      !grid_blocks(p->seqlen_k, p->heads_kv, p->batch, &plan->blocks_dkv, why, why_len))
    return false;
  const int d = k_dims[di], bf16 = p->dtype == GP_BF16;
  plan->kernel = k_dq[bf16][di];
  plan->kernel_name = plan->kernel->name;
  plan->kernel_dkv = k_dkv[bf16][di];
  plan->threads = GP__AMD_ATTN_THREADS;
  plan->smem = (size_t)gp__amd_attn_bwd_dq_lds_bytes(d, d);
  plan->smem_dkv = (size_t)gp__amd_attn_bwd_dkv_lds_bytes(d, d);
  snprintf(plan->name, sizeof plan->name,
           "%s (grid %u, %zu B LDS) then %s (grid %u, %zu B LDS), v_mfma_f32_32x32x8, wave64, "
           "no atomics", plan->kernel->name, plan->blocks, plan->smem, plan->kernel_dkv->name,
           plan->blocks_dkv, plan->smem_dkv);
  return true;
}

static gp_status_t fwd_launch(gp_stream_t stream, const gp__attn_params_t *p, gp__attn_plan_t *plan) {
  gp__attn_params_t args_p = *p;
  void *args[] = {&args_p};
  return gp_launch(plan->kernel, gp_dim3(plan->blocks, 1, 1), gp_dim3(plan->threads, 1, 1),
                   plan->smem, stream, args);
}

/* The dq kernel, then the dk/dv kernel, in stream order. */
static gp_status_t bwd_launch(gp_stream_t stream, const gp__attn_bwd_params_t *bp, gp__attn_plan_t *plan) {
  gp__attn_bwd_params_t args_p = *bp;
  void *args[] = {&args_p};
  GP__TRY(gp_launch(plan->kernel, gp_dim3(plan->blocks, 1, 1), gp_dim3(plan->threads, 1, 1),
                    plan->smem, stream, args));
  return gp_launch(plan->kernel_dkv, gp_dim3(plan->blocks_dkv, 1, 1),
                   gp_dim3(plan->threads, 1, 1), plan->smem_dkv, stream, args);
}

/* ---- kvcache --------------------------------------------------------------------------- */

/* The main kernel of a kvcache call (kernels/mfma/attention_kvcache_mfma.cu) between the
 * portable append and combine kernels: f16/bf16 with head_dim 32, 64 or 128, at any
 * element-aligned address (16-byte loads where the pointers and strides allow them). */
static bool kv_supports(const gp__attn_kv_params_t *p, gp__attn_plan_t *plan, char *why, size_t why_len) {
  int di = -1;
  for (int i = 0; i < N_DIMS; i++)
    if (p->head_dim == k_dims[i]) di = i;
  if (p->dtype != GP_F16 && p->dtype != GP_BF16) {
    snprintf(why, why_len, "f32 has no MFMA kernel");
    return false;
  }
  if (di < 0) {
    snprintf(why, why_len, "head_dim %lld has no MFMA kvcache kernel (32, 64, 128)", (long long)p->head_dim);
    return false;
  }
  /* the portable append and combine kernels, and the grids of all three */
  if (!gp__attn_kv_portable_plan(p, &gp__attn_kv_portable_kernels, plan, why, why_len)) return false;
  const int d = k_dims[di];
  const int64_t tiles = (p->seqlen_q * (p->heads_q / p->heads_kv) + GP__AMD_ATTN_BM - 1) / GP__AMD_ATTN_BM;
  int64_t blocks;
  if (__builtin_mul_overflow(tiles, p->heads_kv, &blocks) || __builtin_mul_overflow(blocks, p->nsplit, &blocks) ||
      __builtin_mul_overflow(blocks, p->batch, &blocks) || blocks > (int64_t)INT32_MAX) {
    snprintf(why, why_len, "%lld row tiles x %lld heads x %lld splits x %lld sequences exceed one grid dimension",
             (long long)tiles, (long long)p->heads_kv, (long long)p->nsplit, (long long)p->batch);
    return false;
  }
  plan->kernel = k_kv[p->dtype == GP_BF16][di];
  plan->kernel_name = plan->kernel->name;
  plan->blocks = (unsigned)blocks;
  plan->threads = GP__AMD_ATTN_THREADS;
  plan->smem = (size_t)gp__amd_attn_lds_bytes(d, d);
  snprintf(plan->name, sizeof plan->name,
           "%s%s%s (v_mfma_f32_32x32x8, wave64, %d rows x %d keys per step, %d waves, grid %u, %zu B LDS)%s%s",
           plan->kernel_append ? plan->kernel_append->name : "", plan->kernel_append ? " + " : "",
           plan->kernel->name, GP__AMD_ATTN_BM, GP__AMD_ATTN_BN, GP__AMD_ATTN_THREADS / 64, plan->blocks,
           plan->smem, plan->kernel_combine ? " + " : "", plan->kernel_combine ? plan->kernel_combine->name : "");
  return true;
}

const gp__attn_kv_impl_t gp__attn_kv_impl_mfma = {"mfma", GP__FAMILY_MFMA, kv_supports,
                                                  gp__attn_kv_launch_plan}; /* portable append, MFMA, combine */
const gp__attn_fwd_impl_t gp__attn_fwd_impl_mfma = {"mfma", GP__FAMILY_MFMA, fwd_supports, fwd_launch};
const gp__attn_bwd_impl_t gp__attn_bwd_impl_mfma = {"mfma", GP__FAMILY_MFMA, bwd_supports, bwd_launch};
