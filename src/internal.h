/*
 * internal.h - what every backend-independent source and every backend shares:
 * error reporting, logging, the allocation/handle registries, handle layouts and
 * the backend interface (gp__be_*). Nothing here is public.
 *
 * Data flow (docs/design/ARCHITECTURE.md "Layers"): public call -> argument checks in
 * src/api_*.c -> gp__be_* of the backend compiled in (src/cpu/ or src/gpu/) -> native
 * runtime.
 * The api layer checks every argument once; gp__be_* may assume valid arguments.
 */
#ifndef GP_INTERNAL_H
#define GP_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <gpuport.h>
#include <gpuport/kernel_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- which backend this object is compiled for (set by the Makefile) ---------- */
#if defined(GP_BUILD_CUDA)
#define GP__BACKEND GP_BACKEND_CUDA
#elif defined(GP_BUILD_HIP)
#define GP__BACKEND GP_BACKEND_HIP
#else
#define GP__BACKEND GP_BACKEND_CPU
#endif

#define GP__HIDDEN __attribute__((visibility("hidden")))
#define GP__PRINTF(f, a) __attribute__((format(printf, f, a)))

/* ---- errors --------------------------------------------------------------------- */
/* Records the thread-local message "<func>: <formatted text>" and returns status.
 * Every failing public call sets one; the api layer's checks use it directly. */
gp_status_t gp__error(gp_status_t status, const char *func, const char *fmt, ...) GP__PRINTF(3, 4);
#define GP__ERR(status, ...) gp__error((status), __func__, __VA_ARGS__)
/* Clears the thread-local message at the start of a public call. */
void gp__clear_error(void);

/* Internal propagation: returns the status of expr from the enclosing function when it
 * is not GP_SUCCESS, leaving a TRACE breadcrumb (NCCLCHECK's model). */
#define GP__TRY(expr)                                                                     \
  do {                                                                                    \
    gp_status_t gp__s_ = (expr);                                                          \
    if (gp__s_ != GP_SUCCESS) {                                                           \
      gp__log(GP__LOG_TRACE, GP__SUB_ALL, "%s:%d -> %s", __FILE__, __LINE__,              \
              gp_status_name(gp__s_));                                                    \
      return gp__s_;                                                                      \
    }                                                                                     \
  } while (0)

/* Argument checks for the api layer: fail with GP_ERROR_INVALID_VALUE naming the argument. */
#define GP__CHECK_ARG(cond, ...)                                                         \
  do {                                                                                    \
    if (!(cond)) return gp__error(GP_ERROR_INVALID_VALUE, __func__, __VA_ARGS__);        \
  } while (0)
#define GP__CHECK_NOT_NULL(p) GP__CHECK_ARG((p) != NULL, "argument '%s' is NULL", #p)

/* Asynchronous errors, per device (docs/design/API.md "Asynchronous errors"). Raised by work that
 * faulted after its call returned; consumed by synchronising calls. Sticky on the GPU
 * backends. */
void gp__async_error_raise(int device, gp_status_t status, const char *fmt, ...) GP__PRINTF(3, 4);
gp_status_t gp__async_error_peek(int device);
gp_status_t gp__async_error_take(int device); /* clears unless sticky */
/* Returns the pending async error of device (setting the message), or GP_SUCCESS. */
gp_status_t gp__async_error_report(int device, const char *func);
/* Clears a device's pending error, sticky or not (gp_device_reset). */
void gp__async_error_reset(int device);

/* ---- logging (GP_DEBUG, GP_DEBUG_SUBSYS, GP_DEBUG_FILE) --------------------------- */
enum { GP__LOG_NONE = 0, GP__LOG_WARN = 1, GP__LOG_INFO = 2, GP__LOG_TRACE = 3 };
enum {
  GP__SUB_INIT = 1u << 0, GP__SUB_MEM = 1u << 1, GP__SUB_LAUNCH = 1u << 2,
  GP__SUB_GEMM = 1u << 3, GP__SUB_ATTN = 1u << 4, GP__SUB_COMM = 1u << 5,
  GP__SUB_STREAM = 1u << 6, GP__SUB_ALL = 0xffffffffu
};
void gp__log(int level, unsigned subsys, const char *fmt, ...) GP__PRINTF(3, 4);
bool gp__log_enabled(int level, unsigned subsys);
#define GP__INFO(sub, ...) do { if (gp__log_enabled(GP__LOG_INFO, sub)) gp__log(GP__LOG_INFO, sub, __VA_ARGS__); } while (0)
#define GP__WARN(sub, ...) gp__log(GP__LOG_WARN, sub, __VA_ARGS__)
#define GP__TRACE(sub, ...) do { if (gp__log_enabled(GP__LOG_TRACE, sub)) gp__log(GP__LOG_TRACE, sub, __VA_ARGS__); } while (0)

