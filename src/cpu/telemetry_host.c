/*
 * telemetry_host.c - gp_device_get_telemetry on the cpu backend: the Linux host the
 * virtual devices run on, read from the kernel's own files (TELEMETRY.md "cpu"):
 *
 *   temp_die_c      hwmon coretemp "Package id N" (Intel), k10temp/zenpower "Tdie" or
 *                   "Tctl" (AMD); else the thermal zone of type x86_pkg_temp. The
 *                   hottest package. (Documentation/hwmon/sysfs-interface.rst: m°C.)
 *   temp_memory_c   hwmon jc42 / spd5118 (DIMM sensors): the hottest
 *   energy_j        powercap RAPL package domains, intel-rapl:N/energy_uj (uJ), summed,
 *                   continued across each domain's wrap at max_energy_range_uj
 *                   (Documentation/power/powercap/powercap.rst). Recent kernels let
 *                   only root read it: then it is unavailable.
 *   power_w         energy over the time since this device's previous reading
 *   power_limit_w   the packages' constraint_0_power_limit_uw (long term), summed
 *   clock_sm_mhz    cpufreq policies' scaling_cur_freq (kHz), their mean; without
 *                   cpufreq, the mean "cpu MHz" of /proc/cpuinfo
 *   clock_sm_max_mhz cpufreq cpuinfo_max_freq, the highest
 *   memory_*        /proc/meminfo MemTotal, MemTotal - MemAvailable
 *   util_compute_pct /proc/stat: busy share of all CPUs' time since this device's
 *                   previous reading (busy = all but idle and iowait; proc(5))
 *   ecc_*           EDAC memory controllers' ce_count / ue_count, summed
 *
 * Not on the host: edge and junction temperatures, memory clocks, memory-controller
 * utilisation, PCIe throughput, throttle reasons. What exists is found at a device's
 * first reading; every value is parsed from text the kernel wrote, bounded and
 * checked (a file that does not parse is a field left unavailable).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "telemetry.h"

#define BIT GP_TELEMETRY_BIT

/* ---- files ---------------------------------------------------------------------------------- */

/* Reads at most n - 1 bytes of root/rel into buf (NUL-terminated); the length, or -1. */
static ssize_t read_text(const char *root, const char *rel, char *buf, size_t n) {
  char path[PATH_MAX];
  if ((size_t)snprintf(path, sizeof path, "%s%s", root, rel) >= sizeof path) return -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got + 1 < n) {
    ssize_t r = read(fd, buf + got, n - 1 - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  buf[got] = '\0';
  return (ssize_t)got;
}

/* A file holding one non-negative integer (hwmon, powercap, cpufreq, EDAC). */
static bool read_u64(const char *root, const char *rel, unsigned long long *v) {
  char buf[64];
  if (read_text(root, rel, buf, sizeof buf) <= 0) return false;
  char *end = NULL;
  errno = 0;
  if (buf[0] == '-') return false;
  unsigned long long x = strtoull(buf, &end, 10);
  if (errno || end == buf || (*end != '\0' && *end != '\n')) return false;
  *v = x;
  return true;
}

/* hwmon and thermal temperatures are signed millidegrees. */
static bool read_mc(const char *root, const char *rel, double *c) {
  char buf[64];
  if (read_text(root, rel, buf, sizeof buf) <= 0) return false;
  char *end = NULL;
  errno = 0;
  long long x = strtoll(buf, &end, 10);
  if (errno || end == buf || (*end != '\0' && *end != '\n')) return false;
  if (x < -273150 || x > 1000000) return false; /* not a temperature */
  *c = (double)x * 1e-3;
  return true;
}

static bool read_word(const char *root, const char *rel, char *buf, size_t n) {
  if (read_text(root, rel, buf, n) <= 0) return false;
  buf[strcspn(buf, "\n")] = '\0';
  return true;
}

static bool join(char *out, const char *dir, const char *name) {
  return (size_t)snprintf(out, GP__TM_HOST_PATH_MAX, "%s/%s", dir, name) < GP__TM_HOST_PATH_MAX;
}

/* What a directory walk's callback gets: the host being planned, the root, and for a
 * hwmon chip's label walk the chip's directory and the AMD labels it found. */
typedef struct walk {
  gp__tm_host_t *h;
  const char *root;
  const char *dir;
  char tdie[GP__TM_HOST_PATH_MAX], tctl[GP__TM_HOST_PATH_MAX];
} walk_t;
typedef void (*walk_fn)(walk_t *w, const char *rel, const char *name);

/* Calls fn(w, "<dir>/<entry>", entry) for each entry of root/dir whose name begins with
 * prefix. */
static void each_entry(walk_t *w, const char *dir, const char *prefix, walk_fn fn) {
  const char *root = w->root;
  char path[PATH_MAX];
  if ((size_t)snprintf(path, sizeof path, "%s%s", root, dir) >= sizeof path) return;
  DIR *d = opendir(path);
  if (d == NULL) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
    char rel[GP__TM_HOST_PATH_MAX];
    if (join(rel, dir, e->d_name)) fn(w, rel, e->d_name);
  }
  closedir(d);
}

