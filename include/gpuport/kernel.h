/**
 * @file gpuport/kernel.h
 * @brief The kernel dialect: write a kernel once, compile it with nvcc, hipcc or the
 *        host C++ compiler (CPU backend), launch it from C with gp_launch().
 * @ingroup kernel
 *
 * A dialect source (`foo.cu`) is C++ using CUDA spellings for the built-ins:
 * @code
 * #include <gpuport/kernel.h>
 * GP_KERNEL void saxpy(int n, float a, const float *x, float *y) {
 *   int i = blockIdx.x * blockDim.x + threadIdx.x;
 *   if (i < n) y[i] = a * x[i] + y[i];
 * }
 * GP_KERNEL_EXPORT(saxpy)
 * @endcode
 * and C host code declares `GP_KERNEL_DECLARE(saxpy);` and launches
 * `gp_launch(GP_KERNEL_REF(saxpy), grid, block, 0, stream, args)`.
 *
 * Targets (chosen by the compiler): CUDA under nvcc, HIP under hipcc / clang -x hip,
 * else the CPU backend (the Makefile compiles dialect sources with
 * `g++ -x c++ -std=c++17 -DGP_BUILD_CPU`). `GP_TARGET_CUDA`, `GP_TARGET_HIP` or
 * `GP_TARGET_CPU` is defined to 1 accordingly.
 *
 * What the dialect provides on every target:
 * - `GP_KERNEL`, `GP_KERNEL_EXPORT(name)`, `GP_DEVICE`, `GP_HOST_DEVICE`; kernel templates
 *   `template <...> GP_KERNEL_TEMPLATE void k(...)` exported to C per instance with
 *   `GP_KERNEL_EXPORT_INSTANCE(c_name, k<float, 256>)`; kernels left as CUDA's
 *   `__global__` (also `static __global__`), launched from C++ with GP_LAUNCH.
 * - `threadIdx`, `blockIdx`, `blockDim`, `gridDim`, `warpSize`, `__syncthreads()`,
 *   `__syncthreads_count/and/or(pred)`, `__threadfence()`, `__threadfence_block()`,
 *   atomics `atomicAdd/Sub/Exch/Min/Max/Inc/Dec/CAS/And/Or/Xor`, math from <math.h>
 *   plus `__expf`, `rsqrtf`, `__fdividef`, ..., `__popc/__popcll/__clz/__clzll/__ffs/
 *   __ffsll/__brev`, `__float_as_int` and friends, `__ldg`, `clock64()`, `min`/`max`,
 *   vector types `float2/float3/float4/int2/int4/uint2/uint4/double2` with `make_*`,
 *   `printf`, `assert`, `__trap()`, `__restrict__`, `__forceinline__`,
 *   `__launch_bounds__`.
 * - Shared memory: `GP_SHARED(type, name, dims)` and `GP_DYNAMIC_SHARED(type, name)`.
 * - Device variables: `__constant__` and `__device__` variables, named from host code
 *   through `GP_SYMBOL_EXPORT(name)` (gp_memcpy_to_symbol(), gp_memcpy_from_symbol()).
 * - Warp operations whose width is `GP_WARP_SIZE`: `gp_lane_id`, `gp_warp_id`,
 *   `gp_shfl`, `gp_shfl_xor`, `gp_shfl_up`, `gp_shfl_down` (each with an optional
 *   `width`, a power of two), `gp_ballot` (64-bit `gp_lane_mask_t`), `gp_any`, `gp_all`,
 *   `gp_syncwarp`, `gp_warp_reduce_sum/max/min`; their masked forms `gp_shfl_sync`,
 *   `gp_shfl_xor_sync`, `gp_shfl_up_sync`, `gp_shfl_down_sync`, `gp_ballot_sync`,
 *   `gp_any_sync`, `gp_all_sync`, `gp_syncwarp_mask`, and `gp_active_mask`,
 *   `GP_FULL_MASK`; the shuffles also take any trivially copyable class (word by word);
 *   `gp_reduce_add/min/max_sync` (int, unsigned) and `gp_reduce_and/or/xor_sync`
 *   (unsigned), CUDA's `__reduce_*_sync`. The maskless forms take every live lane (lanes that exited are
 *   excused, as with CUDA's full mask); a masked form takes exactly the lanes of its
 *   mask, each of which must call it with the same mask. CUDA's spellings
 *   (`__shfl_sync`, `__ballot_sync`, `__syncwarp`, `__activemask`, ...) compile on every
 *   target, with 64-bit masks on the CPU and HIP.
 * - `gp_grid_sync()` in kernels launched with gp_launch_ex() and cooperative = 1.
 * - Atomics on `gp_f16_t` and `gp_bf16_t`: `atomicAdd`, `atomicMax`, `atomicMin`,
 *   `atomicExch` (one rounding to nearest even, as the GPUs' half atomics).
 * - Half conversions of gpuport/types.h (`gp_f16_from_f32`, ...); arithmetic half types
 *   (`__half`, `__nv_bfloat16`, ...) in gpuport/half.h, cooperative groups (`gp_cg`) in
 *   gpuport/cooperative_groups.h.
 * - `__mul24`, `__umul24`, `__mulhi`, `__umulhi`, `__align__(n)`, `__grid_constant__`,
 *   `atomicX_system` / `atomicX_block`, `__ldcs` ... `__stwt`, the char/short/longlong
 *   vector types, `min`/`max` of mixed signedness (unsigned result, as CUDA), `umin`,
 *   `umax`, `llmin`, `llmax`, `ullmin`, `ullmax`; warp match `gp_match_any(v)`,
 *   `gp_match_all(v, &pred)`, their `_sync` forms and CUDA's `__match_any_sync`,
 *   `__match_all_sync` (compared by bits; native on CUDA, from ballots and shuffles on HIP).
 * - Host code of a dialect source (C++): `GP_LAUNCH(kernel, grid, block, shmem,
 *   stream, args...)` for `kernel<<<grid, block, shmem, stream>>>(args...)`,
 *   gp_launch_dim3(), gp_launch_cooperative(), gp_dim3_of(); `gp_launch_ptr()` and
 *   `gp_kernel_of()` for a kernel held in a pointer, `GP_LAUNCH_DEDUCED` for a kernel
 *   template whose arguments are deduced, `GP_SYMBOL_OF` for a variable template's
 *   instance, `GP_CUDART_VERSION` for CUDART_VERSION.
 *
 * CPU notes: a plain `__shared__` variable becomes a thread-local there (one copy per
 * OS worker, shared by the fibers of a block, kept from block to block), and
 * AddressSanitizer does not see overflows of thread-locals; library kernels use
 * GP_SHARED, whose per-block arena has poisoned redzones. Kernels run their threads
 * one after another until a thread reaches a barrier or warp operation; a thread that
 * spins on a value written by another thread of its block must pass a sync point
 * inside the loop. <assert.h> may be included before or after this header: a failed
 * assert in a kernel fails the launch either way. CUDA's `extern __shared__ T s[];`
 * does not compile there: use GP_DYNAMIC_SHARED. `GP_HOST_DEVICE` functions defined in
 * a dialect source should be `static`, so that a second build at another warp width
 * links. On the CPU the executor runs every kernel it can at warp width 64 when
 * `GP_CPU_WARP_SIZE=64` and the program also has the kernel's width-64 build
 * (docs/LAUNCH_ABI.md); faults (trap, assert, divergent barriers, bad warp masks, stack
 * overflow, wild pointers) fail the launch with GP_ERROR_LAUNCH_FAILED. `printf` in a
 * kernel is CUDA's device printf there too: each GPU thread formats into the launch's
 * buffer (`GP_CPU_PRINTF_KB` KiB, default 1024: CUDA's cudaLimitPrintfFifoSize), which
 * the host writes to stdout when the grid ends, each thread's records in its order;
 * records that do not fit are dropped whole and counted on stderr (CUDA overwrites
 * older ones instead). Inside a kernel, call no other C library function that takes a
 * lock (stdio, malloc): a fault there would leave the lock held. With
 * `GP_LAUNCH_TIMEOUT_S` set, a kernel that runs longer fails with GP_ERROR_TIMEOUT.
 *
 * Included from C (the CPU library itself), this header declares only the CPU
 * executor ABI (docs/LAUNCH_ABI.md).
 */
#ifndef GP_KERNEL_H
#define GP_KERNEL_H

/* ---- target ------------------------------------------------------------------- */
#if defined(GP_BUILD_CPU)
#define GP_TARGET_CPU 1
#elif defined(__HIP__) || defined(__HIPCC__)
#define GP_TARGET_HIP 1
#elif defined(__CUDACC__)
#define GP_TARGET_CUDA 1
#else
/** @brief 1 when this translation unit targets the CPU executor (GP_TARGET_CUDA / GP_TARGET_HIP likewise). */
#define GP_TARGET_CPU 1
#endif

#include <gpuport/export.h>
/* The value types the warp match functions take (__match_any_sync's overloads), one list
 * for every target. */
#define GP__MATCH_TYPES(X) \
  X(int) X(unsigned) X(long) X(unsigned long) X(long long) X(unsigned long long) X(float) X(double)
#ifndef GP__RTC
#include <stddef.h>
#include <stdint.h>
#endif
#include <gpuport/kernel_abi.h>

/* ================================================================================ */
/* The CPU executor ABI (version GP_KERNEL_ABI_VERSION). Compiled CPU kernels reach
 * the executor only through the names below; they are exported by the CPU library. */
#if defined(GP_TARGET_CPU)
GP_EXTERN_C_BEGIN

/** @cond GP_INTERNAL */
/** Three unsigned extents or indices (CUDA's uint3). */
typedef struct gp__cpu_uint3 {
  unsigned x, y, z;
} gp__cpu_uint3_t;

/** The per-OS-thread context of the GPU thread running now (initial-exec TLS: the
 *  library's only thread-local, so that it loads with dlopen where static TLS is scarce;
 *  docs/LAUNCH_ABI.md section 3). */
typedef struct gp__cpu_ctx {
  gp__cpu_uint3_t thread_idx;    /* threadIdx */
  gp__cpu_uint3_t block_idx;     /* blockIdx */
  gp__cpu_uint3_t block_dim;     /* blockDim */
  gp__cpu_uint3_t grid_dim;      /* gridDim */
  unsigned tid;                  /* linear thread index in the block (fibers only) */
  unsigned nthreads;             /* threads per block */
  unsigned fibered;              /* nonzero once the block runs as fibers */
  unsigned reserved0;
  unsigned char *dynamic_shared; /* the block's dynamic shared memory (16-byte aligned) */
  void *worker;                  /* the executor's state for this OS thread */
  void *reserved[2];
} gp__cpu_ctx_t;

/** What a warp operation exchanged: the value each live lane brought, and which lanes. */
typedef struct gp__cpu_warp_xchg {
  uint64_t active;  /* bit l: lane l took part */
  uint64_t val[64]; /* lane l's value (bits), valid where active */
} gp__cpu_warp_xchg_t;

/** Barrier flavours of gp__cpu_barrier() (GRID: the block's part of gp_grid_sync). */
enum { GP__CPU_BAR_SYNC = 0, GP__CPU_BAR_COUNT = 1, GP__CPU_BAR_AND = 2, GP__CPU_BAR_OR = 3, GP__CPU_BAR_GRID = 4 };

#if defined(__GNUC__) || defined(__clang__)
#define GP__CPU_TLS_MODEL __attribute__((tls_model("initial-exec")))
#define GP__NORETURN __attribute__((noreturn))
#else
#define GP__CPU_TLS_MODEL
#define GP__NORETURN
#endif

GP_API extern __thread gp__cpu_ctx_t gp__cpu_tls GP__CPU_TLS_MODEL;

