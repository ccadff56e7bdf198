/*
 * api_launch.c - public entry points for kernel launch: the descriptor and launch
 * configuration are checked here, against the device's limits, before anything is
 * enqueued (docs/design/API.md "Kernels"); and the per-kernel dynamic shared memory limits of
 * gp_kernel_set_max_dynamic_shared(), which every backend's launch check reads.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "api.h"
#include "launch.h"

/* ---- per-kernel dynamic shared memory limits ------------------------------------------ */

/* Few kernels ever raise their limit (the big GEMM/attention tiles): a small array
 * under a lock is enough, and it never allocates. */
#define GP__SHMEM_TABLE 256
static pthread_mutex_t g_shmem_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  gp_kernel_t kernel;
  size_t bytes;
} g_shmem[GP__SHMEM_TABLE];
static int g_shmem_n;

size_t gp__kernel_max_dynamic_shared(gp_kernel_t kernel) {
  size_t bytes = 0;
  pthread_mutex_lock(&g_shmem_mu);
  for (int i = 0; i < g_shmem_n; i++)
    if (g_shmem[i].kernel == kernel) bytes = g_shmem[i].bytes;
  pthread_mutex_unlock(&g_shmem_mu);
  return bytes;
}

static gp_status_t shmem_table_set(gp_kernel_t kernel, size_t bytes) {
  gp_status_t s = GP_SUCCESS;
  pthread_mutex_lock(&g_shmem_mu);
  int i = 0;
  while (i < g_shmem_n && g_shmem[i].kernel != kernel) i++;
  if (i == GP__SHMEM_TABLE) {
    s = GP__ERR(GP_ERROR_OUT_OF_MEMORY,
                "more than %d kernels have a raised dynamic shared memory limit",
                GP__SHMEM_TABLE);
  } else {
    g_shmem[i].kernel = kernel;
    g_shmem[i].bytes = bytes;
    if (i == g_shmem_n) g_shmem_n++;
  }
  pthread_mutex_unlock(&g_shmem_mu);
  return s;
}

void gp__kernel_forget(gp_kernel_t kernel) {
  pthread_mutex_lock(&g_shmem_mu);
  for (int i = 0; i < g_shmem_n; i++) {
    if (g_shmem[i].kernel == kernel) {
      g_shmem[i] = g_shmem[--g_shmem_n];
      break;
    }
  }
  pthread_mutex_unlock(&g_shmem_mu);
}

/* ---- checks ------------------------------------------------------------------------------ */

void gp__module_put_ref(gp_module_t *m) {
  const void *h = *m;
  gp__handle_put_ref(&h);
}

gp_status_t gp__kernel_check(gp_kernel_t k, const char *func, gp_module_t *owner) {
  if (owner) *owner = NULL;
  if (k == NULL) return gp__error(GP_ERROR_INVALID_VALUE, func, "'kernel' is NULL");
  /* A gp_kernel_t is a pointer to a descriptor; a stray value (an uninitialised variable,
   * an integer, a kernel of an unloaded module) must give GP_ERROR_INVALID_HANDLE, not a
   * fault in the check that reads its magic: it is looked up before it is read. */
  gp_module_t m = NULL;
  if (!gp__desc_find(k, GP__DESC_KERNEL, &m))
    return gp__error(GP_ERROR_INVALID_HANDLE, func,
                     "'kernel' (%p) is not a kernel of this program or of a loaded module "
                     "(name kernels with GP_KERNEL_REF(), or get them from a module that is "
                     "still loaded)",
                     (const void *)k);
  gp_status_t st = gp__kernel_check_desc(k, func);
  if (st != GP_SUCCESS || owner == NULL) {
    if (m) (void)gp__handle_release(m);
    return st;
  }
  *owner = m;
  return GP_SUCCESS;
}

