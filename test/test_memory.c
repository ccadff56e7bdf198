/*
 * test_memory.c - allocation, free (foreign, double, interior and mismatched frees are
 * errors, never crashes), copies, sets, memory info and pointer attributes. Adapts to
 * the device count it finds; skips when the backend has no device.
 */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <gpuport.h>
#include "check_util.h"

static bool is_cpu(void) { return gp_backend() == GP_BACKEND_CPU; }

static void still_usable(void) {
  void *p = NULL;
  int v = 7, w = 0;
  OK(gp_malloc(&p, sizeof(int)));
  OK(gp_memcpy(p, &v, sizeof v));
  OK(gp_memcpy(&w, p, sizeof w));
  ck_assert_int_eq(w, 7);
  OK(gp_free(p));
}

/* ---- allocation and free ------------------------------------------------------------ */

START_TEST(malloc_roundtrip) {
  NEED_DEVICES(1, n);
  for (int d = 0; d < n; d++) {
    OK(gp_device_set(d));
    enum { N = 1000 };
    int host[N], back[N];
    for (int i = 0; i < N; i++) host[i] = i * 3 + d;
    void *p = NULL;
    OK(gp_malloc(&p, sizeof host));
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq((uintptr_t)p % 256, 0);
    OK(gp_memcpy(p, host, sizeof host));
    memset(back, 0, sizeof back);
    OK(gp_memcpy(back, p, sizeof back));
    ck_assert_int_eq(memcmp(host, back, sizeof host), 0);
    OK(gp_free(p));
  }
  OK(gp_device_set(0));
}
END_TEST

START_TEST(malloc_edge_cases) {
  NEED_DEVICES(1, n);
  void *p = (void *)0x1;
  OK(gp_malloc(&p, 0));
  ck_assert_ptr_null(p);
  OK(gp_free(NULL));
  OK(gp_free_host(NULL));
  FAILS(gp_malloc(NULL, 16), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_malloc_host(NULL, 16), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_malloc_managed(NULL, 16), GP_ERROR_INVALID_VALUE, "ptr");
  p = (void *)0x1;
  gp_status_t s = gp_malloc(&p, SIZE_MAX / 2);
  ck_assert_msg(s == GP_ERROR_OUT_OF_MEMORY, "%s", gp_status_name(s));
  ck_assert_ptr_null(p);
  /* Sizes no host can pin are refused before the allocator sees them (under
   * AddressSanitizer, posix_memalign(SIZE_MAX) aborted the process). */
  p = (void *)0x1;
  FAILS(gp_malloc_host(&p, SIZE_MAX), GP_ERROR_OUT_OF_MEMORY, "bytes");
  ck_assert_ptr_null(p);
  FAILS(gp_malloc_host(&p, SIZE_MAX / 2), GP_ERROR_OUT_OF_MEMORY, "bytes");
  FAILS(gp_malloc_managed(&p, SIZE_MAX), GP_ERROR_OUT_OF_MEMORY, "bytes");
  FAILS(gp_malloc_async(&p, SIZE_MAX, NULL), GP_ERROR_OUT_OF_MEMORY, "bytes");
  still_usable();
}
END_TEST

START_TEST(free_foreign_pointer) {
  NEED_DEVICES(1, n);
  char *m = malloc(64);
  FAILS(gp_free(m), GP_ERROR_INVALID_VALUE, "ptr");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "not allocated by gpuport"));
  FAILS(gp_free_host(m), GP_ERROR_INVALID_VALUE, "ptr");
  int local = 0;
  FAILS(gp_free(&local), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_free((void *)(uintptr_t)0x1000), GP_ERROR_INVALID_VALUE, "ptr");
  free(m);
  still_usable();
}
END_TEST

START_TEST(free_twice) {
  NEED_DEVICES(1, n);
  void *p = NULL, *h = NULL;
  OK(gp_malloc(&p, 128));
  OK(gp_free(p));
  FAILS(gp_free(p), GP_ERROR_INVALID_VALUE, "ptr");
  OK(gp_malloc_host(&h, 128));
  OK(gp_free_host(h));
  FAILS(gp_free_host(h), GP_ERROR_INVALID_VALUE, "ptr");
  still_usable();
}
END_TEST

START_TEST(free_interior_pointer) {
  NEED_DEVICES(1, n);
  char *p = NULL;
  OK(gp_malloc((void **)&p, 1024));
  FAILS(gp_free(p + 16), GP_ERROR_INVALID_VALUE, "ptr");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "into an allocation"));
  OK(gp_free(p)); /* the allocation is intact */
  still_usable();
}
END_TEST

START_TEST(free_wrong_function) {
  NEED_DEVICES(1, n);
  void *d = NULL, *h = NULL, *m = NULL;
  OK(gp_malloc(&d, 64));
  OK(gp_malloc_host(&h, 64));
  OK(gp_malloc_managed(&m, 64));
  FAILS(gp_free(h), GP_ERROR_INVALID_VALUE, "gp_free_host");
  FAILS(gp_free_host(d), GP_ERROR_INVALID_VALUE, "gp_free");
  FAILS(gp_free_host(m), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_host_unregister(d), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_free_async(h, NULL), GP_ERROR_INVALID_VALUE, "ptr");
  OK(gp_free(d)); /* all three survive the wrong calls */
  OK(gp_free_host(h));
  OK(gp_free(m));
  still_usable();
}
END_TEST

START_TEST(host_and_managed) {
  NEED_DEVICES(1, n);
  int *h = NULL, *m = NULL;
  OK(gp_malloc_host((void **)&h, 256 * sizeof(int)));
  OK(gp_malloc_managed((void **)&m, 256 * sizeof(int)));
  for (int i = 0; i < 256; i++) h[i] = i; /* both are host-accessible */
  OK(gp_memcpy(m, h, 256 * sizeof(int)));
  OK(gp_device_synchronize());
  for (int i = 0; i < 256; i++) ck_assert_int_eq(m[i], i);
  OK(gp_free_host(h));
  OK(gp_free(m));
}
END_TEST

