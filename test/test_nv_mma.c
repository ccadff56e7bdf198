/*
 * test_nv_mma.c - the sm_80 instruction wrappers (gpuport/nv_mma.h): mma.sync m16n8k16
 * f16/bf16, ldmatrix x1/x2/x4 with and without .trans, cp.async with its groups, and
 * the faults. Kernels: test/kernels/kt_nv_mma.cu.
 *
 * Every expected register is computed here from the PTX ISA's fragment tables, written
 * out again independently of the header (lane l, g = l / 4, t = l % 4), plus literal
 * values worked out by hand for a few lanes. The operands are small integers, so every
 * product and sum is exact and results are compared bit for bit. On the cpu backend
 * this tests the emulation; on an NVIDIA GPU the same suite runs the real instructions
 * and so checks the emulation's tables against the hardware (the lane probe). HIP
 * builds skip (exit 77).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gpuport.h>

#include "check_util.h"
#include "ref.h"

#if !defined(GP_BUILD_HIP)
GP_KERNEL_DECLARE(kt_nv_mma);
GP_KERNEL_DECLARE(kt_nv_ldmatrix);
GP_KERNEL_DECLARE(kt_nv_tile);
GP_KERNEL_DECLARE(kt_nv_cp_async);
GP_KERNEL_DECLARE(kt_nv_misaligned);
GP_KERNEL_DECLARE(kt_nv_mma_tf32);

static uint64_t g_seed;

static void *upload(const void *h, size_t bytes) {
  void *d = NULL;
  OK(gp_malloc(&d, bytes));
  OK(gp_memcpy(d, h, bytes));
  return d;
}

static void run(gp_kernel_t k, unsigned threads, void **args) {
  OK(gp_launch(k, gp_dim3(1, 1, 1), gp_dim3(threads, 1, 1), 0, NULL, args));
  OK(gp_device_synchronize());
}

/* 16-bit encoding of a small integer in f16 or bf16 (exact). */
static uint16_t enc(int bf16, int v) {
  return bf16 ? gp_bf16_from_f32((float)v).bits : gp_f16_from_f32((float)v).bits;
}

/* ---- fragments, from the PTX ISA tables --------------------------------------------- */
/* A (16 x 16): a_e at row g + 8 * ((e / 2) % 2), col 2t + e % 2 + 8 * (e / 4). */
static void pack_a(int bf16, const int A[16][16], uint32_t a[32][4]) {
  for (int l = 0; l < 32; l++)
    for (int r = 0; r < 4; r++) {
      int g = l / 4, t = l % 4, row = g + 8 * (r % 2), col = 2 * t + 8 * (r / 2);
      a[l][r] = enc(bf16, A[row][col]) | (uint32_t)enc(bf16, A[row][col + 1]) << 16;
    }
}
/* B (16 x 8, k x n): b_e at k = 2t + e % 2 + 8 * (e / 2), n = g. */
static void pack_b(int bf16, const int B[16][8], uint32_t b[32][2]) {
  for (int l = 0; l < 32; l++)
    for (int r = 0; r < 2; r++) {
      int g = l / 4, t = l % 4, k = 2 * t + 8 * r;
      b[l][r] = enc(bf16, B[k][g]) | (uint32_t)enc(bf16, B[k + 1][g]) << 16;
    }
}
/* C, D (16 x 8 f32): c_i at row g + 8 * (i / 2), col 2t + i % 2. */
static void pack_c(const double C[16][8], float c[32][4]) {
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < 4; i++) c[l][i] = (float)C[l / 4 + 8 * (i / 2)][2 * (l % 4) + i % 2];
}

static void run_mma(int bf16, const int A[16][16], const int B[16][8], const double C[16][8],
                    unsigned threads, float d[32][4]) {
  uint32_t a[32][4], b[32][2];
  float c[32][4];
  pack_a(bf16, A, a);
  pack_b(bf16, B, b);
  pack_c(C, c);
  void *da = upload(a, sizeof a), *db = upload(b, sizeof b), *dc = upload(c, sizeof c);
  float poison[32][4];
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < 4; i++) poison[l][i] = -12345.0f;
  void *dd = upload(poison, sizeof poison);
  void *args[] = {&bf16, &da, &db, &dc, &dd};
  run(GP_KERNEL_REF(kt_nv_mma), threads, args);
  OK(gp_memcpy(d, dd, sizeof poison));
  gp_free(da), gp_free(db), gp_free(dc), gp_free(dd);
}

