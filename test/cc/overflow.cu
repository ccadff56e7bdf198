// overflow.cu - a kernel that writes one element past its GP_SHARED array: built with
// gpuport-cc --sanitize, AddressSanitizer must report it (test/cc/check.sh expects the
// report and a non-zero exit).
#include <cstdio>
#include <gpuport/kernel.h>

GP_KERNEL void pastTheEnd(int *out) {
  GP_SHARED(int, tile, [64]);
  int *t = tile; // through a pointer: the redzone, not UBSan's bounds check, catches it
  t[threadIdx.x + 1] = (int)threadIdx.x; // thread 63 writes tile[64]
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x];
}
GP_KERNEL_EXPORT(pastTheEnd)

int main() {
  int *out;
  GP_CHECK(gp_malloc((void **)&out, 64 * sizeof(int)));
  GP_CHECK(GP_LAUNCH(pastTheEnd, 1, 64, 0, NULL, out));
  GP_CHECK(gp_device_synchronize());
  printf("overflow: not detected\n");
  return 0;
}
