/*
 * probe_mfma.c - the MFMA lane probes (probe.h) over kernels/mfma/probe_mfma.cu: the
 * forms the mfma kernels use (v_mfma_f32_32x32x8bf16_1k, 16x16x16bf16_1k, 32x32x8f16,
 * 16x16x16f16, 32x32x2f32, 16x16x4f32, under the gfx90a and the gfx940 names), two
 * wavefronts with different data, every accumulator register compared with the layout
 * of ref/ref_lanes.h (the AMD ISA's, as the Matrix Instruction Calculator tabulates it).
 */
#include "probe.h"

#include <string.h>

#include "ref/ref.h"
#include "ref/ref_lanes.h"

enum { K_BF16 = 0, K_F16 = 1, K_F32 = 2 };

/* Index = the probe kernel's op code modulo 6. */
const probe_mfma_op_t probe_mfma_ops[6] = {
    {"v_mfma_f32_32x32x8bf16_1k", 32, 8, 4, 16, K_BF16}, {"v_mfma_f32_16x16x16bf16_1k", 16, 16, 4, 4, K_BF16},
    {"v_mfma_f32_32x32x8f16", 32, 8, 4, 16, K_F16},      {"v_mfma_f32_16x16x16f16", 16, 16, 4, 4, K_F16},
    {"v_mfma_f32_32x32x2f32", 32, 2, 1, 16, K_F32},      {"v_mfma_f32_16x16x4f32", 16, 4, 1, 4, K_F32},
};

static uint64_t bits_of(int kind, double v) {
  if (kind == K_F32) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
  }
  return kind == K_BF16 ? gp_bf16_from_f32((float)v).bits : gp_f16_from_f32((float)v).bits;
}

void probe_mfma_put(uint64_t *reg, int kind, int e, double v) {
  const int w = kind == K_F32 ? 32 : 16;
  const uint64_t mask = ((uint64_t)1 << w) - 1;
  *reg = (*reg & ~(mask << (w * e))) | (bits_of(kind, v) << (w * e));
}

#if defined(GP_BUILD_CPU) || defined(GP_BUILD_HIP)
const bool probe_mfma_available = true;

GP_KERNEL_DECLARE(gp__probe_mfma);

gp_status_t probe_mfma_run(int op, probe_mfma_io_t *io) {
  void *da = NULL, *db = NULL, *dc = NULL, *dd = NULL;
  gp_ref_poison(io->d, GP_F32, PROBE_MFMA_LANES * 16);
  gp_status_t s = gp_malloc(&da, sizeof io->a);
  if (s == GP_SUCCESS) s = gp_malloc(&db, sizeof io->b);
  if (s == GP_SUCCESS) s = gp_malloc(&dc, sizeof io->c);
  if (s == GP_SUCCESS) s = gp_malloc(&dd, sizeof io->d);
  if (s == GP_SUCCESS) s = gp_memcpy(da, io->a, sizeof io->a);
  if (s == GP_SUCCESS) s = gp_memcpy(db, io->b, sizeof io->b);
  if (s == GP_SUCCESS) s = gp_memcpy(dc, io->c, sizeof io->c);
  if (s == GP_SUCCESS) s = gp_memcpy(dd, io->d, sizeof io->d);
  void *args[] = {&op, &da, &db, &dc, &dd};
  if (s == GP_SUCCESS)
    s = gp_launch(GP_KERNEL_REF(gp__probe_mfma), gp_dim3(1, 1, 1), gp_dim3(PROBE_MFMA_LANES, 1, 1), 0, NULL, args);
  if (s == GP_SUCCESS) s = gp_device_synchronize();
  if (s == GP_SUCCESS) s = gp_memcpy(io->d, dd, sizeof io->d);
  gp_free(da), gp_free(db), gp_free(dc), gp_free(dd);
  return s;
}

static int rand_int(gp_ref_rng_t *rng, int lo, int hi) { /* nonzero in [lo, hi] */
  int v;
  do v = lo + (int)(gp_ref_rng_next(rng) % (uint64_t)(hi - lo + 1));
  while (v == 0);
  return v;
}

void probe_mfma_exact(probe_res_t *r, uint64_t seed, int op) {
  probe_begin(r);
  const probe_mfma_op_t *o = &probe_mfma_ops[op % 6];
  const int m = o->m, n = o->m, k = o->k;
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, seed);
  static probe_mfma_io_t io;
  static double A[PROBE_MFMA_WAVES][32][16], B[PROBE_MFMA_WAVES][16][32], C[PROBE_MFMA_WAVES][32][32];
  memset(&io, 0, sizeof io);
  for (int w = 0; w < PROBE_MFMA_WAVES; w++) {
    for (int i = 0; i < m; i++)
      for (int p = 0; p < k; p++) {
        A[w][i][p] = rand_int(&rng, -8, 8);
        probe_mfma_put(&io.a[w * 64 + gp_ref_mfma_in_lane(m, o->per, i, p)], o->kind, gp_ref_mfma_in_elem(o->per, p),
                       A[w][i][p]);
      }
    for (int p = 0; p < k; p++)
      for (int j = 0; j < n; j++) {
        B[w][p][j] = rand_int(&rng, -8, 8);
        probe_mfma_put(&io.b[w * 64 + gp_ref_mfma_in_lane(m, o->per, j, p)], o->kind, gp_ref_mfma_in_elem(o->per, p),
                       B[w][p][j]);
      }
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) {
        C[w][i][j] = rand_int(&rng, -100, 100);
        io.c[(w * 64 + gp_ref_mfma_d_lane(m, i, j)) * 16 + gp_ref_mfma_d_reg(m, i)] = (float)C[w][i][j];
      }
  }
  gp_status_t s = probe_mfma_run(op, &io);
  if (s != GP_SUCCESS) {
    probe_error(r, o->name, s);
    probe_finish(r, "-");
    return;
  }
  for (int w = 0; w < PROBE_MFMA_WAVES; w++) {
    unsigned char seen[64][16];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) {
        double want = C[w][i][j];
        for (int p = 0; p < k; p++) want += A[w][i][p] * B[w][p][j];
        const int l = gp_ref_mfma_d_lane(m, i, j), g = gp_ref_mfma_d_reg(m, i);
        if (!(l >= 0 && l < 64 && g >= 0 && g < o->nregs)) {
          probe_check(r, false, "D[%d][%d] maps to lane %d register %d, outside the fragment", i, j, l, g);
          continue;
        }
        const float got = io.d[(w * 64 + l) * 16 + g];
        probe_check(r, (double)got == want, "wave %d lane %d register %d (D[%d][%d]) = %g, want %g", w, l, g, i, j,
                    (double)got, want);
        probe_check(r, !seen[l][g], "D[%d][%d] maps to lane %d register %d, which another element has", i, j, l, g);
        seen[l][g] = 1;
      }
  }
  probe_finish(r, "%s%s: 2 waves x 64 lanes x %d registers exact", o->name, op >= 6 ? " (gfx940 name)" : "",
               o->nregs);
}

#else /* cuda: no MFMA kernels in the library */
const bool probe_mfma_available = false;

gp_status_t probe_mfma_run(int op, probe_mfma_io_t *io) {
  (void)op, (void)io;
  return GP_ERROR_NOT_SUPPORTED;
}

void probe_mfma_exact(probe_res_t *r, uint64_t seed, int op) {
  (void)seed, (void)op;
  probe_skip(r, "the %s library has no MFMA kernels", gp_backend_name());
}
#endif
