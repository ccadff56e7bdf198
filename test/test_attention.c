/*
 * test_attention.c - gp_attention_fwd against the float64 reference (ref/ref_attention.h).
 *
 * Every case draws fresh inputs (uniform in [-1, 1), never zero) from the seed printed
 * at start (replay with GP_TEST_SEED=<seed>), poisons o and lse with NaN, runs the call,
 * and checks every output element against its bound, the relative norm of the error,
 * every lse value, and that elements of o outside the output (stride gaps) are untouched.
 * On the cpu backend every case runs three ways: the host implementation, the portable
 * dialect kernel under the SIMT executor (GP_CPU_ATTENTION=portable, warp width 32 as on
 * CUDA), a width-64 build of the same kernel (as HIP runs it; the Makefile's W64_FLAGS
 * build of kernels/portable/attention_fwd_portable.cu) through the internal gp__attention_fwd_kernel(), and
 * the sm_80 kernels (kernels/sm80/) with their mma.sync, ldmatrix and cp.async emulated
 * (GP_CPU_ATTENTION=sm80, warp width 32 only: they are NVIDIA kernels; cases they do not
 * take run the portable kernel there, as on a GPU), and the AMD MFMA kernels (kernels/mfma/) at
 * wave64 with each MFMA emulated (GP_CPU_ATTENTION=mfma: every case they take, plus the
 * smallest they leave to the portable kernel). Every head_dim the sm_80 kernels have
 * (32, 64, 96, 128, 256) and every one the MFMA kernels have (32, 64, 128) appears in f16
 * or bf16 cases below, with causal masks at seqlen_q < and > seqlen_k, GQA/MQA, sliding
 * windows, varlen, packed and padded layouts (L_PAD: rows that allow no 16-byte load, so
 * the MFMA kernels' element-load path runs).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuport.h>

#include "attention_impl.h"
#include "check_util.h"
#include "dispatch.h"
#include "dispatch_hook.h"
#include "attn_bad_varlen.h"
#if defined(GP_BUILD_CPU)
#include "kernels/cpu/attention_cpu.h"
#endif
#include "ref.h"
#include "ref_attention.h"

#if defined(GP_BUILD_CPU)
GP_KERNEL_DECLARE(gp__attention_fwd_portable_w64);
#endif

enum mode { M_DEFAULT = 0, M_PORTABLE = 1, M_W64 = 2, M_SM80 = 3, M_MFMA = 4, M_SM90A = 5 };
static const char *const mode_names[] = {"host", "portable", "warp64", "sm80", "mfma", "sm90a"};
/* The CPU mode (GP_CPU_ATTENTION) each test mode sets; warp64 runs a given kernel build. */
static const int mode_cpu[] = {GP__CPU_HOST, GP__CPU_PORTABLE, GP__CPU_HOST, GP__CPU_SM80, GP__CPU_MFMA,
                               GP__CPU_SM90A};

static uint64_t g_seed;

enum layout {
  L_DEFAULT = 0, /* [batch, seq, heads, dim] */
  L_QKV = 1,     /* q, k, v slices of one packed [batch, seq, hq + 2 hkv, dim] tensor; o padded */
  L_BHSD = 2,    /* [batch, heads, seq, dim] for q, k, v and o */
  L_PAD = 3      /* default layout with q, k, v rows padded by 3 elements (odd strides) */
};

typedef struct acase {
  const char *name;
  gp_dtype_t dtype;
  int64_t batch, sq, sk, hq, hkv, d, dv;
  int causal;
  int64_t wl, wr;
  int layout;
  int lse;
  float scale;
  int portable;             /* also run on the executor */
  const int32_t *lens_q;    /* varlen: per-sequence lengths (batch of them), else NULL */
  const int32_t *lens_k;
  int own_stream;           /* a created stream with asynchronous copies */
  int shift;                /* q, k, v one element past a 16-byte boundary (not L_QKV) */
} acase_t;

static const int32_t vq1[] = {17, 64, 1}, vk1[] = {40, 5, 33};
static const int32_t vq2[] = {50, 13}, vk2[] = {50, 100};
static const int32_t vq3[] = {9, 1, 30, 16}, vk3[] = {12, 31, 2, 16};

