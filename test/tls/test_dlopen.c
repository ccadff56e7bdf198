/*
 * test_dlopen.c - gpuport loaded with dlopen where static TLS is scarce, as Python's
 * ctypes or a plugin host loads it (docs/LAUNCH_ABI.md section 3, "Thread-local
 * storage"). Not linked with gpuport: each test dlopens the library files it is given
 * in its own forked process (Check's fork mode), so every test starts from a fresh
 * static TLS surplus, and calls a few functions through dlsym.
 *
 *   test_dlopen HELPERS LIB...   HELPERS: the directory check.sh built tls_filler_<N>.so,
 *                                tls_reserve.so and tls_omp.so in
 *   test_dlopen --load LIB       one load and exercise (exit status 0 when it worked), for
 *                                the runs under GLIBC_TUNABLES
 *
 * The tests, for each library:
 *   - its PT_TLS segment is at most the executor context (printed, with STATIC_TLS and
 *     the static TLS its dependencies need);
 *   - it loads and runs (a failing call's message, per thread; the vector-add kernel
 *     built into every backend's library, from two threads, where a device exists);
 *   - it loads after filler objects have used the surplus up but for its limit (the
 *     fill is measured in a child with a reserve object of that size in its place; after
 *     the library, not even the reserve fits any more);
 *   - it loads before and after libgomp (an OpenMP object), both then run;
 *   - it loads when glibc reserves the least surplus there is (one namespace, no
 *     optional surplus: GLIBC_TUNABLES=glibc.rtld.nns=1:glibc.rtld.optional_static_tls=0),
 *     unless its dependencies alone need more static TLS than that (printed).
 * `test_dlopen --limit` prints the limit in bytes (check.sh sizes tls_reserve.so by it).
 */
#define GP_BUILD_CPU 1 /* for gp__cpu_ctx_t, whose size is the limit */
#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpuport.h>
#include <gpuport/kernel.h>

/* The library's whole TLS block may be the executor's context, nothing more. */
#define TLS_LIMIT sizeof(gp__cpu_ctx_t)
#define MAX_OBJ 64
#define FILLERS 9 /* tls_filler_<16 << i>.so, i < FILLERS: 16 .. 4096 bytes */
#define LEAST_SURPLUS 144 /* glibc's surplus with rtld.nns=1 and no optional part */

static const char *g_helpers;
static const char **g_libs;
static int g_nlibs;

/* ---- the library's ELF facts ------------------------------------------------------ */
typedef struct elf_facts {
  size_t tls_bytes, tls_align; /* PT_TLS memsz and alignment; 0 without a TLS segment */
  int static_tls;              /* DT_FLAGS has DF_STATIC_TLS */
} elf_facts_t;

/* Reads the program headers and DT_FLAGS of an ELF64 file; 0 on success, else why. */
static const char *elf_read(const char *path, elf_facts_t *f) {
  memset(f, 0, sizeof(*f));
  FILE *fp = fopen(path, "rb");
  if (!fp) return "cannot open";
  const char *why = NULL;
  Elf64_Ehdr eh;
  if (fread(&eh, sizeof eh, 1, fp) != 1 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256) {
    why = "not an ELF64 object";
    goto out;
  }
  Elf64_Phdr dyn = {0};
  for (unsigned i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    if (fseek(fp, (long)(eh.e_phoff + (Elf64_Off)i * sizeof ph), SEEK_SET) != 0 || fread(&ph, sizeof ph, 1, fp) != 1) {
      why = "truncated program headers";
      goto out;
    }
    if (ph.p_type == PT_TLS) f->tls_bytes = ph.p_memsz, f->tls_align = ph.p_align;
    if (ph.p_type == PT_DYNAMIC) dyn = ph;
  }
  for (Elf64_Xword off = 0; dyn.p_filesz && off + sizeof(Elf64_Dyn) <= dyn.p_filesz; off += sizeof(Elf64_Dyn)) {
    Elf64_Dyn d;
    if (fseek(fp, (long)(dyn.p_offset + off), SEEK_SET) != 0 || fread(&d, sizeof d, 1, fp) != 1) {
      why = "truncated dynamic section";
      goto out;
    }
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_FLAGS && (d.d_un.d_val & DF_STATIC_TLS)) f->static_tls = 1;
  }
