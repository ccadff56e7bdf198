/*
 * attention_fwd_mfma.cu - attention forward on AMD CDNA matrix cores (FlashAttention-2: Dao
 * 2023, Algorithm 1), 64-lane wavefronts, in the gpuport dialect. Built by hipcc for
 * gfx90a / gfx940 (the hip backend runs it when it applies) and by the host compiler for
 * the CPU executor at warp width 64 with the MFMA emulated (GP_CPU_ATTENTION=mfma), so
 * this exact code is tested in CI against the float64 reference. kernels/mfma/attention_mfma_host.c
 * chooses and launches it; it takes f16 and bf16 with head_dim == head_dim_v in
 * {32, 64, 128} (one kernel per type and head_dim), everything else runs the portable
 * kernel. Masks, GQA/MQA, varlen and lse are those of gpuport/attention.h
 * (src/attention_impl.h: gp__attn_key_range; varlen offsets that do not fit fail the
 * launch, kernels/common/attention_seq.h).
 *
 * Decomposition
 *   grid   one block per (128 query rows, query head, sequence), flattened into grid.x as
 *          tile + tiles * (head + heads_q * sequence), as the portable kernel.
 *   block  4 wavefronts; wavefront w owns query rows 32 w .. 32 w + 31 of the tile.
 *   MFMA   v_mfma_f32_32x32x8{bf16_1k,f16}, both products in transposed form so that a
 *          lane's registers belong to one query (lane l: query l % 32, lane half h = l / 32):
 *            S^T = K Q^T     X = K rows (i = key) from LDS, Y = Q^T from registers (j = query):
 *                            lane l, register r of key half t holds the score of query
 *                            l % 32 and key 32 t + 8 (r/4) + 4 h + r % 4 (amd_mfma.h);
 *            O^T += V^T P^T  X = V^T rows (i = value column) from LDS, Y = P^T, which is
 *                            the S^T registers rounded to the input type: register group
 *                            r = 4g .. 4g + 3 of half t holds keys 32 t + 8 g + 4 h + e, the
 *                            Y operand layout of the k-step over keys 32 t + 8 g .. + 7.
 *          So the row max and sum of the online softmax are 32 registers plus one
 *          exchange with lane l ^ 32, and the rescaling of O is one factor per lane.
 *          Q: a lane holds 8 consecutive head_dim values per 16 (d = 16 G + 8 h + 0..7),
 *          one 16-byte load each, and K fragments are read the same way (ds_read_b128),
 *          two MFMA steps per chunk: the k order is permuted alike for both operands.
 *   loop   over the key tiles of 64 that meet the block's visible band; each tile: K and
 *          V^T staged in LDS (dynamic, 128 (d + dv) bytes: 32 KiB at d = 128) by all 256
 *          threads, the next tile's global loads in flight in registers during this
 *          tile's MFMAs (two barriers per tile); a wavefront whose rows see no key of the
 *          tile skips its MFMAs. K in 16-byte chunks, V transposed while staging (4 keys x
 *          2 columns per unit: four 32-bit loads, two 8-byte LDS stores); the LDS maps
 *          (kernels/mfma/mfma.h) have no bank conflicts (test_amd_kernels.c).
 *   end    O / l to the output type, lse = ln 2 (m + log2 l); a row with no visible key
 *          stores zeros and lse = -inf.
 * Numerics: scores in f32 from exact 16-bit products, the softmax in base 2 with the
 * scale folded in (scale log2 e), P rounded to the input type for the second MFMA (the
 * reference's bound allows it: ref/ref_attention.h), O and l in f32, one rounding to the
 * output type.
 */
#ifndef GP_WARP_SIZE
#define GP_WARP_SIZE 64
#endif
#include <math.h>
#include <gpuport/kernel.h>
#include <gpuport/amd_mfma.h>

#include "attention_impl.h"
#include "kernels/common/attention_seq.h"
#include "kernels/mfma/mfma.h"

#define BN GP__AMD_ATTN_BN
#define NT GP__AMD_ATTN_THREADS

#include "attention_mfma_common.h"

/* The global side of one K / V tile: where this block's key/value head starts, and the
 * loads of one tile (keys j0 .. j0 + 63, valid up to hi) into registers. */
typedef struct af_kv {
  const AF_GLOBAL char *k, *v; /* element (key row kr, column c): k + (kr k_ss + c) * 2 */
  int64_t k_ss, v_ss;
  bool kvec, vvec;             /* aligned for 16-byte K loads / 32-bit V pair loads */
} af_kv_t;

/* Registers of one staged tile: K chunks (D / 32 per thread), V units (DV / 32 per thread,
 * 4 keys x 2 columns: the V^T pieces of columns 2 cp and 2 cp + 1). */
typedef struct af_regs {
  uint4 k[4];
  uint2 v0[4], v1[4];
} af_regs_t;

