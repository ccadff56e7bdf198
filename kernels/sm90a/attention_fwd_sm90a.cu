/*
 * attention_fwd_sm90a.cu - attention forward for NVIDIA Hopper (sm_90a), FlashAttention-3
 * style: TMA brings K and V, wgmma computes S = Q K^T and O += P V, a producer warp and
 * two consumer warpgroups (warp specialization). Built by nvcc for sm_90a only and, with
 * the host compiler, into the cpu library, where wgmma, TMA and mbarrier run under the
 * emulation of gpuport/nv_wgmma.h (GP_CPU_ATTENTION=sm90a). kernels/sm90a/attention_sm90a_host.c decides
 * when it runs (gated like the GEMM: GP_ENABLE_SM90A=1 on compute capability 9.0), encodes
 * the tensor maps of K and V, and launches it.
 *
 * gp__attention_fwd_sm90a_{f16,bf16}_d{64,128} (geometry in kernels/sm90a/sm90a.h), the
 * problem of src/attention_impl.h with head_dim == head_dim_v:
 *  - grid: one block per (128-row query tile, query head, sequence); GQA maps query head
 *    h to key head h / (heads_q / heads_kv); varlen sequences start at cu_q / cu_k, and
 *    offsets that do not fit the tensors fail the launch before any load
 *    (kernels/common/attention_seq.h; TMA's zero fill past the map would otherwise hide
 *    them in a wrong answer).
 *  - block: 384 threads. Warp 0 produces: for each key tile of the block's band it waits
 *    for the stage's "empty" barrier and loads K and V (boxes of 64 dims x BN keys, BN = 128, or 64 at head_dim 128) with
 *    TMA, completing on the stage's "full" barrier; warps 1-3 exit. Warpgroups 1 and 2
 *    own query rows 0-63 and 64-127 of the tile: each stages its Q rows in shared memory
 *    (K-major, 128-byte swizzle), then per key tile: S = Q K^T (m64nBNk16 x D/16), the
 *    mask (causal bottom-right, windows) and the online softmax in registers (rows are
 *    spread over 4 lanes), P written to its shared tile, a warpgroup barrier (an
 *    mbarrier of 4 warp arrivals), O += P V (m64nDk16 x BN/16, V N-major), and each warp
 *    frees the stage once its P V completed. At head_dim 128 the P V of tile j - 1 is
 *    issued behind the S of tile j and runs during the softmax of tile j
 *    (FlashAttention-3's intra-warpgroup pipelining; attention_fwd_sm90a.cuh).
 *  - keys past the sequence: TMA reads zeros past the tensor, or rows of the next
 *    sequence, which the mask hides from S; the consumers zero those V rows in shared
 *    memory before P V, so that no value there can reach O.
 *  - epilogue: O / l to the output type, lse = m + log l (natural log).
 */
#if defined(GP_BUILD_CPU) && !defined(GP_EMULATE_SM80)
#error "kernels/sm80 and kernels/sm90a build for the CPU executor only in emulation mode (-DGP_EMULATE_SM80)"
#endif
#include <math.h>
#include <gpuport/kernel.h>
#include <gpuport/nv_mma.h> /* gp_nv_pack_{f16,bf16}x2 */
#include <gpuport/nv_wgmma.h>

#include "attention_impl.h"
#include "kernels/common/attention_seq.h"
#include "kernels/sm90a/sm90a.h"

#if defined(GP_TARGET_CPU)
#define AT90_UNROLL _Pragma("GCC unroll 64")
#else
#define AT90_UNROLL _Pragma("unroll")
#endif
#define AT90_EXPORT(name) GP_KERNEL_EXPORT(name)

GP_DEVICE unsigned char *at90_align1024(unsigned char *p) {
  return p + ((1024u - gp_nv_smem_addr(p) % 1024u) % 1024u);
}

/* Offset of element (row, col) of a K-major tile with 128-byte swizzle whose rows hold
 * 64 two-byte elements per atom, atoms of `rows` rows along the columns (col / 64). */
GP_DEVICE uint32_t at90_kmajor(uint32_t row, uint32_t col, uint32_t rows) {
  const uint32_t a = (col / 64) * rows * 128 + row * 128 + (col % 64) * 2;
  return a ^ (((a >> 7) & 7u) << 4);
}

/* The consumer warpgroup's barrier: every warp arrives (lane 0, after its lanes), then
 * waits for the phase; *ph alternates. */
GP_DEVICE void at90_wg_sync(uint64_t *bar, unsigned *ph) {
  gp_syncwarp();
  if (threadIdx.x % 32 == 0) gp_nv_mbarrier_arrive(bar);
  gp_nv_mbarrier_wait(bar, *ph);
  *ph ^= 1u;
}

#define ATT_NAME gp__attention_fwd_sm90a_f16_d64
#define ATT_D 64
#define ATT_BF16 0
#include "attention_fwd_sm90a.cuh"
#define ATT_NAME gp__attention_fwd_sm90a_f16_d128
#define ATT_D 128
#define ATT_BF16 0
#include "attention_fwd_sm90a.cuh"
#define ATT_NAME gp__attention_fwd_sm90a_bf16_d64
#define ATT_D 64
#define ATT_BF16 1
#include "attention_fwd_sm90a.cuh"
#define ATT_NAME gp__attention_fwd_sm90a_bf16_d128
#define ATT_D 128
#define ATT_BF16 1
#include "attention_fwd_sm90a.cuh"