/* ---- mma ------------------------------------------------------------------------------- */

/* A = I: D = B + C, so each lane's d is a row piece of B, known by hand. */
static void mma_identity(int bf16) {
  int A[16][16], B[16][8];
  double C[16][8];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 16; k++) A[i][k] = i == k;
  for (int k = 0; k < 16; k++)
    for (int n = 0; n < 8; n++) B[k][n] = 8 * k + n + 1, C[k][n] = 0.0;
  float d[32][4];
  run_mma(bf16, A, B, C, 32, d);
  /* lane 5 (g 1, t 1): D[1][2], D[1][3], D[9][2], D[9][3] = 11, 12, 75, 76 */
  ck_assert(d[5][0] == 11.0f && d[5][1] == 12.0f && d[5][2] == 75.0f && d[5][3] == 76.0f);
  /* lane 31 (g 7, t 3): D[7][6], D[7][7], D[15][6], D[15][7] = 63, 64, 127, 128 */
  ck_assert(d[31][0] == 63.0f && d[31][1] == 64.0f && d[31][2] == 127.0f && d[31][3] == 128.0f);
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < 4; i++) {
      int g = l / 4, t = l % 4;
      float want = (float)(8 * (g + 8 * (i / 2)) + 2 * t + i % 2 + 1);
      ck_assert_msg(d[l][i] == want, "lane %d d%d = %g, want %g", l, i, (double)d[l][i], (double)want);
    }
}

START_TEST(test_mma_identity) { mma_identity(_i); }
END_TEST

/* Random small integers in A, B and C: D = A B + C exactly, every lane and register. */
START_TEST(test_mma_random) {
  int bf16 = _i;
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed + 17u * (unsigned)bf16);
  int A[16][16], B[16][8];
  double C[16][8], D[16][8];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 16; k++) A[i][k] = (int)(gp_ref_rng_next(&rng) % 17) - 8;
  for (int k = 0; k < 16; k++)
    for (int n = 0; n < 8; n++) B[k][n] = (int)(gp_ref_rng_next(&rng) % 17) - 8;
  for (int i = 0; i < 16; i++)
    for (int n = 0; n < 8; n++) {
      C[i][n] = (double)((int)(gp_ref_rng_next(&rng) % 201) - 100) * 0.5;
      D[i][n] = C[i][n];
      for (int k = 0; k < 16; k++) D[i][n] += (double)A[i][k] * B[k][n];
    }
  float d[32][4], want[32][4];
  run_mma(bf16, A, B, C, 32, d);
  pack_c(D, want);
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < 4; i++)
      ck_assert_msg(d[l][i] == want[l][i], "%s lane %d d%d = %g, want %g (seed 0x%llx)",
                    bf16 ? "bf16" : "f16", l, i, (double)d[l][i], (double)want[l][i],
                    (unsigned long long)g_seed);
}
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
  float d[32][4], want[32][4];
  run_mma(0, A, B, C, 16, d);
  pack_c(D, want);
  for (int l = 0; l < 16; l++)
    for (int i = 0; i < 4; i++) {
      /* column n = 2t + i % 2 of B comes from lanes 4n .. 4n + 3: present for n < 4 */
      if (2 * (l % 4) + i % 2 < 4)
        ck_assert_msg(d[l][i] == want[l][i], "lane %d d%d = %g, want %g", l, i, (double)d[l][i],
                      (double)want[l][i]);
      else
        ck_assert_msg(isnan(d[l][i]), "lane %d d%d = %g, want NaN", l, i, (double)d[l][i]);
    }
  for (int l = 16; l < 32; l++) ck_assert(d[l][0] == -12345.0f); /* not written */
}
END_TEST

/* ---- mma m16n8k8 on tf32 ------------------------------------------------------------------ */

/* Fragments of the tf32 form (PTX ISA, "Matrix Fragments for mma.m16n8k8", .tf32):
 * A (16 x 8): a_i at row g + 8 (i % 2), col t + 4 (i / 2); B (8 x 8): b_i at k = t + 4 i,
 * n = g; C and D as for m16n8k16. Runs kt_nv_mma_tf32; ra gets the rounded A bits. */
