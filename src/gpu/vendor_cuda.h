/*
 * src/gpu/vendor_cuda.h - the CUDA side of the vendor shim: the gpu* names used by the shared
 * runtime mapping in src/gpu/ spelled as the CUDA runtime spells them. src/gpu/vendor_hip.h
 * defines the same names for HIP (ggml's src/ggml-cuda/vendors/hip.h model).
 *
 * Only cuda_runtime_api.h is included: it compiles as C, cuda_runtime.h does not.
 * Driver-API entry points are looked up through the runtime, never linked (-lcuda),
 * so the library loads on machines without a driver (docs/design/ARCHITECTURE.md "The GPU
 * backends").
 */
#ifndef GP_VENDOR_H
#define GP_VENDOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include <gpuport/runtime.h>

#define GP__GPU_VENDOR "cuda"

/* ---- types -------------------------------------------------------------------- */
typedef cudaError_t gpuError_t;
typedef cudaStream_t gpuStream_t;
typedef cudaEvent_t gpuEvent_t;
typedef struct cudaDeviceProp gpuDeviceProp;
typedef struct cudaPointerAttributes gpuPointerAttributes;
typedef enum cudaDeviceAttr gpuDeviceAttr;
typedef cudaHostFn_t gpuHostFn_t;

/* ---- constants ---------------------------------------------------------------- */
#define gpuSuccess cudaSuccess
#define gpuStreamLegacy cudaStreamLegacy
#define gpuStreamPerThread cudaStreamPerThread
#define gpuStreamDefault cudaStreamDefault
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuEventDefault cudaEventDefault
#define gpuEventBlockingSync cudaEventBlockingSync
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuMemcpyDefault cudaMemcpyDefault
#define gpuHostAllocDefault cudaHostAllocDefault
#define gpuHostRegisterDefault cudaHostRegisterDefault
#define gpuHostAllocPortable cudaHostAllocPortable
#define gpuHostAllocMapped cudaHostAllocMapped
#define gpuHostAllocWriteCombined cudaHostAllocWriteCombined
#define gpuHostRegisterPortable cudaHostRegisterPortable
#define gpuHostRegisterMapped cudaHostRegisterMapped
#define gpuHostRegisterIoMemory cudaHostRegisterIoMemory
#define gpuHostRegisterReadOnly cudaHostRegisterReadOnly
#define gpuMemAttachGlobal cudaMemAttachGlobal
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize

/* A device attribute by its CUDA and its HIP name (src/gpu/device.c's table). */
#define GP__GPU_ATTR(cuda, hip) cudaDevAttr##cuda
#define gpuDevAttrMaxThreadsPerBlock cudaDevAttrMaxThreadsPerBlock
#define gpuDevAttrMaxBlockDimX cudaDevAttrMaxBlockDimX
#define gpuDevAttrMaxBlockDimY cudaDevAttrMaxBlockDimY
#define gpuDevAttrMaxBlockDimZ cudaDevAttrMaxBlockDimZ
#define gpuDevAttrMaxGridDimX cudaDevAttrMaxGridDimX
#define gpuDevAttrMaxGridDimY cudaDevAttrMaxGridDimY
#define gpuDevAttrMaxGridDimZ cudaDevAttrMaxGridDimZ
#define gpuDevAttrMaxSharedMemoryPerBlock cudaDevAttrMaxSharedMemoryPerBlock
#define gpuDevAttrMaxSharedMemoryPerBlockOptin cudaDevAttrMaxSharedMemoryPerBlockOptin
#define gpuDevAttrWarpSize cudaDevAttrWarpSize
#define gpuDevAttrClockRate cudaDevAttrClockRate
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuDevAttrL2CacheSize cudaDevAttrL2CacheSize
#define gpuDevAttrComputeCapabilityMajor cudaDevAttrComputeCapabilityMajor
#define gpuDevAttrComputeCapabilityMinor cudaDevAttrComputeCapabilityMinor
#define gpuDevAttrPciBusId cudaDevAttrPciBusId

