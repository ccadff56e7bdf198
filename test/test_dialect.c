/*
 * test_dialect.c - the widened kernel dialect (gpuport/kernel.h), at every warp width
 * this backend builds (on the CPU the _w64 builds of each source too):
 * - kernel templates: the CUDA samples' reduction switch over block sizes 1..1024
 *   launched from C++ with GP_LAUNCH((kt_reduce<T, B>), ...) without an export, exported
 *   instances launched from C, their names, static and header-defined kernels
 *   (test/kernels/kt_template.cu, kt_template2.cu, kt_template.cuh).
 * - half types (gpuport/half.h, test/kernels/kt_half.cu): every binary16 and bfloat16
 *   pattern to float and back, floats (every midpoint, its neighbours, random) rounded
 *   to nearest even, every operation against the float64 value rounded once, pairs,
 *   shuffles and atomics.
 * - cooperative groups (gpuport/cooperative_groups.h, test/kernels/kt_cg.cu): every
 *   member of tiles of 1 .. the warp width, the block, run-time tiles, the coalesced
 *   group of a partial warp, the grid's sync; groups as thread_group, binary and
 *   labeled partitions, reduce() and shuffles of structs, __reduce_*_sync, tiles of
 *   several warps reduced through block_tile_memory.
 * - built-ins (test/kernels/kt_builtins.cu): 24-bit and high-half multiplies, vector
 *   types, __align__, scoped atomics, cache hints, mixed min/max; an assert after
 *   <assert.h> is included again still fails the launch; warp match functions and the
 *   integer umin/umax family.
 *
 * Inputs are random (seed printed; GP_TEST_SEED replays); outputs are poisoned first and
 * every element is checked against a float64 (or exact integer) reference.
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

static uint64_t g_seed;

/* ---- kernel templates ------------------------------------------------------------------ */
GP_KERNEL_DECLARE(kt_reduce_f32_256);
GP_KERNEL_DECLARE(kt_reduce_i32_64);
GP_KERNEL_DECLARE(kt_static_first);
gp_status_t kt_reduce_switch_f32(unsigned threads, const float *in, float *out, int n);
gp_status_t kt_reduce_switch_i32(unsigned threads, const int *in, int *out, int n);
gp_status_t kt_launch_statics(int *out, int k);
gp_status_t kt_launch_header2(int *out, int k);
gp_kernel_t kt_reduce_desc_256(void);
gp_kernel_t kt_reduce_desc_128(void);
#ifdef GP_BUILD_CPU
GP_KERNEL_DECLARE(kt_reduce_f32_256_w64);
gp_status_t kt_reduce_switch_f32_w64(unsigned threads, const float *in, float *out, int n);
gp_status_t kt_reduce_switch_i32_w64(unsigned threads, const int *in, int *out, int n);
gp_status_t kt_launch_statics_w64(int *out, int k);
gp_status_t kt_launch_header2_w64(int *out, int k);
gp_kernel_t kt_reduce_desc_256_w64(void);
gp_kernel_t kt_reduce_desc_128_w64(void);
#define NBUILDS 2
#else
#define NBUILDS 1
#endif

typedef gp_status_t (*switch_f32_fn)(unsigned, const float *, float *, int);
typedef gp_status_t (*switch_i32_fn)(unsigned, const int *, int *, int);
typedef gp_status_t (*statics_fn)(int *, int);
typedef gp_kernel_t (*desc_fn)(void);
static const switch_f32_fn SWITCH_F32[NBUILDS] = {kt_reduce_switch_f32
#ifdef GP_BUILD_CPU
                                                   , kt_reduce_switch_f32_w64
#endif
};
static const switch_i32_fn SWITCH_I32[NBUILDS] = {kt_reduce_switch_i32
#ifdef GP_BUILD_CPU
                                                   , kt_reduce_switch_i32_w64
#endif
};
static const statics_fn STATICS[NBUILDS][2] = {{kt_launch_statics, kt_launch_header2}
#ifdef GP_BUILD_CPU
                                                , {kt_launch_statics_w64, kt_launch_header2_w64}
#endif
};
static const desc_fn DESC[NBUILDS][2] = {{kt_reduce_desc_256, kt_reduce_desc_128}
#ifdef GP_BUILD_CPU
                                          , {kt_reduce_desc_256_w64, kt_reduce_desc_128_w64}
#endif
};

/* The samples' switch: every block size, float sums within a bound of the float64 sum
 * that scales with the block (a tree of B terms), int sums exact. */
START_TEST(template_reduce_switch_every_block_size) {
  enum { N = 3 * 1024 + 77 };
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed);
  float *hf = malloc(N * sizeof(float));
  int *hi = malloc(N * sizeof(int));
  ck_assert(hf && hi);
  for (int i = 0; i < N; i++) {
    hf[i] = (float)gp_ref_rng_uniform(&rng, -1.0, 1.0);
    hi[i] = (int)(gp_ref_rng_next(&rng) % 2001u) - 1000;
  }
  float *df = NULL, *of = NULL;
  int *di = NULL, *oi = NULL;
  OK(gp_malloc((void **)&df, N * sizeof(float)));
  OK(gp_malloc((void **)&di, N * sizeof(int)));
  OK(gp_malloc((void **)&of, N * sizeof(float)));
  OK(gp_malloc((void **)&oi, N * sizeof(int)));
  OK(gp_memcpy(df, hf, N * sizeof(float)));
  OK(gp_memcpy(di, hi, N * sizeof(int)));
  float *rf = malloc(N * sizeof(float));
  int *ri = malloc(N * sizeof(int));
  ck_assert(rf && ri);
  for (int b = 0; b < NBUILDS; b++)
    for (unsigned threads = 1; threads <= 1024; threads *= 2) {
      const int blocks = (N + (int)threads - 1) / (int)threads;
      OK(gp_memset(of, 0xff, N * sizeof(float)));
      OK(gp_memset(oi, 0xff, N * sizeof(int)));
      OK(SWITCH_F32[b](threads, df, of, N));
      OK(SWITCH_I32[b](threads, di, oi, N));
      OK(gp_memcpy(rf, of, N * sizeof(float)));
      OK(gp_memcpy(ri, oi, N * sizeof(int)));
      for (int k = 0; k < blocks; k++) {
        double want = 0.0, mag = 0.0;
        long long wi = 0;
        for (int i = k * (int)threads; i < (k + 1) * (int)threads && i < N; i++) {
          want += hf[i];
          mag += fabs(hf[i]);
          wi += hi[i];
        }
        const double bound = (double)threads * 0x1p-24 * mag + 1e-30;
        ck_assert_msg(fabs(rf[k] - want) <= bound,
                      "seed 0x%llx, kt_reduce<float, %u> (build %d): block %d: %.9g, expected %.9g (bound %.3g)",
                      (unsigned long long)g_seed, threads, b, k, rf[k], want, bound);
        ck_assert_msg(ri[k] == (int)wi, "seed 0x%llx, kt_reduce<int, %u> (build %d): block %d: %d, expected %lld",
                      (unsigned long long)g_seed, threads, b, k, ri[k], wi);
      }
    }
  OK(gp_free(df));
  OK(gp_free(di));
  OK(gp_free(of));
  OK(gp_free(oi));
  free(hf);
  free(hi);
  free(rf);
  free(ri);
}
END_TEST

