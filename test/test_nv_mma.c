/*
 * test_nv_mma.c - the sm_80 instruction wrappers (gpuport/nv_mma.h): mma.sync m16n8k16
 * f16/bf16 and m16n8k8 tf32, cvt.rna.tf32, ldmatrix x1/x2/x4 with and without .trans,
 * cp.async of 4, 8 and 16 bytes with its groups, and the faults.
 *
 * The lane probes are the ones `gpuport selftest --hardware` runs (cli/probe_sm80.c over
 * kernels/sm80/probe_sm80.cu): every expected register comes from the PTX ISA's fragment
 * tables as ref/ref_lanes.h writes them, independently of the header. This suite adds
 * literal values worked out by hand for a few lanes (so the tables themselves are
 * checked), the CPU-only cases (a partial warp, unrounded tf32 operands, misaligned
 * addresses: kernels in test/kernels/kt_nv_mma.cu), and a probe forced to fail. The
 * operands are small integers, so every product and sum is exact and results are
 * compared bit for bit. On the cpu backend this tests the emulation; on an NVIDIA GPU
 * the same suite runs the real instructions. HIP builds skip (exit 77).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gpuport.h>

#include "check_util.h"
#include "probe.h"
#include "ref.h"
#include "ref_lanes.h"

#if !defined(GP_BUILD_HIP)
GP_KERNEL_DECLARE(kt_nv_misaligned);

static uint64_t g_seed;

#define PASSES(call)                                                                       \
  do {                                                                                     \
    probe_res_t r_;                                                                        \
    call;                                                                                  \
    ck_assert_msg(r_.status == PROBE_PASS, "%s: %s (seed 0x%llx)", #call, r_.detail,      \
                  (unsigned long long)g_seed);                                             \
  } while (0)

/* ---- the fragment tables, by hand -------------------------------------------------------- */

/* Positions read off the PTX ISA's figures for m16n8k16 and m16n8k8 (tf32). */
START_TEST(test_tables_by_hand) {
  int r, c;
  gp_ref_mma16_a(5, 0, &r, &c); /* lane 5: g 1, t 1; a0 at (1, 2) */
  ck_assert(r == 1 && c == 2);
  gp_ref_mma16_a(5, 3, &r, &c); /* a3 at (9, 3) */
  ck_assert(r == 9 && c == 3);
  gp_ref_mma16_a(31, 6, &r, &c); /* lane 31: g 7, t 3; a6 at (15, 14) */
  ck_assert(r == 15 && c == 14);
  gp_ref_mma16_b(6, 3, &r, &c); /* lane 6: g 1, t 2; b3 at k 13, n 1 */
  ck_assert(r == 13 && c == 1);
  gp_ref_mma_c(30, 2, &r, &c); /* lane 30: g 7, t 2; c2 at (15, 4) */
  ck_assert(r == 15 && c == 4);
  gp_ref_mma8_tf32_a(9, 1, &r, &c); /* lane 9: g 2, t 1; a1 at (10, 1) */
  ck_assert(r == 10 && c == 1);
  gp_ref_mma8_tf32_a(9, 2, &r, &c); /* a2 at (2, 5) */
  ck_assert(r == 2 && c == 5);
  gp_ref_mma8_tf32_b(11, 1, &r, &c); /* lane 11: g 2, t 3; b1 at k 7, n 2 */
  ck_assert(r == 7 && c == 2);
  gp_ref_ldmatrix(13, 1, 0, &r, &c); /* lane 13: row 3, column 3 */
  ck_assert(r == 3 && c == 3);
  gp_ref_ldmatrix(13, 1, 1, &r, &c); /* .trans: row 3, column 3 too (2 * 1 + 1, 13 / 4) */
  ck_assert(r == 3 && c == 3);
  gp_ref_ldmatrix(6, 0, 1, &r, &c); /* .trans lane 6: row 4, column 1 */
  ck_assert(r == 4 && c == 1);
}
END_TEST

/* ---- mma ------------------------------------------------------------------------------- */

