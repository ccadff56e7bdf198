/*
 * test_module_checks.c - what keeps bad input from reaching a loader or a stray
 * descriptor from being read (gpuport/module.h, gpuport/kernel_abi.h):
 *   - image files: only regular files are read (a device or a FIFO is refused at once,
 *     never read or waited on), at most the documented size; a corrupt shared object
 *     (every table dlopen reads is damaged in turn) is refused before dlopen sees it, and
 *     loading from memory leaves no file behind; the HIP and CUDA image checks are
 *     bounded by the real size;
 *   - descriptors: a stray symbol or kernel pointer (an integer, a misaligned pointer, a
 *     page that cannot be read) is GP_ERROR_INVALID_HANDLE, found so without reading it;
 *     the kernels of an unloaded module are too, and the first module a process loads is
 *     unmapped by its unload like any other (no STB_GNU_UNIQUE symbol makes it NODELETE);
 *   - the compile cache is private: a cache directory another user could write to, a
 *     symbolic link, a directory of another owner, a planted object that others may
 *     write or that is a link: none is trusted, the compile happens in a private
 *     directory, said so in the log, and the planted object's constructor never runs.
 * The suite runs in a private TMPDIR and checks at the end that nothing was left there.
 *
 * The shared-object and cache cases need the cpu backend (the images are host shared
 * objects); the rest runs on every backend.
 */
#include <check.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gpuport.h>
#include "check_util.h"
#include "module.h"

GP_KERNEL_DECLARE(kt_vadd);
GP_SYMBOL_DECLARE(kt_coef);

static char g_tmp[512]; /* the suite's TMPDIR */

static bool cpu(void) { return gp_backend() == GP_BACKEND_CPU; }

/* ---- files ---------------------------------------------------------------------------------- */

static void path_in(char *out, size_t n, const char *dir, const char *name) {
  ck_assert_int_lt(snprintf(out, n, "%s/%s", dir, name), (int)n);
}

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *p = malloc((size_t)size + 1);
  ck_assert_int_eq(fread(p, 1, (size_t)size, f), size);
  fclose(f);
  *n = (size_t)size;
  return p;
}

static void write_all(const char *path, const void *p, size_t n, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
  ck_assert_msg(fd >= 0, "cannot create %s: %s", path, strerror(errno));
  ck_assert_int_eq(write(fd, p, n), (ssize_t)n);
  close(fd);
  ck_assert_int_eq(chmod(path, mode), 0);
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (d == NULL) return -1;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return n;
}

/* The name of the one entry of dir ending in suffix. */
static void entry_with(char *out, size_t n, const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int found = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t l = strlen(e->d_name), s = strlen(suffix);
    if (l > s && strcmp(e->d_name + l - s, suffix) == 0) {
      snprintf(out, n, "%s", e->d_name);
      found++;
    }
  }
  closedir(d);
  ck_assert_msg(found == 1, "%d entries *%s in %s", found, suffix, dir);
}

static void remove_tree(const char *dir) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* A fresh private directory inside the suite's TMPDIR. */
static void make_dir(char *out, size_t n, const char *what) {
  snprintf(out, n, "%s/%s-XXXXXX", g_tmp, what);
  ck_assert_ptr_nonnull(mkdtemp(out));
}

/* ---- a module to damage ------------------------------------------------------------------------ */

static const char k_src[] =
    "#include <gpuport/kernel.h>\n"
    "#ifndef KT_FACTOR\n"
    "#define KT_FACTOR 2\n"
    "#endif\n"
    "__constant__ float kt_gain[4];\n"
    "GP_SYMBOL_EXPORT(kt_gain)\n"
    "GP_KERNEL void kt_scale(int n, float *x) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] = x[i] * ((float)KT_FACTOR + kt_gain[0]);\n"
    "}\n"
    "GP_KERNEL_EXPORT(kt_scale)\n";

/* Compiles k_src (options as given) into a cache directory of its own; *module loaded,
 * the object's bytes in *image when image is not NULL. */
static void compile_module(const char *cache, const char *const *options, int n_options,
                           gp_module_t *module, unsigned char **image, size_t *n) {
  setenv("GP_CACHE_DIR", cache, 1);
  OK(gp_program_compile(module, k_src, "kt_scale.cu", options, n_options, NULL));
  if (image) {
    char so[256], path[700];
    entry_with(so, sizeof so, cache, ".so");
    path_in(path, sizeof path, cache, so);
    *image = read_all(path, n);
  }
}

static void run_factor(gp_kernel_t k, int factor);

/* Launches kt_scale on 100 floats x[i] = i and checks y = 2 x (kt_gain is 0). */
static void run_scale(gp_kernel_t k) { run_factor(k, 2); }

