/*
 * mfma.h - tile shapes and LDS address maps of the AMD MFMA kernels
 * (kernels/mfma/gemm_mfma.cu, kernels/mfma/attention_fwd_mfma.cu, kernels/mfma/attention_bwd_mfma.cu), shared with the
 * host code that chooses and launches them (kernels/mfma/gemm_mfma_host.c, kernels/mfma/attention_mfma_host.c) and
 * with the test that checks the LDS maps for bank conflicts (test/test_amd_kernels.c).
 * Plain C with GP_HOST_DEVICE inline functions; nothing here is public.
 *
 * LDS model used for "conflict-free" (CDNA2/CDNA3 ISA guides, "Local Data Share": 32
 * banks of 4 bytes): a ds_read_b128 / ds_write_b128 of a wavefront is serviced 8 lanes
 * at a time (8 x 16 bytes = the 128 bytes all banks deliver per clock), a ds_read_b64 /
 * ds_write_b64 16 lanes at a time, in lane order; lanes of one group that touch the
 * same bank at different addresses conflict. Every map below is checked against this
 * model, access by access, in test_amd_kernels.c.
 */
#ifndef GP_KERNELS_MFMA_H
#define GP_KERNELS_MFMA_H

#include <stdint.h>
#include <gpuport/export.h>

/* ---- GEMM (kernels/mfma/gemm_mfma.cu) -----------------------------------------------------------
 * A block of GP__AMD_GEMM_THREADS (4 wavefronts) computes a BM x BN tile of the canonical
 * column-major C; the k loop takes GP__AMD_GEMM_ROW_BYTES of k per stage (32 16-bit or 16
 * f32 values). Each operand tile (op(A): BM rows of m; op(B)^T: BN rows of n) lives in LDS
 * as rows of k, 64 bytes each, in 16-byte chunks whose order within the row is swizzled;
 * two stages (double buffering) of both operands: 4 x 128 x 64 = 32 KiB. */
#define GP__AMD_GEMM_BM 128
#define GP__AMD_GEMM_BN 128
#define GP__AMD_GEMM_THREADS 256
#define GP__AMD_GEMM_ROW_BYTES 64
#define GP__AMD_GEMM_TILE_BYTES (GP__AMD_GEMM_BM * GP__AMD_GEMM_ROW_BYTES)
#define GP__AMD_GEMM_LDS_BYTES (4 * GP__AMD_GEMM_TILE_BYTES)

/* Byte offset of 16-byte chunk c (0..3) of row `row` in an operand tile. The swizzle
 * ((row >> 1) ^ (row >> 3)) & 3 makes (a) the MFMA fragment reads, 8 consecutive rows at
 * one chunk, and (b) both staging write patterns (2 rows x 4 chunks; 8 rows 2 apart, of
 * alternating parity) land on 8 distinct 16-byte bank groups. */
static inline GP_HOST_DEVICE int gp__amd_gemm_lds_off(int row, int c) {
  return row * GP__AMD_GEMM_ROW_BYTES + 16 * (c ^ (((row >> 1) ^ (row >> 3)) & 3));
}

/* ---- attention forward (kernels/mfma/attention_fwd_mfma.cu) ------------------------------------------
 * A block of GP__AMD_ATTN_WAVES wavefronts takes 32 query rows per wavefront; each step
 * of the key loop stages GP__AMD_ATTN_BN keys in LDS: K as rows of head_dim 16-bit
 * values (16-byte chunks of 8, swizzled), V transposed as one row of GP__AMD_ATTN_BN keys
 * per value column (8-byte pieces of 4 keys, swizzled). head_dim d and head_dim_v dv are
 * 32, 64 or 128. */
#define GP__AMD_ATTN_WAVES 4
#define GP__AMD_ATTN_BM (32 * GP__AMD_ATTN_WAVES)
#define GP__AMD_ATTN_BN 64
#define GP__AMD_ATTN_THREADS (64 * GP__AMD_ATTN_WAVES)

