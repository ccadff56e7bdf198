/*
 * test_selftest.c - the `gpuport` program, run as a user would: `selftest --quick`
 * passes; for every check, GP_SELFTEST_INJECT=<check> makes exactly that check FAIL and
 * the program exit non-zero (so each check provably can fail); `--seed N` replays the
 * same data; bad commands exit 2; `selftest --hardware` passes and each of its probes
 * can fail; `selftest --kernels` names the kernel each check ran, and its paged-KV-cache
 * checks of --quick fail when injected.
 *
 * The program is found through GP_TOOL, else as bin/gpuport-<backend> relative to this
 * test binary (build/<backend>[-san]/test/test_selftest -> ../../../bin/). When it is
 * not there (the tool was not built), the suite is skipped. On a GPU build without a
 * device the "commands" case runs (the program answers without one), the rest is
 * skipped.
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpuport.h>
#include "check_util.h"

static char tool[PATH_MAX + 64];

static int find_tool(void) {
  const char *env = getenv("GP_TOOL");
  if (env && *env) {
    snprintf(tool, sizeof tool, "%s", env);
    return access(tool, X_OK) == 0;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 0;
  self[n] = 0;
  char *slash = strrchr(self, '/');
  if (!slash) return 0;
  *slash = 0;
  snprintf(tool, sizeof tool, "%s/../../../bin/gpuport-%s", self, gp_backend_name());
  return access(tool, X_OK) == 0;
}

/* Runs "env tool args" through the shell; returns the exit status, output in *out. */
static int run(const char *env, const char *args, char **out) {
  char cmd[PATH_MAX + 512];
  snprintf(cmd, sizeof cmd, "%s '%s' %s 2>&1", env ? env : "", tool, args);
  FILE *p = popen(cmd, "r");
  ck_assert_msg(p != NULL, "popen(%s) failed", cmd);
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  ck_assert_ptr_nonnull(buf);
  size_t got;
  while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += got;
    if (cap - len < 4096) {
      buf = realloc(buf, cap *= 2);
      ck_assert_ptr_nonnull(buf);
    }
  }
  buf[len] = 0;
  int st = pclose(p);
  *out = buf;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The line "PASS|FAIL  <name>  ..." of check name, or NULL. */
static const char *line_of(const char *out, const char *name) {
  size_t n = strlen(name);
  for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if ((!strncmp(l, "PASS  ", 6) || !strncmp(l, "FAIL  ", 6)) && !strncmp(l + 6, name, n) &&
        l[6 + n] == ' ')
      return l;
  }
  return NULL;
}

/* Check names from a --quick run's output (the second field of each result line). */
static int check_names(const char *out, char names[][64], int max) {
  int k = 0;
  for (const char *l = out; l && *l && k < max; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (strncmp(l, "PASS  ", 6) && strncmp(l, "FAIL  ", 6)) continue;
    sscanf(l + 6, "%63s", names[k]);
    k++;
  }
  return k;
}

START_TEST(quick_selftest_passes) {
  char *out;
  int rc = run(NULL, "selftest --quick --seed 1", &out);
  ck_assert_msg(rc == 0, "selftest --quick exited %d:\n%s", rc, out);
  ck_assert_msg(strstr(out, "seed 1") != NULL, "seed not printed:\n%s", out);
  ck_assert_msg(strstr(out, " 0 failed") != NULL, "no summary line:\n%s", out);
  free(out);
}
END_TEST

START_TEST(every_check_fails_when_injected) {
  char *out, names[128][64];
  run(NULL, "selftest --quick --seed 3", &out);
  int n = check_names(out, names, 128);
  free(out);
  ck_assert_msg(n >= 20, "only %d checks listed", n);
  for (int i = 0; i < n; i++) {
    char env[128], args[160];
    snprintf(env, sizeof env, "GP_SELFTEST_INJECT=%.63s", names[i]);
    snprintf(args, sizeof args, "selftest --quick --seed 3 --check %.63s", names[i]);
    int rc = run(env, args, &out);
    const char *l = line_of(out, names[i]);
    ck_assert_msg(rc == 1, "%s injected: exit %d, expected 1:\n%s", names[i], rc, out);
    ck_assert_msg(l && !strncmp(l, "FAIL  ", 6), "%s injected: no FAIL line:\n%s", names[i], out);
    free(out);
  }
}
END_TEST

/* The summary of check name in a run's output: the text between the name and the
 * time column (the last double space of the line). */
static char *summary_of(const char *out, const char *name) {
  const char *l = line_of(out, name);
  if (!l) return NULL;
  const char *end = strchr(l, '\n'), *t = NULL;
  if (!end) end = l + strlen(l);
  for (const char *q = l; q + 1 < end; q++)
    if (q[0] == ' ' && q[1] == ' ') t = q;
  return strndup(l, (size_t)((t ? t : end) - l));
}

/* The summaries carry data-dependent numbers (max_abs, rel_norm): equal seeds must
 * give equal summaries. */
