/* A program outside the tree, written only against the public API: it builds with
 * `cc app.c $(pkg-config --cflags --libs gpuport-cpu)` or find_package(gpuport). */
#include <gpuport.h>
#include <math.h>
#include <stdio.h>

static int run(void) {
  enum { M = 3, N = 2, K = 4 };
  float a[M * K], b[K * N], c[M * N];
  for (int i = 0; i < M * K; i++) a[i] = (float)(i + 1);
  for (int i = 0; i < K * N; i++) b[i] = (float)(i % 3) - 0.5f;
  float *da, *db, *dc;
  GP_CHECK(gp_malloc((void **)&da, sizeof(a)));
  GP_CHECK(gp_malloc((void **)&db, sizeof(b)));
  GP_CHECK(gp_malloc((void **)&dc, sizeof(c)));
  GP_CHECK(gp_memcpy(da, a, sizeof(a)));
  GP_CHECK(gp_memcpy(db, b, sizeof(b)));
  GP_CHECK(gp_gemm(NULL, GP_ROW_MAJOR, GP_OP_N, GP_OP_N, M, N, K, 1.0f, da, GP_F32, K, db, GP_F32,
                   N, 0.0f, dc, GP_F32, N));
  GP_CHECK(gp_memcpy(c, dc, sizeof(c)));
  int bad = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double ref = 0;
      for (int p = 0; p < K; p++) ref += (double)a[i * K + p] * b[p * N + j];
      if (fabs(ref - c[i * N + j]) > 1e-4 * (1 + fabs(ref))) bad++;
    }
  GP_CHECK(gp_free(da));
  GP_CHECK(gp_free(db));
  GP_CHECK(gp_free(dc));
  if (gp_free(da) != GP_ERROR_INVALID_VALUE) bad++; /* double free is an error, not a crash */
  printf("gpuport %s backend: gemm %s\n", gp_backend_name(), bad ? "WRONG" : "ok");
  return bad ? GP_ERROR_INTERNAL : GP_SUCCESS;
}

int main(void) { return run() == GP_SUCCESS ? 0 : 1; }
