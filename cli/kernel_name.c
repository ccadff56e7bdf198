/*
 * kernel_name.c - which kernel the library chose for each GEMM and attention call of
 * this process, read from the INFO line the library logs for every such call
 * (docs/dev/CONTRIBUTING.md: "one line per GEMM/attention call naming shapes and the
 * kernel chosen"; src/gemm.c ends it with "kernel=<name> (...)", src/attention.c with
 * "-> <description>" whose first gp__ word is the kernel; src/attention_kvcache.c's
 * "attention kvcache" lines, op kvcache, name the append kernel first and then the
 * attention kernel, which is the one taken).
 *
 * tool_kname_start(), before the process's first library call, points the library's log
 * (GP_DEBUG=INFO, GP_DEBUG_SUBSYS=GEMM,ATTN, GP_DEBUG_FILE) at a pipe: the library reads
 * those variables once, at its first log line. A caller who set GP_DEBUG or
 * GP_DEBUG_FILE keeps their log, and the names read "?". A reader thread empties the
 * pipe as lines come, so a program that makes many calls never blocks on a full pipe;
 * tool_kname_take() empties what is left (the call it follows has flushed its line
 * before returning) and hands over the names seen since the last take.
 *
 * This reads the library's log because the tool links the shared library, which
 * exports no internal accessor; an exported "last kernel chosen" query would replace it.
 */
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_read_fd = -1;
static char g_partial[4096]; /* an incomplete line carried to the next read */
static size_t g_partial_len;
static char g_names[1024]; /* "op:name, ..." since the last take */

/* The kernel a log line names, into out ("" when the line is no GEMM or attention call). */
static void name_of(const char *line, char *op, size_t op_len, char *out, size_t len) {
  const char *p = NULL;
  out[0] = op[0] = 0;
  if (strstr(line, " INFO GEMM ") && (p = strstr(line, "kernel="))) {
    snprintf(op, op_len, "gemm");
    p += strlen("kernel=");
  } else if (strstr(line, " INFO ATTN ") && (p = strstr(line, " -> "))) {
    const bool kv = strstr(line, "attention kvcache") != NULL;
    snprintf(op, op_len, "%s", kv ? "kvcache" : strstr(line, "attention bwd") ? "bwd" : "fwd");
    p += 4;
    const char *g = strstr(p, "gp__");
    /* a kvcache call names its append kernel first: the attention kernel is the next */
    if (kv && g && strstr(g, "_append") && strstr(g, "_append") < g + strcspn(g, " (;,\n") && strstr(g + 4, "gp__"))
      g = strstr(g + 4, "gp__");
    if (g) p = g;
  } else {
    return;
  }
  /* a symbol ends at a blank or a parenthesis; the host paths are named in words */
  size_t n = strncmp(p, "cpu ", 4) ? strcspn(p, " (;,\n") : strcspn(p, "(;,\n");
  while (n > 0 && p[n - 1] == ' ') n--;
  if (n >= len) n = len - 1;
  memcpy(out, p, n);
  out[n] = 0;
  for (char *c = out; *c; c++)
    if (*c == ' ') *c = '-'; /* one word: lists are split at blanks and commas */
}

/* Appends "op:name" to the list unless it is there already (g_lock held). */
static void add(const char *op, const char *name) {
  char item[192];
  snprintf(item, sizeof item, "%s:%s", op, name);
  const size_t il = strlen(item);
  for (const char *p = g_names; (p = strstr(p, item)) != NULL; p += il)
    if ((p == g_names || p[-1] == ' ') && (p[il] == 0 || p[il] == ',')) return;
  const size_t used = strlen(g_names);
  if (used + il + 3 < sizeof g_names) snprintf(g_names + used, sizeof g_names - used, "%s%s", used ? ", " : "", item);
}

/* Reads what the pipe holds now (g_lock held; the descriptor is non-blocking). */
static void drain(void) {
  char buf[8192];
  for (;;) {
    const ssize_t got = read(g_read_fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return; /* EAGAIN: everything written so far has been read */
    for (ssize_t i = 0; i < got; i++) {
      if (buf[i] != '\n') {
        if (g_partial_len + 1 < sizeof g_partial) g_partial[g_partial_len++] = buf[i];
        continue;
      }
      g_partial[g_partial_len] = 0;
      char op[16], name[160];
      name_of(g_partial, op, sizeof op, name, sizeof name);
      if (name[0]) add(op, name);
      g_partial_len = 0;
    }
  }
}

static void *reader(void *arg) {
  (void)arg;
  struct pollfd p = {g_read_fd, POLLIN, 0};
  for (;;) {
    if (poll(&p, 1, -1) < 0 && errno != EINTR) return NULL;
    pthread_mutex_lock(&g_lock);
    drain();
    pthread_mutex_unlock(&g_lock);
  }
}

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
  g_read_fd = fds[0];
  pthread_t t;
  if (pthread_create(&t, NULL, reader, NULL) != 0) {
    snprintf(why, why_len, "cannot start the log reader thread");
    close(fds[0]), close(fds[1]);
    g_read_fd = -1;
    return false;
  }
  pthread_detach(t);
  /* fds[1] stays open: the library opens its own descriptor of the pipe by this path */
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fds[1]);
  setenv("GP_DEBUG", "INFO", 1);
  setenv("GP_DEBUG_SUBSYS", "GEMM,ATTN", 1);
  setenv("GP_DEBUG_FILE", path, 1);
  return true;
}

void tool_kname_take(char *out, size_t len) {
  if (g_read_fd < 0) {
    snprintf(out, len, "?");
    return;
  }
  pthread_mutex_lock(&g_lock);
  drain();
  snprintf(out, len, "%s", g_names);
  g_names[0] = 0;
  pthread_mutex_unlock(&g_lock);
}