#define NOWIN -1, -1
static const acase_t cases[] = {
    /* name                        dtype    b  sq   sk  hq hkv  d    dv c  window   layout    lse scale port */
    {"f32 d64 113x203",            GP_F32,  2, 113, 203, 4, 4, 64,  0, 0, NOWIN,   L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"f16 d64 113x203 gqa causal", GP_F16,  2, 113, 203, 4, 2, 64,  0, 1, NOWIN,   L_DEFAULT, 1, 0, 1, NULL, NULL, 1, 0},
    {"bf16 d128 128x217 mqa causal", GP_BF16, 1, 128, 217, 4, 1, 128, 0, 1, NOWIN, L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"f16 d32 64x33 causal sq>sk", GP_F16,  2, 64,  33,  2, 1, 32,  0, 1, NOWIN,   L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"f32 d96 1x1",                GP_F32,  3, 1,   1,   2, 2, 96,  0, 0, NOWIN,   L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"f16 d256 64x97 window",      GP_F16,  1, 64,  97,  2, 1, 256, 0, 0, 16, 8,   L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"bf16 d40 113x203 causal+win", GP_BF16, 2, 113, 203, 2, 2, 40, 0, 1, 32, -1,  L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"f32 d72 128x217 right win",  GP_F32,  1, 128, 217, 3, 1, 72,  0, 0, -1, 4,   L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"f16 d96/48 128x217",         GP_F16,  1, 128, 217, 2, 2, 96,  48, 0, NOWIN,  L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"bf16 d256 1x1 diag",         GP_BF16, 2, 1,   1,   2, 1, 256, 0, 0, 0, 0,    L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"f32 d256 64x33 scale",       GP_F32,  1, 64,  33,  2, 2, 256, 0, 0, NOWIN,   L_DEFAULT, 1, 0.3f, 1, NULL, NULL, 0, 0},
    {"f16 d64 113x203 diag band",  GP_F16,  1, 113, 203, 2, 2, 64,  0, 0, 0, 0,    L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"f32 d32 64x33 band sq>sk",   GP_F32,  1, 64,  33,  2, 2, 32,  0, 0, 3, 2,    L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"bf16 d64 33x96 causal sq<sk", GP_BF16, 2, 33, 96,  2, 2, 64,  0, 1, NOWIN,   L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"f16 d64 varlen causal",      GP_F16,  3, 64,  40,  2, 1, 64,  0, 1, NOWIN,   L_DEFAULT, 1, 0, 1, vq1, vk1, 0, 0},
    {"bf16 d128 varlen gqa window", GP_BF16, 2, 50, 100, 4, 2, 128, 0, 0, 8, 8,    L_DEFAULT, 1, 0, 1, vq2, vk2, 1, 0},
    {"f32 d72 varlen",             GP_F32,  4, 30,  31,  2, 2, 72,  0, 0, NOWIN,   L_DEFAULT, 1, 0, 1, vq3, vk3, 0, 0},
    {"f16 d64 qkv-packed causal",  GP_F16,  2, 96,  96,  4, 2, 64,  0, 1, NOWIN,   L_QKV,     1, 0, 1, NULL, NULL, 0, 0},
    {"bf16 d128 qkv-packed",       GP_BF16, 1, 70,  70,  2, 1, 128, 0, 0, NOWIN,   L_QKV,     1, 0, 1, NULL, NULL, 1, 0},
    {"f32 d32 bhsd layout",        GP_F32,  2, 33,  77,  2, 2, 32,  0, 0, NOWIN,   L_BHSD,    1, 0, 1, NULL, NULL, 0, 0},
    {"f16 d40 bhsd causal no lse", GP_F16,  1, 50,  20,  3, 1, 40,  0, 1, NOWIN,   L_BHSD,    0, 0, 1, NULL, NULL, 0, 0},
    {"bf16 d96 100x150 gqa causal", GP_BF16, 2, 100, 150, 4, 2, 96, 0, 1, NOWIN,   L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"f16 d96 70x70 window",       GP_F16,  1, 70,  70,  2, 2, 96,  0, 0, 20, 5,   L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"f16 d128 130x70 causal sq>sk", GP_F16, 1, 130, 70, 2, 1, 128, 0, 1, NOWIN,   L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"bf16 d32 150x300 gqa window", GP_BF16, 1, 150, 300, 4, 2, 32, 0, 0, 40, 30,  L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"f16 d256 80x140 causal",     GP_F16,  1, 80,  140, 2, 2, 256, 0, 1, NOWIN,   L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0},
    {"f16 d128 70x150 window pad", GP_F16,  2, 70,  150, 2, 2, 128, 0, 0, 20, 5,   L_PAD,     1, 0, 1, NULL, NULL, 0, 0},
    {"bf16 d64 100x90 gqa pad scale", GP_BF16, 1, 100, 90, 4, 2, 64, 0, 0, NOWIN,  L_PAD,     1, 0.2f, 1, NULL, NULL, 0, 0},
    /* the host tiles' edges (96 query rows, 128 keys): partial tiles, head_dim 80, a
     * head_dim_v not a multiple of 8, causal with sq != sk across tiles, GQA */
    {"f32 d80 200x300 gqa causal", GP_F32,  1, 200, 300, 4, 2, 80,  0, 1, NOWIN,   L_DEFAULT, 1, 0, 0, NULL, NULL, 0, 0},
    {"bf16 d256 130x260 causal",   GP_BF16, 1, 130, 260, 2, 1, 256, 0, 1, NOWIN,   L_DEFAULT, 1, 0, 0, NULL, NULL, 0, 0},
    {"f16 d96 129x257 gqa",        GP_F16,  1, 129, 257, 4, 2, 96,  0, 0, NOWIN,   L_DEFAULT, 1, 0, 0, NULL, NULL, 0, 0},
    {"f32 d32 300x129 causal sq>sk", GP_F32, 1, 300, 129, 2, 2, 32, 0, 1, NOWIN,   L_DEFAULT, 1, 0, 0, NULL, NULL, 0, 0},
    {"f32 d20/12 70x140 window pad", GP_F32, 2, 70, 140, 2, 1, 20,  12, 0, 50, 3,  L_PAD,     1, 0, 0, NULL, NULL, 0, 0},
    /* q, k and v one element off every 16-byte boundary: no cp.async or TMA family takes
     * them (each declines, never a misaligned access); MFMA loads elements */
    {"f16 d64 40x50 causal shifted", GP_F16, 1, 40, 50, 2, 1, 64, 0, 1, NOWIN,     L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 1},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* ---- helpers ------------------------------------------------------------------------ */

/* A device copy of host's bytes starting shift bytes into a fresh allocation, whose
 * base goes to *base (for gp_free). */
static void *dev_upload_at(const void *host, size_t bytes, size_t shift, void **base) {
  char *p = NULL;
  ck_assert_int_eq(gp_malloc((void **)&p, bytes + shift), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(p + shift, host, bytes), GP_SUCCESS);
  *base = p;
  return p + shift;
}

static void *dev_upload(const void *host, size_t bytes, gp_stream_t s, int async) {
  void *p = NULL;
  ck_assert_int_eq(gp_malloc(&p, bytes), GP_SUCCESS);
  if (async)
    ck_assert_int_eq(gp_memcpy_async(p, host, bytes, s), GP_SUCCESS);
  else
    ck_assert_int_eq(gp_memcpy(p, host, bytes), GP_SUCCESS);
  return p;
}

typedef struct strides {
  int64_t bs, ss, hs;
} strides_t;

/* Offset (elements) of element (b, s, h, c) of a tensor; varlen: s is the packed row. */
static int64_t at(const strides_t *t, int64_t b, int64_t s, int64_t h, int64_t c) {
  return b * t->bs + s * t->ss + h * t->hs + c;
}

/* Every row of a tensor at x (strides in 2-byte elements) starts 16-byte aligned. */
static int rows16(const void *x, const strides_t *t, int varlen) {
  return ((uintptr_t)x & 15u) == 0 && t->ss % 8 == 0 && t->hs % 8 == 0 && (varlen || t->bs % 8 == 0);
}

/* K or V (strides t) is one TMA map of the sm_90a kernel: 16-byte rows and a batch stride
 * of seqlen_k rows (or varlen) or of heads_kv heads; *kind says which. */
static int tma_kv(const void *x, const strides_t *t, const acase_t *c, int varlen, int *kind) {
  if (((uintptr_t)x & 15u) || t->ss % 8 || t->hs % 8 || t->ss <= 0) return 0;
  *kind = varlen || t->bs == c->sk * t->ss ? 0 : t->bs == c->hkv * t->hs && t->hs > 0 ? 1 : -1;
  return *kind >= 0;
}

/* The kernel the cpu backend must choose for the case in mode, from the rules each
 * family documents (src/attention_table.c, kernels/<family>/attention_<family>_host.c). */
static const char *expected_kernel(const acase_t *c, int mode, const gp_attention_desc_t *d, const strides_t *tq,
                                   const strides_t *tk, const strides_t *tv, char *buf, size_t len) {
  const int64_t dv = c->dv ? c->dv : c->d;
  const int varlen = c->lens_q != NULL, half = c->dtype != GP_F32 && dv == c->d;
  const char *tn = c->dtype == GP_BF16 ? "bf16" : "f16";
  if (mode == M_DEFAULT) return gp__cpu_attn_simd() ? "cpu-attention-fwd-avx2" : "cpu-attention-fwd";
  if (mode == M_SM90A) {
    int kk = -1, kv = -1;
    if (half && (c->d == 64 || c->d == 128) && rows16(d->q, tq, varlen) && tma_kv(d->k, tk, c, varlen, &kk) &&
        tma_kv(d->v, tv, c, varlen, &kv) && kk == kv) {
      snprintf(buf, len, "gp__attention_fwd_sm90a_%s_d%lld", tn, (long long)c->d);
      return buf;
    }
    mode = M_SM80; /* what sm_90a declines, sm_80 takes where it can */
  }
  if (mode == M_SM80 && half && (c->d == 32 || c->d == 64 || c->d == 96 || c->d == 128 || c->d == 256) &&
      rows16(d->q, tq, varlen) && rows16(d->k, tk, varlen) && rows16(d->v, tv, varlen)) {
    snprintf(buf, len, "gp__attention_fwd_sm80_%s_d%lld", tn, (long long)c->d);
    return buf;
  }
  if (mode == M_MFMA && half && (c->d == 32 || c->d == 64 || c->d == 128)) {
    snprintf(buf, len, "gp__attention_fwd_mfma_%s_d%lld", tn, (long long)c->d);
    return buf;
  }
  return "gp__attention_fwd_portable";
}

/* Runs case c in mode; id picks its inputs' seed. */
static void run_one(const acase_t *c, int mode, uint64_t id) {
  const char *mname = mode_names[mode];
  const size_t es = gp_dtype_size(c->dtype);
  const int64_t dv = c->dv ? c->dv : c->d;
  const int varlen = c->lens_q != NULL;
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ id * 0x9e3779b97f4a7c15ull);

  /* varlen prefix sums */
  int32_t cu_q[8] = {0}, cu_k[8] = {0};
  if (varlen)
    for (int64_t b = 0; b < c->batch; b++) {
      cu_q[b + 1] = cu_q[b] + c->lens_q[b];
      cu_k[b + 1] = cu_k[b] + c->lens_k[b];
    }
  const int64_t rows_q = varlen ? cu_q[c->batch] : c->sq, rows_k = varlen ? cu_k[c->batch] : c->sk;
  const int64_t nb = varlen ? 1 : c->batch; /* batches in the allocation */

  /* Layout of q, k, v, o: strides (0 in the descriptor when default) and sizes. */
  strides_t tq, tk, tv, to;
  gp_attention_desc_t desc;
  gp_attention_desc_init(&desc);
  size_t nq, nk, nv, no, nqkv = 0;
  if (c->layout == L_QKV) {
    const int64_t w = (c->hq + 2 * c->hkv) * c->d;
    tq = tk = tv = (strides_t){rows_q * w, w, c->d};
    nqkv = (size_t)(nb * rows_q * w);
    nq = nk = nv = 0;
    to = (strides_t){0, 0, dv + 5};
    to.ss = c->hq * to.hs + 7;
    to.bs = rows_q * to.ss + 11;
  } else if (c->layout == L_PAD) {
    tq = (strides_t){rows_q * (c->hq * c->d + 3), c->hq * c->d + 3, c->d};
    tk = (strides_t){rows_k * (c->hkv * c->d + 3), c->hkv * c->d + 3, c->d};
    tv = (strides_t){rows_k * (c->hkv * dv + 3), c->hkv * dv + 3, dv};
    to = (strides_t){rows_q * c->hq * dv, c->hq * dv, dv};
  } else if (c->layout == L_BHSD) {
    tq = (strides_t){c->hq * rows_q * c->d, c->d, rows_q * c->d};
    tk = (strides_t){c->hkv * rows_k * c->d, c->d, rows_k * c->d};
    tv = (strides_t){c->hkv * rows_k * dv, dv, rows_k * dv};
    to = (strides_t){c->hq * rows_q * dv, dv, rows_q * dv};
  } else {
    tq = (strides_t){rows_q * c->hq * c->d, c->hq * c->d, c->d};
    tk = (strides_t){rows_k * c->hkv * c->d, c->hkv * c->d, c->d};
    tv = (strides_t){rows_k * c->hkv * dv, c->hkv * dv, dv};
    to = (strides_t){rows_q * c->hq * dv, c->hq * dv, dv};
  }
  if (c->layout != L_QKV) {
    nq = (size_t)(nb * tq.bs);
    nk = (size_t)(nb * tk.bs);
    nv = (size_t)(nb * tv.bs);
  }
  no = (size_t)(c->layout == L_QKV ? nb * to.bs : nb * to.bs);
  if (varlen) tq.bs = tk.bs = tv.bs = to.bs = 0;

  gp_stream_t s = NULL;
  if (c->own_stream) ck_assert_int_eq(gp_stream_create(&s), GP_SUCCESS);

  /* Host inputs, then device copies. */
  void *hq_ = NULL, *hk = NULL, *hv = NULL, *hqkv = NULL;
  void *dq = NULL, *dk = NULL, *dvv = NULL, *dqkv = NULL;
  if (c->layout == L_QKV) {
    hqkv = malloc(nqkv * es);
    gp_ref_fill(hqkv, c->dtype, nqkv, &rng, -1.0, 1.0);
    dqkv = dev_upload(hqkv, nqkv * es, s, c->own_stream);
    desc.q = dqkv;
    desc.k = (const char *)dqkv + (size_t)(c->hq * c->d) * es;
    desc.v = (const char *)dqkv + (size_t)((c->hq + c->hkv) * c->d) * es;
  } else {
    hq_ = malloc(nq * es), hk = malloc(nk * es), hv = malloc(nv * es);
    gp_ref_fill(hq_, c->dtype, nq, &rng, -1.0, 1.0);
    gp_ref_fill(hk, c->dtype, nk, &rng, -1.0, 1.0);
    gp_ref_fill(hv, c->dtype, nv, &rng, -1.0, 1.0);
    if (c->shift) {
      desc.q = dev_upload_at(hq_, nq * es, es, &dq);
      desc.k = dev_upload_at(hk, nk * es, es, &dk);
      desc.v = dev_upload_at(hv, nv * es, es, &dvv);
    } else {
      desc.q = dq = dev_upload(hq_, nq * es, s, c->own_stream);
      desc.k = dk = dev_upload(hk, nk * es, s, c->own_stream);
      desc.v = dvv = dev_upload(hv, nv * es, s, c->own_stream);
    }
  }
  /* Poisoned outputs. */
  size_t nlse = (size_t)(varlen ? c->hq * rows_q : c->batch * c->hq * c->sq);
  void *ho = malloc(no * es);
  float *hlse = (float *)malloc(nlse * sizeof(float));
  gp_ref_poison(ho, c->dtype, no);
  gp_ref_poison(hlse, GP_F32, nlse);
  void *dout = dev_upload(ho, no * es, s, c->own_stream);
  float *dlse = c->lse ? (float *)dev_upload(hlse, nlse * sizeof(float), s, c->own_stream) : NULL;
  int32_t *dcu_q = NULL, *dcu_k = NULL;
  if (varlen) {
    dcu_q = (int32_t *)dev_upload(cu_q, sizeof(cu_q), s, c->own_stream);
    dcu_k = (int32_t *)dev_upload(cu_k, sizeof(cu_k), s, c->own_stream);
  }

  desc.dtype = c->dtype;
  desc.batch = c->batch;
  desc.seqlen_q = c->sq;
  desc.seqlen_k = c->sk;
  desc.heads_q = c->hq;
  desc.heads_kv = c->hkv;
  desc.head_dim = c->d;
  desc.head_dim_v = c->dv;
  desc.o = dout;
  desc.lse = dlse;
  desc.cu_seqlens_q = dcu_q;
  desc.cu_seqlens_k = dcu_k;
  desc.causal = c->causal;
  desc.window_left = c->wl;
  desc.window_right = c->wr;
  desc.softmax_scale = c->scale;
  if (c->layout != L_DEFAULT) {
    desc.q_batch_stride = tq.bs, desc.q_seq_stride = tq.ss, desc.q_head_stride = tq.hs;
    desc.k_batch_stride = tk.bs, desc.k_seq_stride = tk.ss, desc.k_head_stride = tk.hs;
    desc.v_batch_stride = tv.bs, desc.v_seq_stride = tv.ss, desc.v_head_stride = tv.hs;
    desc.o_batch_stride = to.bs, desc.o_seq_stride = to.ss, desc.o_head_stride = to.hs;
  }

  gp__cpu_mode_set(GP__OP_ATTN_FWD, mode_cpu[mode]);
  gp_status_t st;
  gp__last_kernel_reset();
#if defined(GP_BUILD_CPU)
  if (mode == M_W64)
    st = gp__attention_fwd_kernel(s, &desc, GP_KERNEL_REF(gp__attention_fwd_portable_w64));
  else
#endif
    st = gp_attention_fwd(s, &desc);
  ck_assert_msg(st == GP_SUCCESS, "%s: gp_attention_fwd: %s: %s", c->name, gp_status_name(st),
                gp_last_error_message());
  if (gp_backend() == GP_BACKEND_CPU) { /* the kernel that ran is the one the rules name */
    char want_buf[64];
    const char *want = expected_kernel(c, mode, &desc, &tq, &tk, &tv, want_buf, sizeof want_buf);
    const char *got = gp__last_kernel(GP__OP_ATTN_FWD);
    ck_assert_msg(got && strcmp(got, want) == 0, "%s (%s): kernel %s, expected %s", c->name, mname,
                  got ? got : "(none)", want);
  }
  if (c->own_stream) {
    ck_assert_int_eq(gp_memcpy_async(ho, dout, no * es, s), GP_SUCCESS);
    if (dlse) ck_assert_int_eq(gp_memcpy_async(hlse, dlse, nlse * sizeof(float), s), GP_SUCCESS);
    st = gp_stream_synchronize(s);
  } else {
    st = gp_device_synchronize();
    if (st == GP_SUCCESS) st = gp_memcpy(ho, dout, no * es);
    if (st == GP_SUCCESS && dlse) st = gp_memcpy(hlse, dlse, nlse * sizeof(float));
  }
  ck_assert_msg(st == GP_SUCCESS, "%s: after the call: %s: %s", c->name, gp_status_name(st),
                gp_last_error_message());

  /* Reference on the host copies (same strides). */
  gp_attention_desc_t rdesc = desc;
  if (c->layout == L_QKV) {
    rdesc.q = hqkv;
    rdesc.k = (const char *)hqkv + (size_t)(c->hq * c->d) * es;
    rdesc.v = (const char *)hqkv + (size_t)((c->hq + c->hkv) * c->d) * es;
  } else {
    rdesc.q = hq_, rdesc.k = hk, rdesc.v = hv;
  }
  size_t rows = gp_ref_attention_rows(&rdesc, varlen ? cu_q : NULL);
  size_t nout = rows * (size_t)(c->hq * dv);
  double *oref = (double *)malloc(nout * sizeof(double)), *obnd = (double *)malloc(nout * sizeof(double));
  double *lref = (double *)malloc(nlse * sizeof(double)), *lbnd = (double *)malloc(nlse * sizeof(double));
  ck_assert_int_eq(gp_ref_attention_fwd(&rdesc, varlen ? cu_q : NULL, varlen ? cu_k : NULL, oref,
                                        obnd, lref, lbnd),
                   0);

  /* Gather o into dense [rows][hq][dv], marking what the output covers. */
  void *dense = malloc(nout * es);
  unsigned char *covered = (unsigned char *)calloc(no, 1);
  for (int64_t b = 0; b < c->batch; b++) {
    int64_t n = varlen ? c->lens_q[b] : c->sq, r0 = varlen ? cu_q[b] : b * c->sq;
    for (int64_t i = 0; i < n; i++)
      for (int64_t h = 0; h < c->hq; h++)
        for (int64_t e = 0; e < dv; e++) {
          int64_t src = varlen ? at(&to, 0, r0 + i, h, e) : at(&to, b, i, h, e);
          size_t dst = (size_t)(((r0 + i) * c->hq + h) * dv + e);
          memcpy((char *)dense + dst * es, (char *)ho + (size_t)src * es, es);
          covered[src] = 1;
        }
  }
  size_t touched = 0;
  for (size_t i = 0; i < no; i++)
    if (!covered[i] && !isnan(gp_ref_load(ho, c->dtype, i))) touched++;

  gp_ref_cmp_t cmp;
  char buf[256];
  gp_ref_compare(&cmp, dense, c->dtype, oref, obnd, 0.0, nout);
  gp_ref_cmp_format(&cmp, buf, sizeof(buf));
  double tol = gp_ref_attention_rel_tol(c->dtype);
  printf("  %-30s %-8s o: %s (rel tol %.2g)\n", c->name, mname, buf, tol);
  ck_assert_msg(cmp.n_bad == 0, "%s (%s, seed %llu): o: %s", c->name, mname,
                (unsigned long long)g_seed, buf);
  ck_assert_msg(cmp.rel_norm_err <= tol, "%s (%s, seed %llu): o relative norm error %.3g > %.3g",
                c->name, mname, (unsigned long long)g_seed,
                cmp.rel_norm_err, tol);
  ck_assert_msg(touched == 0, "%s: %zu elements of o outside the output were written", c->name,
                touched);
  if (c->lse) {
    gp_ref_compare(&cmp, hlse, GP_F32, lref, lbnd, 0.0, nlse);
    gp_ref_cmp_format(&cmp, buf, sizeof(buf));
    ck_assert_msg(cmp.n_bad == 0, "%s (%s, seed %llu): lse: %s", c->name,
                  mname, (unsigned long long)g_seed, buf);
  }

  free(dense), free(covered), free(oref), free(obnd), free(lref), free(lbnd);
  free(hq_), free(hk), free(hv), free(hqkv), free(ho), free(hlse);
  gp_free(dq), gp_free(dk), gp_free(dvv), gp_free(dqkv), gp_free(dout);
  if (dlse) gp_free(dlse);
  if (dcu_q) gp_free(dcu_q), gp_free(dcu_k);
  if (s) gp_stream_destroy(s);
}

