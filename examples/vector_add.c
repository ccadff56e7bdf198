/*
 * vector_add.c - launches the dialect kernel of vector_add.cu from C:
 *   make BACKEND=cpu examples-cpu && bin/examples-cpu/vector_add
 */
#include <stdio.h>
#include <stdlib.h>
#include <gpuport.h>

GP_KERNEL_DECLARE(vector_add); /* the descriptor vector_add.cu exports */

int main(void) {
  int n = 1000000;
  size_t bytes = (size_t)n * sizeof(float);
  float *h = malloc(bytes), *a = NULL, *b = NULL, *c = NULL;
  if (!h) return 1;
  for (int i = 0; i < n; i++) h[i] = (float)i;
  GP_CHECK(gp_malloc((void **)&a, bytes));
  GP_CHECK(gp_malloc((void **)&b, bytes));
  GP_CHECK(gp_malloc((void **)&c, bytes));
  GP_CHECK(gp_memcpy(a, h, bytes));
  GP_CHECK(gp_memcpy(b, h, bytes));

  void *args[] = {&n, &a, &b, &c}; /* pointers to the arguments, as cudaLaunchKernel */
  unsigned block = 256, grid = (unsigned)((n + (int)block - 1) / (int)block);
  GP_CHECK(gp_launch(GP_KERNEL_REF(vector_add), gp_dim3(grid, 1, 1), gp_dim3(block, 1, 1), 0, NULL, args));
  GP_CHECK(gp_memcpy(h, c, bytes)); /* waits for the kernel, as cudaMemcpy does */

  int bad = 0;
  for (int i = 0; i < n; i++) bad += h[i] != 2.0f * (float)i;
  printf("vector_add on the %s backend: %s\n", gp_backend_name(), bad ? "WRONG" : "ok");
  GP_CHECK(gp_free(a));
  GP_CHECK(gp_free(b));
  GP_CHECK(gp_free(c));
  free(h);
  return bad ? 1 : 0;
}
