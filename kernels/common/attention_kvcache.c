/*
 * attention_kvcache.c - the message of a sequence that breaks the rule of
 * kernels/common/attention_kvcache.h, shared by the cpu backend's host implementation (its
 * GP_ERROR_INVALID_VALUE) and the kernels on the CPU executor (their failed launch).
 */
#include <stdio.h>

#include "kernels/common/attention_kvcache.h"

void gp__attn_kv_message(char *buf, size_t len, const gp__attn_kv_params_t *p, int64_t b, int why, int64_t col) {
  const long long cached = p->cache_seqlens[b], b_ = (long long)b;
  switch (why) {
    case GP__ATTN_KV_NEGATIVE:
      snprintf(buf, len, "sequence %lld: cache_seqlens[%lld] = %lld is negative", b_, b_, cached);
      break;
    case GP__ATTN_KV_TABLE:
      snprintf(buf, len,
               "sequence %lld: cache_seqlens[%lld] = %lld plus seqlen_new = %lld tokens is more than its "
               "block_table row holds (max_blocks_per_seq %lld x page_size %lld)",
               b_, b_, cached, (long long)p->seqlen_new, (long long)p->max_blocks, (long long)p->page_size);
      break;
    case GP__ATTN_KV_PAGE:
      snprintf(buf, len, "sequence %lld: block_table[%lld][%lld] = %lld is not a page of the cache (0..%lld)", b_,
               b_, (long long)col, (long long)p->block_table[b * p->bt_stride + col], (long long)p->num_blocks - 1);
      break;
    default:
      snprintf(buf, len, "sequence %lld does not fit the cache", b_);
      break;
  }
}
