/*
 * test_kernel.c - the kernel dialect and the executor, through gp_launch: indices,
 * shared memory and barriers, atomics, every warp operation at width 32 and (CPU) 64,
 * faults reported as GP_ERROR_LAUNCH_FAILED with the library usable afterwards,
 * divergent barriers reported instead of hanging, no fibers for kernels that never
 * synchronise, fork. Kernels: test/kernels/kt_*.cu.
 *
 * GP_KERNEL_BENCH=1 adds a benchmark that prints the executor's costs
 * (docs/LAUNCH_ABI.md quotes it).
 */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <gpuport.h>
#ifdef GP_BUILD_CPU
#include "cpu/exec.h"
#endif
#include "check_util.h"

GP_KERNEL_DECLARE(kt_vadd);
GP_KERNEL_DECLARE(kt_index3d);
GP_KERNEL_DECLARE(kt_reduce_static);
GP_KERNEL_DECLARE(kt_reduce_dynamic);
GP_KERNEL_DECLARE(kt_atomics);
GP_KERNEL_DECLARE(kt_fault);
GP_KERNEL_DECLARE(kt_divergent);
GP_KERNEL_DECLARE(kt_sync_ops);
GP_KERNEL_DECLARE(kt_barriers);
GP_KERNEL_DECLARE(kt_shared_overflow);
GP_KERNEL_DECLARE(kt_warp_ops);
GP_KERNEL_DECLARE(kt_hardcoded32);
GP_KERNEL_DECLARE(gp__bench_vadd);
GP_KERNEL_DECLARE(gp__bench_fma_gelu);
GP_KERNEL_DECLARE(gp__bench_reduce);
GP_KERNEL_DECLARE(gp__bench_barriers);
GP_KERNEL_DECLARE(gp__bench_empty);
#ifdef GP_BUILD_CPU
GP_KERNEL_DECLARE(gp__bench_vadd_w64);
GP_KERNEL_DECLARE(gp__bench_fma_gelu_w64);
GP_KERNEL_DECLARE(gp__bench_reduce_w64);
GP_KERNEL_DECLARE(gp__bench_barriers_w64);
GP_KERNEL_DECLARE(gp__bench_empty_w64);
GP_KERNEL_DECLARE(kt_vadd_w64);
GP_KERNEL_DECLARE(kt_index3d_w64);
GP_KERNEL_DECLARE(kt_reduce_static_w64);
GP_KERNEL_DECLARE(kt_reduce_dynamic_w64);
GP_KERNEL_DECLARE(kt_atomics_w64);
GP_KERNEL_DECLARE(kt_fault_w64);
GP_KERNEL_DECLARE(kt_divergent_w64);
GP_KERNEL_DECLARE(kt_sync_ops_w64);
GP_KERNEL_DECLARE(kt_barriers_w64);
GP_KERNEL_DECLARE(kt_partial_warp);
extern const struct gp_kernel_s gp__kernel_kt_warp_ops_w64, gp__kernel_kt_hardcoded32_w64,
    gp__kernel_kt_partial_warp_w64;
#endif

static int hardcoded32_right(gp_kernel_t k);

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *dev_alloc(size_t bytes) {
  void *p = NULL;
  OK(gp_malloc(&p, bytes));
  OK(gp_memset(p, 0, bytes));
  return p;
}

static void launch_sync(gp_kernel_t k, unsigned gx, unsigned bx, size_t shmem, void **args) {
  OK(gp_launch(k, gp_dim3(gx, 1, 1), gp_dim3(bx, 1, 1), shmem, NULL, args));
  OK(gp_stream_synchronize(NULL));
}

/* c = a + b over n elements, checked; the library is usable. */
static void vadd_check(int n, unsigned block) {
  size_t bytes = (size_t)n * sizeof(float);
  float *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes);
  ck_assert(ha && hb && hc);
  for (int i = 0; i < n; i++) {
    ha[i] = (float)i;
    hb[i] = (float)(2 * (i % 1000));
  }
  float *a = dev_alloc(bytes), *b = dev_alloc(bytes), *c = dev_alloc(bytes + sizeof(float));
  OK(gp_memcpy(a, ha, bytes));
  OK(gp_memcpy(b, hb, bytes));
  float sentinel = -7.0f;
  OK(gp_memcpy(c + n, &sentinel, sizeof sentinel));
  void *args[] = {&n, &a, &b, &c};
  launch_sync(GP_KERNEL_REF(kt_vadd), (unsigned)((n + (int)block - 1) / (int)block), block, 0, args);
  OK(gp_memcpy(hc, c, bytes));
  for (int i = 0; i < n; i++)
    ck_assert_msg(hc[i] == ha[i] + hb[i], "c[%d] = %g, expected %g", i, hc[i], ha[i] + hb[i]);
  float after = 0;
  OK(gp_memcpy(&after, c + n, sizeof after));
  ck_assert_msg(after == sentinel, "the element past n was written");
  OK(gp_free(a));
  OK(gp_free(b));
  OK(gp_free(c));
  free(ha);
  free(hb);
  free(hc);
}

START_TEST(vector_add_non_multiple) {
  vadd_check(1000003, 256);
  vadd_check(1, 1024);
  vadd_check(77, 32);
}
END_TEST

