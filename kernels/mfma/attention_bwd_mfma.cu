/*
 * attention_bwd_mfma.cu - attention backward on AMD CDNA matrix cores (FlashAttention-2:
 * Dao 2023, Algorithm 2, with dQ in its own kernel so that no gradient needs atomics), 64-
 * lane wavefronts, in the gpuport dialect. Built by hipcc for gfx90a / gfx940 and by the
 * host compiler for the CPU executor at warp width 64 with the MFMA emulated, so this code
 * is tested in CI against the float64 reference (test/test_attention_bwd.c, mode mfma).
 * kernels/mfma/attention_mfma_host.c chooses and launches it for gp_attention_bwd (the parameters:
 * gp__attn_bwd_params_t of src/attention_impl.h; d_o has o's strides, dq, dk and dv those
 * of q, k and v; delta goes to the workspace's ws_d, the rest of the workspace is unused).
 * f16 and bf16, head_dim == head_dim_v in {32, 64, 128}; masks, GQA/MQA and varlen as
 * the forward. No atomics, so `deterministic` changes nothing: results are bitwise
 * reproducible either way.
 *
 * With P = exp(scale Q K^T - lse) (lse from the forward), delta = rowsum(dO o O):
 *   dV = P^T dO,  dP = dO V^T,  dS = P o (dP - delta),  dQ = scale dS K,  dK = scale dS^T Q.
 *
 * Kernel 1, gp__attention_bwd_mfma_*_dq_*: the forward's decomposition (128 query rows per block, 32
 * per wavefront, a lane's registers belong to one query l % 32); per tile of 32 keys:
 *   S^T = K Q^T     X = K rows (LDS), Y = Q^T (registers)           (as the forward)
 *   dP^T = V dO^T   X = V rows (LDS), Y = dO^T (registers)
 *   dS^T = P^T o (dP^T - delta)                                      (one delta per lane)
 *   dQ^T += K^T dS^T  X = K^T rows (LDS, transposed while staging), Y = dS^T, the S^T
 *                   registers rounded to the input type (their layout is the Y operand's)
 * It also computes delta (each lane: its query, half of the columns, one exchange with
 * lane l ^ 32) and stores it in the workspace for kernel 2, which runs after it.
 * Kernel 2, gp__attention_bwd_mfma_*_dkv_*: 128 key rows per block (one key/value head), 32 per
 * wavefront, a lane's registers belong to one key; for each query head of the GQA group
 * and each tile of 32 queries that sees a key of the block:
 *   S = Q K^T       X = Q rows (LDS), Y = K^T (registers): lane l, register r holds the
 *                   score of key l % 32 and query 8 (r/4) + 4 (l/32) + r % 4
 *   dP = dO V^T     X = dO rows (LDS), Y = V^T (registers)
 *   dV^T += dO^T P  X = dO^T rows (LDS, transposed while staging), Y = P
 *   dK^T += Q^T dS  X = Q^T rows (LDS), Y = dS
 * Every gradient element is a sum in one fixed order (no atomics): bitwise reproducible.
 * LDS maps: gp__amd_attn_k_off (rows) and gp__amd_t32_off (transposed, rows of 32),
 * conflict-free (test_amd_kernels.c). Numerics: scores in f32 from exact 16-bit
 * products, P and dS rounded to the input type for the MFMAs that take them, f32
 * accumulation, one rounding to the output type.
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

#include "attention_mfma_common.h"

#define NT GP__AMD_ATTN_THREADS
#define BN GP__AMD_ATTN_BWD_BN
#define BM GP__AMD_ATTN_BWD_BM
#define AB_LOG2E 1.4426950408889634f

/* One sequence of the batch: lengths, the first packed row (varlen), the first row in
 * the workspace (kernels/common/attention_seq.h: offsets that do not fit the tensors or
 * the workspace fail the launch here, before any barrier). */
typedef struct ab_seq {
  int64_t sq, sk, q_row0, k_row0, wq;
} ab_seq_t;

