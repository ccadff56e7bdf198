/*
 * src/gpu/graph.c - stream capture and graphs on the CUDA and HIP backends: native graphs
 * (cudaStreamBeginCapture ... cudaGraphLaunch, hip* the same). The runtime records,
 * forbids and reports what the cpu backend implements itself (src/cpu/stream.c); its
 * capture errors map through src/gpu/errors.c (GP_ERROR_NOT_SUPPORTED for an operation
 * a capture cannot record, GP_ERROR_INVALID_VALUE for misuse of capture).
 */
#include <stdlib.h>
#include "gpu/gpu.h"

struct gp_graph_s {
  gpuGraph_t native;
  int device;
};

struct gp_graph_exec_s {
  gpuGraphExec_t native;
  int device;
};

static gpuStreamCaptureMode native_mode(gp_capture_mode_t m) {
  switch (m) {
    case GP_CAPTURE_MODE_THREAD_LOCAL: return gpuStreamCaptureModeThreadLocal;
    case GP_CAPTURE_MODE_RELAXED: return gpuStreamCaptureModeRelaxed;
    default: return gpuStreamCaptureModeGlobal;
  }
}

/* The runtimes apply the capture modes to their own calls. */
gp_status_t gp__be_capture_guard(const char *func) {
  (void)func;
  return GP_SUCCESS;
}

gp_status_t gp__be_stream_begin_capture(gp_stream_t s, gp_capture_mode_t mode) {
  GP__GPU_TRY_DEV(gp__gpu_stream_device(s), gpuStreamBeginCapture,
                  (gp__gpu_stream(s), native_mode(mode)));
  return GP_SUCCESS;
}

gp_status_t gp__be_stream_end_capture(gp_stream_t s, gp_graph_t *graph) {
  int dev = gp__gpu_stream_device(s);
  gpuGraph_t g = NULL;
  GP__GPU_TRY_DEV(dev, gpuStreamEndCapture, (gp__gpu_stream(s), &g));
  if (g == NULL)
    return GP__GPU_ERR(GP_ERROR_NOT_SUPPORTED, "the capture was invalidated: no graph came out");
  struct gp_graph_s *w = calloc(1, sizeof(*w));
  if (w == NULL) {
    (void)gpuGraphDestroy(g);
    return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for a graph");
  }
  w->native = g;
  w->device = dev;
  *graph = w;
  return GP_SUCCESS;
}

gp_status_t gp__be_stream_is_capturing(gp_stream_t s, gp_capture_status_t *status) {
  gpuStreamCaptureStatus st = gpuStreamCaptureStatusNone;
  GP__GPU_TRY_DEV(gp__gpu_stream_device(s), gpuStreamIsCapturing, (gp__gpu_stream(s), &st));
  *status = st == gpuStreamCaptureStatusActive        ? GP_CAPTURE_STATUS_ACTIVE
            : st == gpuStreamCaptureStatusInvalidated ? GP_CAPTURE_STATUS_INVALIDATED
                                                      : GP_CAPTURE_STATUS_NONE;
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_node_count(gp_graph_t graph, size_t *count) {
  size_t n = 0;
  GP__GPU_TRY_DEV(graph->device, gpuGraphGetNodes, (graph->native, NULL, &n));
  *count = n;
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_instantiate(gp_graph_exec_t *exec, gp_graph_t graph) {
  struct gp_graph_exec_s *x = calloc(1, sizeof(*x));
  if (x == NULL) return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for a graph");
  gpuError_t e = gpuGraphInstantiate(&x->native, graph->native);
  if (e != gpuSuccess) {
    free(x);
    return gp__gpu_fail(e, graph->device, __func__, gpuGraphInstantiateName);
  }
  x->device = graph->device;
  *exec = x;
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_launch(gp_graph_exec_t exec, gp_stream_t s) {
  GP__GPU_TRY_DEV(gp__gpu_stream_device(s), gpuGraphLaunch, (exec->native, gp__gpu_stream(s)));
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_destroy(gp_graph_t graph) {
  gpuError_t e = gpuGraphDestroy(graph->native);
  int dev = graph->device;
  free(graph);
  if (e != gpuSuccess) return gp__gpu_fail(e, dev, __func__, GP__GPU_STR(gpuGraphDestroy));
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_exec_destroy(gp_graph_exec_t exec) {
  gpuError_t e = gpuGraphExecDestroy(exec->native);
  int dev = exec->device;
  free(exec);
  if (e != gpuSuccess) return gp__gpu_fail(e, dev, __func__, GP__GPU_STR(gpuGraphExecDestroy));
  return GP_SUCCESS;
}
