/*
 * test_amd_mfma.c - the MFMA wrappers of gpuport/amd_mfma.h against hand-computed lane
 * layouts, through the probe kernel test/kernels/kt_mfma.cu (the CPU emulation on the
 * cpu backend, the real instructions on an AMD GPU with the hip backend).
 *
 * Sources of the expected layouts: the AMD Matrix Instruction Calculator
 * (github.com/ROCm/amd_matrix_instruction_calculator, matrix_calculator.py, class
 * InstCalcGfx9), whose element-to-register equations for these instructions with no
 * modifiers are, for an M x N x K instruction (M = N) with p elements per lane:
 *   A[i][k]: lane i + M floor(k / p), element k % p; B[k][j]: lane j + N floor(k / p);
 *   D[i][j], 32x32: register 4 floor(i / 8) + i % 4, lane (32 floor(i / 4)) % 64 + j;
 *   D[i][j], 16x16: register i % 4, lane 16 floor(i / 4) + j.
 * The test writes these forward maps (coordinate to register) itself; the header
 * implements the inverse (register to coordinate), so the two are written apart.
 *
 * 1. one_hot: A and B zero except A[i][k] = B[k][j] = 1 at lanes and elements computed by
 *    hand from those equations; exactly one accumulator register of one lane (also
 *    computed by hand) must become 1.
 * 2. exact: random small nonzero integers in A, B and C (exact in bf16, f16 and f32, and
 *    every sum exact in f32, so the comparison is exact whatever the summation order),
 *    two wavefronts with different data; every D register compared, and the map from
 *    (i, j) to (lane, register) checked to be a bijection.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuport.h>

#include "check_util.h"
#include "ref.h"

static uint64_t g_seed;

#if defined(GP_BUILD_CPU) || defined(GP_BUILD_HIP)
GP_KERNEL_DECLARE(kt_mfma);

enum kind { K_BF16 = 0, K_F16 = 1, K_F32 = 2 };

typedef struct mfma_op {
  const char *name;
  int m, k, per, nregs, kind; /* n == m */
} mfma_op_t;

/* Index = the probe's op code (modulo 6). */
static const mfma_op_t k_ops[6] = {
    {"v_mfma_f32_32x32x8bf16_1k", 32, 8, 4, 16, K_BF16},
    {"v_mfma_f32_16x16x16bf16_1k", 16, 16, 4, 4, K_BF16},
    {"v_mfma_f32_32x32x8f16", 32, 8, 4, 16, K_F16},
    {"v_mfma_f32_16x16x16f16", 16, 16, 4, 4, K_F16},
    {"v_mfma_f32_32x32x2f32", 32, 2, 1, 16, K_F32},
    {"v_mfma_f32_16x16x4f32", 16, 4, 1, 4, K_F32},
};

#define WAVES 2
#define LANES (64 * WAVES)

/* ---- the forward maps, from the calculator's equations -------------------------------- */
static int in_lane(const mfma_op_t *o, int x, int k) { return x + o->m * (k / o->per); }
static int in_elem(const mfma_op_t *o, int k) { return k % o->per; }
static int d_reg(const mfma_op_t *o, int i) { return o->m == 32 ? 4 * (i / 8) + i % 4 : i % 4; }
static int d_lane(const mfma_op_t *o, int i, int j) {
  return o->m == 32 ? (32 * (i / 4)) % 64 + j : 16 * (i / 4) + j;
}

/* Bits of the value v (an integer, exact in every kind). */
static uint64_t bits_of(int kind, double v) {
  if (kind == K_F32) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
  }
  if (kind == K_BF16) return gp_bf16_from_f32((float)v).bits;
  return gp_f16_from_f32((float)v).bits;
}

/* Places the value v as element e of a lane's register bits. */
static void put(uint64_t *reg, int kind, int e, double v) {
  const int w = kind == K_F32 ? 32 : 16;
  const uint64_t mask = ((uint64_t)1 << w) - 1;
  *reg = (*reg & ~(mask << (w * e))) | (bits_of(kind, v) << (w * e));
}

typedef struct probe_io {
  uint64_t a[LANES], b[LANES];
  float c[LANES * 16], d[LANES * 16];
} probe_io_t;

