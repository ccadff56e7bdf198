/*
 * exec.c - the CPU SIMT executor: runs a dialect kernel's grid with the GPU execution
 * model (docs/LAUNCH_ABI.md).
 *
 * - Blocks are handed out in increasing order, in small chunks, to the calling thread
 *   and a pool of OS threads (GP_CPU_THREADS). Each OS thread is a "worker".
 * - A worker runs blocks on its lead fiber. The kernel's cpu_run_block loops over the
 *   threads of a block in order, calling the body directly. While no thread has reached
 *   a barrier or warp operation, that is all (no fiber, no switch).
 * - When thread k reaches its first sync point, threads 0..k-1 have finished (a valid
 *   GPU schedule); k keeps running on the lead fiber and threads k+1..N-1 become fibers
 *   that start lazily. Barriers count arrivals, exited threads lower the count; warp
 *   operations are per-warp rendezvous with a double-buffered exchange. The decision is
 *   per block.
 * - The lead runs on its own stack (not the OS thread's), so a trap, an assertion or a
 *   barrier that can never complete ends the block by switching back to the worker's
 *   supervisor context, abandoning the block's stacks: no longjmp, and the library stays
 *   usable.
 */
#include "cpu/exec.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <gpuport/kernel.h>
#include "cpu/exec_fiber.h"

#ifdef GP__ASAN
#include <sanitizer/asan_interface.h>
#define GP__POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define GP__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define GP__POISON(p, n) ((void)(p), (void)(n))
#define GP__UNPOISON(p, n) ((void)(p), (void)(n))
#endif
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define GP__UNDEFINED(p, n) VALGRIND_MAKE_MEM_UNDEFINED((p), (n))
#endif
#endif
#ifndef GP__UNDEFINED
#define GP__UNDEFINED(p, n) ((void)(p), (void)(n))
#endif

/* ---- the thread context (exported, ABI version GP_KERNEL_ABI_VERSION) ------------- */
GP_API __thread gp__cpu_ctx_t gp__cpu_tls GP__CPU_TLS_MODEL;

#define MAXT GP__CPU_MAX_THREADS_PER_BLOCK
#define MAXW (MAXT / 32)
#define MAX_SLOTS 64
#define REDZONE 64
#define ARENA_BYTES (GP__CPU_SHARED_PER_BLOCK_OPTIN + (size_t)MAX_SLOTS * (REDZONE + 64) + 4096)
#define ALTSTACK_BYTES ((size_t)64 * 1024)
#define NO_XBUF 0xffffu

enum { T_DONE = 0, T_NEW, T_READY, T_RUNNING, T_WAIT_BAR, T_WAIT_WARP };

typedef struct thr {
  gp__fiber_t *fiber; /* the lead's for the thread that switched the block to fibers */
  gp__cpu_uint3_t idx;
  unsigned state;
  const char *file; /* where it waits */
  int line;
} thr_t;

/* A warp's rendezvous state, as lane bitmasks (bit l: thread base + l). A warp
 * operation completes for a group of lanes: every live lane for the maskless forms
 * (CUDA's full mask: lanes that exited are excused), exactly the lanes of the mask for
 * the masked forms (each named lane must arrive with the same mask). */
typedef struct warp {
  uint64_t live;      /* lanes that exist and have not exited */
  uint64_t pending;   /* lanes waiting at a warp operation */
  uint64_t pend_full; /* the pending lanes that wait at a maskless operation */
  unsigned base;      /* linear thread index of lane 0 */
} warp_t;

/* The exchange of one completed group. Each member holds it until its next warp
 * operation or its exit (it reads it in between), so buffers are counted. */
typedef struct xbuf {
  gp__cpu_warp_xchg_t x;
  unsigned refs;
} xbuf_t;

typedef struct slot {
  const char *key;
  size_t off, bytes;
} slot_t;

typedef struct job {
  const struct gp_kernel_s *k;
  void **args;
  gp_dim3_t grid, block;
  size_t dyn;
  int device;
  unsigned nthreads;
  unsigned flags;     /* GP__CPU_EXEC_* */
  uint64_t nblocks, chunk;
  uint64_t next;      /* next block to hand out (atomic) */
  int failed;         /* atomic; the first failure writes msg */
  unsigned bad_reads; /* reads of inactive lanes (atomic) */
  int bad_noted;
  const char *bad_file;
  int bad_line;
  unsigned bad_lane;
  unsigned active;    /* pool threads working on it (under the pool mutex) */
  struct job *link;
  /* cooperative launches: the grid barrier (under gmu) */
  pthread_mutex_t gmu;
  pthread_cond_t gcv;
  unsigned g_arrived, g_ended;
  uint64_t g_gen;
  const char *g_file;
  int g_line;
  gp__cpu_uint3_t g_ended_block;
  /* the launch watchdog (GP_LAUNCH_TIMEOUT_S): stop (atomic) asks every block to end at
   * its next sync point, or, in kernel code, at the watchdog's signal; the executable
   * segments of the kernel's object, where that signal may abandon a GPU thread */
  double timeout_s;
  int stop;
  int status; /* the status of the first failure: GP_ERROR_LAUNCH_FAILED or GP_ERROR_TIMEOUT */
  unsigned ntext;
  uintptr_t text_lo[4], text_hi[4];
  /* kernel printf: the launch's record buffer (atomic pointer, mapped at the first
   * printf), its capacity, the bytes reserved (atomic), what did not fit */
  unsigned char *pbuf;
  size_t pcap, pused;
  unsigned pdropped;
  size_t pdropped_bytes;
  char msg[1024];
} job_t;

typedef struct worker {
  gp__fiber_t sup;  /* the OS thread's own stack */
  gp__fiber_t lead; /* runs blocks */
  gp__fiber_t *cur, *prev;
  job_t *job;
  /* Read by the signal handlers of this OS thread: kernel code runs (set around the
   * kernel's body, cleared inside every executor entry point it calls); the dialect's
   * printf formats its arguments. */
  volatile sig_atomic_t in_kernel, in_format;
  const struct gp_kernel_s *k;
  void **args;
  unsigned n, ws, lead_tid, live;
  bool draining;
  /* block barrier */
  unsigned bar_alive, bar_arrived, bar_nwait;
  const char *bar_file, *div_file;
  int bar_line, div_line, bar_op, div_op, bar_acc, bar_result;
  /* ready queue (a ring of thread ids) */
  unsigned rq_head, rq_n;
  /* shared memory arena */
  unsigned char *arena;
  size_t arena_bytes, arena_dirty, shared_top, static_bytes, dyn;
  unsigned nslots;
  slot_t slots[MAX_SLOTS];
  /* the signal stack of this OS thread, when the executor installed it */
  unsigned char *altstack;
  gp__cpu_exec_stats_t st;
  uint16_t rq[MAXT];
  uint16_t bar_wait[MAXT];
  thr_t thr[MAXT];
  warp_t warps[MAXW];
  gp__fiber_t fib[MAXT];
  /* warp operations: what each thread brought, its mask (masked forms), the exchanges
   * it holds (its last two, so that two consecutive results can be read together, as
   * the ABI promises); the exchange buffers and their free list */
  uint64_t lane_val[MAXT];
  uint64_t lane_mask[MAXT];
  uint16_t held[MAXT][2];
  unsigned xb_used, xb_nfree;
  uint16_t xb_free[2 * MAXT];
  xbuf_t xb[2 * MAXT];
} worker_t;

/* ---- statistics -------------------------------------------------------------------- */
static gp__cpu_exec_stats_t g_stats;

static void stats_flush(gp__cpu_exec_stats_t *s) {
  uint64_t *src = (uint64_t *)s, *dst = (uint64_t *)&g_stats;
  for (size_t i = 0; i < sizeof *s / sizeof(uint64_t); i++)
    if (src[i]) __atomic_fetch_add(&dst[i], src[i], __ATOMIC_RELAXED);
  memset(s, 0, sizeof *s);
}

GP_API void gp__cpu_exec_stats(gp__cpu_exec_stats_t *out) {
  uint64_t *src = (uint64_t *)&g_stats, *dst = (uint64_t *)out;
  for (size_t i = 0; i < sizeof *out / sizeof(uint64_t); i++)
    dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

GP_API void gp__cpu_exec_stats_reset(void) {
  uint64_t *p = (uint64_t *)&g_stats;
  for (size_t i = 0; i < sizeof g_stats / sizeof(uint64_t); i++) __atomic_store_n(&p[i], 0, __ATOMIC_RELAXED);
}

/* ---- the pool ------------------------------------------------------------------------- */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t work, done;
  job_t *jobs;
  int started;
  int nthreads; /* pool threads running (atomic for readers without mu) */
  pthread_t tids[512]; /* each written before nthreads counts it */
} g_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, {0}};
/* Cooperative grids run one at a time: each needs every one of its blocks on an OS
 * thread at once, and two that each hold part of the pool would wait for each other. */
static pthread_mutex_t g_coop_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_worker_key; /* the thread's worker_t, freed when it exits */

static void worker_free(void *p) {
  worker_t *w = (worker_t *)p;
  if (!w) return;
  gp__fiber_stack_free(&w->lead);
  for (unsigned i = 0; i < MAXT; i++) gp__fiber_stack_free(&w->fib[i]);
  if (w->arena) {
    GP__UNPOISON(w->arena, w->arena_bytes);
    munmap(w->arena, w->arena_bytes);
  }
  if (w->altstack) {
    stack_t off;
    memset(&off, 0, sizeof off);
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, NULL); /* thread-exit destructors run on the exiting thread */
    munmap(w->altstack, ALTSTACK_BYTES);
  }
  free(w);
}

static void wd_atfork_child(void);
static void atfork_prepare(void) { pthread_mutex_lock(&g_pool.mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&g_pool.mu); }
/* The child has only the forking thread: the pool starts afresh at its next launch. */
static void atfork_child(void) {
  pthread_mutex_init(&g_pool.mu, NULL);
  pthread_cond_init(&g_pool.work, NULL);
  pthread_cond_init(&g_pool.done, NULL);
  g_pool.jobs = NULL;
  g_pool.started = 0;
  g_pool.nthreads = 0;
  pthread_mutex_init(&g_coop_mu, NULL);
  wd_atfork_child();
}

