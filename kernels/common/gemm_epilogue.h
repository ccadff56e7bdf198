/*
 * gemm_epilogue.h - the element loads, stores and epilogue every GEMM dialect kernel
 * shares (the portable kernels/portable/gemm_portable.cu and the sm_80 kernels/sm80/gemm_sm80.cu), so that
 * they round and activate exactly alike: alpha * acc, plus beta * C only when beta != 0
 * (C is not read otherwise), the bias, ReLU or GELU in f32, then one rounding to c_type.
 * Included by dialect sources only (after gpuport/kernel.h).
 */
#ifndef GP_KERNELS_GEMM_EPILOGUE_H
#define GP_KERNELS_GEMM_EPILOGUE_H

#include <gpuport/blas.h>
#include "kernels/common/gemm_params.h"

GP_DEVICE float gemm_load(const void *base, int type, int64_t i) {
  if (type == GP_F16) return gp_f32_from_f16(((const gp_f16_t *)base)[i]);
  if (type == GP_BF16) return gp_f32_from_bf16(((const gp_bf16_t *)base)[i]);
  return ((const float *)base)[i];
}

GP_DEVICE void gemm_store(void *base, int type, int64_t i, float v) {
  if (type == GP_F16)
    ((gp_f16_t *)base)[i] = gp_f16_from_f32(v);
  else if (type == GP_BF16)
    ((gp_bf16_t *)base)[i] = gp_bf16_from_f32(v);
  else
    ((float *)base)[i] = v;
}

GP_DEVICE float gemm_epilogue(int epi, float x, float bias) {
  if (epi == GP_EPILOGUE_NONE) return x;
  x += bias;
  if (epi == GP_EPILOGUE_BIAS_RELU) return x > 0.0f ? x : 0.0f;
  if (epi == GP_EPILOGUE_BIAS_GELU) return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  if (epi == GP_EPILOGUE_BIAS_GELU_TANH)
    return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
  return x;
}

GP_DEVICE const char *gemm_offset(const void *base, int type, int64_t elems) {
  const int64_t size = type == GP_F32 ? 4 : 2;
  return (const char *)base + elems * size;
}

/* Finishes C(i, j) of the batch entry whose C starts at c, from the f32 sum acc. Not
 * inlined on GPUs: a kernel finishes up to 64 elements per thread from unrolled loops,
 * and 64 inlined copies of the epilogue (erff, tanhf, three output types) multiply the
 * code size and the compile time for no gain in the main loop. Scalar arguments only, so
 * the call passes registers, not a copy of the parameters in local memory. */
#if defined(GP_TARGET_CPU)
#define GEMM_FINISH_ATTR static inline
#else
#define GEMM_FINISH_ATTR static __device__ __noinline__
#endif
GEMM_FINISH_ATTR void gemm_finish_one(void *c, int64_t ldc, int c_type, float alpha, float beta,
                                      int has_k, int epilogue, const void *bias, int bias_type,
                                      int64_t bias_index, int64_t i, int64_t j, float acc) {
  const int64_t off = i + j * ldc;
  float x = has_k ? alpha * acc : 0.0f;
  if (beta != 0.0f) x = fmaf(beta, gemm_load(c, c_type, off), x);
  float b = 0.0f;
  if (epilogue != GP_EPILOGUE_NONE) b = gemm_load(bias, bias_type, bias_index);
  gemm_store(c, c_type, off, gemm_epilogue(epilogue, x, b));
}

/* gemm_finish_one with the fields of p. */
#define gemm_finish(p, c, i, j, acc)                                                        \
  gemm_finish_one((c), (p)->ldc, (p)->c_type, (p)->alpha, (p)->beta, (p)->k > 0, (p)->epilogue, \
                  (p)->bias, (p)->bias_type, (p)->bias_along_m ? (i) : (j), (i), (j), (acc))

#endif /* GP_KERNELS_GEMM_EPILOGUE_H */
