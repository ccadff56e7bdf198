/*
 * comm.c - the public collectives (gpuport/comm.h): argument checks once, for every
 * backend, and the one funnel every operation goes through (NCCL's ncclEnqueueCheck):
 * pack the call, check it, log one INFO line, then enqueue it through the backend
 * (src/cpu/comm_cpu.c or src/gpu/nccl.c), or keep it on the thread's group list until
 * the outermost gp_group_end() hands the whole group to the backend.
 *
 * Communicators are registered handles (a destroyed one is GP_ERROR_INVALID_HANDLE,
 * not a read of freed memory), held by each call from its check to its enqueue (by a
 * group's calls until the group ends), so a destroy racing with a call waits for the
 * call to let go (internal.h "handle registry"). The backend owns a communicator's
 * memory from init onwards: its destroy/abort, the handle's finaliser, free it when
 * no pending operation uses it any more.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "comm.h"
#include "comm_ext.h"

/* ---- names and shapes ------------------------------------------------------------------ */

const char *gp__coll_name(gp__coll_t coll) {
  static const char *const names[GP__COLL_COUNT] = {
      "all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all",
      "send", "recv"};
  return (unsigned)coll < GP__COLL_COUNT ? names[coll] : "invalid";
}

const char *gp__coll_public_name(gp__coll_t coll) {
  static const char *const names[GP__COLL_COUNT] = {
      "gp_all_reduce", "gp_broadcast", "gp_reduce", "gp_all_gather", "gp_reduce_scatter",
      "gp_all_to_all", "gp_send", "gp_recv"};
  return (unsigned)coll < GP__COLL_COUNT ? names[coll] : "gp_comm";
}

const char *gp__reduce_op_name(gp_reduce_op_t op) {
  switch (op) {
    case GP_SUM: return "sum";
    case GP_PROD: return "prod";
    case GP_MAX: return "max";
    case GP_MIN: return "min";
    case GP_AVG: return "avg";
  }
  return "invalid";
}

bool gp__coll_reduces(gp__coll_t coll) {
  return coll == GP__COLL_ALL_REDUCE || coll == GP__COLL_REDUCE || coll == GP__COLL_REDUCE_SCATTER;
}

void gp__comm_call_extents(const gp__comm_call_t *c, int nranks, size_t *send_elems,
                           size_t *recv_elems) {
  size_t n = (size_t)nranks, k = c->count;
  bool root = c->comm->rank == c->root;
  switch (c->coll) {
    case GP__COLL_ALL_REDUCE: *send_elems = k, *recv_elems = k; break;
    case GP__COLL_BROADCAST: *send_elems = root ? k : 0, *recv_elems = k; break;
    case GP__COLL_REDUCE: *send_elems = k, *recv_elems = root ? k : 0; break;
    case GP__COLL_ALL_GATHER: *send_elems = k, *recv_elems = n * k; break;
    case GP__COLL_REDUCE_SCATTER: *send_elems = n * k, *recv_elems = k; break;
    case GP__COLL_ALL_TO_ALL: *send_elems = n * k, *recv_elems = n * k; break;
    case GP__COLL_SEND: *send_elems = k, *recv_elems = 0; break;
    case GP__COLL_RECV: *send_elems = 0, *recv_elems = k; break;
    default: *send_elems = *recv_elems = 0; break;
  }
}

/* ---- the backend ------------------------------------------------------------------------ */

static const gp__comm_backend_t *g_backend; /* NULL: the native one */

void gp__comm_set_backend(const gp__comm_backend_t *be) { g_backend = be; }

static const gp__comm_backend_t *backend(void) {
  return g_backend ? g_backend : &gp__comm_native_backend;
}

/* ---- the common part ------------------------------------------------------------------------ */

double gp__comm_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double gp__comm_default_timeout(void) {
  const char *e = getenv("GP_COMM_TIMEOUT_S");
  if (e && *e) {
    char *end;
    double v = strtod(e, &end);
    if (*end == '\0' && v > 0 && isfinite(v)) return v;
    GP__WARN(GP__SUB_COMM, "GP_COMM_TIMEOUT_S=%s is not a positive number of seconds; using %d",
             e, GP_COMM_TIMEOUT_DEFAULT_S);
  }
  return GP_COMM_TIMEOUT_DEFAULT_S;
}

