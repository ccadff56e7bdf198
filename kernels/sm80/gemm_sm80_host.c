/*
 * gemm_sm80_host.c - the sm_80 GEMM family's entry of the GEMM table (src/gemm_table.c):
 * which kernel of kernels/sm80/gemm_sm80.cu runs a canonical problem, and its launch.
 * Built for the backends that run the family: cuda (devices of compute capability 8.0
 * and above, src/dispatch.c) and cpu (GP_CPU_GEMM=sm80 and sm90a, the same kernels built
 * for the CPU executor), so the choice CI tests is the one the GPUs make:
 *   f16, bf16 inputs  gp__gemm_sm80_{f16,bf16}_{nn,nt,tn,tt} (mma.sync), with 16-byte
 *                     cp.async when A and B, their leading dimensions and batch strides
 *                     are 16-byte aligned, else with plain loads into the same pipeline;
 *   f32 inputs        gp__gemm_sm80_f32 (FFMA; exact f32 products; 4-byte cp.async);
 *   f32 inputs, GP_COMPUTE_TF32
 *                     gp__gemm_sm80_tf32 (mma.sync m16n8k8 on tf32), with 16-byte
 *                     cp.async under the same alignment rule (4 floats), else 4-byte.
 * Every canonical problem is taken: the loads of every kernel need no more than the
 * element alignment src/gemm.c checks.
 */
#include <stdatomic.h>
#include <stdio.h>

#include "api.h"
#include "dispatch.h"
#include "kernels/sm80/sm80.h"

GP_KERNEL_DECLARE(gp__gemm_sm80_f16_nn);
GP_KERNEL_DECLARE(gp__gemm_sm80_f16_nt);
GP_KERNEL_DECLARE(gp__gemm_sm80_f16_tn);
GP_KERNEL_DECLARE(gp__gemm_sm80_f16_tt);
GP_KERNEL_DECLARE(gp__gemm_sm80_bf16_nn);
GP_KERNEL_DECLARE(gp__gemm_sm80_bf16_nt);
GP_KERNEL_DECLARE(gp__gemm_sm80_bf16_tn);
GP_KERNEL_DECLARE(gp__gemm_sm80_bf16_tt);
GP_KERNEL_DECLARE(gp__gemm_sm80_f32);
GP_KERNEL_DECLARE(gp__gemm_sm80_tf32);

/* [bf16][trans_a][trans_b] */
static const struct gp_kernel_s *const k_mma[2][2][2] = {
    {{GP_KERNEL_REF(gp__gemm_sm80_f16_nn), GP_KERNEL_REF(gp__gemm_sm80_f16_nt)},
     {GP_KERNEL_REF(gp__gemm_sm80_f16_tn), GP_KERNEL_REF(gp__gemm_sm80_f16_tt)}},
    {{GP_KERNEL_REF(gp__gemm_sm80_bf16_nn), GP_KERNEL_REF(gp__gemm_sm80_bf16_nt)},
     {GP_KERNEL_REF(gp__gemm_sm80_bf16_tn), GP_KERNEL_REF(gp__gemm_sm80_bf16_tt)}}};

/* Devices (bit d) on which each mma kernel's shared-memory limit has been raised: the
 * attribute is per device, and setting it on every call would cost a driver call. */
static atomic_ullong g_raised[2][2][2], g_raised_tf32;

/* The operand at x with leading dimension ld and batch stride s (elements of esize
 * bytes) can be read in 16-byte chunks from every row start. */
static bool aligned16(const void *x, int64_t ld, int64_t stride, int64_t batch, int esize) {
  const int64_t per = 16 / esize;
  return ((uintptr_t)x & 15u) == 0 && ld % per == 0 && (batch == 1 || stride % per == 0);
}

/* 1 when A and B can both be staged with 16-byte copies (or are not read). */
static int operands_vec(const gp__gemm_params_t *p, int esize) {
  return p->k == 0 || (aligned16(p->a, p->lda, p->stride_a, p->batch, esize) &&
                       aligned16(p->b, p->ldb, p->stride_b, p->batch, esize));
}

static int64_t tiles_of(const gp__gemm_params_t *p, int bm, int bn) {
  return ((p->m + bm - 1) / bm) * ((p->n + bn - 1) / bn);
}

