/*
 * gemm_sm80.cu - GEMM for NVIDIA GPUs from Ampere on (sm_80, and sm_90 without wgmma):
 * tensor cores through mma.sync for f16 and bf16 inputs, FFMA for f32. Built by nvcc for
 * the cuda backend and, with the host compiler, into the cpu library, where the
 * instructions run under the emulation of gpuport/nv_mma.h (GP_CPU_GEMM=sm80): the code
 * the GPU runs is the code CI tests. kernels/sm80/gemm_sm80_host.c chooses the kernel and launches it.
 *
 * Problem: the canonical column-major C = alpha op(A) op(B) + beta C of
 * kernels/common/gemm_params.h, any m, n, k, leading dimensions, transposes, batch and
 * strides; products summed in f32; the epilogue of kernels/common/gemm_epilogue.h.
 *
 * gp__gemm_sm80_{f16,bf16}_{nn,nt,tn,tt} (one per input type and pair of transposes,
 * from gemm_sm80_mma.cuh; geometry in kernels/sm80/sm80.h):
 *  - grid: x over 128 x 128 tiles of C, visited in groups of 8 tile rows (L2 reuse);
 *    z over the batch. Both are capped by the host and walked with a stride, so any size
 *    runs. Loops depend on blockIdx only: every thread of a block reaches every barrier.
 *  - block: 256 threads, 8 warps as 2 (m) x 4 (n); warp (wm, wn) owns the 64 x 32
 *    sub-tile at rows 64 wm, columns 32 wn: 4 x 4 mma.m16n8k16 per 16 of k, 64 f32
 *    accumulators per thread in the PTX C layout.
 *  - k loop: 32 at a time through a 4-stage ring in dynamic shared memory (82 KiB at
 *    most, hence the opt-in the host sets). Each stage holds op(A) and op(B) in the
 *    orientation they have in memory, so every global read is a 16-byte cp.async along
 *    the contiguous dimension: A as [k][m] (op N) or [m][k] (op T), B as [n][k] (op N)
 *    or [k][n] (op T), rows padded by 8 elements so ldmatrix reads hit distinct banks.
 *    Fragments come from ldmatrix.x4 (rows along the fragment's contiguous k) or
 *    ldmatrix.x4.trans (the other orientation). Iteration kt waits for stage kt,
 *    passes a barrier (so stage kt - 1 is no longer read), issues the copies of tile
 *    kt + 3 into that stage, then computes on stage kt: copies and math overlap.
 *  - edges: chunks that cross m, n or k read only their valid part (the cp.async
 *    source size) and zero-fill the rest; chunks wholly outside read nothing. Zeros
 *    beyond k add nothing; rows and columns beyond m and n are not stored.
 *  - alignment: the 16-byte copies need A and B, their leading dimensions and batch
 *    strides 16-byte aligned (`vec`, decided by the host); otherwise the same pipeline
 *    stages tiles with plain loads and stores.
 *  - epilogue: each thread finishes its own accumulators (gemm_finish).
 *
 * gp__gemm_sm80_tf32 (GP_COMPUTE_TF32 with f32 inputs): the block, warp and grid
 * decomposition of the mma kernels with mma.m16n8k8 on tf32 (4 x 4 per warp per 8 of
 * k), k 16 at a time through a 4-stage ring. Stages hold op(A) and op(B) as stored
 * (16-byte cp.async of 4 floats along the contiguous dimension when A, B, their leading
 * dimensions and batch strides are 16-byte aligned, else 4-byte cp.async), and each
 * lane reads its fragment elements with scalar loads (ldmatrix moves 16-bit elements)
 * and rounds them with cvt.rna.tf32.f32, as cuBLAS's TF32 mode does. One kernel serves
 * the four transpose pairs: the orientation only changes the strides of those loads.
 *
 * gp__gemm_sm80_f32: FFMA, 128 x 128 tiles, 16 x 16 threads of 8 x 8 outputs (rows
 * 4 tx .. 4 tx + 3 and 64 + 4 tx .., columns likewise with ty, so each thread reads two
 * float4 of A and of B per k), k in steps of 8 through a 3-stage ring of 4-byte
 * cp.async copies (any alignment, any transpose: consecutive threads read consecutive
 * addresses of the operand as stored, and write A as [k][m], B as [k][n]).
 */
