/*
 * nccl_mock.c - a mock libnccl.so.2 for test/test_comm_nccl.c (loaded through
 * GP_NCCL_LIBRARY): it answers like NCCL and records every call it receives, so CI checks
 * gpuport's mapping (argument order, dtype and operator enums, configs, groups,
 * ncclInProgress, async errors, abort and timeout paths) without a GPU.
 *
 * Its types and values are transcribed from NCCL's public nccl.h independently of
 * gpuport's src/gpu/nccl_abi.h, so a slip in either shows up as a failed test.
 *
 * Buffers are host memory here (the cpu backend's device memory); with one rank the
 * collectives really run (their one-rank results are copies), so a swapped pointer or a
 * wrong element size shows in the data. Each call is one line of a log the test reads
 * with mock_nccl_log(); mock_nccl_set() steers the answers:
 *   version           ncclGetVersion's answer (default 22803, i.e. 2.28.3)
 *   init_polls        ncclCommGetAsyncError answers ncclInProgress this many times after a
 *                     non-blocking init, split or group (default 2)
 *   async_error       the ncclResult_t every communicator reports from now on (default 0)
 *   hang              1: enqueued work never completes (until set to 0)
 *   abort_sleep_ms    ncclCommAbort sleeps this long
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>

#define EXPORT __attribute__((visibility("default")))

/* nccl.h, transcribed */
typedef enum { ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2,
               ncclInternalError = 3, ncclInvalidArgument = 4, ncclInvalidUsage = 5,
               ncclRemoteError = 6, ncclInProgress = 7 } ncclResult_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking, cgaClusterSize, minCTAs, maxCTAs;
  const char *netName;
} ncclConfig_t;
typedef void *cudaStream_t;
static const int type_size[12] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1}; /* ncclInt8 .. ncclFloat8e5m2 */

struct ncclComm {
  int nranks, rank, blocking;
  int polls_left;
};
typedef struct ncclComm *ncclComm_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char logbuf[1 << 20];
static size_t loglen;
static long knob_version = 22803, knob_polls = 2, knob_async = 0, knob_hang = 0, knob_abort_ms = 0;
static int group_depth;
static ncclComm_t group_comms[64];
static int ngroup;
EXPORT ncclComm_t mock_nccl_aborted[64]; /* aborted comms are kept (and reachable) */
static int naborted;

/* Work counted per stream: completed = enqueued unless hang. */
typedef struct { cudaStream_t s; unsigned long enq, done; } stream_count_t;
static stream_count_t streams[64];
static int nstreams;

static void logf_(const char *fmt, ...) {
  va_list ap;
  pthread_mutex_lock(&mu);
  va_start(ap, fmt);
  int n = vsnprintf(logbuf + loglen, sizeof logbuf - loglen - 2, fmt, ap);
  va_end(ap);
  if (n > 0 && loglen + (size_t)n < sizeof logbuf - 2) {
    loglen += (size_t)n;
    logbuf[loglen++] = '\n';
    logbuf[loglen] = 0;
  }
  pthread_mutex_unlock(&mu);
}

static stream_count_t *stream_of(cudaStream_t s) {
  for (int i = 0; i < nstreams; i++)
    if (streams[i].s == s) return &streams[i];
  if (nstreams == 64) return &streams[63];
  streams[nstreams].s = s;
  return &streams[nstreams++];
}

static void enqueue(cudaStream_t s) {
  pthread_mutex_lock(&mu);
  stream_count_t *c = stream_of(s);
  c->enq++;
  if (!knob_hang) c->done = c->enq;
  pthread_mutex_unlock(&mu);
}

/* ---- control, for the test ------------------------------------------------------- */

EXPORT const char *mock_nccl_log(void) { return logbuf; }

EXPORT void mock_nccl_clear(void) {
  pthread_mutex_lock(&mu);
  loglen = 0;
  logbuf[0] = 0;
  pthread_mutex_unlock(&mu);
}

EXPORT void mock_nccl_set(const char *knob, long value) {
  pthread_mutex_lock(&mu);
  if (!strcmp(knob, "version")) knob_version = value;
  else if (!strcmp(knob, "init_polls")) knob_polls = value;
  else if (!strcmp(knob, "async_error")) knob_async = value;
  else if (!strcmp(knob, "abort_sleep_ms")) knob_abort_ms = value;
  else if (!strcmp(knob, "hang")) {
    knob_hang = value;
    if (!value)
      for (int i = 0; i < nstreams; i++) streams[i].done = streams[i].enq;
  }
  pthread_mutex_unlock(&mu);
}

