/*
 * nccl.c - collectives on the cuda and hip backends: the API of gpuport/comm.h mapped
 * onto NCCL / RCCL, loaded with dlopen at the first communicator (docs/design/COMM.md
 * "NCCL and RCCL").
 *
 * Loading: GP_NCCL_LIBRARY, else libnccl.so.2 / librccl.so.1 (the versioned names: the
 * unversioned ones come only with -dev packages). ncclGetVersion is resolved and checked
 * first (major 2, at least 2.14: non-blocking communicators and ncclConfig_t); then the
 * symbols every version has; newer ones only when the version has them (ncclCommSplit
 * 2.18, ncclAlltoAll 2.28, RCCL's ncclAllToAll), else the documented fallback or
 * GP_ERROR_NOT_SUPPORTED naming the version. A missing library is GP_ERROR_NOT_SUPPORTED
 * naming it, at the first communicator only: single-GPU programs never load it.
 *
 * Never a silent hang (docs/design/COMM.md "Never a silent hang"): every communicator is
 * non-blocking (config.blocking = 0) and gpuport polls ncclCommGetAsyncError against a
 * deadline wherever it waits: initialisation, the ncclInProgress of an enqueue or a
 * group, and every call that waits on a stream holding a collective (gp__nccl_wait,
 * called by the backend's synchronising functions). After each collective an event is
 * recorded on its stream, so a wait knows which collectives are still running; the
 * oldest one's deadline is the communicator's timeout after it became the oldest. A
 * failed or late communicator is aborted, with ncclCommAbort on a thread of its own that
 * is waited for at most min(timeout, 10 s), since abort itself can hang. No NCCL call is
 * made from an atexit handler.
 *
 * Vendor-neutral: the runtime is reached through gp__nccl_hooks_t (nccl.h), so the cpu
 * build's test links this file's object, with fake hooks, against a mock libnccl.so.2
 * (test/test_comm_nccl.c; the seam at the end of this file).
 */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm.h"
#include "gpu/nccl.h"
#include "gpu/nccl_abi.h"

#define NCCL_MIN_VERSION GP__NCCL_VERSION(2, 14, 0)
#define ABORT_WAIT_MAX_S 10.0

static const gp__nccl_hooks_t *H;

/* ---- the library ------------------------------------------------------------------------ */

static struct {
  pthread_mutex_t mu;
  bool tried;
  gp_status_t st;
  char msg[600];
  void *handle;
  int version, major, minor, patch;
  gp__ncclGetVersion_fn get_version;
  gp__ncclGetUniqueId_fn get_unique_id;
  gp__ncclCommInitRankConfig_fn init_rank_config;
  gp__ncclComm_fn finalize, destroy, abort;
  gp__ncclCommGetAsyncError_fn async_error;
  gp__ncclCommInt_fn count, user_rank;
  gp__ncclCommSplit_fn split;           /* 2.18+ */
  gp__ncclGetErrorString_fn error_string;
  gp__ncclGetLastError_fn last_error;   /* 2.13+, optional */
  gp__ncclGroup_fn group_start, group_end;
  gp__ncclAllReduce_fn all_reduce;
  gp__ncclBroadcast_fn broadcast;
  gp__ncclReduce_fn reduce;
  gp__ncclAllGather_fn all_gather;
  gp__ncclReduceScatter_fn reduce_scatter;
  gp__ncclAlltoAll_fn all_to_all;       /* NCCL 2.28+ ncclAlltoAll, RCCL ncclAllToAll */
  const char *all_to_all_name;
  gp__ncclSend_fn send;
  gp__ncclRecv_fn recv;
} L = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *sym(const char *name) {
  void *p = dlsym(L.handle, name);
  return p;
}

/* POSIX: a dlsym'ed object pointer converts to the function pointer it is. */
#define RESOLVE(field, name)                                                                \
  do {                                                                                      \
    void *p_ = sym(name);                                                                   \
    if (p_ == NULL) return missing(path, name);                                              \
    memcpy(&L.field, &p_, sizeof p_);                                                       \
  } while (0)
#define RESOLVE_OPTIONAL(field, name)                                                       \
  do {                                                                                      \
    void *p_ = sym(name);                                                                   \
    memcpy(&L.field, &p_, sizeof p_);                                                       \
  } while (0)

static gp_status_t missing(const char *path, const char *name) {
  L.st = GP_ERROR_NOT_SUPPORTED;
  snprintf(L.msg, sizeof L.msg, "%s (%s %d.%d.%d) has no %s: not a usable %s library", path,
           H->vendor, L.major, L.minor, L.patch, name, H->vendor);
  return L.st;
}

