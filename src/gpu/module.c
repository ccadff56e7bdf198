/*
 * src/gpu/module.c - modules, runtime compilation and occupancy on the CUDA and HIP
 * backends: cudaLibrary_t / hipModule_t, NVRTC / hipRTC, cudaOccupancy* / hipOccupancy*.
 *
 * A module kernel gets a descriptor made here (struct gp_kernel_s, flag GP__KFLAG_MODULE)
 * whose gpu_entry is the native handle (cudaKernel_t, hipFunction_t), so gp_launch and
 * its checks serve it like a linked kernel; the module owns its descriptors and frees
 * them at unload. Image files are read whole (regular files only, bounded) and images
 * checked before the loader sees them (src/image.c): cudaLibraryLoadData and
 * hipModuleLoadData are not told their size, so everything their headers describe must
 * lie within it.
 *
 * The compiler library is loaded with dlopen at the first gp_program_compile, never
 * linked: NVRTC and hipRTC share one C interface (hipRTC mirrors NVRTC), so one table of
 * entry points, named by the vendor shim, serves both.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpu/gpu.h"
#include "launch.h"
#include "module.h"

#define GP__MAX_PARAMS 256

struct gp_module_s {
  gpuModule_t native;
  int device;
  int nkernels, cap;
  struct gp_kernel_s **kernels; /* descriptors handed out */
};

/* ---- loading ------------------------------------------------------------------------------ */

static gp_status_t wrap_module(gp_module_t *module, gpuModule_t native) {
  struct gp_module_s *m = calloc(1, sizeof(*m));
  if (m == NULL) {
    (void)gpuModuleUnload(native);
    return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for a module");
  }
  m->native = native;
  m->device = gp__current_device();
  *module = m;
  return GP_SUCCESS;
}

static gp_status_t load_image(gp_module_t *module, const void *image, size_t bytes, const char *func,
                              const char *what) {
  /* Every extent the image's headers describe lies within bytes: the loader, which is not
   * told the size, reads no further. */
  GP__TRY(gp__image_check(image, bytes, func, what));
  gpuModule_t native;
  gpuError_t e = gpuModuleLoadData(&native, image, bytes);
  if (e != gpuSuccess) return gp__gpu_fail(e, gp__current_device(), func, gpuModuleLoadName);
  return wrap_module(module, native);
}

gp_status_t gp__be_module_load(gp_module_t *module, const char *path) {
  char what[600];
  snprintf(what, sizeof what, "'path' (%.500s)", path);
  size_t n = 0;
  unsigned char *image = NULL;
  /* A regular file only, read whole, at most GP__IMAGE_MAX_BYTES (src/image.c). */
  GP__TRY(gp__image_read_file(path, "gp_module_load", what, &image, &n));
  /* PTX files need not end with NUL: the copy does (one byte past n), and that NUL counts
   * for text only; an ELF image or a bundle must be whole without it. */
  bool binary = n >= 4 && (memcmp(image, "\177ELF", 4) == 0 || memcmp(image, "CCOB", 4) == 0 ||
                           memcmp(image, "__CL", 4) == 0);
  gp_status_t st = load_image(module, image, binary || memchr(image, '\0', n) ? n : n + 1,
                              "gp_module_load", what);
  free(image);
  return st;
}

gp_status_t gp__be_module_load_data(gp_module_t *module, const void *image, size_t bytes) {
  return load_image(module, image, bytes, "gp_module_load_data", "'image'");
}

/* ---- kernels ------------------------------------------------------------------------------ */

