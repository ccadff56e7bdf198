/*
 * dispatch.h - the implementation tables of GEMM, attention forward and attention
 * backward: what one entry is, the plan its supports() prepares for its launch(), which
 * entries a device (or, on the cpu backend, a CPU mode) lets run, and the two hooks a
 * test build links in. Nothing here is public.
 *
 * The tables themselves are src/gemm_table.c and src/attention_table.c: one ordered
 * list per operation and backend. An entry is one kernel family (kernels/<family>/):
 *   supports(params, plan, why, why_len)  whether the family takes the canonical problem;
 *       when it does it fills the plan (kernel, grid, shared memory, tensor maps, a name
 *       for the log line); when it does not it writes its reason into why. It never
 *       touches the thread's error message: declining is not a failed call, and a
 *       success must leave the last failure's message in place.
 *   launch(stream, params, plan)  runs the plan on the caller's (unresolved) stream; it
 *       may complete plan->name with what it decided at launch.
 * The walk (gp__dispatch_begin, gp__dispatch_eligible, gp__dispatch_declined) takes the
 * first entry whose family is enabled and whose supports() says yes, and gathers every
 * earlier entry's reason for the INFO line.
 *
 * Which families are enabled: on cuda the device decides (sm90a: compute capability 9.0
 * with GP_ENABLE_SM90A=1; sm80: 8.0 and above; portable: always), on hip too (mfma,
 * portable), on the cpu backend the CPU mode of the operation does (GP_CPU_GEMM,
 * GP_CPU_ATTENTION; see gp__cpu_mode()).
 *
 * Included from C only.
 */
#ifndef GP_DISPATCH_H
#define GP_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>

#include <gpuport/nv_wgmma.h>

#include "attention_impl.h"
#include "internal.h"
#include "kernels/common/gemm_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- operations, families, CPU modes ------------------------------------------------ */

typedef enum gp__op {
  GP__OP_GEMM = 0,
  GP__OP_ATTN_FWD = 1,
  GP__OP_ATTN_BWD = 2,
  GP__OP_ATTN_KVCACHE = 3, /* gp_attention_fwd_kvcache (GP_CPU_ATTENTION, as the forward) */
  GP__OP_COUNT = 4
} gp__op_t;

/* "gemm", "attention_fwd", "attention_bwd", "attention_kvcache": the first part of an entry's full name
 * ("gemm.sm80"), which test builds' GP__DISPATCH_DISABLE takes. */
const char *gp__op_name(gp__op_t op);

typedef enum gp__family {
  GP__FAMILY_HOST = 0,     /* kernels/cpu: OpenBLAS GEMM, the tiled host attention (cpu backend) */
  GP__FAMILY_SM90A = 1,    /* kernels/sm90a: wgmma, TMA (cuda; cpu emulated) */
  GP__FAMILY_SM80 = 2,     /* kernels/sm80: mma.sync, ldmatrix, cp.async (cuda; cpu emulated) */
  GP__FAMILY_MFMA = 3,     /* kernels/mfma: AMD CDNA MFMA at wave64 (hip; cpu emulated) */
  GP__FAMILY_PORTABLE = 4  /* kernels/portable: dialect kernels every backend builds */
} gp__family_t;

/* The CPU modes, one vocabulary for GP_CPU_GEMM and GP_CPU_ATTENTION (README, "The
 * gpuport program"). Each enables some families on the cpu backend:
 *   host      (default; "openblas" is an alias for GEMM) the host implementation;
 *   packed    (GEMM only) the host GEMM, always through f32 tiles converted in scratch;
 *   convert   (GEMM only) the host GEMM; f16/bf16 operands always converted to f32 and
 *             multiplied with cblas_sgemm (host measures once whether cblas_sbgemm is
 *             faster for bf16 on this machine and takes the faster);
 *   sbgemm    (GEMM only) the host GEMM; bf16 operands always through cblas_sbgemm;
 *   portable  the portable dialect kernels on the SIMT executor;
 *   sm80      the sm_80 kernels under emulation, the portable ones where they decline;
 *   sm90a     the sm_90a kernels under emulation, then sm_80, then portable (as a GPU);
 *   mfma      the MFMA kernels at wave64 under emulation, then portable (as hip). */
typedef enum gp__cpu_mode {
  GP__CPU_HOST = 0,
  GP__CPU_PACKED = 1,
  GP__CPU_PORTABLE = 2,
  GP__CPU_SM80 = 3,
  GP__CPU_SM90A = 4,
  GP__CPU_MFMA = 5,
  GP__CPU_CONVERT = 6,
  GP__CPU_SBGEMM = 7,
  GP__CPU_HALF = 8, /* f16/bf16: the packed 6 x 16 kernel where AVX2 + FMA + F16C are */
  GP__CPU_MODE_COUNT = 9
} gp__cpu_mode_t;

