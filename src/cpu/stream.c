/*
 * stream.c - the CPU backend's streams and events: a real asynchronous queue per stream,
 * drained in order by a worker thread of its own (created at the first enqueue, parked
 * on a condition variable when idle: never spinning).
 *
 * One mutex (g_mu) guards every queue, counter and event; operations run outside it.
 * Completion of any op broadcasts g_progress, on which everything that waits for other
 * streams waits: synchronising calls, event waits, and the legacy default stream.
 *
 * Legacy default-stream semantics (docs/design/API.md "Streams", CUDA's): each op gets a
 * ticket from its device's counter at enqueue. An op of the legacy stream may start once
 * no blocking stream of its device holds a pending op with a smaller ticket; an op of a
 * blocking stream once the legacy stream holds none. Non-blocking and per-thread streams
 * wait for neither. Tickets only point backwards, so these waits cannot form a cycle.
 *
 * Stream capture (gpuport/graph.h) follows CUDA's rules: an operation enqueued on a
 * capturing stream is not queued but appended to the capture's graph body as a node
 * that depends on the stream's "frontier" (the nodes captured last on it), and becomes
 * the frontier. An event recorded on a capturing stream keeps a copy of the frontier;
 * a stream that waits on it joins the capture (its frontier becomes the event's) or,
 * if already in it, adds the event's nodes to its frontier. What cannot be captured
 * fails with GP_ERROR_NOT_SUPPORTED and invalidates the capture. A graph launch is one
 * operation (OP_GRAPH) that runs the executable graph's nodes on the worker.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cpu.h"
#include "exec.h"

#define GP__STREAM_MAGIC 0x53707067u /* "gppS" */
#define GP__EVENT_MAGIC 0x45707067u  /* "gppE" */

typedef enum skind { S_LEGACY, S_BLOCKING, S_NONBLOCKING, S_PER_THREAD, S_WRAPPER } skind_t;

typedef enum op_kind {
  OP_KERNEL, OP_COPY, OP_SET8, OP_SET16, OP_SET32, OP_HOST_FN, OP_HOST_WORK, OP_RECORD, OP_WAIT,
  OP_FREE, OP_GRAPH, OP_EMPTY
} op_kind_t;

typedef struct gp__cpu_op {
  struct gp__cpu_op *next;
  op_kind_t kind;
  uint64_t ticket; /* device-wide enqueue order, for the legacy-stream rules */
  uint64_t seq;    /* position in its stream, for synchronous callers */
  bool claimed;    /* run by the synchronous caller itself, not by the worker */
  size_t size;     /* bytes allocated at the op (kernel arguments follow it), for clones */
  union {
    /* owner: the module the kernel came from, held until the op is freed */
    struct { gp_kernel_t k; gp_dim3_t grid, block; size_t shmem; void **args; unsigned flags;
             gp_module_t owner; } kern;
    /* stage: the staging buffer src points into (a pageable source), or NULL */
    struct { void *dst; const void *src; size_t dpitch, spitch, width, height; void *stage; } copy;
    struct { void *ptr; uint32_t value; size_t count; } set;
    /* cb: a stream callback (gp_stream_add_callback) in place of fn, given stream */
    struct { void (*fn)(void *); void *user; gp_stream_callback_t cb; gp_stream_t stream; } host;
    /* bytes: captured with free_user, the size of the record each launch copies */
    struct { gp__host_work_fn fn; void *user; bool free_user; size_t bytes; } work;
    struct { struct gp_event_s *ev; uint64_t gen; } ev;
    /* gen: launch number; body: the nodes as they were when the launch was enqueued */
    struct { struct gp_graph_exec_s *exec; gp__cpu_body_t *body; uint64_t gen; } graph;
    void *free_ptr;
  } u;
} cpu_op_t;

/* A set of node indices of a capture: a stream's or an event's frontier. */
typedef struct front {
  int *v;
  int n, cap;
} front_t;

typedef struct cpu_capture cpu_capture_t;

struct gp_stream_s {
  uint32_t magic;
  skind_t kind;
  int device;
  int priority;                     /* accepted and kept; the OS schedules the workers */
  struct gp_stream_s *target;       /* S_WRAPPER: the stream it aliases */
  struct gp_stream_s *prev, *next;  /* its device's list */
  cpu_op_t *head, *tail;            /* pending ops; head is running or waiting */
  uint64_t enqueued, completed;     /* counts of ops */
  pthread_cond_t wake;              /* the worker parks here */
  bool has_worker, destroying;
  cpu_capture_t *cap;               /* the capture it is in (begun on it or joined), or NULL */
  front_t front;                    /* while capturing: what its next operation depends on */
};

struct gp_event_s {
  uint32_t magic;
  int device;
  unsigned flags;
  bool wrapper, destroyed;
  struct gp_event_s *target;        /* wrapper: the event it aliases */
  struct gp_event_s *prev, *next;   /* its device's list */
  int refs;                         /* the handle, plus each pending op naming it */
  uint64_t recorded, done;          /* generation of the last record / last completed */
  int rec_device;                   /* device of the last record's stream */
  uint64_t done_ns;                 /* CLOCK_MONOTONIC at completion of `done` */
  cpu_capture_t *cap;               /* last recorded in this capture (no state to query) */
  front_t front;                    /* then: the point of the capture it marks */
};

/* An active capture (g_mu guards it and the streams' and events' capture fields). */
struct cpu_capture {
  struct gp_stream_s *origin;       /* the stream it was begun on */
  gp_capture_mode_t mode;
  pthread_t thread;                 /* the thread that began it */
  gp_status_t invalid;              /* GP_SUCCESS while valid, else GP_ERROR_NOT_SUPPORTED */
  char why[384];                    /* what invalidated it */
  gp__cpu_body_t *body;             /* the nodes recorded so far */
  struct gp_stream_s **streams;     /* the origin and every stream that joined */
  int nstreams, capstreams;
  cpu_capture_t *next;              /* g_captures */
};

typedef struct cpu_dev {
  struct gp_stream_s legacy;
  struct gp_stream_s *streams; /* legacy, created, per-thread and wrapper streams */
  struct gp_event_s *events;
  uint64_t ticket;
} cpu_dev_t;

/* Per-thread default streams of one host thread, one per device, made on first use. */
typedef struct pt_streams {
  struct gp_stream_s *s[GP__CPU_MAX_DEVICES];
} pt_streams_t;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_progress = PTHREAD_COND_INITIALIZER;
static int g_waiters; /* threads waiting on g_progress: no broadcast when 0 */
static cpu_dev_t g_dev[GP__CPU_MAX_DEVICES];
static int g_ndev;
static pthread_key_t g_pt_key; /* the thread's pt_streams_t, released when it exits */
static cpu_capture_t *g_captures;     /* active captures */
static atomic_int g_ncaptures;        /* their number: the checks' fast path reads it unlocked */

/* ---- staging buffers for copies from pageable memory ----------------------------------------- */
/* A pool of buffers in power-of-two classes of 4 KiB to 64 MiB, so that a stream of
 * asynchronous copies from pageable memory does not allocate per call once warm. At most
 * GP__STAGE_KEEP bytes stay cached; a copy larger than the largest class is not staged
 * (gp__be_memcpy_2d_async makes it synchronous instead). Each buffer has a 64-byte header
 * holding its class, so the data stays 64-byte aligned. */
#define GP__STAGE_MIN_SHIFT 12
#define GP__STAGE_CLASSES 15
#define GP__STAGE_MAX ((size_t)1 << (GP__STAGE_MIN_SHIFT + GP__STAGE_CLASSES - 1))
#define GP__STAGE_KEEP ((size_t)64 << 20)
#define GP__STAGE_HDR 64

typedef struct stage_hdr {
  struct stage_hdr *next; /* while cached */
  int cls;
} stage_hdr_t;

static pthread_mutex_t g_stage_mu = PTHREAD_MUTEX_INITIALIZER;
static stage_hdr_t *g_stage_free[GP__STAGE_CLASSES];
static size_t g_stage_kept; /* bytes cached in g_stage_free */

static size_t stage_class_bytes(int cls) { return (size_t)1 << (GP__STAGE_MIN_SHIFT + cls); }

/* A buffer of at least bytes (<= GP__STAGE_MAX), or NULL when out of memory. */
static void *stage_get(size_t bytes) {
  int cls = 0;
  while (stage_class_bytes(cls) < bytes) cls++;
  pthread_mutex_lock(&g_stage_mu);
  stage_hdr_t *h = g_stage_free[cls];
  if (h) {
    g_stage_free[cls] = h->next;
    g_stage_kept -= stage_class_bytes(cls);
  }
  pthread_mutex_unlock(&g_stage_mu);
  if (h == NULL) {
    h = aligned_alloc(GP__STAGE_HDR, GP__STAGE_HDR + stage_class_bytes(cls));
    if (h == NULL) return NULL;
    h->cls = cls;
  }
  return (char *)h + GP__STAGE_HDR;
}

static void stage_put(void *p) {
  stage_hdr_t *h = (stage_hdr_t *)(void *)((char *)p - GP__STAGE_HDR);
  const size_t bytes = stage_class_bytes(h->cls);
  pthread_mutex_lock(&g_stage_mu);
  bool keep = g_stage_kept + bytes <= GP__STAGE_KEEP;
  if (keep) {
    h->next = g_stage_free[h->cls];
    g_stage_free[h->cls] = h;
    g_stage_kept += bytes;
  }
  pthread_mutex_unlock(&g_stage_mu);
  if (!keep) free(h);
}

gp_status_t gp__cpu_check_may_wait(const char *func) {
  const gp__thread_t *t = gp__thread_peek();
  if (t == NULL || t->in_host_fn == 0) return GP_SUCCESS;
  /* The host function is itself pending work of its device: a wait for that work from
   * inside it never ends. CUDA forbids such calls (cudaErrorNotPermitted, when it
   * notices); here it always notices. */
  return gp__error(GP_ERROR_NOT_SUPPORTED, func,
                   "called from a host function (gp_launch_host_func), which must not wait "
                   "for device work: it would wait for itself");
}

/* ---- lists and helpers (g_mu held) ------------------------------------------------------- */