/* ---- error codes (the table in src/gpu/errors.c; rows a vendor lacks are #ifdef'd) */
#define gpuErrorInvalidValue cudaErrorInvalidValue
#define gpuErrorMemoryAllocation cudaErrorMemoryAllocation
#define gpuErrorInitializationError cudaErrorInitializationError
#define gpuErrorStubLibrary cudaErrorStubLibrary
#define gpuErrorInsufficientDriver cudaErrorInsufficientDriver
#define gpuErrorCallRequiresNewerDriver cudaErrorCallRequiresNewerDriver
#define gpuErrorInvalidConfiguration cudaErrorInvalidConfiguration
#define gpuErrorInvalidPitchValue cudaErrorInvalidPitchValue
#define gpuErrorInvalidSymbol cudaErrorInvalidSymbol
#define gpuErrorInvalidDevicePointer cudaErrorInvalidDevicePointer
#define gpuErrorInvalidMemcpyDirection cudaErrorInvalidMemcpyDirection
#define gpuErrorMissingConfiguration cudaErrorMissingConfiguration
#define gpuErrorPriorLaunchFailure cudaErrorPriorLaunchFailure
#define gpuErrorDevicesUnavailable cudaErrorDevicesUnavailable
#define gpuErrorInvalidDeviceFunction cudaErrorInvalidDeviceFunction
#define gpuErrorNoDevice cudaErrorNoDevice
#define gpuErrorInvalidDevice cudaErrorInvalidDevice
#define gpuErrorInvalidKernelImage cudaErrorInvalidKernelImage
#define gpuErrorNoKernelImageForDevice cudaErrorNoKernelImageForDevice
#define gpuErrorECCUncorrectable cudaErrorECCUncorrectable
#define gpuErrorUnsupportedLimit cudaErrorUnsupportedLimit
#define gpuErrorPeerAccessUnsupported cudaErrorPeerAccessUnsupported
#define gpuErrorInvalidPtx cudaErrorInvalidPtx
#define gpuErrorUnsupportedPtxVersion cudaErrorUnsupportedPtxVersion
#define gpuErrorInvalidSource cudaErrorInvalidSource
#define gpuErrorFileNotFound cudaErrorFileNotFound
#define gpuErrorSharedObjectSymbolNotFound cudaErrorSharedObjectSymbolNotFound
#define gpuErrorInvalidResourceHandle cudaErrorInvalidResourceHandle
#define gpuErrorIllegalState cudaErrorIllegalState
#define gpuErrorSymbolNotFound cudaErrorSymbolNotFound
#define gpuErrorNotReady cudaErrorNotReady
#define gpuErrorIllegalAddress cudaErrorIllegalAddress
#define gpuErrorLaunchOutOfResources cudaErrorLaunchOutOfResources
#define gpuErrorLaunchTimeout cudaErrorLaunchTimeout
#define gpuErrorPeerAccessAlreadyEnabled cudaErrorPeerAccessAlreadyEnabled
#define gpuErrorPeerAccessNotEnabled cudaErrorPeerAccessNotEnabled
#define gpuErrorAssert cudaErrorAssert
#define gpuErrorTooManyPeers cudaErrorTooManyPeers
#define gpuErrorHostMemoryAlreadyRegistered cudaErrorHostMemoryAlreadyRegistered
#define gpuErrorHostMemoryNotRegistered cudaErrorHostMemoryNotRegistered
#define gpuErrorHardwareStackError cudaErrorHardwareStackError
#define gpuErrorIllegalInstruction cudaErrorIllegalInstruction
#define gpuErrorMisalignedAddress cudaErrorMisalignedAddress
#define gpuErrorInvalidAddressSpace cudaErrorInvalidAddressSpace
#define gpuErrorInvalidPc cudaErrorInvalidPc
#define gpuErrorLaunchFailure cudaErrorLaunchFailure
#define gpuErrorCooperativeLaunchTooLarge cudaErrorCooperativeLaunchTooLarge
#define gpuErrorNotPermitted cudaErrorNotPermitted
#define gpuErrorNotSupported cudaErrorNotSupported
#define gpuErrorSystemNotReady cudaErrorSystemNotReady
#define gpuErrorSystemDriverMismatch cudaErrorSystemDriverMismatch
#define gpuErrorCompatNotSupportedOnDevice cudaErrorCompatNotSupportedOnDevice
#define gpuErrorStreamCaptureUnsupported cudaErrorStreamCaptureUnsupported
#define gpuErrorStreamCaptureInvalidated cudaErrorStreamCaptureInvalidated
#define gpuErrorStreamCaptureMerge cudaErrorStreamCaptureMerge
#define gpuErrorStreamCaptureUnmatched cudaErrorStreamCaptureUnmatched
#define gpuErrorStreamCaptureUnjoined cudaErrorStreamCaptureUnjoined
#define gpuErrorStreamCaptureIsolation cudaErrorStreamCaptureIsolation
#define gpuErrorGraphExecUpdateFailure cudaErrorGraphExecUpdateFailure
#define gpuErrorStreamCaptureImplicit cudaErrorStreamCaptureImplicit
#define gpuErrorCapturedEvent cudaErrorCapturedEvent
#define gpuErrorStreamCaptureWrongThread cudaErrorStreamCaptureWrongThread
#define gpuErrorTimeout cudaErrorTimeout

