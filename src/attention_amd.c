/*
 * attention_amd.c - the AMD MFMA attention kernels (hip/attention_mfma.cu): whether a call
 * takes them, and their launch. One choice for two users: the hip backend, and the cpu
 * backend with GP_CPU_ATTENTION=mfma, which runs the CPU build of the same kernels with
 * the MFMA emulated at wave64 (so the choice and the kernels are tested in CI).
 *
 * Taken: f16 and bf16 with head_dim == head_dim_v in {32, 64, 128}; every mask, GQA/MQA,
 * varlen and lse. Anything else (f32; other head dims; head_dim != head_dim_v) returns 0
 * with the reason, and the caller runs the portable kernel and says so in the log line.
 */
#include <stdio.h>

#include "attention_amd.h"
#include "attention_impl.h"
#include "internal.h"

#if defined(GP_BUILD_HIP) || defined(GP_BUILD_CPU)
#include "kernels/amd_mfma_geometry.h"

GP_KERNEL_DECLARE(gp__attn_mfma_bf16_d32);
GP_KERNEL_DECLARE(gp__attn_mfma_bf16_d64);
GP_KERNEL_DECLARE(gp__attn_mfma_bf16_d128);
GP_KERNEL_DECLARE(gp__attn_mfma_f16_d32);
GP_KERNEL_DECLARE(gp__attn_mfma_f16_d64);
GP_KERNEL_DECLARE(gp__attn_mfma_f16_d128);

int gp__attn_amd_choose(const gp__attn_params_t *p, gp_kernel_t *kernel, char *why, size_t why_len) {
  *kernel = NULL;
  if (p->dtype != GP_F16 && p->dtype != GP_BF16) {
    snprintf(why, why_len, "no MFMA kernel for f32 attention");
    return 0;
  }
  if (p->head_dim != p->head_dim_v) {
    snprintf(why, why_len, "no MFMA kernel for head_dim %lld != head_dim_v %lld",
             (long long)p->head_dim, (long long)p->head_dim_v);
    return 0;
  }
  const int bf = p->dtype == GP_BF16;
  switch (p->head_dim) {
    case 32: *kernel = bf ? GP_KERNEL_REF(gp__attn_mfma_bf16_d32) : GP_KERNEL_REF(gp__attn_mfma_f16_d32); break;
    case 64: *kernel = bf ? GP_KERNEL_REF(gp__attn_mfma_bf16_d64) : GP_KERNEL_REF(gp__attn_mfma_f16_d64); break;
    case 128: *kernel = bf ? GP_KERNEL_REF(gp__attn_mfma_bf16_d128) : GP_KERNEL_REF(gp__attn_mfma_f16_d128); break;
    default:
      snprintf(why, why_len, "no MFMA kernel for head_dim %lld (32, 64, 128)", (long long)p->head_dim);
      return 0;
  }
  return 1;
}

gp_status_t gp__attn_amd_launch(gp_stream_t stream, const gp__attn_params_t *p, gp_kernel_t kernel,
                                char *what, size_t what_len) {
  int64_t tiles = (p->seqlen_q + GP__AMD_ATTN_BM - 1) / GP__AMD_ATTN_BM, blocks;
  if (__builtin_mul_overflow(tiles, p->heads_q, &blocks) ||
      __builtin_mul_overflow(blocks, p->batch, &blocks) || blocks > (int64_t)INT32_MAX)
    return gp__error(GP_ERROR_NOT_SUPPORTED, "gp_attention_fwd",
                     "%lld query tiles x %lld heads x %lld sequences exceed one grid dimension",
                     (long long)tiles, (long long)p->heads_q, (long long)p->batch);
  const size_t smem = (size_t)gp__amd_attn_lds_bytes((int)p->head_dim, (int)p->head_dim_v);
  snprintf(what, what_len, "MFMA kernel %s (v_mfma_f32_32x32x8, wave64, grid %lld, block %d, "
           "%d x %d tiles, %zu B LDS)", kernel->name, (long long)blocks, GP__AMD_ATTN_THREADS,
           GP__AMD_ATTN_BM, GP__AMD_ATTN_BN, smem);
  gp_dim3_t grid = {(unsigned)blocks, 1, 1}, block = {GP__AMD_ATTN_THREADS, 1, 1};
  gp__attn_params_t args_p = *p;
  void *args[] = {&args_p};
  return gp_launch(kernel, grid, block, smem, stream, args);
}
/* ---- backward (hip/attention_bwd_mfma.cu) --------------------------------------------- */
#define BWD_DECLARE(t, d) GP_KERNEL_DECLARE(gp__attn_bwd_dq_##t##_d##d); GP_KERNEL_DECLARE(gp__attn_bwd_dkv_##t##_d##d)
BWD_DECLARE(bf16, 32);
BWD_DECLARE(bf16, 64);
BWD_DECLARE(bf16, 128);
BWD_DECLARE(f16, 32);
BWD_DECLARE(f16, 64);
BWD_DECLARE(f16, 128);
#undef BWD_DECLARE