static void run_case(const acase_t *c, int mode) { run_one(c, mode, (uint64_t)(c - cases)); }

START_TEST(test_host) { run_case(&cases[_i], M_DEFAULT); }
END_TEST

/* The host implementation's portable tiles (GP_CPU_ATTENTION_SIMD=scalar); test_host runs
 * the AVX2 ones where the processor has them, and the kernel name says which ran. */
START_TEST(test_host_scalar) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  gp__cpu_attn_simd_set(0);
  run_case(&cases[_i], M_DEFAULT);
  gp__cpu_attn_simd_set(-1);
}
END_TEST

#if defined(GP_BUILD_CPU)
/* The host forward with a K/V store of one 128-key tile per thread: every case with more
 * than 128 keys converts its keys tile by tile (test_host keeps each head's keys,
 * converted once, in a store that holds them all). */
START_TEST(test_host_tilewise) {
  gp__cpu_attn_store_set(0);
  run_case(&cases[_i], M_DEFAULT);
  gp__cpu_attn_store_set(-1);
}
END_TEST
#endif

#if defined(GP_BUILD_CPU)
/* The host tiles' output rounding (gp__cpu_attn_store, AVX2 and portable builds) is
 * gp_bf16_from_f32's and the f32 product's, bit for bit: ties to even both ways, NaN,
 * infinities, subnormals, random bit patterns, and a tail shorter than a vector. */
