/*
 * attention_portable_host.c - the portable attention family's entries of the attention
 * tables (src/attention_table.c): the dialect kernels of
 * kernels/portable/attention_fwd_portable.cu (FlashAttention-2's forward) and
 * kernels/portable/attention_bwd_portable.cu (its preprocess, main loop over key blocks and
 * postprocesses), launched with gp_launch. Every backend builds them: the cuda and hip
 * backends run them where no matrix-core family takes a call, the cpu backend in the
 * kernel modes of GP_CPU_ATTENTION. They take every checked call whose grid fits one
 * grid dimension (2^31 - 1 blocks); every access is element-sized.
 */
#include <stdio.h>

#include "dispatch.h"

GP_KERNEL_DECLARE(gp__attention_fwd_portable);
GP_KERNEL_DECLARE(gp__attention_bwd_portable_pre);
GP_KERNEL_DECLARE(gp__attention_bwd_portable_main);
GP_KERNEL_DECLARE(gp__attention_bwd_portable_dq);
GP_KERNEL_DECLARE(gp__attention_bwd_portable_dkv);
GP_KERNEL_DECLARE(gp__attention_kvcache_append_portable);
GP_KERNEL_DECLARE(gp__attention_kvcache_fwd_portable);
GP_KERNEL_DECLARE(gp__attention_kvcache_combine_portable);

const gp__attn_bwd_kernels_t gp__attn_bwd_portable_kernels = {
    GP_KERNEL_REF(gp__attention_bwd_portable_pre), GP_KERNEL_REF(gp__attention_bwd_portable_main),
    GP_KERNEL_REF(gp__attention_bwd_portable_dq), GP_KERNEL_REF(gp__attention_bwd_portable_dkv)};

/* a * b * c blocks in one grid dimension; false on overflow or beyond INT32_MAX. */
static bool grid_of(int64_t a, int64_t b, int64_t c, int64_t *blocks) {
  return !__builtin_mul_overflow(a, b, blocks) && !__builtin_mul_overflow(*blocks, c, blocks) &&
         *blocks <= (int64_t)INT32_MAX;
}

/* ---- forward ------------------------------------------------------------------------------ */

/* One block per (query tile, query head, sequence), flattened into grid.x so that blocks
 * reading the same key/value head run side by side. */
bool gp__attn_fwd_portable_plan(const gp__attn_params_t *p, gp_kernel_t kernel, gp__attn_plan_t *plan,
                                char *why, size_t why_len) {
  const int64_t tiles = (p->seqlen_q + GP__ATTN_KQ - 1) / GP__ATTN_KQ;
  int64_t blocks;
  if (!grid_of(tiles, p->heads_q, p->batch, &blocks)) {
    snprintf(why, why_len, "%lld query tiles x %lld heads x %lld sequences exceed one grid dimension",
             (long long)tiles, (long long)p->heads_q, (long long)p->batch);
    return false;
  }
  plan->kernel = kernel;
  plan->kernel_name = kernel->name;
  plan->blocks = (unsigned)blocks;
  const int ws = gp__be_kernel_warp_size(kernel);
  plan->threads = (unsigned)(GP__ATTN_KWARPS * ws);
  plan->smem = (size_t)gp__attn_kernel_smem_floats(p->head_dim, p->head_dim_v) * sizeof(float);
  snprintf(plan->name, sizeof plan->name,
           "portable kernel %s (warp %d, grid %lld, block %u, %d x %d tiles, %zu B shared)", kernel->name,
           ws, (long long)blocks, plan->threads, GP__ATTN_KQ,
           gp__attn_kernel_block_k(p->head_dim > p->head_dim_v ? p->head_dim : p->head_dim_v), plan->smem);
  return true;
}

static bool fwd_supports(const gp__attn_params_t *p, gp__attn_plan_t *plan, char *why, size_t why_len) {
  return gp__attn_fwd_portable_plan(p, GP_KERNEL_REF(gp__attention_fwd_portable), plan, why, why_len);
}

static gp_status_t fwd_launch(gp_stream_t stream, const gp__attn_params_t *p, gp__attn_plan_t *plan) {
  gp__attn_params_t args_p = *p;
  void *args[] = {&args_p};
  return gp_launch(plan->kernel, gp_dim3(plan->blocks, 1, 1), gp_dim3(plan->threads, 1, 1), plan->smem,
                   stream, args);
}

const gp__attn_fwd_impl_t gp__attn_fwd_impl_portable = {"portable", GP__FAMILY_PORTABLE, fwd_supports,
                                                        fwd_launch};

/* ---- backward ----------------------------------------------------------------------------- */

/* Blocks of the preprocess and dq postprocess (query tiles), and of the GQA dk/dv sum (key
 * tiles over key heads). */
