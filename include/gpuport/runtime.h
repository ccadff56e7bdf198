/**
 * @file gpuport/runtime.h
 * @brief Backend and version queries, devices, memory, streams, events, host callbacks,
 *        kernel launch and native-handle interop.
 * @ingroup runtime
 *
 * The semantics follow the CUDA runtime API (cudaMalloc, cudaMemcpy with
 * cudaMemcpyDefault, cudaStream*, cudaEvent*, cudaLaunchKernel) unless a function
 * says otherwise; the same calls behave the same on the cpu, cuda and hip backends.
 *
 * Handles and threads: streams, events, graphs, executable graphs, modules and
 * communicators may be destroyed while other threads use them. A call holds the handles
 * it was given from the moment it finds them in gpuport's table to the end of its use,
 * so each call racing with a destroy either completes as if the destroy came after it
 * (the object stays allocated until the last such call is done) or fails with
 * ::GP_ERROR_INVALID_HANDLE as if it came before; of two racing destroys one succeeds.
 * Kernels and device variables are looked up in gpuport's table of descriptors before
 * they are read, so a stray gp_kernel_t or gp_symbol_t (an integer, a misaligned or
 * unreadable pointer, a kernel of an unloaded module) is ::GP_ERROR_INVALID_HANDLE, not
 * a fault. A destroyed handle's address may be reused by a handle created later (as
 * with CUDA): a handle kept past its destroy is then that new handle.
 */
#ifndef GP_RUNTIME_H
#define GP_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include <gpuport/export.h>
#include <gpuport/status.h>
#include <gpuport/types.h>
#include <gpuport/kernel_abi.h>

GP_EXTERN_C_BEGIN

/* ------------------------------------------------------------------------------ */
/** @name Backend and version */
/**@{*/

/** @brief The backend a library was built for. */
typedef enum gp_backend {
  GP_BACKEND_CPU = 0,  /**< the CPU backend: virtual devices, the SIMT executor */
  GP_BACKEND_CUDA = 1, /**< NVIDIA GPUs through the CUDA runtime */
  GP_BACKEND_HIP = 2   /**< AMD GPUs through the HIP runtime (ROCm) */
} gp_backend_t;

/** @brief The backend this process linked. Never fails. */
GP_API gp_backend_t gp_backend(void);

/** @brief "cpu", "cuda" or "hip". Never fails; the string is static. */
GP_API const char *gp_backend_name(void);

/**
 * @brief The version of the library linked (which may differ from the GP_VERSION_*
 *        macros the caller was compiled with).
 * @param[out] major may be NULL.
 * @param[out] minor may be NULL.
 * @param[out] patch may be NULL.
 * @return ::GP_SUCCESS.
 */
GP_API gp_status_t gp_version(int *major, int *minor, int *patch);

/**
 * @brief The CUDA runtime API release whose calls gpuport's follow, in CUDART_VERSION's
 *        encoding (1000 * major + 10 * minor): 12.0, the first with every call gpuport
 *        mirrors (stream-ordered pools, graphs built node by node, cudaGraphExecUpdate's
 *        result info). Code that tests CUDART_VERSION for a feature (gpuport-port maps the
 *        name to this one) takes the branch written for that release.
 */
#define GP_CUDART_VERSION 12000
/**@}*/

/* ------------------------------------------------------------------------------ */
/** @name Devices */
/**@{*/

/** @brief Grid or block dimensions, as CUDA's dim3. */
typedef struct gp_dim3 {
  unsigned x; /**< extent in x */
  unsigned y; /**< extent in y */
  unsigned z; /**< extent in z */
} gp_dim3_t;

/** @brief Builds a ::gp_dim3_t: `gp_dim3(256, 1, 1)`. */
static inline gp_dim3_t gp_dim3(unsigned x, unsigned y, unsigned z) {
  gp_dim3_t d;
  d.x = x;
  d.y = y;
  d.z = z;
  return d;
}

/** @brief The compute modes gp_device_props_t::compute_mode and
 *         ::GP_DEVICE_ATTR_COMPUTE_MODE report, with cudaComputeMode's values (CUDA
 *         Runtime API, "cudaComputeMode"); the cpu device is always the default mode. */
typedef enum gp_compute_mode {
  GP_COMPUTE_MODE_DEFAULT = 0,           /**< any number of host threads and processes */
  GP_COMPUTE_MODE_EXCLUSIVE = 1,         /**< one context (deprecated in CUDA) */
  GP_COMPUTE_MODE_PROHIBITED = 2,        /**< no context may use the device */
  GP_COMPUTE_MODE_EXCLUSIVE_PROCESS = 3  /**< one process at a time */
} gp_compute_mode_t;

/**
 * @brief Device properties (the subset of cudaDeviceProp / hipDeviceProp_t that
 *        portable code needs). Initialise with gp_device_props_init() so that
 *        struct_size is set: a newer library never writes past an older struct.
 */
typedef struct gp_device_props {
  size_t struct_size;                 /**< sizeof(gp_device_props_t), set by gp_device_props_init() */
  char name[256];                     /**< marketing name, e.g. "NVIDIA H200" */
  char arch[32];                      /**< "sm_90", "gfx942", "cpu-x86_64" */
  size_t total_memory;                /**< device memory in bytes */
  int multiprocessor_count;           /**< SMs, CUs, or CPU worker threads */
  int warp_size;                      /**< 32 on NVIDIA, 64 on AMD CDNA; CPU: 32 or GP_CPU_WARP_SIZE */
  int max_threads_per_block;          /**< usually 1024 */
  int max_block_dim[3];               /**< maximum block extent per dimension */
  int max_grid_dim[3];                /**< maximum grid extent per dimension */
  size_t shared_memory_per_block;     /**< bytes usable without opt-in (48 KiB on CUDA) */
  size_t shared_memory_per_block_optin; /**< bytes with gp_kernel_set_max_dynamic_shared */
  size_t l2_cache_size;               /**< bytes */
  int clock_rate_khz;                 /**< peak core clock in kHz (0 when unknown; the CPU
                                           backend reads the host's, never 0) */
  int compute_capability_major;       /**< CUDA: 9 for sm_90; HIP: gcnArch major; CPU: 8,
                                           or GP_CPU_COMPUTE_CAPABILITY's */
  int compute_capability_minor;       /**< CUDA: 0 for sm_90; HIP: minor; CPU: 0, or
                                           GP_CPU_COMPUTE_CAPABILITY's */
  int pci_bus_id;                     /**< PCI bus id, -1 on the CPU backend */
  /* Appended later (struct_size tells an older caller's struct from this one). The CPU
   * backend's values are listed with ::gp_device_attr_t. */
  size_t total_constant_memory;       /**< bytes of `__constant__` memory (64 KiB on CUDA) */
  size_t max_pitch;                   /**< largest pitch in bytes of a 2D copy's rows */
  int regs_per_block;                 /**< 32-bit registers available to a block */
  int regs_per_multiprocessor;        /**< 32-bit registers per multiprocessor */
  int memory_clock_rate_khz;          /**< peak memory clock in kHz (0 when unknown) */
  int memory_bus_width;               /**< global memory bus width in bits */
  int max_threads_per_multiprocessor; /**< resident threads per multiprocessor */
  int max_blocks_per_multiprocessor;  /**< resident blocks per multiprocessor */
  size_t shared_memory_per_multiprocessor; /**< shared memory per multiprocessor in bytes */
  size_t reserved_shared_memory_per_block; /**< shared memory the system reserves per block */
  size_t persisting_l2_cache_max_size; /**< largest persisting L2 set-aside in bytes (0: none) */
  int kernel_exec_timeout;            /**< 1 when a watchdog limits a kernel's run time */
  int integrated;                     /**< 1 when the device shares the host's memory */
  int can_map_host_memory;            /**< 1 when host memory can be mapped (gp_host_alloc()) */
  int compute_mode;                   /**< 0 default, 2 prohibited, 3 exclusive process (cudaComputeMode) */
  int concurrent_kernels;             /**< 1 when kernels of different streams may run at once */
  int ecc_enabled;                    /**< 1 when ECC is on */
  int pci_device_id;                  /**< PCI device id, -1 on the CPU backend */
  int pci_domain_id;                  /**< PCI domain id, -1 on the CPU backend */
  int tcc_driver;                     /**< 1 for the Windows TCC driver */
  int async_engine_count;             /**< copies that may overlap kernels at once */
  int unified_addressing;             /**< 1 when host and device share one address space */
  int stream_priorities_supported;    /**< 1 when stream priorities are honoured */
  int global_l1_cache_supported;      /**< 1 when globals are cached in L1 */
  int local_l1_cache_supported;       /**< 1 when locals are cached in L1 */
  int managed_memory;                 /**< 1 when gp_malloc_managed() is supported */
  int is_multi_gpu_board;             /**< 1 on a multi-GPU board */
  int multi_gpu_board_group_id;       /**< the board's group, shared by its devices */
  int host_native_atomic_supported;   /**< 1 when device atomics are atomic for the host too */
  int single_to_double_precision_perf_ratio; /**< float throughput over double throughput */
  int pageable_memory_access;         /**< 1 when kernels may access pageable host memory */
  int concurrent_managed_access;      /**< 1 when host and device may touch managed memory at once */
  int compute_preemption_supported;   /**< 1 when kernels can be preempted */
  int can_use_host_pointer_for_registered_mem; /**< 1 when a registered host pointer is its device pointer */
  int cooperative_launch;             /**< 1 when gp_launch_ex() may launch cooperatively */
  int direct_managed_mem_access_from_host; /**< 1 when the host reads managed memory without migration */
  int memory_pools_supported;         /**< 1 when gp_malloc_async() uses a stream-ordered pool */
  int gpu_overlap;                    /**< 1 when a copy may overlap a kernel (deviceOverlap) */
  int pageable_memory_access_uses_host_page_tables; /**< 1 when kernels reach pageable memory
                                           through the host's page tables */
  int max_access_policy_window_size;  /**< largest access policy window in bytes (0: none) */
} gp_device_props_t;

