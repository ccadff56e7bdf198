/*
 * bench_paged.c - `gpuport bench attention --paged`: gp_attention_fwd_kvcache over a
 * paged KV cache (vLLM's layout, FlashAttention-2's flash_attn_with_kvcache semantics)
 * at serving shapes, beside gp_attention_fwd on the same logical keys and values
 * gathered into contiguous [batch, context, heads_kv, head_dim] tensors.
 *
 * Each configuration (batch B, context C, query tokens q) is one call per sequence of q
 * query tokens (q = 1: decoding; q = 16: a short prefill chunk) attending causally,
 * aligned to the end of the sequence, to C keys: C - q cached and, with --append 1 (the
 * default), q new ones the same call writes into the cache first (k_new, v_new), as a
 * serving engine's step does. The dense call reads the same C keys per sequence from
 * the contiguous tensors (causal, bottom-right aligned: the same mask).
 *
 * Setup, once for the largest batch and context asked: the logical keys and values
 * [B_max, C_max, heads_kv, head_dim] are filled with uniform random values in [-1, 1)
 * from the printed seed (--seed); the cache holds B_max x ceil(C_max / page_size) pages
 * whose order is a random permutation (never the identity), so that sequence b's page j
 * is page perm[b * pages_per_seq + j] wherever it lands, and each page is copied there
 * from the logical tensor. A configuration takes the first B rows of the block table and
 * its first ceil(C / page_size) columns, and gathers its dense tensors from the logical
 * ones (one 2D copy each); the appended tokens are read from the dense tensors' last q
 * positions, so the cache keeps the same values. After timing, the two outputs are
 * compared (the run fails when they differ by more than bf16-level rounding).
 *
 * Figures: the median time per call; tokens/s = B x q / time; K/V bytes read per second
 * = 2 x B x C x heads_kv x head_dim x element size / time (every key and value of every
 * sequence's context read once), and that as a fraction of the device's memory
 * bandwidth: gp_device_props_t does not give it, so --mem-bw GB/s takes the data sheet's
 * figure, and without it the reference is a device-to-device copy timed here (bytes read
 * plus written per second, which a GPU's peak exceeds by 10-20%); the split count
 * gp_attention_kvcache_workspace_size() returns; the dense call's time and bandwidth and
 * paged / dense (the ratio of the times: above 1, the paged call is slower).
 */
#include "tool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_ELEMS ((size_t)1 << 22) /* host chunk of random values, repeated on the device */

typedef struct paged {
  const tool_paged_opts_t *o;
  gp_stream_t s;
  gp_dtype_t t;
  size_t es;
  int64_t hq, hkv, d, page, max_b, max_c, max_q, pages_per_seq, num_blocks;
  size_t row_bytes; /* one token: heads_kv x head_dim elements */
  void *lk, *lv;    /* logical K/V [max_b, max_c, hkv, d] */
  void *kc, *vc;    /* the cache [num_blocks, page, hkv, d] */
  void *dk, *dv;    /* a configuration's dense K/V [B, C, hkv, d] */
  void *q, *o_paged, *o_dense, *ws;
  size_t ws_bytes;
  int32_t *table, *seqlens; /* device: [max_b, pages_per_seq], [max_b] */
  double copy_gbps, ref_gbps;
  const char *ref_name;
  int rows;
} paged_t;