/* The mode of op (the forward and backward of attention share GP_CPU_ATTENTION): the last
 * gp__cpu_mode_set() value, else the environment variable, parsed once per process
 * (an unknown value warns once, naming the valid ones, and means host). */
gp__cpu_mode_t gp__cpu_mode(gp__op_t op);
/* Overrides op's environment variable for the whole process (tests); mode < 0 returns to
 * it. A mode op does not have (packed for attention) is taken as host. */
void gp__cpu_mode_set(gp__op_t op, int mode);
/* The mode's name in the vocabulary above. */
const char *gp__cpu_mode_name(gp__cpu_mode_t mode);

/* How the cpu backend converts f16/bf16 to f32 (GP_CPU_CONVERT, parsed once per process):
 * auto (default) the widest instructions this processor has (F16C for f16, AVX2 for
 * bf16), vector (the same; the name says what the tests force), scalar (plain C). */
typedef enum gp__cpu_convert {
  GP__CONVERT_AUTO = 0,
  GP__CONVERT_VECTOR = 1,
  GP__CONVERT_SCALAR = 2,
  GP__CONVERT_COUNT = 3
} gp__cpu_convert_t;

/* GP_CPU_CONVERT's value, or the last gp__cpu_convert_set() (tests; < 0 returns to the
 * variable). An unknown value warns once and means auto. */
gp__cpu_convert_t gp__cpu_convert(void);
void gp__cpu_convert_set(int mode);

/* The instruction set of the cpu backend's host attention tiles (forward, backward,
 * kvcache; kernels/cpu/attention_tile_cpu.c): GP_CPU_ATTENTION_SIMD=avx2 (the default)
 * runs the AVX2 + FMA build where the processor has both, scalar the portable C build.
 * True for the AVX2 build: the last gp__cpu_attn_simd_set() value, else the variable,
 * parsed once per process (an unknown value warns once and means avx2); always false on
 * a processor without AVX2 and FMA. */
bool gp__cpu_attn_simd(void);

/* The build of the direct f32 GEMM path's GELU (kernels/cpu/gelu_cpu.c):
 * GP_CPU_GELU_SIMD=avx2 (the default) runs the AVX2 + FMA erf where the processor has
 * both, scalar libm's erff (the kernels' expression, their bits). True for the AVX2
 * build: the last gp__cpu_gelu_simd_set() value, else the variable, parsed once per
 * process (an unknown value warns once and means avx2); always false on a processor
 * without AVX2 and FMA. */
bool gp__cpu_gelu_simd(void);
/* Overrides GP_CPU_GELU_SIMD for the whole process (tests): 1 avx2, 0 scalar, < 0
 * returns to the variable. */
void gp__cpu_gelu_simd_set(int simd);

/* The instruction sets this processor and its OS give the cpu backend's vector paths
 * (read once; all false off x86-64). */
typedef struct gp__cpu_isa {
  bool avx2, fma, f16c;
} gp__cpu_isa_t;
gp__cpu_isa_t gp__cpu_isa(void);
/* Overrides GP_CPU_ATTENTION_SIMD for the whole process (tests): 1 avx2, 0 scalar, < 0
 * returns to the variable. */
void gp__cpu_attn_simd_set(int simd);

/* ---- the walk --------------------------------------------------------------------------- */

/* One walk over a table: the operation, what decides which families are enabled, and the
 * reasons of the entries passed over ("sm80: head_dim 72 has no kernel; ..."). */
typedef struct gp__dispatch {
  gp__op_t op;
  gp__cpu_mode_t mode;    /* cpu backend: the operation's CPU mode */
  int cc_major, cc_minor; /* cuda, hip: the current device's compute capability */
  int multiprocessors;    /* cuda, hip: its SMs (CUs); 0 on the cpu backend */
  char *declined;
  size_t declined_len;
} gp__dispatch_t;

/* Starts a walk for op: reads the current device's properties (GPU backends) or the CPU
 * mode; a failing device query fails the call (message set, naming func). declined
 * (declined_len bytes) receives the reasons. */
gp_status_t gp__dispatch_begin(gp__dispatch_t *d, gp__op_t op, const char *func, char *declined,
                               size_t declined_len);
/* Whether the entry named entry (its family f) may run here: its family enabled on this
 * device or in this CPU mode, and, in test builds, not switched off. False with the
 * reason in why. Touches no error message. */
bool gp__dispatch_eligible(const gp__dispatch_t *d, const char *entry, gp__family_t f, char *why,
                           size_t why_len);
