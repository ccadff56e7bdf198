/*
 * telemetry_amd.c - gp_device_get_telemetry on AMD GPUs: AMD SMI (libamd_smi.so,
 * version 25 = ROCm 6.4 and later) or, where it is missing, older or fails to
 * initialise, ROCm SMI (librocm_smi64.so, every ROCm since 5.x). Loaded with dlopen on
 * the AMD worker thread (src/telemetry.c); the device found by its PCI bus id.
 *
 * AMD SMI fields (struct offsets by version: telemetry_amd_abi.h):
 *   temp_edge_c / temp_junction_c / temp_memory_c
 *                     amdsmi_get_temp_metric (EDGE, HOTSPOT, VRAM; AMD_SMI returns
 *                     degrees C). Which exist depends on the part: edge on MI2xx,
 *                     junction and memory on MI3xx.
 *   power_w           amdsmi_get_power_info current_socket_power (MI300 and later), or
 *                     socket_power (26 and later)
 *   power_average_w   amdsmi_get_power_info average_socket_power (MI200 and earlier)
 *   energy_j          amdsmi_get_energy_count (counter x resolution, uJ)
 *   power_limit_w     amdsmi_get_power_cap_info power_cap (uW)
 *   clock_*           amdsmi_get_clock_info (GFX, MEM): clk and max_clk, MHz
 *   memory_*          amdsmi_get_gpu_memory_usage / amdsmi_get_gpu_memory_total (VRAM)
 *   util_*            amdsmi_get_gpu_activity gfx_activity, umc_activity
 *   ecc_*             amdsmi_get_gpu_total_ecc_count
 *   throttle          amdsmi_get_violation_status active_* (MI300 and later)
 *   pcie_*            not mapped: AMD SMI's throughput call samples for a second and
 *                     its pcie_info bandwidth is one combined figure
 *
 * ROCm SMI fields: rsmi_dev_temp_metric_get (EDGE, JUNCTION, MEMORY; millidegrees),
 * rsmi_dev_current_socket_power_get and rsmi_dev_power_ave_get (uW),
 * rsmi_dev_energy_count_get, rsmi_dev_power_cap_get (uW), rsmi_dev_memory_usage_get and
 * rsmi_dev_memory_total_get (VRAM), rsmi_dev_busy_percent_get,
 * rsmi_dev_memory_busy_percent_get. Not mapped there: clocks (rsmi_frequencies_t
 * changed layout in ROCm 6.0 with no version to tell them apart by), ECC (per block
 * only), throttle reasons.
 *
 * Values the firmware lacks come back as 0xFFFF (gpu_metrics' "not available") or
 * UINT32_MAX: gpuport treats them as unavailable, never as a reading.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "telemetry.h"
#include "telemetry_amd_abi.h"

#define AMDSMI_MIN_MAJOR 25
#define AMD_DEVICES 64

typedef struct amd_dev {
  char pci[32];
  gp__amdsmi_handle_t handle; /* AMD SMI */
  uint32_t index;             /* ROCm SMI */
} amd_dev_t;

static struct amd_state {
  char path[2][GP__TM_LIB_MAX];
  bool tried;
  gp_status_t st;
  char why[GP__TM_WHY_MAX];
  bool rsmi; /* the fallback answers */
  unsigned major;
  /* AMD SMI */
  gp__amdsmi_string_fn a_string;
  gp__amdsmi_from_bdf_fn a_from_bdf;
  gp__amdsmi_temp_fn a_temp;
  gp__amdsmi_struct_fn a_power, a_activity, a_ecc, a_violation;
  gp__amdsmi_energy_fn a_energy;
  gp__amdsmi_power_cap_fn a_power_cap;
  gp__amdsmi_clock_fn a_clock;
  gp__amdsmi_memory_fn a_mem_used, a_mem_total;
  /* ROCm SMI */
  gp__rsmi_string_fn r_string;
  gp__rsmi_count_fn r_count;
  gp__rsmi_u64_fn r_pci, r_power_now;
  gp__rsmi_sensor_u64_fn r_power_ave, r_power_cap;
  gp__rsmi_temp_fn r_temp;
  gp__rsmi_energy_fn r_energy;
  gp__rsmi_memory_fn r_mem_used, r_mem_total;
  gp__rsmi_u32_fn r_busy, r_mem_busy;
  int n_devices;
  amd_dev_t devices[AMD_DEVICES];
  _Alignas(8) unsigned char buf[GP__AMDSMI_BUF];
} A; /* touched only by the AMD worker thread */

