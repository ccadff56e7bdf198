/*
 * kt_attention.cu - a stand-in for the kernels of the portable attention backward
 * (gp__attn_bwd_kernels_t), so that test_attention_bwd.c can run one of them alone:
 * with the others replaced by this one, the kernel under test is the first of the call
 * to read the varlen offsets, and its own check is the one that must fail the launch.
 */
#include <gpuport/kernel.h>

#include "attention_impl.h"

GP_KERNEL void kt_attn_bwd_skip(gp__attn_bwd_params_t p) { (void)p; }
GP_KERNEL_EXPORT(kt_attn_bwd_skip)
