/*
 * test_telemetry.c - device telemetry (gpuport/telemetry.h), checked in CI without a GPU.
 *
 * How: the NVML and AMD SMI / ROCm SMI readers (src/telemetry_nvml.c,
 * src/telemetry_amd.c) are built into the cpu library too; their entry points take the
 * library's path and a PCI bus id (src/telemetry.h), so this suite calls them with the
 * mock libraries of test/mock/ (built beside this binary), whose known readings, knobs
 * and call logs check every field's call, enum, unit and struct layout, an unsupported
 * field, a failing call, a missing library, a failing initialisation and a call that
 * hangs (the caller gets GP_ERROR_TIMEOUT within the deadline). The host reader
 * (src/cpu/telemetry_host.c) is checked against a fake sysfs/procfs tree with known
 * values, and the cpu backend's real readings for sanity (ranges, a monotonic energy
 * counter, consistency of the masks) through the public calls.
 *
 * Every reading is checked for consistency: a field is NaN (double) or 0 (integer)
 * exactly when its available bit is clear, failed bits are never available ones, and
 * what is available is offered.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <gpuport.h>
#include "check_util.h"

#ifdef GP_BUILD_CPU
#include "telemetry.h"

#define BIT GP_TELEMETRY_BIT

static char g_dir[PATH_MAX]; /* the mocks' directory */
static char g_nvml[PATH_MAX], g_nvml_old[PATH_MAX], g_amdsmi[PATH_MAX], g_rsmi[PATH_MAX];
static void (*nvml_set)(const char *, long);
static const char *(*nvml_log)(void);
static void (*nvml_clear)(void);
static void (*amd_set)(const char *, long);
static void (*rsmi_set)(const char *, long);

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- helpers ---------------------------------------------------------------------------- */

static double dfield(const gp_telemetry_t *t, gp_telemetry_field_t f);

static bool is_integer(gp_telemetry_field_t f) {
  return f == GP_TELEMETRY_MEMORY_USED || f == GP_TELEMETRY_MEMORY_TOTAL ||
         f == GP_TELEMETRY_ECC_CORRECTED || f == GP_TELEMETRY_ECC_UNCORRECTED ||
         f == GP_TELEMETRY_THROTTLE;
}

static const void *field_ptr(const gp_telemetry_t *t, gp_telemetry_field_t f) {
  switch (f) {
    case GP_TELEMETRY_TEMP_DIE: return &t->temp_die_c;
    case GP_TELEMETRY_TEMP_EDGE: return &t->temp_edge_c;
    case GP_TELEMETRY_TEMP_JUNCTION: return &t->temp_junction_c;
    case GP_TELEMETRY_TEMP_MEMORY: return &t->temp_memory_c;
    case GP_TELEMETRY_POWER: return &t->power_w;
    case GP_TELEMETRY_POWER_AVERAGE: return &t->power_average_w;
    case GP_TELEMETRY_ENERGY: return &t->energy_j;
    case GP_TELEMETRY_POWER_LIMIT: return &t->power_limit_w;
    case GP_TELEMETRY_CLOCK_SM: return &t->clock_sm_mhz;
    case GP_TELEMETRY_CLOCK_SM_MAX: return &t->clock_sm_max_mhz;
    case GP_TELEMETRY_CLOCK_MEMORY: return &t->clock_memory_mhz;
    case GP_TELEMETRY_CLOCK_MEMORY_MAX: return &t->clock_memory_max_mhz;
    case GP_TELEMETRY_MEMORY_USED: return &t->memory_used_bytes;
    case GP_TELEMETRY_MEMORY_TOTAL: return &t->memory_total_bytes;
    case GP_TELEMETRY_UTIL_COMPUTE: return &t->util_compute_pct;
    case GP_TELEMETRY_UTIL_MEMORY: return &t->util_memory_pct;
    case GP_TELEMETRY_ECC_CORRECTED: return &t->ecc_corrected;
    case GP_TELEMETRY_ECC_UNCORRECTED: return &t->ecc_uncorrected;
    case GP_TELEMETRY_PCIE_TX: return &t->pcie_tx_bytes_per_s;
    case GP_TELEMETRY_PCIE_RX: return &t->pcie_rx_bytes_per_s;
    case GP_TELEMETRY_THROTTLE: return &t->throttle;
    default: return NULL;
  }
}

static double dfield(const gp_telemetry_t *t, gp_telemetry_field_t f) {
  const void *p = field_ptr(t, f);
  if (is_integer(f)) return (double)*(const uint64_t *)p;
  return *(const double *)p;
}

/* Unavailable means NaN or 0, never a made-up reading; failed and available are apart;
 * what is available is offered. */
static void consistent(const gp_telemetry_t *t, uint64_t offered) {
  ck_assert_msg((t->failed & t->available) == 0, "failed %llx overlaps available %llx",
                (unsigned long long)t->failed, (unsigned long long)t->available);
  ck_assert_msg((t->available & ~offered) == 0, "available %llx not offered (%llx)",
                (unsigned long long)t->available, (unsigned long long)offered);
  ck_assert_msg((t->available >> GP_TELEMETRY_FIELD_COUNT) == 0, "bits past the last field");
  for (int f = 0; f < GP_TELEMETRY_FIELD_COUNT; f++) {
    bool avail = (t->available & BIT(f)) != 0;
    const char *name = gp_telemetry_field_name((gp_telemetry_field_t)f);
    if (is_integer((gp_telemetry_field_t)f)) {
      if (!avail)
        ck_assert_msg(*(const uint64_t *)field_ptr(t, (gp_telemetry_field_t)f) == 0,
                      "%s unavailable but not 0", name);
    } else {
      double v = dfield(t, (gp_telemetry_field_t)f);
      ck_assert_msg(avail ? isfinite(v) : isnan(v), "%s: available %d, value %g", name, avail, v);
    }
  }
}

static void expect(const gp_telemetry_t *t, gp_telemetry_field_t f, double want) {
  const char *name = gp_telemetry_field_name(f);
  ck_assert_msg(t->available & BIT(f), "%s is not available (source %s)", name, t->source);
  double got = dfield(t, f);
  ck_assert_msg(fabs(got - want) <= 1e-9 * fabs(want), "%s: got %.17g, want %.17g", name, got, want);
}

static void absent(const gp_telemetry_t *t, uint64_t offered, gp_telemetry_field_t f) {
  ck_assert_msg(!(t->available & BIT(f)), "%s available, expected unavailable",
                gp_telemetry_field_name(f));
  ck_assert_msg(!(offered & BIT(f)), "%s offered, expected not", gp_telemetry_field_name(f));
}

