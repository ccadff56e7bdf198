/*
 * paged_decode.c - the decode loop of one attention layer of a small model over a paged
 * KV cache with continuous batching, as a serving engine runs it (vLLM's PagedAttention
 * layout, FlashAttention-2's flash_attn_with_kvcache semantics: gpuport/attention.h).
 *
 * The layer: qkv = x Wqkv (one GEMM, q, k and v packed per token), attention over the
 * sequence's cached keys and values with this step's k and v appended first (one
 * gp_attention_fwd_kvcache call reading q, k_new and v_new out of the packed qkv through
 * strides), then x' = tanh(x + o Wo), the next step's input. Six sequences with prompts
 * of 1 to 40 tokens join at different steps (the prompt is one causal prefill call into
 * empty pages), decode for a few steps in one batch, and leave; their pages go back to a
 * free list and new sequences reuse them, so the block table changes between steps.
 * Decode steps alternate between gpuport's split count and 3 split-KV parts (the
 * workspace from gp_attention_kvcache_workspace_size). Every call's output is checked against gp_attention_fwd on the same keys and values,
 * kept on the host in logical order as the projections produced them (bf16: both round
 * their f32 result once, so they agree to an ulp or two of bf16).
 */
#include <string.h>

#include "example.h"

enum { DM = 128, HQ = 4, HKV = 2, D = 32, QKV = (HQ + 2 * HKV) * D, PAGE = 16, PAGES = 24, MAXP = 4, NSEQ = 6 };
enum { MAXLEN = MAXP * PAGE, MAXT = 64 };

typedef struct seq {
  int join, prompt, decode; /* schedule: step it joins, prompt tokens, decode steps */
  int len, done, active, npages, pages[MAXP];
  float x[DM];                        /* the next step's input */
  gp_bf16_t k[MAXLEN][HKV * D], v[MAXLEN][HKV * D]; /* logical K/V, as appended */
} seq_t;

static const int schedule[NSEQ][3] = {{0, 5, 6}, {0, 17, 4}, {0, 33, 9}, /* 17, 33: prompts crossing pages */
                                      {2, 1, 7}, {4, 40, 3}, {6, 15, 5}};
static seq_t seqs[NSEQ];
static int free_list[PAGES], n_free, was_used[PAGES], reused;
static uint64_t seed;

/* Device buffers. */
static gp_bf16_t *d_x, *d_qkv, *d_o, *d_y, *d_wqkv, *d_wo, *d_kc, *d_vc, *d_q1, *d_k1, *d_v1, *d_o1;
static int32_t *d_table, *d_lens;
static void *d_ws;
static size_t ws_bytes;

static gp_bf16_t bf(float f) { return gp_bf16_from_f32(f); }
static float fl(gp_bf16_t b) { return gp_f32_from_bf16(b); }

static gp_status_t upload_random(gp_bf16_t *dev, size_t n, double scale) {
  gp_bf16_t *h = malloc(n * sizeof *h);
  if (!h) return GP_ERROR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++) h[i] = bf(ex_uniform(&seed, -scale, scale));
  gp_status_t st = gp_memcpy(dev, h, n * sizeof *h);
  free(h);
  return st;
}

/* One layer call for n sequences of sl tokens each (prefill: one sequence, sl = its
 * prompt; decode: every active sequence, sl = 1) with nsplit split-KV parts (0:
 * gpuport's choice); x holds their inputs, [n * sl, DM]. Adds to *bad the elements out
 * of bounds against the dense reference. */
