/*
 * graph.c - graphs on the CPU backend: the recorded nodes (a "body" that stream.c fills
 * during a capture), graphs and executable graphs, and their replay.
 *
 * Each node is a stream operation as it would have been enqueued (kernel with its copied
 * arguments, copy, set, host function, host work, child graph, or nothing) plus the
 * indices of the nodes it depends on. A capture records nodes in a topological order;
 * nodes added explicitly (gp_graph_add_*_node, gp_graph_add_dependencies) need not be,
 * and may form a cycle, which instantiation refuses.
 *
 * An executable graph owns a copy of its graph's body (instantiation clones it), so the
 * graph may change or go while the executable graph lives on (as CUDA allows). A launch
 * takes a reference to the executable graph's body; an update (gp_graph_exec_update,
 * gp_graph_exec_kernel_node_set_params) changes the body in place when no launch holds
 * it, else replaces it by a changed copy: pending launches run what they were given.
 *
 * Node handles are small objects of the graph, made when a node is added or first
 * listed, registered in the handle registry (GP__H_GRAPH_NODE) and killed with the graph;
 * they name the node by its index and the graph by a serial number, which also tells an
 * executable graph whether a node is of the graph it was made from.
 *
 * Instantiation fixes the order nodes run in: Kahn's algorithm over the recorded
 * dependencies, taking the most recently captured ready node first. That order follows
 * the dependencies only, not the capture order: two nodes that were captured in one
 * order on different streams, with no dependency between them, run in the other order,
 * so a dependency missed by the capture shows up as a wrong result instead of passing
 * by luck. A launch (one OP_GRAPH operation of a stream) runs the nodes in that order on
 * the stream's worker; each kernel uses every executor thread.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu.h"

#define GP__GRAPH_MAGIC 0x47707067u /* "gppG" */
#define GP__EXEC_MAGIC 0x58707067u  /* "gppX" */

#define GP__NODE_MAGIC 0x4e707067u  /* "gppN" */

struct gp_graph_s {
  uint32_t magic;
  pthread_mutex_t mu;          /* guards body and nodes: a graph may be used by many threads */
  uint64_t serial;             /* unique among the process's graphs */
  gp__cpu_body_t *body;        /* held by the graph alone */
  struct gp_graph_node_s **nodes; /* node handles by index, NULL until made; cap: body->cap */
  int ncap;
};

struct gp_graph_node_s {
  uint32_t magic;
  struct gp_graph_s *graph; /* valid while the handle is live: the graph kills it first */
  uint64_t serial;          /* graph->serial */
  int index;
};

static atomic_uint_fast64_t g_graph_serial; /* the last serial handed out */

/* ---- bodies ------------------------------------------------------------------------------ */

gp__cpu_body_t *gp__cpu_body_new(void) {
  gp__cpu_body_t *b = calloc(1, sizeof(*b));
  if (b) atomic_init(&b->refs, 1);
  return b;
}

void gp__cpu_body_unref(gp__cpu_body_t *b) {
  if (b == NULL) return;
  if (atomic_fetch_sub(&b->refs, 1) != 1) return;
  for (int i = 0; i < b->n; i++) {
    gp__cpu_op_free(b->nodes[i].op);
    free(b->nodes[i].deps);
  }
  free(b->nodes);
  free(b);
}

int gp__cpu_body_add(gp__cpu_body_t *b, struct gp__cpu_op *op, int device, const int *deps,
                     int ndeps) {
  if (b->n == b->cap) {
    int cap = b->cap ? 2 * b->cap : 16;
    gp__cpu_node_t *v = realloc(b->nodes, (size_t)cap * sizeof(*v));
    if (v == NULL) return -1;
    b->nodes = v;
    b->cap = cap;
  }
  int *d = NULL;
  if (ndeps > 0) {
    d = malloc((size_t)ndeps * sizeof(int));
    if (d == NULL) return -1;
    memcpy(d, deps, (size_t)ndeps * sizeof(int));
  }
  gp__cpu_node_t *nd = &b->nodes[b->n];
  nd->op = op;
  nd->device = device;
  nd->ndeps = ndeps;
  nd->deps = d;
  return b->n++;
}

/* A copy of b with copies of its operations, holding one reference; NULL when out of
 * memory. */