/* Records that entry declined (why), for the INFO line. */
void gp__dispatch_declined(gp__dispatch_t *d, const char *entry, const char *why);
/* Records the kernel the walk chose (a static string), for the test hook. */
void gp__dispatch_chose(const gp__dispatch_t *d, const char *kernel);
/* GP_ERROR_NOT_SUPPORTED naming func: no entry took the call; the message lists why. */
gp_status_t gp__dispatch_none(const gp__dispatch_t *d, const char *func);

/* ---- GEMM (src/gemm_table.c) --------------------------------------------------------------- */

/* What a GEMM family's supports() prepares for its launch(), sized for every family. */
typedef struct gp__gemm_plan {
  int multiprocessors;          /* in: the device's SMs (set by the walk; 0 on the cpu backend) */
  gp_kernel_t kernel;           /* NULL for the host implementation */
  const char *kernel_name;      /* static: the kernel's name, or the host path's */
  gp_dim3_t grid, block;
  size_t smem;                  /* dynamic shared memory, bytes */
  int variant;                  /* sm80: 1 16-byte cp.async, 0 plain loads, -1 the f32
                                   kernel; host: 1 the direct cblas_sgemm, 0 f32 tiles */
  gp_nv_tensor_map_t map_a;     /* sm90a: TMA maps of A and B */
  gp_nv_tensor_map_t map_b;
  char name[192];               /* the kernel and its configuration, for the log line */
} gp__gemm_plan_t;

typedef struct gp__gemm_impl {
  const char *name;             /* the family's name: "sm90a", "sm80", "mfma", "portable", "host" */
  gp__family_t family;
  bool (*supports)(const gp__gemm_params_t *p, gp__gemm_plan_t *plan, char *why, size_t why_len);
  gp_status_t (*launch)(gp_stream_t stream, const gp__gemm_params_t *p, gp__gemm_plan_t *plan);
} gp__gemm_impl_t;

/* The families' entries, each defined in its kernels/<family>/gemm_<family>_host.c. */
extern const gp__gemm_impl_t gp__gemm_impl_sm90a, gp__gemm_impl_sm80, gp__gemm_impl_mfma,
    gp__gemm_impl_portable, gp__gemm_impl_host;

/* The first entry of this backend's GEMM table that takes p (plan filled), or NULL (the
 * reasons are in d->declined). */
const gp__gemm_impl_t *gp__gemm_choose(gp__dispatch_t *d, const gp__gemm_params_t *p,
                                       gp__gemm_plan_t *plan);
/* Entry i of this backend's GEMM table, NULL past its end (test builds list them). */
const gp__gemm_impl_t *gp__gemm_table_entry(size_t i);

/* ---- attention (src/attention_table.c) -------------------------------------------------- */

/* What an attention family's supports() prepares for its launch(), sized for every
 * family, forward and backward. */
typedef struct gp__attn_plan {
  gp_kernel_t kernel;           /* forward: the kernel; backward: the main kernel (mfma: dq) */
  gp_kernel_t kernel_dkv;       /* mfma backward: the dk/dv kernel */
  const char *kernel_name;      /* static: the (main) kernel's name, or the host's */
  const gp__attn_bwd_kernels_t *portable; /* backward: the portable kernels run around or instead */
  unsigned blocks, blocks_dkv, threads;
  size_t smem, smem_dkv;        /* dynamic shared memory (LDS), bytes */
  int64_t nsplit, nslices;      /* backward: blocks per (sequence, head), dq slices */
  int slot;                     /* the family's index of the kernel (its raised limit) */
  int kv_bh;                    /* sm90a: the maps' rows are one sequence's (1) or all (0) */
  gp_kernel_t kernel_append;    /* kvcache: the kernel writing k_new and v_new into the cache */
  gp_kernel_t kernel_combine;   /* kvcache: the kernel merging the splits' partials */
  unsigned blocks_append, blocks_combine, threads_combine;
  gp_nv_tensor_map_t map_k;     /* sm90a: TMA maps of K and V */
  gp_nv_tensor_map_t map_v;
  char name[384];               /* the kernels and their configuration, for the log line */
} gp__attn_plan_t;

typedef struct gp__attn_fwd_impl {
  const char *name;
  gp__family_t family;
  bool (*supports)(const gp__attn_params_t *p, gp__attn_plan_t *plan, char *why, size_t why_len);
  gp_status_t (*launch)(gp_stream_t stream, const gp__attn_params_t *p, gp__attn_plan_t *plan);
} gp__attn_fwd_impl_t;

typedef struct gp__attn_bwd_impl {
  const char *name;
  gp__family_t family;
  bool (*supports)(const gp__attn_bwd_params_t *p, gp__attn_plan_t *plan, char *why, size_t why_len);
  gp_status_t (*launch)(gp_stream_t stream, const gp__attn_bwd_params_t *p, gp__attn_plan_t *plan);
} gp__attn_bwd_impl_t;

