/*
 * src/gpu/errors.c - the one table from native CUDA/HIP error codes to gp_status_t,
 * and the failure path every src/gpu/ call takes (message, sticky faults).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "gpu/gpu.h"

typedef struct gp__gpu_error_row {
  int native;
  gp_status_t status;
  bool fault; /* raised by work that already ran: sticky, reported asynchronously */
} gp__gpu_error_row_t;

/* Rows a vendor lacks are left out by #ifdef (the shim defines only what exists). */
static const gp__gpu_error_row_t gp__gpu_errors[] = {
  {gpuSuccess, GP_SUCCESS, false},
  {gpuErrorInvalidValue, GP_ERROR_INVALID_VALUE, false},
  {gpuErrorMemoryAllocation, GP_ERROR_OUT_OF_MEMORY, false},
  /* No usable device or driver: CUDA without a driver says InsufficientDriver (35),
   * not NoDevice (docs/design/ARCHITECTURE.md "Errors"); both mean "no device" to a user. */
  {gpuErrorNoDevice, GP_ERROR_NO_DEVICE, false},
  {gpuErrorInsufficientDriver, GP_ERROR_NO_DEVICE, false},
  {gpuErrorInitializationError, GP_ERROR_NO_DEVICE, false},
#ifdef gpuErrorStubLibrary
  {gpuErrorStubLibrary, GP_ERROR_NO_DEVICE, false},
#endif
#ifdef gpuErrorDevicesUnavailable
  {gpuErrorDevicesUnavailable, GP_ERROR_NO_DEVICE, false},
#endif
#ifdef gpuErrorSystemDriverMismatch
  {gpuErrorSystemDriverMismatch, GP_ERROR_NO_DEVICE, false},
#endif
#ifdef gpuErrorCompatNotSupportedOnDevice
  {gpuErrorCompatNotSupportedOnDevice, GP_ERROR_NO_DEVICE, false},
#endif
#ifdef gpuErrorSystemNotReady
  {gpuErrorSystemNotReady, GP_ERROR_NO_DEVICE, false},
#endif
  {gpuErrorInvalidDevice, GP_ERROR_INVALID_DEVICE, false},
  {gpuErrorInvalidResourceHandle, GP_ERROR_INVALID_HANDLE, false},
  {gpuErrorNotReady, GP_ERROR_NOT_READY, false},
  /* Configurations the device cannot run. */
  {gpuErrorInvalidConfiguration, GP_ERROR_INVALID_CONFIGURATION, false},
  {gpuErrorMissingConfiguration, GP_ERROR_INVALID_CONFIGURATION, false},
  {gpuErrorLaunchOutOfResources, GP_ERROR_INVALID_CONFIGURATION, false},
  {gpuErrorCooperativeLaunchTooLarge, GP_ERROR_INVALID_CONFIGURATION, false},
  /* Arguments the native runtime rejects. */
  {gpuErrorInvalidPitchValue, GP_ERROR_INVALID_VALUE, false},
  {gpuErrorInvalidDevicePointer, GP_ERROR_INVALID_VALUE, false},
  {gpuErrorInvalidMemcpyDirection, GP_ERROR_INVALID_VALUE, false},
  {gpuErrorHostMemoryAlreadyRegistered, GP_ERROR_INVALID_VALUE, false},
  {gpuErrorHostMemoryNotRegistered, GP_ERROR_INVALID_VALUE, false},
  {gpuErrorPeerAccessAlreadyEnabled, GP_ERROR_INVALID_VALUE, false},
  {gpuErrorPeerAccessNotEnabled, GP_ERROR_INVALID_VALUE, false},
  {gpuErrorIllegalState, GP_ERROR_INVALID_VALUE, false},
  /* Code images. */
  {gpuErrorInvalidDeviceFunction, GP_ERROR_INVALID_IMAGE, false},
  {gpuErrorInvalidKernelImage, GP_ERROR_INVALID_IMAGE, false},
  {gpuErrorNoKernelImageForDevice, GP_ERROR_INVALID_IMAGE, false},
  {gpuErrorInvalidPtx, GP_ERROR_INVALID_IMAGE, false},
#ifdef gpuErrorUnsupportedPtxVersion
  {gpuErrorUnsupportedPtxVersion, GP_ERROR_INVALID_IMAGE, false},
#endif
  {gpuErrorInvalidSource, GP_ERROR_INVALID_IMAGE, false},
  {gpuErrorInvalidSymbol, GP_ERROR_NOT_FOUND, false},
  {gpuErrorSymbolNotFound, GP_ERROR_NOT_FOUND, false},
  {gpuErrorSharedObjectSymbolNotFound, GP_ERROR_NOT_FOUND, false},
  {gpuErrorFileNotFound, GP_ERROR_NOT_FOUND, false},
  /* Unsupported here. */
  {gpuErrorNotSupported, GP_ERROR_NOT_SUPPORTED, false},
  {gpuErrorPeerAccessUnsupported, GP_ERROR_NOT_SUPPORTED, false},
  {gpuErrorUnsupportedLimit, GP_ERROR_NOT_SUPPORTED, false},
  /* Stream capture (gpuport/graph.h): what a capture cannot record, and its misuse. */
  {gpuErrorStreamCaptureUnsupported, GP_ERROR_NOT_SUPPORTED, false},
  {gpuErrorStreamCaptureInvalidated, GP_ERROR_NOT_SUPPORTED, false},
  {gpuErrorStreamCaptureImplicit, GP_ERROR_NOT_SUPPORTED, false},
  {gpuErrorCapturedEvent, GP_ERROR_NOT_SUPPORTED, false},
  {gpuErrorStreamCaptureMerge, GP_ERROR_INVALID_VALUE, false},
  {gpuErrorStreamCaptureUnmatched, GP_ERROR_INVALID_VALUE, false},
  {gpuErrorStreamCaptureUnjoined, GP_ERROR_INVALID_VALUE, false},
  {gpuErrorStreamCaptureIsolation, GP_ERROR_INVALID_VALUE, false},
  {gpuErrorGraphExecUpdateFailure, GP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, false},
  {gpuErrorStreamCaptureWrongThread, GP_ERROR_INVALID_VALUE, false},
#ifdef gpuErrorTooManyPeers
  {gpuErrorTooManyPeers, GP_ERROR_NOT_SUPPORTED, false},
#endif
#ifdef gpuErrorNotPermitted
  {gpuErrorNotPermitted, GP_ERROR_NOT_SUPPORTED, false},
#endif
#ifdef gpuErrorCallRequiresNewerDriver
  {gpuErrorCallRequiresNewerDriver, GP_ERROR_NOT_SUPPORTED, false},
#endif
#ifdef gpuErrorTimeout
  {gpuErrorTimeout, GP_ERROR_TIMEOUT, false},
#endif
  /* Faults of running kernels: sticky, the context is unusable until the process ends. */
  {gpuErrorLaunchFailure, GP_ERROR_LAUNCH_FAILED, true},
  {gpuErrorIllegalAddress, GP_ERROR_LAUNCH_FAILED, true},
  {gpuErrorAssert, GP_ERROR_LAUNCH_FAILED, true},
  /* The driver's watchdog ended a kernel (cudaDevAttrKernelExecTimeout; hipErrorLaunchTimeOut):
   * the status the cpu backend's GP_LAUNCH_TIMEOUT_S gives, sticky here as every fault. */
  {gpuErrorLaunchTimeout, GP_ERROR_TIMEOUT, true},
  {gpuErrorPriorLaunchFailure, GP_ERROR_LAUNCH_FAILED, true},
  {gpuErrorECCUncorrectable, GP_ERROR_LAUNCH_FAILED, true},
#ifdef gpuErrorHardwareStackError
  {gpuErrorHardwareStackError, GP_ERROR_LAUNCH_FAILED, true},
#endif
#ifdef gpuErrorIllegalInstruction
  {gpuErrorIllegalInstruction, GP_ERROR_LAUNCH_FAILED, true},
#endif
#ifdef gpuErrorMisalignedAddress
  {gpuErrorMisalignedAddress, GP_ERROR_LAUNCH_FAILED, true},
#endif
#ifdef gpuErrorInvalidAddressSpace
  {gpuErrorInvalidAddressSpace, GP_ERROR_LAUNCH_FAILED, true},
#endif
#ifdef gpuErrorInvalidPc
  {gpuErrorInvalidPc, GP_ERROR_LAUNCH_FAILED, true},
#endif
};

