/**
 * @file gpuport/comm.h
 * @brief Collectives: communicators, all-reduce, broadcast, reduce, all-gather,
 *        reduce-scatter, all-to-all, point-to-point send/receive and groups.
 * @ingroup comm
 *
 * The semantics are NCCL's (nccl.h), so code moves between the two by renaming:
 * counts are in elements; a call returns once the operation is enqueued on the
 * stream and runs in stream order like any other operation; a communicator joins
 * @p nranks ranks, one per device, through a unique id that one rank creates and
 * the application hands to the others (a broadcast over MPI, a file, a pipe), as
 * ncclGetUniqueId / ncclCommInitRank.
 *
 * Backends: NCCL (cuda) and RCCL (hip), loaded at the first communicator
 * (`libnccl.so.2`, `librccl.so.1`, or the file named by `GP_NCCL_LIBRARY`), so a
 * program that makes no communicator needs neither. The cpu backend has its own
 * engine across threads of one process (gp_comm_init_all() over `GP_CPU_DEVICES`
 * virtual devices, or gp_comm_init_rank() from several threads) and across
 * processes of one host (gp_comm_init_rank(): the unique id names a private
 * shared-memory segment). Across nodes, gpuport/mpi.h bootstraps communicators
 * over MPI.
 *
 * In place: a call is in place when @p recv == @p send; for all-gather when
 * send == recv + rank * sendcount, for reduce-scatter when recv == send + rank *
 * recvcount (nccl.h's rules).
 *
 * Reductions: ::GP_AVG on floating types multiplies each input by (T)(1/nranks)
 * (1/nranks rounded to the element type) and sums the products; on integer types
 * it sums (wrapping, as the other integer reductions) and divides by nranks,
 * truncating toward zero (NCCL's ncclAvg). On the cpu backend f16, bf16 and fp8
 * are accumulated in f32 and rounded once, each element is reduced by one rank in
 * rank order, so every rank receives identical bits; max and min on floating types
 * ignore a NaN operand when the other is a number (fmax/fmin). The fp8 types are
 * the OCP ones (E4M3 with no infinity, E5M2); results that overflow saturate to
 * the largest finite value, as CUDA's __NV_SATFINITE conversion.
 *
 * Faults never hang silently: a peer that dies (or destroys its communicator)
 * yields ::GP_ERROR_COMM, a peer that is alive but never arrives ::GP_ERROR_TIMEOUT
 * after the communicator's timeout (`GP_COMM_TIMEOUT_S`, default 300 s, or
 * gp_comm_config_t::timeout_s). The error is returned by the call that waits on
 * the stream holding the collective (stream, event and device synchronisation,
 * synchronous copies), by gp_get_last_error(), and by gp_comm_get_async_error();
 * the communicator is then unusable (every later call on it fails the same way)
 * and is released with gp_comm_destroy() or gp_comm_abort(). On the cpu backend,
 * calls that do not match across ranks (different operation, count, type,
 * reduction or root for the same collective) fail with ::GP_ERROR_COMM naming the
 * collective's sequence number, instead of hanging.
 *
 * Threads: a communicator may be used from any thread; calls on one communicator
 * must be made in the same order on every rank. A group (gp_group_start() ..
 * gp_group_end()) belongs to the calling thread.
 */
#ifndef GP_COMM_H
#define GP_COMM_H

#include <stddef.h>
#include <gpuport/export.h>
#include <gpuport/runtime.h>
#include <gpuport/status.h>
#include <gpuport/types.h>

GP_EXTERN_C_BEGIN

/** @brief Size of a unique id in bytes (NCCL_UNIQUE_ID_BYTES). */
#define GP_COMM_ID_BYTES 128

/** @brief The default timeout of a communicator, in seconds. */
#define GP_COMM_TIMEOUT_DEFAULT_S 300

/** @brief The color that leaves a rank out of every new communicator in gp_comm_split()
 *         (NCCL_SPLIT_NOCOLOR). */
#define GP_COMM_SPLIT_NOCOLOR (-1)

