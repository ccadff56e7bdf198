/*
 * gemm_portable_host.c - launch of the portable tiled GEMM kernel (kernels/portable/gemm_portable.cu) with
 * gp_launch. The same code serves the cuda and hip backends and the CPU backend's
 * GP_CPU_GEMM=portable mode (the kernel then runs on the SIMT executor).
 */
#include "gemm.h"

GP_KERNEL_DECLARE(gp__gemm_tiled);

const char gp__gemm_portable_kernel_name[] = "gp__gemm_tiled(64x64x16, 16x16 threads)";

/* Grid extents stay within every target's limits (CUDA: y and z at most 65535); the
 * kernel loops over the tiles and batch entries beyond the grid. */
#define GRID_X_MAX 0x7fffffffll
#define GRID_YZ_MAX 65535ll

static unsigned grid_extent(int64_t need, int64_t max) {
  return (unsigned)(need < max ? need : max);
}

gp_status_t gp__gemm_launch_portable(gp_stream_t stream, const gp__gemm_params_t *p) {
  const int64_t tiles_m = (p->m + GP__GEMM_TILE_M - 1) / GP__GEMM_TILE_M;
  const int64_t tiles_n = (p->n + GP__GEMM_TILE_N - 1) / GP__GEMM_TILE_N;
  gp_dim3_t grid = gp_dim3(grid_extent(tiles_m, GRID_X_MAX), grid_extent(tiles_n, GRID_YZ_MAX),
                           grid_extent(p->batch, GRID_YZ_MAX));
  gp_dim3_t block = gp_dim3(GP__GEMM_THREADS_X, GP__GEMM_THREADS_Y, 1);
  gp__gemm_params_t params = *p;
  void *args[1] = {&params};
  return gp_launch(GP_KERNEL_REF(gp__gemm_tiled), grid, block, 0, stream, args);
}
