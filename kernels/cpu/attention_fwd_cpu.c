/*
 * attention_fwd_cpu.c - attention forward on the CPU backend: FlashAttention-2's
 * Algorithm 1 (Dao 2023) on the host.
 *
 * Work items are (sequence, query head, block of CPU_BQ query rows). For each item the
 * query block is converted to f32 once; the visible keys are walked in tiles of CPU_BK
 * rows (K and V converted to f32 into per-thread buffers); each row keeps a running
 * maximum m and sum l and an f32 accumulator, rescaled by exp(m_old - m_new) when the
 * maximum grows (online softmax). At the end o = acc / l and lse = m + log(l); a row
 * that saw no key writes zeros and lse = -inf.
 *
 * The call is enqueued with gp__be_enqueue_host_work, so it runs in stream order on
 * the stream's worker, asynchronously like a kernel. That worker splits the items over
 * up to GP_CPU_THREADS threads (default: the online cores) that take items from a
 * shared counter. Memory per call is the job record plus per-thread tile buffers
 * (O(CPU_BQ * head_dim + CPU_BK * head_dim) floats), independent of sequence length.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "attention_cpu.h"
#include "attention_impl.h"
#include "internal.h"
#include "kernels/common/elem.h"

#define CPU_BQ 32 /* query rows per work item */
#define CPU_BK GP__CPU_ATTN_BK /* keys per tile */
#define CPU_MAX_THREADS 256

/* Messages name the public function, as the asynchronous error reaches its caller. */
#define ATTN_ERR(status, ...) gp__error((status), "gp_attention_fwd", __VA_ARGS__)

typedef struct job {
  gp__attn_params_t p;
  int64_t tiles;      /* query blocks per (sequence, head) */
  int64_t items;      /* batch * heads_q * tiles */
  int64_t total_q;    /* varlen: rows of the packed q (lse's row length) */
  atomic_llong next;  /* next item to take */
} job_t;

/* Per-thread tile buffers, f32. K is stored transposed and V with rows padded to a
 * multiple of 8, so the inner loops have fixed trip counts that the compiler vectorises
 * at -O2 (unused columns are zero and their results ignored). */
typedef struct scratch {
  float *q;   /* [CPU_BQ][head_dim] */
  float *kt;  /* [head_dim][CPU_BK] */
  float *v;   /* [CPU_BK][dv_pad] */
  float *acc; /* [CPU_BQ][dv_pad] */
  int64_t dv_pad;
  float m[CPU_BQ], l[CPU_BQ];
} scratch_t;

static int64_t pad8(int64_t n) { return (n + 7) & ~(int64_t)7; }

/* One loop per dtype: the constant dtype folds gp__elem_load's test out of the loop, so
 * each loop is a plain conversion the compiler vectorises. */
#define ROW_LOOP(stmt)                                     \
  do {                                                     \
    if (dtype == GP_F16) {                                 \
      for (int64_t c = 0; c < n; c++) stmt(GP_F16);        \
    } else if (dtype == GP_BF16) {                         \
      for (int64_t c = 0; c < n; c++) stmt(GP_BF16);       \
    } else {                                               \
      for (int64_t c = 0; c < n; c++) stmt(GP_F32);        \
    }                                                      \
  } while (0)

void gp__cpu_attn_load_row(float *dst, int64_t step, const void *src, int64_t off, int dtype, int64_t n) {
#define LOAD_ONE(t) dst[c * step] = gp__elem_load(src, (t), off + c)
  ROW_LOOP(LOAD_ONE);
#undef LOAD_ONE
}

void gp__cpu_attn_store_row(void *dst, int64_t off, int dtype, const float *src, float mul, int64_t n) {
#define STORE_ONE(t) gp__elem_store(dst, (t), off + c, src[c] * mul)
  ROW_LOOP(STORE_ONE);
#undef STORE_ONE
}
#undef ROW_LOOP