/* Environment helpers: integer value of an environment variable, or def. */
long gp__env_long(const char *name, long def);

/* ---- allocation registry --------------------------------------------------------- */
/* Every allocation gpuport hands out is registered, so gp_free can tell a foreign,
 * double or mismatched free from a good one, memcpy can check ranges, and
 * gp_pointer_get_attributes can answer for interior pointers. Thread-safe. */
typedef enum gp__alloc_kind {
  GP__ALLOC_DEVICE = 1,      /* gp_malloc / gp_malloc_async */
  GP__ALLOC_HOST = 2,        /* gp_malloc_host */
  GP__ALLOC_MANAGED = 3,     /* gp_malloc_managed */
  GP__ALLOC_REGISTERED = 4   /* gp_host_register */
} gp__alloc_kind_t;

typedef struct gp__alloc_info {
  void *base;
  size_t bytes;
  gp__alloc_kind_t kind;
  int device;
} gp__alloc_info_t;

/* Whether the registry knows every byte a kernel may touch: true on the cpu backend,
 * whose only device memory is what gpuport allocated or registered; false on the GPU
 * backends, where other libraries allocate device memory gpuport never sees (cudaMalloc
 * by PyTorch) and HMM or ATS let kernels use plain host memory. Where it is true, memory
 * the registry does not know is refused wherever a GPU needs device-accessible memory
 * (gp__api_check_device_range, src/api.h). */
#define GP__REGISTRY_COMPLETE (GP__BACKEND == GP_BACKEND_CPU)

gp_status_t gp__alloc_register(void *base, size_t bytes, gp__alloc_kind_t kind, int device);
/* Removes the entry whose base is exactly ptr; GP_ERROR_NOT_FOUND when absent. */
gp_status_t gp__alloc_unregister(void *base, gp__alloc_info_t *removed);
/* Finds the allocation containing ptr (interior pointers included). */
bool gp__alloc_find(const void *ptr, gp__alloc_info_t *info);
/* Finds an allocation sharing at least one byte with [ptr, ptr + bytes) (the range must
 * not wrap around the address space). */
bool gp__alloc_find_overlap(const void *ptr, size_t bytes, gp__alloc_info_t *info);
/* Removes and returns (through cb) every allocation of device, for gp_device_reset. */
void gp__alloc_drop_device(int device, void (*cb)(const gp__alloc_info_t *, void *), void *user);

/* ---- handle registry -------------------------------------------------------------- */
/* Live handles (streams, events, graphs, executable graphs, modules, communicators) are
 * kept in a table with a reference count, on every backend, so a destroyed or foreign
 * handle is detected without reading freed memory, and a handle destroyed by one thread
 * while another uses it stays allocated until that use ends:
 *   - a public call takes a reference when it looks the handle up (gp__handle_get,
 *     gp__stream_resolve) and drops it when it no longer uses the handle;
 *   - destroy marks the handle dead (gp__handle_kill): later lookups fail with
 *     GP_ERROR_INVALID_HANDLE; the handle's own reference is dropped;
 *   - the finaliser given at registration (the backend's release of the object) runs
 *     when the last reference goes, in the thread that drops it, outside every lock of
 *     the registry.
 * The registry's lock is a leaf: it may be taken under a backend's locks. */
typedef enum gp__handle_kind {
  GP__H_STREAM = 1, GP__H_EVENT = 2, GP__H_GRAPH = 3, GP__H_GRAPH_EXEC = 4, GP__H_MODULE = 5,
  GP__H_COMM = 6, GP__H_GRAPH_NODE = 7
} gp__handle_kind_t;
/* Releases the object behind a handle; its status is returned by the destroy that drops
 * the last reference (a failure seen by another call is logged). */
