/*
 * src/gpu/vendor_hip.h - the HIP side of the vendor shim: the gpu* names used by the shared
 * runtime mapping in src/gpu/ spelled as the HIP runtime spells them. src/gpu/vendor_cuda.h
 * defines the same names for CUDA (ggml's src/ggml-cuda/vendors/hip.h model).
 *
 * Only hip/hip_runtime_api.h is included: it compiles as C, hip_runtime.h does not.
 * Supports ROCm 5.2 (Debian, CI) and ROCm 6+.
 */
#ifndef GP_VENDOR_H
#define GP_VENDOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hip/hip_runtime_api.h>
#include <gpuport/runtime.h>

#define GP__GPU_VENDOR "hip"

/* ---- types -------------------------------------------------------------------- */
typedef hipError_t gpuError_t;
typedef hipStream_t gpuStream_t;
typedef hipEvent_t gpuEvent_t;
typedef hipDeviceProp_t gpuDeviceProp;
typedef hipPointerAttribute_t gpuPointerAttributes;
typedef hipDeviceAttribute_t gpuDeviceAttr;
typedef hipHostFn_t gpuHostFn_t;

/* ---- constants ---------------------------------------------------------------- */
#define gpuSuccess hipSuccess
/* HIP's null stream has the legacy default-stream semantics (ROCm 5 has no
 * hipStreamLegacy); hipStreamPerThread is ((hipStream_t)2), as CUDA's. */
#define gpuStreamLegacy ((hipStream_t)0)
#define gpuStreamPerThread hipStreamPerThread
#define gpuStreamDefault hipStreamDefault
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuEventDefault hipEventDefault
#define gpuEventBlockingSync hipEventBlockingSync
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuMemcpyDefault hipMemcpyDefault
#define gpuHostAllocDefault hipHostMallocDefault
#define gpuHostRegisterDefault hipHostRegisterDefault
#define gpuHostAllocPortable hipHostMallocPortable
#define gpuHostAllocMapped hipHostMallocMapped
#define gpuHostAllocWriteCombined hipHostMallocWriteCombined
#define gpuHostRegisterPortable hipHostRegisterPortable
#define gpuHostRegisterMapped hipHostRegisterMapped
#define gpuHostRegisterIoMemory hipHostRegisterIoMemory
/* HIP has no read-only registration (its bit 8 is hipExtHostRegisterCoarseGrained): the
 * flag is a hint, so it is dropped. */
#define gpuHostRegisterReadOnly 0u
#define gpuMemAttachGlobal hipMemAttachGlobal
#define gpuFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize

/* A device attribute by its CUDA and its HIP name (src/gpu/device.c's table). */
#define GP__GPU_ATTR(cuda, hip) hipDeviceAttribute##hip
#define gpuDevAttrMaxThreadsPerBlock hipDeviceAttributeMaxThreadsPerBlock
#define gpuDevAttrMaxBlockDimX hipDeviceAttributeMaxBlockDimX
#define gpuDevAttrMaxBlockDimY hipDeviceAttributeMaxBlockDimY
#define gpuDevAttrMaxBlockDimZ hipDeviceAttributeMaxBlockDimZ
#define gpuDevAttrMaxGridDimX hipDeviceAttributeMaxGridDimX
#define gpuDevAttrMaxGridDimY hipDeviceAttributeMaxGridDimY
#define gpuDevAttrMaxGridDimZ hipDeviceAttributeMaxGridDimZ
#define gpuDevAttrMaxSharedMemoryPerBlock hipDeviceAttributeMaxSharedMemoryPerBlock
#define gpuDevAttrMaxSharedMemoryPerBlockOptin hipDeviceAttributeSharedMemPerBlockOptin
#define gpuDevAttrWarpSize hipDeviceAttributeWarpSize
#define gpuDevAttrClockRate hipDeviceAttributeClockRate
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define gpuDevAttrL2CacheSize hipDeviceAttributeL2CacheSize
#define gpuDevAttrComputeCapabilityMajor hipDeviceAttributeComputeCapabilityMajor
#define gpuDevAttrComputeCapabilityMinor hipDeviceAttributeComputeCapabilityMinor
#define gpuDevAttrPciBusId hipDeviceAttributePciBusId

