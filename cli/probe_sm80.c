/*
 * probe_sm80.c - the sm_80 lane probes (probe.h) over kernels/sm80/probe_sm80.cu:
 * mma.sync m16n8k16 (f16, bf16) and m16n8k8 (tf32), cvt.rna.tf32.f32, ldmatrix x1, x2,
 * x4 with and without .trans, the ldmatrix + mma plumbing of a GEMM tile, and cp.async
 * of 4, 8 and 16 bytes with zero-fill and its groups. Every register a lane passes in
 * and every one it must return is placed by ref/ref_lanes.h (the PTX ISA's fragment
 * tables); the kernels only move registers.
 */
#include "probe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref.h"
#include "ref/ref_lanes.h"

#if !defined(GP_BUILD_HIP)
const bool probe_sm80_available = true;

GP_KERNEL_DECLARE(gp__probe_sm80_mma);
GP_KERNEL_DECLARE(gp__probe_sm80_mma_tf32);
GP_KERNEL_DECLARE(gp__probe_sm80_ldmatrix);
GP_KERNEL_DECLARE(gp__probe_sm80_tile);
GP_KERNEL_DECLARE(gp__probe_sm80_cp_async);

/* ---- runners ------------------------------------------------------------------------ */

/* Uploads n buffers, runs k, downloads buffer `out` (bytes) into host `dst`, frees all.
 * bufs[i] / sizes[i]: host data; args get the device pointers in order after `pre`. */
static gp_status_t run_kernel(gp_kernel_t k, unsigned threads, void **pre, int npre, const void *const *bufs,
                              const size_t *sizes, int n, int nout, void *const *dsts) {
  void *dev[8] = {NULL}, *args[12];
  gp_status_t s = GP_SUCCESS;
  for (int i = 0; i < npre; i++) args[i] = pre[i];
  for (int i = 0; i < n && s == GP_SUCCESS; i++) {
    s = gp_malloc(&dev[i], sizes[i]);
    if (s == GP_SUCCESS) s = gp_memcpy(dev[i], bufs[i], sizes[i]);
    args[npre + i] = &dev[i];
  }
  if (s == GP_SUCCESS) s = gp_launch(k, gp_dim3(1, 1, 1), gp_dim3(threads, 1, 1), 0, NULL, args);
  if (s == GP_SUCCESS) s = gp_device_synchronize();
  /* the last nout buffers are outputs */
  for (int i = n - nout; i < n && s == GP_SUCCESS; i++) s = gp_memcpy(dsts[i - (n - nout)], dev[i], sizes[i]);
  for (int i = 0; i < n; i++) gp_free(dev[i]);
  return s;
}

void probe_sm80_pack(int bf16, const int A[16][16], const int B[16][8], const double C[16][8], uint32_t a[32][4],
                     uint32_t b[32][2], float c[32][4]) {
  memset(a, 0, sizeof(uint32_t) * 32 * 4);
  memset(b, 0, sizeof(uint32_t) * 32 * 2);
  for (int l = 0; l < 32; l++) {
    int row, col;
    for (int e = 0; e < 8; e++) {
      gp_ref_mma16_a(l, e, &row, &col);
      a[l][e / 2] |= (uint32_t)probe_b16(bf16, A[row][col]) << (16 * (e % 2));
    }
    for (int e = 0; e < 4; e++) {
      gp_ref_mma16_b(l, e, &row, &col);
      b[l][e / 2] |= (uint32_t)probe_b16(bf16, B[row][col]) << (16 * (e % 2));
    }
    for (int i = 0; i < 4; i++) {
      gp_ref_mma_c(l, i, &row, &col);
      c[l][i] = (float)C[row][col];
    }
  }
}

gp_status_t probe_sm80_mma_run(int bf16, unsigned threads, const uint32_t a[32][4], const uint32_t b[32][2],
                               const float c[32][4], float d[32][4]) {
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < 4; i++) d[l][i] = -12345.0f; /* poison: lanes not run keep it */
  void *pre[] = {&bf16};
  const void *bufs[] = {a, b, c, d};
  const size_t sizes[] = {sizeof(uint32_t) * 128, sizeof(uint32_t) * 64, sizeof(float) * 128, sizeof(float) * 128};
  void *dsts[] = {d};
  return run_kernel(GP_KERNEL_REF(gp__probe_sm80_mma), threads, pre, 1, bufs, sizes, 4, 1, dsts);
}

