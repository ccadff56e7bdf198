/*
 * api_graph.c - public entry points for stream capture and graphs (gpuport/graph.h).
 * Handles of graphs and executable graphs are registered here, after the backend made
 * them, with the backend's destroy as their finaliser (internal.h "handle registry"), so
 * a destroyed or foreign handle is an error rather than a read of freed memory, and one
 * destroyed while another thread launches it lives until that launch is queued.
 * What a capture records and forbids is the backend's business: the CPU backend
 * implements CUDA's rules (src/cpu/stream.c), the GPU backends get them from the
 * native runtime.
 */
#include "api.h"
#include "launch.h"

static gp_status_t graph_fini(void *g) { return gp__be_graph_destroy(g); }
static gp_status_t exec_fini(void *x) { return gp__be_graph_exec_destroy(x); }

/* Destroys a registered graph or executable graph (a racing destroy loses). */
static gp_status_t destroy(const char *func, const char *arg, const void *h,
                           gp__handle_kind_t kind) {
  GP__TRY(gp__handle_get(h, kind, func, arg));
  if (!gp__handle_kill(h, kind, NULL)) {
    (void)gp__handle_release(h);
    return gp__error(GP_ERROR_INVALID_HANDLE, func, "'%s' (%p) was destroyed concurrently", arg, h);
  }
  return gp__handle_release(h);
}

static bool is_legacy(gp_stream_t s) { return s == NULL || s == GP_STREAM_LEGACY; }

/* ---- capture ------------------------------------------------------------------------ */

GP_API gp_status_t gp_stream_begin_capture(gp_stream_t stream, gp_capture_mode_t mode) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__CHECK_ARG(mode == GP_CAPTURE_MODE_GLOBAL || mode == GP_CAPTURE_MODE_THREAD_LOCAL ||
                    mode == GP_CAPTURE_MODE_RELAXED,
                "'mode' (%d) is not a gp_capture_mode_t", (int)mode);
  if (is_legacy(stream))
    return GP__ERR(GP_ERROR_NOT_SUPPORTED,
                   "'stream' is the legacy default stream, which cannot be captured (as "
                   "cudaStreamBeginCapture): capture a stream from gp_stream_create() or "
                   "GP_STREAM_PER_THREAD");
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  return gp__be_stream_begin_capture(s, mode);
}

GP_API gp_status_t gp_stream_end_capture(gp_stream_t stream, gp_graph_t *graph) {
  GP__CHECK_NOT_NULL(graph);
  *graph = NULL;
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__CHECK_ARG(!is_legacy(stream), "'stream' is the legacy default stream, which never captures");
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  gp_graph_t g = NULL;
  GP__TRY(gp__be_stream_end_capture(s, &g));
  gp_status_t st = gp__handle_add(g, GP__H_GRAPH, graph_fini);
  if (st != GP_SUCCESS) {
    (void)gp__be_graph_destroy(g);
    return GP__ERR(st, "cannot register the graph");
  }
  *graph = g;
  return GP_SUCCESS;
}

GP_API gp_status_t gp_stream_is_capturing(gp_stream_t stream, gp_capture_status_t *status) {
  GP__CHECK_NOT_NULL(status);
  *status = GP_CAPTURE_STATUS_NONE;
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  if (is_legacy(s)) return GP_SUCCESS;
  return gp__be_stream_is_capturing(s, status);
}

/* ---- graphs and executable graphs ------------------------------------------------------ */

GP_API gp_status_t gp_graph_get_node_count(gp_graph_t graph, size_t *count) {
  GP__CHECK_NOT_NULL(count);
  *count = 0;
  GP__TRY(gp__api_init(__func__));
  GP__HANDLE_REF const void *held = NULL;
  GP__TRY(gp__handle_hold(graph, GP__H_GRAPH, __func__, "graph", &held));
  return gp__be_graph_node_count(graph, count);
}

