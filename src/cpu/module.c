/*
 * module.c - modules, runtime compilation and occupancy on the CPU backend.
 *
 * A module is a shared object built from dialect sources with the host C++ compiler,
 * as the library's own kernels are built (gpuport/module.h); its kernels are the
 * descriptors GP_KERNEL_EXPORT emitted, found with dlsym as `gp__kernel_<name>`. The
 * image is read from a regular file (never a FIFO or a device: src/image.c) and checked
 * before dlopen, so that a cubin, a HIP code object, PTX text, a truncated or corrupt
 * file is reported as such instead of crashing the loader. An image in memory is loaded
 * from an anonymous file (memfd), or from a private temporary directory where there is
 * none, removed on every path.
 *
 * gp_program_compile writes the source to the cache directory and runs the compiler
 * (GP_CC, default cc) with posix_spawn, its output going to a log file. The result is
 * cached under a hash of everything that decides it (source, name, options, compiler
 * command, include directory, the gpuport headers' sizes and times, the library and
 * descriptor ABI versions); the exact key text is stored beside the object and
 * compared on a hit, so a hash collision cannot hand back the wrong object. The cache
 * is private: its directory (created 0700, as is each directory gpuport creates on the
 * way to it) must be a directory of the caller's, not a symbolic link, writable by no
 * one else, and each file in it is opened without following links and used only when
 * it is a regular file of the caller's that no one else may write. Another user who
 * could plant an object there would have it run in the caller's process. When the
 * directory fails the check, the compile happens in a fresh private directory
 * (mkdtemp), removed afterwards, and a warning says so.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cpu.h"
#include "exec.h"
#include "launch.h"
#include "module.h"

extern char **environ;

#define GP__MODULE_MAGIC 0x4d707067u /* "gppM" */
#define GP__MAX_MODULE_KERNELS 64    /* kernels whose raised limits are dropped at unload */

struct gp_module_s {
  uint32_t magic;
  void *dl;
  int fd;                          /* an anonymous file the object was loaded from, or -1 */
  uintptr_t lo, hi;                /* the object's mapped span: its descriptors lie there */
  struct gp_module_s *next;        /* g_modules */
  int nkernels;
  gp_kernel_t kernels[GP__MAX_MODULE_KERNELS]; /* handed out, for gp__kernel_forget */
};

/* The loaded modules: dlopen hands out one object for two loads of one file, and the
 * object's descriptors stay valid until its last module is unloaded. */
static pthread_mutex_t g_modules_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gp_module_s *g_modules;

/* snprintf for file names, without the compiler's truncation analysis of each call:
 * false when the result did not fit (the callers then fail or skip that path). */
static bool path_fmt(char *out, size_t n, const char *fmt, ...) GP__PRINTF(3, 4);
static bool path_fmt(char *out, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(out, n, fmt, ap);
  va_end(ap);
  return k >= 0 && (size_t)k < n;
}

/* ---- modules ------------------------------------------------------------------------------ */

typedef struct span {
  const char *name;
  uintptr_t base, lo, hi;
} span_t;

static int span_cb(struct dl_phdr_info *info, size_t size, void *user) {
  (void)size;
  span_t *sp = user;
  if (info->dlpi_addr != sp->base || strcmp(info->dlpi_name, sp->name) != 0) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
    if (sp->lo == 0 || a < sp->lo) sp->lo = a;
    if (b > sp->hi) sp->hi = b;
  }
  return 1;
}

/* The address span of the object behind a dlopen handle. */
static void object_span(void *dl, uintptr_t *lo, uintptr_t *hi) {
  struct link_map *lm = NULL;
  span_t sp = {"", 0, 0, 0};
  if (dlinfo(dl, RTLD_DI_LINKMAP, &lm) == 0 && lm) {
    sp.name = lm->l_name;
    sp.base = lm->l_addr;
    dl_iterate_phdr(span_cb, &sp);
  }
  *lo = sp.lo;
  *hi = sp.hi;
}

/* The loader finds an object already loaded by the name it was opened with before it
 * looks at files, so a name that can come back for another file (/proc/self/fd/N once
 * N is closed and reused) is only used while N stays open: anonymous files (memfd) are
 * kept open as long as their module is loaded. A path without a slash would be
 * searched for in the library path. */