START_TEST(seed_replays) {
  char *a, *b;
  const char *args = "selftest --quick --seed 987654321 --check gemm";
  ck_assert_int_eq(run(NULL, args, &a), 0);
  ck_assert_int_eq(run(NULL, args, &b), 0);
  ck_assert_msg(strstr(a, "seed 987654321") != NULL, "seed not printed:\n%s", a);
  const char *names[] = {"gemm.model_bf16", "gemm.f32", "gemm.bf16", "gemm.epilogue"};
  for (int i = 0; i < 4; i++) {
    char *sa = summary_of(a, names[i]), *sb = summary_of(b, names[i]);
    ck_assert_msg(sa && sb, "%s missing from the output", names[i]);
    ck_assert_str_eq(sa, sb);
    free(sa);
    free(sb);
  }
  free(a);
  free(b);
}
END_TEST

START_TEST(commands_and_exit_codes) {
  char *out;
  ck_assert_int_eq(run(NULL, "--help", &out), 0);
  ck_assert_ptr_nonnull(strstr(out, "selftest"));
  free(out);
  ck_assert_int_eq(run(NULL, "no-such-command", &out), 2);
  free(out);
  ck_assert_int_eq(run(NULL, "", &out), 2);
  free(out);
  ck_assert_int_eq(run(NULL, "selftest --no-such-option", &out), 2);
  free(out);
  ck_assert_int_eq(run("GP_SELFTEST_INJECT=no.such.check", "selftest --quick", &out), 2);
  free(out);
  ck_assert_int_eq(run(NULL, "version", &out), 0);
  ck_assert_ptr_nonnull(strstr(out, gp_backend_name()));
  free(out);
  /* info answers with or without a device */
  ck_assert_int_eq(run(NULL, "info", &out), 0);
  ck_assert_msg(strstr(out, have_device() ? "device 0" : "0 devices") != NULL, "%s", out);
  free(out);
  ck_assert_int_eq(run(NULL, "info --json", &out), 0);
  ck_assert_ptr_nonnull(strstr(out, "\"devices\""));
  free(out);
}
END_TEST

START_TEST(device_commands) {
  char *out;
  ck_assert_int_eq(run(NULL, "selftest --quick --json --check runtime", &out), 0);
  ck_assert_ptr_nonnull(strstr(out, "\"failed\": 0"));
  free(out);
  /* Shapes whose element counts overflow are refused with a message (the products
   * were signed overflows, wrapping to small sizes). */
  ck_assert_int_eq(run(NULL, "bench gemm --m 4611686018427387904 --n 4 --k 4", &out), 2);
  ck_assert_msg(strstr(out, "overflow") != NULL, "no message:\n%s", out);
  free(out);
  ck_assert_int_eq(run(NULL, "bench attention --batch 4294967296 --seqlen 4294967296", &out), 2);
  ck_assert_msg(strstr(out, "overflow") != NULL, "no message:\n%s", out);
  free(out);
}
END_TEST

/* `selftest --hardware`: every probe that runs here passes, and each fails (exit 1, a
 * FAIL line naming a lane) when GP_SELFTEST_INJECT names it. */
START_TEST(hardware_probes_pass_and_can_fail) {
  char *out, names[128][64];
  int rc = run(NULL, "selftest --hardware --seed 5", &out);
  ck_assert_msg(rc == 0, "selftest --hardware exited %d:\n%s", rc, out);
  ck_assert_msg(strstr(out, " 0 failed") != NULL, "no summary line:\n%s", out);
  int n = check_names(out, names, 128);
  free(out);
  /* the cpu backend runs every family through the emulation */
  ck_assert_msg(gp_backend() != GP_BACKEND_CPU || n >= 50, "only %d probes ran", n);
  for (int i = 0; i < n; i++) {
    char env[128], args[160];
    snprintf(env, sizeof env, "GP_SELFTEST_INJECT=%.63s", names[i]);
    snprintf(args, sizeof args, "selftest --hardware --seed 5 --check %.63s", names[i]);
    rc = run(env, args, &out);
    const char *l = line_of(out, names[i]);
    ck_assert_msg(rc == 1, "%s injected: exit %d, expected 1:\n%s", names[i], rc, out);
    ck_assert_msg(l && !strncmp(l, "FAIL  ", 6) && (strstr(l, "lane ") || strstr(l, "thread ") ||
                                                   strstr(l, "element") || strstr(l, "step ") ||
                                                   strstr(l, "item ") || strstr(l, "D[") ||
                                                   strstr(l, "before the copy")),
                  "%s injected: no FAIL line naming what differs:\n%s", names[i], out);
    free(out);
  }
  ck_assert_int_eq(run("GP_SELFTEST_INJECT=sm80.no_such_probe", "selftest --hardware", &out), 2);
  free(out);
  ck_assert_int_eq(run(NULL, "selftest --hardware --check no_such_family", &out), 2);
  free(out);
}
END_TEST

/* `selftest --kernels`: each line names the kernel that ran; in a family's mode the
 * cases it takes ran its kernels; an injected check fails. */