static gp_status_t load_locked(void) {
  const char *env = getenv("GP_NCCL_LIBRARY");
  const char *path = env && *env ? env : H->library;
  L.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (L.handle == NULL) {
    const char *why = dlerror();
    L.st = GP_ERROR_NOT_SUPPORTED;
    snprintf(L.msg, sizeof L.msg,
             "cannot load %s (%s): collectives on the %s backend need %s 2.14 or later; install it "
             "(NVIDIA's NCCL packages, pip's nvidia-nccl-cu12/cu13, ROCm's rccl) or name the file "
             "in GP_NCCL_LIBRARY. Programs that make no communicator do not need it",
             path, why ? why : "not found", gp_backend_name(), H->vendor);
    return L.st;
  }
  void *gv = sym("ncclGetVersion");
  if (gv == NULL) return missing(path, "ncclGetVersion");
  memcpy(&L.get_version, &gv, sizeof gv);
  /* The version first: no other symbol is looked at in a library we cannot use. */
  int v = 0;
  if (L.get_version(&v) != gp__ncclSuccess || v <= 0) {
    L.st = GP_ERROR_NOT_SUPPORTED;
    snprintf(L.msg, sizeof L.msg, "%s: ncclGetVersion failed", path);
    return L.st;
  }
  L.version = v;
  if (v >= 10000) L.major = v / 10000, L.minor = v % 10000 / 100, L.patch = v % 100;
  else L.major = v / 1000, L.minor = v % 1000 / 100, L.patch = v % 100;
  if (L.major != 2 || v < NCCL_MIN_VERSION) {
    L.st = GP_ERROR_NOT_SUPPORTED;
    snprintf(L.msg, sizeof L.msg,
             "%s is %s %d.%d.%d; gpuport needs %s 2.14 or later within major version 2 "
             "(non-blocking communicators)",
             path, H->vendor, L.major, L.minor, L.patch, H->vendor);
    return L.st;
  }
  RESOLVE(get_unique_id, "ncclGetUniqueId");
  RESOLVE(init_rank_config, "ncclCommInitRankConfig");
  RESOLVE(finalize, "ncclCommFinalize");
  RESOLVE(destroy, "ncclCommDestroy");
  RESOLVE(abort, "ncclCommAbort");
  RESOLVE(async_error, "ncclCommGetAsyncError");
  RESOLVE(count, "ncclCommCount");
  RESOLVE(user_rank, "ncclCommUserRank");
  RESOLVE(error_string, "ncclGetErrorString");
  RESOLVE(group_start, "ncclGroupStart");
  RESOLVE(group_end, "ncclGroupEnd");
  RESOLVE(all_reduce, "ncclAllReduce");
  RESOLVE(broadcast, "ncclBroadcast");
  RESOLVE(reduce, "ncclReduce");
  RESOLVE(all_gather, "ncclAllGather");
  RESOLVE(reduce_scatter, "ncclReduceScatter");
  RESOLVE(send, "ncclSend");
  RESOLVE(recv, "ncclRecv");
  RESOLVE_OPTIONAL(last_error, "ncclGetLastError");
  if (v >= GP__NCCL_VERSION(2, 18, 0)) RESOLVE_OPTIONAL(split, "ncclCommSplit");
  L.all_to_all_name = H->rccl ? "ncclAllToAll" : "ncclAlltoAll";
  if (H->rccl || v >= GP__NCCL_VERSION(2, 28, 0)) RESOLVE_OPTIONAL(all_to_all, L.all_to_all_name);
  L.st = GP_SUCCESS;
  GP__INFO(GP__SUB_COMM, "loaded %s (%s %d.%d.%d)%s%s", path, H->vendor, L.major, L.minor,
           L.patch, L.split ? "" : ", no ncclCommSplit", L.all_to_all ? "" : ", all-to-all as send/recv");
  return GP_SUCCESS;
}

static gp_status_t load(const char *func) {
  pthread_mutex_lock(&L.mu);
  if (!L.tried) {
    L.tried = true;
    (void)load_locked();
  }
  gp_status_t st = L.st;
  pthread_mutex_unlock(&L.mu);
  if (st != GP_SUCCESS) return gp__error(st, func, "%s", L.msg);
  return GP_SUCCESS;
}

/* ---- communicators ----------------------------------------------------------------------- */

typedef struct pend {
  void *event;
  void *stream;
  double t; /* enqueued */
} pend_t;

typedef struct ncomm {
  gp_comm_t base;
  gp__ncclComm_t nc;
  bool dead;       /* aborted: nc is gone */
  pend_t *pend;    /* collectives possibly still running, oldest first */
  size_t npend, cap;
  void **pool;     /* idle events */
  size_t npool, cappool;
  double progress; /* last time an oldest collective was seen complete */
  struct ncomm *prev, *next;
} ncomm_t;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* the live list and pending lists */
static ncomm_t *g_live;
static atomic_int g_npending;

static void link_comm(ncomm_t *c) {
  pthread_mutex_lock(&g_mu);
  c->next = g_live;
  if (g_live) g_live->prev = c;
  g_live = c;
  pthread_mutex_unlock(&g_mu);
}

static void drop_pending_locked(ncomm_t *c) {
  for (size_t i = 0; i < c->npend; i++) H->event_destroy(c->pend[i].event);
  atomic_fetch_sub(&g_npending, (int)c->npend);
  c->npend = 0;
}

