/*
 * selftest_kernels.c - `gpuport selftest --kernels`: every dispatched kernel family at
 * the shapes the emulation suites use (test_gemm, test_attention, test_attention_bwd):
 * GEMM per input type and transpose pair (16-byte aligned rows, so cp.async and TMA
 * apply), TF32, unaligned rows, an epilogue, a broadcast batch; attention forward and
 * backward per head_dim (32, 64, 96, 128, 256), causal with seqlen_q above and below
 * seqlen_k, GQA and MQA, sliding windows, varlen, deterministic, and the cases no
 * matrix-core kernel takes (f32, head_dim_v != head_dim); attention over a paged KV
 * cache (gp_attention_fwd_kvcache: shuffled block table, NaN in every unwritten slot,
 * appends through k_new / v_new; decode gqa32/8 d128 page 16 with cache lengths 1, 15,
 * 16, 17, a 4097-token mqa decode in 4 splits, a prefill crossing pages in 2 splits, a
 * window at page 32, and f32, which only the portable kernels take), o, lse and the
 * cache after the append (bytes) checked. Each against the float64 reference with the
 * element-wise bound and the relative norm (selftest_gemm.c, selftest_attention.c,
 * selftest_kvcache.c), one line each:
 *
 *   PASS|FAIL  name  [mode]  kernels  summary  time_ms
 *
 * naming the kernels the library chose (kernel_name.c: op:name for gemm, fwd, bwd,
 * kvcache). In a mode that names a kernel family, a case that family takes must have
 * run one of its kernels (a FAIL otherwise): the line proves which code was checked.
 * For kvcache, sm_90a has no kernel of its own: its mode expects the sm_80 kernel.
 *
 * Modes. cpu backend: every emulation mode, each in a process of its own (the library
 * reads GP_CPU_GEMM once): host (OpenBLAS and the tiled host attention), portable,
 * sm80, sm90a, mfma (GP_CPU_GEMM / GP_CPU_ATTENTION). cuda: the library's choice; with
 * GP_ENABLE_SM90A=1 on compute capability 9.0, mode sm90a (the gate on) then sm80
 * (GP_ENABLE_SM90A=0) on the same inputs (the same seed). hip: the library's choice.
 * Each mode runs in a process of its own (this program again, with --mode M), which is
 * also how one mode is replayed. --quick: a few cases per family (for
 * compute-sanitizer). --json: one JSON object per line. Exit status 1 when a check or a
 * mode fails, 2 on bad arguments.
 */
#include "selftest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { K_GEMM, K_FWD, K_BWD, K_KV };

typedef struct kcase {
  const char *name;
  int kind;
  bool quick; /* also in --quick */
  bool tma;   /* gemm: operands TMA can address, so the sm_90a kernels take it */
  st_gemm_case_t g;
  st_attn_case_t a;
  bool det; /* backward: deterministic */
  st_kv_case_t kv; /* K_KV: the paged call */
} kcase_t;

#define ROW GP_ROW_MAJOR
#define COL GP_COL_MAJOR
#define N_ GP_OP_N
#define T_ GP_OP_T
#define NOEPI GP_EPILOGUE_NONE, GP_F32
/* GEMM per type and transpose pair: 200 x 136 x 300 (m and n edges inside a tile, 5
 * k-steps of 64 and a partial one), leading dimensions rounded to 8 elements. */
#define GEMM(nm, lay, ta, tb, in, out, beta, q)                                                           \
  {"gemm." nm, K_GEMM, q, in != GP_F32, {lay, ta, tb, 200, 136, 300, 0, in, out, 1.0f, beta, NOEPI, 1, false, \
                                        ST_API_EX, true, false}, {0}, false, {0}}
#define FWD(nm, q, ...) {"attention." nm, K_FWD, q, false, {0}, {__VA_ARGS__}, false, {0}}
#define BWD(nm, q, det, ...) {"attention." nm, K_BWD, q, false, {0}, {__VA_ARGS__}, det, {0}}
#define KV(nm, q, ...) {"kvcache." nm, K_KV, q, false, {0}, {0}, false, {__VA_ARGS__}}
#define NOWIN -1, -1

static const int32_t vq1[3] = {17, 64, 1}, vk1[3] = {40, 5, 33};
static const int32_t vq2[2] = {50, 13}, vk2[2] = {50, 100};
static const int32_t vq3[3] = {17, 1, 40}, vk3[3] = {17, 30, 64};

