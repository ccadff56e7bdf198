/*
 * api_device.c - public entry points for the backend and version queries and for
 * devices: argument checks once, here, then the backend (gp__be_*). Also the helpers
 * of api.h that the other api_*.c files share.
 */
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include "api.h"

/* ---- shared helpers --------------------------------------------------------------- */

gp_status_t gp__api_init(const char *func) {
  /* The backend sets its own message; func names the call in the TRACE breadcrumb. */
  gp_status_t s = gp__be_init();
  if (s != GP_SUCCESS) GP__TRACE(GP__SUB_INIT, "%s: backend initialisation failed", func);
  return s;
}

/* The device count never changes in a process, and CUDA's query is not free. */
static pthread_mutex_t g_count_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_count = -1;

gp_status_t gp__api_device_count(const char *func, int *count) {
  GP__TRY(gp__api_init(func));
  pthread_mutex_lock(&g_count_mu);
  int n = g_count;
  pthread_mutex_unlock(&g_count_mu);
  if (n < 0) {
    gp_status_t s = gp__be_device_count(&n);
    if (s != GP_SUCCESS && s != GP_ERROR_NO_DEVICE) return s;
    if (s == GP_ERROR_NO_DEVICE) n = 0;
    pthread_mutex_lock(&g_count_mu);
    g_count = n;
    pthread_mutex_unlock(&g_count_mu);
  }
  *count = n;
  if (n == 0)
    return gp__error(GP_ERROR_NO_DEVICE, func, "no %s device is present (or no driver)",
                     gp_backend_name());
  return GP_SUCCESS;
}

gp_status_t gp__api_check_device(const char *func, const char *arg, int dev) {
  int n = 0;
  GP__TRY(gp__api_device_count(func, &n));
  if (dev < 0 || dev >= n)
    return gp__error(GP_ERROR_INVALID_DEVICE, func, "'%s' is %d; devices are 0..%d", arg, dev,
                     n - 1);
  return GP_SUCCESS;
}

/* Properties never change either; 64 covers every machine we know (and the CPU
 * backend's maximum). Larger ordinals are queried each time. */
#define GP__PROPS_CACHED 64
static pthread_mutex_t g_props_mu = PTHREAD_MUTEX_INITIALIZER;
static gp_device_props_t g_props[GP__PROPS_CACHED];
static bool g_props_valid[GP__PROPS_CACHED];

gp_status_t gp__api_props(const char *func, int dev, const gp_device_props_t **props) {
  GP__TRY(gp__api_check_device(func, "device", dev));
  if (dev >= GP__PROPS_CACHED) { /* into the calling thread's state */
    gp__thread_t *t = gp__thread();
    if (t == NULL)
      return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory for the properties of device %d",
                       dev);
    gp_device_props_init(&t->props);
    GP__TRY(gp__be_device_get_props(&t->props, dev));
    *props = &t->props;
    return GP_SUCCESS;
  }
  pthread_mutex_lock(&g_props_mu);
  bool valid = g_props_valid[dev];
  pthread_mutex_unlock(&g_props_mu);
  if (!valid) {
    gp_device_props_t p;
    gp_device_props_init(&p);
    GP__TRY(gp__be_device_get_props(&p, dev));
    pthread_mutex_lock(&g_props_mu);
    if (!g_props_valid[dev]) { /* another thread may have filled it meanwhile, and readers
                                * read it without the lock once it is valid */
      g_props[dev] = p;
      g_props_valid[dev] = true;
    }
    pthread_mutex_unlock(&g_props_mu);
  }
  /* Entries are written once, before valid is set, and never again. */
  *props = &g_props[dev];
  return GP_SUCCESS;
}

