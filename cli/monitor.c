/*
 * monitor.c - `gpuport monitor`: device telemetry (gpuport/telemetry.h) as a table like
 * `nvidia-smi dmon`, one line per device per interval, or as JSON lines; and
 * `gpuport monitor --prometheus`, an exporter serving the Prometheus text exposition
 * format (version 0.0.4) with one set of metric names for every vendor
 * (docs/TELEMETRY.md lists them beside DCGM's and AMD's exporter names). The HTTP
 * server is libmicrohttpd's, built in where the library is installed (GP_TOOL_MHD);
 * `--once` prints one exposition without it. Also `gpuport bench telemetry`: what one
 * reading costs.
 */
#include "tool.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef GP_TOOL_MHD
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>
#endif

#define BIT GP_TELEMETRY_BIT
#define GP__TOOL_PRINTF(f, a) __attribute__((format(printf, f, a)))

static const char monitor_usage[] =
    "usage: gpuport monitor [-i SECONDS] [-c COUNT] [--json] [-d DEVICE]\n"
    "       gpuport monitor --prometheus [--listen HOST:PORT] [--once] [-d DEVICE]\n"
    "  table (default): one line per device per interval, like nvidia-smi dmon; '-' marks a\n"
    "                   field the device does not report\n"
    "  -i SECONDS       interval (default 1; fractions allowed)\n"
    "  -c COUNT         stop after COUNT intervals (default: until interrupted)\n"
    "  --json           one JSON object per device per interval (null: not reported)\n"
    "  -d DEVICE        this device only (default: every device)\n"
    "  --prometheus     serve the Prometheus text format at http://HOST:PORT/metrics\n"
    "                   (default 127.0.0.1:9400, loopback only; port 0 picks a free one and\n"
    "                   the line 'listening on http://...' names it); readings are taken\n"
    "                   at each scrape\n"
    "  --once           with --prometheus: print one exposition to stdout and exit\n"
    "  Telemetry comes from NVML (cuda), AMD SMI or ROCm SMI (hip) or the host (cpu);\n"
    "  GP_NVML_LIBRARY, GP_AMDSMI_LIBRARY, GP_ROCM_SMI_LIBRARY name the libraries and\n"
    "  GP_TELEMETRY_TIMEOUT_MS bounds a reading (see docs/TELEMETRY.md).\n";

static const char *vendor(void) {
  switch (gp_backend()) {
    case GP_BACKEND_CUDA: return "nvidia";
    case GP_BACKEND_HIP: return "amd";
    default: return "cpu";
  }
}

static double field_value(const gp_telemetry_t *t, gp_telemetry_field_t f) {
  switch (f) {
    case GP_TELEMETRY_TEMP_DIE: return t->temp_die_c;
    case GP_TELEMETRY_TEMP_EDGE: return t->temp_edge_c;
    case GP_TELEMETRY_TEMP_JUNCTION: return t->temp_junction_c;
    case GP_TELEMETRY_TEMP_MEMORY: return t->temp_memory_c;
    case GP_TELEMETRY_POWER: return t->power_w;
    case GP_TELEMETRY_POWER_AVERAGE: return t->power_average_w;
    case GP_TELEMETRY_ENERGY: return t->energy_j;
    case GP_TELEMETRY_POWER_LIMIT: return t->power_limit_w;
    case GP_TELEMETRY_CLOCK_SM: return t->clock_sm_mhz;
    case GP_TELEMETRY_CLOCK_SM_MAX: return t->clock_sm_max_mhz;
    case GP_TELEMETRY_CLOCK_MEMORY: return t->clock_memory_mhz;
    case GP_TELEMETRY_CLOCK_MEMORY_MAX: return t->clock_memory_max_mhz;
    case GP_TELEMETRY_MEMORY_USED: return (double)t->memory_used_bytes;
    case GP_TELEMETRY_MEMORY_TOTAL: return (double)t->memory_total_bytes;
    case GP_TELEMETRY_UTIL_COMPUTE: return t->util_compute_pct;
    case GP_TELEMETRY_UTIL_MEMORY: return t->util_memory_pct;
    case GP_TELEMETRY_ECC_CORRECTED: return (double)t->ecc_corrected;
    case GP_TELEMETRY_ECC_UNCORRECTED: return (double)t->ecc_uncorrected;
    case GP_TELEMETRY_PCIE_TX: return t->pcie_tx_bytes_per_s;
    case GP_TELEMETRY_PCIE_RX: return t->pcie_rx_bytes_per_s;
    case GP_TELEMETRY_THROTTLE: return (double)t->throttle;
    default: return NAN;
  }
}