static void run_probe(int op, probe_io_t *io) {
  uint64_t *da = NULL, *db = NULL;
  float *dc = NULL, *dd = NULL;
  ck_assert_int_eq(gp_malloc((void **)&da, sizeof io->a), GP_SUCCESS);
  ck_assert_int_eq(gp_malloc((void **)&db, sizeof io->b), GP_SUCCESS);
  ck_assert_int_eq(gp_malloc((void **)&dc, sizeof io->c), GP_SUCCESS);
  ck_assert_int_eq(gp_malloc((void **)&dd, sizeof io->d), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(da, io->a, sizeof io->a), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(db, io->b, sizeof io->b), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(dc, io->c, sizeof io->c), GP_SUCCESS);
  gp_ref_poison(io->d, GP_F32, LANES * 16);
  ck_assert_int_eq(gp_memcpy(dd, io->d, sizeof io->d), GP_SUCCESS);
  void *args[] = {&op, &da, &db, &dc, &dd};
  gp_status_t st = gp_launch(GP_KERNEL_REF(kt_mfma), gp_dim3(1, 1, 1), gp_dim3(LANES, 1, 1), 0,
                             NULL, args);
  ck_assert_msg(st == GP_SUCCESS, "launch: %s", gp_last_error_message());
  ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(io->d, dd, sizeof io->d), GP_SUCCESS);
  gp_free(da);
  gp_free(db);
  gp_free(dc);
  gp_free(dd);
}

/* ---- 1. one-hot products at hand-computed places --------------------------------------- */
typedef struct hand {
  int op;                 /* index into k_ops */
  int i, k, j;            /* A[i][k] = B[k][j] = 1 */
  int a_lane, a_elem;     /* where A[i][k] sits (computed by hand) */
  int b_lane, b_elem;     /* where B[k][j] sits */
  int d_lane, d_reg;      /* where D[i][j] = 1 must appear */
} hand_t;

/* Worked by hand from the equations in the file comment, e.g. 32x32x8, A[5][6]:
 * lane 5 + 32 floor(6/4) = 37, element 6 % 4 = 2; D[5][9]: register 4 floor(5/8) + 5 % 4
 * = 1, lane (32 floor(5/4)) % 64 + 9 = 41. */
static const hand_t k_hand[] = {
    /* 32x32x8 bf16 / f16 */
    {0, 5, 6, 9, 37, 2, 41, 2, 41, 1},
    {0, 31, 7, 0, 63, 3, 32, 3, 32, 15},
    {0, 17, 3, 17, 17, 3, 17, 3, 17, 9},
    {0, 12, 0, 3, 12, 0, 3, 0, 35, 4},
    {2, 5, 6, 9, 37, 2, 41, 2, 41, 1},
    {2, 26, 5, 30, 58, 1, 62, 1, 30, 14},
    /* 16x16x16 bf16 / f16 */
    {1, 5, 13, 9, 53, 1, 57, 1, 25, 1},
    {1, 15, 0, 15, 15, 0, 15, 0, 63, 3},
    {3, 0, 7, 2, 16, 3, 18, 3, 2, 0},
    {3, 10, 9, 4, 42, 1, 36, 1, 36, 2},
    /* 32x32x2 f32 */
    {4, 5, 1, 9, 37, 0, 41, 0, 41, 1},
    {4, 31, 0, 0, 31, 0, 0, 0, 32, 15},
    /* 16x16x4 f32 */
    {5, 5, 3, 9, 53, 0, 57, 0, 25, 1},
    {5, 10, 2, 4, 42, 0, 36, 0, 36, 2},
};
#define N_HAND ((int)(sizeof k_hand / sizeof k_hand[0]))

