/*
 * attention_sm90a_host.c - the sm_90a attention family's entry of the forward table
 * (src/attention_table.c): whether the forward of kernels/sm90a/attention_fwd_sm90a.cu
 * runs a checked call, its TMA maps of K and V, and its launch. Built for the backends
 * that run the family: cuda (gated: compute capability 9.0 and GP_ENABLE_SM90A=1, as the
 * GEMM; src/dispatch.c) and cpu (GP_CPU_ATTENTION=sm90a), so the choice CI tests is the
 * one the GPUs make. What it declines (with the reason) goes to the sm_80 entry, then the
 * portable one.
 *
 * K and V are read by TMA through one 3D map each, (head_dim, rows, planes):
 *  - rows are the keys of every sequence one after another when the batch stride is
 *    seqlen_k row strides (the packed [batch, seq, heads, dim] layouts, and varlen):
 *    planes are the key heads; the map's rows stop at the end of the allocation that
 *    holds the tensor (varlen: gpuport must know it), so no read leaves it;
 *  - otherwise, when the batch stride is heads_kv head strides ([batch, heads, seq, dim]):
 *    rows are one sequence's keys, planes are sequence x key head, and TMA reads zeros
 *    past each sequence.
 * TMA needs 16-byte aligned bases and row strides (CUDA driver API,
 * cuTensorMapEncodeTiled), the kernel's Q loads the same of q.
 */
#include <stdatomic.h>
#include <stdio.h>

#include "api.h"
#include "dispatch.h"
#include "kernels/sm90a/sm90a.h"

GP_KERNEL_DECLARE(gp__attention_fwd_sm90a_f16_d64);
GP_KERNEL_DECLARE(gp__attention_fwd_sm90a_f16_d128);
GP_KERNEL_DECLARE(gp__attention_fwd_sm90a_bf16_d64);
GP_KERNEL_DECLARE(gp__attention_fwd_sm90a_bf16_d128);

/* [bf16][head_dim 64, 128] */
static const struct gp_kernel_s *const k_fwd[2][2] = {
    {GP_KERNEL_REF(gp__attention_fwd_sm90a_f16_d64), GP_KERNEL_REF(gp__attention_fwd_sm90a_f16_d128)},
    {GP_KERNEL_REF(gp__attention_fwd_sm90a_bf16_d64), GP_KERNEL_REF(gp__attention_fwd_sm90a_bf16_d128)}};

/* Devices (bit d) on which each kernel's shared-memory limit has been raised, by slot
 * [bf16][head_dim 128]. */
static atomic_ullong g_raised[4];

/* The map of K or V at x (strides ss, hs, bs in elements); false (why set) when TMA cannot take it. */
static bool encode(gp_nv_tensor_map_t *tm, int *kv_bh, const gp__attn_params_t *p, const void *x, int64_t ss,
                   int64_t hs, int64_t bs, char *why, size_t why_len) {
  const int64_t d = p->head_dim;
  if (((uintptr_t)x & 15u) || ss % 8 || hs % 8 || ss <= 0 || hs < 0) {
    snprintf(why, why_len, "rows not 16-byte aligned (pointer or strides)");
    return false;
  }
  uint64_t dims[3], strides[2];
  const uint32_t box[3] = {64, (uint32_t)GP__SM90_ATTN_BN(d), 1};
  if (p->cu_q || bs == p->seqlen_k * ss) {
    /* rows of all sequences: as many as fit in the allocation from x on */
    int64_t rows = p->batch * p->seqlen_k;
    if (p->cu_q) {
      gp__alloc_info_t info;
      if (!gp__alloc_find(x, &info)) {
        snprintf(why, why_len, "varlen tensors in memory gpuport did not allocate (the map's end unknown)");
        return false;
      }
      const int64_t avail = (int64_t)((const char *)info.base + info.bytes - (const char *)x) / 2 -
                            (p->heads_kv - 1) * hs - d;
      if (avail < 0) {
        snprintf(why, why_len, "the tensor's heads run past its allocation");
        return false;
      }
      rows = avail / ss + 1;
    }
    if (rows <= 0 || rows >= (1ll << 31)) {
      snprintf(why, why_len, "%lld rows (below 2^31)", (long long)rows);
      return false;
    }
    dims[0] = (uint64_t)d, dims[1] = (uint64_t)rows, dims[2] = (uint64_t)p->heads_kv;
    strides[0] = 2 * (uint64_t)ss, strides[1] = 2 * (uint64_t)(hs ? hs : ss);
    *kv_bh = 0;
  } else if (bs == p->heads_kv * hs && hs > 0) {
    dims[0] = (uint64_t)d, dims[1] = (uint64_t)p->seqlen_k, dims[2] = (uint64_t)(p->batch * p->heads_kv);
    strides[0] = 2 * (uint64_t)ss, strides[1] = 2 * (uint64_t)hs;
    *kv_bh = 1;
  } else {
    snprintf(why, why_len, "a batch stride neither seqlen_k rows nor heads_kv heads");
    return false;
  }
  return gp__nv_tensor_map_make(tm, 2, 3, x, dims, strides, box, GP_NV_SWIZZLE_128B, why, why_len) == GP_SUCCESS;
}

