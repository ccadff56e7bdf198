/*
 * gemm_portable_host.c - the portable GEMM family's entry of the GEMM table
 * (src/gemm_table.c): the tiled dialect kernel of kernels/portable/gemm_portable.cu,
 * launched with gp_launch. Every backend builds it: the cuda and hip backends run it
 * where no matrix-core family takes a problem, the cpu backend in the kernel modes of
 * GP_CPU_GEMM (the kernel then runs on the SIMT executor). Takes every canonical problem.
 */
#include <stdio.h>

#include "dispatch.h"

GP_KERNEL_DECLARE(gp__gemm_portable);

/* Grid extents stay within every target's limits (CUDA: y and z at most 65535); the
 * kernel loops over the tiles and batch entries beyond the grid. */
#define GRID_X_MAX 0x7fffffffll
#define GRID_YZ_MAX 65535ll

static unsigned grid_extent(int64_t need, int64_t max) {
  return (unsigned)(need < max ? need : max);
}

static bool supports(const gp__gemm_params_t *p, gp__gemm_plan_t *plan, char *why, size_t why_len) {
  (void)why, (void)why_len; /* takes every problem */
  const int64_t tiles_m = (p->m + GP__GEMM_TILE_M - 1) / GP__GEMM_TILE_M;
  const int64_t tiles_n = (p->n + GP__GEMM_TILE_N - 1) / GP__GEMM_TILE_N;
  plan->kernel = GP_KERNEL_REF(gp__gemm_portable);
  plan->kernel_name = plan->kernel->name;
  plan->grid = gp_dim3(grid_extent(tiles_m, GRID_X_MAX), grid_extent(tiles_n, GRID_YZ_MAX),
                       grid_extent(p->batch, GRID_YZ_MAX));
  plan->block = gp_dim3(GP__GEMM_THREADS_X, GP__GEMM_THREADS_Y, 1);
  plan->smem = 0;
  snprintf(plan->name, sizeof plan->name, "%s (%dx%dx%d tiles, %dx%d threads)", plan->kernel->name,
           GP__GEMM_TILE_M, GP__GEMM_TILE_N, GP__GEMM_TILE_K, GP__GEMM_THREADS_X, GP__GEMM_THREADS_Y);
  return true;
}

static gp_status_t launch(gp_stream_t stream, const gp__gemm_params_t *p, gp__gemm_plan_t *plan) {
  gp__gemm_params_t params = *p;
  void *args[1] = {&params};
  return gp_launch(plan->kernel, plan->grid, plan->block, 0, stream, args);
}

const gp__gemm_impl_t gp__gemm_impl_portable = {"portable", GP__FAMILY_PORTABLE, supports, launch};