static gp_status_t make_descriptor(struct gp_kernel_s **out, const void *entry, const char *name) {
  uint16_t sizes[GP__MAX_PARAMS];
  int nparams = gpuModuleKernelParams(entry, sizes, GP__MAX_PARAMS);
  size_t len = strlen(name) + 1, nsz = nparams > 0 ? (size_t)nparams : 0;
  struct gp_kernel_s *k = calloc(1, sizeof(*k) + nsz * sizeof(uint16_t) + len);
  if (k == NULL) return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for a kernel");
  uint16_t *psz = (uint16_t *)(k + 1);
  char *kname = (char *)(psz + nsz);
  memcpy(psz, sizes, nsz * sizeof(uint16_t));
  memcpy(kname, name, len);
  int warp = 0, maxt = gpuModuleKernelMaxThreads(entry);
  if (gpuDeviceGetAttribute(&warp, gpuDevAttrWarpSize, gp__current_device()) != gpuSuccess) {
    (void)gpuGetLastError();
    warp = 0;
  }
  k->magic = GP_KERNEL_MAGIC;
  k->abi_version = GP_KERNEL_ABI_VERSION;
  k->name = kname;
  k->backend = GP__BACKEND;
  k->warp_size = warp;
  k->num_params = (int)nsz;
  k->param_sizes = nsz ? psz : NULL;
  k->gpu_entry = entry;
  k->max_threads_per_block = maxt > 0 ? maxt : 1024;
  k->flags = GP__KFLAG_MODULE | (nparams < 0 ? GP__KFLAG_PARAMS_UNKNOWN : 0u);
  *out = k;
  return GP_SUCCESS;
}

gp_status_t gp__be_module_get_kernel(gp_kernel_t *kernel, gp_module_t m, const char *name) {
  for (int i = 0; i < m->nkernels; i++)
    if (strcmp(m->kernels[i]->name, name) == 0) {
      *kernel = m->kernels[i];
      return GP_SUCCESS;
    }
  const void *entry = NULL;
  gpuError_t e = gpuModuleGetKernel(&entry, m->native, name);
  if (e != gpuSuccess || entry == NULL) {
    gp_status_t st = gp__gpu_fail(e, m->device, __func__, gpuModuleGetKernelName);
    if (st != GP_ERROR_NOT_FOUND && st != GP_ERROR_INVALID_VALUE) return st;
    char native[400];
    snprintf(native, sizeof native, "%s", gp_last_error_message());
    return GP__GPU_ERR(GP_ERROR_NOT_FOUND, "the module has no kernel '%s' (%s)", name, native);
  }
  if (m->nkernels == m->cap) {
    int cap = m->cap ? 2 * m->cap : 8;
    struct gp_kernel_s **v = realloc(m->kernels, (size_t)cap * sizeof(*v));
    if (v == NULL) return GP__GPU_ERR(GP_ERROR_OUT_OF_MEMORY, "no host memory for a kernel");
    m->kernels = v;
    m->cap = cap;
  }
  struct gp_kernel_s *k = NULL;
  GP__TRY(make_descriptor(&k, entry, name));
  m->kernels[m->nkernels++] = k;
  *kernel = k;
  return GP_SUCCESS;
}

gp_status_t gp__be_module_unload(gp_module_t m) {
  gp__desc_drop_owner(m); /* its kernels' entries go with it (kept until now: queued launches) */
  for (int i = 0; i < m->nkernels; i++) {
    gp__kernel_forget(m->kernels[i]);
    free(m->kernels[i]);
  }
  free(m->kernels);
  gpuError_t e = gpuModuleUnload(m->native);
  int dev = m->device;
  free(m);
  if (e != gpuSuccess) return gp__gpu_fail(e, dev, __func__, GP__GPU_STR(gpuModuleUnload));
  return GP_SUCCESS;
}

gp_status_t gp__be_occupancy_max_active_blocks(int *num_blocks, gp_kernel_t kernel,
                                               int block_threads, size_t dynamic_shared) {
  int n = 0;
  gpuError_t e = gpuOccupancy(&n, kernel->gpu_entry, (kernel->flags & GP__KFLAG_MODULE) != 0,
                              block_threads, dynamic_shared);
  if (e != gpuSuccess) return gp__gpu_fail(e, gp__current_device(), __func__, "the occupancy query");
  *num_blocks = n;
  return GP_SUCCESS;
}

