/**
 * @file gpuport/telemetry.h
 * @brief Device telemetry: temperatures, power and energy, clocks, memory use,
 *        utilisation, ECC counts, PCIe throughput and throttle reasons, read the same
 *        way on every backend.
 * @ingroup runtime
 *
 * One call, gp_device_get_telemetry(), fills a ::gp_telemetry_t for a gpuport device
 * from the vendor's management library or, on the cpu backend, from the host:
 *
 * - cuda: NVML (`libnvidia-ml.so.1`, or the file named in `GP_NVML_LIBRARY`), the
 *   device matched to NVML's by PCI bus id.
 * - hip: AMD SMI (`libamd_smi.so`, or `GP_AMDSMI_LIBRARY`) from version 25 (ROCm 6.4);
 *   where it is absent or older, ROCm SMI (`librocm_smi64.so`, or
 *   `GP_ROCM_SMI_LIBRARY`). Matched by PCI bus id.
 * - cpu: the Linux host every virtual device runs on: hwmon and thermal zones, RAPL
 *   (powercap) energy where readable, cpufreq or /proc/cpuinfo, /proc/meminfo,
 *   /proc/stat, EDAC.
 *
 * The libraries are loaded with dlopen at the first telemetry call: no program gains a
 * link dependency, and programs that never ask for telemetry never load them. Nothing
 * is ever made up: each field has a bit in gp_telemetry_t::available, and a field the
 * part or the host does not give keeps its bit clear (and is NaN when it is a
 * `double`, 0 when it is an integer). docs/TELEMETRY.md lists every field's source on
 * each vendor and which parts have it.
 *
 * Never a hang: the vendor libraries are called on a worker thread, and the caller
 * waits at most `GP_TELEMETRY_TIMEOUT_MS` (default 1000 ms) for a reading, and at most
 * `GP_TELEMETRY_INIT_TIMEOUT_MS` (default 10000 ms) for the first one of a library
 * (loading and initialising it). A late reading gives ::GP_ERROR_TIMEOUT; while the
 * vendor call is still stuck, later readings give ::GP_ERROR_TIMEOUT at once. The cpu
 * backend reads procfs and sysfs directly on the calling thread.
 */
#ifndef GP_TELEMETRY_H
#define GP_TELEMETRY_H

#include <stddef.h>
#include <stdint.h>
#include <gpuport/export.h>
#include <gpuport/status.h>

GP_EXTERN_C_BEGIN

/** @name Telemetry */
/**@{*/

/**
 * @brief The fields of ::gp_telemetry_t, one bit each in gp_telemetry_t::available,
 *        gp_telemetry_t::failed and the mask of gp_device_get_telemetry_fields().
 *        Values are stable once released; new fields are added at the end.
 */
typedef enum gp_telemetry_field {
  GP_TELEMETRY_TEMP_DIE = 0,          /**< temp_die_c */
  GP_TELEMETRY_TEMP_EDGE = 1,         /**< temp_edge_c */
  GP_TELEMETRY_TEMP_JUNCTION = 2,     /**< temp_junction_c */
  GP_TELEMETRY_TEMP_MEMORY = 3,       /**< temp_memory_c */
  GP_TELEMETRY_POWER = 4,             /**< power_w */
  GP_TELEMETRY_POWER_AVERAGE = 5,     /**< power_average_w */
  GP_TELEMETRY_ENERGY = 6,            /**< energy_j */
  GP_TELEMETRY_POWER_LIMIT = 7,       /**< power_limit_w */
  GP_TELEMETRY_CLOCK_SM = 8,          /**< clock_sm_mhz */
  GP_TELEMETRY_CLOCK_SM_MAX = 9,      /**< clock_sm_max_mhz */
  GP_TELEMETRY_CLOCK_MEMORY = 10,     /**< clock_memory_mhz */
  GP_TELEMETRY_CLOCK_MEMORY_MAX = 11, /**< clock_memory_max_mhz */
  GP_TELEMETRY_MEMORY_USED = 12,      /**< memory_used_bytes */
  GP_TELEMETRY_MEMORY_TOTAL = 13,     /**< memory_total_bytes */
  GP_TELEMETRY_UTIL_COMPUTE = 14,     /**< util_compute_pct */
  GP_TELEMETRY_UTIL_MEMORY = 15,      /**< util_memory_pct */
  GP_TELEMETRY_ECC_CORRECTED = 16,    /**< ecc_corrected */
  GP_TELEMETRY_ECC_UNCORRECTED = 17,  /**< ecc_uncorrected */
  GP_TELEMETRY_PCIE_TX = 18,          /**< pcie_tx_bytes_per_s */
  GP_TELEMETRY_PCIE_RX = 19,          /**< pcie_rx_bytes_per_s */
  GP_TELEMETRY_THROTTLE = 20,         /**< throttle */
  GP_TELEMETRY_FIELD_COUNT = 21       /**< number of fields (not a field) */
} gp_telemetry_field_t;