AF_INLINE void af_load_tile(const af_kv_t *g, int64_t j0, int64_t hi, int D, int tid, af_regs_t *r) {
  const int nc = D / 8; /* 16-byte chunks per K row */
  AF_UNROLL for (int u = 0; u < 4; u++) {
    if (u >= D / 32) continue; /* fixed trip count: unrolled before D is known */
    const int idx = tid + NT * u, key = idx / nc, c = idx % nc;
    const int64_t j = j0 + key;
    r->k[u] = j <= hi ? af_ld8x16(g->k, j * g->k_ss + 8 * c, g->kvec) : make_uint4(0u, 0u, 0u, 0u);
  }
  AF_UNROLL for (int u = 0; u < 4; u++) {
    if (u >= D / 32) continue; /* fixed trip count: unrolled before D is known */
    const int idx = tid + NT * u, cp = idx % (D / 2), kq = idx / (D / 2);
    uint32_t w[4];
    AF_UNROLL for (int e = 0; e < 4; e++) {
      const int64_t j = j0 + 4 * kq + e;
      w[e] = j <= hi ? af_ld2x16(g->v, j * g->v_ss + 2 * cp, g->vvec) : 0u;
    }
    r->v0[u] = make_uint2(af_lo16s(w[0], w[1]), af_lo16s(w[2], w[3]));
    r->v1[u] = make_uint2(af_hi16s(w[0], w[1]), af_hi16s(w[2], w[3]));
  }
}

/* Writes a tile's registers into LDS: K rows, then V^T rows. Of each column pair, the
 * lanes with cp & 8 store the odd column first, so a 16-lane store group covers 16
 * distinct columns modulo 16 (no bank conflict). */
AF_INLINE void af_store_tile(unsigned char *kt, unsigned char *vt, int D, int tid, const af_regs_t *r) {
  const int nc = D / 8;
  AF_UNROLL for (int u = 0; u < 4; u++) {
    if (u >= D / 32) continue; /* fixed trip count: unrolled before D is known */
    const int idx = tid + NT * u, key = idx / nc, c = idx % nc;
    *(uint4 *)(kt + gp__amd_attn_k_off(key, c, D)) = r->k[u];
  }
  AF_UNROLL for (int u = 0; u < 4; u++) {
    if (u >= D / 32) continue; /* fixed trip count: unrolled before D is known */
    const int idx = tid + NT * u, cp = idx % (D / 2), kq = idx / (D / 2), x = (cp >> 3) & 1;
    const uint2 a = r->v0[u], b = r->v1[u];
    const uint2 f = make_uint2(x ? b.x : a.x, x ? b.y : a.y), s = make_uint2(x ? a.x : b.x, x ? a.y : b.y);
    *(uint2 *)(vt + gp__amd_attn_vt_off(2 * cp + x, kq)) = f;
    *(uint2 *)(vt + gp__amd_attn_vt_off(2 * cp + (x ^ 1), kq)) = s;
  }
}

