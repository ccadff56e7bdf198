/*
 * attention_fwd_portable.cu - portable attention forward kernel (FlashAttention-2, Dao 2023,
 * Algorithm 1) in the gpuport dialect. One source for nvcc, hipcc and the CPU SIMT
 * executor; launched by kernels/portable/attention_portable_host.c (the portable
 * entries of src/attention_table.c) where no other family takes a call, and in the
 * kernel modes of GP_CPU_ATTENTION on the cpu backend. Correct everywhere rather than fast:
 * the vendor kernels in kernels/sm80, kernels/sm90a and kernels/mfma are where the matrix instructions go.
 *
 * Decomposition
 *   grid   one block per (query tile of GP__ATTN_KQ = 16 rows, query head, sequence),
 *          flattened into grid.x as tile + tiles * (head + heads_q * sequence), so the
 *          blocks that read the same key/value head are neighbours (L2 reuse). The
 *          key/value head of query head h is h / (heads_q / heads_kv) (GQA, MQA).
 *   block  GP__ATTN_KWARPS = 4 warps of GP_WARP_SIZE threads (128 on NVIDIA, 256 on
 *          AMD CDNA); warp w owns query rows 4w .. 4w + 3 of the tile.
 *   shared (dynamic, sized by head_dim; gp__attn_kernel_smem_floats()), all f32:
 *          Q tile [16][head_dim], one K-or-V tile [BK][max(d, d_v) + 1] (the +1 pads
 *          rows onto distinct banks), scores/probabilities S [16][BK], where
 *          BK = 64, 32, 16 for max(d, d_v) <= 64, 128, 256: at most 34 KiB, under the
 *          48 KiB every target grants without opt-in.
 *   loop   over the key tiles that intersect the visible band of the tile's rows:
 *          1. all threads stage K (converted to f32), barrier;
 *          2. all threads compute S = scale * Q K^T element-wise (thread t takes
 *             elements t, t + blockDim, ...), masked entries -inf, barrier;
 *          3. each warp, for each of its rows: row maximum and sum by lane-strided
 *             loops and gp_warp_reduce_max/_sum, the running (m, l) and the rescale
 *             factor exp(m_old - m_new) (online softmax); S becomes P;
 *             meanwhile all threads stage V over K, barrier;
 *          4. each lane accumulates O[row][e] for e = lane, lane + W, ... (f32
 *             registers: 4 rows x ceil(256 / W) columns), rescaled by the factor.
 *   end    O / l stored in the output dtype, lse = m + log(l); a row with no visible
 *          key (l = 0) stores zeros and lse = -inf.
 * Masks (causal bottom-right aligned, windows, their intersection) come folded into
 * (window_left, window_right) by src/attention.c; gp__attn_key_range() gives each row's
 * visible keys. Varlen: the block reads its sequence's offsets from cu_seqlens; tiles
 * past the sequence's end return at once (before any barrier, uniformly). Offsets that
 * do not fit (kernels/common/attention_seq.h: negative, decreasing, longer than
 * seqlen_q / seqlen_k, past the packed tensors) fail the launch before any read.
 * Numerics: inputs converted to f32, f32 products and sums (fmaf), P kept in f32, one
 * rounding to the output dtype at the end; ref/ref_attention.h derives the bound.
 */
#include <math.h>
#include <gpuport/kernel.h>

#include "attention_impl.h"
#include "kernels/common/attention_seq.h"
#include "kernels/common/elem.h"

#if defined(__CUDACC__) || defined(__HIP__)
#define ATTN_UNROLL _Pragma("unroll")
#else
#define ATTN_UNROLL _Pragma("GCC unroll 8")
#endif

#define ROWS_PER_WARP (GP__ATTN_KQ / GP__ATTN_KWARPS)
#define ACC_PER_LANE ((GP__ATTN_MAX_DIM + GP_WARP_SIZE - 1) / GP_WARP_SIZE)

