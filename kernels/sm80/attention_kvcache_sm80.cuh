/*
 * attention_kvcache_sm80.cuh - the body of the sm_80 kvcache attention kernels, included by
 * attention_kvcache_sm80.cu once per variant with KVA_NAME (the kernel), KVA_D (head_dim)
 * and KVA_BF16 (1: bf16, else f16) defined; it undefines them at the end. Decomposition:
 * attention_kvcache_sm80.cu.
 */
#if KVA_BF16
#define KVA_MMA gp_nv_mma_m16n8k16_bf16
#define KVA_PACK gp_nv_pack_bf16x2
#else
#define KVA_MMA gp_nv_mma_m16n8k16_f16
#define KVA_PACK gp_nv_pack_f16x2
#endif
#define KVA_BM GP__SM80_KV_BM(KVA_D)
#define KVA_BN GP__SM80_KV_BN(KVA_D)
#define KVA_THREADS GP__SM80_KV_THREADS(KVA_D)
#define KVA_LD (KVA_D + 8)

GP_KERNEL void __launch_bounds__(KVA_THREADS) KVA_NAME(gp__attn_kv_params_t p) {
  GP_DYNAMIC_SHARED(uint16_t, smem);
  uint16_t *qs = smem, *ks = qs + KVA_BM * KVA_LD, *vs = ks + KVA_BN * KVA_LD;
  const int tid = (int)threadIdx.x, lane = tid % 32, warp = tid / 32, g = lane / 4, t4 = lane % 4;

  /* (row tile, key/value head, split, sequence), tile fastest */
  const int64_t group = p.heads_q / p.heads_kv, nrows = p.seqlen_q * group;
  const int64_t tiles = (nrows + KVA_BM - 1) / KVA_BM;
  int64_t blk = (int64_t)blockIdx.x;
  const int64_t tile = blk % tiles;
  blk /= tiles;
  const int64_t hk = blk % p.heads_kv;
  blk /= p.heads_kv;
  const int64_t split = blk % p.nsplit, b = blk / p.nsplit;
  const int64_t r0 = tile * KVA_BM;
  const int rows = (int)(nrows - r0 < KVA_BM ? nrows - r0 : KVA_BM);

  /* The keys the block reads, [lo, hi]: its split's that its rows can see. Checked before
   * any barrier (uniform over the block). */
  const int64_t sq = p.seqlen_q, sk = GP__ATTN_KV_SEQLEN(&p, b);
  int64_t k0, k1, lo, hi, lo_last, hi_first;
  gp__attn_kv_split(sk, p.nsplit, split, &k0, &k1);
  gp__attn_key_range(r0 / group, sq, sk, p.window_left, p.window_right, &lo, &hi_first);
  gp__attn_key_range((r0 + rows - 1) / group, sq, sk, p.window_left, p.window_right, &lo_last, &hi);
  if (lo < k0) lo = k0;
  if (hi > k1 - 1) hi = k1 - 1;
  if (lo_last < lo) lo_last = lo;
  if (hi_first > hi) hi_first = hi;
  GP__ATTN_KV_PAGES(&p, b, lo, hi);

  /* This thread's rows (half hf: row g + 8 hf of the warp's tile): their own bands cut to
   * [lo, hi]. Keys are below 2^31, so 32 bits hold them, an empty band as lo > hi. */
  int row_lo[2], row_hi[2];
  KVA_UNROLL for (int hf = 0; hf < 2; hf++) {
    int64_t a, z;
    gp__attn_key_range((r0 + 16 * warp + g + 8 * hf) / group, sq, sk, p.window_left, p.window_right, &a, &z);
    row_lo[hf] = (int)(a < lo ? lo : a);
    row_hi[hf] = (int)(z > hi ? hi : z < lo - 1 ? lo - 1 : z);
  }
  const bool active = 16 * warp < rows; /* warp-uniform: the warp's tile holds a row */

  const uint16_t *kc = (const uint16_t *)p.k_cache + hk * p.kc_hs;
  const uint16_t *vc = (const uint16_t *)p.v_cache + hk * p.vc_hs;
  gp_nv_async_t as;
  gp_nv_async_init(&as);
  kva_stage_q(&as, qs, &p, b, hk, group, r0, rows, KVA_BM, KVA_D, tid, KVA_THREADS);
  if (hi >= lo) kva_stage_kv(&as, ks, kc, &p, b, p.kc_bs, p.kc_ss, lo, hi, KVA_BN, KVA_D, tid, KVA_THREADS);
  gp_nv_cp_async_commit(&as);

  uint32_t qf[KVA_D / 16][4];
  gp_nv_cp_async_wait(&as, 0);
  __syncthreads();
  KVA_UNROLL for (int kd = 0; kd < KVA_D / 16; kd++)
    gp_nv_ldmatrix_x4(qf[kd], qs + (16 * warp + lane % 8 + 8 * (lane / 8 % 2)) * KVA_LD + 16 * kd + 8 * (lane / 16));

  const float scale_log2 = p.scale * 1.4426950408889634f;
  float o[KVA_D / 8][4], m[2], l[2];
  KVA_UNROLL for (int hf = 0; hf < 2; hf++) m[hf] = -INFINITY, l[hf] = 0.0f;
  KVA_UNROLL for (int dt = 0; dt < KVA_D / 8; dt++)
    KVA_UNROLL for (int e = 0; e < 4; e++) o[dt][e] = 0.0f;

  for (int64_t j0 = lo; j0 <= hi; j0 += KVA_BN) {
    gp_nv_cp_async_wait(&as, 0);
    __syncthreads(); /* K_j (and Q) landed; no warp still reads V_{j-1} */
    kva_stage_kv(&as, vs, vc, &p, b, p.vc_bs, p.vc_ss, j0, hi, KVA_BN, KVA_D, tid, KVA_THREADS);
    gp_nv_cp_async_commit(&as);

    uint32_t pa[KVA_BN / 16][4];
    if (active) {
      /* S = Q K_j^T */
      float s[KVA_BN / 8][4];
      KVA_UNROLL for (int nt = 0; nt < KVA_BN / 8; nt++)
        KVA_UNROLL for (int e = 0; e < 4; e++) s[nt][e] = 0.0f;
      KVA_UNROLL
      for (int kd = 0; kd < KVA_D / 16; kd++)
        KVA_UNROLL
        for (int np = 0; np < KVA_BN / 16; np++) {
          uint32_t r[4]; /* keys 16 np .. + 7, then + 8 .. + 15; dims 16 kd .. + 15 */
          gp_nv_ldmatrix_x4(r, ks + (16 * np + lane % 8 + 8 * (lane / 16)) * KVA_LD + 16 * kd + 8 * (lane / 8 % 2));
          const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
          KVA_MMA(s[2 * np], qf[kd], b0);
          KVA_MMA(s[2 * np + 1], qf[kd], b1);
        }

      /* Mask (tiles the bands or the block's end cut), online softmax (base 2), P as A
       * fragments. */
      const bool full = j0 >= lo_last && j0 + KVA_BN - 1 <= hi_first;
      KVA_UNROLL
      for (int hf = 0; hf < 2; hf++) {
        float mx = -INFINITY;
        KVA_UNROLL
        for (int nt = 0; nt < KVA_BN / 8; nt++)
          KVA_UNROLL
          for (int e = 2 * hf; e < 2 * hf + 2; e++) {
            float v = s[nt][e] * scale_log2;
            if (!full) {
              const int64_t key = j0 + 8 * nt + 2 * t4 + (e & 1);
              if (key < row_lo[hf] || key > row_hi[hf]) v = -INFINITY;
            }
            s[nt][e] = v;
            mx = fmaxf(mx, v);
          }
        mx = fmaxf(mx, gp_shfl_xor(mx, 1));
        mx = fmaxf(mx, gp_shfl_xor(mx, 2));
        const float m_new = fmaxf(m[hf], mx);
        const float m_use = m_new == -INFINITY ? 0.0f : m_new; /* no key yet: P stays 0 */
        const float corr = exp2f(m[hf] - m_use);
        m[hf] = m_new;
        float sum = 0.0f;
        KVA_UNROLL
        for (int nt = 0; nt < KVA_BN / 8; nt++)
          KVA_UNROLL
          for (int e = 2 * hf; e < 2 * hf + 2; e++) {
            const float pr = exp2f(s[nt][e] - m_use);
            s[nt][e] = pr;
            sum += pr;
          }
        l[hf] = l[hf] * corr + sum;
        KVA_UNROLL
        for (int dt = 0; dt < KVA_D / 8; dt++) {
          o[dt][2 * hf] *= corr;
          o[dt][2 * hf + 1] *= corr;
        }
      }
      KVA_UNROLL
      for (int kb = 0; kb < KVA_BN / 16; kb++) {
        pa[kb][0] = KVA_PACK(s[2 * kb][0], s[2 * kb][1]);
        pa[kb][1] = KVA_PACK(s[2 * kb][2], s[2 * kb][3]);
        pa[kb][2] = KVA_PACK(s[2 * kb + 1][0], s[2 * kb + 1][1]);
        pa[kb][3] = KVA_PACK(s[2 * kb + 1][2], s[2 * kb + 1][3]);
      }
    }

    gp_nv_cp_async_wait(&as, 0);
    __syncthreads(); /* V_j landed; no warp still reads K_j */
    if (j0 + KVA_BN <= hi)
      kva_stage_kv(&as, ks, kc, &p, b, p.kc_bs, p.kc_ss, j0 + KVA_BN, hi, KVA_BN, KVA_D, tid, KVA_THREADS);
    gp_nv_cp_async_commit(&as);

    /* O += P V_j */
    if (active)
      KVA_UNROLL
      for (int kb = 0; kb < KVA_BN / 16; kb++)
        KVA_UNROLL
        for (int dn = 0; dn < KVA_D / 16; dn++) {
          uint32_t r[4]; /* keys 16 kb .. + 15; dims 16 dn .. + 7, then + 8 .. + 15 */
          gp_nv_ldmatrix_x4_trans(r, vs + (16 * kb + lane % 8 + 8 * (lane / 8 % 2)) * KVA_LD + 16 * dn + 8 * (lane / 16));
          const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
          KVA_MMA(o[2 * dn], pa[kb], b0);
          KVA_MMA(o[2 * dn + 1], pa[kb], b1);
        }
  }
  gp_nv_cp_async_wait(&as, 0);

  /* O / l and lse (the row sums reduced over the 4 lanes of a row): o and lse with one
   * split, else the partials in the workspace (zeros and -inf where no key was seen). */
  KVA_UNROLL
  for (int hf = 0; hf < 2; hf++) {
    float sum = l[hf];
    sum += gp_shfl_xor(sum, 1);
    sum += gp_shfl_xor(sum, 2);
    const int r = 16 * warp + g + 8 * hf;
    if (r >= rows) continue;
    const int64_t flat = r0 + r, i = flat / group, h = hk * group + flat % group;
    const int64_t row = (b * p.heads_q + h) * sq + i; /* lse's [batch, heads_q, seqlen_q] */
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    const float lse = sum > 0.0f ? m[hf] * 0.69314718055994531f + logf(sum) : -INFINITY;
    if (p.nsplit == 1) {
      const int64_t off = b * p.o_bs + i * p.o_ss + h * p.o_hs + 2 * t4;
      KVA_UNROLL
      for (int dt = 0; dt < KVA_D / 8; dt++)
        att_store2(p.o, off + 8 * dt, KVA_BF16, o[dt][2 * hf] * inv, o[dt][2 * hf + 1] * inv);
      if (p.lse && t4 == 0) p.lse[row] = lse;
    } else {
      const int64_t prow = split * p.batch * p.heads_q * sq + row;
      float *wo = p.ws_o + prow * KVA_D + 2 * t4;
      KVA_UNROLL
      for (int dt = 0; dt < KVA_D / 8; dt++) {
        wo[8 * dt] = o[dt][2 * hf] * inv;
        wo[8 * dt + 1] = o[dt][2 * hf + 1] * inv;
      }
      if (t4 == 0) p.ws_lse[prow] = lse;
    }
  }
}
SM80_EXPORT(KVA_NAME)

#undef KVA_MMA
#undef KVA_PACK
#undef KVA_BM
#undef KVA_BN
#undef KVA_THREADS
#undef KVA_LD
#undef KVA_NAME
#undef KVA_D
#undef KVA_BF16