/** @brief Opaque communicator handle: one rank of a clique. */
typedef struct gp_comm_s *gp_comm_t;

/**
 * @brief The identity of a clique: made by gp_comm_get_unique_id() on one rank and
 *        copied, as 128 plain bytes, to every other rank (ncclUniqueId).
 *
 * An id serves one communicator: every rank of it passes the same id once, with the
 * same nranks and its own rank number. On the cpu backend the id carries 128 random
 * bits that name the host's rendezvous (a shared-memory segment, so it is a secret:
 * whoever holds it may join the clique) and a random job nonce that the rendezvous
 * records, and these rules hold, each failing at once with ::GP_ERROR_INVALID_VALUE
 * and a message that says which (the status NCCL's ncclInvalidUsage and
 * ncclInvalidArgument map to; NCCL itself leaves such ranks waiting):
 * - The id is single-use: the clique's formation (its last rank joining) consumes it. A
 *   rank that presents it afterwards, or after its clique failed, finds no rendezvous.
 * - A rank that brings another nranks than the first rank to arrive is refused.
 * - A rank number is claimed once, by the first process to present it; another process
 *   claiming it is refused (each process presents its own random token).
 * - A rendezvous of the same name whose nonce is not the id's is foreign: refused.
 *
 * Refused ranks do not break the clique that is forming; if it then times out, its
 * message names the refused arrivals. So when two jobs copy one id, the first clique to
 * form claims it and the other ranks fail at once. The library cannot tell two copies of
 * one id apart: if the two jobs' ranks arrive interleaved, the four rank numbers may be
 * claimed by processes of both jobs, and that clique forms; every job then has ranks that
 * failed (never a silent success everywhere). Make one id per communicator and job.
 *
 * The process that made the id keeps its rendezvous open until it exits: make the id
 * in a process that outlives the initialisation (a rank, or the launcher that waits
 * for them), as NCCL's bootstrap root. Nothing stays in /dev/shm: the rendezvous goes
 * when the clique forms, when a rank gives up (timeout, a dead peer), when the maker
 * exits, or, if every process involved was killed, at this user's next
 * gp_comm_get_unique_id() on the host.
 */
typedef struct gp_comm_id {
  char internal[GP_COMM_ID_BYTES]; /**< opaque bytes */
} gp_comm_id_t;

/** @brief Reduction operators (ncclRedOp_t; same values). */
typedef enum gp_reduce_op {
  GP_SUM = 0,  /**< sum */
  GP_PROD = 1, /**< product */
  GP_MAX = 2,  /**< maximum */
  GP_MIN = 3,  /**< minimum */
  GP_AVG = 4   /**< average (see the file comment for NCCL's rule) */
} gp_reduce_op_t;

/**
 * @brief Options of a communicator for gp_comm_init_rank_config() (ncclConfig_t).
 *        Initialise with gp_comm_config_init() or ::GP_COMM_CONFIG_INITIALIZER.
 */
typedef struct gp_comm_config {
  size_t struct_size; /**< set by gp_comm_config_init(): the library reads no further */
  /** 1 (default): gp_comm_init_rank_config() returns once every rank has joined.
   *  0: it returns at once; gp_comm_get_async_error() reports ::GP_ERROR_NOT_READY
   *  until the clique is complete, then ::GP_SUCCESS or the failure. Operations
   *  enqueued meanwhile wait for the clique (ncclConfig_t::blocking). */
  int blocking;
  /** Seconds a rank waits for its peers, in initialisation and in every operation,
   *  before the communicator fails with ::GP_ERROR_TIMEOUT; 0 (default) means the
   *  `GP_COMM_TIMEOUT_S` environment variable, else ::GP_COMM_TIMEOUT_DEFAULT_S. */
  double timeout_s;
} gp_comm_config_t;

/** @brief Static initialiser of a ::gp_comm_config_t with the defaults. */
#define GP_COMM_CONFIG_INITIALIZER {sizeof(gp_comm_config_t), 1, 0.0}