GP_API gp_status_t gp_graph_instantiate(gp_graph_exec_t *exec, gp_graph_t graph) {
  GP__CHECK_NOT_NULL(exec);
  *exec = NULL;
  GP__TRY(gp__api_init(__func__));
  GP__HANDLE_REF const void *held = NULL;
  GP__TRY(gp__handle_hold(graph, GP__H_GRAPH, __func__, "graph", &held));
  gp_graph_exec_t x = NULL;
  GP__TRY(gp__be_graph_instantiate(&x, graph));
  gp_status_t st = gp__handle_add(x, GP__H_GRAPH_EXEC, exec_fini);
  if (st != GP_SUCCESS) {
    (void)gp__be_graph_exec_destroy(x);
    return GP__ERR(st, "cannot register the executable graph");
  }
  *exec = x;
  return GP_SUCCESS;
}

GP_API gp_status_t gp_graph_launch(gp_graph_exec_t exec, gp_stream_t stream) {
  GP__TRY(gp__api_init(__func__));
  GP__HANDLE_REF const void *held = NULL;
  GP__TRY(gp__handle_hold(exec, GP__H_GRAPH_EXEC, __func__, "exec", &held));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  return gp__be_graph_launch(exec, s);
}

GP_API gp_status_t gp_graph_destroy(gp_graph_t graph) {
  if (graph == NULL) return GP_SUCCESS;
  GP__TRY(gp__api_init(__func__));
  return destroy(__func__, "graph", graph, GP__H_GRAPH);
}

GP_API gp_status_t gp_graph_exec_destroy(gp_graph_exec_t exec) {
  if (exec == NULL) return GP_SUCCESS;
  GP__TRY(gp__api_init(__func__));
  /* Pending launches hold references of their own in the backends. */
  return destroy(__func__, "exec", exec, GP__H_GRAPH_EXEC);
}

/* ---- explicit construction ------------------------------------------------------------------- */

/* The checks of a kernel node's parameters (those of gp_launch, less the stream). *owner
 * receives the kernel's module, held while the call uses the kernel (the node made from
 * it holds the module itself). */
static gp_status_t check_kernel_params(const char *func, const gp_kernel_node_params_t *p,
                                       gp_module_t *owner) {
  if (p == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'params' is NULL");
  GP__TRY(gp__kernel_check(p->kernel, func, owner));
  return gp__kernel_check_launch(func, p->kernel, p->grid, p->block, p->shared_bytes, p->args);
}

static gp_status_t check_memset_params(const char *func, const gp_memset_params_t *p) {
  if (p == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'params' is NULL");
  unsigned es = p->element_size;
  if (es != 1 && es != 2 && es != 4)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'params->element_size' is %u; cudaGraphAddMemsetNode takes 1, 2 or 4", es);
  if (p->width == 0)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "'params->width' is 0: a set node sets at least one element");
  if (p->dst == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'params->dst' is NULL");
  if ((uintptr_t)p->dst % es != 0)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "'params->dst' (%p) is not aligned to its %u-byte elements",
                     p->dst, es);
  if (p->width > SIZE_MAX / es)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "'params->width' (%zu) overflows the address space", p->width);
  return gp__api_check_device_range(func, "params->dst", p->dst, p->width * es);
}

/* Checks what every add takes, then adds desc's node to the registered graph. */
static gp_status_t add_node(const char *func, gp_graph_node_t *node, gp_graph_t graph,
                            const gp_graph_node_t *deps, size_t ndeps,
                            const gp__graph_node_desc_t *desc) {
  GP__HANDLE_REF const void *held = NULL;
  GP__TRY(gp__handle_hold(graph, GP__H_GRAPH, func, "graph", &held));
  if (deps == NULL && ndeps > 0)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "'deps' is NULL but 'ndeps' is %zu", ndeps);
  return gp__be_graph_add_node(node, graph, deps, ndeps, desc);
}