START_TEST(indices_3d) {
  gp_dim3_t grid = gp_dim3(3, 2, 4), block = gp_dim3(4, 3, 5);
  unsigned nb = 3 * 2 * 4, nt = 4 * 3 * 5;
  size_t bytes = (size_t)nb * nt * 8 * sizeof(unsigned);
  unsigned *d = dev_alloc(bytes), *h = malloc(bytes);
  void *args[] = {&d};
  OK(gp_launch(GP_KERNEL_REF(kt_index3d), grid, block, 0, NULL, args));
  OK(gp_stream_synchronize(NULL));
  OK(gp_memcpy(h, d, bytes));
  for (unsigned bz = 0; bz < 4; bz++)
    for (unsigned by = 0; by < 2; by++)
      for (unsigned bx = 0; bx < 3; bx++)
        for (unsigned tz = 0; tz < 5; tz++)
          for (unsigned ty = 0; ty < 3; ty++)
            for (unsigned tx = 0; tx < 4; tx++) {
              unsigned b = bx + 3 * (by + 2 * bz), t = tx + 4 * (ty + 3 * tz);
              const unsigned *o = h + 8 * ((size_t)b * nt + t);
              unsigned want[8] = {bx, by, bz, tx, ty, tz, 4003005u, 3002004u};
              for (int f = 0; f < 8; f++)
                ck_assert_msg(o[f] == want[f], "block (%u,%u,%u) thread (%u,%u,%u) field %d: %u != %u",
                              bx, by, bz, tx, ty, tz, f, o[f], want[f]);
            }
  OK(gp_free(d));
  free(h);
}
END_TEST

static void reduce_check(int dynamic, unsigned block) {
  int n = (int)block * 37 + 11;
  unsigned nblocks = (unsigned)(n + (int)block - 1) / block;
  float *hx = malloc((size_t)n * sizeof(float)), *hout = malloc(nblocks * sizeof(float));
  for (int i = 0; i < n; i++) hx[i] = (float)(i % 13);
  float *x = dev_alloc((size_t)n * sizeof(float)), *out = dev_alloc(nblocks * sizeof(float));
  OK(gp_memcpy(x, hx, (size_t)n * sizeof(float)));
  void *args[] = {&n, &x, &out};
  if (dynamic)
    launch_sync(GP_KERNEL_REF(kt_reduce_dynamic), nblocks, block, block * sizeof(float), args);
  else
    launch_sync(GP_KERNEL_REF(kt_reduce_static), nblocks, block, 0, args);
  OK(gp_memcpy(hout, out, nblocks * sizeof(float)));
  for (unsigned b = 0; b < nblocks; b++) {
    float want = 0;
    for (unsigned t = 0; t < block; t++) {
      int i = (int)(b * block + t);
      if (i < n) want += hx[i];
    }
    ck_assert_msg(hout[b] == want, "block %u: %g, expected %g", b, hout[b], want);
  }
  OK(gp_free(x));
  OK(gp_free(out));
  free(hx);
  free(hout);
}

START_TEST(shared_static_reduction) {
  reduce_check(0, 256);
}
END_TEST

START_TEST(shared_dynamic_reduction) {
  reduce_check(1, 128);
  reduce_check(1, 1024);
  reduce_check(1, 1);
}
END_TEST

START_TEST(atomics_many_threads) {
  unsigned grid = 64, block = 128, total = grid * block;
  int hi[8] = {0, -1, 1 << 30, 0, 0, 0, 0, 0};
  unsigned hu[3] = {0, 0, 0xffffffffu};
  float hf = 0;
  double hd = 0;
  unsigned long long hull = 0;
  int *di = dev_alloc(sizeof hi);
  unsigned *du = dev_alloc(sizeof hu);
  float *df = dev_alloc(sizeof hf);
  double *dd = dev_alloc(sizeof hd);
  unsigned long long *dull = dev_alloc(sizeof hull);
  OK(gp_memcpy(di, hi, sizeof hi));
  OK(gp_memcpy(du, hu, sizeof hu));
  void *args[] = {&di, &du, &df, &dd, &dull};
  launch_sync(GP_KERNEL_REF(kt_atomics), grid, block, 0, args);
  OK(gp_memcpy(hi, di, sizeof hi));
  OK(gp_memcpy(hu, du, sizeof hu));
  OK(gp_memcpy(&hf, df, sizeof hf));
  OK(gp_memcpy(&hd, dd, sizeof hd));
  OK(gp_memcpy(&hull, dull, sizeof hull));
  int x = 0;
  for (unsigned g = 0; g < total; g++) x ^= (int)g;
  ck_assert_int_eq(hi[0], (int)total);
  ck_assert_int_eq(hi[1], (int)total - 1);
  ck_assert_int_eq(hi[2], 0);
  ck_assert_int_eq(hi[3], 0x7fffffff);
  ck_assert_int_eq(hi[4], x);
  ck_assert_int_eq(hi[5], -2 * (int)total);
  ck_assert_int_eq(hi[6], (int)total);
  ck_assert_int_eq(hi[7], 42);
  ck_assert_uint_eq(hu[0], total);
  ck_assert_uint_eq(hu[1], total % 1000u);
  ck_assert_uint_eq(hu[2], 0);
  ck_assert(hf == 0.5f * (float)total);
  ck_assert(hd == 0.25 * (double)total);
  ck_assert(hull == (unsigned long long)total * (total - 1) / 2);
  OK(gp_free(di));
  OK(gp_free(du));
  OK(gp_free(df));
  OK(gp_free(dd));
  OK(gp_free(dull));
}
END_TEST