/** @brief Sets the defaults of a ::gp_comm_config_t (blocking, default timeout). */
static inline void gp_comm_config_init(gp_comm_config_t *config) {
  config->struct_size = sizeof(*config);
  config->blocking = 1;
  config->timeout_s = 0.0;
}

/**
 * @brief Makes a new unique id (ncclGetUniqueId). Call it on one rank and copy the id
 *        to the others. On the cpu backend it opens the host's rendezvous for the id
 *        (see ::gp_comm_id_t), after removing this user's rendezvous that can never
 *        complete.
 * @param[out] id the id.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (@p id NULL); ::GP_ERROR_NOT_SUPPORTED
 *         (cuda/hip: NCCL/RCCL missing or too old; the message names the library);
 *         ::GP_ERROR_COMM (the native library failed; cpu: the shared-memory segment
 *         could not be made); ::GP_ERROR_OUT_OF_MEMORY (cpu: /dev/shm is full).
 */
GP_API gp_status_t gp_comm_get_unique_id(gp_comm_id_t *id);

/**
 * @brief Joins a clique of @p nranks ranks as rank @p rank, on the current device
 *        (ncclCommInitRank). Returns once every rank has joined: each rank must call
 *        it from its own thread or process, or inside a group (gp_group_start()).
 * @param[out] comm the new communicator (NULL on failure).
 * @param[in] nranks ranks in the clique, >= 1.
 * @param[in] id the id from gp_comm_get_unique_id(), the same on every rank.
 * @param[in] rank this rank, 0 <= rank < nranks.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p comm, @p nranks or @p rank out
 *         of range, an id not made by this backend, a rank that joined twice, two ranks
 *         of one process on one device; cpu, at once: an id whose clique has formed or
 *         failed (single use), another nranks than the clique's, a rank number another
 *         process claimed, a foreign rendezvous: see ::gp_comm_id_t);
 *         ::GP_ERROR_TIMEOUT (the clique was not complete within the timeout: the message
 *         names the rank that did not come, and the arrivals that were refused); ::GP_ERROR_COMM (a peer died, or the rendezvous failed);
 *         ::GP_ERROR_OUT_OF_MEMORY (no memory, or cpu: /dev/shm too small: the message
 *         says how large it must be); ::GP_ERROR_NOT_SUPPORTED (NCCL/RCCL missing or too
 *         old); ::GP_ERROR_NO_DEVICE.
 */
GP_API gp_status_t gp_comm_init_rank(gp_comm_t *comm, int nranks, gp_comm_id_t id, int rank);

/**
 * @brief gp_comm_init_rank() with options (ncclCommInitRankConfig).
 * @param[out] comm the new communicator (NULL on failure).
 * @param[in] nranks ranks in the clique, >= 1.
 * @param[in] id the id from gp_comm_get_unique_id(), the same on every rank.
 * @param[in] rank this rank, 0 <= rank < nranks.
 * @param[in] config options; NULL means the defaults. Fields beyond its struct_size are
 *            taken as defaults.
 * @return as gp_comm_init_rank(), plus ::GP_ERROR_INVALID_VALUE for a bad @p config
 *         (struct_size too small, blocking not 0 or 1, negative or NaN timeout). With
 *         blocking = 0, failures of the rendezvous are reported later by
 *         gp_comm_get_async_error().
 */
GP_API gp_status_t gp_comm_init_rank_config(gp_comm_t *comm, int nranks, gp_comm_id_t id,
                                            int rank, const gp_comm_config_t *config);

