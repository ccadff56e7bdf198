/*
 * src/gpu/device.c - devices on the CUDA and HIP backends: count, selection,
 * properties (cudaDeviceGetAttribute: CUDA 13 removed cudaDeviceProp fields such as
 * clockRate), synchronisation, reset, peer access, stream priorities.
 */
#include <stdio.h>
#include <string.h>
#include "gpu/gpu.h"

/* The native runtimes initialise lazily on their first call, and each call reports a
 * missing device or driver itself (mapped to GP_ERROR_NO_DEVICE). */
gp_status_t gp__be_init(void) { return GP_SUCCESS; }

gp_status_t gp__be_device_count(int *count) {
  int n = 0;
  *count = 0;
  GP__GPU_TRY_DEV(-1, gpuGetDeviceCount, (&n));
  if (n <= 0) return GP__GPU_ERR(GP_ERROR_NO_DEVICE, "no " GP__GPU_VENDOR " device is present");
  *count = n;
  return GP_SUCCESS;
}

gp_status_t gp__be_device_set(int device) {
  GP__GPU_TRY_DEV(device, gpuSetDevice, (device));
  return gp__set_current_device(device, "gp_device_set");
}

/* gp_device_attr_t to the native attribute, by its CUDA and its HIP name (HIP's enum has
 * other names and numbers). Every attribute of GP_DEVICE_ATTR_LIST has a row. */
typedef struct attr_row {
  gp_device_attr_t attr;
  gpuDeviceAttr native;
} attr_row_t;

#define ROW(name, cuda, hip) {GP_DEVICE_ATTR_##name, GP__GPU_ATTR(cuda, hip)}
static const attr_row_t k_attrs[] = {
    ROW(MAX_THREADS_PER_BLOCK, MaxThreadsPerBlock, MaxThreadsPerBlock),
    ROW(MAX_BLOCK_DIM_X, MaxBlockDimX, MaxBlockDimX),
    ROW(MAX_BLOCK_DIM_Y, MaxBlockDimY, MaxBlockDimY),
    ROW(MAX_BLOCK_DIM_Z, MaxBlockDimZ, MaxBlockDimZ),
    ROW(MAX_GRID_DIM_X, MaxGridDimX, MaxGridDimX),
    ROW(MAX_GRID_DIM_Y, MaxGridDimY, MaxGridDimY),
    ROW(MAX_GRID_DIM_Z, MaxGridDimZ, MaxGridDimZ),
    ROW(MAX_SHARED_MEMORY_PER_BLOCK, MaxSharedMemoryPerBlock, MaxSharedMemoryPerBlock),
    ROW(TOTAL_CONSTANT_MEMORY, TotalConstantMemory, TotalConstantMemory),
    ROW(WARP_SIZE, WarpSize, WarpSize),
    ROW(MAX_PITCH, MaxPitch, MaxPitch),
    ROW(MAX_REGISTERS_PER_BLOCK, MaxRegistersPerBlock, MaxRegistersPerBlock),
    ROW(CLOCK_RATE, ClockRate, ClockRate),
    ROW(GPU_OVERLAP, GpuOverlap, DeviceOverlap),
    ROW(MULTI_PROCESSOR_COUNT, MultiProcessorCount, MultiprocessorCount),
    ROW(KERNEL_EXEC_TIMEOUT, KernelExecTimeout, KernelExecTimeout),
    ROW(INTEGRATED, Integrated, Integrated),
    ROW(CAN_MAP_HOST_MEMORY, CanMapHostMemory, CanMapHostMemory),
    ROW(COMPUTE_MODE, ComputeMode, ComputeMode),
    ROW(CONCURRENT_KERNELS, ConcurrentKernels, ConcurrentKernels),
    ROW(ECC_ENABLED, EccEnabled, EccEnabled),
    ROW(PCI_BUS_ID, PciBusId, PciBusId),
    ROW(PCI_DEVICE_ID, PciDeviceId, PciDeviceId),
    ROW(TCC_DRIVER, TccDriver, TccDriver),
    ROW(MEMORY_CLOCK_RATE, MemoryClockRate, MemoryClockRate),
    ROW(GLOBAL_MEMORY_BUS_WIDTH, GlobalMemoryBusWidth, MemoryBusWidth),
    ROW(L2_CACHE_SIZE, L2CacheSize, L2CacheSize),
    ROW(MAX_THREADS_PER_MULTI_PROCESSOR, MaxThreadsPerMultiProcessor, MaxThreadsPerMultiProcessor),
    ROW(ASYNC_ENGINE_COUNT, AsyncEngineCount, AsyncEngineCount),
    ROW(UNIFIED_ADDRESSING, UnifiedAddressing, UnifiedAddressing),
    ROW(PCI_DOMAIN_ID, PciDomainId, PciDomainID),
    ROW(COMPUTE_CAPABILITY_MAJOR, ComputeCapabilityMajor, ComputeCapabilityMajor),
    ROW(COMPUTE_CAPABILITY_MINOR, ComputeCapabilityMinor, ComputeCapabilityMinor),
    ROW(STREAM_PRIORITIES_SUPPORTED, StreamPrioritiesSupported, StreamPrioritiesSupported),
    ROW(GLOBAL_L1_CACHE_SUPPORTED, GlobalL1CacheSupported, GlobalL1CacheSupported),
    ROW(LOCAL_L1_CACHE_SUPPORTED, LocalL1CacheSupported, LocalL1CacheSupported),
    ROW(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, MaxSharedMemoryPerMultiprocessor, MaxSharedMemoryPerMultiprocessor),
    ROW(MAX_REGISTERS_PER_MULTIPROCESSOR, MaxRegistersPerMultiprocessor, MaxRegistersPerMultiprocessor),
    ROW(MANAGED_MEMORY, ManagedMemory, ManagedMemory),
    ROW(IS_MULTI_GPU_BOARD, IsMultiGpuBoard, IsMultiGpuBoard),
    ROW(MULTI_GPU_BOARD_GROUP_ID, MultiGpuBoardGroupID, MultiGpuBoardGroupID),
    ROW(HOST_NATIVE_ATOMIC_SUPPORTED, HostNativeAtomicSupported, HostNativeAtomicSupported),
    ROW(SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, SingleToDoublePrecisionPerfRatio, SingleToDoublePrecisionPerfRatio),
    ROW(PAGEABLE_MEMORY_ACCESS, PageableMemoryAccess, PageableMemoryAccess),
    ROW(CONCURRENT_MANAGED_ACCESS, ConcurrentManagedAccess, ConcurrentManagedAccess),
    ROW(COMPUTE_PREEMPTION_SUPPORTED, ComputePreemptionSupported, ComputePreemptionSupported),
    ROW(CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, CanUseHostPointerForRegisteredMem, CanUseHostPointerForRegisteredMem),
    ROW(COOPERATIVE_LAUNCH, CooperativeLaunch, CooperativeLaunch),
    ROW(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, MaxSharedMemoryPerBlockOptin, SharedMemPerBlockOptin),
    ROW(PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, PageableMemoryAccessUsesHostPageTables,
        PageableMemoryAccessUsesHostPageTables),
    ROW(DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, DirectManagedMemAccessFromHost, DirectManagedMemAccessFromHost),
    ROW(MAX_BLOCKS_PER_MULTIPROCESSOR, MaxBlocksPerMultiprocessor, MaxBlocksPerMultiProcessor),
    ROW(MAX_PERSISTING_L2_CACHE_SIZE, MaxPersistingL2CacheSize, PersistingL2CacheMaxSize),
    ROW(MAX_ACCESS_POLICY_WINDOW_SIZE, MaxAccessPolicyWindowSize, AccessPolicyMaxWindowSize),
    ROW(RESERVED_SHARED_MEMORY_PER_BLOCK, ReservedSharedMemoryPerBlock, ReservedSharedMemPerBlock),
    ROW(MEMORY_POOLS_SUPPORTED, MemoryPoolsSupported, MemoryPoolsSupported),
};
#undef ROW

