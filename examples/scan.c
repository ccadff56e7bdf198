/*
 * scan.c - inclusive prefix sum of 2^20 random floats with scan.cu: block scans, then
 * the block totals scanned the same way (recursively) and added back. Checked against
 * a float64 running sum.
 */
#include "example.h"

GP_KERNEL_DECLARE(scan_blocks);
GP_KERNEL_DECLARE(add_offsets);

#define BLOCK 512

/* out = inclusive scan of in (n elements), both device memory. */
static gp_status_t scan(int n, const float *in, float *out) {
  gp_status_t s = GP_SUCCESS;
  int blocks = (n + BLOCK - 1) / BLOCK;
  float *sums = NULL, *scanned = NULL;
  /* One float per warp of the block, for the narrowest warp (32 lanes). */
  size_t shared = (BLOCK / 32) * sizeof(float);
  /* Stream-ordered temporaries: allocated and freed in the order of the launches. */
  GP_CHECK(gp_malloc_async((void **)&sums, (size_t)blocks * sizeof(float), NULL));
  void *args[] = {&n, &in, &out, &sums};
  s = gp_launch(GP_KERNEL_REF(scan_blocks), gp_dim3((unsigned)blocks, 1, 1), gp_dim3(BLOCK, 1, 1), shared, NULL, args);
  if (s == GP_SUCCESS && blocks > 1) {
    s = gp_malloc_async((void **)&scanned, (size_t)blocks * sizeof(float), NULL);
    if (s == GP_SUCCESS) s = scan(blocks, sums, scanned);
    void *add[] = {&n, &out, &scanned};
    if (s == GP_SUCCESS)
      s = gp_launch(GP_KERNEL_REF(add_offsets), gp_dim3((unsigned)blocks, 1, 1), gp_dim3(BLOCK, 1, 1), 0, NULL, add);
    if (scanned) gp_free_async(scanned, NULL); /* freed once the stream is past the launches */
  }
  gp_free_async(sums, NULL);
  return s;
}

int main(void) {
  uint64_t seed = ex_seed("scan");
  int n = 1 << 20;
  size_t bytes = (size_t)n * sizeof(float);
  float *hin = malloc(bytes), *hout = malloc(bytes), *in = NULL, *out = NULL;
  double *ref = malloc((size_t)n * sizeof(double)), *bound = malloc((size_t)n * sizeof(double));
  if (!hin || !hout || !ref || !bound) return 1;
  double run = 0, mag = 0;
  for (int i = 0; i < n; i++) {
    hin[i] = ex_uniform(&seed, -0.5, 1.0);
    run += hin[i];
    mag += fabs(hin[i]);
    ref[i] = run;
    /* Every output is a sum along a path of at most 2 log2(BLOCK) additions per level,
     * three levels: each rounding is at most 2^-24 of the magnitudes summed so far. */
    bound[i] = 3 * 2 * 9 * 0x1p-24 * mag;
  }
  GP_CHECK(gp_malloc((void **)&in, bytes));
  GP_CHECK(gp_malloc((void **)&out, bytes));
  GP_CHECK(gp_memcpy(in, hin, bytes));
  GP_CHECK(gp_memset_d32(out, 0x7fc00000u, (size_t)n));
  GP_CHECK(scan(n, in, out));
  GP_CHECK(gp_memcpy(hout, out, bytes));

  size_t bad = ex_check("prefix sums", hout, ref, bound, (size_t)n, 1e-6);
  GP_CHECK(gp_free(in));
  GP_CHECK(gp_free(out));
  free(hin), free(hout), free(ref), free(bound);
  return ex_finish("scan", bad);
}