START_TEST(host_register) {
  NEED_DEVICES(1, n);
  size_t bytes = 1 << 16;
  char *buf = malloc(bytes);
  OK(gp_host_register(buf, bytes));
  gp_pointer_attributes_t a;
  gp_pointer_attributes_init(&a);
  OK(gp_pointer_get_attributes(&a, buf + 100));
  ck_assert_int_eq(a.type, GP_MEMORY_HOST);
  FAILS(gp_host_register(buf + 10, 10), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_host_register(NULL, 10), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_host_register(buf, 0), GP_ERROR_INVALID_VALUE, "bytes");
  FAILS(gp_host_unregister(buf + 1), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_free(buf), GP_ERROR_INVALID_VALUE, "gp_host_unregister");
  OK(gp_host_unregister(buf));
  FAILS(gp_host_unregister(buf), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_host_unregister(NULL), GP_ERROR_INVALID_VALUE, "ptr");
  gp_pointer_attributes_init(&a);
  OK(gp_pointer_get_attributes(&a, buf));
  ck_assert_int_eq(a.type, GP_MEMORY_UNREGISTERED);
  /* A range enclosing a registered one overlaps it too (both of its ends are outside
   * it): accepting it left overlapping entries, and lookups inside the larger range
   * then missed it. */
  OK(gp_host_register(buf + 1000, 100));
  FAILS(gp_host_register(buf, bytes), GP_ERROR_INVALID_VALUE, "overlaps");
  FAILS(gp_host_register(buf + 1099, 1), GP_ERROR_INVALID_VALUE, "overlaps");
  OK(gp_host_register(buf + 1100, 100)); /* adjacent, not overlapping */
  OK(gp_host_register(buf + 900, 100));
  gp_pointer_attributes_init(&a);
  OK(gp_pointer_get_attributes(&a, buf + 2000));
  ck_assert_int_eq(a.type, GP_MEMORY_UNREGISTERED);
  OK(gp_host_unregister(buf + 900));
  OK(gp_host_unregister(buf + 1000));
  OK(gp_host_unregister(buf + 1100));
  free(buf);
  still_usable();
}
END_TEST

START_TEST(malloc_free_async) {
  NEED_DEVICES(1, n);
  gp_stream_t s = NULL;
  OK(gp_stream_create(&s));
  int *p = NULL, v[64], w[64];
  for (int i = 0; i < 64; i++) v[i] = i;
  OK(gp_malloc_async((void **)&p, sizeof v, s));
  OK(gp_memcpy_async(p, v, sizeof v, s));
  OK(gp_memcpy_async(w, p, sizeof w, s));
  OK(gp_free_async(p, s));
  OK(gp_stream_synchronize(s));
  ck_assert_int_eq(memcmp(v, w, sizeof v), 0);
  FAILS(gp_free_async(p, s), GP_ERROR_INVALID_VALUE, "ptr"); /* twice */
  FAILS(gp_malloc_async(NULL, 16, s), GP_ERROR_INVALID_VALUE, "ptr");
  /* A bad stream frees nothing. */
  OK(gp_malloc_async((void **)&p, 64, NULL));
  FAILS(gp_free_async(p, (gp_stream_t)(uintptr_t)0xdead0), GP_ERROR_INVALID_HANDLE, "stream");
  FAILS(gp_malloc_async((void **)&p, 64, (gp_stream_t)(uintptr_t)0xdead0),
        GP_ERROR_INVALID_HANDLE, "stream");
  OK(gp_free_async(NULL, s));
  OK(gp_stream_destroy(s));
  FAILS(gp_free_async(p, s), GP_ERROR_INVALID_HANDLE, "stream");
  OK(gp_free(p)); /* gp_free accepts stream-ordered memory too */
  still_usable();
}
END_TEST

START_TEST(mem_get_info) {
  NEED_DEVICES(1, n);
  size_t f0 = 0, t0 = 0, f1 = 0, t1 = 0;
  OK(gp_mem_get_info(&f0, &t0));
  ck_assert(t0 > 0 && f0 <= t0);
  OK(gp_mem_get_info(NULL, NULL));
  OK(gp_mem_get_info(&f1, NULL));
  if (!is_cpu()) return;
  void *p = NULL;
  OK(gp_malloc(&p, 64 << 20));
  OK(gp_mem_get_info(&f1, &t1));
  ck_assert_uint_eq(t1, t0);
  ck_assert_uint_eq(f0 - f1, 64 << 20);
  if (n > 1) { /* each virtual device accounts for its own memory */
    OK(gp_device_set(1));
    OK(gp_mem_get_info(&f1, NULL));
    ck_assert_uint_eq(f1, t0);
    OK(gp_device_set(0));
  }
  OK(gp_free(p));
  OK(gp_mem_get_info(&f1, NULL));
  ck_assert_uint_eq(f1, f0);
  /* More than the device has fails cleanly. */
  FAILS(gp_malloc(&p, t0 + 1), GP_ERROR_OUT_OF_MEMORY, "bytes");
}
END_TEST

/* ---- copies and sets ---------------------------------------------------------------- */

START_TEST(memcpy_checks) {
  NEED_DEVICES(1, n);
  char *p = NULL, host[256];
  OK(gp_malloc((void **)&p, 128));
  OK(gp_memcpy(NULL, NULL, 0));
  FAILS(gp_memcpy(NULL, host, 16), GP_ERROR_INVALID_VALUE, "dst");
  FAILS(gp_memcpy(host, NULL, 16), GP_ERROR_INVALID_VALUE, "src");
  FAILS(gp_memcpy(p, host, 129), GP_ERROR_INVALID_VALUE, "dst");
  FAILS(gp_memcpy(host, p + 64, 65), GP_ERROR_INVALID_VALUE, "src");
  FAILS(gp_memcpy_async(p + 100, host, 29, NULL), GP_ERROR_INVALID_VALUE, "dst");
  FAILS(gp_memcpy_async(p, host, 16, (gp_stream_t)(uintptr_t)0xbad0), GP_ERROR_INVALID_HANDLE,
        "stream");
  OK(gp_memcpy(p + 64, host, 64)); /* exactly to the end is fine */
  /* A size gone negative ((size_t)-1) is refused even for host memory gpuport does not
   * know: no range can wrap around the address space (it was a memmove of SIZE_MAX). */
  FAILS(gp_memcpy(host, host + 128, SIZE_MAX), GP_ERROR_INVALID_VALUE, "wraps");
  FAILS(gp_memcpy(host + 128, host, SIZE_MAX - 64), GP_ERROR_INVALID_VALUE, "wraps");
  FAILS(gp_memcpy_async(host, host + 128, SIZE_MAX, NULL), GP_ERROR_INVALID_VALUE, "wraps");
  FAILS(gp_memset(host, 0, SIZE_MAX), GP_ERROR_INVALID_VALUE, "wraps");
  FAILS(gp_memset_async(host, 0, SIZE_MAX, NULL), GP_ERROR_INVALID_VALUE, "wraps");
  uint32_t words[4];
  FAILS(gp_memset_d32(words, 0, SIZE_MAX / 4), GP_ERROR_INVALID_VALUE, "wraps");
  OK(gp_free(p));
  still_usable();
}
END_TEST

