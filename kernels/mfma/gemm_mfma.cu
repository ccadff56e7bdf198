/*
 * gemm_mfma.cu - GEMM on AMD CDNA matrix cores (MFMA) with 64-lane wavefronts, in the
 * gpuport dialect. Built by hipcc for gfx90a / gfx940 (the hip backend runs it for every
 * GEMM) and by the host compiler for the CPU executor at warp width 64, where
 * gpuport/amd_mfma.h emulates each MFMA lane by lane (GP_CPU_GEMM=mfma), so this exact
 * code is tested in CI against the float64 reference. kernels/mfma/gemm_mfma_host.c chooses and
 * launches it.
 *
 * Problem: the canonical column-major C = alpha op(A) op(B) + beta C of
 * kernels/common/gemm_params.h: any m, n, k, leading dimensions, transposes, batch and
 * strides; bf16 / f16 inputs through v_mfma_f32_32x32x8{bf16_1k,f16}, f32 inputs through
 * v_mfma_f32_32x32x2f32 (f32 products, not TF32); f32 accumulation; beta == 0 never reads
 * C; the gp_gemm_ex epilogues in f32; one rounding to c_type (f32, f16 or bf16).
 *
 * Decomposition
 *   grid   blockIdx.x over 128-row tiles of C (m), blockIdx.y over 128-column tiles (n),
 *          blockIdx.z over the batch; y and z are capped at 65535 by the host and the
 *          block loops over the rest (uniform trips, so every barrier is reached by all).
 *   block  256 threads = 4 wavefronts in 2 x 2; wavefront w owns the 64 x 64 sub-tile
 *          (m: 64 (w % 2), n: 64 (w / 2)) as 2 x 2 MFMA tiles of 32 x 32: 4 x 16 f32
 *          accumulator registers per lane (AGPRs on CDNA).
 *   MFMA   the instruction computes D[i][j] = sum_k X[i][k] Y[k][j] with X = op(B)^T rows
 *          (i = n) and Y = op(A)^T (j = m), so a lane's D register r holds
 *          C(m = l % 32, n = 8 (r/4) + 4 (l/32) + r % 4) (gpuport/amd_mfma.h): the 32
 *          lanes of one half hold 32 consecutive m of one column of the column-major C.
 *   k      64 bytes of k per stage: 32 bf16/f16 or 16 f32 values. Both operand tiles are
 *          staged in LDS as rows (m for A, n for B^T) of 64 bytes of k, 16-byte chunks
 *          swizzled by gp__amd_gemm_lds_off() (no bank conflicts on fragment reads or
 *          staging writes: test_amd_kernels.c checks it). Two stages (double buffering):
 *          while the MFMAs consume stage s, the global loads of stage s + 1 are in flight
 *          in registers (op(A)'s during the first half of the MFMAs, op(B)'s during the
 *          second) and are written to the other LDS buffer; one barrier per stage.
 *          32 KiB of LDS per block.
 *   frags  a lane reads one 16-byte chunk per operand sub-tile (ds_read_b128): 8 k values
 *          of one row for 16-bit types, used by two MFMAs (elements 0-3, then 4-7), or 4
 *          f32 values used by four 32x32x2 MFMAs. The k order inside a stage is permuted
 *          (lane half h of step s takes k = 16g + 8h + 4s + e, resp. 8g + 4h + s), the
 *          same permutation for both operands, so the sum is unchanged.
 *   loads  staging takes 16-byte chunks: where k is contiguous in memory (op(A) = A^T,
 *          op(B) = B), a 16-byte load per chunk, 4 threads per 64-byte row segment;
 *          where the tile rows are contiguous (op(A) = A, op(B) = B^T), each thread loads
 *          2 adjacent rows x one chunk of k (pairs of 2 elements, 64 threads per 128
 *          rows: coalesced) and transposes in registers. A chunk that is not fully inside
 *          m / n / k, or an operand whose base or leading dimension is not aligned for the
 *          vector load, takes element loads with the bounds checked; outside elements are 0.
 *   end    the accumulators pass through LDS (each wavefront's 8 KiB, 32 x 64 floats at
 *          a time) so that each store instruction writes 64 consecutive m of C, and the
 *          epilogue (alpha, beta C, bias, activation, conversion) is one loop body.
 */
