/*
 * softmax.c - softmax over the rows of a 512 x 1000 matrix of random floats with
 * softmax.cu, on a stream with page-locked host buffers; checked against float64.
 */
#include "example.h"

GP_KERNEL_DECLARE(softmax_rows);

int main(void) {
  uint64_t seed = ex_seed("softmax");
  int rows = 512, cols = 1000;
  size_t n = (size_t)rows * cols, bytes = n * sizeof(float);
  float *hin = NULL, *hout = NULL, *in = NULL, *out = NULL;
  double *ref = malloc(n * sizeof(double)), *bound = malloc(n * sizeof(double));
  if (!ref || !bound) return 1;
  GP_CHECK(gp_malloc_host((void **)&hin, bytes));
  GP_CHECK(gp_malloc_host((void **)&hout, bytes));
  for (size_t i = 0; i < n; i++) hin[i] = ex_uniform(&seed, -4.0, 4.0);
  for (int r = 0; r < rows; r++) {
    const float *x = hin + (size_t)r * cols;
    double m = -INFINITY, s = 0;
    for (int c = 0; c < cols; c++) m = fmax(m, x[c]);
    for (int c = 0; c < cols; c++) s += exp((double)x[c] - m);
    for (int c = 0; c < cols; c++) {
      size_t i = (size_t)r * cols + c;
      ref[i] = exp((double)x[c] - m) / s;
      /* expf within 2 ulp, a sum of positive terms along a path of at most
       * cols / 256 + log2(256) + warps additions, one division and one product. */
      bound[i] = ref[i] * 0x1p-24 * (2.0 * (cols / 256 + 8 + 8) + 8);
    }
  }
  GP_CHECK(gp_malloc((void **)&in, bytes));
  GP_CHECK(gp_malloc((void **)&out, bytes));
  gp_stream_t s;
  GP_CHECK(gp_stream_create(&s));
  GP_CHECK(gp_memset_d32_async(out, 0x7fc00000u, n, s));
  GP_CHECK(gp_memcpy_async(in, hin, bytes, s));
  void *args[] = {&cols, &in, &out};
  GP_CHECK(gp_launch(GP_KERNEL_REF(softmax_rows), gp_dim3((unsigned)rows, 1, 1), gp_dim3(256, 1, 1), 0, s, args));
  GP_CHECK(gp_memcpy_async(hout, out, bytes, s));
  GP_CHECK(gp_stream_synchronize(s));

  size_t bad = ex_check("softmax", hout, ref, bound, n, 1e-6);
  GP_CHECK(gp_stream_destroy(s));
  GP_CHECK(gp_free(in));
  GP_CHECK(gp_free(out));
  GP_CHECK(gp_free_host(hin));
  GP_CHECK(gp_free_host(hout));
  free(ref), free(bound);
  return ex_finish("softmax", bad);
}
