/*
 * probe.c - what every lane probe (probe.h) shares: the outcome's bookkeeping (the
 * first difference is kept, every difference counted), checked uploads and launches.
 */
#include "probe.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool g_inject;

void probe_set_inject(bool on) { g_inject = on; }

void probe_begin(probe_res_t *r) {
  memset(r, 0, sizeof *r);
  r->status = PROBE_PASS;
}

void probe_check(probe_res_t *r, bool ok, const char *fmt, ...) {
  const bool injected = g_inject && r->checked == 0;
  r->checked++;
  if (ok && !injected) return;
  if (r->bad++ == 0 && r->status != PROBE_FAIL) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof r->detail, fmt, ap);
    va_end(ap);
    if (injected) {
      size_t n = strlen(r->detail);
      snprintf(r->detail + n, sizeof r->detail - n, " [counted as differing: GP_SELFTEST_INJECT]");
    }
  }
  r->status = PROBE_FAIL;
}

void probe_error(probe_res_t *r, const char *what, gp_status_t s) {
  if (r->status == PROBE_FAIL) return; /* the first failure explains the rest */
  r->status = PROBE_FAIL;
  snprintf(r->detail, sizeof r->detail, "%s: %s: %s", what, gp_status_name(s), gp_last_error_message());
}

void probe_finish(probe_res_t *r, const char *fmt, ...) {
  if (r->status == PROBE_FAIL) {
    if (r->bad > 0) {
      size_t n = strlen(r->detail);
      snprintf(r->detail + n, sizeof r->detail - n, " (%ld of %ld differ)", r->bad, r->checked);
    }
    return;
  }
  if (r->status == PROBE_SKIP) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->detail, sizeof r->detail, fmt, ap);
  va_end(ap);
}

void probe_skip(probe_res_t *r, const char *fmt, ...) {
  r->status = PROBE_SKIP;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->detail, sizeof r->detail, fmt, ap);
  va_end(ap);
}

void *probe_upload(probe_res_t *r, const void *host, size_t bytes) {
  void *d = NULL;
  gp_status_t s = gp_malloc(&d, bytes);
  if (s != GP_SUCCESS) {
    probe_error(r, "gp_malloc", s);
    return NULL;
  }
  s = gp_memcpy(d, host, bytes);
  if (s != GP_SUCCESS) {
    probe_error(r, "gp_memcpy", s);
    gp_free(d);
    return NULL;
  }
  return d;
}

bool probe_launch(probe_res_t *r, gp_kernel_t k, unsigned threads, size_t smem, void **args) {
  gp_status_t s = GP_SUCCESS;
  if (smem > 48 * 1024) s = gp_kernel_set_max_dynamic_shared(k, smem);
  if (s == GP_SUCCESS) s = gp_launch(k, gp_dim3(1, 1, 1), gp_dim3(threads, 1, 1), smem, NULL, args);
  if (s == GP_SUCCESS) s = gp_device_synchronize();
  if (s != GP_SUCCESS) {
    char what[96];
    snprintf(what, sizeof what, "launch of %s", k->name);
    probe_error(r, what, s);
    return false;
  }
  return true;
}

uint16_t probe_b16(int bf16, int v) {
  return bf16 ? gp_bf16_from_f32((float)v).bits : gp_f16_from_f32((float)v).bits;
}