static bool has(const gp_telemetry_t *t, gp_telemetry_field_t f) {
  return (t->available & BIT(f)) != 0;
}

/* ---- the table and JSON lines ------------------------------------------------------------ */

/* Columns: field, heading, unit, scale (value / scale is printed), decimals. */
static const struct column {
  gp_telemetry_field_t f;
  const char *head, *unit;
  double scale;
  int decimals;
} g_columns[] = {
    {GP_TELEMETRY_TEMP_DIE, "die", "C", 1, 0},
    {GP_TELEMETRY_TEMP_EDGE, "edge", "C", 1, 0},
    {GP_TELEMETRY_TEMP_JUNCTION, "junc", "C", 1, 0},
    {GP_TELEMETRY_TEMP_MEMORY, "mtemp", "C", 1, 0},
    {GP_TELEMETRY_POWER, "pwr", "W", 1, 1},
    {GP_TELEMETRY_POWER_AVERAGE, "pavg", "W", 1, 1},
    {GP_TELEMETRY_POWER_LIMIT, "plim", "W", 1, 0},
    {GP_TELEMETRY_ENERGY, "energy", "kJ", 1e3, 2},
    {GP_TELEMETRY_CLOCK_SM, "sclk", "MHz", 1, 0},
    {GP_TELEMETRY_CLOCK_MEMORY, "mclk", "MHz", 1, 0},
    {GP_TELEMETRY_MEMORY_USED, "used", "MiB", 1048576, 0},
    {GP_TELEMETRY_MEMORY_TOTAL, "total", "MiB", 1048576, 0},
    {GP_TELEMETRY_UTIL_COMPUTE, "sm", "%", 1, 0},
    {GP_TELEMETRY_UTIL_MEMORY, "mem", "%", 1, 0},
    {GP_TELEMETRY_ECC_CORRECTED, "sbe", "", 1, 0},
    {GP_TELEMETRY_ECC_UNCORRECTED, "dbe", "", 1, 0},
    {GP_TELEMETRY_PCIE_TX, "txpci", "MB/s", 1e6, 0},
    {GP_TELEMETRY_PCIE_RX, "rxpci", "MB/s", 1e6, 0},
};
#define N_COLUMNS (sizeof g_columns / sizeof g_columns[0])
#define COL_WIDTH 7

static void table_header(void) {
  printf("# %3s %-8s", "gpu", "source");
  for (size_t i = 0; i < N_COLUMNS; i++) printf(" %*s", COL_WIDTH, g_columns[i].head);
  printf(" %s\n# %3s %-8s", "throttle", "Idx", "");
  for (size_t i = 0; i < N_COLUMNS; i++) printf(" %*s", COL_WIDTH, g_columns[i].unit);
  printf("\n");
}

/* The names of the throttle flags, for the table, JSON and the exporter. */
static const struct reason {
  uint64_t flag;
  const char *name;
} g_reasons[] = {
    {GP_THROTTLE_IDLE, "idle"},
    {GP_THROTTLE_POWER, "power"},
    {GP_THROTTLE_THERMAL, "thermal"},
    {GP_THROTTLE_HW_SLOWDOWN, "hw_slowdown"},
    {GP_THROTTLE_POWER_BRAKE, "power_brake"},
    {GP_THROTTLE_MEMORY_THERMAL, "memory_thermal"},
    {GP_THROTTLE_VR_THERMAL, "vr_thermal"},
    {GP_THROTTLE_SYNC_BOOST, "sync_boost"},
    {GP_THROTTLE_APP_CLOCKS, "app_clocks"},
    {GP_THROTTLE_DISPLAY, "display"},
    {GP_THROTTLE_OTHER, "other"},
};
#define N_REASONS (sizeof g_reasons / sizeof g_reasons[0])