static gp_status_t layer(const int *ids, int n, int sl, int nsplit, const float *x, size_t *bad, const char *what) {
  static gp_bf16_t hx[MAXT * DM], hqkv[MAXT * QKV], ho[MAXT * HQ * D], hy[MAXT * DM], hd[MAXLEN * HQ * D];
  static float got[MAXT * HQ * D];
  static double ref[MAXT * HQ * D], bound[MAXT * HQ * D];
  int32_t table[NSEQ * MAXP], lens[NSEQ];
  const int t = n * sl;
  for (int i = 0; i < t * DM; i++) hx[i] = bf(x[i]);
  GP_CHECK(gp_memcpy(d_x, hx, (size_t)t * DM * sizeof *hx));
  GP_CHECK(gp_gemm(NULL, GP_ROW_MAJOR, GP_OP_N, GP_OP_N, t, QKV, DM, 1.0f, d_x, GP_BF16, DM, d_wqkv, GP_BF16, QKV,
                   0.0f, d_qkv, GP_BF16, QKV));
  /* Pages for the tokens this call appends, from the free list; the block table rows. */
  for (int b = 0; b < n; b++) {
    seq_t *s = &seqs[ids[b]];
    while (s->npages * PAGE < s->len + sl) {
      if (n_free == 0) {
        fprintf(stderr, "paged_decode: no free page for sequence %d\n", ids[b]);
        return GP_ERROR_OUT_OF_MEMORY;
      }
      const int p = free_list[--n_free];
      reused += was_used[p], was_used[p] = 1;
      s->pages[s->npages++] = p;
    }
    for (int j = 0; j < MAXP; j++) table[b * MAXP + j] = j < s->npages ? s->pages[j] : -1;
    lens[b] = s->len;
  }
  GP_CHECK(gp_memcpy(d_table, table, (size_t)n * MAXP * sizeof(int32_t)));
  GP_CHECK(gp_memcpy(d_lens, lens, (size_t)n * sizeof(int32_t)));

  gp_attention_kvcache_desc_t a;
  gp_attention_kvcache_desc_init(&a);
  a.dtype = GP_BF16, a.batch = n, a.seqlen_q = sl, a.heads_q = HQ, a.heads_kv = HKV, a.head_dim = D;
  a.q = d_qkv, a.q_batch_stride = (int64_t)sl * QKV, a.q_seq_stride = QKV; /* q, k, v packed per token */
  a.k_new = d_qkv + HQ * D, a.v_new = d_qkv + (HQ + HKV) * D, a.seqlen_new = sl;
  a.k_new_batch_stride = a.v_new_batch_stride = (int64_t)sl * QKV;
  a.k_new_seq_stride = a.v_new_seq_stride = QKV;
  a.o = d_o, a.k_cache = d_kc, a.v_cache = d_vc, a.num_blocks = PAGES, a.page_size = PAGE;
  a.block_table = d_table, a.max_blocks_per_seq = MAXP, a.cache_seqlens = d_lens, a.causal = 1;
  a.num_splits = nsplit;
  int splits;
  size_t need;
  GP_CHECK(gp_attention_kvcache_workspace_size(&a, &splits, &need));
  if (need > ws_bytes) {
    GP_CHECK(gp_free(d_ws));
    GP_CHECK(gp_malloc(&d_ws, need));
    ws_bytes = need;
  }
  GP_CHECK(gp_attention_fwd_kvcache(NULL, &a, need ? d_ws : NULL, need));
  GP_CHECK(gp_gemm(NULL, GP_ROW_MAJOR, GP_OP_N, GP_OP_N, t, DM, HQ * D, 1.0f, d_o, GP_BF16, HQ * D, d_wo, GP_BF16,
                   DM, 0.0f, d_y, GP_BF16, DM));
  GP_CHECK(gp_memcpy(hqkv, d_qkv, (size_t)t * QKV * sizeof *hqkv));
  GP_CHECK(gp_memcpy(ho, d_o, (size_t)t * HQ * D * sizeof *ho));
  GP_CHECK(gp_memcpy(hy, d_y, (size_t)t * DM * sizeof *hy));

  /* The host's logical record, then the dense reference sequence by sequence. */
  for (int b = 0; b < n; b++) {
    seq_t *s = &seqs[ids[b]];
    const int len = s->len + sl;
    for (int i = 0; i < sl; i++) {
      memcpy(s->k[s->len + i], hqkv + (size_t)(b * sl + i) * QKV + HQ * D, sizeof s->k[0]);
      memcpy(s->v[s->len + i], hqkv + (size_t)(b * sl + i) * QKV + (HQ + HKV) * D, sizeof s->v[0]);
    }
    GP_CHECK(gp_memcpy(d_k1, s->k, (size_t)len * sizeof s->k[0]));
    GP_CHECK(gp_memcpy(d_v1, s->v, (size_t)len * sizeof s->v[0]));
    GP_CHECK(gp_memcpy_2d(d_q1, HQ * D * sizeof *hqkv, hqkv + (size_t)b * sl * QKV, QKV * sizeof *hqkv,
                          HQ * D * sizeof *hqkv, (size_t)sl));
    gp_attention_desc_t r;
    gp_attention_desc_init(&r);
    r.dtype = GP_BF16, r.seqlen_q = sl, r.seqlen_k = len, r.heads_q = HQ, r.heads_kv = HKV, r.head_dim = D;
    r.q = d_q1, r.k = d_k1, r.v = d_v1, r.o = d_o1, r.causal = 1;
    GP_CHECK(gp_attention_fwd(NULL, &r));
    GP_CHECK(gp_memcpy(hd, d_o1, (size_t)sl * HQ * D * sizeof *hd));
    for (int i = 0; i < sl * HQ * D; i++) {
      const size_t e = (size_t)b * sl * HQ * D + (size_t)i;
      got[e] = fl(ho[e]), ref[e] = fl(hd[i]);
      bound[e] = 0x1p-6 * fabs(ref[e]) + 1e-4; /* two bf16 roundings of nearly equal f32 sums */
    }
    s->len = len;
    for (int e = 0; e < DM; e++) /* the next input: the layer's output at the last token */
      s->x[e] = tanhf(x[(b * sl + sl - 1) * DM + e] + fl(hy[(b * sl + sl - 1) * DM + e]));
  }
  char label[96];
  snprintf(label, sizeof label, "%s (%d x %d tokens, %d split%s)", what, n, sl, splits, splits == 1 ? "" : "s");
  *bad += ex_check(label, got, ref, bound, (size_t)t * HQ * D, 1e-2);
  return GP_SUCCESS;
}