START_TEST(test_host_store) {
  enum { N = 4099 };
  static float src[N];
  static uint16_t got[N];
  static float got32[N];
  const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x7f800000u, 0xff800000u, 0x7fc00001u,
                              0xffa00000u, 0x7f7fffffu, 0x00008000u, 0x80018000u, 0x0u, 0x80000000u};
  uint64_t x = g_seed | 1u;
  for (int i = 0; i < N; i++) {
    uint32_t u;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    u = i < (int)(sizeof special / sizeof special[0]) ? special[i] : (uint32_t)x;
    memcpy(&src[i], &u, sizeof u);
  }
  for (int simd = 0; simd < 2; simd++) {
    if (simd && !gp__cpu_attn_simd()) continue;
    for (int64_t n = N; n >= N - 7; n -= 7) {
      memset(got, 0xab, sizeof got);
      gp__cpu_attn_store(simd, got, 0, GP_BF16, src, 1.0f, n);
      gp__cpu_attn_store(simd, got32, 0, GP_F32, src, 0.5f, n);
      for (int64_t i = 0; i < N; i++) {
        const uint16_t want = i < n ? gp_bf16_from_f32(src[i]).bits : 0xabab;
        ck_assert_msg(got[i] == want, "%s bf16 store, n %lld, element %lld: %#x, expected %#x (seed %llu)",
                      simd ? "avx2" : "portable", (long long)n, (long long)i, got[i], want,
                      (unsigned long long)g_seed);
        const float w32 = src[i] * 0.5f;
        ck_assert_msg(i >= n || memcmp(&got32[i], &w32, sizeof w32) == 0 || (w32 != w32 && got32[i] != got32[i]),
                      "%s f32 store, element %lld", simd ? "avx2" : "portable", (long long)i);
      }
    }
  }
}
END_TEST
#endif

