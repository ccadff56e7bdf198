/*
 * test_dialect.c - the widened kernel dialect (gpuport/kernel.h), at every warp width
 * this backend builds (on the CPU the _w64 builds of each source too):
 * - kernel templates: the CUDA samples' reduction switch over block sizes 1..1024
 *   launched from C++ with GP_LAUNCH((kt_reduce<T, B>), ...) without an export, exported
 *   instances launched from C, their names, static and header-defined kernels
 *   (test/kernels/kt_template.cu, kt_template2.cu, kt_template.cuh).
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

static Suite *dialect_suite(void) {
  Suite *s = suite_create("dialect");
  TCase *tt = tcase_create("templates");
  tcase_set_timeout(tt, 120);
  tcase_add_test(tt, template_reduce_switch_every_block_size);
  tcase_add_test(tt, template_exported_instance);
  tcase_add_test(tt, static_and_header_kernels);
  suite_add_tcase(s, tt);
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  print_seed("test_dialect", (unsigned long long)g_seed);
  return run_suite("test_dialect", dialect_suite());
}