gp_status_t probe_sm80_tf32_run(int raw, const float A[16][8], const float B[8][8], const double C[16][8],
                                float d[32][4], uint32_t ra[32][4]) {
  float a[32][4], b[32][2], c[32][4];
  for (int l = 0; l < 32; l++) {
    int row, col;
    for (int i = 0; i < 4; i++) {
      gp_ref_mma8_tf32_a(l, i, &row, &col);
      a[l][i] = A[row][col];
      gp_ref_mma_c(l, i, &row, &col);
      c[l][i] = (float)C[row][col];
      d[l][i] = -12345.0f;
      ra[l][i] = 0;
    }
    for (int i = 0; i < 2; i++) {
      gp_ref_mma8_tf32_b(l, i, &row, &col);
      b[l][i] = B[row][col];
    }
  }
  void *pre[] = {&raw};
  const void *bufs[] = {a, b, c, d, ra};
  const size_t sizes[] = {sizeof a, sizeof b, sizeof c, sizeof(float) * 128, sizeof(uint32_t) * 128};
  void *dsts[] = {d, ra};
  return run_kernel(GP_KERNEL_REF(gp__probe_sm80_mma_tf32), 32, pre, 1, bufs, sizes, 5, 2, dsts);
}

gp_status_t probe_sm80_ldmatrix_run(int nmat, int trans, const uint16_t src[32][8], const int rows[32],
                                    uint32_t out[32][4]) {
  int variant = nmat + 8 * (trans != 0);
  memset(out, 0xee, sizeof(uint32_t) * 128);
  void *pre[] = {&variant};
  const void *bufs[] = {src, rows, out};
  const size_t sizes[] = {sizeof(uint16_t) * 256, sizeof(int) * 32, sizeof(uint32_t) * 128};
  void *dsts[] = {out};
  return run_kernel(GP_KERNEL_REF(gp__probe_sm80_ldmatrix), 32, pre, 1, bufs, sizes, 3, 1, dsts);
}

/* ---- probes --------------------------------------------------------------------------- */

static int small(gp_ref_rng_t *rng, int lo, int hi) {
  return lo + (int)(gp_ref_rng_next(rng) % (uint64_t)(hi - lo + 1));
}

/* Compares D (16 x 8) with every lane's registers through the C / D fragment table. */
static void check_d(probe_res_t *r, const double D[16][8], const float d[32][4]) {
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < 4; i++) {
      int row, col;
      gp_ref_mma_c(l, i, &row, &col);
      probe_check(r, d[l][i] == (float)D[row][col], "lane %d d%d (D[%d][%d]) = %g, want %g", l, i, row, col,
                  (double)d[l][i], D[row][col]);
    }
}

void probe_sm80_mma(probe_res_t *r, uint64_t seed, int bf16) {
  probe_begin(r);
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, seed);
  int A[16][16], B[16][8];
  double C[16][8], D[16][8];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 16; k++) A[i][k] = small(&rng, -8, 8);
  for (int k = 0; k < 16; k++)
    for (int n = 0; n < 8; n++) B[k][n] = small(&rng, -8, 8);
  for (int i = 0; i < 16; i++)
    for (int n = 0; n < 8; n++) {
      C[i][n] = 0.5 * small(&rng, -100, 100);
      D[i][n] = C[i][n];
      for (int k = 0; k < 16; k++) D[i][n] += (double)A[i][k] * B[k][n];
    }
  uint32_t a[32][4], b[32][2];
  float c[32][4], d[32][4];
  probe_sm80_pack(bf16, A, B, C, a, b, c);
  gp_status_t s = probe_sm80_mma_run(bf16, 32, a, b, c, d);
  if (s != GP_SUCCESS) probe_error(r, "mma.sync m16n8k16", s);
  else check_d(r, D, d);
  probe_finish(r, "mma.sync m16n8k16 %s: 32 lanes x 4 registers exact (integers in [-8, 8])", bf16 ? "bf16" : "f16");
}