/* The portable kernel on the executor (cpu backend; GPU backends run it by default). */
START_TEST(test_portable) {
  if (gp_backend() != GP_BACKEND_CPU || !cases[_i].portable) return;
  run_case(&cases[_i], M_PORTABLE);
}
END_TEST

START_TEST(test_warp64) {
  if (gp_backend() != GP_BACKEND_CPU || !cases[_i].portable) return;
  run_case(&cases[_i], M_W64);
}
END_TEST

/* The sm_80 (kernels/sm80/) kernels under emulation (cpu backend; the cuda backend runs them by
 * default). */
START_TEST(test_sm80) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  run_case(&cases[_i], M_SM80);
}
END_TEST

/* The sm_90a (kernels/sm90a/) forward under emulation (cpu backend), on the cases it takes: f16 and
 * bf16, head_dim 64 and 128 (causal, GQA and MQA, windows, varlen, the packed qkv
 * layout, sq > sk, several key tiles through its 2-stage ring, lse). On a GPU of
 * compute capability 9.0 the same cases run the real kernel with GP_ENABLE_SM90A=1. */
START_TEST(test_sm90a) {
  const acase_t *c = &cases[_i];
  if (c->dtype == GP_F32 || (c->dv && c->dv != c->d) || (c->d != 64 && c->d != 128)) return;
  if (gp_backend() != GP_BACKEND_CPU) {
    const char *gate = getenv("GP_ENABLE_SM90A");
    if (!gate || strcmp(gate, "1") != 0) return;
  }
  run_case(c, M_SM90A);
}
END_TEST

/* The MFMA (kernels/mfma/) kernels under emulation (cpu backend; the hip backend runs them by
 * default): every case they take (f16/bf16, head_dim == head_dim_v in 32, 64, 128) and
 * the smallest they leave to the portable kernel (the fallback, at little CI time). */
static int mfma_takes(const acase_t *c) {
  const int64_t dv = c->dv ? c->dv : c->d;
  return c->dtype != GP_F32 && dv == c->d && (c->d == 32 || c->d == 64 || c->d == 128);
}

START_TEST(test_mfma) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  int other = -1;
  for (int i = 0; i < NCASES; i++) {
    const acase_t *c = &cases[i], *o = other >= 0 ? &cases[other] : NULL;
    if (!mfma_takes(c) && (!o || c->batch * c->hq * c->sq * c->sk < o->batch * o->hq * o->sq * o->sk))
      other = i;
  }
  if (!mfma_takes(&cases[_i]) && _i != other) return;
  run_case(&cases[_i], M_MFMA);
}
END_TEST

#if defined(GP_BUILD_CPU)
/* Whether the family of forward table entry name may run in CPU mode mode. */
static bool enabled_in(int mode, const char *name, gp__family_t f) {
  gp__cpu_mode_set(GP__OP_ATTN_FWD, mode);
  gp__dispatch_t d;
  char declined[64], why[128] = "";
  ck_assert_int_eq(gp__dispatch_begin(&d, GP__OP_ATTN_FWD, "test", declined, sizeof declined), GP_SUCCESS);
  const bool ok = gp__dispatch_eligible(&d, name, f, why, sizeof why);
  ck_assert_msg(ok || strstr(why, "GP_CPU_ATTENTION=") != NULL, "%s", why);
  return ok;
}

/* The MFMA entry (kernels/mfma/attention_mfma_host.c): what it takes (any alignment), what
 * it leaves to the portable kernel, and the reason the INFO line gives. */
START_TEST(test_mfma_choice) {
  static _Alignas(16) uint16_t buf[64];
  gp__attn_params_t p;
  memset(&p, 0, sizeof p);
  p.q = p.k = p.v = buf;
  p.o = buf;
  p.batch = 2, p.seqlen_q = 200, p.seqlen_k = 300, p.heads_q = 8, p.heads_kv = 2;
  p.head_dim = p.head_dim_v = 128;
  p.q_hs = p.k_hs = p.v_hs = 128;
  p.q_ss = 8 * 128, p.k_ss = p.v_ss = 2 * 128 + 3; /* rows not 16-byte aligned: taken */
  p.q_bs = 200 * 8 * 128, p.k_bs = p.v_bs = 300 * (2 * 128 + 3);
  p.dtype = GP_BF16;
  p.window_left = p.window_right = -1;
  gp__attn_plan_t plan;
  char why[192] = "";
  const gp__attn_fwd_impl_t *mfma = &gp__attn_fwd_impl_mfma;
  ck_assert(!enabled_in(GP__CPU_SM80, "mfma", GP__FAMILY_MFMA));
  ck_assert(enabled_in(GP__CPU_MFMA, "mfma", GP__FAMILY_MFMA));
  ck_assert(mfma->supports(&p, &plan, why, sizeof why));
  ck_assert_str_eq(plan.kernel->name, "gp__attention_fwd_mfma_bf16_d128");
  ck_assert_uint_eq(plan.blocks, 2 * 8 * 2); /* 128-row tiles x heads x sequences */
  ck_assert_uint_eq(plan.threads, 256);
  ck_assert_uint_eq(plan.smem, 64u * (128u + 128u) * 2u);
  p.head_dim = p.head_dim_v = 32, p.dtype = GP_F16;
  ck_assert(mfma->supports(&p, &plan, why, sizeof why));
  ck_assert_str_eq(plan.kernel->name, "gp__attention_fwd_mfma_f16_d32");
  p.head_dim = p.head_dim_v = 96;
  ck_assert(!mfma->supports(&p, &plan, why, sizeof why));
  ck_assert_msg(strstr(why, "head_dim 96") != NULL, "%s", why);
  p.head_dim = 64, p.head_dim_v = 32;
  ck_assert(!mfma->supports(&p, &plan, why, sizeof why));
  ck_assert_msg(strstr(why, "head_dim_v 32") != NULL, "%s", why);
  p.head_dim_v = 64, p.dtype = GP_F32;
  ck_assert(!mfma->supports(&p, &plan, why, sizeof why));
  ck_assert_msg(strstr(why, "f32") != NULL, "%s", why);
  gp__cpu_mode_set(GP__OP_ATTN_FWD, -1);
}
END_TEST

/* The sm_80 entry (kernels/sm80/attention_sm80_host.c): what it takes, what it leaves to
 * the portable kernel, and the reason the INFO line gives. */