static void run_tf32(int raw, const float A[16][8], const float B[8][8], const double C[16][8],
                     float d[32][4], uint32_t ra[32][4]) {
  float a[32][4], b[32][2], c[32][4];
  for (int l = 0; l < 32; l++) {
    const int g = l / 4, t = l % 4;
    for (int i = 0; i < 4; i++) a[l][i] = A[g + 8 * (i % 2)][t + 4 * (i / 2)];
    for (int i = 0; i < 2; i++) b[l][i] = B[t + 4 * i][g];
  }
  pack_c(C, c);
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < 4; i++) d[l][i] = -12345.0f;
  void *da = upload(a, sizeof a), *db = upload(b, sizeof b), *dc = upload(c, sizeof c);
  void *dd = upload(d, sizeof a), *dra = upload(ra, sizeof a);
  void *args[] = {&raw, &da, &db, &dc, &dd, &dra};
  run(GP_KERNEL_REF(kt_nv_mma_tf32), 32, args);
  OK(gp_memcpy(d, dd, sizeof a));
  OK(gp_memcpy(ra, dra, sizeof a));
  gp_free(da), gp_free(db), gp_free(dc), gp_free(dd), gp_free(dra);
}

/* A = [I; 2 I] (16 x 8): D = [B; 2 B] + C, each lane's d known by hand. */
START_TEST(test_tf32_identity) {
  float A[16][8], B[8][8];
  double C[16][8];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 8; k++) A[i][k] = (i % 8 == k) ? (i < 8 ? 1.0f : 2.0f) : 0.0f;
  for (int k = 0; k < 8; k++)
    for (int n = 0; n < 8; n++) B[k][n] = (float)(8 * k + n + 1);
  for (int i = 0; i < 16; i++)
    for (int n = 0; n < 8; n++) C[i][n] = 0.0;
  float d[32][4];
  uint32_t ra[32][4];
  run_tf32(0, A, B, C, d, ra);
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

/* Random multiples of 1/8 and 1/4 below 8 and 16 in A and B (exact in tf32, so cvt.rna
 * leaves them), small integers in C: D = A B + C exactly (every partial sum is a
 * multiple of 1/32 below 2^10), every lane and register. */
START_TEST(test_tf32_random) {
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed + 29u);
  float A[16][8], B[8][8];
  double C[16][8], D[16][8];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 8; k++) A[i][k] = (float)((int)(gp_ref_rng_next(&rng) % 127) - 63) / 8.0f;
  for (int k = 0; k < 8; k++)
    for (int n = 0; n < 8; n++) B[k][n] = (float)((int)(gp_ref_rng_next(&rng) % 127) - 63) / 4.0f;
  for (int i = 0; i < 16; i++)
    for (int n = 0; n < 8; n++) {
      C[i][n] = (double)((int)(gp_ref_rng_next(&rng) % 201) - 100);
      D[i][n] = C[i][n];
      for (int k = 0; k < 8; k++) D[i][n] += (double)A[i][k] * B[k][n];
    }
  float d[32][4], want[32][4];
  uint32_t ra[32][4];
  run_tf32(0, A, B, C, d, ra);
  pack_c(D, want);
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < 4; i++)
      ck_assert_msg(d[l][i] == want[l][i], "lane %d d%d = %g, want %g (seed 0x%llx)", l, i,
                    (double)d[l][i], (double)want[l][i], (unsigned long long)g_seed);
}
END_TEST