static bool supports(const gp__gemm_params_t *p, gp__gemm_plan_t *plan, char *why, size_t why_len) {
  (void)why, (void)why_len; /* takes every problem */
  const int64_t grid_x_max = 0x7fffffffll, grid_z_max = 65535;
  const int ta = p->trans_a != 0, tb = p->trans_b != 0;
  int64_t tiles;
  if (p->ab_type == GP_F32 && p->allow_tf32) {
    tiles = tiles_of(p, GP__SM80_GEMM_BM, GP__SM80_GEMM_BN);
    plan->kernel = GP_KERNEL_REF(gp__gemm_sm80_tf32);
    plan->block = gp_dim3(GP__SM80_GEMM_THREADS, 1, 1);
    plan->smem = (size_t)GP__SM80_TGEMM_SMEM(ta, tb);
    plan->variant = operands_vec(p, 4);
    snprintf(plan->name, sizeof plan->name,
             "%s (mma.sync m16n8k8 tf32, %dx%dx%d tiles, %d-stage pipeline, %s)", plan->kernel->name,
             GP__SM80_GEMM_BM, GP__SM80_GEMM_BN, GP__SM80_TGEMM_BK, GP__SM80_TGEMM_STAGES,
             plan->variant ? "16-byte cp.async" : "4-byte cp.async: A or B not 16-byte aligned");
  } else if (p->ab_type == GP_F32) {
    tiles = tiles_of(p, GP__SM80_SGEMM_BM, GP__SM80_SGEMM_BN);
    plan->kernel = GP_KERNEL_REF(gp__gemm_sm80_f32);
    plan->block = gp_dim3(GP__SM80_SGEMM_THREADS, 1, 1);
    plan->smem = GP__SM80_SGEMM_SMEM;
    plan->variant = -1;
    snprintf(plan->name, sizeof plan->name, "%s (FFMA, %dx%dx%d tiles, %d-stage cp.async)",
             plan->kernel->name, GP__SM80_SGEMM_BM, GP__SM80_SGEMM_BN, GP__SM80_SGEMM_BK,
             GP__SM80_SGEMM_STAGES);
  } else {
    tiles = tiles_of(p, GP__SM80_GEMM_BM, GP__SM80_GEMM_BN);
    plan->kernel = k_mma[p->ab_type == GP_BF16][ta][tb];
    plan->block = gp_dim3(GP__SM80_GEMM_THREADS, 1, 1);
    plan->smem = (size_t)GP__SM80_GEMM_SMEM(ta, tb);
    plan->variant = operands_vec(p, 2);
    snprintf(plan->name, sizeof plan->name,
             "%s (mma.sync m16n8k16, %dx%dx%d tiles, %d-stage pipeline, %s)", plan->kernel->name,
             GP__SM80_GEMM_BM, GP__SM80_GEMM_BN, GP__SM80_GEMM_BK, GP__SM80_GEMM_STAGES,
             plan->variant ? "16-byte cp.async" : "plain loads: A or B not 16-byte aligned");
  }
  plan->kernel_name = plan->kernel->name;
  plan->grid = gp_dim3((unsigned)(tiles < grid_x_max ? tiles : grid_x_max), 1,
                       (unsigned)(p->batch < grid_z_max ? p->batch : grid_z_max));
  return true;
}

/* Raises the kernel's dynamic shared-memory limit on the current device, once. */
static gp_status_t raise_smem(const gp__gemm_params_t *p, const gp__gemm_plan_t *plan) {
  if (plan->variant < 0) return GP_SUCCESS; /* the f32 kernel fits the default 48 KiB */
  const int dev = gp__current_device();
  /* One tf32 kernel serves every transpose pair: its limit is raised to the largest
   * stage layout (op T for A, op N for B), so no pair can lower it below another's. */
  const bool tf32 = p->ab_type == GP_F32;
  atomic_ullong *done = tf32 ? &g_raised_tf32
                             : &g_raised[p->ab_type == GP_BF16][p->trans_a != 0][p->trans_b != 0];
  const size_t limit = tf32 ? (size_t)GP__SM80_TGEMM_SMEM(1, 0) : plan->smem;
  const unsigned long long bit = dev < 64 ? 1ull << dev : 0ull;
  if (bit && (atomic_load_explicit(done, memory_order_acquire) & bit)) return GP_SUCCESS;
  GP__TRY(gp_kernel_set_max_dynamic_shared(plan->kernel, limit));
  atomic_fetch_or_explicit(done, bit, memory_order_release);
  return GP_SUCCESS;
}

static gp_status_t launch(gp_stream_t stream, const gp__gemm_params_t *p, gp__gemm_plan_t *plan) {
  GP__TRY(raise_smem(p, plan));
  gp__gemm_params_t params = *p;
  int vec = plan->variant > 0;
  void *args_mma[2] = {&params, &vec}, *args_f32[1] = {&params};
  return gp_launch(plan->kernel, plan->grid, plan->block, plan->smem, stream,
                   plan->variant < 0 ? args_f32 : args_mma);
}

const gp__gemm_impl_t gp__gemm_impl_sm80 = {"sm80", GP__FAMILY_SM80, supports, launch};