/* An exported instance is launched from C; its name is the instance as written; GP_LAUNCH
 * of that instance uses the exported descriptor, another instance one of its own. */
START_TEST(template_exported_instance) {
  ck_assert_str_eq(gp_kernel_name(GP_KERNEL_REF(kt_reduce_f32_256)), "kt_reduce<float, 256>");
  ck_assert_str_eq(gp_kernel_name(GP_KERNEL_REF(kt_reduce_i32_64)), "kt_reduce<int, 64>");
  for (int b = 0; b < NBUILDS; b++) {
    ck_assert_msg(DESC[b][1]() != NULL && DESC[b][1]() != DESC[b][0](), "build %d", b);
    ck_assert_msg(strstr(gp_kernel_name(DESC[b][1]()), "kt_reduce<float, 128") != NULL,
                  "build %d: made descriptor named '%s'", b, gp_kernel_name(DESC[b][1]()));
    ck_assert_int_eq(DESC[b][1]()->warp_size, b == 0 ? DESC[0][0]()->warp_size : 64);
  }
  ck_assert_ptr_eq(kt_reduce_desc_256(), GP_KERNEL_REF(kt_reduce_f32_256));
#ifdef GP_BUILD_CPU
  ck_assert_ptr_eq(kt_reduce_desc_256_w64(), GP_KERNEL_REF(kt_reduce_f32_256_w64));
  ck_assert_str_eq(gp_kernel_name(GP_KERNEL_REF(kt_reduce_f32_256_w64)), "kt_reduce<float, 256>");
#endif
  enum { N = 1000 };
  float h[N], *d = NULL, *o = NULL, r[4];
  double want[4] = {0, 0, 0, 0};
  for (int i = 0; i < N; i++) {
    h[i] = (float)(i % 17) - 8.0f;
    want[i / 256] += h[i];
  }
  OK(gp_malloc((void **)&d, sizeof h));
  OK(gp_malloc((void **)&o, sizeof r));
  OK(gp_memcpy(d, h, sizeof h));
  OK(gp_memset(o, 0xff, sizeof r));
  int n = N;
  void *args[] = {&d, &o, &n};
  OK(gp_launch(GP_KERNEL_REF(kt_reduce_f32_256), gp_dim3(4, 1, 1), gp_dim3(256, 1, 1), 0, NULL, args));
  OK(gp_device_synchronize());
  OK(gp_memcpy(r, o, sizeof r));
  for (int k = 0; k < 4; k++) ck_assert_msg(r[k] == (float)want[k], "block %d: %g, expected %g", k, r[k], want[k]);
  OK(gp_free(d));
  OK(gp_free(o));
}
END_TEST

/* static __global__, __global__ static and a static kernel of a header included twice. */
START_TEST(static_and_header_kernels) {
  int *d = NULL, h[96];
  OK(gp_malloc((void **)&d, sizeof h));
  for (int b = 0; b < NBUILDS; b++) {
    OK(gp_memset(d, 0xff, sizeof h));
    OK(STATICS[b][0](d, 3));
    OK(gp_memcpy(h, d, sizeof h));
    for (int i = 0; i < 32; i++) {
      ck_assert_int_eq(h[i], 3 * i);
      ck_assert_int_eq(h[32 + i], 3 * i + 1);
      ck_assert_int_eq(h[64 + i], 3 * i + 2);
    }
    OK(gp_memset(d, 0xff, sizeof h));
    OK(STATICS[b][1](d, 5));
    OK(gp_memcpy(h, d, sizeof h));
    for (int i = 0; i < 32; i++) {
      ck_assert_int_eq(h[i], 5 * i + 2);
      ck_assert_int_eq(h[32 + i], 5 + i);
    }
  }
  ck_assert_str_eq(gp_kernel_name(GP_KERNEL_REF(kt_static_first)), "kt_static_first");
  OK(gp_free(d));
}
END_TEST

/* ---- half types --------------------------------------------------------------------- */
GP_KERNEL_DECLARE(kt_h_all_patterns);
GP_KERNEL_DECLARE(kt_h_from_float);
GP_KERNEL_DECLARE(kt_h_arith);
GP_KERNEL_DECLARE(kt_h_pairs);
enum { KT_H_OUTS = 14 };

/* The format's parameters: p significant bits, emin, largest finite value. */
typedef struct hfmt {
  int p, emin, bias, mbits;
  long double max;
  const char *name;
} hfmt_t;
static const hfmt_t F16 = {11, -14, 15, 10, 65504.0L, "binary16"};
static const hfmt_t BF16 = {8, -126, 127, 7, 0x1.fep127L, "bfloat16"};

/* The value of pattern u of format f (NAN for NaNs), from its fields. */
static long double hdecode(const hfmt_t *f, unsigned u) {
  const unsigned sign = u >> 15, e = (u >> f->mbits) & ((1u << (15 - f->mbits)) - 1u), m = u & ((1u << f->mbits) - 1u);
  const unsigned emax_field = (1u << (15 - f->mbits)) - 1u;
  long double v;
  if (e == emax_field) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexpl((long double)m, f->emin - f->mbits);
  else v = ldexpl((long double)(m | (1u << f->mbits)), (int)e - f->bias - f->mbits);
  return sign ? -v : v;
}
/* x rounded once to nearest even in format f, as its pattern (NaN: 0x7fff). */
static unsigned hround(const hfmt_t *f, long double x) {
  if (x != x) return 0x7fffu;
  const unsigned sign = signbit(x) ? 0x8000u : 0u;
  long double ax = fabsl(x);
  const unsigned inf = ((1u << (15 - f->mbits)) - 1u) << f->mbits;
  if (isinf(ax)) return sign | inf;
  if (ax == 0.0L) return sign;
  int e = ilogbl(ax);
  if (e < f->emin) e = f->emin;
  const long double r = nearbyintl(ldexpl(ax, f->p - 1 - e)); /* exact scaling, one rounding */
  const long double v = ldexpl(r, e - (f->p - 1));
  if (v > f->max) return sign | inf;
  if (v == 0.0L) return sign;
  int ev = ilogbl(v);
  if (ev < f->emin) return sign | (unsigned)ldexpl(v, f->mbits - f->emin); /* subnormal */
  const unsigned m = (unsigned)(ldexpl(v, f->mbits - ev) - ldexpl(1.0L, f->mbits));
  return sign | (unsigned)(ev + f->bias) << f->mbits | m;
}
static int is_nan_bits(const hfmt_t *f, unsigned u) { return hdecode(f, u) != hdecode(f, u); }