/** @brief Sets @p props->struct_size and zeroes the rest. */
static inline void gp_device_props_init(gp_device_props_t *props) {
  unsigned char *p = (unsigned char *)props;
  for (size_t i = 0; i < sizeof(*props); i++) p[i] = 0;
  props->struct_size = sizeof(*props);
}

/**
 * @brief Number of devices of this backend (cudaGetDeviceCount).
 *
 * The CPU backend has `GP_CPU_DEVICES` virtual devices (default 1, at most 64; a value
 * outside 1..64 is clamped and one that is not an integer ignored, with a warning).
 * @param[out] count number of devices; 0 with ::GP_ERROR_NO_DEVICE on a GPU backend
 *             with no device or no driver.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p count), ::GP_ERROR_NO_DEVICE.
 */
GP_API gp_status_t gp_device_count(int *count);

/**
 * @brief Makes @p device the current device of the calling host thread (cudaSetDevice).
 * @param[in] device ordinal in [0, count).
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_DEVICE, ::GP_ERROR_NO_DEVICE,
 *         ::GP_ERROR_OUT_OF_MEMORY (no host memory for the thread's state, which a
 *         device other than 0 needs).
 */
GP_API gp_status_t gp_device_set(int device);

/**
 * @brief The current device of the calling host thread (0 until gp_device_set()).
 * @param[out] device the ordinal.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL), ::GP_ERROR_NO_DEVICE.
 */
GP_API gp_status_t gp_device_get(int *device);

/**
 * @brief Properties of @p device.
 * @param[in,out] props initialised with gp_device_props_init(); fields beyond
 *                props->struct_size are not written.
 * @param[in] device ordinal.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL, or struct_size too small for
 *         the first fields), ::GP_ERROR_INVALID_DEVICE, ::GP_ERROR_NO_DEVICE.
 */
GP_API gp_status_t gp_device_get_props(gp_device_props_t *props, int device);

/**
 * @brief X-macro list of the device attributes: X(NAME, value, field, sentence).
 *
 * NAME is CUDA's cudaDevAttr name after the prefix in upper snake case
 * (cudaDevAttrMaxThreadsPerBlock: MAX_THREADS_PER_BLOCK), value its number in CUDA's
 * enum cudaDeviceAttr, field the ::gp_device_props_t member that holds the same value.
 * The CPU backend's values: as its properties (limits of the executor), a compute
 * capability of 8.0 (what the CPU backend runs: warp shuffles, cooperative launch, bf16,
 * the sm_80 mma emulation; `GP_CPU_COMPUTE_CAPABILITY=major.minor` overrides it), the
 * host's clock (sysfs cpuinfo_max_freq, else /proc/cpuinfo), 64 KiB of constant memory,
 * a max pitch of 2^31 - 1, 65536 registers per block and multiprocessor (sm_80's), one
 * resident block of up to 1024 threads per multiprocessor (an executor thread runs one
 * block at a time: gp_occupancy_max_active_blocks() says 1) with the opt-in shared memory,
 * memory clock 0 (unknown) on a 64-bit bus, PCI ids -1, integrated, unified addressing,
 * managed memory, concurrent kernels, cooperative launch, host-native atomics, mapped and
 * registered host memory, memory pools and L1 caching 1, two copy engines (copies of
 * other streams overlap kernels in both directions, so GPU_OVERLAP is 1), a float-to-double throughput ratio
 * of 2 (a SIMD register holds twice the floats), stream priorities 0 (accepted, not
 * honoured: the OS schedules the streams' threads), pageable memory access 0 (kernels must be given
 * memory gpuport allocated or registered, as a GPU without HMM needs), a watchdog
 * (kernel_exec_timeout 1) only while `GP_LAUNCH_TIMEOUT_S` is set, and 0 for ECC, TCC,
 * compute mode, preemption, persisting L2 and access policy windows, host page tables
 * (pageable memory is not reachable) and multi-GPU boards. CUDA's texture and surface
 * limits have no entry: gpuport has neither.
 */
#define GP_DEVICE_ATTR_LIST(X)                                                                      \
  X(MAX_THREADS_PER_BLOCK, 1, max_threads_per_block, "maximum threads per block")                  \
  X(MAX_BLOCK_DIM_X, 2, max_block_dim[0], "maximum block extent in x")                            \
  X(MAX_BLOCK_DIM_Y, 3, max_block_dim[1], "maximum block extent in y")                            \
  X(MAX_BLOCK_DIM_Z, 4, max_block_dim[2], "maximum block extent in z")                            \
  X(MAX_GRID_DIM_X, 5, max_grid_dim[0], "maximum grid extent in x")                               \
  X(MAX_GRID_DIM_Y, 6, max_grid_dim[1], "maximum grid extent in y")                               \
  X(MAX_GRID_DIM_Z, 7, max_grid_dim[2], "maximum grid extent in z")                               \
  X(MAX_SHARED_MEMORY_PER_BLOCK, 8, shared_memory_per_block, "shared memory per block in bytes without opt-in") \
  X(TOTAL_CONSTANT_MEMORY, 9, total_constant_memory, "constant memory in bytes")                  \
  X(WARP_SIZE, 10, warp_size, "threads per warp")                                                  \
  X(MAX_PITCH, 11, max_pitch, "largest pitch of a 2D copy in bytes")                              \
  X(MAX_REGISTERS_PER_BLOCK, 12, regs_per_block, "32-bit registers per block")                    \
  X(CLOCK_RATE, 13, clock_rate_khz, "peak clock in kHz")                                           \
  X(GPU_OVERLAP, 15, gpu_overlap, "1 when a copy may overlap a kernel")                          \
  X(MULTI_PROCESSOR_COUNT, 16, multiprocessor_count, "multiprocessors")                            \
  X(KERNEL_EXEC_TIMEOUT, 17, kernel_exec_timeout, "1 when kernels run under a watchdog")          \
  X(INTEGRATED, 18, integrated, "1 for a device sharing the host's memory")                       \
  X(CAN_MAP_HOST_MEMORY, 19, can_map_host_memory, "1 when host memory can be mapped")             \
  X(COMPUTE_MODE, 20, compute_mode, "the compute mode (cudaComputeMode)")                         \
  X(CONCURRENT_KERNELS, 31, concurrent_kernels, "1 when kernels may run concurrently")            \
  X(ECC_ENABLED, 32, ecc_enabled, "1 when ECC is on")                                              \
  X(PCI_BUS_ID, 33, pci_bus_id, "PCI bus id")                                                      \
  X(PCI_DEVICE_ID, 34, pci_device_id, "PCI device id")                                             \
  X(TCC_DRIVER, 35, tcc_driver, "1 for the TCC driver")                                            \
  X(MEMORY_CLOCK_RATE, 36, memory_clock_rate_khz, "peak memory clock in kHz")                     \
  X(GLOBAL_MEMORY_BUS_WIDTH, 37, memory_bus_width, "memory bus width in bits")                    \
  X(L2_CACHE_SIZE, 38, l2_cache_size, "L2 cache in bytes")                                         \
  X(MAX_THREADS_PER_MULTI_PROCESSOR, 39, max_threads_per_multiprocessor, "resident threads per multiprocessor") \
  X(ASYNC_ENGINE_COUNT, 40, async_engine_count, "copy engines")                                    \
  X(UNIFIED_ADDRESSING, 41, unified_addressing, "1 with one address space for host and device")  \
  X(PCI_DOMAIN_ID, 50, pci_domain_id, "PCI domain id")                                             \
  X(COMPUTE_CAPABILITY_MAJOR, 75, compute_capability_major, "compute capability, major")          \
  X(COMPUTE_CAPABILITY_MINOR, 76, compute_capability_minor, "compute capability, minor")          \
  X(STREAM_PRIORITIES_SUPPORTED, 78, stream_priorities_supported, "1 when stream priorities are honoured") \
  X(GLOBAL_L1_CACHE_SUPPORTED, 79, global_l1_cache_supported, "1 when globals are cached in L1")  \
  X(LOCAL_L1_CACHE_SUPPORTED, 80, local_l1_cache_supported, "1 when locals are cached in L1")     \
  X(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 81, shared_memory_per_multiprocessor, "shared memory per multiprocessor in bytes") \
  X(MAX_REGISTERS_PER_MULTIPROCESSOR, 82, regs_per_multiprocessor, "32-bit registers per multiprocessor") \
  X(MANAGED_MEMORY, 83, managed_memory, "1 when managed memory is supported")                     \
  X(IS_MULTI_GPU_BOARD, 84, is_multi_gpu_board, "1 on a multi-GPU board")                         \
  X(MULTI_GPU_BOARD_GROUP_ID, 85, multi_gpu_board_group_id, "the multi-GPU board's group")        \
  X(HOST_NATIVE_ATOMIC_SUPPORTED, 86, host_native_atomic_supported, "1 when atomics are native for the host too") \
  X(SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 87, single_to_double_precision_perf_ratio, "float over double throughput") \
  X(PAGEABLE_MEMORY_ACCESS, 88, pageable_memory_access, "1 when kernels may access pageable memory") \
  X(CONCURRENT_MANAGED_ACCESS, 89, concurrent_managed_access, "1 when host and device may access managed memory at once") \
  X(COMPUTE_PREEMPTION_SUPPORTED, 90, compute_preemption_supported, "1 when kernels can be preempted") \
  X(CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 91, can_use_host_pointer_for_registered_mem, "1 when a registered pointer is its device pointer") \
  X(COOPERATIVE_LAUNCH, 95, cooperative_launch, "1 when cooperative launches are supported")     \
  X(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 97, shared_memory_per_block_optin, "shared memory per block in bytes with opt-in") \
  X(PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 100, pageable_memory_access_uses_host_page_tables, "1 when kernels reach pageable memory through the host's page tables") \
  X(DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, 101, direct_managed_mem_access_from_host, "1 when the host accesses managed memory directly") \
  X(MAX_BLOCKS_PER_MULTIPROCESSOR, 106, max_blocks_per_multiprocessor, "resident blocks per multiprocessor") \
  X(MAX_PERSISTING_L2_CACHE_SIZE, 108, persisting_l2_cache_max_size, "largest persisting L2 set-aside in bytes") \
  X(MAX_ACCESS_POLICY_WINDOW_SIZE, 109, max_access_policy_window_size, "largest access policy window in bytes") \
  X(RESERVED_SHARED_MEMORY_PER_BLOCK, 111, reserved_shared_memory_per_block, "shared memory reserved per block in bytes") \
  X(MEMORY_POOLS_SUPPORTED, 115, memory_pools_supported, "1 when stream-ordered allocation uses pools")