gp_status_t gp__kernel_check_desc(gp_kernel_t k, const char *func) {
  if (k->magic != GP_KERNEL_MAGIC)
    return gp__error(GP_ERROR_INVALID_HANDLE, func,
                     "'kernel' (%p) is not a kernel descriptor (magic 0x%08x): name kernels "
                     "with GP_KERNEL_REF()",
                     (const void *)k, k->magic);
  if (k->abi_version != GP_KERNEL_ABI_VERSION)
    return gp__error(GP_ERROR_INVALID_IMAGE, func,
                     "'kernel' '%s' has descriptor ABI version %u; this library reads %u: "
                     "rebuild the kernel",
                     k->name ? k->name : "?", k->abi_version, GP_KERNEL_ABI_VERSION);
  if (k->backend != GP__BACKEND)
    return gp__error(GP_ERROR_INVALID_IMAGE, func,
                     "'kernel' '%s' was compiled for backend %d, this library is the %s backend",
                     k->name ? k->name : "?", k->backend, gp_backend_name());
  /* The CPU executor needs both entry points (a block runs plainly until its first
   * barrier, then as fibers): checked here, so a bad descriptor fails before anything
   * is enqueued rather than as an asynchronous error. */
  bool has_entry = GP__BACKEND == GP_BACKEND_CPU
                       ? (k->cpu_run_block != NULL && k->cpu_run_thread != NULL)
                       : k->gpu_entry != NULL;
  if (!has_entry || k->num_params < 0 || (k->num_params > 0 && k->param_sizes == NULL))
    return gp__error(GP_ERROR_INVALID_IMAGE, func,
                     "'kernel' '%s' has an incomplete descriptor (no entry point or "
                     "parameter sizes)",
                     k->name ? k->name : "?");
  if (k->warp_size != 32 && k->warp_size != 64)
    return gp__error(GP_ERROR_INVALID_IMAGE, func,
                     "'kernel' '%s' was compiled for warp width %d; gpuport builds 32 or 64",
                     k->name ? k->name : "?", k->warp_size);
  return GP_SUCCESS;
}

static gp_status_t check_dims(const char *func, const char *arg, gp_dim3_t d, const int max[3]) {
  const unsigned v[3] = {d.x, d.y, d.z};
  static const char axis[3] = {'x', 'y', 'z'};
  for (int i = 0; i < 3; i++) {
    if (v[i] == 0 || v[i] > (unsigned)max[i])
      return gp__error(GP_ERROR_INVALID_CONFIGURATION, func,
                       "'%s.%c' is %u; the device allows 1..%d", arg, axis[i], v[i], max[i]);
  }
  return GP_SUCCESS;
}

static gp_status_t check_config(const char *func, gp_kernel_t k, gp_dim3_t grid,
                                gp_dim3_t block, size_t shmem, const gp_device_props_t *p) {
  GP__TRY(check_dims(func, "grid", grid, p->max_grid_dim));
  GP__TRY(check_dims(func, "block", block, p->max_block_dim));
  uint64_t threads = (uint64_t)block.x * block.y * block.z;
  uint64_t max_threads = (uint64_t)p->max_threads_per_block;
  if (k->max_threads_per_block > 0 && (uint64_t)k->max_threads_per_block < max_threads)
    max_threads = (uint64_t)k->max_threads_per_block;
  if (threads > max_threads)
    return gp__error(GP_ERROR_INVALID_CONFIGURATION, func,
                     "'block' has %llu threads (%u x %u x %u); at most %llu per block",
                     (unsigned long long)threads, block.x, block.y, block.z,
                     (unsigned long long)max_threads);
  size_t raised = gp__kernel_max_dynamic_shared(k);
  size_t limit = raised > p->shared_memory_per_block ? raised : p->shared_memory_per_block;
  if (shmem > limit)
    return gp__error(GP_ERROR_INVALID_CONFIGURATION, func,
                     "'dynamic_shared_bytes' is %zu; kernel '%s' may use %zu on this device%s",
                     shmem, k->name ? k->name : "?", limit,
                     raised ? "" : " (raise it with gp_kernel_set_max_dynamic_shared)");
  return GP_SUCCESS;
}

static gp_status_t check_args(const char *func, gp_kernel_t k, void **args) {
  if (k->flags & GP__KFLAG_PARAMS_UNKNOWN) return GP_SUCCESS; /* the native runtime checks */
  if (k->num_params > 0 && args == NULL)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'args' is NULL but kernel '%s' has %d parameters", k->name ? k->name : "?",
                     k->num_params);
  for (int i = 0; i < k->num_params; i++)
    if (args[i] == NULL)
      return gp__error(GP_ERROR_INVALID_VALUE, func,
                       "'args[%d]' is NULL: each entry points to the argument's value", i);
  return GP_SUCCESS;
}

gp_status_t gp__kernel_check_launch(const char *func, gp_kernel_t k, gp_dim3_t grid,
                                    gp_dim3_t block, size_t shmem, void **args) {
  GP__TRY(check_args(func, k, args));
  const gp_device_props_t *p;
  GP__TRY(gp__api_props(func, gp__current_device(), &p));
  return check_config(func, k, grid, block, shmem, p);
}

/* ---- entry points ------------------------------------------------------------------------- */

