/*
 * probe_sm90a.c - the sm_90a lane probes (probe.h) over kernels/sm90a/probe_sm90a.cu:
 * wgmma.mma_async m64nNk16 from shared-memory descriptors in every swizzle mode with
 * K-major and MN-major operands, TMA 2D and 3D loads and stores with out-of-bounds
 * elements, mbarrier phases, transaction bytes and a producer/consumer ring. The
 * shared-memory images and every expected register or byte come from ref/ref_lanes.h
 * (the PTX ISA's layouts); the kernels know none of them.
 */
#include "probe.h"

#include <stdlib.h>
#include <string.h>
#include <gpuport/nv_wgmma.h>

#include "ref/ref.h"
#include "ref/ref_lanes.h"

#if !defined(GP_BUILD_HIP)
const bool probe_sm90a_available = true;

GP_KERNEL_DECLARE(gp__probe_sm90a_wgmma);
GP_KERNEL_DECLARE(gp__probe_sm90a_tma_load);
GP_KERNEL_DECLARE(gp__probe_sm90a_tma_store);
GP_KERNEL_DECLARE(gp__probe_sm90a_mbarrier_phases);
GP_KERNEL_DECLARE(gp__probe_sm90a_mbarrier_tx);
GP_KERNEL_DECLARE(gp__probe_sm90a_mbarrier_ring);

/* ---- wgmma --------------------------------------------------------------------------- */

/* Leading and stride byte offsets of an image of rows x kk elements (o: 0 for A, 1 for
 * B): K-major swizzled atoms stacked along x; MN-major swizzled: kk / 8 k-atoms per
 * x-atom; no swizzle: core matrices, k-groups adjacent for A, x-groups adjacent for B. */
static void strides(int o, int w, int mn_major, int rows, int kk, int *lbo, int *sbo) {
  if (!mn_major && w) *lbo = 16, *sbo = 8 * w;
  else if (mn_major && w) *sbo = 8 * w, *lbo = 8 * w * (kk / 8);
  else if (o == 0) *lbo = 128, *sbo = 128 * (kk / 8);
  else *sbo = 128, *lbo = 128 * ((rows + 7) / 8);
}

