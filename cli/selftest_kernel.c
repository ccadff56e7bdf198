/*
 * selftest_kernel.c - kernel launch: the dialect kernel gp_selftest_axpy_sum
 * (kernels/portable/selftest.cu, built into the library) on a 2D grid with dynamic shared
 * memory, compared with float64; and launch configurations that must be refused
 * before anything runs.
 */
#include "selftest.h"

#include <math.h>
#include <stdlib.h>

GP_KERNEL_DECLARE(gp_selftest_axpy_sum);

static void check_launch(st_ctx_t *c, const void *arg) {
  (void)arg;
  const unsigned threads = 256, gx = 17, gy = 23, blocks = gx * gy;
  const int n = (int)(blocks * threads) - 77; /* the last block is partly idle */
  const float alpha = (float)gp_ref_rng_uniform(&c->rng, 0.5, 2.0);
  gp_kernel_t k = GP_KERNEL_REF(gp_selftest_axpy_sum);
  float *x = st_random(c, GP_F32, (size_t)n, -1.0, 1.0), *y = st_random(c, GP_F32, (size_t)n, -1.0, 1.0);
  float *ygot = malloc((size_t)n * sizeof(float)), *sums = malloc(blocks * sizeof(float));
  double *ref = malloc((size_t)n * sizeof(double)), *bound = malloc((size_t)n * sizeof(double));
  double *sref = malloc(blocks * sizeof(double)), *sbound = malloc(blocks * sizeof(double));
  void *dx = NULL, *dy = NULL, *dsum = NULL, *dcount = NULL;
  if (!x || !y || !ygot || !sums || !ref || !bound || !sref || !sbound) {
    st_fail(c, "host allocation failed");
    goto out;
  }
  ST_TRY(c, tool_upload(&dx, x, (size_t)n * sizeof(float)));
  ST_TRY(c, tool_upload(&dy, y, (size_t)n * sizeof(float)));
  ST_TRY(c, gp_malloc(&dsum, blocks * sizeof(float)));
  ST_TRY(c, gp_malloc(&dcount, sizeof(unsigned)));
  ST_TRY(c, gp_memset_d32(dsum, 0x7fc00000u, blocks)); /* NaN: unwritten sums fail */
  ST_TRY(c, gp_memset(dcount, 0, sizeof(unsigned)));
  int warp = 32;
  gp_device_props_t p;
  gp_device_props_init(&p);
  int dev = 0;
  ST_TRY(c, gp_device_get(&dev));
  ST_TRY(c, gp_device_get_props(&p, dev));
  if (p.warp_size > 0) warp = p.warp_size;
  void *args[] = {(void *)&n, (void *)&alpha, &dx, &dy, &dsum, &dcount};
  /* One float per warp; sized for 32-wide warps, enough for any width the kernel was
   * built with (the device's reported width may differ from the kernel's on the CPU). */
  size_t shared = (threads / 32) * sizeof(float);
  ST_TRY(c, gp_launch(k, gp_dim3(gx, gy, 1), gp_dim3(threads, 1, 1), shared, NULL, args));
  ST_TRY(c, gp_device_synchronize());
  unsigned count = 0;
  ST_TRY(c, gp_memcpy(ygot, dy, (size_t)n * sizeof(float)));
  ST_TRY(c, gp_memcpy(sums, dsum, blocks * sizeof(float)));
  ST_TRY(c, gp_memcpy(&count, dcount, sizeof count));
  /* y: one multiply-add, with or without FMA. Sums: any order of f32 additions. */
  const double u = 0x1.0p-24;
  for (unsigned b = 0; b < blocks; b++) sref[b] = sbound[b] = 0.0;
  for (int i = 0; i < n; i++) {
    double v = (double)alpha * x[i] + y[i];
    ref[i] = v;
    bound[i] = 2 * u * (fabs((double)alpha * x[i]) + fabs(y[i]));
    sref[i / threads] += v;
    sbound[i / threads] += (threads + 2) * u * (fabs(v) + bound[i]) + bound[i];
  }
  if (!st_compare(c, "y = alpha x + y", ygot, GP_F32, ref, bound, 0.0, (size_t)n, 0.0)) goto out;
  if (!st_compare(c, "block sums", sums, GP_F32, sref, sbound, 0.0, blocks, 0.0)) goto out;
  if (count != (unsigned)n) st_fail(c, "atomic count %u, expected %d", count, n);
  st_note(c, "grid %ux%u x %u threads, %zu B dynamic shared, device warp %d: y and %u block sums ok",
          gx, gy, threads, shared, warp, blocks);
out:
  gp_free(dx), gp_free(dy), gp_free(dsum), gp_free(dcount);
  free(x), free(y), free(ygot), free(sums), free(ref), free(bound), free(sref), free(sbound);
}

/* Configurations outside the device's limits fail before anything runs. */
static void check_launch_errors(st_ctx_t *c, const void *arg) {
  (void)arg;
  gp_kernel_t k = GP_KERNEL_REF(gp_selftest_axpy_sum);
  int n = 0;
  float alpha = 1;
  void *p = NULL;
  void *args[] = {&n, &alpha, &p, &p, &p, &p};
  gp_device_props_t props;
  gp_device_props_init(&props);
  int dev = 0;
  ST_TRY(c, gp_device_get(&dev));
  ST_TRY(c, gp_device_get_props(&props, dev));
  st_expect_status(c, "gp_launch(grid 0)", gp_launch(k, gp_dim3(0, 1, 1), gp_dim3(32, 1, 1), 4, NULL, args),
                   GP_ERROR_INVALID_CONFIGURATION);
  st_expect_status(c, "gp_launch(block > max threads)",
                   gp_launch(k, gp_dim3(1, 1, 1), gp_dim3((unsigned)props.max_threads_per_block + 32, 1, 1),
                             4, NULL, args),
                   GP_ERROR_INVALID_CONFIGURATION);
  st_expect_status(c, "gp_launch(dynamic shared > opt-in limit)",
                   gp_launch(k, gp_dim3(1, 1, 1), gp_dim3(32, 1, 1),
                             props.shared_memory_per_block_optin + 4096, NULL, args),
                   GP_ERROR_INVALID_CONFIGURATION);
  st_expect_status(c, "gp_launch(NULL args)", gp_launch(k, gp_dim3(1, 1, 1), gp_dim3(32, 1, 1), 4, NULL, NULL),
                   GP_ERROR_INVALID_VALUE);
  st_expect_status(c, "gp_launch(NULL kernel)", gp_launch(NULL, gp_dim3(1, 1, 1), gp_dim3(32, 1, 1), 4, NULL, args),
                   GP_ERROR_INVALID_VALUE);
  ST_TRY(c, gp_device_synchronize());
  st_note(c, "5 bad launches refused with their status");
out:
  return;
}

const st_check_t st_kernel_checks[] = {
    {"kernel.launch", check_launch, NULL},
    {"kernel.launch_errors", check_launch_errors, NULL},
    {NULL, NULL, NULL},
};
