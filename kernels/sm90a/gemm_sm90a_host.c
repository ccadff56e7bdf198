/*
 * gemm_sm90a_host.c - when the sm_90a GEMM kernels (kernels/sm90a/gemm_sm90a.cu) run a canonical problem,
 * their TMA tensor maps, and their launch. The choice is made here once, for the cuda
 * backend and for the cpu backend's emulation mode (GP_CPU_GEMM=sm90a), so the dispatch
 * CI tests is the one the GPUs take:
 *   - gated: on cuda only on compute capability 9.0 and with GP_ENABLE_SM90A=1, until a
 *     GPU run validates the path (docs/PERFORMANCE.md names it); otherwise the sm_80
 *     kernels serve Hopper;
 *   - f16 or bf16 inputs (any output type and epilogue), k > 0, and operands TMA can
 *     address: A and B 16-byte aligned, leading dimensions and batch strides multiples
 *     of 8 elements, extents below 2^31. Anything else goes to the sm_80 kernels.
 * The grid is persistent: one block per SM at most (3 on the cpu backend, so that each
 * block takes several tiles there too).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "gemm.h"

#if defined(GP_BUILD_CUDA) || defined(GP_BUILD_CPU)

GP_KERNEL_DECLARE(gp__gemm_sm90_f16_nn);
GP_KERNEL_DECLARE(gp__gemm_sm90_f16_nt);
GP_KERNEL_DECLARE(gp__gemm_sm90_f16_tn);
GP_KERNEL_DECLARE(gp__gemm_sm90_f16_tt);
GP_KERNEL_DECLARE(gp__gemm_sm90_bf16_nn);
GP_KERNEL_DECLARE(gp__gemm_sm90_bf16_nt);
GP_KERNEL_DECLARE(gp__gemm_sm90_bf16_tn);
GP_KERNEL_DECLARE(gp__gemm_sm90_bf16_tt);

/* [bf16][trans_a][trans_b] */
static const struct gp_kernel_s *const k_ws[2][2][2] = {
    {{GP_KERNEL_REF(gp__gemm_sm90_f16_nn), GP_KERNEL_REF(gp__gemm_sm90_f16_nt)},
     {GP_KERNEL_REF(gp__gemm_sm90_f16_tn), GP_KERNEL_REF(gp__gemm_sm90_f16_tt)}},
    {{GP_KERNEL_REF(gp__gemm_sm90_bf16_nn), GP_KERNEL_REF(gp__gemm_sm90_bf16_nt)},
     {GP_KERNEL_REF(gp__gemm_sm90_bf16_tn), GP_KERNEL_REF(gp__gemm_sm90_bf16_tt)}}};

/* Devices (bit d) on which each kernel's shared-memory limit has been raised. */
static atomic_ullong g_raised[2][2][2];

bool gp__sm90a_enabled(void) {
#if defined(GP_BUILD_CUDA)
  const char *e = getenv("GP_ENABLE_SM90A");
  if (!e || strcmp(e, "1") != 0) return false;
  const gp_device_props_t *props;
  if (gp__api_props(__func__, gp__current_device(), &props) != GP_SUCCESS) return false;
  return props->compute_capability_major == 9 && props->compute_capability_minor == 0;
#else
  return gp__gemm_cpu_mode() == GP__GEMM_CPU_SM90A;
#endif
}

static int sm_count(void) {
#if defined(GP_BUILD_CUDA)
  const gp_device_props_t *props;
  if (gp__api_props(__func__, gp__current_device(), &props) != GP_SUCCESS) return 1;
  return props->multiprocessor_count > 0 ? props->multiprocessor_count : 1;
#else
  return 3;
#endif
}

/* x, its leading dimension and batch stride (2-byte elements) suit TMA. */
static bool tma_ok(const void *x, int64_t ld, int64_t stride, int64_t batch) {
  return ((uintptr_t)x & 15u) == 0 && ld % 8 == 0 && ld < (1ll << 36) &&
         (batch == 1 || stride % 8 == 0);
}

/* The map of one operand: K-major (contiguous along k) boxes of 64 k x 128 rows, MN-major
 * boxes of 64 elements x 64 k; 128-byte swizzle; batch entries along dimension 2. */
static bool encode(gp_nv_tensor_map_t *tm, const void *base, int k_major, int64_t x, int64_t k, int64_t ld,
                   int64_t stride, int64_t batch) {
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
  return gp__nv_tensor_map_encode(tm, 2, 3, base, dims, strides, box, GP_NV_SWIZZLE_128B) == GP_SUCCESS;
}

bool gp__gemm_sm90_choose(const gp__gemm_params_t *p, gp__gemm_sm90_plan_t *plan) {
  if (p->ab_type != GP_F16 && p->ab_type != GP_BF16) return false;
  if (!gp__sm90a_enabled()) return false;
  const int64_t lim = 1ll << 31;
  if (p->k <= 0 || p->m >= lim || p->n >= lim || p->k >= lim || p->batch >= lim) return false;
  if (!tma_ok(p->a, p->lda, p->stride_a, p->batch) || !tma_ok(p->b, p->ldb, p->stride_b, p->batch)) return false;
  const int bf16 = p->ab_type == GP_BF16, ta = p->trans_a != 0, tb = p->trans_b != 0;
  /* op(A) transposed: A is stored m rows of k (K-major); op(B) not transposed: likewise */
  if (!encode(&plan->map_a, p->a, ta, p->m, p->k, p->lda, p->stride_a, p->batch) ||
      !encode(&plan->map_b, p->b, !tb, p->n, p->k, p->ldb, p->stride_b, p->batch)) {
    gp__clear_error();
    return false;
  }
  const int64_t tiles = ((p->m + GP__SM90_GEMM_BM - 1) / GP__SM90_GEMM_BM) *
                        ((p->n + GP__SM90_GEMM_BN - 1) / GP__SM90_GEMM_BN) * p->batch;
  const int64_t sms = sm_count();
  plan->kernel = k_ws[bf16][ta][tb];
  plan->threads = GP__SM90_GEMM_THREADS;
  plan->smem = GP__SM90_GEMM_SMEM;
  plan->grid_x = (unsigned)(tiles < sms ? tiles : sms);
  snprintf(plan->name, sizeof plan->name,
           "%s (wgmma m64n128k16 + TMA, %dx%dx%d tiles, %d-stage ring, warp-specialized, persistent grid of %u)",
           plan->kernel->name, GP__SM90_GEMM_BM, GP__SM90_GEMM_BN, GP__SM90_GEMM_BK, GP__SM90_GEMM_STAGES,
           plan->grid_x);
  return true;
}

gp_status_t gp__gemm_sm90_launch(gp_stream_t stream, const gp__gemm_params_t *p, const gp__gemm_sm90_plan_t *plan) {
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
  return gp_launch(plan->kernel, gp_dim3(plan->grid_x, 1, 1), gp_dim3(plan->threads, 1, 1), plan->smem, stream, args);
}

#else /* hip: no sm_90a kernels */

bool gp__sm90a_enabled(void) { return false; }

bool gp__gemm_sm90_choose(const gp__gemm_params_t *p, gp__gemm_sm90_plan_t *plan) {
  (void)p;
  (void)plan;
  return false;
}

gp_status_t gp__gemm_sm90_launch(gp_stream_t stream, const gp__gemm_params_t *p, const gp__gemm_sm90_plan_t *plan) {
  (void)stream;
  (void)p;
  (void)plan;
  return GP__ERR(GP_ERROR_NOT_SUPPORTED, "no sm_90a kernels in the hip library");
}

#endif
