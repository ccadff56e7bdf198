/*
 * telemetry_amd_abi.h - the parts of AMD SMI's (amd_smi/amdsmi.h) and ROCm SMI's
 * (rocm_smi/rocm_smi.h) public ABIs that src/telemetry_amd.c calls, declared here so
 * gpuport builds without ROCm's headers and loads the libraries at run time.
 *
 * AMD SMI changes struct layouts from one library major version to the next (its header:
 * "Major version should be changed for every header change"), so gpuport does not
 * declare its structs: it passes a zeroed buffer larger than any layout and reads each
 * field at the offset the library's version documents. Sources, by version
 * (amdsmi_get_lib_version):
 *
 * - amdsmi_version_t: {year, major, minor, release, build} up to 24.x (ROCm 6.3);
 *   {major, minor, release, build} from 25 (ROCm 6.4), 26 (ROCm 7.0) on. A first word
 *   of 25 or more is therefore a major version; 24 or less a year.
 * - amdsmi_power_info_t from 25: uint64_t socket_power at 0 (W on Linux bare metal from
 *   26; host-only in 25), uint32_t current_socket_power at 8, average_socket_power at
 *   12 (W; "Unsupported struct members are set to UINT32_MAX", and values the GPU's
 *   gpu_metrics table lacks read 0xFFFF). 25: uint32_t voltages and power_limit after
 *   them (40 bytes); 26 and 7.x: uint64_t voltages, 192 bytes.
 * - amdsmi_clk_info_t: uint32_t clk (MHz) at 0, min_clk at 4, max_clk at 8 in every
 *   version (cur_clk before 24.6).
 * - amdsmi_engine_usage_t: uint32_t gfx_activity at 0, umc_activity at 4 (percent).
 * - amdsmi_error_count_t: uint64_t correctable_count at 0, uncorrectable_count at 8.
 * - amdsmi_power_cap_info_t: uint64_t power_cap at 0 (uW: the hwmon power1_cap that
 *   amd_smi_utils.cc smi_amdgpu_get_power_cap reads).
 * - amdsmi_violation_status_t from 25 (the 6.4.0 changelog adds acc_ and
 *   per_gfx_clk_below_host_limit beside the other acc_ and per_ fields): 15 uint64_t
 *   (timestamps, acc_*, per_*), then uint8_t active_prochot_thrm at 120,
 *   active_ppt_pwr 121, active_socket_thrm 122, active_vr_thrm 123, active_hbm_thrm
 *   124 (1 active, 0 not, 0xFF unsupported); later versions append per-XCP arrays
 *   after these (26.1: about 6 KB in all).
 * - amdsmi_bdf_t: a union of a uint64_t with the bit-fields function 0-2, device 3-7,
 *   bus 8-15, domain 16-63, passed by value (as the uint64_t it is, in one register).
 * - amdsmi_get_temp_metric: degrees C. amdsmi.h says millidegrees, but amd_smi.cc
 *   divides ROCm SMI's millidegrees by 1000 before returning (ROCm 6.x, 7.x).
 * - enums: amdsmi_temperature_type_t EDGE 0, HOTSPOT/JUNCTION 1, VRAM 2;
 *   amdsmi_temperature_metric_t CURRENT 0; amdsmi_clk_type_t GFX 0, MEM 4;
 *   amdsmi_memory_type_t VRAM 0; init flag AMDSMI_INIT_AMD_GPUS = 1 << 1.
 * - amdsmi_status_t: SUCCESS 0, NOT_SUPPORTED 2, NOT_YET_IMPLEMENTED 3, NOT_FOUND 31.
 *
 * ROCm SMI (rocm_smi.h, ROCm 5.x and 6.x): rsmi_status_t SUCCESS 0, NOT_SUPPORTED 2,
 * NOT_YET_IMPLEMENTED 9; rsmi_temperature_type_t EDGE 0, JUNCTION 1, MEMORY 2 and
 * RSMI_TEMP_CURRENT 0 (millidegrees C); power in microwatts; the BDFID of
 * rsmi_dev_pci_id_get is domain << 32 | partition << 28 | bus << 8 | device << 3 |
 * function (function may hold the partition instead); RSMI_MEM_TYPE_VRAM 0.
 */
#ifndef GP_TELEMETRY_AMD_ABI_H
#define GP_TELEMETRY_AMD_ABI_H

#include <stdint.h>

typedef void *gp__amdsmi_handle_t;
typedef uint32_t gp__amdsmi_status_t;

enum {
  GP__AMDSMI_STATUS_SUCCESS = 0,
  GP__AMDSMI_STATUS_NOT_SUPPORTED = 2,
  GP__AMDSMI_STATUS_NOT_YET_IMPLEMENTED = 3,
  GP__AMDSMI_STATUS_NOT_FOUND = 31
};
#define GP__AMDSMI_INIT_AMD_GPUS (1ull << 1)
enum { GP__AMDSMI_TEMP_EDGE = 0, GP__AMDSMI_TEMP_JUNCTION = 1, GP__AMDSMI_TEMP_VRAM = 2 };
enum { GP__AMDSMI_TEMP_CURRENT = 0 };
enum { GP__AMDSMI_CLK_GFX = 0, GP__AMDSMI_CLK_MEM = 4 };
enum { GP__AMDSMI_MEM_VRAM = 0 };