out:
  fclose(fp);
  return why;
}

/* ---- calling the library through dlsym ----------------------------------------------- */
typedef struct api {
  __typeof__(gp_backend_name) *backend_name;
  __typeof__(gp_device_count) *device_count;
  __typeof__(gp_malloc) *malloc_;
  __typeof__(gp_free) *free_;
  __typeof__(gp_memcpy) *memcpy_;
  __typeof__(gp_launch) *launch;
  __typeof__(gp_device_synchronize) *synchronize;
  __typeof__(gp_last_error_message) *message;
  __typeof__(gp_status_name) *status_name;
  gp_kernel_t vadd; /* gp__bench_vadd (src/kernels/bench.cu), in every backend's library */
} api_t;

static int api_bind(void *h, api_t *a, char *why, size_t len) {
#define BIND(field, name)                                              \
  if (!(*(void **)&a->field = dlsym(h, name))) {                       \
    snprintf(why, len, "no symbol %s: %s", name, dlerror());           \
    return 0;                                                          \
  }
  BIND(backend_name, "gp_backend_name");
  BIND(device_count, "gp_device_count");
  BIND(malloc_, "gp_malloc");
  BIND(free_, "gp_free");
  BIND(memcpy_, "gp_memcpy");
  BIND(launch, "gp_launch");
  BIND(synchronize, "gp_device_synchronize");
  BIND(message, "gp_last_error_message");
  BIND(status_name, "gp_status_name");
  BIND(vadd, "gp__kernel_gp__bench_vadd");
#undef BIND
  return 1;
}

typedef struct vadd_run {
  const api_t *a;
  unsigned long long seed;
  char why[512]; /* "" when it worked */
} vadd_run_t;

