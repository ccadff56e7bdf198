/*
 * attention_fwd_sm80.cuh - the body of the sm_80 attention forward kernels, included by
 * attention_fwd_sm80.cu once per variant with ATT_NAME (the kernel), ATT_D (head_dim) and
 * ATT_BF16 (1: bf16, else f16) defined; it undefines them at the end. Decomposition:
 * attention_fwd_sm80.cu.
 */
#if ATT_BF16
#define ATT_MMA gp_nv_mma_m16n8k16_bf16
#define ATT_PACK gp_nv_pack_bf16x2
#else
#define ATT_MMA gp_nv_mma_m16n8k16_f16
#define ATT_PACK gp_nv_pack_f16x2
#endif
#define ATT_MT GP__SM80_ATTN_MT(ATT_D)
#define ATT_BM GP__SM80_ATTN_BM(ATT_D)
#define ATT_BN GP__SM80_ATTN_BN(ATT_D)
#define ATT_THREADS GP__SM80_ATTN_THREADS(ATT_D)
#define ATT_LD (ATT_D + 8)
/* Q fragments stay in registers where that leaves room (one query tile per warp) */
#define ATT_QREGS (ATT_MT == 1 && ATT_D <= 128)
/* First row (in the block tile) of the calling warp's query tile mt. */
#define ATT_ROW(mt) (16 * (GP__SM80_ATTN_WARPS(ATT_D) * (mt) + warp))

