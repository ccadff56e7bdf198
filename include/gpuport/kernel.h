/**
 * @file gpuport/kernel.h
 * @brief The kernel dialect: write a kernel once, compile it with nvcc, hipcc or the
 *        host C++ compiler (CPU backend), launch it from C with gp_launch().
 * @ingroup kernel
 *
 * A dialect source (`foo.cu`) is C-like C++ (no templates, references or lambdas in
 * kernels) using CUDA spellings for the built-ins:
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
 * - `GP_KERNEL`, `GP_KERNEL_EXPORT(name)`, `GP_DEVICE`, `GP_HOST_DEVICE`.
 * - `threadIdx`, `blockIdx`, `blockDim`, `gridDim`, `warpSize`, `__syncthreads()`,
 *   `__syncthreads_count/and/or(pred)`, `__threadfence()`, `__threadfence_block()`,
 *   atomics `atomicAdd/Sub/Exch/Min/Max/Inc/Dec/CAS/And/Or/Xor`, math from <math.h>
 *   plus `__expf`, `rsqrtf`, `__fdividef`, ..., `__popc/__popcll/__clz/__clzll/__ffs/
 *   __ffsll/__brev`, `__float_as_int` and friends, `__ldg`, `clock64()`, `min`/`max`,
 *   vector types `float2/float3/float4/int2/int4/uint2/uint4/double2` with `make_*`,
 *   `printf`, `assert`, `__trap()`, `__restrict__`, `__forceinline__`,
 *   `__launch_bounds__`.
 * - Shared memory: `GP_SHARED(type, name, dims)` and `GP_DYNAMIC_SHARED(type, name)`.
 * - Warp operations whose width is `GP_WARP_SIZE`: `gp_lane_id`, `gp_warp_id`,
 *   `gp_shfl`, `gp_shfl_xor`, `gp_shfl_up`, `gp_shfl_down`, `gp_ballot`, `gp_any`,
 *   `gp_all`, `gp_syncwarp`, `gp_warp_reduce_sum/max/min`.
 * - Half conversions of gpuport/types.h (`gp_f16_from_f32`, ...).
 *
 * CPU notes: a plain `__shared__` variable becomes a thread-local there (one copy per
 * OS worker, shared by the fibers of a block, kept from block to block), and
 * AddressSanitizer does not see overflows of thread-locals; library kernels use
 * GP_SHARED, whose per-block arena has poisoned redzones. Kernels run their threads
 * one after another until a thread reaches a barrier or warp operation; a thread that
 * spins on a value written by another thread of its block must pass a sync point
 * inside the loop. Including <assert.h> after this header restores the C assert
 * (which aborts the process); include it first. CUDA's `extern __shared__ T s[];`
 * does not compile there: use GP_DYNAMIC_SHARED. `GP_HOST_DEVICE` functions defined in
 * a dialect source should be `static`, so that a second build at another warp width
 * links. Warp operations always involve the whole warp (CUDA's full mask).
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

/** The per-OS-thread context of the GPU thread running now (initial-exec TLS). */
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

/** Barrier flavours of gp__cpu_barrier(). */
enum { GP__CPU_BAR_SYNC = 0, GP__CPU_BAR_COUNT = 1, GP__CPU_BAR_AND = 2, GP__CPU_BAR_OR = 3 };

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
/** @endcond */

GP_EXTERN_C_END
#endif /* GP_TARGET_CPU */

#ifdef __cplusplus /* ====== the dialect (C++ under every compiler) ================ */

#if !defined(GP__RTC) /* NVRTC and hipRTC have math, printf and memcpy built in */
#include <math.h>
#include <stdio.h>
#include <string.h>
#if defined(GP_TARGET_CPU)
#include <utility>
#else
#include <assert.h>
#endif
#include <gpuport/runtime.h>
#elif defined(__HIPCC_RTC__) && !defined(assert)
#define assert(e) ((e) ? (void)0 : __builtin_trap())
#endif
#include <gpuport/types.h>

#if defined(GP_TARGET_HIP)
#include <hip/hip_runtime.h>
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
#define GP_DEVICE static inline
#define __device__
#define __host__
#define __global__
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
/* A plain __shared__ variable: one per OS worker (see the file comment). */
#define __shared__ static thread_local
#else
#define GP_KERNEL extern "C" __global__
#define GP_DEVICE static __device__ inline
#endif
/** @brief Descriptor visibility: the descriptor is what C host code links against. */
#define GP__KERNEL_VISIBLE __attribute__((visibility("default"), used))