static void reasons_text(uint64_t flags, char *out, size_t n) {
  out[0] = 0;
  size_t used = 0;
  for (size_t i = 0; i < N_REASONS; i++) {
    if (!(flags & g_reasons[i].flag)) continue;
    int w = snprintf(out + used, n - used, "%s%s", used ? "," : "", g_reasons[i].name);
    if (w < 0 || (size_t)w >= n - used) break;
    used += (size_t)w;
  }
  if (!used) snprintf(out, n, "none");
}

static void table_row(int dev, const gp_telemetry_t *t) {
  printf("  %3d %-8s", dev, t->source[0] ? t->source : "?");
  for (size_t i = 0; i < N_COLUMNS; i++) {
    const struct column *c = &g_columns[i];
    if (has(t, c->f)) printf(" %*.*f", COL_WIDTH, c->decimals, field_value(t, c->f) / c->scale);
    else printf(" %*s", COL_WIDTH, "-");
  }
  char r[160];
  reasons_text(t->throttle, r, sizeof r);
  printf(" %s\n", has(t, GP_TELEMETRY_THROTTLE) ? r : "-");
}

static void json_row(int dev, const gp_telemetry_t *t, gp_status_t st) {
  printf("{\"device\": %d, \"vendor\": \"%s\", \"source\": ", dev, vendor());
  tool_json_str(t->source);
  if (isfinite(t->timestamp_s)) printf(", \"timestamp\": %.3f", t->timestamp_s);
  else printf(", \"timestamp\": null");
  if (st != GP_SUCCESS) {
    printf(", \"status\": \"%s\", \"error\": ", gp_status_name(st));
    tool_json_str(gp_last_error_message());
  }
  for (int f = 0; f < GP_TELEMETRY_FIELD_COUNT; f++) {
    const char *name = gp_telemetry_field_name((gp_telemetry_field_t)f);
    if (f == GP_TELEMETRY_THROTTLE) {
      printf(", \"throttle\": ");
      if (!has(t, GP_TELEMETRY_THROTTLE)) {
        printf("null");
        continue;
      }
      printf("[");
      bool first = true;
      for (size_t i = 0; i < N_REASONS; i++)
        if (t->throttle & g_reasons[i].flag)
          printf("%s\"%s\"", first ? "" : ", ", g_reasons[i].name), first = false;
      printf("]");
    } else if (!has(t, (gp_telemetry_field_t)f)) {
      printf(", \"%s\": null", name);
    } else {
      printf(", \"%s\": %.17g", name, field_value(t, (gp_telemetry_field_t)f));
    }
  }
  printf("}\n");
}

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (!g_stop && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

typedef struct monitor_opts {
  double interval;
  long long count; /* < 0: until interrupted */
  bool json, prometheus, once;
  int device;      /* -1: all */
  const char *listen;
} monitor_opts_t;

static int device_range(const monitor_opts_t *o, int *first, int *last) {
  int n = 0;
  gp_status_t s = gp_device_count(&n);
  if (s != GP_SUCCESS) {
    tool_report("monitor", "gp_device_count", s);
    return 1;
  }
  if (o->device >= n) {
    fprintf(stderr, "gpuport monitor: device %d: there are %d\n", o->device, n);
    return 2;
  }
  *first = o->device >= 0 ? o->device : 0;
  *last = o->device >= 0 ? o->device : n - 1;
  return 0;
}

static int run_table(const monitor_opts_t *o) {
  int first, last, rc = device_range(o, &first, &last);
  if (rc) return rc;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  /* Readings over an interval (the host's utilisation and power) need a first sample. */
  gp_telemetry_t t;
  for (int d = first; d <= last; d++) {
    gp_telemetry_init(&t);
    (void)gp_device_get_telemetry(d, &t);
  }
  sleep_s(o->interval < 0.2 ? o->interval : 0.2);
  if (!o->json) table_header();
  int failures = 0;
  for (long long i = 0; !g_stop && (o->count < 0 || i < o->count); i++) {
    if (i) sleep_s(o->interval);
    if (g_stop) break;
    for (int d = first; d <= last; d++) {
      gp_telemetry_init(&t);
      gp_status_t s = gp_device_get_telemetry(d, &t);
      if (o->json) json_row(d, &t, s);
      else if (s == GP_SUCCESS) table_row(d, &t);
      else printf("  %3d %s: %s\n", d, gp_status_name(s), gp_last_error_message());
      if (s != GP_SUCCESS) failures++;
    }
    fflush(stdout);
  }
  return failures ? 1 : 0;
}

/* ---- the Prometheus text exposition format ------------------------------------------------ */

typedef struct text {
  char *buf;
  size_t len, cap;
  bool oom;
} text_t;

static void put(text_t *t, const char *fmt, ...) GP__TOOL_PRINTF(2, 3);
static void put(text_t *t, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = t->buf ? vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap) : -1;
    va_end(ap);
    if (n >= 0 && (size_t)n < t->cap - t->len) {
      t->len += (size_t)n;
      return;
    }
    size_t cap = t->cap ? t->cap * 2 : 16384;
    if (n >= 0 && cap < t->len + (size_t)n + 1) cap = t->len + (size_t)n + 1;
    char *b = realloc(t->buf, cap);
    if (b == NULL) {
      t->oom = true;
      return;
    }
    t->buf = b;
    t->cap = cap;
  }
}

