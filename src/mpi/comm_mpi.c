/*
 * comm_mpi.c - libgpuport-mpi: gp_comm_init_mpi (gpuport/mpi.h).
 *
 * Linked beside whichever backend library the application uses, and against no backend
 * itself: it calls the public API, plus two private exports of the backend (comm_ext.h).
 *
 *   cuda/hip: the unique id is made on rank 0 and broadcast (MPI_Bcast of 128 bytes, with
 *             rank 0's status, so a rank 0 without NCCL fails every rank at once), then
 *             every rank calls gp_comm_init_rank on its current device.
 *   cpu:      the communicator's calls run over MPI: the transport below, handed to the
 *             cpu backend through gp__cpu_comm_create_ext (a weak reference: absent when
 *             the backend is another, which never takes this path).
 *
 * Every rank first exchanges its gpuport version and backend (MPI_Allgather) and fails
 * fast on a difference, since mixed versions would otherwise fail later and obscurely.
 *
 * The transport (cpu): MPI has no f16, bf16, fp8 or average, so those reduce through an
 * f32 buffer (inputs widened and, for GP_AVG, multiplied by (T)(1/n); the f32 result
 * rounded once), integer sums and products use MPI's unsigned types (wrap-around is
 * then defined; 8-bit ones through 32 bits, see red_type) and GP_AVG on integers divides
 * the sum afterwards (NCCL's rule). Every
 * operation is non-blocking (MPI_I*) and polled with MPI_Test, sleeping between polls,
 * until the communicator's deadline: MPI itself never times out. Messages use element
 * counts of MPI int: larger counts are GP_ERROR_NOT_SUPPORTED.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpuport.h>
#include <gpuport/mpi.h>

#include "comm_dtype.h"
#include "comm_ext.h"

#define FUNC "gp_comm_init_mpi"

__attribute__((weak)) gp_status_t gp__cpu_comm_create_ext(gp_comm_t *comm, int rank, int nranks,
                                                          double timeout_s, const gp__comm_ext_t *ext,
                                                          void *ctx);

typedef struct mctx {
  MPI_Comm comm;
  int rank, size;
} mctx_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static gp_status_t mpi_fail(int rc, const char *call, char *msg, size_t len) {
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  if (MPI_Error_string(rc, text, &n) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", rc);
  snprintf(msg, len, "%s failed: %s", call, text);
  return GP_ERROR_COMM;
}

/* Polls req until done or deadline, sleeping 10 us growing to 1 ms between tests; a
 * receive (elem != MPI_DATATYPE_NULL) must have brought exactly `want` elements. */
static gp_status_t finish_recv(MPI_Request *req, double deadline, const char *what,
                               MPI_Datatype elem, int want, char *msg, size_t len) {
  double backoff = 10e-6;
  for (;;) {
    int done = 0;
    MPI_Status status;
    int rc = MPI_Test(req, &done, &status);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, what, msg, len);
    if (done && elem != MPI_DATATYPE_NULL) {
      int got = -1;
      MPI_Get_count(&status, elem, &got);
      if (got != want) {
        snprintf(msg, len,
                 "mismatched send/recv: rank %d sent %d elements, the receive expects %d",
                 status.MPI_SOURCE, got, want);
        return GP_ERROR_COMM;
      }
    }
    if (done) return GP_SUCCESS;
    if (now_s() >= deadline) {
      snprintf(msg, len,
               "%s did not complete within the communicator's timeout (GP_COMM_TIMEOUT_S): a rank "
               "is absent or stuck; the communicator is unusable",
               what);
      return GP_ERROR_TIMEOUT;
    }
    struct timespec ts = {0, (long)(backoff * 1e9)};
    nanosleep(&ts, NULL);
    backoff = backoff * 2 > 1e-3 ? 1e-3 : backoff * 2;
  }
}

static gp_status_t finish(MPI_Request *req, double deadline, const char *what, char *msg,
                          size_t len) {
  return finish_recv(req, deadline, what, MPI_DATATYPE_NULL, 0, msg, len);
}

/* ---- types ------------------------------------------------------------------------ */

static bool int_signed(gp_dtype_t t) { return t == GP_I8 || t == GP_I32 || t == GP_I64; }

/* How a reduction's data reaches MPI. */
typedef enum { AS_IS, VIA_F32, VIA_U32 } path_t;

/* The MPI type a reduction runs in, and the path of the data. 8-bit sums and products go
 * through 32 bits (the same result modulo 256): Open MPI 4.1's op/avx component returns
 * wrong 8-bit sums from MPI_Ireduce and MPI_Ireduce_scatter_block. */
