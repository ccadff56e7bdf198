/*
 * sm80.h - geometry of the sm_80 kernels in kernels/sm80/ (mma.sync, ldmatrix, cp.async), shared
 * by the kernels and by the host code that chooses and launches them (kernels/sm80/gemm_sm80_host.c,
 * kernels/sm80/attention_sm80_host.c). Plain C macros: included by C and by the dialect compilers.
 *
 * GEMM, f16/bf16 inputs (kernels/sm80/gemm_sm80.cu, gp__gemm_sm80_{f16,bf16}_{nn,nt,tn,tt}):
 *   block tile 128 x 128 x 32, 8 warps (2 along m x 4 along n) of 64 x 32 each, i.e.
 *   4 x 4 mma.m16n8k16 per warp per 16 of k, 64 f32 accumulators per thread; a 4-stage
 *   cp.async pipeline; shared-memory rows padded by 8 elements (16 bytes) so the eight
 *   16-byte rows an ldmatrix reads fall on distinct banks.
 * GEMM, f32 inputs (gp__gemm_sm80_f32): FFMA, block tile 128 x 128 x 8, 256 threads of
 *   8 x 8 outputs each, a 3-stage pipeline of 4-byte cp.async copies.
 * GEMM, f32 inputs with GP_COMPUTE_TF32 (gp__gemm_sm80_tf32): mma.sync m16n8k8 on tf32,
 *   block tile 128 x 128 x 16, the same 8 warps of 64 x 32 (4 x 4 mma per 8 of k), a
 *   4-stage pipeline of 16-byte cp.async copies (4-byte ones when A or B is not 16-byte
 *   aligned); operands in shared memory in their stored orientation, rows of 16 (k)
 *   padded by 4 floats and rows of 128 (m or n) by 8, so the scalar fragment loads of a
 *   warp (lane l reads row or column l / 4, l % 4) hit 32 distinct banks.
 * Attention forward (kernels/sm80/attention_fwd_sm80.cu, gp__attention_fwd_sm80_{f16,bf16}_d<D> for
 *   D = 32, 64, 96, 128, 256): each warp owns GP__SM80_ATTN_MT(D) = 1 tile of 16 query
 *   rows (the kernels also take 2, which halves the shared-memory reads per flop but
 *   needs more than 255 registers here), 8 warps (128 rows) for D <= 64, else 4 (64
 *   rows); key tiles of 64 (32 for D = 256, to stay within 255 registers without
 *   spills); Q, K and V tiles in shared memory with rows padded by 8 elements.
 * Attention backward, main kernel (kernels/sm80/attention_bwd_sm80.cu,
 *   gp__attention_bwd_sm80_{f16,bf16}_d<D>; FlashAttention-2's preprocess and
 *   postprocess stay the portable kernels): key blocks of 64 (32 for D = 256), 16 keys
 *   per warp; the dK and dV accumulators of a key slice are split by head dimension over
 *   GP__SM80_BWD_NDG(D) warps (1 for D <= 64, 2 for 96 and 128, 4 for 256: at most 64
 *   columns per warp, so nothing spills), so 4 or 8 warps; query tiles of 32 rows
 *   stream past.
 */
#ifndef GP_KERNELS_SM80_H
#define GP_KERNELS_SM80_H

#define GP__SM80_GEMM_BM 128
#define GP__SM80_GEMM_BN 128
#define GP__SM80_GEMM_BK 32
#define GP__SM80_GEMM_STAGES 4
#define GP__SM80_GEMM_THREADS 256
#define GP__SM80_GEMM_PAD 8 /* elements added to each shared-memory row */

/* Elements of one stage of A (op(A) transposed or not: k-major or m-major rows), of B,
 * and the dynamic shared memory of the mma kernel, in bytes. */
#define GP__SM80_GEMM_A_ELEMS(ta)                                                          \
  ((ta) ? GP__SM80_GEMM_BM * (GP__SM80_GEMM_BK + GP__SM80_GEMM_PAD)                        \
        : GP__SM80_GEMM_BK * (GP__SM80_GEMM_BM + GP__SM80_GEMM_PAD))
#define GP__SM80_GEMM_B_ELEMS(tb)                                                          \
  ((tb) ? GP__SM80_GEMM_BK * (GP__SM80_GEMM_BN + GP__SM80_GEMM_PAD)                        \
        : GP__SM80_GEMM_BN * (GP__SM80_GEMM_BK + GP__SM80_GEMM_PAD))
#define GP__SM80_GEMM_SMEM(ta, tb)                                                         \
  (2 * GP__SM80_GEMM_STAGES * (GP__SM80_GEMM_A_ELEMS(ta) + GP__SM80_GEMM_B_ELEMS(tb)))

#define GP__SM80_SGEMM_BM 128
#define GP__SM80_SGEMM_BN 128
#define GP__SM80_SGEMM_BK 8
#define GP__SM80_SGEMM_STAGES 3
#define GP__SM80_SGEMM_THREADS 256
#define GP__SM80_SGEMM_LD (GP__SM80_SGEMM_BM + 4) /* floats per shared row (padded) */
#define GP__SM80_SGEMM_SMEM                                                                \
  (4 * GP__SM80_SGEMM_STAGES * GP__SM80_SGEMM_BK * 2 * GP__SM80_SGEMM_LD)

