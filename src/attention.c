/*
 * attention.c - gp_attention_fwd: the argument checks (once, for every backend), the
 * defaults (strides, softmax scale, causal folded into the window), one INFO line per
 * call, and the choice of implementation:
 *   cpu backend   the tiled host implementation (src/cpu/attention_cpu.c), or the
 *                 portable dialect kernel on the SIMT executor when
 *                 GP_CPU_ATTENTION=portable (so the GPU kernel is tested without a GPU),
 *                 or, when GP_CPU_ATTENTION=mfma, what the hip backend runs, with the
 *                 MFMA emulated at wave64 (launch_amd_or_portable);
 *   cuda          the portable dialect kernel (src/kernels/attention.cu);
 *   hip           the MFMA kernels (hip/attention_mfma.cu) where they apply, else the
 *                 portable kernel; the INFO line says which and why.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "attention_impl.h"
#include "internal.h"

GP_KERNEL_DECLARE(gp__attention_fwd_tiled);

/* The first released descriptor ends with `deterministic`: a caller compiled against
 * it passes at least this many bytes. Fields added later take their defaults when a
 * caller's struct_size does not cover them. */
#define GP__ATTN_DESC_MIN_SIZE \
  (offsetof(gp_attention_desc_t, deterministic) + sizeof(((gp_attention_desc_t *)0)->deterministic))

/* Sizes beyond this are rejected: FlashAttention's varlen offsets are int32, and it
 * keeps every product of the default strides inside int64. */
#define GP__ATTN_MAX_EXTENT ((int64_t)INT32_MAX)

/* Messages name the public function, whichever helper finds the fault. */
#define ATTN_ERR(status, ...) gp__error((status), "gp_attention_fwd", __VA_ARGS__)

static bool mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }

/* Default strides of a [batch, seq, heads, dim] tensor; a nonzero user stride stays.
 * Fails (returns false) when the default batch stride overflows int64. */
static bool default_strides(int64_t seq, int64_t heads, int64_t dim, int64_t *bs, int64_t *ss,
                            int64_t *hs) {
  int64_t s_def, b_def;
  if (!mul_ok(heads, dim, &s_def) || !mul_ok(seq, s_def, &b_def)) return false;
  if (*hs == 0) *hs = dim;
  if (*ss == 0) *ss = s_def;
  if (*bs == 0) *bs = b_def;
  return true;
}

/* Folds causal into the window (causal is window_right = 0, intersected). */
static void effective_window(const gp_attention_desc_t *d, int64_t *wl, int64_t *wr) {
  *wl = d->window_left;
  *wr = d->window_right;
  if (d->causal && (*wr < 0 || *wr > 0)) *wr = 0;
}

static const char *dtype_str(gp_dtype_t t) {
  return t == GP_F32 ? "f32" : t == GP_F16 ? "f16" : t == GP_BF16 ? "bf16" : "?";
}

/* Checks desc (copied into *d, defaults filled) and builds the implementation's
 * parameters. Every failure names the field. */