START_TEST(memcpy_device_to_device) {
  NEED_DEVICES(1, n);
  gp_stream_t s = NULL;
  OK(gp_stream_create_with_flags(&s, GP_STREAM_NON_BLOCKING));
  float v[512], w[512];
  for (int i = 0; i < 512; i++) v[i] = (float)i * 0.5f;
  void *a = NULL, *b = NULL;
  OK(gp_malloc(&a, sizeof v));
  OK(gp_malloc(&b, sizeof v));
  OK(gp_memcpy_async(a, v, sizeof v, s));
  OK(gp_memcpy_async(b, a, sizeof v, s));
  OK(gp_memcpy_async(w, b, sizeof v, s));
  OK(gp_stream_synchronize(s));
  ck_assert_int_eq(memcmp(v, w, sizeof v), 0);
  OK(gp_free(a));
  OK(gp_free(b));
  OK(gp_stream_destroy(s));
}
END_TEST

START_TEST(memcpy_2d) {
  NEED_DEVICES(1, n);
  enum { W = 10, H = 7, SP = 16, DP = 32 };
  unsigned char src[SP * H], back[W * H];
  for (int i = 0; i < SP * H; i++) src[i] = (unsigned char)i;
  unsigned char *d = NULL;
  OK(gp_malloc((void **)&d, DP * H));
  OK(gp_memset(d, 0xee, DP * H));
  OK(gp_memcpy_2d(d, DP, src, SP, W, H));
  OK(gp_memcpy_2d(back, W, d, DP, W, H));
  for (int r = 0; r < H; r++)
    for (int c = 0; c < W; c++) ck_assert_int_eq(back[r * W + c], src[r * SP + c]);
  unsigned char row[DP];
  OK(gp_memcpy(row, d + DP, DP));
  ck_assert_int_eq(row[W], 0xee); /* the pitch padding is untouched */
  gp_stream_t s = NULL;
  OK(gp_stream_create(&s));
  memset(back, 0, sizeof back);
  OK(gp_memcpy_2d_async(back, W, d, DP, W, H, s));
  OK(gp_stream_synchronize(s));
  ck_assert_int_eq(back[W * H - 1], src[SP * (H - 1) + W - 1]);
  OK(gp_memcpy_2d(NULL, DP, src, SP, 0, H)); /* empty */
  FAILS(gp_memcpy_2d(d, 8, src, SP, W, H), GP_ERROR_INVALID_VALUE, "dpitch");
  FAILS(gp_memcpy_2d(d, DP, src, 8, W, H), GP_ERROR_INVALID_VALUE, "spitch");
  FAILS(gp_memcpy_2d(NULL, DP, src, SP, W, H), GP_ERROR_INVALID_VALUE, "dst");
  FAILS(gp_memcpy_2d(d, DP, NULL, SP, W, H), GP_ERROR_INVALID_VALUE, "src");
  FAILS(gp_memcpy_2d(d, DP, src, SP, W, H + 1), GP_ERROR_INVALID_VALUE, "dst");
  FAILS(gp_memcpy_2d(d, SIZE_MAX / 2, src, SP, W, 4), GP_ERROR_INVALID_VALUE, "height");
  FAILS(gp_memcpy_2d_async(d, DP, src, SP, W, H, (gp_stream_t)(uintptr_t)0x10),
        GP_ERROR_INVALID_HANDLE, "stream");
  OK(gp_stream_destroy(s));
  OK(gp_free(d));
  still_usable();
}
END_TEST

START_TEST(memcpy_peer) {
  NEED_DEVICES(1, n);
  int last = n - 1, v[32], w[32];
  for (int i = 0; i < 32; i++) v[i] = 100 + i;
  void *a = NULL, *b = NULL;
  OK(gp_device_set(0));
  OK(gp_malloc(&a, sizeof v));
  OK(gp_device_set(last));
  OK(gp_malloc(&b, sizeof v));
  OK(gp_device_set(0));
  OK(gp_memcpy(a, v, sizeof v));
  OK(gp_memcpy_peer(b, last, a, 0, sizeof v));
  gp_stream_t s = NULL;
  OK(gp_stream_create(&s));
  OK(gp_memcpy_peer_async(a, 0, b, last, sizeof v, s));
  OK(gp_stream_synchronize(s));
  OK(gp_memcpy(w, b, sizeof w));
  ck_assert_int_eq(memcmp(v, w, sizeof v), 0);
  FAILS(gp_memcpy_peer(b, n, a, 0, 4), GP_ERROR_INVALID_DEVICE, "dst_device");
  FAILS(gp_memcpy_peer(b, last, a, -1, 4), GP_ERROR_INVALID_DEVICE, "src_device");
  FAILS(gp_memcpy_peer(NULL, last, a, 0, 4), GP_ERROR_INVALID_VALUE, "dst");
  FAILS(gp_memcpy_peer(b, last, a, 0, sizeof v + 1), GP_ERROR_INVALID_VALUE, "dst");
  FAILS(gp_memcpy_peer_async(b, last, a, 0, 4, (gp_stream_t)(uintptr_t)0x20),
        GP_ERROR_INVALID_HANDLE, "stream");
  if (n > 1) FAILS(gp_memcpy_peer(a, last, b, last, 4), GP_ERROR_INVALID_VALUE, "dst");
  OK(gp_stream_destroy(s));
  OK(gp_free(a));
  OK(gp_free(b));
  still_usable();
}
END_TEST

START_TEST(memset_family) {
  NEED_DEVICES(1, n);
  uint32_t *p = NULL, back[100];
  OK(gp_malloc((void **)&p, sizeof back));
  OK(gp_memset(p, 0x5a, sizeof back));
  OK(gp_memcpy(back, p, sizeof back));
  ck_assert_uint_eq(back[99], 0x5a5a5a5au);
  OK(gp_memset(p, 0x1ff, 4)); /* only the low 8 bits count */
  OK(gp_memcpy(back, p, 4));
  ck_assert_uint_eq(back[0], 0xffffffffu);
  OK(gp_memset_d32(p, 0xdeadbeefu, 100));
  OK(gp_memcpy(back, p, sizeof back));
  ck_assert_uint_eq(back[0], 0xdeadbeefu);
  ck_assert_uint_eq(back[99], 0xdeadbeefu);
  gp_stream_t s = NULL;
  OK(gp_stream_create(&s));
  OK(gp_memset_async(p, 0, sizeof back, s));
  OK(gp_memset_d32_async(p + 50, 7u, 50, s));
  OK(gp_memcpy_async(back, p, sizeof back, s));
  OK(gp_stream_synchronize(s));
  ck_assert_uint_eq(back[49], 0);
  ck_assert_uint_eq(back[50], 7);
  OK(gp_memset(NULL, 0, 0));
  FAILS(gp_memset(NULL, 0, 4), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_memset(p, 0, sizeof back + 1), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_memset_d32((char *)p + 2, 0, 4), GP_ERROR_INVALID_VALUE, "aligned");
  FAILS(gp_memset_d32(p, 0, 101), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_memset_d32(NULL, 0, 1), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_memset_d32(p, 0, SIZE_MAX), GP_ERROR_INVALID_VALUE, "count");
  FAILS(gp_memset_async(p, 0, 4, (gp_stream_t)(uintptr_t)0x30), GP_ERROR_INVALID_HANDLE, "stream");
  FAILS(gp_memset_d32_async(p, 0, 4, (gp_stream_t)(uintptr_t)0x30), GP_ERROR_INVALID_HANDLE,
        "stream");
  OK(gp_stream_destroy(s));
  OK(gp_free(p));
  still_usable();
}
END_TEST