static gp__cpu_body_t *body_clone(const gp__cpu_body_t *b) {
  gp__cpu_body_t *c = gp__cpu_body_new();
  if (c == NULL) return NULL;
  for (int i = 0; i < b->n; i++) {
    struct gp__cpu_op *op = gp__cpu_op_clone(b->nodes[i].op);
    if (op == NULL || gp__cpu_body_add(c, op, b->nodes[i].device, b->nodes[i].deps, b->nodes[i].ndeps) < 0) {
      if (op) gp__cpu_op_free(op);
      gp__cpu_body_unref(c);
      return NULL;
    }
  }
  return c;
}

/* ---- graphs -------------------------------------------------------------------------------- */

static struct gp_graph_s *graph_alloc(gp__cpu_body_t *body, const char *func) {
  struct gp_graph_s *g = calloc(1, sizeof(*g));
  if (g == NULL) {
    gp__error(GP_ERROR_OUT_OF_MEMORY, func, "out of host memory for a graph");
    return NULL;
  }
  g->magic = GP__GRAPH_MAGIC;
  pthread_mutex_init(&g->mu, NULL);
  g->serial = atomic_fetch_add(&g_graph_serial, 1) + 1;
  g->body = body;
  return g;
}

gp_graph_t gp__cpu_graph_new(gp__cpu_body_t *body) { return graph_alloc(body, "gp_stream_end_capture"); }

