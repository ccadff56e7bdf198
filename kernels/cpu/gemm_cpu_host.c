/*
 * gemm_cpu_host.c - the host family's entry of the GEMM table (src/gemm_table.c) on the
 * cpu backend: OpenBLAS through kernels/cpu/gemm_cpu.c, in stream order on the stream's
 * worker. Enabled by GP_CPU_GEMM=host (the default; "openblas" is its alias), packed
 * (always the f32 tiles converted in scratch), convert and sbgemm (how f16/bf16 inputs
 * are multiplied); takes every canonical problem.
 */
#include <stdio.h>

#include "dispatch.h"
#include "gemm.h"

static bool supports(const gp__gemm_params_t *p, gp__gemm_plan_t *plan, char *why, size_t why_len) {
  (void)why, (void)why_len; /* takes every problem */
  const gp__gemm_cpu_path_t path = gp__gemm_cpu_path(p, gp__cpu_mode(GP__OP_GEMM));
  plan->kernel = NULL;
  plan->kernel_name = gp__gemm_cpu_kernel_name(p, path);
  plan->variant = (int)path;
  snprintf(plan->name, sizeof plan->name, "%s", plan->kernel_name);
  return true;
}

static gp_status_t launch(gp_stream_t stream, const gp__gemm_params_t *p, gp__gemm_plan_t *plan) {
  GP__STREAM_REF gp_stream_t resolved = NULL;
  GP__TRY(gp__stream_resolve(stream, "gp_gemm", &resolved));
  return gp__gemm_cpu_enqueue(resolved, p, (gp__gemm_cpu_path_t)plan->variant);
}

const gp__gemm_impl_t gp__gemm_impl_host = {"host", GP__FAMILY_HOST, supports, launch};