static const attr_row_t *attr_find(gp_device_attr_t attr) {
  for (size_t i = 0; i < sizeof k_attrs / sizeof k_attrs[0]; i++)
    if (k_attrs[i].attr == attr) return &k_attrs[i];
  return NULL;
}

gp_status_t gp__be_device_get_attribute(int *value, gp_device_attr_t attr, int device) {
  const attr_row_t *r = attr_find(attr);
  if (r == NULL)
    return GP__GPU_ERR(GP_ERROR_NOT_SUPPORTED, "attribute %d has no " GP__GPU_VENDOR " counterpart",
                       (int)attr);
  int v = 0;
  GP__GPU_TRY_DEV(device, gpuDeviceGetAttribute, (&v, r->native, device));
  /* HIP on AMD has no opt-in: the whole LDS is available without it (as the properties). */
  if (attr == GP_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) {
    int plain = 0;
    GP__GPU_TRY_DEV(device, gpuDeviceGetAttribute, (&plain, gpuDevAttrMaxSharedMemoryPerBlock, device));
    if (v < plain) v = plain;
  }
  *value = v;
  return GP_SUCCESS;
}

/* An optional attribute: 0 when the runtime does not know it (an older driver). */
static int gp__gpu_attr(gpuDeviceAttr attr, int device) {
  int v = 0;
  if (gpuDeviceGetAttribute(&v, attr, device) != gpuSuccess) {
    (void)gpuGetLastError();
    v = 0;
  }
  return v;
}