/* ---- faults of GPU threads: SIGSEGV / SIGBUS ------------------------------------------ */
/* A GPU thread that overflows its stack hits the guard page below it; one that
 * dereferences a bad pointer faults anywhere. Either way the signal arrives on the
 * OS thread running the block, on its signal stack: the handler fails the launch
 * naming the kernel, block and thread, and abandons the block by switching to the OS
 * thread's own stack, as a trap does. Faults outside a kernel, or while the OS thread
 * runs the executor on its own stack, go to the handler installed before. Under
 * AddressSanitizer only stack overflows and faults inside the dialect's printf are
 * taken: its report of a bad access is better.
 *
 * The handlers use only async-signal-safe operations (POSIX.1-2017, 2.4.3): the report
 * is built by the sbuf_* helpers below, never by the stdio formatting functions, and
 * nothing is allocated. A fault inside a C library function the kernel called itself
 * (free, fprintf) still leaves whatever lock that function held: the dialect's printf
 * formats into a string (vsnprintf takes no stdio lock) and kernels have no other
 * business in the C library's locked state. */
static struct sigaction g_old_segv, g_old_bus, g_old_urg;
static GP__NORETURN void fail_block(worker_t *w, const gp__cpu_uint3_t *thread, const char *fmt, ...)
    GP__PRINTF(3, 4);
static GP__NORETURN void fail_block_safe(worker_t *w, const gp__cpu_uint3_t *thread, const char *what);

/* A bounded string built without stdio (signal handlers). */
typedef struct sbuf {
  char *p;
  size_t cap, len;
} sbuf_t;

static void sbuf_str(sbuf_t *b, const char *s) {
  while (s && *s && b->len + 1 < b->cap) b->p[b->len++] = *s++;
  if (b->cap) b->p[b->len < b->cap ? b->len : b->cap - 1] = '\0';
}

static void sbuf_dec(sbuf_t *b, unsigned long long v) {
  char t[24];
  int i = (int)sizeof t - 1;
  t[i] = '\0';
  do t[--i] = (char)('0' + v % 10); while ((v /= 10) && i > 0);
  sbuf_str(b, t + i);
}

static void sbuf_hex(sbuf_t *b, unsigned long long v) {
  char t[24];
  int i = (int)sizeof t - 1;
  t[i] = '\0';
  do t[--i] = "0123456789abcdef"[v & 15]; while ((v >>= 4) && i > 2);
  t[--i] = 'x';
  t[--i] = '0';
  sbuf_str(b, t + i);
}

static void altstack_install(worker_t *w) {
  stack_t cur;
  if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE)) return; /* the application's */
  void *m = mmap(NULL, ALTSTACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return;
  stack_t ss;
  memset(&ss, 0, sizeof ss);
  ss.ss_sp = m;
  ss.ss_size = ALTSTACK_BYTES;
  if (sigaltstack(&ss, NULL) != 0) {
    munmap(m, ALTSTACK_BYTES);
    return;
  }
  w->altstack = (unsigned char *)m;
}

/* Whether a fault at addr with stack pointer sp is an overflow of fiber f's stack:
 * the guard page, or a frame large enough to jump it. */
static bool is_overflow(const gp__fiber_t *f, uintptr_t addr, uintptr_t sp) {
  if (!f->map) return false;
  uintptr_t lo = (uintptr_t)f->map, top = (uintptr_t)f->stack_lo;
  if (addr >= lo && addr < top) return true;
  return sp < top + 256 && sp + ((uintptr_t)1 << 20) > lo && addr < top && addr + ((uintptr_t)1 << 20) > lo;
}

static uintptr_t context_sp(void *uctx) {
#if defined(__x86_64__)
  return (uintptr_t)((ucontext_t *)uctx)->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
  return (uintptr_t)((ucontext_t *)uctx)->uc_mcontext.sp;
#else
  (void)uctx;
  return 0;
#endif
}

static uintptr_t context_pc(void *uctx) {
#if defined(__x86_64__)
  return (uintptr_t)((ucontext_t *)uctx)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  return (uintptr_t)((ucontext_t *)uctx)->uc_mcontext.pc;
#else
  (void)uctx;
  return 0;
#endif
}

static void chain(int sig, siginfo_t *si, void *uctx, const struct sigaction *old) {
  if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
    old->sa_sigaction(sig, si, uctx);
  } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
    old->sa_handler(sig);
  } else if (sig == SIGSEGV || sig == SIGBUS) {
    signal(sig, SIG_DFL); /* the faulting instruction runs again and takes the default action */
  }
}

static void fault_handler(int sig, siginfo_t *si, void *uctx) {
  worker_t *w = (worker_t *)gp__cpu_tls.worker;
  if (w && w->job && w->cur && w->cur != &w->sup) {
    w->in_kernel = 0; /* the watchdog's signal must not abandon this handler half way */
    uintptr_t addr = (uintptr_t)si->si_addr;
    char what[192];
    sbuf_t b = {what, sizeof what, 0};
    if (is_overflow(w->cur, addr, context_sp(uctx))) {
      sbuf_str(&b, "stack overflow of the GPU thread (");
      sbuf_dec(&b, w->cur->stack_size);
      sbuf_str(&b, "-byte stack; GP_CPU_STACK_KB sets it)");
      fail_block_safe(w, &gp__cpu_tls.thread_idx, what);
    }
#ifdef GP__ASAN
    if (w->in_format) {
#endif
      sbuf_str(&b, "invalid memory access at address ");
      sbuf_hex(&b, addr);
      sbuf_str(&b, sig == SIGBUS ? " (SIGBUS)" : " (SIGSEGV)");
      if (w->in_format) sbuf_str(&b, " while formatting printf's arguments");
      fail_block_safe(w, &gp__cpu_tls.thread_idx, what);
#ifdef GP__ASAN
    }
#endif
  }
  chain(sig, si, uctx, sig == SIGBUS ? &g_old_bus : &g_old_segv);
}

static void fault_handler_install(void) {
  if (gp__fiber_on_valgrind()) return; /* valgrind reports the access itself */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fault_handler;
  /* SA_NODEFER: the handler never returns when it takes the fault (it switches stacks),
   * so the signal must not stay blocked. */
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &g_old_segv);
  sigaction(SIGBUS, &sa, &g_old_bus);
}

/* ---- the launch watchdog's signal ---------------------------------------------------------- */
/* A GPU thread in a loop without a sync point never reaches the executor, so the
 * watchdog sends GP__WATCHDOG_SIGNAL to the OS threads running a launch that timed out.
 * The handler abandons the block, as a fault does, only where that is safe: the OS
 * thread runs kernel code (in_kernel: not the executor, whose state may be half
 * updated, nor a dialect call) and the interrupted instruction lies in an executable
 * segment of the kernel's own object (not in the C library or any other library the
 * kernel called, which may hold a lock). Elsewhere it returns, and the block stops at
 * its next sync point, or at the watchdog's next signal (every 50 ms). The signal is
 * SIGURG, as Go's preemption: its default action is to ignore it, and programs rarely
 * use it; one the watchdog did not send goes to the handler installed before. */
#define GP__WATCHDOG_SIGNAL SIGURG

static bool pc_in_kernel(const job_t *j, uintptr_t pc) {
  for (unsigned i = 0; i < j->ntext; i++)
    if (pc >= j->text_lo[i] && pc < j->text_hi[i]) return true;
  return false;
}

static void watchdog_handler(int sig, siginfo_t *si, void *uctx) {
  int saved = errno;
  worker_t *w = (worker_t *)gp__cpu_tls.worker;
  bool ours = si->si_code == SI_TKILL && si->si_pid == getpid();
  if (ours && w && w->in_kernel && w->job && w->cur && w->cur != &w->sup &&
      __atomic_load_n(&w->job->stop, __ATOMIC_ACQUIRE) && pc_in_kernel(w->job, context_pc(uctx))) {
    w->in_kernel = 0;
    fail_block_safe(w, &gp__cpu_tls.thread_idx, "stopped by the launch watchdog");
  }
  errno = saved;
  if (!ours) chain(sig, si, uctx, &g_old_urg);
}

static void watchdog_handler_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = watchdog_handler;
  /* SA_RESTART: a system call the signal interrupts (a pool thread's wait) goes on. */
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(GP__WATCHDOG_SIGNAL, &sa, &g_old_urg);
}

static void init_once(void) {
  pthread_key_create(&g_worker_key, worker_free);
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  fault_handler_install();
}