/**
 * @brief Makes a clique of @p ndev ranks in this process, rank i on device
 *        devices[i] (ncclCommInitAll).
 * @param[out] comms array of @p ndev communicators, rank order (all NULL on failure).
 * @param[in] ndev number of ranks, >= 1.
 * @param[in] devices @p ndev distinct device ordinals, or NULL for 0 .. ndev-1.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p comms, @p ndev < 1, a device
 *         listed twice); ::GP_ERROR_INVALID_DEVICE (an ordinal that names no device);
 *         ::GP_ERROR_NOT_SUPPORTED; ::GP_ERROR_COMM; ::GP_ERROR_TIMEOUT;
 *         ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_comm_init_all(gp_comm_t *comms, int ndev, const int *devices);

/**
 * @brief Splits a communicator (ncclCommSplit): the ranks that pass the same @p color
 *        form a new communicator, ordered by @p key (ties by rank in @p comm). A
 *        collective call on @p comm: every rank of it must call, in the same order as
 *        its other calls on @p comm; a thread that owns several ranks calls inside a
 *        group. The new communicator inherits the timeout and blocking mode of @p comm.
 * @param[in] comm the communicator to split.
 * @param[in] color >= 0, or ::GP_COMM_SPLIT_NOCOLOR to join no new communicator.
 * @param[in] key orders the ranks of the new communicator.
 * @param[out] newcomm the new communicator, NULL with ::GP_COMM_SPLIT_NOCOLOR.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_HANDLE (@p comm); ::GP_ERROR_INVALID_VALUE
 *         (NULL @p newcomm, color < -1); ::GP_ERROR_COMM / ::GP_ERROR_TIMEOUT as for
 *         collectives; ::GP_ERROR_NOT_SUPPORTED (NCCL older than 2.18).
 */
GP_API gp_status_t gp_comm_split(gp_comm_t comm, int color, int key, gp_comm_t *newcomm);

/**
 * @brief Waits until the operations enqueued on @p comm have finished (each is bounded
 *        by the timeout), then releases it (ncclCommFinalize + ncclCommDestroy). Peers
 *        still waiting for this rank fail with ::GP_ERROR_COMM. NULL is a no-op.
 * @param[in] comm the communicator.
 * @return ::GP_SUCCESS (a failed communicator is released too: its error was returned by
 *         the calls that waited on its operations); ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_comm_destroy(gp_comm_t comm);

/**
 * @brief Stops the communicator's pending operations and releases it without waiting
 *        for peers (ncclCommAbort): its pending operations, and the peers' operations
 *        on the clique, fail with ::GP_ERROR_COMM promptly. Never hangs: on cuda/hip a
 *        native abort that does not return within the timeout (10 s at most) is left
 *        behind, with ::GP_ERROR_TIMEOUT. NULL is a no-op.
 * @param[in] comm the communicator.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_HANDLE; ::GP_ERROR_TIMEOUT.
 */
GP_API gp_status_t gp_comm_abort(gp_comm_t comm);

/**
 * @brief This rank's number in the communicator (ncclCommUserRank).
 * @param[in] comm the communicator.
 * @param[out] rank 0 .. size-1.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_HANDLE; ::GP_ERROR_INVALID_VALUE (NULL @p rank).
 */
GP_API gp_status_t gp_comm_rank(gp_comm_t comm, int *rank);

/**
 * @brief Number of ranks in the communicator (ncclCommCount).
 * @param[in] comm the communicator.
 * @param[out] size >= 1.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_HANDLE; ::GP_ERROR_INVALID_VALUE (NULL @p size).
 */
GP_API gp_status_t gp_comm_size(gp_comm_t comm, int *size);

/**
 * @brief The device of this rank (ncclCommCuDevice).
 * @param[in] comm the communicator.
 * @param[out] device its device ordinal.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_HANDLE; ::GP_ERROR_INVALID_VALUE (NULL @p device).
 */
GP_API gp_status_t gp_comm_device(gp_comm_t comm, int *device);

/**
 * @brief The communicator's state (ncclCommGetAsyncError): ::GP_SUCCESS while healthy,
 *        ::GP_ERROR_NOT_READY while a non-blocking initialisation is in progress, else
 *        the error that broke it (::GP_ERROR_COMM, ::GP_ERROR_TIMEOUT), which stays.
 *        When @p status is an error, gp_last_error_message() says what happened.
 * @param[in] comm the communicator.
 * @param[out] status the state.
 * @return ::GP_SUCCESS (the query worked); ::GP_ERROR_INVALID_HANDLE;
 *         ::GP_ERROR_INVALID_VALUE (NULL @p status).
 */
GP_API gp_status_t gp_comm_get_async_error(gp_comm_t comm, gp_status_t *status);

