/*
 * test_handles.c - handles destroyed while other threads use them (streams, events,
 * graphs, executable graphs, modules, communicators): every call either works
 * (GP_SUCCESS, or the call's own answer such as GP_ERROR_NOT_READY) or loses the race
 * with GP_ERROR_INVALID_HANDLE, never reads freed memory; of two racing destroys exactly
 * one succeeds; a handle found dead by a thread stays dead for it; and every launch that
 * returned GP_SUCCESS ran (a counter the kernel increments is compared with the number
 * of successful launches once the device is idle).
 *
 * Each round creates the handle, starts two threads that use it and two that destroy
 * it after a random number of yields (seed printed, GP_TEST_SEED replays the choice of
 * delays; the interleaving itself is the scheduler's), and joins them. The kernel
 * (test/kernels/kt_handles.cu, and the module's, compiled at run time) has no barrier:
 * blocks run plainly, never as fibers, so the suite also runs under ThreadSanitizer
 * (`make test-tsan`, build/cpu-tsan), where a data race is a failure.
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gpuport.h>
#include "check_util.h"
#include "ref.h"

GP_KERNEL_DECLARE(kt_handles_count);

enum { ROUNDS = 12, USES = 40, USERS = 2, DESTROYERS = 2, MAX_OPS = 8 };

static uint64_t g_seed;

/* One round: the handles raced on (up to two), what the threads saw. */
typedef struct race race_t;
struct race {
  /* The use of op (i % nops): returns the call's status; *counted when it queued one
   * increment of the counter; *which names the handle it depends on (0 or 1). */
  gp_status_t (*use)(race_t *r, int i, bool *counted, int *which);
  gp_status_t (*destroy)(race_t *r, int d); /* destroyer d kills handle d % nhandles */
  int nops, nhandles;
  void *h[2];
  gp_stream_t s, s2;   /* live streams for the uses */
  gp_event_t e;        /* a live event */
  unsigned *counter;   /* device memory the kernels increment */
  float *buf;          /* device memory for copies and collectives */
  const char *src;     /* the module's source */
  atomic_int go, counted, host_calls, host_ran;
  atomic_int wins[2], bad;
  char why[512];
  unsigned seed;
};

static void gate(race_t *r) {
  while (!atomic_load(&r->go)) sched_yield();
}

static void note_bad(race_t *r, const char *what, gp_status_t st) {
  if (atomic_fetch_add(&r->bad, 1) == 0)
    snprintf(r->why, sizeof r->why, "%s -> %s: %s", what, gp_status_name(st),
             gp_last_error_message());
}

/* Allowed answers of a use besides success and losing the race. */
static bool answer(gp_status_t st) { return st == GP_ERROR_NOT_READY; }

typedef struct user {
  race_t *r;
  int index;
  unsigned seed;
  gp_kernel_t k; /* the module test's kernel, once got */
} user_t;

static _Thread_local user_t *tl_user;

static void *user_main(void *p) {
  user_t *u = p;
  race_t *r = u->r;
  tl_user = u;
  bool dead[2] = {false, false};
  gate(r);
  for (int i = 0; i < USES && !atomic_load(&r->bad); i++) {
    bool counted = false;
    int which = 0;
    gp_status_t st = r->use(r, i, &counted, &which);
    if (counted) atomic_fetch_add(&r->counted, 1);
    if (st == GP_ERROR_INVALID_HANDLE) {
      dead[which] = true;
    } else if (st == GP_SUCCESS || answer(st)) {
      if (dead[which] && st == GP_SUCCESS) note_bad(r, "a use after the handle was found dead", st);
    } else {
      note_bad(r, "a use", st);
    }
    if (rand_r(&u->seed) % 4 == 0) sched_yield();
  }
  return NULL;
}

typedef struct killer {
  race_t *r;
  int d;
  unsigned seed;
} killer_t;

static void *killer_main(void *p) {
  killer_t *k = p;
  race_t *r = k->r;
  gate(r);
  for (int n = rand_r(&k->seed) % (4 * USES); n > 0; n--) sched_yield();
  gp_status_t st = r->destroy(r, k->d);
  if (st == GP_SUCCESS) atomic_fetch_add(&r->wins[k->d % r->nhandles], 1);
  else if (st != GP_ERROR_INVALID_HANDLE) note_bad(r, "a destroy", st);
  return NULL;
}