/* A = I: D = B + C, so each lane's d is a row piece of B, known by hand. */
static void mma_identity(int bf16) {
  int A[16][16], B[16][8];
  double C[16][8];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 16; k++) A[i][k] = i == k;
  for (int k = 0; k < 16; k++)
    for (int n = 0; n < 8; n++) B[k][n] = 8 * k + n + 1, C[k][n] = 0.0;
  uint32_t a[32][4], b[32][2];
  float c[32][4], d[32][4];
  probe_sm80_pack(bf16, A, B, C, a, b, c);
  OK(probe_sm80_mma_run(bf16, 32, a, b, c, d));
  /* lane 5 (g 1, t 1): D[1][2], D[1][3], D[9][2], D[9][3] = 11, 12, 75, 76 */
  ck_assert(d[5][0] == 11.0f && d[5][1] == 12.0f && d[5][2] == 75.0f && d[5][3] == 76.0f);
  /* lane 31 (g 7, t 3): D[7][6], D[7][7], D[15][6], D[15][7] = 63, 64, 127, 128 */
  ck_assert(d[31][0] == 63.0f && d[31][1] == 64.0f && d[31][2] == 127.0f && d[31][3] == 128.0f);
  /* every lane: d_i = B[g + 8 (i / 2)][2t + i % 2] = 8 (g + 8 (i / 2)) + 2t + i % 2 + 1 */
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < 4; i++) {
      const int g = l / 4, t = l % 4;
      const float want = (float)(8 * (g + 8 * (i / 2)) + 2 * t + i % 2 + 1);
      ck_assert_msg(d[l][i] == want, "lane %d d%d = %g, want %g", l, i, (double)d[l][i], (double)want);
    }
}

START_TEST(test_mma_identity) { mma_identity(_i); }
END_TEST

/* Random small integers in A, B and C: D = A B + C exactly, every lane and register. */
START_TEST(test_mma_random) { PASSES(probe_sm80_mma(&r_, g_seed + 17u * (unsigned)_i, _i)); }
END_TEST

/* A half warp (CPU only: on a GPU this is undefined): the missing lanes' operands read
 * as NaN, so results that need them are NaN, the others exact. */
START_TEST(test_mma_partial_warp) {
  SKIP_IF(gp_backend() != GP_BACKEND_CPU, "a partial warp's mma.sync is undefined on a GPU");
  int A[16][16], B[16][8];
  double C[16][8], D[16][8];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 16; k++) A[i][k] = (i + 2 * k) % 5 - 2;
  for (int k = 0; k < 16; k++)
    for (int n = 0; n < 8; n++) B[k][n] = (3 * k + n) % 7 - 3;
  for (int i = 0; i < 16; i++)
    for (int n = 0; n < 8; n++) {
      C[i][n] = 1.0;
      D[i][n] = 1.0;
      for (int k = 0; k < 16; k++) D[i][n] += (double)A[i][k] * B[k][n];
    }
  uint32_t a[32][4], b[32][2];
  float c[32][4], d[32][4];
  probe_sm80_pack(0, A, B, C, a, b, c);
  OK(probe_sm80_mma_run(0, 16, a, b, c, d));
  for (int l = 0; l < 16; l++)
    for (int i = 0; i < 4; i++) {
      int row, col;
      gp_ref_mma_c(l, i, &row, &col);
      /* column n of B comes from lanes 4n .. 4n + 3: present for n < 4 */
      if (col < 4)
        ck_assert_msg(d[l][i] == (float)D[row][col], "lane %d d%d = %g, want %g", l, i, (double)d[l][i], D[row][col]);
      else
        ck_assert_msg(isnan(d[l][i]), "lane %d d%d = %g, want NaN", l, i, (double)d[l][i]);
    }
  for (int l = 16; l < 32; l++) ck_assert(d[l][0] == -12345.0f); /* not written */
}
END_TEST

/* ---- mma m16n8k8 on tf32 ------------------------------------------------------------------ */