gp_status_t gp__be_device_get_props(gp_device_props_t *props, int device) {
  gpuDeviceProp prop;
  memset(&prop, 0, sizeof(prop));
  /* Also the check that device exists: name and total memory come from here. */
  GP__GPU_TRY_DEV(device, gpuGetDeviceProperties, (&prop, device));
  size_t struct_size = props->struct_size;
  memset(props, 0, sizeof(*props));
  props->struct_size = struct_size;
  snprintf(props->name, sizeof(props->name), "%s", prop.name);
  props->total_memory = prop.totalGlobalMem;
  /* Every field an attribute names, from that attribute: gp_device_get_attribute and
   * the properties cannot disagree. */
  for (size_t i = 0; i < sizeof k_attrs / sizeof k_attrs[0]; i++)
    (void)gp__device_props_set_attr(props, k_attrs[i].attr, gp__gpu_attr(k_attrs[i].native, device));
  gpu_arch_name(props->arch, sizeof(props->arch), &prop, props->compute_capability_major,
                props->compute_capability_minor);
  /* HIP on AMD has no opt-in: the whole LDS is available without it. */
  if (props->shared_memory_per_block_optin < props->shared_memory_per_block)
    props->shared_memory_per_block_optin = props->shared_memory_per_block;
  return GP_SUCCESS;
}

gp_status_t gp__be_device_synchronize(void) {
  GP__TRY(gp__gpu_comm_wait(gpuStreamLegacy, gp__current_device(), "gp_device_synchronize"));
  GP__GPU_TRY(gpuDeviceSynchronize, ());
  return GP_SUCCESS;
}

gp_status_t gp__be_device_reset(void) {
  int device = gp__current_device();
  GP__GPU_TRY_DEV(device, gpuDeviceReset, ());
  /* The reset destroyed the device's native memory, streams and events and cleared its
   * sticky error: retire what the registries still hold for it (no native frees). */
  gp__alloc_drop_device(device, NULL, NULL);
  gp__gpu_drop_device(device);
  gp__async_error_reset(device);
  return GP_SUCCESS;
}

gp_status_t gp__be_device_can_access_peer(int *can, int device, int peer) {
  int v = 0;
  GP__GPU_TRY_DEV(device, gpuDeviceCanAccessPeer, (&v, device, peer));
  *can = v ? 1 : 0;
  return GP_SUCCESS;
}

gp_status_t gp__be_device_enable_peer_access(int peer) {
  gpuError_t e = gpuDeviceEnablePeerAccess(peer, 0);
  /* Enabling twice is not an error (docs/design/API.md "Devices"). */
  if (e == gpuErrorPeerAccessAlreadyEnabled) {
    (void)gpuGetLastError();
    return GP_SUCCESS;
  }
  if (e != gpuSuccess)
    return gp__gpu_fail(e, gp__current_device(), __func__, GP__GPU_STR(gpuDeviceEnablePeerAccess));
  return GP_SUCCESS;
}

/* GP_DEVICE_* are CUDA's bits; HIP has no local-memory bit (gpuDeviceLmemResizeToMax 0). */
gp_status_t gp__be_device_set_flags(unsigned flags) {
  unsigned native = flags & ~(unsigned)GP_DEVICE_LMEM_RESIZE_TO_MAX;
  if (flags & GP_DEVICE_LMEM_RESIZE_TO_MAX) native |= gpuDeviceLmemResizeToMax;
  GP__GPU_TRY(gpuSetDeviceFlags, (native));
  return GP_SUCCESS;
}

gp_status_t gp__be_device_get_flags(unsigned *flags) {
  unsigned native = 0;
  GP__GPU_TRY(gpuGetDeviceFlags, (&native));
  unsigned f = native & (GP_DEVICE_SCHEDULE_MASK | GP_DEVICE_MAP_HOST);
  if (gpuDeviceLmemResizeToMax != 0u && (native & gpuDeviceLmemResizeToMax) != 0u)
    f |= GP_DEVICE_LMEM_RESIZE_TO_MAX;
  *flags = f;
  return GP_SUCCESS;
}

/* The pool handle is the native pool; the native runtime checks it. */
gp_status_t gp__be_device_get_default_mem_pool(gp_mem_pool_t *pool, int device) {
  gpuMemPool_t native = NULL;
  GP__GPU_TRY_DEV(device, gpuDeviceGetDefaultMemPool, (&native, device));
  *pool = (gp_mem_pool_t)native;
  return GP_SUCCESS;
}

/* gp_mem_pool_attr_t has CUDA's and HIP's values (1 to 4). */
gp_status_t gp__be_mem_pool_set_attribute(gp_mem_pool_t pool, gp_mem_pool_attr_t attr, void *value) {
  GP__GPU_TRY(gpuMemPoolSetAttribute, ((gpuMemPool_t)pool, (gpuMemPoolAttr)attr, value));
  return GP_SUCCESS;
}

gp_status_t gp__be_mem_pool_get_attribute(gp_mem_pool_t pool, gp_mem_pool_attr_t attr, void *value) {
  GP__GPU_TRY(gpuMemPoolGetAttribute, ((gpuMemPool_t)pool, (gpuMemPoolAttr)attr, value));
  return GP_SUCCESS;
}

gp_status_t gp__be_stream_priority_range(int *least, int *greatest) {
  int l = 0, g = 0;
  GP__GPU_TRY(gpuDeviceGetStreamPriorityRange, (&l, &g));
  if (least) *least = l;
  if (greatest) *greatest = g;
  return GP_SUCCESS;
}