void gp__comm_record(gp_comm_t comm, gp_status_t status, const char *text) {
  pthread_mutex_lock(&comm->mu);
  bool first = comm->status == GP_SUCCESS || comm->status == GP_ERROR_NOT_READY;
  if (first) {
    comm->status = status;
    snprintf(comm->msg, sizeof comm->msg, "%s", text);
  }
  pthread_mutex_unlock(&comm->mu);
  if (first)
    GP__WARN(GP__SUB_COMM, "communicator rank %d of %d failed: %s: %s", comm->rank,
             comm->nranks, gp_status_name(status), text);
}

gp_status_t gp__comm_fail(gp_comm_t comm, gp_status_t status, const char *func, const char *fmt,
                          ...) {
  char text[sizeof comm->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  gp__comm_record(comm, status, text);
  return gp__error(status, func, "%s", text);
}

gp_status_t gp__comm_status(gp_comm_t comm, const char *func) {
  pthread_mutex_lock(&comm->mu);
  gp_status_t s = comm->status;
  char text[sizeof comm->msg];
  memcpy(text, comm->msg, sizeof text);
  pthread_mutex_unlock(&comm->mu);
  if (s != GP_SUCCESS && s != GP_ERROR_NOT_READY)
    gp__error(s, func, "the communicator (rank %d of %d) has failed: %s", comm->rank,
              comm->nranks, text);
  return s;
}

void gp__comm_set_status(gp_comm_t comm, gp_status_t status) {
  pthread_mutex_lock(&comm->mu);
  if (comm->status == GP_SUCCESS || comm->status == GP_ERROR_NOT_READY) comm->status = status;
  pthread_mutex_unlock(&comm->mu);
}

gp_comm_t gp__comm_new(int rank, int nranks, int device, int blocking, double timeout_s) {
  gp_comm_t c = calloc(1, sizeof(*c));
  if (c == NULL) return NULL;
  c->magic = GP__COMM_MAGIC;
  c->rank = rank;
  c->nranks = nranks;
  c->device = device;
  c->blocking = blocking;
  c->timeout_s = timeout_s;
  c->be = backend();
  c->status = GP_SUCCESS;
  pthread_mutex_init(&c->mu, NULL);
  return c;
}

gp_status_t gp__comm_ext_error(gp_status_t status, const char *func, const char *msg) {
  return gp__error(status, func, "%s", msg);
}

static gp_status_t comm_fini(void *h) {
  gp_comm_t comm = h;
  return comm->abort_at_fini ? comm->be->abort(comm) : comm->be->destroy(comm);
}

gp_status_t gp__comm_register(gp_comm_t comm) {
  return gp__handle_add(comm, GP__H_COMM, comm_fini);
}

void gp__comm_free(gp_comm_t comm) {
  if (comm == NULL) return;
  comm->magic = 0;
  pthread_mutex_destroy(&comm->mu);
  free(comm);
}

/* Takes a reference to comm (GP_ERROR_INVALID_HANDLE when it is not live). */
static gp_status_t check_comm(gp_comm_t comm, const char *func) {
  return gp__handle_get(comm, GP__H_COMM, func, "comm");
}

static void comm_put(gp_comm_t comm) {
  const void *h = comm;
  gp__handle_put_ref(&h);
}

/* The references a packed call holds: its communicator and its stream. */
static void call_put(gp__comm_call_t *c) {
  gp__stream_put(c->stream);
  comm_put(c->comm);
}

/* A held communicator released when the variable goes out of scope. */
static void comm_put_ref(gp_comm_t *comm) {
  if (*comm) comm_put(*comm);
}
#define GP__COMM_REF __attribute__((cleanup(comm_put_ref)))

/* ---- the thread's group ------------------------------------------------------------------------ */

/* Made by the thread's first gp_group_start, kept in its state (src/thread.c). */
typedef struct gp__comm_group {
  int depth;
  gp__comm_call_t *calls;
  size_t ncalls, cap_calls;
  gp__comm_init_t *inits;
  size_t ninits, cap_inits;
  gp__comm_split_t *splits;
  size_t nsplits, cap_splits;
} group_t;

/* The calling thread's group; NULL when it never opened one. */
static group_t *group_peek(void) {
  gp__thread_t *t = gp__thread_peek();
  return t ? t->comm_group : NULL;
}

static int group_depth(void) {
  const group_t *g = group_peek();
  return g ? g->depth : 0;
}

/* The open group, NULL (the calls run now) when there is none. */
static group_t *group_open(void) {
  group_t *g = group_peek();
  return g && g->depth > 0 ? g : NULL;
}

static gp_status_t grow(void **arr, size_t *cap, size_t need, size_t elem, const char *func) {
  if (need <= *cap) return GP_SUCCESS;
  size_t ncap = *cap ? *cap * 2 : 16;
  while (ncap < need) ncap *= 2;
  void *p = realloc(*arr, ncap * elem);
  if (p == NULL) return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory for the group");
  *arr = p;
  *cap = ncap;
  return GP_SUCCESS;
}

static void group_reset(group_t *g) {
  free(g->calls);
  free(g->inits);
  free(g->splits);
  memset(g, 0, sizeof(*g));
}

/* A thread that exits inside a group never gets its outputs: the communicators made for
 * its queued inits and splits are freed with the group, and the references its queued
 * calls and splits hold (communicator, stream) are let go. */
void gp__comm_group_free(group_t *g) {
  if (g == NULL) return;
  for (size_t i = 0; i < g->ninits; i++) gp__comm_free(g->inits[i].comm);
  for (size_t i = 0; i < g->nsplits; i++) {
    gp__comm_free(g->splits[i].child);
    comm_put(g->splits[i].parent);
  }
  for (size_t i = 0; i < g->ncalls; i++) call_put(&g->calls[i]);
  group_reset(g);
  free(g);
}

GP_API gp_status_t gp_group_start(void) {
  gp__thread_t *t = gp__thread();
  if (t != NULL && t->comm_group == NULL) t->comm_group = (group_t *)calloc(1, sizeof(group_t));
  if (t == NULL || t->comm_group == NULL)
    return GP__ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for the thread's group");
  t->comm_group->depth++;
  return GP_SUCCESS;
}

/* Writes the outputs of successful inits, frees the comms of failed ones. */
static void finish_inits(gp__comm_init_t *inits, size_t n) {
  for (size_t i = 0; i < n; i++) {
    *inits[i].out = NULL;
    if (inits[i].st != GP_SUCCESS) {
      gp__comm_free(inits[i].comm);
    } else if (gp__comm_register(inits[i].comm) == GP_SUCCESS) {
      *inits[i].out = inits[i].comm;
    } else {
      (void)inits[i].comm->be->abort(inits[i].comm); /* no handle: undo */
    }
  }
}

/* Also drops each split's reference to its parent. */
static void finish_splits(gp__comm_split_t *sp, size_t n) {
  for (size_t i = 0; i < n; i++) {
    comm_put(sp[i].parent);
    *sp[i].out = NULL;
    if (sp[i].child == NULL) continue;
    if (sp[i].st != GP_SUCCESS) {
      gp__comm_free(sp[i].child);
    } else if (gp__comm_register(sp[i].child) == GP_SUCCESS) {
      *sp[i].out = sp[i].child;
    } else {
      (void)sp[i].child->be->abort(sp[i].child);
    }
  }
}

GP_API gp_status_t gp_group_end(void) {
  group_t *g = group_peek();
  if (g == NULL || g->depth == 0)
    return GP__ERR(GP_ERROR_INVALID_VALUE, "no group is open on this thread (gp_group_start)");
  if (--g->depth > 0) return GP_SUCCESS;
  group_t mine = *g; /* the backend may start groups of its own on this thread */
  memset(g, 0, sizeof(*g));
  const gp__comm_backend_t *be = backend();
  gp_status_t st = GP_SUCCESS, s;
  if (mine.ninits) {
    s = be->init(mine.inits, mine.ninits, false);
    finish_inits(mine.inits, mine.ninits);
    if (st == GP_SUCCESS) st = s;
  }
  if (mine.nsplits) {
    s = be->split(mine.splits, mine.nsplits);
    finish_splits(mine.splits, mine.nsplits);
    if (st == GP_SUCCESS) st = s;
  }
  if (mine.ncalls) {
    s = be->calls(mine.calls, mine.ncalls, true);
    if (st == GP_SUCCESS) st = s;
    for (size_t i = 0; i < mine.ncalls; i++) call_put(&mine.calls[i]);
  }
  group_reset(&mine);
  return st;
}

/* ---- ids and communicators ------------------------------------------------------------------------ */

GP_API gp_status_t gp_comm_get_unique_id(gp_comm_id_t *id) {
  GP__CHECK_NOT_NULL(id);
  memset(id, 0, sizeof(*id));
  GP__TRY(gp__api_init(__func__));
  return backend()->unique_id(id);
}

/* Resolves a config into blocking and timeout (defaults for NULL). */
static gp_status_t read_config(const gp_comm_config_t *config, int *blocking, double *timeout_s,
                               const char *func) {
  gp_comm_config_t c;
  gp_comm_config_init(&c);
  if (config) {
    if (config->struct_size < sizeof(size_t))
      return gp__error(GP_ERROR_INVALID_VALUE, func,
                       "config->struct_size is %zu: initialise the config with "
                       "gp_comm_config_init()",
                       config->struct_size);
    static const size_t ends[] = {offsetof(gp_comm_config_t, blocking) + sizeof(int),
                                  offsetof(gp_comm_config_t, timeout_s) + sizeof(double)};
    gp__api_copy_fields(&c, config, config->struct_size, ends, sizeof ends / sizeof ends[0]);
  }
  if (c.blocking != 0 && c.blocking != 1)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "config->blocking is %d; it must be 0 or 1",
                     c.blocking);
  if (!(c.timeout_s >= 0) || isinf(c.timeout_s))
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "config->timeout_s is %g; it must be a finite number of seconds >= 0 "
                     "(0: the default)",
                     c.timeout_s);
  *blocking = c.blocking;
  *timeout_s = c.timeout_s > 0 ? c.timeout_s : gp__comm_default_timeout();
  return GP_SUCCESS;
}

