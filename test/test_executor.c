/*
 * test_executor.c - what real CUDA code needs beyond the basics, through the public
 * API, on every backend (the CPU checks at warp width 32 and 64): device variables
 * with gp_memcpy_to_symbol / gp_memcpy_from_symbol, f16 and bf16 atomics,
 * cooperative launches (gp_launch_ex, gp_grid_sync, every block resident at once),
 * and on the CPU the faults of GPU threads: stack overflow and wild pointers fail the
 * launch naming kernel, block and thread, and the process carries on; under
 * AddressSanitizer an out-of-bounds read in a kernel is reported with its source line.
 * Kernels: test/kernels/kt_exec.cu.
 *
 * Inputs are random (seed printed; GP_TEST_SEED replays), outputs are poisoned before
 * each run and compared element by element with float64 references.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <gpuport.h>
#include "check_util.h"
#include "ref.h"
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

GP_KERNEL_DECLARE(kt_poly);
GP_KERNEL_DECLARE(kt_atomic_half);
GP_KERNEL_DECLARE(kt_coop_sum);
GP_KERNEL_DECLARE(kt_coop_flags);
GP_KERNEL_DECLARE(kt_coop_bad);
GP_KERNEL_DECLARE(kt_vadd);
GP_SYMBOL_DECLARE(kt_coef);
GP_SYMBOL_DECLARE(kt_calls);
#ifdef GP_BUILD_CPU
GP_KERNEL_DECLARE(kt_poly_w64);
GP_KERNEL_DECLARE(kt_atomic_half_w64);
GP_KERNEL_DECLARE(kt_coop_sum_w64);
GP_KERNEL_DECLARE(kt_recurse);
GP_KERNEL_DECLARE(kt_wild);
GP_KERNEL_DECLARE(kt_oob);
GP_KERNEL_DECLARE(kt_printf);
GP_KERNEL_DECLARE(kt_printf_bad);
GP_KERNEL_DECLARE(kt_spin);
GP_SYMBOL_DECLARE(kt_coef_w64);
GP_SYMBOL_DECLARE(kt_calls_w64);
#define NBUILDS 2
#else
#define NBUILDS 1
#endif

static uint64_t g_seed;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *upload(const void *h, size_t bytes) {
  void *d = NULL;
  OK(gp_malloc(&d, bytes));
  OK(gp_memcpy(d, h, bytes));
  return d;
}

static void *dev_nan(size_t nfloats) {
  void *d = NULL;
  OK(gp_malloc(&d, nfloats * sizeof(float)));
  OK(gp_memset_d32(d, 0x7fc00000u, nfloats)); /* NaN: an unwritten output fails */
  return d;
}

/* Checks that the library still runs a kernel after a failed launch. */
static void still_usable(void) {
  int n = 3000;
  float *h = malloc((size_t)n * sizeof(float));
  for (int i = 0; i < n; i++) h[i] = (float)(i + 1);
  float *a = upload(h, (size_t)n * sizeof(float)), *c = dev_nan((size_t)n);
  void *args[] = {&n, &a, &a, &c};
  OK(gp_launch(GP_KERNEL_REF(kt_vadd), gp_dim3((unsigned)(n + 127) / 128, 1, 1), gp_dim3(128, 1, 1), 0, NULL, args));
  OK(gp_memcpy(h, c, (size_t)n * sizeof(float)));
  for (int i = 0; i < n; i++) ck_assert(h[i] == 2.0f * (float)(i + 1));
  OK(gp_free(a));
  OK(gp_free(c));
  free(h);
}

/* ---- device variables -------------------------------------------------------------------- */
#define NCOEF 8

/* Runs kt_poly on n random x with the coefficients coef (already in the variable) and
 * compares with float64 Horner; bound: 2 u (NCOEF) sum |c_k| |x|^k per element. */
static void poly_check(gp_kernel_t k, gp_stream_t s, const float *coef, int n, const float *hx, float *dx) {
  float *dy = dev_nan((size_t)n), *hy = malloc((size_t)n * sizeof(float));
  double *ref = malloc((size_t)n * sizeof(double)), *bound = malloc((size_t)n * sizeof(double));
  void *args[] = {&n, &dx, &dy};
  OK(gp_launch(k, gp_dim3((unsigned)(n + 63) / 64, 1, 1), gp_dim3(64, 1, 1), 0, s, args));
  OK(gp_memcpy_async(hy, dy, (size_t)n * sizeof(float), s));
  OK(gp_stream_synchronize(s));
  for (int i = 0; i < n; i++) {
    double acc = 0, mag = 0, p = 1;
    for (int c = NCOEF - 1; c >= 0; c--) acc = acc * hx[i] + coef[c];
    for (int c = 0; c < NCOEF; c++, p *= fabs(hx[i])) mag += fabs(coef[c]) * p;
    ref[i] = acc;
    bound[i] = 2.0 * NCOEF * gp_ref_unit_roundoff(GP_F32) * mag;
  }
  gp_ref_cmp_t cmp;
  char line[256];
  gp_ref_compare(&cmp, hy, GP_F32, ref, bound, 0, (size_t)n);
  gp_ref_cmp_format(&cmp, line, sizeof line);
  ck_assert_msg(cmp.n_bad == 0 && cmp.rel_norm_err < 1e-6, "%s, width %d, seed %llu: %s", k->name, k->warp_size,
                (unsigned long long)g_seed, line);
  OK(gp_free(dy));
  free(hy);
  free(ref);
  free(bound);
}