#ifndef GP_WARP_SIZE
#define GP_WARP_SIZE 64
#endif
#include <gpuport/kernel.h>
#include <gpuport/amd_mfma.h>
#include <gpuport/blas.h>

#include "kernels/mfma/mfma.h"
#include "kernels/common/gemm_params.h"
#include "kernels/common/gemm_epilogue.h"

#define BM GP__AMD_GEMM_BM
#define BN GP__AMD_GEMM_BN
#define NT GP__AMD_GEMM_THREADS
#define TILEB GP__AMD_GEMM_TILE_BYTES

#if defined(GP_TARGET_CPU)
#define MF_UNROLL /* the CPU build: left to the compiler (quicker to build) */
#define MF_NOUNROLL /* the CPU build needs no hint */
#define MF_INLINE static inline __attribute__((always_inline))
#else
#define MF_UNROLL _Pragma("unroll")
#define MF_NOUNROLL _Pragma("unroll 1")
#define MF_INLINE static __device__ __forceinline__
#endif

enum { KIND_BF16 = 0, KIND_F16 = 1, KIND_F32 = 2 };

/* Global memory accesses. On AMDGPU a pointer read from a by-value struct is generic
 * (flat_load, which also waits on the LDS counter); MF_GLOBAL (address space 1) makes
 * them global_load / global_store. The vector loads go through native vector types
 * (HIP's uint4 cannot be copied out of another address space). */
#if defined(GP_TARGET_HIP)
#define MF_GLOBAL __attribute__((address_space(1)))
typedef unsigned mf_u32x4 __attribute__((ext_vector_type(4)));
typedef unsigned mf_u32x2 __attribute__((ext_vector_type(2)));
MF_INLINE uint4 mf_ld16(const MF_GLOBAL char *q) {
  const mf_u32x4 v = *(const MF_GLOBAL mf_u32x4 *)q;
  return make_uint4(v.x, v.y, v.z, v.w);
}
MF_INLINE uint2 mf_ld8(const MF_GLOBAL char *q) {
  const mf_u32x2 v = *(const MF_GLOBAL mf_u32x2 *)q;
  return make_uint2(v.x, v.y);
}
#else
#define MF_GLOBAL
MF_INLINE uint4 mf_ld16(const char *q) { return *(const uint4 *)q; }
MF_INLINE uint2 mf_ld8(const char *q) { return *(const uint2 *)q; }
#endif

/* One operand as the staging code sees it: tile row `row` and k index `kk` are at
 * element kk + row * ld (k contiguous) or row + kk * ld (rows contiguous). */
typedef struct mf_opnd {
  const MF_GLOBAL char *base; /* this batch entry's matrix */
  int64_t ld;       /* leading dimension in elements */
  int64_t rows;     /* extent of the tile rows: m for op(A), n for op(B)^T */
  int kcontig;      /* 1: k is the contiguous dimension */
  int vec;          /* 1: base and ld allow the vector loads */
} mf_opnd_t;

/* ---- element access ---------------------------------------------------------------------- */
MF_INLINE uint32_t mf_elem(const mf_opnd_t *o, int64_t row, int64_t kk, int es) {
  const int64_t i = o->kcontig ? kk + row * o->ld : row + kk * o->ld;
  if (es == 2) return ((const MF_GLOBAL uint16_t *)o->base)[i];
  return ((const MF_GLOBAL uint32_t *)o->base)[i];
}

/* ---- staging: global -> registers -> LDS ------------------------------------------------- */

/* A thread stages two 16-byte chunks of each operand tile per stage. Chunks that lie
 * inside the matrix, of an operand aligned for vector loads, are loaded ahead into
 * registers (mf_stage_load) and written to LDS after the MFMAs (mf_stage_store); the
 * others (edges of m, n or k; misaligned operands) are copied element by element at
 * store time, 0 outside the matrix: short code, few registers, slower only at edges. */

