// helper_cuda.h - a program's own error-check helper, as CUDA samples ship one: the
// porting test checks that an include of it is kept (it is not a CUDA toolkit header)
// and that its test of CUDA's driver-types guard holds once ported. It uses bfloat16
// without including cuda_bf16.h, as a header may (CUDA's runtime header brings it).
#ifndef PORT_TEST_HELPER_CUDA_H
#define PORT_TEST_HELPER_CUDA_H
#include <stdio.h>
#include <stdlib.h>
#ifdef __DRIVER_TYPES_H__
#define checkCudaErrors(call) do { cudaError_t e_ = (call); \
  if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); exit(1); } } while (0)
#endif
static inline float roundToBf16(float x) { return __bfloat162float(__float2bfloat16(x)); }
#endif
