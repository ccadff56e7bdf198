/*
 * telemetry_nvml_abi.h - the part of NVML's public ABI (nvml.h) that src/telemetry_nvml.c
 * calls, declared here so gpuport builds without NVML's headers and loads
 * libnvidia-ml.so.1 at run time (TELEMETRY.md). Names, values and layouts follow nvml.h
 * of NVML API version 13 (CUDA 13; the same in NVIDIA/go-nvml's pkg/nvml/nvml.h):
 *
 * - nvmlReturn_t: nvmlReturn_enum; only the codes gpuport tells apart are listed.
 * - nvmlTemperature_v1_t, nvmlTemperature_v1 = NVML_STRUCT_VERSION(Temperature, 1),
 *   which is sizeof(struct) | 1 << 24 (nvml.h NVML_STRUCT_VERSION).
 * - nvmlMemory_t (v1) and nvmlMemory_v2_t, nvmlMemory_v2 = sizeof | 2 << 24.
 * - nvmlUtilization_t (nvmlUtilization_st), nvmlFieldValue_t (nvmlFieldValue_st) with
 *   nvmlValue_t (nvmlValue_st) and nvmlValueType_t.
 * - enums nvmlTemperatureSensors_t (NVML_TEMPERATURE_GPU = 0), nvmlClockType_t
 *   (NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2), nvmlMemoryErrorType_t (CORRECTED = 0,
 *   UNCORRECTED = 1), nvmlEccCounterType_t (NVML_VOLATILE_ECC = 0),
 *   nvmlPcieUtilCounter_t (TX_BYTES = 0, RX_BYTES = 1), passed as the int-sized enums
 *   they are.
 * - field ids NVML_FI_DEV_MEMORY_TEMP (82), NVML_FI_DEV_POWER_AVERAGE (185),
 *   NVML_FI_DEV_POWER_INSTANT (186); nvmlClocksEventReason* bits.
 *
 * Every entry point is the versioned symbol nvml.h maps the plain name to
 * (nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2), or one that nvml.h has never
 * versioned.
 */
#ifndef GP_TELEMETRY_NVML_ABI_H
#define GP_TELEMETRY_NVML_ABI_H

#include <stdint.h>

typedef struct gp__nvml_device *gp__nvmlDevice_t;
typedef int gp__nvmlReturn_t;

enum {
  GP__NVML_SUCCESS = 0,
  GP__NVML_ERROR_UNINITIALIZED = 1,
  GP__NVML_ERROR_INVALID_ARGUMENT = 2,
  GP__NVML_ERROR_NOT_SUPPORTED = 3,
  GP__NVML_ERROR_NO_PERMISSION = 4,
  GP__NVML_ERROR_NOT_FOUND = 6,
  GP__NVML_ERROR_DRIVER_NOT_LOADED = 9,
  GP__NVML_ERROR_TIMEOUT = 10,
  GP__NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  GP__NVML_ERROR_GPU_IS_LOST = 15,
  GP__NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  GP__NVML_ERROR_UNKNOWN = 999
};

enum { GP__NVML_TEMPERATURE_GPU = 0 };
enum { GP__NVML_CLOCK_SM = 1, GP__NVML_CLOCK_MEM = 2 };
enum { GP__NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, GP__NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum { GP__NVML_VOLATILE_ECC = 0 };
enum { GP__NVML_PCIE_UTIL_TX_BYTES = 0, GP__NVML_PCIE_UTIL_RX_BYTES = 1 };

typedef struct {
  unsigned int version;
  int sensorType; /* nvmlTemperatureSensors_t */
  int temperature;
} gp__nvmlTemperature_v1_t;
#define GP__NVML_TEMPERATURE_V1 ((unsigned int)(sizeof(gp__nvmlTemperature_v1_t) | (1u << 24)))

typedef struct {
  unsigned long long total, free, used;
} gp__nvmlMemory_t;

typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} gp__nvmlMemory_v2_t;
#define GP__NVML_MEMORY_V2 ((unsigned int)(sizeof(gp__nvmlMemory_v2_t) | (2u << 24)))

