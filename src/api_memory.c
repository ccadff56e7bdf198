/*
 * api_memory.c - public entry points for memory: allocation, free, copies, sets and
 * pointer queries. Every allocation gpuport hands out goes in the allocation registry
 * (internal.h), which is what lets a foreign, double, interior or mismatched free be an
 * error instead of a crash, and lets copies check their ranges (docs/design/API.md "Memory").
 */
#include <stdint.h>
#include <string.h>
#include "api.h"

/* ---- frees: one claim path for every release function ------------------------------ */

static const char *alloc_fn(gp__alloc_kind_t kind) {
  switch (kind) {
    case GP__ALLOC_HOST: return "gp_malloc_host";
    case GP__ALLOC_MANAGED: return "gp_malloc_managed";
    case GP__ALLOC_REGISTERED: return "gp_host_register";
    default: return "gp_malloc";
  }
}

static const char *release_fn(gp__alloc_kind_t kind) {
  switch (kind) {
    case GP__ALLOC_HOST: return "gp_free_host";
    case GP__ALLOC_REGISTERED: return "gp_host_unregister";
    default: return "gp_free";
  }
}

static gp_status_t not_ours(const char *func, const void *ptr) {
  gp_pointer_attributes_t a;
  gp_pointer_attributes_init(&a);
  if (gp__be_pointer_native(ptr, &a)) {
    bool host = a.type == GP_MEMORY_HOST;
    const char *native = GP__BACKEND == GP_BACKEND_HIP ? (host ? "hipHostFree" : "hipFree")
                                                       : (host ? "cudaFreeHost" : "cudaFree");
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'ptr' (%p) was allocated by the native runtime, not by gpuport: free it "
                     "with %s",
                     ptr, native);
  }
  gp__alloc_info_t freed;
  if (gp__be_pointer_freed(ptr, &freed))
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'ptr' (%p) points into device memory that was already freed (%zu bytes "
                     "at %p of device %d)",
                     ptr, freed.bytes, freed.base, freed.device);
  return gp__error(GP_ERROR_INVALID_VALUE, func,
                   "'ptr' (%p) was not allocated by gpuport, or was already freed", ptr);
}

/* Finds ptr, checks it is the start of an allocation of an accepted kind (kinds is a
 * bit mask of 1u << gp__alloc_kind_t), and removes it from the registry. Removal is
 * the atomic claim: of two threads freeing one pointer, exactly one succeeds. */
static gp_status_t claim(const char *func, void *ptr, unsigned kinds, gp__alloc_info_t *out) {
  gp__alloc_info_t info;
  if (!gp__alloc_find(ptr, &info)) return not_ours(func, ptr);
  if (info.base != ptr)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'ptr' (%p) points %zu bytes into an allocation of %zu bytes at %p: "
                     "pass the pointer the allocation returned",
                     ptr, (size_t)((char *)ptr - (char *)info.base), info.bytes, info.base);
  if (!(kinds & (1u << info.kind)))
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'ptr' (%p) was allocated with %s: release it with %s", ptr,
                     alloc_fn(info.kind), release_fn(info.kind));
  if (gp__alloc_unregister(ptr, out) != GP_SUCCESS) return not_ours(func, ptr);
  GP__TRACE(GP__SUB_MEM, "%s: %zu bytes at %p (device %d)", func, info.bytes, ptr, info.device);
  return GP_SUCCESS;
}

/* A release the native runtime refused (during a stream capture, say) leaves the memory
 * allocated: it goes back in the registry, so it can still be freed later. */
static gp_status_t unclaim_on_failure(const gp__alloc_info_t *info, gp_status_t st) {
  if (st != GP_SUCCESS) (void)gp__alloc_register(info->base, info->bytes, info->kind, info->device);
  return st;
}

/* Registers a fresh allocation; undoes it when the registry cannot take it. */
static gp_status_t register_new(void **ptr, void *p, size_t bytes, gp__alloc_kind_t kind) {
  int dev = gp__current_device();
  gp_status_t s = gp__alloc_register(p, bytes, kind, dev);
  if (s != GP_SUCCESS) {
    gp__alloc_info_t info = {p, bytes, kind, dev};
    if (kind == GP__ALLOC_HOST)
      (void)gp__be_free_host(p);
    else
      (void)gp__be_free(p, &info);
    return s;
  }
  GP__TRACE(GP__SUB_MEM, "%s: %zu bytes at %p (device %d)", alloc_fn(kind), bytes, p, dev);
  *ptr = p;
  return GP_SUCCESS;
}

