/*
 * gemm.h - internal interface of the cpu backend's host GEMM (kernels/cpu/gemm_cpu.c),
 * for its entry of the GEMM table (kernels/cpu/gemm_cpu_host.c) and the tests. Nothing
 * here is public; the table's interface is src/dispatch.h.
 *
 * src/gemm.c checks every argument once and reduces the call to the canonical
 * column-major problem of kernels/common/gemm_params.h; the functions below may assume a
 * valid, non-empty problem (m, n, batch >= 1) whose products A and B are only read when
 * k > 0 (alpha == 0 is turned into k == 0 there, so A and B are not read, as BLAS).
 */
#ifndef GP_GEMM_H
#define GP_GEMM_H

#include "dispatch.h"
#include "internal.h"
#include "kernels/common/gemm_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest extent or leading dimension the direct BLAS call accepts (OpenBLAS blasint);
 * beyond it the CPU path splits the problem into tiles. Tests may lower it to exercise
 * the splitting at small sizes (0 restores the real limit). */
void gp__gemm_cpu_set_blas_limit(int64_t limit);
/* Largest f32 panel of C (in floats) the f16/bf16 path makes and finishes at a time,
 * sized to stay in cache; tests lower it to cut small products into many panels (0
 * restores the default). */
void gp__gemm_cpu_set_panel_floats(int64_t floats);
/* The f16/bf16 conversion path's plan for p: blocks mb, nb, kb (operands converted once
 * per block) and the panel pm x pn of C made and finished at a time, in plan[0..5). */
void gp__gemm_cpu_half_plan(const gp__gemm_params_t *p, int64_t plan[5]);

/* The paths of the host GEMM (kernels/cpu/gemm_cpu.c says what each does). */
typedef enum gp__gemm_cpu_path {
  GP__GEMM_CPU_HOST = 0,    /* f32: the direct cblas_sgemm where it applies, else packed */
  GP__GEMM_CPU_PACKED = 1,  /* f32 tiles converted in scratch (GP_CPU_GEMM=packed) */
  GP__GEMM_CPU_CONVERT = 2, /* f16/bf16 blocks converted to f32, then cblas_sgemm */
  GP__GEMM_CPU_SBGEMM = 3,  /* bf16: cblas_sbgemm on the caller's memory */
  GP__GEMM_CPU_HALF = 4     /* f16/bf16 converted while packed, the 6 x 16 AVX2 + FMA kernel */
} gp__gemm_cpu_path_t;

/* The path the product takes in GEMM's CPU mode (host, packed, convert, sbgemm). */
gp__gemm_cpu_path_t gp__gemm_cpu_path(const gp__gemm_params_t *p, gp__cpu_mode_t mode);
/* Enqueues the product on the (resolved) stream; runs asynchronously on the stream's
 * worker along path. */
gp_status_t gp__gemm_cpu_enqueue(gp_stream_t stream, const gp__gemm_params_t *p, gp__gemm_cpu_path_t path);
/* Name (a static string) of the kernel the path runs, for the log line and the tests. */
const char *gp__gemm_cpu_kernel_name(const gp__gemm_params_t *p, gp__gemm_cpu_path_t path);

/* Whether cblas_sbgemm beats conversion + cblas_sgemm for bf16 on this machine: measured
 * once per process (the first call pays a few milliseconds), then cached; the times are
 * those of a 512 x 512 x 384 product, in milliseconds. */
bool gp__gemm_cpu_sbgemm_faster(void);
/* Whether the OpenBLAS loaded defines cblas_sbgemm (GP_CPU_GEMM=sbgemm converts
 * otherwise). */
bool gp__gemm_cpu_sbgemm_available(void);
void gp__gemm_cpu_sbgemm_times(double *sbgemm_ms, double *convert_ms);

/* Whether f16/bf16 (type) conversions run on vector instructions (F16C, AVX2) in the
 * current GP_CPU_CONVERT mode on this processor. */
bool gp__cpu_convert_vector(int type);
/* dst[0..n) = src[0..n) (f16 or bf16, type) as f32; vector: the F16C/AVX2 loop (only
 * where gp__cpu_convert_vector(type) says the processor has it), else plain C. */
void gp__cpu_convert_f32(float *dst, const void *src, int type, int64_t n, bool vector);
/* Whether the packed half path's kernel runs here (AVX2, FMA and F16C). */
bool gp__gemm_cpu_packed_half_available(void);
/* Whether the host mode takes the packed half path for a canonical m x n x k product
 * (where it was measured the faster; gemm_cpu.c says the rule). */
bool gp__gemm_cpu_packed_half_prefers(int64_t m, int64_t n, int64_t k);

/* Whether the direct f32 path's GELU runs the AVX2 + FMA build here
 * (gp__cpu_gelu_simd on a processor that has it; kernels/cpu/gelu_cpu.c). */
bool gp__cpu_gelu_vector(void);
/* x[0..n) = GELU(x[i] + b_i) (erf form) in place, b_i = bias_vec[i] (f32 bias along
 * the column) or bias where bias_vec is NULL; vector: the AVX2 + FMA build (only where
 * gp__cpu_gelu_vector() says so), within a few ulps of erf of the portable one. */
void gp__cpu_gelu_bias_f32(float *x, int64_t n, const float *bias_vec, float bias, bool vector);
/* dst[0..n) = erf(src[i]): the GELU's erf alone, either build (tests measure it). */
void gp__cpu_erf_f32(float *dst, const float *src, int64_t n, bool vector);

#ifdef __cplusplus
}
#endif

#endif /* GP_GEMM_H */