START_TEST(test_sm80_choice) {
  static _Alignas(16) uint16_t buf[64];
  gp__attn_params_t p;
  memset(&p, 0, sizeof p);
  p.q = p.k = p.v = buf;
  p.o = buf;
  p.batch = 2, p.seqlen_q = 200, p.seqlen_k = 300, p.heads_q = 8, p.heads_kv = 2;
  p.head_dim = p.head_dim_v = 128;
  p.q_hs = p.k_hs = p.v_hs = 128;
  p.q_ss = 8 * 128, p.k_ss = p.v_ss = 2 * 128;
  p.q_bs = 200 * 8 * 128, p.k_bs = p.v_bs = 300 * 2 * 128;
  p.dtype = GP_BF16;
  p.window_left = p.window_right = -1;
  gp__attn_plan_t plan;
  char why[192] = "";
  const gp__attn_fwd_impl_t *sm80 = &gp__attn_fwd_impl_sm80;
  ck_assert(!enabled_in(GP__CPU_HOST, "sm80", GP__FAMILY_SM80));
  ck_assert(!enabled_in(GP__CPU_PORTABLE, "sm80", GP__FAMILY_SM80));
  ck_assert(enabled_in(GP__CPU_SM80, "sm80", GP__FAMILY_SM80));
  ck_assert(enabled_in(GP__CPU_SM90A, "sm80", GP__FAMILY_SM80));
  ck_assert(sm80->supports(&p, &plan, why, sizeof why));
  ck_assert_str_eq(plan.kernel->name, "gp__attention_fwd_sm80_bf16_d128");
  ck_assert_uint_eq(plan.blocks, 4 * 8 * 2); /* 64-row tiles x heads x sequences */
  ck_assert_uint_eq(plan.smem, 2u * (64u + 128u) * 136u);
  p.head_dim = p.head_dim_v = 64, p.dtype = GP_F16;
  ck_assert(sm80->supports(&p, &plan, why, sizeof why));
  ck_assert_str_eq(plan.kernel->name, "gp__attention_fwd_sm80_f16_d64");
  ck_assert_uint_eq(plan.blocks, 2 * 8 * 2); /* 128-row tiles */
  p.head_dim = p.head_dim_v = 72;
  ck_assert(!sm80->supports(&p, &plan, why, sizeof why));
  ck_assert_msg(strstr(why, "head_dim 72") != NULL, "%s", why);
  p.head_dim = 64, p.head_dim_v = 32;
  ck_assert(!sm80->supports(&p, &plan, why, sizeof why));
  ck_assert_msg(strstr(why, "head_dim_v 32") != NULL, "%s", why);
  p.head_dim_v = 64, p.k_ss = 2 * 64 + 4;
  ck_assert(!sm80->supports(&p, &plan, why, sizeof why));
  ck_assert_msg(strstr(why, "16-byte") != NULL, "%s", why);
  p.k_ss = 2 * 64, p.dtype = GP_F32;
  ck_assert(!sm80->supports(&p, &plan, why, sizeof why));
  ck_assert_msg(strstr(why, "f32") != NULL, "%s", why);
  gp__cpu_mode_set(GP__OP_ATTN_FWD, -1);
}
END_TEST
#endif

/* ---- every kernel of every family -------------------------------------------------------- */

/* One small case per kernel each family of the cpu backend's forward table has, the mode
 * choosing the family: sm_90a (f16, bf16 x head_dim 64, 128), sm_80 (x 32, 64, 96, 128,
 * 256), MFMA (x 32, 64, 128), the portable kernel and the host implementation. run_one
 * checks each against the reference and the kernel the walk chose against the one the
 * rules name. `make check-dispatch` runs this test case with each table entry switched
 * off in turn. */
START_TEST(test_every_kernel) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  static const struct { int mode; int dims[5]; } fams[] = {
      {M_SM90A, {64, 128}}, {M_SM80, {32, 64, 96, 128, 256}}, {M_MFMA, {32, 64, 128}}};
  uint64_t id = 1000;
  for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++)
    for (int t = 0; t < 2; t++)
      for (int i = 0; i < 5 && fams[f].dims[i]; i++) {
        acase_t c = {"every kernel", t ? GP_BF16 : GP_F16, 1, 20, 33, 2, 1, fams[f].dims[i], 0, (t + i) & 1,
                     NOWIN, L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0};
        run_one(&c, fams[f].mode, id++);
      }
  const acase_t c = {"every kernel", GP_F32, 1, 20, 33, 2, 1, 40, 0, 1, NOWIN, L_DEFAULT, 1, 0, 1, NULL, NULL, 0, 0};
  run_one(&c, M_PORTABLE, id++);
  run_one(&c, M_DEFAULT, id++);
  gp__cpu_mode_set(GP__OP_ATTN_FWD, -1);
}
END_TEST

/* A declining family leaves the last failure's message alone, and so do successful calls
 * (the API's promise): a failed call, then successful sm90a-mode calls that the sm_90a
 * kernel takes and declines at the TMA map of k (k's rows not 16-byte aligned). */
START_TEST(test_message_survives) {
  if (gp_backend() != GP_BACKEND_CPU) return;
  void *buf = NULL;
  ck_assert_int_eq(gp_malloc(&buf, 1 << 16), GP_SUCCESS);
  ck_assert_int_eq(gp_memset(buf, 0, 1 << 16), GP_SUCCESS);
  gp_attention_desc_t d;
  gp_attention_desc_init(&d);
  d.dtype = GP_F16, d.batch = 1, d.seqlen_q = d.seqlen_k = 16, d.heads_q = d.heads_kv = 1, d.head_dim = 64;
  d.q = d.k = d.v = buf;
  d.o = (char *)buf + 32768;
  d.head_dim = 0;
  ck_assert_int_eq(gp_attention_fwd(NULL, &d), GP_ERROR_INVALID_VALUE);
  d.head_dim = 64;
  char msg[256];
  snprintf(msg, sizeof msg, "%s", gp_last_error_message());
  ck_assert(strstr(msg, "head_dim") != NULL);
  gp__cpu_mode_set(GP__OP_ATTN_FWD, GP__CPU_SM90A);
  for (int v = 0; v < 2; v++) {
    gp__last_kernel_reset();
    d.k_seq_stride = v ? 68 : 0; /* 136-byte rows: no TMA map, no 16-byte copies */
    ck_assert_int_eq(gp_attention_fwd(NULL, &d), GP_SUCCESS);
    ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
    ck_assert_pstr_eq(gp__last_kernel(GP__OP_ATTN_FWD), v ? "gp__attention_fwd_portable" : "gp__attention_fwd_sm90a_f16_d64");
    ck_assert_str_eq(gp_last_error_message(), msg);
  }
  gp__cpu_mode_set(GP__OP_ATTN_FWD, -1);
  gp_free(buf);
}
END_TEST
/* ---- varlen offsets that do not fit -------------------------------------------------------- */

#if defined(GP_BUILD_CPU)
static void set_attention_mode(int mode) { gp__cpu_mode_set(GP__OP_ATTN_FWD, mode_cpu[mode]); }

/* Every shape of attn_bad_varlen.h on implementation _i (a mode), over tensors that end
 * at an unreadable page: the host implementation fails the call with
 * GP_ERROR_INVALID_VALUE, each kernel its launch (GP_ERROR_LAUNCH_FAILED), naming the
 * sequence; none reads past a tensor (that would fault, or under ASan end the process).
 * The tensors are registered with gp_host_register, so gpuport knows where they end (and
 * the sm_90a kernel takes varlen); unregistered, every call is refused before any
 * implementation runs: memory gpuport does not know is not device-accessible on the cpu
 * backend (bv_expect_refused). */