/* ---- allocation --------------------------------------------------------------------- */

GP_API gp_status_t gp_malloc(void **ptr, size_t bytes) {
  GP__CHECK_NOT_NULL(ptr);
  *ptr = NULL;
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__TRY(gp__be_capture_guard(__func__));
  if (bytes == 0) return GP_SUCCESS;
  void *p = NULL;
  GP__TRY(gp__be_malloc(&p, bytes));
  return register_new(ptr, p, bytes, GP__ALLOC_DEVICE);
}

GP_API gp_status_t gp_free(void *ptr) {
  if (ptr == NULL) return GP_SUCCESS;
  GP__TRY(gp__api_init(__func__));
  GP__TRY(gp__be_capture_guard(__func__));
  gp__alloc_info_t info;
  GP__TRY(claim(__func__, ptr, 1u << GP__ALLOC_DEVICE | 1u << GP__ALLOC_MANAGED, &info));
  return unclaim_on_failure(&info, gp__be_free(ptr, &info));
}

/* gp_malloc_host and gp_host_alloc: one path from the backend to the registry. */
static gp_status_t host_alloc(const char *func, void **ptr, size_t bytes, unsigned flags) {
  GP__TRY(gp__api_init(func));
  GP__TRY(gp__be_capture_guard(func));
  if (bytes == 0) return GP_SUCCESS;
  void *p = NULL;
  GP__TRY(gp__be_malloc_host(&p, bytes, flags));
  return register_new(ptr, p, bytes, GP__ALLOC_HOST);
}

GP_API gp_status_t gp_malloc_host(void **ptr, size_t bytes) {
  GP__CHECK_NOT_NULL(ptr);
  *ptr = NULL;
  return host_alloc(__func__, ptr, bytes, GP_HOST_ALLOC_DEFAULT);
}

enum {
  HOST_ALLOC_ALL = GP_HOST_ALLOC_PORTABLE | GP_HOST_ALLOC_MAPPED | GP_HOST_ALLOC_WRITE_COMBINED,
  HOST_REGISTER_ALL = GP_HOST_REGISTER_PORTABLE | GP_HOST_REGISTER_MAPPED |
                      GP_HOST_REGISTER_IO_MEMORY | GP_HOST_REGISTER_READ_ONLY
};

GP_API gp_status_t gp_host_alloc(void **ptr, size_t bytes, unsigned flags) {
  GP__CHECK_NOT_NULL(ptr);
  *ptr = NULL;
  GP__CHECK_ARG((flags & ~(unsigned)HOST_ALLOC_ALL) == 0,
                "'flags' (0x%x) has bits that are not GP_HOST_ALLOC_* values", flags);
  return host_alloc(__func__, ptr, bytes, flags);
}

GP_API gp_status_t gp_host_get_device_pointer(void **dptr, void *host, unsigned flags) {
  GP__CHECK_NOT_NULL(dptr);
  *dptr = NULL;
  GP__CHECK_NOT_NULL(host);
  GP__CHECK_ARG(flags == 0, "'flags' (0x%x) must be 0 (cudaHostGetDevicePointer)", flags);
  GP__TRY(gp__api_init(__func__));
  gp__alloc_info_t info;
  if (!gp__alloc_find(host, &info) ||
      (info.kind != GP__ALLOC_HOST && info.kind != GP__ALLOC_REGISTERED))
    return GP__ERR(GP_ERROR_INVALID_VALUE,
                   "'host' (%p) is not in page-locked host memory (from gp_malloc_host, "
                   "gp_host_alloc or gp_host_register)",
                   host);
  void *base = NULL;
  GP__TRY(gp__be_host_get_device_pointer(&base, info.base));
  *dptr = (char *)base + ((const char *)host - (const char *)info.base);
  return GP_SUCCESS;
}

GP_API gp_status_t gp_free_host(void *ptr) {
  if (ptr == NULL) return GP_SUCCESS;
  GP__TRY(gp__api_init(__func__));
  GP__TRY(gp__be_capture_guard(__func__));
  gp__alloc_info_t info;
  GP__TRY(claim(__func__, ptr, 1u << GP__ALLOC_HOST, &info));
  return unclaim_on_failure(&info, gp__be_free_host(ptr));
}