static void unlink_free(ncomm_t *c) {
  pthread_mutex_lock(&g_mu);
  if (c->prev || c->next || g_live == c) {
    if (c->prev) c->prev->next = c->next; else g_live = c->next;
    if (c->next) c->next->prev = c->prev;
  }
  drop_pending_locked(c);
  pthread_mutex_unlock(&g_mu);
  for (size_t i = 0; i < c->npool; i++) H->event_destroy(c->pool[i]);
  free(c->pool);
  free(c->pend);
  free(c);
}

static gp_status_t map_result(gp__ncclResult_t r) {
  switch (r) {
    case gp__ncclSuccess: return GP_SUCCESS;
    case gp__ncclInvalidArgument: case gp__ncclInvalidUsage: return GP_ERROR_INVALID_VALUE;
    case gp__ncclInProgress: return GP_ERROR_NOT_READY;
    case gp__ncclTimeout: return GP_ERROR_TIMEOUT;
    case gp__ncclUnhandledCudaError: case gp__ncclInternalError: return GP_ERROR_BACKEND;
    default: return GP_ERROR_COMM; /* system and remote errors: the clique is broken */
  }
}

/* The message of a failed NCCL call: its result's name and ncclGetLastError's text. */
static void describe(char *buf, size_t len, gp__ncclResult_t r, const char *call, gp__ncclComm_t nc) {
  const char *last = L.last_error ? L.last_error(nc) : NULL;
  snprintf(buf, len, "%s failed: %s (%s %d)%s%s", call, L.error_string ? L.error_string(r) : "?",
           H->vendor, (int)r, last && *last ? ": " : "", last && *last ? last : "");
}

static gp_status_t nccl_fail(ncomm_t *c, gp__ncclResult_t r, const char *func, const char *call) {
  char text[480];
  describe(text, sizeof text, r, call, c ? c->nc : NULL);
  gp_status_t st = map_result(r);
  if (c && (st == GP_ERROR_COMM || st == GP_ERROR_TIMEOUT || st == GP_ERROR_BACKEND))
    return gp__comm_fail(c->base, st, func, "%s", text);
  return gp__error(st, func, "%s", text);
}

static void nap(double *backoff) {
  struct timespec ts = {0, (long)(*backoff * 1e9)};
  nanosleep(&ts, NULL);
  *backoff = *backoff * 2 > 1e-3 ? 1e-3 : *backoff * 2;
}

typedef struct abort_job {
  gp__ncclComm_t nc;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  int refs;
} abort_job_t;

static void abort_job_unref(abort_job_t *j) {
  pthread_mutex_lock(&j->mu);
  bool last = --j->refs == 0;
  pthread_mutex_unlock(&j->mu);
  if (!last) return;
  pthread_mutex_destroy(&j->mu);
  pthread_cond_destroy(&j->cv);
  free(j);
}

static void *abort_main(void *p) {
  abort_job_t *j = p;
  (void)L.abort(j->nc);
  pthread_mutex_lock(&j->mu);
  j->done = true;
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
  abort_job_unref(j);
  return NULL;
}

/* ncclCommAbort, waited for at most min(timeout, 10 s): true when it returned. The
 * communicator is dead either way. */
static bool abort_native(ncomm_t *c) {
  if (c->dead || c->nc == NULL) {
    c->dead = true;
    return true;
  }
  c->dead = true;
  pthread_mutex_lock(&g_mu);
  drop_pending_locked(c);
  pthread_mutex_unlock(&g_mu);
  abort_job_t *j = calloc(1, sizeof(*j));
  if (j == NULL) {
    (void)L.abort(c->nc);
    return true;
  }
  j->nc = c->nc;
  j->refs = 2;
  pthread_mutex_init(&j->mu, NULL);
  pthread_cond_init(&j->cv, NULL);
  pthread_t t;
  if (pthread_create(&t, NULL, abort_main, j) != 0) {
    j->refs = 1;
    abort_job_unref(j);
    (void)L.abort(c->nc);
    return true;
  }
  pthread_detach(t);
  double limit = c->base->timeout_s < ABORT_WAIT_MAX_S ? c->base->timeout_s : ABORT_WAIT_MAX_S;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  double end = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + limit;
  ts.tv_sec = (time_t)end;
  ts.tv_nsec = (long)((end - (double)ts.tv_sec) * 1e9);
  pthread_mutex_lock(&j->mu);
  while (!j->done && pthread_cond_timedwait(&j->cv, &j->mu, &ts) == 0) {
  }
  bool done = j->done;
  pthread_mutex_unlock(&j->mu);
  abort_job_unref(j);
  if (!done)
    GP__WARN(GP__SUB_COMM, "ncclCommAbort of rank %d did not return within %.3g s: left running",
             c->base->rank, limit);
  return done;
}

/* Polls until the communicator is out of ncclInProgress, or its deadline: an error or a
 * timeout aborts it. */
