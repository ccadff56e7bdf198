/**
 * @file gpuport/attention.h
 * @brief Scaled dot-product attention, forward and backward (FlashAttention-2 semantics).
 * @ingroup attention
 *
 * O = softmax(scale * Q K^T + mask) V, per batch and query head; query head h reads
 * key/value head h / (heads_q / heads_kv) (GQA/MQA). Masks follow FlashAttention 2.1+:
 * causal is aligned to the bottom-right corner, so query i sees key j when
 * j <= i + seqlen_k - seqlen_q; a window keeps keys with
 * i + seqlen_k - seqlen_q - window_left <= j <= i + seqlen_k - seqlen_q + window_right;
 * causal is window_right = 0 and combines with a window as their intersection.
 * A query row with no visible key gives an output row of zeros and lse = -inf
 * (FlashAttention 3's convention).
 */
#ifndef GP_ATTENTION_H
#define GP_ATTENTION_H

#include <stdint.h>
#include <gpuport/export.h>
#include <gpuport/runtime.h>

GP_EXTERN_C_BEGIN

/**
 * @brief Describes one attention call. Initialise with gp_attention_desc_init().
 *
 * Tensors are [batch, seq, heads, head_dim] by default, the last dimension contiguous;
 * a stride field of 0 means the default for that layout. With varlen (cu_seqlens_q
 * and cu_seqlens_k both set) the tensors are packed [total_tokens, heads, head_dim],
 * batch strides are ignored, and seqlen_q / seqlen_k are the maxima over the batch.
 */
typedef struct gp_attention_desc {
  size_t struct_size;   /**< set by gp_attention_desc_init() */
  gp_dtype_t dtype;     /**< ::GP_F16, ::GP_BF16 or ::GP_F32, for q, k, v and o */
  int64_t batch;        /**< sequences, >= 1 */
  int64_t seqlen_q;     /**< query length (varlen: the maximum) */
  int64_t seqlen_k;     /**< key length (varlen: the maximum) */
  int64_t heads_q;      /**< query heads, a multiple of heads_kv */
  int64_t heads_kv;     /**< key/value heads */
  int64_t head_dim;     /**< q/k head dimension, 1..256 */
  int64_t head_dim_v;   /**< v/o head dimension; 0 means head_dim */
  const void *q;        /**< queries, device memory */
  const void *k;        /**< keys, device memory */
  const void *v;        /**< values, device memory */
  void *o;              /**< output, device memory, head_dim_v wide */
  int64_t q_batch_stride; /**< elements between batches of q (0: default) */
  int64_t q_seq_stride;   /**< elements between positions of q (0: default) */
  int64_t q_head_stride;  /**< elements between heads of q (0: default) */
  int64_t k_batch_stride; /**< elements between batches of k (0: default) */
  int64_t k_seq_stride;   /**< elements between positions of k (0: default) */
  int64_t k_head_stride;  /**< elements between heads of k (0: default) */
  int64_t v_batch_stride; /**< elements between batches of v (0: default) */
  int64_t v_seq_stride;   /**< elements between positions of v (0: default) */
  int64_t v_head_stride;  /**< elements between heads of v (0: default) */
  int64_t o_batch_stride; /**< elements between batches of o (0: default) */
  int64_t o_seq_stride;   /**< elements between positions of o (0: default) */
  int64_t o_head_stride;  /**< elements between heads of o (0: default) */
  float softmax_scale;  /**< scale of Q K^T; 0 means 1/sqrt(head_dim) */
  int causal;           /**< nonzero: causal mask, bottom-right aligned */
  int64_t window_left;  /**< keys visible to the left of the diagonal; -1 unbounded */
  int64_t window_right; /**< keys visible to the right of the diagonal; -1 unbounded */
  const int32_t *cu_seqlens_q; /**< varlen: batch+1 prefix sums of query lengths (device), or NULL */
  const int32_t *cu_seqlens_k; /**< varlen: batch+1 prefix sums of key lengths (device), or NULL */
  float *lse;           /**< optional output, natural-log sum of exp of the scaled scores:
                             f32 [batch, heads_q, seqlen_q]; varlen: [heads_q, total_q] */
  int deterministic;    /**< backward: nonzero asks for bitwise-reproducible dq/dk/dv (same
                             call, device and build); it may need a larger workspace */
} gp_attention_desc_t;

