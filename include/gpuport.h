/**
 * @file gpuport.h
 * @brief Umbrella header: one include for the whole host API.
 *
 * Kernel sources include gpuport/kernel.h instead (or as well).
 */
#ifndef GPUPORT_H
#define GPUPORT_H

#include <gpuport/version.h>
#include <gpuport/status.h>
#include <gpuport/types.h>
#include <gpuport/runtime.h>
#include <gpuport/graph.h>
#include <gpuport/module.h>
#include <gpuport/blas.h>
#include <gpuport/attention.h>
#include <gpuport/comm.h>
#include <gpuport/telemetry.h>

#endif /* GPUPORT_H */
