/*
 * runtime.c - the CPU backend's devices and memory (gp__be_* of internal.h).
 *
 * GP_CPU_DEVICES virtual devices (default 1, at most 64) share the host's memory and
 * cores; each accounts for the device and managed memory allocated on it, so
 * gp_mem_get_info() behaves like a device of the host's memory size. Device memory
 * is host memory with a small header in front that records its size and device, so a
 * stream-ordered free (which learns nothing but the pointer) can keep the accounting.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "api.h"
#include "cpu.h"
#include "exec.h"

#if defined(__SANITIZE_ADDRESS__)
#define GP__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GP__ASAN 1
#endif
#endif
#ifdef GP__ASAN
#include <sanitizer/asan_interface.h>
#define GP__POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define GP__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define GP__POISON(p, n) ((void)(p), (void)(n))
#define GP__UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#if defined(__x86_64__)
#define GP__CPU_ARCH "cpu-x86_64"
#elif defined(__aarch64__)
#define GP__CPU_ARCH "cpu-aarch64"
#else
#define GP__CPU_ARCH "cpu-unknown"
#endif

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static void freed_atfork_prepare(void);
static void freed_atfork_release(void);
static int g_ndev = 1;
static size_t g_total;                                 /* bytes per virtual device */
static _Atomic size_t g_used[GP__CPU_MAX_DEVICES];     /* device + managed bytes in use */

static void init_once(void) {
  long n = gp__env_long("GP_CPU_DEVICES", 1);
  if (n < 1 || n > GP__CPU_MAX_DEVICES) {
    GP__WARN(GP__SUB_INIT, "GP_CPU_DEVICES=%ld is outside 1..%d; using %d", n,
             GP__CPU_MAX_DEVICES, n < 1 ? 1 : GP__CPU_MAX_DEVICES);
    n = n < 1 ? 1 : GP__CPU_MAX_DEVICES;
  }
  g_ndev = (int)n;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  g_total = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : (size_t)1 << 32;
  /* The stream layer calls the handle registry under its own lock, so its fork handler
   * must take its lock before the registry's: fork runs prepare handlers in reverse
   * order of installation, so the registry's (installed at its first use) goes first. */
  (void)gp__alloc_find(&g_once, NULL);
  /* The held-back frees' lock is a leaf, like the registry's: installed before the
   * stream layer's, its prepare handler runs after the stream layer's. */
  pthread_atfork(freed_atfork_prepare, freed_atfork_release, freed_atfork_release);
  gp__cpu_streams_init(g_ndev);
  GP__INFO(GP__SUB_INIT, "cpu backend: %d virtual device(s), %zu bytes each", g_ndev, g_total);
}

gp_status_t gp__be_init(void) {
  pthread_once(&g_once, init_once);
  return GP_SUCCESS;
}

int gp__cpu_device_count(void) {
  gp__be_init();
  return g_ndev;
}

/* ---- devices ------------------------------------------------------------------------ */

gp_status_t gp__be_device_count(int *count) {
  *count = gp__cpu_device_count();
  return GP_SUCCESS;
}

gp_status_t gp__be_device_set(int device) {
  (void)device; /* the current device is the api layer's thread-local; nothing to bind */
  return GP_SUCCESS;
}


static size_t l2_size(void) {
#ifdef _SC_LEVEL2_CACHE_SIZE
  long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (v > 0) return (size_t)v;
#endif
  return 0;
}

/* The host's peak clock in kHz: sysfs's cpuinfo_max_freq (kHz), else the first "cpu MHz"
 * of /proc/cpuinfo (the current clock: containers and VMs often have no cpufreq), else
 * 1 GHz with a warning: programs divide by the clock (cycles to seconds), so never 0. */
static int g_clock_khz;
static pthread_once_t g_clock_once = PTHREAD_ONCE_INIT;