GP_KERNEL void __launch_bounds__(ATT_THREADS) ATT_NAME(gp__attn_params_t p) {
  GP_DYNAMIC_SHARED(uint16_t, smem);
  uint16_t *qs = smem, *ks = qs + ATT_BM * ATT_LD, *vs = ks + ATT_BN * ATT_LD;
  const int tid = (int)threadIdx.x, lane = tid % 32, warp = tid / 32, g = lane / 4, t4 = lane % 4;

  const int64_t tiles = (p.seqlen_q + ATT_BM - 1) / ATT_BM, blk = (int64_t)blockIdx.x;
  const int64_t tile = blk % tiles, h = blk / tiles % p.heads_q, b = blk / tiles / p.heads_q;
  const int64_t hk = h / (p.heads_q / p.heads_kv);
  const gp__attn_seq_t seq = GP__ATTN_SEQUENCE(&p, b); /* before any barrier */
  const int64_t sq = seq.sq, sk = seq.sk, q_row0 = seq.q0, k_row0 = seq.k0;
  const int64_t i0 = tile * ATT_BM;
  if (i0 >= sq) return; /* the whole block, before any barrier */
  const int64_t rows = sq - i0 < ATT_BM ? sq - i0 : ATT_BM;
  const uint16_t *qg = (const uint16_t *)p.q + b * p.q_bs + (q_row0 + i0) * p.q_ss + h * p.q_hs;
  const uint16_t *kg = (const uint16_t *)p.k + b * p.k_bs + k_row0 * p.k_ss + hk * p.k_hs;
  const uint16_t *vg = (const uint16_t *)p.v + b * p.v_bs + k_row0 * p.v_ss + hk * p.v_hs;

  /* Keys visible to some row of the block, [lo, hi]; the band of each row is inside. */
  int64_t lo, hi, lo_last, hi_first;
  gp__attn_key_range(i0, sq, sk, p.window_left, p.window_right, &lo, &hi_first);
  gp__attn_key_range(i0 + rows - 1, sq, sk, p.window_left, p.window_right, &lo_last, &hi);
  /* This thread's rows (mt, half): their own bands, for the tiles the band cuts. Keys
   * are below 2^31 (the API's limit), so 32 bits hold the bands, an empty one as -1. */
  int row_lo[ATT_MT][2], row_hi[ATT_MT][2];
  ATT_UNROLL for (int mt = 0; mt < ATT_MT; mt++)
    ATT_UNROLL for (int hf = 0; hf < 2; hf++) {
      int64_t a, z;
      gp__attn_key_range(i0 + ATT_ROW(mt) + g + 8 * hf, sq, sk, p.window_left, p.window_right, &a, &z);
      row_lo[mt][hf] = (int)a;
      row_hi[mt][hf] = z < -1 ? -1 : (int)z;
    }

  gp_nv_async_t as;
  gp_nv_async_init(&as);
  att_stage(&as, qs, qg, p.q_ss, ATT_BM, rows, ATT_D, tid, ATT_THREADS);
  if (hi >= lo) att_stage(&as, ks, kg + lo * p.k_ss, p.k_ss, ATT_BN, sk - lo, ATT_D, tid, ATT_THREADS);
  gp_nv_cp_async_commit(&as);

#if ATT_QREGS
  uint32_t qf[ATT_MT][ATT_D / 16][4];
  gp_nv_cp_async_wait(&as, 0);
  __syncthreads();
  ATT_UNROLL for (int mt = 0; mt < ATT_MT; mt++)
    ATT_UNROLL for (int kd = 0; kd < ATT_D / 16; kd++)
      gp_nv_ldmatrix_x4(qf[mt][kd], qs + (ATT_ROW(mt) + lane % 8 +
                                          8 * (lane / 8 % 2)) * ATT_LD + 16 * kd + 8 * (lane / 16));
#endif

  const float scale_log2 = p.scale * 1.4426950408889634f;
  float o[ATT_MT][ATT_D / 8][4], m[ATT_MT][2], l[ATT_MT][2];
  ATT_UNROLL for (int mt = 0; mt < ATT_MT; mt++) {
    ATT_UNROLL for (int hf = 0; hf < 2; hf++) m[mt][hf] = -INFINITY, l[mt][hf] = 0.0f;
    ATT_UNROLL for (int dt = 0; dt < ATT_D / 8; dt++)
      ATT_UNROLL for (int e = 0; e < 4; e++) o[mt][dt][e] = 0.0f;
  }

  for (int64_t j0 = lo; j0 <= hi; j0 += ATT_BN) {
    gp_nv_cp_async_wait(&as, 0);
    __syncthreads(); /* K_j (and Q) landed; no warp still reads V_{j-1} */
    att_stage(&as, vs, vg + j0 * p.v_ss, p.v_ss, ATT_BN, sk - j0, ATT_D, tid, ATT_THREADS);
    gp_nv_cp_async_commit(&as);

    /* S = Q K_j^T */
    float s[ATT_MT][ATT_BN / 8][4];
    ATT_UNROLL for (int mt = 0; mt < ATT_MT; mt++)
      ATT_UNROLL for (int nt = 0; nt < ATT_BN / 8; nt++)
        ATT_UNROLL for (int e = 0; e < 4; e++) s[mt][nt][e] = 0.0f;
    ATT_UNROLL
    for (int kd = 0; kd < ATT_D / 16; kd++) {
      uint32_t qa[ATT_MT][4];
      ATT_UNROLL
      for (int mt = 0; mt < ATT_MT; mt++) {
#if ATT_QREGS
        ATT_UNROLL for (int r = 0; r < 4; r++) qa[mt][r] = qf[mt][kd][r];
#else
        gp_nv_ldmatrix_x4(qa[mt], qs + (ATT_ROW(mt) + lane % 8 +
                                        8 * (lane / 8 % 2)) * ATT_LD + 16 * kd + 8 * (lane / 16));
#endif
      }
      ATT_UNROLL
      for (int np = 0; np < ATT_BN / 16; np++) {
        uint32_t r[4]; /* keys 16 np .. + 7, then + 8 .. + 15; dims 16 kd .. + 15 */
        gp_nv_ldmatrix_x4(r, ks + (16 * np + lane % 8 + 8 * (lane / 16)) * ATT_LD + 16 * kd + 8 * (lane / 8 % 2));
        const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
        ATT_UNROLL for (int mt = 0; mt < ATT_MT; mt++) {
          ATT_MMA(s[mt][2 * np], qa[mt], b0);
          ATT_MMA(s[mt][2 * np + 1], qa[mt], b1);
        }
      }
    }

    /* Mask, online softmax (base 2), P as A fragments. */
    const bool full = j0 >= lo_last && j0 + ATT_BN - 1 <= hi_first && j0 + ATT_BN <= sk;
    uint32_t pa[ATT_MT][ATT_BN / 16][4];
    ATT_UNROLL
    for (int mt = 0; mt < ATT_MT; mt++) {
      ATT_UNROLL
      for (int hf = 0; hf < 2; hf++) {
        float mx = -INFINITY;
        ATT_UNROLL
        for (int nt = 0; nt < ATT_BN / 8; nt++)
          ATT_UNROLL
          for (int e = 2 * hf; e < 2 * hf + 2; e++) {
            float v = s[mt][nt][e] * scale_log2;
            if (!full) {
              const int64_t key = j0 + 8 * nt + 2 * t4 + (e & 1);
              if (key < row_lo[mt][hf] || key > row_hi[mt][hf]) v = -INFINITY;
            }
            s[mt][nt][e] = v;
            mx = fmaxf(mx, v);
          }
        mx = fmaxf(mx, gp_shfl_xor(mx, 1));
        mx = fmaxf(mx, gp_shfl_xor(mx, 2));
        const float m_new = fmaxf(m[mt][hf], mx);
        const float m_use = m_new == -INFINITY ? 0.0f : m_new; /* no key yet: P stays 0 */
        const float corr = exp2f(m[mt][hf] - m_use);
        m[mt][hf] = m_new;
        float sum = 0.0f;
        ATT_UNROLL
        for (int nt = 0; nt < ATT_BN / 8; nt++)
          ATT_UNROLL
          for (int e = 2 * hf; e < 2 * hf + 2; e++) {
            const float pr = exp2f(s[mt][nt][e] - m_use);
            s[mt][nt][e] = pr;
            sum += pr;
          }
        l[mt][hf] = l[mt][hf] * corr + sum;
        ATT_UNROLL
        for (int dt = 0; dt < ATT_D / 8; dt++) {
          o[mt][dt][2 * hf] *= corr;
          o[mt][dt][2 * hf + 1] *= corr;
        }
      }
      ATT_UNROLL
      for (int kb = 0; kb < ATT_BN / 16; kb++) {
        pa[mt][kb][0] = ATT_PACK(s[mt][2 * kb][0], s[mt][2 * kb][1]);
        pa[mt][kb][1] = ATT_PACK(s[mt][2 * kb][2], s[mt][2 * kb][3]);
        pa[mt][kb][2] = ATT_PACK(s[mt][2 * kb + 1][0], s[mt][2 * kb + 1][1]);
        pa[mt][kb][3] = ATT_PACK(s[mt][2 * kb + 1][2], s[mt][2 * kb + 1][3]);
      }
    }

    gp_nv_cp_async_wait(&as, 0);
    __syncthreads(); /* V_j landed; no warp still reads K_j */
    if (j0 + ATT_BN <= hi)
      att_stage(&as, ks, kg + (j0 + ATT_BN) * p.k_ss, p.k_ss, ATT_BN, sk - j0 - ATT_BN, ATT_D, tid, ATT_THREADS);
    gp_nv_cp_async_commit(&as);

    /* O += P V_j */
    ATT_UNROLL
    for (int kb = 0; kb < ATT_BN / 16; kb++)
      ATT_UNROLL
      for (int dn = 0; dn < ATT_D / 16; dn++) {
        uint32_t r[4]; /* keys 16 kb .. + 15; dims 16 dn .. + 7, then + 8 .. + 15 */
        gp_nv_ldmatrix_x4_trans(r, vs + (16 * kb + lane % 8 + 8 * (lane / 8 % 2)) * ATT_LD + 16 * dn + 8 * (lane / 16));
        const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
        ATT_UNROLL for (int mt = 0; mt < ATT_MT; mt++) {
          ATT_MMA(o[mt][2 * dn], pa[mt][kb], b0);
          ATT_MMA(o[mt][2 * dn + 1], pa[mt][kb], b1);
        }
      }
  }
  gp_nv_cp_async_wait(&as, 0);

  /* O / l and lse; the sums of a row are spread over its 4 lanes. */
  ATT_UNROLL
  for (int mt = 0; mt < ATT_MT; mt++)
    ATT_UNROLL
    for (int hf = 0; hf < 2; hf++) {
      float sum = l[mt][hf];
      sum += gp_shfl_xor(sum, 1);
      sum += gp_shfl_xor(sum, 2);
      const int64_t r = ATT_ROW(mt) + g + 8 * hf;
      if (r >= rows) continue;
      const int64_t i = i0 + r;
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      const int64_t off = b * p.o_bs + (q_row0 + i) * p.o_ss + h * p.o_hs + 2 * t4;
      ATT_UNROLL
      for (int dt = 0; dt < ATT_D / 8; dt++)
        att_store2(p.o, off + 8 * dt, ATT_BF16, o[mt][dt][2 * hf] * inv, o[mt][dt][2 * hf + 1] * inv);
      if (p.lse && t4 == 0) {
        const float v = sum > 0.0f ? m[mt][hf] * 0.69314718055994531f + logf(sum) : -INFINITY;
        if (p.cu_q)
          p.lse[h * (int64_t)p.cu_q[p.batch] + q_row0 + i] = v; /* seq.total_q, re-read */
        else
          p.lse[(b * p.heads_q + h) * p.seqlen_q + i] = v;
      }
    }
}
SM80_EXPORT(ATT_NAME)

#undef ATT_MMA
#undef ATT_PACK
#undef ATT_MT
#undef ATT_BM
#undef ATT_BN
#undef ATT_THREADS
#undef ATT_LD
#undef ATT_QREGS
#undef ATT_ROW
#undef ATT_NAME
#undef ATT_D
#undef ATT_BF16