static void run_factor(gp_kernel_t k, int factor) {
  enum { N = 100 };
  float h[N], *d;
  for (int i = 0; i < N; i++) h[i] = (float)i;
  OK(gp_malloc((void **)&d, sizeof h));
  OK(gp_memcpy(d, h, sizeof h));
  int n = N;
  void *args[] = {&n, &d};
  OK(gp_launch(k, gp_dim3(1, 1, 1), gp_dim3(128, 1, 1), 0, NULL, args));
  OK(gp_memcpy(h, d, sizeof h));
  OK(gp_free(d));
  for (int i = 0; i < N; i++) ck_assert_float_eq(h[i], (float)factor * (float)i);
}

/* ---- image files --------------------------------------------------------------------------- */

START_TEST(only_regular_files_are_read) {
  gp_module_t m = (gp_module_t)(uintptr_t)1;
  /* A device: refused before anything is read (it was read without end). */
  FAILS(gp_module_load(&m, "/dev/zero"), GP_ERROR_INVALID_VALUE, "regular file");
  ck_assert_ptr_null(m);
  FAILS(gp_module_load(&m, "/dev/null"), GP_ERROR_INVALID_VALUE, "regular file");
  char dir[600], fifo[700], big[700], empty[700];
  make_dir(dir, sizeof dir, "files");
  /* A FIFO without a writer: the open does not wait for one (it blocked for ever). */
  path_in(fifo, sizeof fifo, dir, "pipe");
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  FAILS(gp_module_load(&m, fifo), GP_ERROR_INVALID_VALUE, "regular file");
  FAILS(gp_module_load(&m, dir), GP_ERROR_INVALID_VALUE, "regular file");
  /* Larger than the cap (a sparse file: nothing is read). */
  path_in(big, sizeof big, dir, "big.so");
  int fd = open(big, O_WRONLY | O_CREAT, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)GP_MODULE_MAX_FILE_BYTES + 1), 0);
  close(fd);
  FAILS(gp_module_load(&m, big), GP_ERROR_INVALID_IMAGE, "at most");
  path_in(empty, sizeof empty, dir, "empty.so");
  write_all(empty, "", 0, 0600);
  FAILS(gp_module_load(&m, empty), GP_ERROR_INVALID_IMAGE, "not a code image");
  FAILS(gp_module_load(&m, "/nonexistent/k.so"), GP_ERROR_NOT_FOUND, "k.so");
  ck_assert_ptr_null(m);
  remove_tree(dir);
}
END_TEST

/* ---- corrupt shared objects -------------------------------------------------------------------- */

typedef struct elf_view {
  unsigned char *p;
  size_t n;
  Elf64_Ehdr *h;
} elf_view_t;

static Elf64_Phdr *phdr(elf_view_t *v, uint32_t type) {
  for (int i = 0; i < v->h->e_phnum; i++) {
    Elf64_Phdr *ph = (Elf64_Phdr *)(v->p + v->h->e_phoff) + i;
    if (ph->p_type == type) return ph;
  }
  ck_abort_msg("no segment of type %u", type);
  return NULL;
}

/* File offset of virtual address va (in a loadable segment). */
static size_t va_off(elf_view_t *v, uint64_t va) {
  for (int i = 0; i < v->h->e_phnum; i++) {
    Elf64_Phdr *ph = (Elf64_Phdr *)(v->p + v->h->e_phoff) + i;
    if (ph->p_type == PT_LOAD && va >= ph->p_vaddr && va < ph->p_vaddr + ph->p_filesz)
      return (size_t)(ph->p_offset + va - ph->p_vaddr);
  }
  ck_abort_msg("address 0x%llx is not in the file", (unsigned long long)va);
  return 0;
}

static Elf64_Dyn *dyn(elf_view_t *v, int64_t tag) {
  Elf64_Phdr *d = phdr(v, PT_DYNAMIC);
  for (Elf64_Dyn *e = (Elf64_Dyn *)(v->p + va_off(v, d->p_vaddr)); e->d_tag != DT_NULL; e++)
    if (e->d_tag == tag) return e;
  return NULL;
}

static Elf64_Rela *first_rela(elf_view_t *v) {
  Elf64_Dyn *r = dyn(v, DT_RELA);
  ck_assert_ptr_nonnull(r);
  return (Elf64_Rela *)(v->p + va_off(v, r->d_un.d_ptr));
}

