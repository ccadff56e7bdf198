/*
 * exec.h - the CPU SIMT executor: what the CPU runtime calls to run a kernel's grid.
 *
 * The executor runs blocks on a pool of OS threads (GP_CPU_THREADS, default the core
 * count; the calling thread takes part). The threads of a block run one after another
 * on the worker's lead stack until one reaches a barrier or warp operation; from then
 * on that block's remaining threads run as fibers (docs/LAUNCH_ABI.md).
 */
#ifndef GP_CPU_EXEC_H
#define GP_CPU_EXEC_H

#include <stddef.h>
#include <stdint.h>
#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Target limits the api layer checks before enqueueing (CUDA's values). */
#define GP__CPU_MAX_THREADS_PER_BLOCK 1024
#define GP__CPU_MAX_BLOCK_DIM_X 1024
#define GP__CPU_MAX_BLOCK_DIM_Y 1024
#define GP__CPU_MAX_BLOCK_DIM_Z 64
#define GP__CPU_MAX_GRID_DIM_X 2147483647u
#define GP__CPU_MAX_GRID_DIM_Y 65535u
#define GP__CPU_MAX_GRID_DIM_Z 65535u
/* Shared memory per block (static + dynamic) without opt-in, and with
 * gp_kernel_set_max_dynamic_shared. Static shared memory alone is limited to the first. */
#define GP__CPU_SHARED_PER_BLOCK ((size_t)48 * 1024)
#define GP__CPU_SHARED_PER_BLOCK_OPTIN ((size_t)160 * 1024)

/* Runs the whole grid synchronously on the calling thread plus the block thread pool.
 * Returns GP_SUCCESS or GP_ERROR_LAUNCH_FAILED (message set: kernel, block, thread,
 * reason); GP_ERROR_INVALID_IMAGE / GP_ERROR_INVALID_CONFIGURATION / GP_ERROR_OUT_OF_MEMORY
 * for what the api layer should have caught or memory for stacks. Arguments are
 * already validated. device only names the device in messages. Thread-safe: launches
 * from several threads run concurrently and share the pool. */
gp_status_t gp__cpu_exec_grid(gp_kernel_t k, gp_dim3_t grid, gp_dim3_t block,
                              size_t dynamic_shared, void **args, int device, unsigned flags);
/* flags of gp__cpu_exec_grid: a cooperative launch (gp_grid_sync allowed). Every block
 * then runs on its own OS thread, all at once; the grid may have at most
 * gp__cpu_exec_threads() blocks (GP_ERROR_INVALID_CONFIGURATION otherwise). */
#define GP__CPU_EXEC_COOPERATIVE 0x1u

/* The warp width the CPU device reports and runs kernels at: 64 when GP_CPU_WARP_SIZE=64,
 * else 32 (read once). */
int gp__cpu_warp_size(void);
/* GP_LAUNCH_TIMEOUT_S in seconds, 0 when off (read at each call). */
double gp__cpu_launch_timeout_s(void);

/* The build of k a launch runs: with GP_CPU_WARP_SIZE=64, the width-64 build of a
 * width-32 kernel when one is registered (same name and parameters, same program or
 * shared library), else k. */
const struct gp_kernel_s *gp__cpu_kernel_for_width(const struct gp_kernel_s *k);

/* Number of OS threads a launch uses (the pool plus the caller). */
int gp__cpu_exec_threads(void);

/* Counters since the start of the process (or the last reset), for tests and benchmarks. */
typedef struct gp__cpu_exec_stats {
  uint64_t launches;       /* grids run */
  uint64_t blocks;         /* blocks run */
  uint64_t blocks_fibered; /* blocks that switched to fibers */
  uint64_t fibers_started; /* fibers started (threads run on their own stack) */
  uint64_t switches;       /* fiber context switches */
  uint64_t barriers;       /* barrier arrivals */
  uint64_t warp_ops;       /* warp-operation arrivals */
  uint64_t failures;       /* launches that failed */
} gp__cpu_exec_stats_t;
GP_API void gp__cpu_exec_stats(gp__cpu_exec_stats_t *out);
GP_API void gp__cpu_exec_stats_reset(void);

#ifdef __cplusplus
}
#endif

#endif /* GP_CPU_EXEC_H */