int main(void) {
  seed = ex_seed("paged_decode");
  const size_t cache = (size_t)PAGES * PAGE * HKV * D;
  GP_CHECK(gp_malloc((void **)&d_x, MAXT * DM * sizeof(gp_bf16_t)));
  GP_CHECK(gp_malloc((void **)&d_qkv, MAXT * QKV * sizeof(gp_bf16_t)));
  GP_CHECK(gp_malloc((void **)&d_o, MAXT * HQ * D * sizeof(gp_bf16_t)));
  GP_CHECK(gp_malloc((void **)&d_y, MAXT * DM * sizeof(gp_bf16_t)));
  GP_CHECK(gp_malloc((void **)&d_wqkv, DM * QKV * sizeof(gp_bf16_t)));
  GP_CHECK(gp_malloc((void **)&d_wo, HQ * D * DM * sizeof(gp_bf16_t)));
  GP_CHECK(gp_malloc((void **)&d_kc, cache * sizeof(gp_bf16_t)));
  GP_CHECK(gp_malloc((void **)&d_vc, cache * sizeof(gp_bf16_t)));
  GP_CHECK(gp_malloc((void **)&d_q1, MAXT * HQ * D * sizeof(gp_bf16_t)));
  GP_CHECK(gp_malloc((void **)&d_o1, MAXT * HQ * D * sizeof(gp_bf16_t)));
  GP_CHECK(gp_malloc((void **)&d_k1, MAXLEN * HKV * D * sizeof(gp_bf16_t)));
  GP_CHECK(gp_malloc((void **)&d_v1, MAXLEN * HKV * D * sizeof(gp_bf16_t)));
  GP_CHECK(gp_malloc((void **)&d_table, NSEQ * MAXP * sizeof(int32_t)));
  GP_CHECK(gp_malloc((void **)&d_lens, NSEQ * sizeof(int32_t)));
  GP_CHECK(upload_random(d_wqkv, DM * QKV, 1.0 / sqrt(DM)));
  GP_CHECK(upload_random(d_wo, HQ * D * DM, 1.0 / sqrt(HQ * D)));
  GP_CHECK(gp_memset(d_kc, 0xff, cache * sizeof(gp_bf16_t))); /* NaN: a page read before it is written shows */
  GP_CHECK(gp_memset(d_vc, 0xff, cache * sizeof(gp_bf16_t)));
  /* The free list: every page, in a random order (a stack: freed pages are reused first). */
  for (int i = 0; i < PAGES; i++) free_list[i] = i;
  for (int i = PAGES - 1; i > 0; i--) {
    const int j = (int)(ex_next(&seed) % (uint64_t)(i + 1)), p = free_list[i];
    free_list[i] = free_list[j], free_list[j] = p;
  }
  n_free = PAGES;
  for (int i = 0; i < NSEQ; i++)
    seqs[i].join = schedule[i][0], seqs[i].prompt = schedule[i][1], seqs[i].decode = schedule[i][2];

  size_t bad = 0;
  static float x[MAXT * DM];
  int finished = 0;
  for (int step = 0; finished < NSEQ; step++) {
    int ids[NSEQ], n = 0;
    for (int i = 0; i < NSEQ; i++) { /* leave: pages back to the free list */
      seq_t *s = &seqs[i];
      if (!s->active || s->done < s->decode) continue;
      printf("step %d: sequence %d leaves (%d tokens), its %d page%s freed\n", step, i, s->len, s->npages,
             s->npages == 1 ? "" : "s");
      while (s->npages > 0) free_list[n_free++] = s->pages[--s->npages];
      s->active = 0, finished++;
    }
    for (int i = 0; i < NSEQ; i++) { /* join: the prompt, one prefill call */
      seq_t *s = &seqs[i];
      if (s->join != step) continue;
      for (int e = 0; e < s->prompt * DM; e++) x[e] = ex_uniform(&seed, -1.0, 1.0);
      char what[64];
      snprintf(what, sizeof what, "step %d: sequence %d joins, prefill", step, i);
      GP_CHECK(layer(&i, 1, s->prompt, 0, x, &bad, what));
      s->active = 1;
    }
    for (int i = 0; i < NSEQ; i++)
      if (seqs[i].active && seqs[i].done < seqs[i].decode) {
        memcpy(x + n * DM, seqs[i].x, sizeof seqs[i].x);
        ids[n++] = i;
      }
    if (n == 0) continue;
    char what[64];
    snprintf(what, sizeof what, "step %d: decode, %d pages free", step, n_free);
    /* odd steps ask for 3 split-KV parts (merged by their lse), even ones take gpuport's choice */
    GP_CHECK(layer(ids, n, 1, step % 2 ? 3 : 0, x, &bad, what));
    for (int b = 0; b < n; b++) seqs[ids[b]].done++;
  }
  printf("pages reused after their sequence left: %d\n", reused);
  if (reused == 0) bad++; /* the schedule reuses pages: none reused means the free list broke */
  void *bufs[] = {d_x, d_qkv, d_o, d_y, d_wqkv, d_wo, d_kc, d_vc, d_q1, d_k1, d_v1, d_o1, d_table, d_lens, d_ws};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) GP_CHECK(gp_free(bufs[i]));
  return ex_finish("paged_decode", bad);
}