/* gp__api_check_range; *known tells whether the registry holds ptr. */
static gp_status_t check_range(const char *func, const char *arg, const void *ptr, size_t extent,
                               bool *known) {
  gp__alloc_info_t info;
  *known = false;
  if (extent == 0) return GP_SUCCESS;
  /* No memory ends past the top of the address space: such an extent is a size gone
   * negative ((size_t)-1), caught here even for memory gpuport does not know. */
  if (extent - 1 > UINTPTR_MAX - (uintptr_t)ptr)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'%s' range of %zu bytes at %p wraps around the address space", arg,
                     extent, ptr);
  if (!gp__alloc_find(ptr, &info)) {
    if (gp__be_pointer_freed(ptr, &info))
      return gp__error(GP_ERROR_INVALID_VALUE, func,
                       "'%s' (%p) points into device memory that was freed (%zu bytes at %p "
                       "of device %d): it is no longer a valid pointer",
                       arg, ptr, info.bytes, info.base, info.device);
    return GP_SUCCESS;
  }
  *known = true;
  size_t off = (size_t)((const char *)ptr - (const char *)info.base);
  if (extent > info.bytes - off)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'%s' range of %zu bytes at offset %zu runs past the end of its "
                     "allocation (%zu bytes at %p)",
                     arg, extent, off, info.bytes, info.base);
  return GP_SUCCESS;
}

gp_status_t gp__api_check_range(const char *func, const char *arg, const void *ptr,
                                size_t extent) {
  bool known;
  return check_range(func, arg, ptr, extent, &known);
}

gp_status_t gp__api_check_device_range(const char *func, const char *arg, const void *ptr,
                                       size_t extent) {
  bool known;
  GP__TRY(check_range(func, arg, ptr, extent, &known));
  if (!GP__REGISTRY_COMPLETE || extent == 0 || known) return GP_SUCCESS;
  return gp__error(GP_ERROR_INVALID_VALUE, func,
                   "'%s' (%p) is not device-accessible memory: gpuport neither allocated nor "
                   "registered it (gp_malloc, gp_malloc_async, gp_malloc_managed, "
                   "gp_malloc_host, gp_host_register), so it is plain host memory, on which "
                   "a GPU faults",
                   arg, ptr);
}

void gp__api_copy_fields(void *dst, const void *src, size_t struct_size, const size_t *ends,
                         size_t n_ends) {
  size_t end = sizeof(size_t);
  for (size_t i = 0; i < n_ends && ends[i] <= struct_size; i++) end = ends[i];
  memcpy((char *)dst + sizeof(size_t), (const char *)src + sizeof(size_t),
         end - sizeof(size_t));
}

/* ---- backend and version ---------------------------------------------------------- */

GP_API gp_backend_t gp_backend(void) { return GP__BACKEND; }

GP_API const char *gp_backend_name(void) {
  switch (GP__BACKEND) {
    case GP_BACKEND_CUDA: return "cuda";
    case GP_BACKEND_HIP: return "hip";
    default: return "cpu";
  }
}

GP_API gp_status_t gp_version(int *major, int *minor, int *patch) {
  if (major) *major = GP_VERSION_MAJOR;
  if (minor) *minor = GP_VERSION_MINOR;
  if (patch) *patch = GP_VERSION_PATCH;
  return GP_SUCCESS;
}

/* ---- devices ------------------------------------------------------------------------ */

GP_API gp_status_t gp_device_count(int *count) {
  GP__CHECK_NOT_NULL(count);
  *count = 0;
  return gp__api_device_count(__func__, count);
}

GP_API gp_status_t gp_device_set(int device) {
  GP__TRY(gp__api_check_device(__func__, "device", device));
  GP__TRY(gp__be_device_set(device));
  return gp__set_current_device(device, __func__);
}

GP_API gp_status_t gp_device_get(int *device) {
  GP__CHECK_NOT_NULL(device);
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  *device = gp__current_device();
  return GP_SUCCESS;
}