/* ---- discovery ----------------------------------------------------------------------------- */

static void add(char list[][GP__TM_HOST_PATH_MAX], int *n, const char *rel) {
  if (*n < GP__TM_HOST_PKG_MAX) gp__tm_fmt(list[(*n)++], GP__TM_HOST_PATH_MAX, "%s", rel);
}

/* One label file of a hwmon chip: coretemp's packages, k10temp's Tdie or Tctl. */
static void hwmon_label(walk_t *w, const char *rel, const char *name) {
  gp__tm_host_t *h = w->h;
  const char *root = w->root;
  size_t len = strlen(name);
  if (len < 7 || strcmp(name + len - 6, "_label") != 0) return;
  char label[64], input[GP__TM_HOST_PATH_MAX];
  if (!read_word(root, rel, label, sizeof label)) return;
  char stem[64];
  gp__tm_fmt(stem, sizeof stem, "%.*s_input", (int)(len - 6), name);
  if (!join(input, w->dir, stem)) return;
  double c;
  if (!read_mc(root, input, &c)) return;
  if (strncmp(label, "Package id", 10) == 0) add(h->die, &h->n_die, input);
  else if (strcmp(label, "Tdie") == 0) gp__tm_fmt(w->tdie, sizeof w->tdie, "%s", input);
  else if (strcmp(label, "Tctl") == 0) gp__tm_fmt(w->tctl, sizeof w->tctl, "%s", input);
}

static void hwmon_chip(walk_t *w, const char *rel, const char *name) {
  (void)name;
  gp__tm_host_t *h = w->h;
  const char *root = w->root;
  char chip[64], path[GP__TM_HOST_PATH_MAX];
  if (!join(path, rel, "name") || !read_word(root, path, chip, sizeof chip)) return;
  double c;
  if (strcmp(chip, "jc42") == 0 || strcmp(chip, "spd5118") == 0) {
    if (join(path, rel, "temp1_input") && read_mc(root, path, &c)) add(h->mem, &h->n_mem, path);
    return;
  }
  bool amd = strcmp(chip, "k10temp") == 0 || strcmp(chip, "zenpower") == 0;
  if (!amd && strcmp(chip, "coretemp") != 0) return;
  walk_t scan = {.h = h, .root = root, .dir = rel};
  each_entry(&scan, rel, "temp", hwmon_label);
  if (!amd) return;
  if (scan.tdie[0]) add(h->die, &h->n_die, scan.tdie);
  else if (scan.tctl[0]) add(h->die, &h->n_die, scan.tctl);
  else if (join(path, rel, "temp1_input") && read_mc(root, path, &c)) add(h->die, &h->n_die, path);
}

static void thermal_zone(walk_t *w, const char *rel, const char *name) {
  gp__tm_host_t *h = w->h;
  const char *root = w->root;
  (void)name;
  char type[64], path[GP__TM_HOST_PATH_MAX];
  double c;
  if (join(path, rel, "type") && read_word(root, path, type, sizeof type) &&
      strcmp(type, "x86_pkg_temp") == 0 && join(path, rel, "temp") && read_mc(root, path, &c))
    add(h->die, &h->n_die, path);
}