static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* c = a + b over n floats of fresh random inputs, c poisoned first and checked element by
 * element against the float64 sum rounded to float: exactly the float sum, since double
 * rounding is innocuous for + when 53 >= 2 * 24 + 2 (Figueroa, "When is double rounding
 * innocuous?", 1995), so any other value is a fault. */
static void *vadd_check(void *arg) {
  vadd_run_t *r = (vadd_run_t *)arg;
  const api_t *a = r->a;
  const int n = 1 << 16;
  const size_t bytes = (size_t)n * sizeof(float);
  float *h = malloc(3 * bytes), *d[3] = {NULL, NULL, NULL};
  r->why[0] = '\0';
  if (!h) {
    snprintf(r->why, sizeof r->why, "no host memory");
    return NULL;
  }
  uint64_t s = r->seed;
  for (int i = 0; i < 2 * n; i++) h[i] = (float)((double)(mix(&s) >> 11) * 0x1p-53 * 2.0 - 1.0);
  memset(h + 2 * n, 0xff, bytes); /* NaN: an element left unwritten stays NaN */
  gp_status_t st = GP_SUCCESS;
  for (int k = 0; k < 3 && st == GP_SUCCESS; k++) st = a->malloc_((void **)&d[k], bytes);
  for (int k = 0; k < 3 && st == GP_SUCCESS; k++) st = a->memcpy_(d[k], h + (size_t)k * n, bytes);
  int nn = n;
  void *args[] = {&nn, &d[0], &d[1], &d[2]};
  if (st == GP_SUCCESS) st = a->launch(a->vadd, gp_dim3((unsigned)n / 256, 1, 1), gp_dim3(256, 1, 1), 0, NULL, args);
  if (st == GP_SUCCESS) st = a->synchronize();
  if (st == GP_SUCCESS) st = a->memcpy_(h + 2 * n, d[2], bytes);
  if (st != GP_SUCCESS) snprintf(r->why, sizeof r->why, "%s: %s", a->status_name(st), a->message());
  for (int i = 0; i < n && st == GP_SUCCESS && !r->why[0]; i++) {
    float want = (float)((double)h[i] + (double)h[n + i]);
    if (!(h[2 * n + i] == want))
      snprintf(r->why, sizeof r->why, "c[%d] = %a, want %a (seed 0x%llx)", i, (double)h[2 * n + i], (double)want,
               r->seed);
  }
  for (int k = 0; k < 3; k++) a->free_(d[k]);
  free(h);
  return NULL;
}

typedef struct fail_run {
  const api_t *a;
  char before[64], after[256];
} fail_run_t;

/* A thread's message: "" until one of its calls fails, then that call's. */
static void *fail_in_thread(void *arg) {
  fail_run_t *r = (fail_run_t *)arg;
  snprintf(r->before, sizeof r->before, "%s", r->a->message());
  (void)r->a->malloc_(NULL, 32);
  snprintf(r->after, sizeof r->after, "%s", r->a->message());
  return NULL;
}

static unsigned long long fresh_seed(void) {
  const char *e = getenv("GP_TEST_SEED");
  if (e && *e) return strtoull(e, NULL, 0);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (unsigned long long)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (unsigned long long)getpid();
}

/* Calls a few functions of the loaded library; 1 when all behaved, else why. */
static int exercise(void *h, const char *lib, char *why, size_t len) {
  api_t a;
  if (!api_bind(h, &a, why, len)) return 0;
  gp_status_t st = a.malloc_(NULL, 16);
  if (st != GP_ERROR_INVALID_VALUE || !strstr(a.message(), "gp_malloc")) {
    snprintf(why, len, "gp_malloc(NULL) -> %s, message '%s'", a.status_name(st), a.message());
    return 0;
  }
  fail_run_t fr = {&a, "", ""};
  pthread_t t;
  if (pthread_create(&t, NULL, fail_in_thread, &fr) != 0) return snprintf(why, len, "pthread_create"), 0;
  pthread_join(t, NULL);
  if (fr.before[0] || !strstr(fr.after, "gp_malloc") || !strstr(a.message(), "gp_malloc")) {
    snprintf(why, len, "messages are not per thread: new thread '%s' then '%s', this thread '%s'", fr.before,
             fr.after, a.message());
    return 0;
  }
  int n = 0;
  st = a.device_count(&n);
  if (st != GP_SUCCESS || n < 1) {
    if (!a.message()[0]) return snprintf(why, len, "gp_device_count failed without a message"), 0;
    printf("%s (%s): no device (%s): kernel not run\n", lib, a.backend_name(), a.message());
    return 1;
  }
  vadd_run_t r1 = {&a, fresh_seed(), ""}, r2 = {&a, 0, ""};
  r2.seed = r1.seed ^ 0x5deece66dull;
  printf("%s (%s): vector add, seed 0x%llx (replay with GP_TEST_SEED=0x%llx)\n", lib, a.backend_name(), r1.seed,
         r1.seed);
  vadd_check(&r1); /* this thread, then a new one: each runs blocks on its own context */
  if (pthread_create(&t, NULL, vadd_check, &r2) != 0) return snprintf(why, len, "pthread_create"), 0;
  pthread_join(t, NULL);
  if (r1.why[0] || r2.why[0]) return snprintf(why, len, "vector add: %s%s", r1.why, r2.why), 0;
  return 1;
}

/* ---- loading ------------------------------------------------------------------------ */
static void *load(const char *path, char *why, size_t len) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL); /* as ctypes.CDLL loads */
  if (!h) snprintf(why, len, "%s", dlerror());
  return h;
}

static void helper(char *out, size_t len, const char *name) { snprintf(out, len, "%s/%s", g_helpers, name); }

