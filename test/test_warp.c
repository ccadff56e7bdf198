/*
 * test_warp.c - warp operations, one test per rule, each run at every warp width this
 * backend builds (the kernel's own width, and 64 on the CPU through the _w64 builds):
 * shuffles within width groups (idx wraps, up/down keep edge lanes, xor reads earlier
 * groups only), the _sync and CUDA spellings, exited lanes excused by maskless
 * operations and poisoned when read, masked groups that complete independently,
 * gp_syncwarp_mask ordering shared memory, gp_active_mask, and the faults the CPU
 * executor reports where a GPU is undefined. Kernels: test/kernels/kt_warp_rules.cu.
 *
 * Values moved between lanes are random (seed printed; GP_TEST_SEED replays) and the
 * expected value of every output element is recomputed on the host from the rule.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <gpuport.h>
#include "check_util.h"
#include "ref.h"

GP_KERNEL_DECLARE(kt_shfl_table);
GP_KERNEL_DECLARE(kt_exited);
GP_KERNEL_DECLARE(kt_subsets);
GP_KERNEL_DECLARE(kt_syncwarp_order);
GP_KERNEL_DECLARE(kt_active);
GP_KERNEL_DECLARE(kt_warp_faults);
#ifdef GP_BUILD_CPU
GP_KERNEL_DECLARE(kt_two_exchanges);
GP_KERNEL_DECLARE(kt_two_exchanges_w64);
GP_KERNEL_DECLARE(kt_shfl_table_w64);
GP_KERNEL_DECLARE(kt_exited_w64);
GP_KERNEL_DECLARE(kt_subsets_w64);
GP_KERNEL_DECLARE(kt_syncwarp_order_w64);
GP_KERNEL_DECLARE(kt_active_w64);
GP_KERNEL_DECLARE(kt_warp_faults_w64);
#define BUILDS(name) {GP_KERNEL_REF(name), GP_KERNEL_REF(name##_w64)}
#define NBUILDS 2
#else
#define BUILDS(name) {GP_KERNEL_REF(name)}
#define NBUILDS 1
#endif

enum { BLOCK = 128, GRID = 2, TOTAL = BLOCK * GRID };
enum { IDX = 0, UP = 1, DOWN = 2, XOR = 3 };
static const int POISON_INT = 0x7fbad0be;

static uint64_t g_seed;

/* Device copy of n random nonzero ints (the values lanes exchange); *host gets them. */
static int *random_vals(int **host, size_t n) {
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed);
  int *h = malloc(n * sizeof(int));
  ck_assert(h != NULL);
  for (size_t i = 0; i < n; i++) h[i] = 1 + (int)(gp_ref_rng_next(&rng) % 1000000u);
  int *d = NULL;
  OK(gp_malloc((void **)&d, n * sizeof(int)));
  OK(gp_memcpy(d, h, n * sizeof(int)));
  *host = h;
  return d;
}

static void *dev_poisoned(size_t bytes) {
  void *p = NULL;
  OK(gp_malloc(&p, bytes));
  OK(gp_memset(p, 0xa5, bytes)); /* every element must be written */
  return p;
}

static void launch(gp_kernel_t k, void **args) {
  OK(gp_launch(k, gp_dim3(GRID, 1, 1), gp_dim3(BLOCK, 1, 1), 0, NULL, args));
  OK(gp_stream_synchronize(NULL));
}

/* ---- shuffles: a table of (kind, arg, width) checked against the rule ------------------ */

/* The lane a shuffle reads, from the rule as CUDA's programming guide states it, or -1
 * for "the caller's own value". */
static int source_lane(int kind, int arg, int width, int l) {
  int base = l - l % width; /* the caller's group of `width` lanes */
  switch (kind) {
  case IDX: return base + (int)(((unsigned)arg) % (unsigned)width);
  case UP: return l - arg >= base ? l - arg : -1;
  case DOWN: return l + arg < base + width ? l + arg : -1;
  default: {
    int j = l ^ arg;
    return j < base + width ? j : -1; /* earlier groups are readable, later ones are not */
  }
  }
}