/* __syncthreads and its counting forms; returns the count / and / or of pred. */
GP_API int gp__cpu_barrier(int op, int pred, const char *file, int line);
/* Deposits v for the calling lane, waits for every live lane of its warp. */
GP_API const gp__cpu_warp_xchg_t *gp__cpu_warp_sync(uint64_t v, const char *file, int line);
/* Notes a read of an inactive or exited lane (the read returns a poison value). */
GP_API void gp__cpu_warp_bad_lane(unsigned src_lane, const char *file, int line);
/* The block's slot for the GP_SHARED declaration identified by key. */
GP_API void *gp__cpu_shared_slot(size_t bytes, size_t align, const char *key);
/* End the calling GPU thread and fail the launch. */
GP_API GP__NORETURN void gp__cpu_trap(const char *file, int line);
GP_API GP__NORETURN void gp__cpu_assert_fail(const char *expr, const char *file, int line,
                                             const char *func);
/* Additions of ABI version 1 (a kernel using them needs a library that has them): */
/* A warp operation of exactly the lanes in mask, each of which must arrive with it. */
GP_API const gp__cpu_warp_xchg_t *gp__cpu_warp_sync_mask(uint64_t mask, uint64_t v, const char *file,
                                                         int line);
/* Ends the calling GPU thread and fails the launch with the formatted reason. */
GP_API GP__NORETURN void gp__cpu_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* gp_grid_sync(): the block's barrier, then the grid's (cooperative launches). */
GP_API void gp__cpu_grid_sync(const char *file, int line);
/* Called when a kernel's object is loaded / unloaded (GP_KERNEL_EXPORT): the executor
 * finds a kernel's width-64 build by name when GP_CPU_WARP_SIZE=64. */
GP_API int gp__cpu_kernel_register(const struct gp_kernel_s *k);
GP_API void gp__cpu_kernel_unregister(const struct gp_kernel_s *k);
/* The dialect's printf: in a kernel, formats into the launch's output buffer, written out
 * when the grid ends (CUDA's device printf); elsewhere, printf. */
GP_API int gp__cpu_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** @endcond */

GP_EXTERN_C_END
#endif /* GP_TARGET_CPU */

#ifdef __cplusplus /* ====== the dialect (C++ under every compiler) ================ */

#if !defined(GP__RTC) /* NVRTC and hipRTC have math, printf and memcpy built in */
#include <math.h>
#include <stdio.h>
#include <string.h>
#if defined(GP_TARGET_CPU)
#include <cstdio> /* before the printf macro below: <cstdio> #undefs printf */
#include <utility>
#else
#include <assert.h>
#endif
#include <gpuport/runtime.h>
/* Host code of a dialect source queries its kernels (occupancy, attributes). */
#include <gpuport/module.h>
#elif defined(__HIPCC_RTC__) && !defined(assert)
#define assert(e) ((e) ? (void)0 : __builtin_trap())
#endif
#include <gpuport/types.h>

#if defined(GP_TARGET_HIP)
#include <hip/hip_runtime.h>
#endif
/* NVRTC and hipRTC have no cooperative groups header built in: gp_grid_sync() is for
 * kernels built ahead of time. */
#if defined(GP_TARGET_HIP) && !defined(GP__RTC)
#include <hip/hip_cooperative_groups.h>
#elif defined(GP_TARGET_CUDA) && !defined(GP__RTC)
#include <cooperative_groups.h>
#endif

/* ---- warp width ------------------------------------------------------------------ */
/** @brief Lanes per warp the kernel is compiled for: 32 on CUDA, 64 on HIP (CDNA),
 *         32 on the CPU unless built with -DGP_WARP_SIZE=64. Never hard-code 32. */
#ifndef GP_WARP_SIZE
#if defined(GP_TARGET_HIP)
#define GP_WARP_SIZE 64
#else
#define GP_WARP_SIZE 32
#endif
#endif
#if GP_WARP_SIZE != 32 && GP_WARP_SIZE != 64
#error "GP_WARP_SIZE must be 32 or 64"
#endif
#if defined(GP_TARGET_CUDA) && GP_WARP_SIZE != 32
#error "CUDA warps have 32 lanes: GP_WARP_SIZE must be 32 under nvcc"
#endif

/** @brief A set of lanes, bit l for lane l (64 bits at every width). */
typedef uint64_t gp_lane_mask_t;

/* ---- qualifiers -------------------------------------------------------------------- */
#if defined(GP_TARGET_CPU)
/* Internal linkage, so a second build of the same source (another warp width) links. */
#define GP_KERNEL static
/* A kernel template (CUDA's `template <...> __global__`): internal linkage as GP_KERNEL. */
#define GP_KERNEL_TEMPLATE static
#define GP_DEVICE static inline
#define __device__
#define __host__
/* A kernel left as CUDA wrote it (`__global__ void k`, `static __global__`, a template):
 * the width-64 build's instances get other symbol names (an ABI tag), so a second build
 * of the source links and never stands in for the first. */
#if GP_WARP_SIZE == 64
#define __global__ __attribute__((abi_tag("gpw64")))
#else
#define __global__
#endif
/* An inline variable (C++17), so a second build of the source (another warp width)
 * shares the variable; hidden, because an inline variable of default visibility is
 * STB_GNU_UNIQUE under GCC, and one such symbol makes the whole shared object NODELETE
 * (dlclose would never unmap a module). Write `__constant__ T x;`: with `static` in
 * front GCC notes that the visibility attribute is ignored (the variable is then the
 * translation unit's own, which is as good). */
#define __constant__ inline __attribute__((visibility("hidden")))
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
/* A plain __shared__ variable: one per OS worker (see the file comment). */
#define __shared__ static thread_local
#else
#define GP_KERNEL extern "C" __global__
/** @brief A kernel template: `template <class T, unsigned B> GP_KERNEL_TEMPLATE void
 *         reduce(const T *in, T *out, int n)` (GP_KERNEL is `extern "C"`, which a template
 *         cannot be). Export an instance to C with GP_KERNEL_EXPORT_INSTANCE(); launch one
 *         from C++ with `GP_LAUNCH((reduce<float, 256>), ...)`. */
#define GP_KERNEL_TEMPLATE __global__
#define GP_DEVICE static __device__ inline
#endif
/** @brief Descriptor visibility: the descriptor is what C host code links against. */
#define GP__KERNEL_VISIBLE __attribute__((visibility("default"), used))
#if !defined(GP__RTC)
/** @cond GP_INTERNAL */
/* Registers a descriptor with the library's table while its object is loaded
 * (gp__abi_register): the library looks a kernel or variable up before reading it. */
struct gp__dreg {
  const void *d;
  explicit gp__dreg(const void *p) : d(p) { (void)gp__abi_register(p); }
  ~gp__dreg() { gp__abi_unregister(d); }
};
/** @endcond */
#endif

/* ---- descriptor emission --------------------------------------------------------- */
/** @cond GP_INTERNAL */
/* Hidden: its static members are template statics (vague linkage), which GCC makes
 * STB_GNU_UNIQUE at default visibility, and a unique symbol makes a module NODELETE
 * (never unmapped by dlclose), whatever flags the module was built with. */
template <typename Sig> struct __attribute__((visibility("hidden"))) gp__ksig;
template <typename... A> struct __attribute__((visibility("hidden"))) gp__ksig<void(A...)> {
  static constexpr int count = (int)sizeof...(A);
  static constexpr uint16_t sizes[sizeof...(A) > 0 ? sizeof...(A) : 1] = {(uint16_t)sizeof(A)...};
#if defined(GP_TARGET_CPU)
  /* The per-block loop: the kernel body is called directly (it inlines), the arguments
   * are unpacked once per block, the thread context lives in initial-exec TLS. */
  template <void (*fn)(A...)> static __attribute__((always_inline)) inline void loop(A... a) {
    gp__cpu_ctx_t *c = &gp__cpu_tls;
    const unsigned nx = c->block_dim.x, ny = c->block_dim.y, nz = c->block_dim.z;
    for (unsigned z = 0; z < nz; z++) {
      c->thread_idx.z = z;
      for (unsigned y = 0; y < ny; y++) {
        c->thread_idx.y = y;
        for (unsigned x = 0; x < nx; x++) {
          c->thread_idx.x = x;
          fn(a...);
          if (__builtin_expect(c->fibered != 0, 0)) return; /* the rest run as fibers */
        }
      }
    }
  }
  template <void (*fn)(A...), size_t... I>
  static inline void block_unpacked(void **args, std::index_sequence<I...>) {
    (void)args;
    loop<fn>(*static_cast<A *>(args[I])...);
  }
  template <void (*fn)(A...)> static void run_block(void **args) {
    block_unpacked<fn>(args, std::index_sequence_for<A...>{});
  }
  template <void (*fn)(A...), size_t... I>
  static inline void thread_unpacked(void **args, std::index_sequence<I...>) {
    (void)args;
    fn(*static_cast<A *>(args[I])...);
  }
  template <void (*fn)(A...)> static void run_thread(void **args) {
    thread_unpacked<fn>(args, std::index_sequence_for<A...>{});
  }
#endif
};
/** @endcond */

/** @cond GP_INTERNAL */
/* The function type of a kernel named by its function (GP_KERNEL_EXPORT) or by a pointer
 * to it (a template argument). */
template <typename T> struct gp__sig { typedef T type; };
template <typename T> struct gp__sig<T *> { typedef T type; };
#define GP__KSIG(...) gp__ksig<typename gp__sig<decltype(__VA_ARGS__)>::type>
#if defined(GP_TARGET_CPU)
#define GP__KBACKEND GP_BACKEND_CPU
/* The descriptor of kernel fn (a function or a constant pointer to one) named namestr. */
#define GP__KDESC(namestr, ...)                                                              \
  {GP_KERNEL_MAGIC, GP_KERNEL_ABI_VERSION, namestr, (int)GP_BACKEND_CPU, GP_WARP_SIZE,      \
   GP__KSIG(__VA_ARGS__)::count, GP__KSIG(__VA_ARGS__)::sizes, nullptr,                     \
   &GP__KSIG(__VA_ARGS__)::template run_block<__VA_ARGS__>,                                 \
   &GP__KSIG(__VA_ARGS__)::template run_thread<__VA_ARGS__>, 1024, 0u,                      \
   {nullptr, nullptr, nullptr, nullptr}}
/* The executor's table, which also finds a kernel's width-64 build by name. */
#define GP__KREGISTER(d) gp__cpu_kernel_register(d)
#define GP__KUNREGISTER(d) gp__cpu_kernel_unregister(d)
#elif !defined(GP__RTC)
#if defined(GP_TARGET_CUDA)
#define GP__KBACKEND GP_BACKEND_CUDA
#else
#define GP__KBACKEND GP_BACKEND_HIP
#endif
#define GP__KDESC(namestr, ...)                                                              \
  {GP_KERNEL_MAGIC, GP_KERNEL_ABI_VERSION, namestr, (int)GP__KBACKEND, GP_WARP_SIZE,        \
   GP__KSIG(__VA_ARGS__)::count, GP__KSIG(__VA_ARGS__)::sizes, (const void *)(__VA_ARGS__), \
   nullptr, nullptr, 1024, 0u, {nullptr, nullptr, nullptr, nullptr}}
#define GP__KREGISTER(d) gp__abi_register(d)
#define GP__KUNREGISTER(d) gp__abi_unregister(d)
#endif

#if defined(GP_TARGET_CPU) || !defined(GP__RTC)
/* Registers an exported descriptor while its object is loaded, and lists it with its
 * kernel, so that GP_LAUNCH of that kernel (gp__kdesc) launches the exported descriptor
 * wherever the export stands in the source. The list is the object's own (hidden) and
 * changes only while the dynamic loader, under its lock, runs the object's static
 * constructors and destructors. */