/** @brief Sets struct_size and defaults: f16, head_dim_v = 0, scale 0, no mask
 *         (window_left = window_right = -1), no varlen, no lse. */
static inline void gp_attention_desc_init(gp_attention_desc_t *d) {
  unsigned char *p = (unsigned char *)d;
  for (size_t i = 0; i < sizeof(*d); i++) p[i] = 0;
  d->struct_size = sizeof(*d);
  d->dtype = GP_F16;
  d->batch = 1;
  d->window_left = -1;
  d->window_right = -1;
}

/**
 * @brief Attention forward (FlashAttention-2: Dao 2023, Algorithm 1), enqueued on @p stream.
 *
 * Varlen offsets live in device memory and are read in stream order, by the work the
 * call enqueues. Sequence b takes rows cu[b] .. cu[b + 1] - 1 of the packed tensors, and
 * for each of cu_seqlens_q (with seqlen_q) and cu_seqlens_k (with seqlen_k) it must hold
 * that 0 <= cu[0] <= cu[b] <= cu[b + 1] (nondecreasing), cu[b + 1] - cu[b] <= seqlen, and
 * cu[b + 1] <= the tokens the packed tensors hold (q and o, k and v, as far as their
 * allocations reach; lse holds heads_q x total_q floats, and with lse set
 * cu_seqlens_q[batch] is total_q and must cover every sequence). Offsets that break this
 * rule are never read or written past: the cpu backend's host implementation fails with
 * ::GP_ERROR_INVALID_VALUE, every kernel (GPU backends, and the cpu backend's
 * GP_CPU_ATTENTION modes) fails its launch with ::GP_ERROR_LAUNCH_FAILED, both reported
 * by the next synchronising call. On the cpu backend the message names the sequence and
 * the bound it breaks; on a GPU the kernel traps, which like any device trap leaves the
 * device's context unusable (CUDA, HIP: a sticky error). The end of a packed tensor is
 * known where gpuport allocated or registered its memory (gp_malloc(), gp_malloc_host(),
 * gp_malloc_managed(), gp_host_register()); in memory gpuport does not know (on cuda and
 * hip, memory of other libraries: the cpu backend refuses such memory), only the first
 * two bounds are checked, and the caller keeps the sequences inside the tensors.
 *
 * @param[in] stream the stream.
 * @param[in] desc the call; see ::gp_attention_desc_t for shapes and masks.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL desc or tensor, sizes < 1 or
 *         inconsistent, heads_q not a multiple of heads_kv, head_dim outside 1..256, only
 *         one of cu_seqlens_q / cu_seqlens_k set, window below -1, a tensor whose
 *         address is not a multiple of its element size: q, k, v, o of the dtype's, lse
 *         and cu_seqlens of 4 bytes; a tensor or the cu_seqlens arrays running past their
 *         allocation; on the cpu backend, a tensor in device memory already freed, or in
 *         memory gpuport neither allocated nor registered (plain malloc), which is not
 *         device-accessible: a GPU faults on it; the message names the tensor;
 *         asynchronously, from the next
 *         synchronising call: varlen offsets that break the rule above, on the cpu
 *         backend's host implementation); ::GP_ERROR_LAUNCH_FAILED (asynchronously:
 *         such offsets, read by a kernel); ::GP_ERROR_NOT_SUPPORTED (dtype);
 *         ::GP_ERROR_INVALID_HANDLE (a destroyed stream, or a stream of another device
 *         than the current one: attention is kernel work, see gp_launch()).
 */
GP_API gp_status_t gp_attention_fwd(gp_stream_t stream, const gp_attention_desc_t *desc);

