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
 *
 * Graphs can also be built node by node (CUDA Runtime API reference, "Graph Management":
 * cudaGraphCreate, cudaGraphAddKernelNode, ...):
 * @code
 * gp_graph_t g;
 * gp_graph_node_t copy, k;
 * GP_CHECK(gp_graph_create(&g, 0));
 * GP_CHECK(gp_graph_add_memcpy_node(&copy, g, NULL, 0, dev_in, host_in, bytes));
 * gp_kernel_node_params_t p = {kernel, grid, block, 0, args};
 * GP_CHECK(gp_graph_add_kernel_node(&k, g, &copy, 1, &p));   // runs after the copy
 * GP_CHECK(gp_graph_instantiate(&x, g));
 * @endcode
 * A node runs after every node it depends on; nodes without a path between them may run
 * in any order. Parameters are copied when a node is added or set (kernel arguments
 * included), so the caller's variables may change afterwards. An executable graph is a
 * snapshot: later changes to its graph do not reach it, except through
 * gp_graph_exec_update() or gp_graph_exec_kernel_node_set_params(), which affect the
 * launches enqueued after them only.
 *
 * Node handles (::gp_graph_node_t) belong to their graph and die with it. On the cpu
 * backend they are checked like every gpuport handle (a node of a destroyed graph is
 * ::GP_ERROR_INVALID_HANDLE, a node of another graph ::GP_ERROR_INVALID_VALUE); on CUDA
 * and HIP they are the native nodes, checked by the runtime.
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
/** @brief One node of a ::gp_graph_t (cudaGraphNode_t); it lives as long as its graph. */
typedef struct gp_graph_node_s *gp_graph_node_t;

/** @brief What a node does (cudaGraphNodeType, with CUDA's values). */
typedef enum gp_graph_node_type {
  GP_GRAPH_NODE_TYPE_KERNEL = 0, /**< a kernel launch (cudaGraphNodeTypeKernel) */
  GP_GRAPH_NODE_TYPE_MEMCPY = 1, /**< a copy (cudaGraphNodeTypeMemcpy) */
  GP_GRAPH_NODE_TYPE_MEMSET = 2, /**< a set (cudaGraphNodeTypeMemset) */
  GP_GRAPH_NODE_TYPE_HOST = 3,   /**< a host function (cudaGraphNodeTypeHost) */
  GP_GRAPH_NODE_TYPE_GRAPH = 4,  /**< a child graph (cudaGraphNodeTypeGraph): a graph
                                      launched into a capturing stream */
  GP_GRAPH_NODE_TYPE_EMPTY = 5   /**< no operation, a point to depend on (cudaGraphNodeTypeEmpty) */
} gp_graph_node_type_t;

/**
 * @brief A kernel node's launch (cudaKernelNodeParams): what gp_launch() takes, less the
 *        stream.
 */
typedef struct gp_kernel_node_params {
  gp_kernel_t kernel;  /**< from GP_KERNEL_REF() (cudaKernelNodeParams::func) */
  gp_dim3_t grid;      /**< blocks per dimension, as gp_launch() (gridDim) */
  gp_dim3_t block;     /**< threads per dimension, as gp_launch() (blockDim) */
  size_t shared_bytes; /**< dynamic shared memory per block, bytes (sharedMemBytes) */
  void **args;         /**< pointers to each argument, as gp_launch() (kernelParams); the
                            values are copied when the parameters are given */
} gp_kernel_node_params_t;

/**
 * @brief A set node's operation (cudaMemsetParams, one row): @p width elements of
 *        @p element_size bytes at @p dst each become @p value.
 */
typedef struct gp_memset_params {
  void *dst;             /**< device memory, aligned to @p element_size (dst) */
  unsigned value;        /**< the value; only its low @p element_size bytes are used (value) */
  unsigned element_size; /**< 1, 2 or 4 bytes (elementSize) */
  size_t width;          /**< number of elements, at least 1 (width; height is 1) */
} gp_memset_params_t;

/** @brief A host node's function (cudaHostNodeParams): fn(user_data) runs in stream order. */
typedef struct gp_host_node_params {
  void (*fn)(void *);  /**< the function; it must not call gpuport functions that wait for
                            device work, as for gp_launch_host_func() (fn) */
  void *user_data;     /**< its argument (userData) */
} gp_host_node_params_t;

