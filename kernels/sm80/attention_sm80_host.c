/*
 * attention_sm80_host.c - the sm_80 attention family's entries of the attention tables
 * (src/attention_table.c): whether a kernel of kernels/sm80/attention_fwd_sm80.cu (and the
 * backward's main kernel in kernels/sm80/attention_bwd_sm80.cu) runs a checked call, which
 * one, and its launch. Built for the backends that run the family: cuda (devices of
 * compute capability 8.0 and above, src/dispatch.c) and cpu (GP_CPU_ATTENTION=sm80 and
 * sm90a, the same kernels built for the CPU executor), so the choice CI tests is the one
 * the GPUs make. The kernels take f16 or bf16, head_dim == head_dim_v in {32, 64, 96, 128,
 * 256}, and q, k, v whose pointers and strides allow 16-byte copies of each row (the
 * backward: dO too; cp.async moves 16 bytes, PTX ISA "cp.async"); anything else is
 * declined with the reason, and the next entry (the portable kernels) runs it. Stores
 * of o, dk and dv are element pairs written one element at a time, so the element
 * alignment src/attention.c checks is all they need. The kvcache entry
 * (kernels/sm80/attention_kvcache_sm80.cu) runs its split kernel between the portable
 * append and combine kernels, for the same types and head dims but 256, and q and the
 * caches with 16-byte aligned rows.
 */
#include <stdatomic.h>
#include <stdio.h>

#include "api.h"
#include "dispatch.h"
#include "kernels/sm80/sm80.h"

GP_KERNEL_DECLARE(gp__attention_fwd_sm80_f16_d32);
GP_KERNEL_DECLARE(gp__attention_fwd_sm80_f16_d64);
GP_KERNEL_DECLARE(gp__attention_fwd_sm80_f16_d96);
GP_KERNEL_DECLARE(gp__attention_fwd_sm80_f16_d128);
GP_KERNEL_DECLARE(gp__attention_fwd_sm80_f16_d256);
GP_KERNEL_DECLARE(gp__attention_fwd_sm80_bf16_d32);
GP_KERNEL_DECLARE(gp__attention_fwd_sm80_bf16_d64);
GP_KERNEL_DECLARE(gp__attention_fwd_sm80_bf16_d96);
GP_KERNEL_DECLARE(gp__attention_fwd_sm80_bf16_d128);
GP_KERNEL_DECLARE(gp__attention_fwd_sm80_bf16_d256);
GP_KERNEL_DECLARE(gp__attention_bwd_sm80_f16_d32);
GP_KERNEL_DECLARE(gp__attention_bwd_sm80_f16_d64);
GP_KERNEL_DECLARE(gp__attention_bwd_sm80_f16_d96);
GP_KERNEL_DECLARE(gp__attention_bwd_sm80_f16_d128);
GP_KERNEL_DECLARE(gp__attention_bwd_sm80_f16_d256);
GP_KERNEL_DECLARE(gp__attention_bwd_sm80_bf16_d32);
GP_KERNEL_DECLARE(gp__attention_bwd_sm80_bf16_d64);
GP_KERNEL_DECLARE(gp__attention_bwd_sm80_bf16_d96);
GP_KERNEL_DECLARE(gp__attention_bwd_sm80_bf16_d128);
GP_KERNEL_DECLARE(gp__attention_bwd_sm80_bf16_d256);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_sm80_f16_d32);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_sm80_f16_d64);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_sm80_f16_d96);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_sm80_f16_d128);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_sm80_bf16_d32);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_sm80_bf16_d64);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_sm80_bf16_d96);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_sm80_bf16_d128);

#define N_DIMS 5
static const int k_dims[N_DIMS] = {32, 64, 96, 128, 256};
/* [bf16][head_dim index] */
static const struct gp_kernel_s *const k_fwd[2][N_DIMS] = {
    {GP_KERNEL_REF(gp__attention_fwd_sm80_f16_d32), GP_KERNEL_REF(gp__attention_fwd_sm80_f16_d64),
     GP_KERNEL_REF(gp__attention_fwd_sm80_f16_d96), GP_KERNEL_REF(gp__attention_fwd_sm80_f16_d128),
     GP_KERNEL_REF(gp__attention_fwd_sm80_f16_d256)},
    {GP_KERNEL_REF(gp__attention_fwd_sm80_bf16_d32), GP_KERNEL_REF(gp__attention_fwd_sm80_bf16_d64),
     GP_KERNEL_REF(gp__attention_fwd_sm80_bf16_d96), GP_KERNEL_REF(gp__attention_fwd_sm80_bf16_d128),
     GP_KERNEL_REF(gp__attention_fwd_sm80_bf16_d256)}};

