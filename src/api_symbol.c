/*
 * api_symbol.c - public entry points for device variables (`__constant__` and
 * `__device__` variables exported with GP_SYMBOL_EXPORT): copies to and from them,
 * their address and size. The descriptor (found in the descriptor table before it is
 * read) and the byte range are checked here, once, for every backend (docs/design/API.md "Memory").
 */
#include "api.h"

static gp_status_t check_symbol(const char *func, gp_symbol_t sym) {
  if (sym == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'symbol' is NULL");
  /* Looked up before it is read: a stray pointer is an error, not a fault. */
  if (!gp__desc_find(sym, GP__DESC_SYMBOL, NULL))
    return gp__error(GP_ERROR_INVALID_HANDLE, func,
                     "'symbol' (%p) is not a device variable of this program (name variables "
                     "exported with GP_SYMBOL_EXPORT() with GP_SYMBOL_REF())",
                     (const void *)sym);
  if (sym->magic != GP_SYMBOL_MAGIC)
    return gp__error(GP_ERROR_INVALID_HANDLE, func,
                     "'symbol' (%p) is not a device-variable descriptor (magic 0x%08x): name "
                     "variables with GP_SYMBOL_REF()",
                     (const void *)sym, sym->magic);
  if (sym->abi_version != GP_KERNEL_ABI_VERSION)
    return gp__error(GP_ERROR_INVALID_IMAGE, func,
                     "'symbol' '%s' has descriptor ABI version %u; this library reads %u: rebuild "
                     "its source",
                     sym->name ? sym->name : "?", sym->abi_version, GP_KERNEL_ABI_VERSION);
  if (sym->backend != GP__BACKEND || sym->address == NULL)
    return gp__error(GP_ERROR_INVALID_IMAGE, func,
                     "'symbol' '%s' was compiled for backend %d, this library is the %s backend",
                     sym->name ? sym->name : "?", sym->backend, gp_backend_name());
  return GP_SUCCESS;
}

static gp_status_t check_range(const char *func, gp_symbol_t sym, const char *arg, const void *mem,
                               size_t bytes, size_t offset) {
  if (offset > sym->size || bytes > sym->size - offset)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'offset' (%zu) + 'bytes' (%zu) exceed the %llu bytes of variable '%s'", offset,
                     bytes, (unsigned long long)sym->size, sym->name ? sym->name : "?");
  if (bytes == 0) return GP_SUCCESS;
  if (mem == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'%s' is NULL (bytes = %zu)", arg, bytes);
  return gp__api_check_range(func, arg, mem, bytes);
}

/* One path for the four copies; sync copies run on the legacy default stream and
 * return the faults of earlier work, as gp_memcpy does. */
static gp_status_t symbol_copy(const char *func, void *mem, gp_symbol_t sym, size_t bytes,
                               size_t offset, bool to_symbol, gp_stream_t stream, bool sync) {
  int n = 0;
  GP__TRY(gp__api_device_count(func, &n));
  GP__STREAM_REF gp_stream_t s = GP_STREAM_LEGACY;
  if (!sync) GP__TRY(gp__stream_resolve(stream, func, &s));
  GP__TRY(check_symbol(func, sym));
  GP__TRY(check_range(func, sym, to_symbol ? "src" : "dst", mem, bytes, offset));
  if (bytes == 0) return GP_SUCCESS;
  GP__TRY(gp__be_memcpy_symbol_async(mem, sym, bytes, offset, to_symbol, s, sync));
  return sync ? gp__async_error_report(gp__current_device(), func) : GP_SUCCESS;
}

GP_API gp_status_t gp_memcpy_to_symbol(gp_symbol_t symbol, const void *src, size_t bytes,
                                       size_t offset) {
  return symbol_copy(__func__, (void *)(uintptr_t)src, symbol, bytes, offset, true, NULL, true);
}

GP_API gp_status_t gp_memcpy_from_symbol(void *dst, gp_symbol_t symbol, size_t bytes, size_t offset) {
  return symbol_copy(__func__, dst, symbol, bytes, offset, false, NULL, true);
}

GP_API gp_status_t gp_memcpy_to_symbol_async(gp_symbol_t symbol, const void *src, size_t bytes,
                                             size_t offset, gp_stream_t stream) {
  return symbol_copy(__func__, (void *)(uintptr_t)src, symbol, bytes, offset, true, stream, false);
}

GP_API gp_status_t gp_memcpy_from_symbol_async(void *dst, gp_symbol_t symbol, size_t bytes,
                                               size_t offset, gp_stream_t stream) {
  return symbol_copy(__func__, dst, symbol, bytes, offset, false, stream, false);
}

GP_API gp_status_t gp_symbol_address(void **ptr, gp_symbol_t symbol) {
  GP__CHECK_NOT_NULL(ptr);
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__TRY(check_symbol(__func__, symbol));
  return gp__be_symbol_address(ptr, symbol);
}

GP_API gp_status_t gp_symbol_size(size_t *bytes, gp_symbol_t symbol) {
  GP__CHECK_NOT_NULL(bytes);
  GP__TRY(check_symbol(__func__, symbol));
  *bytes = (size_t)symbol->size;
  return GP_SUCCESS;
}
