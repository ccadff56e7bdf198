/*
 * selftest.c - `gpuport selftest`: runs every check (selftest_*.c) on the current
 * backend and device, one line each:
 *
 *   PASS|FAIL  name  error-summary  time_ms
 *
 * and exits non-zero when any check fails. The seed is printed; `--seed N` replays
 * the same data. Stands alone: no test framework, so it runs wherever the library does.
 */
#include "selftest.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const st_check_t *const tables[] = {st_runtime_checks, st_convert_checks,
                                           st_kernel_checks, st_gemm_checks,
                                           st_attention_checks, st_graph_checks,
                                           st_comm_checks};
#define NTABLES (sizeof(tables) / sizeof(tables[0]))

/* ---- helpers for the checks ------------------------------------------------------------ */

static void vset(st_ctx_t *c, const char *fmt, va_list ap) {
  vsnprintf(c->summary, sizeof c->summary, fmt, ap);
}

void st_fail(st_ctx_t *c, const char *fmt, ...) {
  if (c->failed) return;
  c->failed = true;
  va_list ap;
  va_start(ap, fmt);
  vset(c, fmt, ap);
  va_end(ap);
}

void st_note(st_ctx_t *c, const char *fmt, ...) {
  if (c->failed) return;
  va_list ap;
  va_start(ap, fmt);
  vset(c, fmt, ap);
  va_end(ap);
}

void st_inject(st_ctx_t *c, void *got, gp_dtype_t dtype, size_t n) {
  if (!c->inject || n == 0) return;
  c->injected = true;
  size_t i = n / 2;
  double v = gp_ref_load(got, dtype, i);
  gp_ref_store(got, dtype, i, isfinite(v) ? v + 1.0 + 0.5 * fabs(v) : 0.0);
}

bool st_compare(st_ctx_t *c, const char *what, void *got, gp_dtype_t dtype, const double *ref,
                const double *bound, double abs_bound, size_t n, double rel_tol) {
  st_inject(c, got, dtype, n);
  gp_ref_cmp_t r;
  gp_ref_compare(&r, got, dtype, ref, bound, abs_bound, n);
  char buf[480];
  gp_ref_cmp_format(&r, buf, sizeof buf);
  if (r.rel_norm_err > c->worst_rel) c->worst_rel = r.rel_norm_err;
  if (r.n_bad) {
    st_fail(c, "%s: %s", what, buf);
    return false;
  }
  if (rel_tol > 0 && !(r.rel_norm_err <= rel_tol)) {
    st_fail(c, "%s: %s exceeds rel_tol=%.3g", what, buf, rel_tol);
    return false;
  }
  st_note(c, "%s: %s", what, buf);
  return true;
}

bool st_compare_bytes(st_ctx_t *c, const char *what, unsigned char *got,
                      const unsigned char *ref, size_t n) {
  if (c->inject && n) {
    c->injected = true;
    got[n / 2] ^= 0x5a;
  }
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (got[i] != ref[i] && bad++ == 0) first = i;
  if (bad) {
    st_fail(c, "%s: %zu/%zu bytes differ, first at %zu (got 0x%02x want 0x%02x)", what, bad, n,
            first, got[first], ref[first]);
    return false;
  }
  st_note(c, "%s: %zu bytes exact", what, n);
  return true;
}

bool st_expect_status(st_ctx_t *c, const char *what, gp_status_t got, gp_status_t want) {
  if (c->inject) {
    c->injected = true;
    got = got == want ? GP_ERROR_INTERNAL : got;
  }
  if (got != want) {
    st_fail(c, "%s returned %s, expected %s (%s)", what, gp_status_name(got),
            gp_status_name(want), gp_last_error_message());
    return false;
  }
  return true;
}

void *st_random(st_ctx_t *c, gp_dtype_t dtype, size_t n, double lo, double hi) {
  void *p = malloc(n * gp_dtype_size(dtype) + 1);
  if (p) gp_ref_fill(p, dtype, n, &c->rng, lo, hi);
  return p;
}

/* ---- the driver ------------------------------------------------------------------------ */