START_TEST(test_one_hot) {
  const hand_t *h = &k_hand[_i % N_HAND];
  const int spelling = _i / N_HAND; /* 0: gfx90a names, 1: gfx940 names */
  const mfma_op_t *o = &k_ops[h->op];
  static probe_io_t io;
  memset(&io, 0, sizeof io);
  /* Wave 1 gets the same one-hot data shifted by nothing: both waves must agree. */
  for (int w = 0; w < WAVES; w++) {
    put(&io.a[w * 64 + h->a_lane], o->kind, h->a_elem, 1.0);
    put(&io.b[w * 64 + h->b_lane], o->kind, h->b_elem, 1.0);
  }
  run_probe(h->op + 6 * spelling, &io);
  for (int w = 0; w < WAVES; w++)
    for (int l = 0; l < 64; l++)
      for (int r = 0; r < o->nregs; r++) {
        const float want = (l == h->d_lane && r == h->d_reg) ? 1.0f : 0.0f;
        const float got = io.d[(w * 64 + l) * 16 + r];
        ck_assert_msg(got == want,
                      "%s: A[%d][%d] = B[%d][%d] = 1: wave %d lane %d register %d holds %g, "
                      "expected %g (D[%d][%d] is register %d of lane %d)",
                      o->name, h->i, h->k, h->k, h->j, w, l, r, (double)got, (double)want, h->i,
                      h->j, h->d_reg, h->d_lane);
      }
  /* The hand-computed places agree with the equations the exact test uses. */
  ck_assert_int_eq(in_lane(o, h->i, h->k), h->a_lane);
  ck_assert_int_eq(in_elem(o, h->k), h->a_elem);
  ck_assert_int_eq(in_lane(o, h->j, h->k), h->b_lane);
  ck_assert_int_eq(d_lane(o, h->i, h->j), h->d_lane);
  ck_assert_int_eq(d_reg(o, h->i), h->d_reg);
}
END_TEST

/* ---- 2. exact products of random integer matrices ----------------------------------------- */
static int rand_int(gp_ref_rng_t *rng, int lo, int hi) { /* nonzero in [lo, hi] */
  int v;
  do v = lo + (int)(gp_ref_rng_next(rng) % (uint64_t)(hi - lo + 1));
  while (v == 0);
  return v;
}

START_TEST(test_exact) {
  const int op = _i;
  const mfma_op_t *o = &k_ops[op % 6];
  const int m = o->m, n = o->m, k = o->k;
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ (0x51ed27u * (uint64_t)(op + 1)));
  static probe_io_t io;
  static double A[WAVES][32][16], B[WAVES][16][32], C[WAVES][32][32];
  memset(&io, 0, sizeof io);
  for (int w = 0; w < WAVES; w++) {
    for (int i = 0; i < m; i++)
      for (int p = 0; p < k; p++) {
        A[w][i][p] = rand_int(&rng, -8, 8);
        put(&io.a[w * 64 + in_lane(o, i, p)], o->kind, in_elem(o, p), A[w][i][p]);
      }
    for (int p = 0; p < k; p++)
      for (int j = 0; j < n; j++) {
        B[w][p][j] = rand_int(&rng, -8, 8);
        put(&io.b[w * 64 + in_lane(o, j, p)], o->kind, in_elem(o, p), B[w][p][j]);
      }
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) {
        C[w][i][j] = rand_int(&rng, -100, 100);
        io.c[(w * 64 + d_lane(o, i, j)) * 16 + d_reg(o, i)] = (float)C[w][i][j];
      }
  }
  run_probe(op, &io);
  for (int w = 0; w < WAVES; w++) {
    unsigned char seen[64][16];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) {
        double want = C[w][i][j];
        for (int p = 0; p < k; p++) want += A[w][i][p] * B[w][p][j];
        const int l = d_lane(o, i, j), r = d_reg(o, i);
        ck_assert_msg(l >= 0 && l < 64 && r >= 0 && r < o->nregs, "%s: D[%d][%d] maps outside", o->name, i, j);
        ck_assert_msg(!seen[l][r], "%s: two elements of D map to lane %d register %d", o->name, l, r);
        seen[l][r] = 1;
        const float got = io.d[(w * 64 + l) * 16 + r];
        ck_assert_msg((double)got == want,
                      "%s (seed 0x%llx): wave %d D[%d][%d] (lane %d, register %d) = %g, expected %g",
                      o->name, (unsigned long long)g_seed, w, i, j, l, r, (double)got, want);
      }
  }
}
END_TEST

static Suite *mfma_suite(void) {
  Suite *s = suite_create("amd_mfma");
  TCase *tc = tcase_create("layouts");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_one_hot, 0, 2 * N_HAND);
  tcase_add_loop_test(tc, test_exact, 0, 12);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  print_seed("test_amd_mfma", (unsigned long long)g_seed);
  return run_suite("test_amd_mfma", mfma_suite());
}
#else
/* MFMA exists on AMD CDNA only: nothing of this suite runs on this backend. */
int main(void) {
  (void)g_seed;
  return skip_suite("test_amd_mfma", "MFMA exists on AMD CDNA only, not on the %s backend",
                    gp_backend_name());
}
#endif
