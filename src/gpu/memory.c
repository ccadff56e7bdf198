/*
 * src/gpu/memory.c - memory on the CUDA and HIP backends: allocation, native pointer
 * recognition, copies and fills. The api layer has checked every argument and keeps
 * the allocation registry; these functions only call the native runtime.
 */
#include <string.h>
#include "gpu/gpu.h"

gp_status_t gp__be_malloc(void **ptr, size_t bytes) {
  GP__GPU_TRY(gpuMalloc, (ptr, bytes));
  return GP_SUCCESS;
}

gp_status_t gp__be_free(void *ptr, const gp__alloc_info_t *info) {
  switch (info->kind) {
  case GP__ALLOC_HOST: return gp__be_free_host(ptr);
  case GP__ALLOC_REGISTERED: return gp__be_host_unregister(ptr);
  default: GP__GPU_TRY_DEV(info->device, gpuFree, (ptr)); return GP_SUCCESS;
  }
}

/* GP_HOST_ALLOC_* and GP_HOST_REGISTER_* to the native runtime's flags, bit by bit. */
static unsigned host_alloc_flags(unsigned f) {
  return (f & GP_HOST_ALLOC_PORTABLE ? (unsigned)gpuHostAllocPortable : 0u) |
         (f & GP_HOST_ALLOC_MAPPED ? (unsigned)gpuHostAllocMapped : 0u) |
         (f & GP_HOST_ALLOC_WRITE_COMBINED ? (unsigned)gpuHostAllocWriteCombined : 0u);
}

static unsigned host_register_flags(unsigned f) {
  return (f & GP_HOST_REGISTER_PORTABLE ? (unsigned)gpuHostRegisterPortable : 0u) |
         (f & GP_HOST_REGISTER_MAPPED ? (unsigned)gpuHostRegisterMapped : 0u) |
         (f & GP_HOST_REGISTER_IO_MEMORY ? (unsigned)gpuHostRegisterIoMemory : 0u) |
         (f & GP_HOST_REGISTER_READ_ONLY ? (unsigned)gpuHostRegisterReadOnly : 0u);
}

gp_status_t gp__be_malloc_host(void **ptr, size_t bytes, unsigned flags) {
  GP__GPU_TRY(gpuHostAlloc, (ptr, bytes, host_alloc_flags(flags)));
  return GP_SUCCESS;
}

gp_status_t gp__be_free_host(void *ptr) {
  GP__GPU_TRY(gpuFreeHost, (ptr));
  return GP_SUCCESS;
}

gp_status_t gp__be_malloc_managed(void **ptr, size_t bytes) {
  GP__GPU_TRY(gpuMallocManaged, (ptr, bytes, gpuMemAttachGlobal));
  return GP_SUCCESS;
}

gp_status_t gp__be_host_register(void *ptr, size_t bytes, unsigned flags) {
  GP__GPU_TRY(gpuHostRegister, (ptr, bytes, host_register_flags(flags)));
  return GP_SUCCESS;
}

gp_status_t gp__be_host_get_device_pointer(void **dptr, void *host) {
  GP__GPU_TRY(gpuHostGetDevicePointer, (dptr, host, 0));
  return GP_SUCCESS;
}

gp_status_t gp__be_host_unregister(void *ptr) {
  GP__GPU_TRY(gpuHostUnregister, (ptr));
  return GP_SUCCESS;
}

gp_status_t gp__be_malloc_async(void **ptr, size_t bytes, gp_stream_t stream) {
  GP__GPU_TRY_DEV(gp__gpu_stream_device(stream), gpuMallocAsync,
                  (ptr, bytes, gp__gpu_stream(stream)));
  return GP_SUCCESS;
}

gp_status_t gp__be_free_async(void *ptr, gp_stream_t stream) {
  GP__GPU_TRY_DEV(gp__gpu_stream_device(stream), gpuFreeAsync, (ptr, gp__gpu_stream(stream)));
  return GP_SUCCESS;
}

bool gp__be_pointer_freed(const void *ptr, gp__alloc_info_t *info) {
  (void)ptr; /* the native runtime refuses a freed device pointer itself */
  (void)info;
  return false;
}

bool gp__be_pointer_native(const void *ptr, gp_pointer_attributes_t *attr) {
  gpuPointerAttributes a;
  memset(&a, 0, sizeof(a));
  /* An unknown host pointer is an error on some runtime versions (HIP 5), a success
   * with the unregistered kind on others: both mean "not native memory". */
  if (gpuPointerGetAttributes(&a, ptr) != gpuSuccess) {
    (void)gpuGetLastError();
    return false;
  }
  gp_memory_type_t type = gpu_pointer_kind(&a);
  if (type == GP_MEMORY_UNREGISTERED) return false;
  attr->type = type;
  attr->device = a.device;
  attr->device_pointer = a.devicePointer;
  attr->host_pointer = a.hostPointer;
  attr->native = 1;
  return true;
}

