/**
 * @file gpuport/version.h
 * @brief Library version. The Makefile reads the numbers from this header.
 * @ingroup runtime
 */
#ifndef GP_VERSION_H
#define GP_VERSION_H

/** Major version: changes when the ABI breaks (the soname follows it). */
#define GP_VERSION_MAJOR 0
/** Minor version: new functions, compatible ABI. */
#define GP_VERSION_MINOR 1
/** Patch version: fixes only. */
#define GP_VERSION_PATCH 0

/** The version as one integer, 10000 * major + 100 * minor + patch (as CUDART_VERSION). */
#define GP_VERSION (GP_VERSION_MAJOR * 10000 + GP_VERSION_MINOR * 100 + GP_VERSION_PATCH)

#endif /* GP_VERSION_H */
