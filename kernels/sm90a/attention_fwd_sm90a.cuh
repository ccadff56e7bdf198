/*
 * attention_fwd_sm90a.cuh - the body of one sm_90a attention forward kernel, included by
 * attention_fwd_sm90a.cu with ATT_NAME, ATT_D (64 or 128) and ATT_BF16 defined; undefines
 * them at the end. Decomposition: attention_fwd_sm90a.cu.
 *
 * Parameters besides p: the TMA maps of K and V, 3D (head_dim, rows, planes); kv_bh 0:
 * rows are the keys of all sequences one after another (plane = key head), 1: rows are
 * one sequence's keys (plane = sequence * heads_kv + key head).
 */
#define BN GP__SM90_ATTN_BN(ATT_D)
/* The softmax of tile j overlapped with P V of tile j - 1 (below) at head_dim 128 only
 * (64 keys a step): at head_dim 64 (128 keys a step, 64 S accumulators) it spilled 48
 * bytes under the 168 registers of 384 threads (nvcc 13.0), so there each P V is issued
 * and waited for in its own step. */
#define ATT_OVERLAP (ATT_D == 128)
/* O += P V, P from this warpgroup's shared tile, V from stage memory v; one group. */
#define AT90_PV(v)                                                                                                  \
  do {                                                                                                              \
    AT90_UNROLL for (int kk = 0; kk < BN / 16; kk++) {                                                              \
      const uint64_t da = gp_nv_wgmma_desc(ps + (kk / 4) * 64 * 128 + (kk % 4) * 32, 16, 1024, GP_NV_SWIZZLE_128B); \
      const uint64_t db = gp_nv_wgmma_desc((v) + kk * 16 * 128, BN * 128, 1024, GP_NV_SWIZZLE_128B);                \
      gp_nv_wgmma(&wst, o, ATT_D, da, db, 1, 0, 1, ATT_BF16);                                                       \
    }                                                                                                               \
    gp_nv_wgmma_commit(&wst);                                                                                       \
  } while (0)
