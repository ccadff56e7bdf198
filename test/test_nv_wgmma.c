/*
 * test_nv_wgmma.c - the sm_90a wrappers (gpuport/nv_wgmma.h): wgmma.mma_async m64nNk16
 * from shared-memory descriptors in every swizzle mode, K-major and MN-major, f16 and
 * bf16, with and without the accumulator; TMA 2D and 3D loads and stores with swizzle
 * and out-of-bounds elements; mbarrier phases, transaction bytes and a producer/consumer
 * ring; the emulation's check of a stage overwritten under a wgmma in flight; the tensor
 * maps gp_nv_tensor_map_encode refuses.
 *
 * The lane probes are the ones `gpuport selftest --hardware` runs (cli/probe_sm90a.c
 * over kernels/sm90a/probe_sm90a.cu): the shared-memory images and the expected
 * registers come from the PTX ISA's layouts as ref/ref_lanes.h writes them (swizzle
 * atoms, the m64nNk16 accumulator fragment). This suite adds byte positions and register
 * values worked out by hand from the ISA's figures, so the layouts themselves are
 * checked. Operands are small integers, so products and sums are exact and compared bit
 * for bit. On the cpu backend this tests the emulation; on an sm_90 GPU the same suite
 * runs the real instructions (other GPUs and HIP skip, exit 77).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gpuport.h>
#include <gpuport/nv_wgmma.h>

#include "check_util.h"
#include "probe.h"
#include "ref.h"
#include "ref_lanes.h"

#if !defined(GP_BUILD_HIP)
GP_KERNEL_DECLARE(kt_wgmma_hazard);

static uint64_t g_seed;

#define PASSES(call)                                                                       \
  do {                                                                                     \
    probe_res_t r_;                                                                        \
    call;                                                                                  \
    ck_assert_msg(r_.status == PROBE_PASS, "%s: %s (seed 0x%llx)", #call, r_.detail,      \
                  (unsigned long long)g_seed);                                             \
  } while (0)

/* Byte positions worked out by hand from the PTX ISA's swizzle figures. */
START_TEST(test_layout_by_hand) {
  /* K-major 128B: (1, 0) is row 1 chunk 0 -> chunk 1: 128 + 16 */
  ck_assert_uint_eq(gp_ref_wgmma_pos(0, 128, 1, 0, 16, 1024), 144);
  /* (9, 8): second atom, row 1, chunk 1 -> chunk 0 */
  ck_assert_uint_eq(gp_ref_wgmma_pos(0, 128, 9, 8, 16, 1024), 1024 + 128);
  /* (7, 3): row 7, chunk 0 -> chunk 7, element 3 */
  ck_assert_uint_eq(gp_ref_wgmma_pos(0, 128, 7, 3, 16, 1024), 7 * 128 + 7 * 16 + 6);
  /* K-major 32B: rows of 32 bytes; rows 4..7 have address bit 7 set: chunks swap */
  ck_assert_uint_eq(gp_ref_wgmma_pos(0, 32, 3, 0, 16, 256), 96);
  ck_assert_uint_eq(gp_ref_wgmma_pos(0, 32, 4, 0, 16, 256), 128 + 16);
  /* MN-major 64B: k-row 2, x 9 is chunk 1 -> 1 ^ 0 (bits 7.. of 128 are 1: chunk ^ 1) */
  ck_assert_uint_eq(gp_ref_wgmma_pos(1, 64, 9, 2, 1024, 512), 128 + ((16 + 2) ^ 16));
  /* no swizzle, K-major: (9, 10) = core matrix (1, 1) row 1 column 2 */
  ck_assert_uint_eq(gp_ref_wgmma_pos(0, 0, 9, 10, 128, 256), 256 + 128 + 16 + 4);
  /* the accumulator: thread 37 (warp 1, g 1, q 1), d6 holds D[16 + 1 + 8][8 + 2 + 0] */
  int r, c;
  gp_ref_wgmma_d(37, 6, &r, &c);
  ck_assert(r == 25 && c == 10);
  /* TMA: box (64 x 8 at (16, 15)) elements inside and outside a 40 x 20 tensor of pitch 48 */
  const gp_ref_tma_box_t t = {2, {40, 20, 1}, {48, 20}, {64, 8, 1}, 128, {16, 15, 0}};
  ck_assert_int_eq(gp_ref_tma_elem(&t, 23, 4, 0), 39 + 48 * 19); /* the last element inside */
  ck_assert_int_eq(gp_ref_tma_elem(&t, 23, 5, 0), -1);           /* row 20: past the end */
  ck_assert_int_eq(gp_ref_tma_elem(&t, 24, 0, 0), -1);           /* column 40: past the end */
  ck_assert_int_eq(gp_ref_tma_elem(&t, 0, 0, 0), 16 + 48 * 15);
  /* its shared bytes: element (1, 1) is row 1 (128 bytes on), chunk 0 -> chunk 1 */
  ck_assert_uint_eq(gp_ref_tma_smem(&t, 1, 1, 0), 128 + 16 + 2);
}
END_TEST

