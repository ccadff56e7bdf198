/*
 * comm_cpu.h - the cpu backend's collectives: the control block ranks share, one
 * rank's state, and the engine's entry points. Shared by comm_cpu.c (communicators:
 * rendezvous, split, enqueue, teardown), comm_engine.c (the algorithms and the waits)
 * and comm_reduce.c (the reductions); the ext transport at the end is what
 * libgpuport-mpi plugs in. Nothing here is public.
 *
 * A clique's ranks share one control block: in a private shared-memory segment for
 * ranks that joined through a unique id (gp_comm_init_rank), or in plain memory for
 * ranks that are all in this process (gp_comm_init_all, gp_comm_split of such ranks,
 * one-rank cliques). Each rank has a slot (its doorbell, barrier counter, identity,
 * and the call it is in); each ordered pair of ranks a point-to-point channel.
 *
 * Two data paths:
 *   direct - every rank lives in this process: ranks read and write each other's
 *            buffers in place (docs/design/COMM.md "The cpu backend": each rank
 *            reduces its slice of every rank's input, fixed rank order, and stores it
 *            everywhere);
 *   staged - ranks in several processes: data goes through per-rank staging buffers
 *            in the segment, chunk by chunk, double-buffered so one barrier per chunk
 *            suffices (two for reductions).
 *
 * Waits never spin: a rank sleeps on its doorbell (a futex word in the block) and
 * whoever changes what it waits for rings it. Every wait also wakes every 100 ms to
 * check the clique's health: a failure recorded by another rank, its own deadline,
 * peers that left or whose process died.
 */
#ifndef GP_COMM_CPU_H
#define GP_COMM_CPU_H

#include <stdatomic.h>
#include "comm.h"
#include "comm_ext.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GP__CTL_MAGIC 0x74437067u /* "gpCt" */
/* Ranks of one clique on the cpu engine: the most virtual devices, and a bound that keeps a
 * host segment (staging plus a channel per ordered pair) within ~100 MiB. */
#define GP__CPU_MAX_RANKS 64
#define GP__CTL_VERSION 2u
/* The part of a segment the id's maker writes (gp_comm_get_unique_id): the control
 * block's header, before the first rank sizes the segment for its clique. */
#define GP__CTL_HEADER_BYTES 4096u

/* A pseudo collective for gp_comm_split's exchange, so a split that meets a collective
 * on another rank is reported as a mismatch. */
#define GP__COLL_SPLIT ((int)GP__COLL_COUNT + 1)

enum { GP__SLOT_FREE = 0, GP__SLOT_JOINING = 1, GP__SLOT_JOINED = 2, GP__SLOT_LEFT = 3 };

/* What a rank publishes for one collective (two of them, by the collective's parity: a
 * fast rank may publish its next call while a slow one still reads this one). */
typedef struct gp__pub {
  uint64_t coll_seq; /* collectives of this rank on the clique, from 1 */
  uint64_t call_seq; /* the funnel's call number, for messages */
  uint64_t count;
  int32_t coll, dtype, op, root;
  uint64_t send, recv; /* buffer addresses (direct path only) */
} gp__pub_t;

typedef struct gp__slot {
  _Atomic uint32_t bell;     /* futex word: bumped by whoever changes what this rank waits for */
  _Atomic uint32_t sleepers; /* threads of this rank in, or entering, a wait on bell */
  _Atomic uint32_t arrive;   /* barriers this rank has reached */
  _Atomic uint32_t state;    /* GP__SLOT_* */
  int32_t pid, device;
  uint64_t starttime;  /* of its process (/proc/<pid>/stat): a reused pid is not it */
  uint64_t pidns;      /* its pid namespace (inode): pids compare only within one */
  uint64_t proc_token; /* random per process: equal tokens share an address space */
  gp__pub_t pub[2];
  /* gp_comm_split's exchange */
  int32_t color, key;
  uint64_t split_ctl;  /* the leader's new in-process control block, or 0 */
  gp_comm_id_t split_id; /* else the id of the new clique's segment */
} __attribute__((aligned(64))) gp__slot_t;

/* Point-to-point channel src -> dst. Counters only grow; the sender writes posted and
 * msgs_sent, the receiver taken and msgs_recv. Direct path: one message at a time
 * (addr, bytes); staged: two chunk slots in the segment, each with a header. */
typedef struct gp__chan {
  _Atomic uint32_t posted, taken;
  uint32_t msgs_sent, msgs_recv;
  uint64_t addr, bytes;        /* direct: the message being sent */
  uint64_t hdr_msg[2];         /* staged: message number of the chunk in slot i */
  uint64_t hdr_bytes[2];       /* staged: total bytes of that message */
  uint64_t hdr_chunk[2];       /* staged: bytes in slot i */
} __attribute__((aligned(64))) gp__chan_t;