/* One damage each: what dlopen would read out of bounds, write anywhere, or fault on. */
static void c_phoff(elf_view_t *v) { v->h->e_phoff = v->n - 8; }
static void c_phnum(elf_view_t *v) { v->h->e_phnum = 0xfff0; }
static void c_phentsize(elf_view_t *v) { v->h->e_phentsize = 40; }
static void c_load_offset(elf_view_t *v) { phdr(v, PT_LOAD)->p_offset = v->n + 4096; }
static void c_load_filesz(elf_view_t *v) {
  Elf64_Phdr *ph = phdr(v, PT_LOAD);
  ph->p_filesz = ph->p_memsz + 4096;
}
static void c_load_align(elf_view_t *v) { phdr(v, PT_LOAD)->p_align = 3000; }
static void c_load_order(elf_view_t *v) {
  for (int i = v->h->e_phnum - 1; i >= 0; i--) { /* the last loadable segment moves first */
    Elf64_Phdr *ph = (Elf64_Phdr *)(v->p + v->h->e_phoff) + i;
    if (ph->p_type == PT_LOAD) {
      ph->p_vaddr = 0;
      ph->p_offset = 0;
      return;
    }
  }
}
static void c_dynamic(elf_view_t *v) { phdr(v, PT_DYNAMIC)->p_vaddr += 1u << 30; }
static void c_no_dt_null(elf_view_t *v) {
  Elf64_Phdr *d = phdr(v, PT_DYNAMIC);
  Elf64_Dyn *e = (Elf64_Dyn *)(v->p + va_off(v, d->p_vaddr));
  for (size_t i = 0; i < d->p_memsz / sizeof *e; i++)
    if (e[i].d_tag == DT_NULL) e[i].d_tag = DT_DEBUG;
}
static void c_strtab(elf_view_t *v) { dyn(v, DT_STRTAB)->d_un.d_ptr += 1u << 30; }
static void c_strsz(elf_view_t *v) { dyn(v, DT_STRSZ)->d_un.d_val = 1u << 30; }
static void c_needed(elf_view_t *v) {
  Elf64_Dyn *n = dyn(v, DT_NEEDED);
  ck_assert_ptr_nonnull(n);
  n->d_un.d_val = dyn(v, DT_STRSZ)->d_un.d_val + 100;
}
static void c_symtab(elf_view_t *v) { dyn(v, DT_SYMTAB)->d_un.d_ptr += 1u << 30; }
static void c_gnu_hash(elf_view_t *v) {
  uint32_t *gh = (uint32_t *)(v->p + va_off(v, dyn(v, DT_GNU_HASH)->d_un.d_ptr));
  gh[2] = 0; /* no bloom words: the loader's mask would read anywhere */
}
static void c_gnu_buckets(elf_view_t *v) {
  uint32_t *gh = (uint32_t *)(v->p + va_off(v, dyn(v, DT_GNU_HASH)->d_un.d_ptr));
  gh[0] = 0x10000000u;
}
static void c_rela_offset(elf_view_t *v) { first_rela(v)->r_offset += (uint64_t)1 << 40; }
static void c_rela_symbol(elf_view_t *v) {
  Elf64_Rela *r = first_rela(v);
  r->r_info = ELF64_R_INFO(0xffffff, ELF64_R_TYPE(r->r_info));
}
static void c_relasz(elf_view_t *v) { dyn(v, DT_RELASZ)->d_un.d_val = 1u << 30; }
static void c_init_array(elf_view_t *v) {
  Elf64_Dyn *a = dyn(v, DT_INIT_ARRAYSZ);
  ck_assert_ptr_nonnull(a);
  a->d_un.d_val = 1u << 30;
}
static void c_verneed(elf_view_t *v) {
  Elf64_Dyn *vn = dyn(v, DT_VERNEED);
  ck_assert_ptr_nonnull(vn);
  Elf64_Verneed *n = (Elf64_Verneed *)(v->p + va_off(v, vn->d_un.d_ptr));
  n->vn_aux = 0x7ffffff0u;
}
static void c_symbol_value(elf_view_t *v) { /* a defined symbol pointing far away */
  Elf64_Sym *s = (Elf64_Sym *)(v->p + va_off(v, dyn(v, DT_SYMTAB)->d_un.d_ptr));
  for (int i = 1;; i++)
    if (s[i].st_shndx != SHN_UNDEF && ELF64_ST_TYPE(s[i].st_info) != STT_TLS) {
      s[i].st_value = (uint64_t)1 << 44;
      return;
    }
}
static void c_note(elf_view_t *v) {
  Elf64_Phdr *ph = phdr(v, PT_NOTE);
  uint32_t *nh = (uint32_t *)(v->p + ph->p_offset);
  nh[1] = 0x7ffffff0u; /* a descriptor longer than the segment */
}
static void c_shoff(elf_view_t *v) { v->h->e_shoff = v->n; }
static void c_shstrndx(elf_view_t *v) { v->h->e_shstrndx = v->h->e_shnum + 3; }
static void c_truncate(elf_view_t *v) { v->n = v->n / 2; }