static gp_status_t init_rank(gp_comm_t *comm, int nranks, const gp_comm_id_t *id, int rank,
                             const gp_comm_config_t *config, const char *func) {
  if (comm == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'comm' is NULL");
  *comm = NULL;
  if (nranks < 1)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "'nranks' is %d; it must be >= 1", nranks);
  if (rank < 0 || rank >= nranks)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "'rank' is %d; ranks are 0..%d", rank,
                     nranks - 1);
  int blocking = 1, ndev = 0;
  double timeout_s = 0;
  GP__TRY(read_config(config, &blocking, &timeout_s, func));
  GP__TRY(gp__api_device_count(func, &ndev));
  gp_comm_t c = gp__comm_new(rank, nranks, gp__current_device(), blocking, timeout_s);
  if (c == NULL) return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory for a communicator");
  GP__INFO(GP__SUB_COMM, "%s: rank %d of %d on device %d (%s, timeout %.3g s%s)%s", func, rank,
           nranks, c->device, c->be->name, timeout_s, blocking ? "" : ", non-blocking",
           group_depth() ? " in a group" : "");
  gp__comm_init_t rec = {c, *id, comm, GP_ERROR_INTERNAL};
  group_t *g = group_open();
  if (g != NULL) {
    gp_status_t s = grow((void **)&g->inits, &g->cap_inits, g->ninits + 1, sizeof(rec), func);
    if (s != GP_SUCCESS) {
      gp__comm_free(c);
      return s;
    }
    g->inits[g->ninits++] = rec;
    return GP_SUCCESS;
  }
  gp_status_t s = c->be->init(&rec, 1, false);
  finish_inits(&rec, 1);
  return s;
}

