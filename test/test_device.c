/*
 * test_device.c - backend and version queries, devices, peers, priorities, device
 * reset. Adapts to the device count it finds (run with GP_CPU_DEVICES=1 and =4). On a
 * GPU build without a device the "backend" case alone runs: the queries that need no
 * device, and every call that needs one refused with GP_ERROR_NO_DEVICE.
 */
#include <check.h>
#include <stddef.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gpuport.h>
#ifdef GP_BUILD_CPU
#include "cpu/exec.h" /* gp__cpu_exec_threads */
#endif
#include "check_util.h"

/* The library still works after a failed call. */
static void still_usable(void) {
  void *p = NULL;
  int v = 7, w = 0;
  OK(gp_malloc(&p, sizeof(int)));
  OK(gp_memcpy(p, &v, sizeof v));
  OK(gp_memcpy(&w, p, sizeof w));
  ck_assert_int_eq(w, 7);
  OK(gp_free(p));
}

START_TEST(backend_and_version) {
  gp_backend_t b = gp_backend();
  const char *name = gp_backend_name();
  ck_assert(b == GP_BACKEND_CPU || b == GP_BACKEND_CUDA || b == GP_BACKEND_HIP);
  ck_assert_str_eq(name, b == GP_BACKEND_CPU ? "cpu" : b == GP_BACKEND_CUDA ? "cuda" : "hip");
  int ma = -1, mi = -1, pa = -1;
  OK(gp_version(&ma, &mi, &pa));
  ck_assert_int_eq(ma, GP_VERSION_MAJOR);
  ck_assert_int_eq(mi, GP_VERSION_MINOR);
  ck_assert_int_eq(pa, GP_VERSION_PATCH);
  OK(gp_version(NULL, NULL, NULL));
}
END_TEST

START_TEST(device_count) {
  NEED_DEVICES(1, n);
  ck_assert_int_ge(n, 1);
  if (gp_backend() == GP_BACKEND_CPU) {
    const char *env = getenv("GP_CPU_DEVICES");
    ck_assert_int_eq(n, env ? atoi(env) : 1);
  }
  FAILS(gp_device_count(NULL), GP_ERROR_INVALID_VALUE, "count");
  still_usable();
}
END_TEST

START_TEST(device_set_get) {
  NEED_DEVICES(1, n);
  int d = -1;
  OK(gp_device_get(&d));
  ck_assert_int_eq(d, 0);
  for (int i = n - 1; i >= 0; i--) {
    OK(gp_device_set(i));
    OK(gp_device_get(&d));
    ck_assert_int_eq(d, i);
  }
  FAILS(gp_device_set(-1), GP_ERROR_INVALID_DEVICE, "device");
  FAILS(gp_device_set(n), GP_ERROR_INVALID_DEVICE, "device");
  FAILS(gp_device_get(NULL), GP_ERROR_INVALID_VALUE, "device");
  OK(gp_device_get(&d));
  ck_assert_int_eq(d, 0); /* failed sets change nothing */
  still_usable();
}
END_TEST

static void *thread_device(void *arg) {
  int *out = arg, d = -1;
  if (gp_device_get(&d) != GP_SUCCESS) return NULL;
  out[0] = d; /* a new thread starts on device 0 */
  if (gp_device_set(out[1]) != GP_SUCCESS || gp_device_get(&d) != GP_SUCCESS) return NULL;
  out[2] = d;
  return NULL;
}

START_TEST(current_device_is_per_thread) {
  NEED_DEVICES(1, n);
  OK(gp_device_set(n - 1));
  int r[3] = {-1, n - 1, -1};
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, thread_device, r), 0);
  pthread_join(t, NULL);
  ck_assert_int_eq(r[0], 0);
  ck_assert_int_eq(r[2], n - 1);
  int d = -1;
  OK(gp_device_get(&d));
  ck_assert_int_eq(d, n - 1);
  OK(gp_device_set(0));
}
END_TEST

#ifdef GP_BUILD_CPU
/* A fresh process with GP_CPU_THREADS far above the executor's cap reports the cap. */
START_TEST(cpu_threads_capped) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    setenv("GP_CPU_THREADS", "100000", 1);
    gp_device_props_t p;
    gp_device_props_init(&p);
    if (gp_device_get_props(&p, 0) != GP_SUCCESS) _exit(2);
    _exit(p.multiprocessor_count == gp__cpu_exec_threads() && p.multiprocessor_count <= 512 ? 0 : 1);
  }
  int st = 0;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
}
END_TEST
#endif