static void clock_read(void) {
  long khz = 0;
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "r");
  if (f) {
    if (fscanf(f, "%ld", &khz) != 1) khz = 0;
    fclose(f);
  }
  if (khz <= 0 && (f = fopen("/proc/cpuinfo", "r")) != NULL) {
    char line[256];
    double mhz = 0;
    while (mhz <= 0 && fgets(line, sizeof line, f))
      if (strncmp(line, "cpu MHz", 7) == 0 && strchr(line, ':')) mhz = strtod(strchr(line, ':') + 1, NULL);
    fclose(f);
    khz = (long)(mhz * 1000.0);
  }
  if (khz <= 0 || khz > INT_MAX) {
    GP__WARN(GP__SUB_INIT, "cpu backend: the host's clock is not readable (no cpufreq, no /proc/cpuinfo): "
                           "clock_rate_khz says 1 GHz");
    khz = 1000000;
  }
  g_clock_khz = (int)khz;
}

/* The compute capability the cpu backend reports: 8.0, or GP_CPU_COMPUTE_CAPABILITY
 * ("major.minor", e.g. "7.5" or "9.0"). 8.0 is what it runs: warp shuffles and votes,
 * cooperative launch, bf16, the sm_80 mma.sync emulation (include/gpuport/nv_mma.h). */
static void compute_capability(int *major, int *minor) {
  *major = 8;
  *minor = 0;
  const char *e = getenv("GP_CPU_COMPUTE_CAPABILITY");
  if (e == NULL || *e == '\0') return;
  int ma = 0, mi = 0, n = 0;
  if (sscanf(e, "%d.%d%n", &ma, &mi, &n) == 2 && e[n] == '\0' && ma >= 1 && ma <= 99 && mi >= 0 && mi <= 9) {
    *major = ma;
    *minor = mi;
    return;
  }
  static int warned;
  if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
    GP__WARN(GP__SUB_INIT, "ignoring GP_CPU_COMPUTE_CAPABILITY=%s: not major.minor (e.g. 8.0)", e);
}

gp_status_t gp__be_device_get_props(gp_device_props_t *p, int device) {
  snprintf(p->name, sizeof(p->name), "gpuport CPU device %d", device);
  snprintf(p->arch, sizeof(p->arch), "%s", GP__CPU_ARCH);
  p->total_memory = g_total;
  p->multiprocessor_count = gp__cpu_exec_threads(); /* the executor's OS threads, one block each at a time */
  p->warp_size = gp__cpu_warp_size();
  p->max_threads_per_block = GP__CPU_MAX_THREADS_PER_BLOCK; /* the executor's limits */
  p->max_block_dim[0] = GP__CPU_MAX_BLOCK_DIM_X;
  p->max_block_dim[1] = GP__CPU_MAX_BLOCK_DIM_Y;
  p->max_block_dim[2] = GP__CPU_MAX_BLOCK_DIM_Z;
  p->max_grid_dim[0] = (int)GP__CPU_MAX_GRID_DIM_X;
  p->max_grid_dim[1] = (int)GP__CPU_MAX_GRID_DIM_Y;
  p->max_grid_dim[2] = (int)GP__CPU_MAX_GRID_DIM_Z;
  p->shared_memory_per_block = GP__CPU_SHARED_PER_BLOCK;
  p->shared_memory_per_block_optin = GP__CPU_SHARED_PER_BLOCK_OPTIN;
  p->l2_cache_size = l2_size();
  pthread_once(&g_clock_once, clock_read);
  p->clock_rate_khz = g_clock_khz;
  compute_capability(&p->compute_capability_major, &p->compute_capability_minor);
  p->pci_bus_id = -1;
  /* The rest as documented with GP_DEVICE_ATTR_LIST (gpuport/runtime.h). */
  p->total_constant_memory = 64 * 1024;
  p->max_pitch = INT_MAX;
  p->regs_per_block = 65536;
  p->regs_per_multiprocessor = 65536;
  p->memory_clock_rate_khz = 0;
  p->memory_bus_width = 64;
  /* An executor thread runs one block at a time (gp__be_occupancy_max_active_blocks). */
  p->max_threads_per_multiprocessor = GP__CPU_MAX_THREADS_PER_BLOCK;
  p->max_blocks_per_multiprocessor = 1;
  p->shared_memory_per_multiprocessor = GP__CPU_SHARED_PER_BLOCK_OPTIN;
  p->reserved_shared_memory_per_block = 0;
  p->persisting_l2_cache_max_size = 0;
  p->kernel_exec_timeout = gp__cpu_launch_timeout_s() > 0;
  p->integrated = 1;
  p->can_map_host_memory = 1;
  p->compute_mode = 0;
  p->concurrent_kernels = 1;
  p->ecc_enabled = 0;
  p->pci_device_id = -1;
  p->pci_domain_id = -1;
  p->tcc_driver = 0;
  p->async_engine_count = 2;
  p->unified_addressing = 1;
  p->stream_priorities_supported = 0; /* accepted and kept; the OS schedules the workers */
  p->global_l1_cache_supported = 1;
  p->local_l1_cache_supported = 1;
  p->managed_memory = 1;
  p->is_multi_gpu_board = 0;
  p->multi_gpu_board_group_id = 0;
  p->host_native_atomic_supported = 1;
  p->single_to_double_precision_perf_ratio = 2; /* a SIMD register holds twice the floats */
  p->pageable_memory_access = 0;                /* refused, as on a GPU without HMM */
  p->concurrent_managed_access = 1;
  p->compute_preemption_supported = 0;
  p->can_use_host_pointer_for_registered_mem = 1;
  p->cooperative_launch = 1;
  p->direct_managed_mem_access_from_host = 1;
  p->memory_pools_supported = 1;
  p->gpu_overlap = 1; /* two copy engines */
  p->pageable_memory_access_uses_host_page_tables = 0;
  p->max_access_policy_window_size = 0;
  return GP_SUCCESS;
}