/* ---- warps ---------------------------------------------------------------------- */
#define KT_NI 14
#define KT_NF 10

static int vi_of(unsigned g) { return (int)(g * 7u + 3u); }
static float vf_of(unsigned g) { return (float)(g % 97u) * 0.25f + 1.0f; }

/* The butterfly's value (see gp_warp_reduce_sum in gpuport/kernel.h). */
static float tree_sum(const float *v, unsigned w) {
  float a[64];
  memcpy(a, v, w * sizeof(float));
  for (unsigned o = w / 2; o > 0; o /= 2)
    for (unsigned l = 0; l < o; l++) a[l] = a[l] + a[l + o];
  return a[0];
}

/* Runs kernel k (kt_warp_ops) and checks its results for warp width W. */
static void warp_ops_check_at(gp_kernel_t k, unsigned W) {
  const unsigned block = 128, grid = 3, total = block * grid;
  int *oi = dev_alloc((size_t)KT_NI * total * sizeof(int));
  float *of = dev_alloc((size_t)KT_NF * total * sizeof(float));
  double *od = dev_alloc(total * sizeof(double));
  unsigned long long *om = dev_alloc(2 * (size_t)total * sizeof(unsigned long long));
  void *args[] = {&oi, &of, &od, &om};
  launch_sync(k, grid, block, 0, args);
  int *hi = malloc((size_t)KT_NI * total * sizeof(int));
  float *hf = malloc((size_t)KT_NF * total * sizeof(float));
  double *hd = malloc(total * sizeof(double));
  unsigned long long *hm = malloc(2 * (size_t)total * sizeof(unsigned long long));
  OK(gp_memcpy(hi, oi, (size_t)KT_NI * total * sizeof(int)));
  OK(gp_memcpy(hf, of, (size_t)KT_NF * total * sizeof(float)));
  OK(gp_memcpy(hd, od, total * sizeof(double)));
  OK(gp_memcpy(hm, om, 2 * (size_t)total * sizeof(unsigned long long)));
  for (unsigned g = 0; g < total; g++) {
    unsigned t = g % block, lane = t % W, gw = g - lane;
    int sum = 0, mx = INT32_MIN, mn = INT32_MAX;
    float fv[64], fmx = -INFINITY, fmn = INFINITY;
    for (unsigned l = 0; l < W; l++) {
      int v = vi_of(gw + l);
      sum = (int)((unsigned)sum + (unsigned)v);
      mx = v > mx ? v : mx;
      mn = v < mn ? v : mn;
      fv[l] = vf_of(gw + l);
      fmx = fmaxf(fmx, fv[l]);
      fmn = fminf(fmn, fv[l]);
    }
    int wi[KT_NI] = {(int)lane,
                     (int)(t / W),
                     vi_of(gw + ((lane + 3) & (W - 1))),
                     vi_of(gw + (lane ^ 5u)),
                     lane >= 3 ? vi_of(g - 3) : vi_of(g),
                     lane + 3 < W ? vi_of(g + 3) : vi_of(g),
                     vi_of(gw),
                     1,
                     1,
                     0,
                     sum,
                     mx,
                     mn,
                     0};
    float wf[KT_NF] = {vf_of(gw + W - 1),
                       vf_of(gw + (lane ^ (W / 2))),
                       lane >= 1 ? vf_of(g - 1) : vf_of(g),
                       lane + 1 < W ? vf_of(g + 1) : vf_of(g),
                       tree_sum(fv, W),
                       fmx,
                       fmn,
                       vf_of(g),
                       vf_of(gw + W - 1),
                       (float)W};
    for (int f = 0; f < KT_NI; f++)
      ck_assert_msg(hi[KT_NI * g + f] == wi[f], "width %u thread %u int field %d: %d, expected %d", W, g, f,
                    hi[KT_NI * g + f], wi[f]);
    for (int f = 0; f < KT_NF; f++)
      ck_assert_msg(hf[KT_NF * g + f] == wf[f], "width %u thread %u float field %d: %g, expected %g", W, g,
                    f, hf[KT_NF * g + f], wf[f]);
    ck_assert_msg(hd[g] == (double)vi_of(gw + (lane ^ 1u)) * 1.5, "width %u thread %u double shfl_xor", W, g);
    unsigned long long m3 = 0, m40 = 0;
    for (unsigned l = 0; l < W; l++) {
      if (l % 3 == 0) m3 |= 1ull << l;
      if (l >= 40) m40 |= 1ull << l;
    }
    ck_assert_msg(hm[2 * g] == m3, "width %u thread %u ballot %llx, expected %llx", W, g, hm[2 * g], m3);
    ck_assert_msg(hm[2 * g + 1] == m40, "width %u thread %u ballot(lane>=40) %llx, expected %llx", W, g,
                  hm[2 * g + 1], m40);
  }
  OK(gp_free(oi));
  OK(gp_free(of));
  OK(gp_free(od));
  OK(gp_free(om));
  free(hi);
  free(hf);
  free(hd);
  free(hm);
}