#if defined(GP_BUILD_CPU) && !defined(GP_EMULATE_SM80)
#error "kernels/sm80 and kernels/sm90a build for the CPU executor only in emulation mode (-DGP_EMULATE_SM80)"
#endif
#include <gpuport/kernel.h>
#include <gpuport/nv_mma.h>

#include "kernels/common/gemm_epilogue.h"
#include "kernels/common/gemm_params.h"
#include "kernels/sm80/sm80.h"

#if defined(GP_TARGET_CPU)
#define SM80_UNROLL _Pragma("GCC unroll 16")
#else
#define SM80_UNROLL _Pragma("unroll")
#endif
/* Helpers that take accumulator arrays: inlined, so the arrays stay in registers. */
#if defined(GP_TARGET_CPU)
#define SM80_INLINE static inline
#else
#define SM80_INLINE static __device__ __forceinline__
#endif

#define BM GP__SM80_GEMM_BM
#define BN GP__SM80_GEMM_BN
#define BK GP__SM80_GEMM_BK
#define PAD GP__SM80_GEMM_PAD
#define STAGES GP__SM80_GEMM_STAGES
#define THREADS GP__SM80_GEMM_THREADS
/* GP_KERNEL_EXPORT with its argument expanded first (the kernel names are macros). */
#define SM80_EXPORT(name) GP_KERNEL_EXPORT(name)

/* Tile (tm, tn) of linear tile t: GROUP_M tile rows at a time, column by column. */
GP_DEVICE void sm80_tile_coords(int64_t t, int64_t tiles_m, int64_t tiles_n, int64_t *tm,
                                int64_t *tn) {
  const int64_t per_group = (int64_t)GP__SM80_GEMM_GROUP_M * tiles_n;
  const int64_t first = t / per_group * GP__SM80_GEMM_GROUP_M, in = t % per_group;
  const int64_t rows = tiles_m - first < GP__SM80_GEMM_GROUP_M ? tiles_m - first : GP__SM80_GEMM_GROUP_M;
  *tm = first + in % rows;
  *tn = in / rows;
}

/* Stages a rows x cols tile of a b16 matrix whose element (r, c) is src[r * ld + c]
 * (c contiguous) into dst (row length ld_s); only r < rows_valid and c < cols_valid
 * exist, the rest of the tile gets zeros. Thread tid takes the 8-element chunks tid,
 * tid + THREADS, ...: 16-byte cp.async when vec, else plain loads and stores. */
GP_DEVICE void sm80_stage_b16(gp_nv_async_t *as, uint16_t *dst, int ld_s, const uint16_t *src,
                              int64_t ld, int64_t rows_valid, int64_t cols_valid, int rows, int cols,
                              int vec, int tid) {
  const int per_row = cols / 8;
  SM80_UNROLL
  for (int ch = tid; ch < rows * per_row; ch += THREADS) {
    const int r = ch / per_row, c = ch % per_row * 8;
    uint16_t *d = dst + r * ld_s + c;
    int64_t n = r < rows_valid ? cols_valid - c : 0;
    n = n < 0 ? 0 : (n > 8 ? 8 : n);
    if (vec) {
      /* a chunk outside the matrix reads nothing: the tile's origin stands in for it */
      const uint16_t *s = n > 0 ? src + r * ld + c : src;
      gp_nv_cp_async_16(as, d, s, (int)(2 * n));
    } else {
      SM80_UNROLL
      for (int e = 0; e < 8; e++) d[e] = e < n ? src[r * ld + c + e] : (uint16_t)0;
    }
  }
}