#define GP__SM80_TGEMM_BK 16
#define GP__SM80_TGEMM_STAGES 4
/* Floats of one stage of A ([m][k] rows when transposed, else [k][m]) and of B ([k][n]
 * when transposed, else [n][k]), and the dynamic shared memory in bytes. */
#define GP__SM80_TGEMM_A_ELEMS(ta)                                                         \
  ((ta) ? GP__SM80_GEMM_BM * (GP__SM80_TGEMM_BK + 4) : GP__SM80_TGEMM_BK * (GP__SM80_GEMM_BM + 8))
#define GP__SM80_TGEMM_B_ELEMS(tb)                                                         \
  ((tb) ? GP__SM80_TGEMM_BK * (GP__SM80_GEMM_BN + 8) : GP__SM80_GEMM_BN * (GP__SM80_TGEMM_BK + 4))
#define GP__SM80_TGEMM_SMEM(ta, tb)                                                        \
  (4 * GP__SM80_TGEMM_STAGES * (GP__SM80_TGEMM_A_ELEMS(ta) + GP__SM80_TGEMM_B_ELEMS(tb)))

/* Tiles of GROUP_M consecutive rows of tiles are visited column by column, so that
 * blocks running together share their A and B panels in L2. */
#define GP__SM80_GEMM_GROUP_M 8

#define GP__SM80_ATTN_WARPS(d) ((d) <= 64 ? 8 : 4)
#define GP__SM80_ATTN_THREADS(d) (32 * GP__SM80_ATTN_WARPS(d))
#define GP__SM80_ATTN_MT(d) 1 /* 16-row query tiles per warp */
#define GP__SM80_ATTN_BM(d) (16 * GP__SM80_ATTN_WARPS(d) * GP__SM80_ATTN_MT(d))
#define GP__SM80_ATTN_BN(d) ((d) <= 128 ? 64 : 32) /* keys per iteration */
/* Dynamic shared memory: Q [BM][D + 8], K and V [BN][D + 8], 2-byte elements. */
#define GP__SM80_ATTN_SMEM(d) (2 * (GP__SM80_ATTN_BM(d) + 2 * GP__SM80_ATTN_BN(d)) * ((d) + 8))

/* Attention over a paged KV cache (kernels/sm80/attention_kvcache_sm80.cu,
 * gp__attention_kvcache_fwd_sm80_{f16,bf16}_d<D> for D = 32, 64, 96, 128; not 256, which
 * spills): 4 warps of one 16-row tile each (64 rows of the packed GQA group), key tiles
 * of 64 (one split unit, GP__ATTN_KV_SPLIT_KEYS); Q, K and V tiles in shared memory as
 * the forward's. */
#define GP__SM80_KV_WARPS(d) 4
#define GP__SM80_KV_THREADS(d) (32 * GP__SM80_KV_WARPS(d))
#define GP__SM80_KV_BM(d) (16 * GP__SM80_KV_WARPS(d))
#define GP__SM80_KV_BN(d) 64
#define GP__SM80_KV_SMEM(d) (2 * (GP__SM80_KV_BM(d) + 2 * GP__SM80_KV_BN(d)) * ((d) + 8))

#define GP__SM80_BWD_BN(d) ((d) > 128 ? 32 : 64)   /* keys per key block */
#define GP__SM80_BWD_KW(d) (GP__SM80_BWD_BN(d) / 16) /* warps along the keys, 16 each */
#define GP__SM80_BWD_NDG(d) ((d) > 128 ? 4 : (d) > 64 ? 2 : 1) /* warps along dK/dV columns */
#define GP__SM80_BWD_WARPS(d) (GP__SM80_BWD_KW(d) * GP__SM80_BWD_NDG(d))
#define GP__SM80_BWD_THREADS(d) (32 * GP__SM80_BWD_WARPS(d))
#define GP__SM80_BWD_BMQ(d) 32                        /* query rows per step */
/* dQ = dS K of a query tile is split into 16-row, QCH-column pieces, one per warp (for
 * D = 96, 4 pieces for 8 warps: the others skip that step). */
#define GP__SM80_BWD_QCH(d) ((d) <= 32 ? 16 : (d) <= 64 ? 32 : (d) <= 96 ? 48 : (d) <= 128 ? 32 : 64)
/* Dynamic shared memory: K, V [BN][D + 8], Q, dO [BMQ][D + 8], dS^T [BN][BMQ + 8] (b16),
 * lse and D [BMQ] (f32). */
#define GP__SM80_BWD_SMEM(d)                                                               \
  (2 * (2 * GP__SM80_BWD_BN(d) + 2 * GP__SM80_BWD_BMQ(d)) * ((d) + 8) +                     \
   2 * GP__SM80_BWD_BN(d) * (GP__SM80_BWD_BMQ(d) + 8) + 8 * GP__SM80_BWD_BMQ(d))

#endif /* GP_KERNELS_SM80_H */