/* As gp_status_t's enumerators (gpuport/status.h): each one's documentation is its
 * sentence, substituted by Doxygen's preprocessor. */
#define GP__DEVICE_ATTR_ENUM(name, value, field, text) GP_DEVICE_ATTR_##name = value, /**< text */
/** @brief A device attribute (cudaDeviceAttr; the values are CUDA's). */
typedef enum gp_device_attr { GP_DEVICE_ATTR_LIST(GP__DEVICE_ATTR_ENUM) } gp_device_attr_t;
#undef GP__DEVICE_ATTR_ENUM

/**
 * @brief One attribute of @p device (cudaDeviceGetAttribute). The value equals the
 *        ::gp_device_props_t field GP_DEVICE_ATTR_LIST() names (byte counts above
 *        INT_MAX are clamped to INT_MAX). On cuda it is cudaDeviceGetAttribute, on hip
 *        hipDeviceGetAttribute with HIP's attribute of the same meaning; the CPU
 *        backend's values are documented with GP_DEVICE_ATTR_LIST().
 * @param[out] value the attribute's value.
 * @param[in] attr the attribute.
 * @param[in] device ordinal.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p value, or @p attr not in the
 *         list: cudaDeviceGetAttribute's cudaErrorInvalidValue), ::GP_ERROR_INVALID_DEVICE,
 *         ::GP_ERROR_NO_DEVICE.
 */
GP_API gp_status_t gp_device_get_attribute(int *value, gp_device_attr_t attr, int device);

/**
 * @brief Waits for all work on every stream of the current device (cudaDeviceSynchronize).
 * @return ::GP_SUCCESS or the asynchronous error raised by that work
 *         (e.g. ::GP_ERROR_LAUNCH_FAILED).
 */
GP_API gp_status_t gp_device_synchronize(void);

/**
 * @brief Destroys all allocations, streams and events of the current device and
 *        clears its errors (cudaDeviceReset). Handles of that device become invalid.
 * @return ::GP_SUCCESS, ::GP_ERROR_NO_DEVICE.
 */
GP_API gp_status_t gp_device_reset(void);

/**
 * @brief Whether @p device can access memory of @p peer directly (cudaDeviceCanAccessPeer).
 *        On the CPU backend every virtual device can access every other one.
 * @param[out] can_access 1 or 0.
 * @param[in] device ordinal.
 * @param[in] peer ordinal, different from @p device.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE, ::GP_ERROR_INVALID_DEVICE.
 */
GP_API gp_status_t gp_device_can_access_peer(int *can_access, int device, int peer);

/**
 * @brief Lets the current device access allocations of @p peer (cudaDeviceEnablePeerAccess).
 *        Enabling twice is not an error.
 * @param[in] peer ordinal, different from the current device.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_DEVICE, ::GP_ERROR_INVALID_VALUE (peer is current),
 *         ::GP_ERROR_NOT_SUPPORTED (no peer path).
 */
GP_API gp_status_t gp_device_enable_peer_access(int peer);

/**
 * @brief Range of stream priorities (cudaDeviceGetStreamPriorityRange): lower numbers
 *        are higher priority; @p greatest <= @p least.
 * @param[out] least may be NULL.
 * @param[out] greatest may be NULL.
 * @return ::GP_SUCCESS, ::GP_ERROR_NO_DEVICE.
 */
GP_API gp_status_t gp_device_stream_priority_range(int *least, int *greatest);

/** @brief Device flags of gp_device_set_flags(), bit for bit those of cudaSetDeviceFlags
 *         (CUDA Runtime API reference, "Device Management", cudaSetDeviceFlags). At most
 *         one of the four scheduling values may be given. */
enum {
  GP_DEVICE_SCHEDULE_AUTO = 0x00,          /**< the runtime chooses how a host thread waits
                                                (cudaDeviceScheduleAuto) */
  GP_DEVICE_SCHEDULE_SPIN = 0x01,          /**< a waiting thread spins (cudaDeviceScheduleSpin) */
  GP_DEVICE_SCHEDULE_YIELD = 0x02,         /**< a waiting thread yields its processor
                                                (cudaDeviceScheduleYield) */
  GP_DEVICE_SCHEDULE_BLOCKING_SYNC = 0x04, /**< a waiting thread blocks on a synchronisation
                                                primitive (cudaDeviceScheduleBlockingSync and
                                                its older name cudaDeviceBlockingSync) */
  GP_DEVICE_SCHEDULE_MASK = 0x07,          /**< the scheduling bits (cudaDeviceScheduleMask) */
  GP_DEVICE_MAP_HOST = 0x08,               /**< page-locked host memory may be mapped
                                                (cudaDeviceMapHost; mapping is always on since
                                                CUDA 4 with unified addressing) */
  GP_DEVICE_LMEM_RESIZE_TO_MAX = 0x10      /**< keep local memory sized for the largest
                                                launch (cudaDeviceLmemResizeToMax; dropped on
                                                HIP, whose devices have no such setting) */
};

/**
 * @brief Sets the flags of the current device (cudaSetDeviceFlags): how host threads
 *        wait for it, and whether host memory may be mapped. As with CUDA 12 the flags
 *        may be set while the device is in use, and apply to waits that begin afterwards.
 *
 * On the cpu backend the flags are kept per device and reported by gp_device_get_flags();
 * waits always block on a condition variable (what ::GP_DEVICE_SCHEDULE_BLOCKING_SYNC
 * asks for; spinning or yielding would only take processors from the executor), and host
 * memory is always mapped (can_map_host_memory 1). On cuda and hip it is cudaSetDeviceFlags
 * / hipSetDeviceFlags.
 * @param[in] flags an OR of at most one GP_DEVICE_SCHEDULE_* value, ::GP_DEVICE_MAP_HOST and
 *            ::GP_DEVICE_LMEM_RESIZE_TO_MAX.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (an unknown bit, or two scheduling values:
 *         cudaSetDeviceFlags's cudaErrorInvalidValue); ::GP_ERROR_NO_DEVICE.
 */
GP_API gp_status_t gp_device_set_flags(unsigned flags);

