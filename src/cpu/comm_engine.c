/*
 * comm_engine.c - the cpu backend's collective algorithms, over the control block of
 * comm_cpu.h: doorbell waits with health checks, barriers, the call matching that
 * turns mismatched calls into errors, the direct (one address space) and staged
 * (shared-memory chunks) algorithms of every collective, and the point-to-point
 * progress engine.
 *
 * Ordering argument of the staged path: a rank writes half h = round & 1 of its
 * staging buffer, then passes the round's barrier, then everyone reads it. Half h is
 * written again two rounds later, after the next round's barrier, which no rank
 * reaches before it has finished reading this round. So one barrier per chunk is
 * enough (two where the reduced slices are read back); the first round's barrier is
 * also the call's matching barrier.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cpu/comm_cpu.h"

#define HEALTH_PERIOD_S 0.1 /* wake-up period of every wait, and of liveness checks */

/* ---- one operation's context ------------------------------------------------------------ */

typedef struct op {
  gp__cpu_comm_t *cc;
  const gp__comm_call_t *call; /* NULL for split's exchange */
  const char *func;
  double deadline;
  int waiting_for; /* a rank the last wait was waiting for, for messages */
  uint64_t need;   /* ranks the current wait depends on: only their departure or death
                      fails it (a peer done with its part of a group may leave) */
} op_t;

static uint64_t all_ranks(int n) { return n >= 64 ? ~0ull : (1ull << n) - 1; }

static gp__slot_t *slot(const op_t *o, int r) { return gp__ctl_slot(o->cc->ctl, r); }
static size_t esize(const gp__comm_call_t *c) { return gp_dtype_size(c->dtype); }
static char *addr(uint64_t a) { return (char *)(uintptr_t)a; }

/* ---- futex doorbells ------------------------------------------------------------------------- */

static void futex_wait(_Atomic uint32_t *w, uint32_t val, double seconds) {
  struct timespec ts;
  ts.tv_sec = (time_t)seconds;
  ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
  /* Not FUTEX_PRIVATE: the word may live in a segment shared with other processes. */
  (void)syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, val, &ts, NULL, 0);
}

void gp__cpu_comm_ring_rank(gp__ctl_t *ctl, int r) {
  gp__slot_t *s = gp__ctl_slot(ctl, r);
  atomic_fetch_add(&s->bell, 1);
  if (atomic_load(&s->sleepers) != 0)
    (void)syscall(SYS_futex, (uint32_t *)&s->bell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void gp__cpu_comm_ring_all(gp__cpu_comm_t *cc) {
  for (int r = 0; r < cc->n; r++)
    if (r != cc->me) gp__cpu_comm_ring_rank(cc->ctl, r);
}

/* ---- failure of the clique --------------------------------------------------------------------- */

gp_status_t gp__cpu_comm_fail_clique(gp__cpu_comm_t *cc, gp_status_t status, const char *func,
                                     const char *fmt, ...) {
  char text[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  gp__ctl_t *ctl = cc->ctl;
  int32_t zero = 0;
  if (atomic_compare_exchange_strong(&ctl->failed, &zero, (int32_t)status)) {
    ctl->failed_rank = cc->me;
    snprintf(ctl->failed_msg, sizeof ctl->failed_msg, "%s", text);
    atomic_store(&ctl->failed_ready, 1);
  }
  gp__cpu_comm_ring_all(cc);
  gp__cpu_comm_ring_rank(ctl, cc->me); /* other threads of this rank (an abort) */
  return gp__comm_fail(cc->base, status, func, "%s", text);
}

/* The failure another rank recorded, as this rank's error. */
static gp_status_t report_clique_failure(op_t *o, int32_t failed) {
  gp__ctl_t *ctl = o->cc->ctl;
  if (atomic_load(&ctl->failed_ready))
    return gp__comm_fail(o->cc->base, (gp_status_t)failed, o->func, "rank %d: %s",
                         ctl->failed_rank, ctl->failed_msg);
  return gp__comm_fail(o->cc->base, (gp_status_t)failed, o->func,
                       "another rank of the clique failed (%s)", gp_status_name(failed));
}

/* ---- process liveness ------------------------------------------------------------------------- */

/* Fields of /proc/<pid>/stat: the state letter and the start time (field 22). */
static bool proc_stat(int pid, char *state, uint64_t *start) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "re");
  if (f == NULL) return false;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
  if (p == NULL) return false;
  unsigned long long st = 0;
  /* ") S ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
   *  cutime cstime priority nice threads itrealvalue starttime" */
  if (sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                    "%*s %llu",
             state, &st) != 2)
    return false;
  *start = st;
  return true;
}

