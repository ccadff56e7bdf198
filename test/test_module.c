/*
 * test_module.c - modules, runtime compilation and occupancy (gpuport/module.h).
 *
 * The kernel of test/kernels/kt_rtc.cu is compiled at run time from that file's text
 * with -DKT_SCALE=3 and -DKT_SCALE=5; the first must give bit for bit what the build of
 * the same file linked into this binary gives (KT_SCALE defaults to 3), and both must
 * match the float64 reference of the scale they were compiled with, so a stale cache
 * cannot pass. The cpu backend's cache, module loading from a file and from memory, and
 * every error (compile errors with the compiler's log, missing and foreign images,
 * missing kernels, bad handles) are checked too. Each test process uses a cache
 * directory of its own.
 *
 * Runs on the cpu backend; on CUDA and HIP the compiler is NVRTC / hipRTC, and the
 * binary skips (exit 77) when no device answers.
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gpuport.h>
#include "check_util.h"
#include "ref.h"

GP_KERNEL_DECLARE(kt_rtc_scale);
GP_KERNEL_DECLARE(kt_vadd);

static uint64_t g_seed;
static char g_cache[256];

static bool cpu(void) { return gp_backend() == GP_BACKEND_CPU; }


/* The text of test/kernels/kt_rtc.cu (this file's directory, then kernels/). */
static char *rtc_source(void) {
  char path[512];
  const char *me = __FILE__, *slash = strrchr(me, '/');
  snprintf(path, sizeof path, "%.*skernels/kt_rtc.cu", slash ? (int)(slash - me + 1) : 0, me);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s (run the tests from the source tree)", path);
  char *text = calloc(1, 1 << 16);
  size_t n = fread(text, 1, (1 << 16) - 1, f);
  fclose(f);
  ck_assert_uint_gt(n, 0);
  return text;
}

static int count_files(const char *suffix) {
  DIR *d = opendir(g_cache);
  int n = 0;
  if (d == NULL) return 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t l = strlen(e->d_name), s = strlen(suffix);
    if (l > s && strcmp(e->d_name + l - s, suffix) == 0) n++;
  }
  closedir(d);
  return n;
}

/* The path of the newest file in the cache whose name ends with suffix. */
static void newest_file(char *out, size_t len, const char *suffix) {
  DIR *d = opendir(g_cache);
  ck_assert_ptr_nonnull(d);
  out[0] = '\0';
  struct timespec best = {0, 0};
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t l = strlen(e->d_name), s = strlen(suffix);
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", g_cache, e->d_name);
    if (l <= s || strcmp(e->d_name + l - s, suffix) != 0 || stat(p, &st) != 0) continue;
    if (st.st_mtim.tv_sec > best.tv_sec ||
        (st.st_mtim.tv_sec == best.tv_sec && st.st_mtim.tv_nsec >= best.tv_nsec)) {
      best = st.st_mtim;
      snprintf(out, len, "%s", p);
    }
  }
  closedir(d);
  ck_assert_msg(out[0] != '\0', "no *%s in %s", suffix, g_cache);
}

/* ---- running kt_rtc_scale --------------------------------------------------------------- */

enum { N = 1000, BLOCK = 128, BLOCKS = (N + BLOCK - 1) / BLOCK };

typedef struct run_out {
  float y[N], sums[BLOCKS];
} run_out_t;

/* Runs k on x (fresh device buffers, outputs poisoned); results into *out. */
static void run_scale(gp_kernel_t k, const float *x, run_out_t *out) {
  float *dx, *dy, *ds;
  OK(gp_malloc((void **)&dx, sizeof out->y));
  OK(gp_malloc((void **)&dy, sizeof out->y));
  OK(gp_malloc((void **)&ds, sizeof out->sums));
  gp_ref_poison(out->y, GP_F32, N);
  gp_ref_poison(out->sums, GP_F32, BLOCKS);
  OK(gp_memcpy(dx, x, sizeof out->y));
  OK(gp_memcpy(dy, out->y, sizeof out->y));
  OK(gp_memcpy(ds, out->sums, sizeof out->sums));
  int n = N;
  void *args[] = {&n, &dx, &dy, &ds};
  OK(gp_launch(k, gp_dim3(BLOCKS, 1, 1), gp_dim3(BLOCK, 1, 1), 0, NULL, args));
  OK(gp_memcpy(out->y, dy, sizeof out->y));
  OK(gp_memcpy(out->sums, ds, sizeof out->sums));
  OK(gp_free(dx));
  OK(gp_free(dy));
  OK(gp_free(ds));
}