gp_status_t gp__be_kernel_get_attributes(gp_kernel_attributes_t *attr, gp_kernel_t kernel) {
  gpuFuncAttributes a;
  gpuError_t e = gpuFuncAttributesOf(&a, kernel->gpu_entry, (kernel->flags & GP__KFLAG_MODULE) != 0);
  if (e != gpuSuccess)
    return gp__gpu_fail(e, gp__current_device(), "gp_kernel_get_attributes", "the attribute query");
  attr->shared_size_bytes = a.sharedSizeBytes;
  attr->const_size_bytes = a.constSizeBytes;
  attr->local_size_bytes = a.localSizeBytes;
  attr->max_threads_per_block = a.maxThreadsPerBlock;
  attr->num_regs = a.numRegs;
  attr->ptx_version = a.ptxVersion;
  attr->binary_version = a.binaryVersion;
  attr->cache_mode_ca = a.cacheModeCA;
  if (a.maxDynamicSharedSizeBytes >= 0) attr->max_dynamic_shared_size_bytes = a.maxDynamicSharedSizeBytes;
  attr->preferred_shmem_carveout = a.preferredShmemCarveout;
  return GP_SUCCESS;
}

/* ---- runtime compilation ------------------------------------------------------------------ */

/* NVRTC's and hipRTC's C interface (results are enums: int in the C ABI). */
typedef int (*rtc_create_fn)(void **prog, const char *src, const char *name, int nheaders,
                             const char *const *headers, const char *const *include_names);
typedef int (*rtc_compile_fn)(void *prog, int n, const char *const *options);
typedef int (*rtc_size_fn)(void *prog, size_t *size);
typedef int (*rtc_get_fn)(void *prog, char *out);
typedef int (*rtc_destroy_fn)(void **prog);
typedef const char *(*rtc_error_fn)(int result);

typedef struct rtc {
  bool ok;
  rtc_create_fn create;
  rtc_compile_fn compile;
  rtc_size_fn log_size, code_size, text_size;
  rtc_get_fn log, code, text;
  rtc_destroy_fn destroy;
  rtc_error_fn error;
} rtc_t;

static pthread_once_t g_rtc_once = PTHREAD_ONCE_INIT;
static rtc_t g_rtc;

static void *rtc_sym(void *lib, const char *name) {
  void *p = name ? dlsym(lib, name) : NULL;
  if (p == NULL && name) p = dlsym(RTLD_DEFAULT, name); /* ROCm 5: inside libamdhip64 */
  return p;
}

/* POSIX guarantees that a data pointer from dlsym converts to a function pointer. */
#define GP__RTC_FN(type, p) ((type)(uintptr_t)(p))

static void rtc_load(void) {
  static const char *const libs[] = GP__RTC_LIBS;
  void *lib = NULL;
  for (int i = 0; libs[i] && lib == NULL; i++) lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) lib = RTLD_DEFAULT;
  rtc_t r;
  memset(&r, 0, sizeof r);
  r.create = GP__RTC_FN(rtc_create_fn, rtc_sym(lib, GP__RTC_SYM(CreateProgram)));
  r.compile = GP__RTC_FN(rtc_compile_fn, rtc_sym(lib, GP__RTC_SYM(CompileProgram)));
  r.log_size = GP__RTC_FN(rtc_size_fn, rtc_sym(lib, GP__RTC_SYM(GetProgramLogSize)));
  r.log = GP__RTC_FN(rtc_get_fn, rtc_sym(lib, GP__RTC_SYM(GetProgramLog)));
  r.code_size = GP__RTC_FN(rtc_size_fn, rtc_sym(lib, GP__RTC_CODE_SIZE));
  r.code = GP__RTC_FN(rtc_get_fn, rtc_sym(lib, GP__RTC_CODE));
  r.text_size = GP__RTC_FN(rtc_size_fn, rtc_sym(lib, GP__RTC_TEXT_SIZE));
  r.text = GP__RTC_FN(rtc_get_fn, rtc_sym(lib, GP__RTC_TEXT));
  r.destroy = GP__RTC_FN(rtc_destroy_fn, rtc_sym(lib, GP__RTC_SYM(DestroyProgram)));
  r.error = GP__RTC_FN(rtc_error_fn, rtc_sym(lib, GP__RTC_SYM(GetErrorString)));
  r.ok = r.create && r.compile && r.log_size && r.log && r.code_size && r.code && r.destroy &&
         r.error;
  g_rtc = r;
}

/* The log of prog, or NULL. */
static char *rtc_log(void *prog) {
  size_t n = 0;
  if (g_rtc.log_size(prog, &n) != 0 || n == 0) return NULL;
  char *s = calloc(1, n + 1);
  if (s && g_rtc.log(prog, s) != 0) {
    free(s);
    return NULL;
  }
  if (s && s[0] == '\0') {
    free(s);
    s = NULL;
  }
  return s;
}