/* Runs one round on r (its handles made by the caller): USERS users, DESTROYERS
 * destroyers per handle; checks the outcome. */
static void run_round(race_t *r) {
  pthread_t t[USERS + 2 * DESTROYERS];
  user_t users[USERS];
  killer_t killers[2 * DESTROYERS];
  int nt = 0;
  atomic_store(&r->go, 0);
  for (int i = 0; i < USERS; i++) {
    users[i] = (user_t){r, i, rand_r(&r->seed), NULL};
    ck_assert_int_eq(pthread_create(&t[nt++], NULL, user_main, &users[i]), 0);
  }
  for (int i = 0; i < DESTROYERS * r->nhandles; i++) {
    killers[i] = (killer_t){r, i, rand_r(&r->seed)};
    ck_assert_int_eq(pthread_create(&t[nt++], NULL, killer_main, &killers[i]), 0);
  }
  atomic_store(&r->go, 1);
  for (int i = 0; i < nt; i++) pthread_join(t[i], NULL);
  ck_assert_msg(atomic_load(&r->bad) == 0, "seed %llu: %s", (unsigned long long)g_seed, r->why);
  for (int h = 0; h < r->nhandles; h++)
    ck_assert_msg(atomic_load(&r->wins[h]) == 1, "handle %d destroyed %d times (seed %llu)", h,
                  atomic_load(&r->wins[h]), (unsigned long long)g_seed);
}

/* The shared part of every test: device memory, two live streams and an event. */
static void race_init(race_t *r, unsigned salt) {
  memset(r, 0, sizeof *r);
  r->seed = (unsigned)(g_seed ^ (g_seed >> 32)) + salt;
  OK(gp_malloc((void **)&r->counter, sizeof(unsigned)));
  OK(gp_memset(r->counter, 0, sizeof(unsigned)));
  OK(gp_malloc((void **)&r->buf, 64 * sizeof(float)));
  OK(gp_stream_create(&r->s));
  OK(gp_stream_create_with_flags(&r->s2, GP_STREAM_NON_BLOCKING));
  OK(gp_event_create(&r->e));
}

/* Every successful launch ran, every accepted host function ran; then frees. */
static void race_finish(race_t *r) {
  OK(gp_device_synchronize());
  unsigned ran = 0;
  OK(gp_memcpy(&ran, r->counter, sizeof ran));
  ck_assert_msg(ran == (unsigned)atomic_load(&r->counted),
                "%u launches ran, %d were accepted (seed %llu)", ran, atomic_load(&r->counted),
                (unsigned long long)g_seed);
  ck_assert_int_eq(atomic_load(&r->host_ran), atomic_load(&r->host_calls));
  OK(gp_stream_destroy(r->s));
  OK(gp_stream_destroy(r->s2));
  OK(gp_event_destroy(r->e));
  OK(gp_free(r->counter));
  OK(gp_free(r->buf));
}

static gp_status_t launch_count(race_t *r, gp_kernel_t k, gp_stream_t s, bool *counted) {
  void *args[] = {&r->counter};
  gp_status_t st = gp_launch(k, gp_dim3(1, 1, 1), gp_dim3(32, 1, 1), 0, s, args);
  *counted = st == GP_SUCCESS;
  return st;
}

static void host_ran(void *p) { atomic_fetch_add(&((race_t *)p)->host_ran, 1); }

/* ---- streams ---------------------------------------------------------------------------- */