START_TEST(device_props) {
  NEED_DEVICES(1, n);
  for (int d = 0; d < n; d++) {
    gp_device_props_t p;
    gp_device_props_init(&p);
    OK(gp_device_get_props(&p, d));
    ck_assert(p.name[0] != '\0');
    ck_assert(p.total_memory > 0);
    ck_assert_int_ge(p.multiprocessor_count, 1);
    ck_assert(p.warp_size == 32 || p.warp_size == 64);
    ck_assert_int_ge(p.max_threads_per_block, 256);
    ck_assert_int_ge(p.max_grid_dim[0], 65535);
    ck_assert(p.shared_memory_per_block_optin >= p.shared_memory_per_block);
    if (gp_backend() == GP_BACKEND_CPU) {
      char want[64];
      snprintf(want, sizeof want, "gpuport CPU device %d", d);
      ck_assert_str_eq(p.name, want);
      ck_assert(strncmp(p.arch, "cpu-", 4) == 0);
      ck_assert_int_eq(p.max_threads_per_block, 1024);
      ck_assert_int_eq(p.max_block_dim[0], 1024);
      ck_assert_int_eq(p.max_block_dim[2], 64);
      ck_assert_int_eq(p.max_grid_dim[0], 2147483647);
      ck_assert_int_eq(p.max_grid_dim[1], 65535);
      ck_assert_uint_eq(p.shared_memory_per_block, 48 * 1024);
      ck_assert_uint_eq(p.shared_memory_per_block_optin, 160 * 1024);
      ck_assert_int_eq(p.pci_bus_id, -1);
      const char *w = getenv("GP_CPU_WARP_SIZE");
      ck_assert_int_eq(p.warp_size, w && atoi(w) == 64 ? 64 : 32);
#ifdef GP_BUILD_CPU
      /* The executor's worker count (GP_CPU_THREADS, at most 512), not the raw value. */
      ck_assert_int_eq(p.multiprocessor_count, gp__cpu_exec_threads());
#endif
    }
  }
  gp_device_props_t p;
  gp_device_props_init(&p);
  FAILS(gp_device_get_props(NULL, 0), GP_ERROR_INVALID_VALUE, "props");
  FAILS(gp_device_get_props(&p, n), GP_ERROR_INVALID_DEVICE, "device");
  FAILS(gp_device_get_props(&p, -1), GP_ERROR_INVALID_DEVICE, "device");
  p.struct_size = 0;
  FAILS(gp_device_get_props(&p, 0), GP_ERROR_INVALID_VALUE, "struct_size");
  still_usable();
}
END_TEST

START_TEST(device_props_older_struct) {
  NEED_DEVICES(1, n);
  /* A caller built when the struct ended after `name`: nothing beyond it is written. */
  gp_device_props_t p;
  memset(&p, 0xab, sizeof p);
  p.struct_size = offsetof(gp_device_props_t, arch);
  OK(gp_device_get_props(&p, 0));
  ck_assert(p.name[0] != '\0' && p.name[0] != (char)0xab);
  for (size_t i = 0; i < sizeof p.arch; i++) ck_assert_int_eq((unsigned char)p.arch[i], 0xab);
  ck_assert_int_eq((unsigned char)((char *)&p)[sizeof p - 1], 0xab);
  /* A struct cut in the middle of a field does not get that field. */
  memset(&p, 0xab, sizeof p);
  p.struct_size = offsetof(gp_device_props_t, total_memory) + 4;
  OK(gp_device_get_props(&p, 0));
  ck_assert(p.arch[0] != (char)0xab);
  ck_assert_int_eq((unsigned char)((char *)&p.total_memory)[0], 0xab);
}
END_TEST

/* Every attribute equals the property field the list names; bad attributes, devices and
 * pointers are refused. */