/**
 * @brief Bytes of device workspace gp_attention_bwd() needs for @p desc.
 *
 * Depends on the dtype-independent shape (batch, seqlen_q, seqlen_k, heads_q, heads_kv,
 * head_dim, head_dim_v) and on desc->deterministic; the tensor pointers are not read, so
 * it can be asked before anything is allocated. The workspace holds, in f32: the rows'
 * D = rowsum(dO * O) [batch * seqlen_q, heads_q]; the dq accumulator
 * [slices, batch * seqlen_q, heads_q, head_dim], one slice, or with deterministic set up
 * to max(1, ceil(128 / (batch * heads_q))) slices (one per split of the key blocks, at
 * most one per 64 keys), as FlashAttention-2's deterministic mode keeps; and with
 * GQA/MQA (heads_q > heads_kv) dk and dv per query head before the group sum
 * [batch * seqlen_k, heads_q, head_dim (head_dim_v)]. Each array starts on a 256-byte
 * boundary.
 * @param[in] desc the call, as it will be passed to gp_attention_bwd().
 * @param[out] bytes the workspace size in bytes (never 0).
 * @return GP_SUCCESS; GP_ERROR_INVALID_VALUE (NULL @p desc or @p bytes, or the
 *         descriptor's sizes, strides, windows or scale as gp_attention_fwd() rejects them,
 *         or a size that overflows size_t); GP_ERROR_NOT_SUPPORTED (dtype).
 */
GP_API gp_status_t gp_attention_bwd_workspace_size(const gp_attention_desc_t *desc, size_t *bytes);

/**
 * @brief Attention backward (FlashAttention-2: Dao 2023, Algorithm 2), enqueued on
 *        @p stream: the gradients of a scalar loss with respect to q, k and v, given its
 *        gradient @p d_o with respect to the forward's output o.
 *
 * With P = softmax(scale Q K^T + mask) recomputed from the forward's lse:
 * dV = P^T dO, dP = dO V^T, D = rowsum(dO * O), dS = P * (dP - D), dQ = scale dS K,
 * dK = scale dS^T Q; dK and dV of a key/value head are summed over the query heads that
 * read it (GQA/MQA). Every forward feature applies as in gp_attention_fwd(): the masks,
 * GQA/MQA, varlen, strides, f32/f16/bf16, head_dim up to 256. A query row with no visible
 * key (lse = -inf) contributes nothing: its dq row is zero, and keys no row sees get zero
 * dk and dv.
 *
 * Layouts: @p d_o has o's shape and strides (desc->o_*_stride), @p dq, @p dk and @p dv
 * have q's, k's and v's (so with q, k and v slices of one packed tensor, dq, dk and dv
 * are slices of one packed gradient tensor, as FlashAttention's qkv-packed backward
 * gives); all in desc->dtype. Gradients must not overlap each other, the inputs or the
 * workspace: a call where one provably does (the same address; dense tensors whose
 * bytes intersect; tensors of one layout less than a contiguous row apart) is refused,
 * naming both; strided tensors that interleave without sharing an element are fine.
 * desc->o and desc->lse must hold the forward's outputs for the same descriptor (the
 * forward must have been run with lse set).
 *
 * Every intermediate lives in @p workspace (see gp_attention_bwd_workspace_size()); no
 * memory is allocated on the device, so the call can be captured in a graph. The
 * workspace need not be initialised and its contents are undefined afterwards; it must
 * stay untouched until the call's work on @p stream completes.
 * With desc->deterministic set, dq, dk and dv are bitwise identical from run to run (the
 * dq accumulator is split so that no floating-point sum depends on scheduling);
 * otherwise dq is accumulated with atomic additions, and its last bits may vary. The
 * hip backend's MFMA kernels (f16/bf16, head_dim == head_dim_v in 32, 64, 128) use no
 * atomics: there dq, dk and dv are bitwise reproducible with or without it.
 *
 * @param[in] stream the stream.
 * @param[in] desc the forward's descriptor, with o and lse set to its outputs.
 * @param[in] d_o gradient of the loss with respect to o (device memory, o's layout).
 * @param[out] dq gradient with respect to q (device memory, q's layout).
 * @param[out] dk gradient with respect to k (device memory, k's layout).
 * @param[out] dv gradient with respect to v (device memory, v's layout).
 * @param[in,out] workspace device memory of at least gp_attention_bwd_workspace_size()
 *                bytes, 16-byte aligned.
 * @param[in] workspace_bytes its size.
 * @return GP_SUCCESS; GP_ERROR_INVALID_VALUE (what gp_attention_fwd() rejects, desc->lse
 *         NULL, a NULL gradient or workspace, a gradient or d_o not aligned to its
 *         elements, a workspace smaller than needed or not 16-byte aligned, a tensor or the workspace running past the end of its allocation,
 *         a gradient or the workspace overlapping another gradient, an input or the
 *         workspace (the message names both), and the memory gp_attention_fwd() refuses);
 *         GP_ERROR_NOT_SUPPORTED (dtype); GP_ERROR_INVALID_HANDLE (stream, as
 *         gp_attention_fwd()). Varlen
 *         offsets follow gp_attention_fwd()'s rule, with the gradients bounding the
 *         sequences as the tensors they mirror do (d_o and dq as o and q, dk and dv as k
 *         and v) and each sequence's rows also inside the workspace
 *         (cu[b + 1] - cu[0] <= batch x seqlen): offsets that break it are never read or
 *         written past; the cpu backend's host implementation reports them as
 *         GP_ERROR_INVALID_VALUE, the kernels as GP_ERROR_LAUNCH_FAILED, from the next
 *         synchronising call.
 */