/* K tile: chunk c (values 8c .. 8c + 7) of key row `key`, rows of d values. The XOR keeps
 * the 8 rows one ds_read_b128 group reads (same chunk, consecutive keys) and the 8
 * chunks one group writes (same key; for d = 32: two keys x 4 chunks) on 8 distinct
 * 16-byte bank groups: rows of 64 bytes (d = 32) share a 128-byte bank line in pairs. */
static inline GP_HOST_DEVICE int gp__amd_attn_k_off(int key, int c, int d) {
  const int swz = d == 32 ? (key >> 1) & 3 : key & 7;
  return key * d * 2 + 16 * (c ^ swz);
}

/* V^T tile: piece q (keys 4q .. 4q + 3, q = 0..15) of the row of value column `col`
 * (GP__AMD_ATTN_BN keys, 128 bytes: one bank line). The XOR with col & 15 puts the 16
 * columns one ds_read_b64 group reads on 16 distinct bank pairs; the staging writes
 * (16 lanes: 16 column pairs, one piece) stay distinct by storing column 2 cp + x first,
 * x = (cp >> 3) & 1 (see kernels/mfma/attention_fwd_mfma.cu). */
static inline GP_HOST_DEVICE int gp__amd_attn_vt_off(int col, int q) {
  return col * GP__AMD_ATTN_BN * 2 + 8 * (q ^ (col & 15));
}

/* Bytes of LDS (dynamic): the K tile [BN][d], then the V^T tile [dv][BN]. */
static inline GP_HOST_DEVICE int gp__amd_attn_lds_bytes(int d, int dv) {
  return GP__AMD_ATTN_BN * (d + dv) * 2;
}

/* ---- attention backward (kernels/mfma/attention_bwd_mfma.cu) -------------------------------------
 * Two kernels, both of 4 wavefronts. dQ: 32 query rows per wavefront, key tiles of
 * GP__AMD_ATTN_BWD_BN keys: K and V as rows (gp__amd_attn_k_off), K transposed as rows of
 * 32 keys. dK/dV: 32 key rows per wavefront, query tiles of GP__AMD_ATTN_BWD_BM queries: Q
 * and dO as rows, Q and dO transposed as rows of 32 queries. A transposed tile row of 32
 * 16-bit values is 64 bytes: 8 pieces of 4 values. */
#define GP__AMD_ATTN_BWD_BN 32
#define GP__AMD_ATTN_BWD_BM 32

/* Transposed tile of rows of 32 values: piece q (values 4q .. 4q + 3) of row `row`. Two
 * rows share a 128-byte bank line; the XOR with (row >> 1) & 7 puts the 16 rows one
 * ds_read_b64 group reads (same piece) on 16 distinct bank pairs, and keeps the staging
 * stores (16 lanes: 16 row pairs, the odd row first where the pair index has bit 3)
 * distinct as well. */
static inline GP_HOST_DEVICE int gp__amd_t32_off(int row, int q) {
  return row * 64 + 8 * (q ^ ((row >> 1) & 7));
}

/* LDS bytes of the backward kernels: dQ: K [BN][d], V [BN][dv], K^T [d][BN]; dK/dV: Q
 * [BM][d], dO [BM][dv], Q^T [d][BM], dO^T [dv][BM], then lse and delta of the BM rows. */
static inline GP_HOST_DEVICE int gp__amd_attn_bwd_dq_lds_bytes(int d, int dv) {
  return GP__AMD_ATTN_BWD_BN * (2 * d + dv) * 2;
}
static inline GP_HOST_DEVICE int gp__amd_attn_bwd_dkv_lds_bytes(int d, int dv) {
  return GP__AMD_ATTN_BWD_BM * (2 * d + 2 * dv) * 2 + 2 * GP__AMD_ATTN_BWD_BM * 4;
}

#endif /* GP_KERNELS_MFMA_H */
