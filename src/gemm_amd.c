/*
 * gemm_amd.c - the AMD MFMA GEMM kernels (hip/gemm_mfma.cu): which one a problem runs,
 * and its launch. One choice for two users: the hip backend runs it for every GEMM, and
 * the cpu backend with GP_CPU_GEMM=mfma runs the same choice on the CPU build of the
 * same kernels, where gpuport/amd_mfma.h emulates each MFMA at wave64 (so the dispatch
 * and the kernels are tested in CI without an AMD GPU).
 *
 * Every problem of the canonical form is taken: bf16 and f16 inputs by the 32x32x8
 * MFMA kernels, f32 inputs by the 32x32x2f32 kernel (f32 products; GP_COMPUTE_TF32
 * allows rounding but never requires it). k == 0 (or alpha == 0) runs the kernel
 * without a k loop, which scales C by beta (C not read when beta == 0).
 */
#include "gemm.h"

#if defined(GP_BUILD_HIP) || defined(GP_BUILD_CPU)
#include "kernels/amd_mfma_geometry.h"

GP_KERNEL_DECLARE(gp__gemm_mfma_bf16);
GP_KERNEL_DECLARE(gp__gemm_mfma_f16);
GP_KERNEL_DECLARE(gp__gemm_mfma_f32);

#define GRID_X_MAX 0x7fffffffll
#define GRID_YZ_MAX 65535ll

static unsigned grid_extent(int64_t need, int64_t max) { return (unsigned)(need < max ? need : max); }

const char *gp__gemm_amd_choose(const gp__gemm_params_t *p, gp_kernel_t *kernel) {
  if (p->ab_type == GP_BF16) {
    *kernel = GP_KERNEL_REF(gp__gemm_mfma_bf16);
    return "gp__gemm_mfma_bf16 (v_mfma_f32_32x32x8bf16_1k, 128x128 tile, 4 wave64, LDS double buffer)";
  }
  if (p->ab_type == GP_F16) {
    *kernel = GP_KERNEL_REF(gp__gemm_mfma_f16);
    return "gp__gemm_mfma_f16 (v_mfma_f32_32x32x8f16, 128x128 tile, 4 wave64, LDS double buffer)";
  }
  *kernel = GP_KERNEL_REF(gp__gemm_mfma_f32);
  return "gp__gemm_mfma_f32 (v_mfma_f32_32x32x2f32, 128x128 tile, 4 wave64, LDS double buffer)";
}

gp_status_t gp__gemm_amd_launch(gp_stream_t stream, const gp__gemm_params_t *p) {
  gp_kernel_t k = NULL;
  (void)gp__gemm_amd_choose(p, &k);
  const int64_t tiles_m = (p->m + GP__AMD_GEMM_BM - 1) / GP__AMD_GEMM_BM;
  const int64_t tiles_n = (p->n + GP__AMD_GEMM_BN - 1) / GP__AMD_GEMM_BN;
  gp_dim3_t grid = gp_dim3(grid_extent(tiles_m, GRID_X_MAX), grid_extent(tiles_n, GRID_YZ_MAX),
                           grid_extent(p->batch, GRID_YZ_MAX));
  gp__gemm_params_t params = *p;
  void *args[1] = {&params};
  return gp_launch(k, grid, gp_dim3(GP__AMD_GEMM_THREADS, 1, 1), 0, stream, args);
}
#else
typedef int gp__gemm_amd_unused_t; /* no AMD kernels in this backend */
#endif