/* A label value: backslash, double quote and line feed escaped (exposition format). */
static void put_label(text_t *t, const char *v) {
  for (; *v; v++) {
    if (*v == '\\') put(t, "\\\\");
    else if (*v == '"') put(t, "\\\"");
    else if (*v == '\n') put(t, "\\n");
    else put(t, "%c", *v);
  }
}

typedef struct dev_reading {
  int device;
  gp_status_t st;
  gp_telemetry_t t;
  char name[256];
} dev_reading_t;

/* One metric family: its samples come from the readings, one per device and label. */
typedef struct family {
  const char *name, *type, *help;
  const char *label;           /* the extra label's name, or NULL */
  struct {
    gp_telemetry_field_t f;
    const char *value;         /* the extra label's value */
    double scale;
  } s[4];
  int n;
} family_t;

static const family_t g_families[] = {
    {"gpuport_temperature_celsius", "gauge",
     "Temperature in degrees Celsius by sensor: die (NVIDIA GPU core, CPU package), edge and "
     "junction (AMD), memory (HBM, VRAM, DIMM).",
     "sensor",
     {{GP_TELEMETRY_TEMP_DIE, "die", 1},
      {GP_TELEMETRY_TEMP_EDGE, "edge", 1},
      {GP_TELEMETRY_TEMP_JUNCTION, "junction", 1},
      {GP_TELEMETRY_TEMP_MEMORY, "memory", 1}},
     4},
    {"gpuport_power_watts", "gauge", "Power draw now, in watts.", NULL,
     {{GP_TELEMETRY_POWER, NULL, 1}}, 1},
    {"gpuport_power_average_watts", "gauge", "Power draw averaged by the device, in watts.",
     NULL, {{GP_TELEMETRY_POWER_AVERAGE, NULL, 1}}, 1},
    {"gpuport_power_limit_watts", "gauge", "Power limit in force, in watts.", NULL,
     {{GP_TELEMETRY_POWER_LIMIT, NULL, 1}}, 1},
    {"gpuport_energy_joules_total", "counter",
     "Energy consumed since the driver loaded (host: since the first reading's counter), in "
     "joules.",
     NULL, {{GP_TELEMETRY_ENERGY, NULL, 1}}, 1},
    {"gpuport_clock_hertz", "gauge", "Clock frequency now, in hertz: sm (SM, GFX, CPU core) or "
     "memory.", "clock",
     {{GP_TELEMETRY_CLOCK_SM, "sm", 1e6}, {GP_TELEMETRY_CLOCK_MEMORY, "memory", 1e6}}, 2},
    {"gpuport_clock_max_hertz", "gauge", "Highest clock frequency, in hertz.", "clock",
     {{GP_TELEMETRY_CLOCK_SM_MAX, "sm", 1e6}, {GP_TELEMETRY_CLOCK_MEMORY_MAX, "memory", 1e6}}, 2},
    {"gpuport_memory_used_bytes", "gauge", "Device memory in use, in bytes.", NULL,
     {{GP_TELEMETRY_MEMORY_USED, NULL, 1}}, 1},
    {"gpuport_memory_total_bytes", "gauge", "Device memory, in bytes.", NULL,
     {{GP_TELEMETRY_MEMORY_TOTAL, NULL, 1}}, 1},
    {"gpuport_utilization_ratio", "gauge",
     "Share of the last sample period busy (0 to 1): compute (kernels running) or memory "
     "(memory controller).",
     "engine",
     {{GP_TELEMETRY_UTIL_COMPUTE, "compute", 0.01}, {GP_TELEMETRY_UTIL_MEMORY, "memory", 0.01}}, 2},
    {"gpuport_ecc_errors_total", "counter", "ECC errors: corrected or uncorrected.", "type",
     {{GP_TELEMETRY_ECC_CORRECTED, "corrected", 1}, {GP_TELEMETRY_ECC_UNCORRECTED, "uncorrected", 1}},
     2},
    {"gpuport_pcie_throughput_bytes_per_second", "gauge",
     "PCIe throughput in bytes per second: tx (sent by the device) or rx.", "direction",
     {{GP_TELEMETRY_PCIE_TX, "tx", 1}, {GP_TELEMETRY_PCIE_RX, "rx", 1}}, 2},
};
#define N_FAMILIES (sizeof g_families / sizeof g_families[0])