/* ---- what a GPU refuses, the cpu backend refuses too ----------------------------------------- */

/* A copy or set into or from freed device memory fails (cudaMemcpy: cudaErrorInvalidValue for
 * a pointer that is no longer a device allocation), naming the argument: the cpu backend holds
 * the latest freed allocations back, so their addresses cannot be plain host memory yet. The
 * same after a stream-ordered free, and for an interior pointer; a second free says it was
 * freed. Plain host memory stays a valid side of a copy. */
START_TEST(freed_device_memory_refused) {
  NEED_DEVICES(1, n);
  SKIP_IF(!is_cpu(), "the GPU backends leave a freed device pointer to the native runtime");
  char *p = NULL, *q = NULL, host[256];
  memset(host, 7, sizeof host);
  OK(gp_malloc((void **)&p, sizeof host));
  OK(gp_memcpy(p, host, sizeof host));
  OK(gp_free(p));
  FAILS(gp_memcpy(p, host, sizeof host), GP_ERROR_INVALID_VALUE, "'dst'");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "freed"));
  FAILS(gp_memcpy(host, p + 16, 16), GP_ERROR_INVALID_VALUE, "'src'");
  FAILS(gp_memcpy_async(p + 8, host, 8, NULL), GP_ERROR_INVALID_VALUE, "'dst'");
  FAILS(gp_memcpy_2d(p, 16, host, 16, 16, 4), GP_ERROR_INVALID_VALUE, "'dst'");
  FAILS(gp_memset(p, 0, sizeof host), GP_ERROR_INVALID_VALUE, "'ptr'");
  FAILS(gp_memset_d32_async(p, 0, 4, NULL), GP_ERROR_INVALID_VALUE, "'ptr'");
  FAILS(gp_free(p), GP_ERROR_INVALID_VALUE, "'ptr'");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "already freed"));
  /* A stream-ordered free: refused once the call has returned. */
  gp_stream_t s = NULL;
  OK(gp_stream_create(&s));
  OK(gp_malloc_async((void **)&q, 64, s));
  OK(gp_free_async(q, s));
  OK(gp_stream_synchronize(s));
  FAILS(gp_memcpy_async(q, host, 64, s), GP_ERROR_INVALID_VALUE, "'dst'");
  OK(gp_stream_destroy(s));
  /* Host memory is either side of a copy, as with cudaMemcpyDefault. */
  char other[256];
  OK(gp_memcpy(other, host, sizeof host));
  ck_assert_int_eq(memcmp(other, host, sizeof host), 0);
  still_usable();
}
END_TEST

static void fill_check(char *d, size_t bytes, int value) {
  char *h = malloc(bytes), *back = malloc(bytes);
  ck_assert_ptr_nonnull(h);
  ck_assert_ptr_nonnull(back);
  memset(h, value, bytes);
  OK(gp_memcpy(d, h, bytes));
  OK(gp_memcpy(back, d, bytes));
  ck_assert_int_eq(memcmp(h, back, bytes), 0);
  free(h), free(back);
}

/* Large allocations on the cpu backend start a 256-byte header into a 2 MiB page (whole
 * huge pages); small ones keep the 256-byte alignment alone. Both are usable to their
 * last byte, free as usual, and a freed large one is refused like any other. */
START_TEST(large_blocks) {
  NEED_DEVICES(1, n);
  SKIP_IF(!is_cpu(), "the GPU backends' allocator is the native runtime's");
  const size_t mib = (size_t)1 << 20, sizes[4] = {2 * mib, 5 * mib + 1000, 2 * mib - 257, 4096};
  for (int i = 0; i < 4; i++) {
    char *p = NULL, host[16] = {0};
    OK(gp_malloc((void **)&p, sizes[i]));
    ck_assert_uint_eq((uintptr_t)p % 256, 0);
    if (sizes[i] >= 2 * mib) ck_assert_uint_eq((uintptr_t)p % (2 * mib), 256);
    fill_check(p, sizes[i], 0x5a + i);
    OK(gp_free(p));
    FAILS(gp_memcpy(p + sizes[i] - 1, host, 1), GP_ERROR_INVALID_VALUE, "'dst'");
  }
  still_usable();
}
END_TEST

/* Whether this kernel moves pages with mremap(MREMAP_DONTUNMAP) (5.13 and later for any
 * private anonymous mapping): where it does, the cpu backend must reuse a freed large
 * block's pages. */