GP_API gp_status_t gp_malloc_managed(void **ptr, size_t bytes) {
  GP__CHECK_NOT_NULL(ptr);
  *ptr = NULL;
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__TRY(gp__be_capture_guard(__func__));
  if (bytes == 0) return GP_SUCCESS;
  void *p = NULL;
  GP__TRY(gp__be_malloc_managed(&p, bytes));
  return register_new(ptr, p, bytes, GP__ALLOC_MANAGED);
}

static gp_status_t host_register(const char *func, void *ptr, size_t bytes, unsigned flags) {
  if (ptr == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "argument 'ptr' is NULL");
  if (bytes == 0) return gp__error(GP_ERROR_INVALID_VALUE, func, "'bytes' is 0");
  if (bytes - 1 > UINTPTR_MAX - (uintptr_t)ptr)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'ptr' + 'bytes' (%p + %zu) wraps around the address space", ptr, bytes);
  GP__TRY(gp__api_init(func));
  GP__TRY(gp__be_capture_guard(func));
  gp__alloc_info_t info;
  /* Any overlap, including a registered range strictly inside the new one: the
   * registry's entries must stay disjoint for its lookups to be right. */
  if (gp__alloc_find_overlap(ptr, bytes, &info))
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'ptr' range [%p, +%zu) overlaps memory from %s (%zu bytes at %p)", ptr,
                     bytes, alloc_fn(info.kind), info.bytes, info.base);
  GP__TRY(gp__be_host_register(ptr, bytes, flags));
  gp_status_t s = gp__alloc_register(ptr, bytes, GP__ALLOC_REGISTERED, gp__current_device());
  if (s != GP_SUCCESS) (void)gp__be_host_unregister(ptr);
  return s;
}

GP_API gp_status_t gp_host_register(void *ptr, size_t bytes) {
  return host_register(__func__, ptr, bytes, GP_HOST_REGISTER_DEFAULT);
}

GP_API gp_status_t gp_host_register_flags(void *ptr, size_t bytes, unsigned flags) {
  GP__CHECK_ARG((flags & ~(unsigned)HOST_REGISTER_ALL) == 0,
                "'flags' (0x%x) has bits that are not GP_HOST_REGISTER_* values", flags);
  return host_register(__func__, ptr, bytes, flags);
}

GP_API gp_status_t gp_host_unregister(void *ptr) {
  GP__CHECK_NOT_NULL(ptr);
  GP__TRY(gp__api_init(__func__));
  GP__TRY(gp__be_capture_guard(__func__));
  gp__alloc_info_t info;
  GP__TRY(claim(__func__, ptr, 1u << GP__ALLOC_REGISTERED, &info));
  return unclaim_on_failure(&info, gp__be_host_unregister(ptr));
}

GP_API gp_status_t gp_malloc_async(void **ptr, size_t bytes, gp_stream_t stream) {
  GP__CHECK_NOT_NULL(ptr);
  *ptr = NULL;
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  if (bytes == 0) return GP_SUCCESS;
  void *p = NULL;
  GP__TRY(gp__be_malloc_async(&p, bytes, s));
  return register_new(ptr, p, bytes, GP__ALLOC_DEVICE);
}

GP_API gp_status_t gp_free_async(void *ptr, gp_stream_t stream) {
  GP__TRY(gp__api_init(__func__));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  if (ptr == NULL) return GP_SUCCESS;
  gp__alloc_info_t info;
  GP__TRY(claim(__func__, ptr, 1u << GP__ALLOC_DEVICE, &info));
  gp_status_t st = gp__be_free_async(ptr, s);
  if (st != GP_SUCCESS) (void)gp__alloc_register(info.base, info.bytes, info.kind, info.device);
  return st;
}

/* ---- memory pools ----------------------------------------------------------------------- */

GP_API gp_status_t gp_device_get_default_mem_pool(gp_mem_pool_t *pool, int device) {
  GP__CHECK_NOT_NULL(pool);
  *pool = NULL;
  GP__TRY(gp__api_check_device(__func__, "device", device));
  return gp__be_device_get_default_mem_pool(pool, device);
}