static void shfl_check(const int *table, int n) {
  gp_kernel_t ks[NBUILDS] = BUILDS(kt_shfl_table);
  int *hv = NULL, *vals = random_vals(&hv, TOTAL);
  int *dtable = NULL;
  OK(gp_malloc((void **)&dtable, (size_t)n * 3 * sizeof(int)));
  OK(gp_memcpy(dtable, table, (size_t)n * 3 * sizeof(int)));
  int *out = dev_poisoned((size_t)TOTAL * n * sizeof(int)), *h = malloc((size_t)TOTAL * n * sizeof(int));
  for (int b = 0; b < NBUILDS; b++) {
    const int W = ks[b]->warp_size;
    for (int form = 0; form < 3; form++) {
      OK(gp_memset(out, 0xa5, (size_t)TOTAL * n * sizeof(int)));
      void *args[] = {&form, &dtable, &n, &vals, &out};
      launch(ks[b], args);
      OK(gp_memcpy(h, out, (size_t)TOTAL * n * sizeof(int)));
      for (int g = 0; g < TOTAL; g++)
        for (int i = 0; i < n; i++) {
          int width = table[3 * i + 2] == 0 ? W : table[3 * i + 2]; /* 0 stands for the warp */
          int l = g % W, src = source_lane(table[3 * i], table[3 * i + 1], width, l);
          int want = src < 0 ? hv[g] : hv[g - l + src];
          ck_assert_msg(h[(size_t)g * n + i] == want,
                        "seed %llu, width %d, form %d, thread %d, shuffle {kind %d, arg %d, width %d}: "
                        "%d, expected %d",
                        (unsigned long long)g_seed, W, form, g, table[3 * i], table[3 * i + 1], width,
                        h[(size_t)g * n + i], want);
        }
    }
  }
  OK(gp_free(out));
  OK(gp_free(dtable));
  OK(gp_free(vals));
  free(h);
  free(hv);
}

/* The table: every arg at widths 1 .. 32 and the warp's own (0 in the table). */
static int shfl_table(int *t, int kind, const int *args, int nargs) {
  static const int widths[] = {1, 2, 4, 8, 16, 32, 0};
  int n = 0;
  for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
    for (int a = 0; a < nargs; a++) {
      t[3 * n] = kind;
      t[3 * n + 1] = args[a];
      t[3 * n + 2] = widths[w];
      n++;
    }
  return n;
}

START_TEST(shfl_idx_wraps_within_width) {
  static const int args[] = {0, 1, 3, 7, 31, 33, 63, 64, -1, -5};
  int t[3 * 70];
  shfl_check(t, shfl_table(t, IDX, args, 10));
}
END_TEST

START_TEST(shfl_up_keeps_low_edge) {
  static const int args[] = {0, 1, 2, 3, 8, 15, 16, 31, 32, 40, 64};
  int t[3 * 77];
  shfl_check(t, shfl_table(t, UP, args, 11));
}
END_TEST

START_TEST(shfl_down_keeps_high_edge) {
  static const int args[] = {0, 1, 2, 3, 8, 15, 16, 31, 32, 40, 64};
  int t[3 * 77];
  shfl_check(t, shfl_table(t, DOWN, args, 11));
}
END_TEST

START_TEST(shfl_xor_reads_earlier_groups_only) {
  static const int args[] = {0, 1, 2, 5, 8, 16, 24, 31, 32, 48, 63, 64, 96};
  int t[3 * 91];
  shfl_check(t, shfl_table(t, XOR, args, 13));
}
END_TEST

/* ---- exited lanes ---------------------------------------------------------------------- */
/* Runs kt_exited; checks the collective results, and (reads != 0) the values read
 * from lanes, poison where the lane read has exited. */