gp_status_t gp__be_graph_create(gp_graph_t *graph) {
  gp__cpu_body_t *b = gp__cpu_body_new();
  if (b == NULL) return gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_graph_create", "out of host memory for a graph");
  struct gp_graph_s *g = graph_alloc(b, "gp_graph_create");
  if (g == NULL) {
    gp__cpu_body_unref(b);
    return GP_ERROR_OUT_OF_MEMORY;
  }
  *graph = g;
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_node_count(gp_graph_t graph, size_t *count) {
  pthread_mutex_lock(&graph->mu);
  *count = (size_t)graph->body->n;
  pthread_mutex_unlock(&graph->mu);
  return GP_SUCCESS;
}

static gp_status_t node_fini(void *h) {
  ((struct gp_graph_node_s *)h)->magic = 0;
  free(h);
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_destroy(gp_graph_t graph) {
  /* Holders of a node reference (a call in another thread) keep the node object alive;
   * killed here, the node can no longer reach the graph. */
  for (int i = 0; i < graph->ncap; i++)
    if (graph->nodes[i]) (void)gp__handle_kill(graph->nodes[i], GP__H_GRAPH_NODE, NULL);
  free(graph->nodes);
  gp__cpu_body_unref(graph->body);
  pthread_mutex_destroy(&graph->mu);
  graph->magic = 0;
  free(graph);
  return GP_SUCCESS;
}

/* The handle of node i of g (g->mu held), made and registered at first use; NULL with
 * the message set when out of memory. */
static gp_graph_node_t node_handle(struct gp_graph_s *g, int i, const char *func) {
  if (g->ncap < g->body->cap) {
    struct gp_graph_node_s **v = realloc(g->nodes, (size_t)g->body->cap * sizeof(*v));
    if (v == NULL) goto oom;
    memset(v + g->ncap, 0, (size_t)(g->body->cap - g->ncap) * sizeof(*v));
    g->nodes = v;
    g->ncap = g->body->cap;
  }
  if (g->nodes[i]) return g->nodes[i];
  struct gp_graph_node_s *h = malloc(sizeof(*h));
  if (h == NULL) goto oom;
  *h = (struct gp_graph_node_s){GP__NODE_MAGIC, g, g->serial, i};
  if (gp__handle_add(h, GP__H_GRAPH_NODE, node_fini) != GP_SUCCESS) {
    free(h);
    goto oom;
  }
  g->nodes[i] = h;
  return h;
oom:
  gp__error(GP_ERROR_OUT_OF_MEMORY, func, "out of host memory for a graph node handle");
  return NULL;
}

/* A node handle, checked against the registry, with its graph held: release both with
 * node_put. GP_ERROR_INVALID_HANDLE naming arg when node is not a live node. */
typedef struct node_ref {
  const struct gp_graph_node_s *node;
  struct gp_graph_s *graph;
} node_ref_t;

static gp_status_t node_get(gp_graph_node_t node, const char *func, const char *arg, node_ref_t *r) {
  r->node = NULL;
  r->graph = NULL;
  GP__TRY(gp__handle_get(node, GP__H_GRAPH_NODE, func, arg));
  /* The graph is looked up, not read, until held: it may be going, and its address may
   * already be another graph's (the serial tells). */
  bool held = gp__handle_acquire(node->graph, GP__H_GRAPH);
  if (!held || node->graph->serial != node->serial) {
    if (held) (void)gp__handle_release(node->graph);
    (void)gp__handle_release(node);
    return gp__error(GP_ERROR_INVALID_HANDLE, func, "'%s' (%p) is a node of a destroyed graph", arg,
                     (void *)node);
  }
  r->node = node;
  r->graph = node->graph;
  return GP_SUCCESS;
}

static void node_put(node_ref_t *r) {
  if (r->graph) (void)gp__handle_release(r->graph);
  if (r->node) (void)gp__handle_release(r->node);
}

#define GP__NODE_REF __attribute__((cleanup(node_put)))

/* *idx receives the index in g of node (arg[i], given with g). */
static gp_status_t dep_index(struct gp_graph_s *g, gp_graph_node_t node, const char *func,
                             const char *arg, size_t i, int *idx) {
  char name[32];
  snprintf(name, sizeof(name), "%s[%zu]", arg, i);
  GP__TRY(gp__handle_get(node, GP__H_GRAPH_NODE, func, name));
  *idx = node->serial == g->serial ? node->index : -1;
  (void)gp__handle_release(node);
  if (*idx < 0)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "'%s' (%p) is a node of another graph", name,
                     (void *)node);
  return GP_SUCCESS;
}

static bool has_dep(const gp__cpu_node_t *nd, int d) {
  for (int k = 0; k < nd->ndeps; k++)
    if (nd->deps[k] == d) return true;
  return false;
}

/* Checks deps (nodes of g, without repeats) into idx; g->mu held. */
static gp_status_t deps_indices(struct gp_graph_s *g, const gp_graph_node_t *deps, size_t ndeps,
                                int *idx, const char *func) {
  for (size_t i = 0; i < ndeps; i++) {
    GP__TRY(dep_index(g, deps[i], func, "deps", i, &idx[i]));
    for (size_t j = 0; j < i; j++)
      if (idx[j] == idx[i])
        return gp__error(GP_ERROR_INVALID_VALUE, func, "'deps[%zu]' repeats 'deps[%zu]'", i, j);
  }
  return GP_SUCCESS;
}

static const char *add_func(gp_graph_node_type_t t) {
  switch (t) {
    case GP_GRAPH_NODE_TYPE_KERNEL: return "gp_graph_add_kernel_node";
    case GP_GRAPH_NODE_TYPE_MEMCPY: return "gp_graph_add_memcpy_node";
    case GP_GRAPH_NODE_TYPE_MEMSET: return "gp_graph_add_memset_node";
    case GP_GRAPH_NODE_TYPE_HOST: return "gp_graph_add_host_node";
    default: return "gp_graph_add_empty_node";
  }
}

gp_status_t gp__be_graph_add_node(gp_graph_node_t *node, gp_graph_t g, const gp_graph_node_t *deps,
                                  size_t ndeps, const gp__graph_node_desc_t *desc) {
  const char *f = add_func(desc->type);
  if (ndeps > INT32_MAX)
    return gp__error(GP_ERROR_INVALID_VALUE, f, "'ndeps' (%zu) is more than a graph has nodes", ndeps);
  int *idx = malloc((ndeps + 1) * sizeof(int));
  struct gp__cpu_op *op = gp__cpu_op_node(desc);
  gp_status_t st = GP_SUCCESS;
  if (idx == NULL || op == NULL) {
    st = gp__error(GP_ERROR_OUT_OF_MEMORY, f, "out of host memory for a graph node");
    goto out;
  }
  pthread_mutex_lock(&g->mu);
  st = deps_indices(g, deps, ndeps, idx, f);
  int i = st == GP_SUCCESS ? gp__cpu_body_add(g->body, op, gp__current_device(), idx, (int)ndeps) : -1;
  if (st == GP_SUCCESS && i < 0)
    st = gp__error(GP_ERROR_OUT_OF_MEMORY, f, "out of host memory for a graph node");
  if (i >= 0) {
    op = NULL; /* the body's now */
    gp_graph_node_t h = node_handle(g, i, f);
    if (h == NULL) { /* undo: the node was never seen */
      gp__cpu_node_t *nd = &g->body->nodes[--g->body->n];
      gp__cpu_op_free(nd->op);
      free(nd->deps);
      st = GP_ERROR_OUT_OF_MEMORY;
    } else {
      *node = h;
    }
  }
  pthread_mutex_unlock(&g->mu);
out:
  if (op) gp__cpu_op_free(op);
  free(idx);
  return st;
}

gp_status_t gp__be_graph_add_dependencies(gp_graph_t g, const gp_graph_node_t *from,
                                          const gp_graph_node_t *to, size_t n) {
  const char *f = "gp_graph_add_dependencies";
  pthread_mutex_lock(&g->mu);
  gp_status_t st = GP_SUCCESS;
  size_t done = 0;
  int *added = malloc((n + 1) * sizeof(int)); /* the to-node of each one added, to undo */
  if (added == NULL) st = gp__error(GP_ERROR_OUT_OF_MEMORY, f, "out of host memory");
  for (; st == GP_SUCCESS && done < n; done++) {
    int a = -1, b = -1;
    if ((st = dep_index(g, from[done], f, "from", done, &a)) != GP_SUCCESS ||
        (st = dep_index(g, to[done], f, "to", done, &b)) != GP_SUCCESS)
      break;
    gp__cpu_node_t *nd = &g->body->nodes[b];
    if (a == b) {
      st = gp__error(GP_ERROR_INVALID_VALUE, f, "'from[%zu]' and 'to[%zu]' are the same node", done, done);
      break;
    }
    if (has_dep(nd, a)) {
      st = gp__error(GP_ERROR_INVALID_VALUE, f,
                     "the dependency 'from[%zu]' -> 'to[%zu]' exists already (cudaGraphAddDependencies "
                     "refuses it)", done, done);
      break;
    }
    int *v = realloc(nd->deps, (size_t)(nd->ndeps + 1) * sizeof(int));
    if (v == NULL) {
      st = gp__error(GP_ERROR_OUT_OF_MEMORY, f, "out of host memory");
      break;
    }
    nd->deps = v;
    nd->deps[nd->ndeps++] = a;
    added[done] = b;
  }
  if (st != GP_SUCCESS) /* all or nothing: the added ones were appended last */
    while (done-- > 0 && added) g->body->nodes[added[done]].ndeps--;
  pthread_mutex_unlock(&g->mu);
  free(added);
  return st;
}

gp_status_t gp__be_graph_get_nodes(gp_graph_t g, gp_graph_node_t *nodes, size_t *count) {
  pthread_mutex_lock(&g->mu);
  size_t n = (size_t)g->body->n;
  gp_status_t st = GP_SUCCESS;
  if (nodes) {
    for (size_t i = 0; i < *count; i++) {
      nodes[i] = i < n ? node_handle(g, (int)i, "gp_graph_get_nodes") : NULL;
      if (i < n && nodes[i] == NULL) {
        st = GP_ERROR_OUT_OF_MEMORY;
        break;
      }
    }
  }
  pthread_mutex_unlock(&g->mu);
  if (st == GP_SUCCESS) *count = nodes && *count < n ? *count : n; /* as many as were returned */
  return st;
}

gp_status_t gp__be_graph_node_get_type(gp_graph_node_t node, gp_graph_node_type_t *type) {
  GP__NODE_REF node_ref_t r;
  GP__TRY(node_get(node, "gp_graph_node_get_type", "node", &r));
  pthread_mutex_lock(&r.graph->mu);
  *type = gp__cpu_op_type(r.graph->body->nodes[r.node->index].op);
  pthread_mutex_unlock(&r.graph->mu);
  return GP_SUCCESS;
}

static gp_status_t not_kernel(const char *func, gp_graph_node_type_t t) {
  return gp__error(GP_ERROR_INVALID_VALUE, func, "'node' is not a kernel node (its type is %d)", (int)t);
}

gp_status_t gp__be_graph_kernel_node_params(gp_graph_node_t node, gp_kernel_node_params_t *get,
                                            const gp_kernel_node_params_t *set) {
  const char *f = get ? "gp_graph_kernel_node_get_params" : "gp_graph_kernel_node_set_params";
  GP__NODE_REF node_ref_t r;
  GP__TRY(node_get(node, f, "node", &r));
  gp__graph_node_desc_t d = {.type = GP_GRAPH_NODE_TYPE_KERNEL};
  struct gp__cpu_op *op = NULL;
  if (set) {
    d.u.kernel = *set;
    if ((op = gp__cpu_op_node(&d)) == NULL)
      return gp__error(GP_ERROR_OUT_OF_MEMORY, f, "out of host memory for the parameters");
  }
  pthread_mutex_lock(&r.graph->mu);
  gp__cpu_node_t *nd = &r.graph->body->nodes[r.node->index];
  gp_graph_node_type_t t = gp__cpu_op_type(nd->op);
  gp_status_t st = GP_SUCCESS;
  if (t != GP_GRAPH_NODE_TYPE_KERNEL) {
    st = not_kernel(f, t);
  } else if (get) {
    gp__cpu_op_kernel_params(nd->op, get);
  } else {
    struct gp__cpu_op *old = nd->op;
    nd->op = op;
    op = old;
  }
  pthread_mutex_unlock(&r.graph->mu);
  if (op) gp__cpu_op_free(op);
  return st;
}

/* ---- executable graphs ---------------------------------------------------------------------- */

/* Kahn's algorithm; among ready nodes the one captured last goes first (see the file
 * comment). Returns GP_SUCCESS, GP_ERROR_OUT_OF_MEMORY, or GP_ERROR_INVALID_VALUE when the
 * dependencies form a cycle (*stuck: a node never ready). */
static gp_status_t topo_order(const gp__cpu_body_t *b, int *order, int *stuck) {
  int n = b->n, total = 0;
  for (int i = 0; i < n; i++) total += b->nodes[i].ndeps;
  int *indeg = calloc((size_t)n + 1, sizeof(int)), *start = calloc((size_t)n + 2, sizeof(int));
  int *succ = malloc(((size_t)total + 1) * sizeof(int)), *stack = malloc(((size_t)n + 1) * sizeof(int));
  gp_status_t st = indeg && start && succ && stack ? GP_SUCCESS : GP_ERROR_OUT_OF_MEMORY;
  if (st == GP_SUCCESS) {
    /* Successor lists in compressed rows, each in increasing node order. */
    for (int i = 0; i < n; i++) {
      indeg[i] = b->nodes[i].ndeps;
      for (int k = 0; k < b->nodes[i].ndeps; k++) start[b->nodes[i].deps[k] + 2]++;
    }
    for (int i = 0; i < n; i++) start[i + 2] += start[i + 1];
    for (int i = 0; i < n; i++)
      for (int k = 0; k < b->nodes[i].ndeps; k++) succ[start[b->nodes[i].deps[k] + 1]++] = i;
    int top = 0, done = 0;
    for (int i = 0; i < n; i++)
      if (indeg[i] == 0) stack[top++] = i;
    while (top > 0) {
      int v = stack[--top];
      order[done++] = v;
      for (int k = start[v]; k < start[v + 1]; k++)
        if (--indeg[succ[k]] == 0) stack[top++] = succ[k];
    }
    if (done < n) { /* the nodes left wait on each other, or on a node that does */
      st = GP_ERROR_INVALID_VALUE;
      for (int i = 0; i < n; i++)
        if (indeg[i] > 0) {
          *stuck = i;
          break;
        }
    }
  }
  free(indeg);
  free(start);
  free(succ);
  free(stack);
  return st;
}

gp_status_t gp__be_graph_instantiate(gp_graph_exec_t *exec, gp_graph_t graph) {
  const char *f = "gp_graph_instantiate";
  pthread_mutex_lock(&graph->mu);
  int n = graph->body->n, stuck = -1;
  struct gp_graph_exec_s *x = calloc(1, sizeof(*x));
  int *order = malloc(((size_t)n + 1) * sizeof(int));
  gp__cpu_body_t *body = NULL;
  gp_status_t st = x && order ? topo_order(graph->body, order, &stuck) : GP_ERROR_OUT_OF_MEMORY;
  if (st == GP_SUCCESS && (body = body_clone(graph->body)) == NULL) st = GP_ERROR_OUT_OF_MEMORY;
  uint64_t serial = graph->serial;
  pthread_mutex_unlock(&graph->mu);
  if (st != GP_SUCCESS) {
    free(x);
    free(order);
    if (st == GP_ERROR_INVALID_VALUE)
      return gp__error(st, f,
                       "the graph's dependencies form a cycle: node %d (in the order nodes were "
                       "added, from 0) is on it or after it, and could never run",
                       stuck);
    return gp__error(st, f, "out of host memory for a graph of %d nodes", n);
  }
  x->magic = GP__EXEC_MAGIC;
  atomic_init(&x->refs, 1);
  pthread_mutex_init(&x->mu, NULL);
  x->body = body;
  x->graph_serial = serial;
  x->order = order;
  *exec = x;
  return GP_SUCCESS;
}

void gp__cpu_exec_ref(struct gp_graph_exec_s *x) { atomic_fetch_add(&x->refs, 1); }

void gp__cpu_exec_unref(struct gp_graph_exec_s *x) {
  if (atomic_fetch_sub(&x->refs, 1) != 1) return;
  gp__cpu_body_unref(x->body);
  pthread_mutex_destroy(&x->mu);
  free(x->order);
  x->magic = 0;
  free(x);
}

gp_status_t gp__be_graph_exec_destroy(gp_graph_exec_t exec) {
  gp__cpu_exec_unref(exec); /* pending launches hold their own references */
  return GP_SUCCESS;
}

gp__cpu_body_t *gp__cpu_exec_body(struct gp_graph_exec_s *x) {
  pthread_mutex_lock(&x->mu);
  gp__cpu_body_t *b = x->body;
  atomic_fetch_add(&b->refs, 1);
  pthread_mutex_unlock(&x->mu);
  return b;
}

void gp__cpu_exec_run(struct gp_graph_exec_s *x, gp__cpu_body_t *b) {
  for (int i = 0; i < b->n; i++) {
    const gp__cpu_node_t *nd = &b->nodes[x->order[i]];
    gp__cpu_op_run_node(nd->op, nd->device);
  }
}

/* x's body, to be changed (x->mu held): a copy when pending launches hold it, which they
 * keep. NULL when out of memory. */
static gp__cpu_body_t *exec_body_for_write(struct gp_graph_exec_s *x) {
  if (atomic_load(&x->body->refs) == 1) return x->body; /* only a launch adds one, under x->mu */
  gp__cpu_body_t *c = body_clone(x->body);
  if (c == NULL) return NULL;
  gp__cpu_body_unref(x->body);
  x->body = c;
  return c;
}

gp_status_t gp__be_graph_exec_kernel_node_set_params(gp_graph_exec_t x, gp_graph_node_t node,
                                                     const gp_kernel_node_params_t *params) {
  const char *f = "gp_graph_exec_kernel_node_set_params";
  GP__NODE_REF node_ref_t r;
  GP__TRY(node_get(node, f, "node", &r));
  if (r.node->serial != x->graph_serial)
    return gp__error(GP_ERROR_INVALID_VALUE, f,
                     "'node' is not a node of the graph 'exec' was instantiated from");
  gp__graph_node_desc_t d = {.type = GP_GRAPH_NODE_TYPE_KERNEL, .u.kernel = *params};
  struct gp__cpu_op *op = gp__cpu_op_node(&d);
  if (op == NULL) return gp__error(GP_ERROR_OUT_OF_MEMORY, f, "out of host memory for the parameters");
  pthread_mutex_lock(&x->mu);
  gp_status_t st = GP_SUCCESS;
  int i = r.node->index;
  if (i >= x->body->n) {
    st = gp__error(GP_ERROR_INVALID_VALUE, f, "'node' was added to its graph after 'exec' was instantiated");
  } else if (gp__cpu_op_type(x->body->nodes[i].op) != GP_GRAPH_NODE_TYPE_KERNEL) {
    st = not_kernel(f, gp__cpu_op_type(x->body->nodes[i].op));
  } else {
    gp__cpu_body_t *b = exec_body_for_write(x);
    if (b == NULL) {
      st = gp__error(GP_ERROR_OUT_OF_MEMORY, f, "out of host memory for a copy of the graph");
    } else {
      struct gp__cpu_op *old = b->nodes[i].op;
      b->nodes[i].op = op;
      op = old;
    }
  }
  pthread_mutex_unlock(&x->mu);
  gp__cpu_op_free(op);
  return st;
}

/* A dependency of a that b lacks, or -1. */
static int missing_dep(const gp__cpu_node_t *a, const gp__cpu_node_t *b) {
  for (int k = 0; k < a->ndeps; k++)
    if (!has_dep(b, a->deps[k])) return a->deps[k];
  return -1;
}

/* Why x (body xb) cannot take the nodes of g: GP_GRAPH_EXEC_UPDATE_SUCCESS when it can;
 * else *at and *from, indices of g's nodes at fault, or -1. g->mu and x->mu held. */
static gp_graph_exec_update_result_t update_check(const gp__cpu_body_t *xb, const gp__cpu_body_t *gb,
                                                  int *at, int *from) {
  *at = *from = -1;
  if (xb->n != gb->n) return GP_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  for (int i = 0; i < gb->n; i++) {
    const gp__cpu_node_t *a = &xb->nodes[i], *b = &gb->nodes[i];
    *at = i;
    if (gp__cpu_op_type(a->op) != gp__cpu_op_type(b->op)) return GP_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
    /* from: a dependency the new graph added, else one it dropped */
    if ((*from = missing_dep(b, a)) >= 0 || (*from = missing_dep(a, b)) >= 0)
      return GP_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    if (!gp__cpu_op_same_child(a->op, b->op)) return GP_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
  }
  *at = -1;
  return GP_GRAPH_EXEC_UPDATE_SUCCESS;
}

static const char *update_why(gp_graph_exec_update_result_t r) {
  switch (r) {
    case GP_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED: return "the topology changed (nodes or dependencies)";
    case GP_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED: return "a node's type changed";
    case GP_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED:
      return "a child graph node names another executable graph, which cannot be updated";
    default: return "an unexpected failure";
  }
}

gp_status_t gp__be_graph_exec_update(gp_graph_exec_t x, gp_graph_t g,
                                     gp_graph_exec_update_result_info_t *info) {
  const char *f = "gp_graph_exec_update";
  pthread_mutex_lock(&g->mu);
  pthread_mutex_lock(&x->mu);
  int at, from;
  gp_graph_exec_update_result_t r = update_check(x->body, g->body, &at, &from);
  gp_status_t st = GP_SUCCESS;
  gp__cpu_body_t *old = NULL;
  if (r == GP_GRAPH_EXEC_UPDATE_SUCCESS) {
    gp__cpu_body_t *c = body_clone(g->body);
    if (c == NULL) {
      st = gp__error(GP_ERROR_OUT_OF_MEMORY, f, "out of host memory for a copy of the graph");
    } else { /* pending launches keep the old nodes */
      old = x->body;
      x->body = c;
    }
  } else {
    info->error_node = at >= 0 ? node_handle(g, at, f) : NULL;
    info->error_from_node = from >= 0 ? node_handle(g, from, f) : NULL;
    if (at >= 0)
      st = gp__error(GP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, f, "cannot update 'exec' from 'graph': %s at node %d",
                     update_why(r), at);
    else
      st = gp__error(GP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, f,
                     "cannot update 'exec' from 'graph': %s (%d nodes, 'exec' has %d)", update_why(r),
                     g->body->n, x->body->n);
  }
  info->result = st == GP_SUCCESS ? GP_GRAPH_EXEC_UPDATE_SUCCESS : r == GP_GRAPH_EXEC_UPDATE_SUCCESS ? GP_GRAPH_EXEC_UPDATE_ERROR : r;
  pthread_mutex_unlock(&x->mu);
  pthread_mutex_unlock(&g->mu);
  if (old) gp__cpu_body_unref(old);
  return st;
}