/* From the properties the api layer cached: they are read once per process (the
 * environment's overrides included), and an attribute always equals its field. */
gp_status_t gp__be_device_get_attribute(int *value, gp_device_attr_t attr, int device) {
  const gp_device_props_t *p;
  GP__TRY(gp__api_props("gp_device_get_attribute", device, &p));
  (void)gp__device_props_attr(p, attr, value); /* the api layer checked attr */
  return GP_SUCCESS;
}

gp_status_t gp__be_device_synchronize(void) {
  GP__TRY(gp__cpu_check_may_wait("gp_device_synchronize"));
  gp__cpu_device_drain(gp__current_device());
  return GP_SUCCESS;
}

static void drop_alloc(const gp__alloc_info_t *info, void *user) {
  (void)user;
  if (info->kind == GP__ALLOC_DEVICE || info->kind == GP__ALLOC_MANAGED)
    gp__cpu_device_free(info->base);
  else if (info->kind == GP__ALLOC_HOST)
    free(info->base);
  /* GP__ALLOC_REGISTERED: the application's memory, only forgotten */
}

gp_status_t gp__be_device_reset(void) {
  GP__TRY(gp__cpu_check_may_wait("gp_device_reset"));
  int dev = gp__current_device();
  gp__cpu_device_drain(dev);
  gp__cpu_device_release_handles(dev);
  gp__alloc_drop_device(dev, drop_alloc, NULL);
  (void)gp__async_error_take(dev);
  return GP_SUCCESS;
}

gp_status_t gp__be_device_can_access_peer(int *can, int device, int peer) {
  (void)device;
  (void)peer;
  *can = 1; /* one address space */
  return GP_SUCCESS;
}

gp_status_t gp__be_device_enable_peer_access(int peer) {
  (void)peer;
  return GP_SUCCESS;
}

gp_status_t gp__be_stream_priority_range(int *least, int *greatest) {
  *least = 0; /* CUDA's range on current GPUs */
  *greatest = -5;
  return GP_SUCCESS;
}

/* ---- device flags and memory pools ----------------------------------------------------- */

/* Each device's flags (gp_device_set_flags) and its default pool's attributes; the pool
 * handle is the address of its row. */