static bool pre_post_fit(const gp__attn_params_t *p, int64_t *qblocks, int64_t *kblocks) {
  const int64_t qtiles = (p->seqlen_q + GP__ATTN_KQ - 1) / GP__ATTN_KQ;
  const int64_t ktiles = (p->seqlen_k + GP__ATTN_KQ - 1) / GP__ATTN_KQ;
  return grid_of(qtiles, p->batch, p->heads_q, qblocks) && grid_of(ktiles, p->batch, p->heads_kv, kblocks);
}

bool gp__attn_bwd_portable_plan(const gp__attn_bwd_params_t *bp, const gp__attn_bwd_kernels_t *k,
                                gp__attn_plan_t *plan, char *why, size_t why_len) {
  const gp__attn_params_t *p = &bp->f;
  const int64_t dmax = p->head_dim > p->head_dim_v ? p->head_dim : p->head_dim_v;
  const int bk = gp__attn_bwd_block_k(dmax);
  const int64_t nkb = (p->seqlen_k + bk - 1) / bk;
  int64_t blocks, qb, kb;
  plan->nsplit = bp->deterministic ? (bp->nslices < nkb ? bp->nslices : nkb) : nkb;
  plan->nslices = bp->deterministic ? plan->nsplit : 1;
  if (!grid_of(plan->nsplit, p->batch, p->heads_q, &blocks) || !pre_post_fit(p, &qb, &kb)) {
    snprintf(why, why_len, "%lld key blocks x %lld heads x %lld sequences exceed one grid dimension",
             (long long)plan->nsplit, (long long)p->heads_q, (long long)p->batch);
    return false;
  }
  plan->portable = k;
  plan->kernel = k->main;
  plan->kernel_name = k->main->name;
  plan->blocks = (unsigned)blocks;
  plan->threads = (unsigned)(GP__ATTN_KWARPS * gp__be_kernel_warp_size(k->main));
  plan->smem = (size_t)gp__attn_bwd_smem_floats(p->head_dim, p->head_dim_v) * sizeof(float);
  snprintf(plan->name, sizeof plan->name,
           "portable kernels %s (warp %d, block %u, grid %lld, %d x %d tiles, %zu B shared, %lld dq slice%s)",
           k->main->name, (int)plan->threads / GP__ATTN_KWARPS, plan->threads, (long long)blocks, bk, gp__attn_bwd_block_q(dmax),
           plan->smem, (long long)plan->nslices, plan->nslices == 1 ? "" : "s");
  return true;
}

/* One kernel of the backward over blocks blocks (flattened into grid.x); the parameters
 * passed by value. */
static gp_status_t launch_one(gp_kernel_t k, int64_t blocks, size_t smem, gp_stream_t stream,
                              const gp__attn_bwd_params_t *bp) {
  gp__attn_bwd_params_t args_p = *bp;
  void *args[] = {&args_p};
  return gp_launch(k, gp_dim3((unsigned)blocks, 1, 1), gp_dim3((unsigned)(GP__ATTN_KWARPS * gp__be_kernel_warp_size(k)), 1, 1),
                   smem, stream, args);
}

gp_status_t gp__attn_bwd_portable_pre(gp_stream_t stream, const gp__attn_bwd_params_t *bp,
                                      const gp__attn_bwd_kernels_t *k) {
  int64_t qb, kb;
  if (!pre_post_fit(&bp->f, &qb, &kb))
    return gp__error(GP_ERROR_NOT_SUPPORTED, "gp_attention_bwd", "the grid of %s exceeds one dimension", k->pre->name);
  return launch_one(k->pre, qb, 0, stream, bp);
}

gp_status_t gp__attn_bwd_portable_post(gp_stream_t stream, const gp__attn_bwd_params_t *bp,
                                       const gp__attn_bwd_kernels_t *k) {
  int64_t qb, kb;
  if (!pre_post_fit(&bp->f, &qb, &kb))
    return gp__error(GP_ERROR_NOT_SUPPORTED, "gp_attention_bwd", "the grid of %s exceeds one dimension", k->dq->name);
  GP__TRY(launch_one(k->dq, qb, 0, stream, bp));
  if (bp->ws_dk) GP__TRY(launch_one(k->dkv, kb, 0, stream, bp));
  return GP_SUCCESS;
}

static bool bwd_supports(const gp__attn_bwd_params_t *bp, gp__attn_plan_t *plan, char *why, size_t why_len) {
  return gp__attn_bwd_portable_plan(bp, &gp__attn_bwd_portable_kernels, plan, why, why_len);
}

/* FlashAttention-2's preprocess, main loop and postprocesses, in stream order. */
static gp_status_t bwd_launch(gp_stream_t stream, const gp__attn_bwd_params_t *p, gp__attn_plan_t *plan) {
  gp__attn_bwd_params_t bp = *p;
  bp.nsplit = plan->nsplit;
  bp.nslices = plan->nslices;
  GP__TRY(gp__attn_bwd_portable_pre(stream, &bp, plan->portable));
  GP__TRY(launch_one(plan->kernel, plan->blocks, plan->smem, stream, &bp));
  return gp__attn_bwd_portable_post(stream, &bp, plan->portable);
}

