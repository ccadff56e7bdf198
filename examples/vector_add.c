/*
 * vector_add.c - launches the dialect kernel of vector_add.cu from C and checks
 * c = a + b against a float64 reference:
 *   make BACKEND=cpu examples-cpu && bin/examples-cpu/vector_add
 */
#include "example.h"

GP_KERNEL_DECLARE(vector_add); /* the descriptor vector_add.cu exports */

int main(void) {
  uint64_t seed = ex_seed("vector_add");
  int n = 1000003; /* not a multiple of the block: the last block is partly idle */
  size_t bytes = (size_t)n * sizeof(float);
  float *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes), *a = NULL, *b = NULL, *c = NULL;
  double *ref = malloc((size_t)n * sizeof(double)), *bound = malloc((size_t)n * sizeof(double));
  if (!ha || !hb || !hc || !ref || !bound) return 1;
  for (int i = 0; i < n; i++) {
    ha[i] = ex_uniform(&seed, -1.0, 1.0);
    hb[i] = ex_uniform(&seed, -1.0, 1.0);
    ref[i] = (double)ha[i] + hb[i];
    bound[i] = 0x1p-24 * fabs(ref[i]); /* one rounding */
  }
  GP_CHECK(gp_malloc((void **)&a, bytes));
  GP_CHECK(gp_malloc((void **)&b, bytes));
  GP_CHECK(gp_malloc((void **)&c, bytes));
  GP_CHECK(gp_memcpy(a, ha, bytes));
  GP_CHECK(gp_memcpy(b, hb, bytes));
  GP_CHECK(gp_memset_d32(c, 0x7fc00000u, (size_t)n)); /* NaN: an unwritten element fails */

  void *args[] = {&n, &a, &b, &c}; /* pointers to the arguments, as cudaLaunchKernel */
  unsigned block = 256, grid = (unsigned)((n + (int)block - 1) / (int)block);
  GP_CHECK(gp_launch(GP_KERNEL_REF(vector_add), gp_dim3(grid, 1, 1), gp_dim3(block, 1, 1), 0, NULL, args));
  GP_CHECK(gp_memcpy(hc, c, bytes)); /* waits for the kernel, as cudaMemcpy does */

  size_t bad = ex_check("c", hc, ref, bound, (size_t)n, 1e-7);
  GP_CHECK(gp_free(a));
  GP_CHECK(gp_free(b));
  GP_CHECK(gp_free(c));
  free(ha), free(hb), free(hc), free(ref), free(bound);
  return ex_finish("vector_add", bad);
}