static void stream_link(struct gp_stream_s *s) {
  cpu_dev_t *d = &g_dev[s->device];
  s->prev = NULL;
  s->next = d->streams;
  if (d->streams) d->streams->prev = s;
  d->streams = s;
}

static void stream_unlink_free(struct gp_stream_s *s) {
  cpu_dev_t *d = &g_dev[s->device];
  if (s->prev) s->prev->next = s->next; else d->streams = s->next;
  if (s->next) s->next->prev = s->prev;
  s->magic = 0;
  if (s->kind != S_WRAPPER) pthread_cond_destroy(&s->wake);
  free(s->front.v);
  free(s);
}

static void event_link(struct gp_event_s *e) {
  cpu_dev_t *d = &g_dev[e->device];
  e->prev = NULL;
  e->next = d->events;
  if (d->events) d->events->prev = e;
  d->events = e;
}

static void event_unref(struct gp_event_s *e) {
  if (--e->refs > 0) return;
  cpu_dev_t *d = &g_dev[e->device];
  if (e->prev) e->prev->next = e->next; else d->events = e->next;
  if (e->next) e->next->prev = e->prev;
  e->magic = 0;
  free(e->front.v);
  free(e);
}

static uint64_t oldest_ticket(const struct gp_stream_s *s) {
  return s->head ? s->head->ticket : UINT64_MAX;
}

static void wait_progress(void) {
  g_waiters++;
  pthread_cond_wait(&g_progress, &g_mu);
  g_waiters--;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether op, the head of s, may start (see the file comment). */
static bool deps_ready(const struct gp_stream_s *s, const cpu_op_t *op) {
  if (op->kind == OP_WAIT && op->u.ev.ev->done < op->u.ev.gen) return false;
  if (op->kind == OP_GRAPH && op->u.graph.exec->done + 1 < op->u.graph.gen) return false;
  const cpu_dev_t *d = &g_dev[s->device];
  if (s->kind == S_LEGACY) {
    for (const struct gp_stream_s *t = d->streams; t; t = t->next)
      if (t->kind == S_BLOCKING && oldest_ticket(t) < op->ticket) return false;
  } else if (s->kind == S_BLOCKING) {
    if (oldest_ticket(&d->legacy) < op->ticket) return false;
  }
  return true;
}

/* True when no stream of d holds a pending op with a ticket <= t. */
static bool device_idle_upto(const cpu_dev_t *d, uint64_t t) {
  for (const struct gp_stream_s *s = d->streams; s; s = s->next)
    if (oldest_ticket(s) <= t) return false;
  return true;
}

/* ---- the worker ------------------------------------------------------------------------------ */

/* A captured host-work record runs from a fresh copy at every launch (internal.h). */
static gp_status_t replay_host_work(const cpu_op_t *op) {
  if (!op->u.work.free_user) return op->u.work.fn(op->u.work.user);
  void *copy = malloc(op->u.work.bytes ? op->u.work.bytes : 1);
  if (copy == NULL)
    return gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_graph_launch",
                     "no host memory for a %zu-byte work record", op->u.work.bytes);
  memcpy(copy, op->u.work.user, op->u.work.bytes);
  gp_status_t st = op->u.work.fn(copy);
  free(copy);
  return st;
}

/* Runs op for a stream of device (replay: a node of a launched graph, which keeps op). */
static void run_op_on(int device, cpu_op_t *op, bool replay) {
  gp_status_t st = GP_SUCCESS;
  switch (op->kind) {
    case OP_KERNEL:
      st = gp__cpu_exec_grid(op->u.kern.k, op->u.kern.grid, op->u.kern.block, op->u.kern.shmem,
                             op->u.kern.args, device, op->u.kern.flags);
      if (st != GP_SUCCESS)
        gp__async_error_raise(device, st, "kernel '%s' failed: %s",
                              op->u.kern.k->name ? op->u.kern.k->name : "?",
                              gp_last_error_message());
      break;
    case OP_COPY:
      for (size_t r = 0; r < op->u.copy.height; r++)
        memmove((char *)op->u.copy.dst + r * op->u.copy.dpitch,
                (const char *)op->u.copy.src + r * op->u.copy.spitch, op->u.copy.width);
      break;
    case OP_SET8:
      memset(op->u.set.ptr, (int)(op->u.set.value & 0xffu), op->u.set.count);
      break;
    case OP_SET16:
      for (size_t i = 0; i < op->u.set.count; i++) ((uint16_t *)op->u.set.ptr)[i] = (uint16_t)op->u.set.value;
      break;
    case OP_SET32:
      for (size_t i = 0; i < op->u.set.count; i++) ((uint32_t *)op->u.set.ptr)[i] = op->u.set.value;
      break;
    case OP_HOST_FN: {
      /* Marked in the thread's state, so that a wait inside fails (gp__cpu_check_may_wait);
       * without memory for the state the function still runs, unguarded. */
      gp__thread_t *t = gp__thread();
      if (t) t->in_host_fn++;
      if (op->u.host.cb)
        op->u.host.cb(op->u.host.stream, gp__async_error_peek(device), op->u.host.user);
      else
        op->u.host.fn(op->u.host.user);
      if (t) t->in_host_fn--;
      break;
    }
    case OP_HOST_WORK:
      st = replay ? replay_host_work(op) : op->u.work.fn(op->u.work.user);
      if (st != GP_SUCCESS)
        gp__async_error_raise(device, st, "stream work failed: %s", gp_last_error_message());
      if (!replay && op->u.work.free_user) free(op->u.work.user);
      break;
    case OP_FREE:
      gp__cpu_device_free(op->u.free_ptr);
      break;
    case OP_GRAPH:
      gp__cpu_exec_run(op->u.graph.exec, op->u.graph.body);
      break;
    case OP_EMPTY:
    case OP_RECORD:
    case OP_WAIT:
      break; /* done under the lock by finish_op / deps_ready */
  }
}

static void run_op(struct gp_stream_s *s, cpu_op_t *op) { run_op_on(s->device, op, false); }

void gp__cpu_op_run_node(struct gp__cpu_op *op, int device) { run_op_on(device, op, true); }

/* The module a kernel op holds (internal.h "handle registry"); NULL for other ops. */
static gp_module_t op_owner(const cpu_op_t *op) {
  return op->kind == OP_KERNEL ? op->u.kern.owner : NULL;
}

/* Drops what a graph launch holds. */
static void graph_op_release(cpu_op_t *op) {
  gp__cpu_body_unref(op->u.graph.body);
  gp__cpu_exec_unref(op->u.graph.exec);
}

/* Returns a copy's staging buffer to the pool (every path that frees an op calls it). */
static void op_release_stage(cpu_op_t *op) {
  if (op->kind == OP_COPY && op->u.copy.stage != NULL) stage_put(op->u.copy.stage);
}

void gp__cpu_op_free(struct gp__cpu_op *op) {
  op_release_stage(op);
  if (op->kind == OP_HOST_WORK && op->u.work.free_user) free(op->u.work.user);
  if (op->kind == OP_GRAPH) graph_op_release(op);
  gp_module_t owner = op_owner(op);
  free(op);
  if (owner) (void)gp__handle_release(owner);
}

/* Releases an operation that was never queued nor captured (the caller keeps a host-work
 * record: gp__be_enqueue_host_work frees it itself). */
static void op_discard(cpu_op_t *op) {
  op_release_stage(op);
  if (op->kind == OP_GRAPH) graph_op_release(op);
  gp_module_t owner = op_owner(op);
  free(op);
  if (owner) (void)gp__handle_release(owner);
}

/* Retires the head op of s (g_mu held). */
static void finish_op(struct gp_stream_s *s, cpu_op_t *op) {
  if (op->kind == OP_RECORD) {
    struct gp_event_s *e = op->u.ev.ev;
    if (op->u.ev.gen > e->done) {
      e->done = op->u.ev.gen;
      e->done_ns = now_ns();
    }
  }
  if (op->kind == OP_RECORD || op->kind == OP_WAIT) event_unref(op->u.ev.ev);
  if (op->kind == OP_GRAPH) op->u.graph.exec->done = op->u.graph.gen; /* released by the worker */
  s->head = op->next;
  if (s->head == NULL) s->tail = NULL;
  s->completed++;
  if (g_waiters > 0) pthread_cond_broadcast(&g_progress);
}

static void *worker_main(void *arg) {
  struct gp_stream_s *s = arg;
  gp__thread_t *t = gp__thread(); /* marked: a module unload here must not wait for streams */
  if (t) t->stream_worker = 1;
  pthread_mutex_lock(&g_mu);
  for (;;) {
    while (s->head == NULL && !s->destroying) pthread_cond_wait(&s->wake, &g_mu);
    cpu_op_t *op = s->head;
    if (op == NULL) break; /* destroyed and drained */
    if (op->claimed) { /* a synchronous caller runs it; wait for its completion */
      wait_progress();
      continue;
    }
    while (!deps_ready(s, op)) wait_progress();
    if (op->kind != OP_RECORD && op->kind != OP_WAIT) {
      pthread_mutex_unlock(&g_mu);
      run_op(s, op);
      pthread_mutex_lock(&g_mu);
    }
    finish_op(s, op);
    gp_module_t owner = op_owner(op);
    op_release_stage(op);
    if (owner || op->kind == OP_GRAPH) {
      /* The last reference to a module may unload it, and the last one to a graph's
       * nodes release their modules: not under g_mu. */
      pthread_mutex_unlock(&g_mu);
      if (op->kind == OP_GRAPH) graph_op_release(op);
      free(op);
      if (owner) (void)gp__handle_release(owner);
      pthread_mutex_lock(&g_mu);
    } else {
      free(op);
    }
  }
  stream_unlink_free(s);
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

static gp_status_t start_worker(struct gp_stream_s *s) {
  pthread_attr_t attr;
  pthread_t t;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&t, &attr, worker_main, s);
  pthread_attr_destroy(&attr);
  if (rc != 0)
    return gp__error(GP_ERROR_OUT_OF_MEMORY, "gpuport stream",
                     "cannot start the stream's worker thread (error %d)", rc);
  s->has_worker = true;
  return GP_SUCCESS;
}