/* ---- functions ---------------------------------------------------------------- */
#define gpuGetErrorName cudaGetErrorName
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuSetDevice cudaSetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDeviceGetPCIBusId cudaDeviceGetPCIBusId
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuDeviceReset cudaDeviceReset
#define gpuDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess cudaDeviceEnablePeerAccess
#define gpuDeviceGetStreamPriorityRange cudaDeviceGetStreamPriorityRange
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuHostAlloc cudaHostAlloc
#define gpuFreeHost cudaFreeHost
#define gpuMallocManaged cudaMallocManaged
#define gpuHostRegister cudaHostRegister
#define gpuHostUnregister cudaHostUnregister
#define gpuHostGetDevicePointer cudaHostGetDevicePointer
#define gpuMallocAsync cudaMallocAsync
#define gpuFreeAsync cudaFreeAsync
#define gpuPointerGetAttributes cudaPointerGetAttributes
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpy2DAsync cudaMemcpy2DAsync
#define gpuMemcpyPeerAsync cudaMemcpyPeerAsync
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemsetD32Async gp__cuda_memset_d32_async
#define gpuMemsetD32AsyncName "cuMemsetD32Async" /* for messages */
#define gpuMemGetInfo cudaMemGetInfo
#define gpuStreamCreateWithPriority cudaStreamCreateWithPriority
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamQuery cudaStreamQuery
#define gpuStreamAttachMemAsync cudaStreamAttachMemAsync
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuLaunchHostFunc cudaLaunchHostFunc
#define gpuStreamAddCallback cudaStreamAddCallback
#define gpuSetDeviceFlags cudaSetDeviceFlags
#define gpuGetDeviceFlags cudaGetDeviceFlags
#define gpuDeviceLmemResizeToMax cudaDeviceLmemResizeToMax
#define gpuDeviceGetDefaultMemPool cudaDeviceGetDefaultMemPool
#define gpuMemPoolSetAttribute cudaMemPoolSetAttribute
#define gpuMemPoolGetAttribute cudaMemPoolGetAttribute
typedef cudaMemPool_t gpuMemPool_t;
typedef enum cudaMemPoolAttr gpuMemPoolAttr;
#define gpuLaunchHostFuncName "cudaLaunchHostFunc" /* for messages */
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventQuery cudaEventQuery
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuLaunchKernel cudaLaunchKernel
#define gpuFuncSetAttribute cudaFuncSetAttribute
#define gpuLaunchCooperativeKernel cudaLaunchCooperativeKernel
#define gpuOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor
#define gpuMemcpyToSymbolAsync cudaMemcpyToSymbolAsync
#define gpuMemcpyFromSymbolAsync cudaMemcpyFromSymbolAsync
#define gpuGetSymbolAddress cudaGetSymbolAddress