START_TEST(corrupt_shared_objects_are_refused) {
  if (!cpu()) return;
  static const struct {
    const char *name;
    void (*damage)(elf_view_t *);
  } cases[] = {{"e_phoff", c_phoff},         {"e_phnum", c_phnum},
               {"e_phentsize", c_phentsize}, {"PT_LOAD p_offset", c_load_offset},
               {"PT_LOAD p_filesz", c_load_filesz}, {"PT_LOAD p_align", c_load_align},
               {"PT_LOAD order", c_load_order}, {"PT_DYNAMIC address", c_dynamic},
               {"no DT_NULL", c_no_dt_null},    {"DT_STRTAB", c_strtab},
               {"DT_STRSZ", c_strsz},           {"DT_NEEDED", c_needed},
               {"DT_SYMTAB", c_symtab},         {"GNU hash bloom", c_gnu_hash},
               {"GNU hash buckets", c_gnu_buckets}, {"relocation offset", c_rela_offset},
               {"relocation symbol", c_rela_symbol}, {"DT_RELASZ", c_relasz},
               {"DT_INIT_ARRAYSZ", c_init_array}, {"DT_VERNEED", c_verneed},
               {"symbol value", c_symbol_value}, {"PT_NOTE", c_note},
               {"e_shoff", c_shoff},            {"e_shstrndx", c_shstrndx},
               {"truncated", c_truncate}};
  char cache[600], dir[600], file[700];
  make_dir(cache, sizeof cache, "cache");
  make_dir(dir, sizeof dir, "corrupt");
  gp_module_t m = NULL;
  unsigned char *good = NULL;
  size_t n = 0;
  compile_module(cache, NULL, 0, &m, &good, &n);
  OK(gp_module_unload(m));
  /* The control: the undamaged image loads from memory and from a file, and runs. */
  OK(gp_module_load_data(&m, good, n));
  gp_kernel_t k = NULL;
  OK(gp_module_get_kernel(&k, m, "kt_scale"));
  run_scale(k);
  OK(gp_module_unload(m));
  path_in(file, sizeof file, dir, "damaged.so");
  unsigned char *img = malloc(n);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    memcpy(img, good, n);
    elf_view_t v = {img, n, (Elf64_Ehdr *)img};
    cases[c].damage(&v);
    m = (gp_module_t)(uintptr_t)1;
    gp_status_t st = gp_module_load_data(&m, img, v.n);
    ck_assert_msg(st == GP_ERROR_INVALID_IMAGE && strstr(gp_last_error_message(), "corrupt"),
                  "%s: %s: %s", cases[c].name, gp_status_name(st), gp_last_error_message());
    ck_assert_ptr_null(m);
    write_all(file, img, v.n, 0600);
    st = gp_module_load(&m, file);
    ck_assert_msg(st == GP_ERROR_INVALID_IMAGE, "%s (from a file): %s: %s", cases[c].name,
                  gp_status_name(st), gp_last_error_message());
  }
  free(img);
  free(good);
  remove_tree(dir);
  remove_tree(cache);
  /* Loading from memory left no file in TMPDIR (before: /tmp/gpuport-module-*). */
  ck_assert_int_eq(count_entries(g_tmp), 0);
}
END_TEST

/* Two different objects loaded at once stay two (the loader knows objects by the name
 * they were opened with: a name that came back for another file would hand out the
 * first one), from files and from memory, in any order of loads and unloads. */
START_TEST(distinct_modules_stay_distinct) {
  if (!cpu()) return;
  char cache[600], dir[600], path[2][700];
  make_dir(cache, sizeof cache, "cache");
  make_dir(dir, sizeof dir, "two");
  unsigned char *img[2];
  size_t n[2];
  for (int v = 0; v < 2; v++) {
    char opt[32], sub[700];
    const char *o[] = {opt};
    snprintf(opt, sizeof opt, "-DKT_FACTOR=%d", 3 + v);
    snprintf(sub, sizeof sub, "%s/%d", cache, v);
    gp_module_t m;
    compile_module(sub, o, 1, &m, &img[v], &n[v]);
    OK(gp_module_unload(m));
    snprintf(path[v], sizeof path[v], "%s/k%d.so", dir, v);
    write_all(path[v], img[v], n[v], 0600);
  }
  for (int round = 0; round < 3; round++) {
    gp_module_t m[4];
    gp_kernel_t k[4];
    for (int i = 0; i < 4; i++) {
      if (i < 2) OK(gp_module_load_data(&m[i], img[i], n[i]));
      else OK(gp_module_load(&m[i], path[i - 2]));
      OK(gp_module_get_kernel(&k[i], m[i], "kt_scale"));
      run_factor(k[i], 3 + i % 2);
      /* Each round unloads another one first, so descriptor numbers come back. */
      if (i == round) OK(gp_module_unload(m[i]));
    }
    for (int i = 0; i < 4; i++)
      if (i != round) {
        run_factor(k[i], 3 + i % 2);
        OK(gp_module_unload(m[i]));
      }
  }
  free(img[0]);
  free(img[1]);
  remove_tree(dir);
  remove_tree(cache);
}
END_TEST

