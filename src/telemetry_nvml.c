/*
 * telemetry_nvml.c - gp_device_get_telemetry on NVIDIA GPUs: NVML (nvml.h, the API of
 * libnvidia-ml.so.1, installed with the driver) loaded with dlopen on the NVML worker
 * thread (src/telemetry.c), the device found by its PCI bus id
 * (nvmlDeviceGetHandleByPciBusId_v2), each field from one documented call:
 *
 *   temp_die_c        nvmlDeviceGetTemperatureV (NVML_TEMPERATURE_GPU; before r555 it
 *                     does not exist: nvmlDeviceGetTemperature)
 *   temp_memory_c     nvmlDeviceGetFieldValues NVML_FI_DEV_MEMORY_TEMP
 *   power_w           NVML_FI_DEV_POWER_INSTANT; without it nvmlDeviceGetPowerUsage
 *                     (which nvml.h documents as a 1 s average from Ampere on, GA100
 *                     excepted, and instantaneous before)
 *   power_average_w   NVML_FI_DEV_POWER_AVERAGE (1 s average, Ampere and later)
 *   energy_j          nvmlDeviceGetTotalEnergyConsumption (mJ since the driver loaded)
 *   power_limit_w     nvmlDeviceGetEnforcedPowerLimit (mW)
 *   clock_*           nvmlDeviceGetClockInfo / nvmlDeviceGetMaxClockInfo (SM, MEM)
 *   memory_*          nvmlDeviceGetMemoryInfo_v2 (used excludes the reserved memory);
 *                     without it nvmlDeviceGetMemoryInfo
 *   util_*            nvmlDeviceGetUtilizationRates (gpu, memory)
 *   ecc_*             nvmlDeviceGetTotalEccErrors (volatile counts)
 *   pcie_*            nvmlDeviceGetPcieThroughput (KB/s over a 20 ms sample; NVML's KB
 *                     read as 1024 bytes)
 *   throttle          nvmlDeviceGetCurrentClocksEventReasons (r535 and later), else
 *                     nvmlDeviceGetCurrentClocksThrottleReasons
 *
 * A call that answers NVML_ERROR_NOT_SUPPORTED (or is missing from an older library)
 * means the part has no such field; any other error marks the field failed. NVML is
 * initialised once and never shut down (no NVML call from an atexit handler, as for
 * NCCL in src/gpu/nccl.c).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "telemetry.h"
#include "telemetry_nvml_abi.h"

#define NV_DEVICES 64

static struct {
  char path[GP__TM_LIB_MAX];
  bool tried;
  gp_status_t st;
  char why[GP__TM_WHY_MAX];
  void *handle;
  gp__nvmlInit_fn init;
  gp__nvmlErrorString_fn error_string;
  gp__nvmlGetHandleByPciBusId_fn by_pci;
  gp__nvmlGetTemperatureV_fn temp_v;
  gp__nvmlGetTemperature_fn temp;
  gp__nvmlGetFieldValues_fn field_values;
  gp__nvmlGetUint_fn power_usage, enforced_limit;
  gp__nvmlGetUll_fn energy, events, throttle;
  gp__nvmlGetClock_fn clock, max_clock;
  gp__nvmlGetMemory_v2_fn memory_v2;
  gp__nvmlGetMemory_fn memory;
  gp__nvmlGetUtilization_fn utilization;
  gp__nvmlGetTotalEcc_fn ecc;
  gp__nvmlGetPcieThroughput_fn pcie;
  int n_devices;
  struct {
    char pci[32];
    gp__nvmlDevice_t dev;
  } devices[NV_DEVICES];
} N; /* touched only by the NVML worker thread */

static void nvml_run(gp__tm_job_t *job, bool forget);
static gp__tm_worker_t g_worker = {
    .run = nvml_run, .name = "NVML", .mu = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER};

/* ---- loading ------------------------------------------------------------------------------ */

static const char *nv_error(gp__nvmlReturn_t r) {
  const char *s = N.error_string ? N.error_string(r) : NULL;
  return s ? s : "unrecognised NVML error";
}