/* ---- wgmma ------------------------------------------------------------------------------- */

/* Every swizzle mode with each majorness of A and B (loop index: swizzle x ta x tb). */
START_TEST(test_wgmma_layouts) {
  static const int sw[4] = {0, 32, 64, 128};
  const probe_wgmma_case_t c = {sw[_i / 4], sw[_i / 4], (_i >> 1) & 1, _i & 1, _i & 1, (_i % 3) ? 64 : 8, 0, (_i % 2)};
  PASSES(probe_sm90a_wgmma(&r_, g_seed + (uint64_t)_i, &c, NULL, NULL, NULL));
}
END_TEST

/* Mixed swizzles of A and B, and k-slices inside a 128-byte row (the start address
 * advanced by 32 and 96 bytes, as a GEMM walks a 64-wide K tile). */
START_TEST(test_wgmma_mixed_and_kslices) {
  const probe_wgmma_case_t c1 = {128, 0, 0, 1, 1, 64, 0, 1}, c2 = {32, 64, 1, 0, 0, 8, 0, 0};
  PASSES(probe_sm90a_wgmma(&r_, g_seed + 100, &c1, NULL, NULL, NULL));
  PASSES(probe_sm90a_wgmma(&r_, g_seed + 101, &c2, NULL, NULL, NULL));
  for (int kb = 16; kb < 64; kb += 32) {
    const probe_wgmma_case_t c3 = {128, 128, 0, 0, kb == 16, 64, kb, 0};
    PASSES(probe_sm90a_wgmma(&r_, g_seed + 102 + (uint64_t)kb, &c3, NULL, NULL, NULL));
  }
}
END_TEST

/* A = identity on its first 16 rows, B[c][k] = 100 k + c: registers known by hand. */
START_TEST(test_wgmma_by_hand) {
  static int fa[64][64], fb[64][64];
  for (int x = 0; x < 64; x++)
    for (int k = 0; k < 64; k++) fa[x][k] = x == k, fb[x][k] = x < 8 ? (100 * k + x) % 2048 : 0;
  const probe_wgmma_case_t c = {128, 128, 0, 0, 0, 8, 0, 0};
  static float d[128 * 32];
  PASSES(probe_sm90a_wgmma(&r_, g_seed, &c, fa, fb, d));
  /* thread 0 (g 0, q 0): D[0][0], D[0][1], D[8][0], D[8][1] = B[0][0], B[1][0], B[0][8], B[1][8] */
  ck_assert(d[0] == 0.0f && d[1] == 1.0f && d[2] == 800.0f && d[3] == 801.0f);
  /* thread 5 (g 1, q 1): D[1][2], D[1][3], D[9][2], D[9][3] = 102, 103, 902, 903 */
  ck_assert(d[20] == 102.0f && d[21] == 103.0f && d[22] == 902.0f && d[23] == 903.0f);
  /* thread 32 (warp 1, rows 16..): A rows 16.. are zero */
  ck_assert(d[128] == 0.0f);
}
END_TEST

/* The emulation fails a launch whose wgmma operands change before wgmma.wait_group. */
START_TEST(test_wgmma_hazard) {
  SKIP_IF(gp_backend() != GP_BACKEND_CPU,
          "undefined behaviour on a GPU (PTX ISA, wgmma.wait_group)");
  float *out = NULL;
  OK(gp_malloc((void **)&out, 128 * sizeof(float)));
  void *args[] = {&out};
  OK(gp_launch(GP_KERNEL_REF(kt_wgmma_hazard), gp_dim3(1, 1, 1), gp_dim3(128, 1, 1), 6144, NULL, args));
  gp_status_t st = gp_device_synchronize();
  ck_assert_msg(st == GP_ERROR_LAUNCH_FAILED, "%s", gp_status_name(st));
  ck_assert_msg(strstr(gp_last_error_message(), "kt_wgmma_hazard") != NULL, "%s", gp_last_error_message());
  gp_free(out);
}
END_TEST

/* A probe whose first register is counted as differing fails and names it. */
START_TEST(test_probe_can_fail) {
  const probe_wgmma_case_t c = {128, 128, 0, 0, 1, 8, 0, 0};
  probe_res_t r;
  probe_set_inject(true);
  probe_sm90a_wgmma(&r, g_seed, &c, NULL, NULL, NULL);
  probe_set_inject(false);
  ck_assert_int_eq(r.status, PROBE_FAIL);
  ck_assert_msg(strstr(r.detail, "thread 0 d0") && strstr(r.detail, "(1 of 512 differ)"), "%s", r.detail);
}
END_TEST