static void warp_ops_check(gp_kernel_t k) { warp_ops_check_at(k, (unsigned)k->warp_size); }

START_TEST(warp_ops_native_width) {
  warp_ops_check(GP_KERNEL_REF(kt_warp_ops));
}
END_TEST

#ifdef GP_BUILD_CPU
START_TEST(warp_ops_width_64) {
  ck_assert_int_eq(gp__kernel_kt_warp_ops_w64.warp_size, 64);
  ck_assert_int_eq(GP_KERNEL_REF(kt_warp_ops)->warp_size, 32);
  warp_ops_check(&gp__kernel_kt_warp_ops_w64);
}
END_TEST
#endif

#ifdef GP_BUILD_CPU
/* GP_CPU_WARP_SIZE=64 runs a program's kernels at width 64: a launch of the default
 * build runs the kernel's _w64 build, and the device reports 64. Needs a fresh process
 * (the variable is read once): Check's fork mode. */
START_TEST(whole_program_width_64) {
  SKIP_IF(getenv("CK_FORK") && strcmp(getenv("CK_FORK"), "no") == 0,
          "needs Check's fork mode (a fresh process)");
  setenv("GP_CPU_WARP_SIZE", "64", 1);
  gp_device_props_t p;
  gp_device_props_init(&p);
  OK(gp_device_get_props(&p, 0));
  ck_assert_int_eq(p.warp_size, 64);
  warp_ops_check_at(GP_KERNEL_REF(kt_warp_ops), 64);
  ck_assert_int_eq(hardcoded32_right(GP_KERNEL_REF(kt_hardcoded32)), 0);
}
END_TEST

static void partial_warp_check(gp_kernel_t k) {
  const unsigned W = (unsigned)k->warp_size, block = 40;
  float *out = dev_alloc(2 * block * sizeof(float)), h[80];
  void *args[] = {&out};
  launch_sync(k, 1, block, 0, args);
  OK(gp_memcpy(h, out, sizeof h));
  for (unsigned t = 0; t < block; t++) {
    unsigned lane = t % W, base = t - lane, lanes = block - base < W ? block - base : W;
    ck_assert_msg(h[2 * t] == (float)lanes, "width %u thread %u: sum %g over %u lanes", W, t, h[2 * t], lanes);
    unsigned src = (lane + 1) & (W - 1);
    if (src < lanes)
      ck_assert_msg(h[2 * t + 1] == (float)(base + src), "width %u thread %u: shfl %g", W, t, h[2 * t + 1]);
    else
      ck_assert_msg(isnan(h[2 * t + 1]), "width %u thread %u: a missing lane gave %g", W, t, h[2 * t + 1]);
  }
  OK(gp_free(out));
}

START_TEST(partial_warps) {
  partial_warp_check(GP_KERNEL_REF(kt_partial_warp));
  partial_warp_check(&gp__kernel_kt_partial_warp_w64);
}
END_TEST
#endif

/* Runs kt_hardcoded32; returns whether its results are right. */
static int hardcoded32_right(gp_kernel_t k) {
  unsigned block = 256, grid = 4, total = block * grid;
  int *hx = malloc(total * sizeof(int)), want = 0, hout[2];
  for (unsigned i = 0; i < total; i++) want += hx[i] = (int)(i % 50) + 1;
  int *x = dev_alloc(total * sizeof(int)), *out = dev_alloc(2 * sizeof(int));
  OK(gp_memcpy(x, hx, total * sizeof(int)));
  void *args[] = {&x, &out};
  launch_sync(k, grid, block, 0, args);
  OK(gp_memcpy(hout, out, sizeof hout));
  OK(gp_free(x));
  OK(gp_free(out));
  free(hx);
  return hout[0] == want && hout[1] == (int)total;
}

START_TEST(hardcoded_32_lanes_breaks_at_64) {
  gp_kernel_t k = GP_KERNEL_REF(kt_hardcoded32);
  ck_assert_int_eq(hardcoded32_right(k), k->warp_size == 32);
#ifdef GP_BUILD_CPU
  ck_assert_msg(!hardcoded32_right(&gp__kernel_kt_hardcoded32_w64),
                "code that assumes 32 lanes must give a wrong result at width 64");
#endif
}
END_TEST

/* ---- faults ------------------------------------------------------------------------ */
static void fault_check(int mode, int sync) {
  unsigned block = 64, grid = 4;
  int *out = dev_alloc(block * grid * sizeof(int));
  int bad_block = 1, bad = 37;
  void *args[] = {&out, &bad_block, &bad, &mode, &sync};
  OK(gp_launch(GP_KERNEL_REF(kt_fault), gp_dim3(grid, 1, 1), gp_dim3(block, 1, 1), 0, NULL, args));
  gp_status_t s = gp_stream_synchronize(NULL);
  ck_assert_msg(s == GP_ERROR_LAUNCH_FAILED, "synchronize -> %s", gp_status_name(s));
  const char *msg = gp_last_error_message();
  ck_assert_msg(strstr(msg, "kt_fault") != NULL, "message '%s' does not name the kernel", msg);
  if (gp_backend() == GP_BACKEND_CPU) {
    ck_assert_msg(strstr(msg, mode == 0 ? "__trap" : "assert") != NULL, "message '%s' gives no reason", msg);
    ck_assert_msg(strstr(msg, "block (1,0,0)") != NULL, "message '%s' does not name the block", msg);
    ck_assert_msg(strstr(msg, "thread (37,0,0)") != NULL, "message '%s' does not name the thread", msg);
  }
  (void)gp_get_last_error();
  OK(gp_free(out));
  vadd_check(5000, 128); /* the library is still usable */
}