GP_API gp_status_t gp_launch(gp_kernel_t kernel, gp_dim3_t grid, gp_dim3_t block,
                             size_t dynamic_shared_bytes, gp_stream_t stream, void **args) {
  GP__MODULE_REF gp_module_t owner = NULL;
  GP__TRY(gp__kernel_check(kernel, __func__, &owner));
  GP__TRY(check_args(__func__, kernel, args));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, __func__, &s));
  GP__TRY(gp__api_check_launch_stream(__func__, s));
  /* The limits of the current device, whose stream this is. */
  const gp_device_props_t *p;
  GP__TRY(gp__api_props(__func__, gp__current_device(), &p));
  GP__TRY(check_config(__func__, kernel, grid, block, dynamic_shared_bytes, p));
  GP__TRACE(GP__SUB_LAUNCH, "gp_launch %s grid (%u,%u,%u) block (%u,%u,%u) shared %zu",
            kernel->name ? kernel->name : "?", grid.x, grid.y, grid.z, block.x, block.y,
            block.z, dynamic_shared_bytes);
  return gp__be_launch(kernel, grid, block, dynamic_shared_bytes, s, args);
}

GP_API gp_status_t gp_kernel_set_max_dynamic_shared(gp_kernel_t kernel, size_t bytes) {
  GP__MODULE_REF gp_module_t owner = NULL;
  GP__TRY(gp__kernel_check(kernel, __func__, &owner));
  const gp_device_props_t *p;
  GP__TRY(gp__api_props(__func__, gp__current_device(), &p));
  GP__CHECK_ARG(bytes <= p->shared_memory_per_block_optin,
                "'bytes' is %zu; the device's opt-in maximum is %zu", bytes,
                p->shared_memory_per_block_optin);
  GP__TRY(gp__be_kernel_set_max_dynamic_shared(kernel, bytes));
  return shmem_table_set(kernel, bytes);
}

/* Names handed out by gp_kernel_name, copied once and kept for the process: a module's
 * kernel names live in its object, and a caller reading one while another thread unloads
 * the module would read unmapped memory. Few distinct names exist, so a list does. */
static pthread_mutex_t g_names_mu = PTHREAD_MUTEX_INITIALIZER;
static char **g_names;
static size_t g_nnames, g_names_cap;

static const char *intern_name(const char *name) {
  const char *out = NULL;
  pthread_mutex_lock(&g_names_mu);
  for (size_t i = 0; i < g_nnames && !out; i++)
    if (strcmp(g_names[i], name) == 0) out = g_names[i];
  if (!out && g_nnames == g_names_cap) {
    const size_t cap = g_names_cap ? 2 * g_names_cap : 64;
    char **grown = realloc(g_names, cap * sizeof *grown);
    if (grown) g_names = grown, g_names_cap = cap;
  }
  if (!out && g_nnames < g_names_cap && (g_names[g_nnames] = strdup(name)) != NULL) out = g_names[g_nnames++];
  pthread_mutex_unlock(&g_names_mu);
  return out;
}

GP_API const char *gp_kernel_name(gp_kernel_t kernel) {
  /* The name lives in the kernel's object: read (and copied) under the module's
   * reference, while the object is surely mapped. */
  GP__MODULE_REF gp_module_t owner = NULL;
  if (!gp__desc_find(kernel, GP__DESC_KERNEL, &owner) || kernel->magic != GP_KERNEL_MAGIC || !kernel->name)
    return NULL;
  return intern_name(kernel->name);
}

/* ---- extended launch and occupancy ------------------------------------------------------ */

/* The part of gp_launch_config_t every caller has: up to and including the stream. */
#define GP__LAUNCH_CONFIG_MIN (offsetof(gp_launch_config_t, stream) + sizeof(gp_stream_t))