static void amd_run(gp__tm_job_t *job, bool forget);
static gp__tm_worker_t g_worker = {
    .run = amd_run, .name = "AMD SMI", .mu = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER};

#define BIT GP_TELEMETRY_BIT

/* POSIX: a dlsym'ed object pointer converts to the function pointer it is. */
#define RESOLVE(h, field, name)                                                          \
  do {                                                                                   \
    void *p_ = dlsym((h), (name));                                                       \
    memcpy(&A.field, &p_, sizeof p_);                                                    \
  } while (0)

static const char *a_error(gp__amdsmi_status_t s) {
  const char *str = NULL;
  if (A.a_string == NULL || A.a_string(s, &str) != GP__AMDSMI_STATUS_SUCCESS || str == NULL)
    return "unrecognised AMD SMI status";
  return str;
}

static const char *r_error(gp__rsmi_status_t s) {
  const char *str = NULL;
  if (A.r_string == NULL || A.r_string(s, &str) != GP__RSMI_STATUS_SUCCESS || str == NULL)
    return "unrecognised ROCm SMI status";
  return str;
}

/* ---- loading --------------------------------------------------------------------------------- */

/* AMD SMI, or why not (into why): GP_SUCCESS when it will answer. */
static gp_status_t load_amdsmi(char *why, size_t n) {
  const char *path = A.path[0];
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *e = dlerror();
    gp__tm_fmt(why, n, "cannot load %s (%s)", path, e ? e : "not found");
    return GP_ERROR_NOT_SUPPORTED;
  }
  gp__amdsmi_init_fn init = NULL;
  gp__amdsmi_version_fn version = NULL;
  void *p = dlsym(h, "amdsmi_init");
  memcpy(&init, &p, sizeof p);
  p = dlsym(h, "amdsmi_get_lib_version");
  memcpy(&version, &p, sizeof p);
  RESOLVE(h, a_string, "amdsmi_status_code_to_string");
  RESOLVE(h, a_from_bdf, "amdsmi_get_processor_handle_from_bdf");
  if (init == NULL || version == NULL || A.a_from_bdf == NULL) {
    gp__tm_fmt(why, n, "%s has no %s: not a usable AMD SMI library", path,
             init == NULL ? "amdsmi_init" : version == NULL ? "amdsmi_get_lib_version"
                                                            : "amdsmi_get_processor_handle_from_bdf");
    return GP_ERROR_NOT_SUPPORTED;
  }
  gp__amdsmi_status_t s = init(GP__AMDSMI_INIT_AMD_GPUS);
  if (s != GP__AMDSMI_STATUS_SUCCESS) {
    gp__tm_fmt(why, n, "amdsmi_init of %s failed: %s (status %u)", path, a_error(s), s);
    return GP_ERROR_BACKEND;
  }
  /* amdsmi_version_t is 24 bytes in every version; the first word tells the layout. */
  uint32_t v[8] = {0};
  s = version(v);
  unsigned major = v[0] >= AMDSMI_MIN_MAJOR ? v[0] : v[1];
  if (s != GP__AMDSMI_STATUS_SUCCESS || v[0] < AMDSMI_MIN_MAJOR) {
    gp__tm_fmt(why, n, "%s is AMD SMI %u.%u (year %u); gpuport reads AMD SMI 25 (ROCm 6.4) and "
             "later", path, major, v[0] < AMDSMI_MIN_MAJOR ? v[2] : v[1], v[0]);
    return GP_ERROR_NOT_SUPPORTED;
  }
  A.major = major;
  RESOLVE(h, a_temp, "amdsmi_get_temp_metric");
  RESOLVE(h, a_power, "amdsmi_get_power_info");
  RESOLVE(h, a_activity, "amdsmi_get_gpu_activity");
  RESOLVE(h, a_ecc, "amdsmi_get_gpu_total_ecc_count");
  RESOLVE(h, a_violation, "amdsmi_get_violation_status");
  RESOLVE(h, a_energy, "amdsmi_get_energy_count");
  RESOLVE(h, a_power_cap, "amdsmi_get_power_cap_info");
  RESOLVE(h, a_clock, "amdsmi_get_clock_info");
  RESOLVE(h, a_mem_used, "amdsmi_get_gpu_memory_usage");
  RESOLVE(h, a_mem_total, "amdsmi_get_gpu_memory_total");
  return GP_SUCCESS;
}

