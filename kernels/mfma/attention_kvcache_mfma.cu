/*
 * attention_kvcache_mfma.cu - attention over a paged KV cache (gp_attention_fwd_kvcache)
 * on AMD CDNA matrix cores: the main (split) kernel of the kvcache family in the manner of
 * FlashAttention-2's split-KV forward, on the MFMA forward's structure
 * (kernels/mfma/attention_fwd_mfma.cu: v_mfma_f32_32x32x8 in transposed form, K and V^T
 * staged in LDS with the same maps, the next tile's loads in flight in registers, softmax
 * online with one factor per lane). One kernel per input type (f16, bf16) and head_dim
 * (32, 64, 128). The portable append and combine kernels
 * (kernels/portable/attention_kvcache_portable.cu) run before and after it;
 * kernels/mfma/attention_mfma_host.c chooses and launches. Built by hipcc for gfx90a /
 * gfx940 and, at wave64 with the MFMA emulated (gpuport/amd_mfma.h), into the cpu library
 * (GP_CPU_ATTENTION=mfma).
 *
 * Decomposition (geometry in kernels/mfma/mfma.h; D = head_dim)
 *   grid   one block per (tile of GP__AMD_ATTN_BM = 128 rows, key/value head hk, split,
 *          sequence), tile fastest, as the portable kernel. Rows are the queries of hk's
 *          GQA group packed together: row r is query r / group of query head
 *          hk group + r % group, so a decode step fills the tile's first wavefront and K/V
 *          are read once per group.
 *   block  4 wavefronts; wavefront w owns rows 32 w .. 32 w + 31 of the tile, lane l the
 *          row 32 w + l % 32 (lane half h = l / 32 holds the other half of its keys and
 *          columns, as the forward). A wavefront whose rows are all past the tile's end,
 *          or see no key of a tile, takes part in the staging and barriers only.
 *   keys   [lo, hi]: the block's split (gp__attn_kv_split) cut to the keys its rows can
 *          see; the cache length and the block-table entries of these keys are checked
 *          before any barrier (kernels/common/attention_kvcache.h). Tiles of 64 keys from
 *          lo: each key's row found through the block table (gp__attn_kv_token), K in
 *          16-byte loads and V in 32-bit pairs where the cache's pointer and strides allow
 *          them (element loads otherwise); keys past hi are zero-filled and masked.
 *   end    one split: O / l in the input type and lse; else the partial O / l (f32) and
 *          partial lse into the workspace, as the portable kernel writes them, for the
 *          combine kernel. A row with no visible key writes zeros and -inf.
 */
#ifndef GP_WARP_SIZE
#define GP_WARP_SIZE 64
#endif
#include <math.h>
#include <gpuport/kernel.h>
#include <gpuport/amd_mfma.h>

#include "attention_impl.h"
#include "kernels/common/attention_kvcache.h"
#include "kernels/mfma/mfma.h"

#define BN GP__AMD_ATTN_BN
#define NT GP__AMD_ATTN_THREADS

#include "attention_mfma_common.h"

/* The cache side of one K / V tile: the caches at this block's key/value head, their
 * page and token strides, and whether the vector loads apply. */
typedef struct akv_cache {
  const AF_GLOBAL char *k, *v; /* element e of the head's row of token t: k + (tok(t) + e) * 2 */
  int64_t k_bs, k_ss, v_bs, v_ss;
  bool kvec, vvec; /* aligned for 16-byte K loads / 32-bit V pair loads */
} akv_cache_t;

/* Registers of one staged tile, as the forward's: K chunks (D / 32 per thread), V units
 * (D / 32 per thread, 4 keys x 2 columns). */
typedef struct akv_regs {
  uint4 k[4];
  uint2 v0[4], v1[4];
} akv_regs_t;

