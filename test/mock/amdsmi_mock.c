/*
 * amdsmi_mock.c - a mock libamd_smi.so for test/test_telemetry.c: it answers like AMD SMI
 * for two GPUs with known readings, in the struct layouts of the library version it is
 * told to be, so CI checks gpuport's AMD SMI mapping (src/telemetry_amd.c) without a
 * GPU. Layouts are transcribed from amd_smi/amdsmi.h (24.7 of ROCm 6.3, 25 of ROCm 6.4,
 * 26.1 of ROCm 7.x) independently of gpuport's src/telemetry_amd_abi.h.
 *
 * Device 0 at 0000:0c:00.0 is an MI300-like part (junction and memory temperatures,
 * current socket power, violation status); device 1 at 0000:8e:00.0 an MI250-like one
 * (edge temperature, average socket power, no violation status). Calls are logged
 * (mock_amdsmi_log); mock_amdsmi_set() steers answers:
 *   major             the library version: 24 (answers in the year layout), 25, 26
 *   init_error        amdsmi_init returns this status
 *   sleep_ms          amdsmi_get_gpu_activity sleeps this long first (a hang)
 *   unsupported_ecc   amdsmi_get_gpu_total_ecc_count returns NOT_SUPPORTED
 *   fail_activity     amdsmi_get_gpu_activity returns this status (e.g. 7, API_FAILED)
 *   fail_all          every device query returns this status
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

/* amdsmi.h, transcribed */
typedef uint32_t amdsmi_status_t;
enum {
  AMDSMI_STATUS_SUCCESS = 0, AMDSMI_STATUS_INVAL = 1, AMDSMI_STATUS_NOT_SUPPORTED = 2,
  AMDSMI_STATUS_API_FAILED = 7, AMDSMI_STATUS_NOT_FOUND = 31, AMDSMI_STATUS_NOT_INIT = 32
};
typedef void *amdsmi_processor_handle;
typedef union {
  struct {
    uint64_t function_number : 3;
    uint64_t device_number : 5;
    uint64_t bus_number : 8;
    uint64_t domain_number : 48;
  };
  uint64_t as_uint;
} amdsmi_bdf_t;
typedef struct { uint32_t year, major, minor, release; const char *build; } amdsmi_version_24_t;
typedef struct { uint32_t major, minor, release; const char *build; } amdsmi_version_t;
typedef struct {                      /* 25 (ROCm 6.4) */
  uint64_t socket_power;
  uint32_t current_socket_power, average_socket_power;
  uint32_t gfx_voltage, soc_voltage, mem_voltage, power_limit;
  uint32_t reserved[2];
} amdsmi_power_info_25_t;
typedef struct {                      /* 26 (ROCm 7.x) */
  uint64_t socket_power;
  uint32_t current_socket_power, average_socket_power;
  uint64_t gfx_voltage, soc_voltage, mem_voltage;
  uint32_t power_limit, ubb_power;
  uint64_t reserved[18];
} amdsmi_power_info_26_t;
typedef struct {
  uint32_t clk, min_clk, max_clk;
  uint8_t clk_locked, clk_deep_sleep;
  uint32_t reserved[4];
} amdsmi_clk_info_t;
typedef struct { uint32_t gfx_activity, umc_activity, mm_activity, reserved[13]; } amdsmi_engine_usage_t;
typedef struct {
  uint64_t correctable_count, uncorrectable_count, deferred_count, reserved[5];
} amdsmi_error_count_t;
typedef struct {
  uint64_t power_cap, default_power_cap, dpm_cap, min_power_cap, max_power_cap, reserved[3];
} amdsmi_power_cap_info_t;
typedef struct { /* 25 and later, up to the first per-XCP array */
  uint64_t reference_timestamp, violation_timestamp, acc_counter, acc_prochot_thrm, acc_ppt_pwr,
      acc_socket_thrm, acc_vr_thrm, acc_hbm_thrm, acc_gfx_clk_below_host_limit;
  uint64_t per_prochot_thrm, per_ppt_pwr, per_socket_thrm, per_vr_thrm, per_hbm_thrm,
      per_gfx_clk_below_host_limit;
  uint8_t active_prochot_thrm, active_ppt_pwr, active_socket_thrm, active_vr_thrm,
      active_hbm_thrm, active_gfx_clk_below_host_limit;
  uint64_t per_xcp[8][8 * 8]; /* 26.1's arrays follow: written, so a small buffer shows */
} amdsmi_violation_status_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char logbuf[1 << 16];
static size_t loglen;
static int initialised;
static long k_major = 26, k_init_error, k_sleep, k_unsupported_ecc, k_fail_activity, k_fail_all;