static void filler(char *out, size_t len, int i) {
  char name[64];
  snprintf(name, sizeof name, "tls_filler_%d.so", 16 << i);
  helper(out, len, name);
}

/* Paths of the objects that loading lib brings in besides itself (its dependencies not
 * in this process yet), in load order; measured in a child. Returns their number. */
static int dependencies(const char *lib, char deps[][PATH_MAX]) {
  int fd[2];
  ck_assert_int_eq(pipe(fd), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(fd[0]);
    struct link_map *before = NULL, *m;
    void *self = dlopen(NULL, RTLD_NOW);
    dlinfo(self, RTLD_DI_LINKMAP, &before);
    int known = 0;
    for (m = before; m; m = m->l_next) known++;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) _exit(2);
    int i = 0;
    for (m = before; m; m = m->l_next, i++)
      if (i >= known && m->l_name[0] && strcmp(m->l_name, lib) != 0 && write(fd[1], m->l_name, strlen(m->l_name) + 1) < 0)
        _exit(3);
    _exit(0);
  }
  close(fd[1]);
  static char buf[MAX_OBJ * PATH_MAX];
  size_t got = 0;
  ssize_t k;
  while (got < sizeof buf && (k = read(fd[0], buf + got, sizeof buf - got)) > 0) got += (size_t)k;
  close(fd[0]);
  int st = 0;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s does not load in a fresh process (status 0x%x)", lib, st);
  int n = 0;
  for (size_t p = 0; p < got && n < MAX_OBJ; p += strlen(buf + p) + 1) snprintf(deps[n++], PATH_MAX, "%s", buf + p);
  return n;
}

/* In a child: the dependencies, then the reserve, then each filler from the largest down
 * that still fits. Returns the bit mask of fillers that fitted. */
static unsigned fill_mask(char deps[][PATH_MAX], int ndeps) {
  int fd[2];
  ck_assert_int_eq(pipe(fd), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(fd[0]);
    char p[PATH_MAX], why[512];
    for (int i = 0; i < ndeps; i++)
      if (!load(deps[i], why, sizeof why)) _exit(2);
    helper(p, sizeof p, "tls_reserve.so");
    if (!load(p, why, sizeof why)) _exit(3); /* not even the limit is free at start */
    unsigned mask = 0;
    for (int i = FILLERS - 1; i >= 0; i--) {
      filler(p, sizeof p, i);
      if (load(p, why, sizeof why)) mask |= 1u << i;
    }
    _exit(write(fd[1], &mask, sizeof mask) == sizeof mask ? 0 : 4);
  }
  close(fd[1]);
  unsigned mask = 0;
  ssize_t k = read(fd[0], &mask, sizeof mask);
  close(fd[0]);
  int st = 0;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && k == (ssize_t)sizeof mask,
                "the fill probe failed (status 0x%x; 3: %zu bytes of static TLS are not free at start)", st,
                (size_t)TLS_LIMIT);
  /* Largest first, halving: once one did not fit, what is left ends below the smallest. */
  ck_assert_msg(!(mask >> (FILLERS - 1)), "the static TLS surplus is larger than the fillers can use up");
  return mask;
}

