/*
 * attention.c - gp_attention_fwd, gp_attention_bwd_workspace_size and gp_attention_bwd:
 * the argument checks (once, for every backend), the defaults (strides, softmax scale,
 * causal folded into the window), the backward's workspace layout, one INFO line per
 * call, and the choice of implementation:
 *   cpu backend   the tiled host implementations (kernels/cpu/attention_fwd_cpu.c,
 *                 kernels/cpu/attention_bwd_cpu.c), or the portable dialect kernels on the
 *                 SIMT executor when GP_CPU_ATTENTION=portable (so the GPU kernels are
 *                 tested without a GPU), or with GP_CPU_ATTENTION=sm80 the sm_80 (kernels/sm80/)
 *                 kernels on the executor under emulation, or with
 *                 GP_CPU_ATTENTION=mfma the AMD MFMA kernels (kernels/mfma/) there at wave64, the
 *                 portable kernels where they do not apply;
 *   cuda          the sm_80 kernels (kernels/sm80/attention_fwd_sm80.cu, chosen by
 *                 kernels/sm80/attention_sm80_host.c) on devices of compute capability 8.0 and above
 *                 where they apply, else the portable dialect kernels;
 *   hip           the MFMA kernels (kernels/mfma/attention_fwd_mfma.cu, kernels/mfma/attention_bwd_mfma.cu,
 *                 chosen by kernels/mfma/attention_mfma_host.c) where they apply, else the portable
 *                 dialect kernels (kernels/portable/attention_fwd_portable.cu, kernels/portable/attention_bwd_portable.cu).
 * When a matrix-core kernel does not take a call, the INFO line says why.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "attention_impl.h"
#include "kernels/sm80/sm80.h"
#include "kernels/sm90a/attention_sm90a.h"
#include "internal.h"

GP_KERNEL_DECLARE(gp__attention_fwd_tiled);
GP_KERNEL_DECLARE(gp__attention_bwd_pre);
GP_KERNEL_DECLARE(gp__attention_bwd_main);
GP_KERNEL_DECLARE(gp__attention_bwd_dq);
GP_KERNEL_DECLARE(gp__attention_bwd_dkv);

/* The first released descriptor ends with `deterministic`: a caller compiled against
 * it passes at least this many bytes. Fields added later take their defaults when a
 * caller's struct_size does not cover them. */
#define GP__ATTN_DESC_MIN_SIZE \
  (offsetof(gp_attention_desc_t, deterministic) + sizeof(((gp_attention_desc_t *)0)->deterministic))

/* Sizes beyond this are rejected: FlashAttention's varlen offsets are int32, and it
 * keeps every product of the default strides inside int64. */
#define GP__ATTN_MAX_EXTENT ((int64_t)INT32_MAX)

/* Messages name the public function (func, in scope), whichever helper finds the fault. */
#define ATTN_ERR(status, ...) gp__error((status), func, __VA_ARGS__)

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
 * parameters. Every failure names the field. With tensors false (a workspace query) the
 * tensor pointers are not looked at. */