static const kcase_t k_cases[] = {
    GEMM("f32_nn", ROW, N_, N_, GP_F32, GP_F32, 0.0f, false),
    GEMM("f32_nt", COL, N_, T_, GP_F32, GP_F32, 0.5f, true),
    GEMM("f32_tn", ROW, T_, N_, GP_F32, GP_F32, 0.0f, false),
    GEMM("f32_tt", COL, T_, T_, GP_F32, GP_F32, 0.0f, false),
    GEMM("f16_nn", ROW, N_, N_, GP_F16, GP_F16, 0.0f, false),
    GEMM("f16_nt", COL, N_, T_, GP_F16, GP_F16, 0.5f, false),
    GEMM("f16_tn", ROW, T_, N_, GP_F16, GP_F16, 0.0f, true),
    GEMM("f16_tt", COL, T_, T_, GP_F16, GP_F16, 0.0f, false),
    GEMM("f16_f32_nn", COL, N_, N_, GP_F16, GP_F32, 0.0f, false),
    GEMM("f16_f32_nt", ROW, N_, T_, GP_F16, GP_F32, 0.5f, false),
    GEMM("f16_f32_tn", COL, T_, N_, GP_F16, GP_F32, 0.0f, false),
    GEMM("f16_f32_tt", ROW, T_, T_, GP_F16, GP_F32, 0.0f, false),
    GEMM("bf16_nn", ROW, N_, N_, GP_BF16, GP_BF16, 0.0f, true),
    GEMM("bf16_nt", COL, N_, T_, GP_BF16, GP_BF16, 0.5f, false),
    GEMM("bf16_tn", ROW, T_, N_, GP_BF16, GP_BF16, 0.0f, false),
    GEMM("bf16_tt", COL, T_, T_, GP_BF16, GP_BF16, 0.0f, false),
    GEMM("bf16_f32_nn", COL, N_, N_, GP_BF16, GP_F32, 0.0f, false),
    GEMM("bf16_f32_nt", ROW, N_, T_, GP_BF16, GP_F32, 0.5f, false),
    GEMM("bf16_f32_tn", COL, T_, N_, GP_BF16, GP_F32, 0.0f, false),
    GEMM("bf16_f32_tt", ROW, T_, T_, GP_BF16, GP_F32, 0.0f, true),
    /* f32 with GP_COMPUTE_TF32: the tf32 mma.sync path; edges inside a 4-float chunk */
    {"gemm.tf32", K_GEMM, true, false,
     {ROW, N_, T_, 141, 133, 83, 0, GP_F32, GP_F32, 1.0f, 0.0f, NOEPI, 1, false, ST_API_EX, true, true}, {0}, false, {0}},
    /* rows that allow no 16-byte copy: the sm_80 kernels' plain loads (TMA declines) */
    {"gemm.bf16_unaligned", K_GEMM, true, false,
     {ROW, N_, N_, 203, 141, 200, 3, GP_BF16, GP_BF16, 0.75f, 0.0f, NOEPI, 1, false, ST_API_GEMM, false, false},
     {0}, false, {0}},
    {"gemm.bf16_epilogue_gelu", K_GEMM, false, true,
     {COL, T_, N_, 130, 136, 200, 0, GP_BF16, GP_BF16, 1.0f, 0.0f, GP_EPILOGUE_BIAS_GELU_TANH, GP_F32, 1, false,
      ST_API_EX, true, false},
     {0}, false, {0}},
    {"gemm.f16_batched_broadcast", K_GEMM, false, true,
     {ROW, N_, N_, 70, 24, 80, 0, GP_F16, GP_F32, 1.0f, 0.25f, NOEPI, 3, true, ST_API_BATCHED, true, false},
     {0}, false, {0}},
    /*   name                          quick dtype    b  sq   sk  hq hkv  d   dv c  wl  wr scale lse lens */
    FWD("fwd_f16_d32_causal_sq_gt_sk", false, GP_F16, 2, 64, 33, 2, 1, 32, 0, 1, -1, -1, 0.0f, true, NULL, NULL),
    FWD("fwd_f16_d64_gqa_causal", true, GP_F16, 2, 113, 203, 4, 2, 64, 0, 1, -1, -1, 0.0f, true, NULL, NULL),
    FWD("fwd_bf16_d96_gqa_causal", false, GP_BF16, 2, 100, 150, 4, 2, 96, 0, 1, -1, -1, 0.0f, true, NULL, NULL),
    FWD("fwd_bf16_d128_mqa_causal", false, GP_BF16, 1, 128, 217, 4, 1, 128, 0, 1, -1, -1, 0.0f, true, NULL, NULL),
    FWD("fwd_f16_d128_window", false, GP_F16, 2, 70, 150, 2, 2, 128, 0, 0, 20, 5, 0.0f, true, NULL, NULL),
    FWD("fwd_f16_d256_window", false, GP_F16, 1, 64, 97, 2, 1, 256, 0, 0, 16, 8, 0.0f, true, NULL, NULL),
    FWD("fwd_bf16_d32_gqa_window", false, GP_BF16, 1, 150, 300, 4, 2, 32, 0, 0, 40, 30, 0.0f, true, NULL, NULL),
    FWD("fwd_f16_d64_varlen_causal", false, GP_F16, 3, 0, 0, 2, 1, 64, 0, 1, -1, -1, 0.0f, true, vq1, vk1),
    FWD("fwd_bf16_d128_varlen_gqa_window", true, GP_BF16, 2, 0, 0, 4, 2, 128, 0, 0, 8, 8, 0.0f, true, vq2, vk2),
    FWD("fwd_f32_d64", false, GP_F32, 2, 113, 203, 4, 4, 64, 0, 0, -1, -1, 0.0f, true, NULL, NULL),
    FWD("fwd_bf16_d80_dimv48_window", false, GP_BF16, 1, 33, 47, 4, 2, 80, 48, 0, 8, 4, 0.0f, false, NULL, NULL),
    BWD("bwd_f16_d32_causal_window", false, false, GP_F16, 2, 45, 37, 6, 2, 32, 0, 1, 12, -1, 0.0f, true, NULL, NULL),
    BWD("bwd_f16_d64_gqa_causal_window", true, false, GP_F16, 2, 45, 37, 6, 2, 64, 0, 1, 12, -1, 0.0f, true, NULL,
        NULL),
    BWD("bwd_bf16_d96", false, false, GP_BF16, 1, 70, 90, 4, 2, 96, 0, 0, -1, -1, 0.0f, true, NULL, NULL),
    BWD("bwd_bf16_d128_gqa_causal", true, false, GP_BF16, 1, 128, 128, 8, 2, 128, 0, 1, -1, -1, 0.0f, true, NULL,
        NULL),
    BWD("bwd_f16_d256_window", false, false, GP_F16, 1, 64, 97, 2, 1, 256, 0, 0, 16, 8, 0.0f, true, NULL, NULL),
    BWD("bwd_f16_d64_varlen_causal", false, false, GP_F16, 3, 0, 0, 4, 2, 64, 0, 1, -1, -1, 0.0f, true, vq3, vk3),
    BWD("bwd_bf16_d128_deterministic", false, true, GP_BF16, 1, 70, 90, 4, 1, 128, 0, 0, -1, -1, 0.3f, true, NULL,
        NULL),
    BWD("bwd_f32_d64_window", false, false, GP_F32, 1, 48, 80, 4, 4, 64, 0, 1, 16, -1, 0.3f, true, NULL, NULL),
    /* paged KV cache (gp_attention_fwd_kvcache), as test_attention_kvcache.c builds it */
    /*  name                          quick dtype    b  sq hq hkv  d  page cache_seqlens       new c window splits */
    KV("decode_f16_gqa_d128_p16_append", true, GP_F16, 4, 1, 32, 8, 128, 16, {1, 15, 16, 17}, 1, 1, NOWIN, 0),
    KV("decode_bf16_mqa_d64_long_4splits", false, GP_BF16, 2, 1, 8, 1, 64, 16, {4097, 33}, 0, 1, NOWIN, 4),
    KV("prefill_f16_d64_p16_cross_page_2splits", true, GP_F16, 3, 40, 4, 2, 64, 16, {0, 23, 100}, 40, 1, NOWIN, 2),
    KV("bf16_d128_p32_window", false, GP_BF16, 2, 24, 8, 2, 128, 32, {70, 9}, 24, 1, 40, 0, 3),
    KV("f32_d96_p64_mixed_7splits", false, GP_F32, 4, 1, 2, 2, 96, 64, {1, 700, 63, 64}, 1, 1, NOWIN, 7),
};
#define N_CASES ((int)(sizeof k_cases / sizeof k_cases[0]))