/* gp_memcpy_to_symbol sets a __constant__ array kernels read, in whole and at an offset,
 * synchronously and on a stream; gp_memcpy_from_symbol reads it back; a __device__
 * counter is reached through gp_symbol_address and the copies. */
START_TEST(symbols_constant_and_device) {
  gp_kernel_t ks[NBUILDS] = {GP_KERNEL_REF(kt_poly)
#ifdef GP_BUILD_CPU
                             , GP_KERNEL_REF(kt_poly_w64)
#endif
  };
  gp_symbol_t counters[NBUILDS] = {GP_SYMBOL_REF(kt_calls)
#ifdef GP_BUILD_CPU
                                   , GP_SYMBOL_REF(kt_calls_w64)
#endif
  };
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed);
  const int n = 1000;
  float coef[NCOEF], back[NCOEF], *hx = malloc((size_t)n * sizeof(float));
  gp_ref_fill(coef, GP_F32, NCOEF, &rng, -1.0, 1.0);
  gp_ref_fill(hx, GP_F32, (size_t)n, &rng, -1.5, 1.5);
  float *dx = upload(hx, (size_t)n * sizeof(float));
  size_t size = 0;
  OK(gp_symbol_size(&size, GP_SYMBOL_REF(kt_coef)));
  ck_assert_uint_eq(size, sizeof coef);
  gp_stream_t s;
  OK(gp_stream_create(&s));
  for (int b = 0; b < NBUILDS; b++) {
    unsigned zero = 0, calls = 1;
    OK(gp_memcpy_to_symbol(counters[b], &zero, sizeof zero, 0));
    OK(gp_memcpy_to_symbol(GP_SYMBOL_REF(kt_coef), coef, sizeof coef, 0));
    poly_check(ks[b], NULL, coef, n, hx, dx);
    /* The upper half anew, on a stream, before a launch on the same stream. */
    float upper[NCOEF / 2];
    gp_ref_fill(upper, GP_F32, NCOEF / 2, &rng, -2.0, 2.0);
    OK(gp_memcpy_to_symbol_async(GP_SYMBOL_REF(kt_coef), upper, sizeof upper, sizeof coef / 2, s));
    memcpy(coef + NCOEF / 2, upper, sizeof upper);
    poly_check(ks[b], s, coef, n, hx, dx);
    memset(back, 0, sizeof back);
    OK(gp_memcpy_from_symbol(back, GP_SYMBOL_REF(kt_coef), sizeof back, 0));
    ck_assert(memcmp(back, coef, sizeof coef) == 0);
    OK(gp_memcpy_from_symbol_async(back, GP_SYMBOL_REF(kt_coef), sizeof(float), 3 * sizeof(float), s));
    OK(gp_stream_synchronize(s));
    ck_assert(back[0] == coef[3]);
    /* The counter, by copy and through its device address. */
    OK(gp_memcpy_from_symbol(&calls, counters[b], sizeof calls, 0));
    ck_assert_uint_eq(calls, 2u * (unsigned)n);
    void *addr = NULL;
    OK(gp_symbol_address(&addr, counters[b]));
    ck_assert_ptr_nonnull(addr);
    OK(gp_memcpy(&calls, addr, sizeof calls));
    ck_assert_uint_eq(calls, 2u * (unsigned)n);
  }
  OK(gp_stream_destroy(s));
  OK(gp_free(dx));
  free(hx);
}
END_TEST

START_TEST(symbol_errors) {
  float v[NCOEF + 1] = {0};
  ck_assert_int_eq(gp_memcpy_to_symbol(GP_SYMBOL_REF(kt_coef), v, sizeof(float), NCOEF * sizeof(float)),
                   GP_ERROR_INVALID_VALUE);
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "kt_coef"));
  ck_assert_int_eq(gp_memcpy_to_symbol(GP_SYMBOL_REF(kt_coef), v, sizeof v, 0), GP_ERROR_INVALID_VALUE);
  ck_assert_int_eq(gp_memcpy_from_symbol(v, GP_SYMBOL_REF(kt_coef), 4, (size_t)-2), GP_ERROR_INVALID_VALUE);
  ck_assert_int_eq(gp_memcpy_to_symbol(NULL, v, 4, 0), GP_ERROR_INVALID_VALUE);
  ck_assert_int_eq(gp_memcpy_from_symbol(NULL, GP_SYMBOL_REF(kt_coef), 4, 0), GP_ERROR_INVALID_VALUE);
  ck_assert_int_eq(gp_memcpy_to_symbol((gp_symbol_t)(const void *)GP_KERNEL_REF(kt_poly), v, 4, 0),
                   GP_ERROR_INVALID_HANDLE);
  ck_assert_int_eq(gp_memcpy_to_symbol_async(GP_SYMBOL_REF(kt_coef), v, 4, 0, (gp_stream_t)(uintptr_t)0x40),
                   GP_ERROR_INVALID_HANDLE);
  void *p = NULL;
  ck_assert_int_eq(gp_symbol_address(NULL, GP_SYMBOL_REF(kt_coef)), GP_ERROR_INVALID_VALUE);
  ck_assert_int_eq(gp_symbol_address(&p, NULL), GP_ERROR_INVALID_VALUE);
  OK(gp_memcpy_to_symbol(GP_SYMBOL_REF(kt_coef), v, 0, 0)); /* nothing to copy */
#ifdef GP_BUILD_CPU
  /* A __constant__ variable is one object at every width it is built at. */
  ck_assert_ptr_eq(GP_SYMBOL_REF(kt_coef)->address, GP_SYMBOL_REF(kt_coef_w64)->address);
