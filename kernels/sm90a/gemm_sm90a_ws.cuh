/*
 * gemm_sm90a_ws.cuh - one warp-specialized sm_90a GEMM kernel (see kernels/sm90a/gemm_sm90a.cu),
 * included once per input type and pair of transposes with GEMM_NAME, GEMM_TA (op(A)
 * transposed: A contiguous along k, K-major), GEMM_TB (op(B) transposed: B contiguous
 * along n, N-major) and GEMM_BF16 defined; undefines them at the end.
 */
GP_KERNEL void __launch_bounds__(GP__SM90_GEMM_THREADS, 1)
    GEMM_NAME(const __grid_constant__ gp__gemm_params_t p, const __grid_constant__ gp_nv_tensor_map_t map_a,
              const __grid_constant__ gp_nv_tensor_map_t map_b) {
  GP_DYNAMIC_SHARED(unsigned char, raw);
  unsigned char *ring = sm90_align1024(raw);
  uint64_t *full = (uint64_t *)(ring + STAGES * STAGE_BYTES), *empty = full + STAGES;
  const int tid = (int)threadIdx.x, wg = tid / 128, lane = tid % 32;
  const int64_t tiles_m = (p.m + BM - 1) / BM, tiles_n = (p.n + BN - 1) / BN;
  const int64_t total = tiles_m * tiles_n * p.batch, ktiles = (p.k + BK - 1) / BK;
  if (tid == 0) {
    for (int s = 0; s < STAGES; s++) {
      gp_nv_mbarrier_init(&full[s], 1);
      gp_nv_mbarrier_init(&empty[s], 8); /* lane 0 of each consumer warp */
    }
    gp_nv_fence_mbarrier_init();
  }
  __syncthreads();

  if (wg == 0) { /* ---- producer ---- */
    gp_nv_setmaxnreg_dec(40);
    if (tid >= 32) return;
    int64_t it = 0;
    for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
      int64_t z, tm, tn;
      sm90_tile_coords(t, tiles_m, tiles_n, &z, &tm, &tn);
      const int32_t za = p.stride_a ? (int32_t)z : 0, zb = p.stride_b ? (int32_t)z : 0;
      for (int64_t kt = 0; kt < ktiles; kt++, it++) {
        const int s = (int)(it % STAGES);
        const unsigned phase = (unsigned)(it / STAGES) & 1u;
        gp_nv_mbarrier_wait(&empty[s], phase ^ 1u); /* the first pass finds every stage free */
        if (lane == 0) {
          unsigned char *st = ring + s * STAGE_BYTES;
          gp_nv_mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);
          sm90_load(st, &map_a, GEMM_TA, (int32_t)(tm * BM), (int32_t)(kt * BK), za, &full[s]);
          sm90_load(st + 2 * BM * BK, &map_b, !GEMM_TB, (int32_t)(tn * BN), (int32_t)(kt * BK), zb, &full[s]);
        }
      }
    }
    return;
  }

  /* ---- consumers: warpgroup wg owns rows 64 (wg - 1) .. of the tile ---- */
  gp_nv_setmaxnreg_inc(232);
  const int cw = wg - 1, w4 = (tid / 32) % 4, g = lane / 4, q = lane % 4;
  gp_nv_wgmma_state_t wst;
  gp_nv_wgmma_init(&wst);
  int64_t it = 0;
  for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    int64_t z, tm, tn;
    sm90_tile_coords(t, tiles_m, tiles_n, &z, &tm, &tn);
    float acc[64];
    SM90_UNROLL for (int i = 0; i < 64; i++) acc[i] = 0.0f;
    for (int64_t kt = 0; kt < ktiles; kt++, it++) {
      const int s = (int)(it % STAGES);
      const unsigned phase = (unsigned)(it / STAGES) & 1u;
      gp_nv_mbarrier_wait(&full[s], phase);
      unsigned char *sa = ring + s * STAGE_BYTES, *sb = sa + 2 * BM * BK;
      gp_nv_wgmma_fence(&wst);
      SM90_UNROLL for (int kk = 0; kk < BK / 16; kk++) {
        /* K-major: rows of 128 bytes, the k-slice 32 bytes on; MN-major: 16 k-rows on */
        const uint64_t da = GEMM_TA ? gp_nv_wgmma_desc(sa + cw * 8192 + kk * 32, 16, 1024, GP_NV_SWIZZLE_128B)
                                    : gp_nv_wgmma_desc(sa + cw * 8192 + kk * 2048, 8192, 1024, GP_NV_SWIZZLE_128B);
        const uint64_t db = GEMM_TB ? gp_nv_wgmma_desc(sb + kk * 2048, 8192, 1024, GP_NV_SWIZZLE_128B)
                                    : gp_nv_wgmma_desc(sb + kk * 32, 16, 1024, GP_NV_SWIZZLE_128B);
        gp_nv_wgmma(&wst, acc, 128, da, db, 1, !GEMM_TA, GEMM_TB, GEMM_BF16);
      }
      gp_nv_wgmma_commit(&wst);
      /* keep this k-step's wgmmas in flight; the previous step's are done: free its stage */
      gp_nv_wgmma_wait(&wst, 1);
      if (kt > 0 && lane == 0) gp_nv_mbarrier_arrive(&empty[(it + STAGES - 1) % STAGES]);
    }
    gp_nv_wgmma_wait(&wst, 0);
    if (ktiles > 0 && lane == 0) gp_nv_mbarrier_arrive(&empty[(it + STAGES - 1) % STAGES]);
    void *c = (void *)gemm_offset(p.c, p.c_type, z * p.stride_c);
    const int64_t r0 = tm * BM + 64 * cw + 16 * w4 + g, c0 = tn * BN + 2 * q;
    SM90_UNROLL for (int i = 0; i < 64; i++) {
      const int64_t i_ = r0 + 8 * ((i / 2) % 2), j_ = c0 + 8 * (i / 4) + i % 2;
      if (i_ < p.m && j_ < p.n) gemm_finish(&p, c, i_, j_, acc[i]);
    }
  }
}
SM90_EXPORT(GEMM_NAME)

#undef GEMM_NAME
#undef GEMM_TA
#undef GEMM_TB
#undef GEMM_BF16
