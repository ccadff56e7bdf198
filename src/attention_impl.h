/*
 * attention_impl.h - what src/attention.c hands to the attention implementations
 * (src/cpu/attention_cpu.c and the portable kernel src/kernels/attention.cu): the
 * checked parameters of one call with every default resolved, and the mask rule.
 *
 * Included from C and from dialect sources (C++ on every target), so it holds only
 * plain data and GP_HOST_DEVICE inline functions. Nothing here is public.
 */
#ifndef GP_ATTENTION_IMPL_H
#define GP_ATTENTION_IMPL_H

#include <stdint.h>
#include <gpuport/export.h>
#include <gpuport/status.h>
#include <gpuport/types.h>
#include <gpuport/runtime.h>
#include <gpuport/attention.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One checked attention call. Strides are in elements and already defaulted; the
 * window already includes causal (causal is window_right = 0, intersected with the
 * user's window). Varlen: cu_q/cu_k non-NULL, seqlen_q/seqlen_k are the maxima, the
 * batch strides are unused and lse is [heads_q, total_q]. Passed by value to the
 * portable kernel, so it stays plain data. */
typedef struct gp__attn_params {
  const void *q, *k, *v;
  void *o;
  float *lse;                     /* NULL: not wanted */
  const int32_t *cu_q, *cu_k;     /* varlen prefix sums (device memory), or NULL */
  int64_t batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, head_dim_v;
  int64_t q_bs, q_ss, q_hs;
  int64_t k_bs, k_ss, k_hs;
  int64_t v_bs, v_ss, v_hs;
  int64_t o_bs, o_ss, o_hs;
  int64_t window_left, window_right; /* -1: unbounded on that side */
  float scale;                    /* softmax scale, resolved */
  int dtype;                      /* gp_dtype_t: GP_F32, GP_F16 or GP_BF16 */
} gp__attn_params_t;

/* Visible keys of query row i of a sequence with sq queries and sk keys: the inclusive
 * range [*lo, *hi], empty when *lo > *hi. The diagonal is bottom-right aligned
 * (FlashAttention 2.1+): row i's diagonal key is i + sk - sq; a window keeps
 * diag - wl <= j <= diag + wr, -1 meaning unbounded. Both ends grow with i, so the
 * keys of a block of rows i0..i1 are [lo(i0), hi(i1)]. */
static inline GP_HOST_DEVICE void gp__attn_key_range(int64_t i, int64_t sq, int64_t sk,
                                                     int64_t wl, int64_t wr, int64_t *lo,
                                                     int64_t *hi) {
  int64_t diag = i + sk - sq, a = 0, b = sk - 1;
  if (wl >= 0 && diag - wl > a) a = diag - wl;
  if (wr >= 0 && diag + wr < b) b = diag + wr;
  *lo = a;
  *hi = b;
}

/* Environment switch of the CPU backend: GP_CPU_ATTENTION=portable runs the portable
 * dialect kernel on the SIMT executor instead of the tiled host implementation;
 * GP_CPU_ATTENTION=mfma runs what the hip backend runs (the AMD MFMA kernels where they
 * apply, MFMA emulated at wave64, else the portable kernel). */
#define GP__ATTN_ENV "GP_CPU_ATTENTION"

/* Geometry of the portable kernel (src/kernels/attention.cu), shared with its launch:
 * GP__ATTN_KWARPS warps of GP_WARP_SIZE threads, GP__ATTN_KQ query rows per block, and
 * a key tile of gp__attn_kernel_block_k() rows chosen so the dynamic shared memory
 * (query tile + one key-or-value tile + the score tile, all f32) stays under 48 KiB,
 * the default limit of every target, for every head_dim up to 256. */
#define GP__ATTN_KWARPS 4
#define GP__ATTN_KQ 16
#define GP__ATTN_MAX_DIM 256

static inline GP_HOST_DEVICE int gp__attn_kernel_block_k(int64_t dmax) {
  return dmax <= 64 ? 64 : dmax <= 128 ? 32 : 16;
}

/* Dynamic shared memory of the portable kernel, in floats: the query tile
 * [KQ][head_dim], the key/value tile [block_k][max(head_dim, head_dim_v) + 1] (padded
 * so a warp reading a column of it touches distinct banks), the scores [KQ][block_k]. */
static inline GP_HOST_DEVICE int64_t gp__attn_kernel_smem_floats(int64_t d, int64_t dv) {
  int64_t dmax = d > dv ? d : dv, bk = gp__attn_kernel_block_k(dmax);
  return GP__ATTN_KQ * d + bk * (dmax + 1) + GP__ATTN_KQ * bk;
}

/* CPU backend: enqueues the tiled host implementation on stream (already resolved)
 * in stream order; p is copied. Writes a short name of the implementation chosen (for
 * the INFO line) into what. Defined in src/cpu/attention_cpu.c. */
gp_status_t gp__cpu_attention_fwd(gp_stream_t stream, const gp__attn_params_t *p, char *what,
                                  size_t what_len);

/* hip and cpu backends (src/attention_amd.c): whether the AMD MFMA kernels
 * (hip/attention_mfma.cu) take p; 1 with *kernel set, or 0 with the reason in why. The
 * launch of that kernel, with its description (for the INFO line) in what. */
int gp__attn_amd_choose(const gp__attn_params_t *p, gp_kernel_t *kernel, char *why, size_t why_len);
gp_status_t gp__attn_amd_launch(gp_stream_t stream, const gp__attn_params_t *p, gp_kernel_t kernel,
                                char *what, size_t what_len);

/* gp_attention_fwd running a given build of the portable kernel (the tests run a
 * width-64 build on the CPU executor, as HIP runs it). Defined in src/attention.c. */
gp_status_t gp__attention_fwd_kernel(gp_stream_t stream, const gp_attention_desc_t *desc,
                                     gp_kernel_t kernel);

#ifdef __cplusplus
}
#endif

#endif /* GP_ATTENTION_IMPL_H */
