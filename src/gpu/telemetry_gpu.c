/*
 * src/gpu/telemetry_gpu.c - gp_device_get_telemetry on the cuda and hip backends: the
 * device's PCI bus id from the runtime (cudaDeviceGetPCIBusId / hipDeviceGetPCIBusId),
 * then the vendor's management library matched by it: NVML (src/telemetry_nvml.c) or
 * AMD SMI / ROCm SMI (src/telemetry_amd.c). Both readers are vendor-neutral and tested
 * on the cpu build against mock libraries (test/test_telemetry.c).
 */
#include "gpu/gpu.h"
#include "telemetry.h"

gp_status_t gp__be_device_get_telemetry(int device, gp_telemetry_t *t, uint64_t *offered) {
  char pci[32] = "";
  GP__GPU_TRY_DEV(device, gpuDeviceGetPCIBusId, (pci, (int)sizeof pci, device));
#if defined(GP_BUILD_CUDA)
  return gp__telemetry_nvml_read(NULL, pci, t, offered);
#else
  return gp__telemetry_amd_read(NULL, NULL, pci, t, offered);
#endif
}
