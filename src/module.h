/*
 * module.h - what the backends' modules and runtime compilation share (src/image.c,
 * src/program.c): recognising a code image before the loader sees it, and finding the
 * gpuport headers a kernel source includes. Nothing here is public.
 */
#ifndef GP_MODULE_PRIVATE_H
#define GP_MODULE_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
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
/* gp__image_check as backend (a gp_backend_t) would check: how the cpu build's tests
 * reach the checks of the GPU loaders' images. */
gp_status_t gp__image_check_for(int backend, const void *image, size_t bytes, const char *func,
                                const char *what);

/* The largest image file gpuport reads (GP_MODULE_MAX_FILE_BYTES, gpuport/module.h). */
#define GP__IMAGE_MAX_BYTES ((uint64_t)GP_MODULE_MAX_FILE_BYTES)

/* Opens an image file for reading without blocking (O_NONBLOCK: a FIFO or a device does
 * not hang the open) and checks the opened file, not its name: a regular file of at
 * most GP__IMAGE_MAX_BYTES. extra_flags are added to open's (O_NOFOLLOW for files of a
 * cache). GP_ERROR_NOT_FOUND (no such file), GP_ERROR_INVALID_VALUE (cannot be opened,
 * not a regular file), GP_ERROR_INVALID_IMAGE (too large), the message naming func and
 * what. *st receives fstat's answer. */
gp_status_t gp__image_open(const char *path, int extra_flags, const char *func, const char *what,
                           int *fd, struct stat *st);
/* Reads exactly size bytes of fd into *image (malloc'd, one NUL byte after them). */
gp_status_t gp__image_read_fd(int fd, size_t size, const char *func, const char *what,
                              unsigned char **image);
/* gp__image_open then gp__image_read_fd: the whole file, *n bytes. */
gp_status_t gp__image_read_file(const char *path, const char *func, const char *what,
                                unsigned char **image, size_t *n);

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
