/*
 * test_gpu_errors.c - the CUDA/HIP runtime mapping: the one native-error table
 * (src/gpu/errors.c), the messages built from it, sticky faults, and, where a device
 * answers, a round trip through the mapped runtime calls.
 *
 * Only one vendor compiles per build: the cuda build checks CUDA's codes, the hip build
 * HIP's. The cpu build has no mapping: the suite is skipped there. The table, the
 * messages, sticky faults and the behaviour without a device run on every machine
 * (CI's have no GPU); the round trip needs a device.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gpuport.h>
#include "internal.h"
#include "check_util.h"

#if defined(GP_BUILD_CUDA) || defined(GP_BUILD_HIP)
#include "gpu/gpu.h"

/* ---- the table, row by row, in the vendor's own names ---------------------------- */
typedef struct row {
  int native;
  gp_status_t status;
  bool fault;
  const char *name; /* the native name, NULL: not checked */
} row_t;

#if defined(GP_BUILD_CUDA)
static const row_t rows[] = {
  {cudaSuccess, GP_SUCCESS, false, "cudaSuccess"},
  {cudaErrorInvalidValue, GP_ERROR_INVALID_VALUE, false, "cudaErrorInvalidValue"},
  {cudaErrorMemoryAllocation, GP_ERROR_OUT_OF_MEMORY, false, "cudaErrorMemoryAllocation"},
  {cudaErrorNoDevice, GP_ERROR_NO_DEVICE, false, "cudaErrorNoDevice"},
  /* What CUDA returns on a machine without a driver (docs/design/ARCHITECTURE.md "Errors"). */
  {35, GP_ERROR_NO_DEVICE, false, "cudaErrorInsufficientDriver"},
  {cudaErrorStubLibrary, GP_ERROR_NO_DEVICE, false, "cudaErrorStubLibrary"},
  {cudaErrorInvalidDevice, GP_ERROR_INVALID_DEVICE, false, "cudaErrorInvalidDevice"},
  {cudaErrorInvalidResourceHandle, GP_ERROR_INVALID_HANDLE, false, "cudaErrorInvalidResourceHandle"},
  {cudaErrorNotReady, GP_ERROR_NOT_READY, false, "cudaErrorNotReady"},
  {cudaErrorInvalidConfiguration, GP_ERROR_INVALID_CONFIGURATION, false, "cudaErrorInvalidConfiguration"},
  {cudaErrorLaunchOutOfResources, GP_ERROR_INVALID_CONFIGURATION, false, "cudaErrorLaunchOutOfResources"},
  {cudaErrorNoKernelImageForDevice, GP_ERROR_INVALID_IMAGE, false, "cudaErrorNoKernelImageForDevice"},
  {cudaErrorInvalidDeviceFunction, GP_ERROR_INVALID_IMAGE, false, "cudaErrorInvalidDeviceFunction"},
  {cudaErrorSymbolNotFound, GP_ERROR_NOT_FOUND, false, "cudaErrorSymbolNotFound"},
  {cudaErrorNotSupported, GP_ERROR_NOT_SUPPORTED, false, "cudaErrorNotSupported"},
  {cudaErrorPeerAccessUnsupported, GP_ERROR_NOT_SUPPORTED, false, "cudaErrorPeerAccessUnsupported"},
  {cudaErrorHostMemoryAlreadyRegistered, GP_ERROR_INVALID_VALUE, false, "cudaErrorHostMemoryAlreadyRegistered"},
  {cudaErrorLaunchFailure, GP_ERROR_LAUNCH_FAILED, true, "cudaErrorLaunchFailure"},
  {cudaErrorIllegalAddress, GP_ERROR_LAUNCH_FAILED, true, "cudaErrorIllegalAddress"},
  {cudaErrorAssert, GP_ERROR_LAUNCH_FAILED, true, "cudaErrorAssert"},
  {cudaErrorMisalignedAddress, GP_ERROR_LAUNCH_FAILED, true, "cudaErrorMisalignedAddress"},
  {cudaErrorIllegalInstruction, GP_ERROR_LAUNCH_FAILED, true, "cudaErrorIllegalInstruction"},
  {cudaErrorLaunchTimeout, GP_ERROR_TIMEOUT, true, "cudaErrorLaunchTimeout"},
  {cudaErrorGraphExecUpdateFailure, GP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, false, "cudaErrorGraphExecUpdateFailure"},
  {cudaErrorUnknown, GP_ERROR_BACKEND, false, "cudaErrorUnknown"},
  {123456, GP_ERROR_BACKEND, false, NULL},
};
#define OOM_CODE cudaErrorMemoryAllocation
#define OOM_CALL "cudaMalloc"
#define OOM_NAME "cudaErrorMemoryAllocation"
#define NODEV_CODE cudaErrorInsufficientDriver
#define FAULT_CODE cudaErrorIllegalAddress
#define FAULT_NAME "cudaErrorIllegalAddress"
#define ARCH_PREFIX "sm_"
#else
static const row_t rows[] = {
  {hipSuccess, GP_SUCCESS, false, "hipSuccess"},
  {hipErrorInvalidValue, GP_ERROR_INVALID_VALUE, false, "hipErrorInvalidValue"},
  {hipErrorOutOfMemory, GP_ERROR_OUT_OF_MEMORY, false, "hipErrorOutOfMemory"},
  /* What HIP returns on a machine without a device (docs/design/ARCHITECTURE.md "Errors"). */
  {100, GP_ERROR_NO_DEVICE, false, "hipErrorNoDevice"},
  {hipErrorInsufficientDriver, GP_ERROR_NO_DEVICE, false, "hipErrorInsufficientDriver"},
  {hipErrorInvalidDevice, GP_ERROR_INVALID_DEVICE, false, "hipErrorInvalidDevice"},
  {hipErrorInvalidHandle, GP_ERROR_INVALID_HANDLE, false, NULL},
  {hipErrorNotReady, GP_ERROR_NOT_READY, false, "hipErrorNotReady"},
  {hipErrorInvalidConfiguration, GP_ERROR_INVALID_CONFIGURATION, false, "hipErrorInvalidConfiguration"},
  {hipErrorLaunchOutOfResources, GP_ERROR_INVALID_CONFIGURATION, false, "hipErrorLaunchOutOfResources"},
  {hipErrorNoBinaryForGpu, GP_ERROR_INVALID_IMAGE, false, "hipErrorNoBinaryForGpu"},
  {hipErrorInvalidDeviceFunction, GP_ERROR_INVALID_IMAGE, false, "hipErrorInvalidDeviceFunction"},
  {hipErrorNotFound, GP_ERROR_NOT_FOUND, false, "hipErrorNotFound"},
  {hipErrorNotSupported, GP_ERROR_NOT_SUPPORTED, false, "hipErrorNotSupported"},
  {hipErrorPeerAccessUnsupported, GP_ERROR_NOT_SUPPORTED, false, "hipErrorPeerAccessUnsupported"},
  {hipErrorHostMemoryAlreadyRegistered, GP_ERROR_INVALID_VALUE, false, "hipErrorHostMemoryAlreadyRegistered"},
  {hipErrorLaunchFailure, GP_ERROR_LAUNCH_FAILED, true, "hipErrorLaunchFailure"},
  {hipErrorIllegalAddress, GP_ERROR_LAUNCH_FAILED, true, "hipErrorIllegalAddress"},
  {hipErrorAssert, GP_ERROR_LAUNCH_FAILED, true, "hipErrorAssert"},
  {hipErrorLaunchTimeOut, GP_ERROR_TIMEOUT, true, "hipErrorLaunchTimeOut"},
  {hipErrorGraphExecUpdateFailure, GP_ERROR_GRAPH_EXEC_UPDATE_FAILURE, false, "hipErrorGraphExecUpdateFailure"},
  {hipErrorUnknown, GP_ERROR_BACKEND, false, "hipErrorUnknown"},
  {123456, GP_ERROR_BACKEND, false, NULL},
};
#define OOM_CODE hipErrorOutOfMemory
#define OOM_CALL "hipMalloc"
#define OOM_NAME "hipErrorOutOfMemory"
#define NODEV_CODE hipErrorNoDevice
#define FAULT_CODE hipErrorIllegalAddress
#define FAULT_NAME "hipErrorIllegalAddress"
#define ARCH_PREFIX "gfx"
#endif
#define NROWS ((int)(sizeof(rows) / sizeof(rows[0])))