static gp_status_t nvml(const char *lib, const char *pci, gp_telemetry_t *t, uint64_t *off) {
  gp_status_t s = gp__telemetry_nvml_read(lib, pci, t, off);
  consistent(t, *off);
  return s;
}

static gp_status_t amd(const char *amdsmi, const char *rsmi, const char *pci, gp_telemetry_t *t,
                       uint64_t *off) {
  gp_status_t s = gp__telemetry_amd_read(amdsmi, rsmi, pci, t, off);
  consistent(t, *off);
  return s;
}

static bool log_has(const char *needle) { return strstr(nvml_log(), needle) != NULL; }

static void setup(void) {
  unsetenv("GP_NVML_LIBRARY");
  unsetenv("GP_AMDSMI_LIBRARY");
  unsetenv("GP_ROCM_SMI_LIBRARY");
  unsetenv("GP_TELEMETRY_TIMEOUT_MS");
  unsetenv("GP_TELEMETRY_INIT_TIMEOUT_MS");
  static const char *nk[] = {"init_error", "init_sleep_ms", "sleep_ms", "unsupported_ecc",
                             "fail_util", "fail_all", "lost", "version_mismatch", "no_instant"};
  for (size_t i = 0; i < sizeof nk / sizeof nk[0]; i++) nvml_set(nk[i], 0);
  static const char *ak[] = {"init_error", "sleep_ms", "unsupported_ecc", "fail_activity",
                             "fail_all"};
  for (size_t i = 0; i < sizeof ak / sizeof ak[0]; i++) amd_set(ak[i], 0);
  amd_set("major", 26);
  rsmi_set("init_error", 0);
  rsmi_set("fail_busy", 0);
  nvml_clear();
  gp__telemetry_forget();
}

/* ---- NVML --------------------------------------------------------------------------------- */

START_TEST(nvml_every_field) {
  gp_telemetry_t t;
  uint64_t off = 0;
  OK(nvml(g_nvml, "0000:17:00.0", &t, &off));
  ck_assert_str_eq(t.source, "nvml");
  ck_assert(fabs(t.timestamp_s - (double)time(NULL)) < 60);
  uint64_t all = (BIT(GP_TELEMETRY_FIELD_COUNT) - 1) & ~(BIT(GP_TELEMETRY_TEMP_EDGE) |
                                                         BIT(GP_TELEMETRY_TEMP_JUNCTION));
  ck_assert_uint_eq(off, all);
  ck_assert_uint_eq(t.available, all);
  ck_assert_uint_eq(t.failed, 0);
  expect(&t, GP_TELEMETRY_TEMP_DIE, 47);        /* TemperatureV, NVML_TEMPERATURE_GPU */
  expect(&t, GP_TELEMETRY_TEMP_MEMORY, 52);     /* NVML_FI_DEV_MEMORY_TEMP */
  expect(&t, GP_TELEMETRY_POWER, 123.456);      /* NVML_FI_DEV_POWER_INSTANT, mW */
  expect(&t, GP_TELEMETRY_POWER_AVERAGE, 120.0); /* NVML_FI_DEV_POWER_AVERAGE */
  expect(&t, GP_TELEMETRY_ENERGY, 987654.321);  /* mJ */
  expect(&t, GP_TELEMETRY_POWER_LIMIT, 700.0);
  expect(&t, GP_TELEMETRY_CLOCK_SM, 1755);      /* NVML_CLOCK_SM, not GRAPHICS */
  expect(&t, GP_TELEMETRY_CLOCK_SM_MAX, 1980);
  expect(&t, GP_TELEMETRY_CLOCK_MEMORY, 2619);
  expect(&t, GP_TELEMETRY_CLOCK_MEMORY_MAX, 2619);
  expect(&t, GP_TELEMETRY_MEMORY_USED, 10737418240.0); /* _v2: without the reserved part */
  expect(&t, GP_TELEMETRY_MEMORY_TOTAL, 85899345920.0);
  expect(&t, GP_TELEMETRY_UTIL_COMPUTE, 87);
  expect(&t, GP_TELEMETRY_UTIL_MEMORY, 41);
  expect(&t, GP_TELEMETRY_ECC_CORRECTED, 3);    /* volatile, corrected */
  expect(&t, GP_TELEMETRY_ECC_UNCORRECTED, 1);
  expect(&t, GP_TELEMETRY_PCIE_TX, 1000 * 1024.0);
  expect(&t, GP_TELEMETRY_PCIE_RX, 2000 * 1024.0);
  expect(&t, GP_TELEMETRY_THROTTLE, GP_THROTTLE_POWER | GP_THROTTLE_THERMAL | GP_THROTTLE_OTHER);
  ck_assert(log_has("nvmlInit_v2"));
  ck_assert(log_has("nvmlDeviceGetHandleByPciBusId_v2 00000000:17:00.0"));
  ck_assert(!log_has("nvmlDeviceGetPowerUsage")); /* the instant field answered */
  /* The second device by its bus id; the handle lookups are not repeated. */
  OK(nvml(g_nvml, "0000:b3:00.0", &t, &off));
  expect(&t, GP_TELEMETRY_TEMP_DIE, 63);
  expect(&t, GP_TELEMETRY_CLOCK_SM, 1745);
  expect(&t, GP_TELEMETRY_ECC_CORRECTED, 13);
  nvml_clear();
  OK(nvml(g_nvml, "0000:17:00.0", &t, &off));
  ck_assert(!log_has("nvmlInit_v2"));
  ck_assert(!log_has("ByPciBusId"));
  expect(&t, GP_TELEMETRY_TEMP_DIE, 47);
}
END_TEST

START_TEST(nvml_pci_bus_id) {
  gp_telemetry_t t;
  uint64_t off = 0;
  /* cudaDeviceGetPCIBusId writes a 4-digit domain; NVML's own form has 8 digits. */
  OK(nvml(g_nvml, "00000000:17:00.0", &t, &off));
  FAILS(nvml(g_nvml, "0000:99:00.0", &t, &off), GP_ERROR_NOT_SUPPORTED, "99:00.0");
  ck_assert_uint_eq(t.available, 0);
  FAILS(nvml(g_nvml, "17:00", &t, &off), GP_ERROR_INVALID_VALUE, "not a PCI bus id");
  FAILS(nvml(g_nvml, "0000:17:00.0junk", &t, &off), GP_ERROR_INVALID_VALUE, "junk");
  FAILS(nvml(g_nvml, "0000:1ff:00.0", &t, &off), GP_ERROR_INVALID_VALUE, "1ff");
}
END_TEST