static const struct gp_kernel_s *const k_bwd[2][N_DIMS] = {
    {GP_KERNEL_REF(gp__attention_bwd_sm80_f16_d32), GP_KERNEL_REF(gp__attention_bwd_sm80_f16_d64),
     GP_KERNEL_REF(gp__attention_bwd_sm80_f16_d96), GP_KERNEL_REF(gp__attention_bwd_sm80_f16_d128),
     GP_KERNEL_REF(gp__attention_bwd_sm80_f16_d256)},
    {GP_KERNEL_REF(gp__attention_bwd_sm80_bf16_d32), GP_KERNEL_REF(gp__attention_bwd_sm80_bf16_d64),
     GP_KERNEL_REF(gp__attention_bwd_sm80_bf16_d96), GP_KERNEL_REF(gp__attention_bwd_sm80_bf16_d128),
     GP_KERNEL_REF(gp__attention_bwd_sm80_bf16_d256)}};

/* [bf16][head_dim index], head dims k_dims; none for 256 (it would spill) */
static const struct gp_kernel_s *const k_kv[2][N_DIMS] = {
    {GP_KERNEL_REF(gp__attention_kvcache_fwd_sm80_f16_d32), GP_KERNEL_REF(gp__attention_kvcache_fwd_sm80_f16_d64),
     GP_KERNEL_REF(gp__attention_kvcache_fwd_sm80_f16_d96), GP_KERNEL_REF(gp__attention_kvcache_fwd_sm80_f16_d128), NULL},
    {GP_KERNEL_REF(gp__attention_kvcache_fwd_sm80_bf16_d32), GP_KERNEL_REF(gp__attention_kvcache_fwd_sm80_bf16_d64),
     GP_KERNEL_REF(gp__attention_kvcache_fwd_sm80_bf16_d96), GP_KERNEL_REF(gp__attention_kvcache_fwd_sm80_bf16_d128), NULL}};

/* Every row of the tensor at x starts 16-byte aligned: the pointer and the strides
 * (elements of 2 bytes) that move between rows. */
static bool rows_aligned(const void *x, int64_t bs, int64_t ss, int64_t hs, bool varlen) {
  return ((uintptr_t)x & 15u) == 0 && ss % 8 == 0 && hs % 8 == 0 && (varlen || bs % 8 == 0);
}

/* Whether the sm_80 kernels take p (why says why not); *di: the head_dim's index. */
static bool fits(const gp__attn_params_t *p, int *di, char *why, size_t why_len) {
  *di = -1;
  for (int i = 0; i < N_DIMS; i++)
    if (p->head_dim == k_dims[i]) *di = i;
  const bool varlen = p->cu_q != NULL;
  if (p->dtype != GP_F16 && p->dtype != GP_BF16) {
    snprintf(why, why_len, "f32 has no sm_80 kernel");
    return false;
  }
  if (p->head_dim_v != p->head_dim) {
    snprintf(why, why_len, "head_dim_v %lld differs from head_dim %lld", (long long)p->head_dim_v,
             (long long)p->head_dim);
    return false;
  }
  if (*di < 0) {
    snprintf(why, why_len, "head_dim %lld has no sm_80 kernel (32, 64, 96, 128, 256)",
             (long long)p->head_dim);
    return false;
  }
  if (!rows_aligned(p->q, p->q_bs, p->q_ss, p->q_hs, varlen) ||
      !rows_aligned(p->k, p->k_bs, p->k_ss, p->k_hs, varlen) ||
      !rows_aligned(p->v, p->v_bs, p->v_ss, p->v_hs, varlen)) {
    snprintf(why, why_len, "rows of q, k or v are not 16-byte aligned (pointer or strides)");
    return false;
  }
  return true;
}

static bool fwd_supports(const gp__attn_params_t *p, gp__attn_plan_t *plan, char *why, size_t why_len) {
  int di;
  if (!fits(p, &di, why, why_len)) return false;
  const int d = k_dims[di];
  const int64_t tiles = (p->seqlen_q + GP__SM80_ATTN_BM(d) - 1) / GP__SM80_ATTN_BM(d);
  int64_t blocks;
  if (__builtin_mul_overflow(tiles, p->heads_q, &blocks) ||
      __builtin_mul_overflow(blocks, p->batch, &blocks) || blocks > (int64_t)INT32_MAX) {
    snprintf(why, why_len, "%lld blocks exceed one grid dimension", (long long)tiles);
    return false;
  }
  const int bf16 = p->dtype == GP_BF16;
  plan->slot = di + N_DIMS * bf16;
  plan->kernel = k_fwd[bf16][di];
  plan->kernel_name = plan->kernel->name;
  plan->blocks = (unsigned)blocks;
  plan->threads = GP__SM80_ATTN_THREADS(d);
  plan->smem = (size_t)GP__SM80_ATTN_SMEM(d);
  snprintf(plan->name, sizeof plan->name,
           "%s (mma.sync m16n8k16, %d query rows x %d keys per step, %d warps, grid %u, %zu B shared)",
           plan->kernel->name, GP__SM80_ATTN_BM(d), GP__SM80_ATTN_BN(d), GP__SM80_ATTN_WARPS(d),
           plan->blocks, plan->smem);
  return true;
}