/* Finishes a warp's 64 x 32 sub-tile at (i0, j0) from its 4 x 4 mma accumulators:
 * accumulator e of (mt, nt) is row g + 8 (e / 2), column 2 t + e % 2 of that 16 x 8 tile
 * (g = lane / 4, t = lane % 4). */
SM80_INLINE void sm80_mma_store(const gp__gemm_params_t *p, void *c, int64_t i0, int64_t j0, int lane,
                              float acc[4][4][4]) {
  const int g = lane / 4, t4 = lane % 4;
  SM80_UNROLL
  for (int mt = 0; mt < 4; mt++)
    SM80_UNROLL
    for (int nt = 0; nt < 4; nt++)
      SM80_UNROLL
      for (int e = 0; e < 4; e++) {
        const int64_t i = i0 + mt * 16 + g + 8 * (e / 2), j = j0 + nt * 8 + 2 * t4 + e % 2;
        if (i < p->m && j < p->n) gemm_finish(p, c, i, j, acc[mt][nt][e]);
      }
}

/* ---- f16 and bf16 on mma.sync: one kernel per input type and pair of transposes ---- */
#define GEMM_NAME gp__gemm_sm80_f16_nn
#define GEMM_TA 0
#define GEMM_TB 0
#define GEMM_BF16 0
#include "gemm_sm80_mma.cuh"
#define GEMM_NAME gp__gemm_sm80_f16_nt
#define GEMM_TA 0
#define GEMM_TB 1
#define GEMM_BF16 0
#include "gemm_sm80_mma.cuh"
#define GEMM_NAME gp__gemm_sm80_f16_tn
#define GEMM_TA 1
#define GEMM_TB 0
#define GEMM_BF16 0
#include "gemm_sm80_mma.cuh"
#define GEMM_NAME gp__gemm_sm80_f16_tt
#define GEMM_TA 1
#define GEMM_TB 1
#define GEMM_BF16 0
#include "gemm_sm80_mma.cuh"
#define GEMM_NAME gp__gemm_sm80_bf16_nn
#define GEMM_TA 0
#define GEMM_TB 0
#define GEMM_BF16 1
#include "gemm_sm80_mma.cuh"
#define GEMM_NAME gp__gemm_sm80_bf16_nt
#define GEMM_TA 0
#define GEMM_TB 1
#define GEMM_BF16 1
#include "gemm_sm80_mma.cuh"
#define GEMM_NAME gp__gemm_sm80_bf16_tn
#define GEMM_TA 1
#define GEMM_TB 0
#define GEMM_BF16 1
#include "gemm_sm80_mma.cuh"
#define GEMM_NAME gp__gemm_sm80_bf16_tt
#define GEMM_TA 1
#define GEMM_TB 1
#define GEMM_BF16 1
#include "gemm_sm80_mma.cuh"

/* ---- f32 on tf32 mma.sync (GP_COMPUTE_TF32) ---------------------------------------------- */
#define TBK GP__SM80_TGEMM_BK
#define TSTAGES GP__SM80_TGEMM_STAGES

/* sm80_stage_b16 for f32: 4-element chunks, one 16-byte cp.async each when vec, else
 * four 4-byte ones (any alignment); zeros outside rows_valid x cols_valid. */
GP_DEVICE void sm80_stage_f32(gp_nv_async_t *as, float *dst, int ld_s, const float *src, int64_t ld,
                              int64_t rows_valid, int64_t cols_valid, int rows, int cols, int vec,
                              int tid) {
  const int per_row = cols / 4;
  SM80_UNROLL
  for (int ch = tid; ch < rows * per_row; ch += THREADS) {
    const int r = ch / per_row, c = ch % per_row * 4;
    float *d = dst + r * ld_s + c;
    int64_t n = r < rows_valid ? cols_valid - c : 0;
    n = n < 0 ? 0 : (n > 4 ? 4 : n);
    if (vec) {
      gp_nv_cp_async_16(as, d, n > 0 ? src + r * ld + c : src, (int)(4 * n));
    } else {
      SM80_UNROLL
      for (int e = 0; e < 4; e++)
        gp_nv_cp_async_4(as, d + e, e < n ? src + r * ld + c + e : src, e < n ? 4 : 0);
    }
  }
}