/* What one thread stages of one operand tile, fixed for the tile: the tile rows of its
 * chunks, the k offset of its chunk within a stage, and where its fast loads start (at
 * k = 0; a stage adds k0 times kstride bytes, a uniform value). */
typedef struct mf_view {
  const MF_GLOBAL char *q[2]; /* k contiguous: chunk s; rows contiguous: q[0], the row pair */
  int64_t kstride;            /* bytes per step of k: es, or ld * es with rows contiguous */
  int r[2];                   /* tile rows: chunk s (k contiguous), the pair (rows contiguous) */
  int in[2];                  /* 1: that row (k contiguous) / both rows of the pair are inside */
  int koff;                   /* k of the first element of this thread's chunks, in the stage */
  int c;                      /* the chunk index (0..3) of this thread's chunks */
} mf_view_t;

MF_INLINE void mf_view_init(mf_view_t *v, const mf_opnd_t *o, int64_t row0, int es, int tid) {
  const int ch = 16 / es;
  if (o->kcontig) {
    v->c = tid % 4;
    v->koff = v->c * ch;
    v->kstride = es;
    MF_UNROLL for (int s = 0; s < 2; s++) {
      v->r[s] = tid / 4 + 64 * s;
      v->in[s] = row0 + v->r[s] < o->rows;
      v->q[s] = v->in[s] && o->base ? o->base + ((row0 + v->r[s]) * o->ld + v->koff) * es : o->base;
    }
  } else {
    v->c = tid / 64;
    v->koff = v->c * ch;
    v->kstride = o->ld * es;
    v->r[0] = 2 * (tid % 64);
    v->r[1] = v->r[0] + 1;
    v->in[0] = v->in[1] = row0 + v->r[1] < o->rows;
    v->q[0] = v->q[1] = v->in[0] && o->base ? o->base + (row0 + v->r[0] + v->koff * o->ld) * es : o->base;
  }
}

/* Chunk c of tile row r (global row `row`, k from kk), element by element, 0 outside. */
MF_INLINE void mf_copy_chunk(unsigned char *tile, const mf_opnd_t *o, int r, int c, int64_t row,
                             int64_t kk, int64_t K, int es) {
  unsigned char *dst = tile + gp__amd_gemm_lds_off(r, c);
  MF_NOUNROLL for (int e = 0; e < 16 / es; e++) {
    const uint32_t v = (row < o->rows && kk + e < K) ? mf_elem(o, row, kk + e, es) : 0u;
    if (es == 2) {
      const uint16_t h = (uint16_t)v;
      memcpy(dst + 2 * e, &h, 2);
    } else {
      memcpy(dst + 4 * e, &v, 4);
    }
  }
}

/* The low (high) halves of two 32-bit words, a's in the low half of the result. */
MF_INLINE uint32_t mf_lo16s(uint32_t a, uint32_t b) { return (a & 0xffffu) | (b << 16); }
MF_INLINE uint32_t mf_hi16s(uint32_t a, uint32_t b) { return (a >> 16) | (b & 0xffff0000u); }

/* Loads this thread's fast chunks of the stage starting at k0; returns which were loaded
 * (bit s: chunk s; rows contiguous: both or none). */