/* ---- TMA -------------------------------------------------------------------------------- */

START_TEST(test_tma_load) { PASSES(probe_sm90a_tma_load(&r_, _i)); }
END_TEST

START_TEST(test_tma_store) { PASSES(probe_sm90a_tma_store(&r_, _i)); }
END_TEST

/* Tensor maps that break the rules are refused with the documented status, and the
 * message names the rule. */
START_TEST(test_tma_bad_maps) {
  gp_nv_tensor_map_t tm;
  uint64_t dims[2] = {40, 20}, strides[1] = {96};
  uint32_t box[2] = {64, 8};
  void *d = NULL;
  OK(gp_malloc(&d, 4096));
  FAILS(gp_nv_tensor_map_encode(&tm, 2, 2, d, dims, strides, box, 64), GP_ERROR_INVALID_VALUE, "swizzled");
  strides[0] = 90;
  FAILS(gp_nv_tensor_map_encode(&tm, 2, 2, d, dims, strides, box, 128), GP_ERROR_INVALID_VALUE, "stride");
  strides[0] = 96;
  FAILS(gp_nv_tensor_map_encode(&tm, 2, 2, (char *)d + 2, dims, strides, box, 128), GP_ERROR_INVALID_VALUE, "aligned");
  box[1] = 300;
  FAILS(gp_nv_tensor_map_encode(&tm, 2, 2, d, dims, strides, box, 128), GP_ERROR_INVALID_VALUE, "box");
  box[1] = 8;
  FAILS(gp_nv_tensor_map_encode(NULL, 2, 2, d, dims, strides, box, 128), GP_ERROR_INVALID_VALUE, "tm");
  FAILS(gp_nv_tensor_map_encode(&tm, 2, 2, d, NULL, strides, box, 128), GP_ERROR_INVALID_VALUE, "dims");
  FAILS(gp_nv_tensor_map_encode(&tm, 2, 2, d, dims, NULL, box, 128), GP_ERROR_INVALID_VALUE, "strides");
  FAILS(gp_nv_tensor_map_encode(&tm, 2, 4, d, dims, strides, box, 128), GP_ERROR_INVALID_VALUE, "rank");
  OK(gp_nv_tensor_map_encode(&tm, 2, 2, d, dims, strides, box, 128));
  gp_free(d);
}
END_TEST

/* ---- mbarrier ----------------------------------------------------------------------------- */

START_TEST(test_mbarrier_phases) {
  PASSES(probe_sm90a_mbarrier_phases(&r_));
  PASSES(probe_sm90a_mbarrier_tx(&r_));
}
END_TEST

/* A producer warp and a consumer warp through a two-slot ring, 7 items (3 wraps). */
START_TEST(test_mbarrier_ring) { PASSES(probe_sm90a_mbarrier_ring(&r_)); }
END_TEST

static Suite *nv_suite(void) {
  Suite *s = suite_create("nv_wgmma");
  TCase *tc = tcase_create("instructions");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_layout_by_hand);
  tcase_add_loop_test(tc, test_wgmma_layouts, 0, 16);
  tcase_add_test(tc, test_wgmma_mixed_and_kslices);
  tcase_add_test(tc, test_wgmma_by_hand);
  tcase_add_test(tc, test_wgmma_hazard);
  tcase_add_test(tc, test_probe_can_fail);
  tcase_add_loop_test(tc, test_tma_load, 0, probe_sm90a_tma_cases());
  tcase_add_loop_test(tc, test_tma_store, 0, probe_sm90a_tma_cases());
  tcase_add_test(tc, test_tma_bad_maps);
  tcase_add_test(tc, test_mbarrier_phases);
  tcase_add_test(tc, test_mbarrier_ring);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  print_seed("test_nv_wgmma", (unsigned long long)g_seed);
  /* On a GPU the instructions exist on compute capability 9.0 alone. */
  gp_device_props_t props;
  gp_device_props_init(&props);
  if (gp_backend() != GP_BACKEND_CPU && have_device() &&
      (gp_device_get_props(&props, 0) != GP_SUCCESS || props.compute_capability_major != 9 ||
       props.compute_capability_minor != 0))
    return skip_suite("test_nv_wgmma", "device 0 is %s, not sm_90", props.arch);
  return run_suite("test_nv_wgmma", nv_suite());
}

#else /* HIP: the wrappers are NVIDIA-only */
int main(void) { return skip_suite("test_nv_wgmma", "NVIDIA instructions, not built for HIP"); }
#endif
