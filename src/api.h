/*
 * api.h - helpers shared by the public runtime entry points (src/api_*.c): library
 * initialisation, device-ordinal checks, the per-device property cache and the
 * range checks on registered allocations. Backend-independent; nothing here is public.
 */
#ifndef GP_API_H
#define GP_API_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Initialises the backend once (gp__be_init); every public entry point calls it first. */
gp_status_t gp__api_init(const char *func);

/* Number of devices, cached after the first successful query. GP_ERROR_NO_DEVICE (with
 * a message naming func) when the backend has none. */
gp_status_t gp__api_device_count(const char *func, int *count);

/* GP_SUCCESS when dev names a device; GP_ERROR_INVALID_DEVICE naming argument `arg`. */
gp_status_t gp__api_check_device(const char *func, const char *arg, int dev);

/* Properties of dev (checked), from a cache filled on first use: launch checks read
 * them on every gp_launch, and the backend query may be a driver round trip. */
gp_status_t gp__api_props(const char *func, int dev, const gp_device_props_t **props);

/* Checks that [ptr, ptr + extent) does not wrap around the address space (any memory),
 * does not run past the end of the registered allocation containing ptr (the length of
 * unregistered memory is not known: it may be native or plain host memory), and that ptr
 * is not in device memory already freed (gp__be_pointer_freed: cudaMemcpy refuses a
 * pointer that is no longer a device allocation with cudaErrorInvalidValue).
 * GP_ERROR_INVALID_VALUE naming `arg` otherwise. For what may be host memory: either
 * side of a copy. */
gp_status_t gp__api_check_range(const char *func, const char *arg, const void *ptr,
                                size_t extent);

/* gp__api_check_range for memory a device reads or writes (kernels, GEMM, attention,
 * collectives, memset, peer copies): where the registry knows every device-accessible
 * byte (GP__REGISTRY_COMPLETE: the cpu backend), memory it does not know (plain malloc,
 * the stack) is also refused, GP_ERROR_INVALID_VALUE naming `arg` and saying that it is
 * not device-accessible memory: a GPU faults on it (cudaErrorIllegalAddress, sticky) or,
 * for cudaMemset and cudaMemcpyPeer, refuses it with cudaErrorInvalidValue. */
gp_status_t gp__api_check_device_range(const char *func, const char *arg, const void *ptr,
                                       size_t extent);

/* Kernel work (gp_launch, gp_launch_ex, GEMM, attention) goes into a stream of the current
 * device: a launch into a stream of another device fails with cudaErrorInvalidResourceHandle
 * (CUDA C++ Programming Guide, "Multi-Device System", "Stream and Event Behavior":
 * "A kernel launch will fail if it is issued to a stream that is not associated to the
 * current device"). GP_ERROR_INVALID_HANDLE naming 'stream' otherwise. stream is
 * resolved (gp__stream_resolve). Only what the guide says fails is refused: copies ("A
 * memory copy will succeed even if it is issued to a stream that is not associated to
 * the current device"), event waits, and sets and host functions, of which it says
 * nothing, may use a stream of another device. Where the backend leaves the rule to the
 * native runtime (gp__be_stream_device: -1), it passes. */
gp_status_t gp__api_check_launch_stream(const char *func, gp_stream_t stream);

/* GP_SUCCESS when ptr is a multiple of align bytes (the size of the elements it holds,
 * named by what: "f16", "int32"); GP_ERROR_INVALID_VALUE naming argument `arg` otherwise.
 * A GPU loads and stores an element of 1, 2, 4, 8 or 16 bytes in one instruction only at
 * an address that is a multiple of its size, and faults otherwise (CUDA C++ Programming
 * Guide, "Device Memory Accesses"; cudaErrorMisalignedAddress), as cuBLAS states each
 * operand's alignment in bytes (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES and its
 * siblings); on the cpu backend the access would be undefined behaviour (C11 6.3.2.3).
 * So the api layer refuses such pointers before any implementation reads them. */
static inline gp_status_t gp__api_check_aligned(const char *func, const char *arg, const void *ptr,
                                                size_t align, const char *what) {
  if (align <= 1 || (uintptr_t)ptr % align == 0) return GP_SUCCESS;
  return gp__error(GP_ERROR_INVALID_VALUE, func,
                   "%s (%p) is not aligned to its %s elements: its address must be a multiple of %zu bytes",
                   arg, ptr, what, align);
}

/* Copies the fields of a descriptor struct that fit in the caller's struct_size:
 * ends[] lists the end offset of each field in order (after struct_size). Fields that
 * would be cut are not written, so an older caller's struct is never overrun. */
void gp__api_copy_fields(void *dst, const void *src, size_t struct_size, const size_t *ends,
                         size_t n_ends);

#ifdef __cplusplus
}
#endif

#endif /* GP_API_H */
