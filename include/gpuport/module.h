/**
 * @file gpuport/module.h
 * @brief Modules (kernels loaded at run time), runtime compilation of kernel sources,
 *        and occupancy.
 * @ingroup runtime
 *
 * A module is compiled device code loaded while the program runs; its kernels are
 * found by name and launched with gp_launch() like kernels linked into the program:
 *
 * | backend | what gp_module_load() reads | what gp_program_compile() runs |
 * |---|---|---|
 * | cuda | a cubin, fatbin or PTX file (cudaLibraryLoadData) | NVRTC (libnvrtc, loaded at run time) |
 * | hip  | a code object or offload bundle (hipModuleLoad / hipModuleLoadData) | hipRTC |
 * | cpu  | a shared object built from a dialect source with the host C++ compiler | the host compiler (`GP_CC`) |
 *
 * The same dialect source (gpuport/kernel.h) serves every backend. On the cpu backend a
 * module is built like the library's own kernels:
 * @code
 * c++ -x c++ -std=c++17 -O2 -fPIC -shared -fvisibility=hidden -fno-exceptions -fno-rtti \
 *     -DGP_BUILD_CPU -I<gpuport include dir> kernels.cu -o kernels.so
 * @endcode
 * and each `GP_KERNEL_EXPORT(name)` in it is found by gp_module_get_kernel() through
 * its descriptor symbol `gp__kernel_<name>`. The module's kernels call the executor of
 * the gpuport library already in the process, so that library's symbols must be
 * visible to dynamically loaded objects: always true when the program links the shared
 * library; a program that links libgpuport-cpu.a statically must be linked with
 * `-rdynamic`. Under NVRTC and hipRTC the dialect kernels are found by their
 * (unmangled) names.
 *
 * Kernels of a module stay valid until gp_module_unload(); after it they are
 * ::GP_ERROR_INVALID_HANDLE wherever a kernel is taken. On the cpu backend a launch
 * queued or captured before the unload keeps the module's code mapped until it is done
 * (graphs that captured its kernels must not be launched after the unload on CUDA and
 * HIP).
 *
 * Loading a cpu module runs its code: a shared object's constructors run when it is
 * loaded (dlopen), with the process's rights. Load only objects you would run. The
 * checks before the loader (a regular file, the size cap, an ELF shared object whose
 * tables lie within the file) keep a corrupt file from crashing the loader, not a
 * malicious one from running.
 */
#ifndef GP_MODULE_H
#define GP_MODULE_H

#include <stddef.h>
#include <gpuport/export.h>
#include <gpuport/status.h>
#include <gpuport/runtime.h>

GP_EXTERN_C_BEGIN

/** @brief A loaded module (cudaLibrary_t / hipModule_t / a shared object on the cpu backend). */
typedef struct gp_module_s *gp_module_t;

/** @brief The largest image file gp_module_load() reads: 1 GiB (larger files are
 *         refused with ::GP_ERROR_INVALID_IMAGE before anything is read). */
#define GP_MODULE_MAX_FILE_BYTES ((size_t)1 << 30)

/**
 * @brief Loads the module in file @p path. The file must be a regular file (a device, a
 *        FIFO or a directory is refused at once, never read or waited on) of at most
 *        ::GP_MODULE_MAX_FILE_BYTES; it is read and checked whole first (a truncated,
 *        corrupt or foreign image is refused before a loader sees it: for a shared
 *        object the ELF header, the program headers, the dynamic section and every table
 *        it names must lie within the file), then loaded with cudaLibraryLoadData,
 *        hipModuleLoadData, or dlopen on the cpu backend. Loading a cpu module runs its
 *        constructors (see the file comment).
 * @param[out] module the module; NULL on failure.
 * @param[in] path file name; on the cpu backend a shared object for this machine.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL argument; not a regular file, or
 *         not readable); ::GP_ERROR_NOT_FOUND (no such file); ::GP_ERROR_INVALID_IMAGE
 *         (not an image this backend and device can load: corrupt, truncated, larger
 *         than ::GP_MODULE_MAX_FILE_BYTES, or built for another backend or architecture;
 *         the message says which); ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_module_load(gp_module_t *module, const char *path);

/**
 * @brief Loads a module from an image in memory (cudaLibraryLoadData, hipModuleLoadData;
 *        on the cpu backend the bytes of a shared object, checked as gp_module_load()
 *        checks a file, then loaded from an anonymous file (memfd), or where there is
 *        none from a file in a private temporary directory, removed on every path).
 * @param[out] module the module; NULL on failure.
 * @param[in] image the image; PTX must end with its terminating NUL, counted in @p bytes.
 * @param[in] bytes size of @p image in bytes, > 0.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL, or 0 bytes),
 *         ::GP_ERROR_INVALID_IMAGE (as gp_module_load()), ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_module_load_data(gp_module_t *module, const void *image, size_t bytes);

/**
 * @brief Finds kernel @p name in @p module (cudaLibraryGetKernel, hipModuleGetFunction,
 *        the descriptor `gp__kernel_<name>` on the cpu backend).
 * @param[out] kernel the kernel, for gp_launch(); valid until the module is unloaded.
 * @param[in] module the module.
 * @param[in] name the kernel's name in its source (GP_KERNEL_EXPORT(name); on CUDA and
 *            HIP an `extern "C"` kernel name).
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL argument),
 *         ::GP_ERROR_INVALID_HANDLE (not a loaded module), ::GP_ERROR_NOT_FOUND (no
 *         kernel of that name), ::GP_ERROR_INVALID_IMAGE (the kernel was built against
 *         another descriptor ABI or for another backend).
 */