/* y = scale * x within one rounding; block sums within the f32 summation bound. */
static void check_scale(const run_out_t *o, const float *x, int scale, const char *what) {
  static double ref[N], bound[N], sref[BLOCKS], sbound[BLOCKS];
  const double u = gp_ref_unit_roundoff(GP_F32);
  for (int b = 0; b < BLOCKS; b++) sref[b] = sbound[b] = 0;
  for (int i = 0; i < N; i++) {
    ref[i] = (double)scale * x[i];
    bound[i] = u * fabs(ref[i]);
    sref[i / BLOCK] += ref[i];
    sbound[i / BLOCK] += fabs(ref[i]);
  }
  for (int b = 0; b < BLOCKS; b++) sbound[b] *= (BLOCK + 2) * u; /* gamma_n of the tree */
  gp_ref_cmp_t c;
  char buf[256];
  gp_ref_compare(&c, o->y, GP_F32, ref, bound, 0.0, N);
  gp_ref_cmp_format(&c, buf, sizeof buf);
  ck_assert_msg(c.n_bad == 0, "%s y (scale %d, seed %llu): %s", what, scale,
                (unsigned long long)g_seed, buf);
  gp_ref_compare(&c, o->sums, GP_F32, sref, sbound, 0.0, BLOCKS);
  gp_ref_cmp_format(&c, buf, sizeof buf);
  ck_assert_msg(c.n_bad == 0, "%s block sums (scale %d, seed %llu): %s", what, scale,
                (unsigned long long)g_seed, buf);
}

static void random_x(float *x) {
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed);
  gp_ref_fill(x, GP_F32, N, &rng, -1.0, 1.0);
}

/* ---- runtime compilation ------------------------------------------------------------------ */

/* The Done-when criterion of runtime compilation: a dialect kernel compiled from a
 * string, with a constant set by an option, gives what the constant implies and what the
 * ahead-of-time build with the same definition gives; another value of the option gives
 * another result. */
START_TEST(compiled_kernel_matches_aot_build) {
  char *src = rtc_source();
  static float x[N];
  static run_out_t aot, rtc3, rtc5;
  random_x(x);
  const char *opt3[] = {"-DKT_SCALE=3"}, *opt5[] = {"-DKT_SCALE=5"};
  gp_module_t m3 = NULL, m5 = NULL;
  char *log = (char *)"unset";
  OK(gp_program_compile(&m3, src, "kt_rtc.cu", opt3, 1, &log));
  free(log);
  OK(gp_program_compile(&m5, src, "kt_rtc.cu", opt5, 1, NULL));
  gp_kernel_t k3, k5;
  OK(gp_module_get_kernel(&k3, m3, "kt_rtc_scale"));
  OK(gp_module_get_kernel(&k5, m5, "kt_rtc_scale"));
  ck_assert_ptr_ne(k3, k5);
  ck_assert_str_eq(gp_kernel_name(k3), "kt_rtc_scale");
  run_scale(GP_KERNEL_REF(kt_rtc_scale), x, &aot);
  run_scale(k3, x, &rtc3);
  run_scale(k5, x, &rtc5);
  check_scale(&aot, x, 3, "ahead-of-time build");
  check_scale(&rtc3, x, 3, "run-time build, -DKT_SCALE=3");
  check_scale(&rtc5, x, 5, "run-time build, -DKT_SCALE=5");
  ck_assert_msg(memcmp(&aot, &rtc3, sizeof aot) == 0,
                "the run-time build with KT_SCALE=3 differs from the ahead-of-time build");
  int differ = 0;
  for (int i = 0; i < N; i++) differ += rtc3.y[i] != rtc5.y[i];
  ck_assert_int_eq(differ, N);
  OK(gp_module_unload(m3));
  OK(gp_module_unload(m5));
  free(src);
}
END_TEST