static void exited_check(int nexit, int low, int reads) {
  gp_kernel_t ks[NBUILDS] = BUILDS(kt_exited);
  int *hv = NULL, *vals = random_vals(&hv, TOTAL);
  int *out = dev_poisoned((size_t)TOTAL * 4 * sizeof(int)), *h = malloc((size_t)TOTAL * 4 * sizeof(int));
  unsigned long long *ball = dev_poisoned(TOTAL * sizeof(unsigned long long)), hb[TOTAL];
  int poisoned = 0;
  for (int b = 0; b < NBUILDS; b++) {
    const int W = ks[b]->warp_size;
    void *args[] = {&nexit, &low, &vals, &out, &ball};
    launch(ks[b], args);
    OK(gp_memcpy(h, out, (size_t)TOTAL * 4 * sizeof(int)));
    OK(gp_memcpy(hb, ball, sizeof hb));
    unsigned long long live = 0;
    for (int l = 0; l < W; l++)
      if (low ? l >= nexit : l < W - nexit) live |= 1ull << l;
    for (int g = 0; g < TOTAL; g++) {
      int l = g % W, base = g - l;
      if (!((live >> l) & 1)) continue;
      ck_assert_msg(h[4 * g] == W - nexit, "width %d thread %d: warp sum %d over %d live lanes", W, g, h[4 * g],
                    W - nexit);
      ck_assert_int_eq(h[4 * g + 1], 1);
      ck_assert_msg(hb[g] == live, "width %d thread %d: ballot %llx, live %llx", W, g, hb[g], live);
      if (!reads) continue;
      int src = (l + 1) % W;
      int want = ((live >> src) & 1) ? hv[base + src] : POISON_INT;
      ck_assert_msg(h[4 * g + 2] == want, "width %d thread %d: read of lane %d gave %d, expected %d", W, g, src,
                    h[4 * g + 2], want);
      int want0 = (live & 1) ? hv[base] : POISON_INT;
      ck_assert_msg(h[4 * g + 3] == want0, "width %d thread %d: __shfl_sync of lane 0 gave %d", W, g,
                    h[4 * g + 3]);
      poisoned += want == POISON_INT;
    }
  }
  if (reads) ck_assert_msg(poisoned > 0, "no read of an exited lane was checked");
  OK(gp_free(out));
  OK(gp_free(ball));
  OK(gp_free(vals));
  free(h);
  free(hv);
}

/* Maskless operations and CUDA's full mask take every lane that has not exited:
 * lanes that returned early are excused (CUDA's rule), whether they exited before
 * the first warp operation or while it was pending. */
START_TEST(exited_lanes_are_excused) {
  exited_check(5, 1, 0);
  exited_check(7, 0, 0);
}
END_TEST

/* Reading a lane that has exited gives a poison value (0x7fbad0be, NaN for floats)
 * and a warning; the launch succeeds (a GPU returns an undefined value). */
START_TEST(read_of_exited_lane_is_poison) {
  SKIP_IF(gp_backend() != GP_BACKEND_CPU, "undefined on a GPU (the cpu executor's poison)");
  exited_check(3, 0, 1);
  exited_check(4, 1, 1);
}
END_TEST

/* ---- masks ----------------------------------------------------------------------------- */
/* A masked operation waits for exactly the lanes of its mask: even and odd lanes
 * complete separately, on separate branches, with different numbers of operations. */
START_TEST(masked_groups_complete_independently) {
  gp_kernel_t ks[NBUILDS] = BUILDS(kt_subsets);
  int *hv = NULL, *vals = random_vals(&hv, TOTAL);
  int *out = dev_poisoned((size_t)TOTAL * 3 * sizeof(int)), *h = malloc((size_t)TOTAL * 3 * sizeof(int));
  unsigned long long *ball = dev_poisoned(TOTAL * sizeof(unsigned long long)), hb[TOTAL];
  for (int b = 0; b < NBUILDS; b++) {
    const int W = ks[b]->warp_size;
    void *args[] = {&vals, &out, &ball};
    launch(ks[b], args);
    OK(gp_memcpy(h, out, (size_t)TOTAL * 3 * sizeof(int)));
    OK(gp_memcpy(hb, ball, sizeof hb));
    unsigned long long even = 0, quad = 0;
    for (int l = 0; l < W; l += 2) even |= 1ull << l;
    for (int l = 0; l < W; l += 4) quad |= 1ull << l;
    for (int g = 0; g < TOTAL; g++) {
      int l = g % W, base = g - l;
      int want = l % 2 == 0 ? hv[base + (l ^ 2)] : hv[base + 1];
      unsigned long long wantb = l % 2 == 0 ? quad : even << 1;
      ck_assert_msg(h[3 * g] == want, "width %d thread %d: %d, expected %d", W, g, h[3 * g], want);
      ck_assert_msg(hb[g] == wantb, "width %d thread %d: ballot %llx, expected %llx", W, g, hb[g], wantb);
      ck_assert_int_eq(h[3 * g + 1], l % 2 == 1); /* lane 5 is odd: only the odd group sees it */
      ck_assert_int_eq(h[3 * g + 2], W);
    }
  }
  OK(gp_free(out));
  OK(gp_free(ball));
  OK(gp_free(vals));
  free(h);
  free(hv);
}
END_TEST