/* ---- descriptor emission --------------------------------------------------------- */
/** @cond GP_INTERNAL */
template <typename Sig> struct gp__ksig;
template <typename... A> struct gp__ksig<void(A...)> {
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

/**
 * @brief Emits the descriptor of kernel @p name (GP_KERNEL_SYMBOL(name)), with C linkage
 *        and default visibility, in the kernel's own translation unit. Put it after the
 *        kernel's definition, at file scope.
 */
#if defined(GP_TARGET_CPU)
#define GP_KERNEL_EXPORT(name)                                                              \
  extern "C" GP__KERNEL_VISIBLE const struct gp_kernel_s GP_KERNEL_SYMBOL(name) = {         \
      GP_KERNEL_MAGIC, GP_KERNEL_ABI_VERSION, #name, (int)GP_BACKEND_CPU, GP_WARP_SIZE,     \
      gp__ksig<decltype(name)>::count, gp__ksig<decltype(name)>::sizes, nullptr,            \
      &gp__ksig<decltype(name)>::run_block<name>, &gp__ksig<decltype(name)>::run_thread<name>, \
      1024, 0u, {nullptr, nullptr, nullptr, nullptr}};
#elif defined(GP__RTC)
/* Under NVRTC and hipRTC there is no host side: the module's kernels are found by name. */
#define GP_KERNEL_EXPORT(name)
#else
#if defined(GP_TARGET_CUDA)
#define GP__KBACKEND GP_BACKEND_CUDA
#else
#define GP__KBACKEND GP_BACKEND_HIP
#endif
#define GP_KERNEL_EXPORT(name)                                                              \
  extern "C" GP__KERNEL_VISIBLE const struct gp_kernel_s GP_KERNEL_SYMBOL(name) = {         \
      GP_KERNEL_MAGIC, GP_KERNEL_ABI_VERSION, #name, (int)GP__KBACKEND, GP_WARP_SIZE,       \
      gp__ksig<decltype(name)>::count, gp__ksig<decltype(name)>::sizes,                     \
      (const void *)name, nullptr, nullptr, 1024, 0u, {nullptr, nullptr, nullptr, nullptr}};
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

/* __trap() and assert() end the thread and fail the launch (the library stays usable). */
#define __trap() gp__cpu_trap(__FILE__, __LINE__)
#include <assert.h>
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : gp__cpu_assert_fail(#e, __FILE__, __LINE__, __func__))
#endif

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
#undef GP__MINMAX

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
template <typename T> static inline T gp__poison(void) { return (T)0x7fbad0beu; }
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
template <typename T> static inline T gp__shfl_idx(T v, int src, const char *file, int line) {
  const gp__cpu_warp_xchg_t *x = gp__cpu_warp_sync(gp__to_bits(v), file, line);
  return gp__lane_value<T>(x, (unsigned)src & (GP_WARP_SIZE - 1), file, line);
}
template <typename T> static inline T gp__shfl_xor(T v, int mask, const char *file, int line) {
  const gp__cpu_warp_xchg_t *x = gp__cpu_warp_sync(gp__to_bits(v), file, line);
  unsigned src = gp_lane_id() ^ (unsigned)mask;
  return src < GP_WARP_SIZE ? gp__lane_value<T>(x, src, file, line) : v;
}
template <typename T> static inline T gp__shfl_up(T v, unsigned delta, const char *file, int line) {
  const gp__cpu_warp_xchg_t *x = gp__cpu_warp_sync(gp__to_bits(v), file, line);
  unsigned lane = gp_lane_id();
  return lane >= delta ? gp__lane_value<T>(x, lane - delta, file, line) : v;
}
template <typename T> static inline T gp__shfl_down(T v, unsigned delta, const char *file, int line) {
  const gp__cpu_warp_xchg_t *x = gp__cpu_warp_sync(gp__to_bits(v), file, line);
  unsigned src = gp_lane_id() + delta;
  return (delta < GP_WARP_SIZE && src < GP_WARP_SIZE) ? gp__lane_value<T>(x, src, file, line) : v;
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
/** @endcond */

#define GP__SITE const char *file = __builtin_FILE(), int line = __builtin_LINE()
#define GP__SHFL_OVERLOADS(T)                                                              \
  static inline T gp_shfl(T v, int src_lane, GP__SITE) { return gp__shfl_idx<T>(v, src_lane, file, line); } \
  static inline T gp_shfl_xor(T v, int lane_mask, GP__SITE) { return gp__shfl_xor<T>(v, lane_mask, file, line); } \
  static inline T gp_shfl_up(T v, unsigned delta, GP__SITE) { return gp__shfl_up<T>(v, delta, file, line); } \
  static inline T gp_shfl_down(T v, unsigned delta, GP__SITE) { return gp__shfl_down<T>(v, delta, file, line); }
GP__SHFL_OVERLOADS(float)
GP__SHFL_OVERLOADS(int)
GP__SHFL_OVERLOADS(unsigned)
GP__SHFL_OVERLOADS(double)
#undef GP__SHFL_OVERLOADS
static inline gp_lane_mask_t gp_ballot(int pred, GP__SITE) {
  const gp__cpu_warp_xchg_t *x = gp__cpu_warp_sync(pred != 0, file, line);
  gp_lane_mask_t m = 0;
  for (unsigned l = 0; l < GP_WARP_SIZE; l++)
    if (((x->active >> l) & 1u) && x->val[l]) m |= (gp_lane_mask_t)1 << l;
  return m;
}
static inline int gp_any(int pred, GP__SITE) { return gp_ballot(pred, file, line) != 0; }
static inline int gp_all(int pred, GP__SITE) {
  const gp__cpu_warp_xchg_t *x = gp__cpu_warp_sync(pred != 0, file, line);
  for (unsigned l = 0; l < GP_WARP_SIZE; l++)
    if (((x->active >> l) & 1u) && !x->val[l]) return 0;
  return 1;
}
static inline void gp_syncwarp(GP__SITE) { (void)gp__cpu_warp_sync(0, file, line); }
static inline float gp_warp_reduce_sum(float v, GP__SITE) { return gp__warp_tree<float>(v, 0.0f, gp__addf, file, line); }
static inline float gp_warp_reduce_max(float v, GP__SITE) { return gp__warp_tree<float>(v, -INFINITY, fmaxf, file, line); }
static inline float gp_warp_reduce_min(float v, GP__SITE) { return gp__warp_tree<float>(v, INFINITY, fminf, file, line); }
static inline int gp_warp_reduce_sum(int v, GP__SITE) { return gp__warp_tree<int>(v, 0, gp__addi, file, line); }
static inline int gp_warp_reduce_max(int v, GP__SITE) { return gp__warp_tree<int>(v, INT32_MIN, gp__maxi, file, line); }
static inline int gp_warp_reduce_min(int v, GP__SITE) { return gp__warp_tree<int>(v, INT32_MAX, gp__mini, file, line); }
#undef GP__SITE

/* =================================================================================== */
#else /* ---- CUDA and HIP ------------------------------------------------------------- */

#if defined(GP_TARGET_HIP)
#ifndef __trap
#define __trap() __builtin_trap()
#endif
#endif

/** @brief The calling thread's linear index in its block (lanes follow it on GPUs). */
static __device__ __forceinline__ unsigned gp__linear_tid(void) {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
static __device__ __forceinline__ unsigned gp_lane_id(void) { return gp__linear_tid() % GP_WARP_SIZE; }
static __device__ __forceinline__ unsigned gp_warp_id(void) { return gp__linear_tid() / GP_WARP_SIZE; }

#if defined(GP_TARGET_CUDA)
#define GP__FULL 0xffffffffu
#define GP__SHFL_OVERLOADS(T)                                                               \
  static __device__ __forceinline__ T gp_shfl(T v, int src_lane) { return __shfl_sync(GP__FULL, v, src_lane, GP_WARP_SIZE); } \
  static __device__ __forceinline__ T gp_shfl_xor(T v, int lane_mask) { return __shfl_xor_sync(GP__FULL, v, lane_mask, GP_WARP_SIZE); } \
  static __device__ __forceinline__ T gp_shfl_up(T v, unsigned delta) { return __shfl_up_sync(GP__FULL, v, delta, GP_WARP_SIZE); } \
  static __device__ __forceinline__ T gp_shfl_down(T v, unsigned delta) { return __shfl_down_sync(GP__FULL, v, delta, GP_WARP_SIZE); }
static __device__ __forceinline__ gp_lane_mask_t gp_ballot(int pred) { return (gp_lane_mask_t)__ballot_sync(GP__FULL, pred); }
static __device__ __forceinline__ int gp_any(int pred) { return __any_sync(GP__FULL, pred); }
static __device__ __forceinline__ int gp_all(int pred) { return __all_sync(GP__FULL, pred); }
static __device__ __forceinline__ void gp_syncwarp(void) { __syncwarp(); }
#else /* HIP */
#define GP__SHFL_OVERLOADS(T)                                                               \
  static __device__ __forceinline__ T gp_shfl(T v, int src_lane) { return __shfl(v, src_lane, GP_WARP_SIZE); } \
  static __device__ __forceinline__ T gp_shfl_xor(T v, int lane_mask) { return __shfl_xor(v, lane_mask, GP_WARP_SIZE); } \
  static __device__ __forceinline__ T gp_shfl_up(T v, unsigned delta) { return __shfl_up(v, delta, GP_WARP_SIZE); } \
  static __device__ __forceinline__ T gp_shfl_down(T v, unsigned delta) { return __shfl_down(v, delta, GP_WARP_SIZE); }
static __device__ __forceinline__ gp_lane_mask_t gp_ballot(int pred) { return (gp_lane_mask_t)__ballot(pred); }
static __device__ __forceinline__ int gp_any(int pred) { return __any(pred); }
static __device__ __forceinline__ int gp_all(int pred) { return __all(pred); }
static __device__ __forceinline__ void gp_syncwarp(void) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
#endif
GP__SHFL_OVERLOADS(float)
GP__SHFL_OVERLOADS(int)
GP__SHFL_OVERLOADS(unsigned)
GP__SHFL_OVERLOADS(double)
#undef GP__SHFL_OVERLOADS

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

#endif /* targets */

#endif /* __cplusplus */
#endif /* GP_KERNEL_H */