/**
 * @brief The flags of the current device (cudaGetDeviceFlags): those of the last
 *        gp_device_set_flags() on it, ::GP_DEVICE_SCHEDULE_AUTO (0) before one. On cuda and
 *        hip the native runtime's answer (which may add bits it sets itself, as CUDA adds
 *        ::GP_DEVICE_MAP_HOST).
 * @param[out] flags the flags.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p flags), ::GP_ERROR_NO_DEVICE.
 */
GP_API gp_status_t gp_device_get_flags(unsigned *flags);
/**@}*/

/* ------------------------------------------------------------------------------ */
/** @name Memory */
/**@{*/

/**
 * @brief Allocates @p bytes of device memory on the current device (cudaMalloc),
 *        aligned to 256 bytes. A size of 0 returns NULL and ::GP_SUCCESS.
 * @param[out] ptr the device pointer.
 * @param[in] bytes size in bytes.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p ptr), ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_malloc(void **ptr, size_t bytes);

/**
 * @brief Frees memory from gp_malloc() or gp_malloc_managed() (cudaFree). gp_free(NULL)
 *        is a no-op. Implicitly synchronises the device, as cudaFree.
 * @param[in] ptr the pointer returned by the allocation.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE for a pointer gpuport did not allocate
 *         (including memory from the native cudaMalloc/hipMalloc: the message says to
 *         free it with the native call), freed twice (on the cpu backend the message says
 *         so for the latest frees: see docs/PORTING.md "The cpu backend refuses what a GPU
 *         refuses"), not the start of an allocation, or allocated with another function
 *         (gp_malloc_host).
 */
GP_API gp_status_t gp_free(void *ptr);

/**
 * @brief Allocates page-locked host memory (cudaMallocHost).
 * @param[out] ptr the host pointer, accessible from the host and for async copies.
 * @param[in] bytes size in bytes.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE, ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_malloc_host(void **ptr, size_t bytes);

/**
 * @brief Frees memory from gp_malloc_host() (cudaFreeHost). NULL is a no-op.
 * @param[in] ptr the pointer returned by gp_malloc_host().
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (not from gp_malloc_host, or freed twice).
 */
GP_API gp_status_t gp_free_host(void *ptr);

/**
 * @brief Allocates managed (unified) memory, accessible from host and device
 *        (cudaMallocManaged with cudaMemAttachGlobal). Free with gp_free().
 * @param[out] ptr the pointer.
 * @param[in] bytes size in bytes.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE, ::GP_ERROR_OUT_OF_MEMORY,
 *         ::GP_ERROR_NOT_SUPPORTED (device without managed memory).
 */
GP_API gp_status_t gp_malloc_managed(void **ptr, size_t bytes);

/**
 * @brief Page-locks an existing host range (cudaHostRegister, default flags).
 * @param[in] ptr start of the range, not NULL.
 * @param[in] bytes length in bytes, > 0.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL, 0 bytes, or overlapping a range
 *         already registered).
 */
GP_API gp_status_t gp_host_register(void *ptr, size_t bytes);

/** @brief Flags of gp_host_alloc(), bit for bit those of cudaHostAlloc (CUDA Runtime API
 *         reference, cudaHostAlloc). */
enum {
  GP_HOST_ALLOC_DEFAULT = 0,        /**< page-locked, as gp_malloc_host() (cudaHostAllocDefault) */
  GP_HOST_ALLOC_PORTABLE = 1,       /**< pinned for every context (cudaHostAllocPortable) */
  GP_HOST_ALLOC_MAPPED = 2,         /**< mapped into the device's address space: see
                                         gp_host_get_device_pointer() (cudaHostAllocMapped) */
  GP_HOST_ALLOC_WRITE_COMBINED = 4  /**< write-combined: fast for the device to read, slow
                                         for the host to read (cudaHostAllocWriteCombined) */
};

/**
 * @brief Allocates page-locked host memory with flags (cudaHostAlloc). Free it with
 *        gp_free_host().
 *
 * Per the CUDA Runtime API reference (cudaHostAlloc), memory allocated with
 * ::GP_HOST_ALLOC_MAPPED has a device pointer, from gp_host_get_device_pointer(), through
 * which kernels read and write it. On the cpu backend every flag is accepted and host and
 * device share one address space: the device pointer is the host pointer.
 * @param[out] ptr the host pointer (NULL for 0 bytes).
 * @param[in] bytes size in bytes.
 * @param[in] flags an OR of GP_HOST_ALLOC_* values.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p ptr, or a bit in @p flags that
 *         is not a GP_HOST_ALLOC_* value); ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_host_alloc(void **ptr, size_t bytes, unsigned flags);

/** @brief Flags of gp_host_register_flags(), bit for bit those of cudaHostRegister (CUDA
 *         Runtime API reference, cudaHostRegister). */
enum {
  GP_HOST_REGISTER_DEFAULT = 0,   /**< page-locked, as gp_host_register() */
  GP_HOST_REGISTER_PORTABLE = 1,  /**< pinned for every context (cudaHostRegisterPortable) */
  GP_HOST_REGISTER_MAPPED = 2,    /**< mapped into the device's address space: see
                                       gp_host_get_device_pointer() (cudaHostRegisterMapped) */
  GP_HOST_REGISTER_IO_MEMORY = 4, /**< the range is I/O memory of a third-party device
                                       (cudaHostRegisterIoMemory) */
  GP_HOST_REGISTER_READ_ONLY = 8  /**< the device only reads the range
                                       (cudaHostRegisterReadOnly; dropped on HIP, which has
                                       no such flag) */
};

/**
 * @brief Page-locks an existing host range with flags (cudaHostRegister). Undo with
 *        gp_host_unregister(); gp_host_register() is this with ::GP_HOST_REGISTER_DEFAULT.
 *
 * Registered memory with ::GP_HOST_REGISTER_MAPPED has a device pointer, from
 * gp_host_get_device_pointer() (CUDA Runtime API reference, cudaHostRegister). On the cpu
 * backend every flag is accepted and the device pointer is the host pointer.
 * @param[in] ptr start of the range, not NULL.
 * @param[in] bytes length in bytes, > 0.
 * @param[in] flags an OR of GP_HOST_REGISTER_* values.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL, 0 bytes, a bit in @p flags that is
 *         not a GP_HOST_REGISTER_* value, or overlapping memory gpuport already knows),
 *         ::GP_ERROR_NOT_SUPPORTED (a flag the device refuses, as ::GP_HOST_REGISTER_IO_MEMORY
 *         on HIP).
 */
GP_API gp_status_t gp_host_register_flags(void *ptr, size_t bytes, unsigned flags);

/**
 * @brief The device address of mapped page-locked host memory (cudaHostGetDevicePointer).
 *
 * @p host may point anywhere inside memory from gp_malloc_host(), gp_host_alloc() or
 * gp_host_register() / gp_host_register_flags(); the result points at the same byte. A
 * kernel may read and write through it; the host sees the kernel's writes once it has
 * synchronised with the kernel (CUDA Runtime API reference, cudaHostGetDevicePointer and
 * "Mapped Memory" in the CUDA C++ Programming Guide). On the cpu backend host and device
 * share one address space, so the result is @p host. On CUDA and HIP the memory must have
 * been allocated or registered mapped, or the device must use unified addressing.
 * @param[out] dptr the device pointer.
 * @param[in] host a pointer into page-locked host memory.
 * @param[in] flags must be 0 (as cudaHostGetDevicePointer).
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p dptr or @p host, @p flags not 0,
 *         or @p host not in page-locked host memory gpuport allocated or registered; @p
 *         dptr is then NULL).
 */
GP_API gp_status_t gp_host_get_device_pointer(void **dptr, void *host, unsigned flags);

/**
 * @brief Undoes gp_host_register() (cudaHostUnregister).
 * @param[in] ptr the pointer given to gp_host_register().
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (not registered).
 */
GP_API gp_status_t gp_host_unregister(void *ptr);

/** @brief A stream: an ordered queue of work on one device (cudaStream_t). NULL is the
 *         current device's legacy default stream. */
typedef struct gp_stream_s *gp_stream_t;
/** @brief An event: a marker in a stream (cudaEvent_t). */
typedef struct gp_event_s *gp_event_t;

/** @brief The legacy default stream of the current device, explicitly (cudaStreamLegacy). */
#define GP_STREAM_LEGACY ((gp_stream_t)0x1)
/** @brief The calling host thread's per-thread default stream (cudaStreamPerThread):
 *         it does not synchronise with other streams. */
#define GP_STREAM_PER_THREAD ((gp_stream_t)0x2)

