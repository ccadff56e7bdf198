/*
 * test_nv_wgmma.c - the sm_90a wrappers (gpuport/nv_wgmma.h): wgmma.mma_async m64nNk16
 * from shared-memory descriptors in every swizzle mode, K-major and MN-major, f16 and
 * bf16, with and without the accumulator; TMA 2D and 3D loads and stores with swizzle
 * and out-of-bounds elements; mbarrier phases, transaction bytes and a producer/consumer
 * ring; the emulation's check of a stage overwritten under a wgmma in flight. Kernels:
 * test/kernels/kt_nv_wgmma.cu.
 *
 * The shared-memory images and the expected registers are built here from the PTX ISA's
 * layouts written out again (swizzle atoms, the m64nNk16 accumulator fragment), plus
 * literal byte positions and register values worked out by hand. Operands are small
 * integers, so products and sums are exact and compared bit for bit. On the cpu backend
 * this tests the emulation; on an sm_90 GPU the same suite runs the real instructions
 * (other GPUs and HIP skip, exit 77).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gpuport.h>

#include "check_util.h"
#include "ref.h"

#if !defined(GP_BUILD_HIP)
#include "kernels/sm90a/sm90a.h"

GP_KERNEL_DECLARE(kt_wgmma);
GP_KERNEL_DECLARE(kt_wgmma_hazard);
GP_KERNEL_DECLARE(kt_tma_load);
GP_KERNEL_DECLARE(kt_tma_store);
GP_KERNEL_DECLARE(kt_mbarrier_phases);
GP_KERNEL_DECLARE(kt_mbarrier_tx);
GP_KERNEL_DECLARE(kt_mbarrier_ring);

static uint64_t g_seed;

static void *upload(const void *h, size_t bytes) {
  void *d = NULL;
  OK(gp_malloc(&d, bytes));
  OK(gp_memcpy(d, h, bytes));
  return d;
}

static uint16_t enc(int bf16, int v) {
  return bf16 ? gp_bf16_from_f32((float)v).bits : gp_f16_from_f32((float)v).bits;
}

/* The swizzle of shared address a, w bytes per row (PTX ISA: 16-byte chunks XORed with
 * address bits 7 and up). */
static size_t swz(size_t a, int w) { return w ? a ^ (((a >> 7) & (size_t)(w / 16 - 1)) << 4) : a; }

/* Byte position of element (x, k) of a wgmma operand image: x along M or N, k along K;
 * written per swizzle atom (8 rows of w bytes) rather than per address. */
static size_t img_pos(int mn_major, int w, int x, int k, int lbo, int sbo) {
  size_t p;
  if (!mn_major && !w) { /* core matrices of 8 rows x 16 bytes */
    p = (size_t)(x / 8) * sbo + (size_t)(k / 8) * lbo + 16 * (x % 8) + 2 * (k % 8);
  } else if (!mn_major) { /* atom rows are rows of the operand, k along the row */
    p = (size_t)(x / 8) * sbo + (size_t)w * (x % 8) + 2 * k;
  } else if (!w) { /* core matrices of 8 k-rows x 8 x-values */
    p = (size_t)(x / 8) * sbo + (size_t)(k / 8) * lbo + 16 * (k % 8) + 2 * (x % 8);
  } else { /* atom rows are k-rows, w / 2 x-values along each */
    p = (size_t)(x / (w / 2)) * lbo + (size_t)(k / 8) * sbo + (size_t)w * (k % 8) + 2 * (x % (w / 2));
  }
  return swz(p, w);
}