/* Appends op to s (g_mu held); on failure op is not queued and stays the caller's. */
static gp_status_t enqueue_locked(struct gp_stream_s *s, cpu_op_t *op) {
  if (!s->has_worker) GP__TRY(start_worker(s));
  op->next = NULL;
  op->ticket = ++g_dev[s->device].ticket;
  op->seq = ++s->enqueued;
  if (op->kind == OP_GRAPH) op->u.graph.gen = ++op->u.graph.exec->launched;
  if (s->tail) s->tail->next = op; else s->head = op;
  s->tail = op;
  pthread_cond_signal(&s->wake);
  return GP_SUCCESS;
}

/* seq receives op's position: op itself may be freed by the worker once g_mu is released. */
static gp_status_t enqueue(struct gp_stream_s *s, cpu_op_t *op, uint64_t *seq) {
  pthread_mutex_lock(&g_mu);
  gp_status_t st = enqueue_locked(s, op);
  *seq = op->seq;
  pthread_mutex_unlock(&g_mu);
  if (st != GP_SUCCESS) op_discard(op);
  return st;
}

static cpu_op_t *op_new(op_kind_t kind, size_t extra) {
  /* zeroed: a field one kind of operation adds (a copy's staging buffer) reads as absent
   * in operations made elsewhere (graph nodes) */
  cpu_op_t *op = calloc(1, sizeof(cpu_op_t) + extra);
  if (op) {
    op->kind = kind;
    op->claimed = false;
    op->size = sizeof(cpu_op_t) + extra;
  }
  else gp__error(GP_ERROR_OUT_OF_MEMORY, "gpuport stream", "out of host memory for an operation");
  return op;
}

/* ---- stream resolution ------------------------------------------------------------------------- */

static struct gp_stream_s *stream_new(skind_t kind, int device, int priority) {
  struct gp_stream_s *s = calloc(1, sizeof(*s));
  if (s == NULL) return NULL;
  s->magic = GP__STREAM_MAGIC;
  s->kind = kind;
  s->device = device;
  s->priority = priority;
  if (kind != S_WRAPPER) pthread_cond_init(&s->wake, NULL);
  return s;
}

static struct gp_stream_s *per_thread_stream(int dev) {
  pt_streams_t *pt = (pt_streams_t *)pthread_getspecific(g_pt_key);
  if (pt && pt->s[dev]) return pt->s[dev];
  if (pt == NULL) {
    pt = calloc(1, sizeof(*pt));
    if (pt == NULL) return NULL;
    if (pthread_setspecific(g_pt_key, pt) != 0) { /* so the thread's exit releases them */
      free(pt);
      return NULL;
    }
  }
  struct gp_stream_s *s = stream_new(S_PER_THREAD, dev, 0);
  if (s == NULL) return NULL;
  pthread_mutex_lock(&g_mu);
  stream_link(s);
  pthread_mutex_unlock(&g_mu);
  pt->s[dev] = s;
  return s;
}

/* The queue behind a checked gp_stream_t: the default streams of the current device,
 * or the stream a wrapper aliases. NULL (with a message) only when out of memory. */
static struct gp_stream_s *stream_get(gp_stream_t h) {
  int dev = gp__current_device();
  struct gp_stream_s *s;
  if (h == NULL || h == GP_STREAM_LEGACY)
    s = &g_dev[dev].legacy;
  else if (h == GP_STREAM_PER_THREAD)
    s = per_thread_stream(dev);
  else
    s = h->kind == S_WRAPPER ? h->target : h;
  if (s == NULL) gp__error(GP_ERROR_OUT_OF_MEMORY, "gpuport stream", "out of host memory");
  return s;
}

static struct gp_event_s *event_get(gp_event_t e) { return e->wrapper ? e->target : e; }

/* After a wait: faults of another device's work are reported here; the api layer reports
 * the current device's. */
static gp_status_t other_device_errors(int dev, const char *func) {
  return dev == gp__current_device() ? GP_SUCCESS : gp__async_error_report(dev, func);
}

/* ---- stream capture (g_mu held unless said otherwise) -------------------------------------------- */

static bool front_reserve(front_t *f, int n) {
  if (n <= f->cap) return true;
  int cap = f->cap ? f->cap * 2 : 4;
  while (cap < n) cap *= 2;
  int *v = realloc(f->v, (size_t)cap * sizeof(int));
  if (v == NULL) return false;
  f->v = v;
  f->cap = cap;
  return true;
}

static bool front_add(front_t *f, int node) {
  for (int i = 0; i < f->n; i++)
    if (f->v[i] == node) return true;
  if (!front_reserve(f, f->n + 1)) return false;
  f->v[f->n++] = node;
  return true;
}

static bool front_merge(front_t *dst, const front_t *src) {
  for (int i = 0; i < src->n; i++)
    if (!front_add(dst, src->v[i])) return false;
  return true;
}

static bool front_assign(front_t *dst, const front_t *src) {
  dst->n = 0;
  return front_merge(dst, src);
}

static const char *mode_name(gp_capture_mode_t m) {
  return m == GP_CAPTURE_MODE_GLOBAL         ? "GP_CAPTURE_MODE_GLOBAL"
         : m == GP_CAPTURE_MODE_THREAD_LOCAL ? "GP_CAPTURE_MODE_THREAD_LOCAL"
                                              : "GP_CAPTURE_MODE_RELAXED";
}

/* Marks c invalid, keeping the first reason: later operations on its streams fail, and
 * gp_stream_end_capture returns no graph, with GP_ERROR_NOT_SUPPORTED whatever the
 * cause, as CUDA answers cudaErrorStreamCaptureInvalidated. */
static void capture_invalidate(cpu_capture_t *c, const char *why) {
  if (c->invalid != GP_SUCCESS) return;
  c->invalid = GP_ERROR_NOT_SUPPORTED;
  snprintf(c->why, sizeof c->why, "%s", why);
}

/* Fails func because what cannot happen while c is active, and invalidates c. */
static gp_status_t capture_forbid(cpu_capture_t *c, const char *func, const char *what) {
  char why[384];
  snprintf(why, sizeof why, "%s: %s is not permitted while stream %p is being captured", func,
           what, (void *)c->origin);
  capture_invalidate(c, why);
  return gp__error(GP_ERROR_NOT_SUPPORTED, func,
                   "%s is not permitted while stream %p is being captured; the capture is now "
                   "invalid (gp_stream_end_capture will fail)",
                   what, (void *)c->origin);
}

static gp_status_t capture_invalid_error(const cpu_capture_t *c, const char *func) {
  return gp__error(c->invalid, func,
                   "the capture begun on stream %p was invalidated earlier (%s): end it with "
                   "gp_stream_end_capture and capture again",
                   (void *)c->origin, c->why);
}

/* The capture a blocking stream of device dev is in, if any: work of the legacy stream
 * would have to wait for that stream (cudaErrorStreamCaptureImplicit). */
static cpu_capture_t *blocking_capture(int dev) {
  if (atomic_load(&g_ncaptures) == 0) return NULL;
  for (struct gp_stream_s *t = g_dev[dev].streams; t; t = t->next)
    if (t->kind == S_BLOCKING && t->cap) return t->cap;
  return NULL;
}

static gp_status_t legacy_check(const struct gp_stream_s *s, const char *func) {
  if (s->kind != S_LEGACY) return GP_SUCCESS;
  cpu_capture_t *c = blocking_capture(s->device);
  if (c == NULL) return GP_SUCCESS;
  return capture_forbid(c, func,
                        "work on the legacy default stream (it would wait for a blocking stream "
                        "that is capturing)");
}

static bool capture_add_stream(cpu_capture_t *c, struct gp_stream_s *s) {
  if (c->nstreams == c->capstreams) {
    int cap = c->capstreams ? 2 * c->capstreams : 4;
    struct gp_stream_s **v = realloc(c->streams, (size_t)cap * sizeof(*v));
    if (v == NULL) return false;
    c->streams = v;
    c->capstreams = cap;
  }
  c->streams[c->nstreams++] = s;
  return true;
}

/* Appends op to the capture of s, after s's frontier; op then belongs to the graph. */
static gp_status_t capture_record(struct gp_stream_s *s, cpu_op_t *op, const char *func) {
  cpu_capture_t *c = s->cap;
  if (c->invalid != GP_SUCCESS) return capture_invalid_error(c, func);
  if (op->kind == OP_FREE) return capture_forbid(c, func, "a stream-ordered free");
  if (op->kind == OP_HOST_FN && op->u.host.cb)
    return capture_forbid(c, func, "a stream callback (gp_launch_host_func's host functions are captured)");
  if (op->kind == OP_HOST_WORK && op->u.work.free_user)
    op->u.work.bytes = malloc_usable_size(op->u.work.user);
  if (!front_reserve(&s->front, 1))
    return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "out of host memory for a graph node");
  int idx = gp__cpu_body_add(c->body, op, s->device, s->front.v, s->front.n);
  if (idx < 0) return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "out of host memory for a graph node");
  s->front.n = 0;
  s->front.v[s->front.n++] = idx;
  return GP_SUCCESS;
}

/* What an enqueue of op on s does about captures: op is recorded into the capture of s
 * (*taken), or refused, or left to the queue (GP_SUCCESS, !*taken). */
static gp_status_t capture_take(struct gp_stream_s *s, cpu_op_t *op, const char *func, bool *taken) {
  *taken = false;
  if (s->cap == NULL) return legacy_check(s, func);
  GP__TRY(capture_record(s, op, func));
  *taken = true;
  return GP_SUCCESS;
}

/* s waits on an event recorded in capture e->cap: s joins it, or, already in it, adds the
 * event's nodes to its frontier (how a fork joins back). */