START_TEST(test_map_row) {
  const row_t *r = &rows[_i];
  bool fault = !r->fault;
  gp_status_t s = gp__gpu_map_error(r->native, &fault);
  ck_assert_msg(s == r->status, "native %d (%s) maps to %s, expected %s", r->native,
                r->name ? r->name : "?", gp_status_name(s), gp_status_name(r->status));
  ck_assert_msg(fault == r->fault, "native %d: fault is %d, expected %d", r->native, fault,
                r->fault);
  const char *name = gp__gpu_error_name(r->native);
  ck_assert_ptr_nonnull(name);
  if (r->name) ck_assert_str_eq(name, r->name);
  ck_assert_int_eq(gp__gpu_map_error(r->native, NULL), r->status); /* fault may be NULL */
}
END_TEST

/* The message names the public call, the native call, and the native error name. */
START_TEST(test_message) {
  gp_status_t s = gp__gpu_fail(OOM_CODE, 0, "gp__be_malloc", OOM_CALL);
  ck_assert_int_eq(s, GP_ERROR_OUT_OF_MEMORY);
  const char *m = gp_last_error_message();
  ck_assert_msg(strstr(m, "gp_malloc") != NULL, "message '%s' lacks the public call", m);
  ck_assert_msg(strstr(m, OOM_CALL) != NULL, "message '%s' lacks the native call", m);
  ck_assert_msg(strstr(m, OOM_NAME) != NULL, "message '%s' lacks the native name", m);
  ck_assert_msg(strstr(m, "device 0") != NULL, "message '%s' lacks the device", m);
  /* Not a fault: no asynchronous error is left behind. */
  ck_assert_int_eq(gp__async_error_peek(0), GP_SUCCESS);

  s = gp__gpu_fail(NODEV_CODE, -1, "gp__be_device_count", "count");
  ck_assert_int_eq(s, GP_ERROR_NO_DEVICE);
  m = gp_last_error_message();
  ck_assert_msg(strstr(m, "gp_device_count") != NULL, "message '%s'", m);
  ck_assert_msg(strstr(m, "device -1") == NULL, "message '%s' names no device", m);
}
END_TEST