typedef gp_status_t (*gp__handle_fini_t)(void *h);
/* Registers h, live, holding its own reference. */
gp_status_t gp__handle_add(const void *h, gp__handle_kind_t kind, gp__handle_fini_t fini);
/* Takes a reference to h when it is a live handle of kind; false otherwise. */
bool gp__handle_acquire(const void *h, gp__handle_kind_t kind);
/* Drops a reference; the finaliser's status when this was the last one, else GP_SUCCESS. */
gp_status_t gp__handle_release(const void *h);
/* Marks h dead and drops its own reference: false when h was not a live handle of kind
 * (a racing destroy won). *fini receives the finaliser's status when the last reference
 * went here (a caller without a reference of its own), else GP_SUCCESS. */
bool gp__handle_kill(const void *h, gp__handle_kind_t kind, gp_status_t *fini);
/* gp__handle_acquire with the api layer's message: GP_ERROR_INVALID_HANDLE naming func
 * and arg when h is NULL, dead or not a handle of kind. */
gp_status_t gp__handle_get(const void *h, gp__handle_kind_t kind, const char *func,
                           const char *arg);
/* A reference released when the variable goes out of scope (every return path):
 *   GP__HANDLE_REF const void *held = NULL;
 *   GP__TRY(gp__handle_hold(event, GP__H_EVENT, __func__, "event", &held));  */
void gp__handle_put_ref(const void *const *held);
#define GP__HANDLE_REF __attribute__((cleanup(gp__handle_put_ref)))
/* gp__handle_get that stores h in *held on success, for GP__HANDLE_REF. */
gp_status_t gp__handle_hold(const void *h, gp__handle_kind_t kind, const char *func,
                            const char *arg, const void **held);

/* ---- kernel and device-variable descriptors ------------------------------------------ */
/* Every descriptor gpuport may read is in a table first: those of the program and its
 * libraries (registered by GP_KERNEL_EXPORT / GP_SYMBOL_EXPORT while their object is
 * loaded: gp__abi_register, gp__cpu_kernel_register), and those a module handed out
 * (owner: the module). A gp_kernel_t or gp_symbol_t is looked up before it is read, so
 * a stray or stale one is GP_ERROR_INVALID_HANDLE, never a read of unmapped memory. */
typedef enum gp__desc_kind { GP__DESC_KERNEL = 1, GP__DESC_SYMBOL = 2 } gp__desc_kind_t;
/* Adds (d, owner) unless present; GP_ERROR_INVALID_HANDLE when owner is not a live
 * module (it is being unloaded). */
gp_status_t gp__desc_add(const void *d, gp__desc_kind_t kind, gp_module_t owner);
/* Removes the entry (d, owner). */
void gp__desc_remove(const void *d, gp_module_t owner);
/* Removes the entries of owner (its module is being unloaded). */
void gp__desc_drop_owner(gp_module_t owner);
/* Removes every entry whose descriptor lies in [lo, hi) (an unloaded object's span). */
void gp__desc_drop_range(uintptr_t lo, uintptr_t hi);
/* Makes owner the owner of the program's entries in [lo, hi): the descriptors a module's
 * object registered while it was being loaded are the module's, so a launch of one holds
 * the module and its unload invalidates them. */
void gp__desc_adopt_range(uintptr_t lo, uintptr_t hi, gp_module_t owner);
/* Whether d is a registered descriptor of kind. When a live module handed it out,
 * *owner receives that module with a reference taken (release it with
 * gp__handle_release), else NULL. owner may be NULL when no reference is wanted. */
bool gp__desc_find(const void *d, gp__desc_kind_t kind, gp_module_t *owner);
/* gp__desc_find for a caller that already holds d's module (an api call that checked the
 * kernel, enqueueing its launch): the reference is taken even when the module was
 * unloaded meanwhile, so queued work keeps the code mapped until it has run. */
bool gp__desc_hold(const void *d, gp__desc_kind_t kind, gp_module_t *owner);

/* ---- the calling thread's state (src/thread.c) ------------------------------------ */
/* The library keeps no thread-local variable but the CPU executor's context
 * (gp__cpu_tls, docs/LAUNCH_ABI.md section 3): every thread-local of an ELF module shares
 * one TLS block, and the context's initial-exec model puts that whole block in the
 * static TLS that glibc has little of for libraries loaded with dlopen. Everything else
 * per thread lives here, on the heap, made on first use and freed when the thread exits. */