uint64_t gp__cpu_proc_starttime(int pid) {
  char st;
  uint64_t t = 0;
  return proc_stat(pid, &st, &t) ? t : 0;
}

/* False only when the process is known to be gone (exited, killed, a zombie, or its pid
 * now names another process). */
bool gp__cpu_proc_alive(int pid, uint64_t starttime) {
  char st = 0;
  uint64_t start = 0;
  if (pid <= 0) return true;
  if (!proc_stat(pid, &st, &start)) {
    if (gp__cpu_proc_starttime(getpid()) == 0) return true; /* no /proc: cannot tell */
    return false;
  }
  if (st == 'Z' || st == 'X' || st == 'x') return false;
  return starttime == 0 || start == starttime;
}

static bool peer_alive(const gp__slot_t *s) { return gp__cpu_proc_alive(s->pid, s->starttime); }

/* ---- waits ---------------------------------------------------------------------------------------- */

typedef bool (*ready_fn)(op_t *o, const void *arg);

/* The wait's deadline passed: who was waited for, and why it may not have come. */
static gp_status_t deadline_passed(op_t *o) {
  gp__cpu_comm_t *cc = o->cc;
  char call[96] = "initialisation";
  if (o->call)
    snprintf(call, sizeof call, "%s (call #%llu)", gp__coll_name(o->call->coll),
             (unsigned long long)o->call->seq);
  else if (o->func && strstr(o->func, "split"))
    snprintf(call, sizeof call, "the split");
  const char *hint = "GP_COMM_TIMEOUT_S or gp_comm_config_t.timeout_s sets the timeout";
  if (o->call || (o->func && strstr(o->func, "split")) || o->waiting_for < 0)
    return gp__cpu_comm_fail_clique(cc, GP_ERROR_TIMEOUT, o->func,
                                    "rank %d of %d waited %.3g s (the communicator's timeout) in %s for "
                                    "rank %d, which is alive but has not arrived (%s)",
                                    cc->me, cc->n, cc->base->timeout_s, call, o->waiting_for, hint);
  /* Initialisation: the rank may never have come. */
  gp__ctl_t *ctl = cc->ctl;
  uint32_t state = atomic_load(&slot(o, o->waiting_for)->state);
  char refused[300] = "";
  uint32_t nref = atomic_load(&ctl->refused);
  if (nref && atomic_load(&ctl->refused_ready))
    snprintf(refused, sizeof refused, "; %u arrival%s refused (%.200s%s)", nref, nref == 1 ? "" : "s", ctl->refused_msg,
             nref > 1 ? ", ..." : "");
  return gp__cpu_comm_fail_clique(cc, GP_ERROR_TIMEOUT, o->func,
                                  "rank %d of %d waited %.3g s (the communicator's timeout) in initialisation "
                                  "for rank %d, which %s%s (GP_COMM_TIMEOUT_S or gp_comm_config_t.timeout_s)",
                                  cc->me, cc->n, cc->base->timeout_s, o->waiting_for,
                                  state == GP__SLOT_FREE ? "has not joined: no process has claimed it"
                                                         : "has not finished joining",
                                  refused);
}

/* Checks the clique: a recorded failure, the deadline, departed or dead peers. */
static gp_status_t health(op_t *o) {
  gp__cpu_comm_t *cc = o->cc;
  int32_t failed = atomic_load(&cc->ctl->failed);
  if (failed) return report_clique_failure(o, failed);
  double now = gp__comm_now();
  if (now >= o->deadline) return deadline_passed(o);
  if (now < cc->next_health) return GP_SUCCESS;
  cc->next_health = now + HEALTH_PERIOD_S;
  gp__slot_t *me = slot(o, cc->me);
  int left = -1;
  for (int r = 0; r < cc->n; r++) {
    if (r == cc->me || !(o->need >> r & 1)) continue;
    gp__slot_t *s = slot(o, r);
    uint32_t state = atomic_load(&s->state);
    if (state == GP__SLOT_LEFT && left < 0) left = r;
    if (state == GP__SLOT_JOINED && s->proc_token != me->proc_token && s->pidns == me->pidns &&
        !peer_alive(s))
      return gp__cpu_comm_fail_clique(cc, GP_ERROR_COMM, o->func,
                                      "rank %d (process %d) died: its process exited or was killed",
                                      r, (int)s->pid);
  }
  if (left >= 0) {
    /* A rank that gave up on a failure records it before it leaves: that failure is the
     * cause (read after its departure, so it is seen), not the departure. */
    failed = atomic_load(&cc->ctl->failed);
    if (failed) return report_clique_failure(o, failed);
    return gp__cpu_comm_fail_clique(cc, GP_ERROR_COMM, o->func,
                                    "rank %d left the clique (its communicator was destroyed) "
                                    "while rank %d still needed it",
                                    left, cc->me);
  }
  return GP_SUCCESS;
}