static bool kernel_moves_pages(void) {
  const size_t sz = (size_t)2 << 20;
  char *a = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (a == MAP_FAILED) return false;
  a[0] = 1;
  void *b = mremap(a, sz, sz, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
  const bool ok = b != MAP_FAILED && ((char *)b)[0] == 1;
  if (b != MAP_FAILED) munmap(b, sz);
  munmap(a, sz);
  return ok;
}

/* The first of p[0..n) that is not value, or n (one check, not one per byte). */
static size_t first_not(const char *p, size_t n, char value) {
  size_t i = 0;
  while (i < n && p[i] == value) i++;
  return i;
}

/* A freed large block's pages go to the next large allocation, whole or in part: its
 * bytes are the freed block's, at the same offsets (the block is whole pages from the
 * header on), while the freed pointer is still refused. */
START_TEST(large_blocks_reuse_pages) {
  NEED_DEVICES(1, n);
  SKIP_IF(!is_cpu(), "the GPU backends' allocator is the native runtime's");
  const size_t mib = (size_t)1 << 20, big = 5 * mib + 1000, part = 3 * mib;
  char *p = NULL, *q = NULL, *r = NULL, *u = NULL, host[16] = {0};
  OK(gp_device_synchronize());
  OK(gp_malloc((void **)&p, big));
  fill_check(p, big, 0x5a);
  OK(gp_free(p));
  OK(gp_malloc((void **)&q, big));
  ck_assert_ptr_ne(q, p);
  FAILS(gp_memcpy(p, host, sizeof host), GP_ERROR_INVALID_VALUE, "'dst'");
  char *back = malloc(big);
  ck_assert_ptr_nonnull(back);
  OK(gp_memcpy(back, q, big));
  const bool moves = kernel_moves_pages();
  printf("  large blocks: this kernel %s pages with mremap\n", moves ? "moves" : "does not move");
  if (moves) {
    const size_t bad = first_not(back, big, 0x5a);
    ck_assert_msg(bad == big, "byte %zu of the reused block is %d, not the freed block's", bad, back[bad]);
  }
  fill_check(q, big, 0x21);
  OK(gp_free(q));
  /* 3 MiB takes 4 MiB of the 6 pooled; the next takes the other 2 and faults the rest. */
  OK(gp_malloc((void **)&r, part));
  OK(gp_malloc((void **)&u, part));
  OK(gp_memcpy(back, r, part));
  if (moves) {
    const size_t bad = first_not(back, part, 0x21);
    ck_assert_msg(bad == part, "byte %zu of a partly reused block is %d", bad, back[bad]);
  }
  fill_check(r, part, 0x33);
  fill_check(u, part, 0x44);
  OK(gp_free(r));
  OK(gp_free(u));
  free(back);
  still_usable();
}
END_TEST

/* Threads allocating, filling and freeing large blocks at once: the pool's runs are
 * taken and returned concurrently, each block's contents stay its own. */
static void *large_worker(void *arg) {
  long *fails = arg;
  const size_t bytes = ((size_t)3 << 20) + 4096 * (size_t)(*fails);
  const int value = (int)(0x10 + *fails);
  *fails = 0;
  char *h = malloc(bytes), *back = malloc(bytes);
  if (h == NULL || back == NULL) {
    *fails = 1;
  }
  for (int it = 0; it < 12 && *fails == 0; it++) {
    void *d = NULL;
    memset(h, value + it, bytes);
    if (gp_malloc(&d, bytes) != GP_SUCCESS || gp_memcpy(d, h, bytes) != GP_SUCCESS ||
        gp_memcpy(back, d, bytes) != GP_SUCCESS || memcmp(h, back, bytes) != 0 || gp_free(d) != GP_SUCCESS)
      *fails = 1;
  }
  free(h), free(back);
  return NULL;
}

START_TEST(threads_large_blocks) {
  NEED_DEVICES(1, n);
  enum { T = 4 };
  pthread_t t[T];
  long fails[T];
  for (int i = 0; i < T; i++) {
    fails[i] = i;
    ck_assert_int_eq(pthread_create(&t[i], NULL, large_worker, &fails[i]), 0);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(t[i], NULL);
    ck_assert_int_eq(fails[i], 0);
  }
  still_usable();
}
END_TEST

/* Memory gpuport neither allocated nor registered (malloc, the stack) is not device memory: a
 * set or a peer copy of it fails (cudaMemset, cudaMemcpyPeer: cudaErrorInvalidValue), naming
 * the argument and saying so. Pinned, managed and registered host memory are device-accessible. */
START_TEST(host_memory_is_not_device_memory) {
  NEED_DEVICES(1, n);
  SKIP_IF(!is_cpu(), "only the cpu backend knows every device-accessible byte (HMM and ATS make "
                     "host memory device-accessible on some GPU systems)");
  char *m = malloc(256), *d = NULL, *h = NULL, *mg = NULL;
  ck_assert_ptr_nonnull(m);
  FAILS(gp_memset(m, 0, 256), GP_ERROR_INVALID_VALUE, "'ptr'");
  ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "not device-accessible"));
  FAILS(gp_memset_async(m, 0, 256, NULL), GP_ERROR_INVALID_VALUE, "'ptr'");
  FAILS(gp_memset_d32(m, 0, 64), GP_ERROR_INVALID_VALUE, "'ptr'");
  OK(gp_malloc((void **)&d, 256));
  FAILS(gp_memcpy_peer(m, 0, d, 0, 256), GP_ERROR_INVALID_VALUE, "'dst'");
  FAILS(gp_memcpy_peer(d, 0, m, 0, 256), GP_ERROR_INVALID_VALUE, "'src'");
  OK(gp_memcpy(d, m, 256)); /* host to device */
  OK(gp_memcpy(m, d, 256));
  OK(gp_malloc_host((void **)&h, 256));
  OK(gp_malloc_managed((void **)&mg, 256));
  OK(gp_memset(h, 1, 256));
  OK(gp_memset(mg, 2, 256));
  OK(gp_host_register(m, 256));
  OK(gp_memset(m, 3, 256));
  OK(gp_memcpy_peer(m, 0, d, 0, 256));
  OK(gp_host_unregister(m));
  FAILS(gp_memset(m, 0, 256), GP_ERROR_INVALID_VALUE, "'ptr'");
  OK(gp_free(d));
  OK(gp_free_host(h));
  OK(gp_free(mg));
  free(m);
  still_usable();
}
END_TEST

/* ---- pointer attributes ------------------------------------------------------------------ */

START_TEST(pointer_attributes) {
  NEED_DEVICES(1, n);
  int last = n - 1;
  char *d = NULL, *h = NULL, *m = NULL;
  OK(gp_device_set(last));
  OK(gp_malloc((void **)&d, 1000));
  OK(gp_malloc_managed((void **)&m, 1000));
  OK(gp_device_set(0));
  OK(gp_malloc_host((void **)&h, 1000));
  gp_pointer_attributes_t a;
  gp_pointer_attributes_init(&a);
  OK(gp_pointer_get_attributes(&a, d + 999)); /* interior pointers are recognised */
  ck_assert_int_eq(a.type, GP_MEMORY_DEVICE);
  ck_assert_int_eq(a.device, last);
  ck_assert_ptr_eq(a.device_pointer, d + 999);
  ck_assert_int_eq(a.native, 0);
  gp_pointer_attributes_init(&a);
  OK(gp_pointer_get_attributes(&a, m));
  ck_assert_int_eq(a.type, GP_MEMORY_MANAGED);
  ck_assert_ptr_eq(a.host_pointer, m);
  gp_pointer_attributes_init(&a);
  OK(gp_pointer_get_attributes(&a, h));
  ck_assert_int_eq(a.type, GP_MEMORY_HOST);
  ck_assert_ptr_eq(a.host_pointer, h);
  int local = 0;
  gp_pointer_attributes_init(&a);
  OK(gp_pointer_get_attributes(&a, &local));
  ck_assert_int_eq(a.type, GP_MEMORY_UNREGISTERED);
  ck_assert_int_eq(a.device, -1);
  /* One past the end is not the allocation. */
  gp_pointer_attributes_init(&a);
  OK(gp_pointer_get_attributes(&a, d + 1000));
  ck_assert_int_ne(a.type, GP_MEMORY_DEVICE);
  FAILS(gp_pointer_get_attributes(NULL, d), GP_ERROR_INVALID_VALUE, "attr");
  FAILS(gp_pointer_get_attributes(&a, NULL), GP_ERROR_INVALID_VALUE, "ptr");
  a.struct_size = 0;
  FAILS(gp_pointer_get_attributes(&a, d), GP_ERROR_INVALID_VALUE, "struct_size");
  /* An older, shorter struct gets only the fields it has. */
  memset(&a, 0xab, sizeof a);
  a.struct_size = offsetof(gp_pointer_attributes_t, device);
  OK(gp_pointer_get_attributes(&a, d));
  ck_assert_int_eq(a.type, GP_MEMORY_DEVICE);
  ck_assert_int_eq((unsigned char)((char *)&a.device)[0], 0xab);
  OK(gp_free(d));
  OK(gp_free(m));
  OK(gp_free_host(h));
}
END_TEST