struct __attribute__((visibility("hidden"))) gp__kreg {
  const struct gp_kernel_s *k;
  const void *fn;
  gp__kreg *next;
  static gp__kreg *&head() {
    static gp__kreg *h;
    return h;
  }
  gp__kreg(const struct gp_kernel_s *p, const void *f) : k(p), fn(f), next(head()) {
    (void)GP__KREGISTER(p);
    head() = this;
  }
  ~gp__kreg() {
    for (gp__kreg **q = &head(); *q; q = &(*q)->next)
      if (*q == this) {
        *q = next;
        break;
      }
    GP__KUNREGISTER(k);
  }
  static const struct gp_kernel_s *find(const void *f) {
    for (const gp__kreg *r = head(); r; r = r->next)
      if (r->fn == f) return r->k;
    return nullptr;
  }
};
#endif

#if !defined(GP__RTC)
/* The name of a kernel instance from the compiler's spelling of the template argument
 * (GCC: "[with auto F = reduce<float, 256>]", Clang: "[F = &reduce<float, 256>]"), so
 * that both warp-width builds of a source give an instance the same name. */
static inline void gp__kname(const char *pretty, char *out, size_t cap) {
  const char *p = strstr(pretty, "[with auto F = ");
  if (p) p += 15;
  else if ((p = strstr(pretty, "[F = ")) != nullptr) p += 5;
  else p = pretty;
  if (*p == '&') p++;
  size_t n = strlen(p);
  if (n && p[n - 1] == ']') n--;
  if (n >= cap) n = cap - 1;
  memcpy(out, p, n);
  out[n] = '\0';
}
/* The descriptor GP_LAUNCH launches kernel F with: the one exported for F (GP_KERNEL_EXPORT,
 * GP_KERNEL_EXPORT_INSTANCE), else one made and registered for the instance when the
 * launch is instantiated (a kernel template launched from C++ needs no export). Hidden:
 * a template static of default visibility is STB_GNU_UNIQUE under GCC (see gp__ksig). */
template <auto F> struct __attribute__((visibility("hidden"))) gp__kdesc {
  struct holder {
    char name[256];
    struct gp_kernel_s d;
    holder() {
      gp__kname(__PRETTY_FUNCTION__, name, sizeof name);
      d = gp_kernel_s GP__KDESC(name, F);
      (void)GP__KREGISTER(&d);
    }
    ~holder() { GP__KUNREGISTER(&d); }
  };
  static inline holder made;
  static inline const struct gp_kernel_s *chosen;
  static const struct gp_kernel_s *get() {
    const struct gp_kernel_s *c = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
    if (!c) {
      c = gp__kreg::find((const void *)F);
      if (!c) c = &made.d;
      __atomic_store_n(&chosen, c, __ATOMIC_RELEASE);
    }
    return c;
  }
};
#endif
/** @endcond */

/**
 * @brief Emits the descriptor of kernel @p name (GP_KERNEL_SYMBOL(name)), with C linkage
 *        and default visibility, in the kernel's own translation unit. Put it after the
 *        kernel's definition, at file scope.
 */
#if defined(GP__RTC) && !defined(GP_TARGET_CPU)
/* Under NVRTC and hipRTC there is no host side: the module's kernels are found by name. */
#define GP_KERNEL_EXPORT(name)
#define GP_KERNEL_EXPORT_INSTANCE(sym, ...)
#else
#define GP_KERNEL_EXPORT(name)                                                              \
  extern "C" GP__KERNEL_VISIBLE const struct gp_kernel_s GP_KERNEL_SYMBOL(name) =           \
      GP__KDESC(#name, name);                                                               \
  static const gp__kreg GP__CAT(gp__kreg_, GP_KERNEL_SYMBOL(name))(&GP_KERNEL_SYMBOL(name), \
                                                                  (const void *)(name));
/**
 * @brief Emits the descriptor of an instance of a kernel template under the C name
 *        @p sym: `GP_KERNEL_EXPORT_INSTANCE(reduce_f32_256, reduce<float, 256>)`; C code
 *        declares it with GP_KERNEL_DECLARE(reduce_f32_256) and launches
 *        GP_KERNEL_REF(reduce_f32_256). The kernel's name (gp_kernel_name()) is the
 *        instance as written ("reduce<float, 256>"). Put it after the template's
 *        definition, at file scope.
 */
#define GP_KERNEL_EXPORT_INSTANCE(sym, ...)                                                 \
  extern "C" GP__KERNEL_VISIBLE const struct gp_kernel_s GP_KERNEL_SYMBOL(sym) =            \
      GP__KDESC(#__VA_ARGS__, __VA_ARGS__);                                                 \
  static const gp__kreg GP__CAT(gp__kreg_, GP_KERNEL_SYMBOL(sym))(&GP_KERNEL_SYMBOL(sym),   \
                                                                 (const void *)(__VA_ARGS__));
#endif

/**
 * @brief Emits the descriptor of device variable @p name (a `__constant__` or file-scope
 *        `__device__` variable defined above it in this source), GP_SYMBOL_SYMBOL(name),
 *        for gp_memcpy_to_symbol() and gp_memcpy_from_symbol() from host code:
 * @code
 * __constant__ float coeffs[16];
 * GP_SYMBOL_EXPORT(coeffs)
 * // host (C): GP_SYMBOL_DECLARE(coeffs);  gp_memcpy_to_symbol(GP_SYMBOL_REF(coeffs), h, sizeof h, 0);
 * @endcode
 *        On the CPU a `__constant__` variable is an inline variable, one for every warp
 *        width the source is built at; a `__device__` variable in a source built at two
 *        widths must be `static` (each build then has its own).
 */
#if defined(GP__RTC) && !defined(GP_TARGET_CPU)
#define GP_SYMBOL_EXPORT(name)
#else
#define GP_SYMBOL_EXPORT(name)                                                              \
  extern "C" GP__KERNEL_VISIBLE const struct gp_symbol_s GP_SYMBOL_SYMBOL(name) = {         \
      GP_SYMBOL_MAGIC, GP_KERNEL_ABI_VERSION, #name, (int)GP__KBACKEND, 0,                  \
      (uint64_t)sizeof(name), (const void *)&(name), {nullptr, nullptr}};                   \
  static const gp__dreg GP__CAT(gp__dreg_, GP_SYMBOL_SYMBOL(name))(&GP_SYMBOL_SYMBOL(name));
#endif


#if !defined(GP__RTC)
/** @cond GP_INTERNAL */
/* The descriptor of device variable *F made and registered at its first use from host
 * code (an instance of a variable template, which GP_SYMBOL_EXPORT cannot name).
 * Hidden, as gp__kdesc. */
template <auto F> struct __attribute__((visibility("hidden"))) gp__sdesc {
  struct holder {
    char name[256];
    struct gp_symbol_s d;
    holder() {
      gp__kname(__PRETTY_FUNCTION__, name, sizeof name);
      d = gp_symbol_s{GP_SYMBOL_MAGIC, GP_KERNEL_ABI_VERSION, name, (int)GP__KBACKEND, 0,
                      (uint64_t)sizeof(*F), (const void *)F, {nullptr, nullptr}};
      (void)gp__abi_register(&d);
    }
    ~holder() { gp__abi_unregister(&d); }
  };
  static inline holder made;
  static const struct gp_symbol_s *get() { return &made.d; }
};
/** @endcond */
/**
 * @brief The descriptor (gp_symbol_t) of a `__constant__` or `__device__` variable named
 *        from C++ host code of the source that defines it, for gp_memcpy_to_symbol() and
 *        gp_memcpy_from_symbol(): `GP_SYMBOL_OF(coeffs<float>)` for an instance of a
 *        variable template (`template <class T> __constant__ T coeffs[16];`), which
 *        GP_SYMBOL_EXPORT cannot name. The descriptor is registered at its first use.
 */
#define GP_SYMBOL_OF(...) (gp__sdesc<&(__VA_ARGS__)>::get())
#endif

/* ---- shared memory ------------------------------------------------------------------ */
/**
 * @brief Declares block-shared storage `type name dims` inside a kernel or device
 *        function: `GP_SHARED(float, tile, [32][33]);`, `GP_SHARED(int, count, );`.
 *        No initializer (as `__shared__`); contents are undefined at block start.
 *        On the CPU each declaration gets one slot of the block's arena, the same
 *        address for every thread of the block, with redzones AddressSanitizer sees.
 */
#if defined(GP_TARGET_CPU)
#define GP_SHARED(type, name, dims)                                                       \
  static const char GP__CAT(gp__shared_key_, name)[] = #name;                             \
  typedef type GP__CAT(gp__shared_t_, name) dims;                                         \
  GP__CAT(gp__shared_t_, name) &name = *reinterpret_cast<GP__CAT(gp__shared_t_, name) *>( \
      gp__cpu_shared_slot(sizeof(GP__CAT(gp__shared_t_, name)), alignof(type),            \
                          GP__CAT(gp__shared_key_, name)))
/** @brief `type *name` = the block's dynamic shared memory (16-byte aligned). */
#define GP_DYNAMIC_SHARED(type, name) type *name = reinterpret_cast<type *>(gp__cpu_tls.dynamic_shared)
#else
#define GP_SHARED(type, name, dims) __shared__ type name dims
#define GP_DYNAMIC_SHARED(type, name)                                                     \
  extern __shared__ __attribute__((aligned(16))) unsigned char gp__dynamic_shared_[];     \
  type *name = reinterpret_cast<type *>(gp__dynamic_shared_)
#endif

/* =================================================================================== */
#if defined(GP_TARGET_CPU) /* ---- the CPU target: built-ins ------------------------- */

typedef gp__cpu_uint3_t uint3;
static inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { uint3 r; r.x = x; r.y = y; r.z = z; return r; }
/** CUDA's dim3: unspecified extents are 1. */
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(gp__cpu_uint3_t u) : x(u.x), y(u.y), z(u.z) {}
};
#define threadIdx (gp__cpu_tls.thread_idx)
#define blockIdx (gp__cpu_tls.block_idx)
#define blockDim (gp__cpu_tls.block_dim)
#define gridDim (gp__cpu_tls.grid_dim)
static const int warpSize = GP_WARP_SIZE;

/* Barriers. The call site is recorded (default arguments are evaluated at the caller)
 * so that divergent or never-completing barriers can be reported by site. */
static inline void __syncthreads(const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
  (void)gp__cpu_barrier(GP__CPU_BAR_SYNC, 0, file, line);
}
static inline int __syncthreads_count(int pred, const char *file = __builtin_FILE(),
                                      int line = __builtin_LINE()) {
  return gp__cpu_barrier(GP__CPU_BAR_COUNT, pred, file, line);
}
static inline int __syncthreads_and(int pred, const char *file = __builtin_FILE(),
                                    int line = __builtin_LINE()) {
  return gp__cpu_barrier(GP__CPU_BAR_AND, pred, file, line);
}
static inline int __syncthreads_or(int pred, const char *file = __builtin_FILE(),
                                   int line = __builtin_LINE()) {
  return gp__cpu_barrier(GP__CPU_BAR_OR, pred, file, line);
}
static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block(void) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* printf, as CUDA's device printf: each GPU thread's output goes to a buffer of the
 * launch that the host writes out when the grid ends, in each thread's order (the
 * executor takes no stdio lock inside a kernel, so a fault there never wedges the
 * process; docs/LAUNCH_ABI.md). Host code of a dialect source gets plain printf. */
namespace std {
using ::gp__cpu_printf;
}
#define printf(...) gp__cpu_printf(__VA_ARGS__)

