/*
 * check_util.h - the one harness of the Check suites in test/: status assertions that
 * print the call, the status and the thread's message; the seed line of the numeric
 * suites; skips that are counted and said, never passes; and the runner every suite's
 * main() ends with (run_suite, or skip_suite when the whole suite cannot run here).
 *
 * A suite is one test binary. main() builds its Suite, does what the suite needs first
 * (a seed, a temporary folder) and returns run_suite("test_x", suite), which
 *   - on the cpu backend runs every case, each test in a forked child (Check's default,
 *     unless CK_FORK=no): the cpu backend always has a device;
 *   - on the cuda and hip backends runs the tests in this process (the GPU runtimes are
 *     undefined after fork) and, when no device answers, runs only the cases marked
 *     case_runs_without_device(); a suite with none exits 77 (skipped: automake's
 *     convention, which test/run.sh counts) before running anything;
 *   - prints one line: how many cases ran and were skipped, how many tests passed,
 *     failed and were skipped (SKIP_IF, NEED_DEVICES), and returns the exit status:
 *     1 when a test failed, 77 when nothing ran to completion (all skipped), else 0.
 * A case the build leaves out (an instruction set it does not have) is counted with
 * skip_case(). Every suite_add_tcase goes through this header (the macro below), so
 * the counts hold whoever adds a case.
 */
#ifndef GP_TEST_CHECK_UTIL_H
#define GP_TEST_CHECK_UTIL_H

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <gpuport.h>

/* ---- assertions -------------------------------------------------------------------- */

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

/* Prints "<name>: seed 0x... (replay with GP_TEST_SEED=0x...)", the line that lets a
 * failure with fresh random inputs be replayed. */
static inline void print_seed(const char *name, unsigned long long seed) {
  printf("%s: seed 0x%llx (replay with GP_TEST_SEED=0x%llx)\n", name, seed, seed);
  fflush(stdout);
}

/* ---- the tally the runner reports ---------------------------------------------------- */

typedef struct gp_test_tally {
  int cases;          /* cases added to the suite */
  int host_cases;     /* of which run without a device */
  int left_out;       /* cases this build leaves out (skip_case) */
  int *skipped_tests; /* tests that ended in a skip: a page shared with forked children */
} gp_test_tally_t;

static inline gp_test_tally_t *gp_test_tally(void) {
  static gp_test_tally_t t;
  return &t;
}

static inline void gp_test_add_case(Suite *s, TCase *tc) {
  gp_test_tally()->cases++;
  suite_add_tcase(s, tc);
}
/* Counted: the runner needs the number of cases to say how many it skipped. */
#define suite_add_tcase(s, tc) gp_test_add_case((s), (tc))

/* Marks tc as a case that needs no device (host-side tables, argument checks before any
 * device call, the behaviour without a device): on a GPU build where no device answers
 * the runner runs these cases alone (Check's tag "nodevice"). */
static inline void case_runs_without_device(TCase *tc) {
  gp_test_tally()->host_cases++;
  tcase_set_tags(tc, "nodevice");
}

/* Counts a case this build leaves out, and says why (call it where the case would have
 * been added). */
static inline void skip_case(const char *name, const char *fmt, ...) {
  gp_test_tally()->left_out++;
  printf("case %s: skipped: ", name);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
}

/* ---- skips within a test ------------------------------------------------------------- */

static inline void gp_test_skipped(const char *fn, const char *fmt, ...) {
  int *n = gp_test_tally()->skipped_tests;
  if (n) __atomic_fetch_add(n, 1, __ATOMIC_RELAXED);
  size_t len = strlen(fn);
  if (len > 3 && strcmp(fn + len - 3, "_fn") == 0) len -= 3; /* START_TEST's name_fn */
  printf("%.*s: skipped: ", (int)len, fn);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
}

/* In a test's own body: ends the test when cond holds, counted as skipped (not passed)
 * and said with the reason (printf-style). */
#define SKIP_IF(cond, ...)                                                                 \
  do {                                                                                     \
    if (cond) {                                                                            \
      gp_test_skipped(__func__, __VA_ARGS__);                                              \
      return;                                                                              \
    }                                                                                      \
  } while (0)