struct gp_mem_pool_s {
  int reuse[3];       /* GP_MEM_POOL_REUSE_*, attributes 1 to 3 */
  uint64_t threshold; /* GP_MEM_POOL_ATTR_RELEASE_THRESHOLD */
};

static pthread_mutex_t g_flags_mu = PTHREAD_MUTEX_INITIALIZER; /* guards the two below */
static unsigned g_dev_flags[GP__CPU_MAX_DEVICES];
static struct gp_mem_pool_s g_pools[GP__CPU_MAX_DEVICES] = {
#define GP__POOL_DEFAULT {{1, 1, 1}, 0}
#define GP__POOL_8 GP__POOL_DEFAULT, GP__POOL_DEFAULT, GP__POOL_DEFAULT, GP__POOL_DEFAULT, \
                   GP__POOL_DEFAULT, GP__POOL_DEFAULT, GP__POOL_DEFAULT, GP__POOL_DEFAULT
    GP__POOL_8, GP__POOL_8, GP__POOL_8, GP__POOL_8, GP__POOL_8, GP__POOL_8, GP__POOL_8, GP__POOL_8,
#undef GP__POOL_8
#undef GP__POOL_DEFAULT
};

gp_status_t gp__be_device_set_flags(unsigned flags) {
  pthread_mutex_lock(&g_flags_mu);
  g_dev_flags[gp__current_device()] = flags;
  pthread_mutex_unlock(&g_flags_mu);
  return GP_SUCCESS;
}

gp_status_t gp__be_device_get_flags(unsigned *flags) {
  pthread_mutex_lock(&g_flags_mu);
  *flags = g_dev_flags[gp__current_device()];
  pthread_mutex_unlock(&g_flags_mu);
  return GP_SUCCESS;
}

gp_status_t gp__be_device_get_default_mem_pool(gp_mem_pool_t *pool, int device) {
  *pool = &g_pools[device];
  return GP_SUCCESS;
}

/* A pool is one of the rows handed out, compared by address (never dereferenced first). */
static gp_status_t pool_row(gp_mem_pool_t pool, const char *func, struct gp_mem_pool_s **row) {
  int n = 0;
  GP__TRY(gp__api_device_count(func, &n));
  for (int d = 0; d < n; d++)
    if (pool == &g_pools[d]) {
      *row = &g_pools[d];
      return GP_SUCCESS;
    }
  return gp__error(GP_ERROR_INVALID_HANDLE, func,
                   "'pool' (%p) is not a memory pool gpuport gave out "
                   "(gp_device_get_default_mem_pool)",
                   (void *)pool);
}

gp_status_t gp__be_mem_pool_set_attribute(gp_mem_pool_t pool, gp_mem_pool_attr_t attr, void *value) {
  struct gp_mem_pool_s *p = NULL;
  GP__TRY(pool_row(pool, "gp_mem_pool_set_attribute", &p));
  pthread_mutex_lock(&g_flags_mu);
  if (attr == GP_MEM_POOL_ATTR_RELEASE_THRESHOLD) p->threshold = *(const uint64_t *)value;
  else p->reuse[attr - 1] = *(const int *)value;
  pthread_mutex_unlock(&g_flags_mu);
  return GP_SUCCESS;
}

gp_status_t gp__be_mem_pool_get_attribute(gp_mem_pool_t pool, gp_mem_pool_attr_t attr, void *value) {
  struct gp_mem_pool_s *p = NULL;
  GP__TRY(pool_row(pool, "gp_mem_pool_get_attribute", &p));
  pthread_mutex_lock(&g_flags_mu);
  if (attr == GP_MEM_POOL_ATTR_RELEASE_THRESHOLD) *(uint64_t *)value = p->threshold;
  else *(int *)value = p->reuse[attr - 1];
  pthread_mutex_unlock(&g_flags_mu);
  return GP_SUCCESS;
}

/* ---- device and managed memory ------------------------------------------------------- */

/* The header sits in the GP__CPU_ALIGN bytes before the pointer handed out; it is
 * poisoned under AddressSanitizer, so an underflow into it is still reported. The
 * user's part ends exactly at the requested size, so overflows are reported too. */