#define GP__MSG_LEN 1024
struct gp__comm_group;
typedef struct gp__thread {
  char message[GP__MSG_LEN];         /* the last failure's message (status.c) */
  gp_status_t last_status;           /* the last failure's status, until gp_get_last_error */
  int device;                        /* the current device (registry.c) */
  int in_host_fn;                    /* cpu: depth of host functions running (cpu/stream.c) */
  int stream_worker;                 /* cpu: this thread is a stream's worker (cpu/stream.c) */
  gp_device_props_t props;           /* properties beyond api_device.c's cache */
  struct gp__comm_group *comm_group; /* the open gp_group_start, made on first use (comm.c) */
} gp__thread_t;
/* The calling thread's state, made on first use; NULL when out of host memory. */
gp__thread_t *gp__thread(void);
/* The calling thread's state if it has one (never allocates). Inline: every launch reads
 * the current device through it. The key is made when the library loads; before that
 * (another object's constructor calling in first) gp__thread_key_ready() makes it. */
extern pthread_key_t gp__thread_key;
extern int gp__thread_key_state; /* 0: not made yet, 1: made, -1: cannot be made (atomic) */
bool gp__thread_key_ready(void);
static inline gp__thread_t *gp__thread_peek(void) {
  int st = __atomic_load_n(&gp__thread_key_state, __ATOMIC_ACQUIRE);
  if (__builtin_expect(st <= 0, 0) && !gp__thread_key_ready()) return NULL;
  return (gp__thread_t *)pthread_getspecific(gp__thread_key);
}
/* States of threads of the process not yet freed (the tests count them). */
long gp__thread_live(void);
/* Frees a group left open by an exiting thread (comm.c); NULL is a no-op. */
void gp__comm_group_free(struct gp__comm_group *g);

/* ---- devices -------------------------------------------------------------------- */
/* The calling thread's current device: 0 for a thread that never chose one (inline:
 * every launch reads it). Setting another device than 0 makes the thread's state:
 * GP_ERROR_OUT_OF_MEMORY (with message) when there is no memory (registry.c). */
static inline int gp__current_device(void) {
  const gp__thread_t *t = gp__thread_peek();
  return t ? t->device : 0;
}
gp_status_t gp__set_current_device(int device, const char *func);

/* ---- stream resolution ------------------------------------------------------------ */
/* Resolves NULL / GP_STREAM_LEGACY / GP_STREAM_PER_THREAD / a handle to the backend's
 * stream object; GP_ERROR_INVALID_HANDLE (with message) for a destroyed or foreign one.
 * A handle is returned with a reference taken (the named default streams are not
 * handles): drop it with gp__stream_put, or declare *out GP__STREAM_REF. */
gp_status_t gp__stream_resolve(gp_stream_t s, const char *func, gp_stream_t *out);
/* Drops the reference gp__stream_resolve took (nothing for the default streams). */
void gp__stream_put(gp_stream_t s);
void gp__stream_put_ref(gp_stream_t *s);
#define GP__STREAM_REF __attribute__((cleanup(gp__stream_put_ref)))

/* ---- backend interface ----------------------------------------------------------- */
/* Implemented once per backend (src/cpu/, src/gpu/). Arguments are already checked.
 * On failure they return the status and set the message with GP__ERR. */
gp_status_t gp__be_init(void);                 /* idempotent, thread-safe */
gp_status_t gp__be_device_count(int *count);
gp_status_t gp__be_device_set(int device);
gp_status_t gp__be_device_get_props(gp_device_props_t *props, int device); /* full struct */
/* One attribute of a checked device; attr is one of GP_DEVICE_ATTR_LIST's. */
gp_status_t gp__be_device_get_attribute(int *value, gp_device_attr_t attr, int device);
/* The props field an attribute names (GP_DEVICE_ATTR_LIST), read (clamped to int) or
 * written: false when attr is not in the list. The one map between the two (api_device.c). */
bool gp__device_props_attr(const gp_device_props_t *props, gp_device_attr_t attr, int *value);
bool gp__device_props_set_attr(gp_device_props_t *props, gp_device_attr_t attr, int value);
gp_status_t gp__be_device_synchronize(void);
gp_status_t gp__be_device_reset(void);
gp_status_t gp__be_device_can_access_peer(int *can, int device, int peer);
gp_status_t gp__be_device_enable_peer_access(int peer);
gp_status_t gp__be_stream_priority_range(int *least, int *greatest);
/* Flags of the current device: checked (GP_DEVICE_* bits, one scheduling value). */
gp_status_t gp__be_device_set_flags(unsigned flags);
gp_status_t gp__be_device_get_flags(unsigned *flags);