/* One work item: query rows [i0, i0 + CPU_BQ) of head h of sequence b. */
static void run_item(const job_t *job, scratch_t *w, int64_t item) {
  const gp__attn_params_t *p = &job->p;
  int64_t tile = item % job->tiles, bh = item / job->tiles;
  int64_t h = bh % p->heads_q, b = bh / p->heads_q, hk = h / (p->heads_q / p->heads_kv);
  gp__attn_seq_t seq;
  (void)gp__attn_sequence(p, b, &seq); /* every sequence was checked by run_job */
  const int64_t sq = seq.sq, sk = seq.sk, q_row0 = seq.q0, k_row0 = seq.k0;
  int64_t q_base = b * p->q_bs, k_base = b * p->k_bs, v_base = b * p->v_bs, o_base = b * p->o_bs;
  int64_t i0 = tile * CPU_BQ;
  if (i0 >= sq) return;
  int64_t rows = sq - i0 < CPU_BQ ? sq - i0 : CPU_BQ;
  const int64_t d = p->head_dim, dv = p->head_dim_v, dvp = w->dv_pad;
  float s[CPU_BK];

  for (int64_t r = 0; r < rows; r++) {
    gp__cpu_attn_load_row(w->q + r * d, 1, p->q, q_base + (q_row0 + i0 + r) * p->q_ss + h * p->q_hs, p->dtype, d);
    w->m[r] = -INFINITY;
    w->l[r] = 0.0f;
  }
  memset(w->acc, 0, (size_t)(rows * dvp) * sizeof(float));

  int64_t lo, hi, lo_last, hi_last;
  gp__attn_key_range(i0, sq, sk, p->window_left, p->window_right, &lo, &hi);
  gp__attn_key_range(i0 + rows - 1, sq, sk, p->window_left, p->window_right, &lo_last, &hi_last);
  hi = hi_last; /* both ends grow with the row */
  for (int64_t j0 = lo; j0 <= hi; j0 += CPU_BK) {
    int64_t nk = hi - j0 + 1 < CPU_BK ? hi - j0 + 1 : CPU_BK;
    for (int64_t c = 0; c < nk; c++) {
      gp__cpu_attn_load_row(w->kt + c, CPU_BK, p->k, k_base + (k_row0 + j0 + c) * p->k_ss + hk * p->k_hs, p->dtype, d);
      gp__cpu_attn_load_row(w->v + c * dvp, 1, p->v, v_base + (k_row0 + j0 + c) * p->v_ss + hk * p->v_hs, p->dtype, dv);
    }
    for (int64_t r = 0; r < rows; r++) {
      int64_t rlo, rhi;
      gp__attn_key_range(i0 + r, sq, sk, p->window_left, p->window_right, &rlo, &rhi);
      int64_t c0 = rlo > j0 ? rlo - j0 : 0, c1 = rhi - j0 < nk - 1 ? rhi - j0 : nk - 1;
      if (c0 > c1) continue;
      gp__cpu_attn_scores(s, w->q + r * d, w->kt, d);
      float mx = w->m[r];
      for (int64_t c = c0; c <= c1; c++) {
        s[c] *= p->scale;
        if (s[c] > mx) mx = s[c];
      }
      float corr = expf(w->m[r] - mx), sum = 0.0f; /* exp(-inf) = 0 for the first tile */
      float *acc = w->acc + r * dvp;
      if (corr != 1.0f) gp__cpu_attn_scale_row(acc, corr, dvp);
      for (int64_t c = c0; c <= c1; c++) {
        float pr = expf(s[c] - mx);
        sum += pr;
        gp__cpu_attn_axpy(acc, pr, w->v + c * dvp, dvp);
      }
      w->l[r] = w->l[r] * corr + sum;
      w->m[r] = mx;
    }
  }

  for (int64_t r = 0; r < rows; r++) {
    int64_t i = i0 + r, o_off = o_base + (q_row0 + i) * p->o_ss + h * p->o_hs;
    bool empty = w->l[r] == 0.0f;
    gp__cpu_attn_store_row(p->o, o_off, p->dtype, w->acc + r * dvp, empty ? 0.0f : 1.0f / w->l[r], dv);
    if (p->lse) {
      float v = empty ? -INFINITY : w->m[r] + logf(w->l[r]);
      if (p->cu_q)
        p->lse[h * job->total_q + q_row0 + i] = v;
      else
        p->lse[(b * p->heads_q + h) * p->seqlen_q + i] = v;
    }
  }
}

static void *worker(void *arg) {
  job_t *job = (job_t *)arg;
  const int64_t d = job->p.head_dim, dvp = pad8(job->p.head_dim_v);
  scratch_t w;
  size_t floats = (size_t)(CPU_BQ * d + d * CPU_BK + CPU_BK * dvp + CPU_BQ * dvp);
  /* calloc: the padding columns of the K and V tiles stay zero. */
  float *buf = (float *)calloc(floats, sizeof(float));
  if (buf == NULL) return NULL;
  w.q = buf;
  w.kt = w.q + CPU_BQ * d;
  w.v = w.kt + d * CPU_BK;
  w.acc = w.v + CPU_BK * dvp;
  w.dv_pad = dvp;
  for (;;) {
    int64_t item = atomic_fetch_add(&job->next, 1);
    if (item >= job->items) break;
    run_item(job, &w, item);
  }
  free(buf);
  return NULL;
}

bool gp__cpu_attn_parallel(void *(*worker)(void *), void *job, int64_t items, atomic_llong *next) {
  int n = gp__cpu_attn_threads(items);
  pthread_t tids[CPU_MAX_THREADS];
  int started = 0;
  for (int t = 1; t < n; t++) {
    if (pthread_create(&tids[started], NULL, worker, job) != 0) break;
    started++;
  }
  worker(job); /* this thread works too */
  for (int t = 0; t < started; t++) pthread_join(tids[t], NULL);
  /* A thread that got its buffers drains every item; one that did not takes none. */
  if (atomic_load(next) < items) worker(job);
  return atomic_load(next) >= items;
}

int gp__cpu_attn_threads(int64_t items) {
  long n = gp__env_long("GP_CPU_THREADS", 0);
  if (n <= 0) n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > CPU_MAX_THREADS) n = CPU_MAX_THREADS;
  if (n > items) n = (long)items;
  return (int)n;
}