/* Sleeps on this rank's doorbell until ready(), checking health at least every
 * HEALTH_PERIOD_S. Whoever makes ready() true rings the bell after the change, so a
 * change is never missed (the bell is read before ready() is tested). */
static gp_status_t wait_until(op_t *o, ready_fn ready, const void *arg) {
  gp__slot_t *me = slot(o, o->cc->me);
  for (;;) {
    uint32_t bell = atomic_load(&me->bell);
    if (ready(o, arg)) return GP_SUCCESS;
    GP__TRY(health(o));
    atomic_fetch_add(&me->sleepers, 1);
    if (ready(o, arg)) {
      atomic_fetch_sub(&me->sleepers, 1);
      return GP_SUCCESS;
    }
    double left = o->deadline - gp__comm_now();
    futex_wait(&me->bell, bell, left < HEALTH_PERIOD_S ? (left > 0 ? left : 0) : HEALTH_PERIOD_S);
    atomic_fetch_sub(&me->sleepers, 1);
  }
}

static bool all_arrived(op_t *o, const void *arg) {
  uint32_t ph = *(const uint32_t *)arg;
  for (int r = 0; r < o->cc->n; r++)
    if ((int32_t)(atomic_load(&slot(o, r)->arrive) - ph) < 0) {
      o->waiting_for = r;
      return false;
    }
  return true;
}

static gp_status_t barrier(op_t *o) {
  uint32_t ph = ++o->cc->phase;
  atomic_store(&slot(o, o->cc->me)->arrive, ph);
  gp__cpu_comm_ring_all(o->cc);
  return wait_until(o, all_arrived, &ph);
}

static bool all_joined(op_t *o, const void *arg) {
  (void)arg;
  gp__ctl_t *ctl = o->cc->ctl;
  if (atomic_load(&ctl->joined) >= (uint32_t)ctl->nranks) return true;
  for (int r = 0; r < ctl->nranks; r++)
    if (atomic_load(&slot(o, r)->state) != GP__SLOT_JOINED) {
      o->waiting_for = r;
      break;
    }
  return false;
}

gp_status_t gp__cpu_comm_wait_joined(gp__cpu_comm_t *cc, double deadline, const char *func) {
  op_t o = {cc, NULL, func, deadline, -1, all_ranks(cc->n)};
  return wait_until(&o, all_joined, NULL);
}

/* ---- call matching ------------------------------------------------------------------------------ */

static void describe(char *buf, size_t len, const gp__pub_t *p) {
  if (p->coll == GP__COLL_SPLIT) {
    snprintf(buf, len, "gp_comm_split");
    return;
  }
  char extra[48] = "";
  if (gp__coll_reduces((gp__coll_t)p->coll))
    snprintf(extra, sizeof extra, ", %s", gp__reduce_op_name((gp_reduce_op_t)p->op));
  if (p->coll == GP__COLL_BROADCAST || p->coll == GP__COLL_REDUCE)
    snprintf(extra + strlen(extra), sizeof extra - strlen(extra), ", root %d", p->root);
  snprintf(buf, len, "%s(count %llu, %s%s) [its call #%llu]", gp__coll_name((gp__coll_t)p->coll),
           (unsigned long long)p->count, gp_dtype_name((gp_dtype_t)p->dtype), extra,
           (unsigned long long)p->call_seq);
}