/* ---- error codes (the table in src/gpu/errors.c; rows HIP lacks stay undefined) --- */
#define gpuErrorInvalidValue hipErrorInvalidValue
#define gpuErrorMemoryAllocation hipErrorOutOfMemory
#define gpuErrorInitializationError hipErrorNotInitialized
#define gpuErrorInsufficientDriver hipErrorInsufficientDriver
#define gpuErrorInvalidConfiguration hipErrorInvalidConfiguration
#define gpuErrorInvalidPitchValue hipErrorInvalidPitchValue
#define gpuErrorInvalidSymbol hipErrorInvalidSymbol
#define gpuErrorInvalidDevicePointer hipErrorInvalidDevicePointer
#define gpuErrorInvalidMemcpyDirection hipErrorInvalidMemcpyDirection
#define gpuErrorMissingConfiguration hipErrorMissingConfiguration
#define gpuErrorPriorLaunchFailure hipErrorPriorLaunchFailure
#define gpuErrorInvalidDeviceFunction hipErrorInvalidDeviceFunction
#define gpuErrorNoDevice hipErrorNoDevice
#define gpuErrorInvalidDevice hipErrorInvalidDevice
#define gpuErrorInvalidKernelImage hipErrorInvalidImage
#define gpuErrorNoKernelImageForDevice hipErrorNoBinaryForGpu
#define gpuErrorECCUncorrectable hipErrorECCNotCorrectable
#define gpuErrorUnsupportedLimit hipErrorUnsupportedLimit
#define gpuErrorPeerAccessUnsupported hipErrorPeerAccessUnsupported
#define gpuErrorInvalidPtx hipErrorInvalidKernelFile
#define gpuErrorInvalidSource hipErrorInvalidSource
#define gpuErrorFileNotFound hipErrorFileNotFound
#define gpuErrorSharedObjectSymbolNotFound hipErrorSharedObjectSymbolNotFound
#define gpuErrorInvalidResourceHandle hipErrorInvalidHandle
#define gpuErrorIllegalState hipErrorIllegalState
#define gpuErrorSymbolNotFound hipErrorNotFound
#define gpuErrorNotReady hipErrorNotReady
#define gpuErrorIllegalAddress hipErrorIllegalAddress
#define gpuErrorLaunchOutOfResources hipErrorLaunchOutOfResources
#define gpuErrorLaunchTimeout hipErrorLaunchTimeOut
#define gpuErrorPeerAccessAlreadyEnabled hipErrorPeerAccessAlreadyEnabled
#define gpuErrorPeerAccessNotEnabled hipErrorPeerAccessNotEnabled
#define gpuErrorAssert hipErrorAssert
#define gpuErrorHostMemoryAlreadyRegistered hipErrorHostMemoryAlreadyRegistered
#define gpuErrorHostMemoryNotRegistered hipErrorHostMemoryNotRegistered
#define gpuErrorLaunchFailure hipErrorLaunchFailure
#define gpuErrorCooperativeLaunchTooLarge hipErrorCooperativeLaunchTooLarge
#define gpuErrorNotSupported hipErrorNotSupported
#define gpuErrorStreamCaptureUnsupported hipErrorStreamCaptureUnsupported
#define gpuErrorStreamCaptureInvalidated hipErrorStreamCaptureInvalidated
#define gpuErrorStreamCaptureMerge hipErrorStreamCaptureMerge
#define gpuErrorStreamCaptureUnmatched hipErrorStreamCaptureUnmatched
#define gpuErrorStreamCaptureUnjoined hipErrorStreamCaptureUnjoined
#define gpuErrorStreamCaptureIsolation hipErrorStreamCaptureIsolation
#define gpuErrorGraphExecUpdateFailure hipErrorGraphExecUpdateFailure
#define gpuErrorStreamCaptureImplicit hipErrorStreamCaptureImplicit
#define gpuErrorCapturedEvent hipErrorCapturedEvent
#define gpuErrorStreamCaptureWrongThread hipErrorStreamCaptureWrongThread

