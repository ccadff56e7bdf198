/**
 * @file gpuport/kernel_abi.h
 * @brief The kernel descriptor: what a compiled dialect kernel tells the library, and
 *        the macro pair that names a kernel from C host code.
 * @ingroup kernel
 *
 * A dialect source defines `GP_KERNEL void name(...) {...}` followed by
 * `GP_KERNEL_EXPORT(name)`; the export emits, in the kernel's own translation unit,
 * a descriptor object `gp__kernel_<name>` of type `struct gp_kernel_s`. C host code
 * declares it with GP_KERNEL_DECLARE(name) (in a header) and passes
 * GP_KERNEL_REF(name) to gp_launch(). This is safe on every backend: on HIP-Clang the
 * kernel's host symbol is a handle variable, not a function, so C must not take the
 * kernel's own address (docs/design/KERNELS.md "Launching from C", LLVM D86376).
 * Device variables (`__constant__`, `__device__`) are named the same way:
 * GP_SYMBOL_EXPORT(name) in the source, GP_SYMBOL_DECLARE(name) and GP_SYMBOL_REF(name)
 * in host code. The layout is a versioned ABI: see docs/LAUNCH_ABI.md.
 */
#ifndef GP_KERNEL_ABI_H
#define GP_KERNEL_ABI_H

#include <gpuport/export.h>
#ifndef GP__RTC
#include <stdint.h>
#endif

GP_EXTERN_C_BEGIN

/** @brief Magic number at the start of every kernel descriptor ("gpK1"). */
#define GP_KERNEL_MAGIC 0x314b7067u
/** @brief Version of the descriptor layout and of the CPU executor entry points. */
#define GP_KERNEL_ABI_VERSION 1u

/**
 * @brief A compiled kernel, as emitted by GP_KERNEL_EXPORT(). Read-only.
 */
struct gp_kernel_s {
  uint32_t magic;              /**< ::GP_KERNEL_MAGIC */
  uint32_t abi_version;        /**< ::GP_KERNEL_ABI_VERSION the kernel was compiled against */
  const char *name;            /**< the kernel's name in its source */
  int backend;                 /**< gp_backend_t the code was compiled for */
  int warp_size;               /**< GP_WARP_SIZE the code was compiled with */
  int num_params;              /**< number of kernel parameters */
  const uint16_t *param_sizes; /**< size in bytes of each parameter (num_params entries) */
  const void *gpu_entry;       /**< cuda/hip: the launch handle for cudaLaunchKernel / hipLaunchKernel */
  void (*cpu_run_block)(void **args);  /**< cpu: runs every thread of the current block in turn */
  void (*cpu_run_thread)(void **args); /**< cpu: runs the current thread (a fiber's entry) */
  int max_threads_per_block;   /**< the target's limit (1024) */
  uint32_t flags;              /**< reserved, 0 */
  const void *reserved[4];     /**< reserved, NULL */
};

/** @brief Token-pasting helpers. */
#define GP__CAT2(a, b) a##b
/** @brief Expands its arguments, then pastes them. */
#define GP__CAT(a, b) GP__CAT2(a, b)

/** @brief Suffix appended to descriptor names, so that a second build of the same
 *         source (warp width 64 on the CPU, an emulation build) links beside the first. */
#ifndef GP_KERNEL_SUFFIX
#define GP_KERNEL_SUFFIX
#endif

/** @brief Symbol of the descriptor of kernel @p name (with ::GP_KERNEL_SUFFIX). */
#define GP_KERNEL_SYMBOL(name) GP__CAT(GP__CAT(gp__kernel_, name), GP_KERNEL_SUFFIX)

/**
 * @brief Declares, in C or C++ host code, the kernel @p name defined in a dialect source.
 *        Put it in a header, at file scope.
 */
#ifdef __cplusplus
#define GP_KERNEL_DECLARE(name) extern "C" const struct gp_kernel_s GP_KERNEL_SYMBOL(name)
#else
#define GP_KERNEL_DECLARE(name) extern const struct gp_kernel_s GP_KERNEL_SYMBOL(name)
#endif

/** @brief The ::gp_kernel_t of kernel @p name, for gp_launch(). */
#define GP_KERNEL_REF(name) (&GP_KERNEL_SYMBOL(name))

/** @brief Magic number at the start of every device-variable descriptor ("gpS1"). */
#define GP_SYMBOL_MAGIC 0x31537067u

/**
 * @brief A `__constant__` or `__device__` variable of a dialect source, as emitted by
 *        GP_SYMBOL_EXPORT(). Read-only. Name one from C with GP_SYMBOL_DECLARE() and
 *        GP_SYMBOL_REF(); copy to and from it with gp_memcpy_to_symbol() and
 *        gp_memcpy_from_symbol().
 */
struct gp_symbol_s {
  uint32_t magic;          /**< ::GP_SYMBOL_MAGIC */
  uint32_t abi_version;    /**< ::GP_KERNEL_ABI_VERSION the source was compiled against */
  const char *name;        /**< the variable's name in its source */
  int backend;             /**< gp_backend_t the code was compiled for */
  int reserved0;           /**< 0 */
  uint64_t size;           /**< size of the variable in bytes */
  const void *address;     /**< cpu: the variable itself; cuda/hip: the host symbol that
                                cudaMemcpyToSymbol / hipMemcpyToSymbol take */
  const void *reserved[2]; /**< NULL */
};

/** @brief Symbol of the descriptor of device variable @p name (with ::GP_KERNEL_SUFFIX). */
#define GP_SYMBOL_SYMBOL(name) GP__CAT(GP__CAT(gp__symbol_, name), GP_KERNEL_SUFFIX)

/**
 * @brief Declares, in C or C++ host code, the device variable @p name exported by a
 *        dialect source with GP_SYMBOL_EXPORT(name). Put it in a header, at file scope.
 */
#ifdef __cplusplus
#define GP_SYMBOL_DECLARE(name) extern "C" const struct gp_symbol_s GP_SYMBOL_SYMBOL(name)
#else
#define GP_SYMBOL_DECLARE(name) extern const struct gp_symbol_s GP_SYMBOL_SYMBOL(name)
#endif

/** @brief The ::gp_symbol_t of device variable @p name, for gp_memcpy_to_symbol(). */
#define GP_SYMBOL_REF(name) (&GP_SYMBOL_SYMBOL(name))

/** @cond GP_INTERNAL */
/* Descriptor registration (docs/LAUNCH_ABI.md section 1): the library reads a kernel or
 * device-variable descriptor only once it has found it in its table, so a stray pointer
 * is an error, not a fault. GP_KERNEL_EXPORT (GPU targets) and GP_SYMBOL_EXPORT register
 * theirs from a static object while their object is loaded (the CPU target's kernels
 * through gp__cpu_kernel_register). Additions of ABI version 1. */
#ifndef GP__RTC
GP_API int gp__abi_register(const void *desc);
GP_API void gp__abi_unregister(const void *desc);
#endif
/** @endcond */

GP_EXTERN_C_END

#endif /* GP_KERNEL_ABI_H */