AF_INLINE ab_seq_t ab_sequence(const gp__attn_bwd_params_t *bp, int64_t b) {
  const gp__attn_seq_t w = GP__ATTN_SEQUENCE(&bp->f, b);
  ab_seq_t s;
  s.sq = w.sq, s.sk = w.sk, s.q_row0 = w.q0, s.k_row0 = w.k0, s.wq = w.wq;
  return s;
}

/* Index of lse for query i of sequence b, head h ([batch, heads, seqlen], or with
 * varlen [heads, total_q]). */
AF_INLINE int64_t ab_lse_index(const gp__attn_params_t *p, int64_t b, int64_t h, const ab_seq_t *s,
                               int64_t i) {
  return p->cu_q ? h * (int64_t)p->cu_q[p->batch] + s->q_row0 + i : (b * p->heads_q + h) * p->seqlen_q + i;
}

/* Index of delta = rowsum(dO o O) in the workspace (bp->ws_d, [rows_q][heads_q]). */
AF_INLINE int64_t ab_delta_index(const gp__attn_params_t *p, int64_t h, const ab_seq_t *s, int64_t i) {
  return (s->wq + i) * p->heads_q + h;
}

AF_INLINE bool ab_visible(const gp__attn_params_t *p, const ab_seq_t *s, int64_t i, int64_t j) {
  int64_t lo, hi;
  gp__attn_key_range(i, s->sq, s->sk, p->window_left, p->window_right, &lo, &hi);
  return i < s->sq && j >= lo && j <= hi;
}

/* Stages rows r0 .. r0 + nrows - 1 (valid below nvalid, else 0) of a [row][W] tensor at
 * base (row stride ss elements) into an LDS row tile (16-byte chunks, gp__amd_attn_k_off). */
AF_INLINE void ab_stage_rows(unsigned char *tile, const AF_GLOBAL char *base, int64_t ss, bool vec,
                             int64_t r0, int64_t nvalid, int nrows, int W, int tid) {
  const int nc = W / 8;
  for (int idx = tid; idx < nrows * nc; idx += NT) {
    const int r = idx / nc, c = idx % nc;
    const uint4 v = r0 + r < nvalid ? af_ld8x16(base, (r0 + r) * ss + 8 * c, vec) : make_uint4(0u, 0u, 0u, 0u);
    *(uint4 *)(tile + gp__amd_attn_k_off(r, c, W)) = v;
  }
}

/* Stages the same rows transposed: row c of the tile holds column c of the 32 rows, in
 * 8-byte pieces of 4 rows (gp__amd_t32_off). A unit is 4 rows x 2 columns; the lanes
 * whose column pair has bit 3 store the odd column first (no bank conflict). */
AF_INLINE void ab_stage_t32(unsigned char *tile, const AF_GLOBAL char *base, int64_t ss, bool vec,
                            int64_t r0, int64_t nvalid, int W, int tid) {
  for (int idx = tid; idx < 8 * (W / 2); idx += NT) {
    const int cp = idx % (W / 2), rq = idx / (W / 2), x = (cp >> 3) & 1;
    uint32_t w0 = 0u, w1 = 0u, w2 = 0u, w3 = 0u;
    const int64_t r = r0 + 4 * rq;
    if (r < nvalid) w0 = af_ld2x16(base, r * ss + 2 * cp, vec);
    if (r + 1 < nvalid) w1 = af_ld2x16(base, (r + 1) * ss + 2 * cp, vec);
    if (r + 2 < nvalid) w2 = af_ld2x16(base, (r + 2) * ss + 2 * cp, vec);
    if (r + 3 < nvalid) w3 = af_ld2x16(base, (r + 3) * ss + 2 * cp, vec);
    const uint2 a = make_uint2(af_lo16s(w0, w1), af_lo16s(w2, w3));
    const uint2 b = make_uint2(af_hi16s(w0, w1), af_hi16s(w2, w3));
    const uint2 f = make_uint2(x ? b.x : a.x, x ? b.y : a.y), s = make_uint2(x ? a.x : b.x, x ? a.y : b.y);
    *(uint2 *)(tile + gp__amd_t32_off(2 * cp + x, rq)) = f;
    *(uint2 *)(tile + gp__amd_t32_off(2 * cp + (x ^ 1), rq)) = s;
  }
}

