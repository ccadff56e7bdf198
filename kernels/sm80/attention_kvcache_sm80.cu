/*
 * attention_kvcache_sm80.cu - attention over a paged KV cache (gp_attention_fwd_kvcache)
 * for NVIDIA GPUs from Ampere on: the main (split) kernel of the kvcache family in the
 * manner of FlashAttention-2's split-KV forward, on the sm_80 forward's structure
 * (attention_fwd_sm80.cu: mma.sync m16n8k16, ldmatrix, cp.async, softmax online in the
 * accumulator registers). One kernel per input type (f16, bf16) and head_dim (32, 64,
 * 96, 128), from attention_kvcache_sm80.cuh; head_dim 256 runs the portable kernels (the
 * forward's 32-key tiles with the page gathers here spilled 72 bytes on sm_90). The
 * portable append and combine kernels (kernels/portable/attention_kvcache_portable.cu)
 * run before and after it;
 * kernels/sm80/attention_sm80_host.c chooses and launches. Built by nvcc for the cuda
 * backend and, under the emulation of gpuport/nv_mma.h, into the cpu library
 * (GP_CPU_ATTENTION=sm80).
 *
 * Decomposition (geometry in kernels/sm80/sm80.h; D = head_dim)
 *   grid   one block per (tile of BM = 64 rows, key/value head hk, split, sequence),
 *          tile fastest, as the portable kernel. Rows are the queries of hk's GQA group
 *          packed together: row r is query r / group of query head hk group + r % group,
 *          so a decode step fills the tile and K/V are read once per group.
 *   block  4 warps; warp w owns rows 16 w .. 16 w + 15, and keeps in registers its Q
 *          fragments, the S tile (16 x BN f32, BN = 64 keys), the output accumulator
 *          (16 x D f32), and the running maximum and sum of its two rows per lane. A
 *          warp whose rows are all past the tile's end takes part in the copies and
 *          barriers only.
 *   keys   [lo, hi]: the block's split (gp__attn_kv_split) cut to the keys its rows can
 *          see; the cache length and the block-table entries of these keys are checked
 *          before any barrier (kernels/common/attention_kvcache.h). K and V tiles of BN
 *          rows are gathered with 16-byte cp.async copies, each key's row found through
 *          the block table (gp__attn_kv_token); rows past hi are zero-filled and masked.
 *   loop   the forward's: wait for K_j, barrier, issue V_j; S = Q K_j^T; mask (tiles a
 *          band or hi cuts); online softmax in base 2; P to A fragments; wait for V_j,
 *          barrier, issue K_{j+1}; O += P V_j.
 *   end    one split: O / l in the input type and lse; else the partial O / l (f32) and
 *          partial lse into the workspace, as the portable kernel writes them, for the
 *          combine kernel. A row with no visible key writes zeros and -inf.
 */
#include "attention_sm80_common.cuh"
#include "kernels/common/attention_kvcache.h"

#define KVA_UNROLL ATT_UNROLL

/* Copies the rows of query rows r0 .. r0 + rows - 1 of the packed GQA group of key/value
 * head hk (sequence b) into dst ([tile][d + 8]) in 16-byte chunks; rows >= rows of the
 * tile are zero-filled without reading. */
GP_DEVICE void kva_stage_q(gp_nv_async_t *as, uint16_t *dst, const gp__attn_kv_params_t *p, int64_t b, int64_t hk,
                           int64_t group, int64_t r0, int rows, int tile, int d, int tid, int threads) {
  const int per_row = d / 8;
  const uint16_t *q = (const uint16_t *)p->q;
  ATT_ROLLED
  for (int ch = tid; ch < tile * per_row; ch += threads) {
    const int r = ch / per_row, c = ch % per_row * 8;
    const bool valid = r < rows;
    const int64_t flat = r0 + r, i = flat / group, h = hk * group + flat % group;
    gp_nv_cp_async_16(as, dst + r * (d + 8) + c, valid ? q + b * p->q_bs + i * p->q_ss + h * p->q_hs + c : q,
                      valid ? 16 : 0);
  }
}

/* Copies the cache rows of keys j0 .. j0 + tile - 1 of sequence b (base: the cache plus
 * the head's offset; bs, ss: its page and token strides) into dst ([tile][d + 8]), each
 * row through the block table; keys past hi are zero-filled without reading. */
GP_DEVICE void kva_stage_kv(gp_nv_async_t *as, uint16_t *dst, const uint16_t *base, const gp__attn_kv_params_t *p,
                            int64_t b, int64_t bs, int64_t ss, int64_t j0, int64_t hi, int tile, int d, int tid,
                            int threads) {
  const int per_row = d / 8;
  ATT_ROLLED
  for (int ch = tid; ch < tile * per_row; ch += threads) {
    const int r = ch / per_row, c = ch % per_row * 8;
    const bool valid = j0 + r <= hi;
    gp_nv_cp_async_16(as, dst + r * (d + 8) + c, valid ? base + gp__attn_kv_token(p, b, j0 + r, bs, ss) + c : base,
                      valid ? 16 : 0);
  }
}

#define KVA_NAME gp__attention_kvcache_fwd_sm80_f16_d32
#define KVA_D 32
#define KVA_BF16 0
#include "attention_kvcache_sm80.cuh"
#define KVA_NAME gp__attention_kvcache_fwd_sm80_f16_d64
#define KVA_D 64
#define KVA_BF16 0
#include "attention_kvcache_sm80.cuh"
#define KVA_NAME gp__attention_kvcache_fwd_sm80_f16_d96
#define KVA_D 96
#define KVA_BF16 0
#include "attention_kvcache_sm80.cuh"
#define KVA_NAME gp__attention_kvcache_fwd_sm80_f16_d128
#define KVA_D 128
#define KVA_BF16 0
#include "attention_kvcache_sm80.cuh"
#define KVA_NAME gp__attention_kvcache_fwd_sm80_bf16_d32
#define KVA_D 32
#define KVA_BF16 1
#include "attention_kvcache_sm80.cuh"
#define KVA_NAME gp__attention_kvcache_fwd_sm80_bf16_d64
#define KVA_D 64
#define KVA_BF16 1
#include "attention_kvcache_sm80.cuh"
#define KVA_NAME gp__attention_kvcache_fwd_sm80_bf16_d96
#define KVA_D 96
#define KVA_BF16 1
#include "attention_kvcache_sm80.cuh"
#define KVA_NAME gp__attention_kvcache_fwd_sm80_bf16_d128
#define KVA_D 128
#define KVA_BF16 1
#include "attention_kvcache_sm80.cuh"