/* Byte offsets (see above). */
#define GP__AMDSMI_POWER_SOCKET 0   /* uint64_t, from 26 on Linux */
#define GP__AMDSMI_POWER_CURRENT 8  /* uint32_t */
#define GP__AMDSMI_POWER_AVERAGE 12 /* uint32_t */
#define GP__AMDSMI_CLK_CUR 0
#define GP__AMDSMI_CLK_MAX 8
#define GP__AMDSMI_ACT_GFX 0
#define GP__AMDSMI_ACT_UMC 4
#define GP__AMDSMI_ECC_CORRECTABLE 0
#define GP__AMDSMI_ECC_UNCORRECTABLE 8
#define GP__AMDSMI_VIOL_ACTIVE_PROCHOT 120
#define GP__AMDSMI_VIOL_ACTIVE_PPT 121
#define GP__AMDSMI_VIOL_ACTIVE_SOCKET 122
#define GP__AMDSMI_VIOL_ACTIVE_VR 123
#define GP__AMDSMI_VIOL_ACTIVE_HBM 124
/* Larger than amdsmi_violation_status_t of 26.1 (the largest struct gpuport passes). */
#define GP__AMDSMI_BUF 16384

typedef union {
  struct {
    uint64_t function_number : 3;
    uint64_t device_number : 5;
    uint64_t bus_number : 8;
    uint64_t domain_number : 48;
  } f;
  uint64_t as_uint;
} gp__amdsmi_bdf_t;

typedef gp__amdsmi_status_t (*gp__amdsmi_init_fn)(uint64_t flags);
typedef gp__amdsmi_status_t (*gp__amdsmi_version_fn)(void *version);
typedef gp__amdsmi_status_t (*gp__amdsmi_string_fn)(gp__amdsmi_status_t s, const char **str);
typedef gp__amdsmi_status_t (*gp__amdsmi_from_bdf_fn)(gp__amdsmi_bdf_t bdf, gp__amdsmi_handle_t *h);
typedef gp__amdsmi_status_t (*gp__amdsmi_temp_fn)(gp__amdsmi_handle_t h, int type, int metric,
                                                  int64_t *c);
typedef gp__amdsmi_status_t (*gp__amdsmi_struct_fn)(gp__amdsmi_handle_t h, void *info);
typedef gp__amdsmi_status_t (*gp__amdsmi_energy_fn)(gp__amdsmi_handle_t h, uint64_t *acc,
                                                    float *resolution_uj, uint64_t *ts);
typedef gp__amdsmi_status_t (*gp__amdsmi_power_cap_fn)(gp__amdsmi_handle_t h, uint32_t sensor,
                                                       void *info);
typedef gp__amdsmi_status_t (*gp__amdsmi_clock_fn)(gp__amdsmi_handle_t h, int type, void *info);
typedef gp__amdsmi_status_t (*gp__amdsmi_memory_fn)(gp__amdsmi_handle_t h, int type,
                                                    uint64_t *bytes);

typedef uint32_t gp__rsmi_status_t;
enum {
  GP__RSMI_STATUS_SUCCESS = 0,
  GP__RSMI_STATUS_NOT_SUPPORTED = 2,
  GP__RSMI_STATUS_NOT_YET_IMPLEMENTED = 9
};
enum { GP__RSMI_TEMP_EDGE = 0, GP__RSMI_TEMP_JUNCTION = 1, GP__RSMI_TEMP_MEMORY = 2 };
enum { GP__RSMI_TEMP_CURRENT = 0 };
enum { GP__RSMI_MEM_VRAM = 0 };

typedef gp__rsmi_status_t (*gp__rsmi_init_fn)(uint64_t flags);
typedef gp__rsmi_status_t (*gp__rsmi_count_fn)(uint32_t *n);
typedef gp__rsmi_status_t (*gp__rsmi_string_fn)(gp__rsmi_status_t s, const char **str);
typedef gp__rsmi_status_t (*gp__rsmi_u64_fn)(uint32_t dv, uint64_t *v);
typedef gp__rsmi_status_t (*gp__rsmi_u32_fn)(uint32_t dv, uint32_t *v);
typedef gp__rsmi_status_t (*gp__rsmi_sensor_u64_fn)(uint32_t dv, uint32_t sensor, uint64_t *v);
typedef gp__rsmi_status_t (*gp__rsmi_temp_fn)(uint32_t dv, uint32_t type, int metric,
                                              int64_t *mc);
typedef gp__rsmi_status_t (*gp__rsmi_energy_fn)(uint32_t dv, uint64_t *acc, float *resolution_uj,
                                                uint64_t *ts);
typedef gp__rsmi_status_t (*gp__rsmi_memory_fn)(uint32_t dv, int type, uint64_t *bytes);

#endif /* GP_TELEMETRY_AMD_ABI_H */
