/*
 * attention_cpu.h - what the CPU backend's attention forward (attention_fwd_cpu.c) and
 * backward (attention_bwd_cpu.c) share: row conversions, the thread count, and the
 * check of varlen offsets (read in stream order, as a kernel would read them).
 */
#ifndef GP_CPU_ATTENTION_CPU_H
#define GP_CPU_ATTENTION_CPU_H

#include "attention_impl.h"
#include "kernels/common/attention_seq.h"

/* Converts n elements of dtype at src (element offset off) to f32, every step-th
 * element of dst. */
void gp__cpu_attn_load_row(float *dst, int64_t step, const void *src, int64_t off, int dtype,
                           int64_t n);
/* Stores src[0..n) * mul, rounded to dtype, at dst (element offset off). */
void gp__cpu_attn_store_row(void *dst, int64_t off, int dtype, const float *src, float mul,
                            int64_t n);
/* Threads for a parallel loop of items: GP_CPU_THREADS (default: the online cores),
 * at most the item count and 256. */
int gp__cpu_attn_threads(int64_t items);
/* GP_ERROR_INVALID_VALUE (message naming func and the first sequence at fault) when the
 * varlen offsets break the rule of kernels/common/attention_seq.h, or the packed tensors
 * they size run past their allocations. */
gp_status_t gp__cpu_attn_check_varlen(const gp__attn_params_t *p, const char *func);

#endif /* GP_CPU_ATTENTION_CPU_H */