/**
 * @brief recv = op over all ranks of send, on every rank (ncclAllReduce).
 * @param[in] send @p count elements.
 * @param[out] recv @p count elements; may equal @p send (in place).
 * @param[in] count elements per rank.
 * @param[in] dtype element type (every ::gp_dtype_t; fp8 on cuda needs NCCL 2.24 and
 *            sm_90, and is not supported by RCCL).
 * @param[in] op reduction.
 * @param[in] comm the communicator.
 * @param[in] stream a stream of the communicator's device (NULL: the current device's
 *            default stream, which must be the communicator's device).
 * @return ::GP_SUCCESS (enqueued); ::GP_ERROR_INVALID_VALUE (NULL buffers with count > 0,
 *         bad dtype or op, a buffer range past its allocation, a stream of another
 *         device; on the cpu backend, a buffer in device memory already freed, or in
 *         memory gpuport neither allocated nor registered (plain malloc, the stack),
 *         which is not device-accessible: NCCL's kernels fault on it; the message names
 *         the buffer); ::GP_ERROR_INVALID_HANDLE (@p comm or @p stream);
 *         ::GP_ERROR_NOT_SUPPORTED (dtype on this backend); the communicator's error
 *         (::GP_ERROR_COMM, ::GP_ERROR_TIMEOUT) once it has failed.
 */
GP_API gp_status_t gp_all_reduce(const void *send, void *recv, size_t count, gp_dtype_t dtype,
                                 gp_reduce_op_t op, gp_comm_t comm, gp_stream_t stream);

/**
 * @brief Copies @p count elements of rank @p root's send to every rank's recv
 *        (ncclBroadcast).
 * @param[in] send read on the root only (may be NULL elsewhere).
 * @param[out] recv @p count elements; on the root it may equal @p send.
 * @param[in] count elements.
 * @param[in] root 0 <= root < size.
 * @param[in] dtype element type.
 * @param[in] comm the communicator.
 * @param[in] stream a stream of the communicator's device (NULL: the current device's
 *            default stream).
 * @return as gp_all_reduce(), plus ::GP_ERROR_INVALID_VALUE for @p root out of range.
 */
GP_API gp_status_t gp_broadcast(const void *send, void *recv, size_t count, gp_dtype_t dtype,
                                int root, gp_comm_t comm, gp_stream_t stream);

/**
 * @brief recv on rank @p root = op over all ranks of send (ncclReduce).
 * @param[out] recv @p count elements on the root (may be NULL elsewhere; may equal send).
 * @param[in] send @p count elements.
 * @param[in] count elements.
 * @param[in] root 0 <= root < size.
 * @param[in] dtype element type.
 * @param[in] op reduction.
 * @param[in] comm the communicator.
 * @param[in] stream a stream of the communicator's device (NULL: the current device's
 *            default stream).
 * @return as gp_broadcast().
 */
GP_API gp_status_t gp_reduce(const void *send, void *recv, size_t count, gp_dtype_t dtype,
                             gp_reduce_op_t op, int root, gp_comm_t comm, gp_stream_t stream);

/**
 * @brief recv[i * sendcount ...] = send of rank i, on every rank (ncclAllGather).
 * @param[in] send @p sendcount elements (in place: send == recv + rank * sendcount).
 * @param[out] recv size * @p sendcount elements.
 * @param[in] sendcount elements contributed by each rank.
 * @param[in] dtype element type.
 * @param[in] comm the communicator.
 * @param[in] stream a stream of the communicator's device (NULL: the current device's
 *            default stream).
 * @return as gp_all_reduce().
 */
GP_API gp_status_t gp_all_gather(const void *send, void *recv, size_t sendcount, gp_dtype_t dtype,
                                 gp_comm_t comm, gp_stream_t stream);

/**
 * @brief recv on rank r = block r of (op over all ranks of send) (ncclReduceScatter).
 * @param[in] send size * @p recvcount elements.
 * @param[out] recv @p recvcount elements (in place: recv == send + rank * recvcount).
 * @param[in] recvcount elements each rank receives.
 * @param[in] dtype element type.
 * @param[in] op reduction.
 * @param[in] comm the communicator.
 * @param[in] stream a stream of the communicator's device (NULL: the current device's
 *            default stream).
 * @return as gp_all_reduce().
 */