static uint64_t next64(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static float to_f32(const void *p, gp_dtype_t t, size_t i) {
  if (t == GP_F32) return ((const float *)p)[i];
  if (t == GP_F16) return gp_f32_from_f16(((const gp_f16_t *)p)[i]);
  return gp_f32_from_bf16(((const gp_bf16_t *)p)[i]);
}

/* n elements of t at dev, uniform in [-1, 1): one host chunk of up to CHUNK_ELEMS
 * random values, copied over the buffer as often as it takes (larger buffers repeat it:
 * 4096 tokens of 8 x 128 values; the random page order never lines pages up with it). */
static gp_status_t random_fill(void *dev, gp_dtype_t t, size_t n, uint64_t *seed) {
  const size_t es = gp_dtype_size(t), chunk = n < CHUNK_ELEMS ? n : CHUNK_ELEMS;
  unsigned char *h = NULL;
  gp_status_t st = gp_malloc_host((void **)&h, chunk * es);
  if (st != GP_SUCCESS) return st;
  for (size_t i = 0; i < chunk; i++) {
    const float v = (float)((double)(next64(seed) >> 11) * 0x1p-52 - 1.0);
    if (t == GP_F32) memcpy(h + i * 4, &v, 4);
    if (t == GP_F16) ((gp_f16_t *)h)[i] = gp_f16_from_f32(v);
    if (t == GP_BF16) ((gp_bf16_t *)h)[i] = gp_bf16_from_f32(v);
  }
  for (size_t at = 0; at < n && st == GP_SUCCESS; at += chunk)
    st = gp_memcpy((unsigned char *)dev + at * es, h, (n - at < chunk ? n - at : chunk) * es);
  gp_free_host(h);
  return st;
}

/* ---- the calls timed ------------------------------------------------------------------- */

typedef struct kv_call {
  gp_attention_kvcache_desc_t d;
  void *ws;
  size_t ws_bytes;
} kv_call_t;

static gp_status_t run_kvcache(void *p, gp_stream_t s) {
  kv_call_t *c = p;
  return gp_attention_fwd_kvcache(s, &c->d, c->ws, c->ws_bytes);
}

static gp_status_t run_dense(void *p, gp_stream_t s) { return gp_attention_fwd(s, p); }

static gp_status_t run_copy(void *p, gp_stream_t s) {
  void **b = p;
  return gp_memcpy_async(b[0], b[1], (size_t)(uintptr_t)b[2], s);
}

/* ---- setup ------------------------------------------------------------------------------- */

/* The memory bandwidth the K/V figures are compared with: --mem-bw, else a timed copy. */
static int reference_bandwidth(paged_t *P) {
  int rc = 0;
  const size_t bytes = gp_backend() == GP_BACKEND_CPU ? (64u << 20) : (512u << 20);
  void *a = NULL, *b = NULL;
  double ms = 0;
  TOOL_TRY(gp_malloc(&a, bytes));
  TOOL_TRY(gp_malloc(&b, bytes));
  TOOL_TRY(gp_memset(a, 1, bytes));
  void *args[3] = {b, a, (void *)(uintptr_t)bytes};
  TOOL_TRY(tool_time_runs(P->o->iters, P->o->warmup, "D2D copy", run_copy, args, P->s, &ms));
  P->copy_gbps = 2.0 * (double)bytes / ms * 1e-6;
  P->ref_gbps = P->o->mem_bw_gbps > 0 ? P->o->mem_bw_gbps : P->copy_gbps;
  P->ref_name = P->o->mem_bw_gbps > 0 ? "--mem-bw" : "D2D copy";
out:
  gp_free(a), gp_free(b);
  return rc;
}

static int setup(paged_t *P, uint64_t *seed) {
  const tool_paged_opts_t *o = P->o;
  int rc = 0;
  int32_t *perm = NULL;
  P->pages_per_seq = (P->max_c + P->page - 1) / P->page;
  P->num_blocks = P->max_b * P->pages_per_seq;
  if (P->num_blocks > INT32_MAX) {
    fprintf(stderr, "gpuport bench attention --paged: %lld pages do not fit int32 block-table entries\n",
            (long long)P->num_blocks);
    return 2;
  }
  const size_t logical = (size_t)(P->max_b * P->max_c) * P->row_bytes;
  const size_t cache = (size_t)P->num_blocks * (size_t)P->page * P->row_bytes;
  const size_t qo = (size_t)(P->max_b * P->max_q * P->hq * P->d) * P->es;
  const double need = 2.0 * (2.0 * (double)logical + (double)cache) + 3.0 * (double)qo;
  gp_device_props_t props;
  gp_device_props_init(&props);
  int dev = 0;
  TOOL_TRY(gp_device_get(&dev));
  TOOL_TRY(gp_device_get_props(&props, dev));
  if (props.total_memory > 0 && need > 0.9 * (double)props.total_memory) {
    char a[32], b[32];
    tool_fmt_bytes(a, sizeof a, need), tool_fmt_bytes(b, sizeof b, (double)props.total_memory);
    fprintf(stderr,
            "gpuport bench attention --paged: batch %lld x context %lld needs %s (logical, paged and dense K/V), "
            "over 90%% of the device's %s: give a smaller --batch or --context\n",
            (long long)P->max_b, (long long)P->max_c, a, b);
    return 2;
  }
  if (!o->json) {
    char a[32];
    tool_fmt_bytes(a, sizeof a, need);
    fflush(stdout);
    fprintf(stderr, "gpuport bench attention --paged: setting up %s of K/V (seed %llu)\n", a,
            (unsigned long long)o->seed);
  }
  TOOL_TRY(gp_malloc(&P->lk, logical));
  TOOL_TRY(gp_malloc(&P->lv, logical));
  TOOL_TRY(gp_malloc(&P->dk, logical));
  TOOL_TRY(gp_malloc(&P->dv, logical));
  TOOL_TRY(gp_malloc(&P->kc, cache));
  TOOL_TRY(gp_malloc(&P->vc, cache));
  TOOL_TRY(gp_malloc(&P->q, qo));
  TOOL_TRY(gp_malloc(&P->o_paged, qo));
  TOOL_TRY(gp_malloc(&P->o_dense, qo));
  TOOL_TRY(random_fill(P->lk, P->t, logical / P->es, seed));
  TOOL_TRY(random_fill(P->lv, P->t, logical / P->es, seed));
  TOOL_TRY(random_fill(P->q, P->t, qo / P->es, seed));
  /* The block table: a random permutation of the pages (Fisher-Yates), never the identity. */
  const int64_t nb = P->num_blocks;
  perm = malloc((size_t)nb * sizeof *perm);
  if (!perm) {
    fprintf(stderr, "gpuport bench attention --paged: no host memory for %lld pages\n", (long long)nb);
    rc = 1;
    goto out;
  }
  for (int64_t i = 0; i < nb; i++) perm[i] = (int32_t)i;
  for (int64_t i = nb - 1; i > 0; i--) {
    const int64_t j = (int64_t)(next64(seed) % (uint64_t)(i + 1));
    const int32_t x = perm[i];
    perm[i] = perm[j], perm[j] = x;
  }
  bool identity = true;
  for (int64_t i = 0; i < nb && identity; i++) identity = perm[i] == i;
  if (identity && nb > 1) perm[0] = 1, perm[1] = 0;
  /* row b, column j of the block table: perm[b * pages_per_seq + j] */
  TOOL_TRY(tool_upload((void **)&P->table, perm, (size_t)nb * sizeof *perm));
  TOOL_TRY(gp_malloc((void **)&P->seqlens, (size_t)P->max_b * sizeof(int32_t)));
  const size_t page_bytes = (size_t)P->page * P->row_bytes;
  for (int64_t b = 0; b < P->max_b; b++)
    for (int64_t j = 0; j < P->pages_per_seq; j++) {
      const int64_t t0 = j * P->page, n = P->max_c - t0 < P->page ? P->max_c - t0 : P->page;
      const size_t src = (size_t)(b * P->max_c + t0) * P->row_bytes;
      const size_t dst = (size_t)perm[b * P->pages_per_seq + j] * page_bytes;
      TOOL_TRY(gp_memcpy_async((char *)P->kc + dst, (char *)P->lk + src, (size_t)n * P->row_bytes, P->s));
      TOOL_TRY(gp_memcpy_async((char *)P->vc + dst, (char *)P->lv + src, (size_t)n * P->row_bytes, P->s));
    }
  TOOL_TRY(gp_stream_synchronize(P->s));
out:
  free(perm);
  return rc;
}

/* ---- one configuration ---------------------------------------------------------------------- */

/* Largest |paged - dense| (NaN when either output has one) and |dense| over the outputs. */
static int compare(paged_t *P, size_t n, double *diff, double *mag) {
  int rc = 0;
  unsigned char *a = malloc(n * P->es), *b = malloc(n * P->es);
  *diff = *mag = 0;
  if (!a || !b) {
    fprintf(stderr, "gpuport bench attention --paged: no host memory for the outputs\n");
    rc = 1;
    goto out;
  }
  TOOL_TRY(gp_memcpy(a, P->o_paged, n * P->es));
  TOOL_TRY(gp_memcpy(b, P->o_dense, n * P->es));
  bool nan = false;
  for (size_t i = 0; i < n; i++) {
    const double x = to_f32(a, P->t, i), y = to_f32(b, P->t, i), e = fabs(x - y);
    if (e != e) nan = true;
    else if (e > *diff) *diff = e;
    if (fabs(y) > *mag) *mag = fabs(y);
  }
  if (nan) *diff = NAN;
out:
  free(a), free(b);
  return rc;
}

static int config(paged_t *P, int64_t B, int64_t C, int64_t sq) {
  const tool_paged_opts_t *o = P->o;
  const int64_t sn = o->append ? sq : 0, pages = (C + P->page - 1) / P->page;
  int rc = 0;
  int32_t *lens = NULL;
  char shape[96], kern_paged[512] = "", kern_dense[512] = "";
  snprintf(shape, sizeof shape, "b%lld ctx%lld q%lld h%lld/%lld d%lld p%lld", (long long)B, (long long)C,
           (long long)sq, (long long)P->hq, (long long)P->hkv, (long long)P->d, (long long)P->page);
  /* The dense tensors: the logical ones' first C tokens of the first B sequences. */
  TOOL_TRY(gp_memcpy_2d_async(P->dk, (size_t)C * P->row_bytes, P->lk, (size_t)P->max_c * P->row_bytes,
                              (size_t)C * P->row_bytes, (size_t)B, P->s));
  TOOL_TRY(gp_memcpy_2d_async(P->dv, (size_t)C * P->row_bytes, P->lv, (size_t)P->max_c * P->row_bytes,
                              (size_t)C * P->row_bytes, (size_t)B, P->s));
  lens = malloc((size_t)B * sizeof *lens);
  if (!lens) {
    rc = 1;
    goto out;
  }
  for (int64_t b = 0; b < B; b++) lens[b] = (int32_t)(C - sn);
  TOOL_TRY(gp_memcpy(P->seqlens, lens, (size_t)B * sizeof *lens));

  kv_call_t kv = {.ws = NULL};
  gp_attention_kvcache_desc_t *d = &kv.d;
  gp_attention_kvcache_desc_init(d);
  d->dtype = P->t, d->batch = B, d->seqlen_q = sq, d->heads_q = P->hq, d->heads_kv = P->hkv, d->head_dim = P->d;
  d->q = P->q, d->o = P->o_paged;
  d->k_cache = P->kc, d->v_cache = P->vc, d->num_blocks = P->num_blocks, d->page_size = P->page;
  d->block_table = P->table, d->max_blocks_per_seq = pages, d->block_table_batch_stride = P->pages_per_seq;
  d->cache_seqlens = P->seqlens;
  if (sn > 0) { /* the last sn tokens of each dense sequence */
    const int64_t row = P->hkv * P->d;
    d->k_new = (const char *)P->dk + (size_t)(C - sn) * P->row_bytes;
    d->v_new = (const char *)P->dv + (size_t)(C - sn) * P->row_bytes;
    d->seqlen_new = sn;
    d->k_new_batch_stride = d->v_new_batch_stride = C * row;
  }
  d->causal = 1;
  d->num_splits = (int)o->num_splits;
  int splits = 0;
  TOOL_TRY(gp_attention_kvcache_workspace_size(d, &splits, &kv.ws_bytes));
  if (kv.ws_bytes > P->ws_bytes) {
    gp_free(P->ws);
    P->ws = NULL, P->ws_bytes = 0;
    TOOL_TRY(gp_malloc(&P->ws, kv.ws_bytes));
    P->ws_bytes = kv.ws_bytes;
  }
  kv.ws = kv.ws_bytes ? P->ws : NULL;

  gp_attention_desc_t a;
  gp_attention_desc_init(&a);
  a.dtype = P->t, a.batch = B, a.seqlen_q = sq, a.seqlen_k = C;
  a.heads_q = P->hq, a.heads_kv = P->hkv, a.head_dim = P->d, a.causal = 1;
  a.q = P->q, a.k = P->dk, a.v = P->dv, a.o = P->o_dense;

  double ms = 0, dense_ms = 0, diff = 0, mag = 0;
  char label[128];
  TOOL_TRY(gp_stream_synchronize(P->s));
  tool_kname_take(kern_paged, sizeof kern_paged); /* drop what the setup logged */
  snprintf(label, sizeof label, "paged %s", shape);
  TOOL_TRY(tool_time_runs(o->iters, o->warmup, label, run_kvcache, &kv, P->s, &ms));
  tool_kname_take(kern_paged, sizeof kern_paged);
  snprintf(label, sizeof label, "dense %s", shape);
  TOOL_TRY(tool_time_runs(o->iters, o->warmup, label, run_dense, &a, P->s, &dense_ms));
  tool_kname_take(kern_dense, sizeof kern_dense);
  if ((rc = compare(P, (size_t)(B * sq * P->hq * P->d), &diff, &mag))) goto out;

  const double kv_bytes = 2.0 * (double)B * (double)C * (double)P->row_bytes;
  const double tok_s = (double)(B * sq) / ms * 1e3, gbps = kv_bytes / ms * 1e-6, dense_gbps = kv_bytes / dense_ms * 1e-6;
  const double frac = gbps / P->ref_gbps, ratio = ms / dense_ms;
  const char *mode = sq == 1 ? "decode" : "prefill";
  if (o->json) {
    printf("%s\n    {\"bench\": \"attention-paged\", \"mode\": \"%s\", \"shape\": \"%s\", \"dtype\": \"%s\", "
           "\"batch\": %lld, \"context\": %lld, \"seqlen_q\": %lld, \"seqlen_new\": %lld, \"page_size\": %lld, "
           "\"num_blocks\": %lld, \"splits\": %d, \"median_ms\": %.4f, \"tokens_per_s\": %.1f, \"kv_gbps\": %.3f, "
           "\"mem_bw_gbps\": %.1f, \"mem_bw\": \"%s\", \"bw_fraction\": %.4f, \"dense_ms\": %.4f, "
           "\"dense_kv_gbps\": %.3f, \"paged_over_dense\": %.4f, \"max_abs_diff\": %.3g, \"seed\": %llu",
           P->rows ? "," : "", mode, shape, gp_dtype_name(P->t), (long long)B, (long long)C, (long long)sq,
           (long long)sn, (long long)P->page, (long long)P->num_blocks, splits, ms, tok_s, gbps, P->ref_gbps,
           P->ref_name, frac, dense_ms, dense_gbps, ratio, diff, (unsigned long long)o->seed);
    if (kern_paged[0]) printf(", \"kernels\": "), tool_json_str(kern_paged);
    if (kern_dense[0]) printf(", \"dense_kernels\": "), tool_json_str(kern_dense);
    printf("}");
  } else {
    printf("%-8s %-32s %-4s %9.3f ms %9.0f tok/s %8.2f GB/s %5.1f%%  %3d   %9.3f ms %8.2f GB/s   %5.2f", mode, shape,
           gp_dtype_name(P->t), ms, tok_s, gbps, 100.0 * frac, splits, dense_ms, dense_gbps, ratio);
    if (kern_paged[0] && strcmp(kern_paged, "?")) printf("   [%s; %s]", kern_paged, kern_dense);
    printf("\n");
  }
  fflush(stdout);
  P->rows++;
  /* Both read the same keys and values: they differ by the rounding of the output alone. */
  if (!(diff <= 2e-2 * mag + 1e-3)) {
    fprintf(stderr,
            "gpuport bench attention --paged: %s: the paged and the dense outputs differ by %.3g (largest |dense| "
            "%.3g): the benchmark did not read the same keys and values\n",
            shape, diff, mag);
    rc = 1;
  }
out:
  free(lens);
  return rc;
}

int tool_bench_paged(const tool_paged_opts_t *o, gp_stream_t s) {
  const bool cpu = gp_backend() == GP_BACKEND_CPU;
  static const int64_t cpu_b[] = {1, 4}, gpu_b[] = {1, 4, 16, 32, 64};
  static const int64_t cpu_c[] = {1024, 4096}, gpu_c[] = {1024, 4096, 8192, 16384, 32768};
  static const int64_t def_q[] = {1, 16};
  const int64_t *bs = o->n_batch ? o->batch : cpu ? cpu_b : gpu_b;
  const int64_t *cs = o->n_context ? o->context : cpu ? cpu_c : gpu_c;
  const int64_t *qs = o->n_seqlen_q ? o->seqlen_q : def_q;
  const int nb = o->n_batch ? o->n_batch : cpu ? 2 : 5, nc = o->n_context ? o->n_context : cpu ? 2 : 5;
  const int nq = o->n_seqlen_q ? o->n_seqlen_q : 2;
  paged_t P = {.o = o, .s = s, .t = o->dtype};
  P.es = gp_dtype_size(P.t);
  P.hq = o->heads ? o->heads : 32;
  P.hkv = o->kv_heads ? o->kv_heads : (o->heads ? o->heads : 8);
  P.d = o->head_dim ? o->head_dim : 128;
  P.page = o->page_size ? o->page_size : 16;
  for (int i = 0; i < nb; i++) P.max_b = bs[i] > P.max_b ? bs[i] : P.max_b;
  for (int i = 0; i < nc; i++) P.max_c = cs[i] > P.max_c ? cs[i] : P.max_c;
  for (int i = 0; i < nq; i++) P.max_q = qs[i] > P.max_q ? qs[i] : P.max_q;
  /* Sizes the library takes (int32 tables, head_dim 1..256) and products that fit. */
  if (P.max_b > 65536 || P.max_c > (1 << 24) || P.max_q > 65536 || P.hq > 4096 || P.hkv > 4096 || P.d > 256 ||
      P.page > 65536) {
    fprintf(stderr, "gpuport bench attention --paged: a size is too large (batch <= 65536, context <= 2^24, "
                    "query tokens <= 65536, heads <= 4096, head_dim <= 256, page size <= 65536)\n");
    return 2;
  }
  int64_t min_c = P.max_c;
  for (int i = 0; i < nc; i++) min_c = cs[i] < min_c ? cs[i] : min_c;
  if (min_c < P.max_q) {
    fprintf(stderr, "gpuport bench attention --paged: context %lld is shorter than %lld query tokens\n",
            (long long)min_c, (long long)P.max_q);
    return 2;
  }
  if (P.page & (P.page - 1)) {
    fprintf(stderr, "gpuport bench attention --paged: --page-size %lld is not a power of two\n", (long long)P.page);
    return 2;
  }
  P.row_bytes = (size_t)(P.hkv * P.d) * P.es;
  uint64_t seed = o->seed;
  int rc = 0;
  if ((rc = reference_bandwidth(&P)) || (rc = setup(&P, &seed))) goto out;
  if (!o->json) {
    printf("paged KV cache: %lld pages of %lld tokens in a random order (seed %llu), causal, %s; K/V GB/s as %% of "
           "%s %.1f GB/s%s; p/d: paged time / dense time\n",
           (long long)P.num_blocks, (long long)P.page, (unsigned long long)o->seed,
           o->append ? "each call appends its query tokens' K/V" : "no append", P.ref_name, P.ref_gbps,
           o->mem_bw_gbps > 0 ? "" : " (read + written, measured)");
    printf("%-8s %-32s %-4s %12s %15s %13s %6s %4s   %12s %13s   %5s\n", "mode", "shape", "type", "paged", "", "K/V read",
           "of bw", "splt", "dense", "K/V read", "p/d");
  }
  for (int qi = 0; qi < nq && !rc; qi++)
    for (int bi = 0; bi < nb && !rc; bi++)
      for (int ci = 0; ci < nc && !rc; ci++) rc = config(&P, bs[bi], cs[ci], qs[qi]);
out:
  gp_free(P.lk), gp_free(P.lv), gp_free(P.dk), gp_free(P.dv), gp_free(P.kc), gp_free(P.vc);
  gp_free(P.q), gp_free(P.o_paged), gp_free(P.o_dense), gp_free(P.ws), gp_free(P.table), gp_free(P.seqlens);
  return rc;
}