/* Copies k-tile kt of op(A) and op(B) into the stage at st, in their stored orientation. */
GP_DEVICE void sm80_tgemm_stage(gp_nv_async_t *as, float *st, const gp__gemm_params_t *p,
                                const float *a, const float *b, int64_t m0, int64_t n0, int64_t kt,
                                int vec, int tid) {
  float *As = st, *Bs = st + GP__SM80_TGEMM_A_ELEMS(p->trans_a != 0);
  const int64_t k0 = kt * TBK;
  if (p->trans_a) /* a[p + i lda]: rows of m, k contiguous */
    sm80_stage_f32(as, As, TBK + 4, a + k0 + m0 * p->lda, p->lda, p->m - m0, p->k - k0, BM, TBK, vec, tid);
  else /* a[i + p lda]: rows of k, m contiguous */
    sm80_stage_f32(as, As, BM + 8, a + m0 + k0 * p->lda, p->lda, p->k - k0, p->m - m0, TBK, BM, vec, tid);
  if (p->trans_b) /* b[j + p ldb]: rows of k, n contiguous */
    sm80_stage_f32(as, Bs, BN + 8, b + n0 + k0 * p->ldb, p->ldb, p->k - k0, p->n - n0, TBK, BN, vec, tid);
  else /* b[p + j ldb]: rows of n, k contiguous */
    sm80_stage_f32(as, Bs, TBK + 4, b + k0 + n0 * p->ldb, p->ldb, p->n - n0, p->k - k0, BN, TBK, vec, tid);
}

