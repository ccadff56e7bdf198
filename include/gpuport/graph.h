/**
 * @file gpuport/graph.h
 * @brief Graphs: record the work enqueued on streams once (stream capture), then replay
 *        it many times with one call (CUDA graphs).
 * @ingroup runtime
 *
 * The model is CUDA's stream capture (CUDA C++ Programming Guide, "CUDA Graphs",
 * "Creating a Graph Using Stream Capture"):
 * @code
 * gp_graph_t g;
 * gp_graph_exec_t x;
 * GP_CHECK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
 * GP_CHECK(gp_launch(k, grid, block, 0, s, args));      // recorded, not run
 * GP_CHECK(gp_memcpy_async(host, dev, bytes, s));       // recorded, not run
 * GP_CHECK(gp_stream_end_capture(s, &g));
 * GP_CHECK(gp_graph_instantiate(&x, g));
 * for (int i = 0; i < 100; i++) GP_CHECK(gp_graph_launch(x, s));  // runs it all
 * @endcode
 *
 * What is recorded: kernel launches (gp_launch, and so gp_gemm and gp_attention_fwd),
 * asynchronous copies and sets, host functions (gp_launch_host_func), and the
 * dependencies between them. Each captured operation depends on the operations
 * captured before it on the same stream. Other streams join a capture by waiting
 * (gp_stream_wait_event()) on an event recorded in it: their work is recorded into the
 * same graph, after what the event marks, and the origin stream must wait on an event
 * recorded on each of them before the capture ends ("fork and join"). An event recorded
 * during a capture only marks a point of it (no separate node): it can be waited on
 * within the capture, not queried or synchronised.
 *
 * What fails (as on CUDA, with ::GP_ERROR_NOT_SUPPORTED and a message naming the
 * capture): synchronising or querying a capturing stream, synchronous copies and sets
 * (they run in the legacy default stream, which would have to wait for the capturing
 * stream), any use of the legacy default stream while a blocking stream of its device
 * is capturing, gp_device_synchronize(), and allocation or release of memory
 * (gp_malloc(), gp_free(), gp_malloc_async(), gp_free_async(), gp_malloc_host(), ...)
 * within the scope that the capture mode protects. A failed call invalidates the
 * capture: later operations on its streams fail too, and gp_stream_end_capture()
 * returns the error and no graph.
 *
 * Replay: gp_graph_launch() enqueues the whole graph as one operation of a stream.
 * Operations run in an order consistent with the recorded dependencies; kernel
 * arguments, copy and set parameters and host-function arguments are those of the
 * capture (kernel arguments were copied at capture time, as gp_launch() copies them).
 * Memory named by captured operations must stay valid for as long as the graph is
 * launched. Launches of one executable graph are ordered one after another, as CUDA
 * orders them, even on different streams. On the cpu backend a graph runs on the
 * stream's worker thread, its operations one after another in dependency order (each
 * kernel still uses every executor thread); on CUDA and HIP it is a native graph.
 */
#ifndef GP_GRAPH_H
#define GP_GRAPH_H

#include <stddef.h>
#include <gpuport/export.h>
#include <gpuport/status.h>
#include <gpuport/runtime.h>

GP_EXTERN_C_BEGIN

/** @brief A recorded graph of operations and their dependencies (cudaGraph_t). */
typedef struct gp_graph_s *gp_graph_t;
/** @brief An executable graph made from a ::gp_graph_t, ready to launch (cudaGraphExec_t). */
typedef struct gp_graph_exec_s *gp_graph_exec_t;

/**
 * @brief Which calls a capture forbids, and in which threads (cudaStreamCaptureMode).
 *
 * "Unsafe" calls are those that capture cannot record and that would make the graph
 * wrong: memory allocation and release, synchronous copies and sets, and device
 * synchronisation.
 */
typedef enum gp_capture_mode {
  /** Unsafe calls fail in the capturing thread, and in every other thread while this
   *  capture is active (cudaStreamCaptureModeGlobal: the safest, CUDA's recommendation). */
  GP_CAPTURE_MODE_GLOBAL = 0,
  /** Unsafe calls fail in the capturing thread only (cudaStreamCaptureModeThreadLocal). */
  GP_CAPTURE_MODE_THREAD_LOCAL = 1,
  /** Unsafe calls are allowed (cudaStreamCaptureModeRelaxed); the capture may then be
   *  ended from another thread. Operations on the capturing streams are still recorded,
   *  and synchronising them still fails. */
  GP_CAPTURE_MODE_RELAXED = 2
} gp_capture_mode_t;