/* Waits for a stream after a copy or fill when the public call is synchronous. */
static gp_status_t gp__gpu_finish(gp_stream_t stream, bool sync, const char *func) {
  if (!sync) return GP_SUCCESS;
  GP__TRY(gp__gpu_comm_wait(gp__gpu_stream(stream), gp__gpu_stream_device(stream), func));
  gpuError_t e = gpuStreamSynchronize(gp__gpu_stream(stream));
  if (e != gpuSuccess)
    return gp__gpu_fail(e, gp__gpu_stream_device(stream), func, GP__GPU_STR(gpuStreamSynchronize));
  return GP_SUCCESS;
}

gp_status_t gp__be_memcpy_2d_async(void *dst, size_t dpitch, const void *src, size_t spitch,
                                   size_t width, size_t height, gp_stream_t stream, bool sync) {
  int dev = gp__gpu_stream_device(stream);
  gpuStream_t s = gp__gpu_stream(stream);
  /* A contiguous region is one linear copy: 2D copies limit the pitch (cudaDevAttrMaxPitch),
   * which a large 1D copy would exceed. */
  if (height == 1 || (dpitch == width && spitch == width))
    GP__GPU_TRY_DEV(dev, gpuMemcpyAsync, (dst, src, width * height, gpuMemcpyDefault, s));
  else
    GP__GPU_TRY_DEV(dev, gpuMemcpy2DAsync,
                    (dst, dpitch, src, spitch, width, height, gpuMemcpyDefault, s));
  return gp__gpu_finish(stream, sync, __func__);
}

gp_status_t gp__be_memcpy_peer_async(void *dst, int dst_dev, const void *src, int src_dev,
                                     size_t bytes, gp_stream_t stream, bool sync) {
  GP__GPU_TRY_DEV(gp__gpu_stream_device(stream), gpuMemcpyPeerAsync,
                  (dst, dst_dev, src, src_dev, bytes, gp__gpu_stream(stream)));
  return gp__gpu_finish(stream, sync, __func__);
}

gp_status_t gp__be_memset_async(void *ptr, int value, size_t bytes, gp_stream_t stream,
                                bool sync) {
  GP__GPU_TRY_DEV(gp__gpu_stream_device(stream), gpuMemsetAsync,
                  (ptr, value, bytes, gp__gpu_stream(stream)));
  return gp__gpu_finish(stream, sync, __func__);
}

gp_status_t gp__be_memset_d32_async(void *ptr, uint32_t value, size_t count, gp_stream_t stream,
                                    bool sync) {
  int dev = gp__gpu_stream_device(stream);
  gpuStream_t s = gp__gpu_stream(stream);
  uint32_t byte = value & 0xffu;
  /* A word of four equal bytes is a byte fill: no driver entry point needed. */
  if (value == byte * 0x01010101u)
    GP__GPU_TRY_DEV(dev, gpuMemsetAsync, (ptr, (int)byte, count * 4, s));
  else
    GP__GPU_TRY_NAMED(dev, gpuMemsetD32AsyncName, gpuMemsetD32Async(ptr, value, count, s));
  return gp__gpu_finish(stream, sync, __func__);
}

gp_status_t gp__be_mem_get_info(size_t *free_bytes, size_t *total_bytes) {
  size_t f = 0, t = 0;
  GP__GPU_TRY(gpuMemGetInfo, (&f, &t));
  if (free_bytes) *free_bytes = f;
  if (total_bytes) *total_bytes = t;
  return GP_SUCCESS;
}

/* ---- device variables -------------------------------------------------------------- */

gp_status_t gp__be_symbol_address(void **ptr, gp_symbol_t symbol) {
  GP__GPU_TRY(gpuGetSymbolAddress, (ptr, symbol->address));
  return GP_SUCCESS;
}

gp_status_t gp__be_memcpy_symbol_async(void *mem, gp_symbol_t symbol, size_t bytes, size_t offset,
                                       bool to_symbol, gp_stream_t stream, bool sync) {
  int dev = gp__gpu_stream_device(stream);
  gpuStream_t s = gp__gpu_stream(stream);
  if (to_symbol)
    GP__GPU_TRY_DEV(dev, gpuMemcpyToSymbolAsync, (symbol->address, mem, bytes, offset, gpuMemcpyDefault, s));
  else
    GP__GPU_TRY_DEV(dev, gpuMemcpyFromSymbolAsync, (mem, symbol->address, bytes, offset, gpuMemcpyDefault, s));
  return gp__gpu_finish(stream, sync, __func__);
}
