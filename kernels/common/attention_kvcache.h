/*
 * attention_kvcache.h - the one rule for the sequences of a paged KV-cache attention call
 * (gp_attention_fwd_kvcache: every kernel family and the cpu backend's host
 * implementation): how many keys sequence b has, which of its block-table entries must be
 * valid, and where its token t lives in the cache.
 *
 * Sequence b has sk = cache_seqlens[b] + seqlen_new keys and must have
 *   0 <= cache_seqlens[b]                          (GP__ATTN_KV_NEGATIVE)
 *   sk <= max_blocks_per_seq x page_size           (GP__ATTN_KV_TABLE: its pages are listed)
 *   0 <= block_table[b][c] < num_blocks            (GP__ATTN_KV_PAGE) for every column c
 *                                                  holding one of the tokens it touches
 * A kernel checks the columns of the tokens it is about to touch (its split's keys, or the
 * appended rows) before any barrier and fails the launch (GP_ERROR_LAUNCH_FAILED; on the
 * CPU executor the message names the sequence, on a GPU the trap carries none); the host
 * implementation checks every sequence before it reads or writes the cache and fails the
 * call with GP_ERROR_INVALID_VALUE. Either way nothing outside the cache is touched.
 *
 * Included from C and from dialect sources; the kernels' reporting part needs
 * gpuport/kernel.h first.
 */
#ifndef GP_KERNELS_ATTENTION_KVCACHE_H
#define GP_KERNELS_ATTENTION_KVCACHE_H

#include "attention_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  GP__ATTN_KV_OK = 0,
  GP__ATTN_KV_NEGATIVE = 1, /* cache_seqlens[b] < 0 */
  GP__ATTN_KV_TABLE = 2,    /* cache_seqlens[b] + seqlen_new > max_blocks_per_seq x page_size */
  GP__ATTN_KV_PAGE = 3      /* a block-table entry outside [0, num_blocks) */
};

/* The keys of sequence b (*sk), or the fault of its cache length. */
static inline GP_HOST_DEVICE int gp__attn_kv_seqlen(const gp__attn_kv_params_t *p, int64_t b, int64_t *sk) {
  const int64_t cached = p->cache_seqlens[b];
  *sk = cached + p->seqlen_new;
  if (cached < 0) return GP__ATTN_KV_NEGATIVE;
  if (*sk > p->max_blocks * p->page_size) return GP__ATTN_KV_TABLE;
  return GP__ATTN_KV_OK;
}

/* Whether the pages of sequence b holding tokens t0 .. t1 (inclusive; none when t1 < t0)
 * are in the cache; GP__ATTN_KV_PAGE with *col the first bad block-table column if not.
 * The caller has checked gp__attn_kv_seqlen, so the columns are inside the row. */
static inline GP_HOST_DEVICE int gp__attn_kv_pages(const gp__attn_kv_params_t *p, int64_t b, int64_t t0,
                                                   int64_t t1, int64_t *col) {
  const int32_t *row = p->block_table + b * p->bt_stride;
  for (int64_t c = t0 >> p->page_shift; t1 >= t0 && c <= t1 >> p->page_shift; c++)
    if (row[c] < 0 || row[c] >= p->num_blocks) {
      *col = c;
      return GP__ATTN_KV_PAGE;
    }
  return GP__ATTN_KV_OK;
}

/* The element offset of token t of sequence b in a cache with page stride bs and token
 * stride ss (add the head's offset). Only for tokens whose page was checked. */
static inline GP_HOST_DEVICE int64_t gp__attn_kv_token(const gp__attn_kv_params_t *p, int64_t b, int64_t t,
                                                       int64_t bs, int64_t ss) {
  const int64_t page = p->block_table[b * p->bt_stride + (t >> p->page_shift)];
  return page * bs + (t & (p->page_size - 1)) * ss;
}

/* The message of fault why of sequence b (host memory: the values are read again),
 * "sequence <b>: ...", into buf; col is the block-table column of GP__ATTN_KV_PAGE.
 * Defined in kernels/common/attention_kvcache.c. */
void gp__attn_kv_message(char *buf, size_t len, const gp__attn_kv_params_t *p, int64_t b, int why, int64_t col);

#ifdef __cplusplus
}
#endif

#if defined(__cplusplus) && defined(GP_KERNEL)
/* A kernel's fault of sequence b: the launch fails (uniform over the block, as every
 * thread reads the same values: reach it before any barrier). On the CPU executor the
 * message names the sequence and the kernel's file and line; on a GPU __trap() has none. */
GP_DEVICE void gp__attn_kv_kernel_fail(const gp__attn_kv_params_t *p, int64_t b, int why, int64_t col,
                                       const char *file, int line) {
#if defined(GP_TARGET_CPU)
  char msg[400];
  gp__attn_kv_message(msg, sizeof msg, p, b, why, col);
  gp__cpu_fail(file, line, "%s", msg);
#else
  (void)p, (void)b, (void)why, (void)col, (void)file, (void)line;
  __trap();
#endif
}

/* The keys of sequence b, its cache length checked. */
GP_DEVICE int64_t gp__attn_kv_kernel_seqlen(const gp__attn_kv_params_t *p, int64_t b, const char *file, int line) {
  int64_t sk;
  const int why = gp__attn_kv_seqlen(p, b, &sk);
  if (why != GP__ATTN_KV_OK) gp__attn_kv_kernel_fail(p, b, why, -1, file, line);
  return sk;
}

/* The pages of tokens t0 .. t1 of sequence b (its cache length already checked). */
GP_DEVICE void gp__attn_kv_kernel_pages(const gp__attn_kv_params_t *p, int64_t b, int64_t t0, int64_t t1,
                                        const char *file, int line) {
  int64_t col = -1;
  const int why = gp__attn_kv_pages(p, b, t0, t1, &col);
  if (why != GP__ATTN_KV_OK) gp__attn_kv_kernel_fail(p, b, why, col, file, line);
}
#define GP__ATTN_KV_SEQLEN(p, b) gp__attn_kv_kernel_seqlen((p), (b), __FILE__, __LINE__)
#define GP__ATTN_KV_PAGES(p, b, t0, t1) gp__attn_kv_kernel_pages((p), (b), (t0), (t1), __FILE__, __LINE__)
#endif

#endif /* GP_KERNELS_ATTENTION_KVCACHE_H */
