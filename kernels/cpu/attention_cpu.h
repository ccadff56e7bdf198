/*
 * attention_cpu.h - what the CPU backend's attention forward (attention_fwd_cpu.c) and
 * backward (attention_bwd_cpu.c) and the kvcache forward (attention_kvcache_cpu.c) share: row conversions, the thread count, the
 * tile operations (attention_tile_cpu.c) and the check of varlen offsets (read in stream
 * order, as a kernel would read them).
 */
#ifndef GP_CPU_ATTENTION_CPU_H
#define GP_CPU_ATTENTION_CPU_H

#include <stdatomic.h>
#include <stdbool.h>

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
/* Runs worker(job) on up to gp__cpu_attn_threads(items) threads, this one included; each
 * takes items from *next until it reaches items. False when the items were not all taken
 * (no thread got its buffers). */
bool gp__cpu_attn_parallel(void *(*worker)(void *), void *job, int64_t items, atomic_llong *next);

/* Sets the bytes each thread's K/V store of the forward (attention_fwd_cpu.c) may take,
 * for the whole process (tests: 0 leaves one tile, so every sequence longer than 128
 * keys converts its keys tile by tile); < 0 returns to the default, 8 MiB. */
void gp__cpu_attn_store_set(int64_t bytes);

/* Keys per tile of the kvcache host implementation's inner loops (the helpers below;
 * the forward and backward use the GEMM tiles further down). */
#define GP__CPU_ATTN_BK 64

/* s[0..BK) = q . k_c for every column of the transposed key tile kt [d][BK]. */
static inline void gp__cpu_attn_scores(float *restrict s, const float *restrict q, const float *restrict kt,
                                       int64_t d) {
  for (int c = 0; c < GP__CPU_ATTN_BK; c++) s[c] = 0.0f;
  for (int64_t e = 0; e < d; e++) {
    const float qe = q[e], *restrict kr = kt + e * GP__CPU_ATTN_BK;
    for (int c = 0; c < GP__CPU_ATTN_BK; c++) s[c] += qe * kr[c];
  }
}

/* acc[0..n) *= corr (n a multiple of 8). */
static inline void gp__cpu_attn_scale_row(float *restrict acc, float corr, int64_t n) {
  for (int64_t e = 0; e < n; e += 8)
    for (int u = 0; u < 8; u++) acc[e + u] *= corr;
}

/* acc[0..n) += p * v[0..n) (n a multiple of 8). */
static inline void gp__cpu_attn_axpy(float *restrict acc, float p, const float *restrict v, int64_t n) {
  for (int64_t e = 0; e < n; e += 8)
    for (int u = 0; u < 8; u++) acc[e + u] += p * v[e + u];
}
/* ---- tile operations (attention_tile_cpu.c); simd: the AVX2 + FMA build, else the
 * portable one (gp__cpu_attn_simd() decides per call) ---- */

/* C[m][n] = A[m][k] B[k][n], or C += A B when acc; row-major operands with leading
 * dimensions lda, ldb, ldc (elements). */
void gp__cpu_attn_gemm(bool simd, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                       const float *b, int64_t ldb, float *c, int64_t ldc, bool acc);
/* C[m][n] = A^T B, or C += A^T B when acc, with A stored [k][m] (leading dimension lda):
 * as gp__cpu_attn_gemm, A read down its columns. */
void gp__cpu_attn_gemm_tn(bool simd, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                          const float *b, int64_t ldb, float *c, int64_t ldc, bool acc);
/* C (6 mp x 16 np, leading dimension ldc) = A B, or += when acc, from packed
 * micro-panels (attention_tile_cpu.c says the layout); AVX2 + FMA only: the caller
 * checks gp__cpu_isa(). */
void gp__cpu_tile_gemm_packed(int64_t mp, int64_t np, int64_t k, const float *a, const float *b, float *c,
                              int64_t ldc, bool acc);
/* dst[c][r] = src[r][c] for r < rows, c < cols (leading dimensions lds, ldd). */
void gp__cpu_attn_transpose(bool simd, int64_t rows, int64_t cols, const float *src, int64_t lds,
                            float *dst, int64_t ldd);
/* dst[0..n) = the n elements of dtype at src (element offset off), as f32. */
void gp__cpu_attn_load(bool simd, float *dst, const void *src, int64_t off, int dtype, int64_t n);
/* dst (element offset off) = src[0..n) * mul rounded to dtype, as gp__cpu_attn_store_row;
 * the AVX2 build converts f32 and bf16 eight at a time. */
void gp__cpu_attn_store(bool simd, void *dst, int64_t off, int dtype, const float *src, float mul, int64_t n);
/* The maximum of scale * s[0..n) (-inf for n == 0 or a row of -inf); s is not written, so
 * the scaling costs no pass of its own: the exponentials fold it in. */
float gp__cpu_attn_max_scaled(bool simd, const float *s, int64_t n, float scale);
/* s[0..n) = 2^(scale * s - sub) (one FMA, then the exponential); returns their sum.
 * Base 2, so the caller passes its softmax scale times log2(e) and its maximum (or lse) in
 * the same units. The AVX2 build gives 2^-125 for anything smaller (the portable one 0):
 * beside the row's maximum, 2^0, no sum of exponentials can see the difference. */
float gp__cpu_attn_exp2_sum(bool simd, float *s, int64_t n, float scale, float sub);

/* ds[0..n) = p * (ds - d): the backward's dS from P, dP and the row's D. */
void gp__cpu_attn_ds_row(bool simd, float *ds, const float *p, int64_t n, float d);

/* GP_ERROR_INVALID_VALUE (message naming func and the first sequence at fault) when the
 * varlen offsets break the rule of kernels/common/attention_seq.h, or the packed tensors
 * they size run past their allocations. */
gp_status_t gp__cpu_attn_check_varlen(const gp__attn_params_t *p, const char *func);

#endif /* GP_CPU_ATTENTION_CPU_H */