/**
 * @brief Stream-ordered allocation (cudaMallocAsync): the memory may be used by work
 *        enqueued on @p stream after this call.
 * @param[out] ptr the device pointer.
 * @param[in] bytes size in bytes.
 * @param[in] stream the stream.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE, ::GP_ERROR_INVALID_HANDLE,
 *         ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_malloc_async(void **ptr, size_t bytes, gp_stream_t stream);

/**
 * @brief Stream-ordered free (cudaFreeAsync): the memory is released once the work
 *        enqueued on @p stream before this call is complete.
 * @param[in] ptr memory from gp_malloc_async() or gp_malloc().
 * @param[in] stream the stream.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (as gp_free), ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_free_async(void *ptr, gp_stream_t stream);

/** @brief A stream-ordered memory pool (cudaMemPool_t): where gp_malloc_async() takes
 *         memory from and gp_free_async() returns it to. gpuport has each device's default
 *         pool, from gp_device_get_default_mem_pool(). */
typedef struct gp_mem_pool_s *gp_mem_pool_t;

/** @brief An attribute of a memory pool (cudaMemPoolAttr, with CUDA's values; CUDA Runtime
 *         API reference, "Stream Ordered Memory Allocator"). The value is an int for the
 *         reuse policies (0 off, 1 on; all on by default) and a uint64_t for the release
 *         threshold. */
typedef enum gp_mem_pool_attr {
  GP_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1,   /**< int: memory freed on a stream may be
                                                          reused by a stream that waits on an
                                                          event after the free
                                                          (cudaMemPoolReuseFollowEventDependencies) */
  GP_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC = 2,         /**< int: memory whose free has completed
                                                          may be reused by any stream
                                                          (cudaMemPoolReuseAllowOpportunistic) */
  GP_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3, /**< int: the allocator may make a stream
                                                          wait for a free on another one
                                                          (cudaMemPoolReuseAllowInternalDependencies) */
  GP_MEM_POOL_ATTR_RELEASE_THRESHOLD = 4             /**< uint64_t: bytes the pool may keep
                                                          reserved before it returns memory to
                                                          the system at a synchronisation
                                                          (cudaMemPoolAttrReleaseThreshold;
                                                          default 0) */
} gp_mem_pool_attr_t;

/**
 * @brief The default memory pool of @p device (cudaDeviceGetDefaultMemPool): the pool of
 *        gp_malloc_async() on that device.
 *
 * On the cpu backend the pool holds its attributes; gp_malloc_async() allocates from the
 * system and gp_free_async() returns the memory once the stream reaches the free, which is
 * what a release threshold of 0 does and what any threshold allows (the threshold bounds
 * what a pool may keep, not what it must). On cuda and hip the pool is the native one.
 * @param[out] pool the pool.
 * @param[in] device ordinal.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p pool), ::GP_ERROR_INVALID_DEVICE,
 *         ::GP_ERROR_NO_DEVICE; on cuda and hip what the native call returns
 *         (::GP_ERROR_NOT_SUPPORTED on a device without memory pools, memory_pools_supported 0).
 */
GP_API gp_status_t gp_device_get_default_mem_pool(gp_mem_pool_t *pool, int device);

/**
 * @brief Sets an attribute of @p pool (cudaMemPoolSetAttribute).
 * @param[in] pool from gp_device_get_default_mem_pool().
 * @param[in] attr the attribute.
 * @param[in] value points to an int (reuse policies: 0 or 1) or a uint64_t (release
 *            threshold), as ::gp_mem_pool_attr_t says.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p pool or @p value, @p attr not a
 *         ::gp_mem_pool_attr_t, a reuse policy other than 0 or 1: cudaMemPoolSetAttribute's
 *         cudaErrorInvalidValue); ::GP_ERROR_INVALID_HANDLE (on the cpu backend, @p pool is
 *         not a pool gpuport gave out; on cuda and hip the native runtime checks it).
 */
GP_API gp_status_t gp_mem_pool_set_attribute(gp_mem_pool_t pool, gp_mem_pool_attr_t attr, void *value);

/**
 * @brief Reads an attribute of @p pool (cudaMemPoolGetAttribute).
 * @param[in] pool from gp_device_get_default_mem_pool().
 * @param[in] attr the attribute.
 * @param[out] value an int or a uint64_t, as ::gp_mem_pool_attr_t says.
 * @return as gp_mem_pool_set_attribute().
 */
GP_API gp_status_t gp_mem_pool_get_attribute(gp_mem_pool_t pool, gp_mem_pool_attr_t attr, void *value);

/**
 * @brief Copies @p bytes from @p src to @p dst, the direction inferred from the pointers
 *        (cudaMemcpy with cudaMemcpyDefault). Synchronous with respect to the host; it
 *        runs in the legacy default stream, so it waits for the device's blocking streams.
 * @param[out] dst destination (host or device).
 * @param[in] src source (host or device).
 * @param[in] bytes size in bytes; 0 is a no-op.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL with bytes > 0, a range that runs
 *         past the end of a gpuport allocation, or, on the cpu backend, a pointer into
 *         device memory already freed: cudaMemcpy's cudaErrorInvalidValue for a pointer
 *         that is no longer a device allocation; the message names the argument), or an
 *         asynchronous error of earlier work. Plain host memory is a valid side of a copy.
 */
GP_API gp_status_t gp_memcpy(void *dst, const void *src, size_t bytes);

/**
 * @brief As gp_memcpy() but enqueued on @p stream (cudaMemcpyAsync).
 *
 * Pageable host memory (neither from gp_malloc_host() nor gp_host_register()) is handled
 * as the CUDA Runtime API reference, "API synchronization behavior", says for the
 * asynchronous copies, so the host may reuse it as soon as the call returns:
 *  - pageable host to device (or managed) memory: the source is copied to a staging
 *    buffer before the call returns ("host memory is copied to a staging buffer
 *    immediately (no device synchronization is performed)"); overwriting it afterwards
 *    does not change what arrives;
 *  - device to pageable host memory: "the function will return only once the copy has
 *    completed", so the call waits for the stream's earlier work;
 *  - between host memory with a pageable side: synchronous with respect to the host.
 *
 * From or to page-locked host memory, and between device memory, the copy stays
 * asynchronous: the memory must stay valid and unchanged until the stream reaches it.
 * On cuda and hip the native runtime does this itself (cudaMemcpyAsync,
 * hipMemcpyAsync). On the cpu backend staging takes a buffer from a pool (no allocation
 * per call once warm); a pageable source over 64 MiB is copied synchronously instead,
 * which CUDA also allows ("the function might be synchronous with respect to host").
 * A copy captured into a graph (gpuport/graph.h) reads its source when the graph runs.
 * @return as gp_memcpy(), plus ::GP_ERROR_INVALID_HANDLE; where the copy waits (to
 *         pageable memory), ::GP_ERROR_NOT_SUPPORTED inside a host function on the cpu
 *         backend, as gp_launch_host_func() says of every wait.
 */
GP_API gp_status_t gp_memcpy_async(void *dst, const void *src, size_t bytes, gp_stream_t stream);

/**
 * @brief Copies a 2D region of @p height rows of @p width_bytes bytes (cudaMemcpy2D with
 *        cudaMemcpyDefault). Pitches are in bytes.
 * @param[out] dst destination, rows @p dpitch bytes apart.
 * @param[in] dpitch >= @p width_bytes.
 * @param[in] src source, rows @p spitch bytes apart.
 * @param[in] spitch >= @p width_bytes.
 * @param[in] width_bytes bytes per row.
 * @param[in] height rows.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL, pitch < width, and what
 *         gp_memcpy() refuses).
 */
GP_API gp_status_t gp_memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                                size_t width_bytes, size_t height);

/** @brief As gp_memcpy_2d(), enqueued on @p stream (cudaMemcpy2DAsync); pageable host
 *         memory is staged or waited for as gp_memcpy_async() says.
 *  @return as gp_memcpy_2d(), plus ::GP_ERROR_INVALID_HANDLE. */
GP_API gp_status_t gp_memcpy_2d_async(void *dst, size_t dpitch, const void *src, size_t spitch,
                                      size_t width_bytes, size_t height, gp_stream_t stream);

/**
 * @brief Copies between devices (cudaMemcpyPeer).
 * @param[out] dst device memory on @p dst_device.
 * @param[in] dst_device ordinal.
 * @param[in] src device memory on @p src_device.
 * @param[in] src_device ordinal.
 * @param[in] bytes size in bytes.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (what gp_memcpy() refuses; a gpuport
 *         allocation of another device than the one named; on the cpu backend, memory
 *         gpuport neither allocated nor registered, which is not device memory:
 *         cudaMemcpyPeer's cudaErrorInvalidValue), ::GP_ERROR_INVALID_DEVICE.
 */
GP_API gp_status_t gp_memcpy_peer(void *dst, int dst_device, const void *src, int src_device,
                                  size_t bytes);

/** @brief As gp_memcpy_peer(), enqueued on @p stream (cudaMemcpyPeerAsync).
 *  @return as gp_memcpy_peer(), plus ::GP_ERROR_INVALID_HANDLE. */
GP_API gp_status_t gp_memcpy_peer_async(void *dst, int dst_device, const void *src,
                                        int src_device, size_t bytes, gp_stream_t stream);