AF_INLINE bool ab_vec16(int64_t bs, int64_t ss, int64_t hs, const void *p) {
  return bs % 8 == 0 && ss % 8 == 0 && hs % 8 == 0 && (uintptr_t)p % 16 == 0;
}
AF_INLINE bool ab_vec4(int64_t bs, int64_t ss, int64_t hs, const void *p) {
  return bs % 2 == 0 && ss % 2 == 0 && hs % 2 == 0 && (uintptr_t)p % 4 == 0;
}

/* ---- kernel 1: dQ (and delta) ---------------------------------------------------------- */
AF_INLINE void ab_dq(const gp__attn_bwd_params_t *pp, int D, int kind) {
  const gp__attn_bwd_params_t bp = *pp;
  const gp__attn_params_t *p = &bp.f;
  GP_DYNAMIC_SHARED(unsigned char, smem);
  unsigned char *const kt = smem, *const vt = smem + BN * D * 2, *const ktt = vt + BN * D * 2;
  const int tid = (int)threadIdx.x, lane = tid % 64, w = tid / 64, q = lane % 32, h = lane / 32;

  const int64_t tiles = (p->seqlen_q + GP__AMD_ATTN_BM - 1) / GP__AMD_ATTN_BM;
  const int64_t blk = (int64_t)blockIdx.x;
  const int64_t tile = blk % tiles, head = (blk / tiles) % p->heads_q, b = blk / tiles / p->heads_q;
  const int64_t hk = head / (p->heads_q / p->heads_kv);
  const ab_seq_t sq = ab_sequence(&bp, b);
  const int64_t i0 = tile * GP__AMD_ATTN_BM;
  if (i0 >= sq.sq) return; /* the whole block: no barrier reached yet */
  const int64_t i_last = (i0 + GP__AMD_ATTN_BM < sq.sq ? i0 + GP__AMD_ATTN_BM : sq.sq) - 1;

  int64_t lo_blk, hi_blk, lo_w, hi_w, unused;
  gp__attn_key_range(i0, sq.sq, sq.sk, p->window_left, p->window_right, &lo_blk, &unused);
  gp__attn_key_range(i_last, sq.sq, sq.sk, p->window_left, p->window_right, &unused, &hi_blk);
  const int64_t iw0 = i0 + 32 * w, iw1 = (iw0 + 31 < i_last ? iw0 + 31 : i_last);
  const bool wave_rows = iw0 <= i_last;
  gp__attn_key_range(iw0, sq.sq, sq.sk, p->window_left, p->window_right, &lo_w, &unused);
  gp__attn_key_range(iw1, sq.sq, sq.sk, p->window_left, p->window_right, &unused, &hi_w);
  const int64_t iq = iw0 + q;
  const bool valid = iq <= i_last;

  /* This lane's query: Q and dO fragments (d = 16 G + 8 h .. + 7), delta, lse. */
  const AF_GLOBAL char *qb = (const AF_GLOBAL char *)p->q + (b * p->q_bs + head * p->q_hs) * 2;
  const AF_GLOBAL char *ob = (const AF_GLOBAL char *)p->o + (b * p->o_bs + head * p->o_hs) * 2;
  const AF_GLOBAL char *dob = (const AF_GLOBAL char *)bp.d_o + (b * p->o_bs + head * p->o_hs) * 2;
  const bool qvec = ab_vec16(p->q_bs, p->q_ss, p->q_hs, p->q);
  const bool ovec = ab_vec16(p->o_bs, p->o_ss, p->o_hs, p->o);
  const bool dovec = ab_vec16(p->o_bs, p->o_ss, p->o_hs, bp.d_o);
  const int64_t row = sq.q_row0 + iq;
  uint4 qf[8], dof[8];
  float delta = 0.0f;
  AF_UNROLL for (int G = 0; G < 8; G++) {
    if (G >= D / 16) continue; /* fixed trip count: unrolled before D is known */
    qf[G] = valid ? af_ld8x16(qb, row * p->q_ss + 16 * G + 8 * h, qvec) : make_uint4(0u, 0u, 0u, 0u);
    dof[G] = valid ? af_ld8x16(dob, row * p->o_ss + 16 * G + 8 * h, dovec) : make_uint4(0u, 0u, 0u, 0u);
    const uint4 ov = valid ? af_ld8x16(ob, row * p->o_ss + 16 * G + 8 * h, ovec) : make_uint4(0u, 0u, 0u, 0u);
    const uint32_t dw[4] = {dof[G].x, dof[G].y, dof[G].z, dof[G].w}, ow[4] = {ov.x, ov.y, ov.z, ov.w};
    AF_UNROLL for (int e = 0; e < 8; e++) {
      const uint32_t db = (dw[e / 2] >> (16 * (e % 2))) & 0xffffu, obits = (ow[e / 2] >> (16 * (e % 2))) & 0xffffu;
      float x, y;
      if (kind == AF_BF16) {
        gp_bf16_t u, v;
        u.bits = (uint16_t)db;
        v.bits = (uint16_t)obits;
        x = gp_f32_from_bf16(u);
        y = gp_f32_from_bf16(v);
      } else {
        gp_f16_t u, v;
        u.bits = (uint16_t)db;
        v.bits = (uint16_t)obits;
        x = gp_f32_from_f16(u);
        y = gp_f32_from_f16(v);
      }
      delta = fmaf(x, y, delta);
    }
  }
  delta += gp_shfl_xor(delta, 32);
  const int64_t li = ab_lse_index(p, b, head, &sq, iq);
  if (valid && h == 0) bp.ws_d[ab_delta_index(p, head, &sq, iq)] = delta;
  const float lse2 = valid ? p->lse[li] * AB_LOG2E : 0.0f;

  const AF_GLOBAL char *kb = (const AF_GLOBAL char *)p->k + (b * p->k_bs + sq.k_row0 * p->k_ss + hk * p->k_hs) * 2;
  const AF_GLOBAL char *vb = (const AF_GLOBAL char *)p->v + (b * p->v_bs + sq.k_row0 * p->v_ss + hk * p->v_hs) * 2;
  const bool kvec = ab_vec16(p->k_bs, p->k_ss, p->k_hs, p->k), vvec = ab_vec16(p->v_bs, p->v_ss, p->v_hs, p->v);
  const bool kvec4 = ab_vec4(p->k_bs, p->k_ss, p->k_hs, p->k);
  const float sl2 = p->scale * AB_LOG2E;

  gp_amd_f32x16_t dq[4];
  AF_UNROLL for (int ct = 0; ct < 4; ct++)
    AF_UNROLL for (int r = 0; r < 16; r++) dq[ct][r] = 0.0f;

  for (int64_t j0 = lo_blk; j0 <= hi_blk; j0 += BN) {
    __syncthreads(); /* the previous tile's LDS is no longer read */
    ab_stage_rows(kt, kb, p->k_ss, kvec, j0, hi_blk + 1, BN, D, tid);
    ab_stage_rows(vt, vb, p->v_ss, vvec, j0, hi_blk + 1, BN, D, tid);
    ab_stage_t32(ktt, kb, p->k_ss, kvec4, j0, hi_blk + 1, D, tid);
    __syncthreads();
    if (!(wave_rows && j0 <= hi_w && j0 + BN - 1 >= lo_w)) continue;
    gp_amd_f32x16_t s, dp;
    AF_UNROLL for (int r = 0; r < 16; r++) s[r] = dp[r] = 0.0f;
    AF_UNROLL for (int G = 0; G < 8; G++) {
      if (G >= D / 16) continue;
      const uint4 kv = *(const uint4 *)(kt + gp__amd_attn_k_off(q, 2 * G + h, D));
      const uint4 vv = *(const uint4 *)(vt + gp__amd_attn_k_off(q, 2 * G + h, D));
      s = af_mfma(kind, af_b16x4(kv.x, kv.y), af_b16x4(qf[G].x, qf[G].y), s);
      s = af_mfma(kind, af_b16x4(kv.z, kv.w), af_b16x4(qf[G].z, qf[G].w), s);
      dp = af_mfma(kind, af_b16x4(vv.x, vv.y), af_b16x4(dof[G].x, dof[G].y), dp);
      dp = af_mfma(kind, af_b16x4(vv.z, vv.w), af_b16x4(dof[G].z, dof[G].w), dp);
    }
    /* dS^T, rounded for the MFMA: register group g holds keys 8 g + 4 h + e. */
    gp_amd_b16x4_t ds[4];
    AF_UNROLL for (int g = 0; g < 4; g++) {
      uint32_t e16[4];
      AF_UNROLL for (int e = 0; e < 4; e++) {
        const int r = 4 * g + e;
        const int64_t j = j0 + 8 * g + 4 * h + e;
        const float pr = (valid && ab_visible(p, &sq, iq, j)) ? exp2f(s[r] * sl2 - lse2) : 0.0f;
        e16[e] = af_round16(kind, pr * (dp[r] - delta));
      }
      ds[g] = af_b16x4(e16[0] | e16[1] << 16, e16[2] | e16[3] << 16);
    }
    AF_UNROLL for (int ct = 0; ct < 4; ct++) {
      if (ct >= D / 32) continue;
      AF_UNROLL for (int g = 0; g < 4; g++) {
        const uint2 kk = *(const uint2 *)(ktt + gp__amd_t32_off(32 * ct + q, 2 * g + h));
        dq[ct] = af_mfma(kind, af_b16x4(kk.x, kk.y), ds[g], dq[ct]);
      }
    }
  }

  if (!valid) return;
  const int64_t off = b * p->q_bs + row * p->q_ss + head * p->q_hs;
  AF_UNROLL for (int ct = 0; ct < 4; ct++) {
    if (ct >= D / 32) continue;
    AF_UNROLL for (int r = 0; r < 16; r++)
      af_store(bp.dq, off + 32 * ct + 8 * (r / 4) + 4 * h + r % 4, kind, dq[ct][r] * p->scale);
  }
}