/* __trap() and assert() end the thread and fail the launch (the library stays usable). */
#define __trap() gp__cpu_trap(__FILE__, __LINE__)
#include <assert.h>
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : gp__cpu_assert_fail(#e, __FILE__, __LINE__, __func__))
#endif
/* <assert.h> included again after this header redefines assert with the C library's
 * __assert_fail (glibc: its declarations are not repeated, only the macro): the name then
 * reaches the dialect's, so a failed device assert still fails the launch instead of
 * aborting the process (outside a kernel it aborts, as the C assert). */
static inline GP__NORETURN void gp__assert_fail_c(const char *e, const char *file, unsigned line,
                                                  const char *func) noexcept {
  gp__cpu_assert_fail(e, file, (int)line, func);
}
#define __assert_fail gp__assert_fail_c

/* ---- atomics: relaxed, as on GPUs (they are not fences) ---------------------------- */
#define GP__AT_RMW(fn, builtin, T)                                                         \
  static inline T fn(T *p, T v) { return builtin(p, v, __ATOMIC_RELAXED); }
GP__AT_RMW(atomicAdd, __atomic_fetch_add, int)
GP__AT_RMW(atomicAdd, __atomic_fetch_add, unsigned)
GP__AT_RMW(atomicAdd, __atomic_fetch_add, unsigned long long)
GP__AT_RMW(atomicSub, __atomic_fetch_sub, int)
GP__AT_RMW(atomicSub, __atomic_fetch_sub, unsigned)
GP__AT_RMW(atomicExch, __atomic_exchange_n, int)
GP__AT_RMW(atomicExch, __atomic_exchange_n, unsigned)
GP__AT_RMW(atomicExch, __atomic_exchange_n, unsigned long long)
GP__AT_RMW(atomicAnd, __atomic_fetch_and, int)
GP__AT_RMW(atomicAnd, __atomic_fetch_and, unsigned)
GP__AT_RMW(atomicAnd, __atomic_fetch_and, unsigned long long)
GP__AT_RMW(atomicOr, __atomic_fetch_or, int)
GP__AT_RMW(atomicOr, __atomic_fetch_or, unsigned)
GP__AT_RMW(atomicOr, __atomic_fetch_or, unsigned long long)
GP__AT_RMW(atomicXor, __atomic_fetch_xor, int)
GP__AT_RMW(atomicXor, __atomic_fetch_xor, unsigned)
GP__AT_RMW(atomicXor, __atomic_fetch_xor, unsigned long long)
#undef GP__AT_RMW
#define GP__AT_CAS_OP(fn, T, expr)                                                         \
  static inline T fn(T *p, T v) {                                                          \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED), nv;                                      \
    do {                                                                                   \
      nv = (expr);                                                                         \
    } while (!__atomic_compare_exchange_n(p, &old, nv, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)); \
    return old;                                                                            \
  }
GP__AT_CAS_OP(atomicMax, int, old > v ? old : v)
GP__AT_CAS_OP(atomicMax, unsigned, old > v ? old : v)
GP__AT_CAS_OP(atomicMax, long long, old > v ? old : v)
GP__AT_CAS_OP(atomicMax, unsigned long long, old > v ? old : v)
GP__AT_CAS_OP(atomicMin, int, old < v ? old : v)
GP__AT_CAS_OP(atomicMin, unsigned, old < v ? old : v)
GP__AT_CAS_OP(atomicMin, long long, old < v ? old : v)
GP__AT_CAS_OP(atomicMin, unsigned long long, old < v ? old : v)
GP__AT_CAS_OP(atomicInc, unsigned, old >= v ? 0u : old + 1u)
GP__AT_CAS_OP(atomicDec, unsigned, (old == 0u || old > v) ? v : old - 1u)
#undef GP__AT_CAS_OP
#define GP__AT_CAS(T)                                                                      \
  static inline T atomicCAS(T *p, T expected, T desired) {                                 \
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED); \
    return expected;                                                                       \
  }
GP__AT_CAS(int)
GP__AT_CAS(unsigned)
GP__AT_CAS(unsigned long long)
#undef GP__AT_CAS
/* Floating-point atomics by compare-and-swap on the bits. */
#define GP__AT_FP(fn, T, U, expr)                                                          \
  static inline T fn(T *p, T v) {                                                          \
    U *q = reinterpret_cast<U *>(p);                                                       \
    U ob = __atomic_load_n(q, __ATOMIC_RELAXED), nb;                                       \
    T old;                                                                                 \
    do {                                                                                   \
      memcpy(&old, &ob, sizeof old);                                                       \
      T nvv = (expr);                                                                      \
      memcpy(&nb, &nvv, sizeof nb);                                                        \
    } while (!__atomic_compare_exchange_n(q, &ob, nb, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)); \
    return old;                                                                            \
  }
GP__AT_FP(atomicAdd, float, uint32_t, old + v)
GP__AT_FP(atomicAdd, double, uint64_t, old + v)
#undef GP__AT_FP
static inline float atomicExch(float *p, float v) {
  uint32_t nb, ob;
  memcpy(&nb, &v, sizeof nb);
  ob = __atomic_exchange_n(reinterpret_cast<uint32_t *>(p), nb, __ATOMIC_RELAXED);
  float r;
  memcpy(&r, &ob, sizeof r);
  return r;
}

/* ---- math and bit intrinsics ----------------------------------------------------------- */
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
/* glibc's <math.h> declares __expf and friends itself: map the CUDA intrinsics by macro. */
#define __expf(x) expf(x)
#define __exp10f(x) powf(10.0f, (x))
#define __logf(x) logf(x)
#define __log2f(x) log2f(x)
#define __log10f(x) log10f(x)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
#define __tanf(x) tanf(x)
#define __powf(x, y) powf((x), (y))
static inline float __fdividef(float x, float y) { return x / y; }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return sqrtf(x); }
static inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
static inline float __fadd_rn(float x, float y) { return x + y; }
static inline float __fmul_rn(float x, float y) { return x * y; }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : (x == x ? x : 0.0f)); }
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __float_as_int(float x) { int r; memcpy(&r, &x, sizeof r); return r; }
static inline unsigned __float_as_uint(float x) { unsigned r; memcpy(&r, &x, sizeof r); return r; }
static inline float __int_as_float(int x) { float r; memcpy(&r, &x, sizeof r); return r; }
static inline float __uint_as_float(unsigned x) { float r; memcpy(&r, &x, sizeof r); return r; }
static inline long long __double_as_longlong(double x) { long long r; memcpy(&r, &x, sizeof r); return r; }
static inline double __longlong_as_double(long long x) { double r; memcpy(&r, &x, sizeof r); return r; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}
static inline long long clock64(void) {
#if defined(__x86_64__) || defined(__i386__)
  return (long long)__builtin_ia32_rdtsc();
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
#endif
}
template <typename T> static inline T __ldg(const T *p) { return *p; }
#define GP__MINMAX(T)                                                                      \
  static inline T min(T a, T b) { return a < b ? a : b; }                                  \
  static inline T max(T a, T b) { return a > b ? a : b; }
GP__MINMAX(int)
GP__MINMAX(unsigned)
GP__MINMAX(long long)
GP__MINMAX(unsigned long long)
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
/* Mixed signedness, as CUDA's: the unsigned type wins. */
static inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
static inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
static inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
static inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
static inline unsigned long long min(long long a, unsigned long long b) { return min((unsigned long long)a, b); }
static inline unsigned long long min(unsigned long long a, long long b) { return min(a, (unsigned long long)b); }
static inline unsigned long long max(long long a, unsigned long long b) { return max((unsigned long long)a, b); }
static inline unsigned long long max(unsigned long long a, long long b) { return max(a, (unsigned long long)b); }
#undef GP__MINMAX

/* 24-bit and high-half multiplies. */
/* The low 24 bits of each operand, sign-extended (shifted through unsigned: no overflow). */
static inline int gp__sext24(int x) { return (int)((unsigned)x << 8) >> 8; }
static inline int __mul24(int x, int y) { return (int)((unsigned)gp__sext24(x) * (unsigned)gp__sext24(y)); }
static inline unsigned __umul24(unsigned x, unsigned y) { return (x & 0xffffffu) * (y & 0xffffffu); }
static inline int __mulhi(int x, int y) { return (int)(((long long)x * y) >> 32); }
static inline unsigned __umulhi(unsigned x, unsigned y) { return (unsigned)(((unsigned long long)x * y) >> 32); }
static inline long long __mul64hi(long long x, long long y) { return (long long)(((__int128)x * y) >> 64); }
static inline unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
  return (unsigned long long)(((unsigned __int128)x * y) >> 64);
}
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__

/* ---- vector types (CUDA's layouts and alignments) ---------------------------------------- */
#define GP__VEC2(T, N, A)                                                                  \
  struct __attribute__((aligned(A))) N { T x, y; };                                        \
  static inline N make_##N(T x, T y) { N r; r.x = x; r.y = y; return r; }
#define GP__VEC3(T, N)                                                                     \
  struct N { T x, y, z; };                                                                 \
  static inline N make_##N(T x, T y, T z) { N r; r.x = x; r.y = y; r.z = z; return r; }
#define GP__VEC4(T, N, A)                                                                  \
  struct __attribute__((aligned(A))) N { T x, y, z, w; };                                  \
  static inline N make_##N(T x, T y, T z, T w) { N r; r.x = x; r.y = y; r.z = z; r.w = w; return r; }
GP__VEC2(float, float2, 8)
GP__VEC3(float, float3)
GP__VEC4(float, float4, 16)
GP__VEC2(int, int2, 8)
GP__VEC3(int, int3)
GP__VEC4(int, int4, 16)
GP__VEC2(unsigned, uint2, 8)
GP__VEC4(unsigned, uint4, 16)
GP__VEC2(double, double2, 16)
GP__VEC2(char, char2, 2)
GP__VEC3(char, char3)
GP__VEC4(char, char4, 4)
GP__VEC2(unsigned char, uchar2, 2)
GP__VEC3(unsigned char, uchar3)
GP__VEC4(unsigned char, uchar4, 4)
GP__VEC2(short, short2, 4)
GP__VEC3(short, short3)
GP__VEC4(short, short4, 8)
GP__VEC2(unsigned short, ushort2, 4)
GP__VEC3(unsigned short, ushort3)
GP__VEC4(unsigned short, ushort4, 8)
GP__VEC2(long long, longlong2, 16)
GP__VEC2(unsigned long long, ulonglong2, 16)
GP__VEC3(double, double3)
GP__VEC4(double, double4, 16)
#undef GP__VEC2
#undef GP__VEC3
#undef GP__VEC4

/* ---- warps --------------------------------------------------------------------------- */
/** @cond GP_INTERNAL */
/* The linear thread index (the per-block loop keeps only threadIdx up to date). */
static inline unsigned gp__linear_tid(void) {
  const gp__cpu_ctx_t *c = &gp__cpu_tls;
  return c->thread_idx.x + c->block_dim.x * (c->thread_idx.y + c->block_dim.y * c->thread_idx.z);
}
/** @endcond */
/** @brief The calling thread's lane in its warp (0 .. GP_WARP_SIZE-1). */
static inline unsigned gp_lane_id(void) { return gp__linear_tid() % GP_WARP_SIZE; }
/** @brief The calling thread's warp in its block. */
static inline unsigned gp_warp_id(void) { return gp__linear_tid() / GP_WARP_SIZE; }

/** @cond GP_INTERNAL */
template <typename T> static inline uint64_t gp__to_bits(T v) {
  uint64_t b = 0;
  memcpy(&b, &v, sizeof v);
  return b;
}
template <typename T> static inline T gp__from_bits(uint64_t b) {
  T v;
  memcpy(&v, &b, sizeof v);
  return v;
}
/* What a read of an inactive or exited lane returns: NaN, or a recognisable pattern. */
template <typename T> static inline T gp__poison(void) { return gp__from_bits<T>(0x7fbad0beu); }
template <> inline float gp__poison<float>(void) { return __builtin_nanf("0xbad"); }
template <> inline double gp__poison<double>(void) { return __builtin_nan("0xbad"); }
/* The value of lane src in exchange x, or poison (reported) when src did not take part. */
template <typename T>
static inline T gp__lane_value(const gp__cpu_warp_xchg_t *x, unsigned src, const char *file, int line) {
  if (!((x->active >> src) & 1u)) {
    gp__cpu_warp_bad_lane(src, file, line);
    return gp__poison<T>();
  }
  return gp__from_bits<T>(x->val[src]);
}
/* The exchange of a warp operation: every live lane (mask 0, the maskless forms), or
 * exactly the lanes of mask (the _sync forms). */