START_TEST(nvml_unsupported_field) {
  nvml_set("unsupported_ecc", 1);
  nvml_set("no_instant", 1);
  gp_telemetry_t t;
  uint64_t off = 0;
  OK(nvml(g_nvml, "0000:17:00.0", &t, &off));
  absent(&t, off, GP_TELEMETRY_ECC_CORRECTED);
  absent(&t, off, GP_TELEMETRY_ECC_UNCORRECTED);
  ck_assert_uint_eq(t.failed, 0);
  /* No instant field: the power comes from nvmlDeviceGetPowerUsage. */
  expect(&t, GP_TELEMETRY_POWER, 119.0);
  ck_assert(log_has("nvmlDeviceGetPowerUsage"));
  expect(&t, GP_TELEMETRY_POWER_AVERAGE, 120.0);
  expect(&t, GP_TELEMETRY_TEMP_DIE, 47);
}
END_TEST

START_TEST(nvml_failing_call) {
  nvml_set("fail_util", 999);
  gp_telemetry_t t;
  uint64_t off = 0;
  OK(nvml(g_nvml, "0000:17:00.0", &t, &off));
  uint64_t util = BIT(GP_TELEMETRY_UTIL_COMPUTE) | BIT(GP_TELEMETRY_UTIL_MEMORY);
  ck_assert_uint_eq(t.failed, util);
  ck_assert_uint_eq(t.available & util, 0);
  ck_assert_uint_eq(off & util, util); /* the part has them; this query failed */
  expect(&t, GP_TELEMETRY_TEMP_DIE, 47);
  /* Every query failing is an error naming the first one and NVML's words. */
  nvml_set("fail_util", 0);
  nvml_set("fail_all", 999);
  FAILS(nvml(g_nvml, "0000:17:00.0", &t, &off), GP_ERROR_BACKEND, "nvmlDeviceGetTemperatureV");
  ck_assert(strstr(gp_last_error_message(), "Unknown Error") != NULL);
  ck_assert_uint_eq(t.available, 0);
  /* A lost GPU is an error at once. */
  nvml_set("fail_all", 0);
  nvml_set("lost", 1);
  FAILS(nvml(g_nvml, "0000:17:00.0", &t, &off), GP_ERROR_BACKEND, "GPU is lost");
  ck_assert_uint_eq(t.available, 0);
  nvml_set("lost", 0);
  OK(nvml(g_nvml, "0000:17:00.0", &t, &off));
}
END_TEST

START_TEST(nvml_old_driver) {
  gp_telemetry_t t;
  uint64_t off = 0;
  OK(nvml(g_nvml_old, "0000:17:00.0", &t, &off));
  expect(&t, GP_TELEMETRY_TEMP_DIE, 45);                      /* nvmlDeviceGetTemperature */
  expect(&t, GP_TELEMETRY_MEMORY_USED, 10737418240.0 + 536870912.0); /* v1: with reserved */
  expect(&t, GP_TELEMETRY_POWER, 119.0);                      /* nvmlDeviceGetPowerUsage */
  expect(&t, GP_TELEMETRY_THROTTLE, GP_THROTTLE_IDLE | GP_THROTTLE_POWER_BRAKE); /* Throttle */
  absent(&t, off, GP_TELEMETRY_TEMP_MEMORY); /* no field values before */
  absent(&t, off, GP_TELEMETRY_POWER_AVERAGE);
  ck_assert_uint_eq(t.failed, 0);
  /* A current library that refuses the versioned structs falls back the same way. */
  nvml_set("version_mismatch", 1);
  OK(nvml(g_nvml, "0000:17:00.0", &t, &off));
  expect(&t, GP_TELEMETRY_TEMP_DIE, 45);
  expect(&t, GP_TELEMETRY_MEMORY_USED, 10737418240.0 + 536870912.0);
}
END_TEST

START_TEST(nvml_missing_library) {
  gp_telemetry_t t;
  uint64_t off = 7;
  FAILS(nvml("/nonexistent/libnvidia-ml.so.1", "0000:17:00.0", &t, &off), GP_ERROR_NOT_SUPPORTED,
        "/nonexistent/libnvidia-ml.so.1");
  ck_assert(strstr(gp_last_error_message(), "GP_NVML_LIBRARY") != NULL);
  ck_assert_uint_eq(off, 0);
  ck_assert_uint_eq(t.available, 0);
  /* The environment variable names the file when the caller does not. */
  setenv("GP_NVML_LIBRARY", "/nonexistent/nvml-from-env.so", 1);
  FAILS(nvml(NULL, "0000:17:00.0", &t, &off), GP_ERROR_NOT_SUPPORTED, "nvml-from-env.so");
  setenv("GP_NVML_LIBRARY", g_nvml, 1);
  OK(nvml(NULL, "0000:17:00.0", &t, &off));
  /* A library that is not NVML. */
  FAILS(nvml(g_rsmi, "0000:17:00.0", &t, &off), GP_ERROR_NOT_SUPPORTED, "nvmlInit_v2");
}
END_TEST

START_TEST(nvml_init_error) {
  nvml_set("init_error", 9);
  gp_telemetry_t t;
  uint64_t off = 0;
  FAILS(nvml(g_nvml, "0000:17:00.0", &t, &off), GP_ERROR_BACKEND, "nvmlInit_v2");
  ck_assert(strstr(gp_last_error_message(), "Driver Not Loaded") != NULL);
  /* The failure is kept: the library is not initialised again on every reading. */
  nvml_set("init_error", 0);
  nvml_clear();
  FAILS(nvml(g_nvml, "0000:17:00.0", &t, &off), GP_ERROR_BACKEND, "Driver Not Loaded");
  ck_assert(!log_has("nvmlInit_v2"));
}
END_TEST

/* A call that hangs: the caller gets GP_ERROR_TIMEOUT by the deadline, later callers at
 * once while it is stuck, and readings resume when it returns. */
