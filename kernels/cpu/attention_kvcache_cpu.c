/*
 * attention_kvcache_cpu.c - attention over a paged KV cache on the CPU backend
 * (gp_attention_fwd_kvcache's host implementation), in stream order on the stream's
 * worker like a kernel.
 *
 * The call runs in four steps: (1) every sequence's cache length and the block-table
 * entries of all its tokens are checked (kernels/common/attention_kvcache.h), failing the
 * call with GP_ERROR_INVALID_VALUE before anything is touched; (2) k_new and v_new are
 * copied into their pages; (3) work items (sequence, key/value head, split, block of
 * CPU_BQ rows of the GQA group packed along the queries, as the portable kernel packs
 * them) run FlashAttention-2's online softmax over the split's visible keys, gathering
 * CPU_BK keys at a time through the block table into f32 tiles, on up to GP_CPU_THREADS
 * threads; (4) with splits, the partials are merged by their lse in split order (so the
 * result depends on the split count alone, as on a GPU).
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "attention_cpu.h"
#include "internal.h"
#include "kernels/common/attention_kvcache.h"

#define CPU_BQ 32
#define CPU_BK GP__CPU_ATTN_BK

#define KV_ERR(status, ...) gp__error((status), "gp_attention_fwd_kvcache", __VA_ARGS__)

typedef struct kv_job {
  gp__attn_kv_params_t p;
  int64_t group, tiles, items;
  atomic_llong next;
} kv_job_t;

typedef struct kv_scratch {
  float *q, *kt, *v, *acc; /* [BQ][d], [d][BK], [BK][dp], [BQ][dp] */
  int64_t dp;
  float m[CPU_BQ], l[CPU_BQ];
} kv_scratch_t;

static int64_t pad8(int64_t n) { return (n + 7) & ~(int64_t)7; }

/* Rows r0 .. r0 + rows - 1 of the packed group: query r / group of head hk * group + r % group. */
static void load_queries(const kv_job_t *job, kv_scratch_t *w, int64_t b, int64_t hk, int64_t r0, int64_t rows) {
  const gp__attn_kv_params_t *p = &job->p;
  for (int64_t r = 0; r < rows; r++) {
    const int64_t flat = r0 + r, h = hk * job->group + flat % job->group;
    gp__cpu_attn_load_row(w->q + r * p->head_dim, 1, p->q, b * p->q_bs + flat / job->group * p->q_ss + h * p->q_hs,
                          p->dtype, p->head_dim);
    w->m[r] = -INFINITY;
    w->l[r] = 0.0f;
  }
  memset(w->acc, 0, (size_t)(rows * w->dp) * sizeof(float));
}

/* Online softmax of one row over a gathered tile: keys j0 + c0 .. j0 + c1. */
static void row_tile(const gp__attn_kv_params_t *p, kv_scratch_t *w, int64_t r, int64_t c0, int64_t c1) {
  float s[CPU_BK];
  gp__cpu_attn_scores(s, w->q + r * p->head_dim, w->kt, p->head_dim);
  float mx = w->m[r];
  for (int64_t c = c0; c <= c1; c++) {
    s[c] *= p->scale;
    if (s[c] > mx) mx = s[c];
  }
  const float corr = expf(w->m[r] - mx); /* exp(-inf) = 0 for the first tile */
  float sum = 0.0f, *acc = w->acc + r * w->dp;
  if (corr != 1.0f) gp__cpu_attn_scale_row(acc, corr, w->dp);
  for (int64_t c = c0; c <= c1; c++) {
    const float pr = expf(s[c] - mx);
    sum += pr;
    gp__cpu_attn_axpy(acc, pr, w->v + c * w->dp, w->dp);
  }
  w->l[r] = w->l[r] * corr + sum;
  w->m[r] = mx;
}

/* Writes the rows' outputs: o and lse with one split, else the split's partials. */
static void store_rows(const kv_job_t *job, kv_scratch_t *w, int64_t b, int64_t hk, int64_t split, int64_t r0,
                       int64_t rows) {
  const gp__attn_kv_params_t *p = &job->p;
  const int64_t d = p->head_dim, total = p->batch * p->heads_q * p->seqlen_q;
  for (int64_t r = 0; r < rows; r++) {
    const int64_t flat = r0 + r, i = flat / job->group, h = hk * job->group + flat % job->group;
    const int64_t row = (b * p->heads_q + h) * p->seqlen_q + i;
    const bool empty = w->l[r] == 0.0f;
    const float inv = empty ? 0.0f : 1.0f / w->l[r], lse = empty ? -INFINITY : w->m[r] + logf(w->l[r]);
    if (p->nsplit == 1) {
      gp__cpu_attn_store_row(p->o, b * p->o_bs + i * p->o_ss + h * p->o_hs, p->dtype, w->acc + r * w->dp, inv, d);
      if (p->lse) p->lse[row] = lse;
    } else {
      float *dst = p->ws_o + (split * total + row) * d;
      for (int64_t e = 0; e < d; e++) dst[e] = w->acc[r * w->dp + e] * inv;
      p->ws_lse[split * total + row] = lse;
    }
  }
}