/* Every binary16 and bfloat16 pattern to float (exact) and back (the same pattern). */
START_TEST(half_every_pattern_round_trips) {
  const size_t N = 65536;
  float *df = NULL, *db = NULL;
  unsigned short *dfb = NULL, *dbb = NULL;
  OK(gp_malloc((void **)&df, N * 4));
  OK(gp_malloc((void **)&db, N * 4));
  OK(gp_malloc((void **)&dfb, N * 2));
  OK(gp_malloc((void **)&dbb, N * 2));
  OK(gp_memset(df, 0xff, N * 4));
  OK(gp_memset(db, 0xff, N * 4));
  void *args[] = {&df, &dfb, &db, &dbb};
  OK(gp_launch(GP_KERNEL_REF(kt_h_all_patterns), gp_dim3(256, 1, 1), gp_dim3(256, 1, 1), 0, NULL, args));
  float *hf = malloc(N * 4), *hb = malloc(N * 4);
  unsigned short *hfb = malloc(N * 2), *hbb = malloc(N * 2);
  ck_assert(hf && hb && hfb && hbb);
  OK(gp_memcpy(hf, df, N * 4));
  OK(gp_memcpy(hb, db, N * 4));
  OK(gp_memcpy(hfb, dfb, N * 2));
  OK(gp_memcpy(hbb, dbb, N * 2));
  for (unsigned u = 0; u < N; u++) {
    const hfmt_t *fs[2] = {&F16, &BF16};
    const float *got[2] = {hf, hb};
    const unsigned short *back[2] = {hfb, hbb};
    for (int k = 0; k < 2; k++) {
      const long double want = hdecode(fs[k], u);
      if (want != want) {
        ck_assert_msg(got[k][u] != got[k][u], "kt_h_all_patterns: %s 0x%04x: %g, expected NaN", fs[k]->name, u, got[k][u]);
        ck_assert_msg(is_nan_bits(fs[k], back[k][u]), "%s NaN 0x%04x back to 0x%04x", fs[k]->name, u, back[k][u]);
      } else {
        ck_assert_msg((long double)got[k][u] == want && !signbit(got[k][u]) == !signbit(want),
                      "kt_h_all_patterns: %s 0x%04x: %a, expected %La", fs[k]->name, u, got[k][u], want);
        ck_assert_msg(back[k][u] == u, "kt_h_all_patterns: %s 0x%04x back to 0x%04x", fs[k]->name, u, back[k][u]);
      }
    }
  }
  OK(gp_free(df));
  OK(gp_free(db));
  OK(gp_free(dfb));
  OK(gp_free(dbb));
  free(hf), free(hb), free(hfb), free(hbb);
}
END_TEST

/* Floats to binary16 and bfloat16: every midpoint between neighbours (ties to even), one
 * float step either side of it, and random floats of every exponent (NaN, infinities,
 * subnormals included), each against the float64 value rounded once. */
START_TEST(half_from_float_rounds_to_nearest_even) {
  enum { NR = 200000 };
  const size_t n = 3 * 2 * 65536 + NR;
  float *h = malloc(n * sizeof(float));
  ck_assert(h != NULL);
  size_t k = 0;
  const hfmt_t *fs[2] = {&F16, &BF16};
  for (int f = 0; f < 2; f++)
    for (unsigned u = 0; u < 65536; u++) {
      long double a = hdecode(fs[f], u), b = hdecode(fs[f], (u & 0x8000u) | ((u & 0x7fffu) + 1u));
      if (a != a || b != b || isinf(a) || isinf(b) || (u & 0x7fffu) == 0x7fffu) a = b = 1.0L;
      const float mid = (float)((a + b) / 2);
      h[k++] = mid;
      h[k++] = nextafterf(mid, INFINITY);
      h[k++] = nextafterf(mid, -INFINITY);
    }
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed);
  for (int i = 0; i < NR; i++) {
    uint32_t bits = (uint32_t)gp_ref_rng_next(&rng);
    float f;
    memcpy(&f, &bits, 4);
    h[k++] = f;
  }
  float *din = NULL;
  unsigned short *dh = NULL, *db = NULL;
  OK(gp_malloc((void **)&din, n * 4));
  OK(gp_malloc((void **)&dh, n * 2));
  OK(gp_malloc((void **)&db, n * 2));
  OK(gp_memcpy(din, h, n * 4));
  OK(gp_memset(dh, 0xab, n * 2));
  OK(gp_memset(db, 0xab, n * 2));
  int ni = (int)n;
  void *args[] = {&ni, &din, &dh, &db};
  OK(gp_launch(GP_KERNEL_REF(kt_h_from_float), gp_dim3((unsigned)((n + 255) / 256), 1, 1), gp_dim3(256, 1, 1), 0, NULL, args));
  unsigned short *rh = malloc(n * 2), *rb = malloc(n * 2);
  ck_assert(rh && rb);
  OK(gp_memcpy(rh, dh, n * 2));
  OK(gp_memcpy(rb, db, n * 2));
  for (size_t i = 0; i < n; i++) {
    const unsigned wh = hround(&F16, h[i]), wb = hround(&BF16, h[i]);
    if (h[i] != h[i]) {
      ck_assert_msg(is_nan_bits(&F16, rh[i]) && is_nan_bits(&BF16, rb[i]), "seed 0x%llx: NaN %a -> 0x%04x, 0x%04x",
                    (unsigned long long)g_seed, h[i], rh[i], rb[i]);
      continue;
    }
    ck_assert_msg(rh[i] == wh, "seed 0x%llx, kt_h_from_float: %a to binary16: 0x%04x, expected 0x%04x",
                  (unsigned long long)g_seed, h[i], rh[i], wh);
    ck_assert_msg(rb[i] == wb, "seed 0x%llx, kt_h_from_float: %a to bfloat16: 0x%04x, expected 0x%04x",
                  (unsigned long long)g_seed, h[i], rb[i], wb);
  }
  OK(gp_free(din));
  OK(gp_free(dh));
  OK(gp_free(db));
  free(h), free(rh), free(rb);
}
END_TEST

/* A random pattern of format f: any binary16 pattern; bfloat16 with exponents in
 * [-12, 12] (so that the float64 reference of a * b + c is exact) or a special value. */
static unsigned random_pattern(const hfmt_t *f, gp_ref_rng_t *rng) {
  uint64_t r = gp_ref_rng_next(rng);
  if (f == &F16) return (unsigned)(r & 0xffffu);
  static const unsigned special[] = {0x0000u, 0x8000u, 0x7f80u, 0xff80u, 0x7fc0u, 0x3f80u};
  if ((r & 15u) == 0) return special[(r >> 4) % 6];
  const unsigned e = (unsigned)(127 - 12 + (int)((r >> 8) % 25));
  return (unsigned)((r >> 40) & 0x8000u) | e << 7 | (unsigned)((r >> 20) & 0x7fu);
}
static void check_half_result(const hfmt_t *f, const char *what, unsigned a, unsigned b, unsigned c, unsigned got,
                              long double want) {
  const unsigned w = hround(f, want);
  if (want != want) {
    ck_assert_msg(is_nan_bits(f, got), "seed 0x%llx, kt_h_arith %s %s(0x%04x, 0x%04x, 0x%04x): 0x%04x, expected NaN",
                  (unsigned long long)g_seed, f->name, what, a, b, c, got);
    return;
  }
  ck_assert_msg(got == w, "seed 0x%llx, kt_h_arith %s %s(0x%04x, 0x%04x, 0x%04x): 0x%04x, expected 0x%04x",
                (unsigned long long)g_seed, f->name, what, a, b, c, got, w);
}

