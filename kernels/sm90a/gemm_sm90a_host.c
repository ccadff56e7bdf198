/*
 * gemm_sm90a_host.c - the sm_90a GEMM family's entry of the GEMM table (src/gemm_table.c):
 * when the kernels of kernels/sm90a/gemm_sm90a.cu run a canonical problem, their TMA
 * tensor maps, and their launch. Built for the backends that run the family: cuda
 * (compute capability 9.0 with GP_ENABLE_SM90A=1, the gate until a GPU run validates the
 * path: docs/PERFORMANCE.md; src/dispatch.c) and cpu (GP_CPU_GEMM=sm90a), so the choice
 * CI tests is the one the GPUs make. Taken: f16 or bf16 inputs (any output type and
 * epilogue), k > 0, and operands TMA can address: A and B 16-byte aligned, leading
 * dimensions and batch strides multiples of 8 elements, extents below 2^31. The sm_80
 * entry, next in the table, takes the rest.
 * The grid is persistent: one block per SM at most (3 on the cpu backend, so that each
 * block takes several tiles there too).
 */
#include <stdatomic.h>
#include <stdio.h>

#include "dispatch.h"
#include "kernels/sm90a/sm90a.h"

GP_KERNEL_DECLARE(gp__gemm_sm90a_f16_nn);
GP_KERNEL_DECLARE(gp__gemm_sm90a_f16_nt);
GP_KERNEL_DECLARE(gp__gemm_sm90a_f16_tn);
GP_KERNEL_DECLARE(gp__gemm_sm90a_f16_tt);
GP_KERNEL_DECLARE(gp__gemm_sm90a_bf16_nn);
GP_KERNEL_DECLARE(gp__gemm_sm90a_bf16_nt);
GP_KERNEL_DECLARE(gp__gemm_sm90a_bf16_tn);
GP_KERNEL_DECLARE(gp__gemm_sm90a_bf16_tt);

/* [bf16][trans_a][trans_b] */
static const struct gp_kernel_s *const k_ws[2][2][2] = {
    {{GP_KERNEL_REF(gp__gemm_sm90a_f16_nn), GP_KERNEL_REF(gp__gemm_sm90a_f16_nt)},
     {GP_KERNEL_REF(gp__gemm_sm90a_f16_tn), GP_KERNEL_REF(gp__gemm_sm90a_f16_tt)}},
    {{GP_KERNEL_REF(gp__gemm_sm90a_bf16_nn), GP_KERNEL_REF(gp__gemm_sm90a_bf16_nt)},
     {GP_KERNEL_REF(gp__gemm_sm90a_bf16_tn), GP_KERNEL_REF(gp__gemm_sm90a_bf16_tt)}}};

/* Devices (bit d) on which each kernel's shared-memory limit has been raised. */
static atomic_ullong g_raised[2][2][2];

/* Blocks of the persistent grid: one per SM of the device (plan->multiprocessors, which
 * the walk reads from the device), 3 on the cpu backend so that each block takes several
 * tiles there too. */
static int64_t persistent_blocks(const gp__gemm_plan_t *plan) {
  if (GP__BACKEND == GP_BACKEND_CPU) return 3;
  return plan->multiprocessors > 0 ? plan->multiprocessors : 1;
}

/* x, its leading dimension and batch stride (2-byte elements) suit TMA. */
static bool tma_ok(const void *x, int64_t ld, int64_t stride, int64_t batch) {
  return ((uintptr_t)x & 15u) == 0 && ld % 8 == 0 && ld < (1ll << 36) &&
         (batch == 1 || stride % 8 == 0);
}

/* The map of one operand: K-major (contiguous along k) boxes of 64 k x 128 rows, MN-major
 * boxes of 64 elements x 64 k; 128-byte swizzle; batch entries along dimension 2. */
static bool encode(gp_nv_tensor_map_t *tm, const void *base, int k_major, int64_t x, int64_t k, int64_t ld,
                   int64_t stride, int64_t batch, char *why, size_t why_len) {
  const bool batched = batch > 1 && stride != 0;
  uint64_t dims[3], strides[2];
  uint32_t box[3];
  dims[0] = (uint64_t)(k_major ? k : x);
  dims[1] = (uint64_t)(k_major ? x : k);
  dims[2] = batched ? (uint64_t)batch : 1;
  strides[0] = 2 * (uint64_t)ld;
  strides[1] = batched ? 2 * (uint64_t)stride : strides[0] * dims[1];
  box[0] = 64;
  box[1] = k_major ? 128 : 64;
  box[2] = 1;
  if (strides[1] % 16) strides[1] += 16 - strides[1] % 16; /* unused when not batched */
  return gp__nv_tensor_map_make(tm, 2, 3, base, dims, strides, box, GP_NV_SWIZZLE_128B, why, why_len) ==
         GP_SUCCESS;
}