GP_API gp_status_t gp_reduce_scatter(const void *send, void *recv, size_t recvcount,
                                     gp_dtype_t dtype, gp_reduce_op_t op, gp_comm_t comm,
                                     gp_stream_t stream);

/**
 * @brief Block j of send goes to rank j, which stores it as its block i (i: the sender)
 *        (ncclAlltoAll).
 * @param[in] send size * @p count_per_peer elements.
 * @param[out] recv size * @p count_per_peer elements; may equal @p send on the cpu
 *             backend (NCCL defines no in-place all-to-all: ::GP_ERROR_NOT_SUPPORTED there).
 * @param[in] count_per_peer elements exchanged with each rank.
 * @param[in] dtype element type.
 * @param[in] comm the communicator.
 * @param[in] stream a stream of the communicator's device (NULL: the current device's
 *            default stream).
 * @return as gp_all_reduce().
 */
GP_API gp_status_t gp_all_to_all(const void *send, void *recv, size_t count_per_peer,
                                 gp_dtype_t dtype, gp_comm_t comm, gp_stream_t stream);

/**
 * @brief Sends @p count elements to rank @p peer, which receives them with gp_recv()
 *        (ncclSend). Messages between two ranks arrive in the order sent. Outside a
 *        group the send waits for the matching receive (pair them across ranks, or
 *        use a group: the send/receive calls of a group never deadlock, whatever
 *        their order).
 * @param[in] buf @p count elements.
 * @param[in] count elements; must equal the receiver's count (the cpu backend checks).
 * @param[in] peer 0 <= peer < size; may be this rank.
 * @param[in] dtype element type.
 * @param[in] comm the communicator.
 * @param[in] stream a stream of the communicator's device (NULL: the current device's
 *            default stream).
 * @return as gp_all_reduce(), plus ::GP_ERROR_INVALID_VALUE for @p peer out of range.
 */
GP_API gp_status_t gp_send(const void *buf, size_t count, gp_dtype_t dtype, int peer,
                           gp_comm_t comm, gp_stream_t stream);

/**
 * @brief Receives @p count elements sent by rank @p peer with gp_send() (ncclRecv).
 * @param[out] buf @p count elements.
 * @param[in] count elements; must equal the sender's count (the cpu backend checks).
 * @param[in] peer 0 <= peer < size; may be this rank.
 * @param[in] dtype element type.
 * @param[in] comm the communicator.
 * @param[in] stream a stream of the communicator's device (NULL: the current device's
 *            default stream).
 * @return as gp_send().
 */
GP_API gp_status_t gp_recv(void *buf, size_t count, gp_dtype_t dtype, int peer, gp_comm_t comm,
                           gp_stream_t stream);

/**
 * @brief Starts a group on the calling thread (ncclGroupStart): the collective,
 *        send/receive, gp_comm_init_rank*() and gp_comm_split() calls up to the
 *        matching gp_group_end() are checked at once and issued together there, so one
 *        thread can drive several ranks and point-to-point calls never deadlock.
 *        Groups nest; the outermost gp_group_end() issues. A thread that exits with a
 *        group open drops its calls: the communicators its gp_comm_init_rank*() and
 *        gp_comm_split() calls were making are freed, their outputs never written.
 * @return ::GP_SUCCESS; ::GP_ERROR_OUT_OF_MEMORY (no host memory for the thread's group).
 */
GP_API gp_status_t gp_group_start(void);

/**
 * @brief Ends a group (ncclGroupEnd); the outermost one issues the group's calls
 *        and returns once they are enqueued (communicators made in the group are
 *        written to their gp_comm_t * then).
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (no group is open on this thread);
 *         the first failure of the group's calls, as those calls return it.
 */
GP_API gp_status_t gp_group_end(void);

GP_EXTERN_C_END

#endif /* GP_COMM_H */