/* ---- modes ------------------------------------------------------------------------------ */

typedef struct kmode {
  const char *name;
  const char *family;    /* the family whose kernels a case it takes must run, or NULL */
  const char *env[2][2]; /* variables this mode sets */
} kmode_t;

static const kmode_t k_cpu_modes[] = {
    {"host", NULL, {{"GP_CPU_GEMM", "openblas"}, {"GP_CPU_ATTENTION", "host"}}},
    {"portable", "portable", {{"GP_CPU_GEMM", "portable"}, {"GP_CPU_ATTENTION", "portable"}}},
    {"sm80", "sm80", {{"GP_CPU_GEMM", "sm80"}, {"GP_CPU_ATTENTION", "sm80"}}},
    {"sm90a", "sm90a", {{"GP_CPU_GEMM", "sm90a"}, {"GP_CPU_ATTENTION", "sm90a"}}},
    {"mfma", "mfma", {{"GP_CPU_GEMM", "mfma"}, {"GP_CPU_ATTENTION", "mfma"}}},
};
static const kmode_t k_gate_modes[] = {
    {"sm90a", "sm90a", {{"GP_ENABLE_SM90A", "1"}, {NULL, NULL}}},
    {"sm80", "sm80", {{"GP_ENABLE_SM90A", "0"}, {NULL, NULL}}},
};
static const kmode_t k_cuda_mode = {"cuda", "sm80", {{NULL, NULL}, {NULL, NULL}}};
static const kmode_t k_cuda_old_mode = {"cuda", "portable", {{NULL, NULL}, {NULL, NULL}}};
static const kmode_t k_hip_mode = {"hip", "mfma", {{NULL, NULL}, {NULL, NULL}}};