GP_API gp_status_t gp_launch_ex(gp_kernel_t kernel, const gp_launch_config_t *config, void **args) {
  GP__CHECK_NOT_NULL(config);
  GP__CHECK_ARG(config->struct_size >= GP__LAUNCH_CONFIG_MIN,
                "'config->struct_size' is %zu; initialise the config with gp_launch_config_init()",
                config->struct_size);
  /* Fields past an older caller's struct keep their defaults. */
  gp_launch_config_t c;
  gp_launch_config_init(&c);
  size_t n = config->struct_size < sizeof c ? config->struct_size : sizeof c;
  memcpy(&c, config, n);
  c.struct_size = sizeof c;
  GP__MODULE_REF gp_module_t owner = NULL;
  GP__TRY(gp__kernel_check(kernel, __func__, &owner));
  GP__TRY(check_args(__func__, kernel, args));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(c.stream, __func__, &s));
  GP__TRY(gp__api_check_launch_stream(__func__, s));
  const gp_device_props_t *p;
  GP__TRY(gp__api_props(__func__, gp__current_device(), &p));
  GP__TRY(check_config(__func__, kernel, c.grid, c.block, c.dynamic_shared_bytes, p));
  bool cluster = c.cluster.x > 1 || c.cluster.y > 1 || c.cluster.z > 1;
  if (cluster && GP__BACKEND != GP_BACKEND_CUDA)
    return GP__ERR(GP_ERROR_NOT_SUPPORTED,
                   "'config->cluster' is (%u,%u,%u): thread-block clusters exist on CUDA (sm_90) only",
                   c.cluster.x, c.cluster.y, c.cluster.z);
  if (cluster) {
    const unsigned cx = c.cluster.x ? c.cluster.x : 1, cy = c.cluster.y ? c.cluster.y : 1,
                   cz = c.cluster.z ? c.cluster.z : 1;
    if (c.grid.x % cx || c.grid.y % cy || c.grid.z % cz)
      return GP__ERR(GP_ERROR_INVALID_CONFIGURATION,
                     "'config->grid' (%u,%u,%u) is not a multiple of 'config->cluster' (%u,%u,%u)",
                     c.grid.x, c.grid.y, c.grid.z, cx, cy, cz);
  }
  if (c.cooperative) {
    int per_sm = 0;
    unsigned threads = c.block.x * c.block.y * c.block.z;
    GP__TRY(gp__be_occupancy_max_active_blocks(&per_sm, kernel, (int)threads, c.dynamic_shared_bytes));
    uint64_t blocks = (uint64_t)c.grid.x * c.grid.y * c.grid.z;
    uint64_t resident = (uint64_t)per_sm * (uint64_t)p->multiprocessor_count;
    if (blocks > resident)
      return GP__ERR(GP_ERROR_INVALID_CONFIGURATION,
                     "cooperative launch of kernel '%s' with %llu blocks; at most %llu can be resident "
                     "(%d per multiprocessor x %d multiprocessors)",
                     kernel->name ? kernel->name : "?", (unsigned long long)blocks,
                     (unsigned long long)resident, per_sm, p->multiprocessor_count);
  }
  GP__TRACE(GP__SUB_LAUNCH, "gp_launch_ex %s grid (%u,%u,%u) block (%u,%u,%u) shared %zu%s",
            kernel->name ? kernel->name : "?", c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y,
            c.block.z, c.dynamic_shared_bytes, c.cooperative ? " cooperative" : "");
  return gp__be_launch_ex(kernel, &c, s, args);
}

GP_API gp_status_t gp_occupancy_max_potential_block_size(int *min_grid, int *block, gp_kernel_t kernel,
                                                         size_t dynamic_shmem, int block_size_limit) {
  GP__CHECK_NOT_NULL(min_grid);
  GP__CHECK_NOT_NULL(block);
  *min_grid = *block = 0;
  GP__CHECK_ARG(block_size_limit >= 0, "'block_size_limit' is %d", block_size_limit);
  GP__MODULE_REF gp_module_t owner = NULL;
  GP__TRY(gp__kernel_check(kernel, __func__, &owner));
  const gp_device_props_t *p;
  GP__TRY(gp__api_props(__func__, gp__current_device(), &p));
  int limit = p->max_threads_per_block;
  if (kernel->max_threads_per_block > 0 && kernel->max_threads_per_block < limit)
    limit = kernel->max_threads_per_block;
  if (block_size_limit > 0 && block_size_limit < limit) limit = block_size_limit;
  const int granule = gp__be_kernel_warp_size(kernel) > 0 ? gp__be_kernel_warp_size(kernel) : p->warp_size;
  int best_threads = 0, best_block = 0, best_per_sm = 0;
  /* From the largest block down, as the CUDA runtime's header does: the first size that
   * reaches a larger occupancy wins, so of equal occupancies the largest block. */
  for (int b = limit; b > 0; b = (b % granule) ? b - b % granule : b - granule) {
    int per_sm = 0;
    GP__TRY(gp_occupancy_max_active_blocks(&per_sm, kernel, b, dynamic_shmem));
    if ((long long)per_sm * b > best_threads) {
      best_threads = per_sm * b;
      best_block = b;
      best_per_sm = per_sm;
    }
  }
  *block = best_block;
  *min_grid = best_per_sm * p->multiprocessor_count;
  return GP_SUCCESS;
}
