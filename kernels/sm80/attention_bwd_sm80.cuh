/*
 * attention_bwd_sm80.cuh - the body of the sm_80 attention backward main kernels,
 * included by attention_bwd_sm80.cu once per variant with BWD_NAME (the kernel), BWD_D
 * (head_dim) and BWD_BF16 (1: bf16, else f16) defined; it undefines them at the end.
 * Decomposition: attention_bwd_sm80.cu.
 */
#if BWD_BF16
#define BWD_MMA gp_nv_mma_m16n8k16_bf16
#define BWD_PACK gp_nv_pack_bf16x2
#else
#define BWD_MMA gp_nv_mma_m16n8k16_f16
#define BWD_PACK gp_nv_pack_f16x2
#endif
#define BWD_BN GP__SM80_BWD_BN(BWD_D)
#define BWD_KW GP__SM80_BWD_KW(BWD_D)
#define BWD_BMQ GP__SM80_BWD_BMQ(BWD_D)
#define BWD_THREADS GP__SM80_BWD_THREADS(BWD_D)
#define BWD_LD (BWD_D + 8)                      /* K, V, Q, dO rows in shared memory */
#define BWD_SLD (BWD_BMQ + 8)                   /* dS^T rows */
#define BWD_DPW (BWD_D / GP__SM80_BWD_NDG(BWD_D)) /* dK, dV columns of one warp */
#define BWD_MTQ (BWD_BMQ / 16)                  /* 16-row pieces of a dQ tile */
#define BWD_QCH GP__SM80_BWD_QCH(BWD_D)      /* dQ columns of one warp */
#define BWD_QPIECES (BWD_MTQ * (BWD_D / BWD_QCH)) /* warps with a dQ piece */