MF_INLINE int mf_stage_load(const mf_opnd_t *o, const mf_view_t *v, int64_t k0, int64_t K, int es,
                            uint4 st[2]) {
  const int ch = 16 / es;
  const bool kin = o->vec && k0 + v->koff + ch <= K;
  const int64_t adv = k0 * v->kstride;
  if (o->kcontig) {
    int fast = 0;
    MF_UNROLL for (int s = 0; s < 2; s++) {
      if (kin && v->in[s]) {
        st[s] = mf_ld16(v->q[s] + adv);
        fast |= 1 << s;
      }
    }
    return fast;
  }
  if (!(kin && v->in[0])) return 0;
  const MF_GLOBAL char *q = v->q[0] + adv;
  if (es == 2) { /* 8 k x 2 rows of 16 bits: the row pair as one 32-bit load per k */
    uint32_t w[8];
    MF_UNROLL for (int e = 0; e < 8; e++) w[e] = *(const MF_GLOBAL uint32_t *)(q + e * v->kstride);
    st[0] = make_uint4(mf_lo16s(w[0], w[1]), mf_lo16s(w[2], w[3]), mf_lo16s(w[4], w[5]), mf_lo16s(w[6], w[7]));
    st[1] = make_uint4(mf_hi16s(w[0], w[1]), mf_hi16s(w[2], w[3]), mf_hi16s(w[4], w[5]), mf_hi16s(w[6], w[7]));
  } else { /* 4 k x 2 rows of f32 */
    uint2 w[4];
    MF_UNROLL for (int e = 0; e < 4; e++) w[e] = mf_ld8(q + e * v->kstride);
    st[0] = make_uint4(w[0].x, w[1].x, w[2].x, w[3].x);
    st[1] = make_uint4(w[0].y, w[1].y, w[2].y, w[3].y);
  }
  return 3;
}

/* Writes this thread's chunks of the stage starting at k0 into an operand tile of LDS:
 * the registers of the fast ones, the others copied from global memory now. With rows
 * contiguous, odd row pairs store their second row first, so each 8-lane group of one
 * store instruction covers both row parities (no bank conflict). */
MF_INLINE void mf_stage_store(unsigned char *tile, const mf_opnd_t *o, const mf_view_t *v,
                              int64_t row0, int64_t k0, int64_t K, int es, const uint4 st[2],
                              int fast) {
  const int64_t kk = k0 + v->koff;
  if (o->kcontig) {
    MF_UNROLL for (int s = 0; s < 2; s++) {
      if (fast & (1 << s))
        *(uint4 *)(tile + gp__amd_gemm_lds_off(v->r[s], v->c)) = st[s];
      else
        mf_copy_chunk(tile, o, v->r[s], v->c, row0 + v->r[s], kk, K, es);
    }
    return;
  }
  const int first = (v->r[0] >> 1) & 1;
  if (fast) {
    const uint4 x = st[0], y = st[1];
    /* Component-wise selects: selecting st[first] would index a private array (scratch). */
    const uint4 a = make_uint4(first ? y.x : x.x, first ? y.y : x.y, first ? y.z : x.z, first ? y.w : x.w);
    const uint4 b = make_uint4(first ? x.x : y.x, first ? x.y : y.y, first ? x.z : y.z, first ? x.w : y.w);
    *(uint4 *)(tile + gp__amd_gemm_lds_off(v->r[0] + first, v->c)) = a;
    *(uint4 *)(tile + gp__amd_gemm_lds_off(v->r[0] + (first ^ 1), v->c)) = b;
  } else {
    mf_copy_chunk(tile, o, v->r[0], v->c, row0 + v->r[0], kk, K, es);
    mf_copy_chunk(tile, o, v->r[1], v->c, row0 + v->r[1], kk, K, es);
  }
}

/* ---- the MFMAs of one stage --------------------------------------------------------------- */
GP_DEVICE gp_amd_b16x4_t mf_half(uint4 v, int s) {
  const uint32_t w0 = s ? v.z : v.x, w1 = s ? v.w : v.y;
  gp_amd_b16x4_t x;
  x[0] = (short)(w0 & 0xffffu);
  x[1] = (short)(w0 >> 16);
  x[2] = (short)(w1 & 0xffffu);
  x[3] = (short)(w1 >> 16);
  return x;
}

GP_DEVICE float mf_word(uint4 v, int s) {
  return __uint_as_float(s == 0 ? v.x : s == 1 ? v.y : s == 2 ? v.z : v.w);
}

/* acc[a][b] += X_a Y_b over half g (32 bytes of k) of the stage staged in xt (op(B)^T)
 * and yt (op(A)). */