GP_API gp_status_t gp_comm_init_rank(gp_comm_t *comm, int nranks, gp_comm_id_t id, int rank) {
  GP__TRY(gp__api_init(__func__));
  return init_rank(comm, nranks, &id, rank, NULL, __func__);
}

GP_API gp_status_t gp_comm_init_rank_config(gp_comm_t *comm, int nranks, gp_comm_id_t id,
                                            int rank, const gp_comm_config_t *config) {
  GP__TRY(gp__api_init(__func__));
  return init_rank(comm, nranks, &id, rank, config, __func__);
}

GP_API gp_status_t gp_comm_init_all(gp_comm_t *comms, int ndev, const int *devices) {
  GP__CHECK_NOT_NULL(comms);
  GP__CHECK_ARG(ndev >= 1, "'ndev' is %d; it must be >= 1", ndev);
  for (int i = 0; i < ndev; i++) comms[i] = NULL;
  GP__TRY(gp__api_init(__func__));
  for (int i = 0; i < ndev; i++) {
    int d = devices ? devices[i] : i;
    char arg[32];
    snprintf(arg, sizeof arg, "devices[%d]", i);
    GP__TRY(gp__api_check_device(__func__, arg, d));
    for (int j = 0; j < i; j++)
      GP__CHECK_ARG(d != (devices ? devices[j] : j),
                    "device %d is listed twice (devices[%d] and devices[%d]): each rank needs "
                    "its own device",
                    d, j, i);
  }
  gp_comm_id_t id;
  memset(&id, 0, sizeof id);
  const gp__comm_backend_t *be = backend();
  GP__TRY(be->unique_id(&id));
  double timeout_s = gp__comm_default_timeout();
  gp__comm_init_t *recs = calloc((size_t)ndev, sizeof(*recs));
  if (recs == NULL) return GP__ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory");
  gp_status_t st = GP_SUCCESS;
  for (int i = 0; i < ndev && st == GP_SUCCESS; i++) {
    recs[i].comm = gp__comm_new(i, ndev, devices ? devices[i] : i, 1, timeout_s);
    recs[i].id = id;
    recs[i].out = &comms[i];
    recs[i].st = GP_ERROR_INTERNAL;
    if (recs[i].comm == NULL) st = GP__ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory");
  }
  if (st == GP_SUCCESS) {
    GP__INFO(GP__SUB_COMM, "%s: %d ranks in this process (%s, timeout %.3g s)", __func__, ndev,
             be->name, timeout_s);
    st = be->init(recs, (size_t)ndev, true);
    finish_inits(recs, (size_t)ndev);
  } else {
    for (int i = 0; i < ndev; i++) gp__comm_free(recs[i].comm);
  }
  if (st != GP_SUCCESS)
    for (int i = 0; i < ndev; i++) {
      if (comms[i]) (void)gp_comm_abort(comms[i]);
      comms[i] = NULL;
    }
  free(recs);
  return st;
}