static int devs[2] = {0, 1};

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

EXPORT const char *mock_amdsmi_log(void) { return logbuf; }
EXPORT void mock_amdsmi_clear(void) {
  pthread_mutex_lock(&mu);
  loglen = 0;
  logbuf[0] = 0;
  pthread_mutex_unlock(&mu);
}
EXPORT void mock_amdsmi_set(const char *name, long v) {
  static const struct { const char *name; long *knob; } knobs[] = {
      {"major", &k_major}, {"init_error", &k_init_error}, {"sleep_ms", &k_sleep},
      {"unsupported_ecc", &k_unsupported_ecc}, {"fail_activity", &k_fail_activity},
      {"fail_all", &k_fail_all}};
  for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
    if (strcmp(knobs[i].name, name) == 0) {
      __atomic_store_n(knobs[i].knob, v, __ATOMIC_SEQ_CST);
      return;
    }
  fprintf(stderr, "amdsmi_mock: no knob %s\n", name);
  abort();
}
static long knob(long *k) { return __atomic_load_n(k, __ATOMIC_SEQ_CST); }

static int dev_of(amdsmi_processor_handle h) {
  return h == &devs[0] ? 0 : h == &devs[1] ? 1 : -1;
}

static amdsmi_status_t check(amdsmi_processor_handle h, const void *out, const char *call) {
  logf_("%s %d", call, dev_of(h));
  if (!initialised) return AMDSMI_STATUS_NOT_INIT;
  if (dev_of(h) < 0 || out == NULL) return AMDSMI_STATUS_INVAL;
  if (knob(&k_fail_all)) return (amdsmi_status_t)knob(&k_fail_all);
  return AMDSMI_STATUS_SUCCESS;
}
#define CHECK(h, out)                                                                    \
  do {                                                                                   \
    amdsmi_status_t s_ = check((h), (out), __func__);                                    \
    if (s_ != AMDSMI_STATUS_SUCCESS) return s_;                                          \
  } while (0)

