/*
 * cpu.h - state shared by the CPU backend's runtime (runtime.c: devices, memory) and
 * its streams (stream.c: queues, workers, events). Not public; not used by the executor.
 */
#ifndef GP_CPU_H
#define GP_CPU_H

#include <pthread.h>
#include <stdatomic.h>
#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GP__CPU_MAX_DEVICES 64
#define GP__CPU_ALIGN 256 /* gp_malloc's alignment, as cudaMalloc */

/* Number of virtual devices (GP_CPU_DEVICES, read once by gp__be_init). */
int gp__cpu_device_count(void);

/* Waits (without consuming errors) until every op enqueued on device dev before the
 * call is complete: what gp_free and gp_device_reset need before releasing memory. */
void gp__cpu_device_drain(int dev);
/* Whether the calling thread is a stream's worker (which must not wait for streams). */
bool gp__cpu_on_stream_worker(void);

/* GP_SUCCESS, or GP_ERROR_NOT_SUPPORTED (message naming func) when called from an
 * application's host function: every call that waits for device work checks it first,
 * since the host function is itself device work and the wait would deadlock. */
gp_status_t gp__cpu_check_may_wait(const char *func);

/* Destroys every stream and event of dev and drops their handles (gp_device_reset);
 * the legacy and per-thread streams stay, drained. */
void gp__cpu_device_release_handles(int dev);

/* Initialises the stream layer once, for ndev devices: the legacy default streams, the
 * fork handlers and the thread-exit hook of per-thread default streams. */
void gp__cpu_streams_init(int ndev);

/* The device whose queue a checked stream feeds (the current device for the default
 * streams): collectives need their communicator's device. */
int gp__cpu_stream_device(gp_stream_t stream);

/* Frees device or managed memory from gp__be_malloc*, updating the device's accounting;
 * usable from a stream worker (stream-ordered free). */
void gp__cpu_device_free(void *ptr);

/* Fails with GP_ERROR_NOT_SUPPORTED (and invalidates the capture) when stream is
 * capturing: what an operation that cannot be captured (func: an allocation) calls. */
gp_status_t gp__cpu_stream_capture_forbid(gp_stream_t stream, const char *func, const char *what);

/* ---- graphs (src/cpu/graph.c; recorded by src/cpu/stream.c) --------------------------- */
/* A captured operation: the stream operation itself (struct gp__cpu_op, private to
 * stream.c), kept to be run at every launch, with the nodes it depends on. */
struct gp__cpu_op;
typedef struct gp__cpu_node {
  struct gp__cpu_op *op;
  int device;  /* the device of the stream that captured it */
  int ndeps;
  int *deps;   /* indices of the nodes it runs after, without repeats */
} gp__cpu_node_t;

/* The nodes of a graph (in the order they were captured or added), or of an executable
 * graph, shared with the launches of it that are pending (each holds a reference). */
typedef struct gp__cpu_body {
  atomic_int refs;
  int n, cap;
  gp__cpu_node_t *nodes;
} gp__cpu_body_t;

struct gp_graph_exec_s {
  uint32_t magic;
  atomic_int refs;         /* the handle, plus each pending launch and each graph holding it */
  pthread_mutex_t mu;      /* guards body: updates replace it, launches take a reference */
  gp__cpu_body_t *body;    /* its own copy of the graph's nodes; updates copy it on write */
  uint64_t graph_serial;   /* the graph it was made from, whose node handles it accepts */
  int *order;              /* the order nodes run in: a topological order of the dependencies */
  uint64_t launched, done; /* launches enqueued / completed (stream.c's lock): they run in turn */
};

gp__cpu_body_t *gp__cpu_body_new(void);
void gp__cpu_body_unref(gp__cpu_body_t *b);
/* Appends a node running op after deps; its index, or -1 when out of memory. */
int gp__cpu_body_add(gp__cpu_body_t *b, struct gp__cpu_op *op, int device, const int *deps,
                     int ndeps);
/* A graph owning body (one reference); NULL with the message set when out of memory. */
gp_graph_t gp__cpu_graph_new(gp__cpu_body_t *body);
void gp__cpu_exec_ref(struct gp_graph_exec_s *x);
void gp__cpu_exec_unref(struct gp_graph_exec_s *x);
/* x's current nodes, with a reference taken (what a launch runs). */
gp__cpu_body_t *gp__cpu_exec_body(struct gp_graph_exec_s *x);
/* Runs every node of body, nodes of x, in x's order, on the calling thread. */
void gp__cpu_exec_run(struct gp_graph_exec_s *x, gp__cpu_body_t *body);

/* stream.c: runs a captured operation once (a graph launch), on the given device. */
void gp__cpu_op_run_node(struct gp__cpu_op *op, int device);
/* stream.c: releases a captured operation and what it owns. */
void gp__cpu_op_free(struct gp__cpu_op *op);
/* stream.c: the operation of a node made explicitly (gp_graph_add_*_node), from its
 * checked description; NULL when out of memory. */
struct gp__cpu_op *gp__cpu_op_node(const gp__graph_node_desc_t *desc);
/* stream.c: an independent copy of a graph node's operation (its own argument copies,
 * module reference, work record); NULL when out of memory. */
struct gp__cpu_op *gp__cpu_op_clone(const struct gp__cpu_op *op);
gp_graph_node_type_t gp__cpu_op_type(const struct gp__cpu_op *op);
/* A kernel op's launch; args points to the op's copies. */
void gp__cpu_op_kernel_params(const struct gp__cpu_op *op, gp_kernel_node_params_t *p);
/* False when both are child graphs of different executable graphs (cannot be updated). */
bool gp__cpu_op_same_child(const struct gp__cpu_op *a, const struct gp__cpu_op *b);

#ifdef __cplusplus
}
#endif

#endif /* GP_CPU_H */