/* ---- the GPU loaders' images, checked against their real size ------------------------------------ */

START_TEST(gpu_images_are_bounded) {
  /* A 40-byte offload bundle that claims two entries. */
  unsigned char b[256];
  memset(b, 0, sizeof b);
  memcpy(b, "__CLANG_OFFLOAD_BUNDLE__", 24);
  uint64_t two = 2;
  memcpy(b + 24, &two, 8);
  FAILS(gp__image_check_for(GP_BACKEND_HIP, b, 40, "t", "'image'"), GP_ERROR_INVALID_IMAGE,
        "more entries");
  /* One entry whose code object lies past the end, then one that fits. */
  uint64_t one = 1, e[3] = {64, 200, 8};
  memcpy(b + 24, &one, 8);
  memcpy(b + 32, e, sizeof e);
  memcpy(b + 56, "hipv4-am", 8);
  FAILS(gp__image_check_for(GP_BACKEND_HIP, b, 128, "t", "'image'"), GP_ERROR_INVALID_IMAGE,
        "code object");
  e[1] = 64;
  memcpy(b + 32, e, sizeof e);
  OK(gp__image_check_for(GP_BACKEND_HIP, b, 128, "t", "'image'"));
  e[2] = 1000; /* a triple longer than the bundle */
  memcpy(b + 32, e, sizeof e);
  FAILS(gp__image_check_for(GP_BACKEND_HIP, b, 128, "t", "'image'"), GP_ERROR_INVALID_IMAGE,
        "target name");
  /* A 36-byte compressed bundle claiming 1000 bytes (version 2, then 3). */
  unsigned char c[64];
  memset(c, 0, sizeof c);
  memcpy(c, "CCOB", 4);
  uint16_t ver = 2;
  uint32_t total32 = 1000;
  memcpy(c + 4, &ver, 2);
  memcpy(c + 8, &total32, 4);
  FAILS(gp__image_check_for(GP_BACKEND_HIP, c, 36, "t", "'image'"), GP_ERROR_INVALID_IMAGE,
        "recorded size");
  total32 = 36;
  memcpy(c + 8, &total32, 4);
  OK(gp__image_check_for(GP_BACKEND_HIP, c, 36, "t", "'image'"));
  ver = 3;
  uint64_t total64 = 1000;
  memcpy(c + 4, &ver, 2);
  memcpy(c + 8, &total64, 8);
  FAILS(gp__image_check_for(GP_BACKEND_HIP, c, 36, "t", "'image'"), GP_ERROR_INVALID_IMAGE,
        "recorded size");
  ver = 9;
  memcpy(c + 4, &ver, 2);
  FAILS(gp__image_check_for(GP_BACKEND_HIP, c, 36, "t", "'image'"), GP_ERROR_INVALID_IMAGE,
        "version");
  /* A fatbin whose header claims more than it holds. */
  unsigned char f[32];
  memset(f, 0, sizeof f);
  uint32_t magic = 0xba55ed50u;
  uint16_t hs = 16;
  uint64_t body = 1000;
  memcpy(f, &magic, 4);
  memcpy(f + 6, &hs, 2);
  memcpy(f + 8, &body, 8);
  FAILS(gp__image_check_for(GP_BACKEND_CUDA, f, sizeof f, "t", "'image'"), GP_ERROR_INVALID_IMAGE,
        "past its end");
  body = 16;
  memcpy(f + 8, &body, 8);
  OK(gp__image_check_for(GP_BACKEND_CUDA, f, sizeof f, "t", "'image'"));
}
END_TEST

/* ---- stray and stale descriptors --------------------------------------------------------------- */

