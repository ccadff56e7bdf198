/*
 * gemm_table.c - the GEMM implementation table: which kernel families each backend has,
 * in the order they are tried (src/dispatch.h says what an entry is). The first family
 * enabled here (the device, or on the cpu backend GP_CPU_GEMM) whose supports() takes the
 * canonical problem runs it:
 *
 *   cuda  sm90a     wgmma + TMA, f16/bf16 with 16-byte aligned rows (compute capability
 *                   9.0, gated by GP_ENABLE_SM90A=1)
 *         sm80      mma.sync f16/bf16/tf32, FFMA f32 (compute capability 8.0 and above)
 *         portable  the dialect kernel, every problem
 *   hip   mfma      MFMA, every problem
 *         portable
 *   cpu   host      OpenBLAS (GP_CPU_GEMM=host, packed)
 *         sm90a     the cuda list, emulated (GP_CPU_GEMM=sm90a)
 *         sm80      (GP_CPU_GEMM=sm80 and sm90a)
 *         mfma      the hip list, emulated (GP_CPU_GEMM=mfma)
 *         portable  (every mode but host and packed)
 *
 * A new family is one folder under kernels/ with its gemm_<family>_host.c (an entry
 * gp__gemm_impl_<family>) and one row here.
 */
#include "dispatch.h"

static const gp__gemm_impl_t *const k_table[] = {
#if defined(GP_BUILD_CPU)
    &gp__gemm_impl_host,
#endif
#if defined(GP_BUILD_CUDA) || defined(GP_BUILD_CPU)
    &gp__gemm_impl_sm90a,
    &gp__gemm_impl_sm80,
#endif
#if defined(GP_BUILD_HIP) || defined(GP_BUILD_CPU)
    &gp__gemm_impl_mfma,
#endif
    &gp__gemm_impl_portable,
};
#define N_ENTRIES (sizeof k_table / sizeof k_table[0])

const gp__gemm_impl_t *gp__gemm_table_entry(size_t i) { return i < N_ENTRIES ? k_table[i] : NULL; }

const gp__gemm_impl_t *gp__gemm_choose(gp__dispatch_t *d, const gp__gemm_params_t *p,
                                       gp__gemm_plan_t *plan) {
  for (size_t i = 0; i < N_ENTRIES; i++) {
    const gp__gemm_impl_t *e = k_table[i];
    char why[192] = "";
    plan->multiprocessors = d->multiprocessors;
    if (gp__dispatch_eligible(d, e->name, e->family, why, sizeof why) &&
        e->supports(p, plan, why, sizeof why)) {
      gp__dispatch_chose(d, plan->kernel_name);
      return e;
    }
    gp__dispatch_declined(d, e->name, why);
  }
  return NULL;
}