static worker_t *worker_self(void) {
  pthread_once(&g_once, init_once);
  worker_t *w = (worker_t *)pthread_getspecific(g_worker_key);
  if (w) return w;
  w = (worker_t *)calloc(1, sizeof *w);
  if (!w) return NULL;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  w->arena_bytes = (ARENA_BYTES + page - 1) & ~(page - 1);
  void *m = mmap(NULL, w->arena_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (m == MAP_FAILED) {
    free(w);
    return NULL;
  }
  w->arena = (unsigned char *)m;
  GP__POISON(w->arena, w->arena_bytes);
  altstack_install(w);
  if (pthread_setspecific(g_worker_key, w) != 0) {
    worker_free(w);
    return NULL;
  }
  return w;
}

int gp__cpu_exec_threads(void) {
  static int cached;
  int n = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (n) return n;
  long v = 0;
  const char *e = getenv("GP_CPU_THREADS");
  if (e && *e) v = strtol(e, NULL, 10);
  if (v <= 0) {
    if (gp__fiber_on_valgrind()) {
      v = 1; /* valgrind runs one thread at a time anyway */
    } else {
      cpu_set_t set;
      if (sched_getaffinity(0, sizeof set, &set) == 0)
        v = CPU_COUNT(&set);
      else
        v = sysconf(_SC_NPROCESSORS_ONLN);
    }
  }
  if (v < 1) v = 1;
  if (v > 512) v = 512;
  __atomic_store_n(&cached, (int)v, __ATOMIC_RELAXED);
  return (int)v;
}

static void run_job(worker_t *w, job_t *j);

static void *helper_main(void *arg) {
  (void)arg;
  /* Pool threads block asynchronous signals (they belong to the application's threads),
   * but a GPU thread's fault must reach the executor's handler. */
  sigset_t faults;
  sigemptyset(&faults);
  sigaddset(&faults, SIGSEGV);
  sigaddset(&faults, SIGBUS);
  pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
  worker_t *w = worker_self();
  if (!w) return NULL;
  pthread_mutex_lock(&g_pool.mu);
  for (;;) {
    job_t *j = NULL;
    for (job_t *q = g_pool.jobs; q; q = q->link)
      if (!__atomic_load_n(&q->failed, __ATOMIC_RELAXED) &&
          __atomic_load_n(&q->next, __ATOMIC_RELAXED) < q->nblocks) {
        j = q;
        break;
      }
    if (!j) {
      pthread_cond_wait(&g_pool.work, &g_pool.mu);
      continue;
    }
    j->active++;
    pthread_mutex_unlock(&g_pool.mu);
    run_job(w, j);
    pthread_mutex_lock(&g_pool.mu);
    if (--j->active == 0) pthread_cond_broadcast(&g_pool.done);
  }
  return NULL;
}

/* Starts the pool's threads (under the pool mutex). Fewer threads than asked is fine. */
static void pool_start_locked(void) {
  if (g_pool.started) return;
  g_pool.started = 1;
  int n = gp__cpu_exec_threads() - 1;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* signals go to the application's threads */
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  for (int i = 0; i < n; i++) {
    pthread_t t;
    if (pthread_create(&t, &attr, helper_main, NULL) != 0) break;
    g_pool.tids[g_pool.nthreads] = t;
    __atomic_store_n(&g_pool.nthreads, g_pool.nthreads + 1, __ATOMIC_RELEASE);
  }
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- the launch watchdog -------------------------------------------------------------- */
static bool job_claim_failure(job_t *j, gp_status_t status);
static void job_publish_failure(job_t *j);

/* GP_LAUNCH_TIMEOUT_S (seconds, off when unset or 0) bounds every launch: a thread of
 * the process (started at the first launch that has a timeout) keeps the running
 * launches by deadline. At a launch's deadline it fails the launch with
 * GP_ERROR_TIMEOUT naming the kernel, sets its stop flag (every block ends at its next
 * sync point; no new block starts) and sends GP__WATCHDOG_SIGNAL to the launch's OS
 * threads every 50 ms until the launch has ended (a GPU thread spinning in kernel code
 * is abandoned there). The OS threads, the executor and the library stay usable, as
 * after a trap. */
typedef struct wd_entry {
  job_t *j;
  pthread_t owner;   /* the launching thread (pool threads are signalled too) */
  double deadline;   /* CLOCK_MONOTONIC seconds */
  double next_kick;  /* after the deadline: when to signal again */
  bool fired;
  struct wd_entry *next;
} wd_entry_t;

/* The watchdog thread sleeps until the earliest deadline. With no launch running, it
 * still wakes every `period` (an eighth of the last timeout, at most 0.25 s) for 10 s
 * after the last timed launch, so that registering a launch seldom has to wake it (a
 * launch whose deadline is before next_wake does): a timed launch costs a lock, not a
 * context switch. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool started;
  wd_entry_t *list;
  double next_wake, period, last_active;
} g_wd = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, NULL, 0, 0.25, 0};
static pthread_once_t g_wd_once = PTHREAD_ONCE_INIT;

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The launch timeout in seconds, 0 when off. Read at every launch, so a program (or a
 * test) may set it at run time. */
static double launch_timeout(void) {
  const char *e = getenv("GP_LAUNCH_TIMEOUT_S");
  if (!e || !*e) return 0;
  char *end = NULL;
  double v = strtod(e, &end);
  if (end == e || *end || !(v >= 0) || v > 1e9) {
    static int warned;
    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
      GP__WARN(GP__SUB_LAUNCH, "GP_LAUNCH_TIMEOUT_S='%s' is not a number of seconds: no launch timeout", e);
    return 0;
  }
  return v;
}

double gp__cpu_launch_timeout_s(void) { return launch_timeout(); }

static void wd_kick(const wd_entry_t *e) {
  pthread_kill(e->owner, GP__WATCHDOG_SIGNAL);
  int n = __atomic_load_n(&g_pool.nthreads, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++) pthread_kill(g_pool.tids[i], GP__WATCHDOG_SIGNAL);
}

static int text_segments_cb(struct dl_phdr_info *info, size_t size, void *data);

/* The launch ran out of time (under g_wd.mu): its failure, the kernel's code for the
 * signal (its object stays loaded while it runs), its stop flag. */
static void wd_fire(wd_entry_t *e) {
  job_t *j = e->j;
  e->fired = true;
  dl_iterate_phdr(text_segments_cb, j);
  if (job_claim_failure(j, GP_ERROR_TIMEOUT)) {
    snprintf(j->msg, sizeof j->msg,
             "kernel '%s' ran longer than GP_LAUNCH_TIMEOUT_S (%g s): the launch watchdog stopped its "
             "blocks (the GPU backends report the driver's watchdog, cudaErrorLaunchTimeout, the same way)",
             j->k->name, j->timeout_s);
    job_publish_failure(j);
  }
  __atomic_store_n(&j->stop, 1, __ATOMIC_RELEASE);
}

static void wd_atfork_child(void) {
  pthread_mutex_init(&g_wd.mu, NULL);
  pthread_cond_init(&g_wd.cv, NULL);
  g_wd.started = false;
  g_wd.list = NULL;
  g_wd.next_wake = 0;
}

static void *wd_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_wd.mu);
  for (;;) {
    double now = mono_now(), next = now + 3600;
    for (wd_entry_t *e = g_wd.list; e; e = e->next) {
      if (!e->fired && now >= e->deadline) wd_fire(e);
      if (e->fired && now >= e->next_kick) {
        wd_kick(e);
        e->next_kick = now + 0.05;
      }
      double due = e->fired ? e->next_kick : e->deadline;
      if (due < next) next = due;
    }
    if (!g_wd.list && now - g_wd.last_active < 10) next = now + g_wd.period;
    g_wd.next_wake = next;
    struct timespec ts;
    ts.tv_sec = (time_t)next;
    ts.tv_nsec = (long)((next - (double)ts.tv_sec) * 1e9);
    pthread_cond_timedwait(&g_wd.cv, &g_wd.mu, &ts);
  }
  return NULL;
}

static void wd_init_once(void) { watchdog_handler_install(); }

/* Starts the watchdog thread (under g_wd.mu); false when it cannot. */
static bool wd_start_locked(void) {
  if (g_wd.started) return true;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_destroy(&g_wd.cv);
  pthread_cond_init(&g_wd.cv, &ca);
  pthread_condattr_destroy(&ca);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  g_wd.started = pthread_create(&t, &attr, wd_main, NULL) == 0;
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return g_wd.started;
}

static bool wd_register(wd_entry_t *e, job_t *j) {
  pthread_once(&g_wd_once, wd_init_once);
  e->j = j;
  e->owner = pthread_self();
  e->deadline = mono_now() + j->timeout_s;
  e->next_kick = e->deadline;
  e->fired = false;
  double period = j->timeout_s / 8 < 0.25 ? j->timeout_s / 8 : 0.25;
  pthread_mutex_lock(&g_wd.mu);
  bool ok = wd_start_locked();
  if (ok) {
    e->next = g_wd.list;
    g_wd.list = e;
    g_wd.last_active = e->deadline - j->timeout_s;
    g_wd.period = period;
    if (e->deadline < g_wd.next_wake || g_wd.next_wake == 0) pthread_cond_signal(&g_wd.cv);
  }
  pthread_mutex_unlock(&g_wd.mu);
  return ok;
}

/* After it returns, the watchdog neither writes the launch nor signals its threads. */
static void wd_unregister(wd_entry_t *e) {
  pthread_mutex_lock(&g_wd.mu);
  for (wd_entry_t **p = &g_wd.list; *p; p = &(*p)->next)
    if (*p == e) {
      *p = e->next;
      break;
    }
  pthread_mutex_unlock(&g_wd.mu);
}

/* The executable segments of the object that holds the kernel's code, for the
 * watchdog's signal (computed at a launch that has a timeout). */
static int text_segments_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  job_t *j = (job_t *)data;
  uintptr_t a = (uintptr_t)j->k->cpu_run_block;
  bool here = false;
  for (int i = 0; i < info->dlpi_phnum && !here; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    here = ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz;
  }
  if (!here) return 0;
  for (int i = 0; i < info->dlpi_phnum && j->ntext < 4; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    j->text_lo[j->ntext] = info->dlpi_addr + ph->p_vaddr;
    j->text_hi[j->ntext] = j->text_lo[j->ntext] + ph->p_memsz;
    j->ntext++;
  }
  return 1;
}

/* The watchdog's signal reaches the OS thread only while it runs a launch that has a
 * timeout (pool threads block it otherwise, and the application's threads keep their
 * own mask). */
static void wd_signal_mask(job_t *j, bool unblock, sigset_t *saved) {
  if (j->timeout_s <= 0) return;
  if (unblock) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, GP__WATCHDOG_SIGNAL);
    pthread_sigmask(SIG_UNBLOCK, &s, saved);
  } else {
    pthread_sigmask(SIG_SETMASK, saved, NULL);
  }
}

/* ---- failure ------------------------------------------------------------------------- */
static void switch_plain(worker_t *w, gp__fiber_t *from, gp__fiber_t *to, bool dying) {
  w->prev = from;
  w->cur = to;
  w->st.switches++;
  gp__fiber_switch(from, to, dying);
}