/**
 * @brief Sets @p bytes bytes at @p ptr to the byte @p value (cudaMemset).
 * @param[out] ptr device or managed memory, or host memory from gp_malloc_host() or
 *            gp_host_register().
 * @param[in] value the byte value (low 8 bits used).
 * @param[in] bytes count in bytes.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL with bytes > 0, range past an
 *         allocation; on the cpu backend, device memory already freed, or memory gpuport
 *         neither allocated nor registered (plain malloc), which is not device-accessible:
 *         cudaMemset's cudaErrorInvalidValue; the message names @p ptr).
 */
GP_API gp_status_t gp_memset(void *ptr, int value, size_t bytes);

/** @brief As gp_memset(), enqueued on @p stream (cudaMemsetAsync).
 *  @return as gp_memset(), plus ::GP_ERROR_INVALID_HANDLE. */
GP_API gp_status_t gp_memset_async(void *ptr, int value, size_t bytes, gp_stream_t stream);

/**
 * @brief Sets @p count 32-bit words at @p ptr to @p value (cuMemsetD32).
 * @param[out] ptr 4-byte aligned memory, as for gp_memset().
 * @param[in] value the word.
 * @param[in] count number of 32-bit elements (not bytes).
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL, misaligned, and what gp_memset()
 *         refuses).
 */
GP_API gp_status_t gp_memset_d32(void *ptr, uint32_t value, size_t count);

/** @brief As gp_memset_d32(), enqueued on @p stream (cuMemsetD32Async).
 *  @return as gp_memset_d32(), plus ::GP_ERROR_INVALID_HANDLE. */
GP_API gp_status_t gp_memset_d32_async(void *ptr, uint32_t value, size_t count, gp_stream_t stream);

/** @brief A device variable (`__constant__` or `__device__`) of a dialect source: name
 *         one with GP_SYMBOL_DECLARE() and GP_SYMBOL_REF() (gpuport/kernel_abi.h). */
typedef const struct gp_symbol_s *gp_symbol_t;

/**
 * @brief Copies @p bytes from @p src into device variable @p symbol at byte @p offset
 *        (cudaMemcpyToSymbol / hipMemcpyToSymbol with the default direction). Ordered
 *        like gp_memcpy(): it waits for earlier work of the legacy default stream, and
 *        kernels launched afterwards see the new contents.
 * @param[in] symbol from GP_SYMBOL_REF(); exported with GP_SYMBOL_EXPORT() in a dialect
 *            source built for this backend.
 * @param[in] src host or device memory.
 * @param[in] bytes size in bytes; 0 is a no-op.
 * @param[in] offset byte offset into the variable; @p offset + @p bytes must not exceed
 *            the variable's size.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL pointer with bytes > 0, a range
 *         past the end of the variable, or what gp_memcpy() refuses of @p src),
 *         ::GP_ERROR_INVALID_HANDLE (not a symbol
 *         descriptor), ::GP_ERROR_INVALID_IMAGE (built for another backend), or an
 *         asynchronous error of earlier work.
 */
GP_API gp_status_t gp_memcpy_to_symbol(gp_symbol_t symbol, const void *src, size_t bytes,
                                       size_t offset);

/**
 * @brief Copies @p bytes from device variable @p symbol at byte @p offset into @p dst
 *        (cudaMemcpyFromSymbol / hipMemcpyFromSymbol).
 * @param[out] dst host or device memory.
 * @param[in] symbol the variable.
 * @param[in] bytes size in bytes; 0 is a no-op.
 * @param[in] offset byte offset into the variable.
 * @return as gp_memcpy_to_symbol().
 */
GP_API gp_status_t gp_memcpy_from_symbol(void *dst, gp_symbol_t symbol, size_t bytes,
                                         size_t offset);

/**
 * @brief As gp_memcpy_to_symbol() but enqueued on @p stream (cudaMemcpyToSymbolAsync).
 *        The source must stay valid until the stream reaches the copy.
 * @return as gp_memcpy_to_symbol(), plus ::GP_ERROR_INVALID_HANDLE for a bad stream.
 */
GP_API gp_status_t gp_memcpy_to_symbol_async(gp_symbol_t symbol, const void *src, size_t bytes,
                                             size_t offset, gp_stream_t stream);

/**
 * @brief As gp_memcpy_from_symbol() but enqueued on @p stream (cudaMemcpyFromSymbolAsync).
 * @return as gp_memcpy_from_symbol(), plus ::GP_ERROR_INVALID_HANDLE for a bad stream.
 */
GP_API gp_status_t gp_memcpy_from_symbol_async(void *dst, gp_symbol_t symbol, size_t bytes,
                                               size_t offset, gp_stream_t stream);

/**
 * @brief The device address of variable @p symbol on the current device
 *        (cudaGetSymbolAddress), to pass to kernels or to copies.
 * @param[out] ptr the address (on the CPU backend, the variable itself).
 * @param[in] symbol the variable.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE, ::GP_ERROR_INVALID_HANDLE,
 *         ::GP_ERROR_INVALID_IMAGE.
 */
GP_API gp_status_t gp_symbol_address(void **ptr, gp_symbol_t symbol);

/**
 * @brief The size in bytes of variable @p symbol (cudaGetSymbolSize).
 * @param[out] bytes the size.
 * @param[in] symbol the variable.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE, ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_symbol_size(size_t *bytes, gp_symbol_t symbol);

/**
 * @brief Free and total device memory of the current device in bytes (cudaMemGetInfo).
 * @param[out] free_bytes may be NULL.
 * @param[out] total_bytes may be NULL.
 * @return ::GP_SUCCESS, ::GP_ERROR_NO_DEVICE.
 */
GP_API gp_status_t gp_mem_get_info(size_t *free_bytes, size_t *total_bytes);

/** @brief Kind of memory a pointer refers to (cudaMemoryType). */
typedef enum gp_memory_type {
  GP_MEMORY_UNREGISTERED = 0, /**< pageable host memory gpuport does not know */
  GP_MEMORY_HOST = 1,         /**< page-locked host memory (gp_malloc_host, gp_host_register) */
  GP_MEMORY_DEVICE = 2,       /**< device memory */
  GP_MEMORY_MANAGED = 3       /**< managed memory */
} gp_memory_type_t;

/** @brief What gp_pointer_get_attributes() reports. Initialise with
 *         gp_pointer_attributes_init(). */
typedef struct gp_pointer_attributes {
  size_t struct_size;     /**< set by gp_pointer_attributes_init() */
  gp_memory_type_t type;  /**< the kind of memory */
  int device;             /**< owning device; -1 for unregistered host memory */
  void *device_pointer;   /**< address usable in kernels, NULL if none */
  void *host_pointer;     /**< address usable on the host, NULL if none */
  int native;             /**< 1 when allocated by the native runtime, not by gpuport */
} gp_pointer_attributes_t;

/** @brief Sets @p attr->struct_size and zeroes the rest. */
static inline void gp_pointer_attributes_init(gp_pointer_attributes_t *attr) {
  unsigned char *p = (unsigned char *)attr;
  for (size_t i = 0; i < sizeof(*attr); i++) p[i] = 0;
  attr->struct_size = sizeof(*attr);
}

/**
 * @brief What kind of memory @p ptr points into (cudaPointerGetAttributes). Interior
 *        pointers are recognised. Unknown host pointers give ::GP_MEMORY_UNREGISTERED
 *        and ::GP_SUCCESS, as CUDA 11+.
 * @param[in,out] attr initialised with gp_pointer_attributes_init().
 * @param[in] ptr any pointer; NULL gives ::GP_ERROR_INVALID_VALUE.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE.
 */
GP_API gp_status_t gp_pointer_get_attributes(gp_pointer_attributes_t *attr, const void *ptr);
/**@}*/

/* ------------------------------------------------------------------------------ */
/** @name Streams, events and host callbacks */
/**@{*/

/** @brief Stream flag: the stream does not synchronise with the legacy default stream
 *         (cudaStreamNonBlocking). */
#define GP_STREAM_DEFAULT 0x0u
/** @brief See ::GP_STREAM_DEFAULT. */
#define GP_STREAM_NON_BLOCKING 0x1u

/**
 * @brief Creates a blocking stream on the current device (cudaStreamCreate).
 * @param[out] stream the new stream.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE, ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_stream_create(gp_stream_t *stream);

/**
 * @brief Creates a stream with flags (cudaStreamCreateWithFlags).
 * @param[out] stream the new stream.
 * @param[in] flags ::GP_STREAM_DEFAULT or ::GP_STREAM_NON_BLOCKING.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (unknown flags), ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_stream_create_with_flags(gp_stream_t *stream, unsigned flags);

/**
 * @brief Creates a blocking stream with a priority (cudaStreamCreateWithPriority).
 *        Priorities outside gp_device_stream_priority_range() are clamped, as CUDA.
 * @param[out] stream the new stream.
 * @param[in] priority lower is higher priority.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE, ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_stream_create_with_priority(gp_stream_t *stream, int priority);

/**
 * @brief Destroys @p stream once its enqueued work completes (cudaStreamDestroy).
 *        NULL is a no-op. Work another thread enqueues on it meanwhile is either queued
 *        before the destroy (and runs) or refused with ::GP_ERROR_INVALID_HANDLE (see
 *        the file comment, "Handles and threads"); wrappers of it (gp_stream_wrap() on
 *        the cpu backend) are destroyed with it.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_HANDLE (destroyed or foreign handle),
 *         ::GP_ERROR_INVALID_VALUE (::GP_STREAM_LEGACY or ::GP_STREAM_PER_THREAD, which
 *         cannot be destroyed).
 */