/* Every operation of the two formats against the float64 (long double) value rounded
 * once; comparisons against C's. */
START_TEST(half_arithmetic_rounds_once) {
  enum { N = 1 << 17 };
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ 0x5a5a);
  unsigned short *ha = malloc(N * 2), *hb = malloc(N * 2), *hc = malloc(N * 2), *ho = malloc((size_t)N * KT_H_OUTS * 2);
  ck_assert(ha && hb && hc && ho);
  unsigned short *da = NULL, *db = NULL, *dc = NULL, *dout = NULL;
  OK(gp_malloc((void **)&da, N * 2));
  OK(gp_malloc((void **)&db, N * 2));
  OK(gp_malloc((void **)&dc, N * 2));
  OK(gp_malloc((void **)&dout, (size_t)N * KT_H_OUTS * 2));
  for (int bf = 0; bf < 2; bf++) {
    const hfmt_t *f = bf ? &BF16 : &F16;
    for (int i = 0; i < N; i++) {
      ha[i] = (unsigned short)random_pattern(f, &rng);
      hb[i] = (unsigned short)random_pattern(f, &rng);
      hc[i] = (unsigned short)random_pattern(f, &rng);
    }
    OK(gp_memcpy(da, ha, N * 2));
    OK(gp_memcpy(db, hb, N * 2));
    OK(gp_memcpy(dc, hc, N * 2));
    OK(gp_memset(dout, 0xab, (size_t)N * KT_H_OUTS * 2));
    int n = N;
    void *args[] = {&n, &bf, &da, &db, &dc, &dout};
    OK(gp_launch(GP_KERNEL_REF(kt_h_arith), gp_dim3(N / 256, 1, 1), gp_dim3(256, 1, 1), 0, NULL, args));
    OK(gp_memcpy(ho, dout, (size_t)N * KT_H_OUTS * 2));
    for (int i = 0; i < N; i++) {
      const long double a = hdecode(f, ha[i]), b = hdecode(f, hb[i]), c = hdecode(f, hc[i]);
      const unsigned short *o = ho + (size_t)KT_H_OUTS * i;
      check_half_result(f, "__hadd", ha[i], hb[i], hc[i], o[0], a + b);
      check_half_result(f, "__hsub", ha[i], hb[i], hc[i], o[1], a - b);
      check_half_result(f, "__hmul", ha[i], hb[i], hc[i], o[2], a * b);
      check_half_result(f, "__hdiv", ha[i], hb[i], hc[i], o[3], a / b);
      check_half_result(f, "__hfma", ha[i], hb[i], hc[i], o[4], a * b + c);
      /* a NaN operand gives the other one; -0 is below +0 */
      const long double mx = a != a ? b : b != b ? a : a == b ? (signbit(a) ? b : a) : a > b ? a : b;
      const long double mn = a != a ? b : b != b ? a : a == b ? (signbit(a) ? a : b) : a < b ? a : b;
      if (mx == mx) check_half_result(f, "__hmax", ha[i], hb[i], hc[i], o[5], mx);
      if (mn == mn) check_half_result(f, "__hmin", ha[i], hb[i], hc[i], o[6], mn);
      if (a == a) {
        ck_assert_uint_eq(o[7], ha[i] ^ 0x8000u);
        ck_assert_uint_eq(o[8], ha[i] & 0x7fffu);
      }
      check_half_result(f, "hsqrt", ha[i], hb[i], hc[i], o[9], sqrtl(a));
      check_half_result(f, "+=", ha[i], hb[i], hc[i], o[10], a + b);
      const long double s = hdecode(f, hround(f, a + b));
      check_half_result(f, "(a + b) * c", ha[i], hb[i], hc[i], o[11], s * c);
      const unsigned cmp = (unsigned)((a < b) | (a <= b) << 1 | (a > b) << 2 | (a >= b) << 3 | (a == b) << 4 |
                                      (a < b || a > b) << 5 | !(a >= b) << 6 | !(a < b || a > b) << 7 |
                                      (a != a) << 8 | (a < b) << 9 | (a == b) << 10);
      ck_assert_msg(o[12] == cmp, "seed 0x%llx, kt_h_arith %s comparisons of 0x%04x, 0x%04x: 0x%03x, expected 0x%03x",
                    (unsigned long long)g_seed, f->name, ha[i], hb[i], o[12], cmp);
    }
  }
  OK(gp_free(da));
  OK(gp_free(db));
  OK(gp_free(dc));
  OK(gp_free(dout));
  free(ha), free(hb), free(hc), free(ho);
}
END_TEST

/* Pair forms, the shuffles of the four types and atomicAdd on the pairs, 128 threads. */
START_TEST(half_pairs_shuffles_atomics) {
  enum { T = 128 };
  float *dp = NULL, *ds = NULL, *dacc = NULL;
  void *hacc = NULL, *bacc = NULL;
  OK(gp_malloc((void **)&dp, T * 8 * 4));
  OK(gp_malloc((void **)&ds, T * 4 * 4));
  OK(gp_malloc((void **)&dacc, 16));
  OK(gp_malloc(&hacc, 4));
  OK(gp_malloc(&bacc, 4));
  OK(gp_memset(dp, 0xff, T * 8 * 4));
  OK(gp_memset(ds, 0xff, T * 4 * 4));
  OK(gp_memset(hacc, 0, 4));
  OK(gp_memset(bacc, 0, 4));
  void *args[] = {&dp, &ds, &hacc, &bacc, &dacc};
  OK(gp_launch(GP_KERNEL_REF(kt_h_pairs), gp_dim3(1, 1, 1), gp_dim3(T, 1, 1), 0, NULL, args));
  float p[T * 8], s[T * 4], acc[4];
  OK(gp_memcpy(p, dp, sizeof p));
  OK(gp_memcpy(s, ds, sizeof s));
  OK(gp_memcpy(acc, dacc, sizeof acc));
  for (int t = 0; t < T; t++) {
    const long double x = hdecode(&F16, hround(&F16, t)), y = hdecode(&F16, hround(&F16, t + 0.5L));
    const long double want[8] = {
        hdecode(&F16, hround(&F16, x + 2)), hdecode(&F16, hround(&F16, y + 0.25L)),
        hdecode(&F16, hround(&F16, x * 2)), hdecode(&F16, hround(&F16, y * 0.25L)),
        hdecode(&F16, hround(&F16, x * 2 + 1)), hdecode(&F16, hround(&F16, y * 0.25L + 1)),
        hdecode(&BF16, hround(&BF16, hdecode(&BF16, hround(&BF16, t)) * 2 + 1)),
        hdecode(&BF16, hround(&BF16, -hdecode(&BF16, hround(&BF16, t)) * 0.5L + 1))};
    for (int k = 0; k < 8; k++)
      ck_assert_msg(p[8 * t + k] == (float)want[k], "kt_h_pairs thread %d pair value %d: %g, expected %Lg", t, k,
                    p[8 * t + k], want[k]);
    const int src = t ^ 1;
    const float ws[4] = {(float)src, (float)src, (float)hdecode(&BF16, hround(&BF16, src)),
                         (float)hdecode(&BF16, hround(&BF16, src))};
    for (int k = 0; k < 4; k++)
      ck_assert_msg(s[4 * t + k] == ws[k], "kt_h_pairs thread %d shuffle %d: %g, expected %g", t, k, s[4 * t + k], ws[k]);
  }
  ck_assert_msg(acc[0] == T && acc[1] == 2 * T && acc[2] == T && acc[3] == 2 * T,
                "atomicAdd on __half2 / __nv_bfloat162: (%g, %g), (%g, %g)", acc[0], acc[1], acc[2], acc[3]);
  OK(gp_free(dp));
  OK(gp_free(ds));
  OK(gp_free(dacc));
  OK(gp_free(hacc));
  OK(gp_free(bacc));
}
END_TEST