/* Bytes spanned by rows [0, rows) of a packed [tokens, heads, dim] tensor; false on
 * overflow (which no allocation can satisfy). */
static bool packed_bytes(int64_t rows, int64_t heads, int64_t dim, int64_t ss, int64_t hs,
                         size_t elem, size_t *bytes) {
  int64_t last = dim - 1, t;
  if (__builtin_mul_overflow(rows - 1, ss, &t) || __builtin_add_overflow(last, t, &last)) return false;
  if (__builtin_mul_overflow(heads - 1, hs, &t) || __builtin_add_overflow(last, t, &last)) return false;
  if (__builtin_mul_overflow(last + 1, (int64_t)elem, &t)) return false;
  *bytes = (size_t)t;
  return true;
}

/* The totals of the varlen offsets size the packed tensors. Within the allocations
 * gpuport knows, the sequence rule (tokens_q, tokens_k) has bounded them already; this
 * is the api layer's range check of the extents they give (a range that wraps around
 * the address space, in memory gpuport does not know, is refused too). */
static gp_status_t check_packed_ranges(const gp__attn_params_t *p, int64_t total_q,
                                       int64_t total_k, const char *func) {
  const size_t es = gp_dtype_size((gp_dtype_t)p->dtype);
  struct {
    const char *name;
    const void *ptr;
    int64_t rows, heads, dim, ss, hs;
    size_t elem;
  } t[] = {
      {"desc->q", p->q, total_q, p->heads_q, p->head_dim, p->q_ss, p->q_hs, es},
      {"desc->k", p->k, total_k, p->heads_kv, p->head_dim, p->k_ss, p->k_hs, es},
      {"desc->v", p->v, total_k, p->heads_kv, p->head_dim_v, p->v_ss, p->v_hs, es},
      {"desc->o", p->o, total_q, p->heads_q, p->head_dim_v, p->o_ss, p->o_hs, es},
      /* lse is [heads_q, total_q] */
      {"desc->lse", p->lse, p->heads_q, 1, total_q, total_q, 0, sizeof(float)},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    size_t bytes;
    if (t[i].ptr == NULL || t[i].rows == 0 || t[i].dim == 0) continue;
    if (!packed_bytes(t[i].rows, t[i].heads, t[i].dim, t[i].ss, t[i].hs, t[i].elem, &bytes))
      return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "the extent of %s for %lld query and %lld key tokens (cu_seqlens) "
                     "overflows the address space",
                     t[i].name, (long long)total_q, (long long)total_k);
    GP__TRY(gp__api_check_range(func, t[i].name, t[i].ptr, bytes));
  }
  return GP_SUCCESS;
}

gp_status_t gp__cpu_attn_check_varlen(const gp__attn_params_t *p, const char *func) {
  /* The first sequence at fault; one whose own offsets are at fault before one that
   * only sees a bad total (the sequence that ends past the tensors is the one to name). */
  int64_t bad = -1;
  int bad_why = GP__ATTN_SEQ_OK;
  for (int64_t b = 0; b < p->batch; b++) {
    gp__attn_seq_t seq;
    const int why = gp__attn_sequence(p, b, &seq);
    if (why == GP__ATTN_SEQ_OK || (bad >= 0 && why == GP__ATTN_SEQ_TOTAL)) continue;
    bad = b, bad_why = why;
    if (why != GP__ATTN_SEQ_TOTAL) break;
  }
  if (bad >= 0) {
    char msg[400];
    gp__attn_seq_message(msg, sizeof msg, p, bad, bad_why);
    return gp__error(GP_ERROR_INVALID_VALUE, func, "%s", msg);
  }
  return check_packed_ranges(p, p->cu_q[p->batch], p->cu_k[p->batch], func);
}

static gp_status_t run_job(void *user) {
  job_t *job = (job_t *)user;
  if (job->p.cu_q) {
    GP__TRY(gp__cpu_attn_check_varlen(&job->p, "gp_attention_fwd"));
    job->total_q = job->p.cu_q[job->p.batch];
  }
  if (!gp__cpu_attn_parallel(worker, job, job->items, &job->next))
    return ATTN_ERR(GP_ERROR_OUT_OF_MEMORY, "no memory for the tile buffers");
  return GP_SUCCESS;
}

gp_status_t gp__cpu_attention_fwd(gp_stream_t stream, const gp__attn_params_t *p, char *what,
                                  size_t what_len) {
  job_t *job = (job_t *)malloc(sizeof(*job));
  if (job == NULL) return ATTN_ERR(GP_ERROR_OUT_OF_MEMORY, "no memory for the job");
  job->p = *p;
  job->tiles = (p->seqlen_q + CPU_BQ - 1) / CPU_BQ;
  job->items = job->tiles * p->heads_q * p->batch;
  job->total_q = 0;
  atomic_init(&job->next, 0);
  snprintf(what, what_len, "cpu tiled online softmax (%d x %d tiles, %lld items, up to %d threads)",
           CPU_BQ, CPU_BK, (long long)job->items, gp__cpu_attn_threads(job->items));
  return gp__be_enqueue_host_work(stream, run_job, job, true);
}