typedef struct mem_hdr {
  size_t bytes;
  int device;
  uint32_t magic;
} mem_hdr_t;
#define GP__MEM_MAGIC 0x4d707067u

/* Large allocations are whole 2 MiB pages, 2 MiB-aligned and marked MADV_HUGEPAGE (as
 * cudaMalloc rounds them to 2 MiB): a program that allocates its output for each call
 * touches fresh pages every time, and one page fault per 2 MiB instead of one per 4 KiB
 * is most of that cost at tens of megabytes. Where transparent huge pages are off,
 * madvise fails or does nothing and the block is ordinary memory. Smaller blocks are
 * the header and the bytes, GP__CPU_ALIGN-aligned. */
#define GP__HUGE_PAGE ((size_t)2 << 20)

static size_t block_align(size_t bytes) {
  return bytes >= GP__HUGE_PAGE ? GP__HUGE_PAGE : GP__CPU_ALIGN;
}

/* The block behind an allocation of bytes, header included (less than bytes on
 * overflow, which device_alloc refuses). Everything past the bytes stays poisoned under
 * AddressSanitizer, so an overflow into the rounding is still reported. */
static size_t block_bytes(size_t bytes) {
  const size_t a = block_align(bytes), raw = GP__CPU_ALIGN + bytes;
  return a == GP__CPU_ALIGN ? raw : (raw + a - 1) & ~(a - 1);
}

static void pool_take(char *raw, size_t block);

static gp_status_t device_alloc(void **ptr, size_t bytes, int dev, const char *what) {
  /* Reserve first, so concurrent allocations cannot overcommit the device together. */
  size_t before = atomic_fetch_add(&g_used[dev], bytes);
  if (bytes > g_total || before > g_total - bytes) {
    atomic_fetch_sub(&g_used[dev], bytes);
    return gp__error(GP_ERROR_OUT_OF_MEMORY, what,
                     "%zu bytes requested; device %d has %zu of %zu bytes free", bytes, dev,
                     before < g_total ? g_total - before : 0, g_total);
  }
  const size_t block = block_bytes(bytes);
  void *raw = NULL;
  if (block < bytes || posix_memalign(&raw, block_align(bytes), block) != 0) {
    atomic_fetch_sub(&g_used[dev], bytes);
    return gp__error(GP_ERROR_OUT_OF_MEMORY, what, "%zu bytes: the host is out of memory",
                     bytes);
  }
  if (block_align(bytes) == GP__HUGE_PAGE) {
    pool_take((char *)raw, block);
    (void)madvise(raw, block, MADV_HUGEPAGE); /* a hint */
  }
  mem_hdr_t *h = (mem_hdr_t *)raw;
  h->bytes = bytes;
  h->device = dev;
  h->magic = GP__MEM_MAGIC;
  GP__POISON(raw, GP__CPU_ALIGN);
  GP__POISON((char *)raw + GP__CPU_ALIGN + bytes, block - GP__CPU_ALIGN - bytes); /* overflows */
  *ptr = (char *)raw + GP__CPU_ALIGN;
  return GP_SUCCESS;
}

/* ---- freed device memory -------------------------------------------------------------- */
/* Device memory is host memory here: an address gp_free released could come back at once
 * from the host's malloc, as the application's own memory, and a copy into the freed
 * allocation would then succeed (a GPU refuses it: cudaMemcpy returns cudaErrorInvalidValue
 * for a pointer that is no longer a device allocation). So the latest releases are held
 * back: their blocks stay allocated, unreachable to the host's malloc, until newer ones
 * push them out, and gp__be_pointer_freed names them, which lets the api layer refuse a
 * use of freed device memory (gp__api_check_range) and tell a double free. Bounds: at most
 * GP__FREED_MAX blocks, GP__FREED_SPAN bytes of address space and GP__FREED_RESIDENT bytes
 * still resident (the whole pages inside a block of GP__FREED_RELEASE bytes or more go
 * back to the kernel at once: madvise(MADV_DONTNEED)); a block larger than the span is
 * freed at once. Under AddressSanitizer a held block stays poisoned, so a kernel that
 * reads or writes it through a stale pointer is still reported. */
