/*
 * module.h - what the backends' modules and runtime compilation share (src/image.c,
 * src/program.c): recognising a code image before the loader sees it, and finding the
 * gpuport headers a kernel source includes. Nothing here is public.
 */
#ifndef GP_MODULE_PRIVATE_H
#define GP_MODULE_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checks that image (bytes long) is something this backend's loader takes, whole:
 *   cpu:  an ELF shared object of this machine;
 *   cuda: a cubin (ELF for CUDA), a fatbin, or NUL-terminated PTX text;
 *   hip:  an AMD GPU code object (ELF) or a clang offload bundle.
 * ELF images must hold every segment and section their headers describe (a truncated
 * file would make the loader fault). GP_ERROR_INVALID_IMAGE, the message naming `what`
 * and what the image looks like (a cubin given to the cpu backend, PTX text given to
 * HIP, ...), otherwise. */
gp_status_t gp__image_check(const void *image, size_t bytes, const char *func, const char *what);

/* The directory holding gpuport/kernel.h for runtime compilation: GP_INCLUDE_DIR, else
 * <directory of the library or program holding this code>/../include, else the source
 * tree the library was built from. GP_ERROR_NOT_FOUND (message naming func) otherwise. */
gp_status_t gp__program_include_dir(char *out, size_t n, const char *func);

/* Whether one of the n options starts with prefix. */
bool gp__program_has_option(const char *const *options, int n, const char *prefix);

/* First lines of a compiler log for an error message: at most n - 1 characters, "..."
 * when cut, trailing blank lines dropped. */
void gp__program_log_excerpt(char *out, size_t n, const char *log);

#ifdef __cplusplus
}
#endif

#endif /* GP_MODULE_PRIVATE_H */