static gp_status_t settle(ncomm_t *c, double deadline, const char *func, const char *what) {
  double backoff = 10e-6;
  for (;;) {
    gp__ncclResult_t e = gp__ncclSuccess;
    gp__ncclResult_t r = L.async_error(c->nc, &e);
    if (r != gp__ncclSuccess) e = r;
    if (e == gp__ncclSuccess) return GP_SUCCESS;
    if (e != gp__ncclInProgress) {
      gp_status_t st = nccl_fail(c, e, func, what);
      abort_native(c);
      return st;
    }
    if (gp__comm_now() >= deadline) {
      gp_status_t st = gp__comm_fail(c->base, GP_ERROR_TIMEOUT, func,
                                     "%s still in progress after %.3g s (the communicator's timeout): "
                                     "a peer has not joined; the communicator is aborted",
                                     what, c->base->timeout_s);
      abort_native(c);
      return st;
    }
    nap(&backoff);
  }
}

static ncomm_t *ncomm_new(gp_comm_t base) {
  ncomm_t *c = calloc(1, sizeof(*c));
  if (c == NULL) return NULL;
  c->base = base;
  base->impl = c;
  return c;
}

static gp__ncclConfig_t config(void) {
  gp__ncclConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.size = sizeof cfg;
  cfg.magic = GP__NCCL_CONFIG_MAGIC;
  cfg.version = (unsigned)GP__NCCL_VERSION(2, 14, 0);
  cfg.blocking = 0; /* every wait is gpuport's, so it can time out */
  cfg.cgaClusterSize = GP__NCCL_CONFIG_UNDEF_INT;
  cfg.minCTAs = GP__NCCL_CONFIG_UNDEF_INT;
  cfg.maxCTAs = GP__NCCL_CONFIG_UNDEF_INT;
  cfg.netName = NULL;
  return cfg;
}

static gp_status_t nccl_unique_id(gp_comm_id_t *id) {
  GP__TRY(load("gp_comm_get_unique_id"));
  gp__ncclUniqueId u;
  gp__ncclResult_t r = L.get_unique_id(&u);
  if (r != gp__ncclSuccess) return nccl_fail(NULL, r, "gp_comm_get_unique_id", "ncclGetUniqueId");
  memcpy(id->internal, u.internal, sizeof u.internal);
  return GP_SUCCESS;
}

static gp_status_t nccl_init(gp__comm_init_t *inits, size_t n, bool all_local) {
  const char *func = all_local ? "gp_comm_init_all" : "gp_comm_init_rank";
  gp_status_t first = load(func);
  if (first != GP_SUCCESS) {
    for (size_t i = 0; i < n; i++) inits[i].st = first;
    return first;
  }
  gp__ncclConfig_t cfg = config();
  int saved = gp__current_device();
  bool group = n > 1;
  if (group) (void)L.group_start();
  for (size_t i = 0; i < n; i++) {
    gp_comm_t b = inits[i].comm;
    inits[i].st = GP_SUCCESS;
    ncomm_t *c = ncomm_new(b);
    if (c == NULL) {
      inits[i].st = gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory");
      continue;
    }
    gp_status_t s = H->set_device(b->device);
    gp__ncclUniqueId u;
    memcpy(u.internal, inits[i].id.internal, sizeof u.internal);
    gp__ncclResult_t r = s ? gp__ncclSuccess : L.init_rank_config(&c->nc, b->nranks, u, b->rank, &cfg);
    if (s == GP_SUCCESS && r != gp__ncclSuccess && r != gp__ncclInProgress)
      s = nccl_fail(NULL, r, func, "ncclCommInitRankConfig");
    inits[i].st = s;
  }
  if (group) {
    gp__ncclResult_t r = L.group_end();
    if (r != gp__ncclSuccess && r != gp__ncclInProgress) {
      gp_status_t s = nccl_fail(NULL, r, func, "ncclGroupEnd");
      for (size_t i = 0; i < n; i++)
        if (inits[i].st == GP_SUCCESS) inits[i].st = s;
    }
  }
  (void)H->set_device(saved);
  for (size_t i = 0; i < n; i++) {
    gp_comm_t b = inits[i].comm;
    ncomm_t *c = b->impl;
    if (inits[i].st == GP_SUCCESS) {
      link_comm(c);
      if (b->blocking || all_local)
        inits[i].st = settle(c, gp__comm_now() + b->timeout_s, func, "ncclCommInitRankConfig");
      else
        gp__comm_set_status(b, GP_ERROR_NOT_READY); /* resolved by gp_comm_get_async_error */
    }
    if (inits[i].st != GP_SUCCESS && first == GP_SUCCESS)
      first = gp__error(inits[i].st, func, "%s", gp_last_error_message());
    if (inits[i].st != GP_SUCCESS && c) {
      if (c->nc && !c->dead) abort_native(c);
      unlink_free(c);
      b->impl = NULL;
    }
  }
  return first;
}