#define GP__FREED_MAX 1024
#define GP__FREED_SPAN ((size_t)1 << 30)
#define GP__FREED_RESIDENT ((size_t)32 << 20)
#define GP__FREED_RELEASE ((size_t)64 << 10)

typedef struct freed_block {
  void *raw;       /* the block posix_memalign gave */
  char *ptr;       /* what gp_malloc handed out */
  size_t bytes;    /* its size */
  size_t resident; /* bytes of it not given back to the kernel */
  int device;
} freed_block_t;

/* The pages of freed large blocks, kept for the next large allocation: a program that
 * allocates its output for each call would otherwise pay a page fault and the kernel's
 * clearing of every page of it each time, more than the kernel filling it at tens of
 * megabytes. gp_free moves a large block's pages out (mremap with MREMAP_DONTUNMAP: the
 * block stays mapped and held back as above, reading as zero as if its pages were given
 * back) and the next large allocation moves them in (mremap with MREMAP_FIXED): a move
 * of page tables. Reused memory holds what the freed block held, as cudaMalloc's does.
 * At most GP__POOL_MAX runs and GP__POOL_BYTES; where mremap refuses (kernels before
 * 5.13 for these flags) the pages are given back as before. */
#define GP__POOL_MAX 16
#define GP__POOL_BYTES ((size_t)64 << 20)

typedef struct page_run {
  char *addr;
  size_t bytes;
} page_run_t;

/* A ring, oldest first, and the pool (a stack, newest last), under a leaf lock (nothing
 * is called while it is held). */
static struct {
  pthread_mutex_t mu;
  freed_block_t ring[GP__FREED_MAX];
  size_t first, count, span, resident;
  page_run_t pool[GP__POOL_MAX];
  size_t pool_count, pool_bytes;
} g_freed = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Moves the pages of [raw, raw + block) (2 MiB multiples) into the pool; false where
 * they stay (too large, or mremap refused). The oldest runs make room. mremap's fifth
 * argument is passed (NULL) although unused: the kernel checks it. */