gp_status_t gp__be_malloc(void **ptr, size_t bytes);          /* current device */
gp_status_t gp__be_free(void *ptr, const gp__alloc_info_t *info);
gp_status_t gp__be_malloc_host(void **ptr, size_t bytes, unsigned flags); /* GP_HOST_ALLOC_* */
gp_status_t gp__be_free_host(void *ptr);
gp_status_t gp__be_malloc_managed(void **ptr, size_t bytes);
gp_status_t gp__be_host_register(void *ptr, size_t bytes, unsigned flags); /* GP_HOST_REGISTER_* */
/* The device address of the page-locked allocation or registered range at host. */
gp_status_t gp__be_host_get_device_pointer(void **dptr, void *host);
gp_status_t gp__be_host_unregister(void *ptr);
gp_status_t gp__be_malloc_async(void **ptr, size_t bytes, gp_stream_t stream);
gp_status_t gp__be_free_async(void *ptr, gp_stream_t stream);
/* Memory pools: device checked; attr one of gp_mem_pool_attr_t, value not NULL, a reuse
 * policy's value 0 or 1. The backend checks the pool handle. */
gp_status_t gp__be_device_get_default_mem_pool(gp_mem_pool_t *pool, int device);
gp_status_t gp__be_mem_pool_set_attribute(gp_mem_pool_t pool, gp_mem_pool_attr_t attr, void *value);
gp_status_t gp__be_mem_pool_get_attribute(gp_mem_pool_t pool, gp_mem_pool_attr_t attr, void *value);
/* Native allocations the registry does not know (cudaMalloc'd memory): fills attr and
 * returns true when the native runtime recognises ptr. CPU: always false. */
bool gp__be_pointer_native(const void *ptr, gp_pointer_attributes_t *attr);
/* Device or managed memory released by gp_free / gp_free_async (or a device reset) that
 * the backend still holds back, so its addresses cannot belong to anything else yet:
 * true, with the freed allocation in *info, when ptr lies in one. The cpu backend keeps
 * the latest releases so (src/cpu/runtime.c, "freed device memory"); the GPU backends
 * answer false: there the native runtime refuses a freed device pointer itself. */
bool gp__be_pointer_freed(const void *ptr, gp__alloc_info_t *info);
gp_status_t gp__be_memcpy_2d_async(void *dst, size_t dpitch, const void *src, size_t spitch,
                                   size_t width, size_t height, gp_stream_t stream, bool sync);
gp_status_t gp__be_memcpy_peer_async(void *dst, int dst_dev, const void *src, int src_dev,
                                     size_t bytes, gp_stream_t stream, bool sync);
gp_status_t gp__be_memset_async(void *ptr, int value, size_t bytes, gp_stream_t stream, bool sync);
gp_status_t gp__be_memset_d32_async(void *ptr, uint32_t value, size_t count, gp_stream_t stream,
                                    bool sync);
gp_status_t gp__be_mem_get_info(size_t *free_bytes, size_t *total_bytes);

gp_status_t gp__be_stream_create(gp_stream_t *stream, unsigned flags, int priority);
gp_status_t gp__be_stream_destroy(gp_stream_t stream);
gp_status_t gp__be_stream_synchronize(gp_stream_t stream);
gp_status_t gp__be_stream_query(gp_stream_t stream);
gp_status_t gp__be_stream_wait_event(gp_stream_t stream, gp_event_t event);
gp_status_t gp__be_launch_host_func(gp_stream_t stream, void (*fn)(void *), void *user);
/* cb receives stream as the caller gave it (a default stream's name included). */
gp_status_t gp__be_stream_add_callback(gp_stream_t stream, gp_stream_callback_t cb, void *user);
/* Attach of checked managed memory (flags one of GP_MEM_ATTACH_*). */
gp_status_t gp__be_stream_attach_mem_async(gp_stream_t stream, void *ptr, size_t length, unsigned flags);
void *gp__be_stream_native(gp_stream_t stream);
/* The device a checked stream belongs to (the current device for the default streams),
 * or -1 where the backend leaves the device rules to the native runtime: the GPU
 * backends, where CUDA and HIP refuse with their own codes (src/gpu/errors.c maps them),
 * and a wrapped native stream's device is the native runtime's to know. */
