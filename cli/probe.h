/*
 * probe.h - the lane probes: each runs one matrix, copy or barrier instruction of the
 * library's kernel families (kernels/sm80/probe_sm80.cu, kernels/sm90a/probe_sm90a.cu,
 * kernels/mfma/probe_mfma.cu) on distinct small integers and compares every lane's
 * registers (or every byte) with the layout the vendor documents (ref/ref_lanes.h).
 * Operands are small integers, so every product and sum is exact and results compare
 * bit for bit.
 *
 * One implementation serves `gpuport selftest --hardware` (cli/selftest_hardware.c) and
 * the suites test_nv_mma, test_nv_wgmma and test_amd_mfma: on the cpu backend the probes
 * check the emulation against the documents, on a GPU the hardware against them (and so
 * against the emulation). A probe never aborts: it reports through a probe_res_t.
 */
#ifndef GP_TOOL_PROBE_H
#define GP_TOOL_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <gpuport.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PROBE_PASS = 0, PROBE_FAIL = 1, PROBE_SKIP = 2 } probe_status_t;

/* One probe's outcome: PASS with what was compared, FAIL with the first differing lane
 * and register (got and want) and how many differ, or SKIP with the reason. */
typedef struct probe_res {
  probe_status_t status;
  long checked, bad; /* registers (or bytes) compared, and how many differ */
  char detail[384];
} probe_res_t;

/* ---- the bookkeeping every probe uses (cli/probe.c) --------------------------------- */
void probe_begin(probe_res_t *r);
/* While on, each probe counts its first compared value as differing, so it must FAIL
 * (GP_SELFTEST_INJECT: a probe that cannot fail proves nothing). */