static gp_status_t stream_use(race_t *r, int i, bool *counted, int *which) {
  gp_stream_t s = r->h[0];
  *which = 0;
  switch (i % 7) {
    case 0: return launch_count(r, GP_KERNEL_REF(kt_handles_count), s, counted);
    case 1: return gp_memset_async(r->buf, 0, 64 * sizeof(float), s);
    case 2: return gp_stream_query(s);
    case 3: {
      gp_status_t st = gp_event_record(r->e, s);
      return st == GP_SUCCESS ? gp_stream_wait_event(r->s2, r->e) : st;
    }
    case 4: {
      gp_status_t st = gp_launch_host_func(s, host_ran, r);
      if (st == GP_SUCCESS) atomic_fetch_add(&r->host_calls, 1);
      return st;
    }
    case 5: return gp_stream_synchronize(s);
    default: { /* a wrapper of it dies with it */
      void *native = gp_stream_native(s);
      gp_stream_t w = NULL;
      if (native == NULL) return GP_ERROR_INVALID_HANDLE;
      gp_status_t st = gp_stream_wrap(&w, native);
      if (st != GP_SUCCESS) return st == GP_ERROR_INVALID_VALUE ? GP_ERROR_INVALID_HANDLE : st;
      st = gp_memset_async(r->buf, 0, 64 * sizeof(float), w);
      gp_status_t d = gp_stream_destroy(w);
      if (d != GP_SUCCESS && d != GP_ERROR_INVALID_HANDLE) return d;
      return st;
    }
  }
}

static gp_status_t stream_destroy(race_t *r, int d) {
  (void)d;
  return gp_stream_destroy(r->h[0]);
}

START_TEST(stream_destroyed_while_used) {
  race_t r;
  race_init(&r, 1);
  r.use = stream_use, r.destroy = stream_destroy, r.nhandles = 1;
  for (int round = 0; round < ROUNDS; round++) {
    gp_stream_t s;
    OK(gp_stream_create(&s));
    r.h[0] = s;
    atomic_store(&r.wins[0], 0);
    run_round(&r);
  }
  race_finish(&r);
}
END_TEST

/* ---- events ------------------------------------------------------------------------------- */

static gp_status_t event_use(race_t *r, int i, bool *counted, int *which) {
  gp_event_t e = r->h[0];
  float ms = 0;
  *which = 0;
  switch (i % 6) {
    case 0: {
      bool c = false;
      (void)launch_count(r, GP_KERNEL_REF(kt_handles_count), r->s, &c);
      *counted = c;
      return gp_event_record(e, r->s);
    }
    case 1: return gp_stream_wait_event(r->s2, e);
    case 2: return gp_event_query(e);
    case 3: return gp_event_synchronize(e);
    case 4: return gp_event_elapsed_ms(&ms, e, e);
    default: {
      void *native = gp_event_native(e);
      gp_event_t w = NULL;
      if (native == NULL) return GP_ERROR_INVALID_HANDLE;
      gp_status_t st = gp_event_wrap(&w, native);
      if (st != GP_SUCCESS) return st == GP_ERROR_INVALID_VALUE ? GP_ERROR_INVALID_HANDLE : st;
      st = gp_event_record(w, r->s);
      gp_status_t d = gp_event_destroy(w);
      if (d != GP_SUCCESS && d != GP_ERROR_INVALID_HANDLE) return d;
      return st;
    }
  }
}

static gp_status_t event_destroy(race_t *r, int d) {
  (void)d;
  return gp_event_destroy(r->h[0]);
}

START_TEST(event_destroyed_while_used) {
  race_t r;
  race_init(&r, 2);
  r.use = event_use, r.destroy = event_destroy, r.nhandles = 1;
  for (int round = 0; round < ROUNDS; round++) {
    gp_event_t e;
    OK(gp_event_create(&e));
    OK(gp_event_record(e, r.s)); /* so elapsed time has a record to measure */
    r.h[0] = e;
    atomic_store(&r.wins[0], 0);
    run_round(&r);
  }
  race_finish(&r);
}
END_TEST

/* ---- graphs and executable graphs ---------------------------------------------------------- */

/* Rounds alternate between the graph and one executable graph: an executable graph made
 * during a round could take the address of the one being raced on, and a stale destroy
 * of the old one would then destroy it (as on CUDA: a stale handle is an error only
 * while its address is not reused). */
static gp_status_t graph_use(race_t *r, int i, bool *counted, int *which) {
  gp_graph_t g = r->h[0];
  *which = 0;
  if (i % 2 == 0) {
    gp_graph_exec_t x2 = NULL;
    gp_status_t st = gp_graph_instantiate(&x2, g);
    if (st != GP_SUCCESS) return st;
    st = gp_graph_launch(x2, r->s);
    *counted = st == GP_SUCCESS;
    gp_status_t d = gp_graph_exec_destroy(x2);
    return st != GP_SUCCESS ? st : d;
  }
  size_t n = 0;
  gp_status_t st = gp_graph_get_node_count(g, &n);
  return st == GP_SUCCESS && n != 1 ? GP_ERROR_INTERNAL : st;
}

