/*
 * selftest_hardware.c - `gpuport selftest --hardware`: the lane probes of probe.h, one
 * line each,
 *
 *   PASS|FAIL|SKIP  name  detail  time_ms
 *
 * where a FAIL's detail names the first differing lane and register (got and want) and
 * how many differ, and a SKIP's says why the probe cannot run here. The probes run the
 * instructions the library's kernel families are written with: the sm_80 forms on the
 * cuda backend at compute capability 8.0 and above, the sm_90a forms at 9.0 (the only
 * capability their code is built for), the MFMA forms on the hip backend, and all three
 * through the emulation on the cpu backend. With --json, one JSON object per line (a
 * header, one per probe, a footer), so the output of an interrupted run still parses.
 * Exit status 1 when a probe fails, 2 on bad arguments.
 *
 * GP_SELFTEST_INJECT=<probe> makes that probe count its first register as differing:
 * it must then FAIL (a probe that cannot fail proves nothing).
 */
#include "probe.h"
#include "selftest.h"

#include <stdlib.h>
#include <string.h>

enum { FAM_SM80, FAM_SM90A, FAM_MFMA };
static const char *const fam_names[] = {"sm80", "sm90a", "mfma"};

typedef void (*hw_fn_t)(probe_res_t *r, uint64_t seed, int arg);

typedef struct hw_probe {
  const char *name;
  int fam;
  hw_fn_t fn;
  int arg;
} hw_probe_t;

/* ---- adapters: every probe as (result, seed, argument) ------------------------------- */
static void p_mma(probe_res_t *r, uint64_t s, int bf16) { probe_sm80_mma(r, s, bf16); }
static void p_tf32(probe_res_t *r, uint64_t s, int a) { (void)a, probe_sm80_mma_tf32(r, s); }
static void p_cvt(probe_res_t *r, uint64_t s, int a) { (void)s, (void)a, probe_sm80_cvt_tf32(r); }
static void p_ldm(probe_res_t *r, uint64_t s, int v) { probe_sm80_ldmatrix(r, s, v & 7, v >= 8); }
static void p_tile(probe_res_t *r, uint64_t s, int bf16) { probe_sm80_tile(r, s, bf16); }
static void p_cp(probe_res_t *r, uint64_t s, int a) { (void)a, probe_sm80_cp_async(r, s); }

/* The wgmma cases: every swizzle with each majorness of A and B (the case index i: swizzle
 * i / 4, MN-major A bit 1, MN-major B bit 0; f16 / bf16, N 8 / 64 and + C vary with it),
 * then mixed swizzles and k-slices inside a 128-byte row (as a GEMM walks a 64-wide K). */
static probe_wgmma_case_t wgmma_case(int i) {
  static const int sw[4] = {0, 32, 64, 128};
  if (i < 16) {
    probe_wgmma_case_t c = {sw[i / 4], sw[i / 4], (i >> 1) & 1, i & 1, i & 1, (i % 3) ? 64 : 8, 0, i % 2};
    return c;
  }
  static const probe_wgmma_case_t extra[4] = {
      {128, 0, 0, 1, 1, 64, 0, 1}, {32, 64, 1, 0, 0, 8, 0, 0}, {128, 128, 0, 0, 1, 64, 16, 0}, {128, 128, 0, 0, 0, 64, 48, 0}};
  return extra[i - 16];
}
static void p_wgmma(probe_res_t *r, uint64_t s, int i) {
  const probe_wgmma_case_t c = wgmma_case(i);
  probe_sm90a_wgmma(r, s, &c, NULL, NULL, NULL);
}
static void p_tma_load(probe_res_t *r, uint64_t s, int i) { (void)s, probe_sm90a_tma_load(r, i); }
static void p_tma_store(probe_res_t *r, uint64_t s, int i) { (void)s, probe_sm90a_tma_store(r, i); }
static void p_mbar(probe_res_t *r, uint64_t s, int i) {
  (void)s;
  if (i == 0) probe_sm90a_mbarrier_phases(r);
  else if (i == 1) probe_sm90a_mbarrier_tx(r);
  else probe_sm90a_mbarrier_ring(r);
}
static void p_mfma(probe_res_t *r, uint64_t s, int op) { probe_mfma_exact(r, s, op); }

