/*
 * attention.c - gp_attention_fwd, gp_attention_bwd_workspace_size and gp_attention_bwd:
 * the argument checks (once, for every backend), the defaults (strides, softmax scale,
 * causal folded into the window), the backward's workspace layout, the walk over the
 * attention tables (src/attention_table.c: which kernel family runs the call on each
 * backend, and why the others did not) and one INFO line per call naming the kernel
 * chosen.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "dispatch.h"
#include "internal.h"

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

/* Every tensor of the call aligned to its elements (src/api.h, gp__api_check_aligned);
 * the 16-byte rows some families need beyond that their supports() asks for, declining
 * otherwise. */
static gp_status_t check_aligned(const char *func, const gp_attention_desc_t *d) {
  const size_t es = gp_dtype_size(d->dtype);
  const char *tn = gp_dtype_name(d->dtype);
  GP__TRY(gp__api_check_aligned(func, "desc->q", d->q, es, tn));
  GP__TRY(gp__api_check_aligned(func, "desc->k", d->k, es, tn));
  GP__TRY(gp__api_check_aligned(func, "desc->v", d->v, es, tn));
  GP__TRY(gp__api_check_aligned(func, "desc->o", d->o, es, tn));
  GP__TRY(gp__api_check_aligned(func, "desc->lse", d->lse, sizeof(float), "f32"));
  GP__TRY(gp__api_check_aligned(func, "desc->cu_seqlens_q", d->cu_seqlens_q, sizeof(int32_t), "int32"));
  return gp__api_check_aligned(func, "desc->cu_seqlens_k", d->cu_seqlens_k, sizeof(int32_t), "int32");
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
  if (tensors) GP__TRY(check_aligned(func, d));

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
    GP__TRY(gp__api_check_device_range(func, t[i].name, t[i].ptr, bytes));
  }
  return GP_SUCCESS;
}

/* Varlen: the packed tensors' lengths live in device memory, so only their first
 * element is checked here (device-accessible, not freed). */
static gp_status_t check_packed_starts(const char *func, const gp__attn_params_t *p,
                                       const tensor_ref_t *t, int n) {
  const size_t es = gp_dtype_size((gp_dtype_t)p->dtype);
  for (int i = 0; i < n; i++) GP__TRY(gp__api_check_device_range(func, t[i].name, t[i].ptr, es));
  return GP_SUCCESS;
}

/* Rows of a packed [tokens, heads, dim] tensor (elements of elem bytes, row stride ss)
 * that fit in the allocation holding ptr; GP__ATTN_TOKENS_UNKNOWN when gpuport does not
 * know that allocation. */
static int64_t packed_rows(const void *ptr, int64_t heads, int64_t dim, int64_t ss, int64_t hs,
                           size_t elem) {
  gp__alloc_info_t info;
  int64_t span, t;
  if (ptr == NULL || !gp__alloc_find(ptr, &info)) return GP__ATTN_TOKENS_UNKNOWN;
  const size_t off = (size_t)((const char *)ptr - (const char *)info.base);
  const int64_t avail = (int64_t)((info.bytes - off) / elem); /* elements from ptr on */
  if (__builtin_mul_overflow(heads - 1, hs, &t) || __builtin_add_overflow(t, dim, &span) || avail < span)
    return 0;
  return (avail - span) / ss + 1; /* row r spans elements up to r * ss + span */
}

/* Lowers *tokens to the rows of each packed tensor of t (varlen: the kernels and the host
 * implementation keep every sequence inside them; kernels/common/attention_seq.h). */
static void varlen_tokens(const gp__attn_params_t *p, const tensor_ref_t *t, int n, int64_t *tokens) {
  const size_t es = gp_dtype_size((gp_dtype_t)p->dtype);
  for (int i = 0; i < n; i++) {
    const int64_t rows = packed_rows(t[i].ptr, t[i].heads, t[i].dim, t[i].ss, t[i].hs, es);
    if (rows < *tokens) *tokens = rows;
  }
}

