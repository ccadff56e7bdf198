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
#else
typedef int gp__attn_amd_unused_t; /* no AMD kernels in this backend */
#endif
