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

/* Validates a kernel: found in the descriptor table (GP_ERROR_INVALID_HANDLE otherwise;
 * nothing is read before), then its descriptor (magic, ABI version, backend, entry
 * point): the checks every launch path shares. Sets the message naming func on failure.
 * *owner (when owner is not NULL) receives the module that handed the kernel out, with
 * a reference taken so the module stays loaded while the call uses the kernel (release
 * it, or declare the variable GP__MODULE_REF), or NULL for a kernel of the program. */
gp_status_t gp__kernel_check(gp_kernel_t kernel, const char *func, gp_module_t *owner);
/* The descriptor checks alone, of a descriptor known to be readable. */
gp_status_t gp__kernel_check_desc(gp_kernel_t kernel, const char *func);

/* What gp_launch checks of a checked kernel's launch besides the stream: the argument
 * array, and grid, block and shared memory against the current device's limits. */
gp_status_t gp__kernel_check_launch(const char *func, gp_kernel_t kernel, gp_dim3_t grid,
                                    gp_dim3_t block, size_t shmem, void **args);

void gp__module_put_ref(gp_module_t *m);
#define GP__MODULE_REF __attribute__((cleanup(gp__module_put_ref)))

#ifdef __cplusplus
}
#endif

#endif /* GP_LAUNCH_H */