/** @brief The bit of field @p f in the masks of ::gp_telemetry_t. */
#define GP_TELEMETRY_BIT(f) (UINT64_C(1) << (unsigned)(f))

/**
 * @brief Reasons the device's clocks are held down now (gp_telemetry_t::throttle).
 *
 * NVML's clocks event reasons (nvml.h, nvmlClocksEventReason*) and AMD SMI's violation
 * status (amdsmi.h, amdsmi_violation_status_t::active_*) mapped to one set.
 */
typedef enum gp_throttle_reason {
  GP_THROTTLE_IDLE = 1 << 0,           /**< nothing runs: clocks drop to idle (NVML GpuIdle) */
  GP_THROTTLE_POWER = 1 << 1,          /**< held under the power limit (NVML SwPowerCap, AMD PPT) */
  GP_THROTTLE_THERMAL = 1 << 2,        /**< held under a temperature limit (NVML Sw/HwThermalSlowdown, AMD socket thermal) */
  GP_THROTTLE_HW_SLOWDOWN = 1 << 3,    /**< hardware slowdown (NVML HwSlowdown, AMD PROCHOT) */
  GP_THROTTLE_POWER_BRAKE = 1 << 4,    /**< external power brake (NVML HwPowerBrakeSlowdown) */
  GP_THROTTLE_MEMORY_THERMAL = 1 << 5, /**< HBM temperature limit (AMD HBM thermal) */
  GP_THROTTLE_VR_THERMAL = 1 << 6,     /**< voltage-regulator temperature limit (AMD VR thermal) */
  GP_THROTTLE_SYNC_BOOST = 1 << 7,     /**< held with a sync-boost group (NVML SyncBoost) */
  GP_THROTTLE_APP_CLOCKS = 1 << 8,     /**< application clock setting (NVML ApplicationsClocksSetting) */
  GP_THROTTLE_DISPLAY = 1 << 9,        /**< display clock setting (NVML DisplayClockSetting) */
  GP_THROTTLE_OTHER = 1 << 15          /**< a reason gpuport does not know */
} gp_throttle_reason_t;

/**
 * @brief One telemetry reading of a device. Initialise with gp_telemetry_init() so
 *        that struct_size is set: a newer library never writes past an older struct.
 *
 * A field holds a reading only when its ::GP_TELEMETRY_BIT is set in gp_telemetry::available;
 * otherwise a `double` field is NaN and an integer field 0. gp_telemetry::failed marks the
 * fields whose query failed this time (the part has them, the vendor call returned an
 * error): unavailable in this reading, but not missing from the part.
 */
