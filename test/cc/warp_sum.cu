// warp_sum.cu - a one-file dialect program (kernel and main) for gpuport-cc and the CMake
// helper: every warp sums its lanes' values with shuffles; the host checks the sums for
// the warp width the device reports (test/cc/check.sh runs it at
// GP_CPU_WARP_SIZE=32 and 64).
#include <cstdio>
#include <gpuport/kernel.h>

GP_KERNEL void warpSums(const int *in, int *out) {
  int v = in[threadIdx.x];
  for (int o = GP_WARP_SIZE / 2; o > 0; o /= 2) v += gp_shfl_xor(v, o);
  if (gp_lane_id() == 0) out[threadIdx.x / GP_WARP_SIZE] = v;
}
GP_KERNEL_EXPORT(warpSums)

int main() {
  enum { N = 256 };
  gp_device_props_t p;
  gp_device_props_init(&p);
  GP_CHECK(gp_device_get_props(&p, 0));
  int *in, *out;
  GP_CHECK(gp_malloc_managed((void **)&in, N * sizeof(int)));
  GP_CHECK(gp_malloc_managed((void **)&out, N * sizeof(int)));
  for (int i = 0; i < N; i++) in[i] = i * 3 % 17;
  GP_CHECK(GP_LAUNCH(warpSums, 1, N, 0, NULL, in, out));
  GP_CHECK(gp_device_synchronize());
  int bad = 0;
  for (int w = 0; w < N / p.warp_size; w++) {
    int s = 0;
    for (int j = 0; j < p.warp_size; j++) s += in[w * p.warp_size + j];
    bad += out[w] != s;
  }
  printf("warp_sum: warp width %d, %d errors: %s\n", p.warp_size, bad, bad ? "FAILED" : "PASSED");
  return bad != 0;
}