START_TEST(test_bad_varlen) {
  const int mode = _i;
  static const char *const k_portable[] = {"gp__attention_fwd_portable", NULL};
  static const char *const k_sm80[] = {"gp__attention_fwd_sm80_f16_d64", NULL};
  static const char *const k_sm90a[] = {"gp__attention_fwd_sm90a_f16_d64", NULL};
  static const char *const k_mfma[] = {"gp__attention_fwd_mfma_f16_d64", NULL};
  for (int reg = 1; reg >= 0; reg--) {
    bv_tensors_t t;
    bv_alloc(&t, reg);
    /* the width-64 build keeps the kernel's name (its descriptor is given explicitly) */
    const char *const *kernels = mode == M_PORTABLE || mode == M_W64 ? k_portable
                                 : mode == M_SM80   ? k_sm80
                                 : mode == M_MFMA   ? k_mfma
                                 : mode == M_SM90A  ? (reg ? k_sm90a : k_sm80)
                                                    : NULL;
    for (int i = 0; i < BV_NSHAPES; i++) {
      const bad_varlen_t *sh = &bv_shapes[i];
      if (!reg && sh->extent) continue;
      gp_attention_desc_t d;
      bv_desc(&d, &t, sh);
      set_attention_mode(mode);
      gp_status_t st = mode == M_W64 ? gp__attention_fwd_kernel(NULL, &d, GP_KERNEL_REF(gp__attention_fwd_portable_w64))
                                     : gp_attention_fwd(NULL, &d);
      char what[96];
      snprintf(what, sizeof what, "%s%s", mode_names[mode], reg ? "" : " (unregistered)");
      if (!reg) {
        bv_expect_refused(st, what);
        continue;
      }
      bv_expect(st, mode == M_DEFAULT ? GP_ERROR_INVALID_VALUE : GP_ERROR_LAUNCH_FAILED, sh, "gp_attention_fwd",
                kernels, what);
      printf("  bad varlen %-26s %-22s %s\n", sh->name, what, gp_last_error_message());
    }
    gp__cpu_mode_set(GP__OP_ATTN_FWD, -1);
    /* The same tensors with offsets that fit: the call succeeds. */
    static const bad_varlen_t ok = {"fits", BV_OKQ, BV_OKK, 0, 'q', 0};
    gp_attention_desc_t d;
    bv_desc(&d, &t, &ok);
    set_attention_mode(mode);
    gp_status_t st = mode == M_W64 ? gp__attention_fwd_kernel(NULL, &d, GP_KERNEL_REF(gp__attention_fwd_portable_w64))
                                   : gp_attention_fwd(NULL, &d);
    if (st == GP_SUCCESS) st = gp_device_synchronize();
    gp__cpu_mode_set(GP__OP_ATTN_FWD, -1);
    if (reg)
      ck_assert_msg(st == GP_SUCCESS, "%s: offsets that fit: %s (%s)", mode_names[mode], gp_status_name(st),
                    gp_last_error_message());
    else
      bv_expect_refused(st, "offsets that fit (unregistered)");
    bv_free(&t);
  }
}
END_TEST
#endif

/* ---- argument checks -------------------------------------------------------------------- */

static void *g_buf;

static void valid_desc(gp_attention_desc_t *d) {
  gp_attention_desc_init(d);
  d->dtype = GP_F16;
  d->batch = 1;
  d->seqlen_q = d->seqlen_k = 4;
  d->heads_q = d->heads_kv = 1;
  d->head_dim = 8;
  d->q = d->k = d->v = g_buf;
  d->o = (char *)g_buf + 2048;
}

static void expect_fail(const gp_attention_desc_t *d, gp_stream_t s, gp_status_t want,
                        const char *needle) {
  gp_status_t st = gp_attention_fwd(s, d);
  const char *msg = gp_last_error_message();
  ck_assert_msg(st == want, "expected %s, got %s (%s)", gp_status_name(want), gp_status_name(st),
                msg ? msg : "");
  ck_assert_msg(msg && strstr(msg, needle), "message '%s' does not name '%s'", msg ? msg : "(null)",
                needle);
}

