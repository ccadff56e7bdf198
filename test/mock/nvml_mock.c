/*
 * nvml_mock.c - a mock libnvidia-ml.so.1 for test/test_telemetry.c: it answers like NVML
 * for two GPUs with known readings, so CI checks gpuport's NVML mapping (src/
 * telemetry_nvml.c: calls, enums, struct versions, units, PCI matching, fallbacks,
 * errors, hangs) without a GPU. Built twice: as libnvidia-ml.so.1 (a current driver)
 * and, with -DMOCK_OLD_DRIVER, as libnvidia-ml-old.so.1, a driver from before
 * nvmlDeviceGetTemperatureV, nvmlDeviceGetMemoryInfo_v2, nvmlDeviceGetFieldValues and
 * nvmlDeviceGetCurrentClocksEventReasons (those symbols are absent).
 *
 * Types and values are transcribed from nvml.h (API version 13) independently of
 * gpuport's src/telemetry_nvml_abi.h, so a slip in either shows up as a failed test. Each
 * call that reaches a device is logged (mock_nvml_log); mock_nvml_set() steers answers:
 *   init_error        nvmlInit_v2 returns this code (e.g. 9, DRIVER_NOT_LOADED)
 *   init_sleep_ms     nvmlInit_v2 sleeps this long first
 *   sleep_ms          nvmlDeviceGetUtilizationRates sleeps this long first (a hang)
 *   unsupported_ecc   nvmlDeviceGetTotalEccErrors returns NOT_SUPPORTED
 *   fail_util         nvmlDeviceGetUtilizationRates returns this code (e.g. 999)
 *   fail_all          every device query returns this code
 *   lost              every device query returns GPU_IS_LOST
 *   version_mismatch  the versioned calls return ARGUMENT_VERSION_MISMATCH
 *   no_instant        the POWER_INSTANT field value is NOT_SUPPORTED
 *
 * The readings differ by device (index i: 0 at 0000:17:00.0, 1 at 0000:b3:00.0) and by
 * argument, so a wrong enum, unit or device shows in the numbers.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

/* nvml.h, transcribed */
typedef int nvmlReturn_t;
enum {
  NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_GPU_IS_LOST = 15, NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25, NVML_ERROR_UNKNOWN = 999
};
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned int version; int sensorType; int temperature; } nvmlTemperature_v1_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef union {
  double dVal; int siVal; unsigned int uiVal; unsigned long ulVal; unsigned long long ullVal;
  signed long long sllVal; unsigned short usVal;
} nvmlValue_t;
typedef struct {
  unsigned int fieldId, scopeId;
  long long timestamp, latencyUsec;
  int valueType, nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;
#define NVML_STRUCT_VERSION(size, ver) ((unsigned int)((size) | ((ver) << 24U)))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char logbuf[1 << 16];
static size_t loglen;
static int initialised;
static long k_init_error, k_init_sleep, k_sleep, k_unsupported_ecc, k_fail_util, k_fail_all,
    k_lost, k_version_mismatch, k_no_instant;

struct nvmlDevice_st { int index; };
static struct nvmlDevice_st devs[2] = {{0}, {1}};

static void logf_(const char *fmt, ...) {
  va_list ap;
  pthread_mutex_lock(&mu);
  va_start(ap, fmt);
  int n = vsnprintf(logbuf + loglen, sizeof logbuf - loglen - 2, fmt, ap);
  va_end(ap);
  if (n > 0 && loglen + (size_t)n < sizeof logbuf - 2) {
    loglen += (size_t)n;
    logbuf[loglen++] = '\n';
    logbuf[loglen] = 0;
  }
  pthread_mutex_unlock(&mu);
}

EXPORT const char *mock_nvml_log(void) { return logbuf; }
EXPORT void mock_nvml_clear(void) {
  pthread_mutex_lock(&mu);
  loglen = 0;
  logbuf[0] = 0;
  pthread_mutex_unlock(&mu);
}
EXPORT void mock_nvml_set(const char *name, long v) {
  static const struct { const char *name; long *knob; } knobs[] = {
      {"init_error", &k_init_error}, {"init_sleep_ms", &k_init_sleep}, {"sleep_ms", &k_sleep},
      {"unsupported_ecc", &k_unsupported_ecc}, {"fail_util", &k_fail_util},
      {"fail_all", &k_fail_all}, {"lost", &k_lost}, {"version_mismatch", &k_version_mismatch},
      {"no_instant", &k_no_instant}};
  for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
    if (strcmp(knobs[i].name, name) == 0) {
      __atomic_store_n(knobs[i].knob, v, __ATOMIC_SEQ_CST);
      return;
    }
  fprintf(stderr, "nvml_mock: no knob %s\n", name);
  abort();
}
static long knob(long *k) { return __atomic_load_n(k, __ATOMIC_SEQ_CST); }

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* The checks every device query makes first. */
static nvmlReturn_t check(nvmlDevice_t d, const void *out, const char *call) {
  logf_("%s %d", call, d ? d->index : -1);
  if (!initialised) return NVML_ERROR_UNINITIALIZED;
  if (d != &devs[0] && d != &devs[1]) return NVML_ERROR_INVALID_ARGUMENT;
  if (out == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (knob(&k_lost)) return NVML_ERROR_GPU_IS_LOST;
  if (knob(&k_fail_all)) return (nvmlReturn_t)knob(&k_fail_all);
  return NVML_SUCCESS;
}
#define CHECK(d, out)                                                                  \
  do {                                                                                 \
    nvmlReturn_t r_ = check((d), (out), __func__);                                     \
    if (r_ != NVML_SUCCESS) return r_;                                                 \
  } while (0)

EXPORT nvmlReturn_t nvmlInit_v2(void) {
  logf_("nvmlInit_v2");
  if (knob(&k_init_sleep)) sleep_ms(knob(&k_init_sleep));
  if (knob(&k_init_error)) return (nvmlReturn_t)knob(&k_init_error);
  initialised = 1;
  return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_UNKNOWN: return "Unknown Error";
    default: return "Some NVML error";
  }
}

/* nvml.h: accepts domain:bus:device.function, domain:bus:device, bus:device.function. */
EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pci, nvmlDevice_t *d) {
  logf_("nvmlDeviceGetHandleByPciBusId_v2 %s", pci ? pci : "(null)");
  if (!initialised) return NVML_ERROR_UNINITIALIZED;
  if (pci == NULL || d == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned dom = 0, bus = 0, dev = 0, fn = 0;
  char tail;
  if (sscanf(pci, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4) {
    dom = 0;
    if (sscanf(pci, "%x:%x.%x%c", &bus, &dev, &fn, &tail) != 3) return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (dom != 0 || dev != 0 || fn != 0) return NVML_ERROR_NOT_FOUND;
  if (bus == 0x17) *d = &devs[0];
  else if (bus == 0xb3) *d = &devs[1];
  else return NVML_ERROR_NOT_FOUND;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *c) {
  CHECK(d, c);
  if (sensor != 0) return NVML_ERROR_INVALID_ARGUMENT;
  *c = 45 + 16 * (unsigned)d->index; /* differs from TemperatureV's: the test sees which */
  return NVML_SUCCESS;
}

#ifndef MOCK_OLD_DRIVER
EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t d, nvmlTemperature_v1_t *t) {
  CHECK(d, t);
  if (knob(&k_version_mismatch) ||
      t->version != NVML_STRUCT_VERSION(sizeof(nvmlTemperature_v1_t), 1))
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (t->sensorType != 0) return NVML_ERROR_INVALID_ARGUMENT;
  t->temperature = 47 + 16 * d->index;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t *v) {
  CHECK(d, v);
  for (int i = 0; i < n; i++) {
    v[i].timestamp = 1;
    v[i].nvmlReturn = NVML_SUCCESS;
    switch (v[i].fieldId) {
      case 82: /* NVML_FI_DEV_MEMORY_TEMP */
        v[i].valueType = 1, v[i].value.uiVal = 52 + 16u * (unsigned)d->index;
        break;
      case 185: /* NVML_FI_DEV_POWER_AVERAGE, mW */
        v[i].valueType = 1, v[i].value.uiVal = 120000 + 1000u * (unsigned)d->index;
        break;
      case 186: /* NVML_FI_DEV_POWER_INSTANT, mW */
        if (knob(&k_no_instant)) v[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        else v[i].valueType = 3, v[i].value.ullVal = 123456 + 1000u * (unsigned)d->index;
        break;
      default: v[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    }
  }
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m) {
  CHECK(d, m);
  if (knob(&k_version_mismatch) || m->version != NVML_STRUCT_VERSION(sizeof(nvmlMemory_v2_t), 2))
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  m->total = 85899345920ull;               /* 80 GiB */
  m->reserved = 536870912ull;              /* 512 MiB */
  m->used = 10737418240ull + (unsigned)d->index; /* 10 GiB */
  m->free = m->total - m->reserved - m->used;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *r) {
  CHECK(d, r);
  *r = 0x4ull | 0x40ull | 0x1000ull; /* SwPowerCap, HwThermalSlowdown, a bit not in nvml.h */
  return NVML_SUCCESS;
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *r) {
  CHECK(d, r);
  *r = 0x1ull | 0x80ull; /* GpuIdle, HwPowerBrakeSlowdown */
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
  CHECK(d, m);
  m->total = 85899345920ull;
  m->used = 10737418240ull + 536870912ull + (unsigned)d->index; /* v1 counts the reserved part */
  m->free = m->total - m->used;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
  CHECK(d, mw);
  *mw = 119000 + 1000u * (unsigned)d->index;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj) {
  CHECK(d, mj);
  *mj = 987654321ull + 1000u * (unsigned)d->index;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw) {
  CHECK(d, mw);
  *mw = 700000 - 100000u * (unsigned)d->index;
  return NVML_SUCCESS;
}

/* nvmlClockType_t: GRAPHICS 0, SM 1, MEM 2, VIDEO 3. */
static const unsigned clocks[4] = {1500, 1755, 2619, 1200}, max_clocks[4] = {1900, 1980, 2619, 1700};

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
  CHECK(d, mhz);
  if (type < 0 || type > 3) return NVML_ERROR_INVALID_ARGUMENT;
  *mhz = clocks[type] - 10u * (unsigned)d->index;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
  CHECK(d, mhz);
  if (type < 0 || type > 3) return NVML_ERROR_INVALID_ARGUMENT;
  *mhz = max_clocks[type];
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
  CHECK(d, u);
  if (knob(&k_sleep)) sleep_ms(knob(&k_sleep));
  if (knob(&k_fail_util)) return (nvmlReturn_t)knob(&k_fail_util);
  u->gpu = 87 - (unsigned)d->index;
  u->memory = 41 + (unsigned)d->index;
  return NVML_SUCCESS;
}

/* nvmlMemoryErrorType_t CORRECTED 0, UNCORRECTED 1; nvmlEccCounterType_t VOLATILE 0,
 * AGGREGATE 1. */
EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter,
                                                unsigned long long *n) {
  CHECK(d, n);
  if (knob(&k_unsupported_ecc)) return NVML_ERROR_NOT_SUPPORTED;
  if ((type != 0 && type != 1) || (counter != 0 && counter != 1)) return NVML_ERROR_INVALID_ARGUMENT;
  *n = (type == 0 ? 3u : 1u) + (counter == 1 ? 300u : 0u) + 10u * (unsigned)d->index;
  return NVML_SUCCESS;
}

/* nvmlPcieUtilCounter_t TX_BYTES 0, RX_BYTES 1; KB/s. */
EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, int counter, unsigned int *kb) {
  CHECK(d, kb);
  if (counter != 0 && counter != 1) return NVML_ERROR_INVALID_ARGUMENT;
  *kb = (counter == 0 ? 1000u : 2000u) + (unsigned)d->index;
  return NVML_SUCCESS;
}
