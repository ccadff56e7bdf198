/*
 * telemetry.h - what the telemetry sources share (gpuport/telemetry.h, TELEMETRY.md):
 * the field table, the worker thread that bounds every vendor call by a deadline, the
 * readers of NVML (src/telemetry_nvml.c), AMD SMI / ROCm SMI (src/telemetry_amd.c) and
 * the host (src/cpu/telemetry_host.c), and the backend hook.
 *
 * The vendor readers are backend-independent and built into every library, the cpu one
 * included: test/test_telemetry.c calls their entry points with the path of a mock
 * library (test/mock/), so CI checks the NVML and AMD SMI mappings without a GPU.
 */
#ifndef GP_TELEMETRY_INTERNAL_H
#define GP_TELEMETRY_INTERNAL_H

#include <pthread.h>
#include <gpuport/telemetry.h>
#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- fields ------------------------------------------------------------------------- */
/* Every field of t unavailable: masks 0, doubles NaN, integers 0, source "". */
void gp__telemetry_reset(gp_telemetry_t *t);
/* Stores v in field f and sets its available bit (integer fields take v rounded down;
 * a negative or non-finite v leaves the field unavailable). */
void gp__telemetry_set(gp_telemetry_t *t, gp_telemetry_field_t f, double v);
/* Stores an integer field exactly (memory sizes, ECC counts, throttle flags). */
void gp__telemetry_set_u64(gp_telemetry_t *t, gp_telemetry_field_t f, uint64_t v);

/* ---- vendor calls on a worker thread, each bounded by a deadline ---------------------- */
#define GP__TM_LIB_MAX 512
#define GP__TM_WHY_MAX 600

/* One reading: what the reader is asked (libraries, device) and what it answers. */
typedef struct gp__tm_job {
  char lib[2][GP__TM_LIB_MAX]; /* the files to dlopen: NVML [0]; AMD SMI [0], ROCm SMI [1] */
  char pci[32];                /* the device: "dddd:bb:dd.f" (hex) */
  gp_telemetry_t t;            /* the reading (a full struct, reset before the reader runs) */
  uint64_t offered;            /* fields the part has */
  gp_status_t st;
  char why[GP__TM_WHY_MAX];    /* the message when st is not GP_SUCCESS */
} gp__tm_job_t;

/* A vendor library's worker: one thread, one job at a time. Every call into that
 * library is made on it, so the reader's state needs no lock. Statically initialised
 * with GP__TM_WORKER_INIT(run, name). */
typedef struct gp__tm_worker {
  void (*run)(gp__tm_job_t *job, bool forget); /* forget: drop loaded state first */
  const char *name;                            /* "NVML", "AMD SMI": for messages */
  pthread_mutex_t mu;
  pthread_cond_t cv;                           /* CLOCK_MONOTONIC; broadcast on every change */
  bool started, busy, abandoned, forget, ever_done;
  unsigned long posted, taken, done;
  double job_started;                          /* when the current job was posted */
  gp__tm_job_t job;
} gp__tm_worker_t;

/* Runs w->run on *job (inputs copied in, results copied back) on w's thread. Waits at
 * most GP_TELEMETRY_TIMEOUT_MS (default 1000 ms) or, before w has finished its first
 * job (loading and initialising the library), GP_TELEMETRY_INIT_TIMEOUT_MS (default
 * 10000 ms). GP_ERROR_TIMEOUT (job->why says why) when the deadline passes, or at once
 * when an earlier job w's caller gave up on is still running; the late job's results
 * are dropped when it returns. Never sets the thread's message. */
gp_status_t gp__telemetry_run(gp__tm_worker_t *w, gp__tm_job_t *job);
/* The deadlines in seconds (the environment variables, checked; their defaults). */
double gp__telemetry_timeout_s(bool first);
/* The library file a reader loads: given when not NULL or empty, else the environment
 * variable env when set, else def. */
void gp__tm_pick_library(char *out, size_t n, const char *given, const char *env,
                         const char *def);
/* snprintf into a message or path buffer, where cutting a long path short is fine (no
 * -Wformat-truncation through a va_list). */
void gp__tm_fmt(char *buf, size_t n, const char *fmt, ...) GP__PRINTF(3, 4);
/* After gp__telemetry_run: copies the reading to t and *offered, and on failure sets the
 * thread's message ("gp_device_get_telemetry: <job->why>"). Returns job->st. */