#endif
}
END_TEST

/* ---- f16 / bf16 atomics ------------------------------------------------------------------- */
/* Inputs are small random integers, so every partial sum is exact in binary16 (sums up to
 * 2048) and bfloat16 (up to 256): the float64 reference must match exactly. */
START_TEST(atomics_f16_bf16) {
  gp_kernel_t ks[NBUILDS] = {GP_KERNEL_REF(kt_atomic_half)
#ifdef GP_BUILD_CPU
                             , GP_KERNEL_REF(kt_atomic_half_w64)
#endif
  };
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ 0x5bd1e995u);
  const int n = 256;
  float hv[256];
  for (int i = 0; i < n; i++) hv[i] = (float)(1 + (int)(gp_ref_rng_next(&rng) % 3u)) * ((i % 5 == 0) ? -1.0f : 1.0f);
  float *dv = upload(hv, sizeof hv);
  for (int b = 0; b < NBUILDS; b++) {
    gp_f16_t h[8], oh[256];
    gp_bf16_t bb[8], ob[256];
    for (int i = 0; i < 8; i++) {
      float init = i < 4 ? 0.0f : (i < 6 ? -100.0f : (i == 6 ? 100.0f : 7.0f));
      h[i] = gp_f16_from_f32(init);
      bb[i] = gp_bf16_from_f32(init);
    }
    gp_f16_t *dh = upload(h, sizeof h), *doh = NULL;
    gp_bf16_t *db = upload(bb, sizeof bb), *dob = NULL;
    OK(gp_malloc((void **)&doh, sizeof oh));
    OK(gp_malloc((void **)&dob, sizeof ob));
    OK(gp_memset(doh, 0xff, sizeof oh)); /* NaN in both formats: unwritten outputs fail */
    OK(gp_memset(dob, 0xff, sizeof ob));
    int nn = n;
    void *args[] = {&nn, &dv, &dh, &db, &doh, &dob};
    OK(gp_launch(ks[b], gp_dim3(4, 1, 1), gp_dim3(64, 1, 1), 0, NULL, args));
    OK(gp_memcpy(h, dh, sizeof h));
    OK(gp_memcpy(bb, db, sizeof bb));
    OK(gp_memcpy(oh, doh, sizeof oh));
    OK(gp_memcpy(ob, dob, sizeof ob));
    double sum[4] = {0, 0, 0, 0}, mx[2] = {-100, -100}, mn = 100;
    for (int i = 0; i < n; i++) {
      sum[i % 4] += hv[i];
      mx[i % 2] = fmax(mx[i % 2], hv[i]);
      mn = fmin(mn, hv[i]);
    }
    for (int i = 0; i < 4; i++) {
      ck_assert_msg(gp_f32_from_f16(h[i]) == sum[i], "width %d f16 sum %d: %g, expected %g", ks[b]->warp_size, i,
                    (double)gp_f32_from_f16(h[i]), sum[i]);
      ck_assert_msg(gp_f32_from_bf16(bb[i]) == sum[i], "width %d bf16 sum %d: %g, expected %g", ks[b]->warp_size,
                    i, (double)gp_f32_from_bf16(bb[i]), sum[i]);
    }
    for (int i = 0; i < 2; i++) {
      ck_assert(gp_f32_from_f16(h[4 + i]) == mx[i]);
      ck_assert(gp_f32_from_bf16(bb[4 + i]) == mx[i]);
    }
    ck_assert(gp_f32_from_f16(h[6]) == mn);
    ck_assert(gp_f32_from_bf16(bb[6]) == mn);
    /* Exchange: the old values and the final one are the initial value and every input,
     * each once (a chain of exchanges). */
    int count[9] = {0}, countb[9] = {0};
    for (int i = 0; i < n; i++) {
      float o = gp_f32_from_f16(oh[i]), ob_ = gp_f32_from_bf16(ob[i]);
      ck_assert_msg(o == 7.0f || fabsf(o) <= 3.0f, "f16 exchange returned %g", (double)o);
      ck_assert_msg(ob_ == 7.0f || fabsf(ob_) <= 3.0f, "bf16 exchange returned %g", (double)ob_);
      count[(int)o + 4 < 9 ? (int)o + 4 : 8]++;
      countb[(int)ob_ + 4 < 9 ? (int)ob_ + 4 : 8]++;
    }
    count[(int)gp_f32_from_f16(h[7]) + 4 < 9 ? (int)gp_f32_from_f16(h[7]) + 4 : 8]++;
    countb[(int)gp_f32_from_bf16(bb[7]) + 4 < 9 ? (int)gp_f32_from_bf16(bb[7]) + 4 : 8]++;
    int want[9] = {0};
    for (int i = 0; i < n; i++) want[(int)hv[i] + 4]++;
    want[8]++; /* the initial 7 */
    for (int i = 0; i < 9; i++) {
      ck_assert_int_eq(count[i], want[i]);
      ck_assert_int_eq(countb[i], want[i]);
    }
    OK(gp_free(dh));
    OK(gp_free(db));
    OK(gp_free(doh));
    OK(gp_free(dob));
  }
  OK(gp_free(dv));
}
END_TEST

/* ---- cooperative launches ----------------------------------------------------------------- */
static int coop_max_blocks(gp_kernel_t k, int threads) {
  int per_sm = 0, dev = 0;
  OK(gp_occupancy_max_active_blocks(&per_sm, k, threads, 0));
  gp_device_props_t p;
  gp_device_props_init(&p);
  OK(gp_device_get(&dev));
  OK(gp_device_get_props(&p, dev));
  return per_sm * p.multiprocessor_count;
}

