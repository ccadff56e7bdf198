/*
 * launch.h - the per-kernel dynamic shared memory limits raised with
 * gp_kernel_set_max_dynamic_shared(), kept by the api layer (src/api_launch.c) for
 * every backend, so the launch checks and the backends read one table.
 */
#ifndef GP_LAUNCH_H
#define GP_LAUNCH_H

#include <stddef.h>
#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The dynamic shared memory limit set for kernel, or 0 when none was set (the device's
 * shared_memory_per_block then applies). Thread-safe. */
size_t gp__kernel_max_dynamic_shared(gp_kernel_t kernel);

/* Drops kernel's raised limit (a module kernel whose module is unloaded: its descriptor's
 * address may be reused). */
void gp__kernel_forget(gp_kernel_t kernel);

/* Validates a kernel descriptor (magic, ABI version, backend, entry point): the checks
 * every launch path shares. Sets the message naming func on failure. */
gp_status_t gp__kernel_check(gp_kernel_t kernel, const char *func);

#ifdef __cplusplus
}
#endif

#endif /* GP_LAUNCH_H */