static gp_status_t load_rsmi(char *why, size_t n) {
  const char *path = A.path[1];
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *e = dlerror();
    gp__tm_fmt(why, n, "cannot load %s (%s)", path, e ? e : "not found");
    return GP_ERROR_NOT_SUPPORTED;
  }
  gp__rsmi_init_fn init = NULL;
  void *p = dlsym(h, "rsmi_init");
  memcpy(&init, &p, sizeof p);
  RESOLVE(h, r_string, "rsmi_status_string");
  RESOLVE(h, r_count, "rsmi_num_monitor_devices");
  RESOLVE(h, r_pci, "rsmi_dev_pci_id_get");
  if (init == NULL || A.r_count == NULL || A.r_pci == NULL) {
    gp__tm_fmt(why, n, "%s has no %s: not a usable ROCm SMI library", path,
             init == NULL ? "rsmi_init" : A.r_count == NULL ? "rsmi_num_monitor_devices"
                                                            : "rsmi_dev_pci_id_get");
    return GP_ERROR_NOT_SUPPORTED;
  }
  gp__rsmi_status_t s = init(0);
  if (s != GP__RSMI_STATUS_SUCCESS) {
    gp__tm_fmt(why, n, "rsmi_init of %s failed: %s (status %u)", path, r_error(s), s);
    return GP_ERROR_BACKEND;
  }
  RESOLVE(h, r_temp, "rsmi_dev_temp_metric_get");
  RESOLVE(h, r_power_now, "rsmi_dev_current_socket_power_get");
  RESOLVE(h, r_power_ave, "rsmi_dev_power_ave_get");
  RESOLVE(h, r_power_cap, "rsmi_dev_power_cap_get");
  RESOLVE(h, r_energy, "rsmi_dev_energy_count_get");
  RESOLVE(h, r_mem_used, "rsmi_dev_memory_usage_get");
  RESOLVE(h, r_mem_total, "rsmi_dev_memory_total_get");
  RESOLVE(h, r_busy, "rsmi_dev_busy_percent_get");
  RESOLVE(h, r_mem_busy, "rsmi_dev_memory_busy_percent_get");
  return GP_SUCCESS;
}

static void amd_load(void) {
  A.tried = true;
  char why_a[GP__TM_WHY_MAX / 2], why_r[GP__TM_WHY_MAX / 2];
  gp_status_t sa = load_amdsmi(why_a, sizeof why_a);
  if (sa == GP_SUCCESS) {
    A.st = GP_SUCCESS;
    return;
  }
  gp_status_t sr = load_rsmi(why_r, sizeof why_r);
  if (sr == GP_SUCCESS) {
    GP__INFO(GP__SUB_INIT, "telemetry: %s; using ROCm SMI (%s)", why_a, A.path[1]);
    A.rsmi = true;
    A.st = GP_SUCCESS;
    return;
  }
  /* Neither: the library that is there and failed says more than a missing one. */
  A.st = sa == GP_ERROR_BACKEND || sr == GP_ERROR_BACKEND ? GP_ERROR_BACKEND : GP_ERROR_NOT_SUPPORTED;
  gp__tm_fmt(A.why, sizeof A.why,
           "telemetry on the hip backend needs AMD SMI 25 or later (GP_AMDSMI_LIBRARY) or ROCm "
           "SMI (GP_ROCM_SMI_LIBRARY), which ROCm installs: %s; %s",
           why_a, why_r);
}

