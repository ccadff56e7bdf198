/*
 * rocm_smi_mock.c - a mock librocm_smi64.so for test/test_telemetry.c: ROCm SMI
 * (rocm_smi/rocm_smi.h, transcribed independently of src/telemetry_amd_abi.h) for the
 * fallback gpuport takes where AMD SMI is missing or older than 25. Three monitor
 * devices: index 0 at 0000:8e:00.0, index 1 partition 1 of 0000:0c:00.0 (BDFID bits
 * 28-31), index 2 the unpartitioned 0000:0c:00.0, which is the one gpuport must pick.
 * mock_rsmi_set(): "init_error" (rsmi_init's status), "fail_busy" (status of
 * rsmi_dev_busy_percent_get).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef uint32_t rsmi_status_t;
enum { RSMI_STATUS_SUCCESS = 0, RSMI_STATUS_INVALID_ARGS = 1, RSMI_STATUS_NOT_SUPPORTED = 2,
       RSMI_STATUS_PERMISSION = 4, RSMI_STATUS_INIT_ERROR = 8 };

static int initialised;
static long k_init_error, k_fail_busy;

EXPORT void mock_rsmi_set(const char *name, long v) {
  if (strcmp(name, "init_error") == 0) k_init_error = v;
  else if (strcmp(name, "fail_busy") == 0) k_fail_busy = v;
  else {
    fprintf(stderr, "rocm_smi_mock: no knob %s\n", name);
    abort();
  }
}

static const uint64_t bdfid[3] = {0x8eull << 8, (1ull << 28) | (0x0cull << 8), 0x0cull << 8};

static rsmi_status_t check(uint32_t dv, const void *out) {
  if (!initialised) return RSMI_STATUS_INIT_ERROR;
  if (dv > 2 || out == NULL) return RSMI_STATUS_INVALID_ARGS;
  return RSMI_STATUS_SUCCESS;
}
#define CHECK(dv, out)                                                                    \
  do {                                                                                    \
    rsmi_status_t s_ = check((dv), (out));                                                \
    if (s_ != RSMI_STATUS_SUCCESS) return s_;                                             \
  } while (0)

EXPORT rsmi_status_t rsmi_init(uint64_t flags) {
  if (k_init_error) return (rsmi_status_t)k_init_error;
  if (flags != 0) return RSMI_STATUS_INVALID_ARGS;
  initialised = 1;
  return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_status_string(rsmi_status_t s, const char **str) {
  if (str == NULL) return RSMI_STATUS_INVALID_ARGS;
  *str = s == RSMI_STATUS_PERMISSION ? "RSMI_STATUS_PERMISSION" : "RSMI_STATUS_OTHER";
  return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_num_monitor_devices(uint32_t *n) {
  if (!initialised) return RSMI_STATUS_INIT_ERROR;
  if (n == NULL) return RSMI_STATUS_INVALID_ARGS;
  *n = 3;
  return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_pci_id_get(uint32_t dv, uint64_t *id) {
  CHECK(dv, id);
  *id = bdfid[dv];
  return RSMI_STATUS_SUCCESS;
}

/* rsmi_temperature_type_t EDGE 0, JUNCTION 1, MEMORY 2; metric CURRENT 0; millidegrees. */
EXPORT rsmi_status_t rsmi_dev_temp_metric_get(uint32_t dv, uint32_t type, int metric, int64_t *mc) {
  CHECK(dv, mc);
  if (metric != 0) {
    *mc = 100000;
    return RSMI_STATUS_SUCCESS;
  }
  static const int64_t base[3] = {40500, 52250, 47000};
  if (type > 2) return RSMI_STATUS_NOT_SUPPORTED;
  *mc = base[type] + 1000 * (int64_t)dv;
  return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_current_socket_power_get(uint32_t dv, uint64_t *uw) {
  CHECK(dv, uw);
  *uw = 260000000ull + 1000000ull * dv;
  return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_power_ave_get(uint32_t dv, uint32_t sensor, uint64_t *uw) {
  CHECK(dv, uw);
  if (sensor != 0) return RSMI_STATUS_INVALID_ARGS;
  *uw = 250000000ull + 1000000ull * dv;
  return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_power_cap_get(uint32_t dv, uint32_t sensor, uint64_t *uw) {
  CHECK(dv, uw);
  if (sensor != 0) return RSMI_STATUS_INVALID_ARGS;
  *uw = 300000000ull;
  return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_energy_count_get(uint32_t dv, uint64_t *acc, float *res, uint64_t *ts) {
  CHECK(dv, acc);
  if (res == NULL || ts == NULL) return RSMI_STATUS_INVALID_ARGS;
  *acc = 5000000ull + dv;
  *res = 15.3f;
  *ts = 7;
  return RSMI_STATUS_SUCCESS;
}

/* rsmi_memory_type_t VRAM 0, VIS_VRAM 1, GTT 2. */
EXPORT rsmi_status_t rsmi_dev_memory_usage_get(uint32_t dv, int type, uint64_t *b) {
  CHECK(dv, b);
  *b = type == 0 ? 1073741824ull * (2 + dv) : 5;
  return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_memory_total_get(uint32_t dv, int type, uint64_t *b) {
  CHECK(dv, b);
  *b = type == 0 ? 68702699520ull : 6;
  return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_busy_percent_get(uint32_t dv, uint32_t *pct) {
  CHECK(dv, pct);
  if (k_fail_busy) return (rsmi_status_t)k_fail_busy;
  *pct = 64 + dv;
  return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_memory_busy_percent_get(uint32_t dv, uint32_t *pct) {
  CHECK(dv, pct);
  *pct = 12 + dv;
  return RSMI_STATUS_SUCCESS;
}