typedef struct gp__attn_kv_impl {
  const char *name;
  gp__family_t family;
  bool (*supports)(const gp__attn_kv_params_t *p, gp__attn_plan_t *plan, char *why, size_t why_len);
  gp_status_t (*launch)(gp_stream_t stream, const gp__attn_kv_params_t *p, gp__attn_plan_t *plan);
} gp__attn_kv_impl_t;

/* The families' entries, each defined in its kernels/<family>/attention_<family>_host.c. */
extern const gp__attn_kv_impl_t gp__attn_kv_impl_sm80, gp__attn_kv_impl_mfma, gp__attn_kv_impl_portable,
    gp__attn_kv_impl_host;
extern const gp__attn_fwd_impl_t gp__attn_fwd_impl_sm90a, gp__attn_fwd_impl_sm80,
    gp__attn_fwd_impl_mfma, gp__attn_fwd_impl_portable, gp__attn_fwd_impl_host;
extern const gp__attn_bwd_impl_t gp__attn_bwd_impl_sm80, gp__attn_bwd_impl_mfma,
    gp__attn_bwd_impl_portable, gp__attn_bwd_impl_host;

const gp__attn_fwd_impl_t *gp__attn_fwd_choose(gp__dispatch_t *d, const gp__attn_params_t *p,
                                               gp__attn_plan_t *plan);
const gp__attn_bwd_impl_t *gp__attn_bwd_choose(gp__dispatch_t *d, const gp__attn_bwd_params_t *p,
                                               gp__attn_plan_t *plan);
const gp__attn_kv_impl_t *gp__attn_kv_choose(gp__dispatch_t *d, const gp__attn_kv_params_t *p,
                                             gp__attn_plan_t *plan);
const gp__attn_fwd_impl_t *gp__attn_fwd_table_entry(size_t i);
const gp__attn_kv_impl_t *gp__attn_kv_table_entry(size_t i);
const gp__attn_bwd_impl_t *gp__attn_bwd_table_entry(size_t i);

/* The portable family's plans for a given build of its kernels (the tests run the
 * width-64 builds, as HIP runs them, through gp__attention_fwd_kernel and
 * gp__attention_bwd_kernels); false with why when the grid cannot hold the call. */
bool gp__attn_fwd_portable_plan(const gp__attn_params_t *p, gp_kernel_t kernel, gp__attn_plan_t *plan,
                                char *why, size_t why_len);
bool gp__attn_bwd_portable_plan(const gp__attn_bwd_params_t *p, const gp__attn_bwd_kernels_t *k,
                                gp__attn_plan_t *plan, char *why, size_t why_len);
/* The portable backward's preprocess (D, the zeroed dq accumulator) and postprocesses (dq,
 * the GQA group sum of dk and dv), which the sm_80 main kernel runs between. */
gp_status_t gp__attn_bwd_portable_pre(gp_stream_t stream, const gp__attn_bwd_params_t *p,
                                      const gp__attn_bwd_kernels_t *k);
gp_status_t gp__attn_bwd_portable_post(gp_stream_t stream, const gp__attn_bwd_params_t *p,
                                       const gp__attn_bwd_kernels_t *k);
/* The portable kvcache family's plan for a given build of its kernels. */
bool gp__attn_kv_portable_plan(const gp__attn_kv_params_t *p, const gp__attn_kv_kernels_t *k,
                               gp__attn_plan_t *plan, char *why, size_t why_len);
extern const gp__attn_kv_kernels_t gp__attn_kv_portable_kernels;
/* Runs a kvcache plan in stream order: the append kernel (with k_new), the plan's main
 * kernel, the combine kernel (with splits). Every family's launch ends here. */
gp_status_t gp__attn_kv_launch_plan(gp_stream_t stream, const gp__attn_kv_params_t *p, gp__attn_plan_t *plan);
/* The native-width builds of the portable backward's kernels. */
extern const gp__attn_bwd_kernels_t gp__attn_bwd_portable_kernels;

/* ---- test builds ------------------------------------------------------------------------- */

/* Defined by test builds only (test/dispatch_hook.c). The library refers to them weakly
 * and hidden: in the shared library they resolve to nothing and are never called.
 *   gp__dispatch_test_off(entry)  true when the test run switches entry ("gemm.sm80") off;
 *   gp__dispatch_test_chose(op, kernel)  the kernel the calling thread's last call of op chose. */
extern bool gp__dispatch_test_off(const char *entry) __attribute__((weak, visibility("hidden")));
extern void gp__dispatch_test_chose(gp__op_t op, const char *kernel)
    __attribute__((weak, visibility("hidden")));

#ifdef __cplusplus
}
#endif

#endif /* GP_DISPATCH_H */