static gp_status_t capture_join(struct gp_stream_s *s, struct gp_event_s *e, const char *func) {
  cpu_capture_t *c = e->cap;
  if (s->cap != NULL && s->cap != c) {
    capture_invalidate(s->cap, "a stream of it waited on an event of another capture");
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'event' was recorded in the capture begun on stream %p but 'stream' is in "
                     "the capture begun on stream %p: captures cannot depend on each other",
                     (void *)c->origin, (void *)s->cap->origin);
  }
  if (c->invalid != GP_SUCCESS) return capture_invalid_error(c, func);
  if (s->cap == c) {
    if (!front_merge(&s->front, &e->front))
      return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "out of host memory");
    return GP_SUCCESS;
  }
  if (s->kind == S_LEGACY)
    return capture_forbid(c, func,
                          "making the legacy default stream wait on an event recorded in a "
                          "capture (the legacy stream cannot join a capture)");
  if (!front_assign(&s->front, &e->front) || !capture_add_stream(c, s))
    return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "out of host memory");
  s->cap = c;
  return GP_SUCCESS;
}

/* True (and *bad) when a stream that joined c has captured work the origin's frontier
 * does not depend on: a fork never joined back (cudaErrorStreamCaptureUnjoined). */
static bool capture_unjoined(const cpu_capture_t *c, struct gp_stream_s **bad) {
  const gp__cpu_body_t *b = c->body;
  if (c->nstreams <= 1 || b->n == 0) return false;
  unsigned char *mark = calloc((size_t)b->n, 1);
  int *stack = malloc((size_t)b->n * sizeof(int));
  bool unjoined = false;
  if (mark && stack) {
    int top = 0;
    const front_t *f = &c->origin->front;
    for (int i = 0; i < f->n; i++) {
      mark[f->v[i]] = 1;
      stack[top++] = f->v[i];
    }
    while (top > 0) {
      const gp__cpu_node_t *nd = &b->nodes[stack[--top]];
      for (int i = 0; i < nd->ndeps; i++)
        if (!mark[nd->deps[i]]) {
          mark[nd->deps[i]] = 1;
          stack[top++] = nd->deps[i];
        }
    }
    for (int k = 1; k < c->nstreams && !unjoined; k++) {
      const front_t *t = &c->streams[k]->front;
      for (int i = 0; i < t->n && !unjoined; i++)
        if (!mark[t->v[i]]) {
          unjoined = true;
          *bad = c->streams[k];
        }
    }
  }
  free(mark);
  free(stack);
  return unjoined;
}

/* Takes c off its streams and events and off the list of active captures. */
static void capture_detach(cpu_capture_t *c) {
  for (int i = 0; i < c->nstreams; i++) {
    c->streams[i]->cap = NULL;
    c->streams[i]->front.n = 0;
  }
  for (int d = 0; d < g_ndev; d++)
    for (struct gp_event_s *e = g_dev[d].events; e; e = e->next)
      if (e->cap == c) {
        e->cap = NULL; /* back to its last real record */
        e->front.n = 0;
      }
  cpu_capture_t **p = &g_captures;
  while (*p != c) p = &(*p)->next;
  *p = c->next;
  atomic_fetch_sub(&g_ncaptures, 1);
}

static void capture_free(cpu_capture_t *c) {
  gp__cpu_body_unref(c->body);
  free(c->streams);
  free(c);
}

/* s is going away (gp_device_reset, the exit of the thread owning a per-thread stream):
 * a capture begun on it is dropped; if it joined one, it leaves it, which invalidates it. */
static void capture_leave(struct gp_stream_s *s, const char *why) {
  cpu_capture_t *c = s->cap;
  if (c == NULL) return;
  if (c->origin == s) {
    capture_detach(c);
    capture_free(c);
    return;
  }
  for (int i = 1; i < c->nstreams; i++)
    if (c->streams[i] == s) c->streams[i] = c->streams[--c->nstreams];
  s->cap = NULL;
  s->front.n = 0;
  capture_invalidate(c, why);
}

static void capture_drop_device(int dev) {
  if (atomic_load(&g_ncaptures) == 0) return;
  for (struct gp_stream_s *t = g_dev[dev].streams; t; t = t->next)
    capture_leave(t, "gp_device_reset destroyed a stream that had joined the capture");
}

/* Capture modes (cudaThreadExchangeStreamCaptureMode): a call capture cannot record
 * fails in a thread that has a capture not begun in relaxed mode, and in every thread
 * while another thread has a capture begun in global mode. */
gp_status_t gp__be_capture_guard(const char *func) {
  if (atomic_load(&g_ncaptures) == 0) return GP_SUCCESS;
  pthread_t me = pthread_self();
  gp_status_t st = GP_SUCCESS;
  pthread_mutex_lock(&g_mu);
  cpu_capture_t *hit = NULL;
  for (cpu_capture_t *c = g_captures; c && !hit; c = c->next) {
    bool mine = pthread_equal(c->thread, me) != 0;
    if ((mine && c->mode != GP_CAPTURE_MODE_RELAXED) || (!mine && c->mode == GP_CAPTURE_MODE_GLOBAL))
      hit = c;
  }
  if (hit) {
    char why[256];
    snprintf(why, sizeof why, "%s was called, which a capture cannot record", func);
    bool invalidated = false;
    for (cpu_capture_t *c = g_captures; c; c = c->next)
      if (pthread_equal(c->thread, me) && c->mode != GP_CAPTURE_MODE_RELAXED) {
        capture_invalidate(c, why);
        invalidated = true;
      }
    st = gp__error(GP_ERROR_NOT_SUPPORTED, func,
                   "not permitted while stream %p is being captured in %s by %s thread: memory "
                   "allocation and release, synchronous copies and sets and device "
                   "synchronisation cannot be captured (do them before gp_stream_begin_capture "
                   "or after gp_stream_end_capture)%s",
                   (void *)hit->origin, mode_name(hit->mode),
                   pthread_equal(hit->thread, me) ? "this" : "another",
                   invalidated ? "; the capture is now invalid" : "");
  }
  pthread_mutex_unlock(&g_mu);
  return st;
}

gp_status_t gp__cpu_stream_capture_forbid(gp_stream_t h, const char *func, const char *what) {
  struct gp_stream_s *s = stream_get(h);
  if (s == NULL) return GP_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_mu);
  gp_status_t st = s->cap ? capture_forbid(s->cap, func, what) : legacy_check(s, func);
  pthread_mutex_unlock(&g_mu);
  return st;
}

gp_status_t gp__be_stream_begin_capture(gp_stream_t h, gp_capture_mode_t mode) {
  const char *f = "gp_stream_begin_capture";
  struct gp_stream_s *s = stream_get(h);
  if (s == NULL) return GP_ERROR_OUT_OF_MEMORY;
  cpu_capture_t *c = calloc(1, sizeof(*c));
  if (c == NULL || (c->body = gp__cpu_body_new()) == NULL || !capture_add_stream(c, s)) {
    if (c) capture_free(c);
    return gp__error(GP_ERROR_OUT_OF_MEMORY, f, "out of host memory for a capture");
  }
  c->origin = s;
  c->mode = mode;
  c->thread = pthread_self();
  c->invalid = GP_SUCCESS;
  gp_status_t st = GP_SUCCESS;
  pthread_mutex_lock(&g_mu);
  if (s->cap) {
    st = s->cap->origin == s
             ? gp__error(GP_ERROR_INVALID_VALUE, f, "'stream' is already capturing")
             : gp__error(GP_ERROR_INVALID_VALUE, f,
                         "'stream' is already capturing: it joined the capture begun on stream %p",
                         (void *)s->cap->origin);
  } else {
    s->cap = c;
    s->front.n = 0;
    c->next = g_captures;
    g_captures = c;
    atomic_fetch_add(&g_ncaptures, 1);
  }
  pthread_mutex_unlock(&g_mu);
  if (st != GP_SUCCESS) capture_free(c);
  return st;
}

gp_status_t gp__be_stream_end_capture(gp_stream_t h, gp_graph_t *graph) {
  const char *f = "gp_stream_end_capture";
  struct gp_stream_s *s = stream_get(h);
  if (s == NULL) return GP_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_mu);
  cpu_capture_t *c = s->cap;
  gp_status_t st = GP_SUCCESS;
  if (c == NULL) {
    st = gp__error(GP_ERROR_INVALID_VALUE, f, "'stream' is not capturing");
  } else if (c->origin != s) {
    st = gp__error(GP_ERROR_INVALID_VALUE, f,
                   "'stream' joined the capture begun on stream %p (it waited on an event "
                   "recorded in it): end the capture on that stream",
                   (void *)c->origin);
  } else if (c->mode != GP_CAPTURE_MODE_RELAXED && !pthread_equal(c->thread, pthread_self())) {
    st = gp__error(GP_ERROR_INVALID_VALUE, f,
                   "the capture was begun by another thread in %s: end it from that thread (or "
                   "capture in GP_CAPTURE_MODE_RELAXED)",
                   mode_name(c->mode));
  }
  if (st != GP_SUCCESS) { /* the capture goes on */
    pthread_mutex_unlock(&g_mu);
    return st;
  }
  struct gp_stream_s *bad = NULL;
  if (c->invalid != GP_SUCCESS)
    st = gp__error(c->invalid, f, "the capture was invalidated: %s", c->why);
  else if (capture_unjoined(c, &bad))
    st = gp__error(GP_ERROR_INVALID_VALUE, f,
                   "stream %p joined the capture but its work was not joined back into "
                   "'stream': record an event on it and make 'stream' wait on that event "
                   "before ending the capture",
                   (void *)bad);
  capture_detach(c);
  pthread_mutex_unlock(&g_mu);
  if (st == GP_SUCCESS) {
    gp_graph_t g = gp__cpu_graph_new(c->body);
    if (g == NULL) {
      st = GP_ERROR_OUT_OF_MEMORY;
    } else {
      c->body = NULL; /* the graph holds it now */
      *graph = g;
    }
  }
  if (c->body) gp__cpu_body_unref(c->body);
  free(c->streams);
  free(c);
  return st;
}

gp_status_t gp__be_stream_is_capturing(gp_stream_t h, gp_capture_status_t *status) {
  struct gp_stream_s *s = stream_get(h);
  if (s == NULL) return GP_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_mu);
  *status = s->cap == NULL                     ? GP_CAPTURE_STATUS_NONE
            : s->cap->invalid != GP_SUCCESS    ? GP_CAPTURE_STATUS_INVALIDATED
                                               : GP_CAPTURE_STATUS_ACTIVE;
  pthread_mutex_unlock(&g_mu);
  return GP_SUCCESS;
}