/* The name fragment the kernel of call op (gemm, fwd, bwd) must contain in family fam for
 * case k, or NULL when no family is expected. */
static const char *expected(const char *fam, const char *op, const kcase_t *k) {
  if (!fam) return NULL;
  if (!strcmp(op, "gemm")) {
    const bool half = k->g.in == GP_F16 || k->g.in == GP_BF16;
    if (!strcmp(fam, "portable")) return "gp__gemm_portable";
    if (!strcmp(fam, "mfma")) return "_mfma_";
    if (!strcmp(fam, "sm90a") && half && k->tma) return "_sm90a_";
    return "_sm80_"; /* the sm_80 kernels take every GEMM, and what sm_90a declines */
  }
  if (!strcmp(op, "kvcache")) {
    /* the sm_80 kernel takes f16/bf16 with head_dim 32, 64, 96 or 128 and 16-byte aligned
     * rows (default strides: head_dim a multiple of 8); the MFMA kernel f16/bf16 with
     * head_dim 32, 64 or 128; sm_90a has no kvcache kernel (its mode runs sm_80's); the
     * portable kernels take everything (src/attention_table.c) */
    const st_kv_case_t *kv = &k->kv;
    const bool half = kv->dtype == GP_F16 || kv->dtype == GP_BF16;
    const bool sm80 = half && (kv->d == 32 || kv->d == 64 || kv->d == 96 || kv->d == 128) && kv->d % 8 == 0;
    const bool mfma = half && (kv->d == 32 || kv->d == 64 || kv->d == 128);
    const char *portable = "gp__attention_kvcache_fwd_portable";
    if (!strcmp(fam, "portable")) return portable;
    if (!strcmp(fam, "mfma")) return mfma ? "gp__attention_kvcache_fwd_mfma_" : portable;
    return sm80 ? "gp__attention_kvcache_fwd_sm80_" : portable;
  }
  const st_attn_case_t *a = &k->a;
  const int64_t d = a->d, dv = a->dv ? a->dv : a->d;
  const bool half = (a->dtype == GP_F16 || a->dtype == GP_BF16) && dv == d;
  const bool sm80 = half && (d == 32 || d == 64 || d == 96 || d == 128 || d == 256);
  const bool mfma = half && (d == 32 || d == 64 || d == 128);
  const bool fwd = !strcmp(op, "fwd");
  const char *portable = fwd ? "gp__attention_fwd_portable" : "gp__attention_bwd_portable_main";
  if (!strcmp(fam, "portable")) return portable;
  if (!strcmp(fam, "mfma")) return mfma ? "_mfma_" : portable;
  if (!strcmp(fam, "sm90a") && fwd && half && (d == 64 || d == 128)) return "_sm90a_";
  return sm80 ? "_sm80_" : portable;
}