uint64_t st_name_hash(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

/* --check NAME selects NAME and every check below it ("gemm" selects gemm.*). */
static bool selected(const char *name, const char *filter) {
  if (!filter) return true;
  size_t n = strlen(filter);
  return !strncmp(name, filter, n) && (name[n] == 0 || name[n] == '.');
}

static bool known_check(const char *name) {
  for (size_t t = 0; t < NTABLES; t++)
    for (const st_check_t *k = tables[t]; k->name; k++)
      if (!strcmp(k->name, name)) return true;
  return false;
}

int tool_selftest(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--hardware")) return tool_selftest_hardware(argc, argv);
    if (!strcmp(argv[i], "--kernels")) return tool_selftest_kernels(argc, argv);
  }
  bool json = false, quick = false, have_seed = false;
  uint64_t seed = 0;
  const char *filter = NULL;
  for (int i = 1; i < argc; i++) {
    if (tool_arg_u64(argc, argv, &i, "--seed", &seed))
      have_seed = true;
    else if (!strcmp(argv[i], "--json"))
      json = true;
    else if (!strcmp(argv[i], "--quick"))
      quick = true;
    else if (!strcmp(argv[i], "--check") && i + 1 < argc)
      filter = argv[++i];
    else
      return tool_bad_arg("selftest", argv[i]);
  }
  if (!have_seed) seed = gp_ref_default_seed();
  const char *inject = getenv("GP_SELFTEST_INJECT");
  if (inject && *inject && !known_check(inject)) {
    fprintf(stderr, "gpuport selftest: GP_SELFTEST_INJECT=%s names no check\n", inject);
    return 2;
  }

  int count = 0, dev = 0, passed = 0, failed = 0;
  gp_device_props_t props;
  gp_device_props_init(&props);
  gp_status_t s = gp_device_count(&count);
  if (s == GP_SUCCESS && count > 0) s = gp_device_get(&dev);
  if (s == GP_SUCCESS && count > 0) s = gp_device_get_props(&props, dev);
  if (s != GP_SUCCESS || count == 0) {
    fprintf(stderr, "gpuport selftest: no usable %s device: %s: %s\n", gp_backend_name(),
            gp_status_name(s), gp_last_error_message());
    return 1;
  }
  if (json)
    printf("{\n  \"backend\": \"%s\", \"device\": %d, \"device_name\": ", gp_backend_name(), dev);
  else
    printf("gpuport selftest: backend %s, device %d (%s, %s), seed %llu%s\n", gp_backend_name(),
           dev, props.name, props.arch, (unsigned long long)seed, quick ? ", quick" : "");
  if (json) {
    tool_json_str(props.name);
    printf(", \"seed\": %llu, \"quick\": %s,\n  \"checks\": [", (unsigned long long)seed,
           quick ? "true" : "false");
  }
  fflush(stdout);

  double t_all = tool_now_ms();
  for (size_t t = 0; t < NTABLES; t++) {
    for (const st_check_t *k = tables[t]; k->name; k++) {
      if (!selected(k->name, filter)) continue;
      st_ctx_t c;
      memset(&c, 0, sizeof c);
      c.name = k->name;
      c.seed = seed ^ st_name_hash(k->name);
      gp_ref_rng_seed(&c.rng, c.seed);
      c.quick = quick;
      c.big = gp_backend() != GP_BACKEND_CPU && !quick;
      c.inject = inject && !strcmp(inject, k->name);
      double t0 = tool_now_ms();
      k->fn(&c, k->arg);
      double ms = tool_now_ms() - t0;
      /* A check must leave no pending asynchronous error behind (the wait reports it);
       * the failures a check provokes on purpose are the thread's last error: reset. */
      gp_status_t pend = gp_device_synchronize();
      (void)gp_get_last_error();
      if (pend != GP_SUCCESS)
        st_fail(&c, "pending asynchronous error after the check: %s: %s", gp_status_name(pend),
                gp_last_error_message());
      if (c.inject && !c.injected) st_fail(&c, "injection requested but not applied");
      if (c.injected) {
        size_t len = strlen(c.summary);
        snprintf(c.summary + len, sizeof c.summary - len, " [output corrupted by GP_SELFTEST_INJECT]");
      }
      c.failed ? failed++ : passed++;
      if (json) {
        printf("%s\n    {\"name\": \"%s\", \"pass\": %s, \"summary\": ", passed + failed > 1 ? "," : "",
               c.name, c.failed ? "false" : "true");
        tool_json_str(c.summary);
        printf(", \"time_ms\": %.3f}", ms);
      } else {
        printf("%s  %-30s  %s  %.1f ms\n", c.failed ? "FAIL" : "PASS", c.name, c.summary, ms);
      }
      fflush(stdout);
    }
  }
  double total = tool_now_ms() - t_all;
  if (json) {
    printf("\n  ],\n  \"passed\": %d, \"failed\": %d, \"time_ms\": %.1f\n}\n", passed, failed,
           total);
  } else {
    printf("%d passed, %d failed in %.1f s (seed %llu)\n", passed, failed, total / 1e3,
           (unsigned long long)seed);
    if (failed)
      printf("replay with: gpuport selftest --seed %llu%s\n", (unsigned long long)seed,
             quick ? " --quick" : "");
  }
  if (passed + failed == 0) {
    fprintf(stderr, "gpuport selftest: --check %s selects no check\n", filter ? filter : "");
    return 2;
  }
  return failed ? 1 : 0;
}