/* The cpu cache: one object per distinct key, reused on a hit, a tampered key file is a
 * miss (recompiled, same result), and a changed option is a new entry. */
START_TEST(cache_is_keyed_by_source_and_options) {
  SKIP_IF(!cpu(), "the cpu backend's compile cache");
  char *src = rtc_source();
  static float x[N];
  static run_out_t a, b;
  random_x(x);
  const char *opt[] = {"-DKT_SCALE=7"};
  int before = count_files(".so");
  gp_module_t m1, m2;
  OK(gp_program_compile(&m1, src, "kt_rtc.cu", opt, 1, NULL));
  ck_assert_int_eq(count_files(".so"), before + 1);
  OK(gp_program_compile(&m2, src, "kt_rtc.cu", opt, 1, NULL)); /* a hit */
  ck_assert_int_eq(count_files(".so"), before + 1);
  gp_kernel_t k1, k2;
  OK(gp_module_get_kernel(&k1, m1, "kt_rtc_scale"));
  OK(gp_module_get_kernel(&k2, m2, "kt_rtc_scale"));
  run_scale(k1, x, &a);
  run_scale(k2, x, &b);
  check_scale(&a, x, 7, "first compile");
  ck_assert(memcmp(&a, &b, sizeof a) == 0);
  OK(gp_module_unload(m1));
  OK(gp_module_unload(m2));
  /* Tamper with every key file: the next compile must not trust the objects. */
  DIR *d = opendir(g_cache);
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t l = strlen(e->d_name);
    if (l > 4 && strcmp(e->d_name + l - 4, ".key") == 0) {
      char p[512];
      snprintf(p, sizeof p, "%s/%s", g_cache, e->d_name);
      FILE *f = fopen(p, "ab");
      fputs("tampered\n", f);
      fclose(f);
    }
  }
  closedir(d);
  OK(gp_program_compile(&m1, src, "kt_rtc.cu", opt, 1, NULL));
  OK(gp_module_get_kernel(&k1, m1, "kt_rtc_scale"));
  run_scale(k1, x, &a);
  check_scale(&a, x, 7, "recompiled after a key mismatch");
  OK(gp_module_unload(m1));
  free(src);
}
END_TEST

START_TEST(compile_errors_give_the_log) {
  const char *bad = "#include <gpuport/kernel.h>\n"
                    "GP_KERNEL void broken(int n, float *x) {\n"
                    "  x[0] = undeclared_name + n;\n"
                    "}\n"
                    "GP_KERNEL_EXPORT(broken)\n";
  gp_module_t m = (gp_module_t)(uintptr_t)0x1;
  char *log = NULL;
  FAILS(gp_program_compile(&m, bad, "broken.cu", NULL, 0, &log), GP_ERROR_INVALID_IMAGE,
        "undeclared_name");
  ck_assert_ptr_null(m);
  ck_assert_ptr_nonnull(log);
  ck_assert_msg(strstr(log, "undeclared_name") && strstr(log, "broken.cu"),
                "the log names the file and the error: %s", log);
  free(log);
  FAILS(gp_program_compile(&m, bad, "broken.cu", NULL, 0, NULL), GP_ERROR_INVALID_IMAGE,
        "broken.cu");
  /* a bad option is the compiler's error too */
  const char *opt[] = {"--no-such-option-for-any-compiler"};
  FAILS(gp_program_compile(&m, "int x;\n", NULL, opt, 1, NULL), GP_ERROR_INVALID_IMAGE,
        cpu() ? "no-such-option" : ""); /* NVRTC may say only "invalid option" */
  /* argument checks */
  FAILS(gp_program_compile(NULL, bad, NULL, NULL, 0, NULL), GP_ERROR_INVALID_VALUE, "module");
  FAILS(gp_program_compile(&m, NULL, NULL, NULL, 0, NULL), GP_ERROR_INVALID_VALUE, "source");
  FAILS(gp_program_compile(&m, bad, NULL, NULL, -1, NULL), GP_ERROR_INVALID_VALUE, "n_options");
  FAILS(gp_program_compile(&m, bad, NULL, NULL, 1, NULL), GP_ERROR_INVALID_VALUE, "options");
  const char *null_opt[] = {NULL};
  FAILS(gp_program_compile(&m, bad, NULL, null_opt, 1, NULL), GP_ERROR_INVALID_VALUE, "options[0]");
  if (cpu()) { /* no compiler */
    setenv("GP_CC", "/nonexistent/gpuport-cc", 1);
    FAILS(gp_program_compile(&m, "int y;\n", NULL, NULL, 0, NULL), GP_ERROR_NOT_FOUND, "GP_CC");
    unsetenv("GP_CC");
  }
}
END_TEST