/* A = [I; 2 I] (16 x 8): D = [B; 2 B] + C, each lane's d known by hand. */
START_TEST(test_tf32_identity) {
  float A[16][8], B[8][8];
  double C[16][8];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 8; k++) A[i][k] = (i % 8 == k) ? (i < 8 ? 1.0f : 2.0f) : 0.0f;
  for (int k = 0; k < 8; k++)
    for (int n = 0; n < 8; n++) B[k][n] = (float)(8 * k + n + 1);
  memset(C, 0, sizeof C);
  float d[32][4];
  uint32_t ra[32][4];
  OK(probe_sm80_tf32_run(0, A, B, C, d, ra));
  /* lane 5 (g 1, t 1): D[1][2], D[1][3], D[9][2], D[9][3] = 11, 12, 22, 24 */
  ck_assert(d[5][0] == 11.0f && d[5][1] == 12.0f && d[5][2] == 22.0f && d[5][3] == 24.0f);
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < 4; i++) {
      const int g = l / 4, t = l % 4;
      const float want = (float)((8 * g + 2 * t + i % 2 + 1) * (i < 2 ? 1 : 2));
      ck_assert_msg(d[l][i] == want, "lane %d d%d = %g, want %g", l, i, (double)d[l][i], (double)want);
    }
}
END_TEST

START_TEST(test_tf32_random) { PASSES(probe_sm80_mma_tf32(&r_, g_seed + 29u)); }
END_TEST

/* cvt.rna.tf32.f32: ties away from zero, NaN and infinity stay. */
START_TEST(test_tf32_cvt) { PASSES(probe_sm80_cvt_tf32(&r_)); }
END_TEST

/* Operands that were not rounded: the emulation reads only the tf32 bits, as documented
 * in nv_mma.h (CPU only: the PTX ISA leaves such operands to the implementation). */
START_TEST(test_tf32_raw_operands) {
  SKIP_IF(gp_backend() != GP_BACKEND_CPU, "the PTX ISA leaves unrounded tf32 operands to the GPU");
  float A[16][8], B[8][8];
  double C[16][8];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 8; k++) A[i][k] = k == 0 ? 1.0f + 0x1.0p-12f : 0.0f;
  for (int k = 0; k < 8; k++)
    for (int n = 0; n < 8; n++) B[k][n] = k == 0 ? 1.0f + 0x1.0p-20f : 0.0f;
  memset(C, 0, sizeof C);
  float d[32][4];
  uint32_t ra[32][4];
  OK(probe_sm80_tf32_run(1, A, B, C, d, ra));
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < 4; i++) ck_assert_msg(d[l][i] == 1.0f, "lane %d d%d = %a", l, i, (double)d[l][i]);
}
END_TEST

/* ---- ldmatrix ---------------------------------------------------------------------------- */

static const int k_variants[] = {1, 2, 4, 9, 10, 12}; /* nmat + 8 * trans */

START_TEST(test_ldmatrix) {
  const int v = k_variants[_i];
  PASSES(probe_sm80_ldmatrix(&r_, g_seed + 7u * (unsigned)v, v & 7, v >= 8));
}
END_TEST

/* Hand-worked: rows[l] = (5 l + 3) % 32, element (r, c) = 8 r + c + 1. Lane 5 (g 1, t 1),
 * matrix 0. Non-trans: row 1 of matrix 0 is smem row rows[1] = 8, columns 2 and 3:
 * 67 | 68 << 16. Trans: (row 2, col 1) from smem row rows[2] = 13 -> 106; (row 3, col 1)
 * from rows[3] = 18 -> 146. */
START_TEST(test_ldmatrix_by_hand) {
  uint16_t src[32][8];
  int rows[32];
  for (int r = 0; r < 32; r++)
    for (int c = 0; c < 8; c++) src[r][c] = (uint16_t)(8 * r + c + 1);
  for (int l = 0; l < 32; l++) rows[l] = (5 * l + 3) % 32;
  uint32_t out[32][4];
  OK(probe_sm80_ldmatrix_run(4, 0, src, rows, out));
  ck_assert_uint_eq(out[5][0], 67u | 68u << 16);
  OK(probe_sm80_ldmatrix_run(4, 1, src, rows, out));
  ck_assert_uint_eq(out[5][0], 106u | 146u << 16);
  OK(probe_sm80_ldmatrix_run(1, 0, src, rows, out));
  ck_assert_uint_eq(out[5][1], 0u); /* .x1 leaves the other registers alone */
}
END_TEST