/* ---- functions ---------------------------------------------------------------- */
#define gpuGetErrorName hipGetErrorName
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuSetDevice hipSetDevice
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDeviceGetPCIBusId hipDeviceGetPCIBusId
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuDeviceReset hipDeviceReset
#define gpuDeviceCanAccessPeer hipDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess hipDeviceEnablePeerAccess
#define gpuDeviceGetStreamPriorityRange hipDeviceGetStreamPriorityRange
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuHostAlloc hipHostMalloc
#define gpuFreeHost hipHostFree
#define gpuMallocManaged hipMallocManaged
#define gpuHostRegister hipHostRegister
#define gpuHostUnregister hipHostUnregister
#define gpuHostGetDevicePointer hipHostGetDevicePointer
#define gpuMallocAsync hipMallocAsync
#define gpuFreeAsync hipFreeAsync
#define gpuPointerGetAttributes hipPointerGetAttributes
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemcpy2DAsync hipMemcpy2DAsync
#define gpuMemcpyPeerAsync hipMemcpyPeerAsync
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemsetD32Async gp__hip_memset_d32_async
#define gpuMemsetD32AsyncName "hipMemsetD32Async" /* for messages */
#define gpuMemGetInfo hipMemGetInfo
#define gpuStreamCreateWithPriority hipStreamCreateWithPriority
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamQuery hipStreamQuery
#define gpuStreamAttachMemAsync hipStreamAttachMemAsync
#define gpuStreamAddCallback hipStreamAddCallback
#define gpuSetDeviceFlags hipSetDeviceFlags
#define gpuGetDeviceFlags hipGetDeviceFlags
/* hipDeviceLmemResizeToMax (0x16) overlaps the scheduling bits, and AMD devices have no
 * such setting: the flag is dropped. */
#define gpuDeviceLmemResizeToMax 0u
#define gpuDeviceGetDefaultMemPool hipDeviceGetDefaultMemPool
#define gpuMemPoolSetAttribute hipMemPoolSetAttribute
#define gpuMemPoolGetAttribute hipMemPoolGetAttribute
typedef hipMemPool_t gpuMemPool_t;
typedef hipMemPoolAttr gpuMemPoolAttr;
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventQuery hipEventQuery
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuLaunchKernel hipLaunchKernel
#define gpuFuncSetAttribute hipFuncSetAttribute
#define gpuLaunchCooperativeKernel hipLaunchCooperativeKernel
#define gpuOccupancyMaxActiveBlocksPerMultiprocessor hipOccupancyMaxActiveBlocksPerMultiprocessor
#define gpuMemcpyToSymbolAsync hipMemcpyToSymbolAsync
#define gpuMemcpyFromSymbolAsync hipMemcpyFromSymbolAsync
#define gpuGetSymbolAddress hipGetSymbolAddress

/* ---- graphs (src/gpu/graph.c) ------------------------------------------------------ */
typedef hipGraph_t gpuGraph_t;
typedef hipGraphExec_t gpuGraphExec_t;
typedef hipStreamCaptureStatus gpuStreamCaptureStatus;
typedef hipStreamCaptureMode gpuStreamCaptureMode;
#define gpuStreamCaptureModeGlobal hipStreamCaptureModeGlobal
#define gpuStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define gpuStreamCaptureModeRelaxed hipStreamCaptureModeRelaxed
#define gpuStreamCaptureStatusNone hipStreamCaptureStatusNone
#define gpuStreamCaptureStatusActive hipStreamCaptureStatusActive
#define gpuStreamCaptureStatusInvalidated hipStreamCaptureStatusInvalidated
#define gpuStreamBeginCapture hipStreamBeginCapture
#define gpuStreamEndCapture hipStreamEndCapture
#define gpuStreamIsCapturing hipStreamIsCapturing
#define gpuGraphLaunch hipGraphLaunch
#define gpuGraphDestroy hipGraphDestroy
#define gpuGraphExecDestroy hipGraphExecDestroy
#define gpuGraphGetNodes hipGraphGetNodes
#define gpuStreamCaptureGraphName "hipStreamGetCaptureInfo_v2" /* for messages */
#define gpuGraphInstantiateName "hipGraphInstantiate" /* for messages */