static void amd_forget(const char *amdsmi, const char *rsmi) {
  memset(&A, 0, offsetof(struct amd_state, buf));
  gp__tm_fmt(A.path[0], sizeof A.path[0], "%s", amdsmi);
  gp__tm_fmt(A.path[1], sizeof A.path[1], "%s", rsmi);
}

/* ---- the device --------------------------------------------------------------------------------- */

static bool parse_pci(const char *in, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn) {
  char tail = 0;
  return sscanf(in, "%x:%x:%x.%x%c", dom, bus, dev, fn, &tail) == 4 && *bus <= 0xff &&
         *dev <= 0x1f && *fn <= 7;
}

static gp_status_t amd_find(gp__tm_job_t *job, amd_dev_t *out) {
  for (int i = 0; i < A.n_devices; i++)
    if (strcmp(A.devices[i].pci, job->pci) == 0) {
      *out = A.devices[i];
      return GP_SUCCESS;
    }
  unsigned dom, bus, dev, fn;
  if (!parse_pci(job->pci, &dom, &bus, &dev, &fn)) {
    gp__tm_fmt(job->why, sizeof job->why, "'%s' is not a PCI bus id (domain:bus:device.function)",
             job->pci);
    return GP_ERROR_INVALID_VALUE;
  }
  amd_dev_t d = {0};
  gp__tm_fmt(d.pci, sizeof d.pci, "%s", job->pci);
  if (!A.rsmi) {
    gp__amdsmi_bdf_t bdf = {.as_uint = 0};
    bdf.f.function_number = fn;
    bdf.f.device_number = dev;
    bdf.f.bus_number = bus;
    bdf.f.domain_number = dom;
    gp__amdsmi_status_t s = A.a_from_bdf(bdf, &d.handle);
    if (s != GP__AMDSMI_STATUS_SUCCESS) {
      gp__tm_fmt(job->why, sizeof job->why, "AMD SMI (%s) has no device at PCI bus id %s: %s",
               A.path[0], job->pci, a_error(s));
      return s == GP__AMDSMI_STATUS_NOT_FOUND ? GP_ERROR_NOT_SUPPORTED : GP_ERROR_BACKEND;
    }
  } else {
    uint32_t n = 0;
    gp__rsmi_status_t s = A.r_count(&n);
    bool found = false;
    for (uint32_t i = 0; s == GP__RSMI_STATUS_SUCCESS && i < n && i < 1024; i++) {
      uint64_t id = 0;
      if (A.r_pci(i, &id) != GP__RSMI_STATUS_SUCCESS) continue;
      if ((id >> 32) != dom || ((id >> 8) & 0xff) != bus || ((id >> 3) & 0x1f) != dev) continue;
      /* Partitions share a BDF: the unpartitioned device (or partition 0) is ours. */
      bool exact = (id & 7) == fn && ((id >> 28) & 0xf) == 0;
      if (!found || exact) d.index = i;
      found = true;
      if (exact) break;
    }
    if (!found) {
      gp__tm_fmt(job->why, sizeof job->why, "ROCm SMI (%s) has no device at PCI bus id %s",
               A.path[1], job->pci);
      return GP_ERROR_NOT_SUPPORTED;
    }
  }
  if (A.n_devices < AMD_DEVICES) A.devices[A.n_devices++] = d;
  *out = d;
  return GP_SUCCESS;
}

/* ---- one reading ----------------------------------------------------------------------------------- */

typedef struct amd_read {
  gp__tm_job_t *job;
  const char *first_call;
  unsigned first_status;
} amd_read_t;