/* Work enqueued on s so far, and completed so far. */
EXPORT unsigned long mock_nccl_enqueued(cudaStream_t s) {
  pthread_mutex_lock(&mu);
  unsigned long v = stream_of(s)->enq;
  pthread_mutex_unlock(&mu);
  return v;
}

EXPORT unsigned long mock_nccl_completed(cudaStream_t s) {
  pthread_mutex_lock(&mu);
  unsigned long v = stream_of(s)->done;
  pthread_mutex_unlock(&mu);
  return v;
}

/* ---- the NCCL API ----------------------------------------------------------------- */

EXPORT ncclResult_t ncclGetVersion(int *version) {
  logf_("ncclGetVersion");
  *version = (int)knob_version;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  static int n;
  memset(id, 0, sizeof *id);
  snprintf(id->internal, sizeof id->internal, "mock-id-%d", ++n);
  logf_("ncclGetUniqueId %s", id->internal);
  return ncclSuccess;
}

static ncclComm_t comm_new(int nranks, int rank, int blocking) {
  ncclComm_t c = calloc(1, sizeof *c);
  c->nranks = nranks;
  c->rank = rank;
  c->blocking = blocking;
  c->polls_left = blocking ? 0 : (int)knob_polls;
  if (group_depth && ngroup < 64) group_comms[ngroup++] = c;
  return c;
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                           ncclConfig_t *config) {
  if (config == NULL || config->magic != 0xcafebeef) {
    logf_("ncclCommInitRankConfig bad-config");
    return ncclInvalidArgument;
  }
  logf_("ncclCommInitRankConfig nranks=%d rank=%d id=%s blocking=%d size=%zu version=%u cga=%d "
        "minCTAs=%d maxCTAs=%d",
        nranks, rank, id.internal, config->blocking, config->size, config->version,
        config->cgaClusterSize, config->minCTAs, config->maxCTAs);
  *comm = comm_new(nranks, rank, config->blocking);
  return config->blocking ? ncclSuccess : ncclInProgress;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  logf_("ncclCommInitRank nranks=%d rank=%d id=%s", nranks, rank, id.internal);
  *comm = comm_new(nranks, rank, 1);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err) {
  pthread_mutex_lock(&mu);
  if (comm->polls_left > 0) {
    comm->polls_left--;
    *err = ncclInProgress;
  } else {
    *err = (ncclResult_t)knob_async;
  }
  pthread_mutex_unlock(&mu);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  logf_("ncclCommFinalize rank=%d", comm->rank);
  comm->polls_left = comm->blocking ? 0 : 1;
  return comm->blocking ? ncclSuccess : ncclInProgress;
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  logf_("ncclCommDestroy rank=%d", comm->rank);
  free(comm);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  logf_("ncclCommAbort rank=%d", comm->rank);
  /* kept, not freed: a caller that gave up on a stuck abort may still hold it */
  pthread_mutex_lock(&mu);
  if (naborted < 64) mock_nccl_aborted[naborted++] = comm;
  pthread_mutex_unlock(&mu);
  if (knob_abort_ms) {
    struct timespec ts = {knob_abort_ms / 1000, (knob_abort_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  *count = comm->nranks;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
  (void)comm;
  *device = 0;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
  *rank = comm->rank;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                  ncclConfig_t *config) {
  logf_("ncclCommSplit rank=%d color=%d key=%d blocking=%d", comm->rank, color, key,
        config ? config->blocking : -1);
  *newcomm = color == -1 ? NULL : comm_new(1, 0, config ? config->blocking : 1);
  comm->polls_left = config && !config->blocking ? 1 : 0;
  return config && !config->blocking ? ncclInProgress : ncclSuccess;
}

EXPORT const char *ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclSystemError: return "unhandled system error";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "mock error";
  }
}

EXPORT const char *ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return knob_async ? "mock: peer rank 1 vanished" : "";
}

