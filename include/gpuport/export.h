/**
 * @file gpuport/export.h
 * @brief Symbol visibility and language-linkage helpers shared by the public headers.
 */
#ifndef GP_EXPORT_H
#define GP_EXPORT_H

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