static bool ok_common(amd_read_t *r, uint64_t mask, const char *call, unsigned s, bool success,
                      bool unsupported) {
  if (success) {
    r->job->offered |= mask;
    return true;
  }
  if (unsupported) return false;
  r->job->offered |= mask;
  r->job->t.failed |= mask;
  if (r->first_call == NULL) r->first_call = call, r->first_status = s;
  return false;
}

static bool a_ok(amd_read_t *r, uint64_t mask, const char *call, gp__amdsmi_status_t s) {
  return ok_common(r, mask, call, s, s == GP__AMDSMI_STATUS_SUCCESS,
                   s == GP__AMDSMI_STATUS_NOT_SUPPORTED || s == GP__AMDSMI_STATUS_NOT_YET_IMPLEMENTED);
}

static bool r_ok(amd_read_t *r, uint64_t mask, const char *call, gp__rsmi_status_t s) {
  return ok_common(r, mask, call, s, s == GP__RSMI_STATUS_SUCCESS,
                   s == GP__RSMI_STATUS_NOT_SUPPORTED || s == GP__RSMI_STATUS_NOT_YET_IMPLEMENTED);
}

static uint32_t u32_at(size_t off) {
  uint32_t v;
  memcpy(&v, A.buf + off, sizeof v);
  return v;
}
static uint64_t u64_at(size_t off) {
  uint64_t v;
  memcpy(&v, A.buf + off, sizeof v);
  return v;
}
/* gpu_metrics' "not available" (0xFFFF) and UINT32_MAX are not readings. */
static bool valid16(uint64_t v) { return v < 0xFFFF; }

/* Clears A.buf for the next struct-filling call: what the library leaves alone reads 0. */
static void *fresh(void) {
  memset(A.buf, 0, sizeof A.buf);
  return A.buf;
}

static void a_temperature(amd_read_t *r, gp__amdsmi_handle_t h, int type, gp_telemetry_field_t f) {
  int64_t c = 0;
  if (A.a_temp && a_ok(r, BIT(f), "amdsmi_get_temp_metric",
                       A.a_temp(h, type, GP__AMDSMI_TEMP_CURRENT, &c)) &&
      c > -274 && c < 0xFFFF)
    gp__telemetry_set(&r->job->t, f, (double)c);
}

static void a_power(amd_read_t *r, gp__amdsmi_handle_t h) {
  gp_telemetry_t *t = &r->job->t;
  uint64_t mask = BIT(GP_TELEMETRY_POWER) | BIT(GP_TELEMETRY_POWER_AVERAGE);
  if (!A.a_power || !a_ok(r, mask, "amdsmi_get_power_info", A.a_power(h, fresh()))) return;
  uint32_t now = u32_at(GP__AMDSMI_POWER_CURRENT), avg = u32_at(GP__AMDSMI_POWER_AVERAGE);
  uint64_t sock = u64_at(GP__AMDSMI_POWER_SOCKET);
  if (valid16(now) && now > 0)
    gp__telemetry_set(t, GP_TELEMETRY_POWER, now);
  else if (A.major >= 26 && valid16(sock) && sock > 0)
    gp__telemetry_set(t, GP_TELEMETRY_POWER, (double)sock);
  if (valid16(avg) && avg > 0) gp__telemetry_set(t, GP_TELEMETRY_POWER_AVERAGE, avg);
  /* A part reports one of the two: only the one it fills is offered. */
  r->job->offered &= ~(mask & ~t->available);
}

static void a_clock(amd_read_t *r, gp__amdsmi_handle_t h, int type, gp_telemetry_field_t cur,
                    gp_telemetry_field_t max) {
  uint64_t mask = BIT(cur) | BIT(max);
  if (!A.a_clock || !a_ok(r, mask, "amdsmi_get_clock_info", A.a_clock(h, type, fresh()))) return;
  uint32_t c = u32_at(GP__AMDSMI_CLK_CUR), m = u32_at(GP__AMDSMI_CLK_MAX);
  if (valid16(c)) gp__telemetry_set(&r->job->t, cur, c);
  if (valid16(m) && m > 0) gp__telemetry_set(&r->job->t, max, m);
}