/* End offsets of gp_device_props_t's fields, in order, for struct_size handling. */
#define GP__END(type, f) (offsetof(type, f) + sizeof(((type *)0)->f))
static const size_t g_props_ends[] = {
    GP__END(gp_device_props_t, name),
    GP__END(gp_device_props_t, arch),
    GP__END(gp_device_props_t, total_memory),
    GP__END(gp_device_props_t, multiprocessor_count),
    GP__END(gp_device_props_t, warp_size),
    GP__END(gp_device_props_t, max_threads_per_block),
    GP__END(gp_device_props_t, max_block_dim),
    GP__END(gp_device_props_t, max_grid_dim),
    GP__END(gp_device_props_t, shared_memory_per_block),
    GP__END(gp_device_props_t, shared_memory_per_block_optin),
    GP__END(gp_device_props_t, l2_cache_size),
    GP__END(gp_device_props_t, clock_rate_khz),
    GP__END(gp_device_props_t, compute_capability_major),
    GP__END(gp_device_props_t, compute_capability_minor),
    GP__END(gp_device_props_t, pci_bus_id),
    GP__END(gp_device_props_t, total_constant_memory),
    GP__END(gp_device_props_t, max_pitch),
    GP__END(gp_device_props_t, regs_per_block),
    GP__END(gp_device_props_t, regs_per_multiprocessor),
    GP__END(gp_device_props_t, memory_clock_rate_khz),
    GP__END(gp_device_props_t, memory_bus_width),
    GP__END(gp_device_props_t, max_threads_per_multiprocessor),
    GP__END(gp_device_props_t, max_blocks_per_multiprocessor),
    GP__END(gp_device_props_t, shared_memory_per_multiprocessor),
    GP__END(gp_device_props_t, reserved_shared_memory_per_block),
    GP__END(gp_device_props_t, persisting_l2_cache_max_size),
    GP__END(gp_device_props_t, kernel_exec_timeout),
    GP__END(gp_device_props_t, integrated),
    GP__END(gp_device_props_t, can_map_host_memory),
    GP__END(gp_device_props_t, compute_mode),
    GP__END(gp_device_props_t, concurrent_kernels),
    GP__END(gp_device_props_t, ecc_enabled),
    GP__END(gp_device_props_t, pci_device_id),
    GP__END(gp_device_props_t, pci_domain_id),
    GP__END(gp_device_props_t, tcc_driver),
    GP__END(gp_device_props_t, async_engine_count),
    GP__END(gp_device_props_t, unified_addressing),
    GP__END(gp_device_props_t, stream_priorities_supported),
    GP__END(gp_device_props_t, global_l1_cache_supported),
    GP__END(gp_device_props_t, local_l1_cache_supported),
    GP__END(gp_device_props_t, managed_memory),
    GP__END(gp_device_props_t, is_multi_gpu_board),
    GP__END(gp_device_props_t, multi_gpu_board_group_id),
    GP__END(gp_device_props_t, host_native_atomic_supported),
    GP__END(gp_device_props_t, single_to_double_precision_perf_ratio),
    GP__END(gp_device_props_t, pageable_memory_access),
    GP__END(gp_device_props_t, concurrent_managed_access),
    GP__END(gp_device_props_t, compute_preemption_supported),
    GP__END(gp_device_props_t, can_use_host_pointer_for_registered_mem),
    GP__END(gp_device_props_t, cooperative_launch),
    GP__END(gp_device_props_t, direct_managed_mem_access_from_host),
    GP__END(gp_device_props_t, memory_pools_supported),
    GP__END(gp_device_props_t, gpu_overlap),
    GP__END(gp_device_props_t, pageable_memory_access_uses_host_page_tables),
    GP__END(gp_device_props_t, max_access_policy_window_size),
};

GP_API gp_status_t gp_device_get_props(gp_device_props_t *props, int device) {
  GP__CHECK_NOT_NULL(props);
  GP__CHECK_ARG(props->struct_size >= g_props_ends[0],
                "'props->struct_size' is %zu, too small for the first field (initialise "
                "'props' with gp_device_props_init())",
                props->struct_size);
  const gp_device_props_t *full;
  GP__TRY(gp__api_props(__func__, device, &full));
  gp__api_copy_fields(props, full, props->struct_size, g_props_ends,
                      sizeof(g_props_ends) / sizeof(g_props_ends[0]));
  return GP_SUCCESS;
}

/* Attributes are int; byte counts past INT_MAX (none today) read as INT_MAX. */
static int attr_int(long long v) { return v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v; }