static MPI_Datatype red_type(gp_dtype_t t, gp_reduce_op_t op, path_t *path) {
  bool wrap = op == GP_SUM || op == GP_PROD || op == GP_AVG; /* unsigned: defined overflow */
  *path = AS_IS;
  switch (t) {
    case GP_F32: return MPI_FLOAT;
    case GP_F64: return MPI_DOUBLE;
    case GP_I8: case GP_U8:
      if (wrap) {
        *path = VIA_U32;
        return MPI_UINT32_T;
      }
      return t == GP_I8 ? MPI_INT8_T : MPI_UINT8_T;
    case GP_I32: return wrap ? MPI_UINT32_T : MPI_INT32_T;
    case GP_U32: return MPI_UINT32_T;
    case GP_I64: return wrap ? MPI_UINT64_T : MPI_INT64_T;
    case GP_U64: return MPI_UINT64_T;
    default: *path = VIA_F32; return MPI_FLOAT; /* f16, bf16, fp8 */
  }
}

static size_t path_size(path_t p, gp_dtype_t t) { return p == AS_IS ? gp_dtype_size(t) : 4; }

static MPI_Op red_op(gp_reduce_op_t op) {
  switch (op) {
    case GP_PROD: return MPI_PROD;
    case GP_MAX: return MPI_MAX;
    case GP_MIN: return MPI_MIN;
    default: return MPI_SUM; /* GP_AVG: a sum, then divided or pre-scaled */
  }
}

/* The input of a reduction in the type MPI reduces: a copy when it must be widened or
 * pre-scaled (GP_AVG on floating types), else the buffer itself. *owned says to free. */
static void *red_input(const void *src, size_t n, gp_dtype_t t, gp_reduce_op_t op, int nranks,
                       path_t path, bool *owned) {
  *owned = false;
  bool scale = op == GP_AVG && (path == VIA_F32 || t == GP_F32 || t == GP_F64);
  if (path == AS_IS && !scale) return (void *)(uintptr_t)src;
  size_t es = path_size(path, t);
  void *buf = malloc(n * es + 1);
  if (buf == NULL) return NULL;
  *owned = true;
  if (path == VIA_F32) gp__load_f32(buf, src, n, t);
  else if (path == VIA_U32)
    for (size_t i = 0; i < n; i++) ((uint32_t *)buf)[i] = ((const uint8_t *)src)[i];
  else memcpy(buf, src, n * es);
  if (scale) {
    if (t == GP_F64) {
      double s = 1.0 / nranks;
      for (size_t i = 0; i < n; i++) ((double *)buf)[i] *= s;
    } else {
      float s = gp__avg_scale_f32(t, nranks);
      for (size_t i = 0; i < n; i++) ((float *)buf)[i] *= s;
    }
  }
  return buf;
}

/* Stores a reduction's result (in the MPI type) to dst: narrowed, or divided (GP_AVG on
 * integers). */