START_TEST(stray_descriptors_are_invalid_handles) {
  float v[4] = {0};
  void *p = NULL;
  size_t bytes = 0;
  /* A small integer (it was read: SIGSEGV) and a misaligned pointer (UBSan's abort). */
  gp_symbol_t stray = (gp_symbol_t)(uintptr_t)0x1000;
  gp_symbol_t odd = (gp_symbol_t)((const char *)GP_SYMBOL_REF(kt_coef) + 1);
  FAILS(gp_memcpy_from_symbol(v, stray, 4, 0), GP_ERROR_INVALID_HANDLE, "symbol");
  FAILS(gp_memcpy_to_symbol(odd, v, 4, 0), GP_ERROR_INVALID_HANDLE, "symbol");
  FAILS(gp_memcpy_to_symbol_async(stray, v, 4, 0, NULL), GP_ERROR_INVALID_HANDLE, "symbol");
  FAILS(gp_symbol_address(&p, odd), GP_ERROR_INVALID_HANDLE, "symbol");
  FAILS(gp_symbol_size(&bytes, stray), GP_ERROR_INVALID_HANDLE, "symbol");
  /* A kernel descriptor is not a symbol, nor a symbol a kernel. */
  FAILS(gp_symbol_size(&bytes, (gp_symbol_t)(const void *)GP_KERNEL_REF(kt_vadd)),
        GP_ERROR_INVALID_HANDLE, "symbol");
  int n = 1;
  void *args[] = {&n, &p, &p, &p};
  gp_dim3_t one = gp_dim3(1, 1, 1);
  FAILS(gp_launch((gp_kernel_t)(const void *)GP_SYMBOL_REF(kt_coef), one, one, 0, NULL, args),
        GP_ERROR_INVALID_HANDLE, "kernel");
  OK(gp_symbol_size(&bytes, GP_SYMBOL_REF(kt_coef)));
  /* A page that is mapped but cannot be read (the readability probe let it through), and
   * one that can, holding a copy of a real descriptor nobody registered. */
  long page = sysconf(_SC_PAGESIZE);
  void *none = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void *rw = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ck_assert(none != MAP_FAILED && rw != MAP_FAILED);
  memcpy(rw, GP_KERNEL_REF(kt_vadd), sizeof(struct gp_kernel_s));
  int blocks = 0;
  for (int i = 0; i < 2; i++) {
    gp_kernel_t k = i == 0 ? (gp_kernel_t)none : (gp_kernel_t)rw;
    FAILS(gp_launch(k, one, one, 0, NULL, args), GP_ERROR_INVALID_HANDLE, "kernel");
    FAILS(gp_kernel_set_max_dynamic_shared(k, 1024), GP_ERROR_INVALID_HANDLE, "kernel");
    FAILS(gp_occupancy_max_active_blocks(&blocks, k, 32, 0), GP_ERROR_INVALID_HANDLE, "kernel");
    ck_assert_ptr_null(gp_kernel_name(k));
  }
  munmap(none, (size_t)page);
  munmap(rw, (size_t)page);
  ck_assert_str_eq(gp_kernel_name(GP_KERNEL_REF(kt_vadd)), "kt_vadd");
}
END_TEST

/* Whether /proc/self/maps maps a file whose name contains s. */
static bool mapped(const char *s) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[1024];
  bool found = false;
  while (f && fgets(line, sizeof line, f)) found = found || strstr(line, s) != NULL;
  if (f) fclose(f);
  return found;
}

/* A module built with default visibility (the flags that made GCC emit STB_GNU_UNIQUE
 * for gp__ksig's and __constant__'s template and inline variables, which made the
 * object NODELETE): the process's first module is unmapped by its unload, and its
 * kernel and variable are invalid handles afterwards. */
START_TEST(first_module_is_unmapped_by_unload) {
  if (!cpu()) return;
  char cache[600], so[256], path[700];
  make_dir(cache, sizeof cache, "first");
  const char *opt[] = {"-fvisibility=default"};
  gp_module_t m = NULL;
  compile_module(cache, opt, 1, &m, NULL, NULL);
  entry_with(so, sizeof so, cache, ".so");
  path_in(path, sizeof path, cache, so);
  if (system("command -v readelf >/dev/null 2>&1") == 0) {
    char cmd[800];
    snprintf(cmd, sizeof cmd, "readelf -sW '%s' | grep -q UNIQUE", path);
    ck_assert_msg(system(cmd) != 0, "%s has STB_GNU_UNIQUE symbols (readelf -sW)", path);
  }
  ck_assert_msg(mapped(so), "%s is not in /proc/self/maps after the load", so);
  gp_kernel_t k = NULL;
  OK(gp_module_get_kernel(&k, m, "kt_scale"));
  run_scale(k);
  OK(gp_module_unload(m));
  ck_assert_msg(!mapped(so), "%s is still mapped after gp_module_unload (NODELETE?)", so);
  /* Its kernel is gone, without being read. */
  int n = 1;
  void *d = NULL, *args[] = {&n, &d};
  FAILS(gp_launch(k, gp_dim3(1, 1, 1), gp_dim3(1, 1, 1), 0, NULL, args), GP_ERROR_INVALID_HANDLE,
        "kernel");
  ck_assert_ptr_null(gp_kernel_name(k));
  int blocks = 0;
  FAILS(gp_occupancy_max_active_blocks(&blocks, k, 32, 0), GP_ERROR_INVALID_HANDLE, "kernel");
  /* Loaded again, it works again (a fresh mapping). */
  OK(gp_module_load(&m, path));
  OK(gp_module_get_kernel(&k, m, "kt_scale"));
  run_scale(k);
  OK(gp_module_unload(m));
  ck_assert(!mapped(so));
  remove_tree(cache);
}
END_TEST