static const hw_probe_t k_probes[] = {
    {"sm80.mma_m16n8k16_f16", FAM_SM80, p_mma, 0},
    {"sm80.mma_m16n8k16_bf16", FAM_SM80, p_mma, 1},
    {"sm80.mma_m16n8k8_tf32", FAM_SM80, p_tf32, 0},
    {"sm80.cvt_rna_tf32", FAM_SM80, p_cvt, 0},
    {"sm80.ldmatrix_x1", FAM_SM80, p_ldm, 1},
    {"sm80.ldmatrix_x2", FAM_SM80, p_ldm, 2},
    {"sm80.ldmatrix_x4", FAM_SM80, p_ldm, 4},
    {"sm80.ldmatrix_x1_trans", FAM_SM80, p_ldm, 9},
    {"sm80.ldmatrix_x2_trans", FAM_SM80, p_ldm, 10},
    {"sm80.ldmatrix_x4_trans", FAM_SM80, p_ldm, 12},
    {"sm80.tile_f16", FAM_SM80, p_tile, 0},
    {"sm80.tile_bf16", FAM_SM80, p_tile, 1},
    {"sm80.cp_async", FAM_SM80, p_cp, 0},
    {"sm90a.wgmma_sw0_kk", FAM_SM90A, p_wgmma, 0},
    {"sm90a.wgmma_sw0_km", FAM_SM90A, p_wgmma, 1},
    {"sm90a.wgmma_sw0_mk", FAM_SM90A, p_wgmma, 2},
    {"sm90a.wgmma_sw0_mm", FAM_SM90A, p_wgmma, 3},
    {"sm90a.wgmma_sw32_kk", FAM_SM90A, p_wgmma, 4},
    {"sm90a.wgmma_sw32_km", FAM_SM90A, p_wgmma, 5},
    {"sm90a.wgmma_sw32_mk", FAM_SM90A, p_wgmma, 6},
    {"sm90a.wgmma_sw32_mm", FAM_SM90A, p_wgmma, 7},
    {"sm90a.wgmma_sw64_kk", FAM_SM90A, p_wgmma, 8},
    {"sm90a.wgmma_sw64_km", FAM_SM90A, p_wgmma, 9},
    {"sm90a.wgmma_sw64_mk", FAM_SM90A, p_wgmma, 10},
    {"sm90a.wgmma_sw64_mm", FAM_SM90A, p_wgmma, 11},
    {"sm90a.wgmma_sw128_kk", FAM_SM90A, p_wgmma, 12},
    {"sm90a.wgmma_sw128_km", FAM_SM90A, p_wgmma, 13},
    {"sm90a.wgmma_sw128_mk", FAM_SM90A, p_wgmma, 14},
    {"sm90a.wgmma_sw128_mm", FAM_SM90A, p_wgmma, 15},
    {"sm90a.wgmma_mixed_sw128k_sw0m", FAM_SM90A, p_wgmma, 16},
    {"sm90a.wgmma_mixed_sw32m_sw64k", FAM_SM90A, p_wgmma, 17},
    {"sm90a.wgmma_kslice16", FAM_SM90A, p_wgmma, 18},
    {"sm90a.wgmma_kslice48", FAM_SM90A, p_wgmma, 19},
    {"sm90a.tma_load_2d_right_bottom", FAM_SM90A, p_tma_load, 0},
    {"sm90a.tma_load_2d_left_top", FAM_SM90A, p_tma_load, 1},
    {"sm90a.tma_load_2d_noswizzle", FAM_SM90A, p_tma_load, 2},
    {"sm90a.tma_load_3d_past_end", FAM_SM90A, p_tma_load, 3},
    {"sm90a.tma_load_3d_wide_box", FAM_SM90A, p_tma_load, 4},
    {"sm90a.tma_store_2d_right_bottom", FAM_SM90A, p_tma_store, 0},
    {"sm90a.tma_store_2d_left_top", FAM_SM90A, p_tma_store, 1},
    {"sm90a.tma_store_2d_noswizzle", FAM_SM90A, p_tma_store, 2},
    {"sm90a.tma_store_3d_past_end", FAM_SM90A, p_tma_store, 3},
    {"sm90a.tma_store_3d_wide_box", FAM_SM90A, p_tma_store, 4},
    {"sm90a.mbarrier_phases", FAM_SM90A, p_mbar, 0},
    {"sm90a.mbarrier_tx", FAM_SM90A, p_mbar, 1},
    {"sm90a.mbarrier_ring", FAM_SM90A, p_mbar, 2},
    {"mfma.f32_32x32x8bf16_1k", FAM_MFMA, p_mfma, 0},
    {"mfma.f32_16x16x16bf16_1k", FAM_MFMA, p_mfma, 1},
    {"mfma.f32_32x32x8f16", FAM_MFMA, p_mfma, 2},
    {"mfma.f32_16x16x16f16", FAM_MFMA, p_mfma, 3},
    {"mfma.f32_32x32x2f32", FAM_MFMA, p_mfma, 4},
    {"mfma.f32_16x16x4f32", FAM_MFMA, p_mfma, 5},
    {"mfma.f32_32x32x8_bf16", FAM_MFMA, p_mfma, 6},
    {"mfma.f32_16x16x16_bf16", FAM_MFMA, p_mfma, 7},
    {"mfma.f32_32x32x8_f16", FAM_MFMA, p_mfma, 8},
    {"mfma.f32_16x16x16_f16", FAM_MFMA, p_mfma, 9},
    {"mfma.f32_32x32x2_f32", FAM_MFMA, p_mfma, 10},
    {"mfma.f32_16x16x4_f32", FAM_MFMA, p_mfma, 11},
};
#define N_PROBES ((int)(sizeof k_probes / sizeof k_probes[0]))

