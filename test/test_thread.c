/*
 * test_thread.c - the calling thread's state (src/thread.c), which the library keeps on
 * the heap instead of in thread-local storage (docs/LAUNCH_ABI.md section 3): the error
 * message, the current device and an open collective group are each thread's own, a
 * thread that only succeeds makes none, and a thread's state is freed when it exits
 * (counted here; in the -san run LeakSanitizer also sees what an exiting thread's open
 * group held). Loading the library where static TLS is scarce is test/tls/check.sh.
 */
#include "check_util.h"

#include <pthread.h>

#include "internal.h"

typedef struct msgs {
  char first[64], failed[256];
} msgs_t;

static void *fail_once(void *arg) {
  msgs_t *m = arg;
  snprintf(m->first, sizeof m->first, "%s", gp_last_error_message());
  (void)gp_free((void *)(uintptr_t)0x10); /* not gpuport's: GP_ERROR_INVALID_VALUE */
  snprintf(m->failed, sizeof m->failed, "%s", gp_last_error_message());
  return NULL;
}

START_TEST(message_is_per_thread) {
  FAILS(gp_malloc(NULL, 16), GP_ERROR_INVALID_VALUE, "gp_malloc");
  int major = 0, minor = 0, patch = 0;
  OK(gp_version(&major, &minor, &patch)); /* a success keeps the last failure's message */
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "gp_malloc"));
  msgs_t m = {"x", ""};
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, fail_once, &m), 0);
  pthread_join(t, NULL);
  ck_assert_str_eq(m.first, ""); /* a new thread has failed nothing */
  ck_assert_msg(strstr(m.failed, "gp_free") != NULL, "the thread's message: '%s'", m.failed);
  ck_assert_msg(strstr(gp_last_error_message(), "gp_malloc") != NULL, "this thread's message: '%s'",
                gp_last_error_message());
}
END_TEST

typedef struct quiet {
  long live_before, live_during;
  int device;
  char message[64];
} quiet_t;

static void *succeed_only(void *arg) {
  quiet_t *q = arg;
  int n = 0;
  q->live_before = gp__thread_live();
  if (gp_device_count(&n) != GP_SUCCESS || gp_device_get(&q->device) != GP_SUCCESS ||
      gp_device_set(0) != GP_SUCCESS) {
    q->device = -1;
    return NULL;
  }
  snprintf(q->message, sizeof q->message, "%s", gp_last_error_message());
  q->live_during = gp__thread_live();
  return NULL;
}

START_TEST(success_makes_no_state) {
  quiet_t q = {-1, -2, -1, "x"};
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, succeed_only, &q), 0);
  pthread_join(t, NULL);
  ck_assert_int_eq(q.device, 0);
  ck_assert_str_eq(q.message, "");
  ck_assert_int_eq(q.live_during, q.live_before);
}
END_TEST

typedef struct busy {
  int device;          /* to make current */
  gp_status_t started; /* gp_group_start's */
  gp_comm_t comm;      /* written at gp_group_end, which never comes */
  int live;            /* whether the thread had a state before it ended */
} busy_t;

/* Fails a call, changes device, opens a group with a communicator queued in it, and
 * exits without closing the group: all of it is the thread's state to free. */
static void *use_and_exit(void *arg) {
  busy_t *b = arg;
  (void)gp_malloc(NULL, 1);
  if (gp_device_set(b->device) != GP_SUCCESS) return NULL;
  b->started = gp_group_start();
  gp_comm_id_t id;
  if (b->started == GP_SUCCESS && gp_comm_get_unique_id(&id) == GP_SUCCESS)
    (void)gp_comm_init_rank(&b->comm, 2, id, 0); /* queued until the group ends */
  b->live = gp__thread_peek() != NULL;
  return NULL;
}

START_TEST(state_freed_at_thread_exit) {
  NEED_DEVICES(1, n);
  enum { T = 16 };
  long before = gp__thread_live();
  busy_t b[T];
  pthread_t t[T];
  for (int i = 0; i < T; i++) {
    b[i] = (busy_t){i % n, GP_ERROR_INTERNAL, NULL, 0};
    ck_assert_int_eq(pthread_create(&t[i], NULL, use_and_exit, &b[i]), 0);
  }
  for (int i = 0; i < T; i++) pthread_join(t[i], NULL); /* after its key destructors ran */
  for (int i = 0; i < T; i++) {
    ck_assert_msg(b[i].live && b[i].started == GP_SUCCESS, "thread %d: state %d, gp_group_start %s", i,
                  b[i].live, gp_status_name(b[i].started));
    ck_assert_ptr_null(b[i].comm);
  }
  ck_assert_int_eq(gp__thread_live(), before);
}
END_TEST

START_TEST(group_is_per_thread) {
  OK(gp_group_start());
  busy_t b = {0, GP_ERROR_INTERNAL, NULL, 0};
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, use_and_exit, &b), 0);
  pthread_join(t, NULL);
  OK(gp_group_end()); /* the other thread's group is not this one's */
  FAILS(gp_group_end(), GP_ERROR_INVALID_VALUE, "group");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("thread");
  TCase *tc = tcase_create("thread");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, message_is_per_thread);
  tcase_add_test(tc, success_makes_no_state);
  tcase_add_test(tc, state_freed_at_thread_exit);
  tcase_add_test(tc, group_is_per_thread);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return run_suite("test_thread", suite()); }
