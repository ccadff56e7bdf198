// kernels.cuh - a kernel defined in a header, launched from uses_header.cu; both are
// ported in one run of gpuport-port (the kernel is then a known kernel there).
#pragma once

__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