static bool pool_put(char *raw, size_t block) {
  if (block > GP__POOL_BYTES) return false;
  void *moved = mremap(raw, block, block, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
  if (moved == MAP_FAILED) return false;
  for (;;) {
    pthread_mutex_lock(&g_freed.mu);
    if (g_freed.pool_count > 0 &&
        (g_freed.pool_count == GP__POOL_MAX || g_freed.pool_bytes + block > GP__POOL_BYTES)) {
      const page_run_t old = g_freed.pool[0];
      memmove(&g_freed.pool[0], &g_freed.pool[1], (g_freed.pool_count - 1) * sizeof(page_run_t));
      g_freed.pool_count--;
      g_freed.pool_bytes -= old.bytes;
      pthread_mutex_unlock(&g_freed.mu);
      (void)munmap(old.addr, old.bytes); /* outside the lock */
      continue;
    }
    g_freed.pool[g_freed.pool_count++] = (page_run_t){(char *)moved, block};
    g_freed.pool_bytes += block;
    pthread_mutex_unlock(&g_freed.mu);
    return true;
  }
}

/* Fills [raw, raw + block) of a new large block with pooled pages, newest first, as far
 * as the pool goes; the rest faults in as usual. A run taken is this thread's alone (a
 * remainder goes back), so the moves happen outside the lock. */
static void pool_take(char *raw, size_t block) {
  for (size_t done = 0; done < block;) {
    pthread_mutex_lock(&g_freed.mu);
    if (g_freed.pool_count == 0) {
      pthread_mutex_unlock(&g_freed.mu);
      return;
    }
    const page_run_t r = g_freed.pool[--g_freed.pool_count];
    const size_t n = r.bytes < block - done ? r.bytes : block - done;
    g_freed.pool_bytes -= n;
    if (r.bytes > n) g_freed.pool[g_freed.pool_count++] = (page_run_t){r.addr + n, r.bytes - n};
    pthread_mutex_unlock(&g_freed.mu);
    if (mremap(r.addr, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, raw + done) == MAP_FAILED) {
      /* the range is this allocation's own: mapped afresh, whatever the failure left */
      (void)mmap(raw + done, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      (void)munmap(r.addr, n);
      return;
    }
    done += n;
  }
}

static void freed_atfork_prepare(void) { pthread_mutex_lock(&g_freed.mu); }
static void freed_atfork_release(void) { pthread_mutex_unlock(&g_freed.mu); }

static void freed_release(const freed_block_t *b) {
  GP__UNPOISON(b->raw, block_bytes(b->bytes));
  free(b->raw);
}

/* Gives the whole pages inside [p, p + bytes) back to the kernel (they read as zero if
 * touched again); returns the bytes given back. */
static size_t release_pages(char *p, size_t bytes) {
  const long ps = sysconf(_SC_PAGESIZE);
  const uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096;
  const uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
  const uintptr_t hi = ((uintptr_t)p + bytes) & ~(page - 1);
  if (hi <= lo || madvise((void *)lo, hi - lo, MADV_DONTNEED) != 0) return 0;
  return hi - lo;
}

static void freed_hold(void *raw, char *ptr, size_t bytes, int device) {
  if (bytes > GP__FREED_SPAN) {
    GP__UNPOISON(raw, block_bytes(bytes));
    free(raw);
    return;
  }
  freed_block_t b = {raw, ptr, bytes, bytes, device};
  if (block_align(bytes) == GP__HUGE_PAGE && pool_put((char *)raw, block_bytes(bytes)))
    b.resident = 0;
  else if (bytes >= GP__FREED_RELEASE)
    b.resident -= release_pages(ptr, bytes);
  GP__POISON(raw, block_bytes(bytes));
  for (;;) {
    pthread_mutex_lock(&g_freed.mu);
    if (g_freed.count > 0 &&
        (g_freed.count == GP__FREED_MAX || g_freed.span + bytes > GP__FREED_SPAN ||
         g_freed.resident + b.resident > GP__FREED_RESIDENT)) {
      const freed_block_t old = g_freed.ring[g_freed.first]; /* the oldest makes room */
      g_freed.first = (g_freed.first + 1) % GP__FREED_MAX;
      g_freed.count--;
      g_freed.span -= old.bytes;
      g_freed.resident -= old.resident;
      pthread_mutex_unlock(&g_freed.mu);
      freed_release(&old); /* outside the lock */
      continue;
    }
    g_freed.ring[(g_freed.first + g_freed.count) % GP__FREED_MAX] = b;
    g_freed.count++;
    g_freed.span += bytes;
    g_freed.resident += b.resident;
    pthread_mutex_unlock(&g_freed.mu);
    return;
  }
}

bool gp__be_pointer_freed(const void *ptr, gp__alloc_info_t *info) {
  const uintptr_t p = (uintptr_t)ptr;
  bool found = false;
  pthread_mutex_lock(&g_freed.mu);
  for (size_t i = 0; i < g_freed.count && !found; i++) {
    const freed_block_t *b = &g_freed.ring[(g_freed.first + i) % GP__FREED_MAX];
    if (p - (uintptr_t)b->ptr < b->bytes || p == (uintptr_t)b->ptr) {
      found = true;
      if (info) *info = (gp__alloc_info_t){b->ptr, b->bytes, GP__ALLOC_DEVICE, b->device};
    }
  }
  pthread_mutex_unlock(&g_freed.mu);
  return found;
}

void gp__cpu_device_free(void *ptr) {
  void *raw = (char *)ptr - GP__CPU_ALIGN;
  GP__UNPOISON(raw, GP__CPU_ALIGN);
  mem_hdr_t *h = (mem_hdr_t *)raw;
  const size_t bytes = h->bytes;
  const int dev = h->device;
  atomic_fetch_sub(&g_used[dev], bytes);
  h->magic = 0;
  freed_hold(raw, (char *)ptr, bytes, dev);
}

gp_status_t gp__be_malloc(void **ptr, size_t bytes) {
  return device_alloc(ptr, bytes, gp__current_device(), "gp_malloc");
}

gp_status_t gp__be_malloc_managed(void **ptr, size_t bytes) {
  return device_alloc(ptr, bytes, gp__current_device(), "gp_malloc_managed");
}

gp_status_t gp__be_malloc_async(void **ptr, size_t bytes, gp_stream_t stream) {
  /* Host memory is usable at once, which is stream order and more; but a graph could not
   * replay the allocation (CUDA records a memory node; graph.h documents that gpuport
   * refuses the allocation during capture instead). */
  GP__TRY(gp__cpu_stream_capture_forbid(stream, "gp_malloc_async", "a stream-ordered allocation"));
  return device_alloc(ptr, bytes, gp__current_device(), "gp_malloc_async");
}

gp_status_t gp__be_free(void *ptr, const gp__alloc_info_t *info) {
  /* As cudaFree: work still running on the device may use the memory. */
  GP__TRY(gp__cpu_check_may_wait("gp_free"));
  gp__cpu_device_drain(info->device);
  gp__cpu_device_free(ptr);
  return GP_SUCCESS;
}

gp_status_t gp__be_malloc_host(void **ptr, size_t bytes, unsigned flags) {
  (void)flags; /* every flag means the same for memory the device shares with the host */
  /* Page-locked memory cannot exceed the host's physical memory (cudaMallocHost fails
   * likewise); refusing here also keeps absurd sizes away from the allocator, which
   * under AddressSanitizer aborts on them instead of returning NULL. */
  if (bytes > g_total)
    return gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_malloc_host",
                     "%zu bytes requested; the host has %zu bytes of physical memory", bytes,
                     g_total);
  void *p = NULL;
  if (posix_memalign(&p, GP__CPU_ALIGN, bytes) != 0)
    return gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_malloc_host",
                     "%zu bytes: the host is out of memory", bytes);
  *ptr = p;
  return GP_SUCCESS;
}