static gp_status_t exec_use(race_t *r, int i, bool *counted, int *which) {
  (void)i;
  *which = 0;
  gp_status_t st = gp_graph_launch(r->h[0], r->s);
  *counted = st == GP_SUCCESS;
  return st;
}

static gp_status_t graph_destroy(race_t *r, int d) {
  (void)d;
  return gp_graph_destroy(r->h[0]);
}

static gp_status_t exec_destroy(race_t *r, int d) {
  (void)d;
  return gp_graph_exec_destroy(r->h[0]);
}

START_TEST(graph_destroyed_while_used) {
  race_t r;
  race_init(&r, 3);
  r.nhandles = 1;
  for (int round = 0; round < ROUNDS; round++) {
    gp_stream_t cs;
    gp_graph_t g;
    gp_graph_exec_t x;
    bool c = false;
    OK(gp_stream_create(&cs));
    OK(gp_stream_begin_capture(cs, GP_CAPTURE_MODE_RELAXED));
    OK(launch_count(&r, GP_KERNEL_REF(kt_handles_count), cs, &c));
    OK(gp_stream_end_capture(cs, &g));
    OK(gp_stream_destroy(cs));
    OK(gp_graph_instantiate(&x, g));
    bool on_graph = round % 2 == 0;
    r.use = on_graph ? graph_use : exec_use;
    r.destroy = on_graph ? graph_destroy : exec_destroy;
    r.h[0] = on_graph ? (void *)g : (void *)x;
    atomic_store(&r.wins[0], 0);
    run_round(&r);
    /* The other one outlives what the race destroyed, and works. */
    if (on_graph) {
      OK(gp_graph_launch(x, r.s));
      atomic_fetch_add(&r.counted, 1);
      OK(gp_graph_exec_destroy(x));
    } else {
      size_t n = 0;
      OK(gp_graph_get_node_count(g, &n));
      ck_assert_uint_eq(n, 1);
      OK(gp_graph_destroy(g));
    }
  }
  race_finish(&r);
}
END_TEST

/* ---- modules -------------------------------------------------------------------------------- */

static const char k_module_src[] =
    "#include <gpuport/kernel.h>\n"
    "GP_KERNEL void kt_mod_count(unsigned *counter) {\n"
    "  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(counter, 1u);\n"
    "}\n"
    "GP_KERNEL_EXPORT(kt_mod_count)\n";

static gp_status_t module_use(race_t *r, int i, bool *counted, int *which) {
  gp_module_t m = r->h[0];
  user_t *u = tl_user;
  switch (i % 4) {
    case 0: {
      *which = 0;
      gp_kernel_t k = NULL;
      gp_status_t st = gp_module_get_kernel(&k, m, "kt_mod_count");
      if (st == GP_SUCCESS) u->k = k;
      return st;
    }
    case 1:
      /* A kernel of the module: valid while the module is (or while a call still
       * holds it), then GP_ERROR_INVALID_HANDLE. */
      *which = 1;
      return u->k ? launch_count(r, u->k, r->s, counted) : GP_ERROR_NOT_READY;
    case 2: {
      *which = 1;
      if (u->k == NULL) return GP_ERROR_NOT_READY;
      const char *name = gp_kernel_name(u->k);
      if (name == NULL) return GP_ERROR_INVALID_HANDLE;
      return strcmp(name, "kt_mod_count") == 0 ? GP_SUCCESS : GP_ERROR_INTERNAL;
    }
    default: {
      *which = 1;
      int blocks = 0;
      return u->k ? gp_occupancy_max_active_blocks(&blocks, u->k, 32, 0) : GP_ERROR_NOT_READY;
    }
  }
}

static gp_status_t module_destroy(race_t *r, int d) {
  (void)d;
  return gp_module_unload(r->h[0]);
}

START_TEST(module_unloaded_while_used) {
  if (gp_backend() != GP_BACKEND_CPU) return; /* the source is a dialect source for the host compiler */
  race_t r;
  race_init(&r, 4);
  r.use = module_use, r.destroy = module_destroy, r.nhandles = 1;
  for (int round = 0; round < ROUNDS / 2; round++) {
    gp_module_t m;
    OK(gp_program_compile(&m, k_module_src, "kt_mod.cu", NULL, 0, NULL));
    r.h[0] = m;
    atomic_store(&r.wins[0], 0);
    run_round(&r);
  }
  race_finish(&r);
}
END_TEST