/* cvt.rna.tf32.f32 by hand: ties go away from zero, NaN and infinity stay. */
START_TEST(test_tf32_cvt) {
  const float in[8] = {1.0f + 0x1.0p-11f,  /* tie: up to 1 + 2^-10 */
                       -(1.0f + 0x1.0p-11f), /* tie: away from zero */
                       1.0f + 0x1.0p-12f,  /* below half: 1 */
                       1.0f + 0x1.8p-11f,  /* above half: 1 + 2^-10 */
                       3.0f, -0.0f, INFINITY, NAN};
  const uint32_t want[8] = {0x3f802000u, 0xbf802000u, 0x3f800000u, 0x3f802000u,
                            0x40400000u, 0x80000000u, 0x7f800000u, 0};
  float A[16][8], B[8][8];
  double C[16][8];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 8; k++) A[i][k] = 1.0f;
  for (int k = 0; k < 8; k++)
    for (int n = 0; n < 8; n++) B[k][n] = 0.0f;
  for (int i = 0; i < 16; i++)
    for (int n = 0; n < 8; n++) C[i][n] = 0.0;
  /* lane 0's a0..a3 are A[0][0], A[8][0], A[0][4], A[8][4]; lane 1's A[0][1], ... */
  for (int j = 0; j < 8; j++) A[8 * (j % 2)][j / 2 % 2 + 4 * (j / 4)] = in[j];
  float d[32][4];
  uint32_t ra[32][4];
  run_tf32(0, A, B, C, d, ra);
  for (int j = 0; j < 8; j++) {
    const int lane = j / 2 % 2, reg = j % 2 + 2 * (j / 4);
    const uint32_t got = ra[lane][reg];
    if (j == 7)
      ck_assert_msg((got & 0x7f800000u) == 0x7f800000u && (got & 0x007fe000u) != 0,
                    "cvt(NaN) = 0x%08x, not a NaN", got);
    else
      ck_assert_msg(got == want[j], "cvt(%a) = 0x%08x, want 0x%08x", (double)in[j], got, want[j]);
  }
}
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
  for (int i = 0; i < 16; i++)
    for (int n = 0; n < 8; n++) C[i][n] = 0.0;
  float d[32][4];
  uint32_t ra[32][4];
  run_tf32(1, A, B, C, d, ra);
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < 4; i++) ck_assert_msg(d[l][i] == 1.0f, "lane %d d%d = %a", l, i, (double)d[l][i]);
}
END_TEST

/* ---- ldmatrix ---------------------------------------------------------------------------- */

static const int k_variants[] = {1, 2, 4, 9, 10, 12}; /* nmat + 8 * trans */

START_TEST(test_ldmatrix) {
  const int variant = k_variants[_i], nmat = variant & 7, trans = variant >= 8;
  uint16_t src[32][8];
  int rows[32];
  for (int r = 0; r < 32; r++)
    for (int c = 0; c < 8; c++) src[r][c] = (uint16_t)(8 * r + c + 1);
  for (int l = 0; l < 32; l++) rows[l] = (5 * l + 3) % 32; /* a permutation */
  uint32_t out[32][4];
  memset(out, 0xee, sizeof out);
  void *dsrc = upload(src, sizeof src), *drows = upload(rows, sizeof rows), *dout = upload(out, sizeof out);
  int v = variant;
  void *args[] = {&v, &dsrc, &drows, &dout};
  run(GP_KERNEL_REF(kt_nv_ldmatrix), 32, args);
  OK(gp_memcpy(out, dout, sizeof out));
  gp_free(dsrc), gp_free(drows), gp_free(dout);

  /* Hand-worked: lane 5 (g 1, t 1), matrix 0. Non-trans: row 1 of matrix 0 is smem row
   * rows[1] = 8, columns 2 and 3: 67 | 68 << 16. Trans: (row 2, col 1) from smem row
   * rows[2] = 13 -> 106; (row 3, col 1) from rows[3] = 18 -> 146. */
  ck_assert_uint_eq(out[5][0], trans ? (106u | 146u << 16) : (67u | 68u << 16));
  for (int l = 0; l < 32; l++) {
    int g = l / 4, t = l % 4;
    for (int j = 0; j < 4; j++) {
      uint32_t want;
      if (j >= nmat)
        want = 0u; /* registers the instruction does not write keep the kernel's 0 */
      else if (!trans)
        want = src[rows[8 * j + g]][2 * t] | (uint32_t)src[rows[8 * j + g]][2 * t + 1] << 16;
      else
        want = src[rows[8 * j + 2 * t]][g] | (uint32_t)src[rows[8 * j + 2 * t + 1]][g] << 16;
      ck_assert_msg(out[l][j] == want, "x%d%s lane %d r%d = 0x%08x, want 0x%08x", nmat,
                    trans ? ".trans" : "", l, j, out[l][j], want);
    }
  }
}
END_TEST