/** @brief Capture state of a stream (cudaStreamCaptureStatus). */
typedef enum gp_capture_status {
  GP_CAPTURE_STATUS_NONE = 0,       /**< not capturing */
  GP_CAPTURE_STATUS_ACTIVE = 1,     /**< capturing: work is recorded, not run */
  GP_CAPTURE_STATUS_INVALIDATED = 2 /**< capturing, but a failed call invalidated the capture:
                                         gp_stream_end_capture() will fail */
} gp_capture_status_t;

/**
 * @brief Starts recording the work enqueued on @p stream into a graph instead of running
 *        it (cudaStreamBeginCapture).
 * @param[in] stream a created stream or ::GP_STREAM_PER_THREAD, not already capturing.
 * @param[in] mode which calls the capture forbids, see ::gp_capture_mode_t. Captures in
 *            ::GP_CAPTURE_MODE_GLOBAL and ::GP_CAPTURE_MODE_THREAD_LOCAL must be ended
 *            by the thread that began them.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (unknown @p mode, or @p stream is
 *         already capturing, itself or as a stream joined to another capture);
 *         ::GP_ERROR_INVALID_HANDLE; ::GP_ERROR_NOT_SUPPORTED (@p stream is the legacy
 *         default stream, NULL or ::GP_STREAM_LEGACY, which CUDA cannot capture).
 */
GP_API gp_status_t gp_stream_begin_capture(gp_stream_t stream, gp_capture_mode_t mode);

/**
 * @brief Ends the capture begun on @p stream and returns the recorded graph
 *        (cudaStreamEndCapture). Streams that joined the capture leave it.
 * @param[in] stream the stream given to gp_stream_begin_capture().
 * @param[out] graph the graph (destroy with gp_graph_destroy()); NULL on failure.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p graph; @p stream is not
 *         capturing, or joined a capture begun on another stream; a non-relaxed capture
 *         ended by another thread; a stream that joined the capture was not joined back
 *         into @p stream); ::GP_ERROR_INVALID_HANDLE; ::GP_ERROR_NOT_SUPPORTED (the
 *         capture was invalidated by a call it forbids, or by a wait on an event of
 *         another capture: on the cpu backend the message names the cause).
 *         The capture ends in every case but the first three.
 */
GP_API gp_status_t gp_stream_end_capture(gp_stream_t stream, gp_graph_t *graph);

/**
 * @brief Whether @p stream is capturing (cudaStreamIsCapturing).
 * @param[in] stream any stream; the legacy default stream never captures.
 * @param[out] status ::GP_CAPTURE_STATUS_NONE, _ACTIVE or _INVALIDATED.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p status), ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_stream_is_capturing(gp_stream_t stream, gp_capture_status_t *status);

/**
 * @brief Number of operations (nodes) in @p graph (cudaGraphGetNodes with a NULL node
 *        array). Each captured kernel launch, copy, set and host function is one node;
 *        event records and waits are dependencies, not nodes.
 * @param[in] graph the graph.
 * @param[out] count number of nodes.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p count), ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_graph_get_node_count(gp_graph_t graph, size_t *count);

/**
 * @brief Makes an executable graph from @p graph (cudaGraphInstantiate). @p graph may be
 *        destroyed afterwards, or instantiated again; each executable graph is independent.
 * @param[out] exec the executable graph (destroy with gp_graph_exec_destroy()); NULL on
 *             failure.
 * @param[in] graph the graph.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p exec),
 *         ::GP_ERROR_INVALID_HANDLE, ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_graph_instantiate(gp_graph_exec_t *exec, gp_graph_t graph);

/**
 * @brief Enqueues one run of the whole graph on @p stream (cudaGraphLaunch): it starts
 *        after earlier work on @p stream and after earlier launches of @p exec, and
 *        later work on @p stream waits for all of it. Launching into a capturing stream
 *        records the graph as one node of the new graph (a child graph).
 * @param[in] exec the executable graph.
 * @param[in] stream any stream, the default streams included.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_HANDLE, ::GP_ERROR_NOT_SUPPORTED (the legacy
 *         default stream while a blocking stream is capturing, or an invalidated capture).
 *         Faults of the graph's kernels are reported asynchronously, as for gp_launch().
 */
GP_API gp_status_t gp_graph_launch(gp_graph_exec_t exec, gp_stream_t stream);

/**
 * @brief Destroys @p graph (cudaGraphDestroy). Executable graphs made from it stay
 *        valid. NULL is a no-op.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_graph_destroy(gp_graph_t graph);

/**
 * @brief Destroys @p exec (cudaGraphExecDestroy). Launches already enqueued still run.
 *        NULL is a no-op.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_graph_exec_destroy(gp_graph_exec_t exec);

GP_EXTERN_C_END

#endif /* GP_GRAPH_H */
