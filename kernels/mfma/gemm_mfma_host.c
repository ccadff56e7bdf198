/*
 * gemm_mfma_host.c - the AMD MFMA GEMM family's entry of the GEMM table
 * (src/gemm_table.c): which kernel of kernels/mfma/gemm_mfma.cu runs a canonical problem,
 * and its launch. Built for the backends that run the family: hip (every GEMM) and cpu
 * (GP_CPU_GEMM=mfma: the same kernels built for the CPU executor at wave64, each MFMA
 * emulated lane by lane by gpuport/amd_mfma.h), so the choice CI tests is the one an
 * AMD GPU makes:
 *   bf16 inputs  gp__gemm_mfma_bf16 (v_mfma_f32_32x32x8bf16_1k);
 *   f16 inputs   gp__gemm_mfma_f16 (v_mfma_f32_32x32x8f16);
 *   f32 inputs   gp__gemm_mfma_f32 (v_mfma_f32_32x32x2f32: f32 products, also when
 *                GP_COMPUTE_TF32 allows TF32).
 * Every canonical problem is taken (any m, n, k, transposes, leading dimensions, batch,
 * epilogue; 16-byte loads where the operands allow them, element loads otherwise);
 * k == 0 (or alpha == 0) runs the kernel without a k loop, which scales C by beta (C not
 * read when beta == 0).
 */
#include <stdio.h>

#include "api.h"
#include "dispatch.h"
#include "kernels/mfma/mfma.h"

GP_KERNEL_DECLARE(gp__gemm_mfma_bf16);
GP_KERNEL_DECLARE(gp__gemm_mfma_f16);
GP_KERNEL_DECLARE(gp__gemm_mfma_f32);

static unsigned grid_extent(int64_t need, int64_t max) { return (unsigned)(need < max ? need : max); }

static bool supports(const gp__gemm_params_t *p, gp__gemm_plan_t *plan, char *why, size_t why_len) {
  (void)why, (void)why_len; /* takes every problem */
  const char *inst;
  if (p->ab_type == GP_BF16) {
    plan->kernel = GP_KERNEL_REF(gp__gemm_mfma_bf16);
    inst = "v_mfma_f32_32x32x8bf16_1k";
  } else if (p->ab_type == GP_F16) {
    plan->kernel = GP_KERNEL_REF(gp__gemm_mfma_f16);
    inst = "v_mfma_f32_32x32x8f16";
  } else {
    plan->kernel = GP_KERNEL_REF(gp__gemm_mfma_f32);
    inst = "v_mfma_f32_32x32x2f32";
  }
  plan->kernel_name = plan->kernel->name;
  /* The kernel loops over the tiles (n) and batch entries (z) a grid cannot hold. */
  const int64_t tiles_m = (p->m + GP__AMD_GEMM_BM - 1) / GP__AMD_GEMM_BM;
  const int64_t tiles_n = (p->n + GP__AMD_GEMM_BN - 1) / GP__AMD_GEMM_BN;
  plan->grid = gp_dim3(grid_extent(tiles_m, 0x7fffffffll), grid_extent(tiles_n, 65535),
                       grid_extent(p->batch, 65535));
  plan->block = gp_dim3(GP__AMD_GEMM_THREADS, 1, 1);
  plan->smem = 0;
  snprintf(plan->name, sizeof plan->name,
           "%s (%s, %dx%d tiles, %d wave64, LDS double buffer, %d B LDS)", plan->kernel->name,
           inst, GP__AMD_GEMM_BM, GP__AMD_GEMM_BN, GP__AMD_GEMM_THREADS / 64,
           GP__AMD_GEMM_LDS_BYTES);
  return true;
}

static gp_status_t launch(gp_stream_t stream, const gp__gemm_params_t *p, gp__gemm_plan_t *plan) {
  gp__gemm_params_t params = *p;
  void *args[1] = {&params};
  return gp_launch(plan->kernel, plan->grid, plan->block, 0, stream, args);
}

const gp__gemm_impl_t gp__gemm_impl_mfma = {"mfma", GP__FAMILY_MFMA, supports, launch};