/* Whether family fam can run on this backend and device; why says why not. */
static bool family_runs(int fam, const gp_device_props_t *p, char *why, size_t len) {
  const bool avail = fam == FAM_SM80 ? probe_sm80_available : fam == FAM_SM90A ? probe_sm90a_available
                                                                                : probe_mfma_available;
  const int major = p->compute_capability_major, minor = p->compute_capability_minor;
  if (!avail) {
    snprintf(why, len, "the %s library has no %s kernels", gp_backend_name(), fam_names[fam]);
    return false;
  }
  if (gp_backend() == GP_BACKEND_CPU) return true; /* the emulation */
  if (fam == FAM_SM80 && major < 8) {
    snprintf(why, len, "compute capability %d.%d: mma.sync m16n8k16, ldmatrix and cp.async need 8.0", major, minor);
    return false;
  }
  if (fam == FAM_SM90A && (major != 9 || minor != 0)) {
    snprintf(why, len, "compute capability %d.%d: the sm_90a code runs on 9.0 only", major, minor);
    return false;
  }
  if (fam == FAM_MFMA && strncmp(p->arch, "gfx90a", 6) != 0 && strncmp(p->arch, "gfx94", 5) != 0) {
    snprintf(why, len, "%s: the library's MFMA code is built for gfx90a and gfx94x", p->arch);
    return false;
  }
  return true;
}

static bool selected(const char *name, const char *filter) {
  if (!filter) return true;
  size_t n = strlen(filter);
  return !strncmp(name, filter, n) && (name[n] == 0 || name[n] == '.' || name[n] == '_');
}

static const char *status_word(probe_status_t s) { return s == PROBE_PASS ? "PASS" : s == PROBE_FAIL ? "FAIL" : "SKIP"; }

