/*
 * log.c - NCCL_DEBUG-style logging. GP_DEBUG=WARN|INFO|TRACE (default WARN; NONE
 * silences), GP_DEBUG_SUBSYS=INIT,MEM,LAUNCH,GEMM,ATTN,COMM,STREAM (default all;
 * a leading ^ excludes the listed ones), GP_DEBUG_FILE=path (%h host, %p pid).
 * Lines look like "host:pid:tid gpuport INFO GEMM message".
 */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static int log_level = GP__LOG_WARN;
static unsigned log_subsys = GP__SUB_ALL;
static FILE *log_file;
static char log_host[64];

static const struct {
  const char *name;
  unsigned bit;
} subsys_names[] = {{"INIT", GP__SUB_INIT},   {"MEM", GP__SUB_MEM},   {"LAUNCH", GP__SUB_LAUNCH},
                    {"GEMM", GP__SUB_GEMM},   {"ATTN", GP__SUB_ATTN}, {"COMM", GP__SUB_COMM},
                    {"STREAM", GP__SUB_STREAM}, {"ALL", GP__SUB_ALL}};

static unsigned parse_subsys(const char *s) {
  bool invert = s[0] == '^';
  unsigned mask = 0;
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", invert ? s + 1 : s);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
    for (size_t i = 0; i < sizeof(subsys_names) / sizeof(subsys_names[0]); i++)
      if (strcasecmp(tok, subsys_names[i].name) == 0) mask |= subsys_names[i].bit;
  return invert ? ~mask : mask;
}

static FILE *open_log_file(const char *pattern) {
  char path[1024];
  size_t o = 0;
  for (const char *p = pattern; *p && o + 32 < sizeof(path); p++) {
    if (p[0] == '%' && p[1] == 'h') {
      o += (size_t)snprintf(path + o, sizeof(path) - o, "%s", log_host);
      p++;
    } else if (p[0] == '%' && p[1] == 'p') {
      o += (size_t)snprintf(path + o, sizeof(path) - o, "%d", (int)getpid());
      p++;
    } else {
      path[o++] = *p;
    }
  }
  path[o] = '\0';
  FILE *f = fopen(path, "a");
  return f ? f : stderr;
}

static void log_init(void) {
  gethostname(log_host, sizeof(log_host) - 1);
  const char *lvl = getenv("GP_DEBUG");
  if (lvl) {
    if (strcasecmp(lvl, "NONE") == 0) log_level = GP__LOG_NONE;
    else if (strcasecmp(lvl, "INFO") == 0) log_level = GP__LOG_INFO;
    else if (strcasecmp(lvl, "TRACE") == 0) log_level = GP__LOG_TRACE;
    else log_level = GP__LOG_WARN;
  }
  const char *sub = getenv("GP_DEBUG_SUBSYS");
  if (sub && *sub) log_subsys = parse_subsys(sub);
  const char *file = getenv("GP_DEBUG_FILE");
  log_file = (file && *file) ? open_log_file(file) : stderr;
}

bool gp__log_enabled(int level, unsigned subsys) {
  pthread_once(&log_once, log_init);
  return level <= log_level && (subsys & log_subsys) != 0;
}

static const char *level_name(int level) {
  return level == GP__LOG_WARN ? "WARN" : level == GP__LOG_INFO ? "INFO" : "TRACE";
}

static const char *subsys_name(unsigned subsys) {
  for (size_t i = 0; i < sizeof(subsys_names) / sizeof(subsys_names[0]); i++)
    if (subsys == subsys_names[i].bit) return subsys_names[i].name;
  return "ALL";
}

void gp__log(int level, unsigned subsys, const char *fmt, ...) {
  if (!gp__log_enabled(level, subsys)) return;
  char line[2048];
  int n = snprintf(line, sizeof(line), "%s:%d:%ld gpuport %s %s ", log_host, (int)getpid(),
                   (long)syscall(SYS_gettid), level_name(level), subsys_name(subsys));
  if (n < 0 || (size_t)n >= sizeof(line)) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
  va_end(ap);
  flockfile(log_file);
  fputs(line, log_file);
  fputc('\n', log_file);
  fflush(log_file);
  funlockfile(log_file);
}
