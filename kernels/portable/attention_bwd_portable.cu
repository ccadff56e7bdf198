/*
 * attention_bwd_portable.cu - portable attention backward kernels (FlashAttention-2, Dao 2023,
 * Algorithm 2) in the gpuport dialect. One source for nvcc, hipcc and the CPU SIMT
 * executor; launched by kernels/portable/attention_portable_host.c (the portable
 * entries of src/attention_table.c) where no other family takes a call, and in the
 * kernel modes of GP_CPU_ATTENTION on the cpu backend. Correct everywhere rather than fast.
 *
 * Math (per sequence and query head; P recomputed from the forward's lse, so nothing
 * of size seqlen_q x seqlen_k is ever stored):
 *   P = exp(scale Q K^T - lse) (masked entries 0), dV = P^T dO, dP = dO V^T,
 *   D = rowsum(dO * O), dS = P * (dP - D), dQ = scale dS K, dK = scale dS^T Q;
 *   dK and dV of a key/value head are summed over the query heads of its group.
 *
 * Four launches, in stream order:
 *   pre   grid: one block per (tile of GP__ATTN_KQ = 16 query rows, query head,
 *         sequence); warp w takes rows w, w + 4, ...: D = rowsum(dO * O) by a lane-strided
 *         loop and gp_warp_reduce_sum, stored in the workspace; all threads zero the rows'
 *         dq accumulator in every slice in use.
 *   main  grid: one block per (split, query head, sequence), split fastest; split s takes
 *         key blocks s, s + nsplit, ... (non-deterministic mode: nsplit = the number of key
 *         blocks, so one each). block: GP__ATTN_KWARPS = 4 warps of GP_WARP_SIZE threads.
 *         For a key block of bk keys (gp__attn_bwd_block_k: 64, 32, 16 for
 *         max(d, d_v) <= 64, 128, 256) K and V are staged in shared memory (f32, rows
 *         padded by one float so a warp reading a column touches distinct banks), and
 *         the query rows that see any of its keys (gp__attn_query_range) stream past in
 *         tiles of bq rows (8, or 4 beyond 128):
 *           1. stage Q, dO, lse, D of the tile; barrier;
 *           2. thread t takes elements t, t + blockDim, ... of the bq x bk tile: for a
 *              visible (i, j), P = exp(scale q.k - lse) and dS = P (dO.v - D), else 0;
 *              barrier;
 *           3. dV += P^T dO and dK += dS^T Q in registers, each thread owning elements
 *              t, t + blockDim, ... of the bk x d tiles (at most GP__ATTN_BWD_TILE / 128
 *              per thread); dQ += dS K for the tile's rows, each (row, column) summed by
 *              one thread and added with atomicAdd to the f32 accumulator (deterministic
 *              mode: slice s, touched by this block alone and in key-block order);
 *              the next tile's first barrier ends the reads.
 *         At the end of a key block dK (scaled) and dV are stored in the gradient dtype,
 *         or, with GQA/MQA, in f32 per query head in the workspace.
 *   dq    grid as pre: dq = scale * (sum of the slices, in slice order) -> dtype.
 *   dkv   (GQA/MQA only) grid: one block per (tile of 16 key rows, key/value head,
 *         sequence): dk, dv = sums over the group's query heads, in head order -> dtype.
 * Every sum has a fixed order except the atomicAdd of non-deterministic mode, so
 * deterministic mode is bitwise reproducible.
 * Rows with no visible key (lse = -inf) take P = 0: they contribute nothing and get dq = 0.
 * Masks (causal bottom-right aligned, windows) come folded into (window_left,
 * window_right); gp__attn_key_range() decides each (i, j). Varlen: each block reads its
 * sequence's offsets; blocks past a sequence's end return before any barrier. Offsets
 * that do not fit the tensors or the workspace (kernels/common/attention_seq.h) fail the
 * launch before any read or write.
 * Numerics: inputs converted to f32, f32 products and sums (fmaf), one rounding to the
 * gradient dtype at the end; ref/ref_attention.h derives the bound.
 */
#include <math.h>
#include <gpuport/kernel.h>

#include "attention_impl.h"
#include "kernels/common/attention_seq.h"
#include "kernels/common/elem.h"

#if defined(__CUDACC__) || defined(__HIP__)
#define BWD_UNROLL _Pragma("unroll")
#else
#define BWD_UNROLL _Pragma("GCC unroll 8")
#endif

#define BWD_THREADS (GP__ATTN_KWARPS * GP_WARP_SIZE)
#define BWD_ACC (GP__ATTN_BWD_TILE / BWD_THREADS)