static void red_output(void *dst, const void *res, size_t n, gp_dtype_t t, gp_reduce_op_t op,
                       int nranks, path_t path) {
  if (path == VIA_F32) {
    gp__store_f32(dst, res, n, t);
    return;
  }
  if (path == VIA_U32)
    for (size_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = (uint8_t)((const uint32_t *)res)[i];
  else if (res != dst)
    memcpy(dst, res, n * gp_dtype_size(t));
  if (op != GP_AVG || t == GP_F32 || t == GP_F64) return;
  for (size_t i = 0; i < n; i++) {
    switch (t) {
      case GP_I8: ((int8_t *)dst)[i] = (int8_t)(((int8_t *)dst)[i] / nranks); break;
      case GP_U8: ((uint8_t *)dst)[i] = (uint8_t)(((uint8_t *)dst)[i] / nranks); break;
      case GP_I32: ((int32_t *)dst)[i] = ((int32_t *)dst)[i] / nranks; break;
      case GP_U32: ((uint32_t *)dst)[i] = ((uint32_t *)dst)[i] / (uint32_t)nranks; break;
      case GP_I64: ((int64_t *)dst)[i] = ((int64_t *)dst)[i] / nranks; break;
      case GP_U64: ((uint64_t *)dst)[i] = ((uint64_t *)dst)[i] / (uint64_t)nranks; break;
      default: break;
    }
  }
  (void)int_signed;
}

/* ---- one collective ------------------------------------------------------------------- */

static gp_status_t run_reduction(mctx_t *m, const gp__comm_call_t *c, double deadline, char *msg,
                                 size_t len) {
  bool owned_in;
  path_t path;
  MPI_Datatype mt = red_type(c->dtype, c->op, &path);
  size_t k = c->count, n = (size_t)m->size;
  size_t in_elems = c->coll == GP__COLL_REDUCE_SCATTER ? n * k : k;
  bool root = c->coll != GP__COLL_REDUCE || m->rank == c->root;
  void *in = red_input(c->send, in_elems, c->dtype, c->op, m->size, path, &owned_in);
  size_t res_bytes = k * path_size(path, c->dtype);
  /* MPI wants distinct buffers (or MPI_IN_PLACE, whose layout differs for reduce-scatter):
   * the result goes to scratch whenever it would overlap the input or must be narrowed. */
  size_t in_bytes = in_elems * path_size(path, c->dtype);
  bool overlap = c->recv != NULL && in != NULL && (char *)c->recv < (char *)in + in_bytes &&
                 (char *)in < (char *)c->recv + res_bytes;
  bool scratch = path != AS_IS || overlap;
  void *res = scratch ? malloc(res_bytes + 1) : c->recv;
  gp_status_t st = GP_SUCCESS;
  if (in == NULL || res == NULL) {
    snprintf(msg, len, "no host memory for the reduction");
    st = GP_ERROR_OUT_OF_MEMORY;
  }
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  if (st == GP_SUCCESS) {
    const char *what = "MPI_Iallreduce";
    if (c->coll == GP__COLL_ALL_REDUCE) {
      rc = MPI_Iallreduce(in, res, (int)k, mt, red_op(c->op), m->comm, &req);
    } else if (c->coll == GP__COLL_REDUCE) {
      what = "MPI_Ireduce";
      rc = MPI_Ireduce(in, root ? res : NULL, (int)k, mt, red_op(c->op), c->root, m->comm, &req);
    } else {
      what = "MPI_Ireduce_scatter_block";
      rc = MPI_Ireduce_scatter_block(in, res, (int)k, mt, red_op(c->op), m->comm, &req);
    }
    st = rc != MPI_SUCCESS ? mpi_fail(rc, what, msg, len) : finish(&req, deadline, what, msg, len);
  }
  if (st == GP_SUCCESS && root) red_output(c->recv, res, k, c->dtype, c->op, m->size, path);
  if (owned_in) free(in);
  if (scratch) free(res);
  return st;
}

static gp_status_t run_one(mctx_t *m, const gp__comm_call_t *c, MPI_Datatype elem,
                           double deadline, char *msg, size_t len) {
  size_t es = gp_dtype_size(c->dtype), k = c->count;
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  const char *what = "";
  switch (c->coll) {
    case GP__COLL_ALL_REDUCE: case GP__COLL_REDUCE: case GP__COLL_REDUCE_SCATTER:
      return run_reduction(m, c, deadline, msg, len);
    case GP__COLL_BROADCAST:
      what = "MPI_Ibcast";
      if (m->rank == c->root && c->send != c->recv) memcpy(c->recv, c->send, k * es);
      rc = MPI_Ibcast(c->recv, (int)k, elem, c->root, m->comm, &req);
      break;
    case GP__COLL_ALL_GATHER: {
      what = "MPI_Iallgather";
      bool inplace = c->send == (const char *)c->recv + (size_t)m->rank * k * es;
      rc = MPI_Iallgather(inplace ? MPI_IN_PLACE : c->send, (int)k, elem, c->recv, (int)k, elem,
                          m->comm, &req);
      break;
    }
    case GP__COLL_ALL_TO_ALL:
      what = "MPI_Ialltoall";
      rc = MPI_Ialltoall(c->send == c->recv ? MPI_IN_PLACE : c->send, (int)k, elem, c->recv, (int)k,
                         elem, m->comm, &req);
      break;
    default:
      return GP_SUCCESS;
  }
  if (rc != MPI_SUCCESS) return mpi_fail(rc, what, msg, len);
  return finish(&req, deadline, what, msg, len);
}

/* Adjacent send/recv calls: all posted, then all waited for (a group never deadlocks). */
static gp_status_t run_p2p(mctx_t *m, const gp__comm_call_t *c, size_t n, MPI_Datatype *elems,
                           double deadline, char *msg, size_t len) {
  MPI_Request *reqs = malloc(n * sizeof(*reqs));
  if (reqs == NULL) {
    snprintf(msg, len, "no host memory");
    return GP_ERROR_OUT_OF_MEMORY;
  }
  gp_status_t st = GP_SUCCESS;
  int posted = 0;
  for (size_t i = 0; i < n && st == GP_SUCCESS; i++, posted++) {
    int rc = c[i].coll == GP__COLL_SEND
                 ? MPI_Isend(c[i].send, (int)c[i].count, elems[i], c[i].root, 0, m->comm, &reqs[i])
                 : MPI_Irecv(c[i].recv, (int)c[i].count, elems[i], c[i].root, 0, m->comm, &reqs[i]);
    if (rc != MPI_SUCCESS) st = mpi_fail(rc, c[i].coll == GP__COLL_SEND ? "MPI_Isend" : "MPI_Irecv", msg, len);
  }
  for (int i = 0; i < posted && st == GP_SUCCESS; i++)
    st = c[i].coll == GP__COLL_RECV
             ? finish_recv(&reqs[i], deadline, "MPI_Irecv", elems[i], (int)c[i].count, msg, len)
             : finish(&reqs[i], deadline, "MPI_Isend", msg, len);
  free(reqs);
  return st;
}

static gp_status_t transport_run(void *ctx, const gp__comm_call_t *calls, size_t n,
                                 double deadline, char *msg, size_t len) {
  mctx_t *m = ctx;
  gp_status_t st = GP_SUCCESS;
  MPI_Datatype *elems = calloc(n, sizeof(*elems));
  if (elems == NULL) {
    snprintf(msg, len, "no host memory");
    return GP_ERROR_OUT_OF_MEMORY;
  }
  /* Elements as MPI types of their size (data movement needs no arithmetic). */
  for (size_t i = 0; i < n && st == GP_SUCCESS; i++) {
    size_t big = calls[i].count * (size_t)(calls[i].coll == GP__COLL_REDUCE_SCATTER ? m->size : 1);
    if (big > (size_t)INT_MAX) {
      snprintf(msg, len, "%zu elements: the MPI transport takes up to %d per call", big, INT_MAX);
      st = GP_ERROR_NOT_SUPPORTED;
      break;
    }
    MPI_Type_contiguous((int)gp_dtype_size(calls[i].dtype), MPI_BYTE, &elems[i]);
    MPI_Type_commit(&elems[i]);
  }
  for (size_t i = 0; i < n && st == GP_SUCCESS;) {
    bool p2p = calls[i].coll == GP__COLL_SEND || calls[i].coll == GP__COLL_RECV;
    if (!p2p) {
      st = run_one(m, &calls[i], elems[i], deadline, msg, len);
      i++;
      continue;
    }
    size_t j = i;
    while (j < n && (calls[j].coll == GP__COLL_SEND || calls[j].coll == GP__COLL_RECV)) j++;
    st = run_p2p(m, calls + i, j - i, elems + i, deadline, msg, len);
    i = j;
  }
  for (size_t i = 0; i < n; i++)
    if (elems[i] != MPI_DATATYPE_NULL && elems[i] != 0) MPI_Type_free(&elems[i]);
  free(elems);
  return st;
}

static gp_status_t transport_split(void *ctx, int color, int key, void **child, int *rank,
                                   int *size, char *msg, size_t len) {
  mctx_t *m = ctx;
  MPI_Comm nc = MPI_COMM_NULL;
  int rc = MPI_Comm_split(m->comm, color == GP_COMM_SPLIT_NOCOLOR ? MPI_UNDEFINED : color, key, &nc);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Comm_split", msg, len);
  *child = NULL;
  *rank = -1;
  *size = 0;
  if (nc == MPI_COMM_NULL) return GP_SUCCESS;
  mctx_t *c = calloc(1, sizeof(*c));
  if (c == NULL) {
    MPI_Comm_free(&nc);
    snprintf(msg, len, "no host memory");
    return GP_ERROR_OUT_OF_MEMORY;
  }
  c->comm = nc;
  MPI_Comm_rank(nc, &c->rank);
  MPI_Comm_size(nc, &c->size);
  *child = c, *rank = c->rank, *size = c->size;
  return GP_SUCCESS;
}

static void transport_destroy(void *ctx) {
  mctx_t *m = ctx;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&m->comm);
  free(m);
}

