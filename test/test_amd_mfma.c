/*
 * test_amd_mfma.c - the MFMA wrappers of gpuport/amd_mfma.h against hand-computed lane
 * layouts, through the lane probe of `gpuport selftest --hardware` (cli/probe_mfma.c
 * over kernels/mfma/probe_mfma.cu: the CPU emulation on the cpu backend, the real
 * instructions on an AMD GPU with the hip backend).
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
 * 2. exact (the probe itself, probe_mfma_exact): random small nonzero integers in A, B
 *    and C (exact in bf16, f16 and f32, and every sum exact in f32, so the comparison is
 *    exact whatever the summation order), two wavefronts with different data; every D
 *    register compared, and the map from (i, j) to (lane, register) checked to be a
 *    bijection; and the probe forced to fail.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuport.h>

#include "check_util.h"
#include "probe.h"
#include "ref.h"
#include "ref_lanes.h"

static uint64_t g_seed;

#if defined(GP_BUILD_CPU) || defined(GP_BUILD_HIP)
/* The forward maps of ref/ref_lanes.h for one of the probe's forms. */
static int in_lane(const probe_mfma_op_t *o, int x, int k) { return gp_ref_mfma_in_lane(o->m, o->per, x, k); }
static int in_elem(const probe_mfma_op_t *o, int k) { return gp_ref_mfma_in_elem(o->per, k); }
static int d_reg(const probe_mfma_op_t *o, int i) { return gp_ref_mfma_d_reg(o->m, i); }
static int d_lane(const probe_mfma_op_t *o, int i, int j) { return gp_ref_mfma_d_lane(o->m, i, j); }

/* ---- 1. one-hot products at hand-computed places --------------------------------------- */
typedef struct hand {
  int op;                 /* index into probe_mfma_ops */
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
  const probe_mfma_op_t *o = &probe_mfma_ops[h->op];
  static probe_mfma_io_t io;
  memset(&io, 0, sizeof io);
  /* Wave 1 gets the same one-hot data shifted by nothing: both waves must agree. */
  for (int w = 0; w < PROBE_MFMA_WAVES; w++) {
    probe_mfma_put(&io.a[w * 64 + h->a_lane], o->kind, h->a_elem, 1.0);
    probe_mfma_put(&io.b[w * 64 + h->b_lane], o->kind, h->b_elem, 1.0);
  }
  OK(probe_mfma_run(h->op + 6 * spelling, &io));
  for (int w = 0; w < PROBE_MFMA_WAVES; w++)
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

/* ---- 2. exact products of random integer matrices: the probe of selftest --hardware -- */
START_TEST(test_exact) {
  probe_res_t r;
  probe_mfma_exact(&r, g_seed ^ (0x51ed27u * (uint64_t)(_i + 1)), _i);
  ck_assert_msg(r.status == PROBE_PASS, "%s (seed 0x%llx)", r.detail, (unsigned long long)g_seed);
}
END_TEST

/* A probe whose first register is counted as differing fails and names it. */
START_TEST(test_probe_can_fail) {
  probe_res_t r;
  probe_set_inject(true);
  probe_mfma_exact(&r, g_seed, 1);
  probe_set_inject(false);
  ck_assert_int_eq(r.status, PROBE_FAIL);
  ck_assert_msg(strstr(r.detail, "differ)") != NULL, "%s", r.detail);
}
END_TEST

static Suite *mfma_suite(void) {
  Suite *s = suite_create("amd_mfma");
  TCase *tc = tcase_create("layouts");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_one_hot, 0, 2 * N_HAND);
  tcase_add_loop_test(tc, test_exact, 0, 12);
  tcase_add_test(tc, test_probe_can_fail);
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