START_TEST(kernels_name_the_kernel) {
  char *out;
  const int cpu = gp_backend() == GP_BACKEND_CPU;
  const char *mode = cpu ? "sm90a" : gp_backend() == GP_BACKEND_CUDA ? "cuda" : "hip";
  char args[160];
  snprintf(args, sizeof args, "selftest --kernels --quick --seed 7 --mode %s", mode);
  int rc = run(NULL, args, &out);
  ck_assert_msg(rc == 0, "%s exited %d:\n%s", args, rc, out);
  char quick[128][64];
  const int n_quick = check_names(out, quick, 128);
  const char *l = line_of(out, "kernels.gemm.bf16_nn");
  ck_assert_msg(l != NULL, "no line for kernels.gemm.bf16_nn:\n%s", out);
  ck_assert_msg(strstr(l, "gemm:gp__gemm_") != NULL, "the line names no GEMM kernel: %.300s", l);
  if (cpu) {
    ck_assert_msg(strstr(l, "gemm:gp__gemm_sm90a_bf16_nn") != NULL, "sm90a mode ran another kernel: %.300s", l);
    l = line_of(out, "kernels.attention.bwd_bf16_d128_gqa_causal");
    ck_assert_msg(l && strstr(l, "fwd:gp__attention_fwd_sm90a_bf16_d128") && strstr(l, "bwd:gp__attention_bwd_sm80_"),
                  "attention kernels not named: %.300s", l ? l : out);
    /* sm_90a has no paged kernel: its mode checks the sm_80 one */
    l = line_of(out, "kernels.kvcache.decode_f16_gqa_d128_p16_append");
    ck_assert_msg(l && !strncmp(l, "PASS  ", 6) && strstr(l, "kvcache:gp__attention_kvcache_fwd_sm80_f16_d128"),
                  "kvcache kernel not named: %.300s", l ? l : out);
  }
  free(out);
  /* the paged checks of --quick (each names its kernel) fail when injected */
  int n_kv = 0;
  for (int i = 0; i < n_quick; i++) {
    if (strncmp(quick[i], "kernels.kvcache.", 16)) continue;
    n_kv++;
    char env[128];
    snprintf(env, sizeof env, "GP_SELFTEST_INJECT=%.63s", quick[i]);
    snprintf(args, sizeof args, "selftest --kernels --quick --seed 7 --mode %s --check %.63s", mode, quick[i] + 8);
    rc = run(env, args, &out);
    l = line_of(out, quick[i]);
    ck_assert_msg(rc == 1 && l && !strncmp(l, "FAIL  ", 6) && strstr(l, "kvcache:gp__") &&
                  strstr(l, "GP_SELFTEST_INJECT"), "%s injected: exit %d:\n%s", quick[i], rc, out);
    free(out);
  }
  ck_assert_msg(n_kv >= 2, "--quick runs %d paged checks", n_kv);
  snprintf(args, sizeof args, "selftest --kernels --quick --seed 7 --mode %s --check gemm.bf16_nn", mode);
  rc = run("GP_SELFTEST_INJECT=kernels.gemm.bf16_nn", args, &out);
  l = line_of(out, "kernels.gemm.bf16_nn");
  ck_assert_msg(rc == 1 && l && !strncmp(l, "FAIL  ", 6), "injected: exit %d:\n%s", rc, out);
  free(out);
  ck_assert_int_eq(run(NULL, "selftest --kernels --mode no_such_mode", &out), 2);
  free(out);
  ck_assert_int_eq(run("GP_SELFTEST_INJECT=kernels.no_such_check", "selftest --kernels --quick", &out), 2);
  free(out);
  /* --json: one object per line */
  snprintf(args, sizeof args, "selftest --kernels --quick --json --seed 7 --mode %s --check gemm.tf32", mode);
  ck_assert_int_eq(run(NULL, args, &out), 0);
  for (const char *p = out; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
    if (*p != '\n') ck_assert_msg(*p == '{', "a line is no JSON object:\n%s", out);
  ck_assert_ptr_nonnull(strstr(out, "\"check\": \"kernels.gemm.tf32\""));
  free(out);
}
END_TEST

static Suite *selftest_suite(void) {
  Suite *s = suite_create("selftest");
  TCase *tn = tcase_create("commands");
  tcase_set_timeout(tn, 60);
  case_runs_without_device(tn);
  tcase_add_test(tn, commands_and_exit_codes);
  suite_add_tcase(s, tn);
  TCase *tc = tcase_create("tool");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, device_commands);
  tcase_add_test(tc, seed_replays);
  tcase_add_test(tc, quick_selftest_passes);
  tcase_add_test(tc, every_check_fails_when_injected);
  tcase_add_test(tc, hardware_probes_pass_and_can_fail);
  tcase_add_test(tc, kernels_name_the_kernel);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  if (!find_tool())
    return skip_suite("test_selftest",
                      "%s not found (build it: make bin/gpuport-%s, or set GP_TOOL)",
                      tool[0] ? tool : "gpuport", gp_backend_name());
  return run_suite("test_selftest", selftest_suite());
}