int gp__be_stream_device(gp_stream_t stream);
gp_status_t gp__be_stream_wrap(gp_stream_t *stream, void *native);

gp_status_t gp__be_event_create(gp_event_t *event, unsigned flags);
gp_status_t gp__be_event_destroy(gp_event_t event);
gp_status_t gp__be_event_record(gp_event_t event, gp_stream_t stream);
gp_status_t gp__be_event_synchronize(gp_event_t event);
gp_status_t gp__be_event_query(gp_event_t event);
gp_status_t gp__be_event_elapsed_ms(float *ms, gp_event_t start, gp_event_t end);
void *gp__be_event_native(gp_event_t event);
/* The device a checked event was created on, or -1 as gp__be_stream_device. */
int gp__be_event_device(gp_event_t event);
gp_status_t gp__be_event_wrap(gp_event_t *event, void *native);

/* Launch of a checked configuration (grid/block/shared already within limits). */
gp_status_t gp__be_launch(gp_kernel_t kernel, gp_dim3_t grid, gp_dim3_t block,
                          size_t dynamic_shared, gp_stream_t stream, void **args);
gp_status_t gp__be_kernel_set_max_dynamic_shared(gp_kernel_t kernel, size_t bytes);
/* Overwrites the fields of attr the native runtime knows (the api layer filled the rest). */
gp_status_t gp__be_kernel_get_attributes(gp_kernel_attributes_t *attr, gp_kernel_t kernel);
/* The warp width a launch of kernel runs at: its build's, or on the cpu backend with
 * GP_CPU_WARP_SIZE=64 its width-64 sibling's (a plan sizes its blocks in warps of it). */
int gp__be_kernel_warp_size(gp_kernel_t kernel);
/* gp_launch_ex of a checked configuration (stream resolved, cooperative grid within
 * the occupancy limit, cluster dims checked for this backend). */
gp_status_t gp__be_launch_ex(gp_kernel_t kernel, const gp_launch_config_t *config, gp_stream_t stream,
                             void **args);
/* gp__be_occupancy_max_active_blocks: with the module entry points below. */

/* Device variables: the checked symbol's address on the current device, and a copy of
 * bytes at offset between it and mem (to_symbol: mem -> variable). */
gp_status_t gp__be_symbol_address(void **ptr, gp_symbol_t symbol);
gp_status_t gp__be_memcpy_symbol_async(void *mem, gp_symbol_t symbol, size_t bytes, size_t offset,
                                       bool to_symbol, gp_stream_t stream, bool sync);

/* Host-side enqueue of a function on a stream: on the CPU backend the work itself runs
 * in stream order on the stream's worker; on GPU backends (a host callback) it is
 * cudaLaunchHostFunc. Used by the CPU GEMM/attention implementations. The function
 * returns a status; a failure becomes the device's asynchronous error. */
typedef gp_status_t (*gp__host_work_fn)(void *user);
/* Enqueues fn(user) and, when done (or dropped), free(user) if free_user is true.
 * Captured into a graph (gpuport/graph.h), the work runs at every launch of the graph:
 * with free_user, the graph keeps the record as it was when captured (the
 * malloc_usable_size bytes at user) and each run gets a fresh copy of it, so work that
 * consumes its record (a shared counter of work items) replays correctly; the graph
 * frees the record when it is destroyed. Without free_user, fn(user) runs as is at
 * every launch, and user must outlive the graph. */
gp_status_t gp__be_enqueue_host_work(gp_stream_t stream, gp__host_work_fn fn, void *user,
                                     bool free_user);

/* ---- graphs (gpuport/graph.h) ------------------------------------------------------ */
/* Stream capture. The api layer has resolved the stream and rejected the legacy stream. */
gp_status_t gp__be_stream_begin_capture(gp_stream_t stream, gp_capture_mode_t mode);
gp_status_t gp__be_stream_end_capture(gp_stream_t stream, gp_graph_t *graph);
gp_status_t gp__be_stream_is_capturing(gp_stream_t stream, gp_capture_status_t *status);
gp_status_t gp__be_graph_node_count(gp_graph_t graph, size_t *count);
gp_status_t gp__be_graph_instantiate(gp_graph_exec_t *exec, gp_graph_t graph);
gp_status_t gp__be_graph_launch(gp_graph_exec_t exec, gp_stream_t stream);
gp_status_t gp__be_graph_destroy(gp_graph_t graph);
gp_status_t gp__be_graph_exec_destroy(gp_graph_exec_t exec);
/* Explicit construction. The api layer has checked the graph and exec handles, every
 * parameter (kernels, launch configurations, memory ranges) and that deps is not NULL
 * when ndeps > 0; node handles are the backend's to check (the cpu backend's are
 * registry handles of kind GP__H_GRAPH_NODE, the GPU backends' native nodes). */