static void a_activity(amd_read_t *r, gp__amdsmi_handle_t h) {
  uint64_t mask = BIT(GP_TELEMETRY_UTIL_COMPUTE) | BIT(GP_TELEMETRY_UTIL_MEMORY);
  if (!A.a_activity || !a_ok(r, mask, "amdsmi_get_gpu_activity", A.a_activity(h, fresh()))) return;
  uint32_t g = u32_at(GP__AMDSMI_ACT_GFX), u = u32_at(GP__AMDSMI_ACT_UMC);
  if (g <= 100) gp__telemetry_set(&r->job->t, GP_TELEMETRY_UTIL_COMPUTE, g);
  if (u <= 100) gp__telemetry_set(&r->job->t, GP_TELEMETRY_UTIL_MEMORY, u);
}

static void a_violation(amd_read_t *r, gp__amdsmi_handle_t h) {
  static const struct {
    size_t off;
    uint64_t flag;
  } map[] = {{GP__AMDSMI_VIOL_ACTIVE_PROCHOT, GP_THROTTLE_HW_SLOWDOWN},
             {GP__AMDSMI_VIOL_ACTIVE_PPT, GP_THROTTLE_POWER},
             {GP__AMDSMI_VIOL_ACTIVE_SOCKET, GP_THROTTLE_THERMAL},
             {GP__AMDSMI_VIOL_ACTIVE_VR, GP_THROTTLE_VR_THERMAL},
             {GP__AMDSMI_VIOL_ACTIVE_HBM, GP_THROTTLE_MEMORY_THERMAL}};
  uint64_t mask = BIT(GP_TELEMETRY_THROTTLE);
  if (!A.a_violation ||
      !a_ok(r, mask, "amdsmi_get_violation_status", A.a_violation(h, fresh())))
    return;
  uint64_t flags = 0;
  int known = 0;
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
    uint8_t a = A.buf[map[i].off];
    if (a == 0xFF) continue; /* unsupported on this part */
    known++;
    if (a) flags |= map[i].flag;
  }
  if (known) gp__telemetry_set_u64(&r->job->t, GP_TELEMETRY_THROTTLE, flags);
  else r->job->offered &= ~mask; /* older ASICs answer with every flag unsupported */
}

