/*
 * module.c - modules, runtime compilation and occupancy on the CPU backend.
 *
 * A module is a shared object built from dialect sources with the host C++ compiler,
 * as the library's own kernels are built (gpuport/module.h); its kernels are the
 * descriptors GP_KERNEL_EXPORT emitted, found with dlsym as `gp__kernel_<name>`. The
 * image is checked before dlopen (src/image.c), so that a cubin, a HIP code object,
 * PTX text or a truncated file is reported as such instead of crashing the loader.
 *
 * gp_program_compile writes the source to a cache directory and runs the compiler
 * (GP_CC, default cc) with posix_spawn, its output going to a log file. The result is
 * cached under a hash of everything that decides it (source, name, options, compiler
 * command, include directory, the gpuport headers' sizes and times, the library and
 * descriptor ABI versions); the exact key text is stored beside the object and
 * compared on a hit, so a hash collision cannot hand back the wrong object.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
  int nkernels;
  gp_kernel_t kernels[GP__MAX_MODULE_KERNELS]; /* handed out, for gp__kernel_forget */
};

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

static char *read_file(const char *path, size_t *len);

/* ---- modules ------------------------------------------------------------------------------ */

static gp_status_t open_dl(gp_module_t *module, const char *path, const char *func, const char *what) {
  struct gp_module_s *m = calloc(1, sizeof(*m));
  if (m == NULL) return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "out of host memory");
  /* A name without a slash would be searched for in the library path. */
  char buf[4096];
  if (strchr(path, '/') == NULL) {
    path_fmt(buf, sizeof buf, "./%s", path);
    path = buf;
  }
  m->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (m->dl == NULL) {
    const char *e = dlerror();
    free(m);
    return gp__error(GP_ERROR_INVALID_IMAGE, func,
                     "%s cannot be loaded: %s (a module's kernels need the executor symbols of "
                     "the gpuport library in the process: link it shared, or with -rdynamic)",
                     what, e ? e : "dlopen failed");
  }
  m->magic = GP__MODULE_MAGIC;
  *module = m;
  return GP_SUCCESS;
}

gp_status_t gp__be_module_load(gp_module_t *module, const char *path) {
  const char *f = "gp_module_load";
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return gp__error(errno == ENOENT ? GP_ERROR_NOT_FOUND : GP_ERROR_INVALID_VALUE, f,
                     "'path' (%s) cannot be opened: %s", path, strerror(errno));
  close(fd);
  char what[600];
  path_fmt(what, sizeof what, "'path' (%s)", path);
  size_t n = 0;
  unsigned char *image = (unsigned char *)read_file(path, &n); /* checked whole, see above */
  if (image == NULL)
    return gp__error(GP_ERROR_OUT_OF_MEMORY, f, "cannot read %s: %s", what, strerror(errno));
  gp_status_t st = gp__image_check(image, n, f, what);
  free(image);
  GP__TRY(st);
  return open_dl(module, path, f, what);
}

gp_status_t gp__be_module_load_data(gp_module_t *module, const void *image, size_t bytes) {
  const char *f = "gp_module_load_data";
  GP__TRY(gp__image_check(image, bytes, f, "'image'"));
  /* dlopen reads files: the image goes to a temporary file, removed once mapped. */
  const char *tmp = getenv("TMPDIR");
  char path[4096];
  path_fmt(path, sizeof path, "%s/gpuport-module-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0)
    return gp__error(GP_ERROR_OUT_OF_MEMORY, f, "cannot create a temporary file %s: %s", path,
                     strerror(errno));
  const unsigned char *p = image;
  size_t left = bytes;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w <= 0) {
      int e = errno;
      close(fd);
      unlink(path);
      return gp__error(GP_ERROR_OUT_OF_MEMORY, f, "cannot write the image to %s: %s", path,
                       strerror(e));
    }
    p += w;
    left -= (size_t)w;
  }
  close(fd);
  gp_status_t st = open_dl(module, path, f, "'image'");
  unlink(path);
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
  int i = 0;
  while (i < m->nkernels && m->kernels[i] != k) i++;
  if (i == m->nkernels && i < GP__MAX_MODULE_KERNELS) m->kernels[m->nkernels++] = k;
  *kernel = k;
  return GP_SUCCESS;
}