void probe_sm80_mma_tf32(probe_res_t *r, uint64_t seed) {
  probe_begin(r);
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, seed);
  /* multiples of 1/8 and 1/4 below 8 and 16: exact in tf32, so cvt.rna keeps them, and
   * every partial sum is a multiple of 1/32 below 2^10: exact in f32 */
  float A[16][8], B[8][8];
  double C[16][8], D[16][8];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 8; k++) A[i][k] = (float)small(&rng, -63, 63) / 8.0f;
  for (int k = 0; k < 8; k++)
    for (int n = 0; n < 8; n++) B[k][n] = (float)small(&rng, -63, 63) / 4.0f;
  for (int i = 0; i < 16; i++)
    for (int n = 0; n < 8; n++) {
      C[i][n] = small(&rng, -100, 100);
      D[i][n] = C[i][n];
      for (int k = 0; k < 8; k++) D[i][n] += (double)A[i][k] * B[k][n];
    }
  float d[32][4];
  uint32_t ra[32][4];
  gp_status_t s = probe_sm80_tf32_run(0, A, B, C, d, ra);
  if (s != GP_SUCCESS) probe_error(r, "mma.sync m16n8k8 tf32", s);
  else check_d(r, D, d);
  probe_finish(r, "mma.sync m16n8k8 tf32: 32 lanes x 4 registers exact");
}

/* cvt.rna.tf32.f32 (PTX ISA, cvt: .rna rounds to nearest, ties away from zero, to 10
 * mantissa bits): the bits of values placed in known A registers of lanes 0 and 1. */
void probe_sm80_cvt_tf32(probe_res_t *r) {
  probe_begin(r);
  static const float in[8] = {1.0f + 0x1.0p-11f,    /* tie: up to 1 + 2^-10 */
                              -(1.0f + 0x1.0p-11f), /* tie: away from zero */
                              1.0f + 0x1.0p-12f,    /* below half: 1 */
                              1.0f + 0x1.8p-11f,    /* above half: 1 + 2^-10 */
                              3.0f, -0.0f, INFINITY, NAN};
  static const uint32_t want[8] = {0x3f802000u, 0xbf802000u, 0x3f800000u, 0x3f802000u,
                                   0x40400000u, 0x80000000u, 0x7f800000u, 0};
  float A[16][8], B[8][8];
  double C[16][8];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 8; k++) A[i][k] = 1.0f;
  memset(B, 0, sizeof B);
  memset(C, 0, sizeof C);
  for (int j = 0; j < 8; j++) { /* value j goes to register j % 4 of lane j / 4 */
    int row, col;
    gp_ref_mma8_tf32_a(j / 4, j % 4, &row, &col);
    A[row][col] = in[j];
  }
  float d[32][4];
  uint32_t ra[32][4];
  gp_status_t s = probe_sm80_tf32_run(0, A, B, C, d, ra);
  if (s != GP_SUCCESS) {
    probe_error(r, "cvt.rna.tf32.f32", s);
  } else {
    for (int j = 0; j < 8; j++) {
      const uint32_t got = ra[j / 4][j % 4];
      if (j == 7)
        probe_check(r, (got & 0x7f800000u) == 0x7f800000u && (got & 0x007fe000u) != 0,
                    "lane %d a%d: cvt(NaN) = 0x%08x, not a NaN", j / 4, j % 4, got);
      else
        probe_check(r, got == want[j], "lane %d a%d: cvt(%a) = 0x%08x, want 0x%08x", j / 4, j % 4, (double)in[j], got,
                    want[j]);
    }
  }
  probe_finish(r, "cvt.rna.tf32.f32: ties away from zero, below and above half, -0, inf, NaN");
}