static void rapl_zone(walk_t *w, const char *rel, const char *name) {
  gp__tm_host_t *h = w->h;
  const char *root = w->root;
  /* Packages are intel-rapl:N; their subzones (intel-rapl:N:M) would count twice. */
  if (strchr(strchr(name, ':') + 1, ':') != NULL) return;
  char zone[64], path[GP__TM_HOST_PATH_MAX];
  unsigned long long v;
  if (!join(path, rel, "name") || !read_word(root, path, zone, sizeof zone) ||
      strncmp(zone, "package", 7) != 0)
    return;
  if (join(path, rel, "energy_uj") && read_u64(root, path, &v)) add(h->rapl, &h->n_rapl, rel);
}

static void cpufreq_policy(walk_t *w, const char *rel, const char *name) {
  gp__tm_host_t *h = w->h;
  const char *root = w->root;
  (void)name;
  char path[GP__TM_HOST_PATH_MAX];
  unsigned long long khz;
  if (!join(path, rel, "scaling_cur_freq") || !read_u64(root, path, &khz)) return;
  add(h->freq, &h->n_freq, rel);
  if (join(path, rel, "cpuinfo_max_freq") && read_u64(root, path, &khz) &&
      (double)khz * 1e-3 > h->freq_max_mhz)
    h->freq_max_mhz = (double)khz * 1e-3;
}

static void edac_mc(walk_t *w, const char *rel, const char *name) {
  gp__tm_host_t *h = w->h;
  const char *root = w->root;
  char path[GP__TM_HOST_PATH_MAX];
  unsigned long long v;
  if (name[2] < '0' || name[2] > '9') return; /* mc0, mc1, ...: not "mc" itself */
  if (join(path, rel, "ce_count") && read_u64(root, path, &v)) add(h->edac, &h->n_edac, rel);
}

static bool cpuinfo_mhz(const char *root, double *mhz);
static bool meminfo(const char *root, uint64_t *total, uint64_t *used);
static bool stat_cpu(const char *root, unsigned long long *busy, unsigned long long *total);

static void plan(gp__tm_host_t *h, const char *root) {
  memset(h, 0, sizeof *h);
  h->planned = true;
  walk_t w = {.h = h, .root = root};
  each_entry(&w, "/sys/class/hwmon", "hwmon", hwmon_chip);
  if (h->n_die == 0) each_entry(&w, "/sys/class/thermal", "thermal_zone", thermal_zone);
  each_entry(&w, "/sys/class/powercap", "intel-rapl:", rapl_zone);
  each_entry(&w, "/sys/devices/system/cpu/cpufreq", "policy", cpufreq_policy);
  each_entry(&w, "/sys/devices/system/edac/mc", "mc", edac_mc);
  double mhz;
  if (h->n_freq == 0) h->cpuinfo_mhz = cpuinfo_mhz(root, &mhz);
  uint64_t a, b;
  unsigned long long c, d;
  if (h->n_die) h->offered |= BIT(GP_TELEMETRY_TEMP_DIE);
  if (h->n_mem) h->offered |= BIT(GP_TELEMETRY_TEMP_MEMORY);
  if (h->n_rapl) h->offered |= BIT(GP_TELEMETRY_ENERGY) | BIT(GP_TELEMETRY_POWER);
  if (h->n_freq || h->cpuinfo_mhz) h->offered |= BIT(GP_TELEMETRY_CLOCK_SM);
  if (h->freq_max_mhz > 0) h->offered |= BIT(GP_TELEMETRY_CLOCK_SM_MAX);
  if (meminfo(root, &a, &b))
    h->offered |= BIT(GP_TELEMETRY_MEMORY_USED) | BIT(GP_TELEMETRY_MEMORY_TOTAL);
  if (stat_cpu(root, &c, &d)) h->offered |= BIT(GP_TELEMETRY_UTIL_COMPUTE);
  if (h->n_edac) h->offered |= BIT(GP_TELEMETRY_ECC_CORRECTED) | BIT(GP_TELEMETRY_ECC_UNCORRECTED);
  for (int i = 0; i < h->n_rapl; i++) {
    char path[GP__TM_HOST_PATH_MAX];
    unsigned long long lim;
    if (join(path, h->rapl[i], "constraint_0_power_limit_uw") && read_u64(root, path, &lim))
      h->offered |= BIT(GP_TELEMETRY_POWER_LIMIT);
  }
}