GP_API gp_status_t gp_attention_bwd(gp_stream_t stream, const gp_attention_desc_t *desc,
                                    const void *d_o, void *dq, void *dk, void *dv,
                                    void *workspace, size_t workspace_bytes);

/* ---- attention over a paged KV cache (inference) ------------------------------------------ */

/**
 * @brief Describes one attention call over a paged KV cache: decoding (a few query tokens
 *        per sequence) and chunked prefill against the keys and values cached so far.
 *        Initialise with gp_attention_kvcache_desc_init().
 *
 * Follows FlashAttention-2's flash_attn_with_kvcache (flash_attn_interface.py, 2.5 and
 * later, with block_table; the paged layout is vLLM's PagedAttention, Kwon et al. 2023):
 * - the cache holds num_blocks pages of page_size tokens, k_cache and v_cache each
 *   [num_blocks, page_size, heads_kv, head_dim] (strides allowed, the last dimension
 *   contiguous);
 * - block_table [batch, max_blocks_per_seq] (int32, device memory) lists sequence b's
 *   pages in order: its token t is row t % page_size of page block_table[b][t / page_size];
 * - cache_seqlens [batch] (int32, device memory) holds each sequence's cached tokens;
 * - with k_new and v_new set ([batch, seqlen_new, heads_kv, head_dim]), the call first
 *   writes them into the cache at positions cache_seqlens[b] .. cache_seqlens[b] +
 *   seqlen_new - 1 of sequence b, then attends over all cache_seqlens[b] + seqlen_new
 *   tokens (the cache write and the attention in one call, as FlashAttention does;
 *   cache_seqlens itself is not updated: the caller advances it);
 * - q is [batch, seqlen_q, heads_q, head_dim] and o the same shape; query i of sequence b
 *   sits at position seqlen_k_b - seqlen_q + i, where seqlen_k_b = cache_seqlens[b] +
 *   seqlen_new, so causal masks and windows are aligned to the end of each sequence
 *   (bottom-right, as gp_attention_fwd() aligns them);
 * - GQA/MQA, windows, the softmax scale and lse ([batch, heads_q, seqlen_q], f32) as in
 *   ::gp_attention_desc_t. A query with no visible key gives zeros and lse = -inf.
 *
 * Split-KV: the keys of each (sequence, key/value head) can be split into num_splits
 * contiguous parts that run in parallel, each writing a partial output and its lse into
 * the caller's workspace; a combine step merges them, weighting each by exp(lse_part -
 * lse) (FlashAttention-2's split-KV decoding, "Flash-Decoding", Dao et al. 2023). The
 * result is deterministic for a given split count: the same inputs and num_splits give
 * the same bits on the same device and build. num_splits = 0 lets gpuport choose from
 * batch, heads, seqlen_q, the longest possible context (max_blocks_per_seq x page_size)
 * and the device's multiprocessor count, as FlashAttention's heuristic does; 1 never
 * splits and needs no workspace.
 */