static bool pool_attr_is_int(gp_mem_pool_attr_t attr) {
  return attr == GP_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
         attr == GP_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC ||
         attr == GP_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

static gp_status_t pool_attr_check(const char *func, gp_mem_pool_t pool, gp_mem_pool_attr_t attr,
                                   const void *value) {
  GP__TRY(gp__api_init(func));
  if (pool == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'pool' is NULL");
  if (value == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'value' is NULL");
  if (!pool_attr_is_int(attr) && attr != GP_MEM_POOL_ATTR_RELEASE_THRESHOLD)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'attr' is %d, not a gp_mem_pool_attr_t (cudaMemPoolAttr) gpuport knows",
                     (int)attr);
  return GP_SUCCESS;
}

GP_API gp_status_t gp_mem_pool_set_attribute(gp_mem_pool_t pool, gp_mem_pool_attr_t attr, void *value) {
  GP__TRY(pool_attr_check(__func__, pool, attr, value));
  if (pool_attr_is_int(attr) && *(const int *)value != 0 && *(const int *)value != 1)
    return gp__error(GP_ERROR_INVALID_VALUE, __func__,
                     "a reuse policy is 0 (off) or 1 (on), not %d", *(const int *)value);
  return gp__be_mem_pool_set_attribute(pool, attr, value);
}

GP_API gp_status_t gp_mem_pool_get_attribute(gp_mem_pool_t pool, gp_mem_pool_attr_t attr, void *value) {
  GP__TRY(pool_attr_check(__func__, pool, attr, value));
  return gp__be_mem_pool_get_attribute(pool, attr, value);
}

/* ---- copies and sets ------------------------------------------------------------------ */

/* Bytes spanned by height rows of width bytes, pitch apart; false on overflow. */
static bool extent_2d(size_t pitch, size_t width, size_t height, size_t *extent) {
  if (height == 0 || width == 0) {
    *extent = 0;
    return true;
  }
  if (height - 1 > (SIZE_MAX - width) / pitch) return false;
  *extent = (height - 1) * pitch + width;
  return true;
}

static gp_status_t check_copy(const char *func, void *dst, const void *src, size_t bytes) {
  if (bytes == 0) return GP_SUCCESS;
  if (dst == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'dst' is NULL (bytes = %zu)", bytes);
  if (src == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'src' is NULL (bytes = %zu)", bytes);
  GP__TRY(gp__api_check_range(func, "dst", dst, bytes));
  return gp__api_check_range(func, "src", src, bytes);
}

static gp_status_t check_copy_2d(const char *func, void *dst, size_t dpitch, const void *src,
                                 size_t spitch, size_t width, size_t height) {
  if (width == 0 || height == 0) return GP_SUCCESS;
  if (dst == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'dst' is NULL");
  if (src == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'src' is NULL");
  if (dpitch < width)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'dpitch' (%zu) is less than 'width_bytes' (%zu)", dpitch, width);
  if (spitch < width)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'spitch' (%zu) is less than 'width_bytes' (%zu)", spitch, width);
  size_t dext, sext;
  if (!extent_2d(dpitch, width, height, &dext) || !extent_2d(spitch, width, height, &sext))
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'height' (%zu) rows of the given pitches overflow the address space",
                     height);
  GP__TRY(gp__api_check_range(func, "dst", dst, dext));
  return gp__api_check_range(func, "src", src, sext);
}

/* A synchronous call waits for earlier work, so it returns that work's faults. */
static gp_status_t sync_result(const char *func, gp_status_t s) {
  if (s != GP_SUCCESS) return s;
  return gp__async_error_report(gp__current_device(), func);
}

GP_API gp_status_t gp_memcpy(void *dst, const void *src, size_t bytes) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__TRY(gp__be_capture_guard(__func__));
  GP__TRY(check_copy(__func__, dst, src, bytes));
  if (bytes == 0) return GP_SUCCESS;
  return sync_result(__func__, gp__be_memcpy_2d_async(dst, bytes, src, bytes, bytes, 1,
                                                      GP_STREAM_LEGACY, true));
}

GP_API gp_status_t gp_memcpy_async(void *dst, const void *src, size_t bytes, gp_stream_t stream) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  GP__TRY(check_copy(__func__, dst, src, bytes));
  if (bytes == 0) return GP_SUCCESS;
  return gp__be_memcpy_2d_async(dst, bytes, src, bytes, bytes, 1, s, false);
}

GP_API gp_status_t gp_memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                                size_t width_bytes, size_t height) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__TRY(gp__be_capture_guard(__func__));
  GP__TRY(check_copy_2d(__func__, dst, dpitch, src, spitch, width_bytes, height));
  if (width_bytes == 0 || height == 0) return GP_SUCCESS;
  return sync_result(__func__, gp__be_memcpy_2d_async(dst, dpitch, src, spitch, width_bytes,
                                                      height, GP_STREAM_LEGACY, true));
}

GP_API gp_status_t gp_memcpy_2d_async(void *dst, size_t dpitch, const void *src, size_t spitch,
                                      size_t width_bytes, size_t height, gp_stream_t stream) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  GP__TRY(check_copy_2d(__func__, dst, dpitch, src, spitch, width_bytes, height));
  if (width_bytes == 0 || height == 0) return GP_SUCCESS;
  return gp__be_memcpy_2d_async(dst, dpitch, src, spitch, width_bytes, height, s, false);
}