static bool supports(const gp__attn_params_t *p, gp__attn_plan_t *plan, char *why, size_t why_len) {
  if (p->dtype != GP_F16 && p->dtype != GP_BF16) {
    snprintf(why, why_len, "f32 has no kernel");
    return false;
  }
  if (p->head_dim != p->head_dim_v || (p->head_dim != 64 && p->head_dim != 128)) {
    snprintf(why, why_len, "head_dim %lld / %lld (64 or 128, equal)", (long long)p->head_dim,
             (long long)p->head_dim_v);
    return false;
  }
  const bool varlen = p->cu_q != NULL;
  if (((uintptr_t)p->q & 15u) || p->q_ss % 8 || p->q_hs % 8 || (!varlen && p->q_bs % 8)) {
    snprintf(why, why_len, "rows of q are not 16-byte aligned");
    return false;
  }
  int bh_k = 0, bh_v = 0;
  char map_why[160] = "";
  if (!encode(&plan->map_k, &bh_k, p, p->k, p->k_ss, p->k_hs, p->k_bs, map_why, sizeof map_why) ||
      !encode(&plan->map_v, &bh_v, p, p->v, p->v_ss, p->v_hs, p->v_bs, map_why, sizeof map_why)) {
    snprintf(why, why_len, "k or v not addressable by one TMA map: %s", map_why);
    return false;
  }
  if (bh_k != bh_v) {
    snprintf(why, why_len, "k and v laid out differently (one TMA map kind for both)");
    return false;
  }
  const int64_t tiles = (p->seqlen_q + GP__SM90_ATTN_BM - 1) / GP__SM90_ATTN_BM;
  int64_t blocks;
  if (__builtin_mul_overflow(tiles, p->heads_q, &blocks) || __builtin_mul_overflow(blocks, p->batch, &blocks) ||
      blocks > (int64_t)INT32_MAX) {
    snprintf(why, why_len, "%lld blocks exceed one grid dimension", (long long)tiles);
    return false;
  }
  const int bf16 = p->dtype == GP_BF16, d128 = p->head_dim == 128;
  plan->kv_bh = bh_k;
  plan->slot = 2 * bf16 + d128;
  plan->kernel = k_fwd[bf16][d128];
  plan->kernel_name = plan->kernel->name;
  plan->blocks = (unsigned)blocks;
  plan->threads = GP__SM90_ATTN_THREADS;
  plan->smem = (size_t)GP__SM90_ATTN_SMEM(p->head_dim);
  snprintf(plan->name, sizeof plan->name,
           "%s (wgmma + TMA, %d query rows x %d keys per step, producer warp + 2 consumer warpgroups, grid %u, "
           "%zu B shared)",
           plan->kernel->name, GP__SM90_ATTN_BM, GP__SM90_ATTN_BN((int)p->head_dim), plan->blocks, plan->smem);
  return true;
}

static gp_status_t launch(gp_stream_t stream, const gp__attn_params_t *p, gp__attn_plan_t *plan) {
  const int dev = gp__current_device();
  atomic_ullong *done = &g_raised[plan->slot];
  const unsigned long long bit = dev < 64 ? 1ull << dev : 0ull;
  if (!bit || !(atomic_load_explicit(done, memory_order_acquire) & bit)) {
    GP__TRY(gp_kernel_set_max_dynamic_shared(plan->kernel, plan->smem));
    atomic_fetch_or_explicit(done, bit, memory_order_release);
  }
  gp__attn_params_t args_p = *p;
  gp_nv_tensor_map_t mk = plan->map_k, mv = plan->map_v;
  int kv_bh = plan->kv_bh;
  void *args[] = {&args_p, &mk, &mv, &kv_bh};
  return gp_launch(plan->kernel, gp_dim3(plan->blocks, 1, 1), gp_dim3(plan->threads, 1, 1), plan->smem, stream,
                   args);
}

const gp__attn_fwd_impl_t gp__attn_fwd_impl_sm90a = {"sm90a", GP__FAMILY_SM90A, supports, launch};