/* ldmatrix.x4 (A) + ldmatrix.x2.trans (B, stored k-major) + mma: a 16 x 8 x 16 product. */
START_TEST(test_tile) { PASSES(probe_sm80_tile(&r_, g_seed + 101u + (unsigned)_i, _i)); }
END_TEST

/* ---- cp.async ---------------------------------------------------------------------------- */

START_TEST(test_cp_async) { PASSES(probe_sm80_cp_async(&r_, g_seed + 3u)); }
END_TEST

/* A probe whose first register is counted as differing fails and names it. */
START_TEST(test_probe_can_fail) {
  probe_res_t r;
  probe_set_inject(true);
  probe_sm80_mma(&r, g_seed, 0);
  probe_set_inject(false);
  ck_assert_int_eq(r.status, PROBE_FAIL);
  ck_assert_msg(strstr(r.detail, "lane 0 d0") && strstr(r.detail, "(1 of 128 differ)"), "%s", r.detail);
  probe_sm80_cp_async(&r, g_seed);
  ck_assert_msg(r.status == PROBE_PASS, "%s", r.detail); /* and the next one is unaffected */
}
END_TEST

/* Misaligned addresses fail the launch, and the library stays usable (CPU: the GPU's
 * fault is sticky, so it is not provoked there). */
START_TEST(test_misaligned) {
  SKIP_IF(gp_backend() != GP_BACKEND_CPU, "a GPU's misaligned-address fault is sticky");
  unsigned char *src = NULL;
  OK(gp_malloc((void **)&src, 256));
  OK(gp_memset(src, 0, 256));
  for (int what = 0; what < 2; what++) {
    void *args[] = {&what, &src};
    OK(gp_launch(GP_KERNEL_REF(kt_nv_misaligned), gp_dim3(1, 1, 1), gp_dim3(32, 1, 1), 0, NULL, args));
    gp_status_t st = gp_device_synchronize();
    ck_assert_msg(st == GP_ERROR_LAUNCH_FAILED, "what %d: %s", what, gp_status_name(st));
    ck_assert_msg(strstr(gp_last_error_message(), "kt_nv_misaligned") != NULL, "%s", gp_last_error_message());
  }
  gp_free(src);
  mma_identity(0); /* still works */
}
END_TEST

static Suite *nv_suite(void) {
  Suite *s = suite_create("nv_mma");
  TCase *tc = tcase_create("instructions");
  tcase_add_test(tc, test_tables_by_hand);
  tcase_add_loop_test(tc, test_mma_identity, 0, 2);
  tcase_add_loop_test(tc, test_mma_random, 0, 2);
  tcase_add_test(tc, test_mma_partial_warp);
  tcase_add_test(tc, test_tf32_identity);
  tcase_add_test(tc, test_tf32_random);
  tcase_add_test(tc, test_tf32_cvt);
  tcase_add_test(tc, test_tf32_raw_operands);
  tcase_add_loop_test(tc, test_ldmatrix, 0, 6);
  tcase_add_test(tc, test_ldmatrix_by_hand);
  tcase_add_loop_test(tc, test_tile, 0, 2);
  tcase_add_test(tc, test_cp_async);
  tcase_add_test(tc, test_probe_can_fail);
  tcase_add_test(tc, test_misaligned);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  print_seed("test_nv_mma", (unsigned long long)g_seed);
  return run_suite("test_nv_mma", nv_suite());
}

#else /* HIP: the wrappers are NVIDIA-only */
int main(void) { return skip_suite("test_nv_mma", "NVIDIA instructions, not built for HIP"); }
#endif
