/**
 * @file gpuport/mpi.h
 * @brief Communicators across nodes, bootstrapped over MPI (optional: link
 *        libgpuport-mpi, `pkg-config --libs gpuport-mpi`, with your backend's library).
 * @ingroup comm
 *
 * gp_comm_init_mpi() turns an MPI communicator into a gpuport communicator of the same
 * ranks, on every backend:
 *   - cuda/hip: rank 0 makes the unique id and MPI broadcasts it, as NCCL's own MPI
 *     example does; each rank joins on its current device (pick it from the local rank:
 *     MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)). NCCL/RCCL then carries the data.
 *   - cpu: the collectives of the new communicator run over MPI itself (Open MPI, MPICH),
 *     so CPU jobs span nodes on an existing engine; f16, bf16 and fp8 are reduced in f32,
 *     ::GP_AVG follows NCCL's rule, and every operation honours the communicator's
 *     timeout. With MPI_THREAD_MULTIPLE the operations run in stream order on the
 *     stream's thread; with a lower thread level they run in the calling thread once the
 *     stream has drained (still in order, but the call blocks).
 *
 * Ranks of different gpuport versions or backends are refused at once (every rank
 * exchanges its version first) instead of failing later in a collective.
 */
#ifndef GP_MPI_H
#define GP_MPI_H

#include <mpi.h>
#include <gpuport/comm.h>

GP_EXTERN_C_BEGIN

/**
 * @brief Makes a gpuport communicator of the ranks of @p mpi_comm (a collective call
 *        over @p mpi_comm: every rank calls it). The gpuport rank equals the MPI rank.
 *        The communicator's timeout is `GP_COMM_TIMEOUT_S` (default 300 s).
 * @param[out] comm the new communicator (NULL on failure).
 * @param[in] mpi_comm the ranks; it is duplicated, so the application keeps using it.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p comm, MPI not initialised or
 *         already finalised, MPI_COMM_NULL); ::GP_ERROR_COMM (an MPI call failed, or the
 *         ranks run different gpuport versions or backends: the message names them);
 *         the errors of gp_comm_get_unique_id() and gp_comm_init_rank() on cuda/hip.
 */
GP_API gp_status_t gp_comm_init_mpi(gp_comm_t *comm, MPI_Comm mpi_comm);

GP_EXTERN_C_END

#endif /* GP_MPI_H */
