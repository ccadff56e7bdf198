/*
 * reduce.c - sums 2^22 random floats with the shuffle reduction of reduce.cu (two
 * launches of one kernel) and checks the sum against a float64 reference.
 */
#include "example.h"

GP_KERNEL_DECLARE(reduce_sum);

int main(void) {
  uint64_t seed = ex_seed("reduce");
  int n = 1 << 22, threads = 512, blocks = 256;
  size_t bytes = (size_t)n * sizeof(float);
  float *hx = malloc(bytes), *x = NULL, *partial = NULL, *sum = NULL, got = 0;
  if (!hx) return 1;
  double ref = 0, mag = 0;
  for (int i = 0; i < n; i++) {
    hx[i] = ex_uniform(&seed, -0.25, 0.75);
    ref += hx[i];
    mag += fabs(hx[i]);
  }
  GP_CHECK(gp_malloc((void **)&x, bytes));
  GP_CHECK(gp_malloc((void **)&partial, (size_t)blocks * sizeof(float)));
  GP_CHECK(gp_malloc((void **)&sum, sizeof(float)));
  GP_CHECK(gp_memcpy(x, hx, bytes));
  GP_CHECK(gp_memset_d32(sum, 0x7fc00000u, 1)); /* NaN until written */

  void *pass1[] = {&n, &x, &partial};
  GP_CHECK(gp_launch(GP_KERNEL_REF(reduce_sum), gp_dim3((unsigned)blocks, 1, 1), gp_dim3((unsigned)threads, 1, 1), 0,
                     NULL, pass1));
  void *pass2[] = {&blocks, &partial, &sum};
  GP_CHECK(gp_launch(GP_KERNEL_REF(reduce_sum), gp_dim3(1, 1, 1), gp_dim3(1024, 1, 1), 0, NULL, pass2));
  GP_CHECK(gp_memcpy(&got, sum, sizeof got));

  /* Each thread adds n / (threads * blocks) elements in order, then trees of depth
   * log2(warp) twice per pass: fewer than 40 roundings on any path. */
  double bound = ((double)n / ((double)threads * blocks) + 40) * 0x1p-24 * mag;
  size_t bad = ex_check("sum", &got, &ref, &bound, 1, 1e-5);
  GP_CHECK(gp_free(x));
  GP_CHECK(gp_free(partial));
  GP_CHECK(gp_free(sum));
  free(hx);
  return ex_finish("reduce", bad);
}