/* ---- communicators ---------------------------------------------------------------------------- */

static gp_status_t comm_use(race_t *r, int i, bool *counted, int *which) {
  gp_comm_t c = r->h[0];
  (void)counted;
  *which = 0;
  /* Collectives on one communicator are issued by one thread at a time (as NCCL
   * requires: their order is the clique's order); the other thread only queries it. */
  int op = tl_user->index == 0 ? (i % 3) * 2 : 1 + (i % 2) * 2;
  switch (op) {
    case 0: return gp_all_reduce(r->buf, r->buf, 64, GP_F32, GP_SUM, c, r->s);
    case 1: {
      int rank = -1;
      gp_status_t st = gp_comm_rank(c, &rank);
      return st == GP_SUCCESS && rank != 0 ? GP_ERROR_INTERNAL : st;
    }
    case 2: {
      OK(gp_group_start());
      gp_status_t st = gp_all_reduce(r->buf, r->buf, 64, GP_F32, GP_SUM, c, r->s);
      gp_status_t g = gp_group_end();
      return st != GP_SUCCESS ? st : g;
    }
    case 3: {
      gp_status_t as = GP_ERROR_INTERNAL;
      gp_status_t st = gp_comm_get_async_error(c, &as);
      return st == GP_SUCCESS && as != GP_SUCCESS ? as : st;
    }
    default: return gp_broadcast(r->buf, r->buf, 64, GP_F32, 0, c, r->s);
  }
}

static gp_status_t comm_destroy(race_t *r, int d) {
  (void)d;
  return gp_comm_destroy(r->h[0]);
}

START_TEST(comm_destroyed_while_used) {
  race_t r;
  race_init(&r, 5);
  r.use = comm_use, r.destroy = comm_destroy, r.nhandles = 1;
  float init[64], out[64];
  for (int i = 0; i < 64; i++) init[i] = (float)(i + 1);
  OK(gp_memcpy(r.buf, init, sizeof init));
  for (int round = 0; round < ROUNDS; round++) {
    gp_comm_t c = NULL;
    gp_status_t st = gp_comm_init_all(&c, 1, NULL);
    if (st != GP_SUCCESS && gp_backend() != GP_BACKEND_CPU) { /* no NCCL / RCCL here */
      printf("comm_destroyed_while_used: %s: skipped\n", gp_last_error_message());
      break;
    }
    OK(st);
    r.h[0] = c;
    atomic_store(&r.wins[0], 0);
    run_round(&r);
  }
  OK(gp_device_synchronize());
  /* One rank: a sum or a broadcast gives back what it was given. */
  OK(gp_memcpy(out, r.buf, sizeof out));
  for (int i = 0; i < 64; i++) ck_assert_float_eq(out[i], init[i]);
  race_finish(&r);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("handles");
  const struct {
    const char *name;
    const TTest *test;
  } cases[] = {{"stream", stream_destroyed_while_used}, {"event", event_destroyed_while_used},
               {"graph", graph_destroyed_while_used},   {"module", module_unloaded_while_used},
               {"comm", comm_destroyed_while_used}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) { /* CK_RUN_CASE=<name> */
    TCase *tc = tcase_create(cases[i].name);
    tcase_set_timeout(tc, 120); /* the module case compiles once; TSan runs slower */
    tcase_add_test(tc, cases[i].test);
    suite_add_tcase(s, tc);
  }
  return s;
}

/* Removes the suite's cache directory (one level). */
static void remove_dir(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}

int main(void) {
  g_seed = gp_ref_default_seed();
  print_seed("test_handles", (unsigned long long)g_seed);
  const char *tmp = getenv("TMPDIR");
  char cache[512];
  snprintf(cache, sizeof cache, "%s/gpuport-test-handles-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(cache) == NULL) {
    perror("mkdtemp");
    return EXIT_FAILURE;
  }
  setenv("GP_CACHE_DIR", cache, 1);
  int status = run_suite("test_handles", suite());
  remove_dir(cache);
  return status;
}