/* An event recorded in a capture marks a point of a graph being built: it has no state
 * to wait for or query (cudaErrorCapturedEvent). */
static gp_status_t captured_event_check(const struct gp_event_s *e, const char *func, const char *arg) {
  if (e->cap == NULL) return GP_SUCCESS;
  return gp__error(GP_ERROR_NOT_SUPPORTED, func,
                   "'%s' was last recorded in the capture begun on stream %p: it marks a point "
                   "of the graph being built and has no state to wait for or query",
                   arg, (void *)e->cap->origin);
}

static void wait_seq(struct gp_stream_s *s, uint64_t seq) {
  pthread_mutex_lock(&g_mu);
  while (s->completed < seq) wait_progress();
  pthread_mutex_unlock(&g_mu);
}

/* A synchronous copy or set on an idle stream runs in the calling thread: handing it to
 * the worker and back costs two thread wake-ups (~60 us on a 2-core machine). It is
 * still queued, as the stream's head, so later work and the legacy-stream rules see
 * it; `claimed` keeps the worker off it. Returns false (op untouched) when the stream
 * has pending work and op must take the normal path. */
static bool run_inline(struct gp_stream_s *s, cpu_op_t *op) {
  pthread_mutex_lock(&g_mu);
  if (s->head != NULL) {
    pthread_mutex_unlock(&g_mu);
    return false;
  }
  op->claimed = true;
  op->next = NULL;
  op->ticket = ++g_dev[s->device].ticket;
  op->seq = ++s->enqueued;
  s->head = s->tail = op;
  while (!deps_ready(s, op)) wait_progress();
  pthread_mutex_unlock(&g_mu);
  run_op(s, op);
  pthread_mutex_lock(&g_mu);
  finish_op(s, op); /* wakes the worker if work was queued behind op meanwhile */
  pthread_mutex_unlock(&g_mu);
  op_release_stage(op);
  free(op);
  return true;
}

/* Enqueues op on the resolved stream; sync callers wait for it to complete. */
static gp_status_t submit(gp_stream_t h, cpu_op_t *op, bool sync, const char *func) {
  if (op == NULL) return GP_ERROR_OUT_OF_MEMORY;
  if (sync) {
    gp_status_t st = gp__cpu_check_may_wait(func);
    if (st != GP_SUCCESS) {
      op_discard(op);
      return st;
    }
  }
  struct gp_stream_s *s = stream_get(h);
  if (s == NULL) {
    op_discard(op);
    return GP_ERROR_OUT_OF_MEMORY;
  }
  /* A capture that begins between this check and the enqueue below is as racy as on
   * CUDA: which operations it sees is up to the threads that race. */
  bool taken = false;
  gp_status_t cst = GP_SUCCESS;
  if (atomic_load(&g_ncaptures) != 0) { /* no capture at all: no lock to take */
    pthread_mutex_lock(&g_mu);
    cst = capture_take(s, op, func, &taken);
    pthread_mutex_unlock(&g_mu);
  }
  if (cst != GP_SUCCESS) {
    op_discard(op);
    return cst;
  }
  if (taken) return GP_SUCCESS;
  if (sync && run_inline(s, op)) return other_device_errors(s->device, func);
  uint64_t seq = 0;
  GP__TRY(enqueue(s, op, &seq));
  if (!sync) return GP_SUCCESS;
  wait_seq(s, seq);
  return other_device_errors(s->device, func);
}

/* ---- initialisation, fork, thread exit ------------------------------------------------------------ */

static void pt_release(void *p) {
  pt_streams_t *pt = p;
  pthread_mutex_lock(&g_mu);
  for (int d = 0; d < GP__CPU_MAX_DEVICES; d++) {
    struct gp_stream_s *s = pt->s[d];
    if (s == NULL) continue;
    capture_leave(s, "a thread whose per-thread stream had joined the capture exited");
    s->destroying = true;
    if (!s->has_worker) stream_unlink_free(s); else pthread_cond_signal(&s->wake);
  }
  pthread_mutex_unlock(&g_mu);
  free(pt);
}

/* The staging pool's lock is taken too (after g_mu, the order everywhere), so the child
 * finds the pool consistent. */
static void fork_prepare(void) {
  pthread_mutex_lock(&g_mu);
  pthread_mutex_lock(&g_stage_mu);
}
static void fork_parent(void) {
  pthread_mutex_unlock(&g_stage_mu);
  pthread_mutex_unlock(&g_mu);
}

/* The child has no workers: pending ops are dropped (the parent runs them), events
 * count as complete, and the next enqueue starts a fresh worker. */
static void fork_child(void) {
  pthread_mutex_unlock(&g_stage_mu);
  pthread_cond_init(&g_progress, NULL);
  g_waiters = 0;
  for (int d = 0; d < g_ndev; d++) {
    for (struct gp_stream_s *s = g_dev[d].streams, *next; s; s = next) {
      next = s->next;
      if (s->kind == S_WRAPPER) continue;
      for (cpu_op_t *op = s->head, *n2; op; op = n2) {
        n2 = op->next;
        op_release_stage(op);
        free(op);
      }
      s->head = s->tail = NULL;
      s->completed = s->enqueued;
      s->has_worker = false;
      pthread_cond_init(&s->wake, NULL);
      if (s->destroying) stream_unlink_free(s);
    }
    for (struct gp_event_s *e = g_dev[d].events, *next; e; e = next) {
      next = e->next;
      e->done = e->recorded;
      e->refs = 1;
      if (e->destroyed) event_unref(e);
    }
  }
  pthread_mutex_unlock(&g_mu);
}

void gp__cpu_streams_init(int ndev) {
  g_ndev = ndev;
  for (int d = 0; d < g_ndev; d++) {
    struct gp_stream_s *l = &g_dev[d].legacy;
    l->magic = GP__STREAM_MAGIC;
    l->kind = S_LEGACY;
    l->device = d;
    pthread_cond_init(&l->wake, NULL);
    l->next = NULL;
    g_dev[d].streams = l;
  }
  pthread_key_create(&g_pt_key, pt_release);
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---- device-wide waits and reset ------------------------------------------------------------------ */

bool gp__cpu_on_stream_worker(void) {
  const gp__thread_t *t = gp__thread_peek();
  return t != NULL && t->stream_worker;
}

void gp__cpu_device_drain(int dev) {
  pthread_mutex_lock(&g_mu);
  uint64_t t = g_dev[dev].ticket;
  while (!device_idle_upto(&g_dev[dev], t)) wait_progress();
  pthread_mutex_unlock(&g_mu);
}

/* ---- handle lifetimes (internal.h "handle registry") ------------------------------------------- */

/* The finaliser of a stream handle, run when its last reference goes: work already
 * queued still runs, and the worker frees the stream once it has drained. A wrapper
 * lets go of the stream it aliases. */
static gp_status_t stream_fini(void *h) {
  struct gp_stream_s *s = h;
  struct gp_stream_s *target = s->kind == S_WRAPPER ? s->target : NULL;
  pthread_mutex_lock(&g_mu);
  if (s->kind == S_WRAPPER || !s->has_worker) {
    stream_unlink_free(s);
  } else {
    s->destroying = true;
    pthread_cond_signal(&s->wake);
  }
  pthread_mutex_unlock(&g_mu);
  if (target) (void)gp__handle_release(target);
  return GP_SUCCESS;
}

/* The finaliser of an event handle: pending records and waits hold references of their
 * own (e->refs). A wrapper lets go of the event it aliases. */
static gp_status_t event_fini(void *h) {
  struct gp_event_s *e = h;
  struct gp_event_s *target = e->wrapper ? e->target : NULL;
  pthread_mutex_lock(&g_mu);
  e->destroyed = true;
  event_unref(e);
  pthread_mutex_unlock(&g_mu);
  if (target) (void)gp__handle_release(target);
  return GP_SUCCESS;
}

/* The next live handle of device dev that pick selects, with a reference taken (g_mu is
 * not held when the caller kills it: a finaliser takes g_mu). */
static struct gp_stream_s *next_stream(int dev, const struct gp_stream_s *target) {
  struct gp_stream_s *found = NULL;
  pthread_mutex_lock(&g_mu);
  for (struct gp_stream_s *t = g_dev[dev].streams; t && !found; t = t->next) {
    bool pick = target ? (t->kind == S_WRAPPER && t->target == target)
                       : (t->kind != S_LEGACY && t->kind != S_PER_THREAD);
    if (pick && gp__handle_acquire(t, GP__H_STREAM)) found = t;
  }
  pthread_mutex_unlock(&g_mu);
  return found;
}

static struct gp_event_s *next_event(int dev, const struct gp_event_s *target) {
  struct gp_event_s *found = NULL;
  pthread_mutex_lock(&g_mu);
  for (struct gp_event_s *e = g_dev[dev].events; e && !found; e = e->next) {
    bool pick = target ? (e->wrapper && e->target == target) : true;
    if (pick && gp__handle_acquire(e, GP__H_EVENT)) found = e;
  }
  pthread_mutex_unlock(&g_mu);
  return found;
}

/* Kills a handle the caller holds a reference to, and drops that reference. */
static void kill_held(const void *h, gp__handle_kind_t kind) {
  (void)gp__handle_kill(h, kind, NULL);
  (void)gp__handle_release(h);
}

/* Wrappers die with what they wrap (a destroyed stream's alias must fail as it does). */
static void kill_stream_wrappers(const struct gp_stream_s *s) {
  for (struct gp_stream_s *w; (w = next_stream(s->device, s)) != NULL;) kill_held(w, GP__H_STREAM);
}

static void kill_event_wrappers(const struct gp_event_s *e) {
  for (struct gp_event_s *w; (w = next_event(e->device, e)) != NULL;) kill_held(w, GP__H_EVENT);
}

void gp__cpu_device_release_handles(int dev) {
  pthread_mutex_lock(&g_mu);
  capture_drop_device(dev);
  pthread_mutex_unlock(&g_mu);
  for (struct gp_stream_s *s; (s = next_stream(dev, NULL)) != NULL;) kill_held(s, GP__H_STREAM);
  for (struct gp_event_s *e; (e = next_event(dev, NULL)) != NULL;) kill_held(e, GP__H_EVENT);
}

/* ---- streams ---------------------------------------------------------------------------------------- */

gp_status_t gp__be_stream_create(gp_stream_t *stream, unsigned flags, int priority) {
  skind_t kind = (flags & GP_STREAM_NON_BLOCKING) ? S_NONBLOCKING : S_BLOCKING;
  struct gp_stream_s *s = stream_new(kind, gp__current_device(), priority);
  if (s == NULL) return gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_stream_create", "out of host memory");
  pthread_mutex_lock(&g_mu);
  stream_link(s);
  pthread_mutex_unlock(&g_mu);
  gp_status_t st = gp__handle_add(s, GP__H_STREAM, stream_fini);
  if (st != GP_SUCCESS) {
    pthread_mutex_lock(&g_mu);
    stream_unlink_free(s);
    pthread_mutex_unlock(&g_mu);
    return gp__error(st, "gp_stream_create", "cannot register the stream");
  }
  *stream = s;
  return GP_SUCCESS;
}

gp_status_t gp__be_stream_destroy(gp_stream_t s) {
  pthread_mutex_lock(&g_mu);
  bool capturing = s->cap != NULL;
  pthread_mutex_unlock(&g_mu);
  if (capturing)
    return gp__error(GP_ERROR_NOT_SUPPORTED, "gp_stream_destroy",
                     "'stream' is in a capture: end the capture (gp_stream_end_capture) first");
  /* The kill is the claim: of two racing destroys, one wins. A reference of its own
   * keeps s allocated until its wrappers are gone (internal callers hold none). */
  bool held = gp__handle_acquire(s, GP__H_STREAM);
  if (!held || !gp__handle_kill(s, GP__H_STREAM, NULL)) {
    if (held) (void)gp__handle_release(s);
    return gp__error(GP_ERROR_INVALID_HANDLE, "gp_stream_destroy",
                     "'stream' (%p) was destroyed concurrently", (void *)s);
  }
  if (s->kind != S_WRAPPER) kill_stream_wrappers(s);
  (void)gp__handle_release(s);
  return GP_SUCCESS;
}

/* Waiting for or querying a capturing stream, or the legacy stream while a blocking stream
 * captures, is refused (cudaErrorStreamCaptureUnsupported / Implicit). */
static gp_status_t wait_check(struct gp_stream_s *s, const char *func, const char *what) {
  if (s->cap) return capture_forbid(s->cap, func, what);
  return legacy_check(s, func);
}

gp_status_t gp__be_stream_synchronize(gp_stream_t h) {
  GP__TRY(gp__cpu_check_may_wait("gp_stream_synchronize"));
  struct gp_stream_s *s = stream_get(h);
  if (s == NULL) return GP_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_mu);
  gp_status_t st = wait_check(s, "gp_stream_synchronize", "synchronising a capturing stream");
  if (st != GP_SUCCESS) {
    pthread_mutex_unlock(&g_mu);
    return st;
  }
  uint64_t target = s->enqueued;
  while (s->completed < target) wait_progress();
  pthread_mutex_unlock(&g_mu);
  return other_device_errors(s->device, "gp_stream_synchronize");
}

