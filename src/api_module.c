/*
 * api_module.c - public entry points for modules, runtime compilation and occupancy
 * (gpuport/module.h). Module handles are registered here once the backend has loaded
 * the module, with the backend's unload as their finaliser (internal.h "handle
 * registry"); the kernels a module hands out are descriptors like GP_KERNEL_EXPORT's,
 * entered in the descriptor table with the module as owner, so gp_launch() and its
 * checks serve them unchanged, and unloading the module makes them invalid at once.
 */
#include <limits.h>
#include <string.h>
#include "api.h"
#include "launch.h"

static gp_status_t module_fini(void *m) { return gp__be_module_unload(m); }

/* Registers a module the backend just loaded; unloads it when the registry cannot. */
static gp_status_t publish(const char *func, gp_module_t *out, gp_module_t m) {
  gp_status_t st = gp__handle_add(m, GP__H_MODULE, module_fini);
  if (st != GP_SUCCESS) {
    (void)gp__be_module_unload(m);
    return gp__error(st, func, "cannot register the module");
  }
  *out = m;
  return GP_SUCCESS;
}

GP_API gp_status_t gp_module_load(gp_module_t *module, const char *path) {
  GP__CHECK_NOT_NULL(module);
  *module = NULL;
  GP__CHECK_NOT_NULL(path);
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  gp_module_t m = NULL;
  GP__TRY(gp__be_module_load(&m, path));
  return publish(__func__, module, m);
}

GP_API gp_status_t gp_module_load_data(gp_module_t *module, const void *image, size_t bytes) {
  GP__CHECK_NOT_NULL(module);
  *module = NULL;
  GP__CHECK_NOT_NULL(image);
  GP__CHECK_ARG(bytes > 0, "'bytes' is 0");
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  gp_module_t m = NULL;
  GP__TRY(gp__be_module_load_data(&m, image, bytes));
  return publish(__func__, module, m);
}

GP_API gp_status_t gp_module_get_kernel(gp_kernel_t *kernel, gp_module_t module, const char *name) {
  GP__CHECK_NOT_NULL(kernel);
  *kernel = NULL;
  GP__CHECK_NOT_NULL(name);
  GP__CHECK_ARG(name[0] != '\0', "'name' is empty");
  GP__TRY(gp__api_init(__func__));
  GP__HANDLE_REF const void *held = NULL;
  GP__TRY(gp__handle_hold(module, GP__H_MODULE, __func__, "module", &held));
  gp_kernel_t k = NULL;
  GP__TRY(gp__be_module_get_kernel(&k, module, name));
  /* The backend vouches that k is a whole descriptor-sized object of the module; the
   * table entry makes it a kernel launches accept, until the module is unloaded. */
  gp_status_t st = gp__desc_add(k, GP__DESC_KERNEL, module);
  if (st == GP_ERROR_INVALID_HANDLE)
    return GP__ERR(st, "'module' (%p) was unloaded concurrently", (void *)module);
  if (st != GP_SUCCESS) return GP__ERR(st, "no host memory to register kernel '%s'", name);
  /* A module built against another descriptor ABI or for another backend. */
  st = gp__kernel_check_desc(k, __func__);
  if (st != GP_SUCCESS) {
    gp__desc_remove(k, module);
    return st;
  }
  *kernel = k;
  return GP_SUCCESS;
}

GP_API gp_status_t gp_module_unload(gp_module_t module) {
  if (module == NULL) return GP_SUCCESS;
  GP__TRY(gp__api_init(__func__));
  GP__TRY(gp__handle_get(module, GP__H_MODULE, __func__, "module"));
  if (!gp__handle_kill(module, GP__H_MODULE, NULL)) {
    (void)gp__handle_release(module);
    return GP__ERR(GP_ERROR_INVALID_HANDLE, "'module' (%p) was unloaded concurrently",
                   (void *)module);
  }
  /* Its kernels are invalid from now on (a descriptor lookup needs a live owner); their
   * entries stay until the object goes, when the last call using the module (a launch
   * of one of its kernels, queued work) lets it go: a launch being enqueued meanwhile
   * still finds its module to hold (gp__desc_hold). */
  return gp__handle_release(module);
}