/** @brief Why gp_graph_exec_update() could not update (cudaGraphExecUpdateResult, with
 *         CUDA's values). */
typedef enum gp_graph_exec_update_result {
  GP_GRAPH_EXEC_UPDATE_SUCCESS = 0,                   /**< updated */
  GP_GRAPH_EXEC_UPDATE_ERROR = 1,                     /**< an invalid value: see the message */
  GP_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED = 2,    /**< nodes or dependencies were added
                                                           or removed */
  GP_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED = 3,   /**< a node has another type */
  GP_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED = 4,    /**< a kernel node's kernel changed in
                                                           a way the runtime cannot update */
  GP_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED = 5,  /**< a parameter changed in a way
                                                           that cannot be updated */
  GP_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED = 6,       /**< a node cannot be updated at all */
  GP_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE = 7, /**< the kernel changed where
                                                                   that is not supported */
  GP_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED = 8   /**< node attributes changed */
} gp_graph_exec_update_result_t;

/** @brief What gp_graph_exec_update() did (cudaGraphExecUpdateResultInfo, CUDA 12). */
typedef struct gp_graph_exec_update_result_info {
  gp_graph_exec_update_result_t result; /**< the outcome (result) */
  gp_graph_node_t error_node;           /**< the node of the new graph that failed the
                                             update, or NULL (errorNode) */
  gp_graph_node_t error_from_node;      /**< for a changed dependency, the node it comes
                                             from, or NULL (errorFromNode) */
} gp_graph_exec_update_result_info_t;

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
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p exec; a cycle of
 *         dependencies, as cudaGraphInstantiate: the message names a node on it),
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
 * @brief Destroys @p graph and its nodes (cudaGraphDestroy). Executable graphs made from
 *        it stay valid. NULL is a no-op.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_graph_destroy(gp_graph_t graph);

/**
 * @brief Destroys @p exec (cudaGraphExecDestroy). Launches already enqueued still run.
 *        NULL is a no-op.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_graph_exec_destroy(gp_graph_exec_t exec);

/* ---- explicit construction ---------------------------------------------------------------- */

