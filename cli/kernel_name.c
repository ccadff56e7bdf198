/*
 * kernel_name.c - which kernel the library chose for each GEMM and attention call of
 * this process, read from the INFO line the library logs for every such call
 * (docs/dev/CONTRIBUTING.md: "one line per GEMM/attention call naming shapes and the
 * kernel chosen"; src/gemm.c ends it with "kernel=<name> (...)", src/attention.c with
 * "-> <description>" whose first gp__ word is the kernel).
 *
 * tool_kname_start(), before the process's first library call, points the library's log
 * (GP_DEBUG=INFO, GP_DEBUG_SUBSYS=GEMM,ATTN, GP_DEBUG_FILE) at a pipe this process reads
 * after each call: the library reads those variables once, at its first log line. A
 * caller who set GP_DEBUG or GP_DEBUG_FILE keeps their log, and the names read "?". One
 * call logs one line (two for a backward: its forward and itself), far below the pipe's
 * capacity, so the writer never blocks between two reads.
 *
 * This reads the library's log because the tool links the shared library, which
 * exports no internal accessor; an exported "last kernel chosen" query would replace it.
 */
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_read_fd = -1;
static char g_partial[4096]; /* an incomplete line carried to the next read */
static size_t g_partial_len;

bool tool_kname_start(char *why, size_t why_len) {
  if (getenv("GP_DEBUG") || getenv("GP_DEBUG_FILE")) {
    snprintf(why, why_len, "GP_DEBUG or GP_DEBUG_FILE is set: the caller's log is kept, kernel names are not read");
    return false;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    snprintf(why, why_len, "pipe: %s", strerror(errno));
    return false;
  }
  if (fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
    snprintf(why, why_len, "fcntl: %s", strerror(errno));
    close(fds[0]), close(fds[1]);
    return false;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fds[1]);
  setenv("GP_DEBUG", "INFO", 1);
  setenv("GP_DEBUG_SUBSYS", "GEMM,ATTN", 1);
  setenv("GP_DEBUG_FILE", path, 1);
  g_read_fd = fds[0];
  /* fds[1] stays open: the library opens its own descriptor of the pipe by that path */
  return true;
}

/* The kernel a log line names, into out ("" when the line is no GEMM or attention call). */
static void name_of(const char *line, char *op, size_t op_len, char *out, size_t len) {
  const char *p = NULL;
  out[0] = op[0] = 0;
  if (strstr(line, " INFO GEMM ") && (p = strstr(line, "kernel="))) {
    snprintf(op, op_len, "gemm");
    p += strlen("kernel=");
  } else if (strstr(line, " INFO ATTN ") && (p = strstr(line, " -> "))) {
    snprintf(op, op_len, "%s", strstr(line, "attention bwd") ? "bwd" : "fwd");
    p += 4;
    const char *g = strstr(p, "gp__");
    if (g) p = g;
  } else {
    return;
  }
  size_t n = strcspn(p, " (;,\n");
  if (!strncmp(p, "cpu tiled", 9) || !strncmp(p, "cpu ", 4)) n = strcspn(p, "(;\n"); /* host paths: words */
  while (n > 0 && p[n - 1] == ' ') n--;
  if (n >= len) n = len - 1;
  memcpy(out, p, n);
  out[n] = 0;
}

/* Appends "op:name" to list (comma-separated) unless it is there already. */
static void add(char *list, size_t len, const char *op, const char *name) {
  char item[192];
  snprintf(item, sizeof item, "%s:%s", op, name);
  for (const char *p = list; (p = strstr(p, item)) != NULL; p += strlen(item))
    if ((p == list || p[-1] == ' ') && (p[strlen(item)] == 0 || p[strlen(item)] == ','))
      return;
  size_t used = strlen(list);
  snprintf(list + used, len - used, "%s%s", used ? ", " : "", item);
}

void tool_kname_take(char *out, size_t len) {
  out[0] = 0;
  if (g_read_fd < 0) {
    snprintf(out, len, "?");
    return;
  }
  char buf[8192];
  for (;;) {
    ssize_t got = read(g_read_fd, buf, sizeof buf);
    if (got <= 0) break; /* EAGAIN: everything logged so far has been read */
    for (ssize_t i = 0; i < got; i++) {
      if (buf[i] != '\n') {
        if (g_partial_len + 1 < sizeof g_partial) g_partial[g_partial_len++] = buf[i];
        continue;
      }
      g_partial[g_partial_len] = 0;
      char op[8], name[160];
      name_of(g_partial, op, sizeof op, name, sizeof name);
      if (name[0]) add(out, len, op, name);
      g_partial_len = 0;
    }
  }
}