static void amdsmi_read_all(amd_read_t *r, gp__amdsmi_handle_t h) {
  gp_telemetry_t *t = &r->job->t;
  a_temperature(r, h, GP__AMDSMI_TEMP_EDGE, GP_TELEMETRY_TEMP_EDGE);
  a_temperature(r, h, GP__AMDSMI_TEMP_JUNCTION, GP_TELEMETRY_TEMP_JUNCTION);
  a_temperature(r, h, GP__AMDSMI_TEMP_VRAM, GP_TELEMETRY_TEMP_MEMORY);
  a_power(r, h);
  uint64_t acc = 0, ts = 0;
  float res = 0;
  if (A.a_energy && a_ok(r, BIT(GP_TELEMETRY_ENERGY), "amdsmi_get_energy_count",
                         A.a_energy(h, &acc, &res, &ts)) && res > 0)
    gp__telemetry_set(t, GP_TELEMETRY_ENERGY, (double)acc * (double)res * 1e-6);
  if (A.a_power_cap && a_ok(r, BIT(GP_TELEMETRY_POWER_LIMIT), "amdsmi_get_power_cap_info",
                            A.a_power_cap(h, 0, fresh())) &&
      u64_at(0) > 0)
    gp__telemetry_set(t, GP_TELEMETRY_POWER_LIMIT, (double)u64_at(0) * 1e-6);
  a_clock(r, h, GP__AMDSMI_CLK_GFX, GP_TELEMETRY_CLOCK_SM, GP_TELEMETRY_CLOCK_SM_MAX);
  a_clock(r, h, GP__AMDSMI_CLK_MEM, GP_TELEMETRY_CLOCK_MEMORY, GP_TELEMETRY_CLOCK_MEMORY_MAX);
  uint64_t bytes = 0;
  if (A.a_mem_used && a_ok(r, BIT(GP_TELEMETRY_MEMORY_USED), "amdsmi_get_gpu_memory_usage",
                           A.a_mem_used(h, GP__AMDSMI_MEM_VRAM, &bytes)))
    gp__telemetry_set_u64(t, GP_TELEMETRY_MEMORY_USED, bytes);
  if (A.a_mem_total && a_ok(r, BIT(GP_TELEMETRY_MEMORY_TOTAL), "amdsmi_get_gpu_memory_total",
                            A.a_mem_total(h, GP__AMDSMI_MEM_VRAM, &bytes)))
    gp__telemetry_set_u64(t, GP_TELEMETRY_MEMORY_TOTAL, bytes);
  a_activity(r, h);
  uint64_t ecc = BIT(GP_TELEMETRY_ECC_CORRECTED) | BIT(GP_TELEMETRY_ECC_UNCORRECTED);
  if (A.a_ecc && a_ok(r, ecc, "amdsmi_get_gpu_total_ecc_count", A.a_ecc(h, fresh()))) {
    gp__telemetry_set_u64(t, GP_TELEMETRY_ECC_CORRECTED, u64_at(GP__AMDSMI_ECC_CORRECTABLE));
    gp__telemetry_set_u64(t, GP_TELEMETRY_ECC_UNCORRECTED, u64_at(GP__AMDSMI_ECC_UNCORRECTABLE));
  }
  a_violation(r, h);
}

static void r_temperature(amd_read_t *r, uint32_t i, uint32_t type, gp_telemetry_field_t f) {
  int64_t mc = 0;
  if (A.r_temp && r_ok(r, BIT(f), "rsmi_dev_temp_metric_get",
                       A.r_temp(i, type, GP__RSMI_TEMP_CURRENT, &mc)))
    gp__telemetry_set(&r->job->t, f, (double)mc * 1e-3);
}

static void r_percent(amd_read_t *r, uint32_t i, gp__rsmi_u32_fn fn, const char *call,
                      gp_telemetry_field_t f) {
  uint32_t pct = 0;
  if (fn && r_ok(r, BIT(f), call, fn(i, &pct)) && pct <= 100)
    gp__telemetry_set(&r->job->t, f, pct);
}

static void rsmi_read_all(amd_read_t *r, uint32_t i) {
  gp_telemetry_t *t = &r->job->t;
  r_temperature(r, i, GP__RSMI_TEMP_EDGE, GP_TELEMETRY_TEMP_EDGE);
  r_temperature(r, i, GP__RSMI_TEMP_JUNCTION, GP_TELEMETRY_TEMP_JUNCTION);
  r_temperature(r, i, GP__RSMI_TEMP_MEMORY, GP_TELEMETRY_TEMP_MEMORY);
  uint64_t uw = 0;
  if (A.r_power_now && r_ok(r, BIT(GP_TELEMETRY_POWER), "rsmi_dev_current_socket_power_get",
                            A.r_power_now(i, &uw)))
    gp__telemetry_set(t, GP_TELEMETRY_POWER, (double)uw * 1e-6);
  if (A.r_power_ave && r_ok(r, BIT(GP_TELEMETRY_POWER_AVERAGE), "rsmi_dev_power_ave_get",
                            A.r_power_ave(i, 0, &uw)))
    gp__telemetry_set(t, GP_TELEMETRY_POWER_AVERAGE, (double)uw * 1e-6);
  uint64_t acc = 0, ts = 0;
  float res = 0;
  if (A.r_energy && r_ok(r, BIT(GP_TELEMETRY_ENERGY), "rsmi_dev_energy_count_get",
                         A.r_energy(i, &acc, &res, &ts)) && res > 0)
    gp__telemetry_set(t, GP_TELEMETRY_ENERGY, (double)acc * (double)res * 1e-6);
  if (A.r_power_cap && r_ok(r, BIT(GP_TELEMETRY_POWER_LIMIT), "rsmi_dev_power_cap_get",
                            A.r_power_cap(i, 0, &uw)) && uw > 0)
    gp__telemetry_set(t, GP_TELEMETRY_POWER_LIMIT, (double)uw * 1e-6);
  uint64_t bytes = 0;
  if (A.r_mem_used && r_ok(r, BIT(GP_TELEMETRY_MEMORY_USED), "rsmi_dev_memory_usage_get",
                           A.r_mem_used(i, GP__RSMI_MEM_VRAM, &bytes)))
    gp__telemetry_set_u64(t, GP_TELEMETRY_MEMORY_USED, bytes);
  if (A.r_mem_total && r_ok(r, BIT(GP_TELEMETRY_MEMORY_TOTAL), "rsmi_dev_memory_total_get",
                            A.r_mem_total(i, GP__RSMI_MEM_VRAM, &bytes)))
    gp__telemetry_set_u64(t, GP_TELEMETRY_MEMORY_TOTAL, bytes);
  r_percent(r, i, A.r_busy, "rsmi_dev_busy_percent_get", GP_TELEMETRY_UTIL_COMPUTE);
  r_percent(r, i, A.r_mem_busy, "rsmi_dev_memory_busy_percent_get", GP_TELEMETRY_UTIL_MEMORY);
}