static inline hipError_t gpuGraphInstantiate(hipGraphExec_t *exec, hipGraph_t graph) {
  return hipGraphInstantiate(exec, graph, NULL, NULL, 0);
}

static inline hipError_t gpuStreamCaptureGraph(hipStream_t s, hipGraph_t *graph) {
  hipStreamCaptureStatus st;
  unsigned long long id;
  const hipGraphNode_t *deps = NULL;
  size_t ndeps = 0;
  return hipStreamGetCaptureInfo_v2(s, &st, &id, graph, &deps, &ndeps);
}

/* Explicit construction (hipGraphCreate, hipGraphAdd*Node, hipGraphExecUpdate). */
typedef hipGraphNode_t gpuGraphNode_t;
typedef hipKernelNodeParams gpuKernelNodeParams;
typedef hipMemsetParams gpuMemsetParams;
typedef hipHostNodeParams gpuHostNodeParams;
typedef hipGraphNodeType gpuGraphNodeType;
#define gpuGraphCreate hipGraphCreate
#define gpuGraphAddKernelNode hipGraphAddKernelNode
#define gpuGraphAddMemsetNode hipGraphAddMemsetNode
#define gpuGraphAddHostNode hipGraphAddHostNode
#define gpuGraphAddEmptyNode hipGraphAddEmptyNode
#define gpuGraphNodeGetType hipGraphNodeGetType
#define gpuGraphKernelNodeGetParams hipGraphKernelNodeGetParams
#define gpuGraphKernelNodeSetParams hipGraphKernelNodeSetParams
#define gpuGraphExecKernelNodeSetParams hipGraphExecKernelNodeSetParams
#define gpuGraphAddDependencies hipGraphAddDependencies
#define gpuGraphAddDependenciesName "hipGraphAddDependencies" /* for messages */
#define gpuGraphExecUpdateName "hipGraphExecUpdate"           /* for messages */
/* A module's kernel is a hipFunction_t, which hipGraphAddKernelNode (ROCm 5) cannot take. */
#define GP__GPU_GRAPH_MODULE_KERNELS 0

static inline hipError_t gpuGraphAddMemcpyNode1D(hipGraphNode_t *node, hipGraph_t graph,
                                                 const hipGraphNode_t *deps, size_t ndeps,
                                                 void *dst, const void *src, size_t bytes) {
  return hipGraphAddMemcpyNode1D(node, graph, deps, ndeps, dst, src, bytes, hipMemcpyDefault);
}

/* hipGraphExecUpdate has CUDA 11's signature: the node at fault, no node it comes from. */
static inline hipError_t gpuGraphExecUpdate(hipGraphExec_t exec, hipGraph_t graph, int *result,
                                            hipGraphNode_t *node, hipGraphNode_t *from) {
  hipGraphExecUpdateResult r = hipGraphExecUpdateError;
  *node = NULL;
  hipError_t e = hipGraphExecUpdate(exec, graph, node, &r);
  *result = (int)r;
  *from = NULL;
  return e;
}

#if HIP_VERSION_MAJOR >= 6
/* As cudaUserObjectCreate: destroy(p) runs once nothing uses the graph any more. */
#define GP__GPU_USER_OBJECTS 1
static inline hipError_t gpuGraphOwn(hipGraph_t graph, void *p, void (*destroy)(void *)) {
  hipUserObject_t o;
  hipError_t e = hipUserObjectCreate(&o, p, destroy, 1, hipUserObjectNoDestructorSync);
  if (e != hipSuccess) {
    destroy(p);
    return e;
  }
  e = hipGraphRetainUserObject(graph, o, 1, hipGraphUserObjectMove);
  if (e != hipSuccess) (void)hipUserObjectRelease(o, 1);
  return e;
}
#endif /* ROCm 5 has no user objects: host work is not captured there */