GP_API gp_status_t gp_graph_create(gp_graph_t *graph, unsigned flags) {
  GP__CHECK_NOT_NULL(graph);
  *graph = NULL;
  GP__TRY(gp__api_init(__func__));
  GP__CHECK_ARG(flags == 0, "'flags' (%u) must be 0, as for cudaGraphCreate", flags);
  gp_graph_t g = NULL;
  GP__TRY(gp__be_graph_create(&g));
  gp_status_t st = gp__handle_add(g, GP__H_GRAPH, graph_fini);
  if (st != GP_SUCCESS) {
    (void)gp__be_graph_destroy(g);
    return GP__ERR(st, "cannot register the graph");
  }
  *graph = g;
  return GP_SUCCESS;
}

GP_API gp_status_t gp_graph_add_kernel_node(gp_graph_node_t *node, gp_graph_t graph,
                                            const gp_graph_node_t *deps, size_t ndeps,
                                            const gp_kernel_node_params_t *params) {
  GP__CHECK_NOT_NULL(node);
  *node = NULL;
  GP__TRY(gp__api_init(__func__));
  GP__MODULE_REF gp_module_t owner = NULL;
  GP__TRY(check_kernel_params(__func__, params, &owner));
  gp__graph_node_desc_t d = {.type = GP_GRAPH_NODE_TYPE_KERNEL, .u.kernel = *params};
  return add_node(__func__, node, graph, deps, ndeps, &d);
}

GP_API gp_status_t gp_graph_add_memcpy_node(gp_graph_node_t *node, gp_graph_t graph,
                                            const gp_graph_node_t *deps, size_t ndeps,
                                            void *dst, const void *src, size_t bytes) {
  GP__CHECK_NOT_NULL(node);
  *node = NULL;
  GP__TRY(gp__api_init(__func__));
  GP__CHECK_ARG(bytes > 0, "'bytes' is 0: a copy node copies at least one byte");
  GP__CHECK_ARG(dst != NULL, "'dst' is NULL (bytes = %zu)", bytes);
  GP__CHECK_ARG(src != NULL, "'src' is NULL (bytes = %zu)", bytes);
  GP__TRY(gp__api_check_range(__func__, "dst", dst, bytes));
  GP__TRY(gp__api_check_range(__func__, "src", src, bytes));
  gp__graph_node_desc_t d = {.type = GP_GRAPH_NODE_TYPE_MEMCPY};
  d.u.copy.dst = dst;
  d.u.copy.src = src;
  d.u.copy.bytes = bytes;
  return add_node(__func__, node, graph, deps, ndeps, &d);
}

GP_API gp_status_t gp_graph_add_memset_node(gp_graph_node_t *node, gp_graph_t graph,
                                            const gp_graph_node_t *deps, size_t ndeps,
                                            const gp_memset_params_t *params) {
  GP__CHECK_NOT_NULL(node);
  *node = NULL;
  GP__TRY(gp__api_init(__func__));
  GP__TRY(check_memset_params(__func__, params));
  gp__graph_node_desc_t d = {.type = GP_GRAPH_NODE_TYPE_MEMSET, .u.set = *params};
  return add_node(__func__, node, graph, deps, ndeps, &d);
}

GP_API gp_status_t gp_graph_add_host_node(gp_graph_node_t *node, gp_graph_t graph,
                                          const gp_graph_node_t *deps, size_t ndeps,
                                          const gp_host_node_params_t *params) {
  GP__CHECK_NOT_NULL(node);
  *node = NULL;
  GP__TRY(gp__api_init(__func__));
  GP__CHECK_NOT_NULL(params);
  GP__CHECK_ARG(params->fn != NULL, "'params->fn' is NULL");
  gp__graph_node_desc_t d = {.type = GP_GRAPH_NODE_TYPE_HOST, .u.host = *params};
  return add_node(__func__, node, graph, deps, ndeps, &d);
}