static bool supports(const gp__gemm_params_t *p, gp__gemm_plan_t *plan, char *why, size_t why_len) {
  if (p->ab_type != GP_F16 && p->ab_type != GP_BF16) {
    snprintf(why, why_len, "f32 inputs (f16 or bf16)");
    return false;
  }
  const int64_t lim = 1ll << 31;
  if (p->k <= 0) {
    snprintf(why, why_len, "k = 0 (nothing for wgmma)");
    return false;
  }
  if (p->m >= lim || p->n >= lim || p->k >= lim || p->batch >= lim) {
    snprintf(why, why_len, "an extent of 2^31 or more");
    return false;
  }
  if (!tma_ok(p->a, p->lda, p->stride_a, p->batch) || !tma_ok(p->b, p->ldb, p->stride_b, p->batch)) {
    snprintf(why, why_len, "A or B not 16-byte aligned (pointer, leading dimension or batch stride) for TMA");
    return false;
  }
  const int bf16 = p->ab_type == GP_BF16, ta = p->trans_a != 0, tb = p->trans_b != 0;
  /* op(A) transposed: A is stored m rows of k (K-major); op(B) not transposed: likewise */
  char map_why[160] = "";
  if (!encode(&plan->map_a, p->a, ta, p->m, p->k, p->lda, p->stride_a, p->batch, map_why, sizeof map_why) ||
      !encode(&plan->map_b, p->b, !tb, p->n, p->k, p->ldb, p->stride_b, p->batch, map_why, sizeof map_why)) {
    snprintf(why, why_len, "no TMA map of A or B: %s", map_why);
    return false;
  }
  const int64_t tiles = ((p->m + GP__SM90_GEMM_BM - 1) / GP__SM90_GEMM_BM) *
                        ((p->n + GP__SM90_GEMM_BN - 1) / GP__SM90_GEMM_BN) * p->batch;
  const int64_t sms = persistent_blocks(plan);
  plan->kernel = k_ws[bf16][ta][tb];
  plan->kernel_name = plan->kernel->name;
  plan->block = gp_dim3(GP__SM90_GEMM_THREADS, 1, 1);
  plan->smem = GP__SM90_GEMM_SMEM;
  plan->grid = gp_dim3((unsigned)(tiles < sms ? tiles : sms), 1, 1);
  snprintf(plan->name, sizeof plan->name,
           "%s (wgmma m64n128k16 + TMA, %dx%dx%d tiles, %d-stage ring, warp-specialized, persistent grid of %u)",
           plan->kernel->name, GP__SM90_GEMM_BM, GP__SM90_GEMM_BN, GP__SM90_GEMM_BK, GP__SM90_GEMM_STAGES,
           plan->grid.x);
  return true;
}

static gp_status_t launch(gp_stream_t stream, const gp__gemm_params_t *p, gp__gemm_plan_t *plan) {
  const int dev = gp__current_device();
  atomic_ullong *done = &g_raised[p->ab_type == GP_BF16][p->trans_a != 0][p->trans_b != 0];
  const unsigned long long bit = dev < 64 ? 1ull << dev : 0ull;
  if (!bit || !(atomic_load_explicit(done, memory_order_acquire) & bit)) {
    GP__TRY(gp_kernel_set_max_dynamic_shared(plan->kernel, plan->smem));
    atomic_fetch_or_explicit(done, bit, memory_order_release);
  }
  gp__gemm_params_t params = *p;
  gp_nv_tensor_map_t ma = plan->map_a, mb = plan->map_b;
  void *args[3] = {&params, &ma, &mb};
  return gp_launch(plan->kernel, plan->grid, plan->block, plan->smem, stream, args);
}

const gp__gemm_impl_t gp__gemm_impl_sm90a = {"sm90a", GP__FAMILY_SM90A, supports, launch};
