/*
 * attention_kvcache.c - gp_attention_kvcache_workspace_size and gp_attention_fwd_kvcache:
 * the argument checks (once, for every backend), the defaults (strides, softmax scale,
 * causal folded into the window), the split-KV count and the workspace layout, the walk
 * over the kvcache table (src/attention_table.c) and one INFO line per call naming the
 * kernel chosen. The rule for the cache lengths and the block table, which live in device
 * memory, is kernels/common/attention_kvcache.h's, applied in stream order.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "dispatch.h"
#include "internal.h"

/* The first released descriptor ends with num_splits. */
#define KV_DESC_MIN_SIZE \
  (offsetof(gp_attention_kvcache_desc_t, num_splits) + sizeof(((gp_attention_kvcache_desc_t *)0)->num_splits))

#define KV_MAX_EXTENT ((int64_t)INT32_MAX)
#define KV_MAX_PAGE 65536
#define KV_MAX_SPLITS 256
/* FlashAttention-2's split heuristic (flash_api.cpp, num_splits_heuristic): at most 128
 * splits; blocks of 64 query rows (here: rows of the GQA group packed along the queries)
 * and of 128 keys; no split once the blocks fill 80% of the multiprocessors; else the
 * fewest splits within 85% of the best wave efficiency. */
#define KV_HEUR_MAX_SPLITS 128
#define KV_HEUR_ROWS 64
#define KV_HEUR_KEYS 128

#define KV_ERR(status, ...) gp__error((status), func, __VA_ARGS__)

static const char *dtype_str(gp_dtype_t t) {
  return t == GP_F32 ? "f32" : t == GP_F16 ? "f16" : t == GP_BF16 ? "bf16" : "?";
}

/* Default strides of a [outer, seq, heads, dim] tensor; nonzero user strides stay. */
static bool default_strides(int64_t seq, int64_t heads, int64_t dim, int64_t *bs, int64_t *ss, int64_t *hs) {
  int64_t s_def, b_def;
  if (__builtin_mul_overflow(heads, dim, &s_def) || __builtin_mul_overflow(seq, s_def, &b_def)) return false;
  if (*hs == 0) *hs = dim;
  if (*ss == 0) *ss = s_def;
  if (*bs == 0) *bs = b_def;
  return true;
}

static gp_status_t check_extent(const char *func, const char *name, int64_t v, int64_t lo) {
  if (v < lo || v > KV_MAX_EXTENT)
    return KV_ERR(GP_ERROR_INVALID_VALUE, "desc->%s is %lld: it must be in %lld..%lld", name, (long long)v,
                  (long long)lo, (long long)KV_MAX_EXTENT);
  return GP_SUCCESS;
}

/* The sizes, flags and strides of desc (copied into *d with defaults filled); the tensor
 * pointers only when tensors is set. */