typedef struct {
  unsigned int gpu, memory;
} gp__nvmlUtilization_t;

enum {
  GP__NVML_VALUE_TYPE_DOUBLE = 0,
  GP__NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  GP__NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  GP__NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  GP__NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  GP__NVML_VALUE_TYPE_SIGNED_INT = 5,
  GP__NVML_VALUE_TYPE_UNSIGNED_SHORT = 6
};

typedef union {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} gp__nvmlValue_t;

typedef struct {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;  /* nvmlValueType_t */
  int nvmlReturn; /* nvmlReturn_t */
  gp__nvmlValue_t value;
} gp__nvmlFieldValue_t;

#define GP__NVML_FI_DEV_MEMORY_TEMP 82
#define GP__NVML_FI_DEV_POWER_AVERAGE 185
#define GP__NVML_FI_DEV_POWER_INSTANT 186

/* nvmlClocksEventReason* (nvml.h, group nvmlClocksEventReasons; the older
 * nvmlClocksThrottleReason* names have the same values). */
#define GP__NVML_CER_GPU_IDLE 0x1ull
#define GP__NVML_CER_APPLICATIONS_CLOCKS_SETTING 0x2ull
#define GP__NVML_CER_SW_POWER_CAP 0x4ull
#define GP__NVML_CER_HW_SLOWDOWN 0x8ull
#define GP__NVML_CER_SYNC_BOOST 0x10ull
#define GP__NVML_CER_SW_THERMAL_SLOWDOWN 0x20ull
#define GP__NVML_CER_HW_THERMAL_SLOWDOWN 0x40ull
#define GP__NVML_CER_HW_POWER_BRAKE_SLOWDOWN 0x80ull
#define GP__NVML_CER_DISPLAY_CLOCK_SETTING 0x100ull

typedef gp__nvmlReturn_t (*gp__nvmlInit_fn)(void);
typedef const char *(*gp__nvmlErrorString_fn)(gp__nvmlReturn_t r);
typedef gp__nvmlReturn_t (*gp__nvmlGetHandleByPciBusId_fn)(const char *pci, gp__nvmlDevice_t *d);
typedef gp__nvmlReturn_t (*gp__nvmlGetTemperatureV_fn)(gp__nvmlDevice_t d,
                                                       gp__nvmlTemperature_v1_t *t);
typedef gp__nvmlReturn_t (*gp__nvmlGetTemperature_fn)(gp__nvmlDevice_t d, int sensor,
                                                      unsigned int *t);
typedef gp__nvmlReturn_t (*gp__nvmlGetUint_fn)(gp__nvmlDevice_t d, unsigned int *v);
typedef gp__nvmlReturn_t (*gp__nvmlGetUll_fn)(gp__nvmlDevice_t d, unsigned long long *v);
typedef gp__nvmlReturn_t (*gp__nvmlGetClock_fn)(gp__nvmlDevice_t d, int type, unsigned int *mhz);
typedef gp__nvmlReturn_t (*gp__nvmlGetMemory_fn)(gp__nvmlDevice_t d, gp__nvmlMemory_t *m);
typedef gp__nvmlReturn_t (*gp__nvmlGetMemory_v2_fn)(gp__nvmlDevice_t d, gp__nvmlMemory_v2_t *m);
typedef gp__nvmlReturn_t (*gp__nvmlGetUtilization_fn)(gp__nvmlDevice_t d,
                                                       gp__nvmlUtilization_t *u);
typedef gp__nvmlReturn_t (*gp__nvmlGetTotalEcc_fn)(gp__nvmlDevice_t d, int error_type,
                                                   int counter_type, unsigned long long *n);
typedef gp__nvmlReturn_t (*gp__nvmlGetPcieThroughput_fn)(gp__nvmlDevice_t d, int counter,
                                                         unsigned int *kb_per_s);
typedef gp__nvmlReturn_t (*gp__nvmlGetFieldValues_fn)(gp__nvmlDevice_t d, int count,
                                                      gp__nvmlFieldValue_t *values);

#endif /* GP_TELEMETRY_NVML_ABI_H */
