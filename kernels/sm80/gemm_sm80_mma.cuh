/*
 * gemm_sm80_mma.cuh - the body of the mma.sync GEMM kernels, included by gemm_sm80.cu
 * once per variant with GEMM_NAME (the kernel), GEMM_TA and GEMM_TB (1: the operand is
 * transposed, i.e. stored k-contiguous for A, n-contiguous for B) and GEMM_BF16 (1: bf16
 * inputs, else f16) defined; it undefines them at the end. Decomposition: gemm_sm80.cu.
 */
#if GEMM_BF16
#define GEMM_MMA gp_nv_mma_m16n8k16_bf16
#else
#define GEMM_MMA gp_nv_mma_m16n8k16_f16
#endif
/* Row lengths of the A and B tiles in shared memory (elements). */
#define GEMM_A_LD (GEMM_TA ? BK + PAD : BM + PAD)
#define GEMM_B_LD (GEMM_TB ? BN + PAD : BK + PAD)

/* Copies k-tile kt of op(A) and op(B) into stage s, in their stored orientation. */
#define GEMM_STAGE(s, kt)                                                                    \
  do {                                                                                       \
    uint16_t *as_ = smem + (s) * stage, *bs_ = as_ + GP__SM80_GEMM_A_ELEMS(GEMM_TA);          \
    const int64_t k0_ = (kt) * BK;                                                           \
    if (GEMM_TA)                                                                             \
      sm80_stage_b16(&as, as_, GEMM_A_LD, a + k0_ + m0 * p.lda, p.lda, p.m - m0, p.k - k0_,  \
                     BM, BK, vec, tid);                                                      \
    else                                                                                     \
      sm80_stage_b16(&as, as_, GEMM_A_LD, a + m0 + k0_ * p.lda, p.lda, p.k - k0_, p.m - m0,  \
                     BK, BM, vec, tid);                                                      \
    if (GEMM_TB)                                                                             \
      sm80_stage_b16(&as, bs_, GEMM_B_LD, b + n0 + k0_ * p.ldb, p.ldb, p.k - k0_, p.n - n0,  \
                     BK, BN, vec, tid);                                                      \
    else                                                                                     \
      sm80_stage_b16(&as, bs_, GEMM_B_LD, b + k0_ + n0 * p.ldb, p.ldb, p.n - n0, p.k - k0_,  \
                     BN, BK, vec, tid);                                                      \
  } while (0)

GP_KERNEL void __launch_bounds__(THREADS) GEMM_NAME(gp__gemm_params_t p, int vec) {
  GP_DYNAMIC_SHARED(uint16_t, smem);
  const int tid = (int)threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp % 2, wn = warp / 2; /* the warp's 64 x 32 sub-tile */
  const int stage = GP__SM80_GEMM_A_ELEMS(GEMM_TA) + GP__SM80_GEMM_B_ELEMS(GEMM_TB);
  const int64_t tiles_m = (p.m + BM - 1) / BM, tiles_n = (p.n + BN - 1) / BN;
  const int64_t tiles = tiles_m * tiles_n, ktiles = (p.k + BK - 1) / BK;
  gp_nv_async_t as;
  gp_nv_async_init(&as);

  for (int64_t z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const uint16_t *a = ktiles ? (const uint16_t *)p.a + z * p.stride_a : (const uint16_t *)0;
    const uint16_t *b = ktiles ? (const uint16_t *)p.b + z * p.stride_b : (const uint16_t *)0;
    void *c = (void *)gemm_offset(p.c, p.c_type, z * p.stride_c);
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      int64_t tm, tn;
      sm80_tile_coords(t, tiles_m, tiles_n, &tm, &tn);
      const int64_t m0 = tm * BM, n0 = tn * BN;
      float acc[4][4][4];
      SM80_UNROLL for (int i = 0; i < 4; i++)
        SM80_UNROLL for (int j = 0; j < 4; j++)
          SM80_UNROLL for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

      __syncthreads(); /* the previous tile's stages are no longer read */
      for (int s = 0; s < STAGES - 1; s++) {
        if (s < ktiles) GEMM_STAGE(s, (int64_t)s);
        gp_nv_cp_async_commit(&as);
      }
      for (int64_t kt = 0; kt < ktiles; kt++) {
        gp_nv_cp_async_wait(&as, STAGES - 2);
        __syncthreads(); /* stage kt is complete for all, stage kt - 1 is no longer read */
        const int64_t next = kt + STAGES - 1;
        if (next < ktiles) GEMM_STAGE((int)(next % STAGES), next);
        gp_nv_cp_async_commit(&as);

        const uint16_t *As = smem + (int)(kt % STAGES) * stage;
        const uint16_t *Bs = As + GP__SM80_GEMM_A_ELEMS(GEMM_TA);
        SM80_UNROLL
        for (int kk = 0; kk < BK; kk += 16) {
          uint32_t af[4][4], bf[4][2];
          SM80_UNROLL
          for (int mt = 0; mt < 4; mt++) {
            const int m = wm * 64 + mt * 16;
#if GEMM_TA /* [m][k]: matrices (rows m, m + 8) x (columns k, k + 8) */
            gp_nv_ldmatrix_x4(af[mt], As + (m + lane % 8 + 8 * (lane / 8 % 2)) * GEMM_A_LD + kk + 8 * (lane / 16));
#else /* [k][m]: the transposes of the same four matrices */
            gp_nv_ldmatrix_x4_trans(af[mt], As + (kk + lane % 8 + 8 * (lane / 16)) * GEMM_A_LD + m + 8 * (lane / 8 % 2));
#endif
          }
          SM80_UNROLL
          for (int np = 0; np < 2; np++) {
            const int n = wn * 32 + np * 16;
            uint32_t r[4]; /* b0b1, b2b3 of n-tile 2 np, then of n-tile 2 np + 1 */
#if GEMM_TB /* [k][n] */
            gp_nv_ldmatrix_x4_trans(r, Bs + (kk + lane % 8 + 8 * (lane / 8 % 2)) * GEMM_B_LD + n + 8 * (lane / 16));
#else /* [n][k] */
            gp_nv_ldmatrix_x4(r, Bs + (n + lane % 8 + 8 * (lane / 16)) * GEMM_B_LD + kk + 8 * (lane / 8 % 2));
#endif
            bf[2 * np][0] = r[0];
            bf[2 * np][1] = r[1];
            bf[2 * np + 1][0] = r[2];
            bf[2 * np + 1][1] = r[3];
          }
          SM80_UNROLL for (int mt = 0; mt < 4; mt++)
            SM80_UNROLL for (int nt = 0; nt < 4; nt++) GEMM_MMA(acc[mt][nt], af[mt], bf[nt]);
        }
      }
      gp_nv_cp_async_wait(&as, 0);

      sm80_mma_store(&p, c, m0 + wm * 64, n0 + wn * 32, lane, acc);
    }
  }
}
SM80_EXPORT(GEMM_NAME)

#undef GEMM_STAGE
#undef GEMM_A_LD
#undef GEMM_B_LD
#undef GEMM_MMA
#undef GEMM_NAME
#undef GEMM_TA
#undef GEMM_TB
#undef GEMM_BF16