typedef struct gp_attention_kvcache_desc {
  size_t struct_size;   /**< set by gp_attention_kvcache_desc_init() */
  gp_dtype_t dtype;     /**< ::GP_F16, ::GP_BF16 or ::GP_F32, for q, o, the cache, k_new, v_new */
  int64_t batch;        /**< sequences, >= 1 */
  int64_t seqlen_q;     /**< query tokens per sequence, >= 1 */
  int64_t heads_q;      /**< query heads, a multiple of heads_kv */
  int64_t heads_kv;     /**< key/value heads */
  int64_t head_dim;     /**< head dimension of q, k, v and o, 1..256 */
  const void *q;        /**< queries [batch, seqlen_q, heads_q, head_dim], device memory */
  void *o;              /**< output, q's shape, device memory */
  int64_t q_batch_stride; /**< elements between sequences of q (0: default) */
  int64_t q_seq_stride;   /**< elements between tokens of q (0: default) */
  int64_t q_head_stride;  /**< elements between heads of q (0: default) */
  int64_t o_batch_stride; /**< elements between sequences of o (0: default) */
  int64_t o_seq_stride;   /**< elements between tokens of o (0: default) */
  int64_t o_head_stride;  /**< elements between heads of o (0: default) */
  void *k_cache;        /**< keys [num_blocks, page_size, heads_kv, head_dim], device memory */
  void *v_cache;        /**< values, k_cache's shape, device memory */
  int64_t num_blocks;   /**< pages in the cache, >= 1 */
  int64_t page_size;    /**< tokens per page: a power of two, 1..65536 (vLLM uses 16) */
  int64_t k_cache_block_stride; /**< elements between pages of k_cache (0: default) */
  int64_t k_cache_seq_stride;   /**< elements between tokens of a page of k_cache (0: default) */
  int64_t k_cache_head_stride;  /**< elements between heads of k_cache (0: default) */
  int64_t v_cache_block_stride; /**< elements between pages of v_cache (0: default) */
  int64_t v_cache_seq_stride;   /**< elements between tokens of a page of v_cache (0: default) */
  int64_t v_cache_head_stride;  /**< elements between heads of v_cache (0: default) */
  const int32_t *block_table;   /**< [batch, max_blocks_per_seq] page indices, device memory */
  int64_t max_blocks_per_seq;   /**< columns of block_table, >= 1 */
  int64_t block_table_batch_stride; /**< int32s between rows of block_table (0: max_blocks_per_seq) */
  const int32_t *cache_seqlens; /**< [batch] cached tokens per sequence, device memory */
  const void *k_new;    /**< optional keys to append [batch, seqlen_new, heads_kv, head_dim], or NULL */
  const void *v_new;    /**< values to append, k_new's shape; set exactly when k_new is */
  int64_t seqlen_new;   /**< tokens appended per sequence (0 without k_new) */
  int64_t k_new_batch_stride; /**< elements between sequences of k_new (0: default) */
  int64_t k_new_seq_stride;   /**< elements between tokens of k_new (0: default) */
  int64_t k_new_head_stride;  /**< elements between heads of k_new (0: default) */
  int64_t v_new_batch_stride; /**< elements between sequences of v_new (0: default) */
  int64_t v_new_seq_stride;   /**< elements between tokens of v_new (0: default) */
  int64_t v_new_head_stride;  /**< elements between heads of v_new (0: default) */
  float softmax_scale;  /**< scale of Q K^T; 0 means 1/sqrt(head_dim) */
  int causal;           /**< nonzero: causal mask, aligned to the end of each sequence */
  int64_t window_left;  /**< keys visible to the left of the diagonal; -1 unbounded */
  int64_t window_right; /**< keys visible to the right of the diagonal; -1 unbounded */
  float *lse;           /**< optional output [batch, heads_q, seqlen_q] f32, or NULL */
  int num_splits;       /**< split-KV parts: 0 gpuport's choice, 1 none, up to 256 */
} gp_attention_kvcache_desc_t;

/** @brief Sets struct_size and defaults: f16, batch 1, no mask (window_left =
 *         window_right = -1), default strides, no append, no lse, num_splits 0. */
static inline void gp_attention_kvcache_desc_init(gp_attention_kvcache_desc_t *d) {
  unsigned char *p = (unsigned char *)d;
  for (size_t i = 0; i < sizeof(*d); i++) p[i] = 0;
  d->struct_size = sizeof(*d);
  d->dtype = GP_F16;
  d->batch = 1;
  d->window_left = -1;
  d->window_right = -1;
}