MF_INLINE void mf_stage_mfma(const unsigned char *xt, const unsigned char *yt, int g, int lane,
                             int wn, int wm, int kind, gp_amd_f32x16_t acc[2][2]) {
  {
    const int c = 2 * g + lane / 32;
    uint4 xv[2], yv[2];
    MF_UNROLL for (int a = 0; a < 2; a++)
      xv[a] = *(const uint4 *)(xt + gp__amd_gemm_lds_off(64 * wn + 32 * a + lane % 32, c));
    MF_UNROLL for (int b = 0; b < 2; b++)
      yv[b] = *(const uint4 *)(yt + gp__amd_gemm_lds_off(64 * wm + 32 * b + lane % 32, c));
    if (kind == KIND_F32) {
      MF_UNROLL for (int s = 0; s < 4; s++)
        MF_UNROLL for (int a = 0; a < 2; a++)
          MF_UNROLL for (int b = 0; b < 2; b++)
            acc[a][b] = gp_amd_mfma_f32_32x32x2f32(mf_word(xv[a], s), mf_word(yv[b], s), acc[a][b]);
    } else {
      MF_UNROLL for (int s = 0; s < 2; s++)
        MF_UNROLL for (int a = 0; a < 2; a++)
          MF_UNROLL for (int b = 0; b < 2; b++) {
            if (kind == KIND_BF16)
              acc[a][b] = gp_amd_mfma_f32_32x32x8bf16_1k(mf_half(xv[a], s), mf_half(yv[b], s), acc[a][b]);
            else
              acc[a][b] = gp_amd_mfma_f32_32x32x8f16(mf_half(xv[a], s), mf_half(yv[b], s), acc[a][b]);
          }
    }
  }
}

/* ---- the kernel body ---------------------------------------------------------------------- */
MF_INLINE bool mf_aligned(const MF_GLOBAL char *p, int64_t bytes) {
  return ((uintptr_t)p % (uintptr_t)bytes) == 0;
}