static void put_labels(text_t *t, const dev_reading_t *r) {
  put(t, "device=\"%d\",vendor=\"%s\"", r->device, vendor());
}

static void put_family(text_t *t, const family_t *f, const dev_reading_t *r, int n) {
  bool any = false;
  for (int d = 0; d < n && !any; d++)
    for (int i = 0; i < f->n; i++) any |= has(&r[d].t, f->s[i].f);
  if (!any) return;
  put(t, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, f->type);
  for (int d = 0; d < n; d++)
    for (int i = 0; i < f->n; i++) {
      if (!has(&r[d].t, f->s[i].f)) continue;
      put(t, "%s{", f->name);
      put_labels(t, &r[d]);
      if (f->label) put(t, ",%s=\"%s\"", f->label, f->s[i].value);
      put(t, "} %.17g\n", field_value(&r[d].t, f->s[i].f) * f->s[i].scale);
    }
}

/* Every device's exposition, read now. */
static void exposition(text_t *t, int first, int last) {
  int n = last - first + 1;
  dev_reading_t *r = calloc((size_t)n, sizeof *r);
  if (r == NULL) {
    t->oom = true;
    return;
  }
  for (int i = 0; i < n; i++) {
    r[i].device = first + i;
    gp_telemetry_init(&r[i].t);
    r[i].st = gp_device_get_telemetry(first + i, &r[i].t);
    gp_device_props_t p;
    gp_device_props_init(&p);
    if (gp_device_get_props(&p, first + i) == GP_SUCCESS) snprintf(r[i].name, sizeof r[i].name, "%s", p.name);
  }
  put(t, "# HELP gpuport_telemetry_up Whether the device's telemetry was read (1) or its "
         "reading failed (0).\n# TYPE gpuport_telemetry_up gauge\n");
  for (int i = 0; i < n; i++) {
    put(t, "gpuport_telemetry_up{");
    put_labels(t, &r[i]);
    put(t, ",source=\"%s\"} %d\n", r[i].t.source[0] ? r[i].t.source : "none", r[i].st == GP_SUCCESS);
  }
  put(t, "# HELP gpuport_device_info The device's name and backend (value 1).\n"
         "# TYPE gpuport_device_info gauge\n");
  for (int i = 0; i < n; i++) {
    put(t, "gpuport_device_info{");
    put_labels(t, &r[i]);
    put(t, ",name=\"");
    put_label(t, r[i].name);
    put(t, "\",backend=\"%s\"} 1\n", gp_backend_name());
  }
  for (size_t f = 0; f < N_FAMILIES; f++) put_family(t, &g_families[f], r, n);
  bool throttle = false;
  for (int i = 0; i < n; i++) throttle |= has(&r[i].t, GP_TELEMETRY_THROTTLE);
  if (throttle) {
    put(t, "# HELP gpuport_throttle_active Whether a reason holds the clocks down now (1) or "
           "not (0).\n# TYPE gpuport_throttle_active gauge\n");
    for (int i = 0; i < n; i++) {
      if (!has(&r[i].t, GP_TELEMETRY_THROTTLE)) continue;
      for (size_t k = 0; k < N_REASONS; k++) {
        put(t, "gpuport_throttle_active{");
        put_labels(t, &r[i]);
        put(t, ",reason=\"%s\"} %d\n", g_reasons[k].name, (r[i].t.throttle & g_reasons[k].flag) != 0);
      }
    }
  }
  free(r);
}