/* The first failure of the launch claims j->msg; later ones are dropped. */
static bool job_claim_failure(job_t *j, gp_status_t status) {
  int expected = 0;
  if (!__atomic_compare_exchange_n(&j->failed, &expected, -1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    return false;
  j->status = (int)status;
  return true;
}

/* The claimed failure is written: the launch may read it. */
static void job_publish_failure(job_t *j) { __atomic_store_n(&j->failed, 1, __ATOMIC_RELEASE); }

static void job_note_failure(job_t *j, const gp__cpu_uint3_t *block, const gp__cpu_uint3_t *thread,
                             const char *fmt, va_list ap) {
  if (!job_claim_failure(j, GP_ERROR_LAUNCH_FAILED)) return; /* the first failure is the one reported */
  int off = 0;
  if (block && thread)
    off = snprintf(j->msg, sizeof j->msg, "kernel '%s' block (%u,%u,%u) thread (%u,%u,%u): ",
                   j->k->name, block->x, block->y, block->z, thread->x, thread->y, thread->z);
  else
    off = snprintf(j->msg, sizeof j->msg, "kernel '%s': ", j->k->name);
  if (off < 0) off = 0;
  if ((size_t)off < sizeof j->msg) vsnprintf(j->msg + off, sizeof j->msg - (size_t)off, fmt, ap);
  job_publish_failure(j);
}

/* job_note_failure for signal handlers: no stdio, no locks. */
static void job_note_failure_safe(job_t *j, const gp__cpu_uint3_t *block, const gp__cpu_uint3_t *thread,
                                  const char *what) {
  if (!job_claim_failure(j, GP_ERROR_LAUNCH_FAILED)) return;
  sbuf_t b = {j->msg, sizeof j->msg, 0};
  sbuf_str(&b, "kernel '");
  sbuf_str(&b, j->k->name);
  sbuf_str(&b, "' block (");
  sbuf_dec(&b, block->x), sbuf_str(&b, ","), sbuf_dec(&b, block->y), sbuf_str(&b, ","), sbuf_dec(&b, block->z);
  sbuf_str(&b, ") thread (");
  sbuf_dec(&b, thread->x), sbuf_str(&b, ","), sbuf_dec(&b, thread->y), sbuf_str(&b, ","), sbuf_dec(&b, thread->z);
  sbuf_str(&b, "): ");
  sbuf_str(&b, what);
  job_publish_failure(j);
}

static void job_fail(job_t *j, const char *fmt, ...) GP__PRINTF(2, 3);
static void job_fail(job_t *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  job_note_failure(j, NULL, NULL, fmt, ap);
  va_end(ap);
}

/* Abandons the block and returns to the supervisor. Never returns. */
static GP__NORETURN void abandon_block(worker_t *w) {
  w->in_kernel = 0;
  w->in_format = 0;
  switch_plain(w, w->cur, &w->sup, true);
  __builtin_unreachable();
}

/* Fails the launch naming the block and thread, abandons the block, returns to the
 * supervisor. Never returns. */
static GP__NORETURN void fail_block(worker_t *w, const gp__cpu_uint3_t *thread, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  job_note_failure(w->job, &gp__cpu_tls.block_idx, thread, fmt, ap);
  va_end(ap);
  abandon_block(w);
}

static GP__NORETURN void fail_block_safe(worker_t *w, const gp__cpu_uint3_t *thread, const char *what) {
  job_note_failure_safe(w->job, &gp__cpu_tls.block_idx, thread, what);
  abandon_block(w);
}

/* The watchdog asked the launch to stop: the calling GPU thread's block ends here. */
static inline void stop_point(worker_t *w) {
  if (__builtin_expect(__atomic_load_n(&w->job->stop, __ATOMIC_RELAXED) != 0, 0))
    fail_block(w, &gp__cpu_tls.thread_idx, "stopped by the launch watchdog");
}

static const char *site_base(const char *file) {
  const char *s = file ? strrchr(file, '/') : NULL;
  return s ? s + 1 : (file ? file : "?");
}

static bool same_site(const char *f1, int l1, const char *f2, int l2) {
  return l1 == l2 && (f1 == f2 || (f1 && f2 && strcmp(f1, f2) == 0));
}

/* No thread can run and some still wait: say who waits where. */
static GP__NORETURN void deadlock(worker_t *w) {
  struct { int kind; const char *file; int line; unsigned count; } sites[4];
  unsigned nsites = 0, more = 0, waiting = 0, first = MAXT;
  for (unsigned t = 0; t < w->n; t++) {
    thr_t *r = &w->thr[t];
    if (r->state != T_WAIT_BAR && r->state != T_WAIT_WARP) continue;
    waiting++;
    if (first == MAXT) first = t;
    int kind = r->state == T_WAIT_BAR;
    unsigned i;
    for (i = 0; i < nsites; i++)
      if (sites[i].kind == kind && same_site(sites[i].file, sites[i].line, r->file, r->line)) break;
    if (i < nsites) {
      sites[i].count++;
    } else if (nsites < 4) {
      sites[nsites].kind = kind;
      sites[nsites].file = r->file;
      sites[nsites].line = r->line;
      sites[nsites].count = 1;
      nsites++;
    } else {
      more++;
    }
  }
  char buf[600];
  size_t off = 0;
  for (unsigned i = 0; i < nsites && off < sizeof buf; i++) {
    int m = snprintf(buf + off, sizeof buf - off, "%s%u thread%s at %s %s:%d", i ? ", " : "", sites[i].count,
                     sites[i].count == 1 ? "" : "s", sites[i].kind ? "__syncthreads" : "a warp operation",
                     site_base(sites[i].file), sites[i].line);
    if (m < 0) break;
    off += (size_t)m;
  }
  if (more && off < sizeof buf) snprintf(buf + off, sizeof buf - off, ", %u more elsewhere", more);
  gp__cpu_uint3_t idx = first < MAXT ? w->thr[first].idx : gp__cpu_tls.thread_idx;
  fail_block(w, &idx,
             "barrier that can never complete (divergent barrier): %u of %u threads wait (%s), "
             "%u exited",
             waiting, w->n, buf, w->n - w->live);
}

/* ---- scheduling within a block --------------------------------------------------------- */
static inline void rq_push(worker_t *w, unsigned t) {
  w->rq[(w->rq_head + w->rq_n) % MAXT] = (uint16_t)t;
  w->rq_n++;
}

static inline int rq_pop(worker_t *w) {
  if (!w->rq_n) return -1;
  unsigned t = w->rq[w->rq_head];
  w->rq_head = (w->rq_head + 1) % MAXT;
  w->rq_n--;
  return (int)t;
}

static void thread_main(void *arg);

/* Runs thread t, starting its fiber if it is new. */
static void switch_to(worker_t *w, gp__fiber_t *from, unsigned t, bool dying) {
  thr_t *r = &w->thr[t];
  gp__fiber_t *f = r->fiber;
  if (r->state == T_NEW) {
    if (!f->map && !gp__fiber_stack_alloc(f, gp__fiber_default_stack()))
      fail_block(w, &r->idx, "cannot map a %zu-byte fiber stack", gp__fiber_default_stack());
    gp__fiber_prepare(f, thread_main, w);
    w->st.fibers_started++;
  }
  r->state = T_RUNNING;
  gp__cpu_tls.tid = t;
  gp__cpu_tls.thread_idx = r->idx;
  switch_plain(w, from, f, dying);
}

/* The calling thread t waits: run another one. Returns when t is resumed. */
static void wait_here(worker_t *w, unsigned t) {
  int n = rq_pop(w);
  gp__fiber_t *self = w->thr[t].fiber;
  if (n >= 0)
    switch_to(w, self, (unsigned)n, false);
  else if (w->draining)
    switch_plain(w, self, &w->lead, false); /* the lead reports the deadlock */
  else
    deadlock(w);
}

static const char *bar_name(int op) {
  static const char *const names[] = {"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                                      "__syncthreads_or", "gp_grid_sync"};
  return op >= 0 && op <= GP__CPU_BAR_GRID ? names[op] : "a barrier";
}

static void grid_wait(worker_t *w);

static void bar_complete(worker_t *w) {
  if (w->div_file) {
    if (w->div_op == w->bar_op)
      fail_block(w, &gp__cpu_tls.thread_idx, "divergent %s: threads of one block wait at %s:%d and at %s:%d",
                 bar_name(w->bar_op), site_base(w->bar_file), w->bar_line, site_base(w->div_file),
                 w->div_line);
    fail_block(w, &gp__cpu_tls.thread_idx,
               "divergent __syncthreads: threads of one block wait at %s %s:%d and at %s %s:%d",
               bar_name(w->bar_op), site_base(w->bar_file), w->bar_line, bar_name(w->div_op),
               site_base(w->div_file), w->div_line);
  }
  if (w->bar_op == GP__CPU_BAR_GRID) grid_wait(w);
  w->bar_result = w->bar_acc;
  for (unsigned i = 0; i < w->bar_nwait; i++) {
    unsigned t = w->bar_wait[i];
    w->thr[t].state = T_READY;
    rq_push(w, t);
  }
  w->bar_nwait = 0;
  w->bar_arrived = 0;
  w->bar_file = NULL;
}

/* ---- cooperative launches: the grid barrier ---------------------------------------- */
/* Every block of a cooperative grid runs on its own OS thread (the grid is at most as
 * large as the pool), so a block whose threads have all reached gp_grid_sync() waits
 * here, on its OS thread, for the other blocks. A block that ended without reaching
 * it makes the barrier impossible: the launch fails instead of hanging. */
static void grid_wait(worker_t *w) {
  job_t *j = w->job;
  if (!(j->flags & GP__CPU_EXEC_COOPERATIVE))
    fail_block(w, &gp__cpu_tls.thread_idx,
               "gp_grid_sync() at %s:%d in a kernel not launched cooperatively (gp_launch_ex with "
               "cooperative = 1)",
               site_base(w->bar_file), w->bar_line);
  pthread_mutex_lock(&j->gmu);
  uint64_t gen = j->g_gen;
  if (!j->g_ended) {
    if (j->g_arrived++ == 0) {
      j->g_file = w->bar_file;
      j->g_line = w->bar_line;
    }
    if (j->g_arrived == j->nblocks) {
      j->g_arrived = 0;
      j->g_gen++;
      pthread_cond_broadcast(&j->gcv);
    }
    /* Timed: a failure elsewhere (possibly raised in a signal handler) ends the wait. */
    while (gen == j->g_gen && !j->g_ended && !__atomic_load_n(&j->failed, __ATOMIC_ACQUIRE)) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 20 * 1000 * 1000;
      if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&j->gcv, &j->gmu, &ts);
    }
  }
  bool released = gen != j->g_gen;
  gp__cpu_uint3_t ended = j->g_ended_block;
  pthread_mutex_unlock(&j->gmu);
  if (!released)
    fail_block(w, &gp__cpu_tls.thread_idx,
               "gp_grid_sync() at %s:%d can never complete: block (%u,%u,%u) ended without reaching it",
               site_base(w->bar_file), w->bar_line, ended.x, ended.y, ended.z);
}

/* A block of a cooperative grid has ended: blocks waiting at the grid barrier, or
 * arriving later, would wait forever. */
static void grid_block_ended(job_t *j, const gp__cpu_uint3_t *block) {
  pthread_mutex_lock(&j->gmu);
  if (!j->g_ended++) j->g_ended_block = *block;
  if (j->g_arrived) pthread_cond_broadcast(&j->gcv);
  pthread_mutex_unlock(&j->gmu);
}

/* ---- warp operations --------------------------------------------------------------- */
/* Lanes a .. b-1 as a mask (0 <= a <= b <= 64). */
static inline uint64_t lane_range(unsigned a, unsigned b) {
  uint64_t hi = b >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << b) - 1);
  uint64_t lo = a >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << a) - 1);
  return hi & ~lo;
}