static inline const gp__cpu_warp_xchg_t *gp__warp_xchg(gp_lane_mask_t mask, uint64_t v, const char *file,
                                                        int line) {
  return mask ? gp__cpu_warp_sync_mask(mask, v, file, line) : gp__cpu_warp_sync(v, file, line);
}
enum { GP__SHFL_IDX, GP__SHFL_UP, GP__SHFL_DOWN, GP__SHFL_XOR };
/* A shuffle with PTX's shfl.sync rules (the HIP functions compute the same): the warp
 * is cut into groups of width lanes; idx reads lane (arg mod width) of the caller's
 * group, up/down read arg lanes below/above within the group, xor reads lane ^ arg,
 * which may lie in an earlier group but not a later one (HIP's rule for arg >= the
 * warp width; NVIDIA keeps its low 5 bits). A source outside these bounds gives the
 * caller's own value; width must be a power of two no larger than the warp. */
template <typename T>
static inline T gp__shfl(gp_lane_mask_t mask, T v, int kind, unsigned arg, int width, const char *file,
                         int line) {
  if (__builtin_expect(width <= 0 || width > GP_WARP_SIZE || (width & (width - 1)) != 0, 0))
    gp__cpu_fail(file, line, "shuffle width %d is not a power of two in 1..%d", width, GP_WARP_SIZE);
  const gp__cpu_warp_xchg_t *x = gp__warp_xchg(mask, gp__to_bits(v), file, line);
  const unsigned l = gp_lane_id(), w = (unsigned)width, seg = l & ~(w - 1u);
  unsigned j = l;
  bool ok;
  switch (kind) {
  case GP__SHFL_IDX: j = seg | (arg & (w - 1u)); ok = true; break;
  case GP__SHFL_UP: j = l - arg; ok = arg <= l - seg; break;
  case GP__SHFL_DOWN: j = l + arg; ok = arg < w && (l - seg) + arg < w; break;
  default: j = l ^ arg; ok = j < seg + w; break;
  }
  return ok ? gp__lane_value<T>(x, j, file, line) : v;
}
/* The GPU's butterfly (shfl_xor with offsets W/2 .. 1) gives every lane the same
 * value, that of this tree in this order; lanes that did not take part count as id. */