/* ---- kernel 2: dK and dV ----------------------------------------------------------------- */
AF_INLINE void ab_dkv(const gp__attn_bwd_params_t *pp, int D, int kind) {
  const gp__attn_bwd_params_t bp = *pp;
  const gp__attn_params_t *p = &bp.f;
  GP_DYNAMIC_SHARED(unsigned char, smem);
  unsigned char *const qt = smem, *const dot = qt + BM * D * 2, *const qtt = dot + BM * D * 2;
  unsigned char *const dott = qtt + BM * D * 2;
  float *const lse2s = (float *)(dott + BM * D * 2), *const deltas = lse2s + BM;
  const int tid = (int)threadIdx.x, lane = tid % 64, w = tid / 64, q = lane % 32, h = lane / 32;

  const int64_t ktiles = (p->seqlen_k + GP__AMD_ATTN_BM - 1) / GP__AMD_ATTN_BM;
  const int64_t blk = (int64_t)blockIdx.x;
  const int64_t ktile = blk % ktiles, hk = (blk / ktiles) % p->heads_kv, b = blk / ktiles / p->heads_kv;
  const int64_t group = p->heads_q / p->heads_kv;
  const ab_seq_t sq = ab_sequence(&bp, b);
  const int64_t k0 = ktile * GP__AMD_ATTN_BM;
  if (k0 >= sq.sk) return; /* no key of this sequence here (uniform: no barrier reached) */
  const int64_t k_last = (k0 + GP__AMD_ATTN_BM < sq.sk ? k0 + GP__AMD_ATTN_BM : sq.sk) - 1;
  const int64_t kw0 = k0 + 32 * w, kw1 = (kw0 + 31 < k_last ? kw0 + 31 : k_last);
  const bool wave_keys = kw0 <= k_last;
  const int64_t jk = kw0 + q;
  const bool valid = jk <= k_last;

  /* This lane's key: K and V fragments. */
  const AF_GLOBAL char *kb = (const AF_GLOBAL char *)p->k + (b * p->k_bs + sq.k_row0 * p->k_ss + hk * p->k_hs) * 2;
  const AF_GLOBAL char *vb = (const AF_GLOBAL char *)p->v + (b * p->v_bs + sq.k_row0 * p->v_ss + hk * p->v_hs) * 2;
  const bool kvec = ab_vec16(p->k_bs, p->k_ss, p->k_hs, p->k), vvec = ab_vec16(p->v_bs, p->v_ss, p->v_hs, p->v);
  uint4 kf[8], vf[8];
  AF_UNROLL for (int G = 0; G < 8; G++) {
    if (G >= D / 16) continue;
    kf[G] = valid ? af_ld8x16(kb, jk * p->k_ss + 16 * G + 8 * h, kvec) : make_uint4(0u, 0u, 0u, 0u);
    vf[G] = valid ? af_ld8x16(vb, jk * p->v_ss + 16 * G + 8 * h, vvec) : make_uint4(0u, 0u, 0u, 0u);
  }
  const float sl2 = p->scale * AB_LOG2E;
  const bool qvec = ab_vec16(p->q_bs, p->q_ss, p->q_hs, p->q), qvec4 = ab_vec4(p->q_bs, p->q_ss, p->q_hs, p->q);
  const bool dovec = ab_vec16(p->o_bs, p->o_ss, p->o_hs, bp.d_o);
  const bool dovec4 = ab_vec4(p->o_bs, p->o_ss, p->o_hs, bp.d_o);

  gp_amd_f32x16_t dk[4], dv[4];
  AF_UNROLL for (int ct = 0; ct < 4; ct++)
    AF_UNROLL for (int r = 0; r < 16; r++) dk[ct][r] = dv[ct][r] = 0.0f;

  for (int64_t hh = 0; hh < group; hh++) {
    const int64_t head = hk * group + hh;
    const AF_GLOBAL char *qb = (const AF_GLOBAL char *)p->q + (b * p->q_bs + sq.q_row0 * p->q_ss + head * p->q_hs) * 2;
    const AF_GLOBAL char *dob =
        (const AF_GLOBAL char *)bp.d_o + (b * p->o_bs + sq.q_row0 * p->o_ss + head * p->o_hs) * 2;
    for (int64_t i0 = 0; i0 < sq.sq; i0 += BM) {
      const int64_t i1 = (i0 + BM < sq.sq ? i0 + BM : sq.sq) - 1;
      int64_t lo_t, hi_t, unused;
      gp__attn_key_range(i0, sq.sq, sq.sk, p->window_left, p->window_right, &lo_t, &unused);
      gp__attn_key_range(i1, sq.sq, sq.sk, p->window_left, p->window_right, &unused, &hi_t);
      if (hi_t < k0 || lo_t > k_last) continue; /* the tile sees no key of the block (uniform) */
      __syncthreads(); /* the previous tile's LDS is no longer read */
      ab_stage_rows(qt, qb, p->q_ss, qvec, i0, sq.sq, BM, D, tid);
      ab_stage_rows(dot, dob, p->o_ss, dovec, i0, sq.sq, BM, D, tid);
      ab_stage_t32(qtt, qb, p->q_ss, qvec4, i0, sq.sq, D, tid);
      ab_stage_t32(dott, dob, p->o_ss, dovec4, i0, sq.sq, D, tid);
      if (tid < BM) {
        const int64_t i = i0 + tid;
        const bool in = i < sq.sq;
        const int64_t li = ab_lse_index(p, b, head, &sq, in ? i : 0);
        lse2s[tid] = in ? p->lse[li] * AB_LOG2E : 0.0f;
        deltas[tid] = in ? bp.ws_d[ab_delta_index(p, head, &sq, i)] : 0.0f;
      }
      __syncthreads();
      if (!(wave_keys && hi_t >= kw0 && lo_t <= kw1)) continue;
      gp_amd_f32x16_t s, dp;
      AF_UNROLL for (int r = 0; r < 16; r++) s[r] = dp[r] = 0.0f;
      AF_UNROLL for (int G = 0; G < 8; G++) {
        if (G >= D / 16) continue;
        const uint4 qv = *(const uint4 *)(qt + gp__amd_attn_k_off(q, 2 * G + h, D));
        const uint4 dv4 = *(const uint4 *)(dot + gp__amd_attn_k_off(q, 2 * G + h, D));
        s = af_mfma(kind, af_b16x4(qv.x, qv.y), af_b16x4(kf[G].x, kf[G].y), s);
        s = af_mfma(kind, af_b16x4(qv.z, qv.w), af_b16x4(kf[G].z, kf[G].w), s);
        dp = af_mfma(kind, af_b16x4(dv4.x, dv4.y), af_b16x4(vf[G].x, vf[G].y), dp);
        dp = af_mfma(kind, af_b16x4(dv4.z, dv4.w), af_b16x4(vf[G].z, vf[G].w), dp);
      }
      /* P and dS: register r holds query 8 (r/4) + 4 h + r % 4 of the tile. */
      gp_amd_b16x4_t pk[4], dsk[4];
      AF_UNROLL for (int g = 0; g < 4; g++) {
        uint32_t p16[4], d16[4];
        AF_UNROLL for (int e = 0; e < 4; e++) {
          const int r = 4 * g + e, il = 8 * g + 4 * h + e;
          const float pr = (valid && ab_visible(p, &sq, i0 + il, jk)) ? exp2f(s[r] * sl2 - lse2s[il]) : 0.0f;
          p16[e] = af_round16(kind, pr);
          d16[e] = af_round16(kind, pr * (dp[r] - deltas[il]));
        }
        pk[g] = af_b16x4(p16[0] | p16[1] << 16, p16[2] | p16[3] << 16);
        dsk[g] = af_b16x4(d16[0] | d16[1] << 16, d16[2] | d16[3] << 16);
      }
      AF_UNROLL for (int ct = 0; ct < 4; ct++) {
        if (ct >= D / 32) continue;
        AF_UNROLL for (int g = 0; g < 4; g++) {
          const uint2 a = *(const uint2 *)(dott + gp__amd_t32_off(32 * ct + q, 2 * g + h));
          const uint2 c = *(const uint2 *)(qtt + gp__amd_t32_off(32 * ct + q, 2 * g + h));
          dv[ct] = af_mfma(kind, af_b16x4(a.x, a.y), pk[g], dv[ct]);
          dk[ct] = af_mfma(kind, af_b16x4(c.x, c.y), dsk[g], dk[ct]);
        }
      }
    }
  }

  if (!valid) return;
  const int64_t krow = sq.k_row0 + jk;
  const int64_t koff = b * p->k_bs + krow * p->k_ss + hk * p->k_hs;
  const int64_t voff = b * p->v_bs + krow * p->v_ss + hk * p->v_hs;
  AF_UNROLL for (int ct = 0; ct < 4; ct++) {
    if (ct >= D / 32) continue;
    AF_UNROLL for (int r = 0; r < 16; r++) {
      const int64_t c = 32 * ct + 8 * (r / 4) + 4 * h + r % 4;
      af_store(bp.dk, koff + c, kind, dk[ct][r] * p->scale);
      af_store(bp.dv, voff + c, kind, dv[ct][r]);
    }
  }
}

#define AB_KERNELS(D, kind, tname)                                                           \
  GP_KERNEL void __launch_bounds__(256) gp__attention_bwd_mfma_##tname##_dq_d##D(gp__attn_bwd_params_t p) { \
    ab_dq(&p, D, kind);                                                                      \
  }                                                                                          \
  GP_KERNEL_EXPORT(gp__attention_bwd_mfma_##tname##_dq_d##D)                                           \
  GP_KERNEL void __launch_bounds__(256) gp__attention_bwd_mfma_##tname##_dkv_d##D(gp__attn_bwd_params_t p) { \
    ab_dkv(&p, D, kind);                                                                     \
  }                                                                                          \
  GP_KERNEL_EXPORT(gp__attention_bwd_mfma_##tname##_dkv_d##D)
AB_KERNELS(32, AF_BF16, bf16)
AB_KERNELS(64, AF_BF16, bf16)
AB_KERNELS(128, AF_BF16, bf16)
AB_KERNELS(32, AF_F16, f16)
AB_KERNELS(64, AF_F16, f16)
AB_KERNELS(128, AF_F16, f16)