static gp_status_t check_desc(const char *func, const gp_attention_desc_t *desc, bool tensors,
                              gp_attention_desc_t *d, gp__attn_params_t *p) {
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
                   "desc->dtype %s (%d) is not supported: attention takes GP_F16, GP_BF16 or GP_F32",
                   gp_dtype_name(d->dtype), (int)d->dtype);
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
  if (tensors && d->q == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc->q is NULL");
  if (tensors && d->k == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc->k is NULL");
  if (tensors && d->v == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc->v is NULL");
  if (tensors && d->o == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc->o is NULL");
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

#if defined(GP_BUILD_CPU)
/* GP_CPU_ATTENTION values that run dialect kernels on the executor: the portable ones
 * wherever a matrix-core kernel (sm80, mfma) does not apply, as on a GPU. */
static bool kernels_mode(const char *e) {
  return e != NULL && (strcmp(e, "portable") == 0 || strcmp(e, "sm80") == 0 || strcmp(e, "sm90a") == 0 ||
                       strcmp(e, "mfma") == 0);
}
#endif

/* Why no matrix-core kernel took the call (sm80: why, MFMA: mwhy; empty when that kind
 * is not enabled), appended to the INFO line's description. */
static void append_why(char *what, size_t what_len, const char *why, const char *mwhy) {
  size_t n = strlen(what);
  if (why[0] != '\0') snprintf(what + n, what_len - n, "; no sm_80 kernel: %s", why);
  n = strlen(what);
  if (mwhy[0] != '\0') snprintf(what + n, what_len - n, "; no MFMA kernel: %s", mwhy);
}

/* The portable kernel: one block per (query tile, query head, sequence), flattened
 * into grid.x so that blocks reading the same key/value head run side by side. */
static gp_status_t launch_portable(gp_stream_t stream, const gp__attn_params_t *p,
                                   gp_kernel_t kernel, char *what, size_t what_len) {
  static const char func[] = "gp_attention_fwd";
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

/* A [batch, seq, heads, dim] tensor (p's dtype) to check against its allocation. */
typedef struct tensor_ref {
  const char *name;
  const void *ptr;
  int64_t seq, heads, dim, bs, ss, hs;
} tensor_ref_t;

static gp_status_t check_tensors(const char *func, const gp__attn_params_t *p,
                                 const tensor_ref_t *t, int n) {
  size_t es = gp_dtype_size((gp_dtype_t)p->dtype), bytes;
  for (int i = 0; i < n; i++) {
    if (!extent_bytes(p->batch, t[i].seq, t[i].heads, t[i].dim, t[i].bs, t[i].ss, t[i].hs, es, &bytes))
      return gp__error(GP_ERROR_INVALID_VALUE, func, "the extent of %s overflows the address space",
                       t[i].name);
    GP__TRY(gp__api_check_range(func, t[i].name, t[i].ptr, bytes));
  }
  return GP_SUCCESS;
}

/* Each tensor must fit in the allocation it points into (when gpuport allocated it).
 * With varlen the packed lengths live in device memory, so only the offsets are checked. */
static gp_status_t check_ranges(const char *func, const gp__attn_params_t *p) {
  size_t bytes;
  if (p->cu_q) {
    GP__TRY(gp__api_check_range(func, "desc->cu_seqlens_q", p->cu_q, (size_t)(p->batch + 1) * sizeof(int32_t)));
    GP__TRY(gp__api_check_range(func, "desc->cu_seqlens_k", p->cu_k, (size_t)(p->batch + 1) * sizeof(int32_t)));
    return GP_SUCCESS;
  }
  const tensor_ref_t t[] = {
      {"desc->q", p->q, p->seqlen_q, p->heads_q, p->head_dim, p->q_bs, p->q_ss, p->q_hs},
      {"desc->k", p->k, p->seqlen_k, p->heads_kv, p->head_dim, p->k_bs, p->k_ss, p->k_hs},
      {"desc->v", p->v, p->seqlen_k, p->heads_kv, p->head_dim_v, p->v_bs, p->v_ss, p->v_hs},
      {"desc->o", p->o, p->seqlen_q, p->heads_q, p->head_dim_v, p->o_bs, p->o_ss, p->o_hs},
  };
  GP__TRY(check_tensors(func, p, t, 4));
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
  GP__TRY(check_desc(func, desc, true, &d, &p));
  GP__TRY(check_ranges(func, &p));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, func, &s));

  char what[400] = "", why[128] = "", mwhy[128] = "";
  gp_status_t st;
  gp__attn_sm80_plan_t plan;
  gp__attn_mfma_plan_t mplan;
  gp__attn_sm90_plan_t plan90;
  char why90[128] = "";
  if (kernel == NULL && gp__attn_sm90_choose(&p, &plan90, why90, sizeof(why90))) {
    st = gp__attn_sm90_launch(stream, &p, &plan90);
    snprintf(what, sizeof(what), "%s", plan90.name);
  } else if (kernel == NULL && gp__attn_sm80_choose(&p, &plan, why, sizeof(why))) {
    st = gp__attn_sm80_launch(stream, &p, &plan);
    snprintf(what, sizeof(what), "%s%s%s", plan.name, why90[0] ? "; " : "", why90);
  } else if (kernel == NULL && gp__attn_mfma_choose(&p, &mplan, mwhy, sizeof(mwhy))) {
    st = gp__attn_mfma_launch(stream, &p, &mplan);
    snprintf(what, sizeof(what), "%s", mplan.name);
  } else {
    const bool given = kernel != NULL;
    if (kernel == NULL) kernel = GP_KERNEL_REF(gp__attention_fwd_tiled);
#if defined(GP_BUILD_CUDA) || defined(GP_BUILD_HIP)
    (void)s; /* gp_launch resolves and checks the stream itself */
    (void)given;
    st = launch_portable(stream, &p, kernel, what, sizeof(what));
#else
    const char *e = getenv(GP__ATTN_ENV);
    if (given || kernels_mode(e)) {
      st = launch_portable(stream, &p, kernel, what, sizeof(what));
    } else {
      if (e != NULL && *e != '\0' && strcmp(e, "host") != 0)
        GP__WARN(GP__SUB_ATTN, "%s=%s is not 'portable', 'sm80', 'sm90a', 'mfma' or 'host': using the "
                 "host implementation", GP__ATTN_ENV, e);
      st = gp__cpu_attention_fwd(s, &p, what, sizeof(what));
    }
#endif
    append_why(what, sizeof(what), why, mwhy);
  }
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
  static const char func[] = "gp_attention_fwd";
  if (kernel == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'kernel' is NULL");
  return attention_fwd(stream, desc, kernel);
}

/* ---- backward --------------------------------------------------------------------------- */

/* The backward's workspace: byte offsets of its f32 arrays (each 256-byte aligned) and
 * their extents; see gp__attn_bwd_params_t for what each holds. */
typedef struct bwd_layout {
  size_t d_off, dq_off, dk_off, dv_off, bytes;
  int64_t rows_q, rows_k, nslices;
  bool gqa; /* heads_q > heads_kv: per-query-head dk and dv before the group sum */
} bwd_layout_t;

/* Places an array of the product of the counts (f32) at the next 256-byte boundary. */
static bool place(size_t *end, size_t *at, int64_t n1, int64_t n2, int64_t n3, int64_t n4) {
  int64_t n;
  size_t bytes, start;
  if (!mul_ok(n1, n2, &n) || !mul_ok(n, n3, &n) || !mul_ok(n, n4, &n) || !mul_ok(n, 4, &n))
    return false;
  bytes = (size_t)n;
  start = (*end + 255) & ~(size_t)255;
  if (start < *end || __builtin_add_overflow(start, bytes, end)) return false;
  *at = start;
  return true;
}

static gp_status_t bwd_layout(const char *func, const gp__attn_params_t *p, bool deterministic,
                              bwd_layout_t *w) {
  memset(w, 0, sizeof(*w));
  w->rows_q = p->batch * p->seqlen_q; /* both factors < 2^31 */
  w->rows_k = p->batch * p->seqlen_k;
  w->nslices = deterministic ? gp__attn_bwd_splits(p->batch, p->heads_q, p->seqlen_k) : 1;
  w->gqa = p->heads_q != p->heads_kv;
  size_t end = 0;
  bool ok = place(&end, &w->d_off, w->rows_q, p->heads_q, 1, 1) &&
            place(&end, &w->dq_off, w->nslices, w->rows_q, p->heads_q, p->head_dim);
  if (ok && w->gqa)
    ok = place(&end, &w->dk_off, w->rows_k, p->heads_q, p->head_dim, 1) &&
         place(&end, &w->dv_off, w->rows_k, p->heads_q, p->head_dim_v, 1);
  if (!ok) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "desc: the workspace size overflows size_t");
  w->bytes = end;
  return GP_SUCCESS;
}

GP_API gp_status_t gp_attention_bwd_workspace_size(const gp_attention_desc_t *desc, size_t *bytes) {
  static const char func[] = "gp_attention_bwd_workspace_size";
  gp_attention_desc_t d;
  gp__attn_params_t p;
  bwd_layout_t w;
  GP__TRY(gp__api_init(func));
  if (bytes == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'bytes' is NULL");
  GP__TRY(check_desc(func, desc, false, &d, &p));
  GP__TRY(bwd_layout(func, &p, d.deterministic != 0, &w));
  *bytes = w.bytes;
  return GP_SUCCESS;
}

/* The arguments beyond the descriptor: every pointer set, the workspace large enough
 * and 16-byte aligned, every tensor inside its allocation. */
static gp_status_t check_bwd_args(const char *func, const gp__attn_params_t *p, const void *d_o,
                                  void *dq, void *dk, void *dv, void *workspace,
                                  size_t workspace_bytes, const bwd_layout_t *w) {
  if (p->lse == NULL)
    return ATTN_ERR(GP_ERROR_INVALID_VALUE,
                    "desc->lse is NULL: the backward reads the forward's lse (set it for the forward too)");
  if (d_o == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'd_o' is NULL");
  if (dq == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'dq' is NULL");
  if (dk == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'dk' is NULL");
  if (dv == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'dv' is NULL");
  if (workspace == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'workspace' is NULL");
  if (workspace_bytes < w->bytes)
    return ATTN_ERR(GP_ERROR_INVALID_VALUE,
                    "'workspace_bytes' is %zu, below the %zu bytes this call needs "
                    "(gp_attention_bwd_workspace_size)", workspace_bytes, w->bytes);
  if ((uintptr_t)workspace % 16 != 0)
    return ATTN_ERR(GP_ERROR_INVALID_VALUE, "'workspace' (%p) is not 16-byte aligned", workspace);
  GP__TRY(check_ranges(func, p));
  GP__TRY(gp__api_check_range(func, "workspace", workspace, w->bytes));
  if (p->cu_q) return GP_SUCCESS;
  const tensor_ref_t t[] = {
      {"d_o", d_o, p->seqlen_q, p->heads_q, p->head_dim_v, p->o_bs, p->o_ss, p->o_hs},
      {"dq", dq, p->seqlen_q, p->heads_q, p->head_dim, p->q_bs, p->q_ss, p->q_hs},
      {"dk", dk, p->seqlen_k, p->heads_kv, p->head_dim, p->k_bs, p->k_ss, p->k_hs},
      {"dv", dv, p->seqlen_k, p->heads_kv, p->head_dim_v, p->v_bs, p->v_ss, p->v_hs},
  };
  return check_tensors(func, p, t, 4);
}

static gp_status_t launch_one(const char *func, gp_kernel_t k, int64_t blocks, size_t smem,
                              gp_stream_t stream, gp__attn_bwd_params_t *bp) {
  if (blocks > (int64_t)INT32_MAX)
    return ATTN_ERR(GP_ERROR_NOT_SUPPORTED, "%s needs %lld blocks, more than one grid dimension holds",
                    k->name, (long long)blocks);
  gp_dim3_t grid = {(unsigned)blocks, 1, 1}, block = {(unsigned)(GP__ATTN_KWARPS * k->warp_size), 1, 1};
  void *args[] = {bp};
  return gp_launch(k, grid, block, smem, stream, args);
}

/* The portable kernels (FlashAttention-2's preprocess, main loop over key blocks,
 * postprocess), in stream order. Each grid is flattened into grid.x. */
static gp_status_t launch_bwd_portable(gp_stream_t stream, gp__attn_bwd_params_t *bp,
                                       const gp__attn_bwd_kernels_t *k, char *what,
                                       size_t what_len) {
  static const char func[] = "gp_attention_bwd";
  const gp__attn_params_t *p = &bp->f;
  const int64_t dmax = p->head_dim > p->head_dim_v ? p->head_dim : p->head_dim_v;
  const int bk = gp__attn_bwd_block_k(dmax);
  const int64_t nkb = (p->seqlen_k + bk - 1) / bk;
  const int64_t qtiles = (p->seqlen_q + GP__ATTN_KQ - 1) / GP__ATTN_KQ;
  const int64_t ktiles = (p->seqlen_k + GP__ATTN_KQ - 1) / GP__ATTN_KQ;
  bp->nsplit = bp->deterministic ? (bp->nslices < nkb ? bp->nslices : nkb) : nkb;
  bp->nslices = bp->deterministic ? bp->nsplit : 1;
  const size_t smem = (size_t)gp__attn_bwd_smem_floats(p->head_dim, p->head_dim_v) * sizeof(float);
  const int64_t bh = p->batch * p->heads_q; /* < 2^62 */
  snprintf(what, what_len, "portable kernels %s (warp %d, block %d, grid %lld, %d x %d tiles, "
           "%zu B shared, %lld dq slice%s)", k->main->name, k->main->warp_size,
           GP__ATTN_KWARPS * k->main->warp_size, (long long)(bp->nsplit * bh), bk,
           gp__attn_bwd_block_q(dmax), smem, (long long)bp->nslices, bp->nslices == 1 ? "" : "s");
  GP__TRY(launch_one(func, k->pre, qtiles * bh, 0, stream, bp));
  GP__TRY(launch_one(func, k->main, bp->nsplit * bh, smem, stream, bp));
  GP__TRY(launch_one(func, k->dq, qtiles * bh, 0, stream, bp));
  if (bp->ws_dk) GP__TRY(launch_one(func, k->dkv, ktiles * p->batch * p->heads_kv, 0, stream, bp));
  return GP_SUCCESS;
}

/* The sm_80 main kernel between the portable preprocess and postprocesses: the same
 * workspace and slices, with the split over the sm_80 kernel's key blocks. */
static gp_status_t launch_bwd_sm80(gp_stream_t stream, gp__attn_bwd_params_t *bp,
                                   const gp__attn_sm80_plan_t *plan,
                                   const gp__attn_bwd_kernels_t *k, char *what, size_t what_len) {
  static const char func[] = "gp_attention_bwd";
  const gp__attn_params_t *p = &bp->f;
  const int64_t nkb = (p->seqlen_k + GP__SM80_BWD_BN(p->head_dim) - 1) / GP__SM80_BWD_BN(p->head_dim);
  const int64_t qtiles = (p->seqlen_q + GP__ATTN_KQ - 1) / GP__ATTN_KQ;
  const int64_t ktiles = (p->seqlen_k + GP__ATTN_KQ - 1) / GP__ATTN_KQ;
  const int64_t bh = p->batch * p->heads_q; /* < 2^62 */
  bp->nsplit = bp->deterministic ? (bp->nslices < nkb ? bp->nslices : nkb) : nkb;
  bp->nslices = bp->deterministic ? bp->nsplit : 1;
  snprintf(what, what_len, "%s, grid %lld, %lld dq slice%s; portable %s, %s, %s", plan->name,
           (long long)(bp->nsplit * bh), (long long)bp->nslices, bp->nslices == 1 ? "" : "s",
           k->pre->name, k->dq->name, k->dkv->name);
  GP__TRY(launch_one(func, k->pre, qtiles * bh, 0, stream, bp));
  GP__TRY(gp__attn_bwd_sm80_launch(stream, bp, plan, bp->nsplit * bh));
  GP__TRY(launch_one(func, k->dq, qtiles * bh, 0, stream, bp));
  if (bp->ws_dk) GP__TRY(launch_one(func, k->dkv, ktiles * p->batch * p->heads_kv, 0, stream, bp));
  return GP_SUCCESS;
}

static const gp__attn_bwd_kernels_t g_bwd_kernels = {
    GP_KERNEL_REF(gp__attention_bwd_pre), GP_KERNEL_REF(gp__attention_bwd_main),
    GP_KERNEL_REF(gp__attention_bwd_dq), GP_KERNEL_REF(gp__attention_bwd_dkv)};

/* kernels: NULL for the backend's choice, else a build of the portable kernels to run. */
static gp_status_t attention_bwd(gp_stream_t stream, const gp_attention_desc_t *desc,
                                 const void *d_o, void *dq, void *dk, void *dv, void *workspace,
                                 size_t workspace_bytes, const gp__attn_bwd_kernels_t *kernels) {
  static const char func[] = "gp_attention_bwd";
  gp_attention_desc_t d;
  gp__attn_bwd_params_t bp;
  bwd_layout_t w;
  GP__TRY(gp__api_init(func));
  memset(&bp, 0, sizeof(bp));
  GP__TRY(check_desc(func, desc, true, &d, &bp.f));
  GP__TRY(bwd_layout(func, &bp.f, d.deterministic != 0, &w));
  GP__TRY(check_bwd_args(func, &bp.f, d_o, dq, dk, dv, workspace, workspace_bytes, &w));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, func, &s));

  char *ws = (char *)workspace;
  bp.d_o = d_o, bp.dq = dq, bp.dk = dk, bp.dv = dv;
  bp.ws_d = (float *)(ws + w.d_off);
  bp.ws_dq = (float *)(ws + w.dq_off);
  bp.ws_dk = w.gqa ? (float *)(ws + w.dk_off) : NULL;
  bp.ws_dv = w.gqa ? (float *)(ws + w.dv_off) : NULL;
  bp.rows_q = w.rows_q, bp.rows_k = w.rows_k, bp.nslices = w.nslices;
  bp.deterministic = d.deterministic != 0;

  char what[512] = "", why[128] = "", mwhy[128] = "";
  gp_status_t st;
  gp__attn_sm80_plan_t plan;
  gp__attn_mfma_plan_t mplan;
  if (kernels == NULL && gp__attn_bwd_sm80_choose(&bp, &plan, why, sizeof(why))) {
    st = launch_bwd_sm80(stream, &bp, &plan, &g_bwd_kernels, what, sizeof(what));
  } else if (kernels == NULL && gp__attn_bwd_mfma_choose(&bp, &mplan, mwhy, sizeof(mwhy))) {
    st = gp__attn_bwd_mfma_launch(stream, &bp, &mplan);
    snprintf(what, sizeof(what), "%s", mplan.name);
  } else {
#if defined(GP_BUILD_CUDA) || defined(GP_BUILD_HIP)
    (void)s; /* gp_launch resolves and checks the stream itself */
    st = launch_bwd_portable(stream, &bp, kernels ? kernels : &g_bwd_kernels, what, sizeof(what));
#else
    const char *e = getenv(GP__ATTN_ENV);
    if (kernels != NULL || kernels_mode(e)) {
      st = launch_bwd_portable(stream, &bp, kernels ? kernels : &g_bwd_kernels, what, sizeof(what));
    } else {
      if (e != NULL && *e != '\0' && strcmp(e, "host") != 0)
        GP__WARN(GP__SUB_ATTN, "%s=%s is not 'portable', 'sm80', 'mfma' or 'host': using the "
                 "host implementation", GP__ATTN_ENV, e);
      st = gp__cpu_attention_bwd(s, &bp, what, sizeof(what));
    }
#endif
    append_why(what, sizeof(what), why, mwhy);
  }
  GP__INFO(GP__SUB_ATTN,
           "attention bwd %s: batch %lld, seqlen_q %lld, seqlen_k %lld, heads %lld/%lld, "
           "head_dim %lld/%lld, scale %g, causal %d, window (%lld, %lld), varlen %d, "
           "deterministic %d, workspace %zu B -> %s%s",
           dtype_str(d.dtype), (long long)d.batch, (long long)d.seqlen_q, (long long)d.seqlen_k,
           (long long)d.heads_q, (long long)d.heads_kv, (long long)d.head_dim,
           (long long)d.head_dim_v, (double)bp.f.scale, d.causal != 0, (long long)d.window_left,
           (long long)d.window_right, bp.f.cu_q != NULL, bp.deterministic, w.bytes, what,
           st == GP_SUCCESS ? "" : " (failed)");
  return st;
}

GP_API gp_status_t gp_attention_bwd(gp_stream_t stream, const gp_attention_desc_t *desc,
                                    const void *d_o, void *dq, void *dk, void *dv,
                                    void *workspace, size_t workspace_bytes) {
  return attention_bwd(stream, desc, d_o, dq, dk, dv, workspace, workspace_bytes, NULL);
}

gp_status_t gp__attention_bwd_kernels(gp_stream_t stream, const gp_attention_desc_t *desc,
                                      const void *d_o, void *dq, void *dk, void *dv,
                                      void *workspace, size_t workspace_bytes,
                                      const gp__attn_bwd_kernels_t *kernels) {
  static const char func[] = "gp_attention_bwd";
  if (kernels == NULL || !kernels->pre || !kernels->main || !kernels->dq || !kernels->dkv)
    return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'kernels' is NULL or incomplete");
  return attention_bwd(stream, desc, d_o, dq, dk, dv, workspace, workspace_bytes, kernels);
}