gp_status_t gp__be_module_unload(gp_module_t m) {
  for (int i = 0; i < m->nkernels; i++) gp__kernel_forget(m->kernels[i]);
  int rc = dlclose(m->dl);
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

static bool file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  text_t t = {NULL, 0, 0, true};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) text_add(&t, buf, n);
  fclose(f);
  if (!t.ok) {
    free(t.s);
    return NULL;
  }
  if (len) *len = t.n;
  if (t.s == NULL) t.s = calloc(1, 1);
  return t.s;
}

/* Writes data to path through a temporary file and a rename, so readers never see a
 * partial file. */
static bool write_file_atomic(const char *path, const char *data, size_t n) {
  char tmp[4200];
  path_fmt(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (f == NULL) return false;
  bool ok = fwrite(data, 1, n, f) == n;
  ok = fclose(f) == 0 && ok;
  if (ok) ok = rename(tmp, path) == 0;
  if (!ok) unlink(tmp);
  return ok;
}

static bool mkdirs(const char *dir) {
  char p[4096];
  path_fmt(p, sizeof p, "%s", dir);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0700) != 0 && errno != EEXIST) return false;
    *s = '/';
  }
  return mkdir(p, 0700) == 0 || errno == EEXIST;
}

/* ---- runtime compilation: where things are ----------------------------------------------- */