/* A registered device allocation must live on the device the caller names. */
static gp_status_t check_on_device(const char *func, const char *arg, const void *p, int dev) {
  gp__alloc_info_t info;
  if (gp__alloc_find(p, &info) && info.kind == GP__ALLOC_DEVICE && info.device != dev)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'%s' (%p) is memory of device %d, but its device argument says %d", arg,
                     p, info.device, dev);
  return GP_SUCCESS;
}

static gp_status_t check_peer(const char *func, void *dst, int dst_device, const void *src,
                              int src_device, size_t bytes) {
  GP__TRY(gp__api_check_device(func, "dst_device", dst_device));
  GP__TRY(gp__api_check_device(func, "src_device", src_device));
  GP__TRY(check_copy(func, dst, src, bytes));
  if (bytes == 0) return GP_SUCCESS;
  /* Both sides are device memory (cudaMemcpyPeer: cudaErrorInvalidValue otherwise). */
  GP__TRY(gp__api_check_device_range(func, "dst", dst, bytes));
  GP__TRY(gp__api_check_device_range(func, "src", src, bytes));
  GP__TRY(check_on_device(func, "dst", dst, dst_device));
  return check_on_device(func, "src", src, src_device);
}

GP_API gp_status_t gp_memcpy_peer(void *dst, int dst_device, const void *src, int src_device,
                                  size_t bytes) {
  GP__TRY(check_peer(__func__, dst, dst_device, src, src_device, bytes));
  GP__TRY(gp__be_capture_guard(__func__));
  if (bytes == 0) return GP_SUCCESS;
  return sync_result(__func__, gp__be_memcpy_peer_async(dst, dst_device, src, src_device,
                                                        bytes, GP_STREAM_LEGACY, true));
}

GP_API gp_status_t gp_memcpy_peer_async(void *dst, int dst_device, const void *src,
                                        int src_device, size_t bytes, gp_stream_t stream) {
  GP__TRY(check_peer(__func__, dst, dst_device, src, src_device, bytes));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  if (bytes == 0) return GP_SUCCESS;
  return gp__be_memcpy_peer_async(dst, dst_device, src, src_device, bytes, s, false);
}

static gp_status_t check_set(const char *func, void *ptr, size_t bytes) {
  if (bytes == 0) return GP_SUCCESS;
  if (ptr == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'ptr' is NULL (bytes = %zu)", bytes);
  return gp__api_check_device_range(func, "ptr", ptr, bytes);
}

static gp_status_t check_set_d32(const char *func, void *ptr, size_t count) {
  if (count == 0) return GP_SUCCESS;
  if (ptr == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'ptr' is NULL (count = %zu)", count);
  if ((uintptr_t)ptr % 4 != 0)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "'ptr' (%p) is not 4-byte aligned", ptr);
  if (count > SIZE_MAX / 4)
    return gp__error(GP_ERROR_INVALID_VALUE, func, "'count' (%zu) words overflow the address space",
                     count);
  return gp__api_check_device_range(func, "ptr", ptr, count * 4);
}

GP_API gp_status_t gp_memset(void *ptr, int value, size_t bytes) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__TRY(gp__be_capture_guard(__func__));
  GP__TRY(check_set(__func__, ptr, bytes));
  if (bytes == 0) return GP_SUCCESS;
  return sync_result(__func__, gp__be_memset_async(ptr, value, bytes, GP_STREAM_LEGACY, true));
}