static void nccl_poll(gp_comm_t base) {
  ncomm_t *c = base->impl;
  if (c->dead) return;
  gp__ncclResult_t e = gp__ncclSuccess;
  gp__ncclResult_t r = L.async_error(c->nc, &e);
  if (r != gp__ncclSuccess) e = r;
  if (e == gp__ncclSuccess) gp__comm_set_status(base, GP_SUCCESS);
  else if (e != gp__ncclInProgress) {
    char text[480];
    describe(text, sizeof text, e, "the communicator", c->nc);
    gp__comm_record(base, map_result(e), text);
  }
}

/* ---- calls ------------------------------------------------------------------------------------ */

static bool reduction_type_ok(gp_dtype_t t) {
  if (t != GP_FP8_E4M3 && t != GP_FP8_E5M2) return true;
  return !H->rccl && L.version >= GP__NCCL_VERSION(2, 24, 0);
}

static gp__ncclDataType_t map_dtype(gp_dtype_t t, bool reduces) {
  switch (t) {
    case GP_I8: return gp__ncclInt8;
    case GP_U8: return gp__ncclUint8;
    case GP_I32: return gp__ncclInt32;
    case GP_U32: return gp__ncclUint32;
    case GP_I64: return gp__ncclInt64;
    case GP_U64: return gp__ncclUint64;
    case GP_F16: return gp__ncclFloat16;
    case GP_F32: return gp__ncclFloat32;
    case GP_F64: return gp__ncclFloat64;
    case GP_BF16: return gp__ncclBfloat16;
    /* Moving fp8 is moving bytes; reducing it needs NCCL's own fp8 (2.24+). */
    case GP_FP8_E4M3: return reduces ? gp__ncclFloat8e4m3 : gp__ncclUint8;
    case GP_FP8_E5M2: return reduces ? gp__ncclFloat8e5m2 : gp__ncclUint8;
    default: return gp__ncclUint8;
  }
}

static gp__ncclRedOp_t map_op(gp_reduce_op_t op) {
  switch (op) {
    case GP_PROD: return gp__ncclProd;
    case GP_MAX: return gp__ncclMax;
    case GP_MIN: return gp__ncclMin;
    case GP_AVG: return gp__ncclAvg;
    default: return gp__ncclSum;
  }
}

static gp_status_t nccl_check(const gp__comm_call_t *c, const char *func) {
  int dev = H->stream_device(c->stream);
  if (dev != c->comm->device)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'stream' feeds device %d but the communicator (rank %d) is on device %d: "
                     "pass a stream of device %d (or make it current for the default stream)",
                     dev, c->comm->rank, c->comm->device, c->comm->device);
  if (gp__coll_reduces(c->coll) && !reduction_type_ok(c->dtype)) {
    if (H->rccl)
      return gp__error(GP_ERROR_NOT_SUPPORTED, func,
                       "%s reductions: RCCL's fp8 is the FNUZ encoding, not gpuport's OCP one",
                       gp_dtype_name(c->dtype));
    return gp__error(GP_ERROR_NOT_SUPPORTED, func,
                     "%s reductions need NCCL 2.24 or later (this is %d.%d.%d) and sm_90",
                     gp_dtype_name(c->dtype), L.major, L.minor, L.patch);
  }
  if (c->coll == GP__COLL_ALL_TO_ALL && c->send == c->recv && c->count > 0)
    return gp__error(GP_ERROR_NOT_SUPPORTED, func,
                     "in-place all-to-all: %s defines none (use separate buffers)", H->vendor);
  return GP_SUCCESS;
}

static gp__ncclResult_t issue(const gp__comm_call_t *c, const char **name) {
  ncomm_t *nc = c->comm->impl;
  void *s = H->native_stream(c->stream);
  bool red = gp__coll_reduces(c->coll);
  gp__ncclDataType_t t = map_dtype(c->dtype, red);
  size_t es = gp_dtype_size(c->dtype), k = c->count;
  switch (c->coll) {
    case GP__COLL_ALL_REDUCE:
      *name = "ncclAllReduce";
      return L.all_reduce(c->send, c->recv, k, t, map_op(c->op), nc->nc, s);
    case GP__COLL_BROADCAST:
      *name = "ncclBroadcast";
      return L.broadcast(c->send, c->recv, k, t, c->root, nc->nc, s);
    case GP__COLL_REDUCE:
      *name = "ncclReduce";
      return L.reduce(c->send, c->recv, k, t, map_op(c->op), c->root, nc->nc, s);
    case GP__COLL_ALL_GATHER:
      *name = "ncclAllGather";
      return L.all_gather(c->send, c->recv, k, t, nc->nc, s);
    case GP__COLL_REDUCE_SCATTER:
      *name = "ncclReduceScatter";
      return L.reduce_scatter(c->send, c->recv, k, t, map_op(c->op), nc->nc, s);
    case GP__COLL_ALL_TO_ALL:
      if (L.all_to_all) {
        *name = L.all_to_all_name;
        return L.all_to_all(c->send, c->recv, k, t, nc->nc, s);
      }
      /* As NCCL's own documentation writes it: a group of sends and receives. */
      *name = "ncclSend/ncclRecv (all-to-all)";
      for (int p = 0; p < c->comm->nranks; p++) {
        gp__ncclResult_t r = L.send((const char *)c->send + (size_t)p * k * es, k, t, p, nc->nc, s);
        if (r == gp__ncclSuccess || r == gp__ncclInProgress)
          r = L.recv((char *)c->recv + (size_t)p * k * es, k, t, p, nc->nc, s);
        if (r != gp__ncclSuccess && r != gp__ncclInProgress) return r;
      }
      return gp__ncclSuccess;
    case GP__COLL_SEND:
      *name = "ncclSend";
      return L.send(c->send, k, t, c->root, nc->nc, s);
    case GP__COLL_RECV:
      *name = "ncclRecv";
      return L.recv(c->recv, k, t, c->root, nc->nc, s);
    default:
      *name = "?";
      return gp__ncclInvalidArgument;
  }
}