static inline void xbuf_unref(worker_t *w, unsigned h) {
  if (h != NO_XBUF && --w->xb[h].refs == 0) w->xb_free[w->xb_nfree++] = (uint16_t)h;
}

/* Thread t arrives at a warp operation: it keeps its last exchange (readable until this
 * operation completes, as with the former double buffering) and drops the one before. */
static inline void xbuf_shift(worker_t *w, unsigned t) {
  xbuf_unref(w, w->held[t][1]);
  w->held[t][1] = w->held[t][0];
  w->held[t][0] = NO_XBUF;
}

/* Thread t has exited: it holds nothing. */
static inline void xbuf_release(worker_t *w, unsigned t) {
  xbuf_unref(w, w->held[t][0]);
  xbuf_unref(w, w->held[t][1]);
  w->held[t][0] = w->held[t][1] = NO_XBUF;
}

/* Every lane of group g of warp wp has arrived: publish their values in a fresh
 * exchange, which each member holds, and wake the members other than self. A buffer
 * is always free: each thread holds at most two, one of them released on arrival. */
static gp__cpu_warp_xchg_t *warp_complete(worker_t *w, warp_t *wp, uint64_t g, unsigned self) {
  unsigned h = w->xb_nfree ? w->xb_free[--w->xb_nfree] : w->xb_used++;
  xbuf_t *b = &w->xb[h];
  b->x.active = g;
  b->refs = (unsigned)__builtin_popcountll(g);
  wp->pending &= ~g;
  wp->pend_full &= ~g;
  for (uint64_t m = g; m; m &= m - 1) {
    unsigned l = (unsigned)__builtin_ctzll(m), t = wp->base + l;
    b->x.val[l] = w->lane_val[t];
    w->held[t][0] = (uint16_t)h;
    if (t != self) {
      w->thr[t].state = T_READY;
      rq_push(w, t);
    }
  }
  return &b->x;
}

/* Thread t has returned from the kernel: it no longer holds back barriers or maskless
 * warp operations; a masked operation that names it can never complete. */
static void thread_exit(worker_t *w, unsigned t) {
  w->thr[t].state = T_DONE;
  w->live--;
  w->bar_alive--;
  if (w->bar_arrived && w->bar_arrived == w->bar_alive) bar_complete(w);
  warp_t *wp = &w->warps[t / w->ws];
  unsigned lane = t - wp->base;
  xbuf_release(w, t);
  wp->live &= ~((uint64_t)1 << lane);
  for (uint64_t m = wp->pending & ~wp->pend_full; m; m &= m - 1) {
    unsigned p = wp->base + (unsigned)__builtin_ctzll(m);
    if ((w->lane_mask[p] >> lane) & 1u)
      fail_block(w, &w->thr[p].idx,
                 "warp operation at %s:%d with mask 0x%016llx waits for lane %u, which exited",
                 site_base(w->thr[p].file), w->thr[p].line, (unsigned long long)w->lane_mask[p], lane);
  }
  if (wp->pend_full && wp->pend_full == wp->live) (void)warp_complete(w, wp, wp->live, MAXT);
}

static void thread_main(void *arg) {
  worker_t *w = (worker_t *)arg;
  gp__fiber_started(w->prev);
  w->in_kernel = 1;
  w->k->cpu_run_thread(w->args);
  w->in_kernel = 0;
  unsigned t = gp__cpu_tls.tid;
  gp__fiber_t *self = &w->fib[t];
  thread_exit(w, t);
  int n = rq_pop(w);
  if (n >= 0)
    switch_to(w, self, (unsigned)n, true);
  else if (w->draining)
    switch_plain(w, self, &w->lead, true);
  else
    deadlock(w);
  __builtin_unreachable();
}

/* The running thread k reached the block's first sync point: threads 0..k-1 have
 * finished, k stays on the lead fiber, k+1..N-1 become (lazily started) fibers. */
static void go_fibers(worker_t *w) {
  gp__cpu_ctx_t *c = &gp__cpu_tls;
  unsigned n = w->n, ws = w->ws;
  unsigned k = c->thread_idx.x + c->block_dim.x * (c->thread_idx.y + c->block_dim.y * c->thread_idx.z);
  c->tid = k;
  c->fibered = 1;
  w->lead_tid = k;
  w->draining = false;
  w->live = n - k;
  w->rq_head = w->rq_n = 0;
  for (unsigned t = 0; t < k; t++) w->thr[t].state = T_DONE;
  w->thr[k].fiber = &w->lead;
  w->thr[k].idx = c->thread_idx;
  w->thr[k].state = T_RUNNING;
  gp__cpu_uint3_t idx = c->thread_idx;
  for (unsigned t = k + 1; t < n; t++) {
    if (++idx.x == c->block_dim.x) {
      idx.x = 0;
      if (++idx.y == c->block_dim.y) {
        idx.y = 0;
        idx.z++;
      }
    }
    thr_t *r = &w->thr[t];
    r->fiber = &w->fib[t];
    r->idx = idx;
    r->state = T_NEW;
    r->file = NULL;
    r->line = 0;
    rq_push(w, t);
  }
  w->bar_alive = n - k;
  w->bar_arrived = w->bar_nwait = 0;
  w->bar_file = w->div_file = NULL;
  unsigned nw = (n + ws - 1) / ws;
  for (unsigned i = 0; i < nw; i++) {
    warp_t *wp = &w->warps[i];
    unsigned lo = i * ws, hi = lo + ws < n ? lo + ws : n, first = lo < k ? (k < hi ? k : hi) : lo;
    wp->base = lo;
    wp->live = lane_range(first - lo, hi - lo);
    wp->pending = wp->pend_full = 0;
  }
  for (unsigned t = 0; t < n; t++) w->held[t][0] = w->held[t][1] = NO_XBUF;
  w->xb_used = w->xb_nfree = 0;
  w->st.blocks_fibered++;
}

/* The lead's thread has returned: run the block's fibers to the end. */
static void lead_drain(worker_t *w) {
  w->draining = true;
  thread_exit(w, w->lead_tid);
  while (w->live) {
    int n = rq_pop(w);
    if (n < 0) deadlock(w);
    switch_to(w, &w->lead, (unsigned)n, false);
  }
}

/* ---- shared memory -------------------------------------------------------------------- */
static void shared_begin(worker_t *w) {
#ifdef GP__ASAN
  if (w->arena_dirty) GP__POISON(w->arena, w->arena_dirty);
#endif
  if (w->dyn) {
    GP__UNPOISON(w->arena, w->dyn);
    GP__UNDEFINED(w->arena, w->dyn);
  }
  w->shared_top = (w->dyn + 63) & ~(size_t)63;
  w->arena_dirty = w->shared_top;
  w->nslots = 0;
  w->static_bytes = 0;
}

static void *shared_slot(worker_t *w, size_t bytes, size_t align, const char *key) {
  for (unsigned i = 0; i < w->nslots; i++)
    if (w->slots[i].key == key) return w->arena + w->slots[i].off;
  if (align < 16) align = 16;
  if (w->nslots == MAX_SLOTS)
    fail_block(w, &gp__cpu_tls.thread_idx, "more than %d GP_SHARED declarations", MAX_SLOTS);
  if (w->static_bytes + bytes > GP__CPU_SHARED_PER_BLOCK)
    fail_block(w, &gp__cpu_tls.thread_idx,
               "static shared memory exceeds %zu bytes (GP_SHARED '%s' of %zu bytes after %zu)",
               GP__CPU_SHARED_PER_BLOCK, key, bytes, w->static_bytes);
  if (w->static_bytes + bytes + w->dyn > GP__CPU_SHARED_PER_BLOCK_OPTIN)
    fail_block(w, &gp__cpu_tls.thread_idx,
               "static (%zu bytes) plus dynamic (%zu bytes) shared memory exceeds %zu bytes",
               w->static_bytes + bytes, w->dyn, GP__CPU_SHARED_PER_BLOCK_OPTIN);
  size_t off = (w->shared_top + REDZONE + align - 1) & ~(align - 1);
  if (align > 4096 || off + bytes + REDZONE > w->arena_bytes)
    fail_block(w, &gp__cpu_tls.thread_idx, "GP_SHARED '%s' does not fit the shared arena", key);
  slot_t *s = &w->slots[w->nslots++];
  s->key = key;
  s->off = off;
  s->bytes = bytes;
  w->static_bytes += bytes;
  w->shared_top = off + bytes;
  w->arena_dirty = w->shared_top;
  GP__UNPOISON(w->arena + off, bytes);
  GP__UNDEFINED(w->arena + off, bytes);
  return w->arena + off;
}