EXPORT ncclResult_t ncclGroupStart(void) {
  logf_("ncclGroupStart");
  if (group_depth++ == 0) ngroup = 0;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclGroupEnd(void) {
  logf_("ncclGroupEnd");
  if (--group_depth > 0) return ncclSuccess;
  bool nb = false;
  for (int i = 0; i < ngroup; i++)
    if (!group_comms[i]->blocking) {
      nb = true;
      group_comms[i]->polls_left = (int)knob_polls;
    }
  return nb ? ncclInProgress : ncclSuccess;
}

static void note_group(ncclComm_t c) {
  if (group_depth && ngroup < 64) group_comms[ngroup++] = c;
}

static ncclResult_t result_for(ncclComm_t c) {
  note_group(c);
  return !group_depth && !c->blocking ? ncclInProgress : ncclSuccess;
}

/* One rank: the collective's result is its input. */
static void one_rank_copy(ncclComm_t c, const void *send, void *recv, size_t count, int t) {
  if (c->nranks == 1 && send && recv && send != recv && t >= 0 && t < 12)
    memmove(recv, send, count * (size_t)type_size[t]);
}

EXPORT ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, int t, int op,
                                  ncclComm_t comm, cudaStream_t s) {
  logf_("ncclAllReduce send=%p recv=%p count=%zu type=%d op=%d rank=%d stream=%p", send, recv,
        count, t, op, comm->rank, s);
  one_rank_copy(comm, send, recv, count, t);
  enqueue(s);
  return result_for(comm);
}

EXPORT ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, int t, int root,
                                  ncclComm_t comm, cudaStream_t s) {
  logf_("ncclBroadcast send=%p recv=%p count=%zu type=%d root=%d rank=%d stream=%p", send, recv,
        count, t, root, comm->rank, s);
  one_rank_copy(comm, send, recv, count, t);
  enqueue(s);
  return result_for(comm);
}

EXPORT ncclResult_t ncclReduce(const void *send, void *recv, size_t count, int t, int op, int root,
                               ncclComm_t comm, cudaStream_t s) {
  logf_("ncclReduce send=%p recv=%p count=%zu type=%d op=%d root=%d rank=%d stream=%p", send,
        recv, count, t, op, root, comm->rank, s);
  one_rank_copy(comm, send, recv, count, t);
  enqueue(s);
  return result_for(comm);
}

EXPORT ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, int t,
                                  ncclComm_t comm, cudaStream_t s) {
  logf_("ncclAllGather send=%p recv=%p sendcount=%zu type=%d rank=%d stream=%p", send, recv,
        sendcount, t, comm->rank, s);
  one_rank_copy(comm, send, recv, sendcount, t);
  enqueue(s);
  return result_for(comm);
}

EXPORT ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount, int t,
                                      int op, ncclComm_t comm, cudaStream_t s) {
  logf_("ncclReduceScatter send=%p recv=%p recvcount=%zu type=%d op=%d rank=%d stream=%p", send,
        recv, recvcount, t, op, comm->rank, s);
  one_rank_copy(comm, send, recv, recvcount, t);
  enqueue(s);
  return result_for(comm);
}

EXPORT ncclResult_t ncclAlltoAll(const void *send, void *recv, size_t count, int t,
                                 ncclComm_t comm, cudaStream_t s) {
  logf_("ncclAlltoAll send=%p recv=%p count=%zu type=%d rank=%d stream=%p", send, recv, count, t,
        comm->rank, s);
  one_rank_copy(comm, send, recv, count, t);
  enqueue(s);
  return result_for(comm);
}

/* RCCL's spelling. */
EXPORT ncclResult_t ncclAllToAll(const void *send, void *recv, size_t count, int t,
                                 ncclComm_t comm, cudaStream_t s) {
  logf_("ncclAllToAll send=%p recv=%p count=%zu type=%d rank=%d stream=%p", send, recv, count, t,
        comm->rank, s);
  one_rank_copy(comm, send, recv, count, t);
  enqueue(s);
  return result_for(comm);
}

EXPORT ncclResult_t ncclSend(const void *buf, size_t count, int t, int peer, ncclComm_t comm,
                             cudaStream_t s) {
  logf_("ncclSend buf=%p count=%zu type=%d peer=%d rank=%d stream=%p", buf, count, t, peer,
        comm->rank, s);
  enqueue(s);
  return result_for(comm);
}

EXPORT ncclResult_t ncclRecv(void *buf, size_t count, int t, int peer, ncclComm_t comm,
                             cudaStream_t s) {
  logf_("ncclRecv buf=%p count=%zu type=%d peer=%d rank=%d stream=%p", buf, count, t, peer,
        comm->rank, s);
  enqueue(s);
  return result_for(comm);
}