typedef struct gp__ctl {
  _Atomic uint32_t magic; /* GP__CTL_MAGIC, stored last by the creator */
  uint32_t version;
  int32_t nranks;
  uint32_t shared;        /* 1: a segment; 0: in-process memory */
  uint64_t bytes;         /* the whole block */
  uint64_t half;          /* staging: bytes of each half of a rank's double buffer */
  uint64_t chan_chunk;    /* staging: bytes of each of a channel's two chunk slots */
  uint64_t slots_off, chans_off, staging_off, chanbuf_off;
  _Atomic uint32_t joined; /* ranks attached */
  _Atomic uint32_t refs;   /* in-process block: ranks still holding it */
  _Atomic int32_t failed;  /* 0, or the gp_status_t that broke the clique (first one) */
  _Atomic uint32_t failed_ready; /* failed_msg is written */
  int32_t failed_rank;
  char failed_msg[320];
  /* Segments only (comm_cpu.c, "Rendezvous"). Written by the id's maker: */
  uint64_t nonce;                 /* the id's job nonce: a segment of another id is foreign */
  int32_t maker_pid;              /* the process that made the id, its start time and pid namespace */
  uint64_t maker_start, maker_pidns;
  /* Written by the first rank to arrive, which sizes the segment for its nranks: */
  _Atomic int32_t claim;          /* 0, then that rank's nranks (compare-and-swap) */
  _Atomic uint32_t sized;         /* 0 sizing, 1 sized (layout above valid), 2 the sizing failed */
  int32_t sizer_pid, sizer_rank;
  uint64_t sizer_start;
  /* Arrivals refused (a duplicate rank, another nranks), for the timeout's message: */
  _Atomic uint32_t refused;
  _Atomic uint32_t refused_claim; /* the first refused rank writes refused_msg */
  _Atomic uint32_t refused_ready;
  char refused_msg[240];
} gp__ctl_t;

/* One rank. */
typedef struct gp__cpu_comm {
  gp_comm_t base;
  gp__ctl_t *ctl;
  int me, n;
  bool direct;   /* every rank in this process */
  /* Touched only by the thread running this rank's current operation. */
  uint32_t phase;     /* barriers passed */
  uint64_t round;     /* staging chunks (double-buffer parity) */
  uint64_t coll_seq;  /* collectives run */
  double next_health; /* when the next liveness check is due */
  /* Order of operations: numbered at enqueue, run in that order (a rank's operations
   * may sit on several streams). */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t enq, next;
  int refs;           /* the handle, each pending operation, an initialising thread */
  bool initialising;  /* a non-blocking initialisation's thread owns ctl until it ends */
  const gp__comm_ext_t *ext; /* calls run on this transport (libgpuport-mpi), not the engine */
  void *ext_ctx;
} gp__cpu_comm_t;

/* ---- engine (comm_engine.c) ---------------------------------------------------------- */

static inline gp__slot_t *gp__ctl_slot(gp__ctl_t *c, int r) {
  return (gp__slot_t *)((char *)c + c->slots_off) + r;
}
static inline gp__chan_t *gp__ctl_chan(gp__ctl_t *c, int src, int dst) {
  return (gp__chan_t *)((char *)c + c->chans_off) + (size_t)src * (size_t)c->nranks + (size_t)dst;
}

/* Runs n calls of rank cc in order, before deadline. Adjacent point-to-point calls
 * progress together (a group's never deadlock). func names the public call. */
gp_status_t gp__cpu_comm_run(gp__cpu_comm_t *cc, const gp__comm_call_t *calls, size_t n,
                             double deadline, const char *func);
/* The exchange of gp_comm_split (colors, keys, and the new clique's block or id);
 * fills *rank / *size (-1 / 0 when not a member) and either *local_ctl or *id. */
gp_status_t gp__cpu_comm_split_exchange(gp__cpu_comm_t *cc, int color, int key, double deadline,
                                        int *rank, int *size, gp__ctl_t **local_ctl,
                                        gp_comm_id_t *id);
/* Waits until every rank has joined the block (health-checked). */
gp_status_t gp__cpu_comm_wait_joined(gp__cpu_comm_t *cc, double deadline, const char *func);
/* Records the clique's failure (the first one stays) and rings every rank; returns it
 * with the message set and the communicator marked failed. */
gp_status_t gp__cpu_comm_fail_clique(gp__cpu_comm_t *cc, gp_status_t status, const char *func,
                                     const char *fmt, ...) GP__PRINTF(4, 5);
/* Rings every rank but this one; rings one rank. */
void gp__cpu_comm_ring_all(gp__cpu_comm_t *cc);
void gp__cpu_comm_ring_rank(gp__ctl_t *ctl, int rank);
/* A block for nranks ranks of this process (no staging), refs 0, magic set. */
gp__ctl_t *gp__cpu_ctl_new_local(int nranks);
/* Process identity for slots and liveness. */
uint64_t gp__cpu_proc_token(void);
uint64_t gp__cpu_proc_starttime(int pid);
uint64_t gp__cpu_pidns(void);
/* False only when process pid (started at starttime, 0: unknown) is known to be gone. */
bool gp__cpu_proc_alive(int pid, uint64_t starttime);

/* ---- reductions (comm_reduce.c) -------------------------------------------------------- */

/* dst[i] = op over q of src[q][i], q = 0 .. nsrc-1 in order; GP_AVG per NCCL's rule with
 * nranks. dst may alias any source. */
void gp__cpu_reduce(void *dst, const void *const *src, int nsrc, size_t count, gp_dtype_t t,
                    gp_reduce_op_t op, int nranks);

/* ---- communicators (comm_cpu.c) ----------------------------------------------------------- */

/* The name of the segment an id names ("/gpuport-<32 hex digits>"): tests plant
 * segments to check the owner and mode checks. */
void gp__cpu_comm_shm_name(const gp_comm_id_t *id, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* GP_COMM_CPU_H */
