/*
 * gemm_portable.cu - the portable tiled GEMM kernel, written once in the gpuport dialect and
 * built for the cpu (SIMT executor), cuda and hip backends. It runs what no matrix-core
 * family takes on the GPU backends (src/gemm_table.c) and, in the kernel modes of
 * GP_CPU_GEMM, on the CPU executor, so the code the
 * GPUs run is tested in CI. It favours being correct for every shape over speed: the
 * vendor kernels in kernels/sm80, kernels/sm90a and kernels/mfma are the fast paths.
 *
 * Problem: the canonical column-major C = alpha op(A) op(B) + beta C of
 * kernels/common/gemm_params.h (row-major calls are reduced to it on the host), any m, n,
 * k, leading dimensions, transposes, batch and strides; f32, f16 or bf16 inputs
 * converted exactly to f32, products summed in f32 (fmaf), the epilogue applied in f32,
 * then one rounding to c_type.
 *
 * Decomposition:
 *  - Grid: blockIdx.x over 64-row tiles of C (m), blockIdx.y over 64-column tiles (n),
 *    blockIdx.z over the batch. The host caps y and z at 65535 (x at 2^31 - 1) and each
 *    block loops over the tiles and batch entries beyond the grid with stride gridDim,
 *    so any size runs. The loops depend on blockIdx only: every thread of a block takes
 *    the same trips, so the barriers inside are reached by all.
 *  - Block: 16 x 16 = 256 threads. Thread (tx, ty) owns the 4 x 4 elements of the tile
 *    at rows tx + 16 r and columns ty + 16 s (r, s = 0..3): a strided micro-tile, so the
 *    16 threads of a half-warp touch 16 consecutive rows of C (coalesced stores in
 *    column-major C) and 16 consecutive words of the A tile in shared memory.
 *  - k loop: 16 at a time. The block stages a 64 x 16 panel of op(A) and a 16 x 64
 *    panel of op(B) in shared memory as f32 (4 elements per thread each), converting on
 *    load. Consecutive threads read consecutive addresses of the operand as stored
 *    (along m for A, along k for A^T; along k for B, along n for B^T); rows of the
 *    panels are padded to 65 floats so the transposed stores do not conflict on banks.
 *    Elements outside m, n or k are never read: the panel gets 0 there, and the
 *    edge-tile stores are masked.
 *  - Epilogue: each thread finishes its own elements: alpha * acc, plus beta * C only
 *    when beta != 0 (C is not read otherwise), the bias, ReLU or GELU, and the store.
 * Shared memory: 2 * 16 * 65 * 4 = 8320 bytes per block, static (GP_SHARED).
 */
#include <gpuport/kernel.h>
#include <gpuport/blas.h>

#include "kernels/common/gemm_epilogue.h"
#include "kernels/common/gemm_params.h"

#define BM GP__GEMM_TILE_M
#define BN GP__GEMM_TILE_N
#define BK GP__GEMM_TILE_K
#define TX GP__GEMM_THREADS_X
#define TY GP__GEMM_THREADS_Y
#define NT (TX * TY)
#define RM (BM / TX) /* rows per thread */
#define RN (BN / TY) /* columns per thread */

/* Fully unrolled loops over the micro-tile keep acc[][] in registers. */
#if defined(GP_TARGET_CPU)
#define GEMM_UNROLL _Pragma("GCC unroll 16")
#else
#define GEMM_UNROLL _Pragma("unroll")
#endif

GP_KERNEL void gp__gemm_portable(gp__gemm_params_t p) {
  GP_SHARED(float, As, [BK][BM + 1]);
  GP_SHARED(float, Bs, [BK][BN + 1]);
  const int tx = (int)threadIdx.x, ty = (int)threadIdx.y, tid = ty * TX + tx;
  const int64_t tiles_m = (p.m + BM - 1) / BM, tiles_n = (p.n + BN - 1) / BN;

  for (int64_t z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const void *a = p.k > 0 ? (const void *)gemm_offset(p.a, p.ab_type, z * p.stride_a) : 0;
    const void *b = p.k > 0 ? (const void *)gemm_offset(p.b, p.ab_type, z * p.stride_b) : 0;
    void *c = (void *)gemm_offset(p.c, p.c_type, z * p.stride_c);
    for (int64_t tn = blockIdx.y; tn < tiles_n; tn += gridDim.y) {
      for (int64_t tm = blockIdx.x; tm < tiles_m; tm += gridDim.x) {
        const int64_t i0 = tm * BM, j0 = tn * BN;
        float acc[RM][RN];
        GEMM_UNROLL for (int r = 0; r < RM; r++)
          GEMM_UNROLL for (int s = 0; s < RN; s++) acc[r][s] = 0.0f;

        for (int64_t k0 = 0; k0 < p.k; k0 += BK) {
          /* Stage op(A)[i0 .. i0+63][k0 .. k0+15] and op(B)[k0 .. k0+15][j0 .. j0+63]. */
          for (int e = tid; e < BM * BK; e += NT) {
            const int ii = p.trans_a ? e / BK : e % BM, kk = p.trans_a ? e % BK : e / BM;
            const int64_t gi = i0 + ii, gk = k0 + kk;
            float v = 0.0f;
            if (gi < p.m && gk < p.k)
              v = gp__elem_load(a, p.ab_type, p.trans_a ? gk + gi * p.lda : gi + gk * p.lda);
            As[kk][ii] = v;
          }
          for (int e = tid; e < BK * BN; e += NT) {
            const int jj = p.trans_b ? e % BN : e / BK, kk = p.trans_b ? e / BN : e % BK;
            const int64_t gj = j0 + jj, gk = k0 + kk;
            float v = 0.0f;
            if (gj < p.n && gk < p.k)
              v = gp__elem_load(b, p.ab_type, p.trans_b ? gj + gk * p.ldb : gk + gj * p.ldb);
            Bs[kk][jj] = v;
          }
          __syncthreads();
          GEMM_UNROLL for (int q = 0; q < BK; q++) {
            float av[RM], bv[RN];
            GEMM_UNROLL for (int r = 0; r < RM; r++) av[r] = As[q][tx + TX * r];
            GEMM_UNROLL for (int s = 0; s < RN; s++) bv[s] = Bs[q][ty + TY * s];
            GEMM_UNROLL for (int r = 0; r < RM; r++)
              GEMM_UNROLL for (int s = 0; s < RN; s++) acc[r][s] = fmaf(av[r], bv[s], acc[r][s]);
          }
          __syncthreads();
        }

        GEMM_UNROLL for (int s = 0; s < RN; s++) {
          const int64_t j = j0 + ty + TY * s;
          if (j >= p.n) continue;
          GEMM_UNROLL for (int r = 0; r < RM; r++) {
            const int64_t i = i0 + tx + TX * r;
            if (i >= p.m) continue;
            gemm_finish(&p, c, i, j, acc[r][s]);
          }
        }
      }
    }
  }
}
GP_KERNEL_EXPORT(gp__gemm_portable)