GP_API gp_status_t gp_module_get_kernel(gp_kernel_t *kernel, gp_module_t module, const char *name);

/**
 * @brief Unloads @p module (cudaLibraryUnload, hipModuleUnload, dlclose). Its kernels
 *        become invalid at once (::GP_ERROR_INVALID_HANDLE); the code goes when the last
 *        call or queued launch using it is done. On the cpu backend the shared object is
 *        unmapped unless another module handle holds the same file. NULL is a no-op.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_HANDLE (not a loaded module, or unloaded by
 *         another thread meanwhile).
 */
GP_API gp_status_t gp_module_unload(gp_module_t module);

/**
 * @brief Compiles kernel source @p source at run time and loads the result as a module.
 *
 * - cuda: NVRTC (libnvrtc is loaded on first use) for the current device's
 *   architecture (`--gpu-architecture=sm_XY` unless an option gives one), with the
 *   gpuport include directory on the include path; the cubin is loaded with
 *   cudaLibraryLoadData.
 * - hip: hipRTC for the current device's architecture (`--offload-arch=` unless given).
 * - cpu: the host compiler, `GP_CC` (default `cc`, which may name a command and its
 *   arguments, e.g. "ccache g++"), builds a shared object as shown in the file comment.
 *   The include directory is `GP_INCLUDE_DIR` when set, else the installed one next to
 *   the library, else the source tree's. Results are cached in `GP_CACHE_DIR` (default
 *   `$XDG_CACHE_HOME/gpuport`, else `~/.cache/gpuport`, else
 *   `${TMPDIR:-/tmp}/gpuport-cache-<uid>`), keyed by a hash of the source, the name,
 *   the options, the compiler command and the gpuport headers; an entry is used only
 *   when its recorded key matches exactly. The cache is private, since a cached object
 *   runs in the process that loads it: the directory (created with mode 0700, as is
 *   each directory gpuport creates on the way) must be a directory of the calling user,
 *   not a symbolic link, that no one else may write to, and each file is opened
 *   without following links and used only when it is a regular file of the calling
 *   user that no one else may write to (else it is a miss, compiled again). When the
 *   directory fails the check, nothing in it is read or written: the compile happens
 *   in a fresh private directory (mkdtemp in `TMPDIR`), removed afterwards, and a
 *   warning in the log (GP_DEBUG) says so.
 *
 * Options are passed to the compiler as given, each one argument; `-DNAME`,
 * `-DNAME=VALUE` and `-IDIR` mean the same to all three compilers.
 * @param[out] module the module; NULL on failure.
 * @param[in] source NUL-terminated source text (a dialect source including
 *            gpuport/kernel.h, or on CUDA and HIP plain CUDA/HIP C++).
 * @param[in] name a file name for messages ("kernels.cu"); may be NULL.
 * @param[in] options @p n_options compiler options; may be NULL when @p n_options is 0.
 * @param[in] n_options number of options, >= 0.
 * @param[out] log when not NULL, receives the compiler's output (warnings and errors) as
 *             a NUL-terminated string to release with free(), or NULL when there was none.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p module or @p source, negative
 *         @p n_options, a NULL option); ::GP_ERROR_INVALID_IMAGE (the source did not
 *         compile: the compiler's output is in @p log and, shortened, in the message);
 *         ::GP_ERROR_NOT_FOUND (no compiler: libnvrtc / hipRTC not found, or `GP_CC`
 *         cannot be run; or no gpuport headers); ::GP_ERROR_OUT_OF_MEMORY (host memory,
 *         or neither the cache directory nor a private temporary directory can be
 *         written).
 */