static bool pub_match(const gp__pub_t *a, const gp__pub_t *b) {
  if (a->coll != b->coll || a->coll_seq != b->coll_seq) return false;
  if (a->coll == GP__COLL_SPLIT) return true;
  if (a->count != b->count || a->dtype != b->dtype) return false;
  if (gp__coll_reduces((gp__coll_t)a->coll) && a->op != b->op) return false;
  if ((a->coll == GP__COLL_BROADCAST || a->coll == GP__COLL_REDUCE) && a->root != b->root)
    return false;
  return true;
}

/* Publishes this rank's call (and, on the direct path, its buffers) in the parity slot
 * of its collective number. */
static gp__pub_t *publish(op_t *o, int coll, const void *send, const void *recv) {
  gp__cpu_comm_t *cc = o->cc;
  uint64_t k = ++cc->coll_seq;
  gp__pub_t *p = &slot(o, cc->me)->pub[k & 1];
  const gp__comm_call_t *c = o->call;
  p->coll_seq = k;
  p->call_seq = c ? c->seq : 0;
  p->count = c ? c->count : 0;
  p->coll = coll;
  p->dtype = c ? (int32_t)c->dtype : 0;
  p->op = c ? (int32_t)c->op : 0;
  p->root = c ? c->root : 0;
  p->send = (uint64_t)(uintptr_t)send;
  p->recv = (uint64_t)(uintptr_t)recv;
  return p;
}

/* After the first barrier: every rank must be in the same collective. */
static gp_status_t match(op_t *o) {
  gp__cpu_comm_t *cc = o->cc;
  uint64_t k = cc->coll_seq;
  const gp__pub_t *mine = &slot(o, cc->me)->pub[k & 1];
  for (int r = 0; r < cc->n; r++) {
    const gp__pub_t *p = &slot(o, r)->pub[k & 1];
    if (r == cc->me || pub_match(mine, p)) continue;
    char a[160], b[160];
    describe(a, sizeof a, mine);
    describe(b, sizeof b, p);
    return gp__cpu_comm_fail_clique(cc, GP_ERROR_COMM, o->func,
                                    "mismatched calls at collective #%llu of the clique: rank %d "
                                    "called %s, rank %d called %s",
                                    (unsigned long long)k, cc->me, a, r, b);
  }
  return GP_SUCCESS;
}

static const gp__pub_t *peer_pub(op_t *o, int r) {
  return &slot(o, r)->pub[o->cc->coll_seq & 1];
}

/* [lo, hi) of count for rank r of n: balanced slices. */
static void slice(size_t count, int n, int r, size_t *lo, size_t *hi) {
  *lo = count / (size_t)n * (size_t)r + ((size_t)r < count % (size_t)n ? (size_t)r : count % (size_t)n);
  *hi = *lo + count / (size_t)n + ((size_t)r < count % (size_t)n ? 1 : 0);
}

static void copy(void *dst, const void *src, size_t bytes) {
  if (dst != src && bytes) memcpy(dst, src, bytes);
}

/* ---- direct path: every rank in this address space -------------------------------------------------- */

#define DIRECT_BLOCK (64u << 10) /* bytes reduced, then copied to every rank, at a time */