GP_API void *gp__cpu_shared_slot(size_t bytes, size_t align, const char *key) {
  worker_t *w = (worker_t *)gp__cpu_tls.worker;
  w->in_kernel = 0;
  void *p = shared_slot(w, bytes, align, key);
  w->in_kernel = 1;
  return p;
}

/* ---- sync points (exported) ------------------------------------------------------------ */
/* Every entry point kernel code calls marks the executor's part (in_kernel = 0, which
 * the watchdog's signal respects) and is a stop point of the watchdog. */
static int barrier(worker_t *w, int op, int pred, const char *file, int line) {
  gp__cpu_ctx_t *c = &gp__cpu_tls;
  if (!c->fibered) go_fibers(w);
  unsigned t = c->tid;
  w->st.barriers++;
  if (w->bar_arrived == 0) {
    w->bar_file = file;
    w->bar_line = line;
    w->bar_op = op;
    w->bar_acc = op == GP__CPU_BAR_AND ? 1 : 0;
  } else if (!w->div_file && (op != w->bar_op || !same_site(file, line, w->bar_file, w->bar_line))) {
    w->div_file = file;
    w->div_line = line;
    w->div_op = op;
  }
  if (op == GP__CPU_BAR_COUNT)
    w->bar_acc += pred != 0;
  else if (op == GP__CPU_BAR_AND)
    w->bar_acc = w->bar_acc && pred;
  else if (op == GP__CPU_BAR_OR)
    w->bar_acc = w->bar_acc || pred;
  thr_t *r = &w->thr[t];
  r->file = file;
  r->line = line;
  if (++w->bar_arrived == w->bar_alive) {
    bar_complete(w);
    return w->bar_result;
  }
  r->state = T_WAIT_BAR;
  w->bar_wait[w->bar_nwait++] = (uint16_t)t;
  wait_here(w, t);
  /* The next round cannot complete before this thread arrives at it. */
  return w->bar_result;
}

GP_API int gp__cpu_barrier(int op, int pred, const char *file, int line) {
  worker_t *w = (worker_t *)gp__cpu_tls.worker;
  w->in_kernel = 0;
  stop_point(w);
  int r = barrier(w, op, pred, file, line);
  w->in_kernel = 1;
  return r;
}

GP_API void gp__cpu_grid_sync(const char *file, int line) {
  (void)gp__cpu_barrier(GP__CPU_BAR_GRID, 0, file, line);
}

/* The calling thread t waits at a warp operation; returns the exchange it was woken with. */
static const gp__cpu_warp_xchg_t *warp_wait(worker_t *w, unsigned t, const char *file, int line) {
  thr_t *r = &w->thr[t];
  r->file = file;
  r->line = line;
  r->state = T_WAIT_WARP;
  wait_here(w, t);
  return &w->xb[w->held[t][0]].x;
}

static const gp__cpu_warp_xchg_t *warp_sync(worker_t *w, uint64_t v, const char *file, int line) {
  gp__cpu_ctx_t *c = &gp__cpu_tls;
  if (!c->fibered) go_fibers(w);
  unsigned t = c->tid;
  warp_t *wp = &w->warps[t / w->ws];
  uint64_t bit = (uint64_t)1 << (t - wp->base);
  xbuf_shift(w, t);
  w->lane_val[t] = v;
  w->st.warp_ops++;
  wp->pending |= bit;
  wp->pend_full |= bit;
  if (wp->pend_full == wp->live) return warp_complete(w, wp, wp->live, t);
  return warp_wait(w, t, file, line);
}

GP_API const gp__cpu_warp_xchg_t *gp__cpu_warp_sync(uint64_t v, const char *file, int line) {
  worker_t *w = (worker_t *)gp__cpu_tls.worker;
  w->in_kernel = 0;
  stop_point(w);
  const gp__cpu_warp_xchg_t *x = warp_sync(w, v, file, line);
  w->in_kernel = 1;
  return x;
}

static const gp__cpu_warp_xchg_t *warp_sync_mask(worker_t *w, uint64_t mask, uint64_t v, const char *file,
                                                 int line) {
  gp__cpu_ctx_t *c = &gp__cpu_tls;
  if (!c->fibered) go_fibers(w);
  /* CUDA's full mask means every lane of the warp, exited ones excused. */
  if (mask == lane_range(0, w->ws)) return warp_sync(w, v, file, line);
  unsigned t = c->tid;
  warp_t *wp = &w->warps[t / w->ws];
  unsigned lane = t - wp->base;
  uint64_t bit = (uint64_t)1 << lane;
  if (!(mask & bit))
    fail_block(w, &c->thread_idx, "warp operation at %s:%d: lane %u is not in its mask 0x%016llx%s",
               site_base(file), line, lane, (unsigned long long)mask,
               w->ws == 64 && lane >= 32 && !(mask >> 32) ? " (a 32-bit mask at warp width 64)" : "");
  uint64_t gone = mask & ~wp->live;
  if (gone) {
    unsigned g = (unsigned)__builtin_ctzll(gone);
    fail_block(w, &c->thread_idx, "warp operation at %s:%d with mask 0x%016llx names lane %u, which %s",
               site_base(file), line, (unsigned long long)mask, g,
               g >= w->ws ? "is beyond the warp width"
                          : (wp->base + g >= w->n ? "does not exist (a partial warp)" : "has exited"));
  }
  xbuf_shift(w, t);
  w->lane_val[t] = v;
  w->lane_mask[t] = mask;
  w->st.warp_ops++;
  wp->pending |= bit;
  uint64_t ready = 0;
  for (uint64_t m = mask & wp->pending & ~wp->pend_full; m; m &= m - 1) {
    unsigned l = (unsigned)__builtin_ctzll(m);
    if (w->lane_mask[wp->base + l] == mask) ready |= (uint64_t)1 << l;
  }
  if (ready == mask) return warp_complete(w, wp, mask, t);
  return warp_wait(w, t, file, line);
}

GP_API const gp__cpu_warp_xchg_t *gp__cpu_warp_sync_mask(uint64_t mask, uint64_t v, const char *file,
                                                         int line) {
  worker_t *w = (worker_t *)gp__cpu_tls.worker;
  w->in_kernel = 0;
  stop_point(w);
  const gp__cpu_warp_xchg_t *x = warp_sync_mask(w, mask, v, file, line);
  w->in_kernel = 1;
  return x;
}

GP_API void gp__cpu_fail(const char *file, int line, const char *fmt, ...) {
  worker_t *w = (worker_t *)gp__cpu_tls.worker;
  if (w) w->in_kernel = 0;
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (!w || !w->job) {
    fprintf(stderr, "%s:%d: %s (outside a kernel)\n", file, line, what);
    abort();
  }
  fail_block(w, &gp__cpu_tls.thread_idx, "%s at %s:%d", what, site_base(file), line);
}