GP_API gp_status_t gp_program_compile(gp_module_t *module, const char *source, const char *name,
                                      const char *const *options, int n_options, char **log);

/**
 * @brief How many blocks of @p kernel can be resident on one multiprocessor at once
 *        (cudaOccupancyMaxActiveBlocksPerMultiprocessor; hipOccupancy... / hipModuleOccupancy...).
 *
 * Multiplied by gp_device_props_t::multiprocessor_count it gives the blocks the whole
 * device runs at once. On the cpu backend a multiprocessor is one executor thread
 * (`GP_CPU_THREADS`), which runs one block at a time: the answer is 1 when the
 * configuration fits the executor's limits and 0 when it does not.
 * @param[out] num_blocks blocks per multiprocessor; 0 when one block does not fit (too
 *             many threads, or more dynamic shared memory than the kernel may use).
 * @param[in] kernel the kernel.
 * @param[in] block_threads threads per block, > 0.
 * @param[in] dynamic_shared dynamic shared memory per block in bytes.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL, or @p block_threads <= 0),
 *         ::GP_ERROR_INVALID_HANDLE, ::GP_ERROR_INVALID_IMAGE (a kernel of another backend).
 */
GP_API gp_status_t gp_occupancy_max_active_blocks(int *num_blocks, gp_kernel_t kernel,
                                                  int block_threads, size_t dynamic_shared);

/** @brief Attributes of a compiled kernel (cudaFuncAttributes, CUDA Runtime API
 *         reference; the fields keep its names in snake case). */
typedef struct gp_kernel_attributes {
  size_t shared_size_bytes;          /**< static shared memory per block, bytes (cpu: 0, as
                                          the executor sizes it at launch) */
  size_t const_size_bytes;           /**< constant memory the kernel uses, bytes (cpu: 0) */
  size_t local_size_bytes;           /**< local memory per thread, bytes (cpu: 0) */
  int max_threads_per_block;         /**< most threads per block a launch may use: the
                                          kernel's limit, or the device's when lower */
  int num_regs;                      /**< registers per thread (cpu: 0) */
  int ptx_version;                   /**< PTX virtual architecture, major * 10 + minor
                                          (HIP and cpu: 0 unless the runtime reports it) */
  int binary_version;                /**< binary architecture, major * 10 + minor (cpu: 0) */
  int cache_mode_ca;                 /**< 1 when compiled with -Xptxas --dlcm=ca (cpu: 0) */
  int max_dynamic_shared_size_bytes; /**< dynamic shared memory a launch may ask for: the
                                          limit set with gp_kernel_set_max_dynamic_shared(),
                                          else the device's shared memory per block */
  int preferred_shmem_carveout;      /**< preferred shared memory carveout, percent, or -1
                                          for no preference (cpu: -1) */
} gp_kernel_attributes_t;

/**
 * @brief The attributes of @p kernel on the current device (cudaFuncGetAttributes; HIP:
 *        hipFuncGetAttributes, or hipFuncGetAttribute for module kernels).
 *
 * As the CUDA Runtime API reference says of cudaFuncGetAttributes, the values are those
 * of the kernel as compiled for the current device; max_dynamic_shared_size_bytes follows
 * gp_kernel_set_max_dynamic_shared(). On the cpu backend the compiler reports no resource
 * use: registers and sizes are 0, max_threads_per_block is the kernel descriptor's limit
 * (bounded by the device's), and max_dynamic_shared_size_bytes the limit set, else the
 * device's shared_memory_per_block.
 * @param[out] attr the attributes; zeroed on failure.
 * @param[in] kernel the kernel (GP_KERNEL_REF() or gp_module_get_kernel()).
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p attr or @p kernel),
 *         ::GP_ERROR_INVALID_HANDLE (not a kernel), ::GP_ERROR_INVALID_IMAGE (a kernel of
 *         another backend), ::GP_ERROR_BACKEND (the native runtime refused the query).
 */
GP_API gp_status_t gp_kernel_get_attributes(gp_kernel_attributes_t *attr, gp_kernel_t kernel);

GP_EXTERN_C_END

#endif /* GP_MODULE_H */