gp_status_t gp__be_stream_query(gp_stream_t h) {
  struct gp_stream_s *s = stream_get(h);
  if (s == NULL) return GP_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_mu);
  gp_status_t st = wait_check(s, "gp_stream_query", "querying a capturing stream");
  bool done = s->completed == s->enqueued;
  pthread_mutex_unlock(&g_mu);
  if (st != GP_SUCCESS) return st;
  return done ? GP_SUCCESS : GP_ERROR_NOT_READY;
}

gp_status_t gp__be_stream_wait_event(gp_stream_t h, gp_event_t event) {
  struct gp_stream_s *s = stream_get(h);
  if (s == NULL) return GP_ERROR_OUT_OF_MEMORY;
  struct gp_event_s *e = event_get(event);
  cpu_op_t *op = op_new(OP_WAIT, 0);
  if (op == NULL) return GP_ERROR_OUT_OF_MEMORY;
  const char *f = "gp_stream_wait_event";
  gp_status_t st = GP_SUCCESS;
  pthread_mutex_lock(&g_mu);
  if (e->cap) {
    st = capture_join(s, e, f);
    free(op);
  } else if (s->cap && e->done < e->recorded) {
    /* The graph could not know, at each launch, whether that work is done. */
    st = capture_forbid(s->cap, f,
                        "waiting on an event recorded outside the capture whose work is not "
                        "complete");
    free(op);
  } else if ((st = legacy_check(s, f)) != GP_SUCCESS || e->done >= e->recorded) {
    /* An event never recorded, or whose last record is complete, is no wait at all. */
    free(op);
  } else {
    op->u.ev.ev = e;
    op->u.ev.gen = e->recorded;
    e->refs++;
    st = enqueue_locked(s, op);
    if (st != GP_SUCCESS) {
      e->refs--;
      free(op);
    }
  }
  pthread_mutex_unlock(&g_mu);
  return st;
}

gp_status_t gp__be_launch_host_func(gp_stream_t stream, void (*fn)(void *), void *user) {
  cpu_op_t *op = op_new(OP_HOST_FN, 0);
  if (op) {
    op->u.host.fn = fn;
    op->u.host.user = user;
  }
  return submit(stream, op, false, "gp_launch_host_func");
}

gp_status_t gp__be_stream_add_callback(gp_stream_t stream, gp_stream_callback_t cb, void *user) {
  cpu_op_t *op = op_new(OP_HOST_FN, 0);
  if (op) {
    op->u.host.cb = cb;
    op->u.host.stream = stream;
    op->u.host.user = user;
  }
  return submit(stream, op, false, "gp_stream_add_callback");
}

/* Host and kernels share managed memory, which the host may touch at any time
 * (concurrent_managed_access 1): the hint changes nothing. */
gp_status_t gp__be_stream_attach_mem_async(gp_stream_t stream, void *ptr, size_t length, unsigned flags) {
  (void)stream;
  (void)ptr;
  (void)length;
  (void)flags;
  return GP_SUCCESS;
}

gp_status_t gp__be_enqueue_host_work(gp_stream_t stream, gp__host_work_fn fn, void *user,
                                     bool free_user) {
  cpu_op_t *op = op_new(OP_HOST_WORK, 0);
  if (op) {
    op->u.work.fn = fn;
    op->u.work.user = user;
    op->u.work.free_user = free_user;
  }
  gp_status_t st = submit(stream, op, false, "gp__be_enqueue_host_work");
  if (st != GP_SUCCESS && free_user) free(user); /* dropped: the contract frees it */
  return st;
}

int gp__cpu_stream_device(gp_stream_t h) {
  if (h == NULL || h == GP_STREAM_LEGACY || h == GP_STREAM_PER_THREAD) return gp__current_device();
  return h->kind == S_WRAPPER ? h->target->device : h->device;
}

int gp__be_stream_device(gp_stream_t h) { return gp__cpu_stream_device(h); }

void *gp__be_stream_native(gp_stream_t s) {
  if (s == NULL || s == GP_STREAM_LEGACY || s == GP_STREAM_PER_THREAD) return s;
  return s->kind == S_WRAPPER ? s->target : s;
}

/* A reference to the stream or event a wrap names (through a wrapper: what it wraps);
 * NULL when native is not a live handle of kind. */
static const void *wrap_target(void *native, gp__handle_kind_t kind) {
  if (!gp__handle_acquire(native, kind)) return NULL;
  const void *t = native;
  if (kind == GP__H_STREAM && ((gp_stream_t)native)->kind == S_WRAPPER)
    t = ((gp_stream_t)native)->target;
  if (kind == GP__H_EVENT && ((gp_event_t)native)->wrapper) t = ((gp_event_t)native)->target;
  /* The wrapper named holds its target, so the target is still allocated. */
  bool ok = t == native || gp__handle_acquire(t, kind);
  if (t != native) (void)gp__handle_release(native);
  return ok ? t : NULL;
}

gp_status_t gp__be_stream_wrap(gp_stream_t *stream, void *native) {
  struct gp_stream_s *target = (struct gp_stream_s *)(uintptr_t)wrap_target(native, GP__H_STREAM);
  if (target == NULL)
    return gp__error(GP_ERROR_INVALID_VALUE, "gp_stream_wrap",
                     "'native' (%p) is not a live stream (on the cpu backend the native "
                     "stream is a gp_stream_t)",
                     native);
  struct gp_stream_s *w = stream_new(S_WRAPPER, target->device, target->priority);
  if (w == NULL) {
    (void)gp__handle_release(target);
    return gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_stream_wrap", "out of host memory");
  }
  w->target = target; /* the wrapper keeps the reference: released by its finaliser */
  pthread_mutex_lock(&g_mu);
  stream_link(w); /* on the target's device, so a reset of it drops the alias too */
  pthread_mutex_unlock(&g_mu);
  gp_status_t st = gp__handle_add(w, GP__H_STREAM, stream_fini);
  if (st != GP_SUCCESS) {
    pthread_mutex_lock(&g_mu);
    stream_unlink_free(w);
    pthread_mutex_unlock(&g_mu);
    (void)gp__handle_release(target);
    return gp__error(st, "gp_stream_wrap", "cannot register the wrapper");
  }
  *stream = w;
  return GP_SUCCESS;
}

/* ---- copies, sets, stream-ordered free ----------------------------------------------------------- */

/* Which memory a side of a copy is: what the host may reuse as soon as a call returns
 * (pageable: neither allocated nor registered by gpuport), page-locked host memory, or
 * device memory (device, managed, device variables). */
typedef enum copy_side { SIDE_PAGEABLE, SIDE_PINNED, SIDE_DEVICE } copy_side_t;

static copy_side_t copy_side(const void *p) {
  gp__alloc_info_t info;
  if (!gp__alloc_find(p, &info)) return SIDE_PAGEABLE;
  return info.kind == GP__ALLOC_HOST || info.kind == GP__ALLOC_REGISTERED ? SIDE_PINNED : SIDE_DEVICE;
}

