// dialect.cu - the kernel host.c launches.
#include <gpuport/kernel.h>
GP_KERNEL void iota(int *p) { p[threadIdx.x] = (int)threadIdx.x; }
GP_KERNEL_EXPORT(iota)
