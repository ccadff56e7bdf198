/*
 * api_graph.c - public entry points for stream capture and graphs (gpuport/graph.h).
 * Handles of graphs and executable graphs are registered here, after the backend made
 * them, so a destroyed or foreign handle is an error rather than a read of freed memory.
 * What a capture records and forbids is the backend's business: the CPU backend
 * implements CUDA's rules (src/cpu/stream.c), the GPU backends get them from the
 * native runtime.
 */
#include "api.h"

static gp_status_t check_handle(const char *func, const char *arg, const void *h,
                                gp__handle_kind_t kind, const char *what) {
  if (h == NULL) return gp__error(GP_ERROR_INVALID_HANDLE, func, "'%s' is NULL", arg);
  if (!gp__handle_valid(h, kind))
    return gp__error(GP_ERROR_INVALID_HANDLE, func,
                     "'%s' (%p) is not a live %s (destroyed, or never created)", arg, h, what);
  return GP_SUCCESS;
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
  gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  return gp__be_stream_begin_capture(s, mode);
}

GP_API gp_status_t gp_stream_end_capture(gp_stream_t stream, gp_graph_t *graph) {
  GP__CHECK_NOT_NULL(graph);
  *graph = NULL;
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__CHECK_ARG(!is_legacy(stream), "'stream' is the legacy default stream, which never captures");
  gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  gp_graph_t g = NULL;
  GP__TRY(gp__be_stream_end_capture(s, &g));
  gp_status_t st = gp__handle_add(g, GP__H_GRAPH);
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
  gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  if (is_legacy(s)) return GP_SUCCESS;
  return gp__be_stream_is_capturing(s, status);
}

/* ---- graphs and executable graphs ------------------------------------------------------ */

GP_API gp_status_t gp_graph_get_node_count(gp_graph_t graph, size_t *count) {
  GP__CHECK_NOT_NULL(count);
  *count = 0;
  GP__TRY(gp__api_init(__func__));
  GP__TRY(check_handle(__func__, "graph", graph, GP__H_GRAPH, "graph"));
  return gp__be_graph_node_count(graph, count);
}

GP_API gp_status_t gp_graph_instantiate(gp_graph_exec_t *exec, gp_graph_t graph) {
  GP__CHECK_NOT_NULL(exec);
  *exec = NULL;
  GP__TRY(gp__api_init(__func__));
  GP__TRY(check_handle(__func__, "graph", graph, GP__H_GRAPH, "graph"));
  gp_graph_exec_t x = NULL;
  GP__TRY(gp__be_graph_instantiate(&x, graph));
  gp_status_t st = gp__handle_add(x, GP__H_GRAPH_EXEC);
  if (st != GP_SUCCESS) {
    (void)gp__be_graph_exec_destroy(x);
    return GP__ERR(st, "cannot register the executable graph");
  }
  *exec = x;
  return GP_SUCCESS;
}

GP_API gp_status_t gp_graph_launch(gp_graph_exec_t exec, gp_stream_t stream) {
  GP__TRY(gp__api_init(__func__));
  GP__TRY(check_handle(__func__, "exec", exec, GP__H_GRAPH_EXEC, "executable graph"));
  gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  return gp__be_graph_launch(exec, s);
}

GP_API gp_status_t gp_graph_destroy(gp_graph_t graph) {
  if (graph == NULL) return GP_SUCCESS;
  GP__TRY(gp__api_init(__func__));
  /* Removal is the claim: of two racing destroys, one wins. */
  if (!gp__handle_remove(graph, GP__H_GRAPH))
    return GP__ERR(GP_ERROR_INVALID_HANDLE,
                   "'graph' (%p) is not a live graph (destroyed, or never created)",
                   (void *)graph);
  return gp__be_graph_destroy(graph);
}

GP_API gp_status_t gp_graph_exec_destroy(gp_graph_exec_t exec) {
  if (exec == NULL) return GP_SUCCESS;
  GP__TRY(gp__api_init(__func__));
  if (!gp__handle_remove(exec, GP__H_GRAPH_EXEC))
    return GP__ERR(GP_ERROR_INVALID_HANDLE,
                   "'exec' (%p) is not a live executable graph (destroyed, or never created)",
                   (void *)exec);
  return gp__be_graph_exec_destroy(exec);
}