START_TEST(trap_fails_launch) {
  SKIP_IF(gp_backend() != GP_BACKEND_CPU,
          "a trap is sticky on a GPU: the process would be done");
  fault_check(0, 0);
  fault_check(0, 1);
}
END_TEST

START_TEST(assert_fails_launch) {
  SKIP_IF(gp_backend() != GP_BACKEND_CPU,
          "an assert is sticky on a GPU: the process would be done");
  fault_check(1, 0);
  fault_check(1, 1);
}
END_TEST

static void divergent_check(int mode, const char *word) {
  unsigned block = 64;
  int *out = dev_alloc(block * sizeof(int));
  void *args[] = {&mode, &out};
  double t0 = now_s();
  OK(gp_launch(GP_KERNEL_REF(kt_divergent), gp_dim3(2, 1, 1), gp_dim3(block, 1, 1), 0, NULL, args));
  gp_status_t s = gp_stream_synchronize(NULL);
  double dt = now_s() - t0;
  ck_assert_msg(s == GP_ERROR_LAUNCH_FAILED, "mode %d: synchronize -> %s", mode, gp_status_name(s));
  ck_assert_msg(dt < 1.0, "mode %d: reported after %.2f s", mode, dt);
  const char *msg = gp_last_error_message();
  ck_assert_msg(strstr(msg, "kt_divergent") && strstr(msg, word), "mode %d: message '%s'", mode, msg);
  ck_assert_msg(strstr(msg, "kt_basic.cu:") != NULL, "mode %d: message '%s' names no site", mode, msg);
  (void)gp_get_last_error();
  OK(gp_free(out));
  vadd_check(3000, 64);
}

START_TEST(divergent_barrier_reported) {
  if (gp_backend() != GP_BACKEND_CPU) return; /* a GPU would hang or worse */
  divergent_check(0, "divergent __syncthreads");
  divergent_check(1, "can never complete");
  /* Threads that exit before a barrier do not hold it back. */
  unsigned block = 64;
  int mode = 2;
  int *out = dev_alloc(block * sizeof(int)), h[64];
  void *args[] = {&mode, &out};
  launch_sync(GP_KERNEL_REF(kt_divergent), 1, block, 0, args);
  OK(gp_memcpy(h, out, sizeof h));
  for (unsigned t = 0; t < block; t++) ck_assert_int_eq(h[t], t < block / 2);
  OK(gp_free(out));
}
END_TEST

START_TEST(syncthreads_count_and_or) {
  int *out = dev_alloc(4 * sizeof(int)), h[4];
  void *args[] = {&out};
  launch_sync(GP_KERNEL_REF(kt_sync_ops), 1, 100, 0, args);
  OK(gp_memcpy(h, out, sizeof h));
  ck_assert_int_eq(h[0], 34);
  ck_assert_int_eq(h[1], 1);
  ck_assert_int_eq(h[2], 1);
  ck_assert_int_eq(h[3], 0);
  OK(gp_free(out));
}
END_TEST

START_TEST(barriers_full_block) {
  int iters = 100;
  unsigned grid = 3;
  int *out = dev_alloc(grid * sizeof(int)), h[3];
  void *args[] = {&iters, &out};
  launch_sync(GP_KERNEL_REF(kt_barriers), grid, 1024, 0, args);
  OK(gp_memcpy(h, out, sizeof h));
  for (unsigned b = 0; b < grid; b++) ck_assert_int_eq(h[b], 1024);
  OK(gp_free(out));
}
END_TEST

#ifdef GP_BUILD_CPU
START_TEST(no_fibers_without_sync) {
  vadd_check(16, 16); /* warm up: the pool and the streams exist */
  gp__cpu_exec_stats_t st;
  gp__cpu_exec_stats_reset();
  vadd_check(100000, 256);
  gp__cpu_exec_stats(&st);
  ck_assert_uint_eq(st.launches, 1);
  ck_assert_uint_eq(st.blocks, (100000 + 255) / 256);
  ck_assert_uint_eq(st.blocks_fibered, 0);
  ck_assert_uint_eq(st.fibers_started, 0);
  gp__cpu_exec_stats_reset();
  reduce_check(0, 256);
  gp__cpu_exec_stats(&st);
  ck_assert_uint_eq(st.blocks_fibered, st.blocks);
  ck_assert_uint_eq(st.fibers_started, st.blocks * 255);
}
END_TEST