START_TEST(nvml_hang) {
  setenv("GP_TELEMETRY_TIMEOUT_MS", "200", 1);
  gp_telemetry_t t;
  uint64_t off = 0;
  OK(nvml(g_nvml, "0000:17:00.0", &t, &off));
  nvml_set("sleep_ms", 4000);
  double t0 = now_s();
  FAILS(nvml(g_nvml, "0000:17:00.0", &t, &off), GP_ERROR_TIMEOUT, "GP_TELEMETRY_TIMEOUT_MS");
  double waited = now_s() - t0;
  ck_assert_msg(waited >= 0.19 && waited < 2.0, "waited %.3f s for a 0.2 s deadline", waited);
  ck_assert_uint_eq(t.available, 0);
  /* With a longer deadline, a reading behind the stuck one still returns at once. */
  setenv("GP_TELEMETRY_TIMEOUT_MS", "3000", 1);
  t0 = now_s();
  FAILS(nvml(g_nvml, "0000:17:00.0", &t, &off), GP_ERROR_TIMEOUT, "has not returned");
  ck_assert_msg(now_s() - t0 < 1.5, "a reading behind a stuck one waited %.3f s", now_s() - t0);
  nvml_set("sleep_ms", 0);
  gp_status_t s = GP_ERROR_TIMEOUT;
  for (int i = 0; i < 400 && s == GP_ERROR_TIMEOUT; i++) {
    usleep(50000);
    s = nvml(g_nvml, "0000:17:00.0", &t, &off);
  }
  OK(s);
  expect(&t, GP_TELEMETRY_UTIL_COMPUTE, 87);
}
END_TEST

START_TEST(nvml_init_hang) {
  setenv("GP_TELEMETRY_INIT_TIMEOUT_MS", "300", 1);
  setenv("GP_TELEMETRY_TIMEOUT_MS", "300", 1);
  nvml_set("init_sleep_ms", 4000);
  gp_telemetry_t t;
  uint64_t off = 0;
  double t0 = now_s();
  FAILS(nvml(g_nvml, "0000:17:00.0", &t, &off), GP_ERROR_TIMEOUT, "NVML did not answer");
  ck_assert_msg(now_s() - t0 < 2.0, "waited %.3f s for a 0.3 s deadline", now_s() - t0);
  nvml_set("init_sleep_ms", 0);
  gp_status_t s = GP_ERROR_TIMEOUT;
  for (int i = 0; i < 400 && s == GP_ERROR_TIMEOUT; i++) {
    usleep(50000);
    s = nvml(g_nvml, "0000:17:00.0", &t, &off);
  }
  OK(s);
}
END_TEST

/* A forked child has no worker thread: its readings start one (and initialise NVML
 * again) instead of waiting on the parent's. */
START_TEST(nvml_after_fork) {
  setenv("GP_TELEMETRY_TIMEOUT_MS", "2000", 1);
  gp_telemetry_t t;
  uint64_t off = 0;
  OK(nvml(g_nvml, "0000:17:00.0", &t, &off));
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    gp_telemetry_t c;
    uint64_t o = 0;
    gp_status_t s = gp__telemetry_nvml_read(g_nvml, "0000:17:00.0", &c, &o);
    _exit(s == GP_SUCCESS && (c.available & BIT(GP_TELEMETRY_TEMP_DIE)) ? 0 : 10 + (int)s);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's reading: status %d",
                WIFEXITED(status) ? WEXITSTATUS(status) - 10 : -1);
  OK(nvml(g_nvml, "0000:17:00.0", &t, &off));
}
END_TEST

/* ---- AMD SMI and ROCm SMI ------------------------------------------------------------------ */

static void amd_mi300(const gp_telemetry_t *t, uint64_t off) {
  ck_assert_str_eq(t->source, "amdsmi");
  absent(t, off, GP_TELEMETRY_TEMP_EDGE); /* MI3xx: junction, not edge */
  absent(t, off, GP_TELEMETRY_TEMP_DIE);
  absent(t, off, GP_TELEMETRY_POWER_AVERAGE);
  absent(t, off, GP_TELEMETRY_PCIE_TX);
  absent(t, off, GP_TELEMETRY_PCIE_RX);
  expect(t, GP_TELEMETRY_TEMP_JUNCTION, 58);
  expect(t, GP_TELEMETRY_TEMP_MEMORY, 49);
  expect(t, GP_TELEMETRY_POWER, 612);
  expect(t, GP_TELEMETRY_ENERGY, 123456789.0 * (double)15.3f * 1e-6);
  expect(t, GP_TELEMETRY_POWER_LIMIT, 750);
  expect(t, GP_TELEMETRY_CLOCK_SM, 2100);
  expect(t, GP_TELEMETRY_CLOCK_SM_MAX, 2100);
  expect(t, GP_TELEMETRY_CLOCK_MEMORY, 1300);
  expect(t, GP_TELEMETRY_CLOCK_MEMORY_MAX, 1300);
  expect(t, GP_TELEMETRY_MEMORY_USED, 5368709120.0);
  expect(t, GP_TELEMETRY_MEMORY_TOTAL, 206158430208.0);
  expect(t, GP_TELEMETRY_UTIL_COMPUTE, 73);
  expect(t, GP_TELEMETRY_UTIL_MEMORY, 29);
  expect(t, GP_TELEMETRY_ECC_CORRECTED, 7);
  expect(t, GP_TELEMETRY_ECC_UNCORRECTED, 2);
  expect(t, GP_TELEMETRY_THROTTLE, GP_THROTTLE_POWER | GP_THROTTLE_THERMAL);
  ck_assert_uint_eq(t->failed, 0);
}

static void amd_mi250(const gp_telemetry_t *t, uint64_t off) {
  absent(t, off, GP_TELEMETRY_POWER); /* MI2xx: the average only */
  absent(t, off, GP_TELEMETRY_THROTTLE); /* every violation flag unsupported */
  expect(t, GP_TELEMETRY_TEMP_EDGE, 41);
  expect(t, GP_TELEMETRY_TEMP_JUNCTION, 55);
  expect(t, GP_TELEMETRY_POWER_AVERAGE, 301);
  expect(t, GP_TELEMETRY_POWER_LIMIT, 560);
  expect(t, GP_TELEMETRY_CLOCK_SM, 2090);
  expect(t, GP_TELEMETRY_CLOCK_MEMORY_MAX, 1301);
  expect(t, GP_TELEMETRY_MEMORY_TOTAL, 68702699520.0);
  expect(t, GP_TELEMETRY_ECC_CORRECTED, 17);
}

START_TEST(amdsmi_every_field) {
  gp_telemetry_t t;
  uint64_t off = 0;
  for (int major = 25; major <= 26; major++) {
    amd_set("major", major);
    gp__telemetry_forget();
    OK(amd(g_amdsmi, g_rsmi, "0000:0c:00.0", &t, &off));
    amd_mi300(&t, off);
    OK(amd(g_amdsmi, g_rsmi, "0000:8e:00.0", &t, &off));
    amd_mi250(&t, off);
  }
  FAILS(amd(g_amdsmi, g_rsmi, "0000:42:00.0", &t, &off), GP_ERROR_NOT_SUPPORTED, "42:00.0");
  FAILS(amd(g_amdsmi, g_rsmi, "nonsense", &t, &off), GP_ERROR_INVALID_VALUE, "nonsense");
}
END_TEST