static bool stream_capturing(gp_stream_t h) {
  if (atomic_load(&g_ncaptures) == 0) return false;
  struct gp_stream_s *s = stream_get(h);
  if (s == NULL) return false;
  pthread_mutex_lock(&g_mu);
  bool cap = s->cap != NULL;
  pthread_mutex_unlock(&g_mu);
  return cap;
}

/* An asynchronous copy with pageable memory on a side behaves as CUDA's (CUDA Runtime
 * API, "API synchronization behavior", Asynchronous): "For transfers from pageable host
 * memory to device memory, host memory is copied to a staging buffer immediately (no
 * device synchronization is performed)"; "For transfers from device memory to pageable
 * host memory, the function will return only once the copy has completed"; and a copy
 * between host memory with a pageable side is "fully synchronous with respect to the
 * host". So the host may reuse pageable memory once the call returns. A source too large
 * to stage (over GP__STAGE_MAX) makes the copy synchronous, which CUDA also allows ("the
 * function might be synchronous with respect to host"). Between page-locked or device
 * memory the copy stays asynchronous. A copy captured into a graph reads and writes its
 * memory when the graph runs, as recorded. */
static gp_status_t copy_async(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, gp_stream_t stream, bool sync,
                              copy_side_t dside, copy_side_t sside) {
  void *stage = NULL;
  const bool pageable = dside == SIDE_PAGEABLE || sside == SIDE_PAGEABLE;
  if (!sync && pageable && !stream_capturing(stream)) {
    const size_t bytes = width * height; /* the api layer checked the extent */
    if (dside == SIDE_DEVICE && bytes <= GP__STAGE_MAX) {
      if ((stage = stage_get(bytes)) == NULL)
        return gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_memcpy_async",
                         "no host memory to stage %zu bytes of pageable memory", bytes);
      for (size_t r = 0; r < height; r++)
        memcpy((char *)stage + r * width, (const char *)src + r * spitch, width);
      src = stage;
      spitch = width;
    } else {
      sync = true;
    }
  }
  cpu_op_t *op = op_new(OP_COPY, 0);
  if (op) {
    op->u.copy.dst = dst;
    op->u.copy.src = src;
    op->u.copy.dpitch = dpitch;
    op->u.copy.spitch = spitch;
    op->u.copy.width = width;
    op->u.copy.height = height;
    op->u.copy.stage = stage;
  } else if (stage) {
    stage_put(stage);
  }
  return submit(stream, op, sync, "gp_memcpy");
}

gp_status_t gp__be_memcpy_2d_async(void *dst, size_t dpitch, const void *src, size_t spitch,
                                   size_t width, size_t height, gp_stream_t stream, bool sync) {
  return copy_async(dst, dpitch, src, spitch, width, height, stream, sync, copy_side(dst),
                    copy_side(src));
}

gp_status_t gp__be_memcpy_peer_async(void *dst, int dst_dev, const void *src, int src_dev,
                                     size_t bytes, gp_stream_t stream, bool sync) {
  (void)dst_dev; /* one address space: a peer copy is a copy, of device memory */
  (void)src_dev;
  return copy_async(dst, bytes, src, bytes, bytes, 1, stream, sync, SIDE_DEVICE, SIDE_DEVICE);
}

static gp_status_t set_async(op_kind_t kind, void *ptr, uint32_t value, size_t count,
                             gp_stream_t stream, bool sync) {
  cpu_op_t *op = op_new(kind, 0);
  if (op) {
    op->u.set.ptr = ptr;
    op->u.set.value = value;
    op->u.set.count = count;
  }
  return submit(stream, op, sync, "gp_memset");
}

gp_status_t gp__be_memset_async(void *ptr, int value, size_t bytes, gp_stream_t stream, bool sync) {
  return set_async(OP_SET8, ptr, (uint32_t)value, bytes, stream, sync);
}

gp_status_t gp__be_memset_d32_async(void *ptr, uint32_t value, size_t count, gp_stream_t stream,
                                    bool sync) {
  return set_async(OP_SET32, ptr, value, count, stream, sync);
}

gp_status_t gp__be_free_async(void *ptr, gp_stream_t stream) {
  cpu_op_t *op = op_new(OP_FREE, 0);
  if (op) op->u.free_ptr = ptr;
  return submit(stream, op, false, "gp_free_async");
}

/* ---- kernel launch ---------------------------------------------------------------------------------- */

#define GP__ARG_ALIGN 16 /* every parameter slot is aligned for any kernel parameter type */

/* A kernel op with its own copy of the arguments; NULL when out of memory. */
static cpu_op_t *kernel_op_new(gp_kernel_t k, gp_dim3_t grid, gp_dim3_t block, size_t shmem,
                               void **args, unsigned flags) {
  /* The argument values are copied now, as cudaLaunchKernel does: the caller's
   * variables may change or die before the stream reaches the launch. */
  size_t n = (size_t)k->num_params, bytes = 0;
  for (size_t i = 0; i < n; i++)
    bytes += (k->param_sizes[i] + GP__ARG_ALIGN - 1) / GP__ARG_ALIGN * GP__ARG_ALIGN;
  size_t ptrs = (n * sizeof(void *) + GP__ARG_ALIGN - 1) / GP__ARG_ALIGN * GP__ARG_ALIGN;
  cpu_op_t *op = op_new(OP_KERNEL, GP__ARG_ALIGN + ptrs + bytes);
  if (op == NULL) return NULL;
  uintptr_t base = ((uintptr_t)(op + 1) + GP__ARG_ALIGN - 1) & ~(uintptr_t)(GP__ARG_ALIGN - 1);
  void **copy = (void **)base;
  char *val = (char *)base + ptrs;
  for (size_t i = 0; i < n; i++) {
    memcpy(val, args[i], k->param_sizes[i]);
    copy[i] = val;
    val += (k->param_sizes[i] + GP__ARG_ALIGN - 1) / GP__ARG_ALIGN * GP__ARG_ALIGN;
  }
  op->u.kern.k = k;
  op->u.kern.grid = grid;
  op->u.kern.block = block;
  op->u.kern.shmem = shmem;
  op->u.kern.args = n ? copy : NULL;
  op->u.kern.flags = flags;
  /* The op holds the kernel's module (the caller's reference ends with its call), so an
   * unload while the launch is queued or captured keeps the code mapped until it is done. */
  op->u.kern.owner = NULL;
  (void)gp__desc_hold(k, GP__DESC_KERNEL, &op->u.kern.owner);
  return op;
}

static gp_status_t launch_op(gp_kernel_t k, gp_dim3_t grid, gp_dim3_t block, size_t shmem,
                             gp_stream_t stream, void **args, unsigned flags, const char *func) {
  cpu_op_t *op = kernel_op_new(k, grid, block, shmem, args, flags);
  if (op == NULL) return GP_ERROR_OUT_OF_MEMORY;
  return submit(stream, op, false, func);
}

gp_status_t gp__be_launch(gp_kernel_t k, gp_dim3_t grid, gp_dim3_t block, size_t shmem,
                          gp_stream_t stream, void **args) {
  return launch_op(k, grid, block, shmem, stream, args, 0, "gp_launch");
}

gp_status_t gp__be_launch_ex(gp_kernel_t k, const gp_launch_config_t *c, gp_stream_t stream,
                             void **args) {
  return launch_op(k, c->grid, c->block, c->dynamic_shared_bytes, stream, args,
                   c->cooperative ? GP__CPU_EXEC_COOPERATIVE : 0u, "gp_launch_ex");
}

/* ---- device variables: ordinary host variables of the program ------------------------------ */

gp_status_t gp__be_symbol_address(void **ptr, gp_symbol_t symbol) {
  *ptr = (void *)(uintptr_t)symbol->address;
  return GP_SUCCESS;
}

gp_status_t gp__be_memcpy_symbol_async(void *mem, gp_symbol_t symbol, size_t bytes, size_t offset,
                                       bool to_symbol, gp_stream_t stream, bool sync) {
  unsigned char *var = (unsigned char *)(uintptr_t)symbol->address + offset;
  /* The variable is device memory the registry does not hold. */
  return to_symbol ? copy_async(var, bytes, mem, bytes, bytes, 1, stream, sync, SIDE_DEVICE,
                                copy_side(mem))
                   : copy_async(mem, bytes, var, bytes, bytes, 1, stream, sync, copy_side(mem),
                                SIDE_DEVICE);
}

/* ---- graph launch ------------------------------------------------------------------------------------ */

gp_status_t gp__be_graph_launch(gp_graph_exec_t exec, gp_stream_t stream) {
  cpu_op_t *op = op_new(OP_GRAPH, 0);
  if (op) {
    gp__cpu_exec_ref(exec); /* released when the launch completes, or with the graph holding it */
    op->u.graph.exec = exec;
    op->u.graph.body = gp__cpu_exec_body(exec); /* later updates of exec do not reach it */
    op->u.graph.gen = 0;
  }
  return submit(stream, op, false, "gp_graph_launch");
}

/* ---- graph nodes made explicitly (src/cpu/graph.c) ----------------------------------------------- */

struct gp__cpu_op *gp__cpu_op_node(const gp__graph_node_desc_t *d) {
  cpu_op_t *op = NULL;
  switch (d->type) {
    case GP_GRAPH_NODE_TYPE_KERNEL: {
      const gp_kernel_node_params_t *p = &d->u.kernel;
      return kernel_op_new(p->kernel, p->grid, p->block, p->shared_bytes, p->args, 0);
    }
    case GP_GRAPH_NODE_TYPE_MEMCPY:
      if ((op = op_new(OP_COPY, 0)) != NULL) {
        op->u.copy.dst = d->u.copy.dst;
        op->u.copy.src = d->u.copy.src;
        op->u.copy.dpitch = op->u.copy.spitch = op->u.copy.width = d->u.copy.bytes;
        op->u.copy.height = 1;
      }
      return op;
    case GP_GRAPH_NODE_TYPE_MEMSET: {
      unsigned es = d->u.set.element_size;
      if ((op = op_new(es == 1 ? OP_SET8 : es == 2 ? OP_SET16 : OP_SET32, 0)) != NULL) {
        op->u.set.ptr = d->u.set.dst;
        op->u.set.value = es == 4 ? d->u.set.value : d->u.set.value & ((1u << (8 * es)) - 1u);
        op->u.set.count = d->u.set.width;
      }
      return op;
    }
    case GP_GRAPH_NODE_TYPE_HOST:
      if ((op = op_new(OP_HOST_FN, 0)) != NULL) {
        op->u.host.fn = d->u.host.fn;
        op->u.host.user = d->u.host.user_data;
      }
      return op;
    default:
      return op_new(OP_EMPTY, 0);
  }
}