/* gp_grid_sync separates the phases of a grid-wide reduction: every block reads every
 * other block's partial sum, three rounds in a row. */
START_TEST(cooperative_grid_sync) {
  gp_kernel_t ks[NBUILDS] = {GP_KERNEL_REF(kt_coop_sum)
#ifdef GP_BUILD_CPU
                             , GP_KERNEL_REF(kt_coop_sum_w64)
#endif
  };
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed + 7);
  int n = 20000, phases = 3;
  float *hx = malloc((size_t)n * sizeof(float));
  gp_ref_fill(hx, GP_F32, (size_t)n, &rng, -1.0, 1.0);
  float *dx = upload(hx, (size_t)n * sizeof(float));
  double total = 0, mag = 0;
  for (int i = 0; i < n; i++) {
    total += hx[i];
    mag += fabs(hx[i]);
  }
  for (int b = 0; b < NBUILDS; b++) {
    int blocks = coop_max_blocks(ks[b], 128);
    ck_assert_int_ge(blocks, 1);
    if (blocks > 64) blocks = 64;
    float *partial = dev_nan((size_t)blocks), *out = dev_nan((size_t)blocks * phases);
    float *h = malloc((size_t)blocks * phases * sizeof(float));
    gp_launch_config_t c;
    gp_launch_config_init(&c);
    c.grid = gp_dim3((unsigned)blocks, 1, 1);
    c.block = gp_dim3(128, 1, 1);
    c.cooperative = 1;
    void *args[] = {&n, &dx, &partial, &out, &phases};
    OK(gp_launch_ex(ks[b], &c, args));
    OK(gp_memcpy(h, out, (size_t)blocks * phases * sizeof(float)));
    for (int r = 0; r < phases; r++)
      for (int k = 0; k < blocks; k++) {
        double want = total * (r + 1), bound = (double)(n + blocks) * gp_ref_unit_roundoff(GP_F32) * mag * (r + 1);
        float got = h[r * blocks + k];
        ck_assert_msg(fabs(got - want) <= bound, "width %d, %d blocks, round %d, block %d: %g, expected %g (bound %g)",
                      ks[b]->warp_size, blocks, r, k, (double)got, want, bound);
        ck_assert(got == h[r * blocks]); /* every block read the same partials */
      }
    OK(gp_free(partial));
    OK(gp_free(out));
    free(h);
  }
  OK(gp_free(dx));
  free(hx);
}
END_TEST

/* Every block of a cooperative grid is resident at once: each waits for the flags of
 * all the others, which only works if they all run. */
START_TEST(cooperative_blocks_progress_together) {
  int blocks = coop_max_blocks(GP_KERNEL_REF(kt_coop_flags), 32);
  if (blocks > 64) blocks = 64;
  int *flags = NULL, *out = NULL, h[64];
  OK(gp_malloc((void **)&flags, 64 * sizeof(int)));
  OK(gp_malloc((void **)&out, 64 * sizeof(int)));
  OK(gp_memset(flags, 0, 64 * sizeof(int)));
  OK(gp_memset(out, 0xff, 64 * sizeof(int)));
  gp_launch_config_t c;
  gp_launch_config_init(&c);
  c.grid = gp_dim3((unsigned)blocks, 1, 1);
  c.block = gp_dim3(32, 1, 1);
  c.cooperative = 1;
  void *args[] = {&flags, &out};
  OK(gp_launch_ex(GP_KERNEL_REF(kt_coop_flags), &c, args));
  OK(gp_memcpy(h, out, (size_t)blocks * sizeof(int)));
  for (int b = 0; b < blocks; b++) ck_assert_msg(h[b] == 1, "block %d of %d did not see every block run", b, blocks);
  OK(gp_free(flags));
  OK(gp_free(out));
}
END_TEST

START_TEST(cooperative_limits) {
  int blocks = coop_max_blocks(GP_KERNEL_REF(kt_coop_bad), 64), mode = 1;
  int *out = NULL;
  OK(gp_malloc((void **)&out, (size_t)(blocks + 1) * sizeof(int)));
  void *args[] = {&mode, &out};
  gp_launch_config_t c;
  gp_launch_config_init(&c);
  c.grid = gp_dim3((unsigned)blocks + 1, 1, 1);
  c.block = gp_dim3(64, 1, 1);
  c.cooperative = 1;
  ck_assert_int_eq(gp_launch_ex(GP_KERNEL_REF(kt_coop_bad), &c, args), GP_ERROR_INVALID_CONFIGURATION);
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "resident"));
  ck_assert_int_eq(gp_launch_ex(GP_KERNEL_REF(kt_coop_bad), NULL, args), GP_ERROR_INVALID_VALUE);
  gp_launch_config_t small = c;
  small.struct_size = sizeof(size_t);
  ck_assert_int_eq(gp_launch_ex(GP_KERNEL_REF(kt_coop_bad), &small, args), GP_ERROR_INVALID_VALUE);
  if (gp_backend() != GP_BACKEND_CUDA) {
    c.grid = gp_dim3(2, 1, 1);
    c.cluster = gp_dim3(2, 1, 1);
    ck_assert_int_eq(gp_launch_ex(GP_KERNEL_REF(kt_coop_bad), &c, args), GP_ERROR_NOT_SUPPORTED);
  }
  gp_launch_config_init(&c);
  c.grid = gp_dim3(3, 1, 1);
  c.block = gp_dim3(64, 1, 1);
  if (gp_backend() == GP_BACKEND_CPU) {
    /* The grid barrier outside a cooperative launch, and a block that never reaches it:
     * the launch fails at once (a GPU would hang). */
    double t0 = now_s();
    OK(gp_launch_ex(GP_KERNEL_REF(kt_coop_bad), &c, args));
    ck_assert_int_eq(gp_stream_synchronize(NULL), GP_ERROR_LAUNCH_FAILED);
    ck_assert_msg(strstr(gp_last_error_message(), "not launched cooperatively") != NULL, "%s",
                  gp_last_error_message());
    (void)gp_get_last_error();
    if (blocks >= 2) {
      mode = 0;
      c.grid = gp_dim3((unsigned)blocks, 1, 1);
      c.cooperative = 1;
      OK(gp_launch_ex(GP_KERNEL_REF(kt_coop_bad), &c, args));
      ck_assert_int_eq(gp_stream_synchronize(NULL), GP_ERROR_LAUNCH_FAILED);
      const char *msg = gp_last_error_message();
      ck_assert_msg(strstr(msg, "can never complete") && strstr(msg, "kt_exec.cu:") && strstr(msg, "block (0,0,0)"),
                    "%s", msg);
      (void)gp_get_last_error();
    }
    ck_assert_msg(now_s() - t0 < 2.0, "misuse reported after %.2f s", now_s() - t0);
    still_usable();
  }
  OK(gp_free(out));
}
END_TEST