void probe_sm90a_wgmma(probe_res_t *r, uint64_t seed, const probe_wgmma_case_t *c, const int (*fixed_a)[64],
                       const int (*fixed_b)[64], float *d_out) {
  probe_begin(r);
  if (c->kbase && (c->ta || c->tb || c->swz_a != 128 || c->swz_b != 128)) {
    probe_check(r, false, "a k-slice needs K-major 128-byte swizzled operands");
    probe_finish(r, "-");
    return;
  }
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, seed);
  const int kk = c->kbase ? 64 : 16, n = c->n;
  static int A[64][64], B[64][64];
  static float C[128 * 32], got[128 * 32];
  static double want[64][64];
  for (int x = 0; x < 64; x++)
    for (int k = 0; k < kk; k++) {
      A[x][k] = fixed_a ? fixed_a[x][k] : (int)(gp_ref_rng_next(&rng) % 9) - 4;
      B[x][k] = fixed_b ? fixed_b[x][k] : (int)(gp_ref_rng_next(&rng) % 9) - 4;
    }
  int lbo[2], sbo[2];
  const int swzv[2] = {c->swz_a, c->swz_b}, tv[2] = {c->ta, c->tb}, rows[2] = {64, n};
  unsigned char *img[2] = {NULL, NULL};
  void *da = NULL, *db = NULL, *dc = NULL, *dout = NULL;
  size_t bytes[2];
  for (int o = 0; o < 2; o++) {
    strides(o, swzv[o], tv[o], rows[o], kk, &lbo[o], &sbo[o]);
    bytes[o] = 0;
    for (int x = 0; x < rows[o]; x++)
      for (int k = 0; k < kk; k++) {
        const size_t p = gp_ref_wgmma_pos(tv[o], swzv[o], x, k, lbo[o], sbo[o]) + 2;
        if (p > bytes[o]) bytes[o] = p;
      }
    bytes[o] = (bytes[o] + 1023) / 1024 * 1024;
    img[o] = calloc(bytes[o], 1);
    if (!img[o]) {
      probe_check(r, false, "host allocation failed");
      goto out;
    }
    for (int x = 0; x < rows[o]; x++)
      for (int k = 0; k < kk; k++) {
        const uint16_t v = probe_b16(c->bf16, o == 0 ? A[x][k] : B[x][k]);
        memcpy(img[o] + gp_ref_wgmma_pos(tv[o], swzv[o], x, k, lbo[o], sbo[o]), &v, 2);
      }
  }
  for (int i = 0; i < 128 * 32; i++) C[i] = (float)((int)(gp_ref_rng_next(&rng) % 21) - 10), got[i] = -7777.0f;
  for (int x = 0; x < 64; x++)
    for (int col = 0; col < n; col++) {
      double s = 0;
      for (int k = 0; k < 16; k++) s += (double)A[x][c->kbase + k] * B[col][c->kbase + k];
      want[x][col] = s;
    }
  for (int t = 0; t < 128; t++)
    for (int i = 0; i < n / 2; i++) {
      int row, col;
      gp_ref_wgmma_d(t, i, &row, &col);
      if (c->scale_d) want[row][col] += C[t * (n / 2) + i];
    }
  if (!(da = probe_upload(r, img[0], bytes[0])) || !(db = probe_upload(r, img[1], bytes[1])) ||
      !(dc = probe_upload(r, C, sizeof C)) || !(dout = probe_upload(r, got, sizeof got)))
    goto out;
  {
    /* the k-slice kbase .. kbase + 15 of a K-major swizzled tile starts 2 kbase bytes on */
    int a_off = c->kbase * 2, b_off = c->kbase * 2;
    int mode = c->bf16 | c->ta << 1 | c->tb << 2, nn = n, ab = (int)bytes[0], bb = (int)bytes[1];
    int sa = c->swz_a, sb = c->swz_b, sd = c->scale_d;
    void *args[] = {&mode, &nn, &da, &ab, &db, &bb, &a_off, &lbo[0], &sbo[0], &sa,
                    &b_off, &lbo[1], &sbo[1], &sb, &sd, &dc, &dout};
    if (!probe_launch(r, GP_KERNEL_REF(gp__probe_sm90a_wgmma), 128, bytes[0] + bytes[1] + 1024, args)) goto out;
  }
  {
    gp_status_t s = gp_memcpy(got, dout, sizeof got);
    if (s != GP_SUCCESS) {
      probe_error(r, "gp_memcpy", s);
      goto out;
    }
  }
  if (d_out) memcpy(d_out, got, sizeof got);
  for (int t = 0; t < 128; t++)
    for (int i = 0; i < n / 2; i++) {
      int row, col;
      gp_ref_wgmma_d(t, i, &row, &col);
      probe_check(r, got[t * (n / 2) + i] == (float)want[row][col], "thread %d d%d (D[%d][%d]) = %g, want %g", t, i,
                  row, col, (double)got[t * (n / 2) + i], want[row][col]);
    }
out:
  gp_free(da), gp_free(db), gp_free(dc), gp_free(dout);
  free(img[0]), free(img[1]);
  probe_finish(r, "wgmma m64n%dk16 %s, A %s swizzle %d, B %s swizzle %d%s%s: 128 threads x %d registers exact", n,
               c->bf16 ? "bf16" : "f16", c->ta ? "MN-major" : "K-major", c->swz_a, c->tb ? "MN-major" : "K-major",
               c->swz_b, c->kbase ? ", k-slice" : "", c->scale_d ? ", + C" : "", n / 2);
}

/* ---- TMA ------------------------------------------------------------------------------- */