typedef struct gp__graph_node_desc {
  gp_graph_node_type_t type; /* KERNEL, MEMCPY, MEMSET, HOST or EMPTY */
  union {
    gp_kernel_node_params_t kernel;
    struct { void *dst; const void *src; size_t bytes; } copy;
    gp_memset_params_t set;
    gp_host_node_params_t host;
  } u;
} gp__graph_node_desc_t;
gp_status_t gp__be_graph_create(gp_graph_t *graph);
gp_status_t gp__be_graph_add_node(gp_graph_node_t *node, gp_graph_t graph, const gp_graph_node_t *deps,
                                  size_t ndeps, const gp__graph_node_desc_t *desc);
gp_status_t gp__be_graph_add_dependencies(gp_graph_t graph, const gp_graph_node_t *from,
                                          const gp_graph_node_t *to, size_t n);
gp_status_t gp__be_graph_get_nodes(gp_graph_t graph, gp_graph_node_t *nodes, size_t *count);
gp_status_t gp__be_graph_node_get_type(gp_graph_node_t node, gp_graph_node_type_t *type);
/* Reads (get) or replaces (set) a kernel node's parameters; exactly one is not NULL. */
gp_status_t gp__be_graph_kernel_node_params(gp_graph_node_t node, gp_kernel_node_params_t *get,
                                            const gp_kernel_node_params_t *set);
gp_status_t gp__be_graph_exec_kernel_node_set_params(gp_graph_exec_t exec, gp_graph_node_t node,
                                                     const gp_kernel_node_params_t *params);
/* Fills *info in every case; GP_ERROR_GRAPH_EXEC_UPDATE_FAILURE when the graphs differ. */
gp_status_t gp__be_graph_exec_update(gp_graph_exec_t exec, gp_graph_t graph,
                                     gp_graph_exec_update_result_info_t *info);
/* Called by the api layer first thing in every call a capture forbids (allocation and
 * release, synchronous copies and sets, device synchronisation): GP_ERROR_NOT_SUPPORTED
 * with a message naming func and the capture when the capture modes in force forbid
 * it, after invalidating the calling thread's captures. The CUDA and HIP runtimes
 * apply these rules themselves: there it returns GP_SUCCESS. */
gp_status_t gp__be_capture_guard(const char *func);

/* ---- modules, runtime compilation, occupancy (gpuport/module.h) ------------------------ */
/* Descriptors made by the library for module kernels carry these flags (kernels built
 * with GP_KERNEL_EXPORT have flags 0). Every GPU launch path must honour
 * GP__KFLAG_MODULE: gpu_entry is then a cudaKernel_t (which cudaLaunchKernel and
 * cudaLaunchKernelExC take) or a hipFunction_t (hipModuleLaunchKernel,
 * hipModuleLaunchCooperativeKernel: hipLaunchKernel does not take it). */
#define GP__KFLAG_MODULE 0x1u         /* a module kernel: gpu_entry is the native handle */
#define GP__KFLAG_PARAMS_UNKNOWN 0x2u /* the native runtime could not tell the parameters */
gp_status_t gp__be_module_load(gp_module_t *module, const char *path);
gp_status_t gp__be_module_load_data(gp_module_t *module, const void *image, size_t bytes);
/* GP_ERROR_NOT_FOUND (with message) when the module has no kernel of that name. */
gp_status_t gp__be_module_get_kernel(gp_kernel_t *kernel, gp_module_t module, const char *name);
gp_status_t gp__be_module_unload(gp_module_t module);
gp_status_t gp__be_program_compile(gp_module_t *module, const char *source, const char *name,
                                   const char *const *options, int n_options, char **log);
gp_status_t gp__be_occupancy_max_active_blocks(int *num_blocks, gp_kernel_t kernel,
                                               int block_threads, size_t dynamic_shared);

#ifdef __cplusplus
}
#endif

#endif /* GP_INTERNAL_H */