/* ---- threads ------------------------------------------------------------------------------ */

static void *alloc_worker(void *arg) {
  long fails = 0;
  for (int i = 0; i < 200; i++) {
    void *p = NULL;
    size_t bytes = 64 + (size_t)(i % 7) * 100;
    if (gp_malloc(&p, bytes) != GP_SUCCESS) fails++;
    if (gp_memset(p, i, bytes) != GP_SUCCESS) fails++;
    if (gp_free(p) != GP_SUCCESS) fails++;
    if (gp_free(p) != GP_ERROR_INVALID_VALUE) fails++;
  }
  *(long *)arg = fails;
  return NULL;
}

/* ---- asynchronous copies with pageable memory (CUDA's "API synchronization behavior") -------- */

/* A gate: a host function that holds its stream until the test opens it. */
typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int open;
} gate_t;

static void gate_pass(void *p) {
  gate_t *g = p;
  pthread_mutex_lock(&g->mu);
  while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
}

static void gate_open(gate_t *g) {
  pthread_mutex_lock(&g->mu);
  g->open = 1;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

/* Sleeps 50 ms, then sets the flag: the stream behind it is slow. */
static void slow_then_set(void *flag) {
  struct timespec ts = {0, 50 * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  __atomic_store_n((int *)flag, 1, __ATOMIC_RELEASE);
}

/* Host to device from pageable memory: staged before the call returns, so overwriting
 * the source at once changes nothing that arrives (1D, 2D and to a symbol's neighbour:
 * managed memory). From page-locked memory the copy stays asynchronous: it reads the
 * source when the stream reaches it. */
START_TEST(memcpy_async_pageable_source_staged) {
  NEED_DEVICES(1, n);
  enum { N = 4099, W = 24, H = 5, P = 40 }; /* odd sizes: not a multiple of anything */
  gp_stream_t s = NULL;
  OK(gp_stream_create_with_flags(&s, GP_STREAM_NON_BLOCKING));
  unsigned char *src = malloc(N), *src2d = malloc(P * H), *back = malloc(N);
  unsigned char *dev = NULL, *dev2d = NULL, *managed = NULL, *pinned = NULL;
  ck_assert_ptr_nonnull(src);
  ck_assert_ptr_nonnull(src2d);
  ck_assert_ptr_nonnull(back);
  OK(gp_malloc((void **)&dev, N));
  OK(gp_malloc((void **)&dev2d, W * H));
  OK(gp_malloc_managed((void **)&managed, N));
  OK(gp_malloc_host((void **)&pinned, N));
  for (int i = 0; i < N; i++) src[i] = pinned[i] = (unsigned char)(i * 7 + 1);
  for (int i = 0; i < P * H; i++) src2d[i] = (unsigned char)(i * 5 + 3);
  gate_t g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  OK(gp_launch_host_func(s, gate_pass, &g)); /* the stream cannot reach the copies yet */
  OK(gp_memcpy_async(dev, src, N, s));
  OK(gp_memcpy_2d_async(dev2d, W, src2d, P, W, H, s));
  OK(gp_memcpy_async(managed, src, N, s));
  OK(gp_memcpy_async(dev + 1, pinned, N - 1, s)); /* page-locked: read later */
  memset(src, 0xee, N);
  memset(src2d, 0xee, P * H);
  memset(pinned, 0xdd, N);
  gate_open(&g);
  OK(gp_stream_synchronize(s));
  OK(gp_memcpy(back, dev, N));
  ck_assert_uint_eq(back[0], 1); /* from the staged pageable source */
  for (int i = 1; i < N; i++) ck_assert_uint_eq(back[i], 0xdd); /* from pinned, overwritten */
  OK(gp_memcpy(back, dev2d, W * H));
  for (int r = 0; r < H; r++)
    for (int c = 0; c < W; c++) ck_assert_uint_eq(back[r * W + c], (unsigned char)((r * P + c) * 5 + 3));
  for (int i = 0; i < N; i++) ck_assert_uint_eq(managed[i], (unsigned char)(i * 7 + 1));
  /* Many staged copies in flight at once, each its own snapshot. */
  gate_t g2 = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  OK(gp_launch_host_func(s, gate_pass, &g2));
  for (int k = 0; k < 64; k++) {
    src[0] = (unsigned char)k;
    OK(gp_memcpy_async(dev + k, src, 1, s));
  }
  gate_open(&g2);
  OK(gp_stream_synchronize(s));
  OK(gp_memcpy(back, dev, 64));
  for (int k = 0; k < 64; k++) ck_assert_uint_eq(back[k], (unsigned)k);
  OK(gp_free(dev));
  OK(gp_free(dev2d));
  OK(gp_free(managed));
  OK(gp_free_host(pinned));
  OK(gp_stream_destroy(s));
  free(src);
  free(src2d);
  free(back);
}
END_TEST

/* Device to pageable host memory: complete when the call returns, even on a stream busy
 * behind slow work; to page-locked memory it stays asynchronous. */
START_TEST(memcpy_async_to_pageable_complete_on_return) {
  NEED_DEVICES(1, n);
  enum { N = 8192 };
  gp_stream_t s = NULL;
  OK(gp_stream_create_with_flags(&s, GP_STREAM_NON_BLOCKING));
  unsigned char *dev = NULL, *pinned = NULL, *dst = malloc(N);
  ck_assert_ptr_nonnull(dst);
  OK(gp_malloc((void **)&dev, N));
  OK(gp_malloc_host((void **)&pinned, N));
  memset(dst, 0, N);
  int slow_done = 0;
  OK(gp_memset(dev, 0x11, N));
  OK(gp_launch_host_func(s, slow_then_set, &slow_done));
  OK(gp_memset_async(dev, 0x5a, N, s));
  OK(gp_memcpy_async(dst, dev, N, s));
  ck_assert_int_eq(__atomic_load_n(&slow_done, __ATOMIC_ACQUIRE), 1);
  for (int i = 0; i < N; i++) ck_assert_uint_eq(dst[i], 0x5a);
  /* 2D into pageable memory too. */
  memset(dst, 0, N);
  OK(gp_memset_async(dev, 0x6b, N, s));
  OK(gp_memcpy_2d_async(dst, 64, dev, 32, 32, 8, s));
  for (int r = 0; r < 8; r++)
    for (int c = 0; c < 64; c++) ck_assert_uint_eq(dst[r * 64 + c], c < 32 ? 0x6b : 0);
  /* Page-locked destination: the call returns while the stream is held. */
  gate_t g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  memset(pinned, 0, N);
  OK(gp_launch_host_func(s, gate_pass, &g));
  OK(gp_memcpy_async(pinned, dev, N, s));
  ck_assert_int_eq(gp_stream_query(s), GP_ERROR_NOT_READY);
  ck_assert_uint_eq(pinned[0], 0);
  gate_open(&g);
  OK(gp_stream_synchronize(s));
  for (int i = 0; i < N; i++) ck_assert_uint_eq(pinned[i], 0x6b);
  OK(gp_free(dev));
  OK(gp_free_host(pinned));
  OK(gp_stream_destroy(s));
  free(dst);
}
END_TEST

START_TEST(threads_alloc_free) {
  NEED_DEVICES(1, n);
  enum { T = 4 };
  pthread_t t[T];
  long fails[T];
  for (int i = 0; i < T; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, alloc_worker, &fails[i]), 0);
  for (int i = 0; i < T; i++) {
    pthread_join(t[i], NULL);
    ck_assert_int_eq(fails[i], 0);
  }
  still_usable();
}
END_TEST

GP_KERNEL_DECLARE(kt_vadd);

/* kt_vadd reads and writes host memory through the device pointers of mapped memory
 * (gp_host_alloc with GP_HOST_ALLOC_MAPPED for a and c, gp_host_register_flags with
 * GP_HOST_REGISTER_MAPPED for b); the host reads c directly after synchronising. */
START_TEST(host_mapped_kernel_writes) {
  enum { N = 1000 };
  float *a = NULL, *c = NULL;
  static float b[N + 1];
  OK(gp_host_alloc((void **)&a, N * sizeof(float), GP_HOST_ALLOC_MAPPED | GP_HOST_ALLOC_PORTABLE));
  OK(gp_host_alloc((void **)&c, (N + 1) * sizeof(float),
                   GP_HOST_ALLOC_MAPPED | GP_HOST_ALLOC_WRITE_COMBINED));
  OK(gp_host_register_flags(b, sizeof b, GP_HOST_REGISTER_MAPPED | GP_HOST_REGISTER_READ_ONLY));
  for (int i = 0; i < N; i++) {
    a[i] = (float)i;
    b[i] = 0.5f * (float)i;
  }
  for (int i = 0; i <= N; i++) c[i] = -1.0f; /* poison, and a sentinel past n */
  float *da = NULL, *db = NULL, *dc = NULL;
  OK(gp_host_get_device_pointer((void **)&da, a, 0));
  OK(gp_host_get_device_pointer((void **)&db, b, 0));
  OK(gp_host_get_device_pointer((void **)&dc, c, 0));
  ck_assert_ptr_nonnull(da);
  ck_assert_ptr_nonnull(db);
  ck_assert_ptr_nonnull(dc);
  /* An interior pointer maps to the same byte of the allocation. */
  float *dc1 = NULL;
  OK(gp_host_get_device_pointer((void **)&dc1, c + 1, 0));
  ck_assert_ptr_eq(dc1, dc + 1);
  int n = N;
  void *args[] = {&n, &da, &db, &dc};
  OK(gp_launch(GP_KERNEL_REF(kt_vadd), gp_dim3((N + 127) / 128, 1, 1), gp_dim3(128, 1, 1), 0,
               NULL, args));
  OK(gp_device_synchronize());
  for (int i = 0; i < N; i++)
    ck_assert_msg(c[i] == 1.5f * (float)i, "kt_vadd: c[%d] = %g, expected %g", i, c[i],
                  1.5f * (float)i);
  ck_assert_msg(c[N] == -1.0f, "kt_vadd wrote past n");
  OK(gp_host_unregister(b));
  OK(gp_free_host(a));
  OK(gp_free_host(c));
}
END_TEST

START_TEST(host_mapped_errors) {
  void *p = (void *)1;
  FAILS(gp_host_alloc(NULL, 16, 0), GP_ERROR_INVALID_VALUE, "ptr");
  FAILS(gp_host_alloc(&p, 16, 8), GP_ERROR_INVALID_VALUE, "flags");
  ck_assert_ptr_null(p);
  OK(gp_host_alloc(&p, 0, GP_HOST_ALLOC_MAPPED));
  ck_assert_ptr_null(p);
  /* Not page-locked: plain malloc, device memory, and memory no longer registered. */
  char *plain = malloc(64);
  ck_assert_ptr_nonnull(plain);
  void *d = (void *)1;
  FAILS(gp_host_get_device_pointer(&d, plain, 0), GP_ERROR_INVALID_VALUE, "page-locked");
  ck_assert_ptr_null(d);
  void *dev = NULL;
  OK(gp_malloc(&dev, 64));
  FAILS(gp_host_get_device_pointer(&d, dev, 0), GP_ERROR_INVALID_VALUE, "page-locked");
  OK(gp_free(dev));
  OK(gp_host_register_flags(plain, 64, GP_HOST_REGISTER_MAPPED));
  OK(gp_host_get_device_pointer(&d, plain + 63, 0));
  OK(gp_host_unregister(plain));
  FAILS(gp_host_get_device_pointer(&d, plain, 0), GP_ERROR_INVALID_VALUE, "page-locked");
  FAILS(gp_host_register_flags(plain, 64, 16), GP_ERROR_INVALID_VALUE, "flags");
  FAILS(gp_host_register_flags(NULL, 64, 0), GP_ERROR_INVALID_VALUE, "gp_host_register_flags");
  FAILS(gp_host_register_flags(plain, 0, 0), GP_ERROR_INVALID_VALUE, "bytes");
  free(plain);
  /* Memory from gp_malloc_host has a device pointer too; flags must be 0. */
  OK(gp_malloc_host(&p, 32));
  FAILS(gp_host_get_device_pointer(&d, p, 1), GP_ERROR_INVALID_VALUE, "flags");
  FAILS(gp_host_get_device_pointer(NULL, p, 0), GP_ERROR_INVALID_VALUE, "dptr");
  FAILS(gp_host_get_device_pointer(&d, NULL, 0), GP_ERROR_INVALID_VALUE, "host");
  OK(gp_host_get_device_pointer(&d, p, 0));
  ck_assert_ptr_nonnull(d);
  OK(gp_free_host(p));
  /* gp_host_alloc memory is freed by gp_free_host only. */
  OK(gp_host_alloc(&p, 32, GP_HOST_ALLOC_DEFAULT));
  FAILS(gp_free(p), GP_ERROR_INVALID_VALUE, "gp_free_host");
  OK(gp_free_host(p));
}
END_TEST

/* cudaDeviceGetDefaultMemPool and the pool attributes gpuport has. */
START_TEST(default_mem_pool) {
  NEED_DEVICES(1, n);
  gp_mem_pool_t pool = NULL, again = NULL;
  OK(gp_device_get_default_mem_pool(&pool, 0));
  ck_assert_ptr_nonnull(pool);
  OK(gp_device_get_default_mem_pool(&again, 0));
  ck_assert_ptr_eq(pool, again);
  uint64_t threshold = 12345;
  OK(gp_mem_pool_get_attribute(pool, GP_MEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold));
  ck_assert_uint_eq(threshold, 0);
  threshold = UINT64_MAX;
  OK(gp_mem_pool_set_attribute(pool, GP_MEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold));
  threshold = 0;
  OK(gp_mem_pool_get_attribute(pool, GP_MEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold));
  ck_assert(threshold == UINT64_MAX);
  const gp_mem_pool_attr_t reuse[] = {GP_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES,
                                      GP_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC,
                                      GP_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES};
  for (int i = 0; i < 3; i++) {
    int v = -1;
    OK(gp_mem_pool_get_attribute(pool, reuse[i], &v));
    ck_assert_int_eq(v, 1); /* on by default, as CUDA */
    v = 0;
    OK(gp_mem_pool_set_attribute(pool, reuse[i], &v));
    v = -1;
    OK(gp_mem_pool_get_attribute(pool, reuse[i], &v));
    ck_assert_int_eq(v, 0);
    v = 2;
    FAILS(gp_mem_pool_set_attribute(pool, reuse[i], &v), GP_ERROR_INVALID_VALUE, "reuse");
  }
  /* Stream-ordered allocation works under any setting. */
  gp_stream_t s = NULL;
  OK(gp_stream_create(&s));
  int *p = NULL, v = 7, back = 0;
  OK(gp_malloc_async((void **)&p, sizeof v, s));
  OK(gp_memcpy_async(p, &v, sizeof v, s));
  OK(gp_memcpy_async(&back, p, sizeof v, s));
  OK(gp_free_async(p, s));
  OK(gp_stream_synchronize(s));
  ck_assert_int_eq(back, 7);
  OK(gp_stream_destroy(s));
  /* Bad input. */
  FAILS(gp_device_get_default_mem_pool(NULL, 0), GP_ERROR_INVALID_VALUE, "pool");
  FAILS(gp_device_get_default_mem_pool(&again, n), GP_ERROR_INVALID_DEVICE, "device");
  ck_assert_ptr_null(again);
  FAILS(gp_device_get_default_mem_pool(&again, -1), GP_ERROR_INVALID_DEVICE, "device");
  FAILS(gp_mem_pool_set_attribute(NULL, GP_MEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold),
        GP_ERROR_INVALID_VALUE, "pool");
  FAILS(gp_mem_pool_set_attribute(pool, GP_MEM_POOL_ATTR_RELEASE_THRESHOLD, NULL),
        GP_ERROR_INVALID_VALUE, "value");
  FAILS(gp_mem_pool_get_attribute(pool, GP_MEM_POOL_ATTR_RELEASE_THRESHOLD, NULL),
        GP_ERROR_INVALID_VALUE, "value");
  FAILS(gp_mem_pool_get_attribute(pool, (gp_mem_pool_attr_t)5, &threshold), GP_ERROR_INVALID_VALUE, "attr");
  FAILS(gp_mem_pool_set_attribute(pool, (gp_mem_pool_attr_t)0, &threshold), GP_ERROR_INVALID_VALUE, "attr");
  if (gp_backend() == GP_BACKEND_CPU) {
    int x = 0;
    FAILS(gp_mem_pool_get_attribute((gp_mem_pool_t)(void *)&x, GP_MEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold),
          GP_ERROR_INVALID_HANDLE, "pool");
    FAILS(gp_mem_pool_set_attribute((gp_mem_pool_t)(void *)&x, GP_MEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold),
          GP_ERROR_INVALID_HANDLE, "pool");
  }
  /* Each device has its own pool. */
  if (n > 1) {
    gp_mem_pool_t other = NULL;
    OK(gp_device_get_default_mem_pool(&other, 1));
    ck_assert_ptr_ne(other, pool);
    threshold = 1;
    OK(gp_mem_pool_get_attribute(other, GP_MEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold));
    ck_assert_uint_eq(threshold, 0);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("memory");
  TCase *tc = tcase_create("memory");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, malloc_roundtrip);
  tcase_add_test(tc, host_mapped_kernel_writes);
  tcase_add_test(tc, host_mapped_errors);
  tcase_add_test(tc, malloc_edge_cases);
  tcase_add_test(tc, free_foreign_pointer);
  tcase_add_test(tc, free_twice);
  tcase_add_test(tc, free_interior_pointer);
  tcase_add_test(tc, free_wrong_function);
  tcase_add_test(tc, host_and_managed);
  tcase_add_test(tc, host_register);
  tcase_add_test(tc, malloc_free_async);
  tcase_add_test(tc, mem_get_info);
  tcase_add_test(tc, memcpy_checks);
  tcase_add_test(tc, memcpy_device_to_device);
  tcase_add_test(tc, memcpy_2d);
  tcase_add_test(tc, memcpy_peer);
  tcase_add_test(tc, memset_family);
  tcase_add_test(tc, pointer_attributes);
  tcase_add_test(tc, threads_alloc_free);
  tcase_add_test(tc, large_blocks);
  tcase_add_test(tc, large_blocks_reuse_pages);
  tcase_add_test(tc, threads_large_blocks);
  tcase_add_test(tc, freed_device_memory_refused);
  tcase_add_test(tc, host_memory_is_not_device_memory);
  tcase_add_test(tc, memcpy_async_pageable_source_staged);
  tcase_add_test(tc, memcpy_async_to_pageable_complete_on_return);
  tcase_add_test(tc, default_mem_pool);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return run_suite("test_memory", suite()); }