GP_API gp_status_t gp_memset_async(void *ptr, int value, size_t bytes, gp_stream_t stream) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  GP__TRY(check_set(__func__, ptr, bytes));
  if (bytes == 0) return GP_SUCCESS;
  return gp__be_memset_async(ptr, value, bytes, s, false);
}

GP_API gp_status_t gp_memset_d32(void *ptr, uint32_t value, size_t count) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__TRY(gp__be_capture_guard(__func__));
  GP__TRY(check_set_d32(__func__, ptr, count));
  if (count == 0) return GP_SUCCESS;
  return sync_result(__func__,
                     gp__be_memset_d32_async(ptr, value, count, GP_STREAM_LEGACY, true));
}

GP_API gp_status_t gp_memset_d32_async(void *ptr, uint32_t value, size_t count,
                                       gp_stream_t stream) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  GP__TRY(check_set_d32(__func__, ptr, count));
  if (count == 0) return GP_SUCCESS;
  return gp__be_memset_d32_async(ptr, value, count, s, false);
}

/* ---- queries ---------------------------------------------------------------------------- */

GP_API gp_status_t gp_mem_get_info(size_t *free_bytes, size_t *total_bytes) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  size_t f = 0, t = 0;
  GP__TRY(gp__be_mem_get_info(&f, &t));
  if (free_bytes) *free_bytes = f;
  if (total_bytes) *total_bytes = t;
  return GP_SUCCESS;
}

static const size_t g_attr_ends[] = {
    offsetof(gp_pointer_attributes_t, type) + sizeof(gp_memory_type_t),
    offsetof(gp_pointer_attributes_t, device) + sizeof(int),
    offsetof(gp_pointer_attributes_t, device_pointer) + sizeof(void *),
    offsetof(gp_pointer_attributes_t, host_pointer) + sizeof(void *),
    offsetof(gp_pointer_attributes_t, native) + sizeof(int),
};

/* What the registry knows, in cudaPointerGetAttributes' terms: device memory has no
 * host address, host and managed memory have both. */
static void attrs_from_registry(gp_pointer_attributes_t *a, const gp__alloc_info_t *info,
                                const void *ptr) {
  static const gp_memory_type_t types[] = {
      [GP__ALLOC_DEVICE] = GP_MEMORY_DEVICE, [GP__ALLOC_HOST] = GP_MEMORY_HOST,
      [GP__ALLOC_MANAGED] = GP_MEMORY_MANAGED, [GP__ALLOC_REGISTERED] = GP_MEMORY_HOST};
  a->type = types[info->kind];
  a->device = info->device;
  a->device_pointer = (void *)ptr;
  a->host_pointer = info->kind == GP__ALLOC_DEVICE ? NULL : (void *)ptr;
  a->native = 0;
}

GP_API gp_status_t gp_pointer_get_attributes(gp_pointer_attributes_t *attr, const void *ptr) {
  GP__CHECK_NOT_NULL(attr);
  GP__CHECK_ARG(attr->struct_size >= g_attr_ends[0],
                "'attr->struct_size' is %zu, too small for the first field (initialise "
                "'attr' with gp_pointer_attributes_init())",
                attr->struct_size);
  GP__CHECK_NOT_NULL(ptr);
  GP__TRY(gp__api_init(__func__));
  gp_pointer_attributes_t full;
  gp_pointer_attributes_init(&full);
  gp__alloc_info_t info;
  if (gp__alloc_find(ptr, &info)) {
    attrs_from_registry(&full, &info, ptr);
  } else if (gp__be_pointer_native(ptr, &full)) {
    full.native = 1;
  } else {
    full.type = GP_MEMORY_UNREGISTERED;
    full.device = -1;
    full.host_pointer = (void *)ptr;
  }
  gp__api_copy_fields(attr, &full, attr->struct_size, g_attr_ends,
                      sizeof(g_attr_ends) / sizeof(g_attr_ends[0]));
  return GP_SUCCESS;
}