/* Varlen: the tokens the packed q, o and lse (tokens_q) and k and v (tokens_k) hold. */
static void varlen_fwd_tokens(gp__attn_params_t *p) {
  const tensor_ref_t tq[] = {
      {"desc->q", p->q, 0, p->heads_q, p->head_dim, 0, p->q_ss, p->q_hs},
      {"desc->o", p->o, 0, p->heads_q, p->head_dim_v, 0, p->o_ss, p->o_hs},
  };
  const tensor_ref_t tk[] = {
      {"desc->k", p->k, 0, p->heads_kv, p->head_dim, 0, p->k_ss, p->k_hs},
      {"desc->v", p->v, 0, p->heads_kv, p->head_dim_v, 0, p->v_ss, p->v_hs},
  };
  p->tokens_q = p->tokens_k = GP__ATTN_TOKENS_UNKNOWN;
  varlen_tokens(p, tq, 2, &p->tokens_q);
  varlen_tokens(p, tk, 2, &p->tokens_k);
  if (p->lse) { /* [heads_q, total_q] f32 */
    const int64_t rows = packed_rows(p->lse, 1, 1, 1, 0, sizeof(float));
    if (rows != GP__ATTN_TOKENS_UNKNOWN && rows / p->heads_q < p->tokens_q) p->tokens_q = rows / p->heads_q;
  }
}

/* Each tensor must fit in the allocation it points into (when gpuport allocated it).
 * With varlen the packed lengths live in device memory: the offsets are checked here,
 * and the tokens each packed tensor holds go to the kernels, which check the lengths. */
