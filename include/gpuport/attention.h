/**
 * @file gpuport/attention.h
 * @brief Scaled dot-product attention, forward (FlashAttention-2 semantics).
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
  int deterministic;    /**< backward: bitwise reproducible gradients */
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
 * @param[in] stream the stream.
 * @param[in] desc the call; see ::gp_attention_desc_t for shapes and masks.
 * @return ::GP_SUCCESS; ::GP_ERROR_INVALID_VALUE (NULL desc or tensor, sizes < 1 or
 *         inconsistent, heads_q not a multiple of heads_kv, head_dim outside 1..256, only
 *         one of cu_seqlens_q / cu_seqlens_k set, window below -1);
 *         ::GP_ERROR_NOT_SUPPORTED (dtype); ::GP_ERROR_INVALID_HANDLE (stream).
 */
GP_API gp_status_t gp_attention_fwd(gp_stream_t stream, const gp_attention_desc_t *desc);

GP_EXTERN_C_END

#endif /* GP_ATTENTION_H */