#ifdef GP_TOOL_MHD
typedef struct server {
  int first, last;
} server_t;

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls) {
  (void)version, (void)upload, (void)upload_size, (void)con_cls;
  const server_t *s = cls;
  unsigned code = MHD_HTTP_OK;
  const char *type = "text/plain; version=0.0.4; charset=utf-8";
  text_t t = {0};
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
    code = MHD_HTTP_METHOD_NOT_ALLOWED;
    put(&t, "only GET and HEAD\n");
  } else if (strcmp(url, "/metrics") == 0) {
    exposition(&t, s->first, s->last);
  } else if (strcmp(url, "/") == 0) {
    type = "text/html; charset=utf-8";
    put(&t, "<html><body><h1>gpuport exporter</h1><p><a href=\"/metrics\">/metrics</a></p>"
            "</body></html>\n");
  } else {
    code = MHD_HTTP_NOT_FOUND;
    put(&t, "not found: the metrics are at /metrics\n");
  }
  if (t.oom) {
    free(t.buf);
    return MHD_NO;
  }
  struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(t.len, t.buf, free);
  if (r == NULL) {
    free(t.buf);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", type);
  enum MHD_Result ret = MHD_queue_response(c, code, r);
  MHD_destroy_response(r);
  return ret;
}

/* HOST:PORT, [V6]:PORT, or PORT alone (on 127.0.0.1), numeric only. */
static bool parse_listen(const char *spec, struct sockaddr_storage *sa, socklen_t *len) {
  char host[128] = "127.0.0.1";
  const char *port = spec;
  const char *colon = strrchr(spec, ':');
  if (colon) {
    size_t hl = (size_t)(colon - spec);
    if (spec[0] == '[' && hl >= 2 && spec[hl - 1] == ']') spec++, hl -= 2;
    if (hl == 0 || hl >= sizeof host) return false;
    memcpy(host, spec, hl);
    host[hl] = 0;
    port = colon + 1;
  }
  struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM};
  struct addrinfo *res = NULL;
  if (getaddrinfo(host, port, &hints, &res) != 0 || res == NULL) return false;
  memcpy(sa, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

static int serve(const monitor_opts_t *o, int first, int last) {
  struct sockaddr_storage sa;
  socklen_t len = 0;
  if (!parse_listen(o->listen, &sa, &len)) {
    fprintf(stderr, "gpuport monitor: --listen '%s' is not HOST:PORT (numeric host, e.g. "
                    "127.0.0.1:9400 or [::1]:9400)\n", o->listen);
    return 2;
  }
  /* The daemon's thread inherits this mask: the signals come to sigwait below. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  server_t s = {first, last};
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
                   (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, answer, &s, MHD_OPTION_SOCK_ADDR,
                                          (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_TIMEOUT,
                                          (unsigned)30, MHD_OPTION_CONNECTION_LIMIT, (unsigned)32,
                                          MHD_OPTION_END);
  if (d == NULL) {
    fprintf(stderr, "gpuport monitor: cannot listen on %s: %s\n", o->listen, strerror(errno));
    return 1;
  }
  const union MHD_DaemonInfo *fd = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
  struct sockaddr_storage bound;
  socklen_t blen = sizeof bound;
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (fd && getsockname(fd->listen_fd, (struct sockaddr *)&bound, &blen) == 0) {
    if (bound.ss_family == AF_INET6) {
      struct sockaddr_in6 *a = (struct sockaddr_in6 *)&bound;
      inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
      port = ntohs(a->sin6_port);
    } else {
      struct sockaddr_in *a = (struct sockaddr_in *)&bound;
      inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
      port = ntohs(a->sin_port);
    }
  }
  printf(bound.ss_family == AF_INET6 ? "listening on http://[%s]:%u/metrics\n"
                                     : "listening on http://%s:%u/metrics\n",
         host, port);
  fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  MHD_stop_daemon(d);
  return 0;
}
#endif

static int run_prometheus(const monitor_opts_t *o) {
  int first, last, rc = device_range(o, &first, &last);
  if (rc) return rc;
  if (o->once) {
    /* A first reading, so the host's two-sample fields have an interval. */
    gp_telemetry_t t;
    for (int d = first; d <= last; d++) {
      gp_telemetry_init(&t);
      (void)gp_device_get_telemetry(d, &t);
    }
    sleep_s(0.1);
    text_t t2 = {0};
    exposition(&t2, first, last);
    if (t2.oom) {
      fprintf(stderr, "gpuport monitor: out of memory\n");
      free(t2.buf);
      return 1;
    }
    fwrite(t2.buf, 1, t2.len, stdout);
    free(t2.buf);
    return 0;
  }
#ifdef GP_TOOL_MHD
  return serve(o, first, last);
#else
  fprintf(stderr, "gpuport monitor: this gpuport was built without libmicrohttpd, so it cannot "
                  "serve HTTP; install libmicrohttpd-dev and rebuild, or use --once\n");
  return 2;
#endif
}