static const gp_ref_tma_box_t k_tma[] = {
    {2, {40, 20, 1}, {48, 20}, {64, 8, 1}, 128, {16, 15, 0}}, /* right and bottom edges */
    {2, {40, 20, 1}, {48, 20}, {32, 4, 1}, 64, {-8, -2, 0}},  /* left and top edges */
    {2, {40, 20, 1}, {40, 20}, {8, 5, 1}, 0, {30, 3, 0}},     /* no swizzle, interior and right */
    {3, {16, 6, 3}, {16, 6}, {16, 4, 2}, 32, {0, 4, 2}},      /* 3D: rows and planes past the end */
    {3, {24, 5, 4}, {32, 6}, {64, 2, 3}, 128, {-40, 1, -1}},  /* 3D: box wider than the tensor */
};
#define N_TMA ((int)(sizeof k_tma / sizeof k_tma[0]))

int probe_sm90a_tma_cases(void) { return N_TMA; }

static bool tma_map(probe_res_t *r, const gp_ref_tma_box_t *t, void *dev, gp_nv_tensor_map_t *tm) {
  const uint64_t st[2] = {2 * t->pitch[0], 2 * t->pitch[0] * t->pitch[1]};
  gp_status_t s = gp_nv_tensor_map_encode(tm, 2, t->rank, dev, t->dims, st, t->box, t->swizzle);
  if (s != GP_SUCCESS) probe_error(r, "gp_nv_tensor_map_encode", s);
  return s == GP_SUCCESS;
}

static const char *tma_what(const gp_ref_tma_box_t *t, char *buf, size_t len) {
  snprintf(buf, len, "%uD box %ux%ux%u at (%d, %d, %d) of %llux%llux%llu, swizzle %d", t->rank, t->box[0], t->box[1],
           t->box[2], t->c[0], t->c[1], t->c[2], (unsigned long long)t->dims[0], (unsigned long long)t->dims[1],
           (unsigned long long)t->dims[2], t->swizzle);
  return buf;
}

void probe_sm90a_tma_load(probe_res_t *r, int i) {
  probe_begin(r);
  const gp_ref_tma_box_t *t = &k_tma[i];
  const size_t elems = t->pitch[0] * t->pitch[1] * t->dims[2];
  int box_bytes = (int)(2 * t->box[0] * t->box[1] * t->box[2]);
  uint16_t *g = malloc(elems * 2);
  unsigned char *got = malloc((size_t)box_bytes);
  void *dg = NULL, *dout = NULL;
  gp_nv_tensor_map_t tm;
  char what[128];
  if (!g || !got) {
    probe_check(r, false, "host allocation failed");
    goto out;
  }
  for (size_t e = 0; e < elems; e++) g[e] = (uint16_t)(e * 7 + 1); /* never zero */
  memset(got, 0xee, (size_t)box_bytes);
  if (!(dg = probe_upload(r, g, elems * 2)) || !(dout = probe_upload(r, got, (size_t)box_bytes)) ||
      !tma_map(r, t, dg, &tm))
    goto out;
  {
    int rank = (int)t->rank, c0 = t->c[0], c1 = t->c[1], c2 = t->c[2];
    void *args[] = {&tm, &rank, &c0, &c1, &c2, &box_bytes, &dout};
    if (!probe_launch(r, GP_KERNEL_REF(gp__probe_sm90a_tma_load), 32, (size_t)box_bytes + 2048, args)) goto out;
  }
  {
    gp_status_t s = gp_memcpy(got, dout, (size_t)box_bytes);
    if (s != GP_SUCCESS) {
      probe_error(r, "gp_memcpy", s);
      goto out;
    }
  }
  for (unsigned i2 = 0; i2 < t->box[2]; i2++)
    for (unsigned i1 = 0; i1 < t->box[1]; i1++)
      for (unsigned i0 = 0; i0 < t->box[0]; i0++) {
        const long e = gp_ref_tma_elem(t, i0, i1, i2);
        uint16_t v;
        memcpy(&v, got + gp_ref_tma_smem(t, i0, i1, i2), 2);
        const uint16_t want = e < 0 ? 0 : g[e];
        probe_check(r, v == want, "box element (%u, %u, %u) = 0x%04x, want 0x%04x%s", i0, i1, i2, v, want,
                    e < 0 ? " (out of bounds: zero)" : "");
      }
out:
  gp_free(dg), gp_free(dout);
  free(g), free(got);
  probe_finish(r, "TMA load, %s: every box element", tma_what(t, what, sizeof what));
}