int tool_selftest_hardware(int argc, char **argv) {
  bool json = false, have_seed = false;
  uint64_t seed = 0;
  const char *filter = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--hardware")) continue;
    if (tool_arg_u64(argc, argv, &i, "--seed", &seed)) have_seed = true;
    else if (!strcmp(argv[i], "--json")) json = true;
    else if (!strcmp(argv[i], "--check") && i + 1 < argc) filter = argv[++i];
    else return tool_bad_arg("selftest --hardware", argv[i]);
  }
  if (!have_seed) seed = gp_ref_default_seed();
  const char *inject = getenv("GP_SELFTEST_INJECT");
  bool known = !inject || !*inject, any = false;
  for (int i = 0; i < N_PROBES; i++) {
    known = known || !strcmp(inject, k_probes[i].name);
    any = any || selected(k_probes[i].name, filter);
  }
  if (!known) {
    fprintf(stderr, "gpuport selftest --hardware: GP_SELFTEST_INJECT=%s names no probe\n", inject);
    return 2;
  }
  if (!any) {
    fprintf(stderr, "gpuport selftest --hardware: --check %s selects no probe\n", filter);
    return 2;
  }

  int count = 0, dev = 0;
  gp_device_props_t props;
  gp_device_props_init(&props);
  gp_status_t s = gp_device_count(&count);
  if (s == GP_SUCCESS && count > 0) s = gp_device_get(&dev);
  if (s == GP_SUCCESS && count > 0) s = gp_device_get_props(&props, dev);
  if (s != GP_SUCCESS || count == 0) {
    fprintf(stderr, "gpuport selftest --hardware: no usable %s device: %s: %s\n", gp_backend_name(),
            gp_status_name(s), gp_last_error_message());
    return 1;
  }
  if (json) {
    printf("{\"selftest\": \"hardware\", \"backend\": \"%s\", \"device\": ", gp_backend_name());
    tool_json_str(props.name);
    printf(", \"arch\": ");
    tool_json_str(props.arch);
    printf(", \"compute_capability\": \"%d.%d\", \"seed\": %llu}\n", props.compute_capability_major,
           props.compute_capability_minor, (unsigned long long)seed);
  } else {
    char cc[48] = "";
    if (gp_backend() != GP_BACKEND_CPU)
      snprintf(cc, sizeof cc, ", compute capability %d.%d", props.compute_capability_major,
               props.compute_capability_minor);
    printf("gpuport selftest --hardware: backend %s, device %d (%s, %s%s), seed %llu\n", gp_backend_name(), dev,
           props.name, props.arch, cc, (unsigned long long)seed);
  }
  fflush(stdout);

  int n[3] = {0, 0, 0};
  const double t_all = tool_now_ms();
  for (int i = 0; i < N_PROBES; i++) {
    const hw_probe_t *k = &k_probes[i];
    if (!selected(k->name, filter)) continue;
    probe_res_t r;
    char why[160];
    const double t0 = tool_now_ms();
    const bool inj = inject && !strcmp(inject, k->name);
    if (!family_runs(k->fam, &props, why, sizeof why)) {
      probe_begin(&r);
      probe_skip(&r, "%s", why);
    } else {
      probe_set_inject(inj);
      k->fn(&r, seed ^ st_name_hash(k->name), k->arg);
      probe_set_inject(false);
      gp_status_t pend = gp_device_synchronize(); /* reports a pending asynchronous error */
      (void)gp_get_last_error();                   /* failures provoked on purpose */
      if (pend != GP_SUCCESS && r.status != PROBE_FAIL) {
        r.status = PROBE_FAIL;
        snprintf(r.detail, sizeof r.detail, "pending asynchronous error after the probe: %s: %s",
                 gp_status_name(pend), gp_last_error_message());
      }
    }
    if (inj && r.status != PROBE_FAIL) {
      r.status = PROBE_FAIL;
      snprintf(r.detail, sizeof r.detail, "GP_SELFTEST_INJECT=%s: the probe did not run, nothing was corrupted", k->name);
    }
    const double ms = tool_now_ms() - t0;
    n[r.status]++;
    if (json) {
      printf("{\"probe\": \"%s\", \"family\": \"%s\", \"status\": \"%s\", \"detail\": ", k->name, fam_names[k->fam],
             r.status == PROBE_PASS ? "pass" : r.status == PROBE_FAIL ? "fail" : "skip");
      tool_json_str(r.detail);
      printf(", \"time_ms\": %.3f}\n", ms);
    } else {
      printf("%s  %-32s  %s  %.1f ms\n", status_word(r.status), k->name, r.detail, ms);
    }
    fflush(stdout);
  }
  const double total = tool_now_ms() - t_all;
  if (json)
    printf("{\"passed\": %d, \"failed\": %d, \"skipped\": %d, \"time_ms\": %.1f}\n", n[PROBE_PASS], n[PROBE_FAIL],
           n[PROBE_SKIP], total);
  else
    printf("%d passed, %d failed, %d skipped in %.1f s (seed %llu)\n", n[PROBE_PASS], n[PROBE_FAIL], n[PROBE_SKIP],
           total / 1e3, (unsigned long long)seed);
  return n[PROBE_FAIL] ? 1 : 0;
}