template <typename T, typename Op>
static inline T gp__warp_tree(T v, T id, Op op, const char *file, int line) {
  const gp__cpu_warp_xchg_t *x = gp__cpu_warp_sync(gp__to_bits(v), file, line);
  T a[GP_WARP_SIZE];
  for (unsigned l = 0; l < GP_WARP_SIZE; l++)
    a[l] = ((x->active >> l) & 1u) ? gp__from_bits<T>(x->val[l]) : id;
  for (unsigned o = GP_WARP_SIZE / 2; o > 0; o /= 2)
    for (unsigned l = 0; l < o; l++) a[l] = op(a[l], a[l + o]);
  return a[0];
}
static inline float gp__addf(float a, float b) { return a + b; }
static inline int gp__addi(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
static inline int gp__maxi(int a, int b) { return a > b ? a : b; }
static inline int gp__mini(int a, int b) { return a < b ? a : b; }
static inline gp_lane_mask_t gp__ballot(gp_lane_mask_t mask, int pred, const char *file, int line) {
  const gp__cpu_warp_xchg_t *x = gp__warp_xchg(mask, pred != 0, file, line);
  gp_lane_mask_t m = 0;
  for (unsigned l = 0; l < GP_WARP_SIZE; l++)
    if (((x->active >> l) & 1u) && x->val[l]) m |= (gp_lane_mask_t)1 << l;
  return m;
}
static inline int gp__all(gp_lane_mask_t mask, int pred, const char *file, int line) {
  const gp__cpu_warp_xchg_t *x = gp__warp_xchg(mask, pred != 0, file, line);
  for (unsigned l = 0; l < GP_WARP_SIZE; l++)
    if (((x->active >> l) & 1u) && !x->val[l]) return 0;
  return 1;
}
/** @endcond */

/** @brief Every lane of a warp at this build's width (what CUDA's 0xffffffff means). */
#define GP_FULL_MASK (GP_WARP_SIZE == 64 ? ~(gp_lane_mask_t)0 : (gp_lane_mask_t)0xffffffffu)

#define GP__SITE const char *file = __builtin_FILE(), int line = __builtin_LINE()
/* Shuffles of every live lane, and of the lanes of a mask (the _sync forms). */
#define GP__SHFL_OVERLOADS(T)                                                              \
  static inline T gp_shfl(T v, int src_lane, int width = GP_WARP_SIZE, GP__SITE) {         \
    return gp__shfl<T>(0, v, GP__SHFL_IDX, (unsigned)src_lane, width, file, line);         \
  }                                                                                        \
  static inline T gp_shfl_xor(T v, int lane_mask, int width = GP_WARP_SIZE, GP__SITE) {    \
    return gp__shfl<T>(0, v, GP__SHFL_XOR, (unsigned)lane_mask, width, file, line);        \
  }                                                                                        \
  static inline T gp_shfl_up(T v, unsigned delta, int width = GP_WARP_SIZE, GP__SITE) {    \
    return gp__shfl<T>(0, v, GP__SHFL_UP, delta, width, file, line);                       \
  }                                                                                        \
  static inline T gp_shfl_down(T v, unsigned delta, int width = GP_WARP_SIZE, GP__SITE) {  \
    return gp__shfl<T>(0, v, GP__SHFL_DOWN, delta, width, file, line);                     \
  }                                                                                        \
  static inline T gp_shfl_sync(gp_lane_mask_t mask, T v, int src_lane, int width = GP_WARP_SIZE, GP__SITE) { \
    return gp__shfl<T>(mask, v, GP__SHFL_IDX, (unsigned)src_lane, width, file, line);      \
  }                                                                                        \
  static inline T gp_shfl_xor_sync(gp_lane_mask_t mask, T v, int lane_mask, int width = GP_WARP_SIZE, GP__SITE) { \
    return gp__shfl<T>(mask, v, GP__SHFL_XOR, (unsigned)lane_mask, width, file, line);     \
  }                                                                                        \
  static inline T gp_shfl_up_sync(gp_lane_mask_t mask, T v, unsigned delta, int width = GP_WARP_SIZE, GP__SITE) { \
    return gp__shfl<T>(mask, v, GP__SHFL_UP, delta, width, file, line);                    \
  }                                                                                        \
  static inline T gp_shfl_down_sync(gp_lane_mask_t mask, T v, unsigned delta, int width = GP_WARP_SIZE, GP__SITE) { \
    return gp__shfl<T>(mask, v, GP__SHFL_DOWN, delta, width, file, line);                  \
  }                                                                                        \
  static inline T __shfl_sync(gp_lane_mask_t mask, T v, int src_lane, int width = GP_WARP_SIZE, GP__SITE) { \
    return gp__shfl<T>(mask, v, GP__SHFL_IDX, (unsigned)src_lane, width, file, line);      \
  }                                                                                        \
  static inline T __shfl_xor_sync(gp_lane_mask_t mask, T v, int lane_mask, int width = GP_WARP_SIZE, GP__SITE) { \
    return gp__shfl<T>(mask, v, GP__SHFL_XOR, (unsigned)lane_mask, width, file, line);     \
  }                                                                                        \
  static inline T __shfl_up_sync(gp_lane_mask_t mask, T v, unsigned delta, int width = GP_WARP_SIZE, GP__SITE) { \
    return gp__shfl<T>(mask, v, GP__SHFL_UP, delta, width, file, line);                    \
  }                                                                                        \
  static inline T __shfl_down_sync(gp_lane_mask_t mask, T v, unsigned delta, int width = GP_WARP_SIZE, GP__SITE) { \
    return gp__shfl<T>(mask, v, GP__SHFL_DOWN, delta, width, file, line);                  \
  }
GP__SHFL_OVERLOADS(float)
GP__SHFL_OVERLOADS(int)
GP__SHFL_OVERLOADS(unsigned)
GP__SHFL_OVERLOADS(long)
GP__SHFL_OVERLOADS(unsigned long)
GP__SHFL_OVERLOADS(long long)
GP__SHFL_OVERLOADS(unsigned long long)
GP__SHFL_OVERLOADS(double)
#undef GP__SHFL_OVERLOADS
static inline gp_lane_mask_t gp_ballot(int pred, GP__SITE) { return gp__ballot(0, pred, file, line); }
static inline int gp_any(int pred, GP__SITE) { return gp__ballot(0, pred, file, line) != 0; }
static inline int gp_all(int pred, GP__SITE) { return gp__all(0, pred, file, line); }
static inline void gp_syncwarp(GP__SITE) { (void)gp__cpu_warp_sync(0, file, line); }
static inline gp_lane_mask_t gp_ballot_sync(gp_lane_mask_t mask, int pred, GP__SITE) {
  return gp__ballot(mask, pred, file, line);
}
static inline int gp_any_sync(gp_lane_mask_t mask, int pred, GP__SITE) {
  return gp__ballot(mask, pred, file, line) != 0;
}
static inline int gp_all_sync(gp_lane_mask_t mask, int pred, GP__SITE) { return gp__all(mask, pred, file, line); }
static inline void gp_syncwarp_mask(gp_lane_mask_t mask, GP__SITE) {
  (void)gp__cpu_warp_sync_mask(mask, 0, file, line);
}
/* The lanes executing together: on the CPU a rendezvous of the live lanes (a lane that
 * asks alone while the others wait at a barrier is reported as a divergence). */
static inline gp_lane_mask_t gp_active_mask(GP__SITE) { return gp__cpu_warp_sync(0, file, line)->active; }
/* CUDA spellings of the voting functions, with 64-bit masks and results. */
static inline gp_lane_mask_t __ballot_sync(gp_lane_mask_t mask, int pred, GP__SITE) {
  return gp__ballot(mask, pred, file, line);
}
static inline int __any_sync(gp_lane_mask_t mask, int pred, GP__SITE) { return gp__ballot(mask, pred, file, line) != 0; }
static inline int __all_sync(gp_lane_mask_t mask, int pred, GP__SITE) { return gp__all(mask, pred, file, line); }
static inline void __syncwarp(gp_lane_mask_t mask = GP_FULL_MASK, GP__SITE) {
  (void)gp__cpu_warp_sync_mask(mask, 0, file, line);
}
static inline gp_lane_mask_t __activemask(GP__SITE) { return gp__cpu_warp_sync(0, file, line)->active; }
/* Match (CUDA's __match_any_sync / __match_all_sync, compute capability 7.0): values
 * are compared by their bits, as the hardware compares registers. */
template <typename T> static inline gp_lane_mask_t gp__match_any(gp_lane_mask_t mask, T v, const char *file, int line) {
  const uint64_t b = gp__to_bits(v);
  const gp__cpu_warp_xchg_t *x = gp__warp_xchg(mask, b, file, line);
  gp_lane_mask_t m = 0;
  for (unsigned l = 0; l < GP_WARP_SIZE; l++)
    if (((x->active >> l) & 1u) && x->val[l] == b) m |= (gp_lane_mask_t)1 << l;
  return m;
}
template <typename T>
static inline gp_lane_mask_t gp__match_all(gp_lane_mask_t mask, T v, int *pred, const char *file, int line) {
  const uint64_t b = gp__to_bits(v);
  const gp__cpu_warp_xchg_t *x = gp__warp_xchg(mask, b, file, line);
  int same = 1;
  for (unsigned l = 0; l < GP_WARP_SIZE; l++)
    if (((x->active >> l) & 1u) && x->val[l] != b) same = 0;
  if (pred) *pred = same;
  return same ? x->active : 0;
}
#define GP__MATCH_OVERLOADS(T)                                                             \
  static inline gp_lane_mask_t gp_match_any(T v, GP__SITE) { return gp__match_any<T>(0, v, file, line); } \
  static inline gp_lane_mask_t gp_match_all(T v, int *pred, GP__SITE) {                  \
    return gp__match_all<T>(0, v, pred, file, line);                                       \
  }                                                                                        \
  static inline gp_lane_mask_t gp_match_any_sync(gp_lane_mask_t mask, T v, GP__SITE) {    \
    return gp__match_any<T>(mask, v, file, line);                                          \
  }                                                                                        \
  static inline gp_lane_mask_t gp_match_all_sync(gp_lane_mask_t mask, T v, int *pred, GP__SITE) { \
    return gp__match_all<T>(mask, v, pred, file, line);                                    \
  }                                                                                        \
  static inline gp_lane_mask_t __match_any_sync(gp_lane_mask_t mask, T v, GP__SITE) {     \
    return gp__match_any<T>(mask, v, file, line);                                          \
  }                                                                                        \
  static inline gp_lane_mask_t __match_all_sync(gp_lane_mask_t mask, T v, int *pred, GP__SITE) { \
    return gp__match_all<T>(mask, v, pred, file, line);                                    \
  }
GP__MATCH_TYPES(GP__MATCH_OVERLOADS)
#undef GP__MATCH_OVERLOADS
static inline float gp_warp_reduce_sum(float v, GP__SITE) { return gp__warp_tree<float>(v, 0.0f, gp__addf, file, line); }
static inline float gp_warp_reduce_max(float v, GP__SITE) { return gp__warp_tree<float>(v, -INFINITY, fmaxf, file, line); }
static inline float gp_warp_reduce_min(float v, GP__SITE) { return gp__warp_tree<float>(v, INFINITY, fminf, file, line); }
static inline int gp_warp_reduce_sum(int v, GP__SITE) { return gp__warp_tree<int>(v, 0, gp__addi, file, line); }
static inline int gp_warp_reduce_max(int v, GP__SITE) { return gp__warp_tree<int>(v, INT32_MIN, gp__maxi, file, line); }
static inline int gp_warp_reduce_min(int v, GP__SITE) { return gp__warp_tree<int>(v, INT32_MAX, gp__mini, file, line); }

/* ---- cooperative groups: the whole grid ------------------------------------------------ */
/** @brief Barrier of every thread of the grid (cooperative_groups::this_grid().sync());
 *         the kernel must be launched with gp_launch_ex() and cooperative = 1. */
static inline void gp_grid_sync(GP__SITE) { gp__cpu_grid_sync(file, line); }
#undef GP__SITE

/* =================================================================================== */
#else /* ---- CUDA and HIP ------------------------------------------------------------- */

#if defined(GP_TARGET_HIP)
#ifndef __trap
#define __trap() __builtin_trap()
#endif
/* A lane mask (gp_lane_mask_t, unsigned long) would make HIP's two __ffsll overloads
 * (long long, unsigned long long) ambiguous. */
static __device__ inline unsigned int __ffsll(unsigned long x) { return __ffsll((unsigned long long)x); }
#endif

/** @brief The calling thread's linear index in its block (lanes follow it on GPUs). */
static __device__ __forceinline__ unsigned gp__linear_tid(void) {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
static __device__ __forceinline__ unsigned gp_lane_id(void) { return gp__linear_tid() % GP_WARP_SIZE; }
static __device__ __forceinline__ unsigned gp_warp_id(void) { return gp__linear_tid() / GP_WARP_SIZE; }

/** @brief Every lane of a warp at this build's width (what CUDA's 0xffffffff means). */
#define GP_FULL_MASK (GP_WARP_SIZE == 64 ? ~(gp_lane_mask_t)0 : (gp_lane_mask_t)0xffffffffu)

#if defined(GP_TARGET_CUDA)
#define GP__FULL 0xffffffffu
#define GP__SHFL_OVERLOADS(T)                                                               \
  static __device__ __forceinline__ T gp_shfl(T v, int src_lane, int width = GP_WARP_SIZE) { return __shfl_sync(GP__FULL, v, src_lane, width); } \
  static __device__ __forceinline__ T gp_shfl_xor(T v, int lane_mask, int width = GP_WARP_SIZE) { return __shfl_xor_sync(GP__FULL, v, lane_mask, width); } \
  static __device__ __forceinline__ T gp_shfl_up(T v, unsigned delta, int width = GP_WARP_SIZE) { return __shfl_up_sync(GP__FULL, v, delta, width); } \
  static __device__ __forceinline__ T gp_shfl_down(T v, unsigned delta, int width = GP_WARP_SIZE) { return __shfl_down_sync(GP__FULL, v, delta, width); } \
  static __device__ __forceinline__ T gp_shfl_sync(gp_lane_mask_t m, T v, int src_lane, int width = GP_WARP_SIZE) { return __shfl_sync((unsigned)m, v, src_lane, width); } \
  static __device__ __forceinline__ T gp_shfl_xor_sync(gp_lane_mask_t m, T v, int lane_mask, int width = GP_WARP_SIZE) { return __shfl_xor_sync((unsigned)m, v, lane_mask, width); } \
  static __device__ __forceinline__ T gp_shfl_up_sync(gp_lane_mask_t m, T v, unsigned delta, int width = GP_WARP_SIZE) { return __shfl_up_sync((unsigned)m, v, delta, width); } \
  static __device__ __forceinline__ T gp_shfl_down_sync(gp_lane_mask_t m, T v, unsigned delta, int width = GP_WARP_SIZE) { return __shfl_down_sync((unsigned)m, v, delta, width); }
static __device__ __forceinline__ gp_lane_mask_t gp_ballot(int pred) { return (gp_lane_mask_t)__ballot_sync(GP__FULL, pred); }
static __device__ __forceinline__ int gp_any(int pred) { return __any_sync(GP__FULL, pred); }
static __device__ __forceinline__ int gp_all(int pred) { return __all_sync(GP__FULL, pred); }
static __device__ __forceinline__ void gp_syncwarp(void) { __syncwarp(); }
static __device__ __forceinline__ gp_lane_mask_t gp_ballot_sync(gp_lane_mask_t m, int pred) { return (gp_lane_mask_t)__ballot_sync((unsigned)m, pred); }
static __device__ __forceinline__ int gp_any_sync(gp_lane_mask_t m, int pred) { return __any_sync((unsigned)m, pred); }
static __device__ __forceinline__ int gp_all_sync(gp_lane_mask_t m, int pred) { return __all_sync((unsigned)m, pred); }
static __device__ __forceinline__ void gp_syncwarp_mask(gp_lane_mask_t m) { __syncwarp((unsigned)m); }
static __device__ __forceinline__ gp_lane_mask_t gp_active_mask(void) { return (gp_lane_mask_t)__activemask(); }
/* The match functions are native from compute capability 7.0 (sm_70_rt.h). */
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700
#define GP__MATCH_OVERLOADS(T)                                                              \
  static __device__ __forceinline__ gp_lane_mask_t gp_match_any(T v) { return __match_any_sync(GP__FULL, v); } \
  static __device__ __forceinline__ gp_lane_mask_t gp_match_all(T v, int *pred) { return __match_all_sync(GP__FULL, v, pred); } \
  static __device__ __forceinline__ gp_lane_mask_t gp_match_any_sync(gp_lane_mask_t m, T v) { return __match_any_sync((unsigned)m, v); } \
  static __device__ __forceinline__ gp_lane_mask_t gp_match_all_sync(gp_lane_mask_t m, T v, int *pred) { return __match_all_sync((unsigned)m, v, pred); }
#else
#define GP__MATCH_OVERLOADS(T)
#endif
#else /* HIP: a wavefront runs in lockstep, so a mask only selects lanes (ROCm 5 has no _sync forms) */
#define GP__SHFL_OVERLOADS(T)                                                               \
  static __device__ __forceinline__ T gp_shfl(T v, int src_lane, int width = GP_WARP_SIZE) { return __shfl(v, src_lane, width); } \
  static __device__ __forceinline__ T gp_shfl_xor(T v, int lane_mask, int width = GP_WARP_SIZE) { return __shfl_xor(v, lane_mask, width); } \
  static __device__ __forceinline__ T gp_shfl_up(T v, unsigned delta, int width = GP_WARP_SIZE) { return __shfl_up(v, delta, width); } \
  static __device__ __forceinline__ T gp_shfl_down(T v, unsigned delta, int width = GP_WARP_SIZE) { return __shfl_down(v, delta, width); } \
  static __device__ __forceinline__ T gp_shfl_sync(gp_lane_mask_t, T v, int src_lane, int width = GP_WARP_SIZE) { return __shfl(v, src_lane, width); } \
  static __device__ __forceinline__ T gp_shfl_xor_sync(gp_lane_mask_t, T v, int lane_mask, int width = GP_WARP_SIZE) { return __shfl_xor(v, lane_mask, width); } \
  static __device__ __forceinline__ T gp_shfl_up_sync(gp_lane_mask_t, T v, unsigned delta, int width = GP_WARP_SIZE) { return __shfl_up(v, delta, width); } \
  static __device__ __forceinline__ T gp_shfl_down_sync(gp_lane_mask_t, T v, unsigned delta, int width = GP_WARP_SIZE) { return __shfl_down(v, delta, width); }
static __device__ __forceinline__ gp_lane_mask_t gp_ballot(int pred) { return (gp_lane_mask_t)__ballot(pred); }
static __device__ __forceinline__ int gp_any(int pred) { return __any(pred); }
static __device__ __forceinline__ int gp_all(int pred) { return __all(pred); }
static __device__ __forceinline__ void gp_syncwarp(void) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
static __device__ __forceinline__ gp_lane_mask_t gp_ballot_sync(gp_lane_mask_t m, int pred) { return (gp_lane_mask_t)__ballot(pred) & m; }
static __device__ __forceinline__ int gp_any_sync(gp_lane_mask_t m, int pred) { return gp_ballot_sync(m, pred) != 0; }
static __device__ __forceinline__ int gp_all_sync(gp_lane_mask_t m, int pred) { return gp_ballot_sync(m, !pred) == 0; }
static __device__ __forceinline__ void gp_syncwarp_mask(gp_lane_mask_t) { gp_syncwarp(); }
static __device__ __forceinline__ gp_lane_mask_t gp_active_mask(void) { return (gp_lane_mask_t)__ballot(1); }
/* CUDA's warp-synchronous spellings, which ROCm 5 lacks (ROCm 6.2+ has them behind
 * HIP_ENABLE_WARP_SYNC_BUILTINS; these shadow them). */
#define __shfl_sync(m, ...) gp_shfl_sync((gp_lane_mask_t)(m), __VA_ARGS__)
#define __shfl_xor_sync(m, ...) gp_shfl_xor_sync((gp_lane_mask_t)(m), __VA_ARGS__)
#define __shfl_up_sync(m, ...) gp_shfl_up_sync((gp_lane_mask_t)(m), __VA_ARGS__)
#define __shfl_down_sync(m, ...) gp_shfl_down_sync((gp_lane_mask_t)(m), __VA_ARGS__)
#define __ballot_sync(m, p) gp_ballot_sync((gp_lane_mask_t)(m), (p))
#define __any_sync(m, p) gp_any_sync((gp_lane_mask_t)(m), (p))
#define __all_sync(m, p) gp_all_sync((gp_lane_mask_t)(m), (p))
#define __syncwarp(...) gp_syncwarp()
#define __activemask() gp_active_mask()
#define __match_any_sync(m, v) gp_match_any_sync((gp_lane_mask_t)(m), (v))
#define __match_all_sync(m, v, p) gp_match_all_sync((gp_lane_mask_t)(m), (v), (p))
#endif
GP__SHFL_OVERLOADS(float)
GP__SHFL_OVERLOADS(int)
GP__SHFL_OVERLOADS(unsigned)
GP__SHFL_OVERLOADS(long)
GP__SHFL_OVERLOADS(unsigned long)
GP__SHFL_OVERLOADS(long long)
GP__SHFL_OVERLOADS(unsigned long long)
GP__SHFL_OVERLOADS(double)
#undef GP__SHFL_OVERLOADS
#if defined(GP_TARGET_HIP)
/* Match from ballots and shuffles (AMD has no match instruction): each round the lowest
 * lane still unmatched shows its value, and the lanes holding the same bits leave. */
template <typename T> static __device__ __forceinline__ unsigned long long gp__bits64(T v) {
  unsigned long long b = 0;
  __builtin_memcpy(&b, &v, sizeof v);
  return b;
}
template <typename T> static __device__ __forceinline__ gp_lane_mask_t gp__match_any(gp_lane_mask_t m, T v) {
  const unsigned long long b = gp__bits64(v);
  gp_lane_mask_t left = gp_ballot_sync(m, 1), mine = 0;
  while (left) {
    const unsigned long long lb = gp_shfl(b, __ffsll((long long)left) - 1);
    const gp_lane_mask_t same = gp_ballot_sync(left, b == lb);
    if (b == lb) mine = same;
    left &= ~same;
  }
  return mine;
}
template <typename T> static __device__ __forceinline__ gp_lane_mask_t gp__match_all(gp_lane_mask_t m, T v, int *pred) {
  const unsigned long long b = gp__bits64(v);
  const gp_lane_mask_t live = gp_ballot_sync(m, 1);
  const int same = gp_all_sync(live, b == gp_shfl(b, __ffsll((long long)live) - 1));
  if (pred) *pred = same;
  return same ? live : 0;
}
#define GP__MATCH_OVERLOADS(T)                                                              \
  static __device__ __forceinline__ gp_lane_mask_t gp_match_any(T v) { return gp__match_any(~(gp_lane_mask_t)0, v); } \
  static __device__ __forceinline__ gp_lane_mask_t gp_match_all(T v, int *pred) { return gp__match_all(~(gp_lane_mask_t)0, v, pred); } \
  static __device__ __forceinline__ gp_lane_mask_t gp_match_any_sync(gp_lane_mask_t m, T v) { return gp__match_any(m, v); } \
  static __device__ __forceinline__ gp_lane_mask_t gp_match_all_sync(gp_lane_mask_t m, T v, int *pred) { return gp__match_all(m, v, pred); }
#endif
GP__MATCH_TYPES(GP__MATCH_OVERLOADS)
#undef GP__MATCH_OVERLOADS

/* Butterfly reductions: every lane ends with the same value (the CPU target computes
 * the same tree in the same order). */
#define GP__WARP_REDUCE(name, T, expr)                                                      \
  static __device__ __forceinline__ T name(T v) {                                          \
    for (int o = GP_WARP_SIZE / 2; o > 0; o /= 2) {                                        \
      T w = gp_shfl_xor(v, o);                                                             \
      v = (expr);                                                                          \
    }                                                                                      \
    return v;                                                                              \
  }
GP__WARP_REDUCE(gp_warp_reduce_sum, float, v + w)
GP__WARP_REDUCE(gp_warp_reduce_max, float, fmaxf(v, w))
GP__WARP_REDUCE(gp_warp_reduce_min, float, fminf(v, w))
GP__WARP_REDUCE(gp_warp_reduce_sum, int, (int)((unsigned)v + (unsigned)w))
GP__WARP_REDUCE(gp_warp_reduce_max, int, v > w ? v : w)
GP__WARP_REDUCE(gp_warp_reduce_min, int, v < w ? v : w)
#undef GP__WARP_REDUCE

/* ---- cooperative groups: the whole grid (not under runtime compilation) --------------- */
#if !defined(GP__RTC)
static __device__ __forceinline__ void gp_grid_sync(void) { cooperative_groups::this_grid().sync(); }
#endif

#endif /* targets */

/* ---- shuffles of any trivially copyable class, and CUDA's warp reductions (every target) - */
/** @cond GP_INTERNAL */
#if defined(GP_TARGET_CPU)
#define GP__WQ static inline
#define GP__WM inline
#define GP__WSITE , const char *file = __builtin_FILE(), int line = __builtin_LINE()
#define GP__WSITE_ARGS , file, line
#else
#define GP__WQ static __device__ __forceinline__
#define GP__WM __device__ __forceinline__
#define GP__WSITE
#define GP__WSITE_ARGS
#endif
/* A class type shuffled as its 32-bit words; scalars keep their own overloads, so only
 * classes (structs, vector types) take this path. */
template <typename T, bool = __is_class(T) && __is_trivially_copyable(T)> struct gp__words {};
template <typename T> struct gp__words<T, true> {
  typedef T type;
  enum { n = (sizeof(T) + 3) / 4 };
};
#define GP__SHFL_WORDS(name, A)                                                             \
  template <typename T, typename = typename gp__words<T>::type>                            \
  GP__WQ T name(T v, A a, int width = GP_WARP_SIZE GP__WSITE) {                             \
    unsigned w[gp__words<T>::n] = {0};                                                     \
    __builtin_memcpy(w, &v, sizeof v);                                                     \
    for (unsigned i = 0; i < (unsigned)gp__words<T>::n; i++) w[i] = name(w[i], a, width GP__WSITE_ARGS); \
    __builtin_memcpy(&v, w, sizeof v);                                                     \
    return v;                                                                              \
  }
#define GP__SHFL_WORDS_SYNC(name, A)                                                        \
  template <typename T, typename = typename gp__words<T>::type>                            \
  GP__WQ T name(gp_lane_mask_t mask, T v, A a, int width = GP_WARP_SIZE GP__WSITE) {        \
    unsigned w[gp__words<T>::n] = {0};                                                     \
    __builtin_memcpy(w, &v, sizeof v);                                                     \
    for (unsigned i = 0; i < (unsigned)gp__words<T>::n; i++) w[i] = name(mask, w[i], a, width GP__WSITE_ARGS); \
    __builtin_memcpy(&v, w, sizeof v);                                                     \
    return v;                                                                              \
  }
/** @endcond */
/** @brief gp_shfl, gp_shfl_xor, gp_shfl_up, gp_shfl_down and their _sync forms on any
 *         trivially copyable class (a struct, uint4): each 32-bit word shuffled with the
 *         same rules as an unsigned, as CUDA's tile shuffles take any such type (CUDA C++
 *         Programming Guide, "Thread Block Tile"). */
GP__SHFL_WORDS(gp_shfl, int)
GP__SHFL_WORDS(gp_shfl_xor, int)
GP__SHFL_WORDS(gp_shfl_up, unsigned)
GP__SHFL_WORDS(gp_shfl_down, unsigned)
GP__SHFL_WORDS_SYNC(gp_shfl_sync, int)
GP__SHFL_WORDS_SYNC(gp_shfl_xor_sync, int)
GP__SHFL_WORDS_SYNC(gp_shfl_up_sync, unsigned)
GP__SHFL_WORDS_SYNC(gp_shfl_down_sync, unsigned)
#undef GP__SHFL_WORDS
#undef GP__SHFL_WORDS_SYNC

/** @brief gp_reduce_{add,min,max}_sync (int and unsigned) and gp_reduce_{and,or,xor}_sync
 *         (unsigned), CUDA's __reduce_*_sync: every lane of @p mask gets the operation
 *         over the mask's values (CUDA C++ Programming Guide, "Warp Reduce Functions";
 *         native from sm_80). Every lane of the mask calls it with the same mask; the sum
 *         wraps. On the CPU a caller outside its mask, or a mask naming an exited lane,
 *         fails the launch with the site (gp_last_error_message()). */
/** @cond GP_INTERNAL */
template <typename T, typename Op>
GP__WQ T gp__reduce_sync(gp_lane_mask_t mask, T v, Op op GP__WSITE) {
#if defined(GP_TARGET_CPU)
  const gp__cpu_warp_xchg_t *x = gp__cpu_warp_sync_mask(mask, (uint64_t)(uint32_t)v, file, line);
  gp_lane_mask_t lanes = x->active;
  T r = (T)(uint32_t)x->val[__builtin_ctzll(lanes)];
  for (lanes &= lanes - 1u; lanes; lanes &= lanes - 1u) r = op(r, (T)(uint32_t)x->val[__builtin_ctzll(lanes)]);
  return r;
#else
  gp_lane_mask_t lanes = mask;
  T r = gp_shfl_sync(mask, v, __ffsll((long long)lanes) - 1);
  for (lanes &= lanes - 1u; lanes; lanes &= lanes - 1u) r = op(r, gp_shfl_sync(mask, v, __ffsll((long long)lanes) - 1));
  return r;
#endif
}
struct gp__op_add { template <typename T> GP__WM T operator()(T a, T b) const { return (T)((unsigned)a + (unsigned)b); } };
struct gp__op_min { template <typename T> GP__WM T operator()(T a, T b) const { return b < a ? b : a; } };
struct gp__op_max { template <typename T> GP__WM T operator()(T a, T b) const { return a < b ? b : a; } };
struct gp__op_and { template <typename T> GP__WM T operator()(T a, T b) const { return a & b; } };
struct gp__op_or { template <typename T> GP__WM T operator()(T a, T b) const { return a | b; } };
struct gp__op_xor { template <typename T> GP__WM T operator()(T a, T b) const { return a ^ b; } };
#define GP__REDUCE_SYNC(name, T, op)                                                        \
  GP__WQ T name(gp_lane_mask_t mask, T v GP__WSITE) { return gp__reduce_sync<T>(mask, v, op() GP__WSITE_ARGS); }
/** @endcond */
GP__REDUCE_SYNC(gp_reduce_add_sync, int, gp__op_add)
GP__REDUCE_SYNC(gp_reduce_add_sync, unsigned, gp__op_add)
GP__REDUCE_SYNC(gp_reduce_min_sync, int, gp__op_min)
GP__REDUCE_SYNC(gp_reduce_min_sync, unsigned, gp__op_min)
GP__REDUCE_SYNC(gp_reduce_max_sync, int, gp__op_max)
GP__REDUCE_SYNC(gp_reduce_max_sync, unsigned, gp__op_max)
GP__REDUCE_SYNC(gp_reduce_and_sync, unsigned, gp__op_and)
GP__REDUCE_SYNC(gp_reduce_or_sync, unsigned, gp__op_or)
GP__REDUCE_SYNC(gp_reduce_xor_sync, unsigned, gp__op_xor)
#undef GP__REDUCE_SYNC
/* CUDA's spellings: nvcc has them from sm_80 (its own, kept); elsewhere these. */
#if !defined(GP_TARGET_CUDA) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800)
#define __reduce_add_sync(m, v) gp_reduce_add_sync((gp_lane_mask_t)(m), (v))
#define __reduce_min_sync(m, v) gp_reduce_min_sync((gp_lane_mask_t)(m), (v))
#define __reduce_max_sync(m, v) gp_reduce_max_sync((gp_lane_mask_t)(m), (v))
#define __reduce_and_sync(m, v) gp_reduce_and_sync((gp_lane_mask_t)(m), (v))
#define __reduce_or_sync(m, v) gp_reduce_or_sync((gp_lane_mask_t)(m), (v))
#define __reduce_xor_sync(m, v) gp_reduce_xor_sync((gp_lane_mask_t)(m), (v))
#endif
#undef GP__WQ
#undef GP__WM
#undef GP__WSITE
#undef GP__WSITE_ARGS

/* ---- atomics on gp_f16_t and gp_bf16_t (every target) ------------------------------------ */
/* A compare-and-swap on the aligned 32-bit word holding the value, so they work on every
 * target and architecture alike. The operation is done in binary32 and rounded once to
 * nearest even: for sums of two binary16 (or bfloat16) values that is the correctly
 * rounded result (binary32 has more than 2p + 2 bits), as the GPUs' half atomics give.
 * Return the old value, as CUDA's atomics do. */
/** @cond GP_INTERNAL */
#if defined(GP_TARGET_CPU)
#define GP__LOAD_WORD(w) __atomic_load_n((w), __ATOMIC_RELAXED)
#else
#define GP__LOAD_WORD(w) (*(volatile unsigned *)(w))
#endif
#define GP__AT16(fn, T, from, to, expr)                                                     \
  GP_DEVICE T fn(T *p, T v) {                                                              \
    unsigned *w = (unsigned *)((uintptr_t)p & ~(uintptr_t)3);                              \
    const unsigned sh = (unsigned)((uintptr_t)p & 2u) * 8u;                                \
    unsigned old = GP__LOAD_WORD(w), assumed;                                              \
    T o;                                                                                   \
    do {                                                                                   \
      assumed = old;                                                                       \
      o.bits = (uint16_t)(assumed >> sh);                                                  \
      const float a = from(o), b = from(v);                                                \
      (void)a;                                                                             \
      (void)b;                                                                             \
      const T r = (expr);                                                                  \
      old = atomicCAS(w, assumed, (assumed & ~(0xffffu << sh)) | ((unsigned)r.bits << sh)); \
    } while (old != assumed);                                                              \
    return o;                                                                              \
  }
/** @endcond */
GP__AT16(atomicAdd, gp_f16_t, gp_f32_from_f16, gp_f16_from_f32, gp_f16_from_f32(a + b))
GP__AT16(atomicMax, gp_f16_t, gp_f32_from_f16, gp_f16_from_f32, gp_f16_from_f32(fmaxf(a, b)))
GP__AT16(atomicMin, gp_f16_t, gp_f32_from_f16, gp_f16_from_f32, gp_f16_from_f32(fminf(a, b)))
GP__AT16(atomicExch, gp_f16_t, gp_f32_from_f16, gp_f16_from_f32, v)
GP__AT16(atomicAdd, gp_bf16_t, gp_f32_from_bf16, gp_bf16_from_f32, gp_bf16_from_f32(a + b))
GP__AT16(atomicMax, gp_bf16_t, gp_f32_from_bf16, gp_bf16_from_f32, gp_bf16_from_f32(fmaxf(a, b)))
GP__AT16(atomicMin, gp_bf16_t, gp_f32_from_bf16, gp_bf16_from_f32, gp_bf16_from_f32(fminf(a, b)))
GP__AT16(atomicExch, gp_bf16_t, gp_f32_from_bf16, gp_bf16_from_f32, v)
#undef GP__AT16
#undef GP__LOAD_WORD

/* ---- scoped atomics and cache-hinted loads and stores (CUDA has its own) --------------- */
#if !defined(GP_TARGET_CUDA)
/* atomicX_system and atomicX_block: the CPU's atomics are coherent for the whole
 * process, and AMD's device-scope atomics are what these names give under ROCm 5 where
 * it has them (its own overloads are preferred over these templates). */
#define GP__SCOPED(op)                                                                      \
  template <class T, class... R> GP_DEVICE auto op##_system(T *p, R... r)->decltype(op(p, r...)) { \
    return op(p, r...);                                                                    \
  }                                                                                        \
  template <class T, class... R> GP_DEVICE auto op##_block(T *p, R... r)->decltype(op(p, r...)) { \
    return op(p, r...);                                                                    \
  }