/* ---- graphs (src/gpu/graph.c) ------------------------------------------------------ */
typedef cudaGraph_t gpuGraph_t;
typedef cudaGraphExec_t gpuGraphExec_t;
typedef enum cudaStreamCaptureStatus gpuStreamCaptureStatus;
typedef enum cudaStreamCaptureMode gpuStreamCaptureMode;
#define gpuStreamCaptureModeGlobal cudaStreamCaptureModeGlobal
#define gpuStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define gpuStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
#define gpuStreamCaptureStatusNone cudaStreamCaptureStatusNone
#define gpuStreamCaptureStatusActive cudaStreamCaptureStatusActive
#define gpuStreamCaptureStatusInvalidated cudaStreamCaptureStatusInvalidated
#define gpuStreamBeginCapture cudaStreamBeginCapture
#define gpuStreamEndCapture cudaStreamEndCapture
#define gpuStreamIsCapturing cudaStreamIsCapturing
#define gpuGraphLaunch cudaGraphLaunch
#define gpuGraphDestroy cudaGraphDestroy
#define gpuGraphExecDestroy cudaGraphExecDestroy
#define gpuGraphGetNodes cudaGraphGetNodes
#define gpuStreamCaptureGraphName "cudaStreamGetCaptureInfo" /* for messages */
#define gpuGraphInstantiateName "cudaGraphInstantiate" /* for messages */

static inline cudaError_t gpuGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph) {
  return cudaGraphInstantiate(exec, graph, 0);
}

/* The graph a capturing stream records into (the signature changed in CUDA 13). */
static inline cudaError_t gpuStreamCaptureGraph(cudaStream_t s, cudaGraph_t *graph) {
  enum cudaStreamCaptureStatus st;
  unsigned long long id;
#if CUDART_VERSION >= 13000
  return cudaStreamGetCaptureInfo(s, &st, &id, graph, NULL, NULL, NULL);
#else
  return cudaStreamGetCaptureInfo(s, &st, &id, graph, NULL, NULL);
#endif
}

/* Gives graph the ownership of p: destroy(p) runs once the graph, every executable graph
 * made from it and every launch of them are done with it (cudaUserObjectCreate). On
 * failure destroy(p) has run already. */
#define GP__GPU_USER_OBJECTS 1
static inline cudaError_t gpuGraphOwn(cudaGraph_t graph, void *p, void (*destroy)(void *)) {
  cudaUserObject_t o;
  cudaError_t e = cudaUserObjectCreate(&o, p, destroy, 1, cudaUserObjectNoDestructorSync);
  if (e != cudaSuccess) {
    destroy(p);
    return e;
  }
  e = cudaGraphRetainUserObject(graph, o, 1, cudaGraphUserObjectMove);
  if (e != cudaSuccess) (void)cudaUserObjectRelease(o, 1); /* runs destroy(p) */
  return e;
}

/* Explicit construction (cudaGraphCreate, cudaGraphAdd*Node, cudaGraphExecUpdate). */
typedef cudaGraphNode_t gpuGraphNode_t;
typedef struct cudaKernelNodeParams gpuKernelNodeParams;
typedef struct cudaMemsetParams gpuMemsetParams;
typedef struct cudaHostNodeParams gpuHostNodeParams;
typedef enum cudaGraphNodeType gpuGraphNodeType;
#define gpuGraphCreate cudaGraphCreate
#define gpuGraphAddKernelNode cudaGraphAddKernelNode
#define gpuGraphAddMemsetNode cudaGraphAddMemsetNode
#define gpuGraphAddHostNode cudaGraphAddHostNode
#define gpuGraphAddEmptyNode cudaGraphAddEmptyNode
#define gpuGraphNodeGetType cudaGraphNodeGetType
#define gpuGraphKernelNodeGetParams cudaGraphKernelNodeGetParams
#define gpuGraphKernelNodeSetParams cudaGraphKernelNodeSetParams
#define gpuGraphExecKernelNodeSetParams cudaGraphExecKernelNodeSetParams
#define gpuGraphAddDependenciesName "cudaGraphAddDependencies" /* for messages */
#define gpuGraphExecUpdateName "cudaGraphExecUpdate"           /* for messages */
/* Kernels of gpuport modules are cudaKernel_t, which cudaGraphAddKernelNode takes. */
#define GP__GPU_GRAPH_MODULE_KERNELS 1

static inline cudaError_t gpuGraphAddMemcpyNode1D(cudaGraphNode_t *node, cudaGraph_t graph,
                                                  const cudaGraphNode_t *deps, size_t ndeps,
                                                  void *dst, const void *src, size_t bytes) {
  return cudaGraphAddMemcpyNode1D(node, graph, deps, ndeps, dst, src, bytes, cudaMemcpyDefault);
}

