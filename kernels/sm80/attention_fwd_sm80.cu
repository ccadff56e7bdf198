/*
 * attention_fwd_sm80.cu - attention forward for NVIDIA GPUs from Ampere on, in the manner of
 * FlashAttention-2 (Dao 2023, Algorithm 1 with its sm_80 work split): Q K^T and P V on
 * mma.sync m16n8k16, fragments from ldmatrix, tiles from cp.async, the softmax online in
 * the accumulator registers. One kernel per input type (f16, bf16) and head_dim (32, 64,
 * 96, 128, 256; head_dim_v equal), from attention_fwd_sm80.cuh. Built by nvcc for the
 * cuda backend and, with the host compiler, into the cpu library under the emulation of
 * gpuport/nv_mma.h (GP_CPU_ATTENTION=sm80). kernels/sm80/attention_sm80_host.c chooses and launches;
 * other head dims, f32, head_dim_v != head_dim and unaligned tensors go to the portable
 * kernel, and the INFO line says so.
 *
 * Decomposition (geometry in kernels/sm80/sm80.h; D = head_dim; W = 8 warps for D <= 64,
 * else 4; MT = 1 query tile per warp)
 *   grid   one block per (tile of BM = 16 W MT query rows, query head, sequence),
 *          flattened into grid.x as tile + tiles * (head + heads_q * sequence); key/value
 *          head h / (heads_q / heads_kv) (GQA, MQA).
 *   block  W warps; warp w owns the 16-row query tiles mt = 0 .. MT-1 at rows
 *          16 (W mt + w) of the block tile, and keeps for them in registers the S tile
 *          (16 x BN f32 per mt), the output accumulator (16 x D f32 per mt), and the
 *          running maximum and sum of its two rows per lane (rows g, g + 8 of the mma C
 *          layout). For D <= 128 the Q fragments also stay in registers.
 *   shared Q [BM][D+8], K [BN][D+8], V [BN][D+8] (b16; rows padded by 16 bytes so
 *          ldmatrix reads hit distinct banks; BN = 64 keys, 32 for D = 256): 20-66 KiB,
 *          above 48 KiB for D >= 128 (opt-in).
 *   loop   over the key tiles of BN that intersect the keys visible to the block's rows:
 *          wait for K_j, barrier, issue V_j; S = Q K_j^T (ldmatrix.x4 of K rows); mask
 *          (only in tiles the band cuts: causal bottom-right, windows, the end of the
 *          keys); online softmax in base 2 (s' = scale log2(e) s, row maxima and sums
 *          reduced over the 4 lanes of a row with two shuffles, accumulator rescaled by
 *          2^(m_old - m_new)); P rounded to the input type straight from the S registers
 *          into A fragments (the C layout of two 8-key tiles is the A layout of one
 *          16-key slice); wait for V_j, barrier, issue K_{j+1}; O += P V_j (ldmatrix.x4.trans
 *          of V rows). Loads of the next tile overlap the math of this one.
 *   end    the row sums are reduced over the 4 lanes; O / l stored in the input type,
 *          lse = m ln 2 + ln l; a row with no visible key stores zeros and lse = -inf.
 * Varlen: the block reads its sequence's offsets from cu_seqlens (offsets that do not
 * fit fail the launch first: kernels/common/attention_seq.h); blocks past the
 * sequence's end return at once (before any barrier, uniformly). Keys past the end
 * are zero-filled by the copies and masked.
 */
#include "attention_sm80_common.cuh"

#define ATT_NAME gp__attention_fwd_sm80_f16_d32
#define ATT_D 32
#define ATT_BF16 0
#include "attention_fwd_sm80.cuh"
#define ATT_NAME gp__attention_fwd_sm80_f16_d64
#define ATT_D 64
#define ATT_BF16 0
#include "attention_fwd_sm80.cuh"
#define ATT_NAME gp__attention_fwd_sm80_f16_d96
#define ATT_D 96
#define ATT_BF16 0
#include "attention_fwd_sm80.cuh"
#define ATT_NAME gp__attention_fwd_sm80_f16_d128
#define ATT_D 128
#define ATT_BF16 0
#include "attention_fwd_sm80.cuh"
#define ATT_NAME gp__attention_fwd_sm80_f16_d256
#define ATT_D 256
#define ATT_BF16 0
#include "attention_fwd_sm80.cuh"
#define ATT_NAME gp__attention_fwd_sm80_bf16_d32
#define ATT_D 32
#define ATT_BF16 1
#include "attention_fwd_sm80.cuh"
#define ATT_NAME gp__attention_fwd_sm80_bf16_d64
#define ATT_D 64
#define ATT_BF16 1
#include "attention_fwd_sm80.cuh"
#define ATT_NAME gp__attention_fwd_sm80_bf16_d96
#define ATT_D 96
#define ATT_BF16 1
#include "attention_fwd_sm80.cuh"
#define ATT_NAME gp__attention_fwd_sm80_bf16_d128
#define ATT_D 128
#define ATT_BF16 1
#include "attention_fwd_sm80.cuh"
#define ATT_NAME gp__attention_fwd_sm80_bf16_d256
#define ATT_D 256
#define ATT_BF16 1
#include "attention_fwd_sm80.cuh"
