/*
 * attention_kvcache_portable.cu - portable attention over a paged KV cache with split-KV
 * decoding (gp_attention_fwd_kvcache; FlashAttention-2's flash_attn_with_kvcache and its
 * split-KV "Flash-Decoding" path) in the gpuport dialect: one source for nvcc, hipcc and
 * the CPU SIMT executor, launched by kernels/portable/attention_portable_host.c.
 *
 * Three kernels, in stream order:
 *   append   (only with k_new) one block per (tile of GP__ATTN_KV_APPEND new tokens,
 *            sequence): copies the new keys and values into their pages at positions
 *            cache_seqlens[b] + t.
 *   main     one block per (query tile, key/value head, split, sequence), tile fastest so
 *            the blocks reading the same pages run side by side. The rows of a tile are
 *            the queries of the key/value head's whole GQA group packed together
 *            (row r is query r / group of query head hk * group + r % group), so a decode
 *            step (seqlen_q = 1) still fills the tile and K/V are read once per group.
 *            The block walks the keys of its split ([k0, k1), kernels/common: whole units
 *            of 64 keys) that its rows can see, in tiles of the dense kernel's geometry
 *            (attention_fwd_portable.cu: stage K, S = scale Q K^T, online softmax, stage
 *            V, O += P V), each key's row found through the block table. It writes o and
 *            lse directly with one split, else its partial output (normalised by its own
 *            sum) and partial lse into the workspace; a split with no visible key writes
 *            zeros and -inf.
 *   combine  (only with splits) one warp per (sequence, query head, query): lse =
 *            log(sum_s exp(lse_s)), o = sum_s exp(lse_s - lse) o_s, the splits summed in
 *            order, so the result depends on the split count alone.
 * Every block checks, before its first barrier, the cache length of its sequence and
 * the block-table entries of the tokens it will touch (kernels/common/attention_kvcache.h);
 * values that do not fit fail the launch.
 */
#include <math.h>
#include <gpuport/kernel.h>

#include "attention_impl.h"
#include "kernels/common/attention_kvcache.h"
#include "kernels/common/elem.h"

#if defined(__CUDACC__) || defined(__HIP__)
#define KV_UNROLL _Pragma("unroll")
#else
#define KV_UNROLL _Pragma("GCC unroll 8")
#endif

#define ROWS_PER_WARP (GP__ATTN_KQ / GP__ATTN_KWARPS)
#define ACC_PER_LANE ((GP__ATTN_MAX_DIM + GP_WARP_SIZE - 1) / GP_WARP_SIZE)

GP_KERNEL void gp__attention_kvcache_append_portable(gp__attn_kv_params_t p) {
  const int64_t tiles = (p.seqlen_new + GP__ATTN_KV_APPEND - 1) / GP__ATTN_KV_APPEND;
  const int64_t blk = (int64_t)blockIdx.x, tile = blk % tiles, b = blk / tiles;
  const int64_t sk = GP__ATTN_KV_SEQLEN(&p, b);
  const int64_t t0 = tile * GP__ATTN_KV_APPEND, c = sk - p.seqlen_new;
  const int64_t n = p.seqlen_new - t0 < GP__ATTN_KV_APPEND ? p.seqlen_new - t0 : GP__ATTN_KV_APPEND;
  GP__ATTN_KV_PAGES(&p, b, c + t0, c + t0 + n - 1);
  const int64_t d = p.head_dim, per_token = p.heads_kv * d;
  for (int64_t idx = threadIdx.x; idx < n * per_token; idx += blockDim.x) {
    const int64_t t = t0 + idx / per_token, h = idx % per_token / d, e = idx % d;
    const int64_t kc = gp__attn_kv_token(&p, b, c + t, p.kc_bs, p.kc_ss) + h * p.kc_hs + e;
    const int64_t vc = gp__attn_kv_token(&p, b, c + t, p.vc_bs, p.vc_ss) + h * p.vc_hs + e;
    gp__elem_store(p.k_cache, p.dtype, kc, gp__elem_load(p.k_new, p.dtype, b * p.kn_bs + t * p.kn_ss + h * p.kn_hs + e));
    gp__elem_store(p.v_cache, p.dtype, vc, gp__elem_load(p.v_new, p.dtype, b * p.vn_bs + t * p.vn_ss + h * p.vn_hs + e));
  }
}
GP_KERNEL_EXPORT(gp__attention_kvcache_append_portable)