struct gp__cpu_op *gp__cpu_op_clone(const struct gp__cpu_op *src) {
  cpu_op_t *op = malloc(src->size);
  if (op == NULL) return NULL;
  memcpy(op, src, src->size);
  switch (op->kind) {
    case OP_KERNEL:
      if (src->u.kern.args) { /* the argument slots and values move with the op */
        ptrdiff_t moved = (char *)op - (char *)src;
        op->u.kern.args = (void **)((char *)src->u.kern.args + moved);
        for (int i = 0; i < op->u.kern.k->num_params; i++)
          op->u.kern.args[i] = (char *)src->u.kern.args[i] + moved;
      }
      /* The source op holds the module, so its descriptor is still registered. */
      op->u.kern.owner = NULL;
      (void)gp__desc_hold(op->u.kern.k, GP__DESC_KERNEL, &op->u.kern.owner);
      break;
    case OP_HOST_WORK:
      if (src->u.work.free_user) {
        op->u.work.user = malloc(src->u.work.bytes ? src->u.work.bytes : 1);
        if (op->u.work.user == NULL) {
          free(op);
          return NULL;
        }
        memcpy(op->u.work.user, src->u.work.user, src->u.work.bytes);
      }
      break;
    case OP_GRAPH:
      gp__cpu_exec_ref(op->u.graph.exec);
      atomic_fetch_add(&op->u.graph.body->refs, 1);
      break;
    default:
      break;
  }
  return op;
}

gp_graph_node_type_t gp__cpu_op_type(const struct gp__cpu_op *op) {
  switch (op->kind) {
    case OP_KERNEL: return GP_GRAPH_NODE_TYPE_KERNEL;
    case OP_COPY: return GP_GRAPH_NODE_TYPE_MEMCPY;
    case OP_SET8:
    case OP_SET16:
    case OP_SET32: return GP_GRAPH_NODE_TYPE_MEMSET;
    case OP_HOST_FN:
    case OP_HOST_WORK: return GP_GRAPH_NODE_TYPE_HOST;
    case OP_GRAPH: return GP_GRAPH_NODE_TYPE_GRAPH;
    default: return GP_GRAPH_NODE_TYPE_EMPTY;
  }
}

void gp__cpu_op_kernel_params(const struct gp__cpu_op *op, gp_kernel_node_params_t *p) {
  p->kernel = op->u.kern.k;
  p->grid = op->u.kern.grid;
  p->block = op->u.kern.block;
  p->shared_bytes = op->u.kern.shmem;
  p->args = op->u.kern.args;
}

bool gp__cpu_op_same_child(const struct gp__cpu_op *a, const struct gp__cpu_op *b) {
  return a->kind != OP_GRAPH || b->kind != OP_GRAPH || a->u.graph.exec == b->u.graph.exec;
}

/* ---- events ------------------------------------------------------------------------------------------ */

static gp_status_t event_add(struct gp_event_s *e, const char *func) {
  pthread_mutex_lock(&g_mu);
  event_link(e);
  pthread_mutex_unlock(&g_mu);
  gp_status_t st = gp__handle_add(e, GP__H_EVENT, event_fini);
  if (st != GP_SUCCESS) {
    pthread_mutex_lock(&g_mu);
    event_unref(e);
    pthread_mutex_unlock(&g_mu);
    return gp__error(st, func, "cannot register the event");
  }
  return GP_SUCCESS;
}

gp_status_t gp__be_event_create(gp_event_t *event, unsigned flags) {
  struct gp_event_s *e = calloc(1, sizeof(*e));
  if (e == NULL) return gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_event_create", "out of host memory");
  e->magic = GP__EVENT_MAGIC;
  e->device = gp__current_device();
  e->rec_device = e->device;
  e->flags = flags;
  e->refs = 1;
  GP__TRY(event_add(e, "gp_event_create"));
  *event = e;
  return GP_SUCCESS;
}

gp_status_t gp__be_event_destroy(gp_event_t event) {
  /* A pending record still completes: the ops hold references. Wrappers of the event
   * go with it (see kill_stream_wrappers). */
  bool held = gp__handle_acquire(event, GP__H_EVENT);
  if (!held || !gp__handle_kill(event, GP__H_EVENT, NULL)) {
    if (held) (void)gp__handle_release(event);
    return gp__error(GP_ERROR_INVALID_HANDLE, "gp_event_destroy",
                     "'event' (%p) was destroyed concurrently", (void *)event);
  }
  if (!event->wrapper) kill_event_wrappers(event);
  (void)gp__handle_release(event); /* the last reference of an internal event: freed here */
  return GP_SUCCESS;
}

gp_status_t gp__be_event_record(gp_event_t event, gp_stream_t h) {
  struct gp_stream_s *s = stream_get(h);
  if (s == NULL) return GP_ERROR_OUT_OF_MEMORY;
  struct gp_event_s *e = event_get(event);
  const char *f = "gp_event_record";
  cpu_op_t *op = op_new(OP_RECORD, 0);
  if (op == NULL) return GP_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_mu);
  gp_status_t st = GP_SUCCESS;
  if (s->cap) { /* the event marks the stream's frontier in the capture: no operation */
    if (s->cap->invalid != GP_SUCCESS)
      st = capture_invalid_error(s->cap, f);
    else if (!front_assign(&e->front, &s->front))
      st = gp__error(GP_ERROR_OUT_OF_MEMORY, f, "out of host memory");
    else
      e->cap = s->cap;
    pthread_mutex_unlock(&g_mu);
    free(op);
    return st;
  }
  if ((st = legacy_check(s, f)) == GP_SUCCESS) {
    op->u.ev.ev = e;
    op->u.ev.gen = e->recorded + 1;
    st = enqueue_locked(s, op);
  }
  if (st == GP_SUCCESS) {
    e->recorded = op->u.ev.gen;
    e->rec_device = s->device;
    e->refs++;
    e->cap = NULL; /* a real record replaces a captured one */
    e->front.n = 0;
  } else {
    free(op);
  }
  pthread_mutex_unlock(&g_mu);
  return st;
}

gp_status_t gp__be_event_synchronize(gp_event_t event) {
  GP__TRY(gp__cpu_check_may_wait("gp_event_synchronize"));
  struct gp_event_s *e = event_get(event);
  pthread_mutex_lock(&g_mu);
  gp_status_t st = captured_event_check(e, "gp_event_synchronize", "event");
  if (st != GP_SUCCESS) {
    pthread_mutex_unlock(&g_mu);
    return st;
  }
  uint64_t gen = e->recorded;
  int dev = e->rec_device;
  while (e->done < gen) wait_progress();
  pthread_mutex_unlock(&g_mu);
  return other_device_errors(dev, "gp_event_synchronize");
}

gp_status_t gp__be_event_query(gp_event_t event) {
  struct gp_event_s *e = event_get(event);
  pthread_mutex_lock(&g_mu);
  gp_status_t st = captured_event_check(e, "gp_event_query", "event");
  bool done = e->done >= e->recorded;
  pthread_mutex_unlock(&g_mu);
  if (st != GP_SUCCESS) return st;
  return done ? GP_SUCCESS : GP_ERROR_NOT_READY;
}

gp_status_t gp__be_event_elapsed_ms(float *ms, gp_event_t start, gp_event_t end) {
  struct gp_event_s *a = event_get(start), *b = event_get(end);
  const char *f = "gp_event_elapsed_ms";
  if ((a->flags | b->flags) & GP_EVENT_DISABLE_TIMING)
    return gp__error(GP_ERROR_INVALID_VALUE, f, "'%s' was created with GP_EVENT_DISABLE_TIMING",
                     a->flags & GP_EVENT_DISABLE_TIMING ? "start" : "end");
  pthread_mutex_lock(&g_mu);
  gp_status_t st = captured_event_check(a, f, "start");
  if (st == GP_SUCCESS) st = captured_event_check(b, f, "end");
  if (st != GP_SUCCESS) {
    pthread_mutex_unlock(&g_mu);
    return st;
  }
  uint64_t ra = a->recorded, rb = b->recorded;
  bool ready = a->done >= ra && b->done >= rb;
  double d = (double)(int64_t)(b->done_ns - a->done_ns) / 1e6;
  pthread_mutex_unlock(&g_mu);
  if (ra == 0 || rb == 0)
    return gp__error(GP_ERROR_INVALID_VALUE, f, "'%s' was never recorded",
                     ra == 0 ? "start" : "end");
  if (!ready) return GP_ERROR_NOT_READY;
  *ms = (float)d;
  return GP_SUCCESS;
}

void *gp__be_event_native(gp_event_t event) { return event_get(event); }

int gp__be_event_device(gp_event_t event) { return event_get(event)->device; }

gp_status_t gp__be_event_wrap(gp_event_t *event, void *native) {
  struct gp_event_s *target = (struct gp_event_s *)(uintptr_t)wrap_target(native, GP__H_EVENT);
  if (target == NULL)
    return gp__error(GP_ERROR_INVALID_VALUE, "gp_event_wrap",
                     "'native' (%p) is not a live event (on the cpu backend the native event "
                     "is a gp_event_t)",
                     native);
  struct gp_event_s *w = calloc(1, sizeof(*w));
  if (w == NULL) {
    (void)gp__handle_release(target);
    return gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_event_wrap", "out of host memory");
  }
  w->magic = GP__EVENT_MAGIC;
  w->device = target->device; /* a reset of the target's device drops the alias too */
  w->flags = target->flags;
  w->wrapper = true;
  w->target = target; /* the wrapper keeps the reference: released by its finaliser */
  w->refs = 1;
  gp_status_t st = event_add(w, "gp_event_wrap");
  if (st != GP_SUCCESS) {
    (void)gp__handle_release(target);
    return st;
  }
  *event = w;
  return GP_SUCCESS;
}