GP_KERNEL void __launch_bounds__(THREADS) gp__gemm_sm80_tf32(gp__gemm_params_t p, int vec) {
  GP_DYNAMIC_SHARED(float, smem);
  const int tid = (int)threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp % 2, wn = warp / 2; /* the warp's 64 x 32 sub-tile */
  const int g = lane / 4, t4 = lane % 4;
  const int ta = p.trans_a != 0, tb = p.trans_b != 0;
  /* op(A)(m, k) of a stage is As[m * am + k * ak], op(B)(k, n) is Bs[k * bk + n * bn] */
  const int am = ta ? TBK + 4 : 1, ak = ta ? 1 : BM + 8;
  const int bk = tb ? BN + 8 : 1, bn = tb ? 1 : TBK + 4;
  const int a_elems = GP__SM80_TGEMM_A_ELEMS(ta);
  const int stage = a_elems + GP__SM80_TGEMM_B_ELEMS(tb);
  const int64_t tiles_m = (p.m + BM - 1) / BM, tiles_n = (p.n + BN - 1) / BN;
  const int64_t tiles = tiles_m * tiles_n, ktiles = (p.k + TBK - 1) / TBK;
  gp_nv_async_t as;
  gp_nv_async_init(&as);

  for (int64_t z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const float *a = ktiles ? (const float *)p.a + z * p.stride_a : (const float *)0;
    const float *b = ktiles ? (const float *)p.b + z * p.stride_b : (const float *)0;
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
      for (int s = 0; s < TSTAGES - 1; s++) {
        if (s < ktiles) sm80_tgemm_stage(&as, smem + s * stage, &p, a, b, m0, n0, s, vec, tid);
        gp_nv_cp_async_commit(&as);
      }
      for (int64_t kt = 0; kt < ktiles; kt++) {
        gp_nv_cp_async_wait(&as, TSTAGES - 2);
        __syncthreads(); /* stage kt is complete for all, stage kt - 1 is no longer read */
        const int64_t next = kt + TSTAGES - 1;
        if (next < ktiles)
          sm80_tgemm_stage(&as, smem + (int)(next % TSTAGES) * stage, &p, a, b, m0, n0, next, vec, tid);
        gp_nv_cp_async_commit(&as);

        const float *As = smem + (int)(kt % TSTAGES) * stage, *Bs = As + a_elems;
        SM80_UNROLL
        for (int kk = 0; kk < TBK; kk += 8) {
          uint32_t af[4][4], bf[4][2];
          SM80_UNROLL
          for (int mt = 0; mt < 4; mt++) {
            const int m = wm * 64 + mt * 16 + g, k = kk + t4;
            SM80_UNROLL /* a[i]: row g + 8 (i & 1), column t + 4 (i >> 1) */
            for (int i = 0; i < 4; i++)
              af[mt][i] = gp_nv_cvt_tf32(As[(m + 8 * (i & 1)) * am + (k + 4 * (i >> 1)) * ak]);
          }
          SM80_UNROLL
          for (int nt = 0; nt < 4; nt++) {
            const int n = wn * 32 + nt * 8 + g;
            SM80_UNROLL /* b[i]: k = t + 4 i, column g */
            for (int i = 0; i < 2; i++) bf[nt][i] = gp_nv_cvt_tf32(Bs[(kk + t4 + 4 * i) * bk + n * bn]);
          }
          SM80_UNROLL for (int mt = 0; mt < 4; mt++)
            SM80_UNROLL for (int nt = 0; nt < 4; nt++) gp_nv_mma_m16n8k8_tf32(acc[mt][nt], af[mt], bf[nt]);
        }
      }
      gp_nv_cp_async_wait(&as, 0);

      sm80_mma_store(&p, c, m0 + wm * 64, n0 + wn * 32, lane, acc);
    }
  }
}
GP_KERNEL_EXPORT(gp__gemm_sm80_tf32)

/* ---- f32 on FFMA ------------------------------------------------------------------------ */
#define SBM GP__SM80_SGEMM_BM
#define SBN GP__SM80_SGEMM_BN
#define SBK GP__SM80_SGEMM_BK
#define SLD GP__SM80_SGEMM_LD
#define SSTAGES GP__SM80_SGEMM_STAGES

/* Copies k-slice kt of op(A) and op(B) into stage s ([2][SBK][SLD] floats). */
GP_DEVICE void sm80_sgemm_stage(gp_nv_async_t *as, float *st, const gp__gemm_params_t *p,
                                const float *a, const float *b, int64_t m0, int64_t n0, int64_t kt,
                                int tid) {
  float *As = st, *Bs = st + SBK * SLD;
  const int64_t k0 = kt * SBK;
  SM80_UNROLL
  for (int i = 0; i < SBM * SBK / GP__SM80_SGEMM_THREADS; i++) {
    const int e = tid + GP__SM80_SGEMM_THREADS * i;
    /* A: consecutive threads along the contiguous dimension of A as stored */
    const int am = p->trans_a ? e / SBK : e % SBM, ak = p->trans_a ? e % SBK : e / SBM;
    const int64_t gm = m0 + am, gk = k0 + ak;
    const bool av = gm < p->m && gk < p->k;
    const float *asrc = av ? a + (p->trans_a ? gk + gm * p->lda : gm + gk * p->lda) : a;
    gp_nv_cp_async_4(as, As + ak * SLD + am, asrc, av ? 4 : 0);
    /* B: op N is b[k + n ldb] (k contiguous), op T is b[n + k ldb] */
    const int bn = p->trans_b ? e % SBN : e / SBK, bk = p->trans_b ? e / SBN : e % SBK;
    const int64_t gn = n0 + bn, gk2 = k0 + bk;
    const bool bv = gn < p->n && gk2 < p->k;
    const float *bsrc = bv ? b + (p->trans_b ? gn + gk2 * p->ldb : gk2 + gn * p->ldb) : b;
    gp_nv_cp_async_4(as, Bs + bk * SLD + bn, bsrc, bv ? 4 : 0);
  }
}