void probe_sm80_ldmatrix(probe_res_t *r, uint64_t seed, int nmat, int trans) {
  probe_begin(r);
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, seed);
  uint16_t src[32][8];
  int rows[32];
  const unsigned off = (unsigned)(gp_ref_rng_next(&rng) % 60000u);
  for (int x = 0; x < 32; x++)
    for (int c = 0; c < 8; c++) src[x][c] = (uint16_t)(off + 8u * (unsigned)x + (unsigned)c + 1u); /* distinct */
  for (int l = 0; l < 32; l++) rows[l] = l;
  for (int l = 31; l > 0; l--) { /* a random permutation of the row addresses */
    const int j = (int)(gp_ref_rng_next(&rng) % (uint64_t)(l + 1)), t = rows[l];
    rows[l] = rows[j], rows[j] = t;
  }
  uint32_t out[32][4];
  gp_status_t s = probe_sm80_ldmatrix_run(nmat, trans, src, rows, out);
  if (s != GP_SUCCESS) {
    probe_error(r, "ldmatrix", s);
  } else {
    for (int l = 0; l < 32; l++)
      for (int j = 0; j < 4; j++) {
        uint32_t want = 0; /* registers the instruction does not write keep the kernel's 0 */
        for (int h = 0; h < 2 && j < nmat; h++) {
          int row, col;
          gp_ref_ldmatrix(l, h, trans, &row, &col);
          want |= (uint32_t)src[rows[8 * j + row]][col] << (16 * h);
        }
        probe_check(r, out[l][j] == want, "ldmatrix.x%d%s lane %d r%d = 0x%08x, want 0x%08x", nmat,
                    trans ? ".trans" : "", l, j, out[l][j], want);
      }
  }
  probe_finish(r, "ldmatrix.x%d%s: 32 lanes x %d registers, row addresses permuted", nmat, trans ? ".trans" : "",
               nmat);
}

void probe_sm80_tile(probe_res_t *r, uint64_t seed, int bf16) {
  probe_begin(r);
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, seed);
  uint16_t a[16][16], b[16][8];
  int A[16][16], B[16][8];
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 16; k++) A[i][k] = small(&rng, -7, 7), a[i][k] = probe_b16(bf16, A[i][k]);
  for (int k = 0; k < 16; k++)
    for (int n = 0; n < 8; n++) B[k][n] = small(&rng, -7, 7), b[k][n] = probe_b16(bf16, B[k][n]);
  float d[16][8];
  for (int i = 0; i < 16; i++)
    for (int n = 0; n < 8; n++) d[i][n] = NAN;
  void *pre[] = {&bf16};
  const void *bufs[] = {a, b, d};
  const size_t sizes[] = {sizeof a, sizeof b, sizeof d};
  void *dsts[] = {d};
  gp_status_t s = run_kernel(GP_KERNEL_REF(gp__probe_sm80_tile), 32, pre, 1, bufs, sizes, 3, 1, dsts);
  if (s != GP_SUCCESS) {
    probe_error(r, "ldmatrix + mma tile", s);
  } else {
    for (int i = 0; i < 16; i++)
      for (int n = 0; n < 8; n++) {
        double want = 0.0;
        for (int k = 0; k < 16; k++) want += (double)A[i][k] * B[k][n];
        probe_check(r, d[i][n] == (float)want, "D[%d][%d] = %g, want %g", i, n, (double)d[i][n], want);
      }
  }
  probe_finish(r, "ldmatrix.x4 (A) + ldmatrix.x2.trans (B) + mma.sync %s: 16 x 8 exact", bf16 ? "bf16" : "f16");
}

/* The cp.async kernel's plan (kernels/sm80/probe_sm80.cu): per lane 80 bytes in 5 chunks,
 * groups 0 (chunks 0, 1), 1 (chunks 2, 3) and 2 (chunk 4, committed last). PTX ISA,
 * cp.async: src-size bytes are copied and the rest of cp-size is zero-filled;
 * cp.async.wait_group N waits for all but the N most recent committed groups. */