GP_API gp_status_t gp_stream_destroy(gp_stream_t stream);

/**
 * @brief Waits until all work enqueued on @p stream is complete (cudaStreamSynchronize).
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_HANDLE, or the asynchronous error raised by
 *         that work (::GP_ERROR_LAUNCH_FAILED, ...).
 */
GP_API gp_status_t gp_stream_synchronize(gp_stream_t stream);

/**
 * @brief Whether all work on @p stream is complete (cudaStreamQuery).
 * @return ::GP_SUCCESS (complete), ::GP_ERROR_NOT_READY, ::GP_ERROR_INVALID_HANDLE, or
 *         an asynchronous error.
 */
GP_API gp_status_t gp_stream_query(gp_stream_t stream);

/**
 * @brief Makes future work on @p stream wait for the last gp_event_record() of @p event
 *        (cudaStreamWaitEvent). An event never recorded is complete.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_stream_wait_event(gp_stream_t stream, gp_event_t event);

/** @brief Attach flag: the memory is accessible from any stream of any device
 *         (cudaMemAttachGlobal). */
#define GP_MEM_ATTACH_GLOBAL 0x1u
/** @brief Attach flag: the memory is for the host; no stream's kernels access it
 *         (cudaMemAttachHost). */
#define GP_MEM_ATTACH_HOST 0x2u
/** @brief Attach flag: only @p stream's work accesses it (cudaMemAttachSingle). */
#define GP_MEM_ATTACH_SINGLE 0x4u

/**
 * @brief Attaches managed memory to @p stream (cudaStreamAttachMemAsync): a coherence hint
 *        for devices where the host may not touch managed memory while kernels run
 *        (concurrent_managed_access 0). On cuda and hip it is cudaStreamAttachMemAsync /
 *        hipStreamAttachMemAsync; on the cpu backend, where host and kernels share the
 *        memory (concurrent_managed_access 1), it is checked and accepted.
 * @param[in] stream the stream; ::GP_MEM_ATTACH_SINGLE needs a created stream (not a
 *            default one), as CUDA.
 * @param[in] ptr memory from gp_malloc_managed() (on cuda/hip also a managed
 *            `__managed__` variable the runtime knows).
 * @param[in] length 0 (the whole allocation) or the allocation's size, as CUDA requires.
 * @param[in] flags exactly one of ::GP_MEM_ATTACH_GLOBAL, ::GP_MEM_ATTACH_HOST,
 *            ::GP_MEM_ATTACH_SINGLE.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p ptr, memory gpuport knows that is
 *         not managed, another length, bad flags, ::GP_MEM_ATTACH_SINGLE on a default
 *         stream), ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_stream_attach_mem_async(gp_stream_t stream, void *ptr, size_t length,
                                              unsigned flags);

/**
 * @brief Enqueues a host function (cudaLaunchHostFunc). @p fn runs on a library thread
 *        once earlier work on @p stream is complete; later work waits for it. @p fn must
 *        not call gpuport functions that enqueue or wait (as CUDA). On the CPU backend a
 *        wait called from @p fn (synchronisation, a synchronous copy or set, gp_free(),
 *        gp_free_host(), gp_device_reset()) returns ::GP_ERROR_NOT_SUPPORTED instead of
 *        deadlocking.
 * @param[in] stream the stream.
 * @param[in] fn the function, not NULL.
 * @param[in] user its argument.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE, ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_launch_host_func(gp_stream_t stream, void (*fn)(void *), void *user);

/** @brief A stream callback (cudaStreamCallback_t): the stream it was added to (as given to
 *         gp_stream_add_callback()), the status of the stream's device when it runs, and the
 *         user's argument. */
typedef void (*gp_stream_callback_t)(gp_stream_t stream, gp_status_t status, void *user);

/**
 * @brief Enqueues a callback with a status (cudaStreamAddCallback): @p callback runs on a
 *        library thread once earlier work on @p stream is complete, and later work waits
 *        for it, as with gp_launch_host_func().
 *
 * @p status is ::GP_SUCCESS, or the error an earlier operation raised (a kernel's fault,
 * ::GP_ERROR_LAUNCH_FAILED ...), which the callback receives without clearing it (CUDA
 * Runtime API reference, cudaStreamAddCallback: "status: cudaSuccess or any persistent
 * error on the stream"). The callback runs even after an error, so that what it owns can
 * be released. It must not call gpuport functions that enqueue or wait (as CUDA; on the
 * cpu backend a wait returns ::GP_ERROR_NOT_SUPPORTED). CUDA does not capture such callbacks
 * into graphs (use gp_launch_host_func() there): on a capturing stream it fails.
 * @param[in] stream the stream (NULL and the named default streams are valid).
 * @param[in] callback the function, not NULL.
 * @param[in] user its argument.
 * @param[in] flags must be 0 (reserved, as CUDA).
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p callback, @p flags not 0),
 *         ::GP_ERROR_INVALID_HANDLE, ::GP_ERROR_NOT_SUPPORTED (@p stream is capturing:
 *         CUDA's cudaErrorStreamCaptureUnsupported; the capture is invalidated, as any
 *         failed call during a capture), ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_stream_add_callback(gp_stream_t stream, gp_stream_callback_t callback, void *user,
                                          unsigned flags);

/**
 * @brief The native cudaStream_t / hipStream_t behind @p stream, for mixing gpuport with
 *        native code. On the CPU backend: the gp_stream_t itself.
 * @return the native handle, or NULL for an invalid handle.
 */
GP_API void *gp_stream_native(gp_stream_t stream);

/**
 * @brief Wraps a native stream the application owns (cudaStream_t / hipStream_t).
 *        gp_stream_destroy() releases the wrapper, not the native stream. The wrapper
 *        must not outlive the native stream; on the CPU backend, destroying the wrapped
 *        gp_stream_t releases its wrappers too (later calls with them return
 *        ::GP_ERROR_INVALID_HANDLE).
 * @param[out] stream the wrapper.
 * @param[in] native the native stream; on the CPU backend a gp_stream_t.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE, ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_stream_wrap(gp_stream_t *stream, void *native);

/** @brief Event flag (cudaEventDefault). */
#define GP_EVENT_DEFAULT 0x0u
/** @brief Synchronising on the event blocks the thread instead of spinning
 *         (cudaEventBlockingSync). */
#define GP_EVENT_BLOCKING_SYNC 0x1u
/** @brief The event records no time; gp_event_elapsed_ms() on it fails
 *         (cudaEventDisableTiming). */
#define GP_EVENT_DISABLE_TIMING 0x2u

/**
 * @brief Creates an event with timing (cudaEventCreate).
 * @param[out] event the new event.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE, ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_event_create(gp_event_t *event);

/**
 * @brief Creates an event with flags (cudaEventCreateWithFlags).
 * @param[out] event the new event.
 * @param[in] flags a combination of ::GP_EVENT_BLOCKING_SYNC, ::GP_EVENT_DISABLE_TIMING.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (unknown flags), ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_event_create_with_flags(gp_event_t *event, unsigned flags);

/**
 * @brief Records @p event in @p stream: it completes when earlier work on the stream
 *        does (cudaEventRecord). The stream must belong to the device the event was
 *        created on (the default streams: the current device), whichever device is
 *        current; a stream of another device may wait for the event
 *        (gp_stream_wait_event()).
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_HANDLE (a destroyed or foreign handle; the
 *         event and the stream of different devices, as cudaEventRecord's
 *         cudaErrorInvalidResourceHandle: on the cpu backend gpuport says so, naming both;
 *         on cuda/hip the native runtime refuses).
 */
GP_API gp_status_t gp_event_record(gp_event_t event, gp_stream_t stream);

/**
 * @brief Waits for the last record of @p event (cudaEventSynchronize).
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_HANDLE, or an asynchronous error.
 */
GP_API gp_status_t gp_event_synchronize(gp_event_t event);

/**
 * @brief Whether the last record of @p event is complete (cudaEventQuery).
 * @return ::GP_SUCCESS, ::GP_ERROR_NOT_READY, ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_event_query(gp_event_t event);

/**
 * @brief Milliseconds between two completed events (cudaEventElapsedTime).
 * @param[out] ms elapsed time in milliseconds (resolution about 0.5 us).
 * @param[in] start recorded and complete.
 * @param[in] end recorded and complete.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL, never recorded, or created with
 *         ::GP_EVENT_DISABLE_TIMING), ::GP_ERROR_NOT_READY, ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_event_elapsed_ms(float *ms, gp_event_t start, gp_event_t end);

/**
 * @brief Destroys @p event (cudaEventDestroy); a pending record completes normally.
 *        NULL is a no-op.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_HANDLE.
 */