/* POSIX: a dlsym'ed object pointer converts to the function pointer it is. */
static void *nv_sym(const char *name) { return dlsym(N.handle, name); }
#define NV_RESOLVE(field, name)                                                          \
  do {                                                                                   \
    void *p_ = nv_sym(name);                                                             \
    memcpy(&N.field, &p_, sizeof p_);                                                    \
  } while (0)

static gp_status_t nv_fail(gp_status_t st, const char *fmt, const char *a, const char *b) {
  N.st = st;
  gp__tm_fmt(N.why, sizeof N.why, fmt, a, b);
  return st;
}

static void nv_forget(const char *path) {
  /* The old handle stays open: unloading NVML while the driver keeps its state is not
   * something nvml.h promises to survive. */
  memset(&N, 0, sizeof N);
  gp__tm_fmt(N.path, sizeof N.path, "%s", path);
}

static gp_status_t nv_load(void) {
  N.tried = true;
  N.handle = dlopen(N.path, RTLD_NOW | RTLD_LOCAL);
  if (N.handle == NULL) {
    const char *why = dlerror();
    return nv_fail(GP_ERROR_NOT_SUPPORTED,
                   "cannot load %s (%s): telemetry on the cuda backend needs NVML, which the "
                   "NVIDIA driver installs; install the driver or name the file in "
                   "GP_NVML_LIBRARY",
                   N.path, why ? why : "not found");
  }
  NV_RESOLVE(init, "nvmlInit_v2");
  NV_RESOLVE(by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
  if (N.init == NULL || N.by_pci == NULL)
    return nv_fail(GP_ERROR_NOT_SUPPORTED,
                   "%s has no %s: not a usable NVML library", N.path,
                   N.init == NULL ? "nvmlInit_v2" : "nvmlDeviceGetHandleByPciBusId_v2");
  NV_RESOLVE(error_string, "nvmlErrorString");
  NV_RESOLVE(temp_v, "nvmlDeviceGetTemperatureV");
  NV_RESOLVE(temp, "nvmlDeviceGetTemperature");
  NV_RESOLVE(field_values, "nvmlDeviceGetFieldValues");
  NV_RESOLVE(power_usage, "nvmlDeviceGetPowerUsage");
  NV_RESOLVE(enforced_limit, "nvmlDeviceGetEnforcedPowerLimit");
  NV_RESOLVE(energy, "nvmlDeviceGetTotalEnergyConsumption");
  NV_RESOLVE(events, "nvmlDeviceGetCurrentClocksEventReasons");
  NV_RESOLVE(throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
  NV_RESOLVE(clock, "nvmlDeviceGetClockInfo");
  NV_RESOLVE(max_clock, "nvmlDeviceGetMaxClockInfo");
  NV_RESOLVE(memory_v2, "nvmlDeviceGetMemoryInfo_v2");
  NV_RESOLVE(memory, "nvmlDeviceGetMemoryInfo");
  NV_RESOLVE(utilization, "nvmlDeviceGetUtilizationRates");
  NV_RESOLVE(ecc, "nvmlDeviceGetTotalEccErrors");
  NV_RESOLVE(pcie, "nvmlDeviceGetPcieThroughput");
  gp__nvmlReturn_t r = N.init();
  if (r != GP__NVML_SUCCESS) {
    char code[96];
    gp__tm_fmt(code, sizeof code, "%s, NVML error %d", nv_error(r), r);
    return nv_fail(GP_ERROR_BACKEND, "nvmlInit_v2 of %s failed: %s", N.path, code);
  }
  return N.st = GP_SUCCESS;
}

/* "dddd:bb:dd.f" (any hex widths) into NVML's own busId spelling. */
static bool nv_pci(const char *in, char *out, size_t n) {
  unsigned dom = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  if (sscanf(in, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4 || bus > 0xff ||
      dev > 0x1f || fn > 7)
    return false;
  gp__tm_fmt(out, n, "%08x:%02x:%02x.%x", dom, bus, dev, fn);
  return true;
}

static gp_status_t nv_device(gp__tm_job_t *job, gp__nvmlDevice_t *dev) {
  char pci[32];
  if (!nv_pci(job->pci, pci, sizeof pci)) {
    gp__tm_fmt(job->why, sizeof job->why, "'%s' is not a PCI bus id (domain:bus:device.function)",
             job->pci);
    return GP_ERROR_INVALID_VALUE;
  }
  for (int i = 0; i < N.n_devices; i++)
    if (strcmp(N.devices[i].pci, pci) == 0) {
      *dev = N.devices[i].dev;
      return GP_SUCCESS;
    }
  gp__nvmlReturn_t r = N.by_pci(pci, dev);
  if (r == GP__NVML_ERROR_NOT_FOUND) {
    gp__tm_fmt(job->why, sizeof job->why, "NVML (%s) has no device at PCI bus id %s", N.path, pci);
    return GP_ERROR_NOT_SUPPORTED;
  }
  if (r != GP__NVML_SUCCESS) {
    gp__tm_fmt(job->why, sizeof job->why, "nvmlDeviceGetHandleByPciBusId_v2(%s) failed: %s (NVML error %d)",
             pci, nv_error(r), r);
    return GP_ERROR_BACKEND;
  }
  if (N.n_devices < NV_DEVICES) {
    gp__tm_fmt(N.devices[N.n_devices].pci, sizeof N.devices[0].pci, "%s", pci);
    N.devices[N.n_devices++].dev = *dev;
  }
  return GP_SUCCESS;
}

/* ---- one reading --------------------------------------------------------------------------- */

typedef struct nv_read {
  gp__tm_job_t *job;
  bool lost;
  const char *first_call; /* the first call that failed, for the message */
  gp__nvmlReturn_t first_rc;
} nv_read_t;

/* Classifies one call's answer for the fields in mask: true when it holds values. */
static bool nv_ok(nv_read_t *r, uint64_t mask, const char *call, gp__nvmlReturn_t rc) {
  if (rc == GP__NVML_SUCCESS) {
    r->job->offered |= mask;
    return true;
  }
  if (rc == GP__NVML_ERROR_NOT_SUPPORTED || rc == GP__NVML_ERROR_FUNCTION_NOT_FOUND) return false;
  r->job->offered |= mask;
  r->job->t.failed |= mask;
  if (rc == GP__NVML_ERROR_GPU_IS_LOST) r->lost = true;
  if (r->first_call == NULL) r->first_call = call, r->first_rc = rc;
  return false;
}

#define BIT GP_TELEMETRY_BIT

static void nv_temperature(nv_read_t *r, gp__nvmlDevice_t d) {
  gp_telemetry_t *t = &r->job->t;
  if (N.temp_v) {
    gp__nvmlTemperature_v1_t v = {.version = GP__NVML_TEMPERATURE_V1,
                                  .sensorType = GP__NVML_TEMPERATURE_GPU};
    gp__nvmlReturn_t rc = N.temp_v(d, &v);
    /* An older driver may refuse the versioned struct: the plain call then answers. */
    if (rc != GP__NVML_ERROR_ARGUMENT_VERSION_MISMATCH || N.temp == NULL) {
      if (nv_ok(r, BIT(GP_TELEMETRY_TEMP_DIE), "nvmlDeviceGetTemperatureV", rc))
        gp__telemetry_set(t, GP_TELEMETRY_TEMP_DIE, v.temperature);
      return;
    }
  }
  if (N.temp == NULL) return;
  unsigned int c = 0;
  if (nv_ok(r, BIT(GP_TELEMETRY_TEMP_DIE), "nvmlDeviceGetTemperature",
            N.temp(d, GP__NVML_TEMPERATURE_GPU, &c)))
    gp__telemetry_set(t, GP_TELEMETRY_TEMP_DIE, c);
}

static bool nv_value(const gp__nvmlFieldValue_t *v, double *out) {
  switch (v->valueType) {
    case GP__NVML_VALUE_TYPE_DOUBLE: *out = v->value.dVal; return true;
    case GP__NVML_VALUE_TYPE_UNSIGNED_INT: *out = v->value.uiVal; return true;
    case GP__NVML_VALUE_TYPE_UNSIGNED_LONG: *out = (double)v->value.ulVal; return true;
    case GP__NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: *out = (double)v->value.ullVal; return true;
    case GP__NVML_VALUE_TYPE_SIGNED_LONG_LONG: *out = (double)v->value.sllVal; return true;
    case GP__NVML_VALUE_TYPE_SIGNED_INT: *out = v->value.siVal; return true;
    case GP__NVML_VALUE_TYPE_UNSIGNED_SHORT: *out = v->value.usVal; return true;
    default: return false;
  }
}

/* Memory temperature and the two power readings in one driver round trip. */
static void nv_fields(nv_read_t *r, gp__nvmlDevice_t d) {
  gp_telemetry_t *t = &r->job->t;
  static const struct {
    unsigned id;
    gp_telemetry_field_t f;
    double scale;
  } want[] = {{GP__NVML_FI_DEV_MEMORY_TEMP, GP_TELEMETRY_TEMP_MEMORY, 1.0},
              {GP__NVML_FI_DEV_POWER_INSTANT, GP_TELEMETRY_POWER, 1e-3},
              {GP__NVML_FI_DEV_POWER_AVERAGE, GP_TELEMETRY_POWER_AVERAGE, 1e-3}};
  gp__nvmlFieldValue_t v[3];
  memset(v, 0, sizeof v);
  for (int i = 0; i < 3; i++) v[i].fieldId = want[i].id;
  gp__nvmlReturn_t rc = N.field_values ? N.field_values(d, 3, v) : GP__NVML_ERROR_FUNCTION_NOT_FOUND;
  for (int i = 0; i < 3; i++) {
    /* nvml.h: on success each value carries its own return code. */
    gp__nvmlReturn_t one = rc == GP__NVML_SUCCESS ? v[i].nvmlReturn : rc;
    double x;
    if (nv_ok(r, BIT(want[i].f), "nvmlDeviceGetFieldValues", one) && nv_value(&v[i], &x))
      gp__telemetry_set(t, want[i].f, x * want[i].scale);
  }
  if ((t->available & BIT(GP_TELEMETRY_POWER)) || N.power_usage == NULL) return;
  unsigned int mw = 0;
  t->failed &= ~BIT(GP_TELEMETRY_POWER);
  if (nv_ok(r, BIT(GP_TELEMETRY_POWER), "nvmlDeviceGetPowerUsage", N.power_usage(d, &mw)))
    gp__telemetry_set(t, GP_TELEMETRY_POWER, mw * 1e-3);
}

static void nv_uint(nv_read_t *r, gp__nvmlDevice_t d, gp__nvmlGetUint_fn fn, const char *call,
                    gp_telemetry_field_t f, double scale) {
  unsigned int v = 0;
  if (fn && nv_ok(r, BIT(f), call, fn(d, &v))) gp__telemetry_set(&r->job->t, f, v * scale);
}

static void nv_clock(nv_read_t *r, gp__nvmlDevice_t d, gp__nvmlGetClock_fn fn, const char *call,
                     int type, gp_telemetry_field_t f) {
  unsigned int mhz = 0;
  if (fn && nv_ok(r, BIT(f), call, fn(d, type, &mhz))) gp__telemetry_set(&r->job->t, f, mhz);
}

static void nv_memory(nv_read_t *r, gp__nvmlDevice_t d) {
  gp_telemetry_t *t = &r->job->t;
  uint64_t mask = BIT(GP_TELEMETRY_MEMORY_USED) | BIT(GP_TELEMETRY_MEMORY_TOTAL);
  if (N.memory_v2) {
    gp__nvmlMemory_v2_t m = {.version = GP__NVML_MEMORY_V2};
    gp__nvmlReturn_t rc = N.memory_v2(d, &m);
    if (rc != GP__NVML_ERROR_ARGUMENT_VERSION_MISMATCH || N.memory == NULL) {
      if (nv_ok(r, mask, "nvmlDeviceGetMemoryInfo_v2", rc)) {
        gp__telemetry_set_u64(t, GP_TELEMETRY_MEMORY_USED, m.used);
        gp__telemetry_set_u64(t, GP_TELEMETRY_MEMORY_TOTAL, m.total);
      }
      return;
    }
  }
  gp__nvmlMemory_t m = {0};
  if (N.memory && nv_ok(r, mask, "nvmlDeviceGetMemoryInfo", N.memory(d, &m))) {
    gp__telemetry_set_u64(t, GP_TELEMETRY_MEMORY_USED, m.used);
    gp__telemetry_set_u64(t, GP_TELEMETRY_MEMORY_TOTAL, m.total);
  }
}

static void nv_utilization(nv_read_t *r, gp__nvmlDevice_t d) {
  gp__nvmlUtilization_t u = {0};
  uint64_t mask = BIT(GP_TELEMETRY_UTIL_COMPUTE) | BIT(GP_TELEMETRY_UTIL_MEMORY);
  if (N.utilization && nv_ok(r, mask, "nvmlDeviceGetUtilizationRates", N.utilization(d, &u))) {
    /* Percentages by definition; a value past 100 is not one. */
    if (u.gpu <= 100) gp__telemetry_set(&r->job->t, GP_TELEMETRY_UTIL_COMPUTE, u.gpu);
    if (u.memory <= 100) gp__telemetry_set(&r->job->t, GP_TELEMETRY_UTIL_MEMORY, u.memory);
  }
}

static void nv_ecc(nv_read_t *r, gp__nvmlDevice_t d, int type, gp_telemetry_field_t f) {
  unsigned long long n = 0;
  if (N.ecc && nv_ok(r, BIT(f), "nvmlDeviceGetTotalEccErrors",
                     N.ecc(d, type, GP__NVML_VOLATILE_ECC, &n)))
    gp__telemetry_set_u64(&r->job->t, f, n);
}

static void nv_pcie(nv_read_t *r, gp__nvmlDevice_t d, int counter, gp_telemetry_field_t f) {
  unsigned int kb = 0;
  if (N.pcie && nv_ok(r, BIT(f), "nvmlDeviceGetPcieThroughput", N.pcie(d, counter, &kb)))
    gp__telemetry_set(&r->job->t, f, kb * 1024.0);
}

static uint64_t nv_reasons(unsigned long long b) {
  static const struct {
    unsigned long long nv;
    uint64_t gp;
  } map[] = {{GP__NVML_CER_GPU_IDLE, GP_THROTTLE_IDLE},
             {GP__NVML_CER_APPLICATIONS_CLOCKS_SETTING, GP_THROTTLE_APP_CLOCKS},
             {GP__NVML_CER_SW_POWER_CAP, GP_THROTTLE_POWER},
             {GP__NVML_CER_HW_SLOWDOWN, GP_THROTTLE_HW_SLOWDOWN},
             {GP__NVML_CER_SYNC_BOOST, GP_THROTTLE_SYNC_BOOST},
             {GP__NVML_CER_SW_THERMAL_SLOWDOWN, GP_THROTTLE_THERMAL},
             {GP__NVML_CER_HW_THERMAL_SLOWDOWN, GP_THROTTLE_THERMAL},
             {GP__NVML_CER_HW_POWER_BRAKE_SLOWDOWN, GP_THROTTLE_POWER_BRAKE},
             {GP__NVML_CER_DISPLAY_CLOCK_SETTING, GP_THROTTLE_DISPLAY}};
  uint64_t out = 0;
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (b & map[i].nv) out |= map[i].gp, b &= ~map[i].nv;
  if (b) out |= GP_THROTTLE_OTHER;
  return out;
}

static void nv_throttle(nv_read_t *r, gp__nvmlDevice_t d) {
  gp__nvmlGetUll_fn fn = N.events ? N.events : N.throttle;
  const char *call = N.events ? "nvmlDeviceGetCurrentClocksEventReasons"
                              : "nvmlDeviceGetCurrentClocksThrottleReasons";
  unsigned long long b = 0;
  if (fn && nv_ok(r, BIT(GP_TELEMETRY_THROTTLE), call, fn(d, &b)))
    gp__telemetry_set_u64(&r->job->t, GP_TELEMETRY_THROTTLE, nv_reasons(b));
}

static void nv_read_all(gp__tm_job_t *job, gp__nvmlDevice_t d) {
  nv_read_t r = {.job = job};
  nv_temperature(&r, d);
  nv_fields(&r, d);
  unsigned long long mj = 0;
  if (N.energy && nv_ok(&r, BIT(GP_TELEMETRY_ENERGY), "nvmlDeviceGetTotalEnergyConsumption",
                        N.energy(d, &mj)))
    gp__telemetry_set(&job->t, GP_TELEMETRY_ENERGY, (double)mj * 1e-3);
  nv_uint(&r, d, N.enforced_limit, "nvmlDeviceGetEnforcedPowerLimit", GP_TELEMETRY_POWER_LIMIT, 1e-3);
  nv_clock(&r, d, N.clock, "nvmlDeviceGetClockInfo", GP__NVML_CLOCK_SM, GP_TELEMETRY_CLOCK_SM);
  nv_clock(&r, d, N.max_clock, "nvmlDeviceGetMaxClockInfo", GP__NVML_CLOCK_SM, GP_TELEMETRY_CLOCK_SM_MAX);
  nv_clock(&r, d, N.clock, "nvmlDeviceGetClockInfo", GP__NVML_CLOCK_MEM, GP_TELEMETRY_CLOCK_MEMORY);
  nv_clock(&r, d, N.max_clock, "nvmlDeviceGetMaxClockInfo", GP__NVML_CLOCK_MEM,
           GP_TELEMETRY_CLOCK_MEMORY_MAX);
  nv_memory(&r, d);
  nv_utilization(&r, d);
  nv_ecc(&r, d, GP__NVML_MEMORY_ERROR_TYPE_CORRECTED, GP_TELEMETRY_ECC_CORRECTED);
  nv_ecc(&r, d, GP__NVML_MEMORY_ERROR_TYPE_UNCORRECTED, GP_TELEMETRY_ECC_UNCORRECTED);
  nv_pcie(&r, d, GP__NVML_PCIE_UTIL_TX_BYTES, GP_TELEMETRY_PCIE_TX);
  nv_pcie(&r, d, GP__NVML_PCIE_UTIL_RX_BYTES, GP_TELEMETRY_PCIE_RX);
  nv_throttle(&r, d);
  job->t.failed &= ~job->t.available;
  if (r.lost || (job->t.available == 0 && r.first_call != NULL)) {
    gp__tm_fmt(job->why, sizeof job->why, "%s%s failed on the device at %s: %s (NVML error %d)",
             r.lost ? "" : "every query failed; the first, ", r.first_call, job->pci,
             nv_error(r.first_rc), r.first_rc);
    job->st = GP_ERROR_BACKEND;
    return;
  }
  job->st = GP_SUCCESS;
}

static void nvml_run(gp__tm_job_t *job, bool forget) {
  if (forget || !N.tried || strcmp(N.path, job->lib[0]) != 0) nv_forget(job->lib[0]);
  if (!N.tried) nv_load();
  if (N.st != GP_SUCCESS) {
    job->st = N.st;
    gp__tm_fmt(job->why, sizeof job->why, "%s", N.why);
    return;
  }
  gp__nvmlDevice_t d = NULL;
  job->st = nv_device(job, &d);
  if (job->st != GP_SUCCESS) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  job->t.timestamp_s = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  gp__tm_fmt(job->t.source, sizeof job->t.source, "nvml");
  nv_read_all(job, d);
}

/* ---- the entry point ------------------------------------------------------------------------ */

gp_status_t gp__telemetry_nvml_read(const char *library, const char *pci, gp_telemetry_t *t,
                                    uint64_t *offered) {
  gp__tm_job_t job;
  memset(&job, 0, sizeof job);
  gp__tm_pick_library(job.lib[0], sizeof job.lib[0], library, "GP_NVML_LIBRARY", "libnvidia-ml.so.1");
  gp__tm_fmt(job.pci, sizeof job.pci, "%s", pci ? pci : "");
  gp__telemetry_reset(&job.t);
  gp__telemetry_run(&g_worker, &job);
  return gp__tm_finish(&job, t, offered);
}

void gp__telemetry_nvml_forget(void) {
  pthread_mutex_lock(&g_worker.mu);
  g_worker.forget = true;
  pthread_mutex_unlock(&g_worker.mu);
}