/* ---- procfs --------------------------------------------------------------------------------- */

/* One line of /proc/cpuinfo: adds x of "cpu MHz : x". */
static void mhz_line(const char *line, double *sum, int *n) {
  if (strncmp(line, "cpu MHz", 7) != 0) return;
  const char *colon = strchr(line, ':');
  if (colon == NULL) return;
  char *end = NULL;
  double v = strtod(colon + 1, &end);
  if (end != colon + 1 && isfinite(v) && v > 0 && v < 1e5) *sum += v, (*n)++;
}

/* The mean of every "cpu MHz" line of /proc/cpuinfo (x86), read a block at a time: the
 * file is about 1 KB per CPU. Lines longer than the block (flags) are skipped. */
static bool cpuinfo_mhz(const char *root, double *mhz) {
  char path[PATH_MAX], buf[8192];
  if ((size_t)snprintf(path, sizeof path, "%s/proc/cpuinfo", root) >= sizeof path) return false;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  double sum = 0;
  int n = 0;
  size_t have = 0;
  bool skipping = false; /* inside a line longer than buf */
  for (;;) {
    ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    have += (size_t)r;
    buf[have] = '\0';
    char *line = buf, *nl;
    while ((nl = memchr(line, '\n', have - (size_t)(line - buf))) != NULL) {
      *nl = '\0';
      if (!skipping) mhz_line(line, &sum, &n);
      skipping = false;
      line = nl + 1;
    }
    have -= (size_t)(line - buf);
    memmove(buf, line, have);
    if (have == sizeof buf - 1) have = 0, skipping = true;
  }
  close(fd);
  if (have && !skipping) {
    buf[have] = '\0';
    mhz_line(buf, &sum, &n);
  }
  if (n == 0) return false;
  *mhz = sum / n;
  return true;
}

static bool meminfo_kb(const char *buf, const char *key, unsigned long long *kb) {
  const char *p = strstr(buf, key);
  if (p == NULL || (p != buf && p[-1] != '\n')) return false;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(p + strlen(key), &end, 10);
  if (errno || end == p + strlen(key) || v > (UINT64_MAX >> 10)) return false;
  *kb = v;
  return true;
}

static bool meminfo(const char *root, uint64_t *total, uint64_t *used) {
  char buf[8192];
  unsigned long long t, a;
  if (read_text(root, "/proc/meminfo", buf, sizeof buf) <= 0 ||
      !meminfo_kb(buf, "MemTotal:", &t) || !meminfo_kb(buf, "MemAvailable:", &a) || a > t)
    return false;
  *total = (uint64_t)t << 10;
  *used = (uint64_t)(t - a) << 10;
  return true;
}

/* The aggregate "cpu" line: user nice system idle iowait irq softirq steal (guest and
 * guest_nice are already inside user and nice: proc(5)). */
static bool stat_cpu(const char *root, unsigned long long *busy, unsigned long long *total) {
  char buf[512];
  if (read_text(root, "/proc/stat", buf, sizeof buf) <= 0 || strncmp(buf, "cpu ", 4) != 0)
    return false;
  unsigned long long v[8] = {0};
  char *p = buf + 4;
  int n = 0;
  for (; n < 8; n++) {
    char *end = NULL;
    errno = 0;
    v[n] = strtoull(p, &end, 10);
    if (errno || end == p) break;
    p = end;
  }
  if (n < 4) return false;
  unsigned long long sum = 0;
  for (int i = 0; i < n; i++) sum += v[i];
  *total = sum;
  *busy = sum - v[3] - (n > 4 ? v[4] : 0);
  return true;
}

/* ---- one reading ----------------------------------------------------------------------------- */

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void read_temps(const char *root, char list[][GP__TM_HOST_PATH_MAX], int n,
                       gp_telemetry_t *t, gp_telemetry_field_t f) {
  double hottest = -INFINITY, c;
  bool any = false;
  for (int i = 0; i < n; i++)
    if (read_mc(root, list[i], &c)) {
      any = true;
      if (c > hottest) hottest = c;
    }
  if (any) gp__telemetry_set(t, f, hottest);
  else if (n) t->failed |= BIT(f);
}