/* The compiled image: machine code, or PTX text when compiled for a virtual architecture. */
static char *rtc_image(void *prog, size_t *n) {
  size_t size = 0;
  rtc_size_fn size_fn = g_rtc.code_size;
  rtc_get_fn get = g_rtc.code;
  if ((g_rtc.code_size(prog, &size) != 0 || size == 0) && g_rtc.text_size && g_rtc.text) {
    size_fn = g_rtc.text_size;
    get = g_rtc.text;
  }
  if (size_fn(prog, &size) != 0 || size == 0) return NULL;
  char *img = malloc(size);
  if (img && get(prog, img) != 0) {
    free(img);
    return NULL;
  }
  *n = size;
  return img;
}

/* The options given, plus the gpuport include directory and the current device's
 * architecture unless an option names one. */
static const char **rtc_options(const char *const *options, int n_options, const char *inc_opt,
                                const char *arch_opt, int *total) {
  const char **all = calloc((size_t)n_options + 3, sizeof(char *));
  if (all == NULL) return NULL;
  int k = 0;
  all[k++] = inc_opt;
  static const char *const arch_prefixes[] = GP__RTC_ARCH_OPTIONS;
  bool has_arch = false;
  for (int i = 0; arch_prefixes[i]; i++)
    has_arch = has_arch || gp__program_has_option(options, n_options, arch_prefixes[i]);
  if (!has_arch) all[k++] = arch_opt;
  for (int i = 0; i < n_options; i++) all[k++] = options[i];
  *total = k;
  return all;
}

gp_status_t gp__be_program_compile(gp_module_t *module, const char *source, const char *name,
                                   const char *const *options, int n_options, char **log) {
  const char *f = "gp_program_compile";
  pthread_once(&g_rtc_once, rtc_load);
  if (!g_rtc.ok)
    return gp__error(GP_ERROR_NOT_FOUND, f, "%s was not found: install it, or add its directory to "
                     "LD_LIBRARY_PATH", GP__RTC_NAME);
  char inc[4096], inc_opt[4200], arch_opt[96];
  GP__TRY(gp__program_include_dir(inc, sizeof inc, f));
  snprintf(inc_opt, sizeof inc_opt, "-I%s", inc);
  gp_device_props_t props;
  gp_device_props_init(&props);
  GP__TRY(gp__be_device_get_props(&props, gp__current_device()));
  snprintf(arch_opt, sizeof arch_opt, "%s%s", GP__RTC_ARCH_OPTION, props.arch);
  int total = 0;
  const char **all = rtc_options(options, n_options, inc_opt, arch_opt, &total);
  if (all == NULL) return gp__error(GP_ERROR_OUT_OF_MEMORY, f, "no host memory");
  void *prog = NULL;
  gp_status_t st = GP_SUCCESS;
  char *text = NULL, *image = NULL;
  int r = g_rtc.create(&prog, source, name, 0, NULL, NULL);
  if (r != 0) {
    st = gp__error(GP_ERROR_OUT_OF_MEMORY, f, "%s cannot create a program: %s", GP__RTC_NAME,
                   g_rtc.error(r));
  } else {
    r = g_rtc.compile(prog, total, all);
    text = rtc_log(prog);
    size_t n = 0;
    if (r != 0) {
      char ex[700];
      gp__program_log_excerpt(ex, sizeof ex, text);
      st = gp__error(GP_ERROR_INVALID_IMAGE, f, "'%s' does not compile (%s: %s): %s", name,
                     GP__RTC_NAME, g_rtc.error(r), ex);
    } else if ((image = rtc_image(prog, &n)) == NULL) {
      st = gp__error(GP_ERROR_INVALID_IMAGE, f, "%s produced no code for '%s'", GP__RTC_NAME, name);
    } else {
      st = load_image(module, image, n, f, "the compiled program");
    }
    g_rtc.destroy(&prog);
  }
  free(image);
  free(all);
  if (log)
    *log = text;
  else
    free(text);
  return st;
}