GP_KERNEL void gp__attention_kvcache_fwd_portable(gp__attn_kv_params_t p) {
  GP_DYNAMIC_SHARED(float, smem);
  const int nthreads = (int)blockDim.x, tid = (int)threadIdx.x;
  const int warp = tid / GP_WARP_SIZE, lane = tid % GP_WARP_SIZE;
  const int64_t d = p.head_dim;
  const int bk = gp__attn_kernel_block_k(d);
  const int64_t kv_ld = d + 1;
  float *qs = smem;                     /* [KQ][d] */
  float *kv = qs + GP__ATTN_KQ * d;     /* [bk][kv_ld] */
  float *ss = kv + (int64_t)bk * kv_ld; /* [KQ][bk] */

  const int64_t group = p.heads_q / p.heads_kv, nrows = p.seqlen_q * group;
  const int64_t tiles = (nrows + GP__ATTN_KQ - 1) / GP__ATTN_KQ;
  int64_t blk = (int64_t)blockIdx.x;
  const int64_t tile = blk % tiles;
  blk /= tiles;
  const int64_t hk = blk % p.heads_kv;
  blk /= p.heads_kv;
  const int64_t split = blk % p.nsplit, b = blk / p.nsplit;
  const int64_t r0 = tile * GP__ATTN_KQ;
  const int rows = (int)(nrows - r0 < GP__ATTN_KQ ? nrows - r0 : GP__ATTN_KQ);

  /* The keys the block reads: its split's, that its rows can see. Checked before any barrier. */
  const int64_t sq = p.seqlen_q, sk = GP__ATTN_KV_SEQLEN(&p, b);
  int64_t k0, k1, lo, hi, unused;
  gp__attn_kv_split(sk, p.nsplit, split, &k0, &k1);
  gp__attn_key_range(r0 / group, sq, sk, p.window_left, p.window_right, &lo, &unused);
  gp__attn_key_range((r0 + rows - 1) / group, sq, sk, p.window_left, p.window_right, &unused, &hi);
  if (lo < k0) lo = k0;
  if (hi > k1 - 1) hi = k1 - 1;
  GP__ATTN_KV_PAGES(&p, b, lo, hi);

  for (int64_t idx = tid; idx < GP__ATTN_KQ * d; idx += nthreads) {
    const int64_t r = idx / d, e = idx % d, flat = r0 + r;
    const int64_t h = hk * group + flat % group;
    qs[idx] = r < rows ? gp__elem_load(p.q, p.dtype, b * p.q_bs + flat / group * p.q_ss + h * p.q_hs + e) : 0.0f;
  }

  float m[ROWS_PER_WARP], l[ROWS_PER_WARP], corr[ROWS_PER_WARP];
  float acc[ROWS_PER_WARP][ACC_PER_LANE];
  KV_UNROLL
  for (int rr = 0; rr < ROWS_PER_WARP; rr++) {
    m[rr] = -INFINITY;
    l[rr] = 0.0f;
    corr[rr] = 1.0f;
    KV_UNROLL
    for (int a = 0; a < ACC_PER_LANE; a++) acc[rr][a] = 0.0f;
  }

  for (int64_t j0 = lo; j0 <= hi; j0 += bk) {
    const int nk = (int)(hi - j0 + 1 < bk ? hi - j0 + 1 : bk);
    __syncthreads(); /* the previous tile's V is no longer read */
    for (int64_t idx = tid; idx < (int64_t)nk * d; idx += nthreads) {
      const int64_t c = idx / d, e = idx % d;
      kv[c * kv_ld + e] =
          gp__elem_load(p.k_cache, p.dtype, gp__attn_kv_token(&p, b, j0 + c, p.kc_bs, p.kc_ss) + hk * p.kc_hs + e);
    }
    __syncthreads(); /* K and (first time) Q staged */
    for (int idx = tid; idx < GP__ATTN_KQ * bk; idx += nthreads) {
      const int r = idx / bk, c = idx % bk;
      float s = -INFINITY;
      if (r < rows && c < nk) {
        int64_t rlo, rhi;
        const int64_t j = j0 + c;
        gp__attn_key_range((r0 + r) / group, sq, sk, p.window_left, p.window_right, &rlo, &rhi);
        if (j >= rlo && j <= rhi) {
          const float *qr = qs + (int64_t)r * d, *kr = kv + (int64_t)c * kv_ld;
          float dot = 0.0f;
          for (int64_t e = 0; e < d; e++) dot = fmaf(qr[e], kr[e], dot);
          s = dot * p.scale;
        }
      }
      ss[idx] = s;
    }
    __syncthreads(); /* S complete; K no longer read */

    KV_UNROLL
    for (int rr = 0; rr < ROWS_PER_WARP; rr++) {
      float *sr = ss + (warp * ROWS_PER_WARP + rr) * bk;
      float mx = -INFINITY;
      for (int c = lane; c < bk; c += GP_WARP_SIZE) mx = fmaxf(mx, sr[c]);
      mx = gp_warp_reduce_max(mx);
      const float m_new = fmaxf(m[rr], mx);
      const float m_use = m_new == -INFINITY ? 0.0f : m_new; /* no key yet: keep P = 0 */
      corr[rr] = expf(m[rr] - m_use);
      float sum = 0.0f;
      for (int c = lane; c < bk; c += GP_WARP_SIZE) {
        const float pr = expf(sr[c] - m_use);
        sr[c] = pr;
        sum += pr;
      }
      sum = gp_warp_reduce_sum(sum);
      l[rr] = l[rr] * corr[rr] + sum;
      m[rr] = m_new;
    }
    for (int64_t idx = tid; idx < (int64_t)nk * d; idx += nthreads) {
      const int64_t c = idx / d, e = idx % d;
      kv[c * kv_ld + e] =
          gp__elem_load(p.v_cache, p.dtype, gp__attn_kv_token(&p, b, j0 + c, p.vc_bs, p.vc_ss) + hk * p.vc_hs + e);
    }
    __syncthreads(); /* V and P complete */

    KV_UNROLL
    for (int rr = 0; rr < ROWS_PER_WARP; rr++) {
      const float *pr = ss + (warp * ROWS_PER_WARP + rr) * bk;
      KV_UNROLL
      for (int a = 0; a < ACC_PER_LANE; a++) {
        const int64_t e = lane + (int64_t)a * GP_WARP_SIZE;
        if (e < d) {
          float x = acc[rr][a] * corr[rr];
          for (int c = 0; c < nk; c++) x = fmaf(pr[c], kv[c * kv_ld + e], x);
          acc[rr][a] = x;
        }
      }
    }
  }

  KV_UNROLL
  for (int rr = 0; rr < ROWS_PER_WARP; rr++) {
    const int r = warp * ROWS_PER_WARP + rr;
    if (r >= rows) continue;
    const int64_t flat = r0 + r, i = flat / group, h = hk * group + flat % group;
    const int64_t row = (b * p.heads_q + h) * sq + i; /* lse's [batch, heads_q, seqlen_q] */
    const float inv = l[rr] > 0.0f ? 1.0f / l[rr] : 0.0f;
    const float lse = l[rr] > 0.0f ? m[rr] + logf(l[rr]) : -INFINITY;
    if (p.nsplit == 1) {
      const int64_t o_off = b * p.o_bs + i * p.o_ss + h * p.o_hs;
      KV_UNROLL
      for (int a = 0; a < ACC_PER_LANE; a++) {
        const int64_t e = lane + (int64_t)a * GP_WARP_SIZE;
        if (e < d) gp__elem_store(p.o, p.dtype, o_off + e, acc[rr][a] * inv);
      }
      if (p.lse && lane == 0) p.lse[row] = lse;
    } else {
      const int64_t prow = split * p.batch * p.heads_q * sq + row;
      KV_UNROLL
      for (int a = 0; a < ACC_PER_LANE; a++) {
        const int64_t e = lane + (int64_t)a * GP_WARP_SIZE;
        if (e < d) p.ws_o[prow * d + e] = acc[rr][a] * inv;
      }
      if (lane == 0) p.ws_lse[prow] = lse;
    }
  }
}
GP_KERNEL_EXPORT(gp__attention_kvcache_fwd_portable)