bool gp__device_props_attr(const gp_device_props_t *p, gp_device_attr_t attr, int *value) {
  switch (attr) {
#define GP__ATTR_GET(name, num, field, text) \
  case GP_DEVICE_ATTR_##name: *value = attr_int((long long)p->field); return true;
    GP_DEVICE_ATTR_LIST(GP__ATTR_GET)
#undef GP__ATTR_GET
  }
  return false;
}

bool gp__device_props_set_attr(gp_device_props_t *p, gp_device_attr_t attr, int value) {
  switch (attr) {
#define GP__ATTR_SET(name, num, field, text) \
  case GP_DEVICE_ATTR_##name: p->field = value; return true;
    GP_DEVICE_ATTR_LIST(GP__ATTR_SET)
#undef GP__ATTR_SET
  }
  return false;
}

GP_API gp_status_t gp_device_get_attribute(int *value, gp_device_attr_t attr, int device) {
  GP__CHECK_NOT_NULL(value);
  *value = 0;
  GP__TRY(gp__api_check_device(__func__, "device", device));
  gp_device_props_t probe;
  int unused;
  gp_device_props_init(&probe);
  GP__CHECK_ARG(gp__device_props_attr(&probe, attr, &unused),
                "'attr' is %d, not a gp_device_attr_t (cudaDeviceAttr) gpuport knows", (int)attr);
  return gp__be_device_get_attribute(value, attr, device);
}

GP_API gp_status_t gp_device_synchronize(void) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__TRY(gp__be_capture_guard(__func__));
  GP__TRY(gp__be_device_synchronize());
  return gp__async_error_report(gp__current_device(), __func__);
}

GP_API gp_status_t gp_device_reset(void) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  GP__TRY(gp__be_capture_guard(__func__));
  return gp__be_device_reset();
}

GP_API gp_status_t gp_device_can_access_peer(int *can_access, int device, int peer) {
  GP__CHECK_NOT_NULL(can_access);
  *can_access = 0;
  GP__TRY(gp__api_check_device(__func__, "device", device));
  GP__TRY(gp__api_check_device(__func__, "peer", peer));
  /* A device is not its own peer: 0 and success, as cudaDeviceCanAccessPeer, so
   * loops over all pairs need no special case. */
  if (device == peer) return GP_SUCCESS;
  return gp__be_device_can_access_peer(can_access, device, peer);
}

GP_API gp_status_t gp_device_enable_peer_access(int peer) {
  GP__TRY(gp__api_check_device(__func__, "peer", peer));
  int cur = gp__current_device();
  GP__CHECK_ARG(peer != cur, "'peer' is %d, the current device itself", peer);
  return gp__be_device_enable_peer_access(peer);
}

GP_API gp_status_t gp_device_set_flags(unsigned flags) {
  const unsigned known = GP_DEVICE_SCHEDULE_MASK | GP_DEVICE_MAP_HOST | GP_DEVICE_LMEM_RESIZE_TO_MAX;
  GP__CHECK_ARG((flags & ~known) == 0,
                "'flags' (0x%x) has bits other than GP_DEVICE_SCHEDULE_*, GP_DEVICE_MAP_HOST and "
                "GP_DEVICE_LMEM_RESIZE_TO_MAX",
                flags);
  /* The scheduling values are 0, 1, 2 and 4: two of them together is no value. */
  const unsigned sched = flags & GP_DEVICE_SCHEDULE_MASK;
  GP__CHECK_ARG((sched & (sched - 1)) == 0,
                "'flags' (0x%x) names more than one scheduling value (GP_DEVICE_SCHEDULE_SPIN, "
                "_YIELD, _BLOCKING_SYNC: at most one)",
                flags);
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  return gp__be_device_set_flags(flags);
}

GP_API gp_status_t gp_device_get_flags(unsigned *flags) {
  GP__CHECK_NOT_NULL(flags);
  *flags = 0;
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  return gp__be_device_get_flags(flags);
}

GP_API gp_status_t gp_device_stream_priority_range(int *least, int *greatest) {
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n)); /* the backends ask the current device */
  int l = 0, g = 0;
  GP__TRY(gp__be_stream_priority_range(&l, &g));
  if (least) *least = l;
  if (greatest) *greatest = g;
  return GP_SUCCESS;
}