/* A fault becomes the device's sticky asynchronous error, reported by later calls. */
START_TEST(test_fault_is_sticky) {
  int dev = 3; /* a slot no other test touches */
  ck_assert_int_eq(gp__gpu_fail(FAULT_CODE, dev, "gp__be_stream_synchronize", "sync"),
                   GP_ERROR_LAUNCH_FAILED);
  ck_assert_int_eq(gp__async_error_peek(dev), GP_ERROR_LAUNCH_FAILED);
  ck_assert_int_eq(gp__async_error_take(dev), GP_ERROR_LAUNCH_FAILED);
  ck_assert_int_eq(gp__async_error_peek(dev), GP_ERROR_LAUNCH_FAILED); /* sticky */
  ck_assert_int_eq(gp__async_error_report(dev, "gp_device_synchronize"), GP_ERROR_LAUNCH_FAILED);
  const char *m = gp_last_error_message();
  ck_assert_msg(strstr(m, FAULT_NAME) != NULL, "message '%s' lacks the native name", m);
  gp__async_error_reset(dev);
  ck_assert_int_eq(gp__async_error_peek(dev), GP_SUCCESS);
}
END_TEST

/* ---- with the runtime itself --------------------------------------------------- */

START_TEST(test_no_device_or_count) {
  int n = -1;
  gp_status_t s = gp_device_count(&n);
  ck_assert_msg(s == GP_SUCCESS || s == GP_ERROR_NO_DEVICE, "gp_device_count: %s: %s",
                gp_status_name(s), gp_last_error_message());
  if (s == GP_SUCCESS) {
    ck_assert_int_gt(n, 0);
  } else {
    ck_assert_int_eq(n, 0);
    ck_assert_str_ne(gp_last_error_message(), "");
    /* Every call that needs the device says the same. */
    void *p = NULL;
    ck_assert_int_eq(gp_malloc(&p, 256), GP_ERROR_NO_DEVICE);
    ck_assert_ptr_null(p);
  }
}
END_TEST

START_TEST(test_props) {
  gp_device_props_t p;
  gp_device_props_init(&p);
  ck_assert_int_eq(gp_device_get_props(&p, 0), GP_SUCCESS);
  ck_assert_msg(strncmp(p.arch, ARCH_PREFIX, strlen(ARCH_PREFIX)) == 0, "arch '%s'", p.arch);
  ck_assert_msg(strchr(p.arch, ':') == NULL, "arch '%s' keeps its features", p.arch);
  ck_assert_int_gt(p.multiprocessor_count, 0);
  ck_assert(p.warp_size == 32 || p.warp_size == 64);
  ck_assert_int_ge(p.max_threads_per_block, 256);
  ck_assert(p.total_memory > 0);
  ck_assert(p.shared_memory_per_block_optin >= p.shared_memory_per_block);
  ck_assert_int_eq(gp_device_get_props(&p, 1 << 20), GP_ERROR_INVALID_DEVICE);
}
END_TEST

static void set_flag(void *user) { *(int *)user = 1; }