GP_KERNEL void gp__attention_fwd_portable(gp__attn_params_t p) {
  GP_DYNAMIC_SHARED(float, smem);
  const int nthreads = (int)blockDim.x, tid = (int)threadIdx.x;
  const int warp = tid / GP_WARP_SIZE, lane = tid % GP_WARP_SIZE;
  const int64_t d = p.head_dim, dv = p.head_dim_v, dmax = d > dv ? d : dv;
  const int bk = gp__attn_kernel_block_k(dmax);
  const int64_t kv_ld = dmax + 1;
  float *qs = smem;                        /* [KQ][d] */
  float *kv = qs + GP__ATTN_KQ * d;        /* [bk][kv_ld] */
  float *ss = kv + (int64_t)bk * kv_ld;    /* [KQ][bk] */

  const int64_t tiles = (p.seqlen_q + GP__ATTN_KQ - 1) / GP__ATTN_KQ;
  const int64_t blk = (int64_t)blockIdx.x;
  const int64_t tile = blk % tiles, h = (blk / tiles) % p.heads_q, b = blk / tiles / p.heads_q;
  const int64_t hk = h / (p.heads_q / p.heads_kv);
  const gp__attn_seq_t seq = GP__ATTN_SEQUENCE(&p, b); /* before any barrier */
  const int64_t sq = seq.sq, sk = seq.sk, q_row0 = seq.q0, k_row0 = seq.k0;
  const int64_t i0 = tile * GP__ATTN_KQ;
  if (i0 >= sq) return; /* the whole block: no barrier reached yet */
  const int rows = (int)(sq - i0 < GP__ATTN_KQ ? sq - i0 : GP__ATTN_KQ);
  const char *qb = (const char *)p.q, *kb = (const char *)p.k, *vb = (const char *)p.v;
  const int64_t es = gp__elem_size(p.dtype);
  qb += b * p.q_bs * es;
  kb += b * p.k_bs * es;
  vb += b * p.v_bs * es;

  for (int64_t idx = tid; idx < GP__ATTN_KQ * d; idx += nthreads) {
    int64_t r = idx / d, e = idx % d;
    qs[idx] = r < rows ? gp__elem_load(qb, p.dtype, (q_row0 + i0 + r) * p.q_ss + h * p.q_hs + e) : 0.0f;
  }

  int64_t lo, hi, lo_last, hi_last;
  gp__attn_key_range(i0, sq, sk, p.window_left, p.window_right, &lo, &hi);
  gp__attn_key_range(i0 + rows - 1, sq, sk, p.window_left, p.window_right, &lo_last, &hi_last);
  hi = hi_last;
  (void)lo_last;

  float m[ROWS_PER_WARP], l[ROWS_PER_WARP], corr[ROWS_PER_WARP];
  float acc[ROWS_PER_WARP][ACC_PER_LANE];
  ATTN_UNROLL
  for (int rr = 0; rr < ROWS_PER_WARP; rr++) {
    m[rr] = -INFINITY;
    l[rr] = 0.0f;
    corr[rr] = 1.0f;
    ATTN_UNROLL
    for (int a = 0; a < ACC_PER_LANE; a++) acc[rr][a] = 0.0f;
  }

  for (int64_t j0 = lo; j0 <= hi; j0 += bk) {
    const int nk = (int)(hi - j0 + 1 < bk ? hi - j0 + 1 : bk);
    __syncthreads(); /* the previous tile's V (and, first time, nothing) is no longer read */
    for (int64_t idx = tid; idx < (int64_t)nk * d; idx += nthreads) {
      int64_t c = idx / d, e = idx % d;
      kv[c * kv_ld + e] = gp__elem_load(kb, p.dtype, (k_row0 + j0 + c) * p.k_ss + hk * p.k_hs + e);
    }
    __syncthreads(); /* K and (first time) Q staged */
    for (int idx = tid; idx < GP__ATTN_KQ * bk; idx += nthreads) {
      int r = idx / bk, c = idx % bk;
      float s = -INFINITY;
      if (r < rows && c < nk) {
        int64_t rlo, rhi, j = j0 + c;
        gp__attn_key_range(i0 + r, sq, sk, p.window_left, p.window_right, &rlo, &rhi);
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

    /* Online softmax, one warp per row group; S becomes P in place. */
    ATTN_UNROLL
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
        float pr = expf(sr[c] - m_use);
        sr[c] = pr;
        sum += pr;
      }
      sum = gp_warp_reduce_sum(sum);
      l[rr] = l[rr] * corr[rr] + sum;
      m[rr] = m_new;
    }
    for (int64_t idx = tid; idx < (int64_t)nk * dv; idx += nthreads) {
      int64_t c = idx / dv, e = idx % dv;
      kv[c * kv_ld + e] = gp__elem_load(vb, p.dtype, (k_row0 + j0 + c) * p.v_ss + hk * p.v_hs + e);
    }
    __syncthreads(); /* V and P complete */

    ATTN_UNROLL
    for (int rr = 0; rr < ROWS_PER_WARP; rr++) {
      const float *pr = ss + (warp * ROWS_PER_WARP + rr) * bk;
      ATTN_UNROLL
      for (int a = 0; a < ACC_PER_LANE; a++) {
        const int64_t e = lane + (int64_t)a * GP_WARP_SIZE;
        if (e < dv) {
          float x = acc[rr][a] * corr[rr];
          for (int c = 0; c < nk; c++) x = fmaf(pr[c], kv[c * kv_ld + e], x);
          acc[rr][a] = x;
        }
      }
    }
  }

  ATTN_UNROLL
  for (int rr = 0; rr < ROWS_PER_WARP; rr++) {
    const int r = warp * ROWS_PER_WARP + rr;
    if (r >= rows) continue;
    const int64_t i = i0 + r;
    const float inv = l[rr] > 0.0f ? 1.0f / l[rr] : 0.0f;
    const int64_t o_off = b * p.o_bs + (q_row0 + i) * p.o_ss + h * p.o_hs;
    ATTN_UNROLL
    for (int a = 0; a < ACC_PER_LANE; a++) {
      const int64_t e = lane + (int64_t)a * GP_WARP_SIZE;
      if (e < dv) gp__elem_store(p.o, p.dtype, o_off + e, acc[rr][a] * inv);
    }
    if (p.lse && lane == 0) {
      const float v = l[rr] > 0.0f ? m[rr] + logf(l[rr]) : -INFINITY;
      if (p.cu_q)
        p.lse[h * seq.total_q + q_row0 + i] = v;
      else
        p.lse[(b * p.heads_q + h) * p.seqlen_q + i] = v;
    }
  }
}
GP_KERNEL_EXPORT(gp__attention_fwd_portable)