/* Records an event after a comm's collectives on a stream, so waits know when they end. */
static void track(ncomm_t *c, void *stream) {
  pthread_mutex_lock(&g_mu);
  /* Reap what completed, so the list stays short when nobody waits through gpuport. */
  size_t done = 0;
  while (done < c->npend && H->event_query(c->pend[done].event) != 0) done++;
  if (done) {
    for (size_t i = 0; i < done; i++) {
      if (c->npool == c->cappool) {
        size_t nc = c->cappool ? 2 * c->cappool : 8;
        void **p = realloc(c->pool, nc * sizeof(*p));
        if (p == NULL) {
          H->event_destroy(c->pend[i].event);
          continue;
        }
        c->pool = p, c->cappool = nc;
      }
      c->pool[c->npool++] = c->pend[i].event;
    }
    memmove(c->pend, c->pend + done, (c->npend - done) * sizeof(*c->pend));
    c->npend -= done;
    atomic_fetch_sub(&g_npending, (int)done);
    c->progress = gp__comm_now();
  }
  void *ev = c->npool ? c->pool[--c->npool] : NULL;
  pthread_mutex_unlock(&g_mu);
  if (ev == NULL && H->event_create(&ev) != GP_SUCCESS) return; /* untracked: no deadline */
  if (H->event_record(ev, stream) != GP_SUCCESS) {
    H->event_destroy(ev);
    return;
  }
  pthread_mutex_lock(&g_mu);
  if (c->npend == c->cap) {
    size_t nc = c->cap ? 2 * c->cap : 8;
    pend_t *p = realloc(c->pend, nc * sizeof(*p));
    if (p == NULL) {
      pthread_mutex_unlock(&g_mu);
      H->event_destroy(ev);
      return;
    }
    c->pend = p, c->cap = nc;
  }
  c->pend[c->npend++] = (pend_t){ev, stream, gp__comm_now()};
  atomic_fetch_add(&g_npending, 1);
  pthread_mutex_unlock(&g_mu);
}

static gp_status_t nccl_calls(const gp__comm_call_t *calls, size_t n, bool grouped) {
  const char *func = grouped ? "gp_group_end" : gp__coll_public_name(calls[0].coll);
  bool group = grouped || n > 1;
  for (size_t i = 0; i < n; i++) {
    ncomm_t *c = calls[i].comm->impl;
    if (c->dead) return gp__comm_status(c->base, func);
    if (calls[i].coll == GP__COLL_ALL_TO_ALL && !L.all_to_all) group = true;
    /* A non-blocking communicator still joining: NCCL takes no call before it is ready. */
    pthread_mutex_lock(&c->base->mu);
    bool joining = c->base->status == GP_ERROR_NOT_READY;
    pthread_mutex_unlock(&c->base->mu);
    if (joining) {
      GP__TRY(settle(c, gp__comm_now() + c->base->timeout_s, func, "ncclCommInitRankConfig"));
      gp__comm_set_status(c->base, GP_SUCCESS);
    }
  }
  gp_status_t st = GP_SUCCESS;
  if (group) (void)L.group_start();
  size_t issued = 0;
  for (; issued < n && st == GP_SUCCESS; issued++) {
    const char *name = "";
    gp__ncclResult_t r = issue(&calls[issued], &name);
    if (r != gp__ncclSuccess && r != gp__ncclInProgress)
      st = nccl_fail(calls[issued].comm->impl, r, func, name);
    else if (r == gp__ncclInProgress && !group)
      st = settle(calls[issued].comm->impl, gp__comm_now() + calls[issued].comm->timeout_s, func, name);
  }
  if (group) {
    gp__ncclResult_t r = L.group_end();
    if (r != gp__ncclSuccess && r != gp__ncclInProgress && st == GP_SUCCESS)
      st = nccl_fail(calls[0].comm->impl, r, func, "ncclGroupEnd");
    for (size_t i = 0; i < n && st == GP_SUCCESS && r == gp__ncclInProgress; i++) {
      bool seen = false;
      for (size_t j = 0; j < i && !seen; j++) seen = calls[j].comm == calls[i].comm;
      if (!seen)
        st = settle(calls[i].comm->impl, gp__comm_now() + calls[i].comm->timeout_s, func, "ncclGroupEnd");
    }
  }
  /* One event per (communicator, stream) the calls touched. */
  for (size_t i = 0; i < issued; i++) {
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++)
      seen = calls[j].comm == calls[i].comm && calls[j].stream == calls[i].stream;
    ncomm_t *c = calls[i].comm->impl;
    if (!seen && !c->dead) track(c, H->native_stream(calls[i].stream));
  }
  return st;
}

