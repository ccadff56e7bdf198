/*
 * program.c - what runtime compilation needs on every backend (src/module.h): the
 * directory of the gpuport headers that kernel sources include, and option and log
 * helpers.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "module.h"

static bool has_headers(const char *dir) {
  char p[4200];
  struct stat st;
  if ((size_t)snprintf(p, sizeof p, "%.4000s/gpuport/kernel.h", dir) >= sizeof p) return false;
  return stat(p, &st) == 0;
}

static bool set_dir(char *out, size_t n, const char *dir) {
  if (strlen(dir) >= n || !has_headers(dir)) return false;
  memcpy(out, dir, strlen(dir) + 1);
  return true;
}

gp_status_t gp__program_include_dir(char *out, size_t n, const char *func) {
  const char *env = getenv("GP_INCLUDE_DIR");
  if (env && *env) {
    if (set_dir(out, n, env)) return GP_SUCCESS;
    return gp__error(GP_ERROR_NOT_FOUND, func, "GP_INCLUDE_DIR (%s) has no gpuport/kernel.h", env);
  }
  /* An installed library sits in PREFIX/lib beside PREFIX/include; so does the source
   * tree's lib/ beside include/. */
  Dl_info info;
  if (dladdr((void *)(uintptr_t)&gp__program_include_dir, &info) && info.dli_fname) {
    char dir[4096];
    const char *slash = strrchr(info.dli_fname, '/');
    size_t len = slash ? (size_t)(slash - info.dli_fname) : 0;
    if (slash && len + 12 < sizeof dir) {
      memcpy(dir, info.dli_fname, len);
      memcpy(dir + len, "/../include", 12);
      if (set_dir(out, n, dir)) return GP_SUCCESS;
    }
  }
#ifdef GP__SOURCE_INCLUDE_DIR
  if (set_dir(out, n, GP__SOURCE_INCLUDE_DIR)) return GP_SUCCESS;
#endif
  return gp__error(GP_ERROR_NOT_FOUND, func,
                   "the gpuport headers were not found next to the library: set GP_INCLUDE_DIR "
                   "to the directory holding gpuport/kernel.h");
}

bool gp__program_has_option(const char *const *options, int n, const char *prefix) {
  size_t len = strlen(prefix);
  for (int i = 0; i < n; i++)
    if (strncmp(options[i], prefix, len) == 0) return true;
  return false;
}

void gp__program_log_excerpt(char *out, size_t n, const char *log) {
  if (n == 0) return;
  size_t len = log ? strlen(log) : 0, keep = len < n - 1 ? len : n - 1;
  memcpy(out, log ? log : "", keep);
  out[keep] = '\0';
  while (keep > 0 && (out[keep - 1] == '\n' || out[keep - 1] == ' ')) out[--keep] = '\0';
  if (len > n - 1 && n > 4) memcpy(out + n - 4, "...", 4);
}
