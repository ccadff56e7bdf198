/*
 * elem.h - the one element load and store by dtype of the kernels and the cpu host
 * implementations: f32, f16 or bf16 in memory, f32 in arithmetic. Loads are exact
 * (every f16 and bf16 value is an f32 value); stores round to nearest even with NaN kept
 * (gpuport/types.h: gp_f16_from_f32, gp_bf16_from_f32), so every family rounds its
 * outputs alike. Any dtype other than f16 and bf16 is read and written as f32: callers
 * have checked the dtype (src/attention.c, src/gemm.c).
 *
 * Plain C and dialect (GP_HOST_DEVICE): included by kernels/portable, kernels/common's
 * GEMM epilogue and kernels/cpu. A loop over a row with a constant dtype argument (the
 * cpu host rows) compiles to one conversion loop per dtype.
 */
#ifndef GP_KERNELS_ELEM_H
#define GP_KERNELS_ELEM_H

#include <stdint.h>
#include <gpuport/types.h>

/* Element i of the dtype array at base, as f32. */
static inline GP_HOST_DEVICE float gp__elem_load(const void *base, int dtype, int64_t i) {
  if (dtype == GP_F16) return gp_f32_from_f16(((const gp_f16_t *)base)[i]);
  if (dtype == GP_BF16) return gp_f32_from_bf16(((const gp_bf16_t *)base)[i]);
  return ((const float *)base)[i];
}

/* x rounded to dtype, into element i of the dtype array at base. */
static inline GP_HOST_DEVICE void gp__elem_store(void *base, int dtype, int64_t i, float x) {
  if (dtype == GP_F16)
    ((gp_f16_t *)base)[i] = gp_f16_from_f32(x);
  else if (dtype == GP_BF16)
    ((gp_bf16_t *)base)[i] = gp_bf16_from_f32(x);
  else
    ((float *)base)[i] = x;
}

/* Bytes of one element of dtype (f16, bf16: 2; otherwise f32: 4). */
static inline GP_HOST_DEVICE int64_t gp__elem_size(int dtype) {
  return dtype == GP_F16 || dtype == GP_BF16 ? 2 : 4;
}

#endif /* GP_KERNELS_ELEM_H */