/* ---- modules ------------------------------------------------------------------------------ */

START_TEST(modules_from_file_and_memory) {
  if (!cpu()) return; /* the images below are cpu shared objects */
  char *src = rtc_source();
  static float x[N];
  static run_out_t o;
  random_x(x);
  const char *opt[] = {"-DKT_SCALE=2"};
  char *bogus = calloc(1, strlen(src) + 512);
  /* a second kernel, and a descriptor of another ABI version under a kernel's name */
  sprintf(bogus,
          "%s\nextern \"C\" __attribute__((visibility(\"default\"))) const struct gp_kernel_s "
          "gp__kernel_old_abi = {GP_KERNEL_MAGIC, 99u, \"old_abi\", 0, 32, 0, nullptr, nullptr, "
          "nullptr, nullptr, 1024, 0u, {nullptr, nullptr, nullptr, nullptr}};\n",
          src);
  gp_module_t m;
  OK(gp_program_compile(&m, bogus, "kt_rtc_more.cu", opt, 1, NULL));
  gp_kernel_t k = NULL;
  FAILS(gp_module_get_kernel(&k, m, "old_abi"), GP_ERROR_INVALID_IMAGE, "ABI version");
  ck_assert_ptr_null(k);
  FAILS(gp_module_get_kernel(&k, m, "kt_no_such_kernel"), GP_ERROR_NOT_FOUND, "kt_no_such_kernel");
  FAILS(gp_module_get_kernel(&k, m, ""), GP_ERROR_INVALID_VALUE, "name");
  FAILS(gp_module_get_kernel(&k, m, NULL), GP_ERROR_INVALID_VALUE, "name");
  FAILS(gp_module_get_kernel(NULL, m, "kt_rtc_scale"), GP_ERROR_INVALID_VALUE, "kernel");
  OK(gp_module_unload(m));
  FAILS(gp_module_get_kernel(&k, m, "kt_rtc_scale"), GP_ERROR_INVALID_HANDLE, "module");
  FAILS(gp_module_unload(m), GP_ERROR_INVALID_HANDLE, "module");
  FAILS(gp_module_get_kernel(&k, NULL, "kt_rtc_scale"), GP_ERROR_INVALID_HANDLE, "module");
  OK(gp_module_unload(NULL));

  /* The cached object (the newest: just compiled) is an ordinary shared object: load it
   * by path and from memory. */
  char path[512];
  newest_file(path, sizeof path, ".so");
  OK(gp_module_load(&m, path));
  OK(gp_module_get_kernel(&k, m, "kt_rtc_scale"));
  run_scale(k, x, &o);
  check_scale(&o, x, 2, "loaded from a file");
  OK(gp_module_unload(m));
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *image = malloc((size_t)size);
  ck_assert_int_eq(fread(image, 1, (size_t)size, f), size);
  fclose(f);
  OK(gp_module_load_data(&m, image, (size_t)size));
  OK(gp_module_get_kernel(&k, m, "kt_rtc_scale"));
  run_scale(k, x, &o);
  check_scale(&o, x, 2, "loaded from memory");
  /* a module kernel in a graph */
  gp_stream_t s;
  OK(gp_stream_create(&s));
  float *dx, *dy, *ds;
  int n = N;
  OK(gp_malloc((void **)&dx, N * sizeof(float)));
  OK(gp_malloc((void **)&dy, N * sizeof(float)));
  OK(gp_malloc((void **)&ds, BLOCKS * sizeof(float)));
  OK(gp_memcpy(dx, x, N * sizeof(float)));
  void *args[] = {&n, &dx, &dy, &ds};
  gp_graph_t g;
  gp_graph_exec_t ge;
  OK(gp_stream_begin_capture(s, GP_CAPTURE_MODE_GLOBAL));
  OK(gp_launch(k, gp_dim3(BLOCKS, 1, 1), gp_dim3(BLOCK, 1, 1), 0, s, args));
  OK(gp_memcpy_async(o.y, dy, N * sizeof(float), s));
  OK(gp_memcpy_async(o.sums, ds, BLOCKS * sizeof(float), s));
  OK(gp_stream_end_capture(s, &g));
  OK(gp_graph_instantiate(&ge, g));
  gp_ref_poison(o.y, GP_F32, N);
  gp_ref_poison(o.sums, GP_F32, BLOCKS);
  OK(gp_graph_launch(ge, s));
  OK(gp_stream_synchronize(s));
  check_scale(&o, x, 2, "module kernel in a graph");
  OK(gp_graph_exec_destroy(ge));
  OK(gp_graph_destroy(g));
  /* the same kernel in a graph built node by node; on the cpu backend the node holds the
   * module, so the executable graph still runs after the graph and the module are gone */
  gp_kernel_node_params_t kp = {k, gp_dim3(BLOCKS, 1, 1), gp_dim3(BLOCK, 1, 1), 0, args};
  gp_graph_node_t kn, cy, cs;
  OK(gp_graph_create(&g, 0));
  gp_status_t st = gp_graph_add_kernel_node(&kn, g, NULL, 0, &kp);
  if (gp_backend() == GP_BACKEND_HIP) { /* hipGraphAddKernelNode takes no module function */
    ck_assert_int_eq(st, GP_ERROR_NOT_SUPPORTED);
    OK(gp_graph_destroy(g));
  } else {
    OK(st);
    OK(gp_graph_add_memcpy_node(&cy, g, &kn, 1, o.y, dy, N * sizeof(float)));
    OK(gp_graph_add_memcpy_node(&cs, g, &kn, 1, o.sums, ds, BLOCKS * sizeof(float)));
    OK(gp_graph_instantiate(&ge, g));
    OK(gp_graph_destroy(g));
    if (gp_backend() == GP_BACKEND_CPU) {
      OK(gp_module_unload(m));
      m = NULL;
    }
    gp_ref_poison(o.y, GP_F32, N);
    gp_ref_poison(o.sums, GP_F32, BLOCKS);
    OK(gp_graph_launch(ge, s));
    OK(gp_stream_synchronize(s));
    check_scale(&o, x, 2, "module kernel in a kernel node (module unloaded first on the cpu)");
    OK(gp_graph_exec_destroy(ge));
  }
  OK(gp_stream_destroy(s));
  OK(gp_free(dx));
  OK(gp_free(dy));
  OK(gp_free(ds));
  if (m) OK(gp_module_unload(m));

  /* Foreign and corrupt images. */
  FAILS(gp_module_load_data(&m, image, 100), GP_ERROR_INVALID_IMAGE, "image");
  ck_assert_ptr_null(m);
  FAILS(gp_module_load_data(&m, image, (size_t)size / 3), GP_ERROR_INVALID_IMAGE, "cannot be loaded");
  unsigned char cubin[128];
  memcpy(cubin, image, sizeof cubin);
  cubin[18] = 190; /* EM_CUDA */
  cubin[19] = 0;
  FAILS(gp_module_load_data(&m, cubin, sizeof cubin), GP_ERROR_INVALID_IMAGE, "cubin");
  cubin[18] = 224; /* EM_AMDGPU */
  FAILS(gp_module_load_data(&m, cubin, sizeof cubin), GP_ERROR_INVALID_IMAGE, "AMD");
  memcpy(cubin, image, sizeof cubin);
  cubin[16] = 1; /* ET_REL: an object file */
  FAILS(gp_module_load_data(&m, cubin, sizeof cubin), GP_ERROR_INVALID_IMAGE, "shared object");
  static const char ptx[] = "//\n// Generated by NVIDIA NVVM Compiler\n.version 8.0\n.target sm_80\n";
  FAILS(gp_module_load_data(&m, ptx, sizeof ptx), GP_ERROR_INVALID_IMAGE, "PTX");
  FAILS(gp_module_load_data(&m, image, 0), GP_ERROR_INVALID_VALUE, "bytes");
  FAILS(gp_module_load_data(&m, NULL, 10), GP_ERROR_INVALID_VALUE, "image");
  FAILS(gp_module_load_data(NULL, image, 10), GP_ERROR_INVALID_VALUE, "module");
  FAILS(gp_module_load(&m, "/nonexistent/kernels.so"), GP_ERROR_NOT_FOUND, "kernels.so");
  FAILS(gp_module_load(&m, NULL), GP_ERROR_INVALID_VALUE, "path");
  char text[512];
  snprintf(text, sizeof text, "%s/not-an-image.txt", g_cache);
  f = fopen(text, "wb");
  fputs(ptx, f);
  fclose(f);
  FAILS(gp_module_load(&m, text), GP_ERROR_INVALID_IMAGE, "PTX");
  free(image);
  free(bogus);
  free(src);
}
END_TEST