START_TEST(amdsmi_unsupported_and_failing) {
  amd_set("unsupported_ecc", 1);
  amd_set("fail_activity", 7);
  gp_telemetry_t t;
  uint64_t off = 0;
  OK(amd(g_amdsmi, g_rsmi, "0000:0c:00.0", &t, &off));
  absent(&t, off, GP_TELEMETRY_ECC_CORRECTED);
  absent(&t, off, GP_TELEMETRY_ECC_UNCORRECTED);
  uint64_t util = BIT(GP_TELEMETRY_UTIL_COMPUTE) | BIT(GP_TELEMETRY_UTIL_MEMORY);
  ck_assert_uint_eq(t.failed, util);
  ck_assert_uint_eq(off & util, util);
  expect(&t, GP_TELEMETRY_TEMP_JUNCTION, 58);
  amd_set("fail_all", 7);
  FAILS(amd(g_amdsmi, g_rsmi, "0000:0c:00.0", &t, &off), GP_ERROR_BACKEND,
        "AMDSMI_STATUS_API_FAILED");
  ck_assert(strstr(gp_last_error_message(), "amdsmi_get_temp_metric") != NULL);
}
END_TEST

START_TEST(amdsmi_hang) {
  setenv("GP_TELEMETRY_TIMEOUT_MS", "200", 1);
  gp_telemetry_t t;
  uint64_t off = 0;
  OK(amd(g_amdsmi, g_rsmi, "0000:0c:00.0", &t, &off));
  amd_set("sleep_ms", 4000);
  double t0 = now_s();
  FAILS(amd(g_amdsmi, g_rsmi, "0000:0c:00.0", &t, &off), GP_ERROR_TIMEOUT, "AMD SMI did not answer");
  ck_assert_msg(now_s() - t0 < 2.0, "waited %.3f s for a 0.2 s deadline", now_s() - t0);
  amd_set("sleep_ms", 0);
  gp_status_t s = GP_ERROR_TIMEOUT;
  for (int i = 0; i < 400 && s == GP_ERROR_TIMEOUT; i++) {
    usleep(50000);
    s = amd(g_amdsmi, g_rsmi, "0000:0c:00.0", &t, &off);
  }
  OK(s);
}
END_TEST

static void rsmi_fields(const gp_telemetry_t *t, uint64_t off) {
  ck_assert_str_eq(t->source, "rocm_smi");
  /* Index 2 (the unpartitioned 0c:00.0), not 1 (its partition 1). */
  expect(t, GP_TELEMETRY_TEMP_EDGE, 42.5);
  expect(t, GP_TELEMETRY_TEMP_JUNCTION, 54.25);
  expect(t, GP_TELEMETRY_TEMP_MEMORY, 49);
  expect(t, GP_TELEMETRY_POWER, 262);
  expect(t, GP_TELEMETRY_POWER_AVERAGE, 252);
  expect(t, GP_TELEMETRY_ENERGY, 5000002.0 * (double)15.3f * 1e-6);
  expect(t, GP_TELEMETRY_POWER_LIMIT, 300);
  expect(t, GP_TELEMETRY_MEMORY_USED, 1073741824.0 * 4);
  expect(t, GP_TELEMETRY_MEMORY_TOTAL, 68702699520.0);
  expect(t, GP_TELEMETRY_UTIL_COMPUTE, 66);
  expect(t, GP_TELEMETRY_UTIL_MEMORY, 14);
  absent(t, off, GP_TELEMETRY_CLOCK_SM);
  absent(t, off, GP_TELEMETRY_ECC_CORRECTED);
  absent(t, off, GP_TELEMETRY_THROTTLE);
}

START_TEST(rocm_smi_fallback) {
  gp_telemetry_t t;
  uint64_t off = 0;
  /* AMD SMI missing. */
  OK(amd("/nonexistent/libamd_smi.so", g_rsmi, "0000:0c:00.0", &t, &off));
  rsmi_fields(&t, off);
  OK(amd("/nonexistent/libamd_smi.so", g_rsmi, "0000:8e:00.0", &t, &off));
  expect(&t, GP_TELEMETRY_TEMP_EDGE, 40.5);
  /* AMD SMI older than 25 (24.x answers in the year layout). */
  amd_set("major", 24);
  gp__telemetry_forget();
  OK(amd(g_amdsmi, g_rsmi, "0000:0c:00.0", &t, &off));
  rsmi_fields(&t, off);
  /* AMD SMI that fails to initialise. */
  amd_set("major", 26);
  amd_set("init_error", 34);
  gp__telemetry_forget();
  OK(amd(g_amdsmi, g_rsmi, "0000:0c:00.0", &t, &off));
  ck_assert_str_eq(t.source, "rocm_smi");
  /* A failing ROCm SMI query. */
  rsmi_set("fail_busy", 4);
  OK(amd("/nonexistent/libamd_smi.so", g_rsmi, "0000:0c:00.0", &t, &off));
  ck_assert_uint_eq(t.failed, BIT(GP_TELEMETRY_UTIL_COMPUTE));
  ck_assert_uint_eq(off & BIT(GP_TELEMETRY_UTIL_COMPUTE), BIT(GP_TELEMETRY_UTIL_COMPUTE));
  FAILS(amd("/nonexistent/libamd_smi.so", g_rsmi, "0000:42:00.0", &t, &off),
        GP_ERROR_NOT_SUPPORTED, "ROCm SMI");
}
END_TEST

START_TEST(amd_missing_libraries) {
  gp_telemetry_t t;
  uint64_t off = 0;
  FAILS(amd("/nonexistent/a.so", "/nonexistent/r.so", "0000:0c:00.0", &t, &off),
        GP_ERROR_NOT_SUPPORTED, "/nonexistent/a.so");
  const char *m = gp_last_error_message();
  ck_assert(strstr(m, "/nonexistent/r.so") && strstr(m, "GP_AMDSMI_LIBRARY") &&
            strstr(m, "GP_ROCM_SMI_LIBRARY"));
  ck_assert_uint_eq(t.available, 0);
  setenv("GP_AMDSMI_LIBRARY", g_amdsmi, 1);
  OK(amd(NULL, "/nonexistent/r.so", "0000:0c:00.0", &t, &off));
  ck_assert_str_eq(t.source, "amdsmi");
  /* Both there, both failing to initialise: the failure, not "missing". */
  amd_set("init_error", 34);
  rsmi_set("init_error", 8);
  FAILS(amd(g_amdsmi, g_rsmi, "0000:0c:00.0", &t, &off), GP_ERROR_BACKEND, "amdsmi_init");
  ck_assert(strstr(gp_last_error_message(), "rsmi_init") != NULL);
}
END_TEST

