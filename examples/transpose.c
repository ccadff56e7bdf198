/*
 * transpose.c - transposes a 1000 x 777 matrix of random floats with the tiled kernel
 * of transpose.cu; a transpose moves values, so every element must match exactly.
 */
#include "example.h"

GP_KERNEL_DECLARE(transpose_tiled);

int main(void) {
  uint64_t seed = ex_seed("transpose");
  int rows = 1000, cols = 777;
  size_t n = (size_t)rows * cols, bytes = n * sizeof(float);
  float *hin = malloc(bytes), *hout = malloc(bytes), *in = NULL, *out = NULL;
  double *ref = malloc(n * sizeof(double)), *bound = calloc(n, sizeof(double));
  if (!hin || !hout || !ref || !bound) return 1;
  for (size_t i = 0; i < n; i++) hin[i] = ex_uniform(&seed, -1.0, 1.0);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) ref[(size_t)c * rows + r] = hin[(size_t)r * cols + c];
  GP_CHECK(gp_malloc((void **)&in, bytes));
  GP_CHECK(gp_malloc((void **)&out, bytes));
  GP_CHECK(gp_memcpy(in, hin, bytes));
  GP_CHECK(gp_memset_d32(out, 0x7fc00000u, n));

  void *args[] = {&rows, &cols, &in, &out};
  gp_dim3_t grid = gp_dim3((unsigned)(cols + 31) / 32, (unsigned)(rows + 31) / 32, 1), block = gp_dim3(32, 8, 1);
  GP_CHECK(gp_launch(GP_KERNEL_REF(transpose_tiled), grid, block, 0, NULL, args));
  GP_CHECK(gp_memcpy(hout, out, bytes));

  size_t bad = ex_check("out", hout, ref, bound, n, 0.0);
  GP_CHECK(gp_free(in));
  GP_CHECK(gp_free(out));
  free(hin), free(hout), free(ref), free(bound);
  return ex_finish("transpose", bad);
}