/* Byte positions worked out by hand from the PTX ISA's swizzle figures. */
START_TEST(test_layout_by_hand) {
  /* K-major 128B: (1, 0) is row 1 chunk 0 -> chunk 1: 128 + 16 */
  ck_assert_uint_eq(img_pos(0, 128, 1, 0, 16, 1024), 144);
  /* (9, 8): second atom, row 1, chunk 1 -> chunk 0 */
  ck_assert_uint_eq(img_pos(0, 128, 9, 8, 16, 1024), 1024 + 128);
  /* (7, 3): row 7, chunk 0 -> chunk 7, element 3 */
  ck_assert_uint_eq(img_pos(0, 128, 7, 3, 16, 1024), 7 * 128 + 7 * 16 + 6);
  /* K-major 32B: rows of 32 bytes; rows 4..7 have address bit 7 set: chunks swap */
  ck_assert_uint_eq(img_pos(0, 32, 3, 0, 16, 256), 96);
  ck_assert_uint_eq(img_pos(0, 32, 4, 0, 16, 256), 128 + 16);
  /* MN-major 64B: k-row 2, x 9 is chunk 1 -> 1 ^ 0 (bits 7.. of 128 are 1: chunk ^ 1) */
  ck_assert_uint_eq(img_pos(1, 64, 9, 2, 1024, 512), 128 + ((16 + 2) ^ 16));
  /* no swizzle, K-major: (9, 10) = core matrix (1, 1) row 1 column 2 */
  ck_assert_uint_eq(img_pos(0, 0, 9, 10, 128, 256), 256 + 128 + 16 + 4);
}
END_TEST

/* ---- wgmma ------------------------------------------------------------------------------- */

typedef struct {
  int swz_a, swz_b, ta, tb, bf16, n, kbase, scale_d;
} wg_case_t;

/* Runs one case: A 64 x K, B n x K (K = 64 when kbase > 0, else 16), D = A[:, kbase..+16]
 * B[:, kbase..+16]^T (+ C). Fills a[][] / b[][] when given, else random. */
static void run_wgmma(const wg_case_t *c, const int (*fixed_a)[64], const int (*fixed_b)[64], float *out_d,
                      double (*want)[64]) {
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed + (uint64_t)(c->swz_a * 7 + c->swz_b * 3 + c->ta * 5 + c->tb * 11 + c->bf16 + c->n + c->kbase));
  const int kk = c->kbase ? 64 : 16, n = c->n;
  static int A[64][64], B[64][64];
  for (int x = 0; x < 64; x++)
    for (int k = 0; k < kk; k++) {
      A[x][k] = fixed_a ? fixed_a[x][k] : (int)(gp_ref_rng_next(&rng) % 9) - 4;
      B[x][k] = fixed_b ? fixed_b[x][k] : (int)(gp_ref_rng_next(&rng) % 9) - 4;
    }
  /* strides: K-major swizzled atoms stacked along x; MN-major swizzled: two k-atoms per
   * x-atom; no swizzle: core matrices, k-groups adjacent for A, x-groups adjacent for B */
  int lbo[2], sbo[2];
  const int swzv[2] = {c->swz_a, c->swz_b}, tv[2] = {c->ta, c->tb}, rows[2] = {64, n};
  unsigned char *img[2];
  size_t bytes[2];
  for (int o = 0; o < 2; o++) {
    const int w = swzv[o];
    if (!tv[o] && w) lbo[o] = 16, sbo[o] = 8 * w;
    else if (tv[o] && w) sbo[o] = 8 * w, lbo[o] = 8 * w * (kk / 8);
    else if (o == 0) lbo[o] = 128, sbo[o] = 128 * (kk / 8);
    else sbo[o] = 128, lbo[o] = 128 * ((rows[o] + 7) / 8);
    bytes[o] = 0;
    for (int x = 0; x < rows[o]; x++)
      for (int k = 0; k < kk; k++) {
        size_t p = img_pos(tv[o], w, x, k, lbo[o], sbo[o]) + 2;
        if (p > bytes[o]) bytes[o] = p;
      }
    bytes[o] = (bytes[o] + 1023) / 1024 * 1024;
    img[o] = calloc(bytes[o], 1);
    for (int x = 0; x < rows[o]; x++)
      for (int k = 0; k < kk; k++) {
        uint16_t v = enc(c->bf16, o == 0 ? A[x][k] : B[x][k]);
        memcpy(img[o] + img_pos(tv[o], w, x, k, lbo[o], sbo[o]), &v, 2);
      }
  }
  /* the k-slice kbase .. kbase + 15 of a K-major swizzled tile starts 2 kbase bytes on */
  const int a_off = c->kbase * 2, b_off = c->kbase * 2;
  if (c->kbase) ck_assert(!c->ta && !c->tb && c->swz_a == 128 && c->swz_b == 128);
  float C[128 * 32], poison[128 * 32];
  for (int i = 0; i < 128 * 32; i++) C[i] = (float)((int)(gp_ref_rng_next(&rng) % 21) - 10), poison[i] = -7777.0f;
  for (int r = 0; r < 64; r++)
    for (int col = 0; col < n; col++) {
      double s = 0;
      for (int k = 0; k < 16; k++) s += (double)A[r][c->kbase + k] * B[col][c->kbase + k];
      want[r][col] = s;
    }
  /* the accumulator fragment: thread t, register i -> D[16 (t / 32) + g + 8 ((i / 2) % 2)][8 (i / 4) + 2 q + i % 2] */
  for (int t = 0; t < 128; t++)
    for (int i = 0; i < n / 2; i++) {
      const int l = t % 32, r = 16 * (t / 32) + l / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * (l % 4) + i % 2;
      if (c->scale_d) want[r][col] += C[t * (n / 2) + i];
    }
  void *da = upload(img[0], bytes[0]), *db = upload(img[1], bytes[1]);
  void *dc = upload(C, sizeof C), *dout = upload(poison, sizeof poison);
  int mode = c->bf16 | c->ta << 1 | c->tb << 2, nn = n, ab = (int)bytes[0], bb = (int)bytes[1];
  int sa = c->swz_a, sb = c->swz_b, sd = c->scale_d;
  void *args[] = {&mode, &nn, &da, &ab, &db, &bb, (void *)&a_off, &lbo[0], &sbo[0], &sa, (void *)&b_off, &lbo[1], &sbo[1], &sb, &sd, &dc, &dout};
  const size_t smem = bytes[0] + bytes[1] + 1024;
  if (smem > 48 * 1024) OK(gp_kernel_set_max_dynamic_shared(GP_KERNEL_REF(kt_wgmma), smem));
  OK(gp_launch(GP_KERNEL_REF(kt_wgmma), gp_dim3(1, 1, 1), gp_dim3(128, 1, 1), smem, NULL, args));
  OK(gp_device_synchronize());
  OK(gp_memcpy(out_d, dout, sizeof poison));
  gp_free(da), gp_free(db), gp_free(dc), gp_free(dout);
  free(img[0]), free(img[1]);
}