/* ---- the tests ------------------------------------------------------------------------ */
START_TEST(tls_block_is_the_context) {
  const char *lib = g_libs[_i];
  elf_facts_t f;
  const char *why = elf_read(lib, &f);
  ck_assert_msg(why == NULL, "%s: %s", lib, why);
  printf("%s: PT_TLS %zu bytes (align %zu), %s; limit %zu bytes (the executor context)\n", lib, f.tls_bytes,
         f.tls_align, f.static_tls ? "STATIC_TLS" : "not STATIC_TLS", (size_t)TLS_LIMIT);
  static char deps[MAX_OBJ][PATH_MAX];
  int nd = dependencies(lib, deps);
  for (int i = 0; i < nd; i++) {
    elf_facts_t d;
    if (elf_read(deps[i], &d) == NULL && d.static_tls && d.tls_bytes)
      printf("  needs %s: PT_TLS %zu bytes, STATIC_TLS\n", deps[i], d.tls_bytes);
  }
  fflush(stdout);
  ck_assert_msg(f.tls_bytes <= TLS_LIMIT, "%s: PT_TLS is %zu bytes, above the %zu of the executor context", lib,
                f.tls_bytes, (size_t)TLS_LIMIT);
  ck_assert_msg(f.tls_align <= 16, "%s: PT_TLS alignment %zu (more than 16 may not fit glibc's static TLS)", lib,
                f.tls_align);
  /* The GPU backends have no executor, so no context: no TLS block at all, and nothing
   * of theirs is static (docs/LAUNCH_ABI.md, the table of real sizes). */
  const char *base = strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib;
  if (strncmp(base, "libgpuport-cuda", 15) == 0 || strncmp(base, "libgpuport-hip", 14) == 0)
    ck_assert_msg(f.tls_bytes == 0 && !f.static_tls, "%s: a GPU backend's library has PT_TLS %zu bytes%s", lib,
                  f.tls_bytes, f.static_tls ? " and STATIC_TLS" : "");
}
END_TEST

START_TEST(loads_and_runs) {
  char why[1024];
  void *h = load(g_libs[_i], why, sizeof why);
  ck_assert_msg(h != NULL, "dlopen: %s", why);
  ck_assert_msg(exercise(h, g_libs[_i], why, sizeof why), "%s: %s", g_libs[_i], why);
}
END_TEST

START_TEST(loads_into_nearly_full_static_tls) {
  const char *lib = g_libs[_i];
  static char deps[MAX_OBJ][PATH_MAX];
  int nd = dependencies(lib, deps);
  unsigned mask = fill_mask(deps, nd);
  char p[PATH_MAX], why[1024];
  for (int i = 0; i < nd; i++) ck_assert_msg(load(deps[i], why, sizeof why) != NULL, "%s: %s", deps[i], why);
  unsigned took = 0;
  for (int i = FILLERS - 1; i >= 0; i--) {
    if (!(mask & (1u << i))) continue;
    filler(p, sizeof p, i);
    ck_assert_msg(load(p, why, sizeof why) != NULL, "%s: %s", p, why);
    took += 16u << i;
  }
  printf("%s: fillers took %u bytes of static TLS, leaving %zu to %zu for it\n", lib, took, (size_t)TLS_LIMIT,
         (size_t)TLS_LIMIT + 15);
  fflush(stdout);
  void *h = load(lib, why, sizeof why);
  ck_assert_msg(h != NULL, "dlopen after the fill: %s", why);
  /* The model checked: what the library took is gone (less than 16 bytes are left), and a
   * library without TLS of its own took nothing. */
  elf_facts_t f;
  ck_assert(elf_read(lib, &f) == NULL);
  helper(p, sizeof p, "tls_reserve.so");
  void *r = load(p, why, sizeof why);
  if (f.tls_bytes >= 16)
    ck_assert_msg(r == NULL, "static TLS was not nearly used up: the reserve still loads after the library");
  else
    ck_assert_msg(r != NULL, "a library without TLS of its own took static TLS: %s", why);
  ck_assert_msg(exercise(h, lib, why, sizeof why), "%s: %s", lib, why);
}
END_TEST

static void omp_run(void *h) {
  long (*sum)(long, int *) = (long (*)(long, int *))dlsym(h, "gp_tls_omp_sum");
  ck_assert_msg(sum != NULL, "gp_tls_omp_sum: %s", dlerror());
  int threads = 0;
  long s = sum(100000, &threads);
  ck_assert_msg(s == 100000L * 100001L / 2 && threads >= 1, "OpenMP sum %ld with %d threads", s, threads);
}

