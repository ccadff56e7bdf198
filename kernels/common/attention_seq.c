/*
 * attention_seq.c - the message of a varlen sequence that breaks the rule of
 * kernels/common/attention_seq.h, shared by the cpu backend's host implementation (its
 * GP_ERROR_INVALID_VALUE) and the kernels on the CPU executor (their failed launch), so
 * both name the sequence and the bound alike.
 */
#include <stdio.h>

#include "kernels/common/attention_seq.h"

void gp__attn_seq_message(char *buf, size_t len, const gp__attn_params_t *p, int64_t b, int why) {
  const bool k = (why & GP__ATTN_SEQ_K) != 0;
  const int32_t *cu = k ? p->cu_k : p->cu_q;
  const char side = k ? 'k' : 'q';
  const char *what = k ? "keys" : "queries";
  const long long first = cu[0], a = cu[b], z = cu[b + 1], total = cu[p->batch];
  const long long seqlen = k ? p->seqlen_k : p->seqlen_q, tokens = k ? p->tokens_k : p->tokens_q;
  int n = snprintf(buf, len, "varlen sequence %lld: cu_seqlens_%c[%lld] = %lld, cu_seqlens_%c[%lld] = %lld: ",
                   (long long)b, side, (long long)b, a, side, (long long)b + 1, z);
  if (n < 0 || (size_t)n >= len) return;
  buf += n, len -= (size_t)n;
  switch (why & ~GP__ATTN_SEQ_K) {
    case GP__ATTN_SEQ_BEFORE:
      snprintf(buf, len, "it starts before cu_seqlens_%c[0] = %lld or that is negative", side, first);
      break;
    case GP__ATTN_SEQ_DECREASING:
      snprintf(buf, len, "the offsets decrease (cu_seqlens must be nondecreasing)");
      break;
    case GP__ATTN_SEQ_LONG:
      snprintf(buf, len, "%lld %s, more than seqlen_%c = %lld", z - a, what, side, seqlen);
      break;
    case GP__ATTN_SEQ_PAST_END:
      snprintf(buf, len, "it ends past the %lld tokens the packed %s hold (their allocations)", tokens,
               k ? "k and v" : "q, o and lse");
      break;
    case GP__ATTN_SEQ_SPAN:
      snprintf(buf, len, "it ends %lld tokens after cu_seqlens_%c[0], more than batch x seqlen_%c = %lld",
               z - first, side, side, (long long)p->batch * seqlen);
      break;
    case GP__ATTN_SEQ_TOTAL:
      if (total < z)
        snprintf(buf, len, "cu_seqlens_q[%lld] = %lld (the total, lse's row length) is below its end",
                 (long long)p->batch, total);
      else
        snprintf(buf, len,
                 "cu_seqlens_q[%lld] = %lld (the total, lse's row length) is past the %lld tokens the "
                 "packed q, o and lse hold (their allocations)",
                 (long long)p->batch, total, tokens);
      break;
    default:
      snprintf(buf, len, "it does not fit");
      break;
  }
}
