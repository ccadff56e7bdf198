/*
 * cpu.h - state shared by the CPU backend's runtime (runtime.c: devices, memory) and
 * its streams (stream.c: queues, workers, events). Not public; not used by the executor.
 */
#ifndef GP_CPU_H
#define GP_CPU_H

#include <pthread.h>
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

#ifdef __cplusplus
}
#endif

#endif /* GP_CPU_H */