START_TEST(test_errors) {
  ck_assert_int_eq(gp_malloc(&g_buf, 4096), GP_SUCCESS);
  gp_attention_desc_t d;

  expect_fail(NULL, NULL, GP_ERROR_INVALID_VALUE, "desc");
  valid_desc(&d), d.struct_size = 8;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "struct_size");
  valid_desc(&d), d.dtype = GP_F64;
  expect_fail(&d, NULL, GP_ERROR_NOT_SUPPORTED, "dtype");
  valid_desc(&d), d.dtype = GP_I8;
  expect_fail(&d, NULL, GP_ERROR_NOT_SUPPORTED, "dtype");
  valid_desc(&d), d.batch = 0;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "batch");
  valid_desc(&d), d.seqlen_q = 0;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "seqlen_q");
  valid_desc(&d), d.seqlen_k = -3;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "seqlen_k");
  valid_desc(&d), d.heads_q = 0;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "heads_q");
  valid_desc(&d), d.heads_q = 6, d.heads_kv = 4;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "multiple");
  valid_desc(&d), d.head_dim = 0;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "head_dim");
  valid_desc(&d), d.head_dim = 257;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "head_dim");
  valid_desc(&d), d.head_dim_v = 300;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "head_dim_v");
  valid_desc(&d), d.head_dim_v = -1;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "head_dim_v");
  valid_desc(&d), d.q = NULL;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "desc->q");
  valid_desc(&d), d.k = NULL;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "desc->k");
  valid_desc(&d), d.v = NULL;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "desc->v");
  valid_desc(&d), d.o = NULL;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "desc->o");
  valid_desc(&d), d.window_left = -2;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "window_left");
  valid_desc(&d), d.window_right = -5;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "window_right");
  valid_desc(&d), d.cu_seqlens_q = (const int32_t *)g_buf;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "cu_seqlens_k");
  valid_desc(&d), d.cu_seqlens_k = (const int32_t *)g_buf;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "cu_seqlens_q");
  valid_desc(&d), d.k_seq_stride = -8;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "k_seq_stride");
  valid_desc(&d), d.softmax_scale = NAN;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "softmax_scale");
  /* A tensor running past the end of its allocation. */
  valid_desc(&d), d.o = (char *)g_buf + 4096 - 32;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "desc->o");
  valid_desc(&d), d.q_seq_stride = 1000;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "desc->q");

  /* Tensors not aligned to their elements (a GPU faults on such an access): refused,
   * naming the tensor, before anything reads them (under UBSan the host implementation's
   * and the portable kernel's loads aborted). */
  char *b8 = (char *)g_buf;
  valid_desc(&d), d.q = b8 + 1;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "desc->q (");
  valid_desc(&d), d.k = b8 + 1;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "desc->k (");
  valid_desc(&d), d.v = b8 + 3;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "desc->v (");
  valid_desc(&d), d.o = b8 + 2049;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "desc->o (");
  valid_desc(&d), d.dtype = GP_F32, d.q = b8 + 2;
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "not aligned to its f32 elements");
  valid_desc(&d), d.lse = (float *)(b8 + 3002);
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "desc->lse (");
  valid_desc(&d), d.cu_seqlens_q = (const int32_t *)(b8 + 3001), d.cu_seqlens_k = (const int32_t *)(b8 + 3008);
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "desc->cu_seqlens_q (");
  valid_desc(&d), d.cu_seqlens_q = (const int32_t *)(b8 + 3008), d.cu_seqlens_k = (const int32_t *)(b8 + 3002);
  expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "desc->cu_seqlens_k (");

  /* A destroyed stream. */
  gp_stream_t s;
  ck_assert_int_eq(gp_stream_create(&s), GP_SUCCESS);
  ck_assert_int_eq(gp_stream_destroy(s), GP_SUCCESS);
  valid_desc(&d);
  ck_assert_int_eq(gp_attention_fwd(s, &d), GP_ERROR_INVALID_HANDLE);

  /* Varlen offsets are read in stream order: a sequence longer than seqlen_q is an
   * asynchronous error of the host implementation (reported by the next sync). */
  if (gp_backend() == GP_BACKEND_CPU) {
    gp__cpu_mode_set(GP__OP_ATTN_FWD, GP__CPU_HOST);
    int32_t cu_host[2] = {0, 9}, *cu = NULL;
    ck_assert_int_eq(gp_malloc((void **)&cu, sizeof(cu_host)), GP_SUCCESS);
    ck_assert_int_eq(gp_memcpy(cu, cu_host, sizeof(cu_host)), GP_SUCCESS);
    valid_desc(&d);
    d.cu_seqlens_q = d.cu_seqlens_k = cu;
    ck_assert_int_eq(gp_attention_fwd(NULL, &d), GP_SUCCESS);
    gp_status_t st = gp_device_synchronize();
    ck_assert_msg(st == GP_ERROR_INVALID_VALUE, "bad cu_seqlens: got %s (%s)", gp_status_name(st),
                  gp_last_error_message());

    /* The portable kernel traps on such offsets instead of reading past the tensors
     * (under AddressSanitizer the read was a heap-buffer-overflow). */
    gp__cpu_mode_set(GP__OP_ATTN_FWD, GP__CPU_PORTABLE);
    ck_assert_int_eq(gp_attention_fwd(NULL, &d), GP_SUCCESS);
    st = gp_device_synchronize();
    ck_assert_msg(st == GP_ERROR_LAUNCH_FAILED, "bad cu_seqlens, portable: got %s (%s)",
                  gp_status_name(st), gp_last_error_message());
    gp__cpu_mode_set(GP__OP_ATTN_FWD, -1);
    gp_free(cu);

    /* Offsets within seqlen_q/seqlen_k whose totals (40 x 4 tokens) run past the packed
     * tensors: o (2048 bytes) holds 128 tokens. An asynchronous error naming the first
     * sequence that ends past them and the bound, not a read or write outside them. */
    int32_t cu_long[41];
    for (int b = 0; b <= 40; b++) cu_long[b] = 4 * b;
    ck_assert_int_eq(gp_malloc((void **)&cu, sizeof(cu_long)), GP_SUCCESS);
    ck_assert_int_eq(gp_memcpy(cu, cu_long, sizeof(cu_long)), GP_SUCCESS);
    valid_desc(&d);
    d.batch = 40;
    d.cu_seqlens_q = d.cu_seqlens_k = cu;
    ck_assert_int_eq(gp_attention_fwd(NULL, &d), GP_SUCCESS);
    st = gp_device_synchronize();
    ck_assert_msg(st == GP_ERROR_INVALID_VALUE && strstr(gp_last_error_message(), "varlen sequence 32:") &&
                      strstr(gp_last_error_message(), "128 tokens"),
                  "cu_seqlens past the tensors: got %s (%s)", gp_status_name(st),
                  gp_last_error_message());
    gp_free(cu);
  }

  /* Tensors in memory gpuport neither allocated nor registered (malloc) are not
   * device-accessible: the cpu backend refuses them, naming the tensor, as a GPU would
   * fault on them; and freed device memory (varlen: the first element is checked). */
  if (gp_backend() == GP_BACKEND_CPU) {
    char *m = calloc(1, 4096);
    void *freed = NULL;
    ck_assert_ptr_nonnull(m);
    valid_desc(&d), d.k = m;
    expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "'desc->k' (");
    ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "not device-accessible"));
    valid_desc(&d), d.o = m;
    expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "'desc->o' (");
    valid_desc(&d), d.lse = (float *)m;
    expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "'desc->lse' (");
    int32_t *cu = NULL;
    ck_assert_int_eq(gp_malloc((void **)&cu, 2 * sizeof(int32_t)), GP_SUCCESS);
    valid_desc(&d), d.cu_seqlens_q = (const int32_t *)m, d.cu_seqlens_k = cu;
    expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "'desc->cu_seqlens_q' (");
    valid_desc(&d), d.cu_seqlens_q = d.cu_seqlens_k = cu, d.v = m;
    expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "'desc->v' (");
    ck_assert_int_eq(gp_malloc(&freed, 4096), GP_SUCCESS);
    ck_assert_int_eq(gp_free(freed), GP_SUCCESS);
    valid_desc(&d), d.q = freed;
    expect_fail(&d, NULL, GP_ERROR_INVALID_VALUE, "'desc->q' (");
    ck_assert_ptr_nonnull(strstr(gp_last_error_message(), "freed"));
    gp_free(cu);
    free(m);
  }

  /* A valid call still succeeds, and a larger (newer) descriptor is accepted. */
  ck_assert_int_eq(gp_memset(g_buf, 0x11, 4096), GP_SUCCESS);
  struct {
    gp_attention_desc_t d;
    char future[32];
  } big;
  valid_desc(&big.d);
  big.d.struct_size = sizeof(big);
  ck_assert_int_eq(gp_attention_fwd(NULL, &big.d), GP_SUCCESS);
  ck_assert_int_eq(gp_device_synchronize(), GP_SUCCESS);
  gp_free(g_buf);
}
END_TEST

static Suite *attention_suite(void) {
  Suite *s = suite_create("attention");
  TCase *tc = tcase_create("errors");
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
#if defined(GP_BUILD_CPU)
  tc = tcase_create("bad_varlen");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_bad_varlen, M_DEFAULT, M_SM90A + 1);
  suite_add_tcase(s, tc);
#endif
  tc = tcase_create("host");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_host, 0, NCASES);
  suite_add_tcase(s, tc);
#if defined(GP_BUILD_CPU)
  tc = tcase_create("host_store");
  tcase_add_test(tc, test_host_store);
  suite_add_tcase(s, tc);
  tc = tcase_create("host_tilewise");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_host_tilewise, 0, NCASES);
  suite_add_tcase(s, tc);
#endif
  tc = tcase_create("host_scalar");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_host_scalar, 0, NCASES);
  suite_add_tcase(s, tc);
  tc = tcase_create("portable");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_portable, 0, NCASES);
  suite_add_tcase(s, tc);
  tc = tcase_create("warp64");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_warp64, 0, NCASES);
  suite_add_tcase(s, tc);
  tc = tcase_create("sm90a");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_sm90a, 0, NCASES);
  suite_add_tcase(s, tc);
  tc = tcase_create("sm80");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_sm80, 0, NCASES);
#if defined(GP_BUILD_CPU)
  tcase_add_test(tc, test_sm80_choice);
#endif
  suite_add_tcase(s, tc);
  tc = tcase_create("mfma");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_mfma, 0, NCASES);
#if defined(GP_BUILD_CPU)
  tcase_add_test(tc, test_mfma_choice);
#endif
  suite_add_tcase(s, tc);
  tc = tcase_create("dispatch"); /* run by make check-dispatch */
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_every_kernel);
  tcase_add_test(tc, test_message_survives);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  print_seed("test_attention", (unsigned long long)g_seed);
  return run_suite("test_attention", attention_suite());
}