static gp_status_t direct_collective(op_t *o) {
  gp__cpu_comm_t *cc = o->cc;
  const gp__comm_call_t *c = o->call;
  int n = cc->n, me = cc->me;
  size_t es = esize(c), k = c->count;
  const void *send = c->send;
  void *tmp = NULL;
  if (c->coll == GP__COLL_ALL_TO_ALL && c->send == c->recv && k > 0) {
    /* In place: peers read our send while we write our recv, so they read a copy. */
    tmp = malloc((size_t)n * k * es);
    if (tmp == NULL)
      return gp__cpu_comm_fail_clique(cc, GP_ERROR_OUT_OF_MEMORY, o->func,
                                      "no host memory for an in-place all-to-all");
    memcpy(tmp, c->send, (size_t)n * k * es);
    send = tmp;
  }
  publish(o, (int)c->coll, send, c->recv);
  gp_status_t st = barrier(o);
  if (st == GP_SUCCESS) st = match(o);
  if (st != GP_SUCCESS) {
    free(tmp);
    return st;
  }
  const void *srcs[GP__CPU_MAX_RANKS];
  size_t lo, hi;
  switch (c->coll) {
    case GP__COLL_ALL_REDUCE:
    case GP__COLL_REDUCE: {
      slice(k, n, me, &lo, &hi);
      size_t blk = DIRECT_BLOCK / es;
      char *root_recv = c->coll == GP__COLL_REDUCE ? addr(peer_pub(o, c->root)->recv) : NULL;
      for (size_t b = lo; b < hi; b += blk) {
        size_t m = hi - b < blk ? hi - b : blk;
        for (int r = 0; r < n; r++) srcs[r] = addr(peer_pub(o, r)->send) + b * es;
        if (root_recv) {
          gp__cpu_reduce(root_recv + b * es, srcs, n, m, c->dtype, c->op, n);
          continue;
        }
        char *mine = (char *)c->recv + b * es;
        gp__cpu_reduce(mine, srcs, n, m, c->dtype, c->op, n);
        for (int r = 0; r < n; r++)
          if (r != me) copy(addr(peer_pub(o, r)->recv) + b * es, mine, m * es);
      }
      break;
    }
    case GP__COLL_BROADCAST: {
      slice(k, n, me, &lo, &hi);
      const char *src = addr(peer_pub(o, c->root)->send) + lo * es;
      for (int r = 0; r < n; r++) copy(addr(peer_pub(o, r)->recv) + lo * es, src, (hi - lo) * es);
      break;
    }
    case GP__COLL_ALL_GATHER:
      for (int r = 0; r < n; r++)
        copy(addr(peer_pub(o, r)->recv) + (size_t)me * k * es, c->send, k * es);
      break;
    case GP__COLL_REDUCE_SCATTER:
      for (int r = 0; r < n; r++) srcs[r] = addr(peer_pub(o, r)->send) + (size_t)me * k * es;
      gp__cpu_reduce(c->recv, srcs, n, k, c->dtype, c->op, n);
      break;
    case GP__COLL_ALL_TO_ALL:
      for (int r = 0; r < n; r++)
        copy((char *)c->recv + (size_t)r * k * es, addr(peer_pub(o, r)->send) + (size_t)me * k * es,
             k * es);
      break;
    default:
      break;
  }
  /* Nobody returns (and lets its stream reuse its buffers) while others use them. */
  st = barrier(o);
  free(tmp);
  return st;
}

/* ---- staged path: ranks in several processes ------------------------------------------------------------ */

static char *staging(op_t *o, int r, uint64_t round) {
  gp__ctl_t *ctl = o->cc->ctl;
  return (char *)ctl + ctl->staging_off + ((size_t)r * 2 + (round & 1)) * ctl->half;
}

/* Elements per round: a whole half, or a half split into n pieces. */
static size_t chunk_elems(op_t *o, bool pieces) {
  size_t e = o->cc->ctl->half / esize(o->call);
  return pieces ? e / (size_t)o->cc->n : e;
}