typedef struct gp_telemetry {
  size_t struct_size;          /**< sizeof(gp_telemetry_t), set by gp_telemetry_init() */
  uint64_t available;          /**< GP_TELEMETRY_BIT of each field this reading holds */
  uint64_t failed;             /**< GP_TELEMETRY_BIT of each field whose query failed now */
  char source[16];             /**< what answered: "nvml", "amdsmi", "rocm_smi" or "host" */
  double timestamp_s;          /**< when it was read: seconds since the Unix epoch */
  double temp_die_c;           /**< die temperature, degrees C (NVIDIA's GPU sensor; the CPU package) */
  double temp_edge_c;          /**< edge temperature, degrees C (AMD) */
  double temp_junction_c;      /**< junction (hotspot) temperature, degrees C (AMD) */
  double temp_memory_c;        /**< memory (HBM/VRAM, DIMM) temperature, degrees C */
  double power_w;              /**< power draw now, W */
  double power_average_w;      /**< power draw averaged by the device (about 1 s), W */
  double energy_j;             /**< energy counter, J: grows monotonically while the driver stays loaded */
  double power_limit_w;        /**< the power limit in force, W */
  double clock_sm_mhz;         /**< SM / GFX / core clock now, MHz */
  double clock_sm_max_mhz;     /**< highest SM / GFX / core clock, MHz */
  double clock_memory_mhz;     /**< memory clock now, MHz */
  double clock_memory_max_mhz; /**< highest memory clock, MHz */
  uint64_t memory_used_bytes;  /**< device memory in use, bytes (host: MemTotal - MemAvailable) */
  uint64_t memory_total_bytes; /**< device memory, bytes */
  double util_compute_pct;     /**< share of the last sample period with work running, percent (0..100) */
  double util_memory_pct;      /**< memory-controller busy share, percent (0..100) */
  uint64_t ecc_corrected;      /**< corrected ECC errors (NVML: volatile, since the driver loaded) */
  uint64_t ecc_uncorrected;    /**< uncorrected ECC errors (NVML: volatile) */
  double pcie_tx_bytes_per_s;  /**< PCIe transmit throughput, bytes per second */
  double pcie_rx_bytes_per_s;  /**< PCIe receive throughput, bytes per second */
  uint64_t throttle;           /**< ::gp_throttle_reason_t flags in force now */
} gp_telemetry_t;

/** @brief Sets @p t->struct_size and zeroes the rest. */
static inline void gp_telemetry_init(gp_telemetry_t *t) {
  unsigned char *p = (unsigned char *)t;
  for (size_t i = 0; i < sizeof(*t); i++) p[i] = 0;
  t->struct_size = sizeof(*t);
}

/**
 * @brief Reads the telemetry of @p device (nvidia-smi, amd-smi and the host's sensors,
 *        as one struct).
 *
 * Fields the part or host does not have, and fields whose query failed, are left
 * unavailable (their bits clear in @p t->available); the call still succeeds while the
 * device answers. On the cpu backend every virtual device reports the host; its
 * utilisation and power are measured over the time since this device's previous
 * reading (the first reading has neither), and its energy counter continues across
 * RAPL's wrap-around. Thread-safe; readings of one vendor library are serialised.
 *
 * @param[in] device ordinal in [0, count).
 * @param[in,out] t initialised with gp_telemetry_init(); fields beyond t->struct_size
 *                are not written. On failure every field it covers is unavailable.
 * @return ::GP_SUCCESS;
 *         ::GP_ERROR_INVALID_VALUE (NULL @p t, or struct_size too small for the
 *         masks);
 *         ::GP_ERROR_INVALID_DEVICE, ::GP_ERROR_NO_DEVICE;
 *         ::GP_ERROR_NOT_SUPPORTED (the management library is missing or too old, or
 *         does not know the device's PCI bus id; the message names the library and its
 *         environment variable);
 *         ::GP_ERROR_TIMEOUT (the vendor library did not answer within the timeout);
 *         ::GP_ERROR_BACKEND (the library failed to initialise, the device is lost, or
 *         every query failed; the message names the call and the library's error).
 */
GP_API gp_status_t gp_device_get_telemetry(int device, gp_telemetry_t *t);

/**
 * @brief The fields @p device can report: the ::GP_TELEMETRY_BIT of each field its
 *        part (or the host) offers, whether or not one reading holds it.
 *
 * Cheap after the first call for a device: the set is found by one reading and kept.
 * A field the vendor library answers "not supported" for is not offered; one whose
 * query fails for another reason still is.
 *
 * @param[in] device ordinal in [0, count).
 * @param[out] fields the mask.
 * @return as gp_device_get_telemetry() (@p fields NULL: ::GP_ERROR_INVALID_VALUE).
 */
GP_API gp_status_t gp_device_get_telemetry_fields(int device, uint64_t *fields);

/**
 * @brief The name of a field as the Prometheus exporter and `gpuport monitor --json`
 *        spell it ("temp_die_c", "power_w", ...).
 * @param[in] field any value.
 * @return a static string; "unknown" for a value outside ::gp_telemetry_field_t.
 */
GP_API const char *gp_telemetry_field_name(gp_telemetry_field_t field);
/**@}*/

GP_EXTERN_C_END

#endif /* GP_TELEMETRY_H */