GP_KERNEL void gp__attention_bwd_portable_pre(gp__attn_bwd_params_t p) {
  const int tid = (int)threadIdx.x, nthreads = (int)blockDim.x;
  const int warp = tid / GP_WARP_SIZE, lane = tid % GP_WARP_SIZE;
  const int64_t hq = p.f.heads_q, d = p.f.head_dim, dv = p.f.head_dim_v;
  const int64_t tiles = (p.f.seqlen_q + GP__ATTN_KQ - 1) / GP__ATTN_KQ, blk = (int64_t)blockIdx.x;
  const int64_t tile = blk % tiles, h = (blk / tiles) % hq, b = blk / tiles / hq;
  const gp__attn_seq_t s = GP__ATTN_SEQUENCE(&p.f, b); /* before any barrier */
  const int64_t i0 = tile * GP__ATTN_KQ;
  if (i0 >= s.sq) return;
  const int rows = (int)(s.sq - i0 < GP__ATTN_KQ ? s.sq - i0 : GP__ATTN_KQ);
  const int64_t es = gp__elem_size(p.f.dtype);
  const char *ob = (const char *)p.f.o + b * p.f.o_bs * es;
  const char *dob = (const char *)p.d_o + b * p.f.o_bs * es;

  for (int r = warp; r < rows; r += GP__ATTN_KWARPS) { /* uniform per warp */
    const int64_t off = (s.q0 + i0 + r) * p.f.o_ss + h * p.f.o_hs;
    float acc = 0.0f;
    for (int64_t e = lane; e < dv; e += GP_WARP_SIZE)
      acc = fmaf(gp__elem_load(dob, p.f.dtype, off + e), gp__elem_load(ob, p.f.dtype, off + e), acc);
    acc = gp_warp_reduce_sum(acc);
    if (lane == 0) p.ws_d[(s.wq + i0 + r) * hq + h] = acc;
  }
  for (int64_t sl = 0; sl < p.nslices; sl++) {
    float *base = p.ws_dq + ((sl * p.rows_q + s.wq + i0) * hq + h) * d;
    for (int64_t idx = tid; idx < rows * d; idx += nthreads) base[(idx / d) * hq * d + idx % d] = 0.0f;
  }
}
GP_KERNEL_EXPORT(gp__attention_bwd_portable_pre)