GP_KERNEL void gp__attention_kvcache_combine_portable(gp__attn_kv_params_t p) {
  const int warp = (int)threadIdx.x / GP_WARP_SIZE, lane = (int)threadIdx.x % GP_WARP_SIZE;
  const int64_t total = p.batch * p.heads_q * p.seqlen_q;
  const int64_t row = (int64_t)blockIdx.x * GP__ATTN_KWARPS + warp; /* (b * heads_q + h) * seqlen_q + i */
  if (row >= total) return;
  const int64_t i = row % p.seqlen_q, h = row / p.seqlen_q % p.heads_q, b = row / p.seqlen_q / p.heads_q;
  float mx = -INFINITY;
  for (int64_t s = 0; s < p.nsplit; s++) mx = fmaxf(mx, p.ws_lse[s * total + row]);
  float sum = 0.0f;
  if (mx != -INFINITY)
    for (int64_t s = 0; s < p.nsplit; s++) sum += expf(p.ws_lse[s * total + row] - mx);
  const float lse = mx == -INFINITY ? -INFINITY : mx + logf(sum);
  const int64_t d = p.head_dim, o_off = b * p.o_bs + i * p.o_ss + h * p.o_hs;
  for (int64_t e = lane; e < d; e += GP_WARP_SIZE) {
    float x = 0.0f;
    if (mx != -INFINITY)
      for (int64_t s = 0; s < p.nsplit; s++) {
        const float ls = p.ws_lse[s * total + row];
        if (ls != -INFINITY) x = fmaf(expf(ls - lse), p.ws_o[(s * total + row) * d + e], x);
      }
    gp__elem_store(p.o, p.dtype, o_off + e, x);
  }
  if (p.lse && lane == 0) p.lse[row] = lse;
}
GP_KERNEL_EXPORT(gp__attention_kvcache_combine_portable)