AF_INLINE void af_attention(const gp__attn_params_t *pp, int D, int kind) {
  const gp__attn_params_t p = *pp;
  GP_DYNAMIC_SHARED(unsigned char, smem);
  unsigned char *const kt = smem, *const vt = smem + BN * D * 2;
  const int tid = (int)threadIdx.x, lane = tid % 64, w = tid / 64, q = lane % 32, h = lane / 32;

  const int64_t tiles = (p.seqlen_q + GP__AMD_ATTN_BM - 1) / GP__AMD_ATTN_BM;
  const int64_t blk = (int64_t)blockIdx.x;
  const int64_t tile = blk % tiles, head = (blk / tiles) % p.heads_q, b = blk / tiles / p.heads_q;
  const int64_t hk = head / (p.heads_q / p.heads_kv);
  const gp__attn_seq_t seq = GP__ATTN_SEQUENCE(&p, b); /* before any barrier */
  const int64_t sq = seq.sq, sk = seq.sk, q_row0 = seq.q0, k_row0 = seq.k0;
  const int64_t i0 = tile * GP__AMD_ATTN_BM;
  if (i0 >= sq) return; /* the whole block: no barrier reached yet */
  const int64_t i_last = (i0 + GP__AMD_ATTN_BM < sq ? i0 + GP__AMD_ATTN_BM : sq) - 1;

  /* The keys any row of the block sees, of this wavefront's rows, and of this lane's row. */
  int64_t lo_blk, hi_blk, lo_w, hi_w, lo_q, hi_q, unused;
  gp__attn_key_range(i0, sq, sk, p.window_left, p.window_right, &lo_blk, &unused);
  gp__attn_key_range(i_last, sq, sk, p.window_left, p.window_right, &unused, &hi_blk);
  const int64_t iw0 = i0 + 32 * w, iw1 = (iw0 + 31 < i_last ? iw0 + 31 : i_last);
  const bool wave_rows = iw0 <= i_last;
  gp__attn_key_range(iw0, sq, sk, p.window_left, p.window_right, &lo_w, &unused);
  gp__attn_key_range(iw1, sq, sk, p.window_left, p.window_right, &unused, &hi_w);
  const int64_t iq = iw0 + q;
  gp__attn_key_range(iq, sq, sk, p.window_left, p.window_right, &lo_q, &hi_q);

  /* Q fragments of this lane's query, in registers for the whole loop. */
  const AF_GLOBAL char *qb = (const AF_GLOBAL char *)p.q + (b * p.q_bs + head * p.q_hs) * 2;
  const bool qvec = p.q_ss % 8 == 0 && p.q_hs % 8 == 0 && p.q_bs % 8 == 0 && (uintptr_t)p.q % 16 == 0;
  uint4 qf[8];
  AF_UNROLL for (int G = 0; G < 8; G++) {
    if (G >= D / 16) continue;
    qf[G] = iq <= i_last ? af_ld8x16(qb, (q_row0 + iq) * p.q_ss + 16 * G + 8 * h, qvec)
                         : make_uint4(0u, 0u, 0u, 0u);
  }

  af_kv_t g;
  g.k = (const AF_GLOBAL char *)p.k + (b * p.k_bs + k_row0 * p.k_ss + hk * p.k_hs) * 2;
  g.v = (const AF_GLOBAL char *)p.v + (b * p.v_bs + k_row0 * p.v_ss + hk * p.v_hs) * 2;
  g.k_ss = p.k_ss;
  g.v_ss = p.v_ss;
  g.kvec = p.k_ss % 8 == 0 && p.k_hs % 8 == 0 && p.k_bs % 8 == 0 && (uintptr_t)p.k % 16 == 0;
  g.vvec = p.v_ss % 2 == 0 && p.v_hs % 2 == 0 && p.v_bs % 2 == 0 && (uintptr_t)p.v % 4 == 0;

  const float sl2 = p.scale * 1.4426950408889634f; /* scores in base 2 */
  float m = -INFINITY, l = 0.0f;                     /* this lane's query, base 2 */
  gp_amd_f32x16_t o[4];
  AF_UNROLL for (int dt = 0; dt < 4; dt++)
    AF_UNROLL for (int r = 0; r < 16; r++) o[dt][r] = 0.0f;

  af_regs_t regs;
  if (lo_blk <= hi_blk) {
    af_load_tile(&g, lo_blk, hi_blk, D, tid, &regs);
    af_store_tile(kt, vt, D, tid, &regs);
  }
  __syncthreads();
  for (int64_t j0 = lo_blk; j0 <= hi_blk; j0 += BN) {
    const bool next = j0 + BN <= hi_blk;
    if (next) af_load_tile(&g, j0 + BN, hi_blk, D, tid, &regs); /* in flight meanwhile */
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
      /* Online softmax for this lane's query (base 2); masked scores are -inf. */
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
    if (next) af_store_tile(kt, vt, D, tid, &regs);
    __syncthreads(); /* the next tile is in LDS */
  }

  /* O / l and lse for this lane's query; lane half h holds columns 8 (r/4) + 4 h + r % 4. */
  if (iq > i_last) return;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  const int64_t o_off = b * p.o_bs + (q_row0 + iq) * p.o_ss + head * p.o_hs;
  AF_UNROLL for (int dt = 0; dt < 4; dt++) {
    if (dt >= D / 32) continue;
    AF_UNROLL for (int r = 0; r < 16; r++)
      af_store(p.o, o_off + 32 * dt + 8 * (r / 4) + 4 * h + r % 4, kind, o[dt][r] * inv);
  }
  if (p.lse && h == 0) {
    const float v = l > 0.0f ? 0.69314718055994531f * (m + log2f(l)) : -INFINITY;
    if (p.cu_q)
      p.lse[head * (int64_t)p.cu_q[p.batch] + q_row0 + iq] = v; /* seq.total_q, re-read */
    else
      p.lse[(b * p.heads_q + head) * p.seqlen_q + iq] = v;
  }
}

#define AF_KERNEL(name, D, kind)                                                            \
  GP_KERNEL void __launch_bounds__(256) name(gp__attn_params_t p) { af_attention(&p, D, kind); } \
  GP_KERNEL_EXPORT(name)
AF_KERNEL(gp__attention_fwd_mfma_bf16_d32, 32, AF_BF16)
AF_KERNEL(gp__attention_fwd_mfma_bf16_d64, 64, AF_BF16)
AF_KERNEL(gp__attention_fwd_mfma_bf16_d128, 128, AF_BF16)
AF_KERNEL(gp__attention_fwd_mfma_f16_d32, 32, AF_F16)
AF_KERNEL(gp__attention_fwd_mfma_f16_d64, 64, AF_F16)
AF_KERNEL(gp__attention_fwd_mfma_f16_d128, 128, AF_F16)