GP_KERNEL void __launch_bounds__(BWD_THREADS) gp__attention_bwd_portable_main(gp__attn_bwd_params_t p) {
  GP_DYNAMIC_SHARED(float, smem);
  const int tid = (int)threadIdx.x;
  const int64_t hq = p.f.heads_q, group = hq / p.f.heads_kv;
  const int64_t d = p.f.head_dim, dv = p.f.head_dim_v, dmax = d > dv ? d : dv;
  const int bk = gp__attn_bwd_block_k(dmax), bq = gp__attn_bwd_block_q(dmax);
  const int64_t kld = d + 1, vld = dv + 1;
  float *ks = smem;                       /* [bk][kld] */
  float *vs = ks + bk * kld;              /* [bk][vld] */
  float *qs = vs + bk * vld;              /* [bq][d] */
  float *dos = qs + bq * d;               /* [bq][dv] */
  float *ps = dos + bq * dv;              /* [bq][bk] */
  float *dss = ps + bq * bk;              /* [bq][bk] */
  float *lses = dss + bq * bk;            /* [bq] */
  float *drow = lses + bq;                /* [bq] */

  const int64_t blk = (int64_t)blockIdx.x, nsplit = p.nsplit;
  const int64_t split = blk % nsplit, h = (blk / nsplit) % hq, b = blk / nsplit / hq;
  const int64_t hk = h / group;
  const gp__attn_seq_t s = GP__ATTN_SEQUENCE(&p.f, b); /* before any barrier */
  const int64_t nkb = (s.sk + bk - 1) / bk;
  const int64_t es = gp__elem_size(p.f.dtype);
  const char *qb = (const char *)p.f.q + b * p.f.q_bs * es;
  const char *kb_ = (const char *)p.f.k + b * p.f.k_bs * es;
  const char *vb = (const char *)p.f.v + b * p.f.v_bs * es;
  const char *dob = (const char *)p.d_o + b * p.f.o_bs * es;
  const float *lse = p.f.lse;
  const int64_t lse0 = p.f.cu_q ? h * s.total_q + s.q0
                                : (b * hq + h) * p.f.seqlen_q;
  float *dq_acc = p.ws_dq + ((p.deterministic ? split : 0) * p.rows_q + s.wq) * hq * d + h * d;

  for (int64_t kblk = split; kblk < nkb; kblk += nsplit) { /* uniform over the block */
    const int64_t j0 = kblk * bk;
    const int nk = (int)(s.sk - j0 < bk ? s.sk - j0 : bk);
    int64_t ilo, ihi;
    gp__attn_query_range(j0, j0 + nk - 1, s.sq, s.sk, p.f.window_left, p.f.window_right, &ilo, &ihi);
    float dk_acc[BWD_ACC], dv_acc[BWD_ACC];
    BWD_UNROLL
    for (int a = 0; a < BWD_ACC; a++) dk_acc[a] = dv_acc[a] = 0.0f;

    __syncthreads(); /* the previous key block's tiles are no longer read */
    for (int64_t idx = tid; idx < (int64_t)nk * d; idx += BWD_THREADS) {
      int64_t c = idx / d, e = idx % d;
      ks[c * kld + e] = gp__elem_load(kb_, p.f.dtype, (s.k0 + j0 + c) * p.f.k_ss + hk * p.f.k_hs + e);
    }
    for (int64_t idx = tid; idx < (int64_t)nk * dv; idx += BWD_THREADS) {
      int64_t c = idx / dv, e = idx % dv;
      vs[c * vld + e] = gp__elem_load(vb, p.f.dtype, (s.k0 + j0 + c) * p.f.v_ss + hk * p.f.v_hs + e);
    }

    for (int64_t i0 = ilo; i0 <= ihi; i0 += bq) {
      const int rows = (int)(ihi - i0 + 1 < bq ? ihi - i0 + 1 : bq);
      __syncthreads(); /* K, V staged; the previous tile's Q, dO, P, dS no longer read */
      for (int64_t idx = tid; idx < (int64_t)rows * d; idx += BWD_THREADS) {
        int64_t r = idx / d, e = idx % d;
        qs[r * d + e] = gp__elem_load(qb, p.f.dtype, (s.q0 + i0 + r) * p.f.q_ss + h * p.f.q_hs + e);
      }
      for (int64_t idx = tid; idx < (int64_t)rows * dv; idx += BWD_THREADS) {
        int64_t r = idx / dv, e = idx % dv;
        dos[r * dv + e] = gp__elem_load(dob, p.f.dtype, (s.q0 + i0 + r) * p.f.o_ss + h * p.f.o_hs + e);
      }
      for (int r = tid; r < rows; r += BWD_THREADS) {
        float l = lse[lse0 + i0 + r];
        lses[r] = l == -INFINITY ? INFINITY : l; /* a row with no visible key: P = 0 */
        drow[r] = p.ws_d[(s.wq + i0 + r) * hq + h];
      }
      __syncthreads(); /* Q, dO, lse, D staged */

      for (int idx = tid; idx < bq * bk; idx += BWD_THREADS) {
        const int r = idx / bk, c = idx % bk;
        float pr = 0.0f, ds = 0.0f;
        if (r < rows && c < nk) {
          int64_t rlo, rhi, j = j0 + c;
          gp__attn_key_range(i0 + r, s.sq, s.sk, p.f.window_left, p.f.window_right, &rlo, &rhi);
          if (j >= rlo && j <= rhi) {
            const float *qr = qs + (int64_t)r * d, *kr = ks + (int64_t)c * kld;
            const float *dor = dos + (int64_t)r * dv, *vr = vs + (int64_t)c * vld;
            float dot = 0.0f, dp = 0.0f;
            for (int64_t e = 0; e < d; e++) dot = fmaf(qr[e], kr[e], dot);
            for (int64_t e = 0; e < dv; e++) dp = fmaf(dor[e], vr[e], dp);
            pr = expf(dot * p.f.scale - lses[r]);
            ds = pr * (dp - drow[r]);
          }
        }
        ps[idx] = pr;
        dss[idx] = ds;
      }
      __syncthreads(); /* P and dS complete */

      BWD_UNROLL
      for (int a = 0; a < BWD_ACC; a++) {
        const int64_t idx = tid + (int64_t)a * BWD_THREADS;
        if (idx < (int64_t)bk * dv) {
          const int64_t c = idx / dv, e = idx % dv;
          float x = dv_acc[a];
          for (int r = 0; r < rows; r++) x = fmaf(ps[r * bk + c], dos[r * dv + e], x);
          dv_acc[a] = x;
        }
        if (idx < (int64_t)bk * d) {
          const int64_t c = idx / d, e = idx % d;
          float x = dk_acc[a];
          for (int r = 0; r < rows; r++) x = fmaf(dss[r * bk + c], qs[r * d + e], x);
          dk_acc[a] = x;
        }
      }
      for (int64_t idx = tid; idx < (int64_t)rows * d; idx += BWD_THREADS) {
        const int64_t r = idx / d, e = idx % d;
        float x = 0.0f;
        for (int c = 0; c < nk; c++) x = fmaf(dss[r * bk + c], ks[c * kld + e], x);
        atomicAdd(dq_acc + (i0 + r) * hq * d + e, x);
      }
    }

    BWD_UNROLL
    for (int a = 0; a < BWD_ACC; a++) {
      const int64_t idx = tid + (int64_t)a * BWD_THREADS;
      if (idx < (int64_t)nk * d) {
        const int64_t c = idx / d, e = idx % d;
        if (p.ws_dk)
          p.ws_dk[((s.wk + j0 + c) * hq + h) * d + e] = dk_acc[a];
        else
          gp__elem_store(p.dk, p.f.dtype, b * p.f.k_bs + (s.k0 + j0 + c) * p.f.k_ss + hk * p.f.k_hs + e,
                    dk_acc[a] * p.f.scale);
      }
      if (idx < (int64_t)nk * dv) {
        const int64_t c = idx / dv, e = idx % dv;
        if (p.ws_dv)
          p.ws_dv[((s.wk + j0 + c) * hq + h) * dv + e] = dv_acc[a];
        else
          gp__elem_store(p.dv, p.f.dtype, b * p.f.v_bs + (s.k0 + j0 + c) * p.f.v_ss + hk * p.f.v_hs + e,
                    dv_acc[a]);
      }
    }
  }
}
GP_KERNEL_EXPORT(gp__attention_bwd_portable_main)