GP__SCOPED(atomicAdd)
GP__SCOPED(atomicSub)
GP__SCOPED(atomicExch)
GP__SCOPED(atomicMin)
GP__SCOPED(atomicMax)
GP__SCOPED(atomicInc)
GP__SCOPED(atomicDec)
GP__SCOPED(atomicCAS)
GP__SCOPED(atomicAnd)
GP__SCOPED(atomicOr)
GP__SCOPED(atomicXor)
#undef GP__SCOPED
/* CUDA's integer minimum and maximum of one signedness (CUDA Math API, integer
 * intrinsics); clang's HIP headers lack them. */
GP_DEVICE unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
GP_DEVICE unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
GP_DEVICE long long llmin(long long a, long long b) { return a < b ? a : b; }
GP_DEVICE long long llmax(long long a, long long b) { return a > b ? a : b; }
GP_DEVICE unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
GP_DEVICE unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
/* The cache hints change no result: plain loads and stores. */
template <class T> GP_DEVICE T __ldcs(const T *p) { return *p; }
template <class T> GP_DEVICE T __ldcg(const T *p) { return *p; }
template <class T> GP_DEVICE T __ldca(const T *p) { return *p; }
template <class T> GP_DEVICE T __ldlu(const T *p) { return *p; }
template <class T> GP_DEVICE T __ldcv(const T *p) { return *p; }
template <class T> GP_DEVICE void __stcs(T *p, T v) { *p = v; }
template <class T> GP_DEVICE void __stcg(T *p, T v) { *p = v; }
template <class T> GP_DEVICE void __stwb(T *p, T v) { *p = v; }
template <class T> GP_DEVICE void __stwt(T *p, T v) { *p = v; }
#if defined(GP_TARGET_HIP) && !defined(__grid_constant__)
#define __grid_constant__
#endif
#endif