/* ---- the host -------------------------------------------------------------------------------- */

static char g_root[PATH_MAX];

static void put(const char *rel, const char *text) {
  char path[PATH_MAX * 2];
  snprintf(path, sizeof path, "%s%s", g_root, rel);
  for (char *p = path + strlen(g_root) + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      mkdir(path, 0755);
      *p = '/';
    }
  FILE *f = fopen(path, "w");
  ck_assert_msg(f != NULL, "cannot write %s: %s", path, strerror(errno));
  fputs(text, f);
  fclose(f);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(p);
}

static void host_setup(void) {
  snprintf(g_root, sizeof g_root, "%s/gp_telemetry_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  ck_assert(mkdtemp(g_root) != NULL);
}
static void host_teardown(void) { nftw(g_root, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

static void fake_host(void) {
  put("/sys/class/hwmon/hwmon0/name", "coretemp\n");
  put("/sys/class/hwmon/hwmon0/temp1_label", "Package id 0\n");
  put("/sys/class/hwmon/hwmon0/temp1_input", "45000\n");
  put("/sys/class/hwmon/hwmon0/temp2_label", "Core 0\n");
  put("/sys/class/hwmon/hwmon0/temp2_input", "90000\n"); /* a core, not a package */
  put("/sys/class/hwmon/hwmon1/name", "coretemp\n");
  put("/sys/class/hwmon/hwmon1/temp1_label", "Package id 1\n");
  put("/sys/class/hwmon/hwmon1/temp1_input", "51500\n");
  put("/sys/class/hwmon/hwmon2/name", "jc42\n");
  put("/sys/class/hwmon/hwmon2/temp1_input", "38250\n");
  put("/sys/class/hwmon/hwmon3/name", "nvme\n");
  put("/sys/class/hwmon/hwmon3/temp1_input", "70000\n"); /* not ours */
  put("/sys/class/powercap/intel-rapl:0/name", "package-0\n");
  put("/sys/class/powercap/intel-rapl:0/energy_uj", "1000000\n");
  put("/sys/class/powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n");
  put("/sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw", "125000000\n");
  put("/sys/class/powercap/intel-rapl:0:0/name", "core\n");
  put("/sys/class/powercap/intel-rapl:0:0/energy_uj", "500000\n"); /* inside package-0 */
  put("/sys/class/powercap/intel-rapl:1/name", "package-1\n");
  put("/sys/class/powercap/intel-rapl:1/energy_uj", "262143000000\n"); /* about to wrap */
  put("/sys/class/powercap/intel-rapl:1/max_energy_range_uj", "262143328850\n");
  put("/sys/class/powercap/intel-rapl:1/constraint_0_power_limit_uw", "150000000\n");
  put("/sys/devices/system/cpu/cpufreq/policy0/scaling_cur_freq", "2400000\n");
  put("/sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq", "3500000\n");
  put("/sys/devices/system/cpu/cpufreq/policy1/scaling_cur_freq", "1800000\n");
  put("/sys/devices/system/cpu/cpufreq/policy1/cpuinfo_max_freq", "3000000\n");
  put("/sys/devices/system/edac/mc/mc0/ce_count", "4\n");
  put("/sys/devices/system/edac/mc/mc0/ue_count", "0\n");
  put("/sys/devices/system/edac/mc/mc1/ce_count", "1\n");
  put("/sys/devices/system/edac/mc/mc1/ue_count", "1\n");
  put("/proc/meminfo", "MemTotal:       32768000 kB\nMemFree:         1000000 kB\n"
                       "MemAvailable:   24576000 kB\nBuffers:  1 kB\n");
  put("/proc/stat", "cpu  1000 0 500 8000 500 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n");
}

START_TEST(host_fake_tree) {
  fake_host();
  gp__tm_host_t h;
  memset(&h, 0, sizeof h);
  gp_telemetry_t t;
  uint64_t off = 0;
  gp__telemetry_reset(&t);
  gp__telemetry_host_read(g_root, &h, &t, &off);
  consistent(&t, off);
  ck_assert_str_eq(t.source, "host");
  expect(&t, GP_TELEMETRY_TEMP_DIE, 51.5); /* the hotter package */
  expect(&t, GP_TELEMETRY_TEMP_MEMORY, 38.25);
  expect(&t, GP_TELEMETRY_ENERGY, 1.0 + 262143.0);
  expect(&t, GP_TELEMETRY_POWER_LIMIT, 275.0);
  expect(&t, GP_TELEMETRY_CLOCK_SM, 2100.0);
  expect(&t, GP_TELEMETRY_CLOCK_SM_MAX, 3500.0);
  expect(&t, GP_TELEMETRY_MEMORY_TOTAL, 32768000.0 * 1024);
  expect(&t, GP_TELEMETRY_MEMORY_USED, (32768000.0 - 24576000.0) * 1024);
  expect(&t, GP_TELEMETRY_ECC_CORRECTED, 5);
  expect(&t, GP_TELEMETRY_ECC_UNCORRECTED, 1);
  /* Two-sample fields are offered but not in the first reading. */
  ck_assert(off & BIT(GP_TELEMETRY_UTIL_COMPUTE));
  ck_assert(off & BIT(GP_TELEMETRY_POWER));
  ck_assert(!(t.available & (BIT(GP_TELEMETRY_UTIL_COMPUTE) | BIT(GP_TELEMETRY_POWER))));
  for (gp_telemetry_field_t f = GP_TELEMETRY_TEMP_EDGE; f <= GP_TELEMETRY_TEMP_JUNCTION; f++)
    absent(&t, off, f);
  absent(&t, off, GP_TELEMETRY_CLOCK_MEMORY);
  absent(&t, off, GP_TELEMETRY_UTIL_MEMORY);
  absent(&t, off, GP_TELEMETRY_PCIE_TX);
  absent(&t, off, GP_TELEMETRY_THROTTLE);
  /* Second reading: 300 busy of 1000 jiffies; package 1 wraps (range 262143328850). */
  put("/proc/stat", "cpu  1200 0 600 8600 600 0 0 0 0 0\n");
  put("/sys/class/powercap/intel-rapl:0/energy_uj", "3000000\n");
  put("/sys/class/powercap/intel-rapl:1/energy_uj", "671150\n");
  usleep(20000);
  gp__telemetry_reset(&t);
  gp__telemetry_host_read(g_root, &h, &t, &off);
  consistent(&t, off);
  expect(&t, GP_TELEMETRY_UTIL_COMPUTE, 30.0);
  double e1 = 1.0 + 262143.0, e2 = e1 + 2.0 + 1.0; /* 2 J on package 0, 1 J across the wrap */
  expect(&t, GP_TELEMETRY_ENERGY, e2);
  ck_assert(t.available & BIT(GP_TELEMETRY_POWER));
  ck_assert_msg(t.power_w > 0 && t.power_w < 3.0 / 0.02 + 1, "power %g W", t.power_w);
  /* A file that stops parsing is a failed field, not a reading. */
  put("/sys/class/hwmon/hwmon0/temp1_input", "garbage\n");
  put("/sys/class/hwmon/hwmon1/temp1_input", "-\n");
  put("/proc/meminfo", "MemTotal: 12 kB\nMemAvailable: 99 kB\n"); /* available > total */
  gp__telemetry_reset(&t);
  gp__telemetry_host_read(g_root, &h, &t, &off);
  consistent(&t, off);
  ck_assert(t.failed & BIT(GP_TELEMETRY_TEMP_DIE));
  ck_assert(t.failed & BIT(GP_TELEMETRY_MEMORY_TOTAL));
  ck_assert(!(t.available & BIT(GP_TELEMETRY_TEMP_DIE)));
}
END_TEST

/* AMD's k10temp (Tdie before Tctl), the thermal-zone fallback, /proc/cpuinfo's MHz when
 * there is no cpufreq, and a host with nothing but procfs. */
START_TEST(host_other_sources) {
  put("/sys/class/hwmon/hwmon0/name", "k10temp\n");
  put("/sys/class/hwmon/hwmon0/temp1_label", "Tctl\n");
  put("/sys/class/hwmon/hwmon0/temp1_input", "70000\n");
  put("/sys/class/hwmon/hwmon0/temp2_label", "Tdie\n");
  put("/sys/class/hwmon/hwmon0/temp2_input", "60000\n");
  static char info[65536];
  info[0] = 0;
  for (int i = 0; i < 4; i++) {
    char cpu[10240];
    /* Long flags lines, one longer than the reader's block. */
    snprintf(cpu, sizeof cpu, "processor\t: %d\ncpu MHz\t\t: %d.500\nflags\t\t: %0*d\n\n", i,
             1000 + 1000 * i, i == 1 ? 9000 : 1500, 0);
    strcat(info, cpu);
  }
  put("/proc/cpuinfo", info);
  put("/proc/stat", "cpu  1 2 3 4\n");
  gp__tm_host_t h;
  memset(&h, 0, sizeof h);
  gp_telemetry_t t;
  uint64_t off = 0;
  gp__telemetry_reset(&t);
  gp__telemetry_host_read(g_root, &h, &t, &off);
  consistent(&t, off);
  expect(&t, GP_TELEMETRY_TEMP_DIE, 60.0);
  expect(&t, GP_TELEMETRY_CLOCK_SM, 2500.5);
  absent(&t, off, GP_TELEMETRY_CLOCK_SM_MAX);
  absent(&t, off, GP_TELEMETRY_ENERGY);
  absent(&t, off, GP_TELEMETRY_MEMORY_TOTAL); /* no /proc/meminfo in this tree */
  /* No hwmon package sensor: the x86_pkg_temp thermal zone. */
  host_teardown();
  host_setup();
  put("/sys/class/thermal/thermal_zone0/type", "acpitz\n");
  put("/sys/class/thermal/thermal_zone0/temp", "27800\n");
  put("/sys/class/thermal/thermal_zone1/type", "x86_pkg_temp\n");
  put("/sys/class/thermal/thermal_zone1/temp", "48000\n");
  memset(&h, 0, sizeof h);
  gp__telemetry_reset(&t);
  gp__telemetry_host_read(g_root, &h, &t, &off);
  consistent(&t, off);
  expect(&t, GP_TELEMETRY_TEMP_DIE, 48.0);
  /* Nothing at all: every field unavailable, nothing offered. */
  host_teardown();
  host_setup();
  memset(&h, 0, sizeof h);
  gp__telemetry_reset(&t);
  gp__telemetry_host_read(g_root, &h, &t, &off);
  consistent(&t, off);
  ck_assert_uint_eq(off, 0);
  ck_assert_uint_eq(t.available, 0);
}
END_TEST

/* The cpu backend's real readings through the public calls: honest and sane. */
START_TEST(host_real) {
  int n = devices();
  ck_assert_int_ge(n, 1);
  for (int d = 0; d < n; d++) {
    uint64_t fields = 0;
    OK(gp_device_get_telemetry_fields(d, &fields));
    gp_telemetry_t a, b;
    gp_telemetry_init(&a);
    OK(gp_device_get_telemetry(d, &a));
    consistent(&a, fields);
    ck_assert_str_eq(a.source, "host");
    ck_assert(fabs(a.timestamp_s - (double)time(NULL)) < 60);
    /* /proc/meminfo exists on every Linux. */
    ck_assert(a.available & BIT(GP_TELEMETRY_MEMORY_TOTAL));
    ck_assert(a.memory_total_bytes > (1u << 20));
    ck_assert(a.memory_used_bytes <= a.memory_total_bytes);
    ck_assert(fields & BIT(GP_TELEMETRY_UTIL_COMPUTE));
    usleep(30000);
    gp_telemetry_init(&b);
    OK(gp_device_get_telemetry(d, &b));
    consistent(&b, fields);
    ck_assert(b.timestamp_s >= a.timestamp_s);
    ck_assert(b.available & BIT(GP_TELEMETRY_UTIL_COMPUTE) || b.failed);
    if (b.available & BIT(GP_TELEMETRY_UTIL_COMPUTE))
      ck_assert(b.util_compute_pct >= 0 && b.util_compute_pct <= 100);
    if (b.available & a.available & BIT(GP_TELEMETRY_ENERGY)) ck_assert(b.energy_j >= a.energy_j);
    if (b.available & BIT(GP_TELEMETRY_POWER)) ck_assert(b.power_w >= 0 && b.power_w < 5000);
    if (b.available & BIT(GP_TELEMETRY_TEMP_DIE))
      ck_assert(b.temp_die_c > -40 && b.temp_die_c < 150);
    if (b.available & BIT(GP_TELEMETRY_CLOCK_SM))
      ck_assert(b.clock_sm_mhz > 10 && b.clock_sm_mhz < 10000);
    printf("host_real: device %d: available %#llx of %#llx offered\n", d,
           (unsigned long long)b.available, (unsigned long long)fields);
  }
}
END_TEST

/* ---- the public calls' arguments ---------------------------------------------------------- */

START_TEST(public_arguments) {
  gp_telemetry_t t;
  FAILS(gp_device_get_telemetry(0, NULL), GP_ERROR_INVALID_VALUE, "'t'");
  gp_telemetry_init(&t);
  t.struct_size = 4;
  FAILS(gp_device_get_telemetry(0, &t), GP_ERROR_INVALID_VALUE, "struct_size");
  gp_telemetry_init(&t);
  FAILS(gp_device_get_telemetry(-1, &t), GP_ERROR_INVALID_DEVICE, "device");
  FAILS(gp_device_get_telemetry(devices(), &t), GP_ERROR_INVALID_DEVICE, "device");
  ck_assert_uint_eq(t.available, 0);
  ck_assert(isnan(t.temp_die_c));
  uint64_t f = 5;
  FAILS(gp_device_get_telemetry_fields(0, NULL), GP_ERROR_INVALID_VALUE, "'fields'");
  FAILS(gp_device_get_telemetry_fields(-1, &f), GP_ERROR_INVALID_DEVICE, "device");
  ck_assert_uint_eq(f, 0);
  /* An older caller's struct (up to the memory fields) is not written past, and its
   * masks hold no bit of a field it lacks. */
  unsigned char buf[sizeof(gp_telemetry_t) + 16];
  memset(buf, 0xA5, sizeof buf);
  gp_telemetry_t *small = (gp_telemetry_t *)buf;
  small->struct_size = offsetof(gp_telemetry_t, util_compute_pct);
  OK(gp_device_get_telemetry(0, small));
  for (size_t i = small->struct_size; i < sizeof buf; i++)
    ck_assert_msg(buf[i] == 0xA5, "byte %zu past struct_size written", i);
  ck_assert(small->available & BIT(GP_TELEMETRY_MEMORY_TOTAL));
  ck_assert_uint_eq(small->available >> GP_TELEMETRY_UTIL_COMPUTE, 0);
  /* Field names: distinct, and "unknown" outside the enum. */
  for (int a = 0; a < GP_TELEMETRY_FIELD_COUNT; a++) {
    ck_assert_str_ne(gp_telemetry_field_name((gp_telemetry_field_t)a), "unknown");
    for (int b = 0; b < a; b++)
      ck_assert_str_ne(gp_telemetry_field_name((gp_telemetry_field_t)a),
                       gp_telemetry_field_name((gp_telemetry_field_t)b));
  }
  ck_assert_str_eq(gp_telemetry_field_name(GP_TELEMETRY_TEMP_DIE), "temp_die_c");
  ck_assert_str_eq(gp_telemetry_field_name(GP_TELEMETRY_FIELD_COUNT), "unknown");
  ck_assert_str_eq(gp_telemetry_field_name((gp_telemetry_field_t)-1), "unknown");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("telemetry");
  TCase *tc = tcase_create("vendor");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, nvml_every_field);
  tcase_add_test(tc, nvml_pci_bus_id);
  tcase_add_test(tc, nvml_unsupported_field);
  tcase_add_test(tc, nvml_failing_call);
  tcase_add_test(tc, nvml_old_driver);
  tcase_add_test(tc, nvml_missing_library);
  tcase_add_test(tc, nvml_init_error);
  tcase_add_test(tc, nvml_hang);
  tcase_add_test(tc, nvml_init_hang);
  tcase_add_test(tc, nvml_after_fork);
  tcase_add_test(tc, amdsmi_every_field);
  tcase_add_test(tc, amdsmi_unsupported_and_failing);
  tcase_add_test(tc, amdsmi_hang);
  tcase_add_test(tc, rocm_smi_fallback);
  tcase_add_test(tc, amd_missing_libraries);
  suite_add_tcase(s, tc);
  TCase *th = tcase_create("host");
  tcase_add_checked_fixture(th, host_setup, host_teardown);
  tcase_add_test(th, host_fake_tree);
  tcase_add_test(th, host_other_sources);
  tcase_add_test(th, host_real);
  tcase_add_test(th, public_arguments);
  suite_add_tcase(s, th);
  return s;
}

/* Loads a mock beside this binary and finds its knob. */
static void *mock(char *path, const char *file, const char *sym) {
  if ((size_t)snprintf(path, PATH_MAX, "%s/mock/%s", g_dir, file) >= PATH_MAX) exit(1);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    fprintf(stderr, "test_telemetry: cannot load the mock %s: %s\n", path, dlerror());
    exit(1);
  }
  void *p = sym ? dlsym(h, sym) : h;
  if (p == NULL) {
    fprintf(stderr, "test_telemetry: %s has no %s\n", path, sym);
    exit(1);
  }
  return p;
}

#define MOCK_FN(var, path, file, sym)                                                      \
  do {                                                                                     \
    void *p_ = mock(path, file, sym);                                                      \
    memcpy(&var, &p_, sizeof p_);                                                          \
  } while (0)

int main(void) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = 0;
  snprintf(g_dir, sizeof g_dir, "%s", dirname(self));
  MOCK_FN(nvml_set, g_nvml, "libnvidia-ml.so.1", "mock_nvml_set");
  MOCK_FN(nvml_log, g_nvml, "libnvidia-ml.so.1", "mock_nvml_log");
  MOCK_FN(nvml_clear, g_nvml, "libnvidia-ml.so.1", "mock_nvml_clear");
  (void)mock(g_nvml_old, "libnvidia-ml-old.so.1", NULL);
  MOCK_FN(amd_set, g_amdsmi, "libamd_smi.so", "mock_amdsmi_set");
  MOCK_FN(rsmi_set, g_rsmi, "librocm_smi64.so", "mock_rsmi_set");
  printf("test_telemetry: NVML, AMD SMI and ROCm SMI mappings against the mocks in %s/mock\n",
         g_dir);
  return run_suite("test_telemetry", suite());
}

#else /* the cuda/hip builds read real libraries: the mappings are checked on the cpu build */
START_TEST(device_reading) {
  gp_telemetry_t t;
  gp_telemetry_init(&t);
  gp_status_t s = gp_device_get_telemetry(0, &t);
  /* A machine without the management library answers NOT_SUPPORTED, never garbage. */
  ck_assert_msg(s == GP_SUCCESS || s == GP_ERROR_NOT_SUPPORTED, "%s: %s", gp_status_name(s),
                gp_last_error_message());
  if (s == GP_SUCCESS) ck_assert(t.available != 0);
  else ck_assert_uint_eq(t.available, 0);
}
END_TEST
static Suite *suite(void) {
  Suite *s = suite_create("telemetry");
  TCase *tc = tcase_create("device");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, device_reading);
  suite_add_tcase(s, tc);
  return s;
}
int main(void) { return run_suite("test_telemetry", suite()); }
#endif