/* The backward's main kernel between the portable preprocess and postprocesses: the
 * same workspace and slices, with the split over this kernel's key blocks. */
static bool bwd_supports(const gp__attn_bwd_params_t *bp, gp__attn_plan_t *plan, char *why, size_t why_len) {
  const gp__attn_params_t *p = &bp->f;
  int di;
  if (!fits(p, &di, why, why_len)) return false;
  if (!rows_aligned(bp->d_o, p->o_bs, p->o_ss, p->o_hs, p->cu_q != NULL)) {
    snprintf(why, why_len, "rows of d_o are not 16-byte aligned (pointer or o's strides)");
    return false;
  }
  const int d = k_dims[di], bf16 = p->dtype == GP_BF16;
  const int64_t nkb = (p->seqlen_k + GP__SM80_BWD_BN(d) - 1) / GP__SM80_BWD_BN(d);
  plan->nsplit = bp->deterministic ? (bp->nslices < nkb ? bp->nslices : nkb) : nkb;
  plan->nslices = bp->deterministic ? plan->nsplit : 1;
  int64_t blocks;
  if (__builtin_mul_overflow(plan->nsplit, p->batch * p->heads_q, &blocks) || blocks > (int64_t)INT32_MAX) {
    snprintf(why, why_len, "%lld key blocks x %lld heads x %lld sequences exceed one grid dimension",
             (long long)plan->nsplit, (long long)p->heads_q, (long long)p->batch);
    return false;
  }
  const gp__attn_bwd_kernels_t *k = &gp__attn_bwd_portable_kernels;
  plan->portable = k;
  plan->slot = 2 * N_DIMS + di + N_DIMS * bf16;
  plan->kernel = k_bwd[bf16][di];
  plan->kernel_name = plan->kernel->name;
  plan->blocks = (unsigned)blocks;
  plan->threads = GP__SM80_BWD_THREADS(d);
  plan->smem = (size_t)GP__SM80_BWD_SMEM(d);
  snprintf(plan->name, sizeof plan->name,
           "%s (mma.sync m16n8k16, %d keys x %d query rows per step, %d warps, %zu B shared), grid %u, "
           "%lld dq slice%s; portable %s, %s, %s",
           plan->kernel->name, GP__SM80_BWD_BN(d), GP__SM80_BWD_BMQ(d), GP__SM80_BWD_WARPS(d), plan->smem,
           plan->blocks, (long long)plan->nslices, plan->nslices == 1 ? "" : "s", k->pre->name, k->dq->name,
           k->dkv->name);
  return true;
}

/* Devices (bit d) on which each kernel's shared-memory limit has been raised, by slot:
 * forward [bf16][head_dim index], then backward, then kvcache. */
static atomic_ullong g_raised[6 * N_DIMS];

/* Raises the kernel's dynamic shared-memory limit on the current device, once. */
static gp_status_t raise_smem(const gp__attn_plan_t *plan) {
  const int dev = gp__current_device();
  atomic_ullong *done = &g_raised[plan->slot];
  const unsigned long long bit = dev < 64 ? 1ull << dev : 0ull;
  if (plan->smem <= 48 * 1024 || (bit && (atomic_load_explicit(done, memory_order_acquire) & bit)))
    return GP_SUCCESS;
  GP__TRY(gp_kernel_set_max_dynamic_shared(plan->kernel, plan->smem));
  atomic_fetch_or_explicit(done, bit, memory_order_release);
  return GP_SUCCESS;
}

static gp_status_t fwd_launch(gp_stream_t stream, const gp__attn_params_t *p, gp__attn_plan_t *plan) {
  GP__TRY(raise_smem(plan));
  gp__attn_params_t args_p = *p;
  void *args[] = {&args_p};
  return gp_launch(plan->kernel, gp_dim3(plan->blocks, 1, 1), gp_dim3(plan->threads, 1, 1),
                   plan->smem, stream, args);
}