void probe_set_inject(bool on);
/* A compared value: when !ok the first such call's text is kept as the detail. */
void probe_check(probe_res_t *r, bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A library call failed (status s): the probe fails with the call and the message. */
void probe_error(probe_res_t *r, const char *what, gp_status_t s);
/* Ends the probe: PASS (detail = the summary fmt) unless a check or call failed. */
void probe_finish(probe_res_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void probe_skip(probe_res_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* gp_malloc + gp_memcpy of bytes from host (NULL on failure, recorded in r). */
void *probe_upload(probe_res_t *r, const void *host, size_t bytes);
/* A kernel of one block, synchronized; false (recorded in r) when a call fails. */
bool probe_launch(probe_res_t *r, gp_kernel_t k, unsigned threads, size_t smem, void **args);
/* 16-bit encoding of a small integer in bf16 (bf16 != 0) or f16: exact. */
uint16_t probe_b16(int bf16, int v);

/* ---- sm_80: mma.sync, cvt.rna.tf32, ldmatrix, cp.async (cli/probe_sm80.c) -------------
 * Available where the library has the sm_80 kernels (cuda, cpu): probe_sm80_available. */
extern const bool probe_sm80_available;

/* The raw runners: registers in, registers out (threads: the warp's live lanes). */
gp_status_t probe_sm80_mma_run(int bf16, unsigned threads, const uint32_t a[32][4], const uint32_t b[32][2],
                               const float c[32][4], float d[32][4]);
/* Packs A (16 x 16), B (16 x 8) as f16 / bf16 and C (16 x 8) into lane registers. */
void probe_sm80_pack(int bf16, const int A[16][16], const int B[16][8], const double C[16][8], uint32_t a[32][4],
                     uint32_t b[32][2], float c[32][4]);
/* The tf32 form on A (16 x 8), B (8 x 8), C (16 x 8): d and the rounded A bits ra. */
gp_status_t probe_sm80_tf32_run(int raw, const float A[16][8], const float B[8][8], const double C[16][8],
                                float d[32][4], uint32_t ra[32][4]);
gp_status_t probe_sm80_ldmatrix_run(int nmat, int trans, const uint16_t src[32][8], const int rows[32],
                                    uint32_t out[32][4]);

/* The probes. */
void probe_sm80_mma(probe_res_t *r, uint64_t seed, int bf16);      /* m16n8k16 f16 / bf16 */
void probe_sm80_mma_tf32(probe_res_t *r, uint64_t seed);           /* m16n8k8 tf32 */
void probe_sm80_cvt_tf32(probe_res_t *r);                           /* cvt.rna.tf32.f32 */
void probe_sm80_ldmatrix(probe_res_t *r, uint64_t seed, int nmat, int trans); /* x1/x2/x4 */
void probe_sm80_tile(probe_res_t *r, uint64_t seed, int bf16);     /* ldmatrix + mma */
void probe_sm80_cp_async(probe_res_t *r, uint64_t seed);           /* 4/8/16 bytes, zero-fill */

/* ---- sm_90a: wgmma, TMA, mbarrier (cli/probe_sm90a.c) -------------------------------- */
extern const bool probe_sm90a_available;

/* One wgmma m64nNk16: swizzle of A and B (0, 32, 64, 128), MN-major A / B (ta, tb),
 * bf16 or f16, n (8 or 64), kbase (0: K = 16; else a k-slice at kbase of a 64-wide K,
 * K-major 128-byte swizzle only), scale_d (C added). */
typedef struct probe_wgmma_case {
  int swz_a, swz_b, ta, tb, bf16, n, kbase, scale_d;
} probe_wgmma_case_t;
/* Runs the case on A (64 x K) and B (n x K) (fixed_a / fixed_b, or random small integers
 * when NULL), compares every thread's accumulators; d (128 x 32 floats) receives them
 * when not NULL. */
void probe_sm90a_wgmma(probe_res_t *r, uint64_t seed, const probe_wgmma_case_t *c, const int (*fixed_a)[64],
                       const int (*fixed_b)[64], float *d);
/* The TMA cases (2D and 3D boxes over every edge, each swizzle): count and one load or
 * store of case i. */
int probe_sm90a_tma_cases(void);
void probe_sm90a_tma_load(probe_res_t *r, int i);
void probe_sm90a_tma_store(probe_res_t *r, int i);
void probe_sm90a_mbarrier_phases(probe_res_t *r);  /* arrivals, parity, expect_tx */
void probe_sm90a_mbarrier_tx(probe_res_t *r);      /* a phase completed by TMA bytes */
void probe_sm90a_mbarrier_ring(probe_res_t *r);    /* producer and consumer warps */

/* ---- AMD MFMA (cli/probe_mfma.c) ----------------------------------------------------- */
extern const bool probe_mfma_available;

/* The forms the kernels use; op = index + 6 * spelling (0: gfx90a names, 1: gfx940's). */
typedef struct probe_mfma_op {
  const char *name;
  int m, k, per, nregs, kind; /* n == m; kind: 0 bf16, 1 f16, 2 f32 */
} probe_mfma_op_t;
extern const probe_mfma_op_t probe_mfma_ops[6];
#define PROBE_MFMA_WAVES 2
#define PROBE_MFMA_LANES (64 * PROBE_MFMA_WAVES)
/* The registers of two wavefronts: a, b per lane, c and d 16 per lane. */
typedef struct probe_mfma_io {
  uint64_t a[PROBE_MFMA_LANES], b[PROBE_MFMA_LANES];
  float c[PROBE_MFMA_LANES * 16], d[PROBE_MFMA_LANES * 16];
} probe_mfma_io_t;
/* Places v as element e of a lane's register bits in the kind's encoding. */
void probe_mfma_put(uint64_t *reg, int kind, int e, double v);
gp_status_t probe_mfma_run(int op, probe_mfma_io_t *io);
/* Random nonzero integers in A, B and C of both waves: every D register of each wave
 * compared, the map from (i, j) to (lane, register) checked to be a bijection. */
void probe_mfma_exact(probe_res_t *r, uint64_t seed, int op);

#ifdef __cplusplus
}
#endif

#endif /* GP_TOOL_PROBE_H */
