/*
 * gemm_mfma_host.c - which AMD MFMA GEMM kernel (kernels/mfma/gemm_mfma.cu) runs a canonical problem,
 * and its launch. The choice is made here once, for the hip backend (every GEMM) and for
 * the cpu backend's emulation mode (GP_CPU_GEMM=mfma: the same kernels built for the CPU
 * executor at wave64, each MFMA emulated lane by lane by gpuport/amd_mfma.h), so the
 * dispatch CI tests is the one an AMD GPU takes:
 *   bf16 inputs  gp__gemm_mfma_bf16 (v_mfma_f32_32x32x8bf16_1k);
 *   f16 inputs   gp__gemm_mfma_f16 (v_mfma_f32_32x32x8f16);
 *   f32 inputs   gp__gemm_mfma_f32 (v_mfma_f32_32x32x2f32: f32 products, also when
 *                GP_COMPUTE_TF32 allows TF32).
 * Every canonical problem is taken (any m, n, k, transposes, leading dimensions, batch,
 * epilogue); k == 0 (or alpha == 0) runs the kernel without a k loop, which scales C by
 * beta (C not read when beta == 0). The cuda backend has no MFMA kernels.
 */
#include <stdio.h>

#include "api.h"
#include "gemm.h"

#if defined(GP_BUILD_HIP) || defined(GP_BUILD_CPU)
#include "kernels/mfma/mfma.h"

GP_KERNEL_DECLARE(gp__gemm_mfma_bf16);
GP_KERNEL_DECLARE(gp__gemm_mfma_f16);
GP_KERNEL_DECLARE(gp__gemm_mfma_f32);

static bool mfma_enabled(void) {
#if defined(GP_BUILD_HIP)
  return true;
#else
  return gp__gemm_cpu_mode() == GP__GEMM_CPU_MFMA;
#endif
}

static unsigned grid_extent(int64_t need, int64_t max) { return (unsigned)(need < max ? need : max); }

bool gp__gemm_mfma_choose(const gp__gemm_params_t *p, gp__gemm_mfma_plan_t *plan) {
  if (!mfma_enabled()) return false;
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
  /* The kernel loops over the tiles (n) and batch entries (z) a grid cannot hold. */
  const int64_t tiles_m = (p->m + GP__AMD_GEMM_BM - 1) / GP__AMD_GEMM_BM;
  const int64_t tiles_n = (p->n + GP__AMD_GEMM_BN - 1) / GP__AMD_GEMM_BN;
  plan->grid_x = grid_extent(tiles_m, 0x7fffffffll);
  plan->grid_y = grid_extent(tiles_n, 65535);
  plan->grid_z = grid_extent(p->batch, 65535);
  plan->threads = GP__AMD_GEMM_THREADS;
  snprintf(plan->name, sizeof plan->name,
           "%s (%s, %dx%d tiles, %d wave64, LDS double buffer, %d B LDS)", plan->kernel->name,
           inst, GP__AMD_GEMM_BM, GP__AMD_GEMM_BN, GP__AMD_GEMM_THREADS / 64,
           GP__AMD_GEMM_LDS_BYTES);
  return true;
}

gp_status_t gp__gemm_mfma_launch(gp_stream_t stream, const gp__gemm_params_t *p,
                                 const gp__gemm_mfma_plan_t *plan) {
  gp__gemm_params_t params = *p;
  void *args[1] = {&params};
  return gp_launch(plan->kernel, gp_dim3(plan->grid_x, plan->grid_y, plan->grid_z),
                   gp_dim3(plan->threads, 1, 1), 0, stream, args);
}

#else /* cuda: no MFMA kernels */

bool gp__gemm_mfma_choose(const gp__gemm_params_t *p, gp__gemm_mfma_plan_t *plan) {
  (void)p;
  (void)plan;
  return false;
}

gp_status_t gp__gemm_mfma_launch(gp_stream_t stream, const gp__gemm_params_t *p,
                                 const gp__gemm_mfma_plan_t *plan) {
  (void)stream;
  (void)p;
  (void)plan;
  return GP__ERR(GP_ERROR_NOT_SUPPORTED, "no MFMA kernels in the cuda library");
}

#endif