static gp_status_t staged_collective(op_t *o) {
  gp__cpu_comm_t *cc = o->cc;
  const gp__comm_call_t *c = o->call;
  int n = cc->n, me = cc->me;
  size_t es = esize(c), k = c->count;
  bool pieces = c->coll == GP__COLL_REDUCE_SCATTER || c->coll == GP__COLL_ALL_TO_ALL;
  size_t ce = chunk_elems(o, pieces);
  const void *srcs[GP__CPU_MAX_RANKS];
  gp_status_t st = GP_SUCCESS;
  bool first = true;
  /* At least one round, so every call passes its matching barrier. */
  for (size_t off = 0; first || off < k; off += ce) {
    size_t m = k - off < ce ? k - off : ce;
    uint64_t rd = cc->round++;
    char *mine = staging(o, me, rd);
    /* 1. copy in */
    switch (c->coll) {
      case GP__COLL_ALL_REDUCE: case GP__COLL_REDUCE: case GP__COLL_ALL_GATHER:
        copy(mine, (const char *)c->send + off * es, m * es);
        break;
      case GP__COLL_BROADCAST:
        if (me == c->root) copy(mine, (const char *)c->send + off * es, m * es);
        break;
      case GP__COLL_REDUCE_SCATTER: case GP__COLL_ALL_TO_ALL:
        for (int r = 0; r < n; r++)
          copy(mine + (size_t)r * ce * es, (const char *)c->send + ((size_t)r * k + off) * es, m * es);
        break;
      default: break;
    }
    if (first) publish(o, (int)c->coll, NULL, NULL);
    GP__TRY(barrier(o));
    if (first) GP__TRY(match(o));
    first = false;
    /* 2. use */
    switch (c->coll) {
      case GP__COLL_ALL_REDUCE:
      case GP__COLL_REDUCE: {
        size_t lo, hi;
        slice(m, n, me, &lo, &hi);
        for (int r = 0; r < n; r++) srcs[r] = staging(o, r, rd) + lo * es;
        gp__cpu_reduce(mine + lo * es, srcs, n, hi - lo, c->dtype, c->op, n);
        GP__TRY(barrier(o));
        if (c->coll == GP__COLL_REDUCE && me != c->root) break;
        for (int r = 0; r < n; r++) {
          slice(m, n, r, &lo, &hi);
          copy((char *)c->recv + (off + lo) * es, staging(o, r, rd) + lo * es, (hi - lo) * es);
        }
        break;
      }
      case GP__COLL_BROADCAST:
        if (me == c->root) copy((char *)c->recv + off * es, (const char *)c->send + off * es, m * es);
        else copy((char *)c->recv + off * es, staging(o, c->root, rd), m * es);
        break;
      case GP__COLL_ALL_GATHER:
        for (int r = 0; r < n; r++)
          copy((char *)c->recv + ((size_t)r * k + off) * es, staging(o, r, rd), m * es);
        break;
      case GP__COLL_REDUCE_SCATTER:
        for (int r = 0; r < n; r++) srcs[r] = staging(o, r, rd) + (size_t)me * ce * es;
        gp__cpu_reduce((char *)c->recv + off * es, srcs, n, m, c->dtype, c->op, n);
        break;
      case GP__COLL_ALL_TO_ALL:
        for (int r = 0; r < n; r++)
          copy((char *)c->recv + ((size_t)r * k + off) * es, staging(o, r, rd) + (size_t)me * ce * es,
               m * es);
        break;
      default: break;
    }
  }
  return st;
}

/* ---- point-to-point ----------------------------------------------------------------------------------- */

typedef struct p2p {
  const gp__comm_call_t *c;
  bool send, done;
  int peer;
  char *buf;
  size_t bytes, moved; /* staged: bytes posted or received so far */
  bool started;        /* direct send: posted; staged: first chunk handled */
  bool numbered;       /* msg is assigned */
  uint32_t msg;        /* message number on the channel */
} p2p_t;

static gp__chan_t *chan_of(op_t *o, const p2p_t *p) {
  return p->send ? gp__ctl_chan(o->cc->ctl, o->cc->me, p->peer)
                 : gp__ctl_chan(o->cc->ctl, p->peer, o->cc->me);
}

static char *chan_slot(op_t *o, const p2p_t *p, uint32_t i) {
  gp__ctl_t *ctl = o->cc->ctl;
  int src = p->send ? o->cc->me : p->peer, dst = p->send ? p->peer : o->cc->me;
  size_t pair = (size_t)src * (size_t)ctl->nranks + (size_t)dst;
  return (char *)ctl + ctl->chanbuf_off + (pair * 2 + (i & 1)) * ctl->chan_chunk;
}

static gp_status_t size_mismatch(op_t *o, const p2p_t *p, uint64_t sent) {
  return gp__cpu_comm_fail_clique(
      o->cc, GP_ERROR_COMM, o->func,
      "mismatched send/recv: rank %d sends message #%u of %llu bytes to rank %d, whose gp_recv "
      "(call #%llu, %zu x %s) expects %zu bytes",
      p->peer, p->msg + 1, (unsigned long long)sent, o->cc->me, (unsigned long long)p->c->seq,
      p->c->count, gp_dtype_name(p->c->dtype), p->bytes);
}