static gp_status_t check_shape(const char *func, const gp_attention_kvcache_desc_t *desc, bool tensors,
                               gp_attention_kvcache_desc_t *d) {
  if (desc == NULL) return KV_ERR(GP_ERROR_INVALID_VALUE, "argument 'desc' is NULL");
  if (desc->struct_size < KV_DESC_MIN_SIZE)
    return KV_ERR(GP_ERROR_INVALID_VALUE,
                  "desc->struct_size is %zu, below the %zu bytes of the first descriptor version: "
                  "initialise the descriptor with gp_attention_kvcache_desc_init()",
                  desc->struct_size, (size_t)KV_DESC_MIN_SIZE);
  gp_attention_kvcache_desc_init(d);
  memcpy(d, desc, desc->struct_size < sizeof(*d) ? desc->struct_size : sizeof(*d));
  if (d->dtype != GP_F16 && d->dtype != GP_BF16 && d->dtype != GP_F32)
    return KV_ERR(GP_ERROR_NOT_SUPPORTED, "desc->dtype %s (%d) is not supported: attention takes GP_F16, GP_BF16 or GP_F32",
                  gp_dtype_name(d->dtype), (int)d->dtype);
  GP__TRY(check_extent(func, "batch", d->batch, 1));
  GP__TRY(check_extent(func, "seqlen_q", d->seqlen_q, 1));
  GP__TRY(check_extent(func, "heads_q", d->heads_q, 1));
  GP__TRY(check_extent(func, "heads_kv", d->heads_kv, 1));
  GP__TRY(check_extent(func, "num_blocks", d->num_blocks, 1));
  GP__TRY(check_extent(func, "max_blocks_per_seq", d->max_blocks_per_seq, 1));
  GP__TRY(check_extent(func, "seqlen_new", d->seqlen_new, 0));
  if (d->heads_q % d->heads_kv != 0)
    return KV_ERR(GP_ERROR_INVALID_VALUE, "desc->heads_q (%lld) is not a multiple of desc->heads_kv (%lld)",
                  (long long)d->heads_q, (long long)d->heads_kv);
  if (d->head_dim < 1 || d->head_dim > GP__ATTN_MAX_DIM)
    return KV_ERR(GP_ERROR_INVALID_VALUE, "desc->head_dim is %lld: it must be in 1..%d", (long long)d->head_dim,
                  GP__ATTN_MAX_DIM);
  if (d->page_size < 1 || d->page_size > KV_MAX_PAGE || (d->page_size & (d->page_size - 1)) != 0)
    return KV_ERR(GP_ERROR_INVALID_VALUE, "desc->page_size is %lld: it must be a power of two in 1..%d",
                  (long long)d->page_size, KV_MAX_PAGE);
  if (d->max_blocks_per_seq * d->page_size > KV_MAX_EXTENT)
    return KV_ERR(GP_ERROR_INVALID_VALUE,
                  "desc->max_blocks_per_seq x desc->page_size is %lld tokens: at most %lld per sequence",
                  (long long)(d->max_blocks_per_seq * d->page_size), (long long)KV_MAX_EXTENT);
  if ((d->k_new == NULL) != (d->v_new == NULL))
    return KV_ERR(GP_ERROR_INVALID_VALUE, "desc->%s is set but desc->%s is NULL: an append needs both",
                  d->k_new ? "k_new" : "v_new", d->k_new ? "v_new" : "k_new");
  if (tensors && d->k_new == NULL && d->seqlen_new != 0)
    return KV_ERR(GP_ERROR_INVALID_VALUE, "desc->seqlen_new is %lld but desc->k_new and desc->v_new are NULL",
                  (long long)d->seqlen_new);
  if (d->window_left < -1 || d->window_right < -1)
    return KV_ERR(GP_ERROR_INVALID_VALUE, "desc->window_%s is %lld: it must be -1 (unbounded) or >= 0",
                  d->window_left < -1 ? "left" : "right",
                  (long long)(d->window_left < -1 ? d->window_left : d->window_right));
  if (!isfinite(d->softmax_scale)) return KV_ERR(GP_ERROR_INVALID_VALUE, "desc->softmax_scale is not finite");
  if (d->num_splits < 0 || d->num_splits > KV_MAX_SPLITS)
    return KV_ERR(GP_ERROR_INVALID_VALUE, "desc->num_splits is %d: it must be 0 (gpuport's choice) or 1..%d",
                  d->num_splits, KV_MAX_SPLITS);
  if (d->block_table_batch_stride == 0) d->block_table_batch_stride = d->max_blocks_per_seq;
  if (d->block_table_batch_stride < d->max_blocks_per_seq)
    return KV_ERR(GP_ERROR_INVALID_VALUE, "desc->block_table_batch_stride is %lld, below max_blocks_per_seq (%lld)",
                  (long long)d->block_table_batch_stride, (long long)d->max_blocks_per_seq);
  int64_t *strides[] = {&d->q_batch_stride,       &d->q_seq_stride,       &d->q_head_stride,
                        &d->o_batch_stride,       &d->o_seq_stride,       &d->o_head_stride,
                        &d->k_cache_block_stride, &d->k_cache_seq_stride, &d->k_cache_head_stride,
                        &d->v_cache_block_stride, &d->v_cache_seq_stride, &d->v_cache_head_stride,
                        &d->k_new_batch_stride,   &d->k_new_seq_stride,   &d->k_new_head_stride,
                        &d->v_new_batch_stride,   &d->v_new_seq_stride,   &d->v_new_head_stride};
  static const char *const names[] = {
      "q_batch_stride",       "q_seq_stride",       "q_head_stride",       "o_batch_stride",
      "o_seq_stride",         "o_head_stride",      "k_cache_block_stride", "k_cache_seq_stride",
      "k_cache_head_stride",  "v_cache_block_stride", "v_cache_seq_stride", "v_cache_head_stride",
      "k_new_batch_stride",   "k_new_seq_stride",   "k_new_head_stride",   "v_new_batch_stride",
      "v_new_seq_stride",     "v_new_head_stride"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (*strides[i] < 0)
      return KV_ERR(GP_ERROR_INVALID_VALUE, "desc->%s is %lld: strides are >= 0 (0: default)", names[i],
                    (long long)*strides[i]);
  const int64_t hd = d->head_dim, sn = d->seqlen_new > 0 ? d->seqlen_new : 1;
  if (!default_strides(d->seqlen_q, d->heads_q, hd, &d->q_batch_stride, &d->q_seq_stride, &d->q_head_stride) ||
      !default_strides(d->seqlen_q, d->heads_q, hd, &d->o_batch_stride, &d->o_seq_stride, &d->o_head_stride) ||
      !default_strides(d->page_size, d->heads_kv, hd, &d->k_cache_block_stride, &d->k_cache_seq_stride,
                       &d->k_cache_head_stride) ||
      !default_strides(d->page_size, d->heads_kv, hd, &d->v_cache_block_stride, &d->v_cache_seq_stride,
                       &d->v_cache_head_stride) ||
      !default_strides(sn, d->heads_kv, hd, &d->k_new_batch_stride, &d->k_new_seq_stride, &d->k_new_head_stride) ||
      !default_strides(sn, d->heads_kv, hd, &d->v_new_batch_stride, &d->v_new_seq_stride, &d->v_new_head_stride))
    return KV_ERR(GP_ERROR_INVALID_VALUE, "desc: the tensor sizes overflow 64-bit offsets");
  if (!tensors) return GP_SUCCESS;
  const void *need[] = {d->q, d->o, d->k_cache, d->v_cache, d->block_table, d->cache_seqlens};
  static const char *const need_names[] = {"q", "o", "k_cache", "v_cache", "block_table", "cache_seqlens"};
  for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
    if (need[i] == NULL) return KV_ERR(GP_ERROR_INVALID_VALUE, "desc->%s is NULL", need_names[i]);
  return GP_SUCCESS;
}

/* FlashAttention-2's split heuristic (see KV_HEUR_*), for blocks of work `work` (sequence,
 * key/value head, row block) on sms multiprocessors and n_blocks key blocks. */
static int heuristic_splits(int64_t work, int64_t sms, int64_t n_blocks) {
  if (sms < 1) sms = 1;
  if ((double)work >= 0.8 * (double)sms) return 1;
  int64_t max = KV_HEUR_MAX_SPLITS;
  if (max > sms) max = sms;
  if (max > n_blocks) max = n_blocks;
  double eff[KV_HEUR_MAX_SPLITS + 1] = {0}, best = 0.0;
  for (int64_t s = 1; s <= max; s++) {
    /* a count whose blocks per split equal the previous count's is that count again */
    const bool distinct = s == 1 || (n_blocks + s - 1) / s != (n_blocks + s - 2) / (s - 1);
    if (!distinct) continue;
    const double waves = (double)(work * s) / (double)sms;
    eff[s] = waves / ceil(waves);
    if (eff[s] > best) best = eff[s];
  }
  for (int64_t s = 1; s <= max; s++)
    if (eff[s] > 0.0 && eff[s] >= 0.85 * best) return (int)s;
  return 1;
}

/* The split count of a checked descriptor on the current device. */
static gp_status_t split_count(const char *func, const gp_attention_kvcache_desc_t *d, int64_t *nsplit) {
  if (d->num_splits > 0) {
    *nsplit = d->num_splits;
    return GP_SUCCESS;
  }
  const gp_device_props_t *props;
  GP__TRY(gp__api_props(func, gp__current_device(), &props));
  const int64_t group = d->heads_q / d->heads_kv;
  const int64_t rows = (d->seqlen_q * group + KV_HEUR_ROWS - 1) / KV_HEUR_ROWS;
  const int64_t ctx = d->max_blocks_per_seq * d->page_size;
  *nsplit = heuristic_splits(d->batch * d->heads_kv * rows, props->multiprocessor_count,
                             (ctx + KV_HEUR_KEYS - 1) / KV_HEUR_KEYS);
  return GP_SUCCESS;
}

/* Workspace: partial outputs then partial lse, f32, each on a 256-byte boundary. */
static gp_status_t workspace_layout(const char *func, const gp_attention_kvcache_desc_t *d, int64_t nsplit,
                                    size_t *lse_off, size_t *bytes) {
  *lse_off = *bytes = 0;
  if (nsplit <= 1) return GP_SUCCESS;
  int64_t rows, o_elems, lse_elems;
  if (__builtin_mul_overflow(nsplit * d->batch, d->heads_q, &rows) ||
      __builtin_mul_overflow(rows, d->seqlen_q, &lse_elems) ||
      __builtin_mul_overflow(lse_elems, d->head_dim, &o_elems) || o_elems > (int64_t)(SIZE_MAX / 8))
    return KV_ERR(GP_ERROR_INVALID_VALUE, "desc: the workspace size overflows size_t");
  *lse_off = ((size_t)o_elems * sizeof(float) + 255) & ~(size_t)255;
  *bytes = *lse_off + (size_t)lse_elems * sizeof(float);
  return GP_SUCCESS;
}

GP_API gp_status_t gp_attention_kvcache_workspace_size(const gp_attention_kvcache_desc_t *desc, int *splits,
                                                       size_t *bytes) {
  static const char func[] = "gp_attention_kvcache_workspace_size";
  gp_attention_kvcache_desc_t d;
  int64_t nsplit;
  size_t lse_off;
  GP__TRY(gp__api_init(func));
  if (bytes == NULL) return KV_ERR(GP_ERROR_INVALID_VALUE, "argument 'bytes' is NULL");
  GP__TRY(check_shape(func, desc, false, &d));
  GP__TRY(split_count(func, &d, &nsplit));
  GP__TRY(workspace_layout(func, &d, nsplit, &lse_off, bytes));
  if (splits) *splits = (int)nsplit;
  return GP_SUCCESS;
}

/* Bytes spanned by an [outer, seq, heads, dim] tensor (the last element's offset + 1). */
static bool extent_bytes(int64_t outer, int64_t seq, int64_t heads, int64_t dim, int64_t bs, int64_t ss,
                         int64_t hs, size_t elem, size_t *bytes) {
  int64_t last = dim - 1, t;
  if (__builtin_mul_overflow(outer - 1, bs, &t) || __builtin_add_overflow(last, t, &last)) return false;
  if (__builtin_mul_overflow(seq - 1, ss, &t) || __builtin_add_overflow(last, t, &last)) return false;
  if (__builtin_mul_overflow(heads - 1, hs, &t) || __builtin_add_overflow(last, t, &last)) return false;
  if (__builtin_mul_overflow(last + 1, (int64_t)elem, &t)) return false;
  *bytes = (size_t)t;
  return true;
}

/* Every tensor aligned to its elements and inside its allocation. */
static gp_status_t check_tensors(const char *func, const gp_attention_kvcache_desc_t *d) {
  const size_t es = gp_dtype_size(d->dtype);
  const char *tn = gp_dtype_name(d->dtype);
  const int64_t hd = d->head_dim, sn = d->seqlen_new;
  struct {
    const char *name;
    const void *ptr;
    int64_t outer, seq, heads, dim, bs, ss, hs;
    size_t elem;
    const char *what;
  } t[] = {
      {"desc->q", d->q, d->batch, d->seqlen_q, d->heads_q, hd, d->q_batch_stride, d->q_seq_stride,
       d->q_head_stride, es, tn},
      {"desc->o", d->o, d->batch, d->seqlen_q, d->heads_q, hd, d->o_batch_stride, d->o_seq_stride,
       d->o_head_stride, es, tn},
      {"desc->k_cache", d->k_cache, d->num_blocks, d->page_size, d->heads_kv, hd, d->k_cache_block_stride,
       d->k_cache_seq_stride, d->k_cache_head_stride, es, tn},
      {"desc->v_cache", d->v_cache, d->num_blocks, d->page_size, d->heads_kv, hd, d->v_cache_block_stride,
       d->v_cache_seq_stride, d->v_cache_head_stride, es, tn},
      {"desc->k_new", sn > 0 ? d->k_new : NULL, d->batch, sn, d->heads_kv, hd, d->k_new_batch_stride,
       d->k_new_seq_stride, d->k_new_head_stride, es, tn},
      {"desc->v_new", sn > 0 ? d->v_new : NULL, d->batch, sn, d->heads_kv, hd, d->v_new_batch_stride,
       d->v_new_seq_stride, d->v_new_head_stride, es, tn},
      {"desc->block_table", d->block_table, d->batch, 1, 1, d->max_blocks_per_seq, d->block_table_batch_stride,
       0, 0, sizeof(int32_t), "int32"},
      {"desc->cache_seqlens", d->cache_seqlens, 1, 1, 1, d->batch, 0, 0, 0, sizeof(int32_t), "int32"},
      {"desc->lse", d->lse, d->batch, d->heads_q, 1, d->seqlen_q, d->heads_q * d->seqlen_q, d->seqlen_q, 0,
       sizeof(float), "f32"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    size_t bytes;
    if (t[i].ptr == NULL) continue;
    GP__TRY(gp__api_check_aligned(func, t[i].name, t[i].ptr, t[i].elem, t[i].what));
    if (!extent_bytes(t[i].outer, t[i].seq, t[i].heads, t[i].dim, t[i].bs, t[i].ss, t[i].hs, t[i].elem, &bytes))
      return KV_ERR(GP_ERROR_INVALID_VALUE, "the extent of %s overflows the address space", t[i].name);
    GP__TRY(gp__api_check_range(func, t[i].name, t[i].ptr, bytes));
  }
  return GP_SUCCESS;
}

static int log2_of(int64_t pow2) {
  int s = 0;
  while (((int64_t)1 << s) < pow2) s++;
  return s;
}

static void fill_params(const gp_attention_kvcache_desc_t *d, int64_t nsplit, void *workspace, size_t lse_off,
                        gp__attn_kv_params_t *p) {
  memset(p, 0, sizeof(*p));
  p->q = d->q, p->o = d->o, p->lse = d->lse;
  p->k_cache = d->k_cache, p->v_cache = d->v_cache;
  p->block_table = d->block_table, p->cache_seqlens = d->cache_seqlens;
  p->k_new = d->seqlen_new > 0 ? d->k_new : NULL;
  p->v_new = d->seqlen_new > 0 ? d->v_new : NULL;
  if (nsplit > 1) {
    p->ws_o = (float *)workspace;
    p->ws_lse = (float *)((char *)workspace + lse_off);
  }
  p->batch = d->batch, p->seqlen_q = d->seqlen_q, p->heads_q = d->heads_q, p->heads_kv = d->heads_kv;
  p->head_dim = d->head_dim;
  p->num_blocks = d->num_blocks, p->page_size = d->page_size, p->max_blocks = d->max_blocks_per_seq;
  p->bt_stride = d->block_table_batch_stride, p->seqlen_new = p->k_new ? d->seqlen_new : 0;
  p->q_bs = d->q_batch_stride, p->q_ss = d->q_seq_stride, p->q_hs = d->q_head_stride;
  p->o_bs = d->o_batch_stride, p->o_ss = d->o_seq_stride, p->o_hs = d->o_head_stride;
  p->kc_bs = d->k_cache_block_stride, p->kc_ss = d->k_cache_seq_stride, p->kc_hs = d->k_cache_head_stride;
  p->vc_bs = d->v_cache_block_stride, p->vc_ss = d->v_cache_seq_stride, p->vc_hs = d->v_cache_head_stride;
  p->kn_bs = d->k_new_batch_stride, p->kn_ss = d->k_new_seq_stride, p->kn_hs = d->k_new_head_stride;
  p->vn_bs = d->v_new_batch_stride, p->vn_ss = d->v_new_seq_stride, p->vn_hs = d->v_new_head_stride;
  p->window_left = d->window_left;
  p->window_right = d->window_right;
  if (d->causal && p->window_right != 0) p->window_right = 0; /* causal is window_right = 0, intersected */
  p->nsplit = nsplit;
  p->scale = d->softmax_scale != 0.0f ? d->softmax_scale : (float)(1.0 / sqrt((double)d->head_dim));
  p->dtype = (int)d->dtype;
  p->page_shift = log2_of(d->page_size);
}

/* kernels: NULL for the backend's choice, else a build of the portable kernels to run. */
static gp_status_t fwd_kvcache(gp_stream_t stream, const gp_attention_kvcache_desc_t *desc, void *workspace,
                               size_t workspace_bytes, const gp__attn_kv_kernels_t *kernels) {
  static const char func[] = "gp_attention_fwd_kvcache";
  gp_attention_kvcache_desc_t d;
  gp__attn_kv_params_t p;
  int64_t nsplit;
  size_t lse_off, need;
  GP__TRY(gp__api_init(func));
  GP__TRY(check_shape(func, desc, true, &d));
  GP__TRY(split_count(func, &d, &nsplit));
  GP__TRY(workspace_layout(func, &d, nsplit, &lse_off, &need));
  GP__TRY(check_tensors(func, &d));
  if (need > 0) {
    if (workspace == NULL)
      return KV_ERR(GP_ERROR_INVALID_VALUE,
                    "argument 'workspace' is NULL but %lld splits need %zu bytes "
                    "(gp_attention_kvcache_workspace_size; num_splits = 1 needs none)",
                    (long long)nsplit, need);
    if (workspace_bytes < need)
      return KV_ERR(GP_ERROR_INVALID_VALUE,
                    "'workspace_bytes' is %zu, below the %zu bytes %lld splits need "
                    "(gp_attention_kvcache_workspace_size)",
                    workspace_bytes, need, (long long)nsplit);
    if ((uintptr_t)workspace % 16 != 0)
      return KV_ERR(GP_ERROR_INVALID_VALUE, "'workspace' (%p) is not 16-byte aligned", workspace);
    GP__TRY(gp__api_check_range(func, "workspace", workspace, need));
  }
  fill_params(&d, nsplit, workspace, lse_off, &p);
  GP__STREAM_REF gp_stream_t s = NULL;
  GP__TRY(gp__stream_resolve(stream, func, &s));
  (void)s; /* checked here for every family; each launch resolves it again */

  gp__dispatch_t dsp;
  char declined[512];
  GP__TRY(gp__dispatch_begin(&dsp, GP__OP_ATTN_KVCACHE, func, declined, sizeof declined));
  gp__attn_plan_t plan;
  memset(&plan, 0, sizeof plan);
  const gp__attn_kv_impl_t *impl;
  if (kernels != NULL) { /* a given build of the portable kernels */
    char why[192] = "";
    if (!gp__attn_kv_portable_plan(&p, kernels, &plan, why, sizeof why))
      return KV_ERR(GP_ERROR_NOT_SUPPORTED, "%s", why);
    gp__dispatch_chose(&dsp, plan.kernel_name);
    impl = &gp__attn_kv_impl_portable;
  } else if ((impl = gp__attn_kv_choose(&dsp, &p, &plan)) == NULL) {
    return gp__dispatch_none(&dsp, func);
  }
  const gp_status_t st = impl->launch(stream, &p, &plan);
  GP__INFO(GP__SUB_ATTN,
           "attention kvcache %s: batch %lld, seqlen_q %lld, heads %lld/%lld, head_dim %lld, pages %lld x %lld "
           "(table %lld), seqlen_new %lld, scale %g, window (%lld, %lld), lse %d, splits %lld -> %s%s%s%s",
           dtype_str(d.dtype), (long long)d.batch, (long long)d.seqlen_q, (long long)d.heads_q,
           (long long)d.heads_kv, (long long)d.head_dim, (long long)d.num_blocks, (long long)d.page_size,
           (long long)d.max_blocks_per_seq, (long long)p.seqlen_new, (double)p.scale, (long long)p.window_left,
           (long long)p.window_right, p.lse != NULL, (long long)nsplit, plan.name,
           declined[0] ? "; declined: " : "", declined, st == GP_SUCCESS ? "" : " (failed)");
  return st;
}

GP_API gp_status_t gp_attention_fwd_kvcache(gp_stream_t stream, const gp_attention_kvcache_desc_t *desc,
                                            void *workspace, size_t workspace_bytes) {
  return fwd_kvcache(stream, desc, workspace, workspace_bytes, NULL);
}

gp_status_t gp__attention_fwd_kvcache_kernels(gp_stream_t stream, const gp_attention_kvcache_desc_t *desc,
                                              void *workspace, size_t workspace_bytes,
                                              const gp__attn_kv_kernels_t *kernels) {
  static const char func[] = "gp_attention_fwd_kvcache";
  if (kernels == NULL) return KV_ERR(GP_ERROR_INVALID_VALUE, "argument 'kernels' is NULL");
  return fwd_kvcache(stream, desc, workspace, workspace_bytes, kernels);
}