#ifdef GP_BUILD_CPU
/* ---- faults of GPU threads ----------------------------------------------------------------- */
static void thread_fault_check(gp_kernel_t k, void **args, const char *reason) {
  OK(gp_launch(k, gp_dim3(4, 1, 1), gp_dim3(64, 1, 1), 0, NULL, args));
  gp_status_t s = gp_stream_synchronize(NULL);
  const char *msg = gp_last_error_message();
  ck_assert_msg(s == GP_ERROR_LAUNCH_FAILED, "%s -> %s", k->name, gp_status_name(s));
  ck_assert_msg(strstr(msg, k->name) && strstr(msg, "block (2,0,0)") && strstr(msg, "thread (37,0,0)") &&
                    strstr(msg, reason),
                "message '%s' does not name kernel, block (2,0,0), thread (37,0,0) and '%s'", msg, reason);
  (void)gp_get_last_error();
  still_usable();
}

/* A GPU thread that overflows its stack hits the guard page below it: the launch
 * fails naming it, on the worker's stack (before any barrier) and on a fiber's. */
START_TEST(stack_overflow_fails_launch) {
  SKIP_IF(RUNNING_ON_VALGRIND, "valgrind reports the overflow itself");
  int *out = NULL;
  OK(gp_malloc((void **)&out, 256 * sizeof(int)));
  for (int sync = 0; sync < 2; sync++) {
    int bad_block = 2, bad = 37, depth = 1 << 16; /* about 64 MiB of frames */
    void *args[] = {&bad_block, &bad, &depth, &sync, &out};
    thread_fault_check(GP_KERNEL_REF(kt_recurse), args, "stack overflow");
    depth = 16; /* a modest recursion is fine */
    OK(gp_launch(GP_KERNEL_REF(kt_recurse), gp_dim3(4, 1, 1), gp_dim3(64, 1, 1), 0, NULL, args));
    OK(gp_stream_synchronize(NULL));
  }
  OK(gp_free(out));
}
END_TEST

#if !defined(__SANITIZE_ADDRESS__)
/* A store through a wild pointer fails the launch like a GPU's illegal address. */
START_TEST(wild_pointer_fails_launch) {
  SKIP_IF(RUNNING_ON_VALGRIND, "valgrind reports the wild store itself");
  int *out = NULL, bad_block = 2, bad = 37, *wild = (int *)(uintptr_t)64;
  OK(gp_malloc((void **)&out, 256 * sizeof(int)));
  void *args[] = {&bad_block, &bad, &wild, &out};
  thread_fault_check(GP_KERNEL_REF(kt_wild), args, "invalid memory access");
  OK(gp_free(out));
}
END_TEST
#endif

#if defined(__SANITIZE_ADDRESS__)
/* AddressSanitizer reports a kernel's out-of-bounds read with the kernel's source line:
 * a child process runs the faulty launch; its report must name kt_exec.cu and the line
 * the kernel gives (learnt from an in-bounds run). */