static gp_status_t check_ranges(const char *func, gp__attn_params_t *p) {
  size_t bytes;
  if (p->cu_q) {
    GP__TRY(gp__api_check_device_range(func, "desc->cu_seqlens_q", p->cu_q, (size_t)(p->batch + 1) * sizeof(int32_t)));
    GP__TRY(gp__api_check_device_range(func, "desc->cu_seqlens_k", p->cu_k, (size_t)(p->batch + 1) * sizeof(int32_t)));
    const tensor_ref_t t[] = {
        {.name = "desc->q", .ptr = p->q}, {.name = "desc->k", .ptr = p->k},
        {.name = "desc->v", .ptr = p->v}, {.name = "desc->o", .ptr = p->o}};
    GP__TRY(check_packed_starts(func, p, t, 4));
    if (p->lse) GP__TRY(gp__api_check_device_range(func, "desc->lse", p->lse, sizeof(float)));
    varlen_fwd_tokens(p);
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
    GP__TRY(gp__api_check_device_range(func, "desc->lse", p->lse, bytes));
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
  GP__TRY(gp__api_check_launch_stream(func, s));

  (void)s; /* checked here for every family; each launch resolves it again */
  gp__dispatch_t dsp;
  char declined[512];
  GP__TRY(gp__dispatch_begin(&dsp, GP__OP_ATTN_FWD, func, declined, sizeof declined));
  gp__attn_plan_t plan;
  const gp__attn_fwd_impl_t *impl;
  if (kernel != NULL) { /* a given build of the portable kernel */
    char why[192] = "";
    if (!gp__attn_fwd_portable_plan(&p, kernel, &plan, why, sizeof why))
      return ATTN_ERR(GP_ERROR_NOT_SUPPORTED, "%s", why);
    gp__dispatch_chose(&dsp, plan.kernel_name);
    impl = &gp__attn_fwd_impl_portable;
  } else if ((impl = gp__attn_fwd_choose(&dsp, &p, &plan)) == NULL) {
    return gp__dispatch_none(&dsp, func);
  }
  const gp_status_t st = impl->launch(stream, &p, &plan);
  GP__INFO(GP__SUB_ATTN,
           "attention fwd %s: batch %lld, seqlen_q %lld, seqlen_k %lld, heads %lld/%lld, "
           "head_dim %lld/%lld, scale %g, causal %d, window (%lld, %lld), varlen %d, lse %d "
           "-> %s%s%s%s",
           dtype_str(d.dtype), (long long)d.batch, (long long)d.seqlen_q, (long long)d.seqlen_k,
           (long long)d.heads_q, (long long)d.heads_kv, (long long)d.head_dim,
           (long long)d.head_dim_v, (double)p.scale, d.causal != 0, (long long)d.window_left,
           (long long)d.window_right, p.cu_q != NULL, p.lse != NULL, plan.name,
           declined[0] ? "; declined: " : "", declined, st == GP_SUCCESS ? "" : " (failed)");
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

/* The arguments beyond the descriptor: every pointer set and aligned to its elements, the
 * workspace large enough and 16-byte aligned, every tensor inside its allocation. */
static gp_status_t check_bwd_args(const char *func, gp__attn_params_t *p, const void *d_o,
                                  void *dq, void *dk, void *dv, void *workspace,
                                  size_t workspace_bytes, const bwd_layout_t *w) {
  if (p->lse == NULL)
    return ATTN_ERR(GP_ERROR_INVALID_VALUE,
                    "desc->lse is NULL: the backward reads the forward's lse (set it for the forward too)");
  if (d_o == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'd_o' is NULL");
  if (dq == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'dq' is NULL");
  if (dk == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'dk' is NULL");
  if (dv == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'dv' is NULL");
  const size_t es = gp_dtype_size((gp_dtype_t)p->dtype);
  const char *tn = gp_dtype_name((gp_dtype_t)p->dtype);
  GP__TRY(gp__api_check_aligned(func, "argument 'd_o'", d_o, es, tn));
  GP__TRY(gp__api_check_aligned(func, "argument 'dq'", dq, es, tn));
  GP__TRY(gp__api_check_aligned(func, "argument 'dk'", dk, es, tn));
  GP__TRY(gp__api_check_aligned(func, "argument 'dv'", dv, es, tn));
  if (workspace == NULL) return ATTN_ERR(GP_ERROR_INVALID_VALUE, "argument 'workspace' is NULL");
  if (workspace_bytes < w->bytes)
    return ATTN_ERR(GP_ERROR_INVALID_VALUE,
                    "'workspace_bytes' is %zu, below the %zu bytes this call needs "
                    "(gp_attention_bwd_workspace_size)", workspace_bytes, w->bytes);
  if ((uintptr_t)workspace % 16 != 0)
    return ATTN_ERR(GP_ERROR_INVALID_VALUE, "'workspace' (%p) is not 16-byte aligned", workspace);
  GP__TRY(check_ranges(func, p));
  GP__TRY(gp__api_check_device_range(func, "workspace", workspace, w->bytes));
  const tensor_ref_t t[] = {
      {"d_o", d_o, p->seqlen_q, p->heads_q, p->head_dim_v, p->o_bs, p->o_ss, p->o_hs},
      {"dq", dq, p->seqlen_q, p->heads_q, p->head_dim, p->q_bs, p->q_ss, p->q_hs},
      {"dk", dk, p->seqlen_k, p->heads_kv, p->head_dim, p->k_bs, p->k_ss, p->k_hs},
      {"dv", dv, p->seqlen_k, p->heads_kv, p->head_dim_v, p->v_bs, p->v_ss, p->v_hs},
  };
  if (p->cu_q) { /* the gradients bound the sequences as the inputs do */
    GP__TRY(check_packed_starts(func, p, t, 4));
    varlen_tokens(p, t, 2, &p->tokens_q);
    varlen_tokens(p, t + 2, 2, &p->tokens_k);
    return GP_SUCCESS;
  }
  return check_tensors(func, p, t, 4);
}

/* ---- what the backward writes must not overlap anything it touches ------------------------ */

/* One region the backward reads or writes: a [batch, seq, heads, dim] tensor (its layout
 * set), or a dense array (lse, the workspace, the varlen offsets). */
typedef struct region {
  const char *name;
  uintptr_t at;
  size_t bytes;       /* first to one past the last byte; 0 where not known (varlen) */
  bool dense;         /* every byte of [at, at + bytes) belongs to it */
  bool written;       /* the gradients and the workspace */
  bool tensor;        /* the layout below is set */
  int64_t bs, ss, hs, heads, dim;
} region_t;

static region_t tensor_region(const gp__attn_params_t *p, const tensor_ref_t *t, bool written) {
  const size_t es = gp_dtype_size((gp_dtype_t)p->dtype);
  region_t r = {t->name, (uintptr_t)t->ptr, 0, false, written, true, t->bs, t->ss, t->hs, t->heads, t->dim};
  size_t bytes;
  /* Varlen: the tokens live in device memory, so a tensor's end is not known here. */
  if (!p->cu_q && extent_bytes(p->batch, t->seq, t->heads, t->dim, t->bs, t->ss, t->hs, es, &bytes)) {
    int64_t numel;
    r.bytes = bytes;
    r.dense = mul_ok(p->batch, t->seq, &numel) && mul_ok(numel, t->heads, &numel) &&
              mul_ok(numel, t->dim, &numel) && bytes / es == (size_t)numel;
  }
  return r;
}

static region_t dense_region(const char *name, const void *ptr, size_t bytes, bool written) {
  region_t r = {name, (uintptr_t)ptr, bytes, true, written, false, 0, 0, 0, 0, 0};
  return r;
}

/* Whether a and b provably share a byte. Exact where both are dense (an interval test);
 * otherwise two strided tensors may interleave without sharing an element (q, k and v,
 * or dq, dk and dv, as slices of one packed tensor), so they overlap only when they
 * begin at one address, or have one layout and begin less than a contiguous run apart
 * (the same rows then share bytes). Other cases are not refused (PyTorch's
 * get_overlap_status answers "too hard" for them). */
static bool regions_overlap(const region_t *a, const region_t *b, size_t es) {
  if (a->at == b->at) return true;
  if (a->bytes && b->bytes && (a->at >= b->at + b->bytes || b->at >= a->at + a->bytes))
    return false; /* disjoint extents */
  if (a->bytes && b->bytes && a->dense && b->dense) return true;
  if (a->tensor && b->tensor && a->bs == b->bs && a->ss == b->ss && a->hs == b->hs &&
      a->heads == b->heads && a->dim == b->dim) {
    const size_t run = (size_t)(a->hs == a->dim ? a->heads * a->dim : a->dim) * es;
    const uintptr_t delta = a->at > b->at ? a->at - b->at : b->at - a->at;
    return delta < run;
  }
  return false;
}

/* The header's rule: gradients must not overlap each other or the inputs; nor may the
 * workspace overlap any of them. GP_ERROR_INVALID_VALUE naming both otherwise: a GPU
 * would compute garbage there, in an order that varies from run to run. */
static gp_status_t check_bwd_overlap(const char *func, const gp__attn_params_t *p, const void *d_o,
                                     const void *dq, const void *dk, const void *dv,
                                     const void *workspace, const bwd_layout_t *w) {
  const tensor_ref_t t[] = {
      {"desc->q", p->q, p->seqlen_q, p->heads_q, p->head_dim, p->q_bs, p->q_ss, p->q_hs},
      {"desc->k", p->k, p->seqlen_k, p->heads_kv, p->head_dim, p->k_bs, p->k_ss, p->k_hs},
      {"desc->v", p->v, p->seqlen_k, p->heads_kv, p->head_dim_v, p->v_bs, p->v_ss, p->v_hs},
      {"desc->o", p->o, p->seqlen_q, p->heads_q, p->head_dim_v, p->o_bs, p->o_ss, p->o_hs},
      {"d_o", d_o, p->seqlen_q, p->heads_q, p->head_dim_v, p->o_bs, p->o_ss, p->o_hs},
      {"dq", dq, p->seqlen_q, p->heads_q, p->head_dim, p->q_bs, p->q_ss, p->q_hs},
      {"dk", dk, p->seqlen_k, p->heads_kv, p->head_dim, p->k_bs, p->k_ss, p->k_hs},
      {"dv", dv, p->seqlen_k, p->heads_kv, p->head_dim_v, p->v_bs, p->v_ss, p->v_hs},
  };
  region_t r[12];
  int n = 0;
  for (int i = 0; i < 8; i++) r[n++] = tensor_region(p, &t[i], i >= 5);
  r[n++] = dense_region("workspace", workspace, w->bytes, true);
  if (p->cu_q) {
    const size_t cu = (size_t)(p->batch + 1) * sizeof(int32_t);
    r[n++] = dense_region("desc->cu_seqlens_q", p->cu_q, cu, false);
    r[n++] = dense_region("desc->cu_seqlens_k", p->cu_k, cu, false);
    r[n++] = dense_region("desc->lse", p->lse, 0, false); /* [heads_q, total_q]: end unknown */
  } else {
    r[n++] = dense_region("desc->lse", p->lse, (size_t)(p->batch * p->heads_q * p->seqlen_q) * sizeof(float), false);
  }
  const size_t es = gp_dtype_size((gp_dtype_t)p->dtype);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if ((r[i].written || r[j].written) && regions_overlap(&r[i], &r[j], es))
        return ATTN_ERR(GP_ERROR_INVALID_VALUE,
                        "'%s' (%p) and '%s' (%p) overlap: the gradients must not overlap "
                        "each other, the inputs or the workspace",
                        r[i].name, (void *)r[i].at, r[j].name, (void *)r[j].at);
  return GP_SUCCESS;
}

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
  GP__TRY(check_bwd_overlap(func, &bp.f, d_o, dq, dk, dv, workspace, &w));
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, func, &s));
  GP__TRY(gp__api_check_launch_stream(func, s));

  char *ws = (char *)workspace;
  bp.d_o = d_o, bp.dq = dq, bp.dk = dk, bp.dv = dv;
  bp.ws_d = (float *)(ws + w.d_off);
  bp.ws_dq = (float *)(ws + w.dq_off);
  bp.ws_dk = w.gqa ? (float *)(ws + w.dk_off) : NULL;
  bp.ws_dv = w.gqa ? (float *)(ws + w.dv_off) : NULL;
  bp.rows_q = w.rows_q, bp.rows_k = w.rows_k, bp.nslices = w.nslices;
  bp.deterministic = d.deterministic != 0;

  (void)s; /* checked here for every family; each launch resolves it again */
  gp__dispatch_t dsp;
  char declined[512];
  GP__TRY(gp__dispatch_begin(&dsp, GP__OP_ATTN_BWD, func, declined, sizeof declined));
  gp__attn_plan_t plan;
  const gp__attn_bwd_impl_t *impl;
  if (kernels != NULL) { /* a given build of the portable kernels */
    char why[192] = "";
    if (!gp__attn_bwd_portable_plan(&bp, kernels, &plan, why, sizeof why))
      return ATTN_ERR(GP_ERROR_NOT_SUPPORTED, "%s", why);
    gp__dispatch_chose(&dsp, plan.kernel_name);
    impl = &gp__attn_bwd_impl_portable;
  } else if ((impl = gp__attn_bwd_choose(&dsp, &bp, &plan)) == NULL) {
    return gp__dispatch_none(&dsp, func);
  }
  const gp_status_t st = impl->launch(stream, &bp, &plan);
  GP__INFO(GP__SUB_ATTN,
           "attention bwd %s: batch %lld, seqlen_q %lld, seqlen_k %lld, heads %lld/%lld, "
           "head_dim %lld/%lld, scale %g, causal %d, window (%lld, %lld), varlen %d, "
           "deterministic %d, workspace %zu B -> %s%s%s%s",
           dtype_str(d.dtype), (long long)d.batch, (long long)d.seqlen_q, (long long)d.seqlen_k,
           (long long)d.heads_q, (long long)d.heads_kv, (long long)d.head_dim,
           (long long)d.head_dim_v, (double)bp.f.scale, d.causal != 0, (long long)d.window_left,
           (long long)d.window_right, bp.f.cu_q != NULL, bp.deterministic, w.bytes, plan.name,
           declined[0] ? "; declined: " : "", declined, st == GP_SUCCESS ? "" : " (failed)");
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