/* ---- the health-checked wait --------------------------------------------------------------------- */

/* Waits for the collectives of only (NULL: every communicator of device) on stream (NULL:
 * any stream). */
static gp_status_t wait_impl(ncomm_t *only, void *stream, int device, const char *func) {
  if (atomic_load(&g_npending) == 0) return GP_SUCCESS;
  double backoff = 20e-6;
  for (;;) {
    bool waiting = false;
    ncomm_t *bad = NULL;
    gp__ncclResult_t bad_r = gp__ncclSuccess;
    double now = gp__comm_now(), late = 0;
    pthread_mutex_lock(&g_mu);
    for (ncomm_t *c = g_live; c && !bad; c = c->next) {
      if (c->dead || (only && c != only) || c->base->device != device || c->npend == 0) continue;
      size_t done = 0;
      while (done < c->npend && H->event_query(c->pend[done].event) != 0) done++;
      if (done) {
        for (size_t i = 0; i < done; i++) H->event_destroy(c->pend[i].event);
        memmove(c->pend, c->pend + done, (c->npend - done) * sizeof(*c->pend));
        c->npend -= done;
        atomic_fetch_sub(&g_npending, (int)done);
        c->progress = now;
      }
      bool mine = false;
      for (size_t i = 0; i < c->npend && !mine; i++) mine = stream == NULL || c->pend[i].stream == stream;
      if (!mine) continue;
      waiting = true;
      gp__ncclResult_t e = gp__ncclSuccess;
      gp__ncclResult_t r = L.async_error(c->nc, &e);
      if (r != gp__ncclSuccess) e = r;
      if (e != gp__ncclSuccess && e != gp__ncclInProgress) {
        bad = c, bad_r = e;
        break;
      }
      double since = c->pend[0].t > c->progress ? c->pend[0].t : c->progress;
      if (now - since > c->base->timeout_s) {
        bad = c, late = now - since;
        break;
      }
    }
    pthread_mutex_unlock(&g_mu);
    if (bad) {
      gp_status_t st;
      if (bad_r != gp__ncclSuccess) {
        char text[480];
        describe(text, sizeof text, bad_r, "a collective", bad->nc);
        st = gp__comm_fail(bad->base, map_result(bad_r) == GP_ERROR_NOT_READY ? GP_ERROR_COMM : map_result(bad_r),
                           func, "rank %d of %d: %s; the communicator is aborted", bad->base->rank,
                           bad->base->nranks, text);
      } else {
        st = gp__comm_fail(bad->base, GP_ERROR_TIMEOUT, func,
                           "rank %d of %d: a collective has not completed after %.3g s (the "
                           "communicator's timeout: GP_COMM_TIMEOUT_S or gp_comm_config_t.timeout_s); "
                           "a peer is absent or stuck; the communicator is aborted",
                           bad->base->rank, bad->base->nranks, late);
      }
      abort_native(bad);
      return st;
    }
    if (!waiting) return GP_SUCCESS;
    nap(&backoff);
  }
}

gp_status_t gp__nccl_wait(void *stream, int device, const char *func) {
  return wait_impl(NULL, stream, device, func);
}

/* ---- split ------------------------------------------------------------------------------------ */