/* ---- cooperative groups -------------------------------------------------------------- */
#define CG_DECLARE(sfx)                                                                     \
  GP_KERNEL_DECLARE(kt_cg_tile_1##sfx);                                                     \
  GP_KERNEL_DECLARE(kt_cg_tile_2##sfx);                                                     \
  GP_KERNEL_DECLARE(kt_cg_tile_4##sfx);                                                     \
  GP_KERNEL_DECLARE(kt_cg_tile_8##sfx);                                                     \
  GP_KERNEL_DECLARE(kt_cg_tile_16##sfx);                                                    \
  GP_KERNEL_DECLARE(kt_cg_tile_32##sfx);                                                    \
  GP_KERNEL_DECLARE(kt_cg_block##sfx);                                                      \
  GP_KERNEL_DECLARE(kt_cg_grid##sfx);                                                       \
  GP_KERNEL_DECLARE(kt_cg_part##sfx);                                                       \
  GP_KERNEL_DECLARE(kt_cg_multiwarp##sfx);                                                  \
  GP_KERNEL_DECLARE(kt_cg_multiwarp_no_scratch##sfx)
CG_DECLARE();
#ifdef GP_BUILD_CPU
CG_DECLARE(_w64);
GP_KERNEL_DECLARE(kt_cg_tile_64_w64);
#endif
enum { KT_CG_OUTS = 20, KT_CG_BOUTS = 12, KT_CG_POUTS = 30 };

/* The warp width kernel k runs at: its own, or 64 where GP_CPU_WARP_SIZE=64 runs the
 * width-64 build of every kernel on the CPU. */
static int run_width(gp_kernel_t k) {
  const char *e = getenv("GP_CPU_WARP_SIZE");
  return gp_backend() == GP_BACKEND_CPU && e && atoi(e) == 64 ? 64 : k->warp_size;
}

/* The tiles of every size at each width: every member against the rule computed here. */
START_TEST(cg_tile_members_every_size) {
  enum { B = 128, G = 2, T = B * G };
  gp_kernel_t tiles[NBUILDS][7] = {{GP_KERNEL_REF(kt_cg_tile_1), GP_KERNEL_REF(kt_cg_tile_2), GP_KERNEL_REF(kt_cg_tile_4),
                                    GP_KERNEL_REF(kt_cg_tile_8), GP_KERNEL_REF(kt_cg_tile_16), GP_KERNEL_REF(kt_cg_tile_32), NULL}
#ifdef GP_BUILD_CPU
                                   , {GP_KERNEL_REF(kt_cg_tile_1_w64), GP_KERNEL_REF(kt_cg_tile_2_w64),
                                      GP_KERNEL_REF(kt_cg_tile_4_w64), GP_KERNEL_REF(kt_cg_tile_8_w64),
                                      GP_KERNEL_REF(kt_cg_tile_16_w64), GP_KERNEL_REF(kt_cg_tile_32_w64),
                                      GP_KERNEL_REF(kt_cg_tile_64_w64)}
#endif
  };
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ 0xc9);
  int v[T], *o = malloc((size_t)T * KT_CG_OUTS * sizeof(int));
  ck_assert(o != NULL);
  for (int i = 0; i < T; i++) v[i] = (int)(gp_ref_rng_next(&rng) % 8u);
  int *din = NULL, *dout = NULL;
  OK(gp_malloc((void **)&din, sizeof v));
  OK(gp_malloc((void **)&dout, (size_t)T * KT_CG_OUTS * sizeof(int)));
  OK(gp_memcpy(din, v, sizeof v));
  for (int b = 0; b < NBUILDS; b++)
    for (int s = 0; s < 7 && tiles[b][s]; s++) {
      const int N = 1 << s;
      OK(gp_memset(dout, 0xab, (size_t)T * KT_CG_OUTS * sizeof(int)));
      void *args[] = {&din, &dout};
      OK(gp_launch(tiles[b][s], gp_dim3(G, 1, 1), gp_dim3(B, 1, 1), 0, NULL, args));
      OK(gp_memcpy(o, dout, (size_t)T * KT_CG_OUTS * sizeof(int)));
      for (int g = 0; g < T; g++) {
        const int tid = g % B, r = tid % N, base = g - r;
        int any = 0, all = 1, sum = 0, mn = 1 << 30, mx = -1, band = -1, bor = 0, bxor = 0;
        uint64_t bal = 0, mat = 0;
        for (int k = 0; k < N; k++) {
          const int w = v[base + k];
          any |= w & 1, all &= w > 0, sum += w, band &= w, bor |= w, bxor ^= w;
          mn = w < mn ? w : mn, mx = w > mx ? w : mx;
          if (w & 1) bal |= (uint64_t)1 << k;
          if (w % 3 == v[g] % 3) mat |= (uint64_t)1 << k;
        }
        const int want[KT_CG_OUTS] = {r, N * 1000 + N, tid / N, B / N, v[base + (r + 1) % N],
                                      r + 1 < N ? v[g + 1] : v[g], r >= 1 ? v[g - 1] : v[g], N > 1 ? v[g ^ 1] : v[g],
                                      any, all, (int)(uint32_t)bal, (int)(uint32_t)(bal >> 32), (int)(uint32_t)mat,
                                      (int)(uint32_t)(mat >> 32), sum, mn, mx, band, bor, bxor};
        static const char *what[KT_CG_OUTS] = {"thread_rank", "size", "meta_group_rank", "meta_group_size", "shfl",
                                                "shfl_down", "shfl_up", "shfl_xor", "any", "all", "ballot lo",
                                                "ballot hi", "match_any lo", "match_any hi", "reduce plus",
                                                "reduce less", "reduce greater", "reduce bit_and", "reduce bit_or",
                                                "reduce bit_xor"};
        for (int k = 0; k < KT_CG_OUTS; k++)
          ck_assert_msg(o[(size_t)KT_CG_OUTS * g + k] == want[k],
                        "seed 0x%llx, %s (warp width %d), thread %d: %s = %d, expected %d", (unsigned long long)g_seed,
                        gp_kernel_name(tiles[b][s]), tiles[b][s]->warp_size, g, what[k], o[(size_t)KT_CG_OUTS * g + k],
                        want[k]);
      }
    }
  OK(gp_free(din));
  OK(gp_free(dout));
  free(o);
}
END_TEST

/* The block, a run-time tile of 16 and the coalesced group of blocks of 96 threads (the
 * last warp is partial at width 64). */
START_TEST(cg_block_dynamic_tile_coalesced) {
  enum { B = 96, G = 2, T = B * G };
  gp_kernel_t ks[NBUILDS] = {GP_KERNEL_REF(kt_cg_block)
#ifdef GP_BUILD_CPU
                             , GP_KERNEL_REF(kt_cg_block_w64)
#endif
  };
  int *d = NULL, o[T * KT_CG_BOUTS];
  OK(gp_malloc((void **)&d, sizeof o));
  for (int b = 0; b < NBUILDS; b++) {
    const int W = run_width(ks[b]);
    OK(gp_memset(d, 0xab, sizeof o));
    void *args[] = {&d};
    OK(gp_launch(ks[b], gp_dim3(G, 1, 1), gp_dim3(B, 1, 1), 0, NULL, args));
    OK(gp_memcpy(o, d, sizeof o));
    for (int g = 0; g < T; g++) {
      const int tid = g % B, wbase = tid - tid % W, csize = B - wbase < W ? B - wbase : W, cr = tid % W;
      const int want[KT_CG_BOUTS] = {tid, B, B, g / B, tid, B, tid % 16, 16, tid / 16, B / 16, csize,
                                     cr * 1000 + (csize - 1 - cr)};
      for (int k = 0; k < KT_CG_BOUTS; k++)
        ck_assert_msg(o[KT_CG_BOUTS * g + k] == want[k], "kt_cg_block (warp width %d), thread %d, value %d: %d, expected %d",
                      W, g, k, o[KT_CG_BOUTS * g + k], want[k]);
    }
  }
  OK(gp_free(d));
}
END_TEST

/* Groups as thread_group, binary and labeled partitions (reduced in diverged branches),
 * reduce() of a user struct, shuffles of structs and __reduce_*_sync, blocks of 96
 * threads (the last warp is partial at width 64): every value against the groups
 * computed here from the lanes of each warp. */
START_TEST(cg_partitions_erased_groups_struct_shuffles) {
  enum { B = 96, G = 2, T = B * G };
  gp_kernel_t ks[NBUILDS] = {GP_KERNEL_REF(kt_cg_part)
#ifdef GP_BUILD_CPU
                             , GP_KERNEL_REF(kt_cg_part_w64)
#endif
  };
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ 0x9a);
  int v[T], *o = malloc((size_t)T * KT_CG_POUTS * sizeof(int));
  ck_assert(o != NULL);
  for (int i = 0; i < T; i++) v[i] = (int)(gp_ref_rng_next(&rng) % 8u);
  int *din = NULL, *dout = NULL;
  OK(gp_malloc((void **)&din, sizeof v));
  OK(gp_malloc((void **)&dout, (size_t)T * KT_CG_POUTS * sizeof(int)));
  OK(gp_memcpy(din, v, sizeof v));
  for (int b = 0; b < NBUILDS; b++) {
    const int W = run_width(ks[b]);
    OK(gp_memset(dout, 0xab, (size_t)T * KT_CG_POUTS * sizeof(int)));
    void *args[] = {&din, &dout};
    OK(gp_launch(ks[b], gp_dim3(G, 1, 1), gp_dim3(B, 1, 1), 0, NULL, args));
    OK(gp_memcpy(o, dout, (size_t)T * KT_CG_POUTS * sizeof(int)));
    for (int g = 0; g < T; g++) {
      const int tid = g % B, l = tid % W, wb = g - l, wl = B - (tid - l) < W ? B - (tid - l) : W;
      const int r8 = tid % 8, b8 = g - r8, x = v[g];
      int ps = 0, pr = 0, psum = 0, pmax = -1, pfirst = -1, ls = 0, lr = 0, lsum = 0, llast = 0, pls = 0, plsum = 0;
      int pmin = 1 << 30, pand = -1, por = 0, pxor = 0;
      for (int k = 0; k < wl; k++) {
        const int w = v[wb + k];
        if ((w & 1) == (x & 1)) {
          ps++, pr += k < l, psum += w, pmax = w > pmax ? w : pmax, pmin = w < pmin ? w : pmin;
          pand &= w, por |= w, pxor ^= w;
          if (pfirst < 0) pfirst = w;
          if (w % 3 == x % 3) pls++, plsum += w;
        }
        if (w % 3 == x % 3) ls++, lr += k < l, lsum += w, llast = w;
      }
      int ssum = 0, smax = -1;
      for (int k = 0; k < 8; k++) ssum += v[b8 + k], smax = v[b8 + k] > smax ? v[b8 + k] : smax;
      const int want[KT_CG_POUTS] = {tid * 1000 + B, r8 * 1000 + 8, (tid % 16) * 1000 + 16, l * 1000 + wl,
                                     ps, pr, psum, pmax, pfirst, ls, lr, lsum, llast, pls, plsum, ssum, smax, 255,
                                     v[b8 + (r8 + 1) % 8] + 2, r8 + 1 < 8 ? v[g + 1] + 1 : x + 1, v[g ^ 1] + 3,
                                     r8 >= 1 ? v[g - 1] : x, v[g ^ 1] + 1, 3 * v[b8],
                                     psum * 1000 + pmin * 10 + pmin, pmax * 1000 + pmax * 10 + psum % 10,
                                     pand * 100 + por, pxor, psum, pmax};
      static const char *what[KT_CG_POUTS] = {
          "thread_group of the block", "thread_group of a tile of 8", "thread_group of tiled_partition(b, 16)",
          "thread_group of coalesced_threads()", "binary_partition size", "binary_partition thread_rank",
          "binary_partition reduce plus", "binary_partition reduce greater", "binary_partition shfl(v, 0)",
          "labeled_partition size", "labeled_partition thread_rank", "labeled_partition reduce plus",
          "labeled_partition shfl(v, size - 1)", "labeled_partition of a coalesced group: size",
          "labeled_partition of a coalesced group: reduce plus", "struct reduce: sum", "struct reduce: max",
          "struct reduce: tag", "struct shfl", "struct shfl_down", "struct shfl_xor", "struct shfl_up",
          "struct gp_shfl_xor", "6-byte struct gp_shfl width 8", "__reduce_add/min_sync", "__reduce_max/add_sync",
          "__reduce_and/or_sync", "__reduce_xor_sync", "struct reduce over a coalesced group: sum",
          "struct reduce over a coalesced group: max"};
      for (int k = 0; k < KT_CG_POUTS; k++)
        ck_assert_msg(o[(size_t)KT_CG_POUTS * g + k] == want[k],
                      "seed 0x%llx, kt_cg_part (warp width %d), thread %d: %s = %d, expected %d",
                      (unsigned long long)g_seed, W, g, what[k], o[(size_t)KT_CG_POUTS * g + k], want[k]);
    }
  }
  OK(gp_free(din));
  OK(gp_free(dout));
  free(o);
}
END_TEST

/* Tiles of 128 threads, several warps at either width, reduced through the block's
 * block_tile_memory: ranks, meta groups, the sum and the maximum of each tile. */
START_TEST(cg_multiwarp_tiles_reduce) {
  enum { B = 256, G = 2, T = B * G, N = 128 };
  gp_kernel_t ks[NBUILDS] = {GP_KERNEL_REF(kt_cg_multiwarp)
#ifdef GP_BUILD_CPU
                             , GP_KERNEL_REF(kt_cg_multiwarp_w64)
#endif
  };
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ 0x77);
  int v[T], o[3 * T];
  for (int i = 0; i < T; i++) v[i] = (int)(gp_ref_rng_next(&rng) % 1000u);
  int *din = NULL, *dout = NULL;
  OK(gp_malloc((void **)&din, sizeof v));
  OK(gp_malloc((void **)&dout, sizeof o));
  OK(gp_memcpy(din, v, sizeof v));
  for (int b = 0; b < NBUILDS; b++) {
    OK(gp_memset(dout, 0xab, sizeof o));
    void *args[] = {&din, &dout};
    OK(gp_launch(ks[b], gp_dim3(G, 1, 1), gp_dim3(B, 1, 1), 0, NULL, args));
    OK(gp_memcpy(o, dout, sizeof o));
    for (int g = 0; g < T; g++) {
      const int tid = g % B, base = g - tid % N;
      int sum = 0, mx = -1;
      for (int k = 0; k < N; k++) sum += v[base + k], mx = v[base + k] > mx ? v[base + k] : mx;
      const int want[3] = {(tid % N) * 1000 + (tid / N) * 10 + B / N, sum, mx};
      for (int k = 0; k < 3; k++)
        ck_assert_msg(o[3 * g + k] == want[k], "seed 0x%llx, kt_cg_multiwarp (warp width %d), thread %d, value %d: %d, expected %d",
                      (unsigned long long)g_seed, run_width(ks[b]), g, k, o[3 * g + k], want[k]);
    }
  }
  OK(gp_free(din));
  OK(gp_free(dout));
}
END_TEST

/* A tile of several warps reduced without the block's block_tile_memory fails the launch
 * with the reason (on the CPU; a GPU traps). */
START_TEST(cg_multiwarp_reduce_without_scratch_fails) {
  SKIP_IF(gp_backend() != GP_BACKEND_CPU, "a trap is sticky on a GPU: the process would be done");
  int *d = NULL;
  OK(gp_malloc((void **)&d, 256 * sizeof(int)));
  void *args[] = {&d};
  OK(gp_launch(GP_KERNEL_REF(kt_cg_multiwarp_no_scratch), gp_dim3(1, 1, 1), gp_dim3(256, 1, 1), 0, NULL, args));
  gp_status_t s = gp_stream_synchronize(NULL);
  ck_assert_msg(s == GP_ERROR_LAUNCH_FAILED, "synchronize -> %s", gp_status_name(s));
  const char *msg = gp_last_error_message();
  ck_assert_msg(strstr(msg, "kt_cg_multiwarp_no_scratch") && strstr(msg, "block_tile_memory"), "message '%s'", msg);
  (void)gp_get_last_error();
  OK(gp_free(d));
}
END_TEST

/* grid_group::sync in a cooperative launch: every block sees every block's write. */
START_TEST(cg_grid_sync) {
  enum { B = 64, GMAX = 4 };
  gp_kernel_t ks[NBUILDS] = {GP_KERNEL_REF(kt_cg_grid)
#ifdef GP_BUILD_CPU
                             , GP_KERNEL_REF(kt_cg_grid_w64)
#endif
  };
  /* as many blocks as can be resident together (a cooperative launch's limit), up to 4 */
  int per_mp = 0, dev = 0;
  gp_device_props_t props;
  gp_device_props_init(&props);
  OK(gp_device_get(&dev));
  OK(gp_device_get_props(&props, dev));
  OK(gp_occupancy_max_active_blocks(&per_mp, ks[0], B, 0));
  const int G = per_mp * props.multiprocessor_count < GMAX ? per_mp * props.multiprocessor_count : GMAX, T = B * G;
  ck_assert_int_ge(G, 1);
  int *buf = NULL, *d = NULL, o[B * GMAX + 2];
  OK(gp_malloc((void **)&buf, G * sizeof(int)));
  OK(gp_malloc((void **)&d, sizeof o));
  for (int b = 0; b < NBUILDS; b++) {
    OK(gp_memset(buf, 0, G * sizeof(int)));
    OK(gp_memset(d, 0xab, sizeof o));
    gp_launch_config_t c;
    gp_launch_config_init(&c);
    c.grid = gp_dim3(G, 1, 1);
    c.block = gp_dim3(B, 1, 1);
    c.cooperative = 1;
    void *args[] = {&buf, &d};
    OK(gp_launch_ex(ks[b], &c, args));
    OK(gp_memcpy(o, d, sizeof o));
    for (int i = 0; i < T; i++)
      ck_assert_msg(o[i] == G * (G + 1) / 2, "kt_cg_grid build %d, %d blocks, thread %d: %d, expected %d", b, G, i, o[i],
                    G * (G + 1) / 2);
    ck_assert_int_eq(o[T], T);
    ck_assert_int_eq(o[T + 1], G);
  }
  OK(gp_free(buf));
  OK(gp_free(d));
}
END_TEST

/* ---- built-ins and dialect surprises ----------------------------------------------------- */
GP_KERNEL_DECLARE(kt_builtins);
GP_KERNEL_DECLARE(kt_assert_after);
typedef struct kt_int2 {
  int x, y;
} __attribute__((aligned(8))) kt_int2_t;

/* Every built-in of kt_builtins against C's arithmetic on the same operands. */
START_TEST(builtins_match_cuda) {
  static const kt_int2_t ops[] = {{-123457, 98765}, {0x7f012345, 0x00f00010}, {-1, -1}, {0x00800000, 3}};
  unsigned *d = NULL, o[15];
  int *counter = NULL;
  OK(gp_malloc((void **)&d, sizeof o));
  OK(gp_malloc((void **)&counter, sizeof(int)));
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    const int x = ops[i].x, y = ops[i].y;
    OK(gp_memset(d, 0xab, sizeof o));
    OK(gp_memset(counter, 0, sizeof(int)));
    kt_int2_t p = ops[i];
    void *args[] = {&p, &d, &counter};
    OK(gp_launch(GP_KERNEL_REF(kt_builtins), gp_dim3(1, 1, 1), gp_dim3(1, 1, 1), 0, NULL, args));
    OK(gp_memcpy(o, d, sizeof o));
    /* the low 24 bits, sign-extended */
    const int64_t sx = (int64_t)((x & 0xffffff) ^ 0x800000) - 0x800000, sy = (int64_t)((y & 0xffffff) ^ 0x800000) - 0x800000;
    const unsigned want[15] = {(unsigned)(uint64_t)(sx * sy),
                               (unsigned)(((uint64_t)x & 0xffffffu) * ((uint64_t)y & 0xffffffu)),
                               (unsigned)(int)(((int64_t)x * y) >> 32),
                               (unsigned)(((uint64_t)(uint32_t)x * (uint32_t)y) >> 32),
                               5u,
                               0xffffffffu,
                               16u,
                               257u,
                               102u,
                               65544u,
                               50u + 2u * (unsigned)x + 2u * (unsigned)y,
                               11u,
                               12u,
                               13u,
                               14u};
    static const char *what[15] = {"__mul24", "__umul24", "__mulhi", "__umulhi", "min(int, unsigned)",
                                   "max(int, unsigned)", "__align__(16)", "uchar4", "char4, short4, ushort2",
                                   "ushort2, short4", "scoped atomics and cache-hinted loads", "__stcs", "__stcg",
                                   "__stwb", "__stwt"};
    for (int k = 0; k < 15; k++)
      ck_assert_msg(o[k] == want[k], "kt_builtins (%d, %d): %s = 0x%x, expected 0x%x", x, y, what[k], o[k], want[k]);
  }
  OK(gp_free(d));
  OK(gp_free(counter));
}
END_TEST

GP_KERNEL_DECLARE(kt_match);
#ifdef GP_BUILD_CPU
GP_KERNEL_DECLARE(kt_match_w64);
#endif

/* The lanes k of thread g's warp (width W) whose value equals g's, among the lanes of
 * lanes (a bit set). */
static uint64_t match_ref(const int *v, int g, int W, uint64_t lanes) {
  const int base = g - g % W;
  uint64_t m = 0;
  for (int k = 0; k < W; k++)
    if (((lanes >> k) & 1u) && v[base + k] == v[g]) m |= (uint64_t)1 << k;
  return m;
}

/* __match_any_sync / __match_all_sync (CUDA C++ Programming Guide, Warp Match Functions):
 * the lanes holding the same value, full and partial masks, 32- and 64-bit values; and
 * umin / umax / llmin / llmax / ullmin / ullmax (CUDA Math API, integer intrinsics). */
START_TEST(warp_match_and_integer_minmax) {
  enum { T = 128, K = 6 };
  gp_kernel_t ks[NBUILDS] = {GP_KERNEL_REF(kt_match)
#ifdef GP_BUILD_CPU
                             , GP_KERNEL_REF(kt_match_w64)
#endif
  };
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ 0x3a7c);
  int v[T];
  unsigned long long o[T * K];
  for (int i = 0; i < T; i++) v[i] = (int)(gp_ref_rng_next(&rng) % 4u);
  int *din = NULL;
  unsigned long long *dout = NULL;
  OK(gp_malloc((void **)&din, sizeof v));
  OK(gp_malloc((void **)&dout, sizeof o));
  OK(gp_memcpy(din, v, sizeof v));
  for (int b = 0; b < NBUILDS; b++) {
    const int W = run_width(ks[b]);
    const uint64_t full = W == 64 ? ~(uint64_t)0 : 0xffffffffu, even = 0x5555555555555555ull & full;
    OK(gp_memset(dout, 0xab, sizeof o));
    void *args[] = {&din, &dout};
    OK(gp_launch(ks[b], gp_dim3(1, 1, 1), gp_dim3(T, 1, 1), 0, NULL, args));
    OK(gp_memcpy(o, dout, sizeof o));
    for (int g = 0; g < T; g++) {
      const int warp = g / W, base = g - g % W;
      int same = 1;
      for (int k = 0; k < W; k++) same &= v[base + k] == v[g];
      same |= warp % 2 == 0;
      const unsigned x = (unsigned)v[g];
      const unsigned long long want[K] = {
          match_ref(v, g, W, full), match_ref(v, g, W, full),
          g % 2 == 0 ? match_ref(v, g, W, even) : 0xababababababababull, same ? full : 0, (unsigned long long)same,
          (x < 2 ? x : 2u) | (x > 2 ? x : 2u) << 4 | (unsigned long long)((x > 2 ? -(int)x : -2) + 8) << 8 |
              (unsigned long long)((x < 2 ? -(int)x : -2) + 8) << 12 | (unsigned long long)x << 16 | 1ull << 20};
      static const char *what[K] = {"gp_match_any(int)", "__match_any_sync(full, u64)", "__match_any_sync(even, float)",
                                    "__match_all_sync(full, double)", "__match_all_sync pred", "umin .. ullmax"};
      for (int k = 0; k < K; k++)
        ck_assert_msg(o[K * g + k] == want[k], "seed 0x%llx, kt_match (warp width %d), thread %d: %s = 0x%llx, expected 0x%llx",
                      (unsigned long long)g_seed, W, g, what[k], o[K * g + k], want[k]);
    }
  }
  OK(gp_free(din));
  OK(gp_free(dout));
}
END_TEST

/* <assert.h> included after gpuport/kernel.h: a failed assert fails the launch, and the
 * process (and library) carry on. */
START_TEST(assert_after_assert_h_fails_launch) {
  SKIP_IF(gp_backend() != GP_BACKEND_CPU, "an assert is sticky on a GPU: the process would be done");
  int *d = NULL;
  OK(gp_malloc((void **)&d, 32 * sizeof(int)));
  void *args[] = {&d};
  OK(gp_launch(GP_KERNEL_REF(kt_assert_after), gp_dim3(1, 1, 1), gp_dim3(32, 1, 1), 0, NULL, args));
  gp_status_t s = gp_stream_synchronize(NULL);
  ck_assert_msg(s == GP_ERROR_LAUNCH_FAILED, "synchronize -> %s", gp_status_name(s));
  const char *msg = gp_last_error_message();
  ck_assert_msg(strstr(msg, "kt_assert_after") && strstr(msg, "threadIdx.x != 3") && strstr(msg, "thread (3,0,0)"),
                "message '%s'", msg);
  (void)gp_get_last_error();
  OK(gp_memset(d, 0, 32 * sizeof(int)));
  OK(gp_device_synchronize());
  OK(gp_free(d));
}
END_TEST

static Suite *dialect_suite(void) {
  Suite *s = suite_create("dialect");
  TCase *tt = tcase_create("templates");
  tcase_set_timeout(tt, 120);
  tcase_add_test(tt, template_reduce_switch_every_block_size);
  tcase_add_test(tt, template_exported_instance);
  tcase_add_test(tt, static_and_header_kernels);
  suite_add_tcase(s, tt);
  TCase *th = tcase_create("half");
  tcase_set_timeout(th, 120);
  tcase_add_test(th, half_every_pattern_round_trips);
  tcase_add_test(th, half_from_float_rounds_to_nearest_even);
  tcase_add_test(th, half_arithmetic_rounds_once);
  tcase_add_test(th, half_pairs_shuffles_atomics);
  suite_add_tcase(s, th);
  TCase *tc = tcase_create("cooperative groups");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, cg_tile_members_every_size);
  tcase_add_test(tc, cg_block_dynamic_tile_coalesced);
  tcase_add_test(tc, cg_grid_sync);
  tcase_add_test(tc, cg_partitions_erased_groups_struct_shuffles);
  tcase_add_test(tc, cg_multiwarp_tiles_reduce);
  tcase_add_test(tc, cg_multiwarp_reduce_without_scratch_fails);
  suite_add_tcase(s, tc);
  TCase *tb = tcase_create("built-ins");
  tcase_set_timeout(tb, 60);
  tcase_add_test(tb, builtins_match_cuda);
  tcase_add_test(tb, assert_after_assert_h_fails_launch);
  tcase_add_test(tb, warp_match_and_integer_minmax);
  suite_add_tcase(s, tb);
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  print_seed("test_dialect", (unsigned long long)g_seed);
  return run_suite("test_dialect", dialect_suite());
}
