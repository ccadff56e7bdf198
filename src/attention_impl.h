/*
 * attention_impl.h - what src/attention.c hands to the attention implementations
 * (the kernel families' kernels and host code, kernels/<family>/): the checked parameters
 * of one call with every default resolved, and the mask rule. The tables that choose an
 * implementation are src/dispatch.h's.
 *
 * Included from C and from dialect sources (C++ on every target), so it holds only
 * plain data and GP_HOST_DEVICE inline functions. Nothing here is public.
 */
#ifndef GP_ATTENTION_IMPL_H
#define GP_ATTENTION_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <gpuport/export.h>
#include <gpuport/status.h>
#include <gpuport/types.h>
#include <gpuport/runtime.h>
#include <gpuport/attention.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One checked attention call. Strides are in elements and already defaulted; the
 * window already includes causal (causal is window_right = 0, intersected with the
 * user's window). Varlen: cu_q/cu_k non-NULL, seqlen_q/seqlen_k are the maxima, the
 * batch strides are unused, lse is [heads_q, total_q], and tokens_q / tokens_k bound the
 * packed tensors (the rule of kernels/common/attention_seq.h). Passed by value to the
 * kernels, so it stays plain data. */
typedef struct gp__attn_params {
  const void *q, *k, *v;
  void *o;
  float *lse;                     /* NULL: not wanted */
  const int32_t *cu_q, *cu_k;     /* varlen prefix sums (device memory), or NULL */
  int64_t batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, head_dim_v;
  int64_t q_bs, q_ss, q_hs;
  int64_t k_bs, k_ss, k_hs;
  int64_t v_bs, v_ss, v_hs;
  int64_t o_bs, o_ss, o_hs;
  int64_t window_left, window_right; /* -1: unbounded on that side */
  float scale;                    /* softmax scale, resolved */
  int dtype;                      /* gp_dtype_t: GP_F32, GP_F16 or GP_BF16 */
  int64_t tokens_q, tokens_k;     /* varlen: the tokens the allocations of the packed q, o, lse
                                     (and the backward's d_o, dq) / k, v (dk, dv) hold, the
                                     smallest of them; GP__ATTN_TOKENS_UNKNOWN where gpuport
                                     knows none of them */
} gp__attn_params_t;

#define GP__ATTN_TOKENS_UNKNOWN INT64_MAX

/* Visible keys of query row i of a sequence with sq queries and sk keys: the inclusive
 * range [*lo, *hi], empty when *lo > *hi. The diagonal is bottom-right aligned
 * (FlashAttention 2.1+): row i's diagonal key is i + sk - sq; a window keeps
 * diag - wl <= j <= diag + wr, -1 meaning unbounded. Both ends grow with i, so the
 * keys of a block of rows i0..i1 are [lo(i0), hi(i1)]. */
static inline GP_HOST_DEVICE void gp__attn_key_range(int64_t i, int64_t sq, int64_t sk,
                                                     int64_t wl, int64_t wr, int64_t *lo,
                                                     int64_t *hi) {
  int64_t diag = i + sk - sq, a = 0, b = sk - 1;
  if (wl >= 0 && diag - wl > a) a = diag - wl;
  if (wr >= 0 && diag + wr < b) b = diag + wr;
  *lo = a;
  *hi = b;
}

/* Geometry of the portable kernel (kernels/portable/attention_fwd_portable.cu), shared with its launch:
 * GP__ATTN_KWARPS warps of GP_WARP_SIZE threads, GP__ATTN_KQ query rows per block, and
 * a key tile of gp__attn_kernel_block_k() rows chosen so the dynamic shared memory
 * (query tile + one key-or-value tile + the score tile, all f32) stays under 48 KiB,
 * the default limit of every target, for every head_dim up to 256. */
#define GP__ATTN_KWARPS 4
#define GP__ATTN_KQ 16
#define GP__ATTN_MAX_DIM 256

static inline GP_HOST_DEVICE int gp__attn_kernel_block_k(int64_t dmax) {
  return dmax <= 64 ? 64 : dmax <= 128 ? 32 : 16;
}

/* Dynamic shared memory of the portable kernel, in floats: the query tile
 * [KQ][head_dim], the key/value tile [block_k][max(head_dim, head_dim_v) + 1] (padded
 * so a warp reading a column of it touches distinct banks), the scores [KQ][block_k]. */
static inline GP_HOST_DEVICE int64_t gp__attn_kernel_smem_floats(int64_t d, int64_t dv) {
  int64_t dmax = d > dv ? d : dv, bk = gp__attn_kernel_block_k(dmax);
  return GP__ATTN_KQ * d + bk * (dmax + 1) + GP__ATTN_KQ * bk;
}

/* Query rows of a sequence (sq queries, sk keys) that see at least one key of
 * [j0, j1]: the inclusive range [*ilo, *ihi], empty when *ilo > *ihi. Row i sees keys
 * [lo(i), hi(i)] (gp__attn_key_range), both nondecreasing in i, so these are the rows
 * with hi(i) >= j0 and lo(i) <= j1; each such row's range is non-empty and meets
 * [j0, j1] (0 <= j0 <= j1 <= sk - 1). */
static inline GP_HOST_DEVICE void gp__attn_query_range(int64_t j0, int64_t j1, int64_t sq,
                                                       int64_t sk, int64_t wl, int64_t wr,
                                                       int64_t *ilo, int64_t *ihi) {
  int64_t off = sk - sq, a = 0, b = sq - 1;
  if (wr >= 0 && j0 - off - wr > a) a = j0 - off - wr;
  if (wl >= 0 && j1 - off + wl < b) b = j1 - off + wl;
  *ilo = a;
  *ihi = b;
}

/* ---- backward ------------------------------------------------------------------------
 * One checked gp_attention_bwd call: the forward's parameters (o and lse are the
 * forward's outputs, read here), the gradients, and the workspace carved by
 * src/attention.c. d_o has o's strides; dq, dk and dv have q's, k's and v's. Rows of the
 * workspace arrays are packed query (key) rows: b * seqlen_q + i, or with varlen
 * cu_seqlens_q[b] - cu_seqlens_q[0] + i, so rows_q = batch * seqlen_q bounds them. */
typedef struct gp__attn_bwd_params {
  gp__attn_params_t f;
  const void *d_o;
  void *dq, *dk, *dv;
  float *ws_d;          /* D = rowsum(dO * O), f32 [rows_q][heads_q] */
  float *ws_dq;         /* dq accumulator (unscaled), f32 [nslices][rows_q][heads_q][head_dim] */
  float *ws_dk, *ws_dv; /* GQA/MQA: per-query-head dk (unscaled) and dv before the group sum,
                           f32 [rows_k][heads_q][head_dim or head_dim_v]; NULL when
                           heads_q == heads_kv (the gradients are written directly) */
  int64_t rows_q, rows_k; /* batch * seqlen_q, batch * seqlen_k */
  int64_t nslices;      /* dq accumulator slices in use: 1, or one per split (deterministic) */
  int64_t nsplit;       /* blocks (work items) sharing one (sequence, query head); split s
                           takes key blocks s, s + nsplit, ... */
  int deterministic;    /* split s accumulates dq into slice s alone, in key-block order */
} gp__attn_bwd_params_t;

/* The sequences of a backward call: gp__attn_sequence (kernels/common/attention_seq.h)
 * of its forward parameters, whose tokens include the gradients. */

/* Deterministic mode's dq slices for a shape: enough (sequence, head, split) work for
 * GP__ATTN_BWD_SPLIT_TARGET parallel blocks, at most one per 64 keys. It depends on the
 * shape alone, so results do not depend on the device or the thread count. */
#define GP__ATTN_BWD_SPLIT_TARGET 128
static inline int64_t gp__attn_bwd_splits(int64_t batch, int64_t heads_q, int64_t seqlen_k) {
  int64_t bh = batch * heads_q, n = (GP__ATTN_BWD_SPLIT_TARGET + bh - 1) / bh;
  int64_t kb = (seqlen_k + 63) / 64;
  if (n > kb) n = kb;
  return n < 1 ? 1 : n;
}

/* Geometry of the portable backward kernel (kernels/portable/attention_bwd_portable.cu): a key tile of
 * gp__attn_bwd_block_k() rows is held for the whole block while query tiles of
 * gp__attn_bwd_block_q() rows stream past. block_k * max(head_dim, head_dim_v) is at most
 * GP__ATTN_BWD_TILE, the per-block dk and dv accumulators (GP__ATTN_BWD_TILE /
 * (GP__ATTN_KWARPS * GP_WARP_SIZE) f32 registers per thread each). Shared memory (f32):
 * K [bk][d + 1], V [bk][dv + 1], Q [bq][d], dO [bq][dv], P and dS [bq][bk], lse and D [bq]:
 * at most 43,328 bytes (head_dim 128), under the 48 KiB every target grants without opt-in. */
#define GP__ATTN_BWD_TILE 4096
static inline GP_HOST_DEVICE int gp__attn_bwd_block_k(int64_t dmax) {
  return dmax <= 64 ? 64 : dmax <= 128 ? 32 : 16;
}
static inline GP_HOST_DEVICE int gp__attn_bwd_block_q(int64_t dmax) { return dmax <= 128 ? 8 : 4; }
static inline GP_HOST_DEVICE int64_t gp__attn_bwd_smem_floats(int64_t d, int64_t dv) {
  int64_t dmax = d > dv ? d : dv, bk = gp__attn_bwd_block_k(dmax), bq = gp__attn_bwd_block_q(dmax);
  return bk * (d + 1) + bk * (dv + 1) + bq * (d + dv) + 2 * bq * bk + 2 * bq;
}

/* The four kernels of one build of the portable backward: preprocess (D, zeroed dq
 * accumulator), main (loop over key blocks), dq postprocess, dk/dv group sum. */
typedef struct gp__attn_bwd_kernels {
  gp_kernel_t pre, main, dq, dkv;
} gp__attn_bwd_kernels_t;

/* CPU backend: enqueues the tiled host implementation on stream (already resolved)
 * in stream order; p is copied; simd: the AVX2 + FMA tiles (gp__cpu_attn_simd), else the
 * portable ones. Writes a short name of the implementation chosen (for the INFO line)
 * into what. Defined in kernels/cpu/attention_fwd_cpu.c. */
gp_status_t gp__cpu_attention_fwd(gp_stream_t stream, const gp__attn_params_t *p, bool simd,
                                  char *what, size_t what_len);

/* CPU backend: enqueues the tiled host backward (kernels/cpu/attention_bwd_cpu.c) on stream
 * (already resolved); p is copied, its nslices is the workspace's; simd as for
 * gp__cpu_attention_fwd. */
gp_status_t gp__cpu_attention_bwd(gp_stream_t stream, const gp__attn_bwd_params_t *p, bool simd,
                                  char *what, size_t what_len);

/* gp_attention_fwd running a given build of the portable kernel (the tests run a
 * width-64 build on the CPU executor, as HIP runs it). Defined in src/attention.c. */
gp_status_t gp__attention_fwd_kernel(gp_stream_t stream, const gp_attention_desc_t *desc,
                                     gp_kernel_t kernel);

/* gp_attention_bwd running a given build of the portable kernels (the tests run the
 * width-64 build on the CPU executor). Defined in src/attention.c. */
gp_status_t gp__attention_bwd_kernels(gp_stream_t stream, const gp_attention_desc_t *desc,
                                      const void *d_o, void *dq, void *dk, void *dv,
                                      void *workspace, size_t workspace_bytes,
                                      const gp__attn_bwd_kernels_t *kernels);

/* ---- attention over a paged KV cache ---------------------------------------------------
 * One checked gp_attention_fwd_kvcache call, every default resolved (strides in elements;
 * the window includes causal). Sequence b attends over sk_b = cache_seqlens[b] +
 * seqlen_new keys; its query i sits at key position sk_b - seqlen_q + i, so the mask rule
 * is gp__attn_key_range(i, seqlen_q, sk_b, ...). The rule for the cache lengths and the
 * block table, and the key-to-page mapping, are kernels/common/attention_kvcache.h's.
 * Passed by value to the kernels, so it stays plain data. */
typedef struct gp__attn_kv_params {
  const void *q;
  void *o;
  float *lse;                     /* [batch, heads_q, seqlen_q], or NULL */
  void *k_cache, *v_cache;        /* [num_blocks, page_size, heads_kv, head_dim] */
  const int32_t *block_table;     /* [batch][bt_stride] (device memory) */
  const int32_t *cache_seqlens;   /* [batch] (device memory) */
  const void *k_new, *v_new;      /* [batch, seqlen_new, heads_kv, head_dim], or NULL */
  float *ws_o;                    /* splits: partial outputs, f32 [nsplit][batch][heads_q][seqlen_q][head_dim] */
  float *ws_lse;                  /* splits: partial lse, f32 [nsplit][batch][heads_q][seqlen_q] */
  int64_t batch, seqlen_q, heads_q, heads_kv, head_dim;
  int64_t num_blocks, page_size, max_blocks, bt_stride, seqlen_new;
  int64_t q_bs, q_ss, q_hs, o_bs, o_ss, o_hs;
  int64_t kc_bs, kc_ss, kc_hs, vc_bs, vc_ss, vc_hs; /* cache: page, token, head strides */
  int64_t kn_bs, kn_ss, kn_hs, vn_bs, vn_ss, vn_hs; /* k_new, v_new */
  int64_t window_left, window_right; /* -1: unbounded on that side */
  int64_t nsplit;                 /* split-KV parts, >= 1 (1: o and lse written directly) */
  float scale;
  int dtype;
  int page_shift;                 /* log2(page_size) */
} gp__attn_kv_params_t;

/* Keys per split unit: a split takes whole units of this many keys, so every family's key
 * tile (16, 32 or 64 keys) stays inside one split. */
#define GP__ATTN_KV_SPLIT_KEYS 64

/* New tokens per block of the portable append kernel. */
#define GP__ATTN_KV_APPEND 16

/* The three kernels of one build of the portable kvcache family: append, main (per split),
 * combine. */
typedef struct gp__attn_kv_kernels {
  gp_kernel_t append, main, combine;
} gp__attn_kv_kernels_t;

/* gp_attention_fwd_kvcache running a given build of the portable kernels (the tests run
 * the width-64 build on the CPU executor, as HIP runs it). Defined in
 * src/attention_kvcache.c. */
gp_status_t gp__attention_fwd_kvcache_kernels(gp_stream_t stream, const gp_attention_kvcache_desc_t *desc,
                                              void *workspace, size_t workspace_bytes,
                                              const gp__attn_kv_kernels_t *kernels);

/* Split s (of p->nsplit) of a sequence with sk keys: keys [*k0, *k1), empty when equal.
 * The sequence's own length is cut, in whole units of GP__ATTN_KV_SPLIT_KEYS, into
 * nsplit nearly equal parts, so a batch of very different lengths keeps every split busy. */
static inline GP_HOST_DEVICE void gp__attn_kv_split(int64_t sk, int64_t nsplit, int64_t s, int64_t *k0,
                                                    int64_t *k1) {
  const int64_t units = (sk + GP__ATTN_KV_SPLIT_KEYS - 1) / GP__ATTN_KV_SPLIT_KEYS;
  const int64_t per = (units + nsplit - 1) / nsplit * GP__ATTN_KV_SPLIT_KEYS;
  int64_t a = s * per, z = a + per;
  *k0 = a < sk ? a : sk;
  *k1 = z < sk ? z : sk;
}

/* CPU backend: enqueues the host implementation of a kvcache call on stream (already
 * resolved); p is copied. Defined in kernels/cpu/attention_kvcache_cpu.c. */
gp_status_t gp__cpu_attention_kvcache(gp_stream_t stream, const gp__attn_kv_params_t *p, char *what,
                                      size_t what_len);

#ifdef __cplusplus
}
#endif

#endif /* GP_ATTENTION_IMPL_H */