/* Every "op:name" of list must contain its expected fragment; why names the first that
 * does not. */
static bool kernels_as_expected(const char *fam, const kcase_t *k, const char *list, char *why, size_t len) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *save = NULL, *it = strtok_r(buf, ", ", &save); it; it = strtok_r(NULL, ", ", &save)) {
    char *colon = strchr(it, ':');
    if (!colon) continue;
    *colon = 0;
    const char *want = expected(fam, it, k);
    if (want && !strstr(colon + 1, want)) {
      snprintf(why, len, "%s ran %s, where mode family %s runs a *%s* kernel", it, colon + 1, fam, want);
      return false;
    }
  }
  return true;
}

static bool selected(const char *name, const char *filter) {
  if (!filter) return true;
  size_t n = strlen(filter);
  return !strncmp(name, filter, n) && (name[n] == 0 || name[n] == '.' || name[n] == '_');
}

typedef struct kopts {
  bool json, quick;
  uint64_t seed;
  const char *filter, *mode;
} kopts_t;

/* ---- one mode, in this process ---------------------------------------------------------- */

static int run_mode(const kopts_t *o, const kmode_t *m) {
  char why[192] = "";
  /* before any library call: the mode's variables, then the log that names the kernels */
  for (int i = 0; i < 2; i++)
    if (m->env[i][0]) setenv(m->env[i][0], m->env[i][1], 1);
  const bool names = tool_kname_start(why, sizeof why);
  const char *inject = getenv("GP_SELFTEST_INJECT");
  int n_pass = 0, n_fail = 0;
  if (o->json) {
    printf("{\"mode\": \"%s\", \"family\": ", m->name);
    tool_json_str(m->family ? m->family : "");
    printf(", \"env\": ");
    char env[96] = "";
    for (int i = 0; i < 2; i++)
      if (m->env[i][0])
        snprintf(env + strlen(env), sizeof env - strlen(env), "%s%s=%s", env[0] ? " " : "", m->env[i][0], m->env[i][1]);
    tool_json_str(env);
    printf(", \"kernel_names\": %s}\n", names ? "true" : "false");
  } else {
    printf("-- mode %s", m->name);
    for (int i = 0; i < 2; i++)
      if (m->env[i][0]) printf(" %s=%s", m->env[i][0], m->env[i][1]);
    printf("%s%s\n", names ? "" : ": ", names ? "" : why);
  }
  fflush(stdout);
  const double t_all = tool_now_ms();
  for (int i = 0; i < N_CASES; i++) {
    const kcase_t *k = &k_cases[i];
    char full[96];
    snprintf(full, sizeof full, "kernels.%s", k->name);
    if (!(selected(full, o->filter) || selected(k->name, o->filter)) || (o->quick && !k->quick)) continue;
    st_ctx_t c;
    memset(&c, 0, sizeof c);
    c.name = full;
    c.seed = o->seed ^ st_name_hash(full); /* the same inputs in every mode */
    gp_ref_rng_seed(&c.rng, c.seed);
    c.quick = o->quick;
    c.inject = inject && !strcmp(inject, full);
    char kern[512];
    tool_kname_take(kern, sizeof kern); /* drop what earlier calls logged */
    const double t0 = tool_now_ms();
    if (k->kind == K_GEMM) st_gemm_run(&c, &k->g, 0);
    else if (k->kind == K_FWD) st_attn_fwd(&c, &k->a);
    else if (k->kind == K_KV) st_kv_fwd(&c, &k->kv);
    else st_attn_bwd(&c, &k->a, k->det);
    const double ms = tool_now_ms() - t0;
    tool_kname_take(kern, sizeof kern);
    gp_status_t pend = gp_device_synchronize(); /* reports a pending asynchronous error */
    (void)gp_get_last_error();                   /* failures provoked on purpose */
    if (pend != GP_SUCCESS)
      st_fail(&c, "pending asynchronous error after the check: %s: %s", gp_status_name(pend), gp_last_error_message());
    if (names && !kern[0]) st_fail(&c, "the library logged no kernel for the call");
    char kwhy[256];
    if (names && !kernels_as_expected(m->family, k, kern, kwhy, sizeof kwhy)) st_fail(&c, "%s", kwhy);
    if (c.inject && !c.injected) st_fail(&c, "injection requested but not applied");
    if (c.injected) {
      size_t len = strlen(c.summary);
      snprintf(c.summary + len, sizeof c.summary - len, " [output corrupted by GP_SELFTEST_INJECT]");
    }
    c.failed ? n_fail++ : n_pass++;
    if (o->json) {
      printf("{\"check\": \"%s\", \"mode\": \"%s\", \"status\": \"%s\", \"kernels\": ", full, m->name,
             c.failed ? "fail" : "pass");
      tool_json_str(kern);
      printf(", \"summary\": ");
      tool_json_str(c.summary);
      printf(", \"time_ms\": %.3f}\n", ms);
    } else {
      printf("%s  %-42s [%s]  %s  %s  %.1f ms\n", c.failed ? "FAIL" : "PASS", full, m->name, kern, c.summary, ms);
    }
    fflush(stdout);
  }
  const double total = tool_now_ms() - t_all;
  if (o->json)
    printf("{\"mode\": \"%s\", \"passed\": %d, \"failed\": %d, \"time_ms\": %.1f}\n", m->name, n_pass, n_fail, total);
  else
    printf("-- mode %s: %d passed, %d failed in %.1f s\n", m->name, n_pass, n_fail, total / 1e3);
  fflush(stdout);
  if (n_pass + n_fail == 0) {
    fprintf(stderr, "gpuport selftest --kernels: --check %s selects no check%s\n", o->filter ? o->filter : "",
            o->quick ? " in --quick" : "");
    return 2;
  }
  return n_fail ? 1 : 0;
}

