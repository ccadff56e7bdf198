/*
 * src/gpu/graph.c - stream capture and graphs on the CUDA and HIP backends: native graphs
 * (cudaStreamBeginCapture ... cudaGraphLaunch, hip* the same). The runtime records,
 * forbids and reports what the cpu backend implements itself (src/cpu/stream.c); its
 * capture errors map through src/gpu/errors.c (GP_ERROR_NOT_SUPPORTED for an operation
 * a capture cannot record, GP_ERROR_INVALID_VALUE for misuse of capture).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/gpu.h"

struct gp_graph_s {
  gpuGraph_t native;
  int device;
};

struct gp_graph_exec_s {
  gpuGraphExec_t native;
  int device;
};

static void kernel_forget_graph(gpuGraph_t graph);

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
  kernel_forget_graph(graph->native);
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

/* ---- explicit construction ------------------------------------------------------------------- */
/* Node handles are the native nodes, which the runtime checks. The runtime's kernel
 * node parameters name the kernel by its native entry; the gpuport kernel behind each
 * kernel node added or set here is kept in a table (nodes of captures are not in it),
 * so gp_graph_kernel_node_get_params can return it. Entries go with their graph. */

typedef struct kernel_entry {
  gpuGraphNode_t node;
  gp_kernel_t kernel;
} kernel_entry_t;

static pthread_mutex_t g_kmu = PTHREAD_MUTEX_INITIALIZER;
static kernel_entry_t *g_kernels;
static size_t g_nkernels, g_kcap;

static kernel_entry_t *kernel_find(gpuGraphNode_t node) { /* g_kmu held */
  for (size_t i = 0; i < g_nkernels; i++)
    if (g_kernels[i].node == node) return &g_kernels[i];
  return NULL;
}

/* Records that node launches kernel; false when out of memory. */
static bool kernel_note(gpuGraphNode_t node, gp_kernel_t kernel) {
  pthread_mutex_lock(&g_kmu);
  kernel_entry_t *e = kernel_find(node);
  bool ok = true;
  if (e == NULL && g_nkernels == g_kcap) {
    size_t cap = g_kcap ? 2 * g_kcap : 64;
    kernel_entry_t *v = realloc(g_kernels, cap * sizeof(*v));
    if (v) {
      g_kernels = v;
      g_kcap = cap;
    }
    ok = v != NULL;
  }
  if (ok && e == NULL) e = &g_kernels[g_nkernels++];
  if (ok) *e = (kernel_entry_t){node, kernel};
  pthread_mutex_unlock(&g_kmu);
  return ok;
}

/* Drops the entries of graph's nodes (it is being destroyed). */
static void kernel_forget_graph(gpuGraph_t graph) {
  size_t n = 0;
  if (gpuGraphGetNodes(graph, NULL, &n) != gpuSuccess || n == 0) return;
  gpuGraphNode_t *v = malloc(n * sizeof(*v));
  if (v == NULL || gpuGraphGetNodes(graph, v, &n) != gpuSuccess) {
    free(v);
    return;
  }
  pthread_mutex_lock(&g_kmu);
  for (size_t i = 0; i < n; i++) {
    kernel_entry_t *e = kernel_find(v[i]);
    if (e) *e = g_kernels[--g_nkernels];
  }
  pthread_mutex_unlock(&g_kmu);
  free(v);
}

gp_status_t gp__be_graph_create(gp_graph_t *graph) {
  struct gp_graph_s *w = calloc(1, sizeof(*w));
  if (w == NULL) return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for a graph");
  int dev = gp__current_device();
  gpuError_t e = gpuGraphCreate(&w->native, 0);
  if (e != gpuSuccess) {
    free(w);
    return gp__gpu_fail(e, dev, __func__, GP__GPU_STR(gpuGraphCreate));
  }
  w->device = dev;
  *graph = w;
  return GP_SUCCESS;
}