/**
 * @brief Creates an empty graph (cudaGraphCreate).
 * @param[out] graph the graph (destroy with gp_graph_destroy()); NULL on failure.
 * @param[in] flags 0 (CUDA reserves the argument and requires 0).
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p graph, nonzero @p flags),
 *         ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_graph_create(gp_graph_t *graph, unsigned flags);

/**
 * @brief Adds a kernel node to @p graph (cudaGraphAddKernelNode). The argument values
 *        are copied now, as CUDA copies them.
 * @param[out] node the new node; NULL on failure.
 * @param[in] graph the graph.
 * @param[in] deps the nodes of @p graph it runs after, without repeats; NULL when
 *            @p ndeps is 0.
 * @param[in] ndeps number of @p deps.
 * @param[in] params the launch, checked as gp_launch() checks it against the current
 *            device.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p node or @p params, NULL
 *         @p deps with @p ndeps > 0, a dependency of another graph or given twice, NULL
 *         kernel or args); ::GP_ERROR_INVALID_HANDLE (@p graph, a dependency or the
 *         kernel is not live); ::GP_ERROR_INVALID_CONFIGURATION, ::GP_ERROR_INVALID_IMAGE
 *         as gp_launch(); ::GP_ERROR_NOT_SUPPORTED (on HIP, a kernel of a gpuport module,
 *         which hipGraphAddKernelNode cannot take); ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_graph_add_kernel_node(gp_graph_node_t *node, gp_graph_t graph,
                                            const gp_graph_node_t *deps, size_t ndeps,
                                            const gp_kernel_node_params_t *params);

/**
 * @brief Adds a node copying @p bytes from @p src to @p dst (cudaGraphAddMemcpyNode1D
 *        with cudaMemcpyDefault: the direction follows from the pointers).
 * @param[out] node the new node; NULL on failure.
 * @param[in] graph the graph.
 * @param[in] deps, ndeps as gp_graph_add_kernel_node().
 * @param[in] dst, src memory that gp_memcpy_async() accepts, valid whenever the graph runs.
 * @param[in] bytes at least 1.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p node, @p dst or @p src, zero
 *         @p bytes, a range outside its allocation, bad @p deps as for
 *         gp_graph_add_kernel_node()); ::GP_ERROR_INVALID_HANDLE;
 *         ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_graph_add_memcpy_node(gp_graph_node_t *node, gp_graph_t graph,
                                            const gp_graph_node_t *deps, size_t ndeps,
                                            void *dst, const void *src, size_t bytes);

/**
 * @brief Adds a node setting device memory (cudaGraphAddMemsetNode, one row).
 * @param[out] node the new node; NULL on failure.
 * @param[in] graph the graph.
 * @param[in] deps, ndeps as gp_graph_add_kernel_node().
 * @param[in] params the set: device memory (cudaGraphAddMemsetNode takes device memory
 *            only), element size 1, 2 or 4, @p dst aligned to it, width at least 1.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p node or @p params or dst,
 *         another element size, a misaligned dst, zero width, memory that is not device
 *         memory, bad @p deps); ::GP_ERROR_INVALID_HANDLE; ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_graph_add_memset_node(gp_graph_node_t *node, gp_graph_t graph,
                                            const gp_graph_node_t *deps, size_t ndeps,
                                            const gp_memset_params_t *params);

/**
 * @brief Adds a node running a host function (cudaGraphAddHostNode).
 * @param[out] node the new node; NULL on failure.
 * @param[in] graph the graph.
 * @param[in] deps, ndeps as gp_graph_add_kernel_node().
 * @param[in] params the function (not NULL) and its argument.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p node, @p params or function,
 *         bad @p deps); ::GP_ERROR_INVALID_HANDLE; ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_graph_add_host_node(gp_graph_node_t *node, gp_graph_t graph,
                                          const gp_graph_node_t *deps, size_t ndeps,
                                          const gp_host_node_params_t *params);

/**
 * @brief Adds a node that does nothing (cudaGraphAddEmptyNode): one point for many
 *        nodes to depend on, or to wait for many.
 * @param[out] node the new node; NULL on failure.
 * @param[in] graph the graph.
 * @param[in] deps, ndeps as gp_graph_add_kernel_node().
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p node, bad @p deps);
 *         ::GP_ERROR_INVALID_HANDLE; ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_graph_add_empty_node(gp_graph_node_t *node, gp_graph_t graph,
                                           const gp_graph_node_t *deps, size_t ndeps);

/**
 * @brief Adds the dependencies from[i] -> to[i]: to[i] runs after from[i]
 *        (cudaGraphAddDependencies). Cycles are not checked here; gp_graph_instantiate()
 *        refuses a graph that has one.
 * @param[in] graph the graph of every node.
 * @param[in] from, to @p n nodes each; NULL when @p n is 0.
 * @param[in] n number of dependencies.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL arrays with @p n > 0, a node of
 *         another graph, a node depending on itself, a dependency that exists already,
 *         as cudaGraphAddDependencies); ::GP_ERROR_INVALID_HANDLE;
 *         ::GP_ERROR_OUT_OF_MEMORY. On failure no dependency was added on the cpu backend.
 */
GP_API gp_status_t gp_graph_add_dependencies(gp_graph_t graph, const gp_graph_node_t *from,
                                             const gp_graph_node_t *to, size_t n);