void probe_sm90a_tma_store(probe_res_t *r, int i) {
  probe_begin(r);
  const gp_ref_tma_box_t *t = &k_tma[i];
  const size_t elems = t->pitch[0] * t->pitch[1] * t->dims[2];
  int box_bytes = (int)(2 * t->box[0] * t->box[1] * t->box[2]);
  uint16_t *g = malloc(elems * 2), *got = malloc(elems * 2);
  unsigned char *img = malloc((size_t)box_bytes);
  void *dg = NULL, *dimg = NULL;
  gp_nv_tensor_map_t tm;
  char what[128];
  if (!g || !got || !img) {
    probe_check(r, false, "host allocation failed");
    goto out;
  }
  for (size_t e = 0; e < elems; e++) g[e] = 0xabcd;
  for (int b = 0; b < box_bytes; b++) img[b] = (unsigned char)(b * 13 + 5);
  if (!(dg = probe_upload(r, g, elems * 2)) || !(dimg = probe_upload(r, img, (size_t)box_bytes)) ||
      !tma_map(r, t, dg, &tm))
    goto out;
  {
    int rank = (int)t->rank, c0 = t->c[0], c1 = t->c[1], c2 = t->c[2];
    void *args[] = {&tm, &rank, &c0, &c1, &c2, &box_bytes, &dimg};
    if (!probe_launch(r, GP_KERNEL_REF(gp__probe_sm90a_tma_store), 32, (size_t)box_bytes + 1024, args)) goto out;
  }
  {
    gp_status_t s = gp_memcpy(got, dg, elems * 2);
    if (s != GP_SUCCESS) {
      probe_error(r, "gp_memcpy", s);
      goto out;
    }
  }
  for (unsigned i2 = 0; i2 < t->box[2]; i2++)
    for (unsigned i1 = 0; i1 < t->box[1]; i1++)
      for (unsigned i0 = 0; i0 < t->box[0]; i0++) {
        const long e = gp_ref_tma_elem(t, i0, i1, i2);
        if (e >= 0) memcpy(&g[e], img + gp_ref_tma_smem(t, i0, i1, i2), 2);
      }
  for (size_t e = 0; e < elems; e++)
    probe_check(r, got[e] == g[e], "tensor element %zu = 0x%04x, want 0x%04x%s", e, got[e], g[e],
                g[e] == 0xabcd ? " (outside the box: untouched)" : "");
out:
  gp_free(dg), gp_free(dimg);
  free(g), free(got), free(img);
  probe_finish(r, "TMA store, %s: every tensor element", tma_what(t, what, sizeof what));
}

/* ---- mbarrier (PTX ISA, "Parallel Synchronization and Communication Instructions:
 * mbarrier": a phase completes when its pending arrivals and its transaction count
 * reach zero; try_wait.parity p succeeds once the phase of parity p has completed) ---- */

void probe_sm90a_mbarrier_phases(probe_res_t *r) {
  probe_begin(r);
  int got[8];
  for (int i = 0; i < 8; i++) got[i] = -1;
  int *d = probe_upload(r, got, sizeof got);
  if (d) {
    void *args[] = {&d};
    if (probe_launch(r, GP_KERNEL_REF(gp__probe_sm90a_mbarrier_phases), 32, 0, args)) {
      gp_status_t s = gp_memcpy(got, d, sizeof got);
      if (s != GP_SUCCESS) probe_error(r, "gp_memcpy", s);
      static const int want[6] = {0, 0, 1, 0, 0, 5};
      static const char *const step[6] = {"phase 0 open", "one of two arrivals", "phase 0 complete", "phase 1 open",
                                          "64 transaction bytes outstanding", "steps run"};
      for (int i = 0; i < 6 && s == GP_SUCCESS; i++)
        probe_check(r, got[i] == want[i], "step %d (%s): try_wait = %d, want %d", i, step[i], got[i], want[i]);
    }
  }
  gp_free(d);
  probe_finish(r, "mbarrier: arrival counts, phase parity, expect_tx holds the phase");
}