/* The split of a held parent: the reference goes with the split record (finish_splits
 * drops it), or is dropped here when no record is made. */
static gp_status_t split_held(gp_comm_t comm, int color, int key, gp_comm_t *newcomm) {
  const char *func = "gp_comm_split";
  gp_status_t cs = GP_SUCCESS;
  if (color < 0 && color != GP_COMM_SPLIT_NOCOLOR)
    cs = gp__error(GP_ERROR_INVALID_VALUE, func,
                   "'color' is %d; it must be >= 0 or GP_COMM_SPLIT_NOCOLOR", color);
  if (cs == GP_SUCCESS) cs = gp__comm_status(comm, func);
  if (cs != GP_SUCCESS && cs != GP_ERROR_NOT_READY) {
    comm_put(comm);
    return cs;
  }
  gp__comm_split_t sp = {comm, NULL, color, key, newcomm, GP_ERROR_INTERNAL};
  if (color != GP_COMM_SPLIT_NOCOLOR) {
    /* rank, size and device are the backend's to fill; config is inherited. */
    sp.child = gp__comm_new(0, 1, comm->device, comm->blocking, comm->timeout_s);
    if (sp.child == NULL) {
      comm_put(comm);
      return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory");
    }
  }
  GP__INFO(GP__SUB_COMM, "%s: rank %d of %d, color %d, key %d%s", func, comm->rank,
           comm->nranks, color, key, group_depth() ? " (in a group)" : "");
  group_t *g = group_open();
  if (g != NULL) { /* the group keeps the record, and the reference, until it ends */
    gp_status_t s = grow((void **)&g->splits, &g->cap_splits, g->nsplits + 1, sizeof(sp), func);
    if (s != GP_SUCCESS) {
      gp__comm_free(sp.child);
      comm_put(comm);
      return s;
    }
    g->splits[g->nsplits++] = sp;
    return GP_SUCCESS;
  }
  gp_status_t s = comm->be->split(&sp, 1);
  finish_splits(&sp, 1);
  return s;
}