/* The signature gained edge data in CUDA 13. */
static inline cudaError_t gpuGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t *from,
                                                  const cudaGraphNode_t *to, size_t n) {
#if CUDART_VERSION >= 13000
  return cudaGraphAddDependencies(graph, from, to, NULL, n);
#else
  return cudaGraphAddDependencies(graph, from, to, n);
#endif
}

/* cudaGraphExecUpdate (CUDA 12 signature): *result is a cudaGraphExecUpdateResult value. */
static inline cudaError_t gpuGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, int *result,
                                             cudaGraphNode_t *node, cudaGraphNode_t *from) {
  cudaGraphExecUpdateResultInfo info;
  memset(&info, 0, sizeof(info));
  cudaError_t e = cudaGraphExecUpdate(exec, graph, &info);
  *result = (int)info.result;
  *node = info.errorNode;
  *from = info.errorFromNode;
  return e;
}

/* ---- modules and runtime compilation (src/gpu/module.c) ------------------------------ */
/* A module is a cudaLibrary_t; its kernels are cudaKernel_t handles, which the runtime
 * takes wherever it takes a kernel's host function (CUDA 12+: cudaLaunchKernel,
 * cudaFuncSetAttribute, cudaOccupancy*). */
typedef cudaLibrary_t gpuModule_t;
#define gpuModuleUnload cudaLibraryUnload
#define gpuModuleLoadName "cudaLibraryLoadData" /* for messages */
#define gpuModuleGetKernelName "cudaLibraryGetKernel"
#define gpuModuleLaunchName "cudaLaunchKernel"

/* cudaLibraryLoadData takes no size: bytes is what gp__image_check bounded the image's
 * headers by (every extent they describe lies within it). */