void probe_sm90a_mbarrier_tx(probe_res_t *r) {
  probe_begin(r);
  const gp_ref_tma_box_t t = {2, {32, 2, 1}, {32, 2}, {32, 1, 1}, 64, {0, 0, 0}};
  uint16_t g[64];
  int got[8];
  for (int i = 0; i < 64; i++) g[i] = (uint16_t)(i + 1);
  for (int i = 0; i < 8; i++) got[i] = -1;
  void *dg = probe_upload(r, g, sizeof g);
  int *d = dg ? probe_upload(r, got, sizeof got) : NULL;
  gp_nv_tensor_map_t tm;
  if (d && tma_map(r, &t, dg, &tm)) {
    void *args[] = {&tm, &d};
    if (probe_launch(r, GP_KERNEL_REF(gp__probe_sm90a_mbarrier_tx), 32, 2048, args)) {
      gp_status_t s = gp_memcpy(got, d, sizeof got);
      if (s != GP_SUCCESS) {
        probe_error(r, "gp_memcpy", s);
      } else {
        probe_check(r, got[0] == 0, "before the copy: try_wait = %d, want 0 (bytes outstanding)", got[0]);
        probe_check(r, got[1] == 1, "the phase never completed (%d)", got[1]);
        probe_check(r, got[2] == 0, "after the copy: try_wait on the next phase = %d, want 0", got[2]);
      }
    }
  }
  gp_free(dg), gp_free(d);
  probe_finish(r, "mbarrier: a TMA load of 64 bytes completes the expect_tx phase");
}

void probe_sm90a_mbarrier_ring(probe_res_t *r) {
  probe_begin(r);
  enum { ITERS = 7 };
  static int got[32 * ITERS];
  for (int i = 0; i < 32 * ITERS; i++) got[i] = -1;
  int *d = probe_upload(r, got, sizeof got), iters = ITERS;
  if (d) {
    void *args[] = {&iters, &d};
    if (probe_launch(r, GP_KERNEL_REF(gp__probe_sm90a_mbarrier_ring), 64, 0, args)) {
      gp_status_t s = gp_memcpy(got, d, sizeof got);
      if (s != GP_SUCCESS) probe_error(r, "gp_memcpy", s);
      for (int k = 0; k < ITERS && s == GP_SUCCESS; k++)
        for (int l = 0; l < 32; l++)
          probe_check(r, got[32 * k + l] == 1000 * k + l, "item %d lane %d = %d, want %d", k, l, got[32 * k + l],
                      1000 * k + l);
    }
  }
  gp_free(d);
  probe_finish(r, "mbarrier ring: producer and consumer warps, 2 slots, 7 items (3 wraps of the parity)");
}

#else /* hip: no sm_90a kernels in the library */
const bool probe_sm90a_available = false;
#define SKIP(r) probe_skip((r), "the %s library has no sm_90a kernels", gp_backend_name())
void probe_sm90a_wgmma(probe_res_t *r, uint64_t seed, const probe_wgmma_case_t *c, const int (*fixed_a)[64],
                       const int (*fixed_b)[64], float *d) {
  (void)seed, (void)c, (void)fixed_a, (void)fixed_b, (void)d;
  SKIP(r);
}
int probe_sm90a_tma_cases(void) { return 5; }
void probe_sm90a_tma_load(probe_res_t *r, int i) { (void)i, SKIP(r); }
void probe_sm90a_tma_store(probe_res_t *r, int i) { (void)i, SKIP(r); }
void probe_sm90a_mbarrier_phases(probe_res_t *r) { SKIP(r); }
void probe_sm90a_mbarrier_tx(probe_res_t *r) { SKIP(r); }
void probe_sm90a_mbarrier_ring(probe_res_t *r) { SKIP(r); }
#endif