static void run_item(const kv_job_t *job, kv_scratch_t *w, int64_t item) {
  const gp__attn_kv_params_t *p = &job->p;
  const int64_t tile = item % job->tiles, hk = item / job->tiles % p->heads_kv;
  const int64_t split = item / job->tiles / p->heads_kv % p->nsplit, b = item / job->tiles / p->heads_kv / p->nsplit;
  const int64_t r0 = tile * CPU_BQ, nrows = p->seqlen_q * job->group;
  const int64_t rows = nrows - r0 < CPU_BQ ? nrows - r0 : CPU_BQ, sq = p->seqlen_q, d = p->head_dim;
  int64_t sk, k0, k1, lo, hi, unused;
  (void)gp__attn_kv_seqlen(p, b, &sk); /* checked by run_job */
  gp__attn_kv_split(sk, p->nsplit, split, &k0, &k1);
  gp__attn_key_range(r0 / job->group, sq, sk, p->window_left, p->window_right, &lo, &unused);
  gp__attn_key_range((r0 + rows - 1) / job->group, sq, sk, p->window_left, p->window_right, &unused, &hi);
  if (lo < k0) lo = k0;
  if (hi > k1 - 1) hi = k1 - 1;
  load_queries(job, w, b, hk, r0, rows);
  for (int64_t j0 = lo; j0 <= hi; j0 += CPU_BK) {
    const int64_t nk = hi - j0 + 1 < CPU_BK ? hi - j0 + 1 : CPU_BK;
    for (int64_t c = 0; c < nk; c++) {
      const int64_t kt = gp__attn_kv_token(p, b, j0 + c, p->kc_bs, p->kc_ss) + hk * p->kc_hs;
      const int64_t vt = gp__attn_kv_token(p, b, j0 + c, p->vc_bs, p->vc_ss) + hk * p->vc_hs;
      gp__cpu_attn_load_row(w->kt + c, CPU_BK, p->k_cache, kt, p->dtype, d);
      gp__cpu_attn_load_row(w->v + c * w->dp, 1, p->v_cache, vt, p->dtype, d);
    }
    for (int64_t r = 0; r < rows; r++) {
      int64_t rlo, rhi;
      gp__attn_key_range((r0 + r) / job->group, sq, sk, p->window_left, p->window_right, &rlo, &rhi);
      const int64_t c0 = rlo > j0 ? rlo - j0 : 0, c1 = rhi - j0 < nk - 1 ? rhi - j0 : nk - 1;
      if (c0 <= c1) row_tile(p, w, r, c0, c1);
    }
  }
  store_rows(job, w, b, hk, split, r0, rows);
}

static void *worker(void *arg) {
  kv_job_t *job = (kv_job_t *)arg;
  const int64_t d = job->p.head_dim, dp = pad8(d);
  /* calloc: the padding columns of the tiles stay zero */
  float *buf = (float *)calloc((size_t)(CPU_BQ * d + d * CPU_BK + CPU_BK * dp + CPU_BQ * dp), sizeof(float));
  if (buf == NULL) return NULL;
  kv_scratch_t w = {.q = buf, .dp = dp};
  w.kt = w.q + CPU_BQ * d;
  w.v = w.kt + d * CPU_BK;
  w.acc = w.v + CPU_BK * dp;
  for (;;) {
    const int64_t item = atomic_fetch_add(&job->next, 1);
    if (item >= job->items) break;
    run_item(job, &w, item);
  }
  free(buf);
  return NULL;
}

/* Step 1: every sequence and every page it uses. */
static gp_status_t check_sequences(const gp__attn_kv_params_t *p) {
  for (int64_t b = 0; b < p->batch; b++) {
    int64_t sk, col = -1;
    int why = gp__attn_kv_seqlen(p, b, &sk);
    if (why == GP__ATTN_KV_OK) why = gp__attn_kv_pages(p, b, 0, sk - 1, &col);
    if (why != GP__ATTN_KV_OK) {
      char msg[400];
      gp__attn_kv_message(msg, sizeof msg, p, b, why, col);
      return KV_ERR(GP_ERROR_INVALID_VALUE, "%s", msg);
    }
  }
  return GP_SUCCESS;
}