/* ldmatrix.x4 (A) + ldmatrix.x2.trans (B, stored k-major) + mma: a 16 x 8 x 16 product. */
START_TEST(test_tile) {
  int bf16 = _i;
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed + 101u + (unsigned)bf16);
  uint16_t a[16][16], b[16][8];
  int A[16][16], B[16][8];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 16; k++) A[i][k] = (int)(gp_ref_rng_next(&rng) % 15) - 7, a[i][k] = enc(bf16, A[i][k]);
  for (int k = 0; k < 16; k++)
    for (int n = 0; n < 8; n++) B[k][n] = (int)(gp_ref_rng_next(&rng) % 15) - 7, b[k][n] = enc(bf16, B[k][n]);
  float d[16][8];
  for (int i = 0; i < 16; i++)
    for (int n = 0; n < 8; n++) d[i][n] = NAN;
  void *da = upload(a, sizeof a), *db = upload(b, sizeof b), *dd = upload(d, sizeof d);
  void *args[] = {&bf16, &da, &db, &dd};
  run(GP_KERNEL_REF(kt_nv_tile), 32, args);
  OK(gp_memcpy(d, dd, sizeof d));
  gp_free(da), gp_free(db), gp_free(dd);
  for (int i = 0; i < 16; i++)
    for (int n = 0; n < 8; n++) {
      double want = 0.0;
      for (int k = 0; k < 16; k++) want += (double)A[i][k] * B[k][n];
      ck_assert_msg(d[i][n] == (float)want, "D[%d][%d] = %g, want %g (seed 0x%llx)", i, n,
                    (double)d[i][n], want, (unsigned long long)g_seed);
    }
}
END_TEST

/* ---- cp.async ---------------------------------------------------------------------------- */

START_TEST(test_cp_async) {
  unsigned char src[32][64], snap[32][3][64];
  int src_bytes[32];
  for (int l = 0; l < 32; l++) {
    for (int e = 0; e < 64; e++) src[l][e] = (unsigned char)(1 + (l * 64 + e) % 251);
    src_bytes[l] = l % 17; /* 0 .. 16 */
  }
  memset(snap, 0, sizeof snap);
  void *dsrc = upload(src, sizeof src), *dsb = upload(src_bytes, sizeof src_bytes);
  void *dsnap = upload(snap, sizeof snap);
  void *args[] = {&dsrc, &dsb, &dsnap};
  run(GP_KERNEL_REF(kt_nv_cp_async), 32, args);
  OK(gp_memcpy(snap, dsnap, sizeof snap));
  gp_free(dsrc), gp_free(dsb), gp_free(dsnap);

  const int cpu = gp_backend() == GP_BACKEND_CPU;
  for (int l = 0; l < 32; l++) {
    unsigned char full[64];
    for (int e = 0; e < 64; e++) full[e] = src[l][e];
    for (int e = 16 + src_bytes[l]; e < 32; e++) full[e] = 0; /* zero-filled tail */
    for (int e = 44; e < 48; e++) full[e] = 0;                /* the 4-byte copy of size 0 */
    for (int s = 0; s < 3; s++)
      for (int e = 0; e < 64; e++) {
        const int chunk = e / 16;
        /* landed: group 0 (chunks 0, 1) from the first wait on, group 1 (chunk 2) from
         * the second, chunk 3 (committed last) at the end */
        const int landed = chunk < 2 || (chunk == 2 && s >= 1) || s == 2;
        const unsigned char got = snap[l][s][e];
        if (landed)
          ck_assert_msg(got == full[e], "lane %d snapshot %d byte %d = 0x%02x, want 0x%02x", l, s, e,
                        got, full[e]);
        else if (cpu) /* the emulation's fill of a pending copy's destination */
          ck_assert_msg(got == 0xff, "lane %d snapshot %d byte %d = 0x%02x before its wait", l, s,
                        e, got);
        else /* on a GPU: either the old bytes or the copy */
          ck_assert_msg(got == 0x5a || got == full[e], "lane %d snapshot %d byte %d = 0x%02x", l,
                        s, e, got);
      }
  }
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
    ck_assert_msg(strstr(gp_last_error_message(), "kt_nv_misaligned") != NULL, "%s",
                  gp_last_error_message());
  }
  gp_free(src);
  mma_identity(0); /* still works */
}
END_TEST

static Suite *nv_suite(void) {
  Suite *s = suite_create("nv_mma");
  TCase *tc = tcase_create("instructions");
  tcase_add_loop_test(tc, test_mma_identity, 0, 2);
  tcase_add_loop_test(tc, test_mma_random, 0, 2);
  tcase_add_test(tc, test_mma_partial_warp);
  tcase_add_test(tc, test_tf32_identity);
  tcase_add_test(tc, test_tf32_random);
  tcase_add_test(tc, test_tf32_cvt);
  tcase_add_test(tc, test_tf32_raw_operands);
  tcase_add_loop_test(tc, test_ldmatrix, 0, 6);
  tcase_add_loop_test(tc, test_tile, 0, 2);
  tcase_add_test(tc, test_cp_async);
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