static void check_d(const wg_case_t *c, const float *d, double (*want)[64]) {
  const int n = c->n;
  for (int t = 0; t < 128; t++)
    for (int i = 0; i < n / 2; i++) {
      const int l = t % 32, r = 16 * (t / 32) + l / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * (l % 4) + i % 2;
      ck_assert_msg(d[t * (n / 2) + i] == (float)want[r][col],
                    "swz %d/%d trans %d/%d %s n %d kbase %d: thread %d d%d (D[%d][%d]) = %g, want %g (seed 0x%llx)",
                    c->swz_a, c->swz_b, c->ta, c->tb, c->bf16 ? "bf16" : "f16", n, c->kbase, t, i, r, col,
                    (double)d[t * (n / 2) + i], want[r][col], (unsigned long long)g_seed);
    }
}

/* Every swizzle mode with each majorness of A and B (loop index: swizzle x ta x tb). */
START_TEST(test_wgmma_layouts) {
  static const int sw[4] = {0, 32, 64, 128};
  wg_case_t c = {sw[_i / 4], sw[_i / 4], (_i >> 1) & 1, _i & 1, _i & 1, (_i % 3) ? 64 : 8, 0, (_i % 2)};
  static float d[128 * 32];
  static double want[64][64];
  run_wgmma(&c, NULL, NULL, d, want);
  check_d(&c, d, want);
}
END_TEST

/* Mixed swizzles of A and B, and k-slices inside a 128-byte row (the start address
 * advanced by 32 and 96 bytes, as a GEMM walks a 64-wide K tile). */
START_TEST(test_wgmma_mixed_and_kslices) {
  static float d[128 * 32];
  static double want[64][64];
  wg_case_t c1 = {128, 0, 0, 1, 1, 64, 0, 1};
  run_wgmma(&c1, NULL, NULL, d, want);
  check_d(&c1, d, want);
  wg_case_t c2 = {32, 64, 1, 0, 0, 8, 0, 0};
  run_wgmma(&c2, NULL, NULL, d, want);
  check_d(&c2, d, want);
  for (int kb = 16; kb < 64; kb += 32) {
    wg_case_t c3 = {128, 128, 0, 0, kb == 16, 64, kb, 0};
    run_wgmma(&c3, NULL, NULL, d, want);
    check_d(&c3, d, want);
  }
}
END_TEST

