/*
 * histogram.c - counts 2^22 random bytes (skewed, so bins differ) into 256 bins with
 * histogram.cu; counts are exact.
 */
#include "example.h"

GP_KERNEL_DECLARE(histogram_shared);

int main(void) {
  uint64_t seed = ex_seed("histogram");
  int n = 1 << 22, dev = 0;
  unsigned char *hdata = malloc((size_t)n), *data = NULL;
  unsigned hbins[256], *bins = NULL;
  double ref[256] = {0}, bound[256] = {0};
  float got[256];
  if (!hdata) return 1;
  for (int i = 0; i < n; i++) {
    uint64_t r = ex_next(&seed);
    hdata[i] = (unsigned char)(((r & 0xff) + ((r >> 8) & 0x3f)) & 0xff);
    ref[hdata[i]] += 1.0;
  }
  GP_CHECK(gp_malloc((void **)&data, (size_t)n));
  GP_CHECK(gp_malloc((void **)&bins, sizeof hbins));
  GP_CHECK(gp_memcpy(data, hdata, (size_t)n));
  GP_CHECK(gp_memset(bins, 0, sizeof hbins));

  gp_device_props_t p;
  gp_device_props_init(&p);
  GP_CHECK(gp_device_get(&dev));
  GP_CHECK(gp_device_get_props(&p, dev));
  unsigned blocks = 4u * (unsigned)p.multiprocessor_count;
  void *args[] = {&n, &data, &bins};
  GP_CHECK(gp_launch(GP_KERNEL_REF(histogram_shared), gp_dim3(blocks, 1, 1), gp_dim3(256, 1, 1), 0, NULL, args));
  GP_CHECK(gp_memcpy(hbins, bins, sizeof hbins));

  for (int b = 0; b < 256; b++) got[b] = (float)hbins[b]; /* counts below 2^24: exact in float */
  size_t bad = ex_check("bins", got, ref, bound, 256, 0.0);
  GP_CHECK(gp_free(data));
  GP_CHECK(gp_free(bins));
  free(hdata);
  return ex_finish("histogram", bad);
}
