/* kt_template.cuh - a kernel defined in a header that two dialect sources include
 * (kt_template.cu, kt_template2.cu): static, so each has its own, launched with GP_LAUNCH. */
#ifndef KT_TEMPLATE_CUH
#define KT_TEMPLATE_CUH
static __global__ void kt_header_kernel(int *out, int k) { out[threadIdx.x] = (int)threadIdx.x * k + 2; }
#endif