MF_INLINE void mf_gemm(const gp__gemm_params_t *pp, int kind) {
  const gp__gemm_params_t p = *pp;
  GP_SHARED(uint4, lds, [GP__AMD_GEMM_LDS_BYTES / 16]);
  unsigned char *const smem = (unsigned char *)lds;
  const int tid = (int)threadIdx.x, lane = tid % 64, w = tid / 64, wm = w % 2, wn = w / 2;
  const int es = kind == KIND_F32 ? 4 : 2;
  const int64_t bk = GP__AMD_GEMM_ROW_BYTES / es; /* k per stage */
  const int64_t tiles_m = (p.m + BM - 1) / BM, tiles_n = (p.n + BN - 1) / BN;
  const int64_t nk = (p.k + bk - 1) / bk;
  const int64_t c_es = p.c_type == GP_F32 ? 4 : 2;

  for (int64_t z = blockIdx.z; z < p.batch; z += gridDim.z) {
    mf_opnd_t oa, ob; /* op(A): rows m; op(B)^T: rows n */
    oa.base = p.k > 0 ? (const MF_GLOBAL char *)p.a + z * p.stride_a * es : 0;
    oa.ld = p.lda;
    oa.rows = p.m;
    oa.kcontig = p.trans_a != 0;
    ob.base = p.k > 0 ? (const MF_GLOBAL char *)p.b + z * p.stride_b * es : 0;
    ob.ld = p.ldb;
    ob.rows = p.n;
    ob.kcontig = p.trans_b == 0;
    oa.vec = oa.kcontig ? mf_aligned(oa.base, 16) && (p.lda * es) % 16 == 0
                        : mf_aligned(oa.base, 2 * es) && p.lda % 2 == 0;
    ob.vec = ob.kcontig ? mf_aligned(ob.base, 16) && (p.ldb * es) % 16 == 0
                        : mf_aligned(ob.base, 2 * es) && p.ldb % 2 == 0;
    char *const c = (char *)p.c + z * p.stride_c * c_es;

    for (int64_t tn = blockIdx.y; tn < tiles_n; tn += gridDim.y) {
      for (int64_t tm = blockIdx.x; tm < tiles_m; tm += gridDim.x) {
        const int64_t m0 = tm * BM, n0 = tn * BN;
        gp_amd_f32x16_t acc[2][2];
        MF_UNROLL for (int a = 0; a < 2; a++)
          MF_UNROLL for (int b = 0; b < 2; b++)
            MF_UNROLL for (int r = 0; r < 16; r++) acc[a][b][r] = 0.0f;

        if (nk > 0) {
          mf_view_t va, vb;
          mf_view_init(&va, &oa, m0, es, tid);
          mf_view_init(&vb, &ob, n0, es, tid);
          uint4 sa[2], sb[2];
          int fa = mf_stage_load(&oa, &va, 0, p.k, es, sa);
          int fb = mf_stage_load(&ob, &vb, 0, p.k, es, sb);
          mf_stage_store(smem, &oa, &va, m0, 0, p.k, es, sa, fa);
          mf_stage_store(smem + TILEB, &ob, &vb, n0, 0, p.k, es, sb, fb);
          __syncthreads();
          for (int64_t kt = 0; kt < nk; kt++) {
            const int buf = (int)(kt & 1);
            const bool next = kt + 1 < nk;
            const int64_t k1 = (kt + 1) * bk;
            const unsigned char *xt = smem + (2 * buf + 1) * TILEB, *yt = smem + 2 * buf * TILEB;
            unsigned char *na = smem + 2 * (buf ^ 1) * TILEB, *nb = na + TILEB;
            /* The next stage's loads are in flight during the MFMAs: op(A)'s during the
             * first half of the stage, op(B)'s during the second (so only one operand's
             * staging registers are live at a time). */
            if (next) fa = mf_stage_load(&oa, &va, k1, p.k, es, sa);
            mf_stage_mfma(xt, yt, 0, lane, wn, wm, kind, acc);
            if (next) {
              mf_stage_store(na, &oa, &va, m0, k1, p.k, es, sa, fa);
              fb = mf_stage_load(&ob, &vb, k1, p.k, es, sb);
            }
            mf_stage_mfma(xt, yt, 1, lane, wn, wm, kind, acc);
            if (next) mf_stage_store(nb, &ob, &vb, n0, k1, p.k, es, sb, fb);
            __syncthreads(); /* the other buffer is complete; this one may be overwritten */
          }
        }

        /* Epilogue through LDS (free after the k loop's last barrier), one 32 x 64
         * half of the wavefront's sub-tile at a time: the registers go to the
         * wavefront's 8 KiB as [n][m] floats, then each lane finishes elements
         * lane, lane + 64, ...: one line of code per element (not 64 unrolled copies),
         * and 64 consecutive m per store instruction. */
        float *const wbuf = (float *)(smem + w * (GP__AMD_GEMM_LDS_BYTES / 4));
        const int64_t mw = m0 + 64 * wm;
        MF_UNROLL for (int a = 0; a < 2; a++) {
          MF_UNROLL for (int b = 0; b < 2; b++)
            MF_UNROLL for (int r = 0; r < 16; r++)
              wbuf[(8 * (r / 4) + 4 * (lane / 32) + r % 4) * 64 + 32 * b + lane % 32] = acc[a][b][r];
          gp_syncwarp();
          const int64_t nw = n0 + 64 * wn + 32 * a;
          for (int e = lane; e < 32 * 64; e += 64) {
            const int64_t n = nw + e / 64, m = mw + e % 64;
            if (m < p.m && n < p.n) gemm_finish(&p, c, m, n, wbuf[e]);
          }
          gp_syncwarp();
        }
        __syncthreads(); /* LDS is the next tile's staging area again */
      }
    }
  }
}

GP_KERNEL void __launch_bounds__(256) gp__gemm_mfma_bf16(gp__gemm_params_t p) { mf_gemm(&p, KIND_BF16); }
GP_KERNEL_EXPORT(gp__gemm_mfma_bf16)
GP_KERNEL void __launch_bounds__(256) gp__gemm_mfma_f16(gp__gemm_params_t p) { mf_gemm(&p, KIND_F16); }
GP_KERNEL_EXPORT(gp__gemm_mfma_f16)
GP_KERNEL void __launch_bounds__(256) gp__gemm_mfma_f32(gp__gemm_params_t p) { mf_gemm(&p, KIND_F32); }
GP_KERNEL_EXPORT(gp__gemm_mfma_f32)