/* The loads of keys j0 .. j0 + 63 (valid up to hi, pages checked) into registers. */
AF_INLINE void akv_load_tile(const gp__attn_kv_params_t *p, const akv_cache_t *g, int64_t b, int64_t j0,
                             int64_t hi, int D, int tid, akv_regs_t *r) {
  const int nc = D / 8; /* 16-byte chunks per K row */
  AF_UNROLL for (int u = 0; u < 4; u++) {
    if (u >= D / 32) continue; /* fixed trip count: unrolled before D is known */
    const int idx = tid + NT * u, key = idx / nc, c = idx % nc;
    const int64_t j = j0 + key;
    r->k[u] = j <= hi ? af_ld8x16(g->k, gp__attn_kv_token(p, b, j, g->k_bs, g->k_ss) + 8 * c, g->kvec)
                      : make_uint4(0u, 0u, 0u, 0u);
  }
  AF_UNROLL for (int u = 0; u < 4; u++) {
    if (u >= D / 32) continue; /* fixed trip count: unrolled before D is known */
    const int idx = tid + NT * u, cp = idx % (D / 2), kq = idx / (D / 2);
    uint32_t w[4];
    AF_UNROLL for (int e = 0; e < 4; e++) {
      const int64_t j = j0 + 4 * kq + e;
      w[e] = j <= hi ? af_ld2x16(g->v, gp__attn_kv_token(p, b, j, g->v_bs, g->v_ss) + 2 * cp, g->vvec) : 0u;
    }
    r->v0[u] = make_uint2(af_lo16s(w[0], w[1]), af_lo16s(w[2], w[3]));
    r->v1[u] = make_uint2(af_hi16s(w[0], w[1]), af_hi16s(w[2], w[3]));
  }
}

/* Writes a tile's registers into LDS (the forward's maps and store order). */
AF_INLINE void akv_store_tile(unsigned char *kt, unsigned char *vt, int D, int tid, const akv_regs_t *r) {
  const int nc = D / 8;
  AF_UNROLL for (int u = 0; u < 4; u++) {
    if (u >= D / 32) continue; /* fixed trip count: unrolled before D is known */
    const int idx = tid + NT * u, key = idx / nc, c = idx % nc;
    *(uint4 *)(kt + gp__amd_attn_k_off(key, c, D)) = r->k[u];
  }
  AF_UNROLL for (int u = 0; u < 4; u++) {
    if (u >= D / 32) continue; /* fixed trip count: unrolled before D is known */
    const int idx = tid + NT * u, cp = idx % (D / 2), kq = idx / (D / 2), x = (cp >> 3) & 1;
    const uint2 a = r->v0[u], c = r->v1[u];
    const uint2 f = make_uint2(x ? c.x : a.x, x ? c.y : a.y), s = make_uint2(x ? a.x : c.x, x ? a.y : c.y);
    *(uint2 *)(vt + gp__amd_attn_vt_off(2 * cp + x, kq)) = f;
    *(uint2 *)(vt + gp__amd_attn_vt_off(2 * cp + (x ^ 1), kq)) = s;
  }
}