static gp_status_t open_dl(gp_module_t *module, const char *name, int keep_fd, const char *func,
                           const char *what) {
  struct gp_module_s *m = calloc(1, sizeof(*m));
  if (m == NULL) return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "out of host memory");
  char buf[4200];
  if (strchr(name, '/') == NULL && path_fmt(buf, sizeof buf, "./%s", name)) name = buf;
  m->dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (m->dl == NULL) {
    const char *e = dlerror();
    free(m);
    return gp__error(GP_ERROR_INVALID_IMAGE, func,
                     "%s cannot be loaded: %s (a module's kernels need the executor symbols of "
                     "the gpuport library in the process: link it shared, or with -rdynamic)",
                     what, e ? e : "dlopen failed");
  }
  m->magic = GP__MODULE_MAGIC;
  m->fd = keep_fd;
  object_span(m->dl, &m->lo, &m->hi);
  /* Its constructors registered its descriptors as the program's: they are the module's. */
  if (m->hi > m->lo) gp__desc_adopt_range(m->lo, m->hi, m);
  pthread_mutex_lock(&g_modules_mu);
  m->next = g_modules;
  g_modules = m;
  pthread_mutex_unlock(&g_modules_mu);
  *module = m;
  return GP_SUCCESS;
}

/* Reads the open image file whole and checks it. */
static gp_status_t check_fd(int fd, size_t size, const char *func, const char *what) {
  unsigned char *image = NULL;
  GP__TRY(gp__image_read_fd(fd, size, func, what, &image));
  gp_status_t st = gp__image_check(image, size, func, what);
  free(image);
  return st;
}

gp_status_t gp__be_module_load(gp_module_t *module, const char *path) {
  const char *f = "gp_module_load";
  char what[600];
  path_fmt(what, sizeof what, "'path' (%.500s)", path);
  int fd = -1;
  struct stat st;
  GP__TRY(gp__image_open(path, 0, f, what, &fd, &st));
  gp_status_t s = check_fd(fd, (size_t)st.st_size, f, what);
  close(fd);
  /* By its name: the loader's own identity of objects (a second load of one file is the
   * same object). Whoever may change the file between the check and the load is the
   * caller's to trust; the cache, which others might reach, loads through descriptors. */
  return s == GP_SUCCESS ? open_dl(module, path, -1, f, what) : s;
}