void probe_sm80_cp_async(probe_res_t *r, uint64_t seed) {
  probe_begin(r);
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, seed);
  static unsigned char src[32][80], snap[32][3][80];
  int sb16[32], sb8[32];
  for (int l = 0; l < 32; l++) {
    for (int e = 0; e < 80; e++) src[l][e] = (unsigned char)(1 + gp_ref_rng_next(&rng) % 250); /* never 0 */
    sb16[l] = l % 17; /* 0 .. 16 */
    sb8[l] = (l * 5) % 9; /* 0 .. 8 */
  }
  memset(snap, 0, sizeof snap);
  const void *bufs[] = {src, sb16, sb8, snap};
  const size_t sizes[] = {sizeof src, sizeof sb16, sizeof sb8, sizeof snap};
  void *dsts[] = {snap};
  gp_status_t s = run_kernel(GP_KERNEL_REF(gp__probe_sm80_cp_async), 32, NULL, 0, bufs, sizes, 4, 1, dsts);
  if (s != GP_SUCCESS) {
    probe_error(r, "cp.async", s);
    probe_finish(r, "-");
    return;
  }
  const int cpu = gp_backend() == GP_BACKEND_CPU;
  for (int l = 0; l < 32; l++) {
    unsigned char full[80];
    memcpy(full, src[l], 80);
    for (int e = 16 + sb16[l]; e < 32; e++) full[e] = 0; /* the 16-byte copy's zero-filled tail */
    for (int e = 44; e < 48; e++) full[e] = 0;           /* the 4-byte copy of size 0 */
    for (int e = 56 + sb8[l]; e < 64; e++) full[e] = 0;  /* the 8-byte copy's tail */
    for (int st = 0; st < 3; st++)
      for (int e = 0; e < 80; e++) {
        const int chunk = e / 16;
        /* group 0 from the first wait on, group 1 from the second, chunk 4 at the end */
        const int landed = chunk < 2 || (chunk < 4 && st >= 1) || st == 2;
        const unsigned char got = snap[l][st][e];
        if (landed)
          probe_check(r, got == full[e], "lane %d snapshot %d byte %d = 0x%02x, want 0x%02x", l, st, e, got, full[e]);
        else if (cpu) /* the emulation's fill of a pending copy's destination */
          probe_check(r, got == 0xff, "lane %d snapshot %d byte %d = 0x%02x before its wait", l, st, e, got);
        else /* on a GPU: either the old bytes or the copy */
          probe_check(r, got == 0x5a || got == full[e], "lane %d snapshot %d byte %d = 0x%02x", l, st, e, got);
      }
  }
  probe_finish(r, "cp.async 16 (0..16 bytes), 8 (0..8), 4 (4, 0) bytes in 3 groups: 32 lanes x 3 snapshots x 80 bytes");
}

#else /* hip: no sm_80 kernels in the library */
const bool probe_sm80_available = false;

static gp_status_t none(void) { return GP_ERROR_NOT_SUPPORTED; }
void probe_sm80_pack(int bf16, const int A[16][16], const int B[16][8], const double C[16][8], uint32_t a[32][4],
                     uint32_t b[32][2], float c[32][4]) {
  (void)bf16, (void)A, (void)B, (void)C, (void)a, (void)b, (void)c;
}
gp_status_t probe_sm80_mma_run(int bf16, unsigned threads, const uint32_t a[32][4], const uint32_t b[32][2],
                               const float c[32][4], float d[32][4]) {
  (void)bf16, (void)threads, (void)a, (void)b, (void)c, (void)d;
  return none();
}
gp_status_t probe_sm80_tf32_run(int raw, const float A[16][8], const float B[8][8], const double C[16][8],
                                float d[32][4], uint32_t ra[32][4]) {
  (void)raw, (void)A, (void)B, (void)C, (void)d, (void)ra;
  return none();
}
gp_status_t probe_sm80_ldmatrix_run(int nmat, int trans, const uint16_t src[32][8], const int rows[32],
                                    uint32_t out[32][4]) {
  (void)nmat, (void)trans, (void)src, (void)rows, (void)out;
  return none();
}
#define SKIP(r) probe_skip((r), "the %s library has no sm_80 kernels", gp_backend_name())
void probe_sm80_mma(probe_res_t *r, uint64_t seed, int bf16) { (void)seed, (void)bf16, SKIP(r); }
void probe_sm80_mma_tf32(probe_res_t *r, uint64_t seed) { (void)seed, SKIP(r); }
void probe_sm80_cvt_tf32(probe_res_t *r) { SKIP(r); }
void probe_sm80_ldmatrix(probe_res_t *r, uint64_t seed, int nmat, int trans) { (void)seed, (void)nmat, (void)trans, SKIP(r); }
void probe_sm80_tile(probe_res_t *r, uint64_t seed, int bf16) { (void)seed, (void)bf16, SKIP(r); }
void probe_sm80_cp_async(probe_res_t *r, uint64_t seed) { (void)seed, SKIP(r); }
#endif