/**
 * @brief The nodes of @p graph (cudaGraphGetNodes).
 * @param[in] graph the graph.
 * @param[out] nodes NULL to get the count only; else room for *@p count nodes: the first
 *             min(*count, number of nodes) entries get nodes, the rest NULL.
 * @param[in,out] count the room in @p nodes; receives the number of nodes, or with
 *             @p nodes the number returned (the smaller of the two, as CUDA).
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p count),
 *         ::GP_ERROR_INVALID_HANDLE, ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_graph_get_nodes(gp_graph_t graph, gp_graph_node_t *nodes, size_t *count);

/**
 * @brief What @p node does (cudaGraphNodeGetType).
 * @param[in] node a node of a live graph.
 * @param[out] type its type. On the cpu backend captured host-side work of gpuport's own
 *             (the cpu GEMM and attention) is a ::GP_GRAPH_NODE_TYPE_HOST node.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p type), ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_graph_node_get_type(gp_graph_node_t node, gp_graph_node_type_t *type);

/**
 * @brief A kernel node's parameters (cudaGraphKernelNodeGetParams).
 * @param[in] node a kernel node.
 * @param[out] params its launch; params->args points to the node's copies of the
 *             arguments, valid until the node's parameters are set again or its graph is
 *             destroyed (read them, do not write them).
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p params, not a kernel node);
 *         ::GP_ERROR_INVALID_HANDLE; ::GP_ERROR_NOT_SUPPORTED (on CUDA and HIP, a kernel
 *         node that a capture recorded: its gpuport kernel is unknown).
 */
GP_API gp_status_t gp_graph_kernel_node_get_params(gp_graph_node_t node,
                                                   gp_kernel_node_params_t *params);

/**
 * @brief Replaces a kernel node's parameters in its graph (cudaGraphKernelNodeSetParams).
 *        Executable graphs made earlier are unchanged.
 * @param[in] node a kernel node.
 * @param[in] params the new launch, checked as for gp_graph_add_kernel_node().
 * @return as gp_graph_add_kernel_node(), plus ::GP_ERROR_INVALID_VALUE when @p node is
 *         not a kernel node.
 */
GP_API gp_status_t gp_graph_kernel_node_set_params(gp_graph_node_t node,
                                                   const gp_kernel_node_params_t *params);

/**
 * @brief Replaces the parameters of a kernel node in an executable graph
 *        (cudaGraphExecKernelNodeSetParams): the launches of @p exec enqueued afterwards
 *        use them; those enqueued before are unaffected. The graph @p exec was made from
 *        is unchanged.
 * @param[in] exec the executable graph.
 * @param[in] node the kernel node, in the graph @p exec was instantiated from (which must
 *            still be alive on the cpu backend, where the node handle belongs to it).
 * @param[in] params the new launch, checked as for gp_graph_add_kernel_node(); the
 *            kernel may change too (CUDA 12 allows it within one context).
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p params, @p node is not a
 *         kernel node, was added after @p exec was instantiated or is of another graph); ::GP_ERROR_INVALID_HANDLE; ::GP_ERROR_INVALID_CONFIGURATION;
 *         ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_graph_exec_kernel_node_set_params(gp_graph_exec_t exec, gp_graph_node_t node,
                                                        const gp_kernel_node_params_t *params);

/**
 * @brief Updates @p exec in place from @p graph, when @p graph has the topology @p exec
 *        was instantiated with (cudaGraphExecUpdate, CUDA 12 signature): the same nodes,
 *        added in the same order, of the same types, with the same dependencies; then
 *        every node's parameters become those of @p graph, for the launches enqueued
 *        afterwards.
 * @param[in] exec the executable graph.
 * @param[in] graph the graph with the new parameters (for example the one @p exec was
 *            made from, after gp_graph_kernel_node_set_params()).
 * @param[out] result_info the outcome; on failure the node of @p graph at fault where
 *             one is (on the cpu backend: @p graph's node, and for a changed dependency
 *             error_from_node).
 * @return ::GP_SUCCESS; ::GP_ERROR_GRAPH_EXEC_UPDATE_FAILURE (the topology or a node's
 *         type changed: result_info->result says which; @p exec is unchanged);
 *         ::GP_ERROR_INVALID_VALUE (NULL @p result_info); ::GP_ERROR_INVALID_HANDLE;
 *         ::GP_ERROR_OUT_OF_MEMORY. On the cpu backend kernels, copies, sets and host
 *         functions may all change; a child graph node must keep its executable graph
 *         (else ::GP_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED). CUDA and HIP apply their own
 *         rules (cudaGraphExecUpdate lists them).
 */
GP_API gp_status_t gp_graph_exec_update(gp_graph_exec_t exec, gp_graph_t graph,
                                        gp_graph_exec_update_result_info_t *result_info);

GP_EXTERN_C_END

#endif /* GP_GRAPH_H */