const gp__attn_bwd_impl_t gp__attn_bwd_impl_portable = {"portable", GP__FAMILY_PORTABLE, bwd_supports,
                                                        bwd_launch};

/* ---- kvcache ------------------------------------------------------------------------------ */

const gp__attn_kv_kernels_t gp__attn_kv_portable_kernels = {
    GP_KERNEL_REF(gp__attention_kvcache_append_portable), GP_KERNEL_REF(gp__attention_kvcache_fwd_portable),
    GP_KERNEL_REF(gp__attention_kvcache_combine_portable)};

/* Blocks: append (new-token tiles x sequences), main (query-row tiles of the packed GQA
 * group x key/value heads x splits x sequences), combine (one warp per output row). */
bool gp__attn_kv_portable_plan(const gp__attn_kv_params_t *p, const gp__attn_kv_kernels_t *k,
                               gp__attn_plan_t *plan, char *why, size_t why_len) {
  const int64_t nrows = p->seqlen_q * (p->heads_q / p->heads_kv);
  const int64_t tiles = (nrows + GP__ATTN_KQ - 1) / GP__ATTN_KQ;
  const int64_t new_tiles = (p->seqlen_new + GP__ATTN_KV_APPEND - 1) / GP__ATTN_KV_APPEND;
  int64_t blocks, append = 0, combine = 0, rows;
  if (!grid_of(tiles, p->heads_kv, p->nsplit, &blocks) || !grid_of(blocks, p->batch, 1, &blocks) ||
      !grid_of(new_tiles, p->batch, 1, &append) || !grid_of(p->batch, p->heads_q, p->seqlen_q, &rows) ||
      !grid_of((rows + GP__ATTN_KWARPS - 1) / GP__ATTN_KWARPS, 1, 1, &combine)) {
    snprintf(why, why_len, "%lld query tiles x %lld heads x %lld splits x %lld sequences exceed one grid dimension",
             (long long)tiles, (long long)p->heads_kv, (long long)p->nsplit, (long long)p->batch);
    return false;
  }
  plan->kernel = k->main;
  plan->kernel_append = p->seqlen_new > 0 ? k->append : NULL;
  plan->kernel_combine = p->nsplit > 1 ? k->combine : NULL;
  plan->kernel_name = k->main->name;
  plan->blocks = (unsigned)blocks;
  plan->blocks_append = (unsigned)append;
  plan->blocks_combine = (unsigned)combine;
  const int ws = gp__be_kernel_warp_size(k->main);
  plan->threads = (unsigned)(GP__ATTN_KWARPS * ws);
  plan->threads_combine = (unsigned)(GP__ATTN_KWARPS * gp__be_kernel_warp_size(k->combine));
  plan->smem = (size_t)gp__attn_kernel_smem_floats(p->head_dim, p->head_dim) * sizeof(float);
  snprintf(plan->name, sizeof plan->name,
           "portable kernels %s%s%s (warp %d, grid %lld, block %u, %d x %d tiles, %zu B shared)%s%s",
           plan->kernel_append ? plan->kernel_append->name : "", plan->kernel_append ? " + " : "", k->main->name,
           ws, (long long)blocks, plan->threads, GP__ATTN_KQ, gp__attn_kernel_block_k(p->head_dim),
           plan->smem, plan->kernel_combine ? " + " : "", plan->kernel_combine ? k->combine->name : "");
  return true;
}

static bool kv_supports(const gp__attn_kv_params_t *p, gp__attn_plan_t *plan, char *why, size_t why_len) {
  return gp__attn_kv_portable_plan(p, &gp__attn_kv_portable_kernels, plan, why, why_len);
}

gp_status_t gp__attn_kv_launch_plan(gp_stream_t stream, const gp__attn_kv_params_t *p, gp__attn_plan_t *plan) {
  gp__attn_kv_params_t args_p = *p;
  void *args[] = {&args_p};
  if (plan->kernel_append)
    GP__TRY(gp_launch(plan->kernel_append, gp_dim3(plan->blocks_append, 1, 1),
                      gp_dim3((unsigned)(GP__ATTN_KWARPS * gp__be_kernel_warp_size(plan->kernel_append)), 1, 1), 0,
                      stream, args));
  GP__TRY(gp_launch(plan->kernel, gp_dim3(plan->blocks, 1, 1), gp_dim3(plan->threads, 1, 1), plan->smem, stream,
                    args));
  if (plan->kernel_combine)
    GP__TRY(gp_launch(plan->kernel_combine, gp_dim3(plan->blocks_combine, 1, 1),
                      gp_dim3(plan->threads_combine, 1, 1), 0, stream, args));
  return GP_SUCCESS;
}

const gp__attn_kv_impl_t gp__attn_kv_impl_portable = {"portable", GP__FAMILY_PORTABLE, kv_supports,
                                                      gp__attn_kv_launch_plan};