GP_API gp_status_t gp_event_destroy(gp_event_t event);

/** @brief The native cudaEvent_t / hipEvent_t behind @p event (the gp_event_t itself on
 *         the CPU backend). @return the handle, or NULL when @p event is invalid. */
GP_API void *gp_event_native(gp_event_t event);

/**
 * @brief Wraps a native event the application owns; gp_event_destroy() frees the wrapper only.
 *        As with gp_stream_wrap(), the wrapper must not outlive the native event; on the
 *        CPU backend, destroying the wrapped gp_event_t releases its wrappers too.
 * @param[out] event the wrapper.
 * @param[in] native cudaEvent_t / hipEvent_t; on the CPU backend a gp_event_t.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE, ::GP_ERROR_OUT_OF_MEMORY.
 */
GP_API gp_status_t gp_event_wrap(gp_event_t *event, void *native);
/**@}*/

/* ------------------------------------------------------------------------------ */
/** @name Kernel launch */
/**@{*/

/** @brief A kernel: a compiled entry point of a dialect source (see gpuport/kernel.h).
 *         Name one from C with GP_KERNEL_DECLARE() and GP_KERNEL_REF(). */
typedef const struct gp_kernel_s *gp_kernel_t;

/**
 * @brief Launches @p kernel on @p stream (cudaLaunchKernel).
 * @param[in] kernel from GP_KERNEL_REF(); its descriptor must be for this backend.
 * @param[in] grid blocks per dimension, each >= 1 and within max_grid_dim.
 * @param[in] block threads per dimension; the product at most max_threads_per_block.
 * @param[in] dynamic_shared_bytes bytes of dynamic shared memory per block.
 * @param[in] stream the stream: one of the current device (the default streams are).
 * @param[in] args array of pointers to each argument, as cudaLaunchKernel; may be NULL
 *            only for a kernel without parameters. Pointer arguments are not checked
 *            (nor are they by CUDA).
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL kernel or args),
 *         ::GP_ERROR_INVALID_HANDLE (not a kernel of this program or of a loaded module:
 *         the descriptor is looked up before it is read; a destroyed stream; a stream of
 *         another device than the current one, as cudaLaunchKernel's
 *         cudaErrorInvalidResourceHandle: on the cpu backend the message names 'stream'
 *         and both devices, on cuda/hip the native runtime refuses),
 *         ::GP_ERROR_INVALID_CONFIGURATION (zero or oversize dimensions, too much shared
 *         memory), ::GP_ERROR_INVALID_IMAGE (kernel built for another backend). Faults
 *         during the run are reported asynchronously (::GP_ERROR_LAUNCH_FAILED), and so is
 *         a kernel that ran too long (::GP_ERROR_TIMEOUT: on the cpu backend, longer than
 *         the `GP_LAUNCH_TIMEOUT_S` environment variable's seconds, a watchdog that is off
 *         by default; the message names the kernel, and the process stays usable; on
 *         cuda/hip, the driver's watchdog, cudaErrorLaunchTimeout, sticky as every fault).
 */
GP_API gp_status_t gp_launch(gp_kernel_t kernel, gp_dim3_t grid, gp_dim3_t block,
                             size_t dynamic_shared_bytes, gp_stream_t stream, void **args);

/**
 * @brief Raises the dynamic shared memory a kernel may request above the default limit
 *        (cudaFuncSetAttribute with cudaFuncAttributeMaxDynamicSharedMemorySize).
 * @param[in] kernel the kernel.
 * @param[in] bytes at most shared_memory_per_block_optin minus the kernel's static shared memory.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_HANDLE, ::GP_ERROR_INVALID_VALUE (too large).
 */
GP_API gp_status_t gp_kernel_set_max_dynamic_shared(gp_kernel_t kernel, size_t bytes);

/**
 * @brief The block size that maximises occupancy for @p kernel, and the smallest grid that
 *        reaches it (cudaOccupancyMaxPotentialBlockSize, with a fixed dynamic shared
 *        memory size). Computed as the CUDA runtime's header does: over block sizes that
 *        are multiples of the warp size from the largest allowed down, the one whose
 *        resident threads per multiprocessor (gp_occupancy_max_active_blocks() x block
 *        size) is largest; the largest such block on a tie. On the cpu backend every
 *        block that fits keeps one multiprocessor busy: the block is the largest allowed
 *        (1024 or @p block_size_limit) and the grid the multiprocessor count.
 * @param[out] min_grid blocks to launch for full occupancy (active blocks per
 *             multiprocessor x multiprocessor_count).
 * @param[out] block the block size in threads; 0 with ::GP_SUCCESS when no block fits
 *             (too much @p dynamic_shmem).
 * @param[in] kernel the kernel.
 * @param[in] dynamic_shmem dynamic shared memory per block in bytes.
 * @param[in] block_size_limit the largest block to consider; 0: no limit but the kernel's
 *            and the device's.
 * @return ::GP_SUCCESS, ::GP_ERROR_INVALID_VALUE (NULL @p min_grid or @p block, a negative
 *         @p block_size_limit), ::GP_ERROR_INVALID_HANDLE, ::GP_ERROR_INVALID_IMAGE.
 */
GP_API gp_status_t gp_occupancy_max_potential_block_size(int *min_grid, int *block, gp_kernel_t kernel,
                                                         size_t dynamic_shmem, int block_size_limit);

/** @brief Name of @p kernel as written in its source.
 *  @return a string owned by gpuport and valid for the rest of the process (a copy: it
 *          outlives the kernel's module), or NULL when @p kernel is not a kernel of this
 *          program or of a loaded module. */
GP_API const char *gp_kernel_name(gp_kernel_t kernel);

/**
 * @brief What gp_launch_ex() launches with: gp_launch()'s configuration plus what a plain
 *        launch cannot say (cudaLaunchConfig_t with its attributes). Initialise with
 *        gp_launch_config_init(): fields added later default to "off".
 */
typedef struct gp_launch_config {
  size_t struct_size;          /**< sizeof(gp_launch_config_t), set by gp_launch_config_init() */
  gp_dim3_t grid;              /**< blocks per dimension (default 1, 1, 1) */
  gp_dim3_t block;             /**< threads per dimension (default 1, 1, 1) */
  size_t dynamic_shared_bytes; /**< dynamic shared memory per block (default 0) */
  gp_stream_t stream;          /**< the stream (default NULL, the legacy default stream) */
  int cooperative;             /**< nonzero: a cooperative launch (cudaLaunchCooperativeKernel):
                                    every block is resident at once and the kernel may call
                                    gp_grid_sync(). The grid may have at most
                                    gp_occupancy_max_active_blocks() x multiprocessor_count
                                    blocks. */
  gp_dim3_t cluster;           /**< thread-block cluster extents (CUDA sm_90,
                                    cudaLaunchAttributeClusterDimension); 0 or 1 in every
                                    dimension: no cluster (default 0, 0, 0) */
} gp_launch_config_t;

/** @brief Sets @p config->struct_size, a 1 x 1 x 1 grid and block, and everything else off. */
static inline void gp_launch_config_init(gp_launch_config_t *config) {
  unsigned char *p = (unsigned char *)config;
  for (size_t i = 0; i < sizeof(*config); i++) p[i] = 0;
  config->struct_size = sizeof(*config);
  config->grid = gp_dim3(1, 1, 1);
  config->block = gp_dim3(1, 1, 1);
}

/**
 * @brief Launches @p kernel as @p config says (cudaLaunchKernelExC; a cooperative launch
 *        is cudaLaunchCooperativeKernel / hipLaunchCooperativeKernel).
 *
 * On the CPU backend a cooperative grid runs every block on its own OS thread at once,
 * so gp_grid_sync() is a real barrier of the grid; it may have at most as many blocks
 * as the device has multiprocessors (the executor's threads, `GP_CPU_THREADS`).
 * @param[in] kernel from GP_KERNEL_REF().
 * @param[in] config the configuration; its struct_size must cover at least the stream.
 * @param[in] args as for gp_launch().
 * @return as gp_launch(), plus ::GP_ERROR_INVALID_VALUE (NULL @p config or a struct_size
 *         too small), ::GP_ERROR_INVALID_CONFIGURATION (a cooperative grid larger than
 *         can be resident), ::GP_ERROR_NOT_SUPPORTED (clusters outside CUDA, cooperative
 *         launch on a device without it).
 */
GP_API gp_status_t gp_launch_ex(gp_kernel_t kernel, const gp_launch_config_t *config, void **args);

/**@}*/

GP_EXTERN_C_END

#endif /* GP_RUNTIME_H */