gp_status_t gp__be_free_host(void *ptr) {
  /* Pinned memory may be the source of an async copy still queued. */
  GP__TRY(gp__cpu_check_may_wait("gp_free_host"));
  for (int d = 0; d < g_ndev; d++) gp__cpu_device_drain(d);
  free(ptr);
  return GP_SUCCESS;
}

gp_status_t gp__be_host_register(void *ptr, size_t bytes, unsigned flags) {
  (void)ptr; /* host memory needs no pinning for a CPU device, nor mapping */
  (void)bytes;
  (void)flags;
  return GP_SUCCESS;
}

gp_status_t gp__be_host_get_device_pointer(void **dptr, void *host) {
  *dptr = host; /* one address space */
  return GP_SUCCESS;
}

gp_status_t gp__be_host_unregister(void *ptr) {
  (void)ptr;
  return GP_SUCCESS;
}

bool gp__be_pointer_native(const void *ptr, gp_pointer_attributes_t *attr) {
  (void)ptr; /* the CPU backend has no native allocator besides gpuport's own */
  (void)attr;
  return false;
}

gp_status_t gp__be_mem_get_info(size_t *free_bytes, size_t *total_bytes) {
  size_t used = atomic_load(&g_used[gp__current_device()]);
  *total_bytes = g_total;
  *free_bytes = used < g_total ? g_total - used : 0;
  return GP_SUCCESS;
}

int gp__be_kernel_warp_size(gp_kernel_t kernel) { return gp__cpu_kernel_for_width(kernel)->warp_size; }

gp_status_t gp__be_kernel_set_max_dynamic_shared(gp_kernel_t kernel, size_t bytes) {
  (void)kernel; /* the limit lives in the api layer's table (src/launch.h), which the */
  (void)bytes;  /* launch check reads; the executor sizes each launch's arena itself */
  return GP_SUCCESS;
}