GP_KERNEL void __launch_bounds__(BWD_THREADS) BWD_NAME(gp__attn_bwd_params_t p) {
  GP_DYNAMIC_SHARED(uint16_t, smem);
  uint16_t *ks = smem, *vs = ks + BWD_BN * BWD_LD, *qs = vs + BWD_BN * BWD_LD;
  uint16_t *dos = qs + BWD_BMQ * BWD_LD, *dss = dos + BWD_BMQ * BWD_LD;
  float *lses = (float *)(dss + BWD_BN * BWD_SLD), *drow = lses + BWD_BMQ;
  const int tid = (int)threadIdx.x, lane = tid % 32, warp = tid / 32, g = lane / 4, t4 = lane % 4;
  const int kw = warp % BWD_KW, dg = warp / BWD_KW;     /* keys 16 kw.., dK/dV columns BWD_DPW dg.. */
  const int qm = warp % BWD_MTQ, qc = warp / BWD_MTQ;   /* dQ rows 16 qm.., columns BWD_QCH qc.. */

  const int64_t hq = p.f.heads_q, group = hq / p.f.heads_kv, nsplit = p.nsplit;
  const int64_t blk = (int64_t)blockIdx.x;
  const int64_t split = blk % nsplit, h = blk / nsplit % hq, b = blk / nsplit / hq, hk = h / group;
  const gp__attn_seq_t s = GP__ATTN_SEQUENCE(&p.f, b); /* before any barrier */
  const int64_t nkb = (s.sk + BWD_BN - 1) / BWD_BN;
  const uint16_t *qg = (const uint16_t *)p.f.q + b * p.f.q_bs + s.q0 * p.f.q_ss + h * p.f.q_hs;
  const uint16_t *kg = (const uint16_t *)p.f.k + b * p.f.k_bs + s.k0 * p.f.k_ss + hk * p.f.k_hs;
  const uint16_t *vg = (const uint16_t *)p.f.v + b * p.f.v_bs + s.k0 * p.f.v_ss + hk * p.f.v_hs;
  const uint16_t *dog = (const uint16_t *)p.d_o + b * p.f.o_bs + s.q0 * p.f.o_ss + h * p.f.o_hs;
  const int64_t lse0 = p.f.cu_q ? h * s.total_q + s.q0 : (b * hq + h) * p.f.seqlen_q;
  float *dq_acc = p.ws_dq + ((p.deterministic ? split : 0) * p.rows_q + s.wq) * hq * BWD_D + h * BWD_D;
  const float scale_log2 = p.f.scale * 1.4426950408889634f;
  const int64_t wl = p.f.window_left, wr = p.f.window_right;
  gp_nv_async_t as;
  gp_nv_async_init(&as);

  for (int64_t kblk = split; kblk < nkb; kblk += nsplit) { /* uniform over the block */
    const int64_t j0 = kblk * BWD_BN, nk = s.sk - j0 < BWD_BN ? s.sk - j0 : BWD_BN;
    int64_t ilo, ihi;
    gp__attn_query_range(j0, j0 + nk - 1, s.sq, s.sk, wl, wr, &ilo, &ihi);
    /* The queries that see this thread's two key rows (g, g + 8), relative to ilo, in 32
     * bits (rows below 2^31); an empty range for keys past the end. */
    int qlo[2], qhi[2];
    ATT_UNROLL
    for (int hf = 0; hf < 2; hf++) {
      const int64_t key = j0 + 16 * kw + g + 8 * hf;
      int64_t a = 1, z = 0;
      if (key < s.sk) gp__attn_query_range(key, key, s.sq, s.sk, wl, wr, &a, &z);
      qlo[hf] = (int)(a - ilo < 0 ? 0 : a - ilo);
      qhi[hf] = a > z ? -1 : (int)(z - ilo);
    }
    float dk[BWD_DPW / 8][4], dv[BWD_DPW / 8][4];
    ATT_UNROLL for (int n = 0; n < BWD_DPW / 8; n++)
      ATT_UNROLL for (int e = 0; e < 4; e++) dk[n][e] = dv[n][e] = 0.0f;

    __syncthreads(); /* the previous key block's K and V are no longer read */
    att_stage(&as, ks, kg + j0 * p.f.k_ss, p.f.k_ss, BWD_BN, nk, BWD_D, tid, BWD_THREADS);
    att_stage(&as, vs, vg + j0 * p.f.v_ss, p.f.v_ss, BWD_BN, nk, BWD_D, tid, BWD_THREADS);
    gp_nv_cp_async_commit(&as);

    for (int64_t i0 = ilo; i0 <= ihi; i0 += BWD_BMQ) {
      const int64_t rows = ihi - i0 + 1 < BWD_BMQ ? ihi - i0 + 1 : BWD_BMQ;
      const int rel = (int)(i0 - ilo);
      __syncthreads(); /* the previous tile's Q, dO, dS^T, lse and D are no longer read */
      att_stage(&as, qs, qg + i0 * p.f.q_ss, p.f.q_ss, BWD_BMQ, rows, BWD_D, tid, BWD_THREADS);
      att_stage(&as, dos, dog + i0 * p.f.o_ss, p.f.o_ss, BWD_BMQ, rows, BWD_D, tid, BWD_THREADS);
      gp_nv_cp_async_commit(&as);
      for (int r = tid; r < BWD_BMQ; r += BWD_THREADS) {
        float l = INFINITY, dd = 0.0f; /* rows outside the tile: P = 0 */
        if (r < rows) {
          const float x = p.f.lse[lse0 + i0 + r];
          l = x == -INFINITY ? INFINITY : x * 1.4426950408889634f; /* no visible key: P = 0 */
          dd = p.ws_d[(s.wq + i0 + r) * hq + h];
        }
        lses[r] = l;
        drow[r] = dd;
      }
      gp_nv_cp_async_wait(&as, 0);
      __syncthreads(); /* K, V, Q, dO, lse and D in place */

      /* S^T = K Q^T and dP^T = V dO^T for the warp's 16 keys and every row of the tile. */
      float st[BWD_BMQ / 8][4], dpt[BWD_BMQ / 8][4];
      ATT_UNROLL for (int n = 0; n < BWD_BMQ / 8; n++)
        ATT_UNROLL for (int e = 0; e < 4; e++) st[n][e] = dpt[n][e] = 0.0f;
      ATT_ROLLED
      for (int kd = 0; kd < BWD_D / 16; kd++) {
        uint32_t ka[4], va[4];
        const int a_off = (16 * kw + lane % 8 + 8 * (lane / 8 % 2)) * BWD_LD + 16 * kd + 8 * (lane / 16);
        gp_nv_ldmatrix_x4(ka, ks + a_off);
        gp_nv_ldmatrix_x4(va, vs + a_off);
        ATT_UNROLL
        for (int qp = 0; qp < BWD_BMQ / 16; qp++) {
          const int b_off = (16 * qp + lane % 8 + 8 * (lane / 16)) * BWD_LD + 16 * kd + 8 * (lane / 8 % 2);
          uint32_t r[4];
          gp_nv_ldmatrix_x4(r, qs + b_off);
          const uint32_t q0[2] = {r[0], r[1]}, q1[2] = {r[2], r[3]};
          BWD_MMA(st[2 * qp], ka, q0);
          BWD_MMA(st[2 * qp + 1], ka, q1);
          gp_nv_ldmatrix_x4(r, dos + b_off);
          const uint32_t o0[2] = {r[0], r[1]}, o1[2] = {r[2], r[3]};
          BWD_MMA(dpt[2 * qp], va, o0);
          BWD_MMA(dpt[2 * qp + 1], va, o1);
        }
      }

      /* P^T and dS^T = P^T (dP^T - D), masked; then as A fragments in the input type. */
      uint32_t pa[BWD_BMQ / 16][4], dsa[BWD_BMQ / 16][4];
      ATT_UNROLL
      for (int nt = 0; nt < BWD_BMQ / 8; nt++)
        ATT_UNROLL
        for (int e = 0; e < 4; e++) {
          const int col = 8 * nt + 2 * t4 + (e & 1), qr = rel + col; /* query ilo + qr */
          const bool vis = qr >= qlo[e >> 1] && qr <= qhi[e >> 1];
          const float pr = vis ? exp2f(st[nt][e] * scale_log2 - lses[col]) : 0.0f;
          st[nt][e] = pr;
          dpt[nt][e] = pr * (dpt[nt][e] - drow[col]);
        }
      ATT_UNROLL
      for (int kq = 0; kq < BWD_BMQ / 16; kq++) {
        pa[kq][0] = BWD_PACK(st[2 * kq][0], st[2 * kq][1]);
        pa[kq][1] = BWD_PACK(st[2 * kq][2], st[2 * kq][3]);
        pa[kq][2] = BWD_PACK(st[2 * kq + 1][0], st[2 * kq + 1][1]);
        pa[kq][3] = BWD_PACK(st[2 * kq + 1][2], st[2 * kq + 1][3]);
        dsa[kq][0] = BWD_PACK(dpt[2 * kq][0], dpt[2 * kq][1]);
        dsa[kq][1] = BWD_PACK(dpt[2 * kq][2], dpt[2 * kq][3]);
        dsa[kq][2] = BWD_PACK(dpt[2 * kq + 1][0], dpt[2 * kq + 1][1]);
        dsa[kq][3] = BWD_PACK(dpt[2 * kq + 1][2], dpt[2 * kq + 1][3]);
      }

      /* dV += P^T dO, dK += dS^T Q over the warp's columns. */
      ATT_UNROLL
      for (int kq = 0; kq < BWD_BMQ / 16; kq++)
        ATT_UNROLL
        for (int dn = 0; dn < BWD_DPW / 16; dn++) {
          const int b_off = (16 * kq + lane % 8 + 8 * (lane / 8 % 2)) * BWD_LD + BWD_DPW * dg + 16 * dn + 8 * (lane / 16);
          uint32_t r[4];
          gp_nv_ldmatrix_x4_trans(r, dos + b_off);
          const uint32_t o0[2] = {r[0], r[1]}, o1[2] = {r[2], r[3]};
          BWD_MMA(dv[2 * dn], pa[kq], o0);
          BWD_MMA(dv[2 * dn + 1], pa[kq], o1);
          gp_nv_ldmatrix_x4_trans(r, qs + b_off);
          const uint32_t q0[2] = {r[0], r[1]}, q1[2] = {r[2], r[3]};
          BWD_MMA(dk[2 * dn], dsa[kq], q0);
          BWD_MMA(dk[2 * dn + 1], dsa[kq], q1);
        }

      /* dS^T to shared memory (the warps of the first column group hold every key). */
      if (dg == 0) {
        ATT_UNROLL
        for (int kq = 0; kq < BWD_BMQ / 16; kq++) {
          uint16_t *row0 = dss + (16 * kw + g) * BWD_SLD + 16 * kq + 2 * t4, *row8 = row0 + 8 * BWD_SLD;
          *(uint32_t *)row0 = dsa[kq][0];
          *(uint32_t *)row8 = dsa[kq][1];
          *(uint32_t *)(row0 + 8) = dsa[kq][2];
          *(uint32_t *)(row8 + 8) = dsa[kq][3];
        }
      }
      __syncthreads(); /* dS^T complete */

      /* dQ += dS K: this warp's 16 rows x BWD_QCH columns, added to the f32 accumulator. */
      if (warp >= BWD_QPIECES) continue; /* a whole warp; the next barrier is the loop's */
      float dq[BWD_QCH / 8][4];
      ATT_UNROLL for (int n = 0; n < BWD_QCH / 8; n++)
        ATT_UNROLL for (int e = 0; e < 4; e++) dq[n][e] = 0.0f;
      ATT_UNROLL
      for (int kk = 0; kk < BWD_BN / 16; kk++) {
        uint32_t a[4]; /* dS, rows 16 qm.., keys 16 kk..: the transposes of dS^T's matrices */
        gp_nv_ldmatrix_x4_trans(a, dss + (16 * kk + lane % 8 + 8 * (lane / 16)) * BWD_SLD + 16 * qm + 8 * (lane / 8 % 2));
        ATT_UNROLL
        for (int dn = 0; dn < BWD_QCH / 16; dn++) {
          uint32_t r[4];
          gp_nv_ldmatrix_x4_trans(r, ks + (16 * kk + lane % 8 + 8 * (lane / 8 % 2)) * BWD_LD + BWD_QCH * qc + 16 * dn + 8 * (lane / 16));
          const uint32_t k0[2] = {r[0], r[1]}, k1[2] = {r[2], r[3]};
          BWD_MMA(dq[2 * dn], a, k0);
          BWD_MMA(dq[2 * dn + 1], a, k1);
        }
      }
      ATT_UNROLL
      for (int n = 0; n < BWD_QCH / 8; n++)
        ATT_UNROLL
        for (int e = 0; e < 4; e++) {
          const int r = 16 * qm + g + 8 * (e >> 1);
          if (r < rows)
            atomicAdd(dq_acc + (i0 + r) * hq * BWD_D + BWD_QCH * qc + 8 * n + 2 * t4 + (e & 1), dq[n][e]);
        }
    }
    gp_nv_cp_async_wait(&as, 0); /* K and V of a key block no query row sees */

    /* dK (scaled) and dV of the warp's keys and columns. */
    ATT_UNROLL
    for (int n = 0; n < BWD_DPW / 8; n++)
      ATT_UNROLL
      for (int hf = 0; hf < 2; hf++) {
        const int64_t key = 16 * kw + g + 8 * hf;
        if (key >= nk) continue;
        const int64_t c = BWD_DPW * dg + 8 * n + 2 * t4;
        if (p.ws_dk) {
          float *wk = p.ws_dk + ((s.wk + j0 + key) * hq + h) * BWD_D + c;
          float *wv = p.ws_dv + ((s.wk + j0 + key) * hq + h) * BWD_D + c;
          wk[0] = dk[n][2 * hf], wk[1] = dk[n][2 * hf + 1];
          wv[0] = dv[n][2 * hf], wv[1] = dv[n][2 * hf + 1];
        } else {
          att_store2(p.dk, b * p.f.k_bs + (s.k0 + j0 + key) * p.f.k_ss + hk * p.f.k_hs + c, BWD_BF16,
                     dk[n][2 * hf] * p.f.scale, dk[n][2 * hf + 1] * p.f.scale);
          att_store2(p.dv, b * p.f.v_bs + (s.k0 + j0 + key) * p.f.v_ss + hk * p.f.v_hs + c, BWD_BF16,
                     dv[n][2 * hf], dv[n][2 * hf + 1]);
        }
      }
  }
}
SM80_EXPORT(BWD_NAME)

#undef BWD_MMA
#undef BWD_PACK
#undef BWD_BN
#undef BWD_KW
#undef BWD_BMQ
#undef BWD_THREADS
#undef BWD_LD
#undef BWD_SLD
#undef BWD_DPW
#undef BWD_MTQ
#undef BWD_QCH
#undef BWD_QPIECES
#undef BWD_NAME
#undef BWD_D
#undef BWD_BF16
