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

/* An optional attribute: 0 when the runtime does not know it. */
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
  props->compute_capability_major = gp__gpu_attr(gpuDevAttrComputeCapabilityMajor, device);
  props->compute_capability_minor = gp__gpu_attr(gpuDevAttrComputeCapabilityMinor, device);
  gpu_arch_name(props->arch, sizeof(props->arch), &prop, props->compute_capability_major,
                props->compute_capability_minor);
  props->multiprocessor_count = gp__gpu_attr(gpuDevAttrMultiProcessorCount, device);
  props->warp_size = gp__gpu_attr(gpuDevAttrWarpSize, device);
  props->max_threads_per_block = gp__gpu_attr(gpuDevAttrMaxThreadsPerBlock, device);
  props->max_block_dim[0] = gp__gpu_attr(gpuDevAttrMaxBlockDimX, device);
  props->max_block_dim[1] = gp__gpu_attr(gpuDevAttrMaxBlockDimY, device);
  props->max_block_dim[2] = gp__gpu_attr(gpuDevAttrMaxBlockDimZ, device);
  props->max_grid_dim[0] = gp__gpu_attr(gpuDevAttrMaxGridDimX, device);
  props->max_grid_dim[1] = gp__gpu_attr(gpuDevAttrMaxGridDimY, device);
  props->max_grid_dim[2] = gp__gpu_attr(gpuDevAttrMaxGridDimZ, device);
  props->shared_memory_per_block = (size_t)gp__gpu_attr(gpuDevAttrMaxSharedMemoryPerBlock, device);
  props->shared_memory_per_block_optin =
      (size_t)gp__gpu_attr(gpuDevAttrMaxSharedMemoryPerBlockOptin, device);
  /* HIP on AMD has no opt-in: the whole LDS is available without it. */
  if (props->shared_memory_per_block_optin < props->shared_memory_per_block)
    props->shared_memory_per_block_optin = props->shared_memory_per_block;
  props->l2_cache_size = (size_t)gp__gpu_attr(gpuDevAttrL2CacheSize, device);
  props->clock_rate_khz = gp__gpu_attr(gpuDevAttrClockRate, device);
  props->pci_bus_id = gp__gpu_attr(gpuDevAttrPciBusId, device);
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

gp_status_t gp__be_stream_priority_range(int *least, int *greatest) {
  int l = 0, g = 0;
  GP__GPU_TRY(gpuDeviceGetStreamPriorityRange, (&l, &g));
  if (least) *least = l;
  if (greatest) *greatest = g;
  return GP_SUCCESS;
}