/**
 * @brief The split count gp_attention_fwd_kvcache() will use for @p desc on the current
 *        device, and the bytes of workspace it needs.
 *
 * The split count is desc->num_splits when set, else gpuport's choice: no split when
 * batch x heads_kv x query tiles already fill 80% of the device's multiprocessors;
 * otherwise the smallest count (at most 128, one per 64 keys of the longest possible
 * context max_blocks_per_seq x page_size) whose waves of blocks come within 85% of the
 * best wave efficiency (FlashAttention-2's num_splits_heuristic, flash_api.cpp). The
 * workspace holds each split's partial output and lse, f32:
 * [splits, batch, heads_q, seqlen_q, head_dim] then [splits, batch, heads_q, seqlen_q],
 * each on a 256-byte boundary; with one split it is 0 bytes. No tensor is read, so it
 * can be asked before anything is allocated.
 * @param[in] desc the call, as it will be passed to gp_attention_fwd_kvcache().
 * @param[out] splits the split count (may be NULL).
 * @param[out] bytes the workspace size in bytes.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL @p desc or @p bytes, or the sizes,
 *         strides, page size, windows or scale as gp_attention_fwd_kvcache() rejects them);
 *         ::GP_ERROR_NOT_SUPPORTED (dtype).
 */
GP_API gp_status_t gp_attention_kvcache_workspace_size(const gp_attention_kvcache_desc_t *desc,
                                                       int *splits, size_t *bytes);

/**
 * @brief Attention over a paged KV cache (FlashAttention-2's flash_attn_with_kvcache with
 *        a block table; see ::gp_attention_kvcache_desc_t), enqueued on @p stream,
 *        appending desc->k_new and desc->v_new to the cache first when they are set.
 *
 * The block table and cache_seqlens live in device memory and are read in stream order.
 * Sequence b must have 0 <= cache_seqlens[b] and cache_seqlens[b] + seqlen_new <=
 * max_blocks_per_seq x page_size, and each page it uses (entries 0 ..
 * ceil((cache_seqlens[b] + seqlen_new) / page_size) - 1 of its row) must be in
 * [0, num_blocks). Values that break this are never read or written past: the cpu
 * backend's host implementation fails with ::GP_ERROR_INVALID_VALUE, the kernels (GPU
 * backends, and the cpu backend's GP_CPU_ATTENTION kernel modes) fail their launch with
 * ::GP_ERROR_LAUNCH_FAILED, both reported by the next synchronising call and, on the cpu
 * backend, naming the sequence and the bound it breaks (a GPU trap carries no message
 * and, like any device trap, leaves the context unusable: CUDA, HIP sticky errors).
 * With a split, the call reads and writes @p workspace until its work on @p stream
 * completes.
 *
 * @param[in] stream the stream.
 * @param[in] desc the call.
 * @param[in,out] workspace device memory of at least
 *                gp_attention_kvcache_workspace_size() bytes, 16-byte aligned; NULL
 *                when that is 0.
 * @param[in] workspace_bytes its size.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL desc, tensor, block_table or
 *         cache_seqlens; sizes < 1 or beyond 2^31 - 1; heads_q not a multiple of heads_kv;
 *         head_dim outside 1..256; page_size not a power of two in 1..65536; only one of
 *         k_new / v_new set, or seqlen_new < 0, or seqlen_new > 0 without them; a negative
 *         stride or a block-table stride below max_blocks_per_seq; a window below -1;
 *         num_splits outside 0..256; a tensor not aligned to its elements; a tensor, the
 *         block table, cache_seqlens or the workspace running past its allocation; a
 *         workspace smaller than needed or not 16-byte aligned; asynchronously, on the
 *         cpu backend's host implementation: cache lengths or block-table entries that
 *         break the rule above); ::GP_ERROR_LAUNCH_FAILED (asynchronously: such values,
 *         read by a kernel); ::GP_ERROR_NOT_SUPPORTED (dtype); ::GP_ERROR_INVALID_HANDLE
 *         (stream).
 */
GP_API gp_status_t gp_attention_fwd_kvcache(gp_stream_t stream, const gp_attention_kvcache_desc_t *desc,
                                            void *workspace, size_t workspace_bytes);

GP_EXTERN_C_END

#endif /* GP_ATTENTION_H */