/* gp_syncwarp_mask orders shared-memory stores before the loads of the lanes it names. */
START_TEST(syncwarp_mask_orders_shared_memory) {
  gp_kernel_t ks[NBUILDS] = BUILDS(kt_syncwarp_order);
  int *out = dev_poisoned(TOTAL * sizeof(int)), h[TOTAL];
  for (int b = 0; b < NBUILDS; b++) {
    void *args[] = {&out};
    launch(ks[b], args);
    OK(gp_memcpy(h, out, sizeof h));
    for (int g = 0; g < TOTAL; g++) {
      int t = g % BLOCK;
      ck_assert_msg(h[g] == 7 * (t ^ 1) + 1, "width %d thread %d read %d", ks[b]->warp_size, g, h[g]);
    }
  }
  OK(gp_free(out));
}
END_TEST

/* gp_active_mask(): the lanes executing it together, here every lane that has not
 * exited. */
START_TEST(active_mask_is_live_lanes) {
  SKIP_IF(gp_backend() != GP_BACKEND_CPU,
          "a GPU need not reconverge the lanes (CUDA Programming Guide, __activemask)");
  gp_kernel_t ks[NBUILDS] = BUILDS(kt_active);
  unsigned long long *out = dev_poisoned(TOTAL * sizeof(unsigned long long)), h[TOTAL];
  int nexit = 6;
  for (int b = 0; b < NBUILDS; b++) {
    const int W = ks[b]->warp_size;
    void *args[] = {&nexit, &out};
    launch(ks[b], args);
    OK(gp_memcpy(h, out, sizeof h));
    unsigned long long live = 0;
    for (int l = nexit; l < W; l++) live |= 1ull << l;
    for (int g = 0; g < TOTAL; g++)
      if (g % W >= nexit) ck_assert_msg(h[g] == live, "width %d thread %d: %llx", W, g, h[g]);
  }
  OK(gp_free(out));
}
END_TEST

#ifdef GP_BUILD_CPU
/* The exchanges of two consecutive warp operations can be read together (the executor
 * ABI's promise to code that reads gp__cpu_warp_sync's result directly). */
START_TEST(two_consecutive_exchanges_readable) {
  gp_kernel_t ks[NBUILDS] = BUILDS(kt_two_exchanges);
  int *out = dev_poisoned(TOTAL * sizeof(int)), h[TOTAL];
  for (int b = 0; b < NBUILDS; b++) {
    const int W = ks[b]->warp_size;
    void *args[] = {&out};
    launch(ks[b], args);
    OK(gp_memcpy(h, out, sizeof h));
    int want = 0;
    for (int l = 0; l < W; l++) want += (l + 1) + (1000 + l);
    for (int g = 0; g < TOTAL; g++) ck_assert_msg(h[g] == want, "width %d thread %d: %d, expected %d", W, g, h[g], want);
  }
  OK(gp_free(out));
}
END_TEST
#endif

/* ---- faults ---------------------------------------------------------------------------- */
/* Runs kt_warp_faults in mode with kernel build k; returns the status and copies the
 * message. */
static gp_status_t fault_run(gp_kernel_t k, int mode, char *msg, size_t len) {
  int *out = dev_poisoned(TOTAL * sizeof(int));
  void *args[] = {&mode, &out};
  /* One block: the message names the first fault, which must be block 0's. */
  OK(gp_launch(k, gp_dim3(1, 1, 1), gp_dim3(BLOCK, 1, 1), 0, NULL, args));
  gp_status_t s = gp_stream_synchronize(NULL);
  snprintf(msg, len, "%s", s == GP_SUCCESS ? "" : gp_last_error_message());
  (void)gp_get_last_error();
  OK(gp_free(out));
  return s;
}