GP_API void gp__cpu_warp_bad_lane(unsigned src_lane, const char *file, int line) {
  worker_t *w = (worker_t *)gp__cpu_tls.worker;
  job_t *j = w->job;
  __atomic_fetch_add(&j->bad_reads, 1u, __ATOMIC_RELAXED);
  int expected = 0;
  if (__atomic_compare_exchange_n(&j->bad_noted, &expected, 1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    j->bad_file = file;
    j->bad_line = line;
    j->bad_lane = src_lane;
  }
}

GP_API void gp__cpu_trap(const char *file, int line) {
  worker_t *w = (worker_t *)gp__cpu_tls.worker;
  if (w) w->in_kernel = 0;
  if (!w || !w->job) {
    fprintf(stderr, "%s:%d: __trap() outside a kernel\n", file, line);
    abort();
  }
  fail_block(w, &gp__cpu_tls.thread_idx, "__trap() at %s:%d", site_base(file), line);
}

/* ---- kernel output: printf and assert's message ------------------------------------- */
/* CUDA's device printf (CUDA C++ Programming Guide, "Formatted Output") formats into a
 * fixed-size buffer (cudaLimitPrintfFifoSize, 1 MiB by default) that the host prints at
 * synchronisation points. The dialect's printf on the CPU does the same, per launch: a
 * GPU thread formats with vsnprintf (a string stream: no stdio lock, no shared state)
 * into a record of the launch's buffer, reserved lock-free; when the grid has ended
 * the launching thread writes the records out in the order they were reserved (so
 * each GPU thread's output is in its program order), then flushes. A GPU thread that
 * faults while formatting (a bad %s pointer) holds no lock: the fault fails the launch
 * like any other. The buffer has GP_CPU_PRINTF_KB KiB (default 1024, CUDA's default);
 * unlike CUDA's, which wraps and overwrites older output, a record that does not fit is
 * dropped whole, and the launch's output ends with a line on stderr saying how many
 * records and bytes were dropped. A failing assert's message (CUDA's text) goes through
 * the same buffer, to stderr. */
#define PREC_DONE 1u
#define PREC_STDERR 2u
#define PREC_HDR 8u

static size_t printf_capacity(void) {
  long kb = gp__env_long("GP_CPU_PRINTF_KB", 1024);
  if (kb < 1) kb = 1;
  if (kb > 1024 * 1024) kb = 1024 * 1024;
  return (size_t)kb * 1024;
}

/* The launch's buffer, mapped by the first GPU thread that prints; NULL when no memory. */
static unsigned char *printf_buffer(job_t *j) {
  unsigned char *b = __atomic_load_n(&j->pbuf, __ATOMIC_ACQUIRE);
  if (b) return b;
  size_t cap = printf_capacity();
  void *m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return NULL;
  __atomic_store_n(&j->pcap, cap, __ATOMIC_RELAXED); /* every thread computes the same */
  unsigned char *expected = NULL;
  if (__atomic_compare_exchange_n(&j->pbuf, &expected, (unsigned char *)m, false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE))
    return (unsigned char *)m;
  munmap(m, cap);
  return expected;
}

/* Reserves a record for len bytes (plus a NUL); NULL when it does not fit. */
static char *printf_reserve(job_t *j, size_t len, unsigned flags) {
  unsigned char *b = printf_buffer(j);
  size_t need = PREC_HDR + ((len + 1 + 7) & ~(size_t)7);
  size_t cap = b ? __atomic_load_n(&j->pcap, __ATOMIC_RELAXED) : 0;
  size_t off = __atomic_load_n(&j->pused, __ATOMIC_RELAXED);
  do {
    if (!b || len > cap || off + need > cap) {
      __atomic_fetch_add(&j->pdropped, 1u, __ATOMIC_RELAXED);
      __atomic_fetch_add(&j->pdropped_bytes, len, __ATOMIC_RELAXED);
      return NULL;
    }
  } while (!__atomic_compare_exchange_n(&j->pused, &off, off + need, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  uint32_t *hdr = (uint32_t *)(void *)(b + off);
  hdr[0] = (uint32_t)len;
  hdr[1] = flags;
  return (char *)(b + off + PREC_HDR);
}

static void printf_commit(char *rec) {
  uint32_t *hdr = (uint32_t *)(void *)(rec - PREC_HDR);
  __atomic_store_n(&hdr[1], hdr[1] | PREC_DONE, __ATOMIC_RELEASE);
}

/* Formats into a record of the launch (the calling GPU thread's job). Returns the
 * characters formatted, or -1 (bad format, or the record was dropped). */
static int kernel_vprintf(worker_t *w, unsigned flags, const char *fmt, va_list ap) {
  char small[512];
  va_list again;
  va_copy(again, ap);
  w->in_format = 1;
  int n = vsnprintf(small, sizeof small, fmt, ap);
  char *rec = n >= 0 ? printf_reserve(w->job, (size_t)n, flags) : NULL;
  if (rec && (size_t)n < sizeof small)
    memcpy(rec, small, (size_t)n + 1);
  else if (rec)
    (void)vsnprintf(rec, (size_t)n + 1, fmt, again);
  w->in_format = 0;
  va_end(again);
  if (!rec) return -1;
  printf_commit(rec);
  return n;
}

GP_API int gp__cpu_printf(const char *fmt, ...) {
  worker_t *w = (worker_t *)gp__cpu_tls.worker;
  va_list ap;
  va_start(ap, fmt);
  int n;
  if (!w || !w->job || w->cur == &w->sup) {
    n = vprintf(fmt, ap); /* host code of a dialect source */
  } else {
    w->in_kernel = 0;
    stop_point(w);
    n = kernel_vprintf(w, 0, fmt, ap);
    w->in_kernel = 1;
  }
  va_end(ap);
  return n;
}

static int kernel_printf(worker_t *w, unsigned flags, const char *fmt, ...) GP__PRINTF(3, 4);
static int kernel_printf(worker_t *w, unsigned flags, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = kernel_vprintf(w, flags, fmt, ap);
  va_end(ap);
  return n;
}

/* Writes the launch's records out (the grid has ended: no GPU thread writes). */
static void printf_flush(job_t *j) {
  unsigned char *b = j->pbuf;
  if (!b) return;
  size_t used = j->pused;
  FILE *last = NULL;
  for (size_t off = 0; off + PREC_HDR <= used;) {
    const uint32_t *hdr = (const uint32_t *)(const void *)(b + off);
    size_t len = hdr[0];
    FILE *to = (hdr[1] & PREC_STDERR) ? stderr : stdout;
    if (last && to != last) fflush(last); /* keep the two streams' records in order */
    if (hdr[1] & PREC_DONE) fwrite(b + off + PREC_HDR, 1, len, to);
    last = to;
    off += PREC_HDR + ((len + 1 + 7) & ~(size_t)7);
  }
  if (last) fflush(last);
  if (j->pdropped) {
    fprintf(stderr,
            "gpuport: kernel '%s': %u printf record%s (%zu bytes) dropped: the launch's %zu-KiB printf "
            "buffer was full (GP_CPU_PRINTF_KB sets its size)\n",
            j->k->name, j->pdropped, j->pdropped == 1 ? "" : "s", j->pdropped_bytes, j->pcap / 1024);
    fflush(stderr);
  }
  munmap(b, j->pcap);
  j->pbuf = NULL;
}

GP_API void gp__cpu_assert_fail(const char *expr, const char *file, int line, const char *func) {
  gp__cpu_ctx_t *c = &gp__cpu_tls;
  worker_t *w = (worker_t *)c->worker;
  if (!w || !w->job) {
    fprintf(stderr, "%s:%d: %s: Assertion `%s` failed (outside a kernel).\n", file, line, func, expr);
    abort();
  }
  w->in_kernel = 0;
  /* The message CUDA's device assert prints, out with the launch's other output. */
  (void)kernel_printf(w, PREC_STDERR, "%s:%d: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n",
                      file, line, func, c->block_idx.x, c->block_idx.y, c->block_idx.z, c->thread_idx.x,
                      c->thread_idx.y, c->thread_idx.z, expr);
  fail_block(w, &c->thread_idx, "assertion `%s' failed at %s:%d in %s", expr, site_base(file), line, func);
}

/* ---- running blocks ----------------------------------------------------------------- */
static void run_block(worker_t *w, job_t *j, uint64_t b) {
  gp__cpu_ctx_t *c = &gp__cpu_tls;
  uint64_t q = b / j->grid.x;
  c->block_idx.x = (unsigned)(b % j->grid.x);
  c->block_idx.y = (unsigned)(q % j->grid.y);
  c->block_idx.z = (unsigned)(q / j->grid.y);
  shared_begin(w);
  c->fibered = 0;
  w->in_kernel = 1;
  w->k->cpu_run_block(w->args);
  w->in_kernel = 0;
  if (c->fibered) lead_drain(w);
  if (j->flags & GP__CPU_EXEC_COOPERATIVE) grid_block_ended(j, &c->block_idx);
  w->st.blocks++;
}

static void lead_main(void *arg) {
  worker_t *w = (worker_t *)arg;
  gp__fiber_started(w->prev);
  job_t *j = w->job;
  for (;;) {
    if (__atomic_load_n(&j->failed, __ATOMIC_RELAXED)) break;
    uint64_t b0 = __atomic_fetch_add(&j->next, j->chunk, __ATOMIC_RELAXED);
    if (b0 >= j->nblocks) break;
    uint64_t b1 = b0 + j->chunk < j->nblocks ? b0 + j->chunk : j->nblocks;
    for (uint64_t b = b0; b < b1; b++) {
      if (b != b0 && __atomic_load_n(&j->failed, __ATOMIC_RELAXED)) break;
      run_block(w, j, b);
    }
  }
  switch_plain(w, &w->lead, &w->sup, true);
  __builtin_unreachable();
}

static void run_job(worker_t *w, job_t *j) {
  gp__cpu_ctx_t *c = &gp__cpu_tls;
  w->job = j;
  w->k = j->k;
  w->args = j->args;
  w->n = j->nthreads;
  w->ws = (unsigned)j->k->warp_size;
  w->dyn = j->dyn;
  c->block_dim.x = j->block.x;
  c->block_dim.y = j->block.y;
  c->block_dim.z = j->block.z;
  c->grid_dim.x = j->grid.x;
  c->grid_dim.y = j->grid.y;
  c->grid_dim.z = j->grid.z;
  c->nthreads = j->nthreads;
  c->dynamic_shared = w->arena;
  c->worker = w;
  size_t lead_size = 4 * gp__fiber_default_stack();
  if (lead_size < ((size_t)1 << 20)) lead_size = (size_t)1 << 20;
  sigset_t saved;
  wd_signal_mask(j, true, &saved);
  if (!w->lead.map && !gp__fiber_stack_alloc(&w->lead, lead_size)) {
    job_fail(j, "cannot map a %zu-byte stack", lead_size);
  } else {
    gp__fiber_prepare(&w->lead, lead_main, w);
    switch_plain(w, &w->sup, &w->lead, false);
  }
  w->in_kernel = 0;
  w->in_format = 0;
  wd_signal_mask(j, false, &saved);
  w->cur = &w->sup;
  w->job = NULL;
  c->worker = NULL;
  c->fibered = 0;
  stats_flush(&w->st);
}

/* ---- kernels by warp width --------------------------------------------------------- */
/* Every CPU kernel registers its descriptor when its object is loaded (GP_KERNEL_EXPORT),
 * so that with GP_CPU_WARP_SIZE=64 a launch of a kernel's default (width 32) build runs
 * its width-64 build, when the program has one: the whole program then runs as on a
 * device with 64-lane warps. Appends are lock-free; the table only grows. */
#define KREG_MAX 8192
static const struct gp_kernel_s *g_kreg[KREG_MAX];
static unsigned g_kreg_n;

GP_API int gp__cpu_kernel_register(const struct gp_kernel_s *k) {
  /* The table every launch looks a kernel up in first (internal.h "descriptors"). */
  if (gp__desc_add(k, GP__DESC_KERNEL, NULL) != GP_SUCCESS) return -1;
  unsigned i = __atomic_fetch_add(&g_kreg_n, 1u, __ATOMIC_ACQ_REL);
  if (i >= KREG_MAX) return -1;
  __atomic_store_n(&g_kreg[i], k, __ATOMIC_RELEASE);
  return 0;
}

GP_API void gp__cpu_kernel_unregister(const struct gp_kernel_s *k) {
  gp__desc_remove(k, NULL);
  unsigned n = __atomic_load_n(&g_kreg_n, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n && i < KREG_MAX; i++)
    if (__atomic_load_n(&g_kreg[i], __ATOMIC_ACQUIRE) == k) __atomic_store_n(&g_kreg[i], NULL, __ATOMIC_RELEASE);
}

int gp__cpu_warp_size(void) {
  static int cached;
  int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (!v) {
    v = gp__env_long("GP_CPU_WARP_SIZE", 32) == 64 ? 64 : 32;
    __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
  }
  return v;
}

static bool same_signature(const struct gp_kernel_s *a, const struct gp_kernel_s *b) {
  if (a->num_params != b->num_params) return false;
  for (int i = 0; i < a->num_params; i++)
    if (a->param_sizes[i] != b->param_sizes[i]) return false;
  return true;
}

/* The loaded object (program or shared library) that holds address a; NULL if none. */
static const void *object_of(const void *a) {
  Dl_info info;
  return dladdr(a, &info) ? info.dli_fbase : NULL;
}

/* Repeated warnings about a kernel (launch after launch) are printed once per kernel and
 * kind: true for the first of (k, kind). The table holds the first WARN_ONCE_MAX pairs;
 * past it a pair is treated as warned (and a note says so once), so a program with
 * endless distinct kernels cannot flood the log either. */
#define WARN_ONCE_MAX 1024
enum { WARN_POISON = 1, WARN_WIDTH = 2 };
static pthread_mutex_t g_warned_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { const void *k; int kind; } g_warned[WARN_ONCE_MAX];
static int g_nwarned;

static bool warn_first(const void *k, int kind) {
  bool first = true, full = false;
  pthread_mutex_lock(&g_warned_mu);
  for (int i = 0; i < g_nwarned && first; i++)
    if (g_warned[i].k == k && g_warned[i].kind == kind) first = false;
  if (first && g_nwarned < WARN_ONCE_MAX) {
    g_warned[g_nwarned].k = k;
    g_warned[g_nwarned++].kind = kind;
  } else if (first) {
    full = g_nwarned++ == WARN_ONCE_MAX; /* counts on, once past the table: note it once */
    first = false;
  }
  pthread_mutex_unlock(&g_warned_mu);
  if (full)
    GP__WARN(GP__SUB_LAUNCH, "more than %d kernels warned about: further launch warnings only at GP_DEBUG=INFO",
             WARN_ONCE_MAX);
  return first;
}

/* The build of k to run: its width-64 sibling when GP_CPU_WARP_SIZE=64 asks for one. The
 * sibling is built into the same object as k: a kernel of the same name elsewhere (a
 * module compiled at run time, another library) is another kernel. */
const struct gp_kernel_s *gp__cpu_kernel_for_width(const struct gp_kernel_s *k) {
  int ws = gp__cpu_warp_size();
  if (k->warp_size == ws || ws != 64) return k;
  const struct gp_kernel_s *found = NULL;
  const void *home = NULL;
  unsigned n = __atomic_load_n(&g_kreg_n, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n && i < KREG_MAX; i++) {
    const struct gp_kernel_s *r = __atomic_load_n(&g_kreg[i], __ATOMIC_ACQUIRE);
    if (!r || r == k || r->warp_size != ws || !r->name || !k->name || strcmp(r->name, k->name) != 0 ||
        !same_signature(r, k))
      continue;
    if (!home) home = object_of(k);
    if (!home || object_of(r) != home) continue;
    if (found && found->cpu_run_block != r->cpu_run_block) return k; /* two kernels of that name */
    found = r;
  }
  if (!found) {
    /* props.warp_size says 64, the kernel runs at its own width: said once per kernel. */
    if (warn_first(k, WARN_WIDTH))
      GP__WARN(GP__SUB_LAUNCH,
               "GP_CPU_WARP_SIZE=64: kernel '%s' has no width-64 build in this program; it runs at "
               "width %d, not the device's warp_size of 64 (build dialect sources also with "
               "-DGP_WARP_SIZE=64 -DGP_KERNEL_SUFFIX=_w64)",
               k->name, k->warp_size);
    else
      GP__INFO(GP__SUB_LAUNCH, "kernel '%s' runs at width %d (no width-64 build)", k->name, k->warp_size);
    return k;
  }
  return found;
}

/* ---- entry point -------------------------------------------------------------------- */
gp_status_t gp__cpu_exec_grid(gp_kernel_t k, gp_dim3_t grid, gp_dim3_t block, size_t dynamic_shared,
                              void **args, int device, unsigned flags) {
  if (!k || k->magic != GP_KERNEL_MAGIC || k->abi_version != GP_KERNEL_ABI_VERSION ||
      k->backend != GP_BACKEND_CPU || !k->cpu_run_block || !k->cpu_run_thread ||
      (k->warp_size != 32 && k->warp_size != 64))
    return gp__error(GP_ERROR_INVALID_IMAGE, "gp_launch",
                     "kernel '%s' is not a CPU kernel of descriptor ABI version %u",
                     k && k->magic == GP_KERNEL_MAGIC && k->name ? k->name : "?", GP_KERNEL_ABI_VERSION);
  k = gp__cpu_kernel_for_width(k);
  uint64_t nthreads = (uint64_t)block.x * block.y * block.z;
  uint64_t nblocks = (uint64_t)grid.x * grid.y * grid.z;
  if (!nthreads || nthreads > MAXT || !nblocks || dynamic_shared > GP__CPU_SHARED_PER_BLOCK_OPTIN)
    return gp__error(GP_ERROR_INVALID_CONFIGURATION, "gp_launch",
                     "kernel '%s': block (%u,%u,%u), grid (%u,%u,%u), %zu bytes of dynamic shared memory",
                     k->name, block.x, block.y, block.z, grid.x, grid.y, grid.z, dynamic_shared);
  worker_t *w = worker_self();
  if (!w) return gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_launch", "no memory for the executor's state");
  if (w->job)
    return gp__error(GP_ERROR_NOT_SUPPORTED, "gp_launch", "kernel '%s' launched from inside a kernel",
                     k->name);

  bool coop = (flags & GP__CPU_EXEC_COOPERATIVE) != 0;
  if (coop) {
    pthread_mutex_lock(&g_coop_mu);
    pthread_mutex_lock(&g_pool.mu);
    pool_start_locked();
    int resident = g_pool.nthreads + 1;
    pthread_mutex_unlock(&g_pool.mu);
    if (nblocks > (uint64_t)resident) {
      pthread_mutex_unlock(&g_coop_mu);
      return gp__error(GP_ERROR_INVALID_CONFIGURATION, "gp_launch_ex",
                       "cooperative kernel '%s': %llu blocks, but only %d can be resident at once",
                       k->name, (unsigned long long)nblocks, resident);
    }
  }

  job_t j;
  memset(&j, 0, offsetof(job_t, msg));
  j.msg[0] = '\0';
  j.flags = flags;
  pthread_mutex_init(&j.gmu, NULL);
  pthread_cond_init(&j.gcv, NULL);
  j.k = k;
  j.args = args;
  j.grid = grid;
  j.block = block;
  j.dyn = dynamic_shared;
  j.device = device;
  j.nthreads = (unsigned)nthreads;
  j.nblocks = nblocks;
  j.status = GP_ERROR_LAUNCH_FAILED;
  j.timeout_s = launch_timeout();
  wd_entry_t wd;
  bool watched = false;
  if (j.timeout_s > 0) {
    watched = wd_register(&wd, &j);
    if (!watched) {
      static int warned;
      if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        GP__WARN(GP__SUB_LAUNCH, "GP_LAUNCH_TIMEOUT_S: cannot start the launch watchdog's thread; "
                                 "launches run without a timeout");
    }
  }
  int nw = gp__cpu_exec_threads();
  j.chunk = nblocks / ((uint64_t)nw * 16);
  if (j.chunk < 1) j.chunk = 1;
  if (j.chunk > 64) j.chunk = 64;
  if (coop) j.chunk = 1; /* one block per OS thread: every block progresses */

  bool posted = nw > 1 && nblocks > j.chunk;
  if (posted) {
    pthread_mutex_lock(&g_pool.mu);
    pool_start_locked();
    j.link = g_pool.jobs;
    g_pool.jobs = &j;
    pthread_cond_broadcast(&g_pool.work);
    pthread_mutex_unlock(&g_pool.mu);
  }
  run_job(w, &j);
  if (posted) {
    pthread_mutex_lock(&g_pool.mu);
    for (job_t **p = &g_pool.jobs; *p; p = &(*p)->link)
      if (*p == &j) {
        *p = j.link;
        break;
      }
    while (j.active) pthread_cond_wait(&g_pool.done, &g_pool.mu);
    pthread_mutex_unlock(&g_pool.mu);
  }
  if (watched) wd_unregister(&wd);
  if (coop) pthread_mutex_unlock(&g_coop_mu);
  printf_flush(&j);
  pthread_cond_destroy(&j.gcv);
  pthread_mutex_destroy(&j.gmu);
  __atomic_fetch_add(&g_stats.launches, 1, __ATOMIC_RELAXED);
  if (j.bad_reads)
    gp__log(warn_first(k, WARN_POISON) ? GP__LOG_WARN : GP__LOG_INFO, GP__SUB_LAUNCH,
            "kernel '%s': %u warp-operation reads of inactive or exited lanes returned poison "
            "(first: lane %u at %s:%d; said once per kernel, every launch at GP_DEBUG=INFO)",
            k->name, j.bad_reads, j.bad_lane, site_base(j.bad_file), j.bad_line);
  if (__atomic_load_n(&j.failed, __ATOMIC_ACQUIRE)) {
    __atomic_fetch_add(&g_stats.failures, 1, __ATOMIC_RELAXED);
    return gp__error((gp_status_t)j.status, "gp_launch", "%s", j.msg);
  }
  return GP_SUCCESS;
}