GP_API gp_status_t gp_program_compile(gp_module_t *module, const char *source, const char *name,
                                      const char *const *options, int n_options, char **log) {
  if (log) *log = NULL;
  GP__CHECK_NOT_NULL(module);
  *module = NULL;
  GP__CHECK_NOT_NULL(source);
  GP__CHECK_ARG(n_options >= 0, "'n_options' is %d", n_options);
  GP__CHECK_ARG(n_options == 0 || options != NULL, "'options' is NULL but 'n_options' is %d",
                n_options);
  for (int i = 0; i < n_options; i++) GP__CHECK_ARG(options[i] != NULL, "'options[%d]' is NULL", i);
  int n = 0;
  GP__TRY(gp__api_device_count(__func__, &n));
  gp_module_t m = NULL;
  GP__TRY(gp__be_program_compile(&m, source, name ? name : "program.cu", options, n_options, log));
  return publish(__func__, module, m);
}

GP_API gp_status_t gp_occupancy_max_active_blocks(int *num_blocks, gp_kernel_t kernel,
                                                  int block_threads, size_t dynamic_shared) {
  GP__CHECK_NOT_NULL(num_blocks);
  *num_blocks = 0;
  GP__MODULE_REF gp_module_t owner = NULL;
  GP__TRY(gp__kernel_check(kernel, __func__, &owner));
  GP__CHECK_ARG(block_threads > 0, "'block_threads' is %d", block_threads);
  const gp_device_props_t *p;
  GP__TRY(gp__api_props(__func__, gp__current_device(), &p));
  /* A block that cannot run cannot be resident: 0, as the CUDA runtime answers. */
  int max_threads = p->max_threads_per_block;
  if (kernel->max_threads_per_block > 0 && kernel->max_threads_per_block < max_threads)
    max_threads = kernel->max_threads_per_block;
  size_t raised = gp__kernel_max_dynamic_shared(kernel);
  size_t shared = raised > p->shared_memory_per_block ? raised : p->shared_memory_per_block;
  if (block_threads > max_threads || dynamic_shared > shared) return GP_SUCCESS;
  return gp__be_occupancy_max_active_blocks(num_blocks, kernel, block_threads, dynamic_shared);
}

GP_API gp_status_t gp_kernel_get_attributes(gp_kernel_attributes_t *attr, gp_kernel_t kernel) {
  GP__CHECK_NOT_NULL(attr);
  memset(attr, 0, sizeof *attr);
  GP__CHECK_NOT_NULL(kernel);
  GP__MODULE_REF gp_module_t owner = NULL;
  GP__TRY(gp__kernel_check(kernel, __func__, &owner));
  const gp_device_props_t *p;
  GP__TRY(gp__api_props(__func__, gp__current_device(), &p));
  /* The api layer's answers, which the native runtime's then replace where it has them. */
  gp_kernel_attributes_t a;
  memset(&a, 0, sizeof a);
  a.max_threads_per_block = p->max_threads_per_block;
  if (kernel->max_threads_per_block > 0 && kernel->max_threads_per_block < a.max_threads_per_block)
    a.max_threads_per_block = kernel->max_threads_per_block;
  size_t raised = gp__kernel_max_dynamic_shared(kernel);
  size_t shared = raised > 0 ? raised : p->shared_memory_per_block;
  a.max_dynamic_shared_size_bytes = shared > INT_MAX ? INT_MAX : (int)shared;
  a.preferred_shmem_carveout = -1;
  GP__TRY(gp__be_kernel_get_attributes(&a, kernel));
  *attr = a;
  return GP_SUCCESS;
}
