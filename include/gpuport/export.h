/**
 * @file gpuport/export.h
 * @brief Symbol visibility and language-linkage helpers shared by the public headers.
 */
#ifndef GP_EXPORT_H
#define GP_EXPORT_H

/* NVRTC and hipRTC (gp_program_compile on CUDA and HIP) compile a dialect source without
 * the C library's headers: the gpuport headers include none there and take the
 * fixed-width types from here (hipRTC predefines the 32- and 64-bit ones, but neither
 * compiler has uintptr_t, which code shared by every target, such as the f16 and bf16
 * atomics of gpuport/kernel.h, uses). */
#if defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__)
/** @cond GP_INTERNAL */
#define GP__RTC 1
typedef unsigned char uint8_t;
typedef signed char int8_t;
typedef unsigned short uint16_t;
typedef signed short int16_t;
#if defined(__CUDACC_RTC__)
typedef unsigned int uint32_t;
typedef signed int int32_t;
typedef unsigned long long uint64_t;
typedef signed long long int64_t;
typedef unsigned long long uintptr_t; /* 64-bit device addresses */
#else
typedef __UINTPTR_TYPE__ uintptr_t; /* clang's own, as its <stdint.h> defines it */
#endif
#ifndef INT32_MIN
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#endif
/** @endcond */
#endif

/** Marks a public function: the libraries are built with -fvisibility=hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define GP_API __attribute__((visibility("default")))
#else
#define GP_API
#endif

#ifdef __cplusplus
/** @brief Opens a C-linkage block in C++ (empty in C). */
#define GP_EXTERN_C_BEGIN extern "C" {
/** @brief Closes the block GP_EXTERN_C_BEGIN opened. */
#define GP_EXTERN_C_END }
#else
/** @brief Opens a C-linkage block in C++ (empty in C). */
#define GP_EXTERN_C_BEGIN
/** @brief Closes the block GP_EXTERN_C_BEGIN opened. */
#define GP_EXTERN_C_END
#endif



/* Function qualifiers that let one definition serve host code and kernels. nvcc and
 * clang (CUDA and HIP modes) predefine __host__ / __device__. */
#ifndef GP_HOST_DEVICE
#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__HIP__)
#define GP_HOST_DEVICE __host__ __device__
#else
#define GP_HOST_DEVICE
#endif
#endif
#endif /* GP_EXPORT_H */