START_TEST(asan_reports_kernel_line) {
  int n = 100, over = 0, line = 0, *dline = NULL;
  float *hx = calloc((size_t)n, sizeof(float));
  float *dx = upload(hx, (size_t)n * sizeof(float)), *dy = dev_nan((size_t)n);
  OK(gp_malloc((void **)&dline, sizeof(int)));
  void *args[] = {&n, &over, &dx, &dy, &dline};
  OK(gp_launch(GP_KERNEL_REF(kt_oob), gp_dim3(1, 1, 1), gp_dim3(128, 1, 1), 0, NULL, args));
  OK(gp_memcpy(&line, dline, sizeof line));
  ck_assert_int_gt(line, 0);
  int fd[2];
  ck_assert_int_eq(pipe(fd), 0);
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    dup2(fd[1], 2);
    close(fd[0]);
    over = 1;
    (void)gp_launch(GP_KERNEL_REF(kt_oob), gp_dim3(1, 1, 1), gp_dim3(128, 1, 1), 0, NULL, args);
    (void)gp_stream_synchronize(NULL);
    _exit(0); /* not reached when AddressSanitizer reports */
  }
  close(fd[1]);
  char report[65536];
  size_t got = 0;
  ssize_t r;
  while (got < sizeof report - 1 && (r = read(fd[0], report + got, sizeof report - 1 - got)) > 0) got += (size_t)r;
  report[got] = '\0';
  close(fd[0]);
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  char where[64];
  snprintf(where, sizeof where, "kt_exec.cu:%d", line);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0, "the child was not stopped (status %d)", status);
  ck_assert_msg(strstr(report, "heap-buffer-overflow") && strstr(report, where) && strstr(report, "kt_oob"),
                "the report does not name a heap-buffer-overflow at %s in kt_oob:\n%.4000s", where, report);
  OK(gp_free(dx));
  OK(gp_free(dy));
  OK(gp_free(dline));
  free(hx);
}
END_TEST
#endif
/* ---- kernel output: printf into the launch's buffer ---------------------------------------- */
/* Output of fd 1 or 2 while capturing goes to a memory file (nothing in /tmp). */
typedef struct capture {
  int which, fd, saved;
} capture_t;

static void capture_begin(capture_t *c, int which) {
  fflush(which == 1 ? stdout : stderr);
  c->which = which;
  c->fd = memfd_create("gp-test-capture", MFD_CLOEXEC);
  ck_assert_int_ge(c->fd, 0);
  c->saved = dup(which);
  ck_assert_int_ge(c->saved, 0);
  ck_assert_int_eq(dup2(c->fd, which), which);
}

/* Restores the descriptor; returns what was written (malloc'ed, NUL-terminated). */
static char *capture_end(capture_t *c) {
  fflush(c->which == 1 ? stdout : stderr);
  ck_assert_int_eq(dup2(c->saved, c->which), c->which);
  close(c->saved);
  off_t n = lseek(c->fd, 0, SEEK_END);
  ck_assert_int_ge(n, 0);
  char *buf = malloc((size_t)n + 1);
  ck_assert_int_eq(pread(c->fd, buf, (size_t)n, 0), n);
  buf[n] = '\0';
  close(c->fd);
  return buf;
}

/* Checks the records "p <block> <thread> <i>" of out: each thread's in its order, with
 * no record twice or missing, except that with prefix_only a thread's records may stop
 * early (dropped). Returns the number of records. */
static int check_records(const char *out, int blocks, int threads, int lines, bool prefix_only) {
  int *next = calloc((size_t)blocks * (size_t)threads, sizeof(int)), count = 0;
  for (const char *p = out; *p;) {
    const char *nl = strchr(p, '\n');
    ck_assert_msg(nl != NULL, "an unterminated line: '%s'", p);
    unsigned b = 0, t = 0;
    int i = -1, used = 0;
    ck_assert_msg(sscanf(p, "p %u %u %d%n", &b, &t, &i, &used) == 3 && p + used == nl,
                  "a line that is not a record: '%.*s'", (int)(nl - p), p);
    ck_assert_msg(b < (unsigned)blocks && t < (unsigned)threads, "record of block %u thread %u", b, t);
    int *n = &next[b * (unsigned)threads + t];
    ck_assert_msg(i == *n, "block %u thread %u printed record %d after %d records", b, t, i, *n);
    (*n)++;
    count++;
    p = nl + 1;
  }
  for (int g = 0; g < blocks * threads; g++)
    ck_assert_msg(next[g] == lines || (prefix_only && next[g] < lines),
                  "block %d thread %d printed %d of its %d records", g / threads, g % threads, next[g], lines);
  free(next);
  return count;
}

static void launch_printf(int blocks, int threads, int lines, int sync, int *out) {
  void *args[] = {&lines, &sync, &out};
  OK(gp_launch(GP_KERNEL_REF(kt_printf), gp_dim3((unsigned)blocks, 1, 1), gp_dim3((unsigned)threads, 1, 1),
               0, NULL, args));
  OK(gp_stream_synchronize(NULL));
}

/* Every record reaches stdout by the end of the launch, each GPU thread's in its own
 * order, also when the threads interleave at barriers (a partial last warp too). */
START_TEST(printf_per_thread_order) {
  int blocks = 3, threads = 64 + 37, lines = 5, *out = NULL;
  OK(gp_malloc((void **)&out, (size_t)(blocks * threads) * sizeof(int)));
  for (int sync = 0; sync < 2; sync++) {
    capture_t c;
    capture_begin(&c, 1);
    launch_printf(blocks, threads, lines, sync, out);
    char *text = capture_end(&c);
    ck_assert_int_eq(check_records(text, blocks, threads, lines, false), blocks * threads * lines);
    free(text);
  }
  OK(gp_free(out));
}
END_TEST

/* A launch's buffer has GP_CPU_PRINTF_KB KiB: what does not fit is dropped whole, each
 * thread keeps the first of its records, and one line on stderr counts the rest. */