static void cache_dir(char *out, size_t n) {
  const char *e = getenv("GP_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (e && *e)
    path_fmt(out, n, "%s", e);
  else if (xdg && *xdg)
    path_fmt(out, n, "%s/gpuport", xdg);
  else if (home && *home)
    path_fmt(out, n, "%s/.cache/gpuport", home);
  else
    path_fmt(out, n, "/tmp/gpuport-cache-%ld", (long)getuid());
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

static pthread_mutex_t g_compile_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned g_compile_seq;

/* Compiles src_text into so_path (through temporary files next to it); the log text into
 * *log_text. GP_ERROR_INVALID_IMAGE when the compiler fails. */
static gp_status_t compile_to(const char *so_path, const char *src_text, const char *inc,
                              const char *const *options, int n_options, const char *name,
                              char **log_text, const char *func) {
  pthread_mutex_lock(&g_compile_mu);
  unsigned seq = ++g_compile_seq;
  pthread_mutex_unlock(&g_compile_mu);
  char src[4200], out[4200], logp[4200]; /* so_path is shorter than 4096 */
  path_fmt(src, sizeof src, "%s.%ld.%u.cu", so_path, (long)getpid(), seq);
  path_fmt(out, sizeof out, "%s.%ld.%u.tmp", so_path, (long)getpid(), seq);
  path_fmt(logp, sizeof logp, "%s.%ld.%u.log", so_path, (long)getpid(), seq);
  if (!write_file_atomic(src, src_text, strlen(src_text)))
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
    *log_text = read_file(logp, NULL);
    if (rc < 0) {
      st = gp__error(GP_ERROR_NOT_FOUND, func, "cannot run the host compiler '%s' (GP_CC): %s",
                     words[0], strerror(errno));
    } else if (rc != 0) {
      char ex[700];
      gp__program_log_excerpt(ex, sizeof ex, *log_text);
      st = gp__error(GP_ERROR_INVALID_IMAGE, func, "'%s' does not compile (%s exited with %d): %s",
                     name, words[0], rc, ex);
    } else if (rename(out, so_path) != 0) {
      st = gp__error(GP_ERROR_OUT_OF_MEMORY, func, "cannot store %s: %s", so_path, strerror(errno));
    }
  }
  free(argv);
  unlink(src);
  unlink(out);
  unlink(logp);
  return st;
}

gp_status_t gp__be_program_compile(gp_module_t *module, const char *source, const char *name,
                                   const char *const *options, int n_options, char **log) {
  const char *f = "gp_program_compile";
  char inc[4096], dir[4096], ccbuf[1024], lname[256];
  GP__TRY(gp__program_include_dir(inc, sizeof inc, f));
  cache_dir(dir, sizeof dir);
  if (!mkdirs(dir))
    return gp__error(GP_ERROR_OUT_OF_MEMORY, f, "cannot create the cache directory %s (GP_CACHE_DIR): %s",
                     dir, strerror(errno));
  line_name(lname, sizeof lname, name);
  /* The key: everything the object depends on, as text. */
  text_t key = {NULL, 0, 0, true};
  char *words[32];
  int nw = compiler_words(ccbuf, sizeof ccbuf, words, 32);
  text_fmt(&key, "gpuport cpu module %d.%d.%d abi %u\ncompiler", GP_VERSION_MAJOR, GP_VERSION_MINOR,
           GP_VERSION_PATCH, GP_KERNEL_ABI_VERSION);
  for (int i = 0; i < nw; i++) text_fmt(&key, " %s", words[i]);
  text_fmt(&key, "\nwarp %d\ninclude %s\n", gp__cpu_warp_size(), inc);
  header_stamp(&key, inc);
  for (int i = 0; i < n_options; i++) {
    text_str(&key, "option ");
    text_str(&key, options[i]);
    text_str(&key, "\n");
  }
  text_t src = {NULL, 0, 0, true};
  text_fmt(&src, "#line 1 \"%s\"\n", lname);
  text_str(&src, source);
  text_str(&key, src.s ? src.s : "");
  if (!key.ok || !src.ok) {
    free(key.s);
    free(src.s);
    return gp__error(GP_ERROR_OUT_OF_MEMORY, f, "out of host memory");
  }
  u128_t h = fnv(fnv_init(), key.s, key.n);
  char so_path[4096], key_path[4096], log_path[4096];
  const unsigned long long hi = (unsigned long long)(h >> 64), lo = (unsigned long long)h;
  if (!path_fmt(so_path, sizeof so_path, "%s/%016llx%016llx.so", dir, hi, lo) ||
      !path_fmt(key_path, sizeof key_path, "%s/%016llx%016llx.key", dir, hi, lo) ||
      !path_fmt(log_path, sizeof log_path, "%s/%016llx%016llx.log", dir, hi, lo)) {
    free(key.s);
    free(src.s);
    return gp__error(GP_ERROR_INVALID_VALUE, f, "the cache directory name (%s) is too long", dir);
  }

  gp_status_t st = GP_SUCCESS;
  char *log_text = NULL;
  size_t stored_len = 0;
  char *stored = read_file(key_path, &stored_len);
  bool hit = stored && stored_len == key.n && memcmp(stored, key.s, key.n) == 0 && file_exists(so_path);
  free(stored);
  if (hit) {
    log_text = read_file(log_path, NULL);
    GP__TRACE(GP__SUB_LAUNCH, "gp_program_compile %s: cached %s", lname, so_path);
  } else {
    GP__INFO(GP__SUB_LAUNCH, "gp_program_compile %s: compiling into %s", lname, so_path);
    st = compile_to(so_path, src.s, inc, options, n_options, lname, &log_text, f);
    if (st == GP_SUCCESS) {
      /* The object before its key: a reader that finds the key finds the object. */
      (void)write_file_atomic(log_path, log_text ? log_text : "", log_text ? strlen(log_text) : 0);
      (void)write_file_atomic(key_path, key.s, key.n);
    }
  }
  free(key.s);
  free(src.s);
  if (st == GP_SUCCESS) st = open_dl(module, so_path, f, "the compiled module");
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
