/*
 * attention_bwd_sm80.cu - the main kernel of attention backward for NVIDIA GPUs from
 * Ampere on, in the manner of FlashAttention-2 (Dao 2023, Algorithm 2, with its sm_80
 * work split): every product on mma.sync m16n8k16, fragments from ldmatrix, tiles from
 * cp.async. One kernel per input type and head_dim (32, 64, 96, 128, 256; head_dim_v
 * equal), from attention_bwd_sm80.cuh. It takes the place of the portable main kernel
 * in the portable kernels' protocol (kernels/portable/attention_bwd_portable.cu): the portable
 * preprocess computes D = rowsum(dO * O) and zeroes the dq accumulator, this kernel
 * accumulates dq (unscaled, f32) and writes dk and dv (or, with GQA/MQA, per query head
 * in f32), the portable postprocesses scale and convert dq and sum dk and dv over a
 * group, so the workspace and deterministic mode are the same whichever main kernel
 * runs. kernels/sm80/attention_sm80_host.c chooses and launches.
 *
 * Decomposition (geometry in kernels/sm80/sm80.h; D = head_dim; BN = 64 keys per key block
 * (32 for D = 256), KW = BN / 16; NDG = 1 for D <= 64, 2 for 96 and 128, 4 for 256;
 * BMQ = 32)
 *   grid   one block per (split, query head, sequence), split fastest, as the portable
 *          main kernel: split s takes the key blocks s, s + nsplit, ... of BN keys.
 *   block  KW NDG warps (4 or 8); warp w owns keys 16 (w % KW) .. + 15 of the key block
 *          and head dimensions D / NDG (w / KW) .. of its dK and dV accumulators (f32
 *          registers in the mma C layout, 16 x D / NDG each); the NDG warps of a key
 *          slice each recompute its S^T and dP^T.
 *   loop   K and V of the key block are copied to shared memory once; the query rows
 *          that see any of its keys (gp__attn_query_range) stream past in tiles of BMQ:
 *          copy Q and dO (cp.async), lse and D; then each warp computes, for its 16 keys,
 *          S^T = K Q^T and dP^T = V dO^T (ldmatrix.x4 of K, V, Q and dO rows), the mask,
 *          P^T = 2^(s' - lse') (s' = scale log2(e) s, lse' = log2(e) lse; rows without
 *          keys have lse = -inf and P = 0) and dS^T = P^T (dP^T - D); then
 *          dV += P^T dO and dK += dS^T Q with P^T and dS^T rounded to the input type
 *          straight from the accumulators into A fragments (ldmatrix.x4.trans of dO and
 *          Q); dS^T goes to shared memory, and after a barrier each warp computes a
 *          16-row piece of dQ (GP__SM80_BWD_QCH columns) = dS K (ldmatrix.x4.trans
 *          of dS^T and K) and adds it to the f32 accumulator with atomicAdd: one add per
 *          element per key block, in key-block order, so deterministic mode (one slice
 *          per split) is bitwise reproducible.
 *   end    dK (scaled) and dV of the key block are stored in the input type, or with
 *          GQA/MQA in f32 per query head for the portable group sum.
 * Varlen sequences follow gp__attn_sequence() (kernels/common/attention_seq.h: offsets
 * that do not fit fail the launch before any read); keys past the end are zero-filled
 * by the copies and masked, as are query rows past the end.
 */
#include "attention_sm80_common.cuh"

#define BWD_NAME gp__attention_bwd_sm80_f16_d32
#define BWD_D 32
#define BWD_BF16 0
#include "attention_bwd_sm80.cuh"
#define BWD_NAME gp__attention_bwd_sm80_f16_d64
#define BWD_D 64
#define BWD_BF16 0
#include "attention_bwd_sm80.cuh"
#define BWD_NAME gp__attention_bwd_sm80_f16_d96
#define BWD_D 96
#define BWD_BF16 0
#include "attention_bwd_sm80.cuh"
#define BWD_NAME gp__attention_bwd_sm80_f16_d128
#define BWD_D 128
#define BWD_BF16 0
#include "attention_bwd_sm80.cuh"
#define BWD_NAME gp__attention_bwd_sm80_f16_d256
#define BWD_D 256
#define BWD_BF16 0
#include "attention_bwd_sm80.cuh"
#define BWD_NAME gp__attention_bwd_sm80_bf16_d32
#define BWD_D 32
#define BWD_BF16 1
#include "attention_bwd_sm80.cuh"
#define BWD_NAME gp__attention_bwd_sm80_bf16_d64
#define BWD_D 64
#define BWD_BF16 1
#include "attention_bwd_sm80.cuh"
#define BWD_NAME gp__attention_bwd_sm80_bf16_d96
#define BWD_D 96
#define BWD_BF16 1
#include "attention_bwd_sm80.cuh"
#define BWD_NAME gp__attention_bwd_sm80_bf16_d128
#define BWD_D 128
#define BWD_BF16 1
#include "attention_bwd_sm80.cuh"
#define BWD_NAME gp__attention_bwd_sm80_bf16_d256
#define BWD_D 256
#define BWD_BF16 1
#include "attention_bwd_sm80.cuh"