START_TEST(printf_buffer_overflow) {
  int threads = 64, lines = 8, total = threads * lines, *out = NULL;
  OK(gp_malloc((void **)&out, (size_t)threads * sizeof(int)));
  setenv("GP_CPU_PRINTF_KB", "4", 1);
  capture_t co, ce;
  capture_begin(&co, 1);
  capture_begin(&ce, 2);
  launch_printf(1, threads, lines, 1, out);
  char *err = capture_end(&ce), *text = capture_end(&co);
  unsetenv("GP_CPU_PRINTF_KB");
  int kept = check_records(text, 1, threads, lines, true);
  ck_assert_msg(kept > 0 && kept < total && strlen(text) <= 4096, "%d of %d records (%zu bytes) kept", kept,
                total, strlen(text));
  char want[96];
  snprintf(want, sizeof want, "kernel 'kt_printf': %d printf records", total - kept);
  ck_assert_msg(strstr(err, want) && strstr(err, "GP_CPU_PRINTF_KB"), "stderr does not say '%s':\n%s", want, err);
  free(err);
  free(text);
  /* The next launch has a whole buffer again. */
  capture_begin(&co, 1);
  launch_printf(1, threads, 1, 0, out);
  text = capture_end(&co);
  ck_assert_int_eq(check_records(text, 1, threads, 1, false), threads);
  free(text);
  OK(gp_free(out));
}
END_TEST

/* The case, in a child process so that a regression hangs only the child: the
 * %s of a pointer to nothing faults inside the kernel's formatting, the launch fails
 * naming the kernel, and afterwards the host's printf, puts and malloc work, on every
 * thread, and so does the next kernel's printf. */
static int printf_fault_child(void) {
  int *out = NULL;
  if (gp_malloc((void **)&out, 256 * sizeof(int)) != GP_SUCCESS) return 2;
  void *args[] = {&out};
  gp_status_t s = gp_launch(GP_KERNEL_REF(kt_printf_bad), gp_dim3(1, 1, 1), gp_dim3(64, 1, 1), 0, NULL, args);
  if (s == GP_SUCCESS) s = gp_stream_synchronize(NULL);
  const char *msg = gp_last_error_message();
  if (s != GP_ERROR_LAUNCH_FAILED || !strstr(msg, "kt_printf_bad") || !strstr(msg, "invalid memory access") ||
      !strstr(msg, "thread (0,0,0)")) {
    fprintf(stderr, "child: %s: %s\n", gp_status_name(s), msg);
    return 3;
  }
  (void)gp_get_last_error();
  printf("host printf\n");
  puts("host puts");
  fflush(stdout);
  void *p = malloc(1 << 20);
  if (!p) return 4;
  memset(p, 1, 1 << 20);
  free(p);
  int lines = 1, sync = 0;
  void *a2[] = {&lines, &sync, &out};
  s = gp_launch(GP_KERNEL_REF(kt_printf), gp_dim3(1, 1, 1), gp_dim3(4, 1, 1), 0, NULL, a2);
  if (s == GP_SUCCESS) s = gp_stream_synchronize(NULL);
  if (s != GP_SUCCESS) return 5;
  printf("done\n");
  fflush(stdout);
  gp_free(out);
  return 0;
}

START_TEST(printf_fault_leaves_no_lock) {
  if (RUNNING_ON_VALGRIND) return;
  int fd[2];
  ck_assert_int_eq(pipe(fd), 0);
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    close(fd[1]);
    _exit(printf_fault_child());
  }
  close(fd[1]);
  char text[4096];
  size_t got = 0;
  double t0 = now_s();
  bool hung = false;
  for (;;) {
    struct pollfd pf = {fd[0], POLLIN, 0};
    int r = poll(&pf, 1, 200);
    if (r > 0) {
      ssize_t n = read(fd[0], text + got, sizeof text - 1 - got);
      if (n <= 0) break; /* EOF: the child is gone */
      got += (size_t)n;
    } else if (r < 0 && errno != EINTR) {
      break;
    }
    if (now_s() - t0 > 60) {
      hung = true;
      kill(pid, SIGKILL);
      break;
    }
  }
  text[got] = '\0';
  close(fd[0]);
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(!hung, "the process hung after the fault (output so far: '%s')", text);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended with status %d: '%s'", status,
                text);
  ck_assert_msg(strstr(text, "host printf\nhost puts\n") && strstr(text, "p 0 3 0\n") && strstr(text, "done\n"),
                "the child's output: '%s'", text);
}
END_TEST

/* ---- the launch watchdog (GP_LAUNCH_TIMEOUT_S) ----------------------------------------------- */
static void set_flag(int *flag, int v) { OK(gp_memcpy(flag, &v, sizeof v)); }

/* A kernel that never ends fails after GP_LAUNCH_TIMEOUT_S with GP_ERROR_TIMEOUT naming
 * it, whether it spins in kernel code without a sync point (on the lead fiber, on a
 * fiber) or at barriers; the next launch succeeds and the process goes on. */