/* ---- occupancy ------------------------------------------------------------------------------ */

START_TEST(occupancy) {
  gp_device_props_t p;
  gp_device_props_init(&p);
  OK(gp_device_get_props(&p, 0));
  gp_kernel_t k = GP_KERNEL_REF(kt_vadd);
  int blocks = -1;
  OK(gp_occupancy_max_active_blocks(&blocks, k, 256, 0));
  ck_assert_int_ge(blocks, 1);
  if (cpu()) ck_assert_int_eq(blocks, 1); /* one block at a time per executor thread */
  int small = -1;
  OK(gp_occupancy_max_active_blocks(&small, k, 32, 0));
  ck_assert_int_ge(small, blocks); /* never fewer blocks when they are smaller */
  OK(gp_occupancy_max_active_blocks(&blocks, k, p.max_threads_per_block + 1, 0));
  ck_assert_int_eq(blocks, 0);
  OK(gp_occupancy_max_active_blocks(&blocks, k, 64, p.shared_memory_per_block + 1));
  ck_assert_int_eq(blocks, 0);
  FAILS(gp_occupancy_max_active_blocks(&blocks, k, 0, 0), GP_ERROR_INVALID_VALUE, "block_threads");
  FAILS(gp_occupancy_max_active_blocks(NULL, k, 64, 0), GP_ERROR_INVALID_VALUE, "num_blocks");
  FAILS(gp_occupancy_max_active_blocks(&blocks, NULL, 64, 0), GP_ERROR_INVALID_VALUE, "kernel");
  struct gp_kernel_s other = *k;
  other.backend = cpu() ? GP_BACKEND_CUDA : GP_BACKEND_CPU;
  FAILS(gp_occupancy_max_active_blocks(&blocks, &other, 64, 0), GP_ERROR_INVALID_HANDLE, "kernel");
  ck_assert_int_eq(gp__abi_register(&other), 0); /* as its object would */
  FAILS(gp_occupancy_max_active_blocks(&blocks, &other, 64, 0), GP_ERROR_INVALID_IMAGE, "backend");
  gp__abi_unregister(&other);
}
END_TEST

