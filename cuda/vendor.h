/*
 * cuda/vendor.h - the CUDA side of the vendor shim: the gpu* names used by the shared
 * runtime mapping in src/gpu/ spelled as the CUDA runtime spells them. hip/vendor.h
 * defines the same names for HIP (ggml's src/ggml-cuda/vendors/hip.h model).
 *
 * Only cuda_runtime_api.h is included: it compiles as C, cuda_runtime.h does not.
 * Driver-API entry points are looked up through the runtime, never linked (-lcuda),
 * so the library loads on machines without a driver (KERNELS.md).
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
#define gpuMemAttachGlobal cudaMemAttachGlobal
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize

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
#define gpuErrorTimeout cudaErrorTimeout

/* ---- functions ---------------------------------------------------------------- */
#define gpuGetErrorName cudaGetErrorName
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuSetDevice cudaSetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
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
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuLaunchHostFunc cudaLaunchHostFunc
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