static void beside_omp(const char *lib, int omp_first) {
  char p[PATH_MAX], why[1024];
  helper(p, sizeof p, "tls_omp.so");
  void *o = omp_first ? load(p, why, sizeof why) : NULL;
  if (omp_first) ck_assert_msg(o != NULL, "%s: %s", p, why);
  void *h = load(lib, why, sizeof why);
  ck_assert_msg(h != NULL, "dlopen %s: %s", omp_first ? "after libgomp" : "first", why);
  if (!omp_first) {
    o = load(p, why, sizeof why);
    ck_assert_msg(o != NULL, "libgomp after the library: %s", why);
  }
  omp_run(o);
  ck_assert_msg(exercise(h, lib, why, sizeof why), "%s: %s", lib, why);
  omp_run(o);
}

START_TEST(loads_after_libgomp) { beside_omp(g_libs[_i], 1); }
END_TEST

START_TEST(loads_before_libgomp) { beside_omp(g_libs[_i], 0); }
END_TEST

/* The least surplus glibc reserves: 144 bytes, for one library such as libgomp
 * (elf/dl-tls.c, OTHER_IE_TLS); the library must fit in it. */
START_TEST(loads_with_least_surplus) {
  static char deps[MAX_OBJ][PATH_MAX];
  int nd = dependencies(g_libs[_i], deps);
  size_t need = 0;
  for (int i = 0; i < nd; i++) {
    elf_facts_t d;
    if (elf_read(deps[i], &d) == NULL && d.static_tls) need += d.tls_bytes;
  }
  if (need > LEAST_SURPLUS - TLS_LIMIT) {
    printf("%s: its dependencies need %zu bytes of static TLS, more than glibc's least surplus leaves: "
           "not loaded with the least surplus\n", g_libs[_i], need);
    return;
  }
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    setenv("GLIBC_TUNABLES", "glibc.rtld.nns=1:glibc.rtld.optional_static_tls=0", 1);
    execl("/proc/self/exe", "test_dlopen", "--load", g_libs[_i], (char *)NULL);
    _exit(127);
  }
  int st = 0;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "%s under GLIBC_TUNABLES=glibc.rtld.nns=1:glibc.rtld.optional_static_tls=0: status 0x%x",
                g_libs[_i], st);
}
END_TEST

static int load_one(const char *lib) {
  char why[1024];
  void *h = load(lib, why, sizeof why);
  if (!h || !exercise(h, lib, why, sizeof why)) {
    fprintf(stderr, "%s: %s\n", lib, why);
    return 1;
  }
  printf("%s: loaded and ran (GLIBC_TUNABLES=%s)\n", lib, getenv("GLIBC_TUNABLES") ? getenv("GLIBC_TUNABLES") : "");
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--load")) return load_one(argv[2]);
  if (argc == 2 && !strcmp(argv[1], "--limit")) return printf("%zu\n", (size_t)TLS_LIMIT) < 0;
  if (argc < 3) {
    fprintf(stderr, "usage: %s HELPERS LIB... | --load LIB\n", argv[0]);
    return 2;
  }
  g_helpers = argv[1];
  g_libs = (const char **)argv + 2;
  g_nlibs = argc - 2;
  Suite *s = suite_create("dlopen");
  TCase *tc = tcase_create("static TLS");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, tls_block_is_the_context, 0, g_nlibs);
  tcase_add_loop_test(tc, loads_and_runs, 0, g_nlibs);
  tcase_add_loop_test(tc, loads_into_nearly_full_static_tls, 0, g_nlibs);
  tcase_add_loop_test(tc, loads_after_libgomp, 0, g_nlibs);
  tcase_add_loop_test(tc, loads_before_libgomp, 0, g_nlibs);
  tcase_add_loop_test(tc, loads_with_least_surplus, 0, g_nlibs);
  suite_add_tcase(s, tc);
  /* Its own runner, not test/check_util.h's run_suite: this loader links neither gpuport
   * nor its headers' inline code (it must see the library as a dlopen host does), and
   * every backend's library loads and answers without a device, so nothing is skipped. */
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_FORK); /* each test from a fresh static TLS surplus */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