static gp_status_t check_desc(const gp_attention_desc_t *desc, gp_attention_desc_t *d,
                              gp__attn_params_t *p) {
  if (desc == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'desc' is NULL");
  if (desc->struct_size < GP__ATTN_DESC_MIN_SIZE)
    return ATTN_ERR(GP_ERROR_INVALID_VALUE,
                   "desc->struct_size is %zu, below the %zu bytes of the first descriptor "
                   "version: initialise the descriptor with gp_attention_desc_init()",
                   desc->struct_size, (size_t)GP__ATTN_DESC_MIN_SIZE);
  gp_attention_desc_init(d);
  memcpy(d, desc, desc->struct_size < sizeof(*d) ? desc->struct_size : sizeof(*d));

  if (d->dtype != GP_F16 && d->dtype != GP_BF16 && d->dtype != GP_F32)
    return ATTN_ERR(GP_ERROR_NOT_SUPPORTED,
                   "desc->dtype %d is not supported: attention takes GP_F16, GP_BF16 or GP_F32",
                   (int)d->dtype);
#define CHECK_EXTENT(f)                                                                     \
  do {                                                                                      \
    if (d->f < 1 || d->f > GP__ATTN_MAX_EXTENT)                                             \
      return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc->" #f " is %lld: it must be in 1..%lld", \
                     (long long)d->f, (long long)GP__ATTN_MAX_EXTENT);                      \
  } while (0)
  CHECK_EXTENT(batch);
  CHECK_EXTENT(seqlen_q);
  CHECK_EXTENT(seqlen_k);
  CHECK_EXTENT(heads_q);
  CHECK_EXTENT(heads_kv);
#undef CHECK_EXTENT
  if (d->heads_q % d->heads_kv != 0)
    return ATTN_ERR(GP_ERROR_INVALID_VALUE,
                   "desc->heads_q (%lld) is not a multiple of desc->heads_kv (%lld)",
                   (long long)d->heads_q, (long long)d->heads_kv);
  if (d->head_dim < 1 || d->head_dim > GP__ATTN_MAX_DIM)
    return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc->head_dim is %lld: it must be in 1..%d",
                   (long long)d->head_dim, GP__ATTN_MAX_DIM);
  if (d->head_dim_v < 0 || d->head_dim_v > GP__ATTN_MAX_DIM)
    return ATTN_ERR(GP_ERROR_INVALID_VALUE,
                   "desc->head_dim_v is %lld: it must be 0 (= head_dim) or in 1..%d",
                   (long long)d->head_dim_v, GP__ATTN_MAX_DIM);
  if (d->head_dim_v == 0) d->head_dim_v = d->head_dim;
  if (d->q == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc->q is NULL");
  if (d->k == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc->k is NULL");
  if (d->v == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc->v is NULL");
  if (d->o == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc->o is NULL");
  if (d->window_left < -1)
    return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc->window_left is %lld: it must be -1 (unbounded) or >= 0",
                   (long long)d->window_left);
  if (d->window_right < -1)
    return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc->window_right is %lld: it must be -1 (unbounded) or >= 0",
                   (long long)d->window_right);
  if ((d->cu_seqlens_q == NULL) != (d->cu_seqlens_k == NULL))
    return ATTN_ERR(GP_ERROR_INVALID_VALUE,
                   "desc->cu_seqlens_%s is set but desc->cu_seqlens_%s is NULL: varlen needs both",
                   d->cu_seqlens_q ? "q" : "k", d->cu_seqlens_q ? "k" : "q");
  if (!isfinite(d->softmax_scale))
    return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc->softmax_scale is not finite");

  const int64_t *strides[] = {&d->q_batch_stride, &d->q_seq_stride, &d->q_head_stride,
                              &d->k_batch_stride, &d->k_seq_stride, &d->k_head_stride,
                              &d->v_batch_stride, &d->v_seq_stride, &d->v_head_stride,
                              &d->o_batch_stride, &d->o_seq_stride, &d->o_head_stride};
  static const char *const stride_names[] = {
      "q_batch_stride", "q_seq_stride", "q_head_stride", "k_batch_stride",
      "k_seq_stride",   "k_head_stride", "v_batch_stride", "v_seq_stride",
      "v_head_stride",  "o_batch_stride", "o_seq_stride", "o_head_stride"};
  for (int i = 0; i < 12; i++)
    if (*strides[i] < 0)
      return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc->%s is %lld: strides are >= 0 (0: default)",
                     stride_names[i], (long long)*strides[i]);

  bool varlen = d->cu_seqlens_q != NULL;
  if (!default_strides(d->seqlen_q, d->heads_q, d->head_dim, &d->q_batch_stride,
                       &d->q_seq_stride, &d->q_head_stride) ||
      !default_strides(d->seqlen_k, d->heads_kv, d->head_dim, &d->k_batch_stride,
                       &d->k_seq_stride, &d->k_head_stride) ||
      !default_strides(d->seqlen_k, d->heads_kv, d->head_dim_v, &d->v_batch_stride,
                       &d->v_seq_stride, &d->v_head_stride) ||
      !default_strides(d->seqlen_q, d->heads_q, d->head_dim_v, &d->o_batch_stride,
                       &d->o_seq_stride, &d->o_head_stride))
    return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc: the tensor sizes overflow 64-bit offsets");
  if (varlen) /* packed [total, heads, dim]: no batch stride */
    d->q_batch_stride = d->k_batch_stride = d->v_batch_stride = d->o_batch_stride = 0;

  memset(p, 0, sizeof(*p));
  p->q = d->q;
  p->k = d->k;
  p->v = d->v;
  p->o = d->o;
  p->lse = d->lse;
  p->cu_q = d->cu_seqlens_q;
  p->cu_k = d->cu_seqlens_k;
  p->batch = d->batch;
  p->seqlen_q = d->seqlen_q;
  p->seqlen_k = d->seqlen_k;
  p->heads_q = d->heads_q;
  p->heads_kv = d->heads_kv;
  p->head_dim = d->head_dim;
  p->head_dim_v = d->head_dim_v;
  p->q_bs = d->q_batch_stride, p->q_ss = d->q_seq_stride, p->q_hs = d->q_head_stride;
  p->k_bs = d->k_batch_stride, p->k_ss = d->k_seq_stride, p->k_hs = d->k_head_stride;
  p->v_bs = d->v_batch_stride, p->v_ss = d->v_seq_stride, p->v_hs = d->v_head_stride;
  p->o_bs = d->o_batch_stride, p->o_ss = d->o_seq_stride, p->o_hs = d->o_head_stride;
  effective_window(d, &p->window_left, &p->window_right);
  p->scale = d->softmax_scale != 0.0f ? d->softmax_scale : (float)(1.0 / sqrt((double)d->head_dim));
  p->dtype = (int)d->dtype;
  return GP_SUCCESS;
}

/* The portable kernel: one block per (query tile, query head, sequence), flattened
 * into grid.x so that blocks reading the same key/value head run side by side. */
static gp_status_t launch_portable(gp_stream_t stream, const gp__attn_params_t *p,
                                   gp_kernel_t kernel, char *what, size_t what_len) {
  int64_t tiles = (p->seqlen_q + GP__ATTN_KQ - 1) / GP__ATTN_KQ, blocks;
  if (!mul_ok(tiles, p->heads_q, &blocks) || !mul_ok(blocks, p->batch, &blocks) ||
      blocks > (int64_t)INT32_MAX)
    return ATTN_ERR(GP_ERROR_NOT_SUPPORTED,
                   "%lld query tiles x %lld heads x %lld sequences exceed one grid dimension",
                   (long long)tiles, (long long)p->heads_q, (long long)p->batch);
  size_t smem = (size_t)gp__attn_kernel_smem_floats(p->head_dim, p->head_dim_v) * sizeof(float);
  unsigned threads = (unsigned)(GP__ATTN_KWARPS * kernel->warp_size);
  snprintf(what, what_len, "portable kernel %s (warp %d, grid %lld, block %u, %d x %d tiles, "
           "%zu B shared)", kernel->name, kernel->warp_size, (long long)blocks, threads, GP__ATTN_KQ,
           gp__attn_kernel_block_k(p->head_dim > p->head_dim_v ? p->head_dim : p->head_dim_v), smem);
  gp_dim3_t grid = {(unsigned)blocks, 1, 1}, block = {threads, 1, 1};
  gp__attn_params_t args_p = *p;
  void *args[] = {&args_p};
  return gp_launch(kernel, grid, block, smem, stream, args);
}

#if defined(GP_BUILD_HIP) || defined(GP_BUILD_CPU)
/* The hip backend's choice, shared with GP_CPU_ATTENTION=mfma: the MFMA kernel when
 * gp__attn_amd_choose() takes the call, else the portable kernel with the reason. */
static gp_status_t launch_amd_or_portable(gp_stream_t stream, const gp__attn_params_t *p,
                                          char *what, size_t what_len) {
  gp_kernel_t k = NULL;
  char why[96];
  if (gp__attn_amd_choose(p, &k, why, sizeof(why)))
    return gp__attn_amd_launch(stream, p, k, what, what_len);
  gp_status_t st = launch_portable(stream, p, GP_KERNEL_REF(gp__attention_fwd_tiled), what, what_len);
  size_t n = strlen(what);
  if (n + 3 < what_len) snprintf(what + n, what_len - n, " (%s)", why);
  return st;
}
#endif

/* Bytes spanned by a [batch, seq, heads, dim] tensor with these strides (the last
 * element's offset + 1); false on overflow. */
static bool extent_bytes(int64_t batch, int64_t seq, int64_t heads, int64_t dim, int64_t bs,
                         int64_t ss, int64_t hs, size_t elem, size_t *bytes) {
  int64_t last = dim - 1, t;
  if (__builtin_mul_overflow(batch - 1, bs, &t) || __builtin_add_overflow(last, t, &last)) return false;
  if (__builtin_mul_overflow(seq - 1, ss, &t) || __builtin_add_overflow(last, t, &last)) return false;
  if (__builtin_mul_overflow(heads - 1, hs, &t) || __builtin_add_overflow(last, t, &last)) return false;
  if (__builtin_mul_overflow(last + 1, (int64_t)elem, &t)) return false;
  *bytes = (size_t)t;
  return true;
}

/* Each tensor must fit in the allocation it points into (when gpuport allocated it).
 * With varlen the packed lengths live in device memory, so only the offsets are checked. */
static gp_status_t check_ranges(const char *func, const gp__attn_params_t *p) {
  size_t es = gp_dtype_size((gp_dtype_t)p->dtype), bytes;
  if (p->cu_q) {
    GP__TRY(gp__api_check_range(func, "desc->cu_seqlens_q", p->cu_q, (size_t)(p->batch + 1) * sizeof(int32_t)));
    GP__TRY(gp__api_check_range(func, "desc->cu_seqlens_k", p->cu_k, (size_t)(p->batch + 1) * sizeof(int32_t)));
    return GP_SUCCESS;
  }
  struct {
    const char *name;
    const void *ptr;
    int64_t seq, heads, dim, bs, ss, hs;
  } t[] = {
      {"desc->q", p->q, p->seqlen_q, p->heads_q, p->head_dim, p->q_bs, p->q_ss, p->q_hs},
      {"desc->k", p->k, p->seqlen_k, p->heads_kv, p->head_dim, p->k_bs, p->k_ss, p->k_hs},
      {"desc->v", p->v, p->seqlen_k, p->heads_kv, p->head_dim_v, p->v_bs, p->v_ss, p->v_hs},
      {"desc->o", p->o, p->seqlen_q, p->heads_q, p->head_dim_v, p->o_bs, p->o_ss, p->o_hs},
  };
  for (int i = 0; i < 4; i++) {
    if (!extent_bytes(p->batch, t[i].seq, t[i].heads, t[i].dim, t[i].bs, t[i].ss, t[i].hs, es, &bytes))
      return gp__error(GP_ERROR_INVALID_VALUE, func, "the extent of %s overflows the address space",
                       t[i].name);
    GP__TRY(gp__api_check_range(func, t[i].name, t[i].ptr, bytes));
  }
  if (p->lse) {
    if (!extent_bytes(p->batch, p->heads_q, 1, p->seqlen_q, p->heads_q * p->seqlen_q, p->seqlen_q,
                      0, sizeof(float), &bytes))
      return gp__error(GP_ERROR_INVALID_VALUE, func, "the extent of desc->lse overflows the address space");
    GP__TRY(gp__api_check_range(func, "desc->lse", p->lse, bytes));
  }
  return GP_SUCCESS;
}

/* kernel: NULL for the backend's choice, else a build of the portable kernel to run. */
static gp_status_t attention_fwd(gp_stream_t stream, const gp_attention_desc_t *desc,
                                 gp_kernel_t kernel) {
  gp_attention_desc_t d;
  gp__attn_params_t p;
  static const char func[] = "gp_attention_fwd";
  GP__TRY(gp__api_init(func));
  GP__TRY(check_desc(desc, &d, &p));
  GP__TRY(check_ranges(func, &p));
  gp_stream_t s;
  GP__TRY(gp__stream_resolve(stream, func, &s));

  char what[256] = "";
  gp_status_t st;
  const bool chosen = kernel != NULL;
  if (kernel == NULL) kernel = GP_KERNEL_REF(gp__attention_fwd_tiled);
#if defined(GP_BUILD_CUDA)
  (void)s; /* gp_launch resolves and checks the stream itself */
  (void)chosen;
  st = launch_portable(stream, &p, kernel, what, sizeof(what));
#elif defined(GP_BUILD_HIP)
  (void)s;
  st = chosen ? launch_portable(stream, &p, kernel, what, sizeof(what))
              : launch_amd_or_portable(stream, &p, what, sizeof(what));
#else
  const char *e = getenv(GP__ATTN_ENV);
  if (chosen || (e != NULL && strcmp(e, "portable") == 0)) {
    st = launch_portable(stream, &p, kernel, what, sizeof(what));
  } else if (e != NULL && strcmp(e, "mfma") == 0) {
    st = launch_amd_or_portable(stream, &p, what, sizeof(what));
  } else {
    if (e != NULL && *e != '\0' && strcmp(e, "host") != 0)
      GP__WARN(GP__SUB_ATTN, "%s=%s is not 'portable', 'mfma' or 'host': using the host implementation",
               GP__ATTN_ENV, e);
    st = gp__cpu_attention_fwd(s, &p, what, sizeof(what));
  }
#endif
  GP__INFO(GP__SUB_ATTN,
           "attention fwd %s: batch %lld, seqlen_q %lld, seqlen_k %lld, heads %lld/%lld, "
           "head_dim %lld/%lld, scale %g, causal %d, window (%lld, %lld), varlen %d, lse %d "
           "-> %s%s",
           dtype_str(d.dtype), (long long)d.batch, (long long)d.seqlen_q, (long long)d.seqlen_k,
           (long long)d.heads_q, (long long)d.heads_kv, (long long)d.head_dim,
           (long long)d.head_dim_v, (double)p.scale, d.causal != 0, (long long)d.window_left,
           (long long)d.window_right, p.cu_q != NULL, p.lse != NULL, what,
           st == GP_SUCCESS ? "" : " (failed)");
  return st;
}

GP_API gp_status_t gp_attention_fwd(gp_stream_t stream, const gp_attention_desc_t *desc) {
  return attention_fwd(stream, desc, NULL);
}

gp_status_t gp__attention_fwd_kernel(gp_stream_t stream, const gp_attention_desc_t *desc,
                                     gp_kernel_t kernel) {
  if (kernel == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'kernel' is NULL");
  return attention_fwd(stream, desc, kernel);
}
