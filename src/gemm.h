/*
 * gemm.h - internal interface between the public GEMM entry points (src/gemm.c), the
 * CPU implementation (kernels/cpu/gemm_cpu.c) and the launch of the portable dialect
 * kernel (kernels/portable/gemm_portable_host.c). Nothing here is public.
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
#include "kernels/sm90a/sm90a.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which implementation the CPU backend runs (GP_CPU_GEMM environment variable). */
typedef enum gp__gemm_cpu_mode {
  GP__GEMM_CPU_DEFAULT = 0,  /* OpenBLAS; the direct cblas_sgemm call when it applies */
  GP__GEMM_CPU_PACKED = 1,   /* OpenBLAS on f32 tiles converted into scratch, always
                                (GP_CPU_GEMM=packed); the path f16/bf16 always take */
  GP__GEMM_CPU_PORTABLE = 2, /* the dialect kernel on the SIMT executor (GP_CPU_GEMM=portable) */
  GP__GEMM_CPU_SM80 = 3,     /* the sm_80 kernels (kernels/sm80/) on the executor, their mma.sync,
                                ldmatrix and cp.async emulated (GP_CPU_GEMM=sm80) */
  GP__GEMM_CPU_MFMA = 4,     /* the AMD MFMA kernels (kernels/mfma/) on the executor at wave64, each
                                MFMA emulated lane by lane (GP_CPU_GEMM=mfma) */
  GP__GEMM_CPU_SM90A = 5     /* the sm_90a kernels (kernels/sm90a/) on the executor, wgmma, TMA and
                                mbarrier emulated (GP_CPU_GEMM=sm90a); what they do not
                                take goes to the sm_80 kernels, emulated too */
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

/* Every backend: launches the portable tiled kernel (kernels/portable/gemm_portable.cu) with gp_launch
 * on the caller's (unresolved) stream. */
gp_status_t gp__gemm_launch_portable(gp_stream_t stream, const gp__gemm_params_t *p);
/* Name of the portable kernel and its tile, for the log line. */
extern const char gp__gemm_portable_kernel_name[];

/* The sm_80 kernels (kernels/sm80/gemm_sm80.cu; kernels/sm80/gemm_sm80_host.c). */
typedef struct gp__gemm_sm80_plan {
  gp_kernel_t kernel;
  unsigned grid_x, grid_z, threads;
  size_t smem;     /* dynamic shared memory, bytes */
  int vec;         /* mma kernels: 1 16-byte cp.async, 0 plain loads; -1: the f32 kernel */
  char name[160];  /* the kernel and its configuration, for the log line */
} gp__gemm_sm80_plan_t;
/* The one place that decides whether the sm_80 kernels run p (cuda: a device of compute
 * capability 8.0 or above; cpu: GP_CPU_GEMM=sm80; hip: never) and which one; false when
 * they do not apply. */
bool gp__gemm_sm80_choose(const gp__gemm_params_t *p, gp__gemm_sm80_plan_t *plan);
/* Launches the chosen kernel on the caller's (unresolved) stream. */
gp_status_t gp__gemm_sm80_launch(gp_stream_t stream, const gp__gemm_params_t *p,
                                 const gp__gemm_sm80_plan_t *plan);

/* The sm_90a kernels (kernels/sm90a/gemm_sm90a.cu; kernels/sm90a/gemm_sm90a_host.c). */
typedef struct gp__gemm_sm90_plan {
  gp_kernel_t kernel;
  unsigned grid_x, threads;
  size_t smem;                 /* dynamic shared memory, bytes */
  gp_nv_tensor_map_t map_a;    /* TMA maps of A and B */
  gp_nv_tensor_map_t map_b;
  char name[160];              /* the kernel and its configuration, for the log line */
} gp__gemm_sm90_plan_t;
/* Whether the sm_90a path is enabled: cuda, a device of compute capability 9.0 and
 * GP_ENABLE_SM90A=1 (the gate until a recorded GPU validation: docs/PERFORMANCE.md);
 * cpu, GP_CPU_GEMM=sm90a; hip, never. */
bool gp__sm90a_enabled(void);
/* The one place that decides whether the sm_90a kernels run p and prepares the launch
 * (tensor maps included); false when they do not apply (then the sm_80 choice follows). */
bool gp__gemm_sm90_choose(const gp__gemm_params_t *p, gp__gemm_sm90_plan_t *plan);
/* Launches the chosen kernel on the caller's (unresolved) stream. */
gp_status_t gp__gemm_sm90_launch(gp_stream_t stream, const gp__gemm_params_t *p,
                                 const gp__gemm_sm90_plan_t *plan);

/* The AMD MFMA kernels (kernels/mfma/gemm_mfma.cu; kernels/mfma/gemm_mfma_host.c). */
typedef struct gp__gemm_mfma_plan {
  gp_kernel_t kernel;
  unsigned grid_x, grid_y, grid_z, threads;
  char name[160];  /* the kernel and its configuration, for the log line */
} gp__gemm_mfma_plan_t;
/* The one place that decides whether the MFMA kernels run p (hip: always; cpu:
 * GP_CPU_GEMM=mfma; cuda: never) and which one; false when they do not apply. */
bool gp__gemm_mfma_choose(const gp__gemm_params_t *p, gp__gemm_mfma_plan_t *plan);
/* Launches the chosen kernel on the caller's (unresolved) stream. */
gp_status_t gp__gemm_mfma_launch(gp_stream_t stream, const gp__gemm_params_t *p,
                                 const gp__gemm_mfma_plan_t *plan);

#ifdef __cplusplus
}
#endif

#endif /* GP_GEMM_H */
