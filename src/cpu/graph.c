/*
 * graph.c - graphs on the CPU backend: the recorded nodes (a "body" that stream.c fills
 * during a capture), graphs and executable graphs, and their replay.
 *
 * A body is shared, by reference count, between the graph and every executable graph
 * made from it, so a graph may be destroyed while its executable graphs live on (as
 * CUDA allows). Each node is a stream operation as it would have been enqueued (kernel
 * with its copied arguments, copy, set, host function, host work, child graph) plus the
 * indices of the nodes it depends on; the capture order is a topological order.
 *
 * Instantiation fixes the order nodes run in: Kahn's algorithm over the recorded
 * dependencies, taking the most recently captured ready node first. That order follows
 * the dependencies only, not the capture order: two nodes that were captured in one
 * order on different streams, with no dependency between them, run in the other order,
 * so a dependency missed by the capture shows up as a wrong result instead of passing
 * by luck. A launch (one OP_GRAPH operation of a stream) runs the nodes in that order on
 * the stream's worker; each kernel uses every executor thread.
 */
#include <stdlib.h>
#include <string.h>
#include "cpu.h"

#define GP__GRAPH_MAGIC 0x47707067u /* "gppG" */
#define GP__EXEC_MAGIC 0x58707067u  /* "gppX" */

struct gp_graph_s {
  uint32_t magic;
  gp__cpu_body_t *body;
};

/* ---- bodies ------------------------------------------------------------------------------ */

gp__cpu_body_t *gp__cpu_body_new(void) {
  gp__cpu_body_t *b = calloc(1, sizeof(*b));
  if (b) atomic_init(&b->refs, 1);
  return b;
}

void gp__cpu_body_unref(gp__cpu_body_t *b) {
  if (b == NULL || atomic_fetch_sub(&b->refs, 1) != 1) return;
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

/* ---- graphs -------------------------------------------------------------------------------- */

gp_graph_t gp__cpu_graph_new(gp__cpu_body_t *body) {
  struct gp_graph_s *g = calloc(1, sizeof(*g));
  if (g == NULL) {
    gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_stream_end_capture", "out of host memory for a graph");
    return NULL;
  }
  g->magic = GP__GRAPH_MAGIC;
  g->body = body;
  return g;
}

gp_status_t gp__be_graph_node_count(gp_graph_t graph, size_t *count) {
  *count = (size_t)graph->body->n;
  return GP_SUCCESS;
}

gp_status_t gp__be_graph_destroy(gp_graph_t graph) {
  gp__cpu_body_unref(graph->body);
  graph->magic = 0;
  free(graph);
  return GP_SUCCESS;
}

/* ---- executable graphs ---------------------------------------------------------------------- */

/* Kahn's algorithm; among ready nodes the one captured last goes first (see the file
 * comment). Returns false when out of memory. */
static bool topo_order(const gp__cpu_body_t *b, int *order) {
  int n = b->n, total = 0;
  for (int i = 0; i < n; i++) total += b->nodes[i].ndeps;
  int *indeg = calloc((size_t)n + 1, sizeof(int)), *start = calloc((size_t)n + 2, sizeof(int));
  int *succ = malloc(((size_t)total + 1) * sizeof(int)), *stack = malloc(((size_t)n + 1) * sizeof(int));
  bool ok = indeg && start && succ && stack;
  if (ok) {
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
    ok = done == n; /* dependencies only point backwards, so every node is reached */
  }
  free(indeg);
  free(start);
  free(succ);
  free(stack);
  return ok;
}

gp_status_t gp__be_graph_instantiate(gp_graph_exec_t *exec, gp_graph_t graph) {
  struct gp_graph_exec_s *x = calloc(1, sizeof(*x));
  int *order = malloc(((size_t)graph->body->n + 1) * sizeof(int));
  if (x == NULL || order == NULL || !topo_order(graph->body, order)) {
    free(x);
    free(order);
    return gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_graph_instantiate",
                     "out of host memory for a graph of %d nodes", graph->body->n);
  }
  x->magic = GP__EXEC_MAGIC;
  atomic_init(&x->refs, 1);
  atomic_fetch_add(&graph->body->refs, 1);
  x->body = graph->body;
  x->order = order;
  *exec = x;
  return GP_SUCCESS;
}

void gp__cpu_exec_ref(struct gp_graph_exec_s *x) { atomic_fetch_add(&x->refs, 1); }

void gp__cpu_exec_unref(struct gp_graph_exec_s *x) {
  if (atomic_fetch_sub(&x->refs, 1) != 1) return;
  gp__cpu_body_unref(x->body);
  free(x->order);
  x->magic = 0;
  free(x);
}

gp_status_t gp__be_graph_exec_destroy(gp_graph_exec_t exec) {
  gp__cpu_exec_unref(exec); /* pending launches hold their own references */
  return GP_SUCCESS;
}

void gp__cpu_exec_run(struct gp_graph_exec_s *x) {
  const gp__cpu_body_t *b = x->body;
  for (int i = 0; i < b->n; i++) {
    const gp__cpu_node_t *nd = &b->nodes[x->order[i]];
    gp__cpu_op_run_node(nd->op, nd->device);
  }
}