static inline cudaError_t gpuModuleLoadData(cudaLibrary_t *m, const void *image, size_t bytes) {
  (void)bytes;
  return cudaLibraryLoadData(m, image, NULL, NULL, 0, NULL, NULL, 0);
}
static inline cudaError_t gpuModuleGetKernel(const void **entry, cudaLibrary_t m, const char *name) {
  cudaKernel_t k = NULL;
  cudaError_t e = cudaLibraryGetKernel(&k, m, name);
  *entry = (const void *)k;
  return e;
}
static inline cudaError_t gpuModuleLaunch(const void *entry, dim3 grid, dim3 block, void **args,
                                          size_t shmem, cudaStream_t s) {
  return cudaLaunchKernel(entry, grid, block, args, shmem, s);
}
static inline cudaError_t gpuModuleSetMaxDynamicShared(const void *entry, int bytes) {
  return cudaFuncSetAttribute(entry, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
static inline cudaError_t gpuOccupancy(int *blocks, const void *entry, bool module, int threads,
                                       size_t shmem) {
  (void)module;
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, entry, threads, shmem);
}
typedef struct cudaFuncAttributes gpuFuncAttributes;
/* cudaFuncGetAttributes takes program kernels and library kernels (cudaKernel_t) alike. */
static inline cudaError_t gpuFuncAttributesOf(gpuFuncAttributes *a, const void *entry, bool module) {
  (void)module;
  return cudaFuncGetAttributes(a, entry);
}
/* Threads per block the compiled kernel allows (0 when unknown). */
static inline int gpuModuleKernelMaxThreads(const void *entry) {
  struct cudaFuncAttributes a;
  if (cudaFuncGetAttributes(&a, entry) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return a.maxThreadsPerBlock;
}
/* Sizes of the kernel's parameters (at most max); their number, or -1 when the runtime
 * cannot tell (before CUDA 12.4). */
static inline int gpuModuleKernelParams(const void *entry, uint16_t *sizes, int max) {
#if CUDART_VERSION >= 12040
  int n = 0;
  for (; n < max; n++) {
    size_t offset = 0, size = 0;
    if (cudaFuncGetParamInfo(entry, (size_t)n, &offset, &size) != cudaSuccess) {
      (void)cudaGetLastError(); /* past the last parameter */
      break;
    }
    sizes[n] = (uint16_t)size;
  }
  return n;
#else
  (void)entry;
  (void)sizes;
  (void)max;
  return -1;
#endif
}

/* NVRTC, loaded at the first gp_program_compile (never linked). */
#define GP__RTC_LIBS {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", NULL}
#define GP__RTC_NAME "NVRTC (libnvrtc)"
#define GP__RTC_SYM(x) "nvrtc" #x
#define GP__RTC_CODE_SIZE "nvrtcGetCUBINSize"
#define GP__RTC_CODE "nvrtcGetCUBIN"
#define GP__RTC_TEXT_SIZE "nvrtcGetPTXSize" /* when compiled for a virtual architecture */
#define GP__RTC_TEXT "nvrtcGetPTX"
#define GP__RTC_ARCH_OPTION "--gpu-architecture="
#define GP__RTC_ARCH_OPTIONS {"--gpu-architecture", "-arch", NULL}

/* ---- what differs beyond spelling ---------------------------------------------- */

/* The arch string of a device: "sm_90". */
static inline void gpu_arch_name(char *out, size_t n, const gpuDeviceProp *prop, int major,
                                 int minor) {
  (void)prop;
  snprintf(out, n, "sm_%d%d", major, minor);
}

/* The kind of memory a native pointer attribute describes. */
static inline gp_memory_type_t gpu_pointer_kind(const gpuPointerAttributes *a) {
  switch (a->type) {
  case cudaMemoryTypeHost: return GP_MEMORY_HOST;
  case cudaMemoryTypeDevice: return GP_MEMORY_DEVICE;
  case cudaMemoryTypeManaged: return GP_MEMORY_MANAGED;
  default: return GP_MEMORY_UNREGISTERED;
  }
}

/* cuMemsetD32Async has no runtime-API twin: it is looked up once through the runtime
 * (never linked from libcuda), so the library loads on machines without a driver.
 * Runtime and driver error codes coincide for every code this call returns. */
typedef int (*gp__cu_memset_d32_async_fn)(unsigned long long dst, unsigned int value, size_t n,
                                          cudaStream_t stream);

static inline cudaError_t gp__cuda_memset_d32_async(void *dst, uint32_t value, size_t n,
                                                    cudaStream_t stream) {
  static gp__cu_memset_d32_async_fn fn; /* a benign race: every thread stores the same value */
  gp__cu_memset_d32_async_fn f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    void *p = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSuccess;
#if CUDART_VERSION >= 12050
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuMemsetD32Async", &p, 12000,
                                                     cudaEnableDefault, &q);
#else
    cudaError_t e = cudaGetDriverEntryPoint("cuMemsetD32Async", &p, cudaEnableDefault, &q);
#endif
    if (e != cudaSuccess) return e;
    if (q != cudaDriverEntryPointSuccess || p == NULL) return cudaErrorNotSupported;
    /* POSIX guarantees that a data pointer converts to a function pointer (dlsym). */
    f = (gp__cu_memset_d32_async_fn)(uintptr_t)p;
    __atomic_store_n(&fn, f, __ATOMIC_RELEASE);
  }
  return (cudaError_t)f((unsigned long long)(uintptr_t)dst, value, n, stream);
}

/* A launch with attributes (thread-block clusters, sm_90; cooperative) through
 * cudaLaunchKernelExC, available since CUDA 12.0. */
#define GP__GPU_HAVE_LAUNCH_EX 1
static inline cudaError_t gpu_launch_ex(const void *entry, dim3 grid, dim3 block, size_t shmem,
                                        cudaStream_t stream, void **args, int cooperative,
                                        unsigned cx, unsigned cy, unsigned cz) {
  cudaLaunchAttribute attrs[2];
  unsigned n = 0;
  memset(attrs, 0, sizeof attrs);
  if (cooperative) {
    attrs[n].id = cudaLaunchAttributeCooperative;
    attrs[n].val.cooperative = 1;
    n++;
  }
  attrs[n].id = cudaLaunchAttributeClusterDimension;
  attrs[n].val.clusterDim.x = cx;
  attrs[n].val.clusterDim.y = cy;
  attrs[n].val.clusterDim.z = cz;
  n++;
  cudaLaunchConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = shmem;
  cfg.stream = stream;
  cfg.attrs = attrs;
  cfg.numAttrs = n;
  return cudaLaunchKernelExC(&cfg, entry, args);
}

#endif /* GP_VENDOR_H */