static gp_status_t nccl_split(gp__comm_split_t *sp, size_t n) {
  const char *func = "gp_comm_split";
  gp_status_t first = GP_SUCCESS;
  if (L.split == NULL) {
    first = gp__error(GP_ERROR_NOT_SUPPORTED, func,
                      "ncclCommSplit needs %s 2.18 or later; this is %d.%d.%d", H->vendor, L.major,
                      L.minor, L.patch);
    for (size_t i = 0; i < n; i++) sp[i].st = first;
    return first;
  }
  gp__ncclConfig_t cfg = config();
  if (n > 1) (void)L.group_start();
  for (size_t i = 0; i < n; i++) {
    ncomm_t *p = sp[i].parent->impl;
    sp[i].st = GP_SUCCESS;
    if (p->dead) {
      sp[i].st = gp__comm_status(sp[i].parent, func);
      continue;
    }
    ncomm_t *c = NULL;
    if (sp[i].child && (c = ncomm_new(sp[i].child)) == NULL) {
      sp[i].st = gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory");
      continue;
    }
    gp__ncclComm_t child = NULL;
    gp__ncclResult_t r = L.split(p->nc, sp[i].color == GP_COMM_SPLIT_NOCOLOR ? GP__NCCL_SPLIT_NOCOLOR : sp[i].color,
                                 sp[i].key, &child, &cfg);
    if (r != gp__ncclSuccess && r != gp__ncclInProgress) sp[i].st = nccl_fail(p, r, func, "ncclCommSplit");
    if (c) c->nc = child;
  }
  if (n > 1) {
    gp__ncclResult_t r = L.group_end();
    if (r != gp__ncclSuccess && r != gp__ncclInProgress) {
      gp_status_t s = nccl_fail(NULL, r, func, "ncclGroupEnd");
      for (size_t i = 0; i < n; i++)
        if (sp[i].st == GP_SUCCESS) sp[i].st = s;
    }
  }
  for (size_t i = 0; i < n; i++) {
    ncomm_t *c = sp[i].child ? sp[i].child->impl : NULL;
    if (sp[i].st == GP_SUCCESS) {
      ncomm_t *p = sp[i].parent->impl;
      double deadline = gp__comm_now() + sp[i].parent->timeout_s;
      sp[i].st = settle(p, deadline, func, "ncclCommSplit");
      if (sp[i].st == GP_SUCCESS && c) {
        if (c->nc == NULL) {
          sp[i].st = gp__error(GP_ERROR_COMM, func, "ncclCommSplit made no communicator");
        } else {
          link_comm(c);
          sp[i].st = settle(c, deadline, func, "ncclCommSplit");
          int rank = -1, size = 0;
          if (sp[i].st == GP_SUCCESS && (L.user_rank(c->nc, &rank) != gp__ncclSuccess ||
                                         L.count(c->nc, &size) != gp__ncclSuccess))
            sp[i].st = gp__error(GP_ERROR_COMM, func, "cannot read the new communicator's rank");
          sp[i].child->rank = rank;
          sp[i].child->nranks = size;
        }
      }
    }
    if (sp[i].st != GP_SUCCESS && first == GP_SUCCESS)
      first = gp__error(sp[i].st, func, "%s", gp_last_error_message());
    if (sp[i].st != GP_SUCCESS && c) {
      if (c->nc && !c->dead) abort_native(c);
      unlink_free(c);
      sp[i].child->impl = NULL;
    }
  }
  return first;
}

/* ---- teardown ---------------------------------------------------------------------------------- */

static gp_status_t nccl_destroy(gp_comm_t base) {
  ncomm_t *c = base->impl;
  if (!c->dead) {
    /* Flush, then free (ncclCommFinalize, ncclCommDestroy), each bounded by the timeout. */
    (void)wait_impl(c, NULL, base->device, "gp_comm_destroy");
    if (!c->dead) {
      gp__ncclResult_t r = L.finalize(c->nc);
      gp_status_t st = r == gp__ncclSuccess || r == gp__ncclInProgress
                           ? settle(c, gp__comm_now() + base->timeout_s, "gp_comm_destroy", "ncclCommFinalize")
                           : GP_ERROR_COMM;
      if (st == GP_SUCCESS) (void)L.destroy(c->nc);
      else if (!c->dead) abort_native(c);
    }
  }
  unlink_free(c);
  gp__comm_free(base);
  return GP_SUCCESS;
}

static gp_status_t nccl_abort(gp_comm_t base) {
  ncomm_t *c = base->impl;
  gp__comm_record(base, GP_ERROR_COMM, "the communicator was aborted (gp_comm_abort)");
  bool done = abort_native(c);
  double limit = base->timeout_s < ABORT_WAIT_MAX_S ? base->timeout_s : ABORT_WAIT_MAX_S;
  unlink_free(c);
  gp__comm_free(base);
  if (!done)
    return gp__error(GP_ERROR_TIMEOUT, "gp_comm_abort",
                     "ncclCommAbort did not return within %.3g s; it is left running on a thread "
                     "of its own",
                     limit);
  return GP_SUCCESS;
}

static gp__comm_backend_t g_backend = {
    .name = "nccl",
    .unique_id = nccl_unique_id,
    .init = nccl_init,
    .split = nccl_split,
    .check = nccl_check,
    .calls = nccl_calls,
    .destroy = nccl_destroy,
    .abort = nccl_abort,
    .poll = nccl_poll,
};

const gp__comm_backend_t *gp__nccl_backend(const gp__nccl_hooks_t *hooks) {
  H = hooks;
  g_backend.name = hooks->rccl ? "rccl" : "nccl";
  return &g_backend;
}

/* ---- the test seam (test/test_comm_nccl.c) ----------------------------------------------- */

void gp__nccl_forget_library(void) {
  pthread_mutex_lock(&L.mu);
  L.tried = false;
  L.st = GP_SUCCESS;
  L.version = 0;
  L.split = NULL;
  L.all_to_all = NULL;
  pthread_mutex_unlock(&L.mu);
}

int gp__nccl_library_version(void) {
  pthread_mutex_lock(&L.mu);
  int v = L.st == GP_SUCCESS ? L.version : 0;
  pthread_mutex_unlock(&L.mu);
  return v;
}

int gp__nccl_pending(void) { return atomic_load(&g_npending); }