/* The runtime's parameters of a checked kernel launch. */
static gp_status_t native_kernel_params(const gp_kernel_node_params_t *p, gpuKernelNodeParams *k,
                                        const char *func) {
  if (!GP__GPU_GRAPH_MODULE_KERNELS && (p->kernel->flags & GP__KFLAG_MODULE))
    return gp__gpu_error(GP_ERROR_NOT_SUPPORTED, func,
                         "kernel '%s' is a kernel of a gpuport module, which a kernel node on %s "
                         "cannot launch: capture its gp_launch into the graph instead",
                         p->kernel->name ? p->kernel->name : "?", GP__GPU_VENDOR);
  memset(k, 0, sizeof(*k));
  k->func = (void *)(uintptr_t)p->kernel->gpu_entry;
  k->gridDim = (dim3){p->grid.x, p->grid.y, p->grid.z};
  k->blockDim = (dim3){p->block.x, p->block.y, p->block.z};
  k->sharedMemBytes = (unsigned)p->shared_bytes;
  k->kernelParams = p->args;
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_add_node(gp_graph_node_t *node, gp_graph_t g, const gp_graph_node_t *deps,
                                  size_t ndeps, const gp__graph_node_desc_t *d) {
  const gpuGraphNode_t *nd = (const gpuGraphNode_t *)deps;
  gpuGraphNode_t n = NULL;
  gpuError_t e = gpuSuccess;
  const char *call = "";
  switch (d->type) {
    case GP_GRAPH_NODE_TYPE_KERNEL: {
      gpuKernelNodeParams k;
      GP__TRY(native_kernel_params(&d->u.kernel, &k, "gp_graph_add_kernel_node"));
      e = gpuGraphAddKernelNode(&n, g->native, nd, ndeps, &k);
      call = GP__GPU_STR(gpuGraphAddKernelNode);
      if (e == gpuSuccess && !kernel_note(n, d->u.kernel.kernel))
        return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory to record a kernel node");
      break;
    }
    case GP_GRAPH_NODE_TYPE_MEMCPY:
      e = gpuGraphAddMemcpyNode1D(&n, g->native, nd, ndeps, d->u.copy.dst, d->u.copy.src, d->u.copy.bytes);
      call = GP__GPU_STR(gpuGraphAddMemcpyNode1D);
      break;
    case GP_GRAPH_NODE_TYPE_MEMSET: {
      gpuMemsetParams m;
      memset(&m, 0, sizeof(m));
      m.dst = d->u.set.dst;
      m.value = d->u.set.value;
      m.elementSize = d->u.set.element_size;
      m.width = d->u.set.width;
      m.height = 1;
      m.pitch = d->u.set.width * d->u.set.element_size;
      e = gpuGraphAddMemsetNode(&n, g->native, nd, ndeps, &m);
      call = GP__GPU_STR(gpuGraphAddMemsetNode);
      break;
    }
    case GP_GRAPH_NODE_TYPE_HOST: {
      gpuHostNodeParams h;
      memset(&h, 0, sizeof(h));
      h.fn = d->u.host.fn;
      h.userData = d->u.host.user_data;
      e = gpuGraphAddHostNode(&n, g->native, nd, ndeps, &h);
      call = GP__GPU_STR(gpuGraphAddHostNode);
      break;
    }
    default:
      e = gpuGraphAddEmptyNode(&n, g->native, nd, ndeps);
      call = GP__GPU_STR(gpuGraphAddEmptyNode);
      break;
  }
  if (e != gpuSuccess) return gp__gpu_fail(e, g->device, __func__, call);
  *node = (gp_graph_node_t)n;
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_add_dependencies(gp_graph_t g, const gp_graph_node_t *from,
                                          const gp_graph_node_t *to, size_t n) {
  GP__GPU_TRY_NAMED(g->device, gpuGraphAddDependenciesName,
                    gpuGraphAddDependencies(g->native, (const gpuGraphNode_t *)from,
                                            (const gpuGraphNode_t *)to, n));
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_get_nodes(gp_graph_t g, gp_graph_node_t *nodes, size_t *count) {
  size_t n = nodes ? *count : 0;
  GP__GPU_TRY_DEV(g->device, gpuGraphGetNodes, (g->native, (gpuGraphNode_t *)nodes, &n));
  *count = n;
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_node_get_type(gp_graph_node_t node, gp_graph_node_type_t *type) {
  if (node == NULL) return GP__GPU_ERR(GP_ERROR_INVALID_HANDLE, "'node' is NULL");
  gpuGraphNodeType t;
  GP__GPU_TRY(gpuGraphNodeGetType, ((gpuGraphNode_t)node, &t));
  if ((int)t < 0 || (int)t > (int)GP_GRAPH_NODE_TYPE_EMPTY)
    return GP__GPU_ERR(GP_ERROR_NOT_SUPPORTED, "'node' is of native type %d, which gpuport does not describe",
                       (int)t);
  *type = (gp_graph_node_type_t)t; /* the values are CUDA's, and HIP's */
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_kernel_node_params(gp_graph_node_t node, gp_kernel_node_params_t *get,
                                            const gp_kernel_node_params_t *set) {
  if (node == NULL) return GP__GPU_ERR(GP_ERROR_INVALID_HANDLE, "'node' is NULL");
  gpuGraphNode_t n = (gpuGraphNode_t)node;
  gp_graph_node_type_t t;
  GP__TRY(gp__be_graph_node_get_type(node, &t));
  if (t != GP_GRAPH_NODE_TYPE_KERNEL)
    return GP__GPU_ERR(GP_ERROR_INVALID_VALUE, "'node' is not a kernel node (its type is %d)", (int)t);
  if (set) {
    gpuKernelNodeParams k;
    GP__TRY(native_kernel_params(set, &k, "gp_graph_kernel_node_set_params"));
    GP__GPU_TRY(gpuGraphKernelNodeSetParams, (n, &k));
    if (!kernel_note(n, set->kernel))
      return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory to record a kernel node");
    return GP_SUCCESS;
  }
  pthread_mutex_lock(&g_kmu);
  kernel_entry_t *e = kernel_find(n);
  gp_kernel_t kernel = e ? e->kernel : NULL;
  pthread_mutex_unlock(&g_kmu);
  if (kernel == NULL)
    return GP__GPU_ERR(GP_ERROR_NOT_SUPPORTED,
                       "'node' was recorded by a capture: its gpuport kernel is not known");
  gpuKernelNodeParams k;
  memset(&k, 0, sizeof(k));
  GP__GPU_TRY(gpuGraphKernelNodeGetParams, (n, &k));
  get->kernel = kernel;
  get->grid = gp_dim3(k.gridDim.x, k.gridDim.y, k.gridDim.z);
  get->block = gp_dim3(k.blockDim.x, k.blockDim.y, k.blockDim.z);
  get->shared_bytes = k.sharedMemBytes;
  get->args = k.kernelParams;
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_exec_kernel_node_set_params(gp_graph_exec_t exec, gp_graph_node_t node,
                                                     const gp_kernel_node_params_t *params) {
  if (node == NULL) return GP__GPU_ERR(GP_ERROR_INVALID_HANDLE, "'node' is NULL");
  gpuKernelNodeParams k;
  GP__TRY(native_kernel_params(params, &k, "gp_graph_exec_kernel_node_set_params"));
  GP__GPU_TRY_DEV(exec->device, gpuGraphExecKernelNodeSetParams, (exec->native, (gpuGraphNode_t)node, &k));
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_exec_update(gp_graph_exec_t exec, gp_graph_t graph,
                                     gp_graph_exec_update_result_info_t *info) {
  int r = 0;
  gpuGraphNode_t at = NULL, from = NULL;
  gpuError_t e = gpuGraphExecUpdate(exec->native, graph->native, &r, &at, &from);
  info->result = (gp_graph_exec_update_result_t)r; /* the values are CUDA's, and HIP's */
  info->error_node = (gp_graph_node_t)at;
  info->error_from_node = (gp_graph_node_t)from;
  if (e != gpuSuccess) return gp__gpu_fail(e, exec->device, __func__, gpuGraphExecUpdateName);
  return GP_SUCCESS;
}