static gp_status_t bwd_launch(gp_stream_t stream, const gp__attn_bwd_params_t *p, gp__attn_plan_t *plan) {
  gp__attn_bwd_params_t bp = *p;
  bp.nsplit = plan->nsplit;
  bp.nslices = plan->nslices;
  GP__TRY(raise_smem(plan));
  GP__TRY(gp__attn_bwd_portable_pre(stream, &bp, plan->portable));
  void *args[] = {&bp};
  GP__TRY(gp_launch(plan->kernel, gp_dim3(plan->blocks, 1, 1), gp_dim3(plan->threads, 1, 1), plan->smem,
                    stream, args));
  return gp__attn_bwd_portable_post(stream, &bp, plan->portable);
}

/* ---- kvcache --------------------------------------------------------------------------- */

/* The main kernel of a kvcache call (kernels/sm80/attention_kvcache_sm80.cu) between the
 * portable append and combine kernels: f16/bf16, head_dim 32, 64, 96 or 128, and q and the caches
 * with 16-byte aligned rows (pointers and strides, the caches' page stride too; the
 * portable append copies k_new and v_new element by element). */
static bool kv_supports(const gp__attn_kv_params_t *p, gp__attn_plan_t *plan, char *why, size_t why_len) {
  int di = -1;
  for (int i = 0; i < N_DIMS; i++)
    if (p->head_dim == k_dims[i]) di = i;
  if (p->dtype != GP_F16 && p->dtype != GP_BF16) {
    snprintf(why, why_len, "f32 has no sm_80 kernel");
    return false;
  }
  if (di < 0 || !k_kv[0][di]) {
    snprintf(why, why_len, "head_dim %lld has no sm_80 kvcache kernel (32, 64, 96, 128)", (long long)p->head_dim);
    return false;
  }
  if (!rows_aligned(p->q, p->q_bs, p->q_ss, p->q_hs, false) ||
      !rows_aligned(p->k_cache, p->kc_bs, p->kc_ss, p->kc_hs, false) ||
      !rows_aligned(p->v_cache, p->vc_bs, p->vc_ss, p->vc_hs, false)) {
    snprintf(why, why_len, "rows of q, k_cache or v_cache are not 16-byte aligned (pointer or strides)");
    return false;
  }
  /* the portable append and combine kernels, and the grids of all three */
  if (!gp__attn_kv_portable_plan(p, &gp__attn_kv_portable_kernels, plan, why, why_len)) return false;
  const int d = k_dims[di], bf16 = p->dtype == GP_BF16;
  const int64_t tiles = (p->seqlen_q * (p->heads_q / p->heads_kv) + GP__SM80_KV_BM(d) - 1) / GP__SM80_KV_BM(d);
  int64_t blocks;
  if (__builtin_mul_overflow(tiles, p->heads_kv, &blocks) || __builtin_mul_overflow(blocks, p->nsplit, &blocks) ||
      __builtin_mul_overflow(blocks, p->batch, &blocks) || blocks > (int64_t)INT32_MAX) {
    snprintf(why, why_len, "%lld row tiles x %lld heads x %lld splits x %lld sequences exceed one grid dimension",
             (long long)tiles, (long long)p->heads_kv, (long long)p->nsplit, (long long)p->batch);
    return false;
  }
  plan->slot = 4 * N_DIMS + di + N_DIMS * bf16;
  plan->kernel = k_kv[bf16][di];
  plan->kernel_name = plan->kernel->name;
  plan->blocks = (unsigned)blocks;
  plan->threads = GP__SM80_KV_THREADS(d);
  plan->smem = (size_t)GP__SM80_KV_SMEM(d);
  snprintf(plan->name, sizeof plan->name,
           "%s%s%s (mma.sync m16n8k16, %d rows x %d keys per step, %d warps, grid %u, %zu B shared)%s%s",
           plan->kernel_append ? plan->kernel_append->name : "", plan->kernel_append ? " + " : "",
           plan->kernel->name, GP__SM80_KV_BM(d), GP__SM80_KV_BN(d), GP__SM80_KV_WARPS(d), plan->blocks,
           plan->smem, plan->kernel_combine ? " + " : "", plan->kernel_combine ? plan->kernel_combine->name : "");
  return true;
}

static gp_status_t kv_launch(gp_stream_t stream, const gp__attn_kv_params_t *p, gp__attn_plan_t *plan) {
  GP__TRY(raise_smem(plan));
  return gp__attn_kv_launch_plan(stream, p, plan);
}

const gp__attn_kv_impl_t gp__attn_kv_impl_sm80 = {"sm80", GP__FAMILY_SM80, kv_supports, kv_launch};
const gp__attn_fwd_impl_t gp__attn_fwd_impl_sm80 = {"sm80", GP__FAMILY_SM80, fwd_supports, fwd_launch};
const gp__attn_bwd_impl_t gp__attn_bwd_impl_sm80 = {"sm80", GP__FAMILY_SM80, bwd_supports, bwd_launch};