/* ---- the private cache -------------------------------------------------------------------------- */

/* A shared object whose constructor creates marker: what an attacker would plant. */
static void build_plant(const char *dir, const char *marker, char *so, size_t n) {
  char c[700], cmd[2200];
  path_in(c, sizeof c, dir, "plant.c");
  path_in(so, n, dir, "plant.so");
  char text[900];
  snprintf(text, sizeof text,
           "#include <fcntl.h>\n#include <unistd.h>\n"
           "__attribute__((constructor)) static void planted(void) {\n"
           "  int fd = open(\"%s\", O_WRONLY | O_CREAT, 0600);\n  if (fd >= 0) close(fd);\n}\n",
           marker);
  write_all(c, text, strlen(text), 0600);
  snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o '%s' '%s'", so, c);
  ck_assert_msg(system(cmd) == 0, "cannot build the planted object (%s)", cmd);
}

/* Copies the key and log of a good cache into dir and the planted object in place of its
 * object: what the old code loaded. */
static void plant_cache(const char *dir, const char *good, const char *plant) {
  const char *suffixes[] = {".key", ".log"};
  char name[256], from[700], to[700], so_name[256];
  for (int i = 0; i < 2; i++) {
    entry_with(name, sizeof name, good, suffixes[i]);
    path_in(from, sizeof from, good, name);
    path_in(to, sizeof to, dir, name);
    size_t n = 0;
    unsigned char *p = read_all(from, &n);
    write_all(to, p, n, 0600);
    free(p);
  }
  entry_with(name, sizeof name, good, ".so");
  snprintf(so_name, sizeof so_name, "%s", name);
  path_in(to, sizeof to, dir, so_name);
  size_t n = 0;
  unsigned char *p = read_all(plant, &n);
  write_all(to, p, n, 0600);
  free(p);
}

/* Compiles k_src with GP_CACHE_DIR=cache (NULL: unset), checks the module works and that
 * the planted object never ran. */
static void compile_and_run(const char *cache, const char *marker) {
  if (cache) setenv("GP_CACHE_DIR", cache, 1);
  else unsetenv("GP_CACHE_DIR");
  gp_module_t m = NULL;
  gp_kernel_t k = NULL;
  OK(gp_program_compile(&m, k_src, "kt_scale.cu", NULL, 0, NULL));
  ck_assert_msg(access(marker, F_OK) != 0, "the planted object ran (cache %s)", cache ? cache : "default");
  OK(gp_module_get_kernel(&k, m, "kt_scale"));
  run_scale(k);
  OK(gp_module_unload(m));
}

/* The log file has a line containing what (the assertion shows the log otherwise). */
static void log_says(const char *log, const char *what) {
  FILE *f = fopen(log, "r");
  static char text[1 << 16];
  size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
  text[n] = '\0';
  if (f) fclose(f);
  ck_assert_msg(strstr(text, what) != NULL, "the log (%s) does not say '%s':\n%s", log, what, text);
}