/* RAPL energy: the counter continues across wraps; power from the previous reading. */
static void read_rapl(const char *root, gp__tm_host_t *h, gp_telemetry_t *t, double now) {
  if (h->n_rapl == 0) return;
  unsigned long long raw[GP__TM_HOST_PKG_MAX];
  char path[GP__TM_HOST_PATH_MAX];
  for (int i = 0; i < h->n_rapl; i++) {
    if (!join(path, h->rapl[i], "energy_uj") || !read_u64(root, path, &raw[i])) {
      t->failed |= BIT(GP_TELEMETRY_ENERGY) | BIT(GP_TELEMETRY_POWER);
      return;
    }
  }
  double prev = h->energy_j;
  if (!h->have_energy) {
    double sum = 0;
    for (int i = 0; i < h->n_rapl; i++) {
      unsigned long long range = 0;
      if (!join(path, h->rapl[i], "max_energy_range_uj") || !read_u64(root, path, &range))
        range = 0;
      h->rapl_range[i] = range;
      sum += (double)raw[i] * 1e-6;
    }
    h->energy_j = sum;
  } else {
    for (int i = 0; i < h->n_rapl; i++) {
      unsigned long long d = raw[i] >= h->rapl_raw[i] ? raw[i] - h->rapl_raw[i]
                             : h->rapl_range[i] > h->rapl_raw[i]
                                 ? h->rapl_range[i] - h->rapl_raw[i] + raw[i]
                                 : 0; /* a wrap without a known range: skip that interval */
      h->energy_j += (double)d * 1e-6;
    }
  }
  memcpy(h->rapl_raw, raw, sizeof(raw[0]) * (size_t)h->n_rapl);
  gp__telemetry_set(t, GP_TELEMETRY_ENERGY, h->energy_j);
  if (h->have_energy && now > h->prev_t)
    gp__telemetry_set(t, GP_TELEMETRY_POWER, (h->energy_j - prev) / (now - h->prev_t));
  h->have_energy = true;
  double limit = 0;
  bool any = false;
  for (int i = 0; i < h->n_rapl; i++) {
    unsigned long long uw;
    if (join(path, h->rapl[i], "constraint_0_power_limit_uw") && read_u64(root, path, &uw))
      limit += (double)uw * 1e-6, any = true;
  }
  if (any) gp__telemetry_set(t, GP_TELEMETRY_POWER_LIMIT, limit);
}

static void read_clock(const char *root, gp__tm_host_t *h, gp_telemetry_t *t) {
  if (h->n_freq) {
    double sum = 0;
    int n = 0;
    char path[GP__TM_HOST_PATH_MAX];
    for (int i = 0; i < h->n_freq; i++) {
      unsigned long long khz;
      if (join(path, h->freq[i], "scaling_cur_freq") && read_u64(root, path, &khz))
        sum += (double)khz * 1e-3, n++;
    }
    if (n) gp__telemetry_set(t, GP_TELEMETRY_CLOCK_SM, sum / n);
    else t->failed |= BIT(GP_TELEMETRY_CLOCK_SM);
  } else if (h->cpuinfo_mhz) {
    double mhz;
    if (cpuinfo_mhz(root, &mhz)) gp__telemetry_set(t, GP_TELEMETRY_CLOCK_SM, mhz);
    else t->failed |= BIT(GP_TELEMETRY_CLOCK_SM);
  }
  if (h->freq_max_mhz > 0) gp__telemetry_set(t, GP_TELEMETRY_CLOCK_SM_MAX, h->freq_max_mhz);
}

