/*
 * gemm_sm90a.cu - GEMM for NVIDIA Hopper (sm_90a): TMA loads into a multi-stage shared
 * memory ring, a producer warp and two consumer warpgroups (warp specialization), wgmma
 * with f32 accumulators, a persistent grid. Built by nvcc for sm_90a only (Makefile) and,
 * with the host compiler, into the cpu library, where wgmma, TMA and mbarrier run under
 * the emulation of gpuport/nv_wgmma.h (GP_CPU_GEMM=sm90a): the code the GPU runs is the
 * code CI tests. kernels/sm90a/gemm_sm90a_host.c decides when it runs (gated: GP_ENABLE_SM90A=1 on
 * compute capability 9.0), encodes the tensor maps and launches it.
 *
 * Problem: the canonical column-major C = alpha op(A) op(B) + beta C of
 * kernels/common/gemm_params.h with f16 or bf16 inputs, any m, n, k > 0, batch and strides
 * that TMA can address (16-byte aligned operands, leading dimensions and batch strides;
 * the host checks); the epilogue of kernels/common/gemm_epilogue.h (f16, bf16 or f32 out).
 *
 * gp__gemm_sm90a_{f16,bf16}_{nn,nt,tn,tt} (geometry in kernels/sm90a/sm90a.h):
 *  - grid: persistent, at most one block per SM; block b takes the output tiles b,
 *    b + gridDim.x, ... of all batch entries; within a batch entry, tiles go in groups of
 *    GROUP_M tile rows, column by column, so blocks running together share A and B panels
 *    in L2. Producer and consumers walk the same sequence.
 *  - block: 384 threads. Warpgroup 0 produces: its warp 0 (all lanes wait, lane 0
 *    issues) loads each k-step's A and B tiles with TMA into the next ring stage after
 *    the stage's "empty" barrier completes, announcing the bytes on its "full" barrier;
 *    warps 1-3 exit at once (setmaxnreg hands registers to the consumers). Warpgroups 1
 *    and 2 consume: each waits for a stage's "full" barrier, issues 4 m64n128k16 wgmmas
 *    on its 64 rows of the 128 x 128 tile as one group, then waits for the previous
 *    group only (one group stays in flight) and frees the previous stage: lane 0 of each
 *    warp arrives on its "empty" barrier (8 arrivals free it).
 *  - shared memory: 4 stages of A (128 x 64) and B (128 x 64), 128-byte swizzle, 1024-byte
 *    aligned. An operand contiguous along k (A transposed, B not) is one K-major box of
 *    128 rows of 64 k; an operand contiguous along m or n is two MN-major boxes of 64 k
 *    rows of 64 elements (8 KiB apart, the descriptor's leading byte offset).
 *  - edges: TMA fills elements outside m, n, k with zeros (they add nothing); rows and
 *    columns beyond m and n are not stored. Batch entries are the third TMA dimension
 *    (a broadcast operand, stride 0, is 2D).
 *  - epilogue: each consumer thread finishes its 64 accumulators (gemm_finish).
 */
#if defined(GP_BUILD_CPU) && !defined(GP_EMULATE_SM80)
#error "kernels/sm80 and kernels/sm90a build for the CPU executor only in emulation mode (-DGP_EMULATE_SM80)"
#endif
#include <gpuport/kernel.h>
#include <gpuport/nv_wgmma.h>

#include "kernels/common/gemm_epilogue.h"
#include "kernels/common/gemm_params.h"
#include "kernels/sm90a/sm90a.h"

#if defined(GP_TARGET_CPU)
#define SM90_UNROLL _Pragma("GCC unroll 64")
#else
#define SM90_UNROLL _Pragma("unroll")
#endif

#define BM GP__SM90_GEMM_BM
#define BN GP__SM90_GEMM_BN
#define BK GP__SM90_GEMM_BK
#define STAGES GP__SM90_GEMM_STAGES
#define STAGE_BYTES GP__SM90_GEMM_STAGE_BYTES
#define SM90_EXPORT(name) GP_KERNEL_EXPORT(name)

/* Output tile (z, tm, tn) of the block's t-th tile. */
GP_DEVICE void sm90_tile_coords(int64_t t, int64_t tiles_m, int64_t tiles_n, int64_t *z, int64_t *tm, int64_t *tn) {
  const int64_t per_batch = tiles_m * tiles_n;
  *z = t / per_batch;
  t %= per_batch;
  const int64_t per_group = (int64_t)GP__SM90_GEMM_GROUP_M * tiles_n;
  const int64_t first = t / per_group * GP__SM90_GEMM_GROUP_M, in = t % per_group;
  const int64_t rows = tiles_m - first < GP__SM90_GEMM_GROUP_M ? tiles_m - first : GP__SM90_GEMM_GROUP_M;
  *tm = first + in % rows;
  *tn = in / rows;
}

/* The first 1024-byte aligned address of the shared window at or after p. */
GP_DEVICE unsigned char *sm90_align1024(unsigned char *p) {
  return p + ((1024u - gp_nv_smem_addr(p) % 1024u) % 1024u);
}

/* Loads one operand's k-step into a stage: K-major (contiguous along k) as one box of
 * 128 rows at (k0, x0), MN-major as two boxes of 64 elements at (x0 + 64 h, k0). */
GP_DEVICE void sm90_load(unsigned char *dst, const gp_nv_tensor_map_t *tm, int k_major, int32_t x0, int32_t k0,
                         int32_t z, uint64_t *bar) {
  if (k_major) {
    gp_nv_tma_load_3d(dst, tm, k0, x0, z, bar);
  } else {
    gp_nv_tma_load_3d(dst, tm, x0, k0, z, bar);
    gp_nv_tma_load_3d(dst + 8192, tm, x0 + 64, k0, z, bar);
  }
}

#define GEMM_NAME gp__gemm_sm90a_f16_nn
#define GEMM_TA 0
#define GEMM_TB 0
#define GEMM_BF16 0
#include "gemm_sm90a_ws.cuh"
#define GEMM_NAME gp__gemm_sm90a_f16_nt
#define GEMM_TA 0
#define GEMM_TB 1
#define GEMM_BF16 0
#include "gemm_sm90a_ws.cuh"
#define GEMM_NAME gp__gemm_sm90a_f16_tn
#define GEMM_TA 1
#define GEMM_TB 0
#define GEMM_BF16 0
#include "gemm_sm90a_ws.cuh"
#define GEMM_NAME gp__gemm_sm90a_f16_tt
#define GEMM_TA 1
#define GEMM_TB 1
#define GEMM_BF16 0
#include "gemm_sm90a_ws.cuh"
#define GEMM_NAME gp__gemm_sm90a_bf16_nn
#define GEMM_TA 0
#define GEMM_TB 0
#define GEMM_BF16 1
#include "gemm_sm90a_ws.cuh"
#define GEMM_NAME gp__gemm_sm90a_bf16_nt
#define GEMM_TA 0
#define GEMM_TB 1
#define GEMM_BF16 1
#include "gemm_sm90a_ws.cuh"
#define GEMM_NAME gp__gemm_sm90a_bf16_tn
#define GEMM_TA 1
#define GEMM_TB 0
#define GEMM_BF16 1
#include "gemm_sm90a_ws.cuh"
#define GEMM_NAME gp__gemm_sm90a_bf16_tt
#define GEMM_TA 1
#define GEMM_TB 1
#define GEMM_BF16 1
#include "gemm_sm90a_ws.cuh"
