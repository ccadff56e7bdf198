/*
 * gemm_epilogue.h - the one GEMM epilogue: every GEMM dialect kernel (kernels/portable,
 * kernels/sm80, kernels/sm90a, kernels/mfma) and the cpu backend's OpenBLAS path
 * (kernels/cpu/gemm_cpu.c) finish C(i, j) from the f32 sum acc with these functions, so
 * they round and activate exactly alike:
 *   x = alpha * acc (0 when k == 0), then x = fmaf(beta, C, x) only when beta != 0 (C
 *   is not read otherwise: one rounding for beta * C + x), then the bias, ReLU or GELU
 *   in f32, then one rounding to c_type (kernels/common/elem.h).
 * Given the same accumulator, the same inputs and the same libm (the cpu backend runs
 * the kernels and its host path on one), the results are the same bits (test_gemm.c:
 * test_epilogue_bits). Across machines erff and tanhf may differ in the last bits.
 *
 * Plain C and dialect (GP_HOST_DEVICE), included by the kernels after gpuport/kernel.h.
 */
#ifndef GP_KERNELS_GEMM_EPILOGUE_H
#define GP_KERNELS_GEMM_EPILOGUE_H

#include <math.h>
#include <stdint.h>
#include <gpuport/blas.h>
#include "kernels/common/elem.h"
#include "kernels/common/gemm_params.h"

/* The activation of epilogue epi on x, with its bias. */
static inline GP_HOST_DEVICE float gp__gemm_activate(int epi, float x, float bias) {
  if (epi == GP_EPILOGUE_NONE) return x;
  x += bias;
  if (epi == GP_EPILOGUE_BIAS_RELU) return x > 0.0f ? x : 0.0f;
  if (epi == GP_EPILOGUE_BIAS_GELU) return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  if (epi == GP_EPILOGUE_BIAS_GELU_TANH)
    return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
  return x;
}

/* C(i, j) before the rounding to c_type: the element at off of c is read only when
 * beta != 0; acc only when has_k. */
static inline GP_HOST_DEVICE float gp__gemm_epilogue(float alpha, float beta, int has_k, float acc,
                                                    const void *c, int c_type, int64_t off, int epi,
                                                    float bias) {
  float x = has_k ? alpha * acc : 0.0f;
  if (beta != 0.0f) x = fmaf(beta, gp__elem_load(c, c_type, off), x);
  return gp__gemm_activate(epi, x, bias);
}

/* Start of the batch entry elems elements after base. */
static inline GP_HOST_DEVICE const char *gemm_offset(const void *base, int type, int64_t elems) {
  return (const char *)base + elems * gp__elem_size(type);
}

/* Finishes C(i, j) of the batch entry whose C starts at c, from the f32 sum acc. Not
 * inlined on GPUs: a kernel finishes up to 64 elements per thread from unrolled loops,
 * and 64 inlined copies of the epilogue (erff, tanhf, three output types) multiply the
 * code size and the compile time for no gain in the main loop. Scalar arguments only, so
 * the call passes registers, not a copy of the parameters in local memory. */
#if defined(__CUDACC__) || defined(__HIP__)
#define GEMM_FINISH_ATTR static __device__ __noinline__
#else
#define GEMM_FINISH_ATTR static inline
#endif
GEMM_FINISH_ATTR void gemm_finish_one(void *c, int64_t ldc, int c_type, float alpha, float beta,
                                      int has_k, int epilogue, const void *bias, int bias_type,
                                      int64_t bias_index, int64_t i, int64_t j, float acc) {
  const int64_t off = i + j * ldc;
  const float b = epilogue != GP_EPILOGUE_NONE ? gp__elem_load(bias, bias_type, bias_index) : 0.0f;
  gp__elem_store(c, c_type, off, gp__gemm_epilogue(alpha, beta, has_k, acc, c, c_type, off, epilogue, b));
}

/* gemm_finish_one with the fields of p. */
#define gemm_finish(p, c, i, j, acc)                                                        \
  gemm_finish_one((c), (p)->ldc, (p)->c_type, (p)->alpha, (p)->beta, (p)->k > 0, (p)->epilogue, \
                  (p)->bias, (p)->bias_type, (p)->bias_along_m ? (i) : (j), (i), (j), (acc))

#endif /* GP_KERNELS_GEMM_EPILOGUE_H */