START_TEST(device_attributes) {
  NEED_DEVICES(1, n);
  for (int d = 0; d < n; d++) {
    gp_device_props_t p;
    gp_device_props_init(&p);
    OK(gp_device_get_props(&p, d));
    int checked = 0;
#define CHECK_ATTR(name, num, field, text)                                                      \
  do {                                                                                          \
    int v = -12345;                                                                             \
    OK(gp_device_get_attribute(&v, GP_DEVICE_ATTR_##name, d));                                  \
    long long want = (long long)p.field;                                                        \
    if (want > INT_MAX) want = INT_MAX;                                                         \
    ck_assert_msg(v == want, "device %d: GP_DEVICE_ATTR_" #name " is %d, props." #field " %lld", \
                  d, v, want);                                                                  \
    ck_assert_int_eq((int)GP_DEVICE_ATTR_##name, num);                                          \
    checked++;                                                                                  \
  } while (0);
    GP_DEVICE_ATTR_LIST(CHECK_ATTR)
#undef CHECK_ATTR
    ck_assert_int_ge(checked, 50);
    /* What programs gate on: a compute capability and a clock, never 0. */
    ck_assert_int_ge(p.compute_capability_major, 1);
    ck_assert_int_gt(p.clock_rate_khz, 0);
    ck_assert_int_ge(p.max_threads_per_multiprocessor, p.max_threads_per_block);
    ck_assert_int_ge(p.max_blocks_per_multiprocessor, 1);
    ck_assert(p.shared_memory_per_multiprocessor >= p.shared_memory_per_block);
    ck_assert_int_gt(p.regs_per_block, 0);
    ck_assert(p.total_constant_memory >= 64 * 1024);
    if (gp_backend() == GP_BACKEND_CPU) {
      const char *cc = getenv("GP_CPU_COMPUTE_CAPABILITY");
      if (cc == NULL) {
        ck_assert_int_eq(p.compute_capability_major, 8);
        ck_assert_int_eq(p.compute_capability_minor, 0);
      }
      ck_assert_int_eq(p.cooperative_launch, 1);
      ck_assert_int_eq(p.managed_memory, 1);
      ck_assert_int_eq(p.can_map_host_memory, 1);
      ck_assert_int_eq(p.unified_addressing, 1);
      ck_assert_int_eq(p.pageable_memory_access, 0);
      ck_assert_int_eq(p.gpu_overlap, 1); /* two copy engines */
      ck_assert_int_eq(p.pageable_memory_access_uses_host_page_tables, 0);
      ck_assert_int_eq(p.max_access_policy_window_size, 0);
      ck_assert_int_eq(p.max_blocks_per_multiprocessor, 1); /* gp_occupancy_max_active_blocks */
      ck_assert_int_eq(p.pci_device_id, -1);
      ck_assert_int_eq(p.kernel_exec_timeout, getenv("GP_LAUNCH_TIMEOUT_S") != NULL &&
                                                  atof(getenv("GP_LAUNCH_TIMEOUT_S")) > 0);
    }
  }
  int v = 7;
  FAILS(gp_device_get_attribute(NULL, GP_DEVICE_ATTR_WARP_SIZE, 0), GP_ERROR_INVALID_VALUE, "value");
  FAILS(gp_device_get_attribute(&v, GP_DEVICE_ATTR_WARP_SIZE, n), GP_ERROR_INVALID_DEVICE, "device");
  FAILS(gp_device_get_attribute(&v, GP_DEVICE_ATTR_WARP_SIZE, -1), GP_ERROR_INVALID_DEVICE, "device");
  /* cudaDevAttrTextureAlignment (14) is CUDA's but not gpuport's; 0 and 100000 are nobody's. */
  FAILS(gp_device_get_attribute(&v, (gp_device_attr_t)14, 0), GP_ERROR_INVALID_VALUE, "attr");
  FAILS(gp_device_get_attribute(&v, (gp_device_attr_t)0, 0), GP_ERROR_INVALID_VALUE, "attr");
  FAILS(gp_device_get_attribute(&v, (gp_device_attr_t)100000, 0), GP_ERROR_INVALID_VALUE, "attr");
  FAILS(gp_device_get_attribute(&v, (gp_device_attr_t)-1, 0), GP_ERROR_INVALID_VALUE, "attr");
  ck_assert_int_eq(v, 0);
  /* A struct from before the appended fields gets none of them. */
  gp_device_props_t old;
  memset(&old, 0xab, sizeof old);
  old.struct_size = offsetof(gp_device_props_t, pci_bus_id) + sizeof old.pci_bus_id;
  OK(gp_device_get_props(&old, 0));
  ck_assert_int_eq((unsigned char)((char *)&old.total_constant_memory)[0], 0xab);
  ck_assert_int_eq((unsigned char)((char *)&old.memory_pools_supported)[3], 0xab);
}
END_TEST

/* GP_CPU_COMPUTE_CAPABILITY overrides the cpu device's 8.0; a malformed value is ignored. */
START_TEST(compute_capability_env) {
  const char *fork_mode = getenv("CK_FORK");
  if (gp_backend() != GP_BACKEND_CPU || (fork_mode && strcmp(fork_mode, "no") == 0)) return;
  setenv("GP_CPU_COMPUTE_CAPABILITY", "9.0", 1); /* properties are read once per process */
  int ma = 0, mi = -1;
  OK(gp_device_get_attribute(&ma, GP_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR, 0));
  OK(gp_device_get_attribute(&mi, GP_DEVICE_ATTR_COMPUTE_CAPABILITY_MINOR, 0));
  ck_assert_int_eq(ma, 9);
  ck_assert_int_eq(mi, 0);
  gp_device_props_t p;
  gp_device_props_init(&p);
  OK(gp_device_get_props(&p, 0));
  ck_assert_int_eq(p.compute_capability_major, 9);
  setenv("GP_CPU_COMPUTE_CAPABILITY", "sm_75", 1); /* read once per process: still 9.0 */
  OK(gp_device_get_attribute(&ma, GP_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR, 0));
  ck_assert_int_eq(ma, 9);
  unsetenv("GP_CPU_COMPUTE_CAPABILITY");
}
END_TEST

START_TEST(warp_size_env) {
  const char *fork_mode = getenv("CK_FORK");
  if (gp_backend() != GP_BACKEND_CPU || (fork_mode && strcmp(fork_mode, "no") == 0)) return;
  /* Properties are read once per process; this test's process is fresh (Check forks). */
  setenv("GP_CPU_WARP_SIZE", "64", 1);
  gp_device_props_t p;
  gp_device_props_init(&p);
  OK(gp_device_get_props(&p, 0));
  ck_assert_int_eq(p.warp_size, 64);
}
END_TEST

START_TEST(device_synchronize) {
  NEED_DEVICES(1, n);
  for (int d = 0; d < n; d++) {
    OK(gp_device_set(d));
    OK(gp_device_synchronize());
  }
  OK(gp_device_set(0));
}
END_TEST

START_TEST(device_reset) {
  NEED_DEVICES(1, n);
  int dev = n - 1;
  OK(gp_device_set(dev));
  gp_stream_t s = NULL;
  gp_event_t e = NULL;
  void *p = NULL;
  OK(gp_stream_create(&s));
  OK(gp_event_create(&e));
  OK(gp_malloc(&p, 4096));
  OK(gp_memset_async(p, 1, 4096, s));
  OK(gp_event_record(e, s));
  OK(gp_device_reset());
  /* Its handles and allocations are gone; using them is an error, not a crash. */
  FAILS(gp_stream_synchronize(s), GP_ERROR_INVALID_HANDLE, "stream");
  FAILS(gp_event_query(e), GP_ERROR_INVALID_HANDLE, "event");
  FAILS(gp_free(p), GP_ERROR_INVALID_VALUE, "ptr");
  if (gp_backend() == GP_BACKEND_CPU) {
    size_t free_b = 0, total = 0;
    OK(gp_mem_get_info(&free_b, &total));
    ck_assert_uint_eq(free_b, total);
  }
  still_usable();
  OK(gp_stream_create(&s));
  OK(gp_stream_synchronize(s));
  OK(gp_stream_destroy(s));
  OK(gp_device_set(0));
}
END_TEST

START_TEST(peer_access) {
  NEED_DEVICES(1, n);
  int can = -1;
  OK(gp_device_can_access_peer(&can, 0, 0));
  ck_assert_int_eq(can, 0); /* a device is not its own peer, as CUDA */
  FAILS(gp_device_can_access_peer(NULL, 0, 0), GP_ERROR_INVALID_VALUE, "can_access");
  FAILS(gp_device_can_access_peer(&can, n, 0), GP_ERROR_INVALID_DEVICE, "device");
  FAILS(gp_device_can_access_peer(&can, 0, n), GP_ERROR_INVALID_DEVICE, "peer");
  FAILS(gp_device_enable_peer_access(0), GP_ERROR_INVALID_VALUE, "peer");
  FAILS(gp_device_enable_peer_access(n), GP_ERROR_INVALID_DEVICE, "peer");
  if (n >= 2) {
    OK(gp_device_can_access_peer(&can, 0, n - 1));
    if (gp_backend() == GP_BACKEND_CPU) ck_assert_int_eq(can, 1);
    if (can) {
      OK(gp_device_enable_peer_access(n - 1));
      OK(gp_device_enable_peer_access(n - 1)); /* twice is not an error */
    }
  }
  still_usable();
}
END_TEST

START_TEST(priority_range) {
  int least = 99, greatest = 99;
  OK(gp_device_stream_priority_range(&least, &greatest));
  ck_assert_int_le(greatest, least);
  if (gp_backend() == GP_BACKEND_CPU) {
    ck_assert_int_eq(least, 0);
    ck_assert_int_eq(greatest, -5);
  }
  OK(gp_device_stream_priority_range(NULL, NULL));
}
END_TEST

/* A GPU build on a machine without a device: the count is 0 and the calls that need a
 * device say so (GP_ERROR_NO_DEVICE), nothing else. */
START_TEST(refused_without_device) {
  int n = -1;
  FAILS(gp_device_count(&n), GP_ERROR_NO_DEVICE, "device");
  ck_assert_int_eq(n, 0);
  int least = 99, greatest = 99;
  FAILS(gp_device_stream_priority_range(&least, &greatest), GP_ERROR_NO_DEVICE, "device");
  void *p = NULL;
  FAILS(gp_malloc(&p, 256), GP_ERROR_NO_DEVICE, "device");
  ck_assert_ptr_null(p);
  gp_device_props_t props;
  gp_device_props_init(&props);
  FAILS(gp_device_get_props(&props, 0), GP_ERROR_NO_DEVICE, "device");
}
END_TEST

/* cudaSetDeviceFlags / cudaGetDeviceFlags: kept per device, checked as CUDA checks them. */
START_TEST(device_flags) {
  NEED_DEVICES(1, n);
  unsigned f = 0xdead;
  OK(gp_device_get_flags(&f));
  if (gp_backend() == GP_BACKEND_CPU) ck_assert_uint_eq(f, GP_DEVICE_SCHEDULE_AUTO);
  OK(gp_device_set_flags(GP_DEVICE_SCHEDULE_BLOCKING_SYNC | GP_DEVICE_MAP_HOST));
  OK(gp_device_get_flags(&f));
  ck_assert_uint_eq(f & (GP_DEVICE_SCHEDULE_MASK | GP_DEVICE_MAP_HOST),
                    GP_DEVICE_SCHEDULE_BLOCKING_SYNC | GP_DEVICE_MAP_HOST);
  OK(gp_device_set_flags(GP_DEVICE_SCHEDULE_SPIN | GP_DEVICE_LMEM_RESIZE_TO_MAX));
  OK(gp_device_get_flags(&f));
  ck_assert_uint_eq(f & GP_DEVICE_SCHEDULE_MASK, GP_DEVICE_SCHEDULE_SPIN);
  ck_assert_uint_eq(f & GP_DEVICE_LMEM_RESIZE_TO_MAX, GP_DEVICE_LMEM_RESIZE_TO_MAX);
  /* Waits still work under every scheduling value. */
  OK(gp_device_set_flags(GP_DEVICE_SCHEDULE_YIELD));
  OK(gp_device_synchronize());
  /* Refused, and the flags stay as they were. */
  FAILS(gp_device_set_flags(0x100), GP_ERROR_INVALID_VALUE, "flags");
  FAILS(gp_device_set_flags(GP_DEVICE_SCHEDULE_SPIN | GP_DEVICE_SCHEDULE_YIELD), GP_ERROR_INVALID_VALUE,
        "scheduling");
  FAILS(gp_device_set_flags(GP_DEVICE_SCHEDULE_MASK), GP_ERROR_INVALID_VALUE, "scheduling");
  OK(gp_device_get_flags(&f));
  ck_assert_uint_eq(f & GP_DEVICE_SCHEDULE_MASK, GP_DEVICE_SCHEDULE_YIELD);
  FAILS(gp_device_get_flags(NULL), GP_ERROR_INVALID_VALUE, "flags");
  /* Per device: another device keeps its own. */
  if (n > 1 && gp_backend() == GP_BACKEND_CPU) {
    OK(gp_device_set(1));
    OK(gp_device_get_flags(&f));
    ck_assert_uint_eq(f, 0);
    OK(gp_device_set(0));
  }
  OK(gp_device_set_flags(GP_DEVICE_SCHEDULE_AUTO));
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("device");
  TCase *tb = tcase_create("backend");
  case_runs_without_device(tb);
  tcase_add_test(tb, backend_and_version);
  /* Only where no device answers (the cpu backend always has one, and is not started
   * before the tests fork). */
  if (gp_backend() != GP_BACKEND_CPU && !have_device()) tcase_add_test(tb, refused_without_device);
  suite_add_tcase(s, tb);
  TCase *tc = tcase_create("device");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, device_count);
  tcase_add_test(tc, device_set_get);
  tcase_add_test(tc, current_device_is_per_thread);
  tcase_add_test(tc, device_props);
#ifdef GP_BUILD_CPU
  tcase_add_test(tc, cpu_threads_capped);
#endif
  tcase_add_test(tc, device_props_older_struct);
  tcase_add_test(tc, warp_size_env);
  tcase_add_test(tc, device_attributes);
  tcase_add_test(tc, compute_capability_env);
  tcase_add_test(tc, device_synchronize);
  tcase_add_test(tc, device_reset);
  tcase_add_test(tc, peer_access);
  tcase_add_test(tc, priority_range);
  tcase_add_test(tc, device_flags);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return run_suite("test_device", suite()); }