GP_API gp_status_t gp_comm_split(gp_comm_t comm, int color, int key, gp_comm_t *newcomm) {
  GP__CHECK_NOT_NULL(newcomm);
  *newcomm = NULL;
  GP__TRY(gp__api_init(__func__));
  GP__TRY(check_comm(comm, __func__));
  return split_held(comm, color, key, newcomm);
}

/* Destroy and abort: the kill is the claim (of two racing ones, one wins); the backend's
 * destroy or abort runs as the finaliser, here unless another call still holds the
 * communicator (then when that call lets go). */
static gp_status_t retire(gp_comm_t comm, bool abort, const char *func) {
  GP__TRY(gp__api_init(func));
  GP__TRY(check_comm(comm, func));
  if (!gp__handle_kill(comm, GP__H_COMM, NULL)) {
    comm_put(comm);
    return gp__error(GP_ERROR_INVALID_HANDLE, func, "'comm' (%p) was destroyed concurrently",
                     (void *)comm);
  }
  GP__INFO(GP__SUB_COMM, "%s: rank %d of %d", func, comm->rank, comm->nranks);
  comm->abort_at_fini = abort; /* read by the finaliser, after the release below */
  return gp__handle_release(comm);
}

GP_API gp_status_t gp_comm_destroy(gp_comm_t comm) {
  if (comm == NULL) return GP_SUCCESS;
  return retire(comm, false, __func__);
}

GP_API gp_status_t gp_comm_abort(gp_comm_t comm) {
  if (comm == NULL) return GP_SUCCESS;
  return retire(comm, true, __func__);
}

GP_API gp_status_t gp_comm_rank(gp_comm_t comm, int *rank) {
  GP__CHECK_NOT_NULL(rank);
  GP__COMM_REF gp_comm_t held = NULL;
  GP__TRY(check_comm(comm, __func__));
  held = comm;
  *rank = comm->rank;
  return GP_SUCCESS;
}

GP_API gp_status_t gp_comm_size(gp_comm_t comm, int *size) {
  GP__CHECK_NOT_NULL(size);
  GP__COMM_REF gp_comm_t held = NULL;
  GP__TRY(check_comm(comm, __func__));
  held = comm;
  *size = comm->nranks;
  return GP_SUCCESS;
}

GP_API gp_status_t gp_comm_device(gp_comm_t comm, int *device) {
  GP__CHECK_NOT_NULL(device);
  GP__COMM_REF gp_comm_t held = NULL;
  GP__TRY(check_comm(comm, __func__));
  held = comm;
  *device = comm->device;
  return GP_SUCCESS;
}

GP_API gp_status_t gp_comm_get_async_error(gp_comm_t comm, gp_status_t *status) {
  GP__CHECK_NOT_NULL(status);
  GP__COMM_REF gp_comm_t held = NULL;
  GP__TRY(check_comm(comm, __func__));
  held = comm;
  if (comm->be->poll) comm->be->poll(comm);
  *status = gp__comm_status(comm, __func__);
  return GP_SUCCESS;
}

/* ---- the funnel ------------------------------------------------------------------------------------ */