AF_INLINE void akv_attention(const gp__attn_kv_params_t *pp, int D, int kind) {
  const gp__attn_kv_params_t p = *pp;
  GP_DYNAMIC_SHARED(unsigned char, smem);
  unsigned char *const kt = smem, *const vt = smem + BN * D * 2;
  const int tid = (int)threadIdx.x, lane = tid % 64, w = tid / 64, q = lane % 32, h = lane / 32;

  /* (row tile, key/value head, split, sequence), tile fastest */
  const int64_t group = p.heads_q / p.heads_kv, nrows = p.seqlen_q * group;
  const int64_t tiles = (nrows + GP__AMD_ATTN_BM - 1) / GP__AMD_ATTN_BM;
  int64_t blk = (int64_t)blockIdx.x;
  const int64_t tile = blk % tiles;
  blk /= tiles;
  const int64_t hk = blk % p.heads_kv;
  blk /= p.heads_kv;
  const int64_t split = blk % p.nsplit, b = blk / p.nsplit;
  const int64_t r0 = tile * GP__AMD_ATTN_BM;
  const int rows = (int)(nrows - r0 < GP__AMD_ATTN_BM ? nrows - r0 : GP__AMD_ATTN_BM);

  /* The keys the block reads, [lo, hi]: its split's that its rows can see. Checked before
   * any barrier (uniform over the block). */
  const int64_t sq = p.seqlen_q, sk = GP__ATTN_KV_SEQLEN(&p, b);
  int64_t k0, k1, lo, hi, unused;
  gp__attn_kv_split(sk, p.nsplit, split, &k0, &k1);
  gp__attn_key_range(r0 / group, sq, sk, p.window_left, p.window_right, &lo, &unused);
  gp__attn_key_range((r0 + rows - 1) / group, sq, sk, p.window_left, p.window_right, &unused, &hi);
  if (lo < k0) lo = k0;
  if (hi > k1 - 1) hi = k1 - 1;
  GP__ATTN_KV_PAGES(&p, b, lo, hi);

  /* The keys of this wavefront's rows, and of this lane's row (cut to [lo, hi]). */
  const bool wave_rows = 32 * w < rows;
  const int rw1 = (32 * w + 31 < rows ? 32 * w + 31 : rows - 1);
  int64_t lo_w, hi_w, lo_q, hi_q;
  gp__attn_key_range((r0 + 32 * w) / group, sq, sk, p.window_left, p.window_right, &lo_w, &unused);
  gp__attn_key_range((r0 + rw1) / group, sq, sk, p.window_left, p.window_right, &unused, &hi_w);
  const bool lane_row = 32 * w + q < rows;
  const int64_t flat = r0 + (lane_row ? 32 * w + q : 0), iq = flat / group, head = hk * group + flat % group;
  gp__attn_key_range(iq, sq, sk, p.window_left, p.window_right, &lo_q, &hi_q);
  if (lo_q < lo) lo_q = lo;
  if (hi_q > hi) hi_q = hi;

  /* Q fragments of this lane's row, in registers for the whole loop. */
  const AF_GLOBAL char *qb = (const AF_GLOBAL char *)p.q + (b * p.q_bs + iq * p.q_ss + head * p.q_hs) * 2;
  const bool qvec = p.q_ss % 8 == 0 && p.q_hs % 8 == 0 && p.q_bs % 8 == 0 && (uintptr_t)p.q % 16 == 0;
  uint4 qf[8];
  AF_UNROLL for (int G = 0; G < 8; G++) {
    if (G >= D / 16) continue;
    qf[G] = lane_row ? af_ld8x16(qb, 16 * G + 8 * h, qvec) : make_uint4(0u, 0u, 0u, 0u);
  }

  akv_cache_t g;
  g.k = (const AF_GLOBAL char *)p.k_cache + hk * p.kc_hs * 2;
  g.v = (const AF_GLOBAL char *)p.v_cache + hk * p.vc_hs * 2;
  g.k_bs = p.kc_bs;
  g.k_ss = p.kc_ss;
  g.v_bs = p.vc_bs;
  g.v_ss = p.vc_ss;
  g.kvec = p.kc_ss % 8 == 0 && p.kc_hs % 8 == 0 && p.kc_bs % 8 == 0 && (uintptr_t)p.k_cache % 16 == 0;
  g.vvec = p.vc_ss % 2 == 0 && p.vc_hs % 2 == 0 && p.vc_bs % 2 == 0 && (uintptr_t)p.v_cache % 4 == 0;

  const float sl2 = p.scale * 1.4426950408889634f; /* scores in base 2 */
  float m = -INFINITY, l = 0.0f;                     /* this lane's row, base 2 */
  gp_amd_f32x16_t o[4];
  AF_UNROLL for (int dt = 0; dt < 4; dt++)
    AF_UNROLL for (int r = 0; r < 16; r++) o[dt][r] = 0.0f;

  akv_regs_t regs;
  if (lo <= hi) {
    akv_load_tile(&p, &g, b, lo, hi, D, tid, &regs);
    akv_store_tile(kt, vt, D, tid, &regs);
  }
  __syncthreads();
  for (int64_t j0 = lo; j0 <= hi; j0 += BN) {
    const bool next = j0 + BN <= hi;
    if (next) akv_load_tile(&p, &g, b, j0 + BN, hi, D, tid, &regs); /* in flight meanwhile */
    if (wave_rows && j0 <= hi_w && j0 + BN - 1 >= lo_w) {
      /* S^T = K Q^T: two halves of 32 keys. */
      gp_amd_f32x16_t s[2];
      AF_UNROLL for (int t = 0; t < 2; t++) {
        AF_UNROLL for (int r = 0; r < 16; r++) s[t][r] = 0.0f;
        AF_UNROLL for (int G = 0; G < 8; G++) {
          if (G >= D / 16) continue;
          const uint4 kv = *(const uint4 *)(kt + gp__amd_attn_k_off(32 * t + q, 2 * G + h, D));
          s[t] = af_mfma(kind, af_b16x4(kv.x, kv.y), af_b16x4(qf[G].x, qf[G].y), s[t]);
          s[t] = af_mfma(kind, af_b16x4(kv.z, kv.w), af_b16x4(qf[G].z, qf[G].w), s[t]);
        }
      }
      /* Online softmax for this lane's row (base 2); masked scores are -inf. */
      float mx = -INFINITY;
      AF_UNROLL for (int t = 0; t < 2; t++)
        AF_UNROLL for (int r = 0; r < 16; r++) {
          const int64_t j = j0 + 32 * t + 8 * (r / 4) + 4 * h + r % 4;
          const float x = (j >= lo_q && j <= hi_q) ? s[t][r] * sl2 : -INFINITY;
          s[t][r] = x;
          mx = fmaxf(mx, x);
        }
      mx = fmaxf(mx, gp_shfl_xor(mx, 32));
      const float m_new = fmaxf(m, mx);
      const float m_use = m_new == -INFINITY ? 0.0f : m_new; /* no key yet: P stays 0 */
      const float corr = exp2f(m - m_use);
      float sum = 0.0f;
      gp_amd_b16x4_t pk[2][4];
      AF_UNROLL for (int t = 0; t < 2; t++)
        AF_UNROLL for (int gg = 0; gg < 4; gg++) {
          uint32_t e16[4];
          AF_UNROLL for (int e = 0; e < 4; e++) {
            const float pr = exp2f(s[t][4 * gg + e] - m_use);
            sum += pr;
            e16[e] = af_round16(kind, pr);
          }
          pk[t][gg] = af_b16x4(e16[0] | e16[1] << 16, e16[2] | e16[3] << 16);
        }
      sum += gp_shfl_xor(sum, 32);
      l = l * corr + sum;
      m = m_new;
      /* O^T = corr O^T + V^T P^T. */
      AF_UNROLL for (int dt = 0; dt < 4; dt++) {
        if (dt >= D / 32) continue;
        AF_UNROLL for (int r = 0; r < 16; r++) o[dt][r] *= corr;
        AF_UNROLL for (int t = 0; t < 2; t++)
          AF_UNROLL for (int gg = 0; gg < 4; gg++) {
            const uint2 vv = *(const uint2 *)(vt + gp__amd_attn_vt_off(32 * dt + q, 8 * t + 2 * gg + h));
            o[dt] = af_mfma(kind, af_b16x4(vv.x, vv.y), pk[t][gg], o[dt]);
          }
      }
    }
    __syncthreads(); /* every wavefront is done with this tile's LDS */
    if (next) akv_store_tile(kt, vt, D, tid, &regs);
    __syncthreads(); /* the next tile is in LDS */
  }

  /* O / l and lse of this lane's row (lane half h holds columns 8 (r/4) + 4 h + r % 4): o
   * and lse with one split, else the partials in the workspace (zeros and -inf where no
   * key was seen). */
  if (!lane_row) return;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  const float lse = l > 0.0f ? 0.69314718055994531f * (m + log2f(l)) : -INFINITY;
  const int64_t row = (b * p.heads_q + head) * sq + iq; /* lse's [batch, heads_q, seqlen_q] */
  if (p.nsplit == 1) {
    const int64_t o_off = b * p.o_bs + iq * p.o_ss + head * p.o_hs;
    AF_UNROLL for (int dt = 0; dt < 4; dt++) {
      if (dt >= D / 32) continue;
      AF_UNROLL for (int r = 0; r < 16; r++)
        af_store(p.o, o_off + 32 * dt + 8 * (r / 4) + 4 * h + r % 4, kind, o[dt][r] * inv);
    }
    if (p.lse && h == 0) p.lse[row] = lse;
  } else {
    const int64_t prow = split * p.batch * p.heads_q * sq + row;
    float *const wo = p.ws_o + prow * D;
    AF_UNROLL for (int dt = 0; dt < 4; dt++) {
      if (dt >= D / 32) continue;
      AF_UNROLL for (int r = 0; r < 16; r++) wo[32 * dt + 8 * (r / 4) + 4 * h + r % 4] = o[dt][r] * inv;
    }
    if (h == 0) p.ws_lse[prow] = lse;
  }
}

#define AKV_KERNEL(name, D, kind)                                                                        \
  GP_KERNEL void __launch_bounds__(256) name(gp__attn_kv_params_t p) { akv_attention(&p, D, kind); } \
  GP_KERNEL_EXPORT(name)
AKV_KERNEL(gp__attention_kvcache_fwd_mfma_bf16_d32, 32, AF_BF16)
AKV_KERNEL(gp__attention_kvcache_fwd_mfma_bf16_d64, 64, AF_BF16)
AKV_KERNEL(gp__attention_kvcache_fwd_mfma_bf16_d128, 128, AF_BF16)
AKV_KERNEL(gp__attention_kvcache_fwd_mfma_f16_d32, 32, AF_F16)
AKV_KERNEL(gp__attention_kvcache_fwd_mfma_f16_d64, 64, AF_F16)
AKV_KERNEL(gp__attention_kvcache_fwd_mfma_f16_d128, 128, AF_F16)