gp_status_t gp__tm_finish(const gp__tm_job_t *job, gp_telemetry_t *t, uint64_t *offered);
/* Each reader's part of gp__telemetry_forget. */
void gp__telemetry_nvml_forget(void);
void gp__telemetry_amd_forget(void);

/* ---- readers (the test seam: library paths and PCI bus id in, reading out) ------------ */
/* NVML: library NULL or "" means GP_NVML_LIBRARY, else libnvidia-ml.so.1. pci is the
 * device's PCI bus id as cudaDeviceGetPCIBusId writes it ("0000:3b:00.0"). Fills t (a
 * full struct) and *offered; on failure sets the thread's message
 * ("gp_device_get_telemetry: ...") and returns the status documented by
 * gp_device_get_telemetry. */
gp_status_t gp__telemetry_nvml_read(const char *library, const char *pci, gp_telemetry_t *t,
                                    uint64_t *offered);
/* AMD SMI (NULL/"": GP_AMDSMI_LIBRARY, else libamd_smi.so), falling back to ROCm SMI
 * (NULL/"": GP_ROCM_SMI_LIBRARY, else librocm_smi64.so) when AMD SMI is missing, older
 * than version 25 or fails to initialise. As gp__telemetry_nvml_read otherwise. */
gp_status_t gp__telemetry_amd_read(const char *amdsmi, const char *rocm_smi, const char *pci,
                                   gp_telemetry_t *t, uint64_t *offered);
/* Makes the next reading of each vendor reader load and initialise its library again
 * (the tests change the mock's version between readings). */
void gp__telemetry_forget(void);

/* The host (src/cpu/telemetry_host.c, cpu backend). Readings that need two samples
 * (utilisation, power, the energy counter across RAPL's wrap) keep the previous one in
 * a gp__tm_host_t, one per device; what files exist is found once, at its first read. */
#define GP__TM_HOST_PKG_MAX 16
#define GP__TM_HOST_PATH_MAX 160
typedef struct gp__tm_host {
  bool planned;
  /* what exists (paths relative to the root) */
  int n_die, n_mem, n_rapl, n_freq, n_edac;
  char die[GP__TM_HOST_PKG_MAX][GP__TM_HOST_PATH_MAX];  /* package temperature inputs, m°C */
  char mem[GP__TM_HOST_PKG_MAX][GP__TM_HOST_PATH_MAX];  /* DIMM temperature inputs, m°C */
  char rapl[GP__TM_HOST_PKG_MAX][GP__TM_HOST_PATH_MAX]; /* powercap package directories */
  char freq[GP__TM_HOST_PKG_MAX][GP__TM_HOST_PATH_MAX]; /* cpufreq policy directories */
  char edac[GP__TM_HOST_PKG_MAX][GP__TM_HOST_PATH_MAX]; /* EDAC memory controllers */
  bool cpuinfo_mhz;                                     /* no cpufreq: /proc/cpuinfo's MHz */
  double freq_max_mhz;                                  /* cpuinfo_max_freq (fixed) */
  uint64_t offered;
  /* the previous sample */
  bool have_prev;
  double prev_t;                                        /* CLOCK_MONOTONIC, s */
  unsigned long long prev_busy, prev_total;             /* /proc/stat jiffies */
  bool have_energy;
  unsigned long long rapl_raw[GP__TM_HOST_PKG_MAX], rapl_range[GP__TM_HOST_PKG_MAX];
  double energy_j;                                      /* the counter, continued across wraps */
} gp__tm_host_t;

/* One reading of the host under root ("" for the real one; the tests pass a fake tree
 * with sys/ and proc/ beneath it). Fills t and *offered; never fails on a missing file
 * (the field is unavailable). */
void gp__telemetry_host_read(const char *root, gp__tm_host_t *h, gp_telemetry_t *t,
                             uint64_t *offered);

/* ---- the backend ---------------------------------------------------------------------- */
/* One reading of a checked device (src/cpu/telemetry_host.c, src/gpu/telemetry_gpu.c):
 * t is a full struct, already reset; sets the message on failure. */
gp_status_t gp__be_device_get_telemetry(int device, gp_telemetry_t *t, uint64_t *offered);

#ifdef __cplusplus
}
#endif

#endif /* GP_TELEMETRY_INTERNAL_H */