/* ---- kernel attributes -------------------------------------------------------------------- */

START_TEST(kernel_attributes) {
  gp_device_props_t p;
  gp_device_props_init(&p);
  OK(gp_device_get_props(&p, 0));
  gp_kernel_t k = GP_KERNEL_REF(kt_vadd);
  gp_kernel_attributes_t a;
  memset(&a, 0x5a, sizeof a);
  OK(gp_kernel_get_attributes(&a, k));
  ck_assert_int_ge(a.max_threads_per_block, 1);
  ck_assert_int_le(a.max_threads_per_block, p.max_threads_per_block);
  ck_assert_int_ge(a.num_regs, 0);
  if (cpu()) {
    /* kt_vadd's descriptor: the target's limit, bounded by the device's. */
    int want = k->max_threads_per_block < p.max_threads_per_block ? k->max_threads_per_block
                                                                  : p.max_threads_per_block;
    ck_assert_int_eq(a.max_threads_per_block, want);
    ck_assert_int_eq(a.num_regs, 0);
    ck_assert_uint_eq(a.shared_size_bytes, 0);
    ck_assert_uint_eq(a.const_size_bytes, 0);
    ck_assert_uint_eq(a.local_size_bytes, 0);
    ck_assert_int_eq(a.ptx_version, 0);
    ck_assert_int_eq(a.binary_version, 0);
    ck_assert_int_eq(a.preferred_shmem_carveout, -1);
    ck_assert_int_eq(a.max_dynamic_shared_size_bytes, (int)p.shared_memory_per_block);
  }
  /* The raised limit shows in the attributes, as cudaFuncSetAttribute's does. */
  size_t raised = p.shared_memory_per_block_optin;
  OK(gp_kernel_set_max_dynamic_shared(k, raised));
  OK(gp_kernel_get_attributes(&a, k));
  ck_assert_int_eq(a.max_dynamic_shared_size_bytes, (int)raised);
  OK(gp_kernel_set_max_dynamic_shared(k, 0));
  /* Errors: the output is zeroed and the message names the argument. */
  memset(&a, 0x5a, sizeof a);
  FAILS(gp_kernel_get_attributes(&a, NULL), GP_ERROR_INVALID_VALUE, "kernel");
  ck_assert_int_eq(a.max_threads_per_block, 0);
  FAILS(gp_kernel_get_attributes(NULL, k), GP_ERROR_INVALID_VALUE, "attr");
  struct gp_kernel_s other = *k;
  other.backend = cpu() ? GP_BACKEND_CUDA : GP_BACKEND_CPU;
  FAILS(gp_kernel_get_attributes(&a, &other), GP_ERROR_INVALID_HANDLE, "kernel");
  ck_assert_int_eq(gp__abi_register(&other), 0);
  FAILS(gp_kernel_get_attributes(&a, &other), GP_ERROR_INVALID_IMAGE, "backend");
  gp__abi_unregister(&other);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("module");
  TCase *tc = tcase_create("module");
  tcase_set_timeout(tc, 120); /* compiles run the host compiler */
  tcase_add_test(tc, compiled_kernel_matches_aot_build);
  tcase_add_test(tc, cache_is_keyed_by_source_and_options);
  tcase_add_test(tc, compile_errors_give_the_log);
  tcase_add_test(tc, modules_from_file_and_memory);
  tcase_add_test(tc, occupancy);
  tcase_add_test(tc, kernel_attributes);
  suite_add_tcase(s, tc);
  return s;
}

/* Removes the test's cache directory and what is in it (one level). */
static void remove_cache(void) {
  DIR *d = opendir(g_cache);
  if (d == NULL) return;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char p[512];
    snprintf(p, sizeof p, "%s/%s", g_cache, e->d_name);
    unlink(p);
  }
  closedir(d);
  rmdir(g_cache);
}

int main(void) {
  g_seed = gp_ref_default_seed();
  print_seed("test_module", (unsigned long long)g_seed);
  const char *tmp = getenv("TMPDIR");
  snprintf(g_cache, sizeof g_cache, "%s/gpuport-test-cache-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(g_cache) == NULL) {
    perror("mkdtemp");
    return EXIT_FAILURE;
  }
  setenv("GP_CACHE_DIR", g_cache, 1);
  int status = run_suite("test_module", suite());
  remove_cache();
  return status;
}
