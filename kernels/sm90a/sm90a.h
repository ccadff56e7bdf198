/*
 * sm90a.h - geometry of the sm_90a kernels in kernels/sm90a/ (wgmma, TMA, mbarrier), shared by the
 * kernels and by the host code that chooses and launches them (kernels/sm90a/gemm_sm90a_host.c), and the
 * host's TMA tensor-map encoder (kernels/sm90a/tma.c). Plain C: included by C and by the dialect
 * compilers.
 *
 * GEMM (kernels/sm90a/gemm_sm90a.cu, gp__gemm_sm90a_{f16,bf16}_{nn,nt,tn,tt}): block tile 128 x 128
 *   x 64; 384 threads: warpgroup 0 is the producer (one warp issues the TMA loads), warp
 *   groups 1 and 2 consume, each owning 64 rows of the tile through m64n128k16 wgmmas
 *   (64 f32 accumulators per thread); a 4-stage ring of A and B tiles with 128-byte
 *   swizzle (32 KiB per stage) guarded by full and empty mbarriers; a persistent grid.
 * Attention forward (kernels/sm90a/attention_fwd_sm90a.cu, gp__attention_fwd_sm90a_{f16,bf16}_d{64,128}):
 *   128 query rows per block; 384 threads: a producer warp loads K and V tiles of 128
 *   keys (64 at head_dim 128) with TMA into a 2-stage ring, two consumer warpgroups of 64 query rows each run
 *   S = Q K^T (m64nBNk16) and O += P V (m64nDk16) on wgmma, P passing through shared
 *   memory; Q, K, V and P tiles with 128-byte swizzle.
 */
#ifndef GP_KERNELS_SM90_H
#define GP_KERNELS_SM90_H

#include <stddef.h>
#include <stdint.h>

#include <gpuport/nv_wgmma.h>
#include <gpuport/status.h>

#define GP__SM90_GEMM_BM 128
#define GP__SM90_GEMM_BN 128
#define GP__SM90_GEMM_BK 64
#define GP__SM90_GEMM_STAGES 4
#define GP__SM90_GEMM_THREADS 384
#define GP__SM90_GEMM_GROUP_M 8 /* tile rows visited together (L2 reuse) */
/* Bytes of one stage (A and B tiles of 128 x 64 two-byte elements) and of the dynamic
 * shared memory: the stages, 1 KiB to align them to the swizzle atom, the barriers. */
#define GP__SM90_GEMM_STAGE_BYTES (2 * (GP__SM90_GEMM_BM + GP__SM90_GEMM_BN) * GP__SM90_GEMM_BK)
#define GP__SM90_GEMM_SMEM (GP__SM90_GEMM_STAGES * GP__SM90_GEMM_STAGE_BYTES + 1024 + 128)

#define GP__SM90_ATTN_BM 128 /* query rows per block (two warpgroups of 64) */
/* keys per step: 128, and 64 at head_dim 128 (shared memory within 160 KiB, the cpu
 * device's limit as well as the GPUs') */
#define GP__SM90_ATTN_BN(d) ((d) <= 64 ? 128 : 64)
#define GP__SM90_ATTN_STAGES 2
#define GP__SM90_ATTN_THREADS 384
/* Bytes of the K (or V) tile of one stage, of a warpgroup's Q tile and of its P tile. */
#define GP__SM90_ATTN_KV_BYTES(d) (2 * GP__SM90_ATTN_BN(d) * (d))
#define GP__SM90_ATTN_Q_BYTES(d) (2 * 64 * (d))
#define GP__SM90_ATTN_P_BYTES(d) (2 * 64 * GP__SM90_ATTN_BN(d))
/* Dynamic shared memory: the stages (K and V), Q and P of both consumer warpgroups, 1 KiB
 * to align to the swizzle atom, the barriers. */
#define GP__SM90_ATTN_SMEM(d)                                                                          \
  (GP__SM90_ATTN_STAGES * 2 * GP__SM90_ATTN_KV_BYTES(d) + 2 * GP__SM90_ATTN_Q_BYTES(d) +                \
   2 * GP__SM90_ATTN_P_BYTES(d) + 1024 + 128)

#ifdef __cplusplus
extern "C" {
#endif
/* Encodes a 2D or 3D tiled tensor map (no interleave, out-of-bounds elements read as
 * zero): elem_bytes 2 or 4; dims[rank] innermost first; strides[rank - 1] the byte
 * strides of dims 1 .. rank - 1 (multiples of 16); box[rank] (1 .. 256, the innermost
 * box a multiple of 16 bytes and, when swizzled, exactly the swizzle's row of bytes);
 * swizzle GP_NV_SWIZZLE_*. On the cuda backend through the driver's
 * cuTensorMapEncodeTiled, reached with cudaGetDriverEntryPointByVersion; on the cpu
 * backend the emulation's description. GP_ERROR_INVALID_VALUE on a rule broken,
 * GP_ERROR_NOT_SUPPORTED without a driver that has the entry point; the message set. */
gp_status_t gp__nv_tensor_map_encode(gp_nv_tensor_map_t *tm, unsigned elem_bytes, unsigned rank, const void *base,
                                     const uint64_t *dims, const uint64_t *strides, const uint32_t *box, int swizzle);
/* The same without touching the thread's error message: the reason goes into why. For
 * the families' supports(), which decline rather than fail. */
gp_status_t gp__nv_tensor_map_make(gp_nv_tensor_map_t *tm, unsigned elem_bytes, unsigned rank, const void *base,
                                   const uint64_t *dims, const uint64_t *strides, const uint32_t *box, int swizzle,
                                   char *why, size_t why_len);
#ifdef __cplusplus
}
#endif

#endif /* GP_KERNELS_SM90_H */