/* A = identity on its first 16 rows, B[c][k] = 100 k + c: registers known by hand. */
START_TEST(test_wgmma_by_hand) {
  static int fa[64][64], fb[64][64];
  for (int x = 0; x < 64; x++)
    for (int k = 0; k < 64; k++) fa[x][k] = x == k, fb[x][k] = x < 8 ? (100 * k + x) % 2048 : 0;
  wg_case_t c = {128, 128, 0, 0, 0, 8, 0, 0};
  static float d[128 * 32];
  static double want[64][64];
  run_wgmma(&c, fa, fb, d, want);
  /* thread 0 (g 0, q 0): D[0][0], D[0][1], D[8][0], D[8][1] = B[0][0], B[1][0], B[0][8], B[1][8] */
  ck_assert(d[0] == 0.0f && d[1] == 1.0f && d[2] == 800.0f && d[3] == 801.0f);
  /* thread 5 (g 1, q 1): D[1][2], D[1][3], D[9][2], D[9][3] = 102, 103, 902, 903 */
  ck_assert(d[20] == 102.0f && d[21] == 103.0f && d[22] == 902.0f && d[23] == 903.0f);
  /* thread 32 (warp 1, rows 16..): A rows 16.. are zero */
  ck_assert(d[128] == 0.0f);
  check_d(&c, d, want);
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

/* ---- TMA -------------------------------------------------------------------------------- */

typedef struct {
  unsigned rank;
  uint64_t dims[3];
  uint64_t pitch[2]; /* elements per row, rows per plane (allocation) */
  uint32_t box[3];
  int swizzle;
  int c[3];
} tma_case_t;

static const tma_case_t k_tma[] = {
    {2, {40, 20, 1}, {48, 20}, {64, 8, 1}, 128, {16, 15, 0}},  /* right and bottom edges */
    {2, {40, 20, 1}, {48, 20}, {32, 4, 1}, 64, {-8, -2, 0}},   /* left and top edges */
    {2, {40, 20, 1}, {40, 20}, {8, 5, 1}, 0, {30, 3, 0}},      /* no swizzle, interior and right */
    {3, {16, 6, 3}, {16, 6}, {16, 4, 2}, 32, {0, 4, 2}},       /* 3D: rows and planes past the end */
    {3, {24, 5, 4}, {32, 6}, {64, 2, 3}, 128, {-40, 1, -1}},   /* 3D: box wider than the tensor */
};

/* The global element a box element (i0, i1, i2) maps to, or -1 when outside the tensor. */
static long tma_elem(const tma_case_t *t, unsigned i0, unsigned i1, unsigned i2) {
  const long g0 = t->c[0] + (long)i0, g1 = t->c[1] + (long)i1, g2 = t->c[2] + (long)i2;
  if (g0 < 0 || g1 < 0 || g2 < 0 || g0 >= (long)t->dims[0] || g1 >= (long)t->dims[1] || g2 >= (long)t->dims[2])
    return -1;
  return g0 + (long)t->pitch[0] * (g1 + (long)t->pitch[1] * g2);
}

static void tma_map(const tma_case_t *t, void *dev, gp_nv_tensor_map_t *tm) {
  const uint64_t strides[2] = {2 * t->pitch[0], 2 * t->pitch[0] * t->pitch[1]};
  OK(gp__nv_tensor_map_encode(tm, 2, t->rank, dev, t->dims, strides, t->box, t->swizzle));
}

START_TEST(test_tma_load) {
  const tma_case_t *t = &k_tma[_i];
  const size_t elems = t->pitch[0] * t->pitch[1] * t->dims[2];
  uint16_t *g = malloc(elems * 2);
  for (size_t i = 0; i < elems; i++) g[i] = (uint16_t)(i * 7 + 1); /* never zero */
  void *dg = upload(g, elems * 2);
  gp_nv_tensor_map_t tm;
  tma_map(t, dg, &tm);
  const int box_bytes = (int)(2 * t->box[0] * t->box[1] * t->box[2]);
  unsigned char *poison = malloc((size_t)box_bytes), *got = malloc((size_t)box_bytes);
  memset(poison, 0xee, (size_t)box_bytes);
  void *dout = upload(poison, (size_t)box_bytes);
  int rank = (int)t->rank, c0 = t->c[0], c1 = t->c[1], c2 = t->c[2];
  void *args[] = {&tm, &rank, &c0, &c1, &c2, (void *)&box_bytes, &dout};
  OK(gp_launch(GP_KERNEL_REF(kt_tma_load), gp_dim3(1, 1, 1), gp_dim3(32, 1, 1), (size_t)box_bytes + 2048, NULL, args));
  OK(gp_device_synchronize());
  OK(gp_memcpy(got, dout, (size_t)box_bytes));
  const unsigned row = 2 * t->box[0];
  for (unsigned i2 = 0; i2 < t->box[2]; i2++)
    for (unsigned i1 = 0; i1 < t->box[1]; i1++)
      for (unsigned i0 = 0; i0 < t->box[0]; i0++) {
        const size_t lin = (size_t)(i2 * t->box[1] + i1) * row + 2 * i0;
        const long e = tma_elem(t, i0, i1, i2);
        uint16_t v;
        memcpy(&v, got + swz(lin, t->swizzle), 2);
        const uint16_t want = e < 0 ? 0 : g[e];
        ck_assert_msg(v == want, "case %d box (%u, %u, %u): 0x%04x, want 0x%04x", _i, i0, i1, i2, v, want);
      }
  gp_free(dg), gp_free(dout);
  free(g), free(poison), free(got);
}
END_TEST

START_TEST(test_tma_store) {
  const tma_case_t *t = &k_tma[_i];
  const size_t elems = t->pitch[0] * t->pitch[1] * t->dims[2];
  uint16_t *g = malloc(elems * 2), *got = malloc(elems * 2);
  for (size_t i = 0; i < elems; i++) g[i] = 0xabcd;
  void *dg = upload(g, elems * 2);
  gp_nv_tensor_map_t tm;
  tma_map(t, dg, &tm);
  const int box_bytes = (int)(2 * t->box[0] * t->box[1] * t->box[2]);
  unsigned char *img = malloc((size_t)box_bytes);
  for (int i = 0; i < box_bytes; i++) img[i] = (unsigned char)(i * 13 + 5);
  void *dimg = upload(img, (size_t)box_bytes);
  int rank = (int)t->rank, c0 = t->c[0], c1 = t->c[1], c2 = t->c[2];
  void *args[] = {&tm, &rank, &c0, &c1, &c2, (void *)&box_bytes, &dimg};
  OK(gp_launch(GP_KERNEL_REF(kt_tma_store), gp_dim3(1, 1, 1), gp_dim3(32, 1, 1), (size_t)box_bytes + 1024, NULL, args));
  OK(gp_device_synchronize());
  OK(gp_memcpy(got, dg, elems * 2));
  for (size_t i = 0; i < elems; i++) g[i] = 0xabcd;
  const unsigned row = 2 * t->box[0];
  for (unsigned i2 = 0; i2 < t->box[2]; i2++)
    for (unsigned i1 = 0; i1 < t->box[1]; i1++)
      for (unsigned i0 = 0; i0 < t->box[0]; i0++) {
        const long e = tma_elem(t, i0, i1, i2);
        if (e >= 0) memcpy(&g[e], img + swz((size_t)(i2 * t->box[1] + i1) * row + 2 * i0, t->swizzle), 2);
      }
  for (size_t i = 0; i < elems; i++)
    ck_assert_msg(got[i] == g[i], "case %d element %zu: 0x%04x, want 0x%04x", _i, i, got[i], g[i]);
  gp_free(dg), gp_free(dimg);
  free(g), free(got), free(img);
}
END_TEST

/* Tensor maps that break the rules are refused with the documented status. */
START_TEST(test_tma_bad_maps) {
  gp_nv_tensor_map_t tm;
  uint64_t dims[2] = {40, 20}, strides[1] = {96};
  uint32_t box[2] = {64, 8};
  void *d = NULL;
  OK(gp_malloc(&d, 4096));
  ck_assert_int_eq(gp__nv_tensor_map_encode(&tm, 2, 2, d, dims, strides, box, 64), GP_ERROR_INVALID_VALUE);
  strides[0] = 90;
  ck_assert_int_eq(gp__nv_tensor_map_encode(&tm, 2, 2, d, dims, strides, box, 128), GP_ERROR_INVALID_VALUE);
  strides[0] = 96;
  ck_assert_int_eq(gp__nv_tensor_map_encode(&tm, 2, 2, (char *)d + 2, dims, strides, box, 128), GP_ERROR_INVALID_VALUE);
  box[1] = 300;
  ck_assert_int_eq(gp__nv_tensor_map_encode(&tm, 2, 2, d, dims, strides, box, 128), GP_ERROR_INVALID_VALUE);
  ck_assert(strlen(gp_last_error_message()) > 0);
  gp_free(d);
}
END_TEST

/* ---- mbarrier ----------------------------------------------------------------------------- */

START_TEST(test_mbarrier_phases) {
  int poison[8], got[8];
  for (int i = 0; i < 8; i++) poison[i] = -1;
  int *d = upload(poison, sizeof poison);
  void *args[] = {&d};
  OK(gp_launch(GP_KERNEL_REF(kt_mbarrier_phases), gp_dim3(1, 1, 1), gp_dim3(32, 1, 1), 0, NULL, args));
  OK(gp_device_synchronize());
  OK(gp_memcpy(got, d, sizeof got));
  const int want[6] = {0, 0, 1, 0, 0, 5};
  for (int i = 0; i < 6; i++) ck_assert_msg(got[i] == want[i], "step %d: %d, want %d", i, got[i], want[i]);
  /* the transaction bytes: the phase completes when the TMA copy lands */
  tma_case_t t = {2, {32, 2, 1}, {32, 2}, {32, 1, 1}, 64, {0, 0, 0}};
  uint16_t g[64];
  for (int i = 0; i < 64; i++) g[i] = (uint16_t)(i + 1);
  void *dg = upload(g, sizeof g);
  gp_nv_tensor_map_t tm;
  tma_map(&t, dg, &tm);
  OK(gp_memcpy(d, poison, sizeof poison));
  void *args2[] = {&tm, &d};
  OK(gp_launch(GP_KERNEL_REF(kt_mbarrier_tx), gp_dim3(1, 1, 1), gp_dim3(32, 1, 1), 2048, NULL, args2));
  OK(gp_device_synchronize());
  OK(gp_memcpy(got, d, sizeof got));
  ck_assert_msg(got[0] == 0 && got[1] == 1 && got[2] == 0, "tx: %d %d %d", got[0], got[1], got[2]);
  gp_free(d), gp_free(dg);
}
END_TEST

/* A producer warp and a consumer warp through a two-slot ring, 7 items (3 wraps). */
START_TEST(test_mbarrier_ring) {
  enum { ITERS = 7 };
  int poison[32 * ITERS], got[32 * ITERS];
  for (int i = 0; i < 32 * ITERS; i++) poison[i] = -1;
  int *d = upload(poison, sizeof poison), iters = ITERS;
  void *args[] = {&iters, &d};
  OK(gp_launch(GP_KERNEL_REF(kt_mbarrier_ring), gp_dim3(1, 1, 1), gp_dim3(64, 1, 1), 0, NULL, args));
  OK(gp_device_synchronize());
  OK(gp_memcpy(got, d, sizeof got));
  for (int k = 0; k < ITERS; k++)
    for (int l = 0; l < 32; l++)
      ck_assert_msg(got[32 * k + l] == 1000 * k + l, "item %d lane %d: %d", k, l, got[32 * k + l]);
  gp_free(d);
}
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
  tcase_add_loop_test(tc, test_tma_load, 0, (int)(sizeof k_tma / sizeof k_tma[0]));
  tcase_add_loop_test(tc, test_tma_store, 0, (int)(sizeof k_tma / sizeof k_tma[0]));
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
      (gp_device_get_props(&props, 0) != GP_SUCCESS || props.compute_capability_major != 9))
    return skip_suite("test_nv_wgmma", "device 0 is %s, not sm_90", props.arch);
  return run_suite("test_nv_wgmma", nv_suite());
}

#else /* HIP: the wrappers are NVIDIA-only */
int main(void) { return skip_suite("test_nv_wgmma", "NVIDIA instructions, not built for HIP"); }
#endif
