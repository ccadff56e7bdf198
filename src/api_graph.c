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