/* ---- host side: launching from a dialect source (none under NVRTC and hipRTC) ------ */
#if !defined(GP__RTC)
/** @brief CUDA's dim3 (of a dialect source's host code) as a ::gp_dim3_t. */
static inline gp_dim3_t gp_dim3_of(dim3 d) { return gp_dim3(d.x, d.y, d.z); }

/**
 * @brief cudaLaunchKernel's argument order with dim3 extents, for host code of a dialect
 *        source (what gpuport-port writes for cudaLaunchKernel): gp_launch().
 * @return as gp_launch().
 */
static inline gp_status_t gp_launch_dim3(gp_kernel_t kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes,
                                         gp_stream_t stream, void **args) {
  return gp_launch(kernel, gp_dim3_of(grid), gp_dim3_of(block), dynamic_shared_bytes, stream, args);
}

/**
 * @brief A cooperative launch (cudaLaunchCooperativeKernel) with dim3 extents, for host
 *        code of a dialect source: gp_launch_ex() with cooperative = 1.
 * @return as gp_launch_ex().
 */
static inline gp_status_t gp_launch_cooperative(gp_kernel_t kernel, dim3 grid, dim3 block,
                                                size_t dynamic_shared_bytes, gp_stream_t stream, void **args) {
  gp_launch_config_t c;
  gp_launch_config_init(&c);
  c.grid = gp_dim3_of(grid);
  c.block = gp_dim3_of(block);
  c.dynamic_shared_bytes = dynamic_shared_bytes;
  c.stream = stream;
  c.cooperative = 1;
  return gp_launch_ex(kernel, &c, args);
}

/** @cond GP_INTERNAL */
/* Host side of GP_LAUNCH: the arguments are converted to the kernel's parameter types
 * (as `<<<>>>` does), then passed by address. */
template <typename Sig> struct gp__klaunch;
template <typename... A> struct gp__klaunch<void(A...)> {
  static gp_status_t launch(gp_kernel_t k, dim3 grid, dim3 block, size_t shmem, gp_stream_t stream,
                            A... a) {
    void *p[sizeof...(A) + 1] = {((void *)&a)..., nullptr};
    return gp_launch(k, gp_dim3(grid.x, grid.y, grid.z), gp_dim3(block.x, block.y, block.z), shmem,
                     stream, p);
  }
};
/** @endcond */
/**
 * @brief CUDA's `kernel<<<grid, block, shmem, stream>>>(args...)` in host code of a dialect
 *        source: `GP_LAUNCH(saxpy, blocks, 256, 0, NULL, n, a, x, y)`, and for an instance
 *        of a kernel template, parenthesised: `GP_LAUNCH((reduce<T, 512>), ...)`. @p grid
 *        and @p block are dim3 or unsigned; each argument is converted to the kernel's
 *        parameter type. The kernel's descriptor is its export (GP_KERNEL_EXPORT,
 *        GP_KERNEL_EXPORT_INSTANCE) where it has one, else one registered for the launch
 *        (kernel templates and `static __global__` kernels need no export).
 * @return gp_launch()'s status.
 */
#define GP_LAUNCH(kernel, grid, block, shmem, stream, ...)                                  \
  gp__klaunch<typename gp__sig<decltype(&kernel)>::type>::launch(                               \
      gp__kdesc<&kernel>::get(), (grid), (block), (shmem), (stream), ##__VA_ARGS__)

/**
 * @brief CUDA's launch through a kernel pointer, `void (*k)(float *, int) = &scale;
 *        k<<<grid, block, shmem, stream>>>(args...)`, in host code of a dialect source:
 *        `gp_launch_ptr(k, grid, block, shmem, stream, args...)`. The kernel's descriptor
 *        is found by its address among the kernels exported (GP_KERNEL_EXPORT,
 *        GP_KERNEL_EXPORT_INSTANCE) by the calling object; each argument is converted to
 *        the kernel's parameter type, as `<<<>>>` does.
 * @return gp_launch()'s status; GP_ERROR_INVALID_VALUE (gp_last_error_message() set by
 *         gp_launch) when @p kernel is no exported kernel of this object (a kernel
 *         template instance, a host function).
 */
/**
 * @brief The descriptor of the kernel at address @p kernel (a kernel pointer, or one cast
 *        to `void *` as CUDA's occupancy and attribute queries take it), among the kernels
 *        exported (GP_KERNEL_EXPORT, GP_KERNEL_EXPORT_INSTANCE) by the calling object.
 * @return the descriptor, or NULL when @p kernel is no such kernel; the gp_ functions
 *         given NULL return GP_ERROR_INVALID_VALUE with gp_last_error_message() set.
 */
static inline gp_kernel_t gp_kernel_of(const void *kernel) { return gp__kreg::find(kernel); }
/** @brief gp_kernel_of() of a kernel pointer. */
template <typename... A> static inline gp_kernel_t gp_kernel_of(void (*kernel)(A...)) {
  return gp__kreg::find((const void *)kernel);
}
template <typename... A, typename... P>
static inline gp_status_t gp_launch_ptr(void (*kernel)(A...), dim3 grid, dim3 block, size_t shmem, gp_stream_t stream,
                                        P... args) {
  return gp__klaunch<void(A...)>::launch(gp_kernel_of(kernel), grid, block, shmem, stream, args...);
}

/** @cond GP_INTERNAL */
/* A kernel instance as a type: what gpuport-port's deduction helper of a kernel template
 * k (gp__deduce_k, with k's template head and parameters) returns, so that the compiler
 * deduces the instance from the launch's arguments as a call would. The helper never
 * runs: its parameters are unused. */
template <auto F> struct gp__kfn { static constexpr auto fn = F; };
#if defined(__GNUC__) || defined(__clang__)
#define GP__DEDUCE_BEGIN _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wunused-parameter\"")
#define GP__DEDUCE_END _Pragma("GCC diagnostic pop")
#else
#define GP__DEDUCE_BEGIN
#define GP__DEDUCE_END
#endif
template <auto F, typename... P>
static inline gp_status_t gp__launch_fn(dim3 grid, dim3 block, size_t shmem, gp_stream_t stream, P... args) {
  return gp__klaunch<typename gp__sig<decltype(F)>::type>::launch(gp__kdesc<F>::get(), grid, block, shmem, stream,
                                                                    args...);
}
/** @endcond */
/**
 * @brief `k<<<grid, block, shmem, stream>>>(args...)` of a kernel template k whose
 *        template arguments are deduced from the arguments (C++ template argument
 *        deduction, as nvcc does at the launch): needs `gp__deduce_k`, a function with
 *        k's template head and parameters returning `gp__kfn<&k<params...>>()`, which
 *        gpuport-port writes after the template (between GP__DEDUCE_BEGIN and
 *        GP__DEDUCE_END).
 * @return gp_launch()'s status.
 */
#define GP_LAUNCH_DEDUCED(kernel, grid, block, shmem, stream, ...)                          \
  gp__launch_fn<decltype(gp__deduce_##kernel(__VA_ARGS__))::fn>((grid), (block), (shmem), (stream), ##__VA_ARGS__)
#endif /* !GP__RTC */

#endif /* __cplusplus */
#endif /* GP_KERNEL_H */