static void read_edac(const char *root, gp__tm_host_t *h, gp_telemetry_t *t) {
  if (h->n_edac == 0) return;
  unsigned long long ce = 0, ue = 0, v;
  bool ok_ce = true, ok_ue = true;
  char path[GP__TM_HOST_PATH_MAX];
  for (int i = 0; i < h->n_edac; i++) {
    if (join(path, h->edac[i], "ce_count") && read_u64(root, path, &v)) ce += v;
    else ok_ce = false;
    if (join(path, h->edac[i], "ue_count") && read_u64(root, path, &v)) ue += v;
    else ok_ue = false;
  }
  if (ok_ce) gp__telemetry_set_u64(t, GP_TELEMETRY_ECC_CORRECTED, ce);
  else t->failed |= BIT(GP_TELEMETRY_ECC_CORRECTED);
  if (ok_ue) gp__telemetry_set_u64(t, GP_TELEMETRY_ECC_UNCORRECTED, ue);
  else t->failed |= BIT(GP_TELEMETRY_ECC_UNCORRECTED);
}

void gp__telemetry_host_read(const char *root, gp__tm_host_t *h, gp_telemetry_t *t,
                             uint64_t *offered) {
  if (!h->planned) plan(h, root);
  double now = mono_now();
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  t->timestamp_s = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  gp__tm_fmt(t->source, sizeof t->source, "host");
  read_temps(root, h->die, h->n_die, t, GP_TELEMETRY_TEMP_DIE);
  read_temps(root, h->mem, h->n_mem, t, GP_TELEMETRY_TEMP_MEMORY);
  read_rapl(root, h, t, now);
  read_clock(root, h, t);
  uint64_t total, used;
  if (meminfo(root, &total, &used)) {
    gp__telemetry_set_u64(t, GP_TELEMETRY_MEMORY_TOTAL, total);
    gp__telemetry_set_u64(t, GP_TELEMETRY_MEMORY_USED, used);
  } else if (h->offered & BIT(GP_TELEMETRY_MEMORY_TOTAL)) {
    t->failed |= BIT(GP_TELEMETRY_MEMORY_TOTAL) | BIT(GP_TELEMETRY_MEMORY_USED);
  }
  unsigned long long busy, all;
  if (stat_cpu(root, &busy, &all)) {
    if (h->have_prev && all > h->prev_total && busy >= h->prev_busy)
      gp__telemetry_set(t, GP_TELEMETRY_UTIL_COMPUTE,
                        100.0 * (double)(busy - h->prev_busy) / (double)(all - h->prev_total));
    h->prev_busy = busy;
    h->prev_total = all;
    h->have_prev = true;
  } else if (h->offered & BIT(GP_TELEMETRY_UTIL_COMPUTE)) {
    t->failed |= BIT(GP_TELEMETRY_UTIL_COMPUTE);
  }
  read_edac(root, h, t);
  h->prev_t = now;
  t->failed &= ~t->available;
  *offered = h->offered;
}

/* ---- the backend ------------------------------------------------------------------------------- */

#define HOST_DEVICES 64
static pthread_mutex_t g_host_mu = PTHREAD_MUTEX_INITIALIZER;
static gp__tm_host_t g_host[HOST_DEVICES];
static char g_root[PATH_MAX];
static bool g_root_read;

gp_status_t gp__be_device_get_telemetry(int device, gp_telemetry_t *t, uint64_t *offered) {
  if (device < 0 || device >= HOST_DEVICES)
    return GP__ERR(GP_ERROR_INVALID_DEVICE, "device %d: the cpu backend has at most %d", device,
                   HOST_DEVICES);
  pthread_mutex_lock(&g_host_mu);
  /* GP_TELEMETRY_HOST_ROOT: the host's /sys and /proc under another directory (a
   * container that mounts them under /host, as node_exporter's --path.rootfs), read once. */
  if (!g_root_read) {
    const char *r = getenv("GP_TELEMETRY_HOST_ROOT");
    if (r && *r && strlen(r) < sizeof g_root) {
      memcpy(g_root, r, strlen(r) + 1);
      while (strlen(g_root) > 1 && g_root[strlen(g_root) - 1] == '/') g_root[strlen(g_root) - 1] = 0;
      if (strcmp(g_root, "/") == 0) g_root[0] = 0;
    }
    g_root_read = true;
  }
  gp__telemetry_host_read(g_root, &g_host[device], t, offered);
  pthread_mutex_unlock(&g_host_mu);
  return GP_SUCCESS;
}