/* ---- devices ------------------------------------------------------------------------- */

/* Number of devices, or 0. */
static inline int devices(void) {
  int n = 0;
  return gp_device_count(&n) == GP_SUCCESS ? n : 0;
}
static inline int have_device(void) { return devices() > 0; }

/* In a test's own body: declares int n, the device count, and skips the test (counted)
 * when it is below min (test/run.sh runs the cpu suites with 1 and with 4 devices). */
#define NEED_DEVICES(min, n)                                                               \
  int n = devices();                                                                       \
  SKIP_IF(n < (min), "needs %d devices, %d here", (min), n)

/* ---- the runner ------------------------------------------------------------------------ */

/* The whole suite cannot run in this build or on this machine: says why and returns
 * 77 (skipped), for main() to return. */
static inline int skip_suite(const char *name, const char *fmt, ...) {
  printf("%s: skipped: ", name);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
  return 77;
}

/* run_suite_with's flags. */
enum {
  RUN_QUIET = 1,  /* neither Check's report nor the tally (an MPI rank other than 0) */
  RUN_NOFORK = 2, /* every test in this process on every backend (MPI forbids fork) */
};

/* Runs suite s (see the top of this file) and returns the process's exit status; flags
 * RUN_*. *failed, when not NULL, gets the number of failed tests. */
static inline int run_suite_with(const char *name, Suite *s, int flags, int *failed) {
  gp_test_tally_t *t = gp_test_tally();
  SRunner *sr = srunner_create(s);
  const char *only = NULL;
  int skipped_cases = t->left_out;
  const int quiet = flags & RUN_QUIET;
  if (flags & RUN_NOFORK) srunner_set_fork_status(sr, CK_NOFORK);
  if (gp_backend() != GP_BACKEND_CPU) {
    srunner_set_fork_status(sr, CK_NOFORK);
    if (!have_device()) {
      if (t->host_cases == 0) {
        srunner_free(sr);
        if (failed) *failed = 0;
        if (quiet) return 77;
        return skip_suite(name, "no %s device (%d case%s, each needs one)", gp_backend_name(),
                          t->cases + t->left_out, t->cases + t->left_out == 1 ? "" : "s");
      }
      only = "nodevice";
      skipped_cases += t->cases - t->host_cases;
      if (!quiet) {
        printf("%s: no %s device: running only the %d case%s that need%s none\n", name,
               gp_backend_name(), t->host_cases, t->host_cases == 1 ? "" : "s",
               t->host_cases == 1 ? "s" : "");
        fflush(stdout);
      }
    }
  }
  int *page = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  t->skipped_tests = page == MAP_FAILED ? NULL : page;
  if (t->skipped_tests) *t->skipped_tests = 0;
  enum print_output mode = quiet ? CK_SILENT : CK_NORMAL;
  if (only)
    srunner_run_tagged(sr, NULL, NULL, only, NULL, mode);
  else
    srunner_run_all(sr, mode);
  const int ran = srunner_ntests_run(sr), nfailed = srunner_ntests_failed(sr);
  const int skipped = t->skipped_tests ? *t->skipped_tests : 0;
  const int passed = ran - nfailed - skipped;
  srunner_free(sr);
  if (t->skipped_tests) munmap(t->skipped_tests, sizeof(int));
  t->skipped_tests = NULL;
  const int ran_cases = (only ? t->host_cases : t->cases);
  if (!quiet) {
    printf("%s: cases: %d ran, %d skipped; tests: %d passed, %d failed, %d skipped\n", name,
           ran_cases, skipped_cases, passed, nfailed, skipped);
    fflush(stdout);
  }
  if (failed) *failed = nfailed;
  if (nfailed) return EXIT_FAILURE;
  return passed > 0 ? EXIT_SUCCESS : 77;
}

/* Runs suite s; the exit status main() returns. */
static inline int run_suite(const char *name, Suite *s) { return run_suite_with(name, s, 0, NULL); }

#endif /* GP_TEST_CHECK_UTIL_H */