/* Advances p without blocking; *progress when anything moved. */
static gp_status_t p2p_step(op_t *o, p2p_t *p, bool *progress) {
  gp__cpu_comm_t *cc = o->cc;
  gp__chan_t *ch = chan_of(o, p);
  if (cc->direct) {
    if (p->send) {
      if (!p->started) {
        if (atomic_load(&ch->posted) != atomic_load(&ch->taken)) return GP_SUCCESS;
        ch->addr = (uint64_t)(uintptr_t)p->buf;
        ch->bytes = p->bytes;
        p->msg = ch->msgs_sent++;
        atomic_fetch_add(&ch->posted, 1);
        gp__cpu_comm_ring_rank(cc->ctl, p->peer);
        p->started = *progress = true;
      }
      if (atomic_load(&ch->taken) == atomic_load(&ch->posted)) p->done = *progress = true;
      return GP_SUCCESS;
    }
    if (atomic_load(&ch->posted) == atomic_load(&ch->taken)) return GP_SUCCESS;
    p->msg = ch->msgs_recv;
    if (ch->bytes != p->bytes) return size_mismatch(o, p, ch->bytes);
    copy(p->buf, addr(ch->addr), p->bytes);
    ch->msgs_recv++;
    atomic_fetch_add(&ch->taken, 1);
    gp__cpu_comm_ring_rank(cc->ctl, p->peer);
    p->done = *progress = true;
    return GP_SUCCESS;
  }
  size_t cap = cc->ctl->chan_chunk;
  if (p->send) {
    if (!p->numbered) {
      p->msg = ch->msgs_sent++;
      p->numbered = true;
    }
    /* Every message has at least one chunk, which carries its size. */
    while (!p->done) {
      uint32_t posted = atomic_load(&ch->posted);
      if (posted - atomic_load(&ch->taken) >= 2) break; /* both slots full */
      size_t m = p->bytes - p->moved < cap ? p->bytes - p->moved : cap;
      copy(chan_slot(o, p, posted), p->buf + p->moved, m);
      ch->hdr_msg[posted & 1] = p->msg;
      ch->hdr_bytes[posted & 1] = p->bytes;
      ch->hdr_chunk[posted & 1] = m;
      atomic_store(&ch->posted, posted + 1);
      gp__cpu_comm_ring_rank(cc->ctl, p->peer);
      p->moved += m;
      p->started = *progress = true;
      if (p->moved == p->bytes) p->done = true;
    }
    return GP_SUCCESS;
  }
  while (!p->done) {
    uint32_t taken = atomic_load(&ch->taken);
    if (atomic_load(&ch->posted) == taken) break;
    if (!p->started) p->msg = ch->msgs_recv;
    if (ch->hdr_bytes[taken & 1] != p->bytes) return size_mismatch(o, p, ch->hdr_bytes[taken & 1]);
    size_t m = ch->hdr_chunk[taken & 1];
    copy(p->buf + p->moved, chan_slot(o, p, taken), m);
    p->moved += m;
    p->started = *progress = true;
    if (p->moved == p->bytes) {
      p->done = true;
      ch->msgs_recv++;
    }
    atomic_store(&ch->taken, taken + 1);
    gp__cpu_comm_ring_rank(cc->ctl, p->peer);
  }
  return GP_SUCCESS;
}

static bool bell_moved(op_t *o, const void *arg) {
  return atomic_load(&slot(o, o->cc->me)->bell) != *(const uint32_t *)arg;
}

/* Runs n point-to-point calls together: each progresses as far as it can, in order per
 * (peer, direction), and the rank sleeps only when none can. */
static gp_status_t run_p2p(op_t *o, const gp__comm_call_t *calls, size_t n) {
  p2p_t *ps = calloc(n, sizeof(*ps));
  if (ps == NULL)
    return gp__cpu_comm_fail_clique(o->cc, GP_ERROR_OUT_OF_MEMORY, o->func,
                                    "no host memory for %zu send/recv calls", n);
  for (size_t i = 0; i < n; i++) {
    ps[i].c = &calls[i];
    ps[i].send = calls[i].coll == GP__COLL_SEND;
    ps[i].peer = calls[i].root;
    ps[i].buf = ps[i].send ? (char *)(uintptr_t)calls[i].send : (char *)calls[i].recv;
    ps[i].bytes = calls[i].count * esize(&calls[i]);
  }
  gp_status_t st = GP_SUCCESS;
  for (;;) {
    uint32_t bell = atomic_load(&slot(o, o->cc->me)->bell);
    bool progress = false, all_done = true;
    for (size_t i = 0; i < n && st == GP_SUCCESS; i++) {
      if (ps[i].done) continue;
      all_done = false;
      bool blocked = false; /* an earlier message on the same channel goes first */
      for (size_t j = 0; j < i && !blocked; j++)
        blocked = !ps[j].done && ps[j].send == ps[i].send && ps[j].peer == ps[i].peer;
      if (blocked) continue;
      o->call = ps[i].c;
      o->waiting_for = ps[i].peer;
      st = p2p_step(o, &ps[i], &progress);
    }
    if (st != GP_SUCCESS || all_done) break;
    if (!progress) {
      o->need = 0;
      for (size_t i = 0; i < n; i++)
        if (!ps[i].done) o->need |= 1ull << ps[i].peer;
      st = wait_until(o, bell_moved, &bell);
      o->need = all_ranks(o->cc->n);
    }
    if (st != GP_SUCCESS) break;
  }
  free(ps);
  return st;
}

