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

#include "internal.h"
#include "kernels/common/gemm_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest extent or leading dimension the direct BLAS call accepts (OpenBLAS blasint);
 * beyond it the CPU path splits the problem into tiles. Tests may lower it to exercise
 * the splitting at small sizes (0 restores the real limit). */
void gp__gemm_cpu_set_blas_limit(int64_t limit);

/* Enqueues the product on the (resolved) stream; runs asynchronously on the stream's
 * worker. packed: always the f32 tiles converted in scratch (GP_CPU_GEMM=packed), else
 * the direct cblas_sgemm where it applies. */
gp_status_t gp__gemm_cpu_enqueue(gp_stream_t stream, const gp__gemm_params_t *p, bool packed);
/* Name (a static string) of the path gp__gemm_cpu_enqueue takes, for the log line. */
const char *gp__gemm_cpu_kernel_name(const gp__gemm_params_t *p, bool packed);

#ifdef __cplusplus
}
#endif

#endif /* GP_GEMM_H */
