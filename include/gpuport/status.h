/**
 * @file gpuport/status.h
 * @brief The one status type, its names and strings, the thread-local error message,
 *        and asynchronous (sticky) errors.
 * @ingroup runtime
 *
 * Every fallible gpuport function returns a ::gp_status_t. The values below are
 * stable once released. The list is one X-macro (as libuv's UV_ERRNO_MAP), so the
 * enum, gp_status_name() and gp_status_string() cannot drift apart.
 */
#ifndef GP_STATUS_H
#define GP_STATUS_H

#include <stdio.h> /* GP_CHECK prints to stderr */
#include <gpuport/export.h>

GP_EXTERN_C_BEGIN

/**
 * @brief X-macro list of every status: X(name, value, sentence).
 *
 * The sentences are what gp_status_string() returns.
 */
#define GP_STATUS_LIST(X)                                                                     \
  X(GP_SUCCESS, 0, "no error")                                                                \
  X(GP_ERROR_INVALID_VALUE, 1, "an argument is NULL, out of range or inconsistent")          \
  X(GP_ERROR_OUT_OF_MEMORY, 2, "the allocation could not be satisfied")                      \
  X(GP_ERROR_NO_DEVICE, 3, "no device of this backend is present or a driver is missing")    \
  X(GP_ERROR_INVALID_DEVICE, 4, "the device ordinal does not name a device")                  \
  X(GP_ERROR_INVALID_HANDLE, 5, "the handle is NULL, destroyed, or not a gpuport handle")     \
  X(GP_ERROR_NOT_READY, 6, "the work is not complete yet (not an error)")                     \
  X(GP_ERROR_NOT_SUPPORTED, 7, "the operation or data type is not supported here")            \
  X(GP_ERROR_INVALID_CONFIGURATION, 8, "grid, block or shared memory exceeds device limits")  \
  X(GP_ERROR_LAUNCH_FAILED, 9, "a kernel faulted while running")                              \
  X(GP_ERROR_NOT_FOUND, 10, "the named object was not found")                                 \
  X(GP_ERROR_INVALID_IMAGE, 11, "the kernel image or source is invalid for this device")      \
  X(GP_ERROR_COMM, 12, "a collective failed or a peer is gone")                               \
  X(GP_ERROR_TIMEOUT, 13, "the operation did not complete before its deadline")               \
  X(GP_ERROR_BACKEND, 14, "the native runtime reported an error with no closer match")        \
  X(GP_ERROR_INTERNAL, 15, "an internal invariant of gpuport failed (please report it)")  \
  X(GP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, 16, "the executable graph cannot be updated from that graph")

/* Each enumerator's documentation is its sentence, taken from the list above: the
 * compiler drops the comment in the expansion, Doxygen's preprocessor keeps it with the
 * argument substituted (docs/Doxyfile: MACRO_EXPANSION), so the text exists once. */
#define GP__STATUS_ENUM(name, value, text) name = value, /**< gp_status_string(): text */
/** @brief Status returned by every fallible gpuport call (NCCL's ncclResult_t model). */
typedef enum gp_status { GP_STATUS_LIST(GP__STATUS_ENUM) } gp_status_t;
#undef GP__STATUS_ENUM

/**
 * @brief The enumerator's name, e.g. "GP_ERROR_INVALID_VALUE".
 * @param[in] status any value; unknown values give "GP_ERROR_UNKNOWN".
 * @return a static string; never NULL.
 */
GP_API const char *gp_status_name(gp_status_t status);

/**
 * @brief A one-sentence description of @p status (as cudaGetErrorString).
 * @param[in] status any value; unknown values give "unknown status".
 * @return a static string; never NULL.
 */
GP_API const char *gp_status_string(gp_status_t status);

/**
 * @brief The detailed message of the last failing gpuport call on this host thread:
 *        which call failed, which argument and why, and the native error name where
 *        there was one.
 * @return a thread-local string valid until the next gpuport call on this thread;
 *         "" when no call on this thread has failed.
 */
GP_API const char *gp_last_error_message(void);

/**
 * @brief Returns the last error of the calling host thread and resets it to
 *        ::GP_SUCCESS, as cudaGetLastError.
 *
 * CUDA Runtime API reference, cudaGetLastError: "Returns the last error that has been
 * produced by any of the runtime calls in the same instance of the CUDA runtime library
 * in the host thread and resets it to cudaSuccess." So the status is:
 *  - the current device's pending asynchronous error (a fault raised by enqueued work,
 *    e.g. ::GP_ERROR_LAUNCH_FAILED) when there is one; on the GPU backends a fault is
 *    sticky (it corrupts the context: cudaGetLastError's "Note that this function may
 *    also return error codes from previous, asynchronous launches", and such errors are
 *    not reset) and is returned again by every later call; on the CPU backend it is
 *    cleared;
 *  - else the status of the last gpuport call of this thread that failed (a launch
 *    refused with ::GP_ERROR_INVALID_CONFIGURATION, a gp_malloc() that returned
 *    ::GP_ERROR_OUT_OF_MEMORY, ...), even when successful calls came after it; calls
 *    that succeed do not reset it, as in CUDA. ::GP_ERROR_NOT_READY (gp_stream_query(),
 *    gp_event_query()) is an answer, not an error, and is never recorded.
 *
 * gp_last_error_message() keeps describing the failure returned.
 * @return ::GP_SUCCESS when nothing failed since the last reset, else the error.
 */
GP_API gp_status_t gp_get_last_error(void);

/**
 * @brief As gp_get_last_error() but resets nothing (cudaPeekAtLastError: "Returns the last
 *        error that has been produced by any of the runtime calls in the same instance of
 *        the CUDA runtime library in the host thread. This call does not reset the error
 *        to cudaSuccess like cudaGetLastError()."): calling it twice returns the same
 *        status.
 * @return ::GP_SUCCESS, the pending asynchronous error, or the last failing call's status.
 */
GP_API gp_status_t gp_peek_at_last_error(void);

/**
 * @brief Convenience for applications and examples: evaluates @p expr, and on failure
 *        prints the status and gp_last_error_message() to stderr and returns the
 *        status from the enclosing function. (The library itself uses another macro.)
 */
#define GP_CHECK(expr)                                                                  \
  do {                                                                                  \
    gp_status_t gp_check_s_ = (expr);                                                   \
    if (gp_check_s_ != GP_SUCCESS) {                                                    \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #expr,          \
              gp_status_name(gp_check_s_), gp_last_error_message());                   \
      return gp_check_s_;                                                               \
    }                                                                                   \
  } while (0)

GP_EXTERN_C_END

#endif /* GP_STATUS_H */