int tool_monitor(int argc, char **argv) {
  monitor_opts_t o = {.interval = 1.0, .count = -1, .device = -1, .listen = "127.0.0.1:9400"};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(monitor_usage, stdout);
      return 0;
    } else if (!strcmp(a, "--json")) {
      o.json = true;
    } else if (!strcmp(a, "--prometheus")) {
      o.prometheus = true;
    } else if (!strcmp(a, "--once")) {
      o.once = true;
    } else if ((!strcmp(a, "-i") || !strcmp(a, "--interval")) && i + 1 < argc) {
      char *end = NULL;
      o.interval = strtod(argv[++i], &end);
      if (end == argv[i] || *end || !(o.interval >= 0.01 && o.interval <= 86400)) {
        fprintf(stderr, "gpuport monitor: -i '%s' is not a number of seconds in 0.01..86400\n", argv[i]);
        return 2;
      }
    } else if ((!strcmp(a, "-c") || !strcmp(a, "--count")) && i + 1 < argc) {
      char *end = NULL;
      o.count = strtoll(argv[++i], &end, 10);
      if (end == argv[i] || *end || o.count < 1) {
        fprintf(stderr, "gpuport monitor: -c '%s' is not a positive count\n", argv[i]);
        return 2;
      }
    } else if ((!strcmp(a, "-d") || !strcmp(a, "--device")) && i + 1 < argc) {
      char *end = NULL;
      long d = strtol(argv[++i], &end, 10);
      if (end == argv[i] || *end || d < 0 || d > 4096) {
        fprintf(stderr, "gpuport monitor: -d '%s' is not a device ordinal\n", argv[i]);
        return 2;
      }
      o.device = (int)d;
    } else if (!strcmp(a, "--listen") && i + 1 < argc) {
      o.listen = argv[++i];
    } else {
      return tool_bad_arg("monitor", a);
    }
  }
  return o.prometheus ? run_prometheus(&o) : run_table(&o);
}