START_TEST(watchdog_stops_kernel) {
  if (RUNNING_ON_VALGRIND) return;
  int grid = 4, block = 64, n = grid * block, *flag = NULL, *out = NULL, spin_block = 2, spin = 37;
  OK(gp_malloc((void **)&flag, sizeof(int)));
  OK(gp_malloc((void **)&out, (size_t)n * sizeof(int)));
  int *h = malloc((size_t)n * sizeof(int));
  setenv("GP_LAUNCH_TIMEOUT_S", "1", 1);
  for (int mode = 0; mode < 3; mode++) {
    set_flag(flag, 0);
    void *args[] = {&mode, &spin_block, &spin, &flag, &out};
    double t0 = now_s();
    OK(gp_launch(GP_KERNEL_REF(kt_spin), gp_dim3((unsigned)grid, 1, 1), gp_dim3((unsigned)block, 1, 1), 0, NULL,
                 args));
    gp_status_t s = gp_stream_synchronize(NULL);
    double dt = now_s() - t0;
    const char *msg = gp_last_error_message();
    ck_assert_msg(s == GP_ERROR_TIMEOUT, "mode %d: %s: %s", mode, gp_status_name(s), msg);
    ck_assert_msg(strstr(msg, "kt_spin") && strstr(msg, "GP_LAUNCH_TIMEOUT_S"), "mode %d: message '%s'", mode, msg);
    ck_assert_msg(dt >= 0.95 && dt < 6, "mode %d: the launch ended after %.2f s", mode, dt);
    (void)gp_get_last_error();
    /* The next launch (the flag set) runs to its end within the timeout. */
    set_flag(flag, 1);
    OK(gp_memset(out, 0xff, (size_t)n * sizeof(int)));
    OK(gp_launch(GP_KERNEL_REF(kt_spin), gp_dim3((unsigned)grid, 1, 1), gp_dim3((unsigned)block, 1, 1), 0, NULL,
                 args));
    OK(gp_memcpy(h, out, (size_t)n * sizeof(int)));
    for (int i = 0; i < n; i++) ck_assert_msg(h[i] == 1, "mode %d: out[%d] = %d", mode, i, h[i]);
  }
  /* Launches that end in time are not disturbed. */
  for (int i = 0; i < 20; i++) still_usable();
  unsetenv("GP_LAUNCH_TIMEOUT_S");
  void *p = malloc(1 << 16);
  ck_assert_ptr_nonnull(p);
  free(p);
  fprintf(stderr, "watchdog: the host's stdio works\n");
  free(h);
  OK(gp_free(flag));
  OK(gp_free(out));
}
END_TEST

typedef struct release_arg {
  int *flag;
  int delay_ms;
} release_arg_t;

static void *release_later(void *p) {
  release_arg_t *a = p;
  struct timespec ts = {a->delay_ms / 1000, (long)(a->delay_ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  __atomic_store_n(a->flag, 1, __ATOMIC_RELEASE); /* cpu device memory is host memory */
  return NULL;
}

/* Off by default: without GP_LAUNCH_TIMEOUT_S a long kernel runs to its end. */
START_TEST(watchdog_off_by_default) {
  unsetenv("GP_LAUNCH_TIMEOUT_S");
  int grid = 2, block = 32, *flag = NULL, *out = NULL, mode = 0, spin_block = 1, spin = 5;
  OK(gp_malloc((void **)&flag, sizeof(int)));
  OK(gp_malloc((void **)&out, (size_t)(grid * block) * sizeof(int)));
  set_flag(flag, 0);
  release_arg_t a = {flag, 300};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, release_later, &a), 0);
  void *args[] = {&mode, &spin_block, &spin, &flag, &out};
  OK(gp_launch(GP_KERNEL_REF(kt_spin), gp_dim3((unsigned)grid, 1, 1), gp_dim3((unsigned)block, 1, 1), 0, NULL, args));
  OK(gp_stream_synchronize(NULL));
  pthread_join(th, NULL);
  OK(gp_free(flag));
  OK(gp_free(out));
}
END_TEST

#endif

#ifdef GP_BUILD_CPU
/* The fault tests again with every kernel at width 64 (GP_CPU_WARP_SIZE=64 in the
 * test's own process). */
static void width64_setup(void) { setenv("GP_CPU_WARP_SIZE", "64", 1); }
#endif

static Suite *executor_suite(void) {
  Suite *s = suite_create("executor");
  TCase *tc = tcase_create("dialect");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, symbols_constant_and_device);
  tcase_add_test(tc, symbol_errors);
  tcase_add_test(tc, atomics_f16_bf16);
  tcase_add_test(tc, cooperative_grid_sync);
  tcase_add_test(tc, cooperative_blocks_progress_together);
  tcase_add_test(tc, cooperative_limits);
  suite_add_tcase(s, tc);
#ifdef GP_BUILD_CPU
  TCase *tf = tcase_create("faults");
  tcase_set_timeout(tf, 60);
  tcase_add_test(tf, stack_overflow_fails_launch);
#if !defined(__SANITIZE_ADDRESS__)
  tcase_add_test(tf, wild_pointer_fails_launch);
#else
  tcase_add_test(tf, asan_reports_kernel_line);
#endif
  tcase_add_test(tf, printf_per_thread_order);
  tcase_add_test(tf, printf_buffer_overflow);
  tcase_add_test(tf, printf_fault_leaves_no_lock);
  tcase_add_test(tf, watchdog_stops_kernel);
  tcase_add_test(tf, watchdog_off_by_default);
  suite_add_tcase(s, tf);
  if (!getenv("CK_FORK") || strcmp(getenv("CK_FORK"), "no") != 0) {
    TCase *t64 = tcase_create("faults at width 64");
    tcase_set_timeout(t64, 60);
    tcase_add_checked_fixture(t64, width64_setup, NULL);
    tcase_add_test(t64, stack_overflow_fails_launch);
#if !defined(__SANITIZE_ADDRESS__)
    tcase_add_test(t64, wild_pointer_fails_launch);
#endif
    tcase_add_test(t64, printf_per_thread_order);
    tcase_add_test(t64, printf_buffer_overflow);
    tcase_add_test(t64, printf_fault_leaves_no_lock);
    tcase_add_test(t64, watchdog_stops_kernel);
    tcase_add_test(t64, cooperative_blocks_progress_together);
    tcase_add_test(t64, cooperative_limits);
    suite_add_tcase(s, t64);
  }
#endif
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  print_seed("test_executor", (unsigned long long)g_seed);
  return run_suite("test_executor", executor_suite());
}
