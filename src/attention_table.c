/*
 * attention_table.c - the attention implementation tables, forward and backward: which
 * kernel families each backend has, in the order they are tried (src/dispatch.h says what
 * an entry is). The first family enabled here (the device, or on the cpu backend
 * GP_CPU_ATTENTION) whose supports() takes the checked call runs it:
 *
 *   forward
 *   cuda  sm90a     wgmma + TMA, f16/bf16, head_dim 64 and 128, K and V in one TMA map
 *                   (compute capability 9.0, gated by GP_ENABLE_SM90A=1)
 *         sm80      mma.sync, f16/bf16, head_dim 32, 64, 96, 128, 256, 16-byte aligned rows
 *                   (compute capability 8.0 and above)
 *         portable  the dialect kernel, every call
 *   hip   mfma      MFMA, f16/bf16, head_dim 32, 64, 128
 *         portable
 *   cpu   host      the tiled host implementation (GP_CPU_ATTENTION=host)
 *         sm90a     the cuda list, emulated (GP_CPU_ATTENTION=sm90a)
 *         sm80      (GP_CPU_ATTENTION=sm80 and sm90a)
 *         mfma      the hip list, emulated (GP_CPU_ATTENTION=mfma)
 *         portable  (every mode but host)
 *
 *   kvcache (gp_attention_fwd_kvcache: paged KV cache, split-KV)
 *   cuda  sm80      mma.sync split kernel between the portable append and combine kernels,
 *                   f16/bf16, head_dim 32, 64, 96, 128, 16-byte aligned rows
 *         portable  the dialect kernels (append, split, combine), every call
 *   hip   mfma      MFMA split kernel between the portable append and combine kernels,
 *                   f16/bf16, head_dim 32, 64 and 128
 *         portable
 *   cpu   host      the host implementation (GP_CPU_ATTENTION=host)
 *         sm80      (GP_CPU_ATTENTION=sm80 and sm90a)
 *         mfma      (GP_CPU_ATTENTION=mfma)
 *         portable  (every mode but host)
 *
 *   backward: the same without sm90a (no sm_90a backward kernel); the sm80 entry runs its
 *   main kernel between the portable preprocess and postprocess kernels.
 *
 * A new family is one folder under kernels/ with its attention_<family>_host.c (entries
 * gp__attn_fwd_impl_<family>, gp__attn_bwd_impl_<family>) and one row per table here.
 */
#include "dispatch.h"

static const gp__attn_fwd_impl_t *const k_fwd[] = {
#if defined(GP_BUILD_CPU)
    &gp__attn_fwd_impl_host,
#endif
#if defined(GP_BUILD_CUDA) || defined(GP_BUILD_CPU)
    &gp__attn_fwd_impl_sm90a,
    &gp__attn_fwd_impl_sm80,
#endif
#if defined(GP_BUILD_HIP) || defined(GP_BUILD_CPU)
    &gp__attn_fwd_impl_mfma,
#endif
    &gp__attn_fwd_impl_portable,
};

static const gp__attn_bwd_impl_t *const k_bwd[] = {
#if defined(GP_BUILD_CPU)
    &gp__attn_bwd_impl_host,
#endif
#if defined(GP_BUILD_CUDA) || defined(GP_BUILD_CPU)
    &gp__attn_bwd_impl_sm80,
#endif
#if defined(GP_BUILD_HIP) || defined(GP_BUILD_CPU)
    &gp__attn_bwd_impl_mfma,
#endif
    &gp__attn_bwd_impl_portable,
};

static const gp__attn_kv_impl_t *const k_kv[] = {
#if defined(GP_BUILD_CPU)
    &gp__attn_kv_impl_host,
#endif
#if defined(GP_BUILD_CUDA) || defined(GP_BUILD_CPU)
    &gp__attn_kv_impl_sm80,
#endif
#if defined(GP_BUILD_HIP) || defined(GP_BUILD_CPU)
    &gp__attn_kv_impl_mfma,
#endif
    &gp__attn_kv_impl_portable,
};

#define N_KV (sizeof k_kv / sizeof k_kv[0])
#define N_FWD (sizeof k_fwd / sizeof k_fwd[0])
#define N_BWD (sizeof k_bwd / sizeof k_bwd[0])

const gp__attn_fwd_impl_t *gp__attn_fwd_table_entry(size_t i) { return i < N_FWD ? k_fwd[i] : NULL; }
const gp__attn_bwd_impl_t *gp__attn_bwd_table_entry(size_t i) { return i < N_BWD ? k_bwd[i] : NULL; }
const gp__attn_kv_impl_t *gp__attn_kv_table_entry(size_t i) { return i < N_KV ? k_kv[i] : NULL; }

/* The walk over one table (entries of type T; the entry tables differ only in their
 * parameter types): the first eligible entry whose supports() takes p, with every earlier
 * entry's reason recorded. */
#define TABLE_WALK(T, table, n, d, p, plan)                                         \
  do {                                                                              \
    for (size_t i = 0; i < (n); i++) {                                              \
      const T *e = (table)[i];                                                      \
      char why[192] = "";                                                           \
      if (gp__dispatch_eligible((d), e->name, e->family, why, sizeof why) &&       \
          e->supports((p), (plan), why, sizeof why)) {                              \
        gp__dispatch_chose((d), (plan)->kernel_name);                               \
        return e;                                                                   \
      }                                                                             \
      gp__dispatch_declined((d), e->name, why);                                     \
    }                                                                               \
    return NULL;                                                                    \
  } while (0)

const gp__attn_fwd_impl_t *gp__attn_fwd_choose(gp__dispatch_t *d, const gp__attn_params_t *p,
                                               gp__attn_plan_t *plan) {
  TABLE_WALK(gp__attn_fwd_impl_t, k_fwd, N_FWD, d, p, plan);
}

const gp__attn_bwd_impl_t *gp__attn_bwd_choose(gp__dispatch_t *d, const gp__attn_bwd_params_t *p,
                                               gp__attn_plan_t *plan) {
  TABLE_WALK(gp__attn_bwd_impl_t, k_bwd, N_BWD, d, p, plan);
}

const gp__attn_kv_impl_t *gp__attn_kv_choose(gp__dispatch_t *d, const gp__attn_kv_params_t *p,
                                             gp__attn_plan_t *plan) {
  TABLE_WALK(gp__attn_kv_impl_t, k_kv, N_KV, d, p, plan);
}