static const gp__comm_ext_t transport_multiple = {
    GP__COMM_EXT_VERSION, "mpi", 0, transport_run, transport_split, transport_destroy};
static const gp__comm_ext_t transport_serial = {
    GP__COMM_EXT_VERSION, "mpi (blocking: MPI below MPI_THREAD_MULTIPLE)", 1, transport_run,
    transport_split, transport_destroy};

/* ---- gp_comm_init_mpi ---------------------------------------------------------------------- */

static gp_status_t error(gp_status_t st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static gp_status_t error(gp_status_t st, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  return gp__comm_ext_error(st, FUNC, text);
}

/* Every rank's gpuport version and backend, compared: a difference fails every rank. */
static gp_status_t check_versions(MPI_Comm comm, int size) {
  int mine[4] = {0, 0, 0, (int)gp_backend()};
  gp_version(&mine[0], &mine[1], &mine[2]);
  int *all = malloc((size_t)size * sizeof mine);
  if (all == NULL) return error(GP_ERROR_OUT_OF_MEMORY, "no host memory");
  int rc = MPI_Allgather(mine, 4, MPI_INT, all, 4, MPI_INT, comm);
  gp_status_t st = GP_SUCCESS;
  if (rc != MPI_SUCCESS) {
    char msg[300];
    st = mpi_fail(rc, "MPI_Allgather", msg, sizeof msg);
    error(st, "%s", msg);
  }
  for (int r = 1; r < size && st == GP_SUCCESS; r++)
    if (memcmp(all, all + 4 * r, sizeof mine) != 0)
      st = error(GP_ERROR_COMM,
                 "ranks run different gpuport builds: rank 0 has %d.%d.%d (backend %d), rank %d has "
                 "%d.%d.%d (backend %d); every rank needs the same version and backend",
                 all[0], all[1], all[2], all[3], r, all[4 * r], all[4 * r + 1], all[4 * r + 2],
                 all[4 * r + 3]);
  free(all);
  return st;
}

GP_API gp_status_t gp_comm_init_mpi(gp_comm_t *comm, MPI_Comm mpi_comm) {
  if (comm == NULL) return error(GP_ERROR_INVALID_VALUE, "'comm' is NULL");
  *comm = NULL;
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (!inited || finalized)
    return error(GP_ERROR_INVALID_VALUE, "MPI is %s", inited ? "already finalised" : "not initialised (MPI_Init)");
  if (mpi_comm == MPI_COMM_NULL) return error(GP_ERROR_INVALID_VALUE, "'mpi_comm' is MPI_COMM_NULL");
  int rank = 0, size = 0;
  MPI_Comm_rank(mpi_comm, &rank);
  MPI_Comm_size(mpi_comm, &size);
  gp_status_t st = check_versions(mpi_comm, size);
  if (st != GP_SUCCESS) return st;

  if (gp_backend() == GP_BACKEND_CPU && gp__cpu_comm_create_ext != NULL) {
    mctx_t *m = calloc(1, sizeof(*m));
    if (m == NULL) return error(GP_ERROR_OUT_OF_MEMORY, "no host memory");
    int rc = MPI_Comm_dup(mpi_comm, &m->comm);
    if (rc != MPI_SUCCESS) {
      free(m);
      char msg[300];
      return error(mpi_fail(rc, "MPI_Comm_dup", msg, sizeof msg), "%s", msg);
    }
    m->rank = rank, m->size = size;
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    st = gp__cpu_comm_create_ext(comm, rank, size, 0.0,
                                 level >= MPI_THREAD_MULTIPLE ? &transport_multiple : &transport_serial, m);
    if (st != GP_SUCCESS) transport_destroy(m);
    return st;
  }

  /* NCCL's MPI bootstrap: rank 0's id (and its status) to everyone. */
  struct {
    int status;
    gp_comm_id_t id;
  } boot;
  memset(&boot, 0, sizeof boot);
  char why[400] = "";
  if (rank == 0) {
    boot.status = (int)gp_comm_get_unique_id(&boot.id);
    if (boot.status) snprintf(why, sizeof why, "%s", gp_last_error_message());
  }
  int rc = MPI_Bcast(&boot, (int)sizeof boot, MPI_BYTE, 0, mpi_comm);
  if (rc != MPI_SUCCESS) {
    char msg[300];
    return error(mpi_fail(rc, "MPI_Bcast", msg, sizeof msg), "%s", msg);
  }
  if (boot.status != GP_SUCCESS)
    return rank == 0 ? error((gp_status_t)boot.status, "%s", why)
                     : error((gp_status_t)boot.status, "rank 0 could not make the unique id (%s)",
                             gp_status_name((gp_status_t)boot.status));
  return gp_comm_init_rank(comm, size, boot.id, rank);
}