/* ---- modules and runtime compilation (src/gpu/module.c) ------------------------------ */
/* A module is a hipModule_t; its kernels are hipFunction_t handles, launched with
 * hipModuleLaunchKernel (hipLaunchKernel takes only kernels registered by the compiler). */
typedef hipModule_t gpuModule_t;
#define gpuModuleUnload hipModuleUnload
#define gpuModuleLoadName "hipModuleLoadData" /* for messages */
#define gpuModuleGetKernelName "hipModuleGetFunction"
#define gpuModuleLaunchName "hipModuleLaunchKernel"

/* hipModuleLoadData takes no size: bytes is what gp__image_check bounded the bundle's or
 * code object's headers by (every extent they describe lies within it). */
static inline hipError_t gpuModuleLoadData(hipModule_t *m, const void *image, size_t bytes) {
  (void)bytes;
  return hipModuleLoadData(m, image);
}
static inline hipError_t gpuModuleGetKernel(const void **entry, hipModule_t m, const char *name) {
  hipFunction_t f = NULL;
  hipError_t e = hipModuleGetFunction(&f, m, name);
  *entry = (const void *)f;
  return e;
}
static inline hipError_t gpuModuleLaunch(const void *entry, dim3 grid, dim3 block, void **args,
                                         size_t shmem, hipStream_t s) {
  return hipModuleLaunchKernel((hipFunction_t)entry, grid.x, grid.y, grid.z, block.x, block.y,
                               block.z, (unsigned)shmem, s, args, NULL);
}
/* AMD GPUs need no opt-in for dynamic LDS: nothing to raise. */
static inline hipError_t gpuModuleSetMaxDynamicShared(const void *entry, int bytes) {
  (void)entry;
  (void)bytes;
  return hipSuccess;
}
static inline hipError_t gpuOccupancy(int *blocks, const void *entry, bool module, int threads,
                                      size_t shmem) {
  if (module)
    return hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(blocks, (hipFunction_t)entry,
                                                              threads, shmem);
  return hipOccupancyMaxActiveBlocksPerMultiprocessor(blocks, entry, threads, shmem);
}
/* hipFuncGetAttributes takes program kernels; a module's hipFunction_t is queried one
 * attribute at a time. */
typedef hipFuncAttributes gpuFuncAttributes;
static inline hipError_t gpuFuncAttributesOf(gpuFuncAttributes *a, const void *entry, bool module) {
  if (!module) return hipFuncGetAttributes(a, entry);
  static const hipFunction_attribute which[] = {
      HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, HIP_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
      HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
      HIP_FUNC_ATTRIBUTE_NUM_REGS, HIP_FUNC_ATTRIBUTE_PTX_VERSION,
      HIP_FUNC_ATTRIBUTE_BINARY_VERSION};
  int v[sizeof which / sizeof which[0]];
  for (size_t i = 0; i < sizeof which / sizeof which[0]; i++) {
    hipError_t e = hipFuncGetAttribute(&v[i], which[i], (hipFunction_t)entry);
    if (e != hipSuccess) return e;
  }
  memset(a, 0, sizeof(*a));
  a->sharedSizeBytes = (size_t)v[0];
  a->constSizeBytes = (size_t)v[1];
  a->localSizeBytes = (size_t)v[2];
  a->maxThreadsPerBlock = v[3];
  a->numRegs = v[4];
  a->ptxVersion = v[5];
  a->binaryVersion = v[6];
  a->maxDynamicSharedSizeBytes = -1; /* unknown here: the limit gpuport recorded stands */
  a->preferredShmemCarveout = -1;
  return hipSuccess;
}
static inline int gpuModuleKernelMaxThreads(const void *entry) {
  int v = 0;
  if (hipFuncGetAttribute(&v, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, (hipFunction_t)entry) !=
      hipSuccess) {
    (void)hipGetLastError();
    return 0;
  }
  return v;
}
/* HIP cannot tell a module kernel's parameters. */
static inline int gpuModuleKernelParams(const void *entry, uint16_t *sizes, int max) {
  (void)entry;
  (void)sizes;
  (void)max;
  return -1;
}

