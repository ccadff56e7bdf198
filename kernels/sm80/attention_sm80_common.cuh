/*
 * attention_sm80_common.cuh - what the sm_80 attention kernels (attention_fwd_sm80.cu,
 * attention_bwd_sm80.cu) share: tile copies into padded shared-memory rows and paired
 * stores of the input type.
 */
#ifndef GP_CUDA_ATTENTION_SM80_COMMON_CUH
#define GP_CUDA_ATTENTION_SM80_COMMON_CUH

#if defined(GP_BUILD_CPU) && !defined(GP_EMULATE_SM80)
#error "kernels/sm80 and kernels/sm90a build for the CPU executor only in emulation mode (-DGP_EMULATE_SM80)"
#endif
#include <math.h>
#include <gpuport/kernel.h>
#include <gpuport/nv_mma.h>

#include "attention_impl.h"
#include "kernels/common/attention_seq.h"
#include "kernels/sm80/sm80.h"

#if defined(GP_TARGET_CPU)
#define ATT_UNROLL _Pragma("GCC unroll 32")
#define ATT_ROLLED
#else
#define ATT_UNROLL _Pragma("unroll")
/* A loop kept rolled, so that the compiler does not hoist its fragment loads and run
 * out of registers (the backward holds dK and dV accumulators throughout). */
#define ATT_ROLLED _Pragma("unroll 1")
#endif
#define SM80_EXPORT(name) GP_KERNEL_EXPORT(name)

/* Copies rows x d elements (rows at src + r * stride, d contiguous) into dst (row length
 * d + 8) in 16-byte chunks; rows >= rows_valid are zero-filled without reading. */
GP_DEVICE void att_stage(gp_nv_async_t *as, uint16_t *dst, const uint16_t *src, int64_t stride, int rows,
                         int64_t rows_valid, int d, int tid, int threads) {
  const int per_row = d / 8;
  ATT_ROLLED
  for (int ch = tid; ch < rows * per_row; ch += threads) {
    const int r = ch / per_row, c = ch % per_row * 8;
    const bool valid = r < rows_valid;
    gp_nv_cp_async_16(as, dst + r * (d + 8) + c, valid ? src + r * stride + c : src, valid ? 16 : 0);
  }
}

/* Stores two adjacent output elements (x0 at element off, x1 at off + 1). */
GP_DEVICE void att_store2(void *o, int64_t off, int bf16, float x0, float x1) {
  const uint32_t w = bf16 ? gp_nv_pack_bf16x2(x0, x1) : gp_nv_pack_f16x2(x0, x1);
  ((uint16_t *)o)[off] = (uint16_t)(w & 0xffffu);
  ((uint16_t *)o)[off + 1] = (uint16_t)(w >> 16);
}

#endif /* GP_CUDA_ATTENTION_SM80_COMMON_CUH */