GP_KERNEL void gp__attention_bwd_portable_dq(gp__attn_bwd_params_t p) {
  const int tid = (int)threadIdx.x, nthreads = (int)blockDim.x;
  const int64_t hq = p.f.heads_q, d = p.f.head_dim;
  const int64_t tiles = (p.f.seqlen_q + GP__ATTN_KQ - 1) / GP__ATTN_KQ, blk = (int64_t)blockIdx.x;
  const int64_t tile = blk % tiles, h = (blk / tiles) % hq, b = blk / tiles / hq;
  const gp__attn_seq_t s = GP__ATTN_SEQUENCE(&p.f, b); /* before any barrier */
  const int64_t i0 = tile * GP__ATTN_KQ;
  if (i0 >= s.sq) return;
  const int64_t rows = s.sq - i0 < GP__ATTN_KQ ? s.sq - i0 : GP__ATTN_KQ;
  for (int64_t idx = tid; idx < rows * d; idx += nthreads) {
    const int64_t r = idx / d, e = idx % d;
    const float *acc = p.ws_dq + ((s.wq + i0 + r) * hq + h) * d + e;
    float x = 0.0f;
    for (int64_t sl = 0; sl < p.nslices; sl++) x += acc[sl * p.rows_q * hq * d];
    gp__elem_store(p.dq, p.f.dtype, b * p.f.q_bs + (s.q0 + i0 + r) * p.f.q_ss + h * p.f.q_hs + e,
              x * p.f.scale);
  }
}
GP_KERNEL_EXPORT(gp__attention_bwd_portable_dq)

GP_KERNEL void gp__attention_bwd_portable_dkv(gp__attn_bwd_params_t p) {
  const int tid = (int)threadIdx.x, nthreads = (int)blockDim.x;
  const int64_t hq = p.f.heads_q, hkv = p.f.heads_kv, group = hq / hkv;
  const int64_t d = p.f.head_dim, dv = p.f.head_dim_v;
  const int64_t tiles = (p.f.seqlen_k + GP__ATTN_KQ - 1) / GP__ATTN_KQ, blk = (int64_t)blockIdx.x;
  const int64_t tile = blk % tiles, hk = (blk / tiles) % hkv, b = blk / tiles / hkv;
  const gp__attn_seq_t s = GP__ATTN_SEQUENCE(&p.f, b); /* before any barrier */
  const int64_t j0 = tile * GP__ATTN_KQ;
  if (j0 >= s.sk) return;
  const int64_t rows = s.sk - j0 < GP__ATTN_KQ ? s.sk - j0 : GP__ATTN_KQ;
  for (int64_t idx = tid; idx < rows * d; idx += nthreads) {
    const int64_t r = idx / d, e = idx % d;
    const float *acc = p.ws_dk + ((s.wk + j0 + r) * hq + hk * group) * d + e;
    float x = 0.0f;
    for (int64_t g = 0; g < group; g++) x += acc[g * d];
    gp__elem_store(p.dk, p.f.dtype, b * p.f.k_bs + (s.k0 + j0 + r) * p.f.k_ss + hk * p.f.k_hs + e,
              x * p.f.scale);
  }
  for (int64_t idx = tid; idx < rows * dv; idx += nthreads) {
    const int64_t r = idx / dv, e = idx % dv;
    const float *acc = p.ws_dv + ((s.wk + j0 + r) * hq + hk * group) * dv + e;
    float x = 0.0f;
    for (int64_t g = 0; g < group; g++) x += acc[g * dv];
    gp__elem_store(p.dv, p.f.dtype, b * p.f.v_bs + (s.k0 + j0 + r) * p.f.v_ss + hk * p.f.v_hs + e, x);
  }
}
GP_KERNEL_EXPORT(gp__attention_bwd_portable_dkv)