START_TEST(test_round_trip) {
  ck_assert_int_eq(gp_device_set(0), GP_SUCCESS);
  enum { N = 1 << 16 };
  uint32_t *d = NULL, *h = malloc(N * sizeof(uint32_t));
  ck_assert_ptr_nonnull(h);
  ck_assert_int_eq(gp_malloc((void **)&d, N * sizeof(uint32_t)), GP_SUCCESS);
  gp_stream_t s = NULL;
  ck_assert_int_eq(gp_stream_create_with_flags(&s, GP_STREAM_NON_BLOCKING), GP_SUCCESS);
  gp_event_t a = NULL, b = NULL;
  ck_assert_int_eq(gp_event_create(&a), GP_SUCCESS);
  ck_assert_int_eq(gp_event_create(&b), GP_SUCCESS);
  ck_assert_int_eq(gp_event_record(a, s), GP_SUCCESS);
  /* A word of unequal bytes takes the driver path, equal bytes the byte fill. */
  ck_assert_int_eq(gp_memset_d32_async(d, 0x12345678u, N, s), GP_SUCCESS);
  ck_assert_int_eq(gp_memset_d32_async(d + N / 2, 0x7f7f7f7fu, N / 2, s), GP_SUCCESS);
  int flag = 0;
  ck_assert_int_eq(gp_launch_host_func(s, set_flag, &flag), GP_SUCCESS);
  ck_assert_int_eq(gp_event_record(b, s), GP_SUCCESS);
  ck_assert_int_eq(gp_stream_synchronize(s), GP_SUCCESS);
  ck_assert_int_eq(flag, 1);
  ck_assert_int_eq(gp_stream_query(s), GP_SUCCESS);
  float ms = -1.0f;
  ck_assert_int_eq(gp_event_elapsed_ms(&ms, a, b), GP_SUCCESS);
  ck_assert(ms >= 0.0f);
  ck_assert_int_eq(gp_memcpy(h, d, N * sizeof(uint32_t)), GP_SUCCESS);
  for (int i = 0; i < N; i++)
    ck_assert_uint_eq(h[i], i < N / 2 ? 0x12345678u : 0x7f7f7f7fu);

  /* Memory from the native runtime is recognised, and gp_free refuses it by name. */
  void *native = NULL;
  ck_assert_int_eq(gpuMalloc(&native, 256), gpuSuccess);
  gp_pointer_attributes_t attr;
  gp_pointer_attributes_init(&attr);
  ck_assert_int_eq(gp_pointer_get_attributes(&attr, native), GP_SUCCESS);
  ck_assert_int_eq(attr.type, GP_MEMORY_DEVICE);
  ck_assert_int_eq(attr.native, 1);
  ck_assert_int_eq(gp_free(native), GP_ERROR_INVALID_VALUE);
  ck_assert_msg(strstr(gp_last_error_message(), GP__GPU_STR(gpuFree)) != NULL, "'%s'",
                gp_last_error_message());
  ck_assert_int_eq(gpuFree(native), gpuSuccess);

  /* The native handles round-trip through wrap. */
  gp_stream_t w = NULL;
  ck_assert_int_eq(gp_stream_wrap(&w, gp_stream_native(s)), GP_SUCCESS);
  ck_assert_ptr_eq(gp_stream_native(w), gp_stream_native(s));
  ck_assert_int_eq(gp_stream_synchronize(w), GP_SUCCESS);
  ck_assert_int_eq(gp_stream_destroy(w), GP_SUCCESS);

  ck_assert_int_eq(gp_event_destroy(a), GP_SUCCESS);
  ck_assert_int_eq(gp_event_destroy(b), GP_SUCCESS);
  ck_assert_int_eq(gp_stream_destroy(s), GP_SUCCESS);
  ck_assert_int_eq(gp_stream_synchronize(GP_STREAM_PER_THREAD), GP_SUCCESS);
  ck_assert_int_eq(gp_free(d), GP_SUCCESS);
  free(h);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("gpu_errors");
  TCase *t = tcase_create("map");
  case_runs_without_device(t);
  tcase_add_loop_test(t, test_map_row, 0, NROWS);
  tcase_add_test(t, test_message);
  tcase_add_test(t, test_fault_is_sticky);
  tcase_add_test(t, test_no_device_or_count);
  suite_add_tcase(s, t);
  t = tcase_create("runtime");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, test_props);
  tcase_add_test(t, test_round_trip);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return run_suite("test_gpu_errors", suite()); }

#else /* the cpu backend */

int main(void) {
  return skip_suite("test_gpu_errors", "the CUDA/HIP error mapping is not compiled into the %s "
                    "backend (BACKEND=cuda or BACKEND=hip tests it)", gp_backend_name());
}
#endif