gp_status_t gp__gpu_map_error(int native, bool *fault) {
  for (size_t i = 0; i < sizeof(gp__gpu_errors) / sizeof(gp__gpu_errors[0]); i++) {
    if (gp__gpu_errors[i].native == native) {
      if (fault) *fault = gp__gpu_errors[i].fault;
      return gp__gpu_errors[i].status;
    }
  }
  if (fault) *fault = false;
  return GP_ERROR_BACKEND;
}

const char *gp__gpu_error_name(int native) {
  const char *name = gpuGetErrorName((gpuError_t)native);
  return name ? name : "unrecognized native error";
}

/* The public call a backend function serves: gp__be_malloc serves gp_malloc. */
static const char *gp__gpu_public_name(const char *func, char *buf, size_t n) {
  if (strncmp(func, "gp__be_", 7) != 0) return func;
  snprintf(buf, n, "gp_%s", func + 7);
  return buf;
}

gp_status_t gp__gpu_error(gp_status_t status, const char *func, const char *fmt, ...) {
  char pub[64], text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  return gp__error(status, gp__gpu_public_name(func, pub, sizeof(pub)), "%s", text);
}

gp_status_t gp__gpu_fail(gpuError_t err, int device, const char *func, const char *call) {
  bool fault = false;
  gp_status_t status = gp__gpu_map_error((int)err, &fault);
  const char *name = gp__gpu_error_name((int)err);
  const char *text = gpuGetErrorString(err);
  if (!text) text = "";
  char where[32] = "";
  if (device >= 0) snprintf(where, sizeof(where), " on device %d", device);
  if (fault) {
    gp__async_error_raise(device < 0 ? gp__current_device() : device, status,
                          "a kernel faulted: %s (%s), seen by %s%s", name, text, call, where);
  } else {
    /* The runtime also keeps a non-sticky error as its "last error"; clear it so native
     * code sharing the thread does not see it a second time. */
    (void)gpuGetLastError();
  }
  return gp__gpu_error(status, func, "%s failed%s: %s (%s)", call, where, name, text);
}
