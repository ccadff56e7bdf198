/*
 * comm_ext.h - the private ABI between a gpuport backend library and libgpuport-mpi
 * (src/mpi/comm_mpi.c), which is built from this tree but linked separately: it can
 * reach only exported symbols, so what it needs is exported under the gp__ prefix
 * (scripts/exports.sh admits it) and versioned. Nothing here is public.
 *
 * The cpu backend runs the collectives of a communicator made by gp_comm_init_mpi over
 * MPI: the backend keeps the funnel, the stream ordering and the groups, and hands each
 * rank's calls to the transport below instead of its own engine.
 */
#ifndef GP_COMM_EXT_H
#define GP_COMM_EXT_H

#include "comm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GP__COMM_EXT_VERSION 1u

typedef struct gp__comm_ext {
  uint32_t version; /* GP__COMM_EXT_VERSION */
  const char *name; /* for the log line: "mpi" */
  /* 1: calls run in the calling thread once the stream has drained (MPI below
   * MPI_THREAD_MULTIPLE); 0: on the stream's worker thread, in stream order. */
  int synchronous;
  /* Runs n calls of this rank in order (adjacent send/recv calls together, so a group
   * never deadlocks), returning before deadline (CLOCK_MONOTONIC seconds) or with
   * GP_ERROR_TIMEOUT; on failure writes the reason to msg. */
  gp_status_t (*run)(void *ctx, const gp__comm_call_t *calls, size_t n, double deadline,
                     char *msg, size_t msglen);
  /* The rank's part of a split: *child_ctx (NULL when color is GP_COMM_SPLIT_NOCOLOR),
   * its *rank and *size. */
  gp_status_t (*split)(void *ctx, int color, int key, void **child_ctx, int *rank, int *size,
                       char *msg, size_t msglen);
  void (*destroy)(void *ctx);
} gp__comm_ext_t;

/* cpu backend only: a communicator of rank/nranks on the current device whose calls run on
 * ext (ctx is handed back to ext's functions and, at the end, to ext->destroy).
 * GP_ERROR_NOT_SUPPORTED for an ext of another version. */
__attribute__((visibility("default"))) gp_status_t gp__cpu_comm_create_ext(
    gp_comm_t *comm, int rank, int nranks, double timeout_s, const gp__comm_ext_t *ext,
    void *ctx);

/* Every backend: records "func: msg" as the calling thread's error message (what
 * gp_last_error_message returns) and returns status. */
__attribute__((visibility("default"))) gp_status_t gp__comm_ext_error(gp_status_t status,
                                                                      const char *func,
                                                                      const char *msg);

#ifdef __cplusplus
}
#endif

#endif /* GP_COMM_EXT_H */