EXPORT amdsmi_status_t amdsmi_init(uint64_t flags) {
  logf_("amdsmi_init %llu", (unsigned long long)flags);
  if (knob(&k_init_error)) return (amdsmi_status_t)knob(&k_init_error);
  if (!(flags & (1u << 1))) return AMDSMI_STATUS_INVAL; /* AMDSMI_INIT_AMD_GPUS */
  initialised = 1;
  return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_lib_version(void *out) {
  if (!initialised) return AMDSMI_STATUS_NOT_INIT;
  if (out == NULL) return AMDSMI_STATUS_INVAL;
  if (knob(&k_major) <= 24) {
    amdsmi_version_24_t v = {24, 7, 1, 0, "24.7.1.0"};
    memcpy(out, &v, sizeof v);
  } else {
    amdsmi_version_t v = {(uint32_t)knob(&k_major), 1, 0, "mock"};
    memcpy(out, &v, sizeof v);
  }
  return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_status_code_to_string(amdsmi_status_t s, const char **str) {
  if (str == NULL) return AMDSMI_STATUS_INVAL;
  *str = s == AMDSMI_STATUS_SUCCESS ? "AMDSMI_STATUS_SUCCESS"
         : s == AMDSMI_STATUS_NOT_SUPPORTED ? "AMDSMI_STATUS_NOT_SUPPORTED"
         : s == AMDSMI_STATUS_API_FAILED ? "AMDSMI_STATUS_API_FAILED"
         : s == AMDSMI_STATUS_NOT_FOUND ? "AMDSMI_STATUS_NOT_FOUND" : "AMDSMI_STATUS_OTHER";
  return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_processor_handle_from_bdf(amdsmi_bdf_t bdf,
                                                            amdsmi_processor_handle *h) {
  logf_("amdsmi_get_processor_handle_from_bdf %04llx:%02llx:%02llx.%llx",
        (unsigned long long)bdf.domain_number, (unsigned long long)bdf.bus_number,
        (unsigned long long)bdf.device_number, (unsigned long long)bdf.function_number);
  if (!initialised) return AMDSMI_STATUS_NOT_INIT;
  if (h == NULL) return AMDSMI_STATUS_INVAL;
  if (bdf.domain_number != 0 || bdf.device_number != 0 || bdf.function_number != 0)
    return AMDSMI_STATUS_NOT_FOUND;
  if (bdf.bus_number == 0x0c) *h = &devs[0];
  else if (bdf.bus_number == 0x8e) *h = &devs[1];
  else return AMDSMI_STATUS_NOT_FOUND;
  return AMDSMI_STATUS_SUCCESS;
}

/* amdsmi_temperature_type_t EDGE 0, HOTSPOT 1, VRAM 2; metric CURRENT 0, MAX 1. Degrees C
 * (amd_smi.cc divides ROCm SMI's millidegrees). */
EXPORT amdsmi_status_t amdsmi_get_temp_metric(amdsmi_processor_handle h, int type, int metric,
                                              int64_t *c) {
  CHECK(h, c);
  int d = dev_of(h);
  if (type < 0 || type > 7 || metric < 0) return AMDSMI_STATUS_INVAL;
  if (metric != 0) {
    *c = 95; /* a limit, not a reading */
    return AMDSMI_STATUS_SUCCESS;
  }
  static const int64_t t[2][3] = {{-1, 58, 49}, {41, 55, 45}};
  if (type > 2 || t[d][type] < 0) return AMDSMI_STATUS_NOT_SUPPORTED; /* MI300: no edge */
  *c = t[d][type];
  return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_power_info(amdsmi_processor_handle h, void *info) {
  CHECK(h, info);
  int d = dev_of(h);
  if (knob(&k_major) >= 26) {
    amdsmi_power_info_26_t p;
    memset(&p, 0xff, sizeof p); /* unsupported members: UINT32_MAX and beyond */
    if (d == 0) p.socket_power = 612; /* 26: socket_power; current_socket_power unset */
    else p.average_socket_power = 301;
    p.power_limit = 750000000u;
    memcpy(info, &p, sizeof p);
  } else {
    amdsmi_power_info_25_t p;
    memset(&p, 0, sizeof p);
    p.socket_power = UINT64_MAX; /* host only in 25 */
    p.current_socket_power = d == 0 ? 612 : 0xFFFF;
    p.average_socket_power = d == 0 ? 0xFFFF : 301;
    p.power_limit = 750000000u;
    memcpy(info, &p, sizeof p);
  }
  return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_energy_count(amdsmi_processor_handle h, uint64_t *acc,
                                               float *res, uint64_t *ts) {
  CHECK(h, acc);
  if (res == NULL || ts == NULL) return AMDSMI_STATUS_INVAL;
  *acc = 123456789ull + 1000u * (unsigned)dev_of(h);
  *res = 15.3f; /* uJ per count */
  *ts = 42;
  return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_power_cap_info(amdsmi_processor_handle h, uint32_t sensor,
                                                 amdsmi_power_cap_info_t *info) {
  CHECK(h, info);
  if (sensor != 0) return AMDSMI_STATUS_INVAL;
  memset(info, 0, sizeof *info);
  info->power_cap = dev_of(h) == 0 ? 750000000ull : 560000000ull; /* uW */
  info->default_power_cap = 1;
  return AMDSMI_STATUS_SUCCESS;
}

/* amdsmi_clk_type_t GFX 0, DF 1, DCEF 2, SOC 3, MEM 4. */
EXPORT amdsmi_status_t amdsmi_get_clock_info(amdsmi_processor_handle h, int type,
                                             amdsmi_clk_info_t *info) {
  CHECK(h, info);
  unsigned d = (unsigned)dev_of(h);
  memset(info, 0, sizeof *info);
  switch (type) {
    case 0: info->clk = 2100 - 10 * d, info->min_clk = 500, info->max_clk = 2100; break;
    case 4: info->clk = 1300 - 10 * d, info->min_clk = 900, info->max_clk = 1300 + d; break;
    case 3: info->clk = 1200, info->min_clk = 100, info->max_clk = 1400; break;
    default: return AMDSMI_STATUS_NOT_SUPPORTED;
  }
  return AMDSMI_STATUS_SUCCESS;
}

/* amdsmi_memory_type_t VRAM 0, VIS_VRAM 1, GTT 2; bytes. */
EXPORT amdsmi_status_t amdsmi_get_gpu_memory_usage(amdsmi_processor_handle h, int type,
                                                   uint64_t *used) {
  CHECK(h, used);
  *used = type == 0 ? 5368709120ull + (unsigned)dev_of(h) : 777;
  return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_gpu_memory_total(amdsmi_processor_handle h, int type,
                                                   uint64_t *total) {
  CHECK(h, total);
  *total = type == 0 ? (dev_of(h) == 0 ? 206158430208ull : 68702699520ull) : 888;
  return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_gpu_activity(amdsmi_processor_handle h,
                                               amdsmi_engine_usage_t *info) {
  CHECK(h, info);
  struct timespec ts = {knob(&k_sleep) / 1000, (knob(&k_sleep) % 1000) * 1000000L};
  while (ts.tv_sec + ts.tv_nsec && nanosleep(&ts, &ts) != 0) {
  }
  if (knob(&k_fail_activity)) return (amdsmi_status_t)knob(&k_fail_activity);
  memset(info, 0, sizeof *info);
  info->gfx_activity = 73 - (unsigned)dev_of(h);
  info->umc_activity = 29 + (unsigned)dev_of(h);
  info->mm_activity = 5;
  return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_gpu_total_ecc_count(amdsmi_processor_handle h,
                                                      amdsmi_error_count_t *ec) {
  CHECK(h, ec);
  if (knob(&k_unsupported_ecc)) return AMDSMI_STATUS_NOT_SUPPORTED;
  memset(ec, 0, sizeof *ec);
  ec->correctable_count = 7 + 10u * (unsigned)dev_of(h);
  ec->uncorrectable_count = 2 + 10u * (unsigned)dev_of(h);
  ec->deferred_count = 1;
  return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_violation_status(amdsmi_processor_handle h,
                                                   amdsmi_violation_status_t *v) {
  CHECK(h, v);
  memset(v, 0xff, sizeof *v); /* "Max uint means unsupported" */
  if (dev_of(h) == 1) return AMDSMI_STATUS_SUCCESS; /* MI2xx: every flag unsupported */
  v->active_prochot_thrm = 0;
  v->active_ppt_pwr = 1;
  v->active_socket_thrm = 1;
  v->active_vr_thrm = 0;
  v->active_hbm_thrm = 0xff;
  v->active_gfx_clk_below_host_limit = 1; /* not mapped: gpuport does not read it */
  return AMDSMI_STATUS_SUCCESS;
}
