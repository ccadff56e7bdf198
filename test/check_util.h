/*
 * check_util.h - what the Check suites share: status assertions that print the call,
 * the status and the thread's message; the device guards that let a test pass without
 * running where the backend has no device; the seed line of the numeric suites; and
 * the way a suite runs (run_suite, CHECK_MAIN).
 */
#ifndef GP_TEST_CHECK_UTIL_H
#define GP_TEST_CHECK_UTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gpuport.h>

/* The call succeeds. */
#define OK(expr)                                                                           \
  do {                                                                                     \
    gp_status_t ok_s_ = (expr);                                                            \
    ck_assert_msg(ok_s_ == GP_SUCCESS, "%s -> %s: %s", #expr, gp_status_name(ok_s_),       \
                  gp_last_error_message());                                                \
  } while (0)

/* The call returns status and the thread's message names the argument (word). */
#define FAILS(expr, status, word)                                                          \
  do {                                                                                     \
    gp_status_t f_s_ = (expr);                                                             \
    ck_assert_msg(f_s_ == (status), "%s -> %s, expected %s: %s", #expr,                    \
                  gp_status_name(f_s_), gp_status_name(status), gp_last_error_message());  \
    ck_assert_msg(strstr(gp_last_error_message(), (word)) != NULL,                         \
                  "%s: message '%s' does not name '%s'", #expr, gp_last_error_message(),   \
                  (word));                                                                 \
  } while (0)

/* Number of devices, or 0: the test then passes without running (no device here). */
static inline int devices(void) {
  int n = 0;
  return gp_device_count(&n) == GP_SUCCESS ? n : 0;
}
static inline int have_device(void) { return devices() > 0; }

/* Declares int n, the device count, and returns from the test when it is below min. */
#define NEED_DEVICES(min, n)                                                               \
  int n = devices();                                                                       \
  if (n < (min)) return
/* Returns from the test when the backend has no device. */
#define NEED_DEVICE()                                                                      \
  if (!have_device()) return

/* Prints "<name>: seed 0x... (replay with GP_TEST_SEED=0x...)", the line that lets a
 * failure with fresh random inputs be replayed. */
static inline void print_seed(const char *name, unsigned long long seed) {
  printf("%s: seed 0x%llx (replay with GP_TEST_SEED=0x%llx)\n", name, seed, seed);
  fflush(stdout);
}

/* Runs every test of suite s and returns the process's exit status: 0 when all passed,
 * 1 when one failed, 77 (skipped, automake's convention) on a GPU backend with no
 * device. The CPU backend runs each test in a forked child (Check's default, unless
 * CK_FORK=no); the GPU runtimes are undefined after fork, so there the tests run in
 * this process. */
static inline int run_suite(const char *name, Suite *s) {
  SRunner *sr = srunner_create(s);
  if (gp_backend() != GP_BACKEND_CPU) {
    srunner_set_fork_status(sr, CK_NOFORK);
    if (!have_device()) {
      printf("%s: no %s device: skipped\n", name, gp_backend_name());
      srunner_free(sr);
      return 77;
    }
  }
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* Runs every test of the suite made by make_suite() in this process's way (forked
 * children unless CK_FORK=no) and exits non-zero when one failed; for suites that
 * guard each test with NEED_DEVICE() themselves. */
#define CHECK_MAIN(make_suite)                                                             \
  int main(void) {                                                                         \
    SRunner *sr_ = srunner_create(make_suite());                                           \
    srunner_run_all(sr_, CK_NORMAL);                                                       \
    int failed_ = srunner_ntests_failed(sr_);                                              \
    srunner_free(sr_);                                                                     \
    return failed_ == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                                     \
  }

#endif /* GP_TEST_CHECK_UTIL_H */