GP_KERNEL void __launch_bounds__(GP__SM90_ATTN_THREADS, 1)
    ATT_NAME(const __grid_constant__ gp__attn_params_t p, const __grid_constant__ gp_nv_tensor_map_t map_k,
             const __grid_constant__ gp_nv_tensor_map_t map_v, int kv_bh) {
  GP_DYNAMIC_SHARED(unsigned char, raw);
  unsigned char *base = at90_align1024(raw);
  unsigned char *stage0 = base;
  unsigned char *qs0 = base + GP__SM90_ATTN_STAGES * 2 * GP__SM90_ATTN_KV_BYTES(ATT_D);
  unsigned char *ps0 = qs0 + 2 * GP__SM90_ATTN_Q_BYTES(ATT_D);
  uint64_t *full = (uint64_t *)(ps0 + 2 * GP__SM90_ATTN_P_BYTES(ATT_D)), *empty = full + GP__SM90_ATTN_STAGES;
  uint64_t *wgbar = empty + GP__SM90_ATTN_STAGES;
  const int tid = (int)threadIdx.x, wg = tid / 128, lane = tid % 32;

  const int64_t tiles = (p.seqlen_q + GP__SM90_ATTN_BM - 1) / GP__SM90_ATTN_BM, blk = (int64_t)blockIdx.x;
  const int64_t tile = blk % tiles, h = blk / tiles % p.heads_q, b = blk / tiles / p.heads_q;
  const int64_t hk = h / (p.heads_q / p.heads_kv);
  const gp__attn_seq_t seq = GP__ATTN_SEQUENCE(&p, b); /* before any barrier */
  const int64_t sq = seq.sq, sk = seq.sk, q_row0 = seq.q0;
  /* TMA rows: the sequence's packed rows (varlen), or with kv_bh 0 the keys of all
   * sequences one after another. */
  const int64_t k_row0 = p.cu_q || kv_bh ? seq.k0 : b * p.seqlen_k;
  const int64_t i0 = tile * GP__SM90_ATTN_BM;
  if (i0 >= sq) return; /* the whole block, before any barrier */
  const int64_t rows = sq - i0 < GP__SM90_ATTN_BM ? sq - i0 : GP__SM90_ATTN_BM;
  const int32_t plane = (int32_t)(kv_bh ? b * p.heads_kv + hk : hk);
  int64_t lo, hi, lo_last, hi_first;
  gp__attn_key_range(i0, sq, sk, p.window_left, p.window_right, &lo, &hi_first);
  gp__attn_key_range(i0 + rows - 1, sq, sk, p.window_left, p.window_right, &lo_last, &hi);
  (void)lo_last;
  (void)hi_first;

  if (tid == 0) {
    for (int s = 0; s < GP__SM90_ATTN_STAGES; s++) {
      gp_nv_mbarrier_init(&full[s], 1);
      gp_nv_mbarrier_init(&empty[s], 8); /* lane 0 of each consumer warp */
    }
    gp_nv_mbarrier_init(&wgbar[0], 4);
    gp_nv_mbarrier_init(&wgbar[1], 4);
    gp_nv_fence_mbarrier_init();
  }
  __syncthreads();

  if (wg == 0) { /* ---- producer ---- */
    gp_nv_setmaxnreg_dec(40);
    if (tid >= 32) return;
    int it = 0;
    for (int64_t j0 = lo; j0 <= hi; j0 += BN, it++) {
      const int s = it % GP__SM90_ATTN_STAGES;
      gp_nv_mbarrier_wait(&empty[s], ((unsigned)(it / GP__SM90_ATTN_STAGES) & 1u) ^ 1u);
      if (lane == 0) {
        unsigned char *ks = stage0 + s * 2 * GP__SM90_ATTN_KV_BYTES(ATT_D), *vs = ks + GP__SM90_ATTN_KV_BYTES(ATT_D);
        gp_nv_mbarrier_arrive_expect_tx(&full[s], 2 * GP__SM90_ATTN_KV_BYTES(ATT_D));
        for (int dh = 0; dh < ATT_D / 64; dh++) {
          gp_nv_tma_load_3d(ks + dh * BN * 128, &map_k, 64 * dh, (int32_t)(k_row0 + j0), plane, &full[s]);
          gp_nv_tma_load_3d(vs + dh * BN * 128, &map_v, 64 * dh, (int32_t)(k_row0 + j0), plane, &full[s]);
        }
      }
    }
    return;
  }

  /* ---- consumers ---- */
  gp_nv_setmaxnreg_inc(232);
  const int cw = wg - 1, w4 = (tid / 32) % 4, g = lane / 4, q = lane % 4, ctid = tid - 128 * wg;
  unsigned char *qs = qs0 + cw * GP__SM90_ATTN_Q_BYTES(ATT_D), *ps = ps0 + cw * GP__SM90_ATTN_P_BYTES(ATT_D);
  unsigned wph = 0;

  /* Q rows 64 cw .. of the tile, 16 bytes at a time; rows past the sequence are zero. */
  const uint16_t *qg = (const uint16_t *)p.q + b * p.q_bs + (q_row0 + i0) * p.q_ss + h * p.q_hs;
  for (int c = ctid; c < 64 * ATT_D / 8; c += 128) {
    const int r = c / (ATT_D / 8), col = c % (ATT_D / 8) * 8, row = 64 * cw + r;
    uint4 v;
    v.x = v.y = v.z = v.w = 0u;
    if (row < rows) v = *(const uint4 *)(qg + row * p.q_ss + col);
    *(uint4 *)(qs + at90_kmajor((uint32_t)r, (uint32_t)col, 64)) = v;
  }
  gp_nv_fence_proxy_async();
  at90_wg_sync(&wgbar[cw], &wph);

  /* This thread's two rows (r = 16 w4 + g + 8 hf of the warpgroup) and their bands. */
  int64_t row_lo[2], row_hi[2];
  for (int hf = 0; hf < 2; hf++)
    gp__attn_key_range(i0 + 64 * cw + 16 * w4 + g + 8 * hf, sq, sk, p.window_left, p.window_right, &row_lo[hf],
                       &row_hi[hf]);

  const float scale_log2 = p.scale * 1.4426950408889634f;
  float o[ATT_D / 2], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  AT90_UNROLL for (int i = 0; i < ATT_D / 2; i++) o[i] = 0.0f;
  gp_nv_wgmma_state_t wst;
  gp_nv_wgmma_init(&wst);
  /* Intra-warpgroup pipelining (FlashAttention-3, section 3.2). Step it >= 1 issues S =
   * Q K^T of key tile it, then O += P V of tile it - 1 (its P already in shared memory),
   * waits for the older group only (wait_group 1: S), and runs the mask and softmax of
   * tile it while that P V is in flight; wait_group 0 then frees the stage of tile it - 1
   * (its K was read by a completed wgmma already, its V now), O is rescaled and P of tile
   * it written. Tile 0's S is the prologue, the last tile's P V the epilogue; the loop is
   * entered after the prologue's S so that no wgmma sits behind a branch of its own
   * (ptxas would serialize them all). P lives in shared memory, so the overlap needs no
   * second S accumulator, but keeping O in flight through the softmax costs registers:
   * head_dim 64 (ATT_OVERLAP 0) issues and waits for each P V right after its P. */
  float sacc[BN / 2];
  int it = 0, s = 0, s_prev = 0;
  int64_t j0 = lo;
  unsigned char *ks = stage0, *vs = ks + GP__SM90_ATTN_KV_BYTES(ATT_D), *vp = vs;
  if (lo <= hi) {
    gp_nv_mbarrier_wait(&full[0], 0u);
    /* S = Q K^T of tile 0: A = Q (64 x D, K-major), B = K (keys x D, K-major) */
    gp_nv_wgmma_fence(&wst);
    AT90_UNROLL for (int kk = 0; kk < ATT_D / 16; kk++) {
      const uint64_t da = gp_nv_wgmma_desc(qs + (kk / 4) * 64 * 128 + (kk % 4) * 32, 16, 1024, GP_NV_SWIZZLE_128B);
      const uint64_t db = gp_nv_wgmma_desc(ks + (kk / 4) * BN * 128 + (kk % 4) * 32, 16, 1024, GP_NV_SWIZZLE_128B);
      gp_nv_wgmma(&wst, sacc, BN, da, db, kk > 0, 0, 0, ATT_BF16);
    }
    gp_nv_wgmma_commit(&wst);
    gp_nv_wgmma_wait(&wst, 0);
    for (;;) {
      /* Mask, online softmax (base 2), in registers; O is not touched (P V may be in
       * flight). Register i of S: row half (i / 2) % 2, key j0 + 8 (i / 4) + 2 q + i % 2. */
      float corr[2];
      AT90_UNROLL for (int hf = 0; hf < 2; hf++) {
        float mx = -INFINITY;
        AT90_UNROLL for (int i = 0; i < BN / 2; i++) {
          if ((i / 2) % 2 != hf) continue;
          const int64_t key = j0 + 8 * (i / 4) + 2 * q + i % 2;
          float v = sacc[i] * scale_log2;
          if (key < row_lo[hf] || key > row_hi[hf]) v = -INFINITY;
          sacc[i] = v;
          mx = fmaxf(mx, v);
        }
        mx = fmaxf(mx, gp_shfl_xor(mx, 1));
        mx = fmaxf(mx, gp_shfl_xor(mx, 2));
        const float m_new = fmaxf(m[hf], mx);
        const float m_use = m_new == -INFINITY ? 0.0f : m_new; /* no key yet: P stays 0 */
        corr[hf] = exp2f(m[hf] - m_use);
        m[hf] = m_new;
        float sum = 0.0f;
        AT90_UNROLL for (int i = 0; i < BN / 2; i++) {
          if ((i / 2) % 2 != hf) continue;
          const float pr = exp2f(sacc[i] - m_use);
          sacc[i] = pr;
          sum += pr;
        }
        l[hf] = l[hf] * corr[hf] + sum;
      }

      gp_nv_wgmma_wait(&wst, 0); /* P V of tile it - 1 complete: its stage and P are free */
      if (ATT_OVERLAP && it > 0) {
        gp_syncwarp();
        if (lane == 0) gp_nv_mbarrier_arrive(&empty[s_prev]);
      }
      AT90_UNROLL for (int i = 0; i < ATT_D / 2; i++) o[i] *= corr[(i / 2) % 2];
      AT90_UNROLL for (int i = 0; i < BN / 2; i += 2) {
        const uint32_t r = (uint32_t)(16 * w4 + g + 8 * ((i / 2) % 2)), col = (uint32_t)(8 * (i / 4) + 2 * q);
        const uint32_t w = ATT_BF16 ? gp_nv_pack_bf16x2(sacc[i], sacc[i + 1]) : gp_nv_pack_f16x2(sacc[i], sacc[i + 1]);
        *(uint32_t *)(ps + at90_kmajor(r, col, 64)) = w;
      }
      /* V rows past the sequence: zero (both warpgroups write the same zeros) */
      if (j0 + BN > sk) {
        const int first = (int)(sk - j0 > 0 ? sk - j0 : 0);
        for (int c = ctid; c < (BN - first) * (ATT_D / 8); c += 128) {
          const int r = first + c / (ATT_D / 8), col = c % (ATT_D / 8) * 8;
          uint4 z;
          z.x = z.y = z.z = z.w = 0u;
          *(uint4 *)(vs + at90_kmajor((uint32_t)r, (uint32_t)col, BN)) = z;
        }
      }
      gp_nv_fence_proxy_async();
      at90_wg_sync(&wgbar[cw], &wph); /* all of P (and the zeroed rows) written */
      if (!ATT_OVERLAP) { /* O += P V of tile it now, and its stage freed */
        gp_nv_wgmma_fence(&wst);
        AT90_PV(vs);
        gp_nv_wgmma_wait(&wst, 0);
        gp_syncwarp();
        if (lane == 0) gp_nv_mbarrier_arrive(&empty[s]);
      }

      s_prev = s;
      vp = vs;
      it++;
      j0 += BN;
      if (j0 > hi) break;
      s = it % GP__SM90_ATTN_STAGES;
      gp_nv_mbarrier_wait(&full[s], (unsigned)(it / GP__SM90_ATTN_STAGES) & 1u);
      ks = stage0 + s * 2 * GP__SM90_ATTN_KV_BYTES(ATT_D);
      vs = ks + GP__SM90_ATTN_KV_BYTES(ATT_D);

      /* S = Q K^T of tile it, then O += P V of tile it - 1: A = P (64 x keys, K-major),
       * B = V (keys x D, N-major); two groups, S the older. */
      gp_nv_wgmma_fence(&wst);
      AT90_UNROLL for (int kk = 0; kk < ATT_D / 16; kk++) {
        const uint64_t da = gp_nv_wgmma_desc(qs + (kk / 4) * 64 * 128 + (kk % 4) * 32, 16, 1024, GP_NV_SWIZZLE_128B);
        const uint64_t db = gp_nv_wgmma_desc(ks + (kk / 4) * BN * 128 + (kk % 4) * 32, 16, 1024, GP_NV_SWIZZLE_128B);
        gp_nv_wgmma(&wst, sacc, BN, da, db, kk > 0, 0, 0, ATT_BF16);
      }
      gp_nv_wgmma_commit(&wst);
      if (ATT_OVERLAP) {
        AT90_PV(vp);
        gp_nv_wgmma_wait(&wst, 1); /* S complete; P V may still run */
      } else {
        gp_nv_wgmma_wait(&wst, 0);
      }
    }
    if (ATT_OVERLAP) { /* epilogue: O += P V of the last tile */
      gp_nv_wgmma_fence(&wst);
      AT90_PV(vp);
      gp_nv_wgmma_wait(&wst, 0);
      gp_syncwarp();
      if (lane == 0) gp_nv_mbarrier_arrive(&empty[s_prev]);
    }
  }

  /* O / l and lse; a row's sums are spread over its 4 lanes. */
  AT90_UNROLL for (int hf = 0; hf < 2; hf++) {
    float sum = l[hf];
    sum += gp_shfl_xor(sum, 1);
    sum += gp_shfl_xor(sum, 2);
    const int64_t r = 64 * cw + 16 * w4 + g + 8 * hf;
    if (r >= rows) continue;
    const int64_t i = i0 + r;
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    uint16_t *og = (uint16_t *)p.o + b * p.o_bs + (q_row0 + i) * p.o_ss + h * p.o_hs + 2 * q;
    AT90_UNROLL for (int i2 = 0; i2 < ATT_D / 2; i2 += 4) {
      const int e = i2 + 2 * hf; /* registers e, e + 1: columns 8 (e / 4) + 2 q, + 1 */
      const uint32_t w = ATT_BF16 ? gp_nv_pack_bf16x2(o[e] * inv, o[e + 1] * inv)
                                  : gp_nv_pack_f16x2(o[e] * inv, o[e + 1] * inv);
      og[8 * (e / 4)] = (uint16_t)(w & 0xffffu);
      og[8 * (e / 4) + 1] = (uint16_t)(w >> 16);
    }
    if (p.lse && q == 0) {
      const float v = sum > 0.0f ? m[hf] * 0.69314718055994531f + logf(sum) : -INFINITY;
      if (p.cu_q)
        p.lse[h * seq.total_q + q_row0 + i] = v;
      else
        p.lse[(b * p.heads_q + h) * p.seqlen_q + i] = v;
    }
  }
}
AT90_EXPORT(ATT_NAME)

#undef BN
#undef ATT_OVERLAP
#undef AT90_PV
#undef ATT_NAME
#undef ATT_D
#undef ATT_BF16