GP_KERNEL void __launch_bounds__(GP__SM80_SGEMM_THREADS) gp__gemm_sm80_f32(gp__gemm_params_t p) {
  GP_DYNAMIC_SHARED(float, smem);
  const int tid = (int)threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int64_t tiles_m = (p.m + SBM - 1) / SBM, tiles_n = (p.n + SBN - 1) / SBN;
  const int64_t tiles = tiles_m * tiles_n, ktiles = (p.k + SBK - 1) / SBK;
  const int stage = 2 * SBK * SLD;
  gp_nv_async_t as;
  gp_nv_async_init(&as);
  for (int64_t z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const float *a = ktiles ? (const float *)p.a + z * p.stride_a : (const float *)0;
    const float *b = ktiles ? (const float *)p.b + z * p.stride_b : (const float *)0;
    void *c = (void *)gemm_offset(p.c, p.c_type, z * p.stride_c);
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      int64_t tm, tn;
      sm80_tile_coords(t, tiles_m, tiles_n, &tm, &tn);
      const int64_t m0 = tm * SBM, n0 = tn * SBN;
      float acc[8][8];
      SM80_UNROLL for (int r = 0; r < 8; r++)
        SM80_UNROLL for (int s = 0; s < 8; s++) acc[r][s] = 0.0f;

      __syncthreads(); /* the previous tile's stages are no longer read */
      for (int s = 0; s < SSTAGES - 1; s++) {
        if (s < ktiles) sm80_sgemm_stage(&as, smem + s * stage, &p, a, b, m0, n0, s, tid);
        gp_nv_cp_async_commit(&as);
      }
      for (int64_t kt = 0; kt < ktiles; kt++) {
        gp_nv_cp_async_wait(&as, SSTAGES - 2);
        __syncthreads(); /* stage kt is complete for all, stage kt - 1 is no longer read */
        const int64_t next = kt + SSTAGES - 1;
        if (next < ktiles) sm80_sgemm_stage(&as, smem + next % SSTAGES * stage, &p, a, b, m0, n0, next, tid);
        gp_nv_cp_async_commit(&as);
        const float *As = smem + kt % SSTAGES * stage, *Bs = As + SBK * SLD;
        SM80_UNROLL
        for (int kk = 0; kk < SBK; kk++) {
          const float4 a0 = *(const float4 *)(As + kk * SLD + 4 * tx);
          const float4 a1 = *(const float4 *)(As + kk * SLD + 64 + 4 * tx);
          const float4 b0 = *(const float4 *)(Bs + kk * SLD + 4 * ty);
          const float4 b1 = *(const float4 *)(Bs + kk * SLD + 64 + 4 * ty);
          const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
          const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
          SM80_UNROLL for (int r = 0; r < 8; r++)
            SM80_UNROLL for (int s = 0; s < 8; s++) acc[r][s] = fmaf(av[r], bv[s], acc[r][s]);
        }
      }
      gp_nv_cp_async_wait(&as, 0);

      SM80_UNROLL
      for (int s = 0; s < 8; s++) {
        const int64_t j = n0 + (s < 4 ? 4 * ty + s : 64 + 4 * ty + s - 4);
        SM80_UNROLL
        for (int r = 0; r < 8; r++) {
          const int64_t i = m0 + (r < 4 ? 4 * tx + r : 64 + 4 * tx + r - 4);
          if (i < p.m && j < p.n) gemm_finish(&p, c, i, j, acc[r][s]);
        }
      }
    }
  }
}
GP_KERNEL_EXPORT(gp__gemm_sm80_f32)