int gp__attn_amd_bwd_choose(const gp__attn_params_t *p, char *why, size_t why_len) {
  gp_kernel_t k = NULL;
  if (!gp__attn_amd_choose(p, &k, why, why_len)) return 0;
  if (p->lse == NULL) {
    snprintf(why, why_len, "the MFMA backward needs the forward's lse");
    return 0;
  }
  return 1;
}

/* One f32 per lse element: batch x heads_q x seqlen_q, which also bounds the varlen
 * layout [heads_q, total_q] (every sequence has at most seqlen_q queries). */
size_t gp__attn_amd_bwd_workspace(const gp__attn_params_t *p) {
  return (size_t)(p->batch * p->heads_q * p->seqlen_q) * sizeof(float);
}

static gp_kernel_t bwd_kernel(const gp__attn_params_t *p, int dkv) {
  const int bf = p->dtype == GP_BF16;
#define PICK(d)                                                                                \
  (dkv ? (bf ? GP_KERNEL_REF(gp__attn_bwd_dkv_bf16_d##d) : GP_KERNEL_REF(gp__attn_bwd_dkv_f16_d##d)) \
       : (bf ? GP_KERNEL_REF(gp__attn_bwd_dq_bf16_d##d) : GP_KERNEL_REF(gp__attn_bwd_dq_f16_d##d)))
  if (p->head_dim == 32) return PICK(32);
  if (p->head_dim == 64) return PICK(64);
  return PICK(128);
#undef PICK
}

gp_status_t gp__attn_amd_bwd_launch(gp_stream_t stream, const gp__attn_bwd_params_t *p, char *what,
                                    size_t what_len) {
  const gp__attn_params_t *f = &p->f;
  int64_t qt = (f->seqlen_q + GP__AMD_ATTN_BM - 1) / GP__AMD_ATTN_BM, kt = (f->seqlen_k + GP__AMD_ATTN_BM - 1) / GP__AMD_ATTN_BM;
  int64_t nq, nk;
  if (__builtin_mul_overflow(qt, f->heads_q, &nq) || __builtin_mul_overflow(nq, f->batch, &nq) ||
      __builtin_mul_overflow(kt, f->heads_kv, &nk) || __builtin_mul_overflow(nk, f->batch, &nk) ||
      nq > (int64_t)INT32_MAX || nk > (int64_t)INT32_MAX)
    return gp__error(GP_ERROR_NOT_SUPPORTED, "gp_attention_bwd", "the grid of the backward exceeds one grid dimension");
  const int d = (int)f->head_dim, dv = (int)f->head_dim_v;
  const gp_kernel_t kq = bwd_kernel(f, 0), kkv = bwd_kernel(f, 1);
  const size_t smem_q = (size_t)gp__amd_attn_bwd_dq_lds_bytes(d, dv);
  const size_t smem_kv = (size_t)gp__amd_attn_bwd_dkv_lds_bytes(d, dv);
  snprintf(what, what_len, "MFMA kernels %s (grid %lld, %zu B LDS) then %s (grid %lld, %zu B LDS), "
           "wave64, no atomics", kq->name, (long long)nq, smem_q, kkv->name, (long long)nk, smem_kv);
  gp__attn_bwd_params_t args_p = *p;
  void *args[] = {&args_p};
  gp_dim3_t block = {GP__AMD_ATTN_THREADS, 1, 1};
  gp_status_t st = gp_launch(kq, (gp_dim3_t){(unsigned)nq, 1, 1}, block, smem_q, stream, args);
  if (st != GP_SUCCESS) return st;
  return gp_launch(kkv, (gp_dim3_t){(unsigned)nk, 1, 1}, block, smem_kv, stream, args);
}
#else
typedef int gp__attn_amd_unused_t; /* no AMD kernels in this backend */
#endif