/* ---- several modes, each in a process of its own ---------------------------------------- */

/* Runs this program again with --mode m (the rest of the options as given); its exit
 * status, or -1 when it could not run. */
static int run_child(const kopts_t *o, const kmode_t *m) {
  char exe[4096], seed[32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) exe[n] = 0;
  else snprintf(exe, sizeof exe, "%s", tool_argv0);
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
  char *argv[12];
  int a = 0;
  argv[a++] = (char *)tool_argv0;
  argv[a++] = (char *)"selftest";
  argv[a++] = (char *)"--kernels";
  argv[a++] = (char *)"--mode";
  argv[a++] = (char *)m->name;
  argv[a++] = (char *)"--seed";
  argv[a++] = seed;
  if (o->quick) argv[a++] = (char *)"--quick";
  if (o->json) argv[a++] = (char *)"--json";
  if (o->filter) argv[a++] = (char *)"--check", argv[a++] = (char *)o->filter;
  argv[a] = NULL;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    execv(exe, argv);
    fprintf(stderr, "gpuport selftest --kernels: cannot run %s: %s\n", exe, strerror(errno));
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static const kmode_t *find_mode(const kmode_t *list, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(list[i].name, name)) return &list[i];
  return NULL;
}

int tool_selftest_kernels(int argc, char **argv) {
  kopts_t o = {0};
  bool have_seed = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--kernels")) continue;
    if (tool_arg_u64(argc, argv, &i, "--seed", &o.seed)) have_seed = true;
    else if (!strcmp(argv[i], "--json")) o.json = true;
    else if (!strcmp(argv[i], "--quick")) o.quick = true;
    else if (!strcmp(argv[i], "--check") && i + 1 < argc) o.filter = argv[++i];
    else if (!strcmp(argv[i], "--mode") && i + 1 < argc) o.mode = argv[++i];
    else return tool_bad_arg("selftest --kernels", argv[i]);
  }
  if (!have_seed) o.seed = gp_ref_default_seed();
  const char *inject = getenv("GP_SELFTEST_INJECT");
  if (inject && *inject) {
    bool known = false;
    for (int i = 0; i < N_CASES; i++) {
      char full[96];
      snprintf(full, sizeof full, "kernels.%s", k_cases[i].name);
      known = known || !strcmp(full, inject);
    }
    if (!known) {
      fprintf(stderr, "gpuport selftest --kernels: GP_SELFTEST_INJECT=%s names no check\n", inject);
      return 2;
    }
  }

  /* --mode: one mode here, before the library is touched (its variables come first). */
  if (o.mode) {
    const kmode_t *m = NULL;
    if (gp_backend() == GP_BACKEND_CPU) m = find_mode(k_cpu_modes, 5, o.mode);
    else if (gp_backend() == GP_BACKEND_CUDA) {
      m = find_mode(k_gate_modes, 2, o.mode);
      if (!m && !strcmp(o.mode, "cuda")) m = &k_cuda_mode;
    } else if (!strcmp(o.mode, "hip")) {
      m = &k_hip_mode;
    }
    if (!m) {
      fprintf(stderr, "gpuport selftest --kernels: no mode '%s' on the %s backend (cpu: host, portable, sm80, "
                      "sm90a, mfma; cuda: cuda, sm90a, sm80; hip: hip)\n", o.mode, gp_backend_name());
      return 2;
    }
    return run_mode(&o, m);
  }

  int count = 0, dev = 0;
  gp_device_props_t props;
  gp_device_props_init(&props);
  gp_status_t s = gp_device_count(&count);
  if (s == GP_SUCCESS && count > 0) s = gp_device_get(&dev);
  if (s == GP_SUCCESS && count > 0) s = gp_device_get_props(&props, dev);
  if (s != GP_SUCCESS || count == 0) {
    fprintf(stderr, "gpuport selftest --kernels: no usable %s device: %s: %s\n", gp_backend_name(),
            gp_status_name(s), gp_last_error_message());
    return 1;
  }
  const kmode_t *modes = NULL;
  int nmodes = 1;
  const char *note = "";
  const char *gate = getenv("GP_ENABLE_SM90A");
  const bool gate_on = gate && !strcmp(gate, "1");
  if (gp_backend() == GP_BACKEND_CPU) {
    modes = k_cpu_modes, nmodes = 5;
  } else if (gp_backend() == GP_BACKEND_CUDA) {
    const bool hopper = props.compute_capability_major == 9 && props.compute_capability_minor == 0;
    if (gate_on && hopper) modes = k_gate_modes, nmodes = 2;
    else modes = props.compute_capability_major >= 8 ? &k_cuda_mode : &k_cuda_old_mode;
    if (gate_on && !hopper) note = " (GP_ENABLE_SM90A=1 ignored: the sm_90a kernels run on compute capability 9.0 only)";
  } else {
    modes = &k_hip_mode;
  }
  if (o.json) {
    printf("{\"selftest\": \"kernels\", \"backend\": \"%s\", \"device\": ", gp_backend_name());
    tool_json_str(props.name);
    printf(", \"arch\": ");
    tool_json_str(props.arch);
    printf(", \"seed\": %llu, \"quick\": %s, \"modes\": [", (unsigned long long)o.seed, o.quick ? "true" : "false");
    for (int i = 0; i < nmodes; i++) printf("%s\"%s\"", i ? ", " : "", modes[i].name);
    printf("]}\n");
  } else {
    printf("gpuport selftest --kernels: backend %s, device %d (%s, %s), seed %llu%s, modes", gp_backend_name(), dev,
           props.name, props.arch, (unsigned long long)o.seed, o.quick ? ", quick" : "");
    for (int i = 0; i < nmodes; i++) printf(" %s", modes[i].name);
    printf("%s\n", note);
  }
  fflush(stdout);

  /* Each mode in a fresh process: the library reads its mode variables and its log
   * settings once, and this process has used it already. */
  int failed = 0, worst = 0;
  char line[256] = "";
  for (int i = 0; i < nmodes; i++) {
    const int rc = run_child(&o, &modes[i]);
    if (rc != 0) failed++;
    if (rc != 0 && worst == 0) worst = rc == 2 ? 2 : 1;
    snprintf(line + strlen(line), sizeof line - strlen(line), "%s%s %s", i ? ", " : "", modes[i].name,
             rc == 0 ? "pass" : rc < 0 ? "not run" : rc == 1 ? "FAIL" : "error");
    if (rc > 1) snprintf(line + strlen(line), sizeof line - strlen(line), " (exit %d)", rc);
  }
  if (o.json) {
    printf("{\"modes_passed\": %d, \"modes_failed\": %d, \"summary\": ", nmodes - failed, failed);
    tool_json_str(line);
    printf("}\n");
  } else {
    printf("modes: %s (seed %llu)\n", line, (unsigned long long)o.seed);
    if (failed) printf("replay one mode with: gpuport selftest --kernels --mode M --seed %llu\n", (unsigned long long)o.seed);
  }
  return failed ? (worst ? worst : 1) : 0;
}