/* Step 2: k_new and v_new into their pages (same dtype: a row is copied as bytes). */
static void append(const gp__attn_kv_params_t *p) {
  const size_t es = gp_dtype_size((gp_dtype_t)p->dtype), row = (size_t)p->head_dim * es;
  for (int64_t b = 0; b < p->batch; b++) {
    const int64_t c = p->cache_seqlens[b];
    for (int64_t t = 0; t < p->seqlen_new; t++)
      for (int64_t h = 0; h < p->heads_kv; h++) {
        const int64_t kc = gp__attn_kv_token(p, b, c + t, p->kc_bs, p->kc_ss) + h * p->kc_hs;
        const int64_t vc = gp__attn_kv_token(p, b, c + t, p->vc_bs, p->vc_ss) + h * p->vc_hs;
        memcpy((char *)p->k_cache + kc * es, (const char *)p->k_new + (b * p->kn_bs + t * p->kn_ss + h * p->kn_hs) * es, row);
        memcpy((char *)p->v_cache + vc * es, (const char *)p->v_new + (b * p->vn_bs + t * p->vn_ss + h * p->vn_hs) * es, row);
      }
  }
}

/* Step 4: o = sum_s exp(lse_s - lse) o_s, lse = log(sum_s exp(lse_s)), splits in order. */
static void combine(const gp__attn_kv_params_t *p) {
  const int64_t total = p->batch * p->heads_q * p->seqlen_q, d = p->head_dim;
  float x[GP__ATTN_MAX_DIM];
  for (int64_t row = 0; row < total; row++) {
    const int64_t i = row % p->seqlen_q, h = row / p->seqlen_q % p->heads_q, b = row / p->seqlen_q / p->heads_q;
    float mx = -INFINITY, sum = 0.0f;
    for (int64_t s = 0; s < p->nsplit; s++) mx = fmaxf(mx, p->ws_lse[s * total + row]);
    if (mx != -INFINITY)
      for (int64_t s = 0; s < p->nsplit; s++) sum += expf(p->ws_lse[s * total + row] - mx);
    const float lse = mx == -INFINITY ? -INFINITY : mx + logf(sum);
    memset(x, 0, (size_t)d * sizeof(float));
    for (int64_t s = 0; mx != -INFINITY && s < p->nsplit; s++) {
      const float ls = p->ws_lse[s * total + row];
      if (ls == -INFINITY) continue;
      const float wgt = expf(ls - lse), *src = p->ws_o + (s * total + row) * d;
      for (int64_t e = 0; e < d; e++) x[e] = fmaf(wgt, src[e], x[e]);
    }
    gp__cpu_attn_store_row(p->o, b * p->o_bs + i * p->o_ss + h * p->o_hs, p->dtype, x, 1.0f, d);
    if (p->lse) p->lse[row] = lse;
  }
}

static gp_status_t run_job(void *user) {
  kv_job_t *job = (kv_job_t *)user;
  GP__TRY(check_sequences(&job->p));
  if (job->p.seqlen_new > 0) append(&job->p);
  if (!gp__cpu_attn_parallel(worker, job, job->items, &job->next))
    return KV_ERR(GP_ERROR_OUT_OF_MEMORY, "no memory for the tile buffers");
  if (job->p.nsplit > 1) combine(&job->p);
  return GP_SUCCESS;
}

gp_status_t gp__cpu_attention_kvcache(gp_stream_t stream, const gp__attn_kv_params_t *p, char *what,
                                      size_t what_len) {
  kv_job_t *job = (kv_job_t *)malloc(sizeof(*job));
  if (job == NULL) return KV_ERR(GP_ERROR_OUT_OF_MEMORY, "no memory for the job");
  job->p = *p;
  job->group = p->heads_q / p->heads_kv;
  job->tiles = (p->seqlen_q * job->group + CPU_BQ - 1) / CPU_BQ;
  job->items = job->tiles * p->heads_kv * p->nsplit * p->batch;
  atomic_init(&job->next, 0);
  snprintf(what, what_len, "cpu paged online softmax (%d x %d tiles, %lld items, %lld splits, up to %d threads)",
           CPU_BQ, CPU_BK, (long long)job->items, (long long)p->nsplit, gp__cpu_attn_threads(job->items));
  return gp__be_enqueue_host_work(stream, run_job, job, true);
}