static gp_status_t check_call_args(gp__comm_call_t *c, const char *func) {
  gp_comm_t comm = c->comm;
  if (gp_dtype_size(c->dtype) == 0)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "'dtype' (%d) is not a gp_dtype_t",
                     (int)c->dtype);
  if (gp__coll_reduces(c->coll) && (unsigned)c->op > (unsigned)GP_AVG)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "'op' (%d) is not a gp_reduce_op_t",
                     (int)c->op);
  bool p2p = c->coll == GP__COLL_SEND || c->coll == GP__COLL_RECV;
  if ((c->coll == GP__COLL_BROADCAST || c->coll == GP__COLL_REDUCE || p2p) &&
      (c->root < 0 || c->root >= comm->nranks))
    return gp__error(GP_ERROR_INVALID_VALUE, func, "'%s' is %d; ranks are 0..%d",
                     p2p ? "peer" : "root", c->root, comm->nranks - 1);
  size_t es = gp_dtype_size(c->dtype), se = 0, re = 0, t;
  if (__builtin_mul_overflow(c->count, (size_t)comm->nranks * es, &t) || t > (size_t)PTRDIFF_MAX)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "count %zu x %d ranks x %zu bytes overflows",
                     c->count, comm->nranks, es);
  gp__comm_call_extents(c, comm->nranks, &se, &re);
  if (se > 0 && c->send == NULL)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "'%s' is NULL with %zu elements to read",
                     c->coll == GP__COLL_SEND ? "buf" : "send", se);
  if (re > 0 && c->recv == NULL)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "'%s' is NULL with %zu elements to write",
                     c->coll == GP__COLL_RECV ? "buf" : "recv", re);
  GP__TRY(gp__api_check_device_range(func, c->coll == GP__COLL_SEND ? "buf" : "send", c->send, se * es));
  GP__TRY(gp__api_check_device_range(func, c->coll == GP__COLL_RECV ? "buf" : "recv", c->recv, re * es));
  gp_status_t cs = gp__comm_status(comm, func);
  if (cs != GP_SUCCESS && cs != GP_ERROR_NOT_READY) return cs;
  if (comm->be->check) GP__TRY(comm->be->check(c, func));
  return GP_SUCCESS;
}

/* Checks a packed call and takes the references it holds until it is enqueued (its
 * communicator and its stream: call_put); on failure it holds none. */
static gp_status_t check_call(gp__comm_call_t *c, gp_stream_t stream, const char *func) {
  GP__TRY(gp__api_init(func));
  GP__TRY(check_comm(c->comm, func));
  c->stream = NULL;
  gp_status_t st = gp__stream_resolve(stream, func, &c->stream);
  if (st == GP_SUCCESS) st = check_call_args(c, func);
  if (st != GP_SUCCESS) call_put(c);
  return st;
}

static void log_call(const gp__comm_call_t *c, const char *func) {
  if (!gp__log_enabled(GP__LOG_INFO, GP__SUB_COMM)) return;
  char extra[64] = "";
  if (gp__coll_reduces(c->coll)) snprintf(extra, sizeof extra, " %s", gp__reduce_op_name(c->op));
  if (c->coll == GP__COLL_BROADCAST || c->coll == GP__COLL_REDUCE)
    snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " root %d", c->root);
  if (c->coll == GP__COLL_SEND || c->coll == GP__COLL_RECV)
    snprintf(extra, sizeof extra, " peer %d", c->root);
  bool inplace = c->send != NULL && c->send == c->recv;
  gp__log(GP__LOG_INFO, GP__SUB_COMM,
          "%s: comm %p rank %d/%d dev %d call #%llu: count %zu %s%s send %p recv %p%s stream %p "
          "(%s%s)",
          func, (void *)c->comm, c->comm->rank, c->comm->nranks, c->comm->device,
          (unsigned long long)c->seq, c->count, gp_dtype_name(c->dtype), extra, c->send,
          (void *)c->recv, inplace ? " in place" : "", (void *)c->stream, c->comm->be->name,
          group_depth() ? ", in a group" : "");
}