/* ---- gpuport bench telemetry --------------------------------------------------------------- */

static double thread_cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* The median, 99th percentile and worst wall time of --iters readings of each device
 * after --warmup, and the median CPU time of the calling thread (user and kernel: what
 * a reading costs without the wait for a CPU on a loaded machine); a figure, not a test
 * (docs/PERFORMANCE.md). */
int tool_bench_telemetry(int argc, char **argv) {
  int64_t iters = 1000, warmup = 20;
  bool json = false;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = true;
    else if (!(tool_arg_i64(argc, argv, &i, "--iters", &iters) ||
               tool_arg_i64(argc, argv, &i, "--warmup", &warmup)))
      return tool_bad_arg("bench telemetry", argv[i]);
  }
  if (iters < 1) iters = 1;
  int n = 0;
  gp_status_t s = gp_device_count(&n);
  if (s != GP_SUCCESS) {
    tool_report("bench telemetry", "gp_device_count", s);
    return 1;
  }
  double *us = calloc((size_t)iters, sizeof *us), *cpu = calloc((size_t)iters, sizeof *cpu);
  if (us == NULL || cpu == NULL) {
    free(us), free(cpu);
    return 1;
  }
  if (json)
    printf("{\n  \"backend\": \"%s\", \"iters\": %lld, \"results\": [", gp_backend_name(),
           (long long)iters);
  else
    printf("gpuport bench telemetry: backend %s, %d device(s), %lld readings each after %lld\n",
           gp_backend_name(), n, (long long)iters, (long long)warmup);
  int rc = 0;
  for (int d = 0; d < n && rc == 0; d++) {
    gp_telemetry_t t;
    for (int64_t i = 0; i < warmup; i++) {
      gp_telemetry_init(&t);
      (void)gp_device_get_telemetry(d, &t);
    }
    double worst = 0;
    for (int64_t i = 0; i < iters; i++) {
      gp_telemetry_init(&t);
      double c0 = thread_cpu_us(), t0 = tool_now_ms();
      s = gp_device_get_telemetry(d, &t);
      us[i] = (tool_now_ms() - t0) * 1e3;
      cpu[i] = thread_cpu_us() - c0;
      if (us[i] > worst) worst = us[i];
      if (s != GP_SUCCESS) {
        tool_report("bench telemetry", "gp_device_get_telemetry", s);
        rc = 1;
        break;
      }
    }
    if (rc) break;
    int fields = 0;
    for (int f = 0; f < GP_TELEMETRY_FIELD_COUNT; f++) fields += has(&t, (gp_telemetry_field_t)f);
    double med = tool_median(us, (int)iters); /* sorts us */
    double p99 = us[(size_t)((double)(iters - 1) * 0.99)];
    double cpu_med = tool_median(cpu, (int)iters);
    if (json)
      printf("%s\n    {\"bench\": \"telemetry\", \"device\": %d, \"source\": \"%s\", "
             "\"fields\": %d, \"median_us\": %.3f, \"p99_us\": %.3f, \"max_us\": %.3f, "
             "\"cpu_median_us\": %.3f}",
             d ? "," : "", d, t.source, fields, med, p99, worst, cpu_med);
    else
      printf("telemetry  device %-2d %-9s %2d fields  %8.1f us median  %8.1f us p99  %8.1f us max  "
             "%8.1f us CPU (median)\n",
             d, t.source, fields, med, p99, worst, cpu_med);
  }
  if (json) printf("\n  ]\n}\n");
  free(us);
  free(cpu);
  return rc;
}
