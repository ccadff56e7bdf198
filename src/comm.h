/*
 * comm.h - the collectives' internal interface: the communicator's common part, the
 * packed call that every collective becomes in the funnel (src/comm.c, NCCL's
 * ncclInfo), and the table each backend fills (src/cpu/comm_cpu.c: the cpu engine;
 * src/gpu/nccl.c: NCCL/RCCL). Nothing here is public.
 *
 * Flow (docs/design/COMM.md "The funnel"): public call -> gp__comm_submit(): pack,
 * check, log one INFO line -> in a group, kept on the thread's list; else
 * backend->calls() -> enqueued on the stream. gp_group_end() hands the thread's whole
 * list to the backend at once.
 */
#ifndef GP_COMM_INTERNAL_H
#define GP_COMM_INTERNAL_H

#include <pthread.h>
#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GP__COMM_MAGIC 0x436d7067u /* "gpmC" */

typedef enum gp__coll {
  GP__COLL_ALL_REDUCE = 0,
  GP__COLL_BROADCAST,
  GP__COLL_REDUCE,
  GP__COLL_ALL_GATHER,
  GP__COLL_REDUCE_SCATTER,
  GP__COLL_ALL_TO_ALL,
  GP__COLL_SEND,
  GP__COLL_RECV,
  GP__COLL_COUNT
} gp__coll_t;

/* "all_reduce", ... and "sum", ...: for messages and the log line. */
const char *gp__coll_name(gp__coll_t coll);
const char *gp__reduce_op_name(gp_reduce_op_t op);
/* The public function of a collective ("gp_all_reduce"), for messages. */
const char *gp__coll_public_name(gp__coll_t coll);
/* True for the collectives that take a reduction operator. */
bool gp__coll_reduces(gp__coll_t coll);

/* One packed call. count is the public call's count argument: elements per rank
 * (all_reduce, broadcast, reduce, send, recv), sendcount (all_gather), recvcount
 * (reduce_scatter), count_per_peer (all_to_all). root is the peer of send/recv. */
typedef struct gp__comm_call {
  gp__coll_t coll;
  const void *send;
  void *recv;
  size_t count;
  gp_dtype_t dtype;
  gp_reduce_op_t op;
  int root;
  gp_comm_t comm;
  gp_stream_t stream; /* resolved by gp__stream_resolve */
  uint64_t seq;       /* the communicator's call number, from 1 */
} gp__comm_call_t;

/* Elements of send and recv a call touches on this rank (for range checks and
 * staging): all_gather recv = size * count, and so on. */
void gp__comm_call_extents(const gp__comm_call_t *c, int nranks, size_t *send_elems,
                           size_t *recv_elems);

/* The common part of every communicator. The backend owns its lifetime from
 * init onwards: destroy/abort free it (gp__comm_free) when nothing uses it. */
struct gp_comm_s {
  uint32_t magic;
  int rank, nranks, device;
  int blocking;      /* 1 or 0, as the config */
  double timeout_s;  /* resolved: > 0 */
  const struct gp__comm_backend *be;
  void *impl;        /* the backend's state */
  uint64_t seq;      /* calls submitted (under mu) */
  pthread_mutex_t mu;
  gp_status_t status; /* GP_SUCCESS, GP_ERROR_NOT_READY (initialising) or the failure */
  char msg[400];      /* the failure's message */
  bool abort_at_fini; /* gp_comm_abort retired the handle: its finaliser aborts */
};

/* A communicator to be made: filled by the funnel, completed by the backend. */
typedef struct gp__comm_init {
  gp_comm_t comm;     /* allocated, rank/nranks/device/timeout/blocking set */
  gp_comm_id_t id;
  gp_comm_t *out;     /* the caller's pointer, written by the funnel on success */
  gp_status_t st;     /* set by the backend: this record's outcome */
} gp__comm_init_t;

