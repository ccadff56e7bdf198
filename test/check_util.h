/*
 * check_util.h - what the Check suites of the runtime (test_memory.c, test_stream.c,
 * test_device.c, test_kernel.c) share: status assertions that print the call, the
 * status and the thread's message; the device guards that let a suite pass without
 * running where the backend has no device; and main().
 */
#ifndef GP_TEST_CHECK_UTIL_H
#define GP_TEST_CHECK_UTIL_H

#include <check.h>
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

/* Runs every test of the suite made by make_suite() (in forked children, Check's
 * default, unless CK_FORK=no) and exits non-zero when one failed. */
#define CHECK_MAIN(make_suite)                                                             \
  int main(void) {                                                                         \
    SRunner *sr_ = srunner_create(make_suite());                                           \
    srunner_run_all(sr_, CK_NORMAL);                                                       \
    int failed_ = srunner_ntests_failed(sr_);                                              \
    srunner_free(sr_);                                                                     \
    return failed_ == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                                     \
  }

#endif /* GP_TEST_CHECK_UTIL_H */