static bool write_all(int fd, const void *data, size_t n) {
  const unsigned char *p = data;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

/* The temporary directory: TMPDIR, else /tmp. */
static const char *tmp_dir(void) {
  const char *t = getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

gp_status_t gp__be_module_load_data(gp_module_t *module, const void *image, size_t bytes) {
  const char *f = "gp_module_load_data";
  GP__TRY(gp__image_check(image, bytes, f, "'image'"));
  /* dlopen reads files: an anonymous one, which nothing else can name and which
   * disappears with its last descriptor. */
  int fd = memfd_create("gpuport-module", MFD_CLOEXEC);
  char p[64];
  if (fd >= 0 && (!path_fmt(p, sizeof p, "/proc/self/fd/%d", fd) || access(p, F_OK) != 0)) {
    close(fd);
    fd = -1;
  }
  if (fd >= 0) { /* kept open while the module is loaded (see open_dl) */
    gp_status_t st = write_all(fd, image, bytes)
                         ? open_dl(module, p, fd, f, "'image'")
                         : gp__error(GP_ERROR_OUT_OF_MEMORY, f, "cannot write the image: %s",
                                     strerror(errno));
    if (st != GP_SUCCESS) close(fd);
    return st;
  }
  /* No memfd or no /proc: a file in a private directory, both removed on every path. */
  char dir[4096], path[4200];
  if (!path_fmt(dir, sizeof dir, "%s/gpuport-module-XXXXXX", tmp_dir()) || mkdtemp(dir) == NULL)
    return gp__error(GP_ERROR_OUT_OF_MEMORY, f, "cannot create a private directory in %s: %s",
                     tmp_dir(), strerror(errno));
  path_fmt(path, sizeof path, "%s/module.so", dir);
  gp_status_t st = GP_SUCCESS;
  fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 || !write_all(fd, image, bytes))
    st = gp__error(GP_ERROR_OUT_OF_MEMORY, f, "cannot write the image to %s: %s", path,
                   strerror(errno));
  if (fd >= 0) close(fd);
  if (st == GP_SUCCESS) st = open_dl(module, path, -1, f, "'image'");
  unlink(path);
  rmdir(dir);
  return st;
}

gp_status_t gp__be_module_get_kernel(gp_kernel_t *kernel, gp_module_t m, const char *name) {
  char sym[512];
  snprintf(sym, sizeof sym, "gp__kernel_%s", name);
  (void)dlerror();
  gp_kernel_t k = dlsym(m->dl, sym);
  if (k == NULL)
    return gp__error(GP_ERROR_NOT_FOUND, "gp_module_get_kernel",
                     "the module has no kernel '%s' (no symbol %s: kernels are exported with "
                     "GP_KERNEL_EXPORT(%s))",
                     name, sym, name);
  /* dlsym also searches the module's dependencies, and a symbol of that name need not be
   * a descriptor: it must be a whole descriptor-sized object of the module itself. */
  Dl_info info;
  const ElfW(Sym) *es = NULL;
  uintptr_t a = (uintptr_t)k;
  if (a < m->lo || a >= m->hi || !dladdr1(k, &info, (void **)&es, RTLD_DL_SYMENT) || es == NULL ||
      info.dli_saddr != (void *)(uintptr_t)k || ELF64_ST_TYPE(es->st_info) != STT_OBJECT ||
      es->st_size < sizeof(struct gp_kernel_s) || a % _Alignof(struct gp_kernel_s) != 0)
    return gp__error(GP_ERROR_INVALID_IMAGE, "gp_module_get_kernel",
                     "the module's symbol %s is not a kernel descriptor of the module (kernels "
                     "are exported with GP_KERNEL_EXPORT(%s))",
                     sym, name);
  pthread_mutex_lock(&g_modules_mu); /* threads may get kernels of one module at once */
  int i = 0;
  while (i < m->nkernels && m->kernels[i] != k) i++;
  if (i == m->nkernels && i < GP__MAX_MODULE_KERNELS) m->kernels[m->nkernels++] = k;
  pthread_mutex_unlock(&g_modules_mu);
  *kernel = k;
  return GP_SUCCESS;
}

gp_status_t gp__be_module_unload(gp_module_t m) {
  /* Launches of the module's kernels that are still queued run first (cuModuleUnload
   * likewise waits for the context's work): its code is unmapped below. A queued launch
   * holds the module (cpu/stream.c), so this wait matters where one could not; a stream
   * worker dropping such a hold has just run its launch and must not wait for itself. */
  if (!gp__cpu_on_stream_worker())
    for (int d = 0; d < gp__cpu_device_count(); d++) gp__cpu_device_drain(d);
  for (int i = 0; i < m->nkernels; i++) gp__kernel_forget(m->kernels[i]);
  pthread_mutex_lock(&g_modules_mu);
  struct gp_module_s **p = &g_modules;
  while (*p && *p != m) p = &(*p)->next;
  if (*p) *p = m->next;
  bool shared = false;
  for (struct gp_module_s *o = g_modules; o && !shared; o = o->next) shared = o->dl == m->dl;
  pthread_mutex_unlock(&g_modules_mu);
  /* The object's descriptors are invalid from now on, even if the loader keeps it mapped
   * (an object with a unique symbol is never unloaded): its destructors unregister them
   * too, when it is. */
  gp__desc_drop_owner(m); /* its entries (another module's of the same object stay) */
  if (!shared && m->hi > m->lo) gp__desc_drop_range(m->lo, m->hi);
  int rc = dlclose(m->dl);
  if (m->fd >= 0) {
    /* Still loaded (an object with a unique symbol is never unloaded): its name must
     * keep meaning this file, so the descriptor stays open. */
    char p[64];
    void *still = path_fmt(p, sizeof p, "/proc/self/fd/%d", m->fd)
                      ? dlopen(p, RTLD_LAZY | RTLD_NOLOAD)
                      : NULL;
    if (still) dlclose(still);
    else close(m->fd);
  }
  m->magic = 0;
  free(m);
  if (rc != 0) {
    const char *e = dlerror();
    return gp__error(GP_ERROR_BACKEND, "gp_module_unload", "dlclose failed: %s", e ? e : "?");
  }
  return GP_SUCCESS;
}

/* ---- occupancy -------------------------------------------------------------------------- */

gp_status_t gp__be_occupancy_max_active_blocks(int *num_blocks, gp_kernel_t kernel,
                                               int block_threads, size_t dynamic_shared) {
  (void)kernel; /* the api layer checked that one block fits the executor's limits */
  (void)block_threads;
  (void)dynamic_shared;
  *num_blocks = 1; /* an executor thread (a "multiprocessor") runs one block at a time */
  return GP_SUCCESS;
}

gp_status_t gp__be_kernel_get_attributes(gp_kernel_attributes_t *attr, gp_kernel_t kernel) {
  (void)attr; /* no compiler reports resource use: the api layer's values stand */
  (void)kernel;
  return GP_SUCCESS;
}

/* ---- runtime compilation: hashing and files ------------------------------------------------- */

/* FNV-1a, 128 bits (a cache key; the stored key text guards against collisions). */
typedef unsigned __int128 u128_t;
static const u128_t k_fnv_prime = ((u128_t)1 << 88) + 0x13b;

static u128_t fnv_init(void) {
  return ((u128_t)0x6c62272e07bb0142ull << 64) | 0x62b821756295c58dull;
}

static u128_t fnv(u128_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= k_fnv_prime;
  }
  return h;
}