/* hipRTC: its own library on ROCm 6, inside libamdhip64 before. */
#define GP__RTC_LIBS {"libhiprtc.so", "libhiprtc.so.6", "libhiprtc.so.5", NULL}
#define GP__RTC_NAME "hipRTC"
#define GP__RTC_SYM(x) "hiprtc" #x
#define GP__RTC_CODE_SIZE "hiprtcGetCodeSize"
#define GP__RTC_CODE "hiprtcGetCode"
#define GP__RTC_TEXT_SIZE NULL
#define GP__RTC_TEXT NULL
#define GP__RTC_ARCH_OPTION "--offload-arch="
#define GP__RTC_ARCH_OPTIONS {"--offload-arch", "--gpu-architecture", NULL}

/* ---- what differs beyond spelling ---------------------------------------------- */

/* The arch string of a device: gcnArchName without its feature suffix
 * ("gfx942:sramecc+:xnack-" -> "gfx942"). */
static inline void gpu_arch_name(char *out, size_t n, const gpuDeviceProp *prop, int major,
                                 int minor) {
  (void)major;
  (void)minor;
  size_t len = strcspn(prop->gcnArchName, ":");
  snprintf(out, n, "%.*s", (int)len, prop->gcnArchName);
}

/* The kind of memory a native pointer attribute describes. ROCm 6 renamed the field
 * to `type` and added the unregistered and managed kinds. */
static inline gp_memory_type_t gpu_pointer_kind(const gpuPointerAttributes *a) {
#if HIP_VERSION_MAJOR >= 6
  switch (a->type) {
  case hipMemoryTypeHost: return GP_MEMORY_HOST;
  case hipMemoryTypeDevice: return GP_MEMORY_DEVICE;
  case hipMemoryTypeManaged: return GP_MEMORY_MANAGED;
  default: return GP_MEMORY_UNREGISTERED;
  }
#else
  if (a->isManaged) return GP_MEMORY_MANAGED;
  switch (a->memoryType) {
  case hipMemoryTypeHost: return GP_MEMORY_HOST;
  case hipMemoryTypeDevice: return GP_MEMORY_DEVICE;
  default: return GP_MEMORY_UNREGISTERED;
  }
#endif
}

/* HIP has cuMemsetD32Async's twin natively. */
static inline hipError_t gp__hip_memset_d32_async(void *dst, uint32_t value, size_t n,
                                                  hipStream_t stream) {
  return hipMemsetD32Async((hipDeviceptr_t)dst, (int)value, n, stream);
}

#if HIP_VERSION_MAJOR >= 6
#define gpuLaunchHostFunc hipLaunchHostFunc
#define gpuLaunchHostFuncName "hipLaunchHostFunc" /* for messages */
#else
/* ROCm 5 declares hipLaunchHostFunc but libamdhip64 does not export it: the same
 * through hipStreamAddCallback, whose callback also receives the stream and a status. */
typedef struct gp__hip_host_fn {
  hipHostFn_t fn;
  void *user;
} gp__hip_host_fn_t;

static inline void gp__hip_host_fn_run(hipStream_t stream, hipError_t status, void *p) {
  gp__hip_host_fn_t c = *(gp__hip_host_fn_t *)p;
  (void)stream;
  (void)status; /* runs even after a fault, so that what it owns is released */
  free(p);
  c.fn(c.user);
}

static inline hipError_t gp__hip_launch_host_func(hipStream_t stream, hipHostFn_t fn, void *user) {
  gp__hip_host_fn_t *c = (gp__hip_host_fn_t *)malloc(sizeof(*c));
  if (c == NULL) return hipErrorOutOfMemory;
  c->fn = fn;
  c->user = user;
  hipError_t e = hipStreamAddCallback(stream, gp__hip_host_fn_run, c, 0);
  if (e != hipSuccess) free(c);
  return e;
}
#define gpuLaunchHostFunc gp__hip_launch_host_func
#define gpuLaunchHostFuncName "hipStreamAddCallback" /* for messages */
#endif

#endif /* GP_VENDOR_H */