START_TEST(cache_is_private) {
  if (!cpu()) return;
  char base[600], good[700], evil[700], link[700], other[700], marker[700], plant[700], log[700];
  char tmp[700], def[800], so[256], p[900];
  make_dir(base, sizeof base, "private");
  path_in(marker, sizeof marker, base, "PLANTED-OBJECT-RAN");
  path_in(log, sizeof log, base, "gpuport.log");
  path_in(tmp, sizeof tmp, base, "tmp");
  ck_assert_int_eq(mkdir(tmp, 0700), 0);
  setenv("GP_DEBUG_FILE", log, 1); /* before the first call: the log is set up once */
  setenv("TMPDIR", tmp, 1);        /* where private compile directories go */
  build_plant(base, marker, plant, sizeof plant);

  /* A good cache, made by gpuport: 0700, its files private. */
  path_in(good, sizeof good, base, "good/sub");
  compile_and_run(good, marker);
  struct stat st;
  ck_assert_int_eq(stat(good, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0700);
  path_in(p, sizeof p, base, "good");
  ck_assert_int_eq(stat(p, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0700); /* each directory gpuport creates */
  entry_with(so, sizeof so, good, ".so");
  path_in(p, sizeof p, good, so);
  ck_assert_int_eq(stat(p, &st), 0);
  ck_assert_int_eq(st.st_mode & 077, 0);

  /* Another user's world-writable directory, holding a planted object under the right
   * key: not used, nothing in it written, the compile done in a private directory. */
  path_in(evil, sizeof evil, base, "evil");
  ck_assert_int_eq(mkdir(evil, 0700), 0);
  plant_cache(evil, good, plant);
  ck_assert_int_eq(chmod(evil, 0777), 0);
  compile_and_run(evil, marker);
  ck_assert_int_eq(count_entries(evil), 3);
  log_says(log, evil);
  log_says(log, "others may write to it");
  log_says(log, "compiling in the private directory");
  ck_assert_int_eq(count_entries(tmp), 0); /* removed afterwards */

  /* A symbolic link to a directory that would pass. */
  ck_assert_int_eq(chmod(evil, 0700), 0);
  path_in(link, sizeof link, base, "link");
  ck_assert_int_eq(symlink(evil, link), 0);
  compile_and_run(link, marker);
  log_says(log, "symbolic link");

  /* A directory of another owner (only root can make one here). */
  if (geteuid() == 0) {
    path_in(other, sizeof other, base, "other");
    ck_assert_int_eq(mkdir(other, 0700), 0);
    plant_cache(other, good, plant);
    ck_assert_int_eq(chown(other, 65534, 65534), 0); /* nobody */
    compile_and_run(other, marker);
    log_says(log, "another user owns it");
  }

  /* In the private cache itself: a planted object that others may write, then one that
   * is a symbolic link, are not loaded; the compile replaces them with private objects. */
  entry_with(so, sizeof so, good, ".so");
  path_in(p, sizeof p, good, so);
  size_t n = 0;
  unsigned char *img = read_all(plant, &n);
  write_all(p, img, n, 0666);
  free(img);
  compile_and_run(good, marker);
  ck_assert_int_eq(stat(p, &st), 0);
  ck_assert_int_eq(st.st_mode & 077, 0);
  ck_assert_int_eq(unlink(p), 0);
  ck_assert_int_eq(symlink(plant, p), 0);
  compile_and_run(good, marker);
  ck_assert_int_eq(lstat(p, &st), 0);
  ck_assert(S_ISREG(st.st_mode));

  /* No HOME, XDG_CACHE_HOME or GP_CACHE_DIR: ${TMPDIR}/gpuport-cache-<uid>, here first
   * made by an attacker (0777, planted), then by gpuport. */
  char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  unsetenv("HOME");
  unsetenv("XDG_CACHE_HOME");
  snprintf(def, sizeof def, "%s/gpuport-cache-%ld", tmp, (long)geteuid());
  ck_assert_int_eq(mkdir(def, 0700), 0);
  plant_cache(def, good, plant);
  ck_assert_int_eq(chmod(def, 0777), 0);
  compile_and_run(NULL, marker);
  ck_assert_int_eq(count_entries(def), 3);
  remove_tree(def);
  compile_and_run(NULL, marker);
  ck_assert_int_eq(stat(def, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0700);
  ck_assert_int_eq(count_entries(def), 3); /* the object, its key and its log */
  if (home) setenv("HOME", home, 1);
  free(home);
  unsetenv("GP_DEBUG_FILE");
  remove_tree(base);
  setenv("TMPDIR", g_tmp, 1);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("module_checks");
  TCase *tc = tcase_create("module_checks");
  tcase_set_timeout(tc, 180); /* the cache case compiles several times */
  tcase_add_test(tc, only_regular_files_are_read);
  tcase_add_test(tc, corrupt_shared_objects_are_refused);
  tcase_add_test(tc, distinct_modules_stay_distinct);
  tcase_add_test(tc, gpu_images_are_bounded);
  tcase_add_test(tc, stray_descriptors_are_invalid_handles);
  tcase_add_test(tc, first_module_is_unmapped_by_unload);
  tcase_add_test(tc, cache_is_private);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  const char *t = getenv("TMPDIR");
  snprintf(g_tmp, sizeof g_tmp, "%s/gpuport-test-module-checks-XXXXXX", t && *t ? t : "/tmp");
  if (mkdtemp(g_tmp) == NULL) {
    perror("mkdtemp");
    return EXIT_FAILURE;
  }
  setenv("TMPDIR", g_tmp, 1);
  int status = run_suite("test_module_checks", suite());
  /* Nothing any test made may be left behind. */
  int left = count_entries(g_tmp);
  if (left != 0) {
    fprintf(stderr, "test_module_checks: %d entries left in %s\n", left, g_tmp);
    status = EXIT_FAILURE;
  }
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  if (system(cmd) != 0) status = EXIT_FAILURE;
  return status;
}