GP_API gp_status_t gp_graph_add_empty_node(gp_graph_node_t *node, gp_graph_t graph,
                                           const gp_graph_node_t *deps, size_t ndeps) {
  GP__CHECK_NOT_NULL(node);
  *node = NULL;
  GP__TRY(gp__api_init(__func__));
  gp__graph_node_desc_t d = {.type = GP_GRAPH_NODE_TYPE_EMPTY};
  return add_node(__func__, node, graph, deps, ndeps, &d);
}

GP_API gp_status_t gp_graph_add_dependencies(gp_graph_t graph, const gp_graph_node_t *from,
                                             const gp_graph_node_t *to, size_t n) {
  GP__TRY(gp__api_init(__func__));
  GP__HANDLE_REF const void *held = NULL;
  GP__TRY(gp__handle_hold(graph, GP__H_GRAPH, __func__, "graph", &held));
  if (n == 0) return GP_SUCCESS;
  GP__CHECK_ARG(from != NULL && to != NULL, "'%s' is NULL but 'n' is %zu", from ? "to" : "from", n);
  return gp__be_graph_add_dependencies(graph, from, to, n);
}

GP_API gp_status_t gp_graph_get_nodes(gp_graph_t graph, gp_graph_node_t *nodes, size_t *count) {
  GP__CHECK_NOT_NULL(count);
  GP__TRY(gp__api_init(__func__));
  GP__HANDLE_REF const void *held = NULL;
  GP__TRY(gp__handle_hold(graph, GP__H_GRAPH, __func__, "graph", &held));
  return gp__be_graph_get_nodes(graph, nodes, count);
}

GP_API gp_status_t gp_graph_node_get_type(gp_graph_node_t node, gp_graph_node_type_t *type) {
  GP__CHECK_NOT_NULL(type);
  GP__TRY(gp__api_init(__func__));
  return gp__be_graph_node_get_type(node, type);
}

GP_API gp_status_t gp_graph_kernel_node_get_params(gp_graph_node_t node,
                                                   gp_kernel_node_params_t *params) {
  GP__CHECK_NOT_NULL(params);
  GP__TRY(gp__api_init(__func__));
  return gp__be_graph_kernel_node_params(node, params, NULL);
}

GP_API gp_status_t gp_graph_kernel_node_set_params(gp_graph_node_t node,
                                                   const gp_kernel_node_params_t *params) {
  GP__TRY(gp__api_init(__func__));
  GP__MODULE_REF gp_module_t owner = NULL;
  GP__TRY(check_kernel_params(__func__, params, &owner));
  return gp__be_graph_kernel_node_params(node, NULL, params);
}

GP_API gp_status_t gp_graph_exec_kernel_node_set_params(gp_graph_exec_t exec, gp_graph_node_t node,
                                                        const gp_kernel_node_params_t *params) {
  GP__TRY(gp__api_init(__func__));
  GP__HANDLE_REF const void *held = NULL;
  GP__TRY(gp__handle_hold(exec, GP__H_GRAPH_EXEC, __func__, "exec", &held));
  GP__MODULE_REF gp_module_t owner = NULL;
  GP__TRY(check_kernel_params(__func__, params, &owner));
  return gp__be_graph_exec_kernel_node_set_params(exec, node, params);
}

GP_API gp_status_t gp_graph_exec_update(gp_graph_exec_t exec, gp_graph_t graph,
                                        gp_graph_exec_update_result_info_t *result_info) {
  GP__CHECK_NOT_NULL(result_info);
  *result_info = (gp_graph_exec_update_result_info_t){GP_GRAPH_EXEC_UPDATE_ERROR, NULL, NULL};
  GP__TRY(gp__api_init(__func__));
  GP__HANDLE_REF const void *xheld = NULL;
  GP__TRY(gp__handle_hold(exec, GP__H_GRAPH_EXEC, __func__, "exec", &xheld));
  GP__HANDLE_REF const void *gheld = NULL;
  GP__TRY(gp__handle_hold(graph, GP__H_GRAPH, __func__, "graph", &gheld));
  return gp__be_graph_exec_update(exec, graph, result_info);
}
