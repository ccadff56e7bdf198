/* host.c - a C main launching a kernel of dialect.cu, linked with nothing but
 * `pkg-config --libs gpuport-cpu` (its Libs carry the C++ runtime dialect objects need). */
#include <gpuport.h>
#include <gpuport/kernel.h>
#include <stdio.h>

GP_KERNEL_DECLARE(iota);

int main(void) {
  int *p;
  GP_CHECK(gp_malloc_managed((void **)&p, 64 * sizeof(int)));
  void *args[] = {&p};
  GP_CHECK(gp_launch(GP_KERNEL_REF(iota), gp_dim3(1, 1, 1), gp_dim3(64, 1, 1), 0, NULL, args));
  GP_CHECK(gp_device_synchronize());
  int bad = 0;
  for (int i = 0; i < 64; i++) bad += p[i] != i;
  printf("host.c: %d errors: %s\n", bad, bad ? "FAILED" : "PASSED");
  return bad != 0;
}
