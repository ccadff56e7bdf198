/*
 * attention_seq.h - the one rule for the sequences of an attention call (forward and
 * backward, every kernel family and the cpu backend's host implementation): where
 * sequence b starts in the packed tensors and in the backward's workspace, how long it
 * is, and, with varlen, whether its cu_seqlens fit.
 *
 * The rule for cu_seqlens that do not fit: nothing reads or writes outside the tensors.
 * Each side (q, k) of sequence b must have
 *   0 <= cu[0] <= cu[b] <= cu[b + 1]            (it starts inside and does not decrease)
 *   cu[b + 1] - cu[b] <= seqlen                 (the grids cover seqlen rows a sequence)
 *   cu[b + 1] <= tokens                         (it ends inside the packed tensors: the
 *                                                tokens their allocations hold, known
 *                                                when gpuport allocated or registered them)
 *   cu[b + 1] - cu[0] <= batch * seqlen         (its workspace rows exist)
 * and on the q side, where lse is written (forward) or read (backward), also
 * cu[b + 1] <= cu[batch] <= tokens_q (lse's rows are cu[batch] long).
 * The host implementation checks every sequence before it reads a tensor and fails the
 * call with GP_ERROR_INVALID_VALUE; a kernel checks its own sequence before any barrier
 * and fails the launch (GP_ERROR_LAUNCH_FAILED; on the CPU executor the message names the
 * sequence and the broken bound, on a GPU the trap has no message). The checks read only
 * cu[0], cu[b], cu[b + 1] and cu[batch], so each block decides for the memory it touches
 * itself, whatever other blocks do: a block never waits for another's verdict.
 *
 * Included from C and from dialect sources; the kernels' reporting part needs
 * gpuport/kernel.h first.
 */
#ifndef GP_KERNELS_ATTENTION_SEQ_H
#define GP_KERNELS_ATTENTION_SEQ_H

#include "attention_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One sequence of a call. Without varlen q0 = k0 = 0 (the batch strides place it). */
typedef struct gp__attn_seq {
  int64_t sq, sk;  /* its queries and keys */
  int64_t q0, k0;  /* its first row in the packed q, o (and lse) / k, v */
  int64_t wq, wk;  /* its first row in the backward's workspace arrays */
  int64_t total_q; /* the row length of lse: cu_seqlens_q[batch] with varlen, else seqlen_q
                      (kernels that store lse late re-read cu_seqlens_q[batch], the checked
                      value, rather than hold it in registers through their main loop) */
} gp__attn_seq_t;

/* Why a sequence does not fit (gp__attn_sequence); GP__ATTN_SEQ_K is or-ed in when the
 * fault is on the key side. */
enum {
  GP__ATTN_SEQ_OK = 0,
  GP__ATTN_SEQ_BEFORE = 1,     /* cu[0] < 0 or cu[b] < cu[0] */
  GP__ATTN_SEQ_DECREASING = 2, /* cu[b + 1] < cu[b] */
  GP__ATTN_SEQ_LONG = 3,       /* cu[b + 1] - cu[b] > seqlen */
  GP__ATTN_SEQ_PAST_END = 4,   /* cu[b + 1] > tokens */
  GP__ATTN_SEQ_SPAN = 5,       /* cu[b + 1] - cu[0] > batch * seqlen */
  GP__ATTN_SEQ_TOTAL = 6,      /* q, with lse: cu[batch] < cu[b + 1] or cu[batch] > tokens_q */
  GP__ATTN_SEQ_K = 8
};

/* One side of the rule: the sequence's start, length and workspace row, or a fault. */
static inline GP_HOST_DEVICE int gp__attn_seq_side(const int32_t *cu, int64_t b, int64_t batch,
                                                   int64_t seqlen, int64_t tokens, int64_t *start,
                                                   int64_t *len, int64_t *wrow) {
  const int64_t first = cu[0], a = cu[b], z = cu[b + 1];
  *start = a, *len = z - a, *wrow = a - first;
  if (first < 0 || a < first) return GP__ATTN_SEQ_BEFORE;
  if (z < a) return GP__ATTN_SEQ_DECREASING;
  if (z - a > seqlen) return GP__ATTN_SEQ_LONG;
  if (z > tokens) return GP__ATTN_SEQ_PAST_END;
  if (z - first > batch * seqlen) return GP__ATTN_SEQ_SPAN;
  return GP__ATTN_SEQ_OK;
}

/* Sequence b of p into *s; GP__ATTN_SEQ_OK, or the fault (s is then not to be used). */
static inline GP_HOST_DEVICE int gp__attn_sequence(const gp__attn_params_t *p, int64_t b,
                                                   gp__attn_seq_t *s) {
  s->sq = p->seqlen_q, s->sk = p->seqlen_k, s->q0 = 0, s->k0 = 0;
  s->wq = b * p->seqlen_q, s->wk = b * p->seqlen_k, s->total_q = p->seqlen_q;
  if (!p->cu_q) return GP__ATTN_SEQ_OK;
  int why = gp__attn_seq_side(p->cu_q, b, p->batch, p->seqlen_q, p->tokens_q, &s->q0, &s->sq, &s->wq);
  if (why != GP__ATTN_SEQ_OK) return why;
  s->total_q = p->cu_q[p->batch];
  if (p->lse && (s->total_q < s->q0 + s->sq || s->total_q > p->tokens_q)) return GP__ATTN_SEQ_TOTAL;
  why = gp__attn_seq_side(p->cu_k, b, p->batch, p->seqlen_k, p->tokens_k, &s->k0, &s->sk, &s->wk);
  return why == GP__ATTN_SEQ_OK ? why : why | GP__ATTN_SEQ_K;
}

/* The message of fault why of sequence b (host memory: the offsets are read again),
 * "varlen sequence <b>: ...", into buf. Defined in kernels/common/attention_seq.c. */
void gp__attn_seq_message(char *buf, size_t len, const gp__attn_params_t *p, int64_t b, int why);

#ifdef __cplusplus
}
#endif

#if defined(__cplusplus) && defined(GP_KERNEL)
/* Sequence b of a kernel's call; when it does not fit, the launch fails (uniform over
 * the block, as every thread reads the same offsets: call it before any barrier). On the
 * CPU executor the failure's message names the sequence and the kernel's file and line;
 * on a GPU __trap() has no message to carry (and the kernels keep no stack frame for a
 * printf). */
GP_DEVICE gp__attn_seq_t gp__attn_kernel_sequence(const gp__attn_params_t *p, int64_t b, const char *file,
                                                  int line) {
  gp__attn_seq_t s;
  const int why = gp__attn_sequence(p, b, &s);
  if (why != GP__ATTN_SEQ_OK) {
#if defined(GP_TARGET_CPU)
    char msg[400];
    gp__attn_seq_message(msg, sizeof msg, p, b, why);
    gp__cpu_fail(file, line, "%s", msg);
#else
    (void)file, (void)line;
    __trap();
#endif
  }
  return s;
}
#define GP__ATTN_SEQUENCE(p, b) gp__attn_kernel_sequence((p), (b), __FILE__, __LINE__)
#endif

#endif /* GP_KERNELS_ATTENTION_SEQ_H */
