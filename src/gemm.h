/*
 * gemm.h - internal interface between the public GEMM entry points (src/blas.c), the
 * CPU implementation (src/cpu/gemm_cpu.c) and the launch of the portable dialect
 * kernel (src/gemm_launch.c). Nothing here is public.
 *
 * src/blas.c checks every argument once and reduces the call to the canonical
 * column-major problem of src/kernels/gemm_params.h; the functions below may assume a
 * valid, non-empty problem (m, n, batch >= 1) whose products A and B are only read when
 * k > 0 (alpha == 0 is turned into k == 0 there, so A and B are not read, as BLAS).
 */
#ifndef GP_GEMM_H
#define GP_GEMM_H

#include "internal.h"
#include "kernels/gemm_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which implementation the CPU backend runs (GP_CPU_GEMM environment variable). */
typedef enum gp__gemm_cpu_mode {
  GP__GEMM_CPU_DEFAULT = 0,  /* OpenBLAS; the direct cblas_sgemm call when it applies */
  GP__GEMM_CPU_PACKED = 1,   /* OpenBLAS on f32 tiles converted into scratch, always
                                (GP_CPU_GEMM=packed); the path f16/bf16 always take */
  GP__GEMM_CPU_PORTABLE = 2, /* the dialect kernel on the SIMT executor (GP_CPU_GEMM=portable) */
  GP__GEMM_CPU_MFMA = 3      /* the AMD MFMA kernels of hip/ at wave64, MFMA emulated
                                (GP_CPU_GEMM=mfma): the hip backend's choice and code */
} gp__gemm_cpu_mode_t;

/* The mode in effect: the last gp__gemm_set_cpu_mode() value, else GP_CPU_GEMM. */
gp__gemm_cpu_mode_t gp__gemm_cpu_mode(void);
/* Overrides GP_CPU_GEMM for the whole process (tests); mode < 0 returns to GP_CPU_GEMM. */
void gp__gemm_set_cpu_mode(int mode);

/* Largest extent or leading dimension the direct BLAS call accepts (OpenBLAS blasint);
 * beyond it the CPU path splits the problem into tiles. Tests may lower it to exercise
 * the splitting at small sizes (0 restores the real limit). */
void gp__gemm_cpu_set_blas_limit(int64_t limit);

/* CPU backend: enqueues the product on the (resolved) stream; runs asynchronously on the
 * stream's worker. kernel_name receives a static string naming the path chosen. */
gp_status_t gp__gemm_cpu_enqueue(gp_stream_t stream, const gp__gemm_params_t *p,
                                 gp__gemm_cpu_mode_t mode, const char **kernel_name);
/* Name of the path gp__gemm_cpu_enqueue would take (for the log line). */
const char *gp__gemm_cpu_kernel_name(const gp__gemm_params_t *p, gp__gemm_cpu_mode_t mode);

/* Every backend: launches the portable tiled kernel (src/kernels/gemm.cu) with gp_launch
 * on the caller's (unresolved) stream. */
gp_status_t gp__gemm_launch_portable(gp_stream_t stream, const gp__gemm_params_t *p);
/* Name of the portable kernel and its tile, for the log line. */
extern const char gp__gemm_portable_kernel_name[];

/* hip and cpu backends (src/gemm_amd.c): the AMD MFMA kernel for p (set in *kernel) and
 * its name for the log line; the launch of that choice on the caller's stream. */
const char *gp__gemm_amd_choose(const gp__gemm_params_t *p, gp_kernel_t *kernel);
gp_status_t gp__gemm_amd_launch(gp_stream_t stream, const gp__gemm_params_t *p);

#ifdef __cplusplus
}
#endif

#endif /* GP_GEMM_H */