START_TEST(pool_survives_fork) {
  vadd_check(200000, 128); /* the pool runs */
  fflush(NULL);
  pid_t pid = fork();
  ck_assert(pid >= 0);
  if (pid == 0) {
    int ok = 1;
    int n = 300000;
    size_t bytes = (size_t)n * sizeof(float);
    float *h = malloc(bytes), *a = NULL, *c = NULL;
    for (int i = 0; i < n; i++) h[i] = (float)i;
    ok = ok && gp_malloc((void **)&a, bytes) == GP_SUCCESS && gp_malloc((void **)&c, bytes) == GP_SUCCESS;
    ok = ok && gp_memcpy(a, h, bytes) == GP_SUCCESS;
    void *args[] = {&n, &a, &a, &c};
    ok = ok && gp_launch(GP_KERNEL_REF(kt_vadd), gp_dim3((unsigned)(n + 255) / 256, 1, 1), gp_dim3(256, 1, 1),
                         0, NULL, args) == GP_SUCCESS;
    ok = ok && gp_stream_synchronize(NULL) == GP_SUCCESS;
    ok = ok && gp_memcpy(h, c, bytes) == GP_SUCCESS;
    for (int i = 0; ok && i < n; i++) ok = h[i] == 2.0f * (float)i;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ck_assert(waitpid(pid, &status, 0) == pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's launch failed (status %d)", status);
  vadd_check(1000, 128);
}
END_TEST

START_TEST(concurrent_streams) {
  gp_stream_t s[3];
  int n = 256 * 200;
  unsigned nb = (unsigned)n / 256;
  float *x = dev_alloc((size_t)n * sizeof(float)), *out[3], *h = malloc(nb * sizeof(float));
  float *hx = malloc((size_t)n * sizeof(float));
  for (int i = 0; i < n; i++) hx[i] = 1.0f;
  OK(gp_memcpy(x, hx, (size_t)n * sizeof(float)));
  for (int i = 0; i < 3; i++) {
    OK(gp_stream_create(&s[i]));
    out[i] = dev_alloc(nb * sizeof(float));
  }
  for (int rep = 0; rep < 20; rep++)
    for (int i = 0; i < 3; i++) {
      void *args[] = {&n, &x, &out[i]};
      OK(gp_launch(GP_KERNEL_REF(kt_reduce_static), gp_dim3(nb, 1, 1), gp_dim3(256, 1, 1), 0, s[i], args));
    }
  for (int i = 0; i < 3; i++) {
    OK(gp_stream_synchronize(s[i]));
    OK(gp_memcpy(h, out[i], nb * sizeof(float)));
    for (unsigned b = 0; b < nb; b++) ck_assert(h[b] == 256.0f);
    OK(gp_stream_destroy(s[i]));
    OK(gp_free(out[i]));
  }
  OK(gp_free(x));
  free(h);
  free(hx);
}
END_TEST

#if defined(__SANITIZE_ADDRESS__)
/* GP_SHARED arrays have poisoned redzones: AddressSanitizer stops the process (exit
 * status 1) at a read one element past the end. Needs Check's fork mode. */
START_TEST(shared_overflow_caught) {
  if ((getenv("CK_FORK") && strcmp(getenv("CK_FORK"), "no") == 0)) exit(1);
  int over = 0;
  float *out = dev_alloc(64 * sizeof(float));
  void *args[] = {&over, &out};
  launch_sync(GP_KERNEL_REF(kt_shared_overflow), 2, 64, 0, args); /* in bounds: fine */
  over = 1;
  int null_fd = open("/dev/null", O_WRONLY); /* keep the expected report out of the log */
  if (null_fd >= 0) dup2(null_fd, 2);
  (void)gp_launch(GP_KERNEL_REF(kt_shared_overflow), gp_dim3(2, 1, 1), gp_dim3(64, 1, 1), 0, NULL, args);
  (void)gp_stream_synchronize(NULL);
}
END_TEST
#endif

/* Costs quoted in docs/LAUNCH_ABI.md (printed when GP_KERNEL_BENCH=1). */
static void plain_vadd(int n, const float *a, const float *b, float *c) {
  for (int i = 0; i < n; i++) c[i] = a[i] + b[i];
}
static void (*volatile plain_vadd_ptr)(int, const float *, const float *, float *) = plain_vadd;

START_TEST(bench_report) {
  SKIP_IF(!getenv("GP_KERNEL_BENCH"), "GP_KERNEL_BENCH=1 runs this bandwidth report");
  int n = 1 << 24, reps = 10;
  size_t bytes = (size_t)n * sizeof(float);
  float *a = dev_alloc(bytes), *b = dev_alloc(bytes), *c = dev_alloc(bytes);
  float *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes);
  for (int i = 0; i < n; i++) ha[i] = hb[i] = hc[i] = (float)i;
  OK(gp_memcpy(a, ha, bytes));
  OK(gp_memcpy(b, hb, bytes));
  void *args[] = {&n, &a, &b, &c};
  double best_k = 1e9, best_c = 1e9;
  for (int r = 0; r < reps; r++) {
    double t0 = now_s();
    launch_sync(GP_KERNEL_REF(kt_vadd), (unsigned)(n / 256), 256, 0, args);
    double t1 = now_s();
    plain_vadd_ptr(n, ha, hb, hc);
    double t2 = now_s();
    best_k = t1 - t0 < best_k ? t1 - t0 : best_k;
    best_c = t2 - t1 < best_c ? t2 - t1 : best_c;
  }
  int threads = gp__cpu_exec_threads();
  printf("vector add 2^24 floats, blocks of 256: gp_launch %.2f ms (%d threads), plain C loop %.2f ms "
         "(1 thread)\n", best_k * 1e3, threads, best_c * 1e3);
  int iters = 100, *out = dev_alloc(sizeof(int));
  void *bargs[] = {&iters, &out};
  double best_b = 1e9;
  gp__cpu_exec_stats_t st;
  for (int r = 0; r < 5; r++) {
    gp__cpu_exec_stats_reset();
    double t0 = now_s();
    launch_sync(GP_KERNEL_REF(kt_barriers), 1, 1024, 0, bargs);
    double dt = now_s() - t0;
    best_b = dt < best_b ? dt : best_b;
    gp__cpu_exec_stats(&st);
  }
  printf("one 1024-thread block, %d barriers: %.3f ms (%.1f ns per thread per barrier; %llu switches, "
         "%llu fibers)\n", iters + 1, best_b * 1e3, best_b * 1e9 / (1024.0 * (iters + 1)),
         (unsigned long long)st.switches, (unsigned long long)st.fibers_started);
  OK(gp_free(a));
  OK(gp_free(b));
  OK(gp_free(c));
  OK(gp_free(out));
  free(ha);
  free(hb);
  free(hc);
}
END_TEST
#endif

/* ---- the library's own dialect kernels (kernels/portable/bench.cu) at every width ------------ */
static void bench_kernels_check(gp_kernel_t vadd, gp_kernel_t gelu, gp_kernel_t reduce, gp_kernel_t barriers,
                                gp_kernel_t empty) {
  const int n = 5000;
  float *h = malloc(4 * (size_t)n * sizeof(float));
  for (int i = 0; i < 4 * n; i++) h[i] = (float)((i * 37) % 101 - 50) * 0.03125f + 0.015625f; /* exact, nonzero */
  float *a = dev_alloc((size_t)n * sizeof(float)), *x = dev_alloc((size_t)n * sizeof(float));
  float *b = dev_alloc((size_t)n * sizeof(float)), *y = dev_alloc((size_t)n * sizeof(float));
  OK(gp_memcpy(a, h, (size_t)n * sizeof(float)));
  OK(gp_memcpy(x, h + n, (size_t)n * sizeof(float)));
  OK(gp_memcpy(b, h + 2 * n, (size_t)n * sizeof(float)));
  int nn = n;
  void *vargs[] = {&nn, &a, &b, &y};
  launch_sync(vadd, (unsigned)(n + 127) / 128, 128, 0, vargs);
  OK(gp_memcpy(h + 3 * n, y, (size_t)n * sizeof(float)));
  for (int i = 0; i < n; i++) ck_assert_msg(h[3 * n + i] == h[i] + h[2 * n + i], "%s [%d]", vadd->name, i);
  void *gargs[] = {&nn, &a, &x, &b, &y};
  launch_sync(gelu, (unsigned)(n + 127) / 128, 128, 0, gargs);
  OK(gp_memcpy(h + 3 * n, y, (size_t)n * sizeof(float)));
  for (int i = 0; i < n; i++) {
    double v = (double)h[i] * h[n + i] + h[2 * n + i], ref = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    /* fmaf is exact here; erff within 2 ulp; four more roundings */
    ck_assert_msg(fabs(h[3 * n + i] - ref) <= 8 * 0x1p-24 * (fabs(ref) + fabs(v)), "%s [%d]: %g vs %g", gelu->name, i,
                  (double)h[3 * n + i], ref);
  }
  long long nl = 4 * n - 7;
  float *sum = dev_alloc(sizeof(float)), got = 0;
  float *all = dev_alloc(4 * (size_t)n * sizeof(float));
  OK(gp_memcpy(all, h, 4 * (size_t)n * sizeof(float)));
  void *rargs[] = {&nl, &all, &sum};
  launch_sync(reduce, 3, 256, 0, rargs);
  OK(gp_memcpy(&got, sum, sizeof got));
  double ref = 0, mag = 0;
  for (long long i = 0; i < nl; i++) ref += h[i], mag += fabs(h[i]);
  ck_assert_msg(fabs(got - ref) <= 64 * 0x1p-24 * mag, "%s: %g vs %g", reduce->name, (double)got, ref);
  int iters = 7, *count = dev_alloc(2 * sizeof(int)), hc[2];
  void *bargs[] = {&iters, &count};
  launch_sync(barriers, 2, 192, 0, bargs);
  OK(gp_memcpy(hc, count, sizeof hc));
  ck_assert_int_eq(hc[0], 192);
  ck_assert_int_eq(hc[1], 192);
  launch_sync(empty, 1, 1, 0, NULL);
  OK(gp_free(a));
  OK(gp_free(x));
  OK(gp_free(b));
  OK(gp_free(y));
  OK(gp_free(sum));
  OK(gp_free(all));
  OK(gp_free(count));
  free(h);
}

START_TEST(library_bench_kernels) {
  bench_kernels_check(GP_KERNEL_REF(gp__bench_vadd), GP_KERNEL_REF(gp__bench_fma_gelu), GP_KERNEL_REF(gp__bench_reduce),
                      GP_KERNEL_REF(gp__bench_barriers), GP_KERNEL_REF(gp__bench_empty));
#ifdef GP_BUILD_CPU
  bench_kernels_check(GP_KERNEL_REF(gp__bench_vadd_w64), GP_KERNEL_REF(gp__bench_fma_gelu_w64),
                      GP_KERNEL_REF(gp__bench_reduce_w64), GP_KERNEL_REF(gp__bench_barriers_w64),
                      GP_KERNEL_REF(gp__bench_empty_w64));
#endif
}
END_TEST

#ifdef GP_BUILD_CPU
/* The "at width 64" test cases run the same tests in a child process with
 * GP_CPU_WARP_SIZE=64, where every kernel of kt_basic.cu runs its width-64 build. */
static void width64_setup(void) { setenv("GP_CPU_WARP_SIZE", "64", 1); }

START_TEST(width64_runs_the_w64_builds) {
  gp_kernel_t k32[] = {GP_KERNEL_REF(kt_vadd), GP_KERNEL_REF(kt_index3d), GP_KERNEL_REF(kt_reduce_static),
                       GP_KERNEL_REF(kt_reduce_dynamic), GP_KERNEL_REF(kt_atomics), GP_KERNEL_REF(kt_fault),
                       GP_KERNEL_REF(kt_divergent), GP_KERNEL_REF(kt_sync_ops), GP_KERNEL_REF(kt_barriers)};
  gp_kernel_t k64[] = {GP_KERNEL_REF(kt_vadd_w64), GP_KERNEL_REF(kt_index3d_w64), GP_KERNEL_REF(kt_reduce_static_w64),
                       GP_KERNEL_REF(kt_reduce_dynamic_w64), GP_KERNEL_REF(kt_atomics_w64), GP_KERNEL_REF(kt_fault_w64),
                       GP_KERNEL_REF(kt_divergent_w64), GP_KERNEL_REF(kt_sync_ops_w64), GP_KERNEL_REF(kt_barriers_w64)};
  for (size_t i = 0; i < sizeof k32 / sizeof k32[0]; i++) {
    ck_assert_int_eq(k64[i]->warp_size, 64);
    ck_assert_msg(gp__cpu_kernel_for_width(k32[i]) == k64[i], "%s does not run its width-64 build", k32[i]->name);
  }
}
END_TEST
#endif

static Suite *kernel_suite(void) {
  Suite *s = suite_create("kernel");
  TCase *tc = tcase_create("dialect");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, vector_add_non_multiple);
  tcase_add_test(tc, indices_3d);
  tcase_add_test(tc, shared_static_reduction);
  tcase_add_test(tc, shared_dynamic_reduction);
  tcase_add_test(tc, atomics_many_threads);
  tcase_add_test(tc, syncthreads_count_and_or);
  tcase_add_test(tc, barriers_full_block);
  tcase_add_test(tc, warp_ops_native_width);
#ifdef GP_BUILD_CPU
  tcase_add_test(tc, warp_ops_width_64);
  tcase_add_test(tc, partial_warps);
  tcase_add_test(tc, whole_program_width_64);
#endif
  tcase_add_test(tc, hardcoded_32_lanes_breaks_at_64);
  tcase_add_test(tc, library_bench_kernels);
  suite_add_tcase(s, tc);
  TCase *tf = tcase_create("faults");
  tcase_set_timeout(tf, 60);
  tcase_add_test(tf, trap_fails_launch);
  tcase_add_test(tf, assert_fails_launch);
  tcase_add_test(tf, divergent_barrier_reported);
  suite_add_tcase(s, tf);
#ifdef GP_BUILD_CPU
  TCase *te = tcase_create("executor");
  tcase_set_timeout(te, 120);
  tcase_add_test(te, no_fibers_without_sync);
  tcase_add_test(te, pool_survives_fork);
  tcase_add_test(te, concurrent_streams);
  tcase_add_test(te, bench_report);
#if defined(__SANITIZE_ADDRESS__)
  tcase_add_exit_test(te, shared_overflow_caught, 1);
#endif
  suite_add_tcase(s, te);
  /* The width-independent tests again with every kernel at width 64 (fork mode only:
   * each test is a fresh process that reads GP_CPU_WARP_SIZE). */
  if (!getenv("CK_FORK") || strcmp(getenv("CK_FORK"), "no") != 0) {
    TCase *t64 = tcase_create("dialect at width 64");
    tcase_set_timeout(t64, 60);
    tcase_add_checked_fixture(t64, width64_setup, NULL);
    tcase_add_test(t64, width64_runs_the_w64_builds);
    tcase_add_test(t64, vector_add_non_multiple);
    tcase_add_test(t64, indices_3d);
    tcase_add_test(t64, shared_static_reduction);
    tcase_add_test(t64, shared_dynamic_reduction);
    tcase_add_test(t64, atomics_many_threads);
    tcase_add_test(t64, syncthreads_count_and_or);
    tcase_add_test(t64, barriers_full_block);
    tcase_add_test(t64, trap_fails_launch);
    tcase_add_test(t64, assert_fails_launch);
    tcase_add_test(t64, divergent_barrier_reported);
#if defined(__SANITIZE_ADDRESS__)
    tcase_add_exit_test(t64, shared_overflow_caught, 1);
#endif
    suite_add_tcase(s, t64);
  }
#endif
  return s;
}

int main(void) { return run_suite("test_kernel", kernel_suite()); }