/* The cpu executor's own checks: on a GPU these are undefined (a hang, or garbage), so
 * the "faults" case exists on the cpu backend alone. */
static void fault_check(int mode, const char *thread, const char *reason, int only64) {
  gp_kernel_t ks[NBUILDS] = BUILDS(kt_warp_faults);
  char msg[1024];
  for (int b = 0; b < NBUILDS; b++) {
    gp_status_t s = fault_run(ks[b], mode, msg, sizeof msg);
    if (only64 && ks[b]->warp_size != 64) {
      ck_assert_msg(s == GP_SUCCESS, "mode %d at width %d: %s", mode, ks[b]->warp_size, msg);
      continue;
    }
    ck_assert_msg(s == GP_ERROR_LAUNCH_FAILED, "mode %d width %d: %s", mode, ks[b]->warp_size, gp_status_name(s));
    ck_assert_msg(strstr(msg, "kt_warp_faults") && strstr(msg, "block (0,0,0)") && strstr(msg, thread) &&
                      strstr(msg, reason) && strstr(msg, "kt_warp_rules.cu:"),
                  "mode %d width %d: message '%s' lacks '%s' or '%s'", mode, ks[b]->warp_size, msg, thread, reason);
  }
  /* The library is still usable. */
  int *out = dev_poisoned(TOTAL * sizeof(int)), h = 0;
  void *args[] = {&out};
  launch(GP_KERNEL_REF(kt_syncwarp_order), args);
  OK(gp_memcpy(&h, out, sizeof h));
  ck_assert_int_eq(h, 8);
  OK(gp_free(out));
}

START_TEST(fault_mask_without_caller) {
  fault_check(0, "thread (1,0,0)", "lane 1 is not in its mask", 0);
}
END_TEST

START_TEST(fault_mask_names_exited_lane) {
  fault_check(1, "thread (2,0,0)", "names lane 0, which has exited", 0);
}
END_TEST

START_TEST(fault_named_lane_exits_while_waited_for) {
  fault_check(2, "thread (0,0,0)", "waits for lane 3, which exited", 0);
}
END_TEST

/* CUDA code's 0xffffffff is the full mask at width 32, and names half the warp at 64. */
START_TEST(fault_32bit_full_mask_at_width_64) {
  fault_check(3, "thread (32,0,0)", "a 32-bit mask at warp width 64", 1);
}
END_TEST

START_TEST(fault_width_not_power_of_two) {
  fault_check(4, "thread (0,0,0)", "shuffle width 24 is not a power of two", 0);
}
END_TEST

static Suite *warp_suite(void) {
  Suite *s = suite_create("warp");
  TCase *tc = tcase_create("rules");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, shfl_idx_wraps_within_width);
  tcase_add_test(tc, shfl_up_keeps_low_edge);
  tcase_add_test(tc, shfl_down_keeps_high_edge);
  tcase_add_test(tc, shfl_xor_reads_earlier_groups_only);
  tcase_add_test(tc, exited_lanes_are_excused);
  tcase_add_test(tc, read_of_exited_lane_is_poison);
  tcase_add_test(tc, masked_groups_complete_independently);
  tcase_add_test(tc, syncwarp_mask_orders_shared_memory);
  tcase_add_test(tc, active_mask_is_live_lanes);
#ifdef GP_BUILD_CPU
  tcase_add_test(tc, two_consecutive_exchanges_readable);
#endif
  suite_add_tcase(s, tc);
  if (gp_backend() == GP_BACKEND_CPU) {
    TCase *tf = tcase_create("faults");
    tcase_set_timeout(tf, 60);
    tcase_add_test(tf, fault_mask_without_caller);
    tcase_add_test(tf, fault_mask_names_exited_lane);
    tcase_add_test(tf, fault_named_lane_exits_while_waited_for);
    tcase_add_test(tf, fault_32bit_full_mask_at_width_64);
    tcase_add_test(tf, fault_width_not_power_of_two);
    suite_add_tcase(s, tf);
  }
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  print_seed("test_warp", (unsigned long long)g_seed);
  return run_suite("test_warp", warp_suite());
}