static void amd_run(gp__tm_job_t *job, bool forget) {
  if (forget || !A.tried || strcmp(A.path[0], job->lib[0]) != 0 ||
      strcmp(A.path[1], job->lib[1]) != 0)
    amd_forget(job->lib[0], job->lib[1]);
  if (!A.tried) amd_load();
  if (A.st != GP_SUCCESS) {
    job->st = A.st;
    gp__tm_fmt(job->why, sizeof job->why, "%s", A.why);
    return;
  }
  amd_dev_t d;
  job->st = amd_find(job, &d);
  if (job->st != GP_SUCCESS) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  job->t.timestamp_s = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  gp__tm_fmt(job->t.source, sizeof job->t.source, "%s", A.rsmi ? "rocm_smi" : "amdsmi");
  amd_read_t r = {.job = job};
  if (A.rsmi) rsmi_read_all(&r, d.index);
  else amdsmi_read_all(&r, d.handle);
  job->t.failed &= ~job->t.available;
  if (job->t.available == 0 && r.first_call != NULL) {
    gp__tm_fmt(job->why, sizeof job->why,
             "every query failed on the device at %s; the first, %s, returned %s (status %u)",
             job->pci, r.first_call, A.rsmi ? r_error(r.first_status) : a_error(r.first_status),
             r.first_status);
    job->st = GP_ERROR_BACKEND;
    return;
  }
  job->st = GP_SUCCESS;
}

/* ---- the entry point -------------------------------------------------------------------------------- */

gp_status_t gp__telemetry_amd_read(const char *amdsmi, const char *rocm_smi, const char *pci,
                                   gp_telemetry_t *t, uint64_t *offered) {
  gp__tm_job_t job;
  memset(&job, 0, sizeof job);
  gp__tm_pick_library(job.lib[0], sizeof job.lib[0], amdsmi, "GP_AMDSMI_LIBRARY", "libamd_smi.so");
  gp__tm_pick_library(job.lib[1], sizeof job.lib[1], rocm_smi, "GP_ROCM_SMI_LIBRARY",
                      "librocm_smi64.so");
  gp__tm_fmt(job.pci, sizeof job.pci, "%s", pci ? pci : "");
  gp__telemetry_reset(&job.t);
  gp__telemetry_run(&g_worker, &job);
  return gp__tm_finish(&job, t, offered);
}

void gp__telemetry_amd_forget(void) {
  pthread_mutex_lock(&g_worker.mu);
  g_worker.forget = true;
  pthread_mutex_unlock(&g_worker.mu);
}