/* A growing text buffer; ok turns false when memory runs out. */
typedef struct text {
  char *s;
  size_t n, cap;
  bool ok;
} text_t;

static void text_add(text_t *t, const char *s, size_t n) {
  if (!t->ok) return;
  if (t->n + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 1024;
    while (cap < t->n + n + 1) cap *= 2;
    char *v = realloc(t->s, cap);
    if (v == NULL) {
      t->ok = false;
      return;
    }
    t->s = v;
    t->cap = cap;
  }
  memcpy(t->s + t->n, s, n);
  t->n += n;
  t->s[t->n] = '\0';
}

static void text_str(text_t *t, const char *s) { text_add(t, s, strlen(s)); }

static void text_fmt(text_t *t, const char *fmt, ...) GP__PRINTF(2, 3);
static void text_fmt(text_t *t, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) text_add(t, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* ---- runtime compilation: the private cache -------------------------------------------- */

/* Where compiles go: the cache directory, open and checked, or a private temporary
 * directory when the cache failed the check (removed by cache_close). */
typedef struct cache {
  char dir[4096];
  int dfd;
  bool temporary;
} cache_t;

/* Why st (of something gpuport is about to trust) is not private, or NULL: it must be
 * the caller's, and writable by no one else (gpuport/module.h, gp_program_compile). */
static const char *not_private(const struct stat *st, bool dir) {
  if (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
    return dir ? "it is not a directory" : "it is not a regular file";
  if (st->st_uid != geteuid()) return "another user owns it";
  if (st->st_mode & (S_IWGRP | S_IWOTH)) return "others may write to it";
  return NULL;
}

/* Opens directory p without following a final symbolic link and checks it. */
static int open_private_dir(const char *p, const char **why) {
  int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd < 0) {
    *why = errno == ELOOP || errno == ENOTDIR ? "it is a symbolic link or not a directory"
                                              : strerror(errno);
    return -1;
  }
  if (fstat(fd, &st) != 0 || (*why = not_private(&st, true)) != NULL) {
    if (*why == NULL) *why = strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

/* Creates the missing directories of dir (0700) and opens dir. Each directory created
 * here and dir itself must pass the check; the ones that were there before on the way
 * (the home directory, /tmp) are the caller's business. -1 and *why on failure. */
static int make_private_dir(const char *dir, const char **why) {
  char p[4096];
  if (!path_fmt(p, sizeof p, "%s", dir) || p[0] == '\0') {
    *why = "its name is empty or too long";
    return -1;
  }
  for (char *s = p + 1;; s++) {
    bool last = *s == '\0';
    if (!last && *s != '/') continue;
    *s = '\0';
    bool made = mkdir(p, 0700) == 0;
    if (!made && errno != EEXIST) {
      *why = strerror(errno);
      return -1;
    }
    if (made && !last) { /* a directory of gpuport's making: checked like the cache itself */
      int fd = open_private_dir(p, why);
      if (fd < 0) return -1;
      close(fd);
    }
    if (last) return open_private_dir(p, why);
    *s = '/';
  }
}

/* The cache directory: GP_CACHE_DIR, else $XDG_CACHE_HOME/gpuport, else
 * $HOME/.cache/gpuport, else ${TMPDIR:-/tmp}/gpuport-cache-<uid>. */
static void cache_dir(char *out, size_t n) {
  const char *e = getenv("GP_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (e && *e)
    path_fmt(out, n, "%s", e);
  else if (xdg && *xdg)
    path_fmt(out, n, "%s/gpuport", xdg);
  else if (home && *home)
    path_fmt(out, n, "%s/.cache/gpuport", home);
  else
    path_fmt(out, n, "%s/gpuport-cache-%ld", tmp_dir(), (long)geteuid());
}

static gp_status_t cache_open(cache_t *c, const char *func) {
  char dir[4096];
  const char *why = NULL;
  cache_dir(dir, sizeof dir);
  c->temporary = false;
  c->dfd = make_private_dir(dir, &why);
  if (c->dfd >= 0 && path_fmt(c->dir, sizeof c->dir, "%s", dir)) return GP_SUCCESS;
  if (c->dfd >= 0) close(c->dfd);
  /* Nothing in it is trusted or written: the compile happens in a directory nobody else
   * can know of or enter (mkdtemp makes it 0700 with a random name). */
  const char *why_tmp = NULL;
  if (!path_fmt(c->dir, sizeof c->dir, "%s/gpuport-compile-XXXXXX", tmp_dir()) ||
      mkdtemp(c->dir) == NULL || (c->dfd = open_private_dir(c->dir, &why_tmp)) < 0)
    return gp__error(GP_ERROR_OUT_OF_MEMORY, func,
                     "the cache directory %s cannot be used (%s), nor a private directory in %s: %s",
                     dir, why ? why : "?", tmp_dir(), why_tmp ? why_tmp : strerror(errno));
  c->temporary = true;
  GP__WARN(GP__SUB_LAUNCH,
           "gp_program_compile: the cache directory %s is not used (%s: it must be a directory "
           "of this user, writable by no one else, not a symbolic link; set GP_CACHE_DIR): "
           "compiling in the private directory %s, removed afterwards",
           dir, why ? why : "?", c->dir);
  return GP_SUCCESS;
}

static void cache_close(cache_t *c) {
  if (c->temporary) {
    DIR *d = fdopendir(dup(c->dfd));
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
        (void)unlinkat(c->dfd, e->d_name, 0);
    if (d) closedir(d);
    (void)rmdir(c->dir);
  }
  close(c->dfd);
}

/* Opens name in the cache without following links, when it is a private regular file
 * (-1 otherwise: an absent or foreign file is a miss). */
static int cache_open_file(const cache_t *c, const char *name, struct stat *st) {
  int fd = openat(c->dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP)
      GP__WARN(GP__SUB_LAUNCH, "gp_program_compile: %s/%s is not used: it is a symbolic link",
               c->dir, name);
    return -1;
  }
  const char *why = fstat(fd, st) != 0 ? strerror(errno) : not_private(st, false);
  if (why == NULL && (uint64_t)st->st_size > GP__IMAGE_MAX_BYTES) why = "it is too large";
  if (why) {
    GP__WARN(GP__SUB_LAUNCH, "gp_program_compile: %s/%s is not used: %s", c->dir, name, why);
    close(fd);
    return -1;
  }
  return fd;
}

/* The text of a private cache file, NUL-terminated; NULL when absent or not private. */
static char *cache_read(const cache_t *c, const char *name, size_t *len) {
  struct stat st;
  int fd = cache_open_file(c, name, &st);
  if (fd < 0) return NULL;
  unsigned char *t = NULL;
  gp_status_t s = gp__image_read_fd(fd, (size_t)st.st_size, "gp_program_compile", name, &t);
  close(fd);
  if (s != GP_SUCCESS) return NULL;
  if (len) *len = (size_t)st.st_size;
  return (char *)t;
}

static pthread_mutex_t g_compile_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned g_compile_seq;

/* A name no other compile of this process or another uses: <base>.<pid>.<seq><suffix>. */
static bool unique_name(char *out, size_t n, const char *base, const char *suffix) {
  pthread_mutex_lock(&g_compile_mu);
  unsigned seq = ++g_compile_seq;
  pthread_mutex_unlock(&g_compile_mu);
  return path_fmt(out, n, "%s.%ld.%u%s", base, (long)getpid(), seq, suffix);
}

/* Writes data to name in the cache through a fresh file (never an existing one, never
 * through a link) and a rename, so readers never see a partial file. */
static bool cache_write(const cache_t *c, const char *name, const char *data, size_t n) {
  char tmp[600];
  if (!unique_name(tmp, sizeof tmp, name, ".tmp")) return false;
  int fd = openat(c->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = write_all(fd, data, n);
  ok = close(fd) == 0 && ok;
  if (ok) ok = renameat(c->dfd, tmp, c->dfd, name) == 0;
  if (!ok) (void)unlinkat(c->dfd, tmp, 0);
  return ok;
}

/* Loads the cached object name: opened without following links, private, checked whole,
 * then mapped through the checked directory's descriptor (a rename of the directory
 * or of anything above it cannot make the loader read another file). */
static gp_status_t cache_load(const cache_t *c, const char *name, gp_module_t *module,
                              const char *func) {
  struct stat st;
  int fd = cache_open_file(c, name, &st);
  if (fd < 0)
    return gp__error(GP_ERROR_INVALID_IMAGE, func, "the compiled module %s/%s cannot be used",
                     c->dir, name);
  unsigned char *image = NULL;
  gp_status_t s = gp__image_read_fd(fd, (size_t)st.st_size, func, "the compiled module", &image);
  close(fd);
  if (s == GP_SUCCESS) s = gp__image_check(image, (size_t)st.st_size, func, "the compiled module");
  free(image);
  GP__TRY(s);
  /* The name comes back only for this key (the hash) and so for the same object. */
  char p[700];
  if (!path_fmt(p, sizeof p, "/proc/%ld/fd/%d/%s", (long)getpid(), c->dfd, name) || access(p, F_OK) != 0)
    path_fmt(p, sizeof p, "%s/%s", c->dir, name); /* no /proc: the directory is private */
  return open_dl(module, p, -1, func, "the compiled module");
}

/* The sizes and times of the installed headers: a changed header changes the key. */
static void header_stamp(text_t *key, const char *inc) {
  char dir[4200];
  path_fmt(dir, sizeof dir, "%s/gpuport", inc);
  DIR *d = opendir(dir);
  if (d == NULL) return;
  u128_t sum = 0; /* a sum, so the order readdir returns entries in does not matter */
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    char p[4600];
    struct stat st;
    path_fmt(p, sizeof p, "%s/%s", dir, de->d_name);
    if (de->d_name[0] == '.' || stat(p, &st) != 0) continue;
    u128_t h = fnv(fnv_init(), de->d_name, strlen(de->d_name));
    long long v[3] = {(long long)st.st_size, (long long)st.st_mtim.tv_sec, (long long)st.st_mtim.tv_nsec};
    sum += fnv(h, v, sizeof v);
  }
  closedir(d);
  text_fmt(key, "headers %016llx%016llx\n", (unsigned long long)(sum >> 64),
           (unsigned long long)sum);
}

/* ---- runtime compilation: the compiler --------------------------------------------------- */

/* GP_CC split at blanks (a command and its own arguments), default "cc". */
static int compiler_words(char *buf, size_t n, char **words, int max) {
  const char *cc = getenv("GP_CC");
  snprintf(buf, n, "%s", cc && *cc ? cc : "cc");
  int k = 0;
  char *save = NULL;
  for (char *s = strtok_r(buf, " \t", &save); s && k < max; s = strtok_r(NULL, " \t", &save))
    words[k++] = s;
  return k;
}

/* Runs argv with stdout and stderr into log_path; the exit status, or -1 (errno set)
 * when the program could not be started. */
static int run_compiler(char **argv, const char *log_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  if (WIFEXITED(status)) {
    if (WEXITSTATUS(status) == 127) { /* the shell's "command not found", from some spawns */
      errno = ENOENT;
      return -1;
    }
    return WEXITSTATUS(status);
  }
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* The name as a #line file name: printable, no quotes or backslashes. */
static void line_name(char *out, size_t n, const char *name) {
  size_t k = 0;
  for (const char *s = name; *s && k + 1 < n; s++)
    out[k++] = (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20) ? '_' : *s;
  out[k] = '\0';
}

/* Compiles src_text into name in the cache (through temporary files next to it, all
 * removed); the log text into *log_text. GP_ERROR_INVALID_IMAGE when the compiler fails. */
static gp_status_t compile_to(const cache_t *c, const char *name, const char *src_text,
                              const char *inc, const char *const *options, int n_options,
                              const char *file_name, char **log_text, const char *func) {
  char src_n[600], out_n[600], log_n[600], src[4800], out[4800], logp[4800];
  if (!unique_name(src_n, sizeof src_n, name, ".cu") || !unique_name(out_n, sizeof out_n, name, ".out") ||
      !unique_name(log_n, sizeof log_n, name, ".log") ||
      !path_fmt(src, sizeof src, "%s/%s", c->dir, src_n) || !path_fmt(out, sizeof out, "%s/%s", c->dir, out_n) ||
      !path_fmt(logp, sizeof logp, "%s/%s", c->dir, log_n))
    return gp__error(GP_ERROR_INVALID_VALUE, func, "the cache directory name (%s) is too long", c->dir);
  if (!cache_write(c, src_n, src_text, strlen(src_text)))
    return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "cannot write %s: %s", src, strerror(errno));
  char ccbuf[1024], incopt[4200];
  char *words[32];
  int nw = compiler_words(ccbuf, sizeof ccbuf, words, 32);
  path_fmt(incopt, sizeof incopt, "-I%s", inc);
  static const char *const fixed[] = {"-x", "c++", "-std=c++17", "-O2", "-g", "-fPIC", "-shared",
                                      "-fvisibility=hidden", "-fno-exceptions", "-fno-rtti",
                                      "-DGP_BUILD_CPU"};
  const int nfixed = (int)(sizeof fixed / sizeof fixed[0]);
  char **argv = calloc((size_t)(nw + nfixed + n_options + 7), sizeof(char *));
  gp_status_t st = GP_SUCCESS;
  if (argv == NULL || nw == 0) {
    st = gp__error(argv ? GP_ERROR_NOT_FOUND : GP_ERROR_OUT_OF_MEMORY, func,
                   argv ? "GP_CC is empty" : "out of host memory");
  } else {
    int k = 0;
    for (int i = 0; i < nw; i++) argv[k++] = words[i];
    for (int i = 0; i < nfixed; i++) argv[k++] = (char *)fixed[i];
    argv[k++] = incopt;
    /* The warp width the device reports (GP_CPU_WARP_SIZE): a module's kernels are built
     * at that width, as a GPU's compiler builds for its own warps. */
    if (gp__cpu_warp_size() == 64) argv[k++] = (char *)"-DGP_WARP_SIZE=64";
    for (int i = 0; i < n_options; i++) argv[k++] = (char *)options[i];
    argv[k++] = (char *)"-o";
    argv[k++] = out;
    argv[k++] = src;
    argv[k] = NULL;
    int rc = run_compiler(argv, logp);
    *log_text = cache_read(c, log_n, NULL);
    if (rc < 0) {
      st = gp__error(GP_ERROR_NOT_FOUND, func, "cannot run the host compiler '%s' (GP_CC): %s",
                     words[0], strerror(errno));
    } else if (rc != 0) {
      char ex[700];
      gp__program_log_excerpt(ex, sizeof ex, *log_text);
      st = gp__error(GP_ERROR_INVALID_IMAGE, func, "'%s' does not compile (%s exited with %d): %s",
                     file_name, words[0], rc, ex);
    } else {
      /* The linker made the object with the umask's mode: made private before it is
       * stored, so the cache's own check accepts it. */
      int fd = openat(c->dfd, out_n, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      struct stat fs;
      bool ok = fd >= 0 && fstat(fd, &fs) == 0 && S_ISREG(fs.st_mode) && fs.st_uid == geteuid() &&
                fchmod(fd, 0600) == 0;
      if (fd >= 0) close(fd);
      if (!ok || renameat(c->dfd, out_n, c->dfd, name) != 0)
        st = gp__error(GP_ERROR_OUT_OF_MEMORY, func, "cannot store %s/%s: %s", c->dir, name,
                       strerror(errno));
    }
  }
  free(argv);
  (void)unlinkat(c->dfd, src_n, 0);
  (void)unlinkat(c->dfd, out_n, 0);
  (void)unlinkat(c->dfd, log_n, 0);
  return st;
}

/* The key: everything the object depends on, as text. */
static bool cache_key(text_t *key, text_t *src, const char *inc, const char *source,
                      const char *lname, const char *const *options, int n_options) {
  char ccbuf[1024];
  char *words[32];
  int nw = compiler_words(ccbuf, sizeof ccbuf, words, 32);
  text_fmt(key, "gpuport cpu module %d.%d.%d abi %u\ncompiler", GP_VERSION_MAJOR, GP_VERSION_MINOR,
           GP_VERSION_PATCH, GP_KERNEL_ABI_VERSION);
  for (int i = 0; i < nw; i++) text_fmt(key, " %s", words[i]);
  text_fmt(key, "\nwarp %d\ninclude %s\n", gp__cpu_warp_size(), inc);
  header_stamp(key, inc);
  for (int i = 0; i < n_options; i++) {
    text_str(key, "option ");
    text_str(key, options[i]);
    text_str(key, "\n");
  }
  text_fmt(src, "#line 1 \"%s\"\n", lname);
  text_str(src, source);
  text_str(key, src->s ? src->s : "");
  return key->ok && src->ok;
}

/* Compiles (or finds in the cache) the object of key and loads it. */
static gp_status_t compile_cached(const cache_t *c, const text_t *key, const text_t *src,
                                  const char *inc, const char *const *options, int n_options,
                                  const char *lname, gp_module_t *module, char **log_text,
                                  const char *f) {
  u128_t h = fnv(fnv_init(), key->s, key->n);
  char so_n[64], key_n[64], log_n[64];
  const unsigned long long hi = (unsigned long long)(h >> 64), lo = (unsigned long long)h;
  path_fmt(so_n, sizeof so_n, "%016llx%016llx.so", hi, lo);
  path_fmt(key_n, sizeof key_n, "%016llx%016llx.key", hi, lo);
  path_fmt(log_n, sizeof log_n, "%016llx%016llx.log", hi, lo);
  size_t stored_len = 0;
  char *stored = c->temporary ? NULL : cache_read(c, key_n, &stored_len);
  bool hit = stored && stored_len == key->n && memcmp(stored, key->s, key->n) == 0;
  free(stored);
  if (hit) {
    *log_text = cache_read(c, log_n, NULL);
    GP__TRACE(GP__SUB_LAUNCH, "gp_program_compile %s: cached %s/%s", lname, c->dir, so_n);
    /* An object that is not there or not private is a miss: compiled again below. */
    if (cache_load(c, so_n, module, f) == GP_SUCCESS) return GP_SUCCESS;
    free(*log_text);
    *log_text = NULL;
  }
  GP__INFO(GP__SUB_LAUNCH, "gp_program_compile %s: compiling into %s/%s", lname, c->dir, so_n);
  GP__TRY(compile_to(c, so_n, src->s, inc, options, n_options, lname, log_text, f));
  if (!c->temporary) {
    /* The object before its key: a reader that finds the key finds the object. */
    (void)cache_write(c, log_n, *log_text ? *log_text : "", *log_text ? strlen(*log_text) : 0);
    (void)cache_write(c, key_n, key->s, key->n);
  }
  return cache_load(c, so_n, module, f);
}

gp_status_t gp__be_program_compile(gp_module_t *module, const char *source, const char *name,
                                   const char *const *options, int n_options, char **log) {
  const char *f = "gp_program_compile";
  char inc[4096], lname[256];
  GP__TRY(gp__program_include_dir(inc, sizeof inc, f));
  line_name(lname, sizeof lname, name);
  text_t key = {NULL, 0, 0, true}, src = {NULL, 0, 0, true};
  if (!cache_key(&key, &src, inc, source, lname, options, n_options)) {
    free(key.s);
    free(src.s);
    return gp__error(GP_ERROR_OUT_OF_MEMORY, f, "out of host memory");
  }
  cache_t c;
  gp_status_t st = cache_open(&c, f);
  char *log_text = NULL;
  if (st == GP_SUCCESS) {
    st = compile_cached(&c, &key, &src, inc, options, n_options, lname, module, &log_text, f);
    cache_close(&c);
  }
  free(key.s);
  free(src.s);
  if (log_text && log_text[0] == '\0') {
    free(log_text);
    log_text = NULL;
  }
  if (log)
    *log = log_text;
  else
    free(log_text);
  return st;
}