/* Packs, checks, logs and enqueues (or keeps for the group) one call. */
static gp_status_t submit(gp__comm_call_t c, gp_stream_t stream, const char *func) {
  GP__TRY(check_call(&c, stream, func));
  pthread_mutex_lock(&c.comm->mu);
  c.seq = ++c.comm->seq;
  pthread_mutex_unlock(&c.comm->mu);
  log_call(&c, func);
  group_t *g = group_open();
  if (g != NULL) { /* the group keeps the call's references until it ends */
    gp_status_t st = grow((void **)&g->calls, &g->cap_calls, g->ncalls + 1, sizeof(c), func);
    if (st != GP_SUCCESS) {
      call_put(&c);
      return st;
    }
    g->calls[g->ncalls++] = c;
    return GP_SUCCESS;
  }
  gp_status_t st = c.comm->be->calls(&c, 1, false);
  call_put(&c);
  return st;
}

static gp__comm_call_t pack(gp__coll_t coll, const void *send, void *recv, size_t count,
                            gp_dtype_t dtype, gp_reduce_op_t op, int root, gp_comm_t comm) {
  gp__comm_call_t c;
  memset(&c, 0, sizeof c);
  c.coll = coll;
  c.send = send;
  c.recv = recv;
  c.count = count;
  c.dtype = dtype;
  c.op = op;
  c.root = root;
  c.comm = comm;
  return c;
}

GP_API gp_status_t gp_all_reduce(const void *send, void *recv, size_t count, gp_dtype_t dtype,
                                 gp_reduce_op_t op, gp_comm_t comm, gp_stream_t stream) {
  return submit(pack(GP__COLL_ALL_REDUCE, send, recv, count, dtype, op, 0, comm), stream, __func__);
}

GP_API gp_status_t gp_broadcast(const void *send, void *recv, size_t count, gp_dtype_t dtype,
                                int root, gp_comm_t comm, gp_stream_t stream) {
  return submit(pack(GP__COLL_BROADCAST, send, recv, count, dtype, GP_SUM, root, comm), stream,
                __func__);
}

GP_API gp_status_t gp_reduce(const void *send, void *recv, size_t count, gp_dtype_t dtype,
                             gp_reduce_op_t op, int root, gp_comm_t comm, gp_stream_t stream) {
  return submit(pack(GP__COLL_REDUCE, send, recv, count, dtype, op, root, comm), stream, __func__);
}

GP_API gp_status_t gp_all_gather(const void *send, void *recv, size_t sendcount, gp_dtype_t dtype,
                                 gp_comm_t comm, gp_stream_t stream) {
  return submit(pack(GP__COLL_ALL_GATHER, send, recv, sendcount, dtype, GP_SUM, 0, comm), stream,
                __func__);
}

GP_API gp_status_t gp_reduce_scatter(const void *send, void *recv, size_t recvcount,
                                     gp_dtype_t dtype, gp_reduce_op_t op, gp_comm_t comm,
                                     gp_stream_t stream) {
  return submit(pack(GP__COLL_REDUCE_SCATTER, send, recv, recvcount, dtype, op, 0, comm), stream,
                __func__);
}

GP_API gp_status_t gp_all_to_all(const void *send, void *recv, size_t count_per_peer,
                                 gp_dtype_t dtype, gp_comm_t comm, gp_stream_t stream) {
  return submit(pack(GP__COLL_ALL_TO_ALL, send, recv, count_per_peer, dtype, GP_SUM, 0, comm),
                stream, __func__);
}

GP_API gp_status_t gp_send(const void *buf, size_t count, gp_dtype_t dtype, int peer,
                           gp_comm_t comm, gp_stream_t stream) {
  return submit(pack(GP__COLL_SEND, buf, NULL, count, dtype, GP_SUM, peer, comm), stream, __func__);
}

GP_API gp_status_t gp_recv(void *buf, size_t count, gp_dtype_t dtype, int peer, gp_comm_t comm,
                           gp_stream_t stream) {
  return submit(pack(GP__COLL_RECV, NULL, buf, count, dtype, GP_SUM, peer, comm), stream, __func__);
}