/* ---- entry points ---------------------------------------------------------------------------------------- */

static bool is_p2p(const gp__comm_call_t *c) {
  return c->coll == GP__COLL_SEND || c->coll == GP__COLL_RECV;
}

gp_status_t gp__cpu_comm_run(gp__cpu_comm_t *cc, const gp__comm_call_t *calls, size_t n,
                             double deadline, const char *func) {
  op_t o = {cc, NULL, func, deadline, -1, all_ranks(cc->n)};
  cc->next_health = gp__comm_now() + HEALTH_PERIOD_S;
  for (size_t i = 0; i < n;) {
    if (is_p2p(&calls[i])) {
      size_t j = i;
      while (j < n && is_p2p(&calls[j])) j++;
      GP__TRY(run_p2p(&o, calls + i, j - i));
      i = j;
      continue;
    }
    o.call = &calls[i];
    GP__TRY(cc->direct ? direct_collective(&o) : staged_collective(&o));
    i++;
  }
  return GP_SUCCESS;
}

gp_status_t gp__cpu_comm_split_exchange(gp__cpu_comm_t *cc, int color, int key, double deadline,
                                        int *rank, int *size, gp__ctl_t **local_ctl,
                                        gp_comm_id_t *id) {
  op_t o = {cc, NULL, "gp_comm_split", deadline, -1, all_ranks(cc->n)};
  cc->next_health = gp__comm_now() + HEALTH_PERIOD_S;
  gp__slot_t *mine = slot(&o, cc->me);
  mine->color = color;
  mine->key = key;
  mine->split_ctl = 0;
  publish(&o, GP__COLL_SPLIT, NULL, NULL);
  GP__TRY(barrier(&o));
  GP__TRY(match(&o));
  /* Members of my color, ordered by (key, rank); the first is the leader. */
  int members[GP__CPU_MAX_RANKS], m = 0;
  bool one_process = true;
  *rank = -1;
  *size = 0;
  if (color != GP_COMM_SPLIT_NOCOLOR) {
    for (int r = 0; r < cc->n; r++) {
      gp__slot_t *s = slot(&o, r);
      if (s->color != color) continue;
      int at = m++;
      while (at > 0) {
        gp__slot_t *p = slot(&o, members[at - 1]);
        if (p->key < s->key || (p->key == s->key && members[at - 1] < r)) break;
        members[at] = members[at - 1];
        at--;
      }
      members[at] = r;
      one_process = one_process && s->proc_token == mine->proc_token;
    }
    for (int i = 0; i < m; i++)
      if (members[i] == cc->me) *rank = i;
    *size = m;
  }
  gp_status_t st = GP_SUCCESS;
  if (*rank == 0) {
    /* The leader makes the new clique's block (one process) or id (several). */
    if (one_process) {
      gp__ctl_t *ctl = gp__cpu_ctl_new_local(m);
      if (ctl == NULL)
        st = gp__cpu_comm_fail_clique(cc, GP_ERROR_OUT_OF_MEMORY, o.func,
                                      "no host memory for the new communicator");
      else
        atomic_store(&ctl->refs, (uint32_t)m);
      mine->split_ctl = (uint64_t)(uintptr_t)ctl;
    } else {
      st = gp__comm_native_backend.unique_id(&mine->split_id);
      if (st != GP_SUCCESS) st = gp__cpu_comm_fail_clique(cc, st, o.func, "%s", gp_last_error_message());
    }
  }
  gp_status_t st2 = barrier(&o); /* publishes the leader's block or id */
  if (st == GP_SUCCESS) st = st2;
  if (st == GP_SUCCESS && *rank >= 0) {
    gp__slot_t *leader = slot(&o, members[0]);
    *local_ctl = one_process ? (gp__ctl_t *)(uintptr_t)leader->split_ctl : NULL;
    if (!one_process) *id = leader->split_id;
  }
  st2 = barrier(&o); /* the slots' split fields are read: they may change again */
  return st == GP_SUCCESS ? st2 : st;
}