/* A split to be done: parent, color, key; child allocated by the funnel unless
 * color is GP_COMM_SPLIT_NOCOLOR (then NULL). */
typedef struct gp__comm_split {
  gp_comm_t parent, child;
  int color, key;
  gp_comm_t *out;
  gp_status_t st;     /* set by the backend: this split's outcome */
} gp__comm_split_t;

typedef struct gp__comm_backend {
  const char *name;
  gp_status_t (*unique_id)(gp_comm_id_t *id);
  /* Completes n communicators at once (one gp_comm_init_rank, the ranks of
   * gp_comm_init_all, or the inits of a group), setting each record's st and returning
   * the first failure (with its message). all_local: the n records are every rank of one
   * clique (gp_comm_init_all), all made or none. A non-blocking communicator may
   * complete later, its status GP_ERROR_NOT_READY until then. A record that failed
   * keeps no backend state: the funnel frees its comm. */
  gp_status_t (*init)(gp__comm_init_t *inits, size_t n, bool all_local);
  /* Performs n splits (n > 1 only in a group: they run concurrently), setting each st
   * as init does; a failed split's child keeps no backend state. */
  gp_status_t (*split)(gp__comm_split_t *splits, size_t n);
  /* Per-call check at submission (in a group too), beyond the funnel's: e.g. the
   * stream's device. May be NULL. */
  gp_status_t (*check)(const gp__comm_call_t *call, const char *func);
  /* Enqueues n calls: one call outside a group, a group's calls (in call order) at
   * its end. */
  gp_status_t (*calls)(const gp__comm_call_t *calls, size_t n, bool grouped);
  gp_status_t (*destroy)(gp_comm_t comm); /* frees comm (now or when unused) */
  gp_status_t (*abort)(gp_comm_t comm);   /* frees comm (now or when unused) */
  /* Refreshes comm's status from the native library (NCCL's async error). May be NULL. */
  void (*poll)(gp_comm_t comm);
} gp__comm_backend_t;

/* The backend compiled in (cpu engine or NCCL/RCCL). */
extern const gp__comm_backend_t gp__comm_native_backend;
/* Tests of the NCCL mapping on the cpu build switch the funnel to another backend;
 * NULL restores the native one. Not thread-safe against concurrent comm calls. */
void gp__comm_set_backend(const gp__comm_backend_t *be);

/* ---- the common part's helpers (src/comm.c) ------------------------------------------ */

/* Records the communicator's failure (the first one stays), sets the thread's message
 * "<func>: <text>" and returns status. */
gp_status_t gp__comm_fail(gp_comm_t comm, gp_status_t status, const char *func, const char *fmt,
                          ...) GP__PRINTF(4, 5);
/* The communicator's status; when it is an error, sets the thread's message to the
 * failure's, prefixed with func. */
gp_status_t gp__comm_status(gp_comm_t comm, const char *func);
void gp__comm_set_status(gp_comm_t comm, gp_status_t status); /* ready or not ready */
/* Records a failure without touching the thread's message (for calls that succeed,
 * such as gp_comm_abort). */
void gp__comm_record(gp_comm_t comm, gp_status_t status, const char *text);
/* A new common part (not registered as a handle), status GP_SUCCESS. */
gp_comm_t gp__comm_new(int rank, int nranks, int device, int blocking, double timeout_s);
/* Registers comm as a live handle (what the funnel does when init succeeds); its
 * finaliser, run when the last call using it is done, is the backend's destroy, or
 * abort after gp_comm_abort. */
gp_status_t gp__comm_register(gp_comm_t comm);
/* Frees the common part (after the backend released impl). */
void gp__comm_free(gp_comm_t comm);
/* The timeout in effect when the config gives none: GP_COMM_TIMEOUT_S, else 300 s. */
double gp__comm_default_timeout(void);
/* CLOCK_MONOTONIC in seconds. */
double gp__comm_now(void);

#ifdef __cplusplus
}
#endif

#endif /* GP_COMM_INTERNAL_H */
