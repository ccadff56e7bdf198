/*
 * attention_fwd_cpu.c - attention forward on the CPU backend: FlashAttention-2's
 * Algorithm 1 (Dao 2023) on the host.
 *
 * Work items are (sequence, query head, block of CPU_BQ query rows), head by head. For
 * each item the query block is converted to f32 once (f32 copied, contiguous); the visible
 * keys are walked in tiles of CPU_BK rows at multiples of CPU_BK, K (transposed) and V
 * taken from the thread's K/V store (scratch_t), and S = Q K^T and acc += P V run as
 * GEMM tiles (attention_tile_cpu.c). Each row keeps a running maximum m and sum l, in
 * base 2 (m is the maximum of scale log2(e) S), rescaling its accumulator by
 * 2^(m_old - m_new) when the maximum grows (online softmax, one vectorised exponential
 * pass over each row of scores). At the end o = acc / l and lse = (m + log2(l)) ln(2);
 * a row that saw no key writes zeros and lse = -inf.
 *
 * The call is enqueued with gp__be_enqueue_host_work, so it runs in stream order on
 * the stream's worker, asynchronously like a kernel. That worker splits the items over
 * up to GP_CPU_THREADS threads (default: the online cores) that take items from a
 * shared counter. Memory per call is the job record plus per-thread buffers: the tiles
 * (O((CPU_BQ + CPU_BK) * (head_dim + head_dim_v) + CPU_BQ * CPU_BK) floats) and the K/V
 * store, the longest sequence's keys up to CPU_STORE_BYTES (at least one tile).
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

#define CPU_BQ 96  /* query rows per work item (a multiple of the GEMM tile's 6 rows) */
#define CPU_BK 128 /* keys per tile */
/* Leading dimension of the transposed K tile and the scores: a row of the tile plus
 * eight floats, so the rows a GEMM walks down do not all fall in the same cache sets. */
#define CPU_LDT (CPU_BK + 8)
#define CPU_MAX_THREADS 256
/* Default bytes of each thread's K/V store: 2048 keys of head_dim 256 (more keys of
 * smaller heads). A longer sequence converts its keys tile by tile. */
#define CPU_STORE_BYTES (8 << 20)

/* Messages name the public function, as the asynchronous error reaches its caller. */
#define ATTN_ERR(status, ...) gp__error((status), "gp_attention_fwd", __VA_ARGS__)

typedef struct job {
  gp__attn_params_t p;
  bool simd;          /* the AVX2 tile build (gp__cpu_attn_simd) */
  bool direct;        /* f32: K transposed from the tensor, with no conversion first */
  float scale2;       /* the softmax scale times log2(e): m and the exponentials in base 2 */
  int64_t tiles;      /* query blocks per (sequence, head) */
  int64_t items;      /* batch * heads_q * tiles */
  int64_t total_q;    /* varlen: rows of the packed q (lse's row length) */
  int64_t cap;        /* keys the per-thread K/V store holds (a multiple of CPU_BK) */
  atomic_llong next;  /* next item to take */
} job_t;

/* Per-thread buffers, f32, 64-byte aligned. The K/V store holds the converted keys of one
 * (sequence, key/value head): K transposed (so both products are the NN GEMM of
 * attention_cpu.h) and V, rows padded to a multiple of 8. A sequence of at most cap keys
 * keeps key j at column j, each CPU_BK tile converted the first time an item of that
 * (sequence, head) needs it: the head's query blocks and the query heads of a GQA group
 * that the thread takes in a row convert it once. A longer sequence converts every tile
 * into columns [0, CPU_BK) as it goes. */
typedef struct scratch {
  float *q;   /* [CPU_BQ][head_dim] (f16/bf16: q converted) */
  float *kr;  /* [CPU_BK][head_dim] (f16/bf16: a tile of K converted, before its transposition) */
  float *kt;  /* [cap / CPU_BK][head_dim][CPU_LDT]: each tile's K^T apart (see kt_at) */
  float *v;   /* [cap][ldv] */
  float *acc; /* [CPU_BQ][dv_pad] */
  float *s;   /* [CPU_BQ][CPU_LDT] scores, then probabilities */
  unsigned char *done; /* [cap / CPU_BK]: tile converted for (b, hk) */
  int64_t b, hk;       /* whose keys the store holds; -1 none */
  int64_t dv_pad, ldv; /* head_dim_v rounded up to 8; that plus 8 (as CPU_LDT) */
  float m[CPU_BQ], l[CPU_BQ]; /* per row: the maximum of scale2 * s (base 2), the sum */
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

/* Where one item's rows are: (sequence, head) and the query block. Items go head by
 * head, so the threads taking consecutive items read the same keys and values (which
 * stay in cache), and within a head the last block first: with a causal mask it sees
 * the most keys, so every head's light blocks come last and the threads end together. */
typedef struct where {
  int64_t b, h, hk, i0, rows;
  gp__attn_seq_t seq;
} where_t;

static bool locate(const job_t *job, int64_t item, where_t *w) {
  const gp__attn_params_t *p = &job->p;
  const int64_t bh = item / job->tiles, tile = job->tiles - 1 - item % job->tiles;
  w->h = bh % p->heads_q, w->b = bh / p->heads_q, w->hk = w->h / (p->heads_q / p->heads_kv);
  (void)gp__attn_sequence(p, w->b, &w->seq); /* every sequence was checked by run_job */
  w->i0 = tile * CPU_BQ;
  if (w->i0 >= w->seq.sq) return false;
  w->rows = w->seq.sq - w->i0 < CPU_BQ ? w->seq.sq - w->i0 : CPU_BQ;
  return true;
}

/* K^T of the key tile at column col (a multiple of CPU_BK) of the store: [head_dim][CPU_LDT].
 * Tile by tile, not one [head_dim][cap] matrix: a GEMM walking down a tile's rows then
 * stays within d * CPU_LDT floats (a few pages), where rows cap floats apart would each
 * take a page, more than the first-level TLB holds. */
static float *kt_at(const job_t *job, scratch_t *w, int64_t col) {
  return w->kt + col / CPU_BK * job->p.head_dim * CPU_LDT;
}

/* Converts keys [j0, j0 + nk) (nk <= CPU_BK) of the item's sequence and key/value head
 * to f32 at column col of the store: K into kt (f16/bf16 through kr's rows, f32
 * transposed from the tensor), V into v. */
static void load_kv(const job_t *job, scratch_t *w, const where_t *at, int64_t j0, int64_t nk, int64_t col) {
  const gp__attn_params_t *p = &job->p;
  const int64_t row0 = at->seq.k0 + j0, d = p->head_dim;
  const int64_t k0 = at->b * p->k_bs + row0 * p->k_ss + at->hk * p->k_hs;
  float *v = w->v + col * w->ldv;
  if (job->direct) {
    gp__cpu_attn_transpose(job->simd, nk, d, (const float *)p->k + k0, p->k_ss, kt_at(job, w, col), CPU_LDT);
  } else {
    for (int64_t c = 0; c < nk; c++) gp__cpu_attn_load(job->simd, w->kr + c * d, p->k, k0 + c * p->k_ss, p->dtype, d);
    gp__cpu_attn_transpose(job->simd, nk, d, w->kr, d, kt_at(job, w, col), CPU_LDT);
  }
  for (int64_t c = 0; c < nk; c++)
    gp__cpu_attn_load(job->simd, v + c * w->ldv, p->v, at->b * p->v_bs + (row0 + c) * p->v_ss + at->hk * p->v_hs,
                      p->dtype, p->head_dim_v);
}

/* The column of the store where the key tile at j0 (a multiple of CPU_BK) is, converted:
 * in the store of the item's (sequence, key/value head) when the sequence fits (tiles
 * converted the first time), else in columns [0, CPU_BK), converted now. nk: the keys
 * the item needs; the whole tile is converted, for the items that need more of it. */
static int64_t kv_tile(const job_t *job, scratch_t *w, const where_t *at, int64_t j0, int64_t nk) {
  if (at->seq.sk > job->cap) {
    w->b = -1; /* the store's tiles are overwritten */
    load_kv(job, w, at, j0, nk, 0);
    return 0;
  }
  if (w->b != at->b || w->hk != at->hk) {
    memset(w->done, 0, (size_t)(job->cap / CPU_BK));
    w->b = at->b, w->hk = at->hk;
  }
  const int64_t t = j0 / CPU_BK;
  if (!w->done[t]) {
    load_kv(job, w, at, j0, at->seq.sk - j0 < CPU_BK ? at->seq.sk - j0 : CPU_BK, j0);
    w->done[t] = 1;
  }
  return j0;
}

/* The online softmax over one tile's scores (row r at w->s + r * CPU_LDT, nk keys from j0):
 * masked keys get probability 0, each row's maximum and sum are updated and its
 * accumulator rescaled. */
static void softmax_tile(const job_t *job, scratch_t *w, const where_t *at, int64_t j0, int64_t nk) {
  const gp__attn_params_t *p = &job->p;
  for (int64_t r = 0; r < at->rows; r++) {
    float *s = w->s + r * CPU_LDT;
    int64_t rlo, rhi;
    gp__attn_key_range(at->i0 + r, at->seq.sq, at->seq.sk, p->window_left, p->window_right, &rlo, &rhi);
    const int64_t c0 = rlo > j0 ? rlo - j0 : 0, c1 = rhi - j0 < nk - 1 ? rhi - j0 : nk - 1;
    if (c0 > c1) { /* no key of this tile */
      memset(s, 0, (size_t)nk * sizeof(float));
      continue;
    }
    memset(s, 0, (size_t)c0 * sizeof(float));
    memset(s + c1 + 1, 0, (size_t)(nk - 1 - c1) * sizeof(float));
    float mx = gp__cpu_attn_max_scaled(job->simd, s + c0, c1 - c0 + 1, job->scale2);
    mx = mx > w->m[r] ? mx : w->m[r];
    const float corr = exp2f(w->m[r] - mx); /* 2^-inf = 0 for the first tile */
    const float sum = gp__cpu_attn_exp2_sum(job->simd, s + c0, c1 - c0 + 1, job->scale2, mx);
    if (corr != 1.0f) gp__cpu_attn_scale_row(w->acc + r * w->dv_pad, corr, w->dv_pad);
    w->l[r] = w->l[r] * corr + sum;
    w->m[r] = mx;
  }
}

/* o = acc / l and lse = m + log(l); a row that saw no key writes zeros and lse = -inf. */
static void store_rows(const job_t *job, scratch_t *w, const where_t *at) {
  const gp__attn_params_t *p = &job->p;
  for (int64_t r = 0; r < at->rows; r++) {
    const int64_t i = at->i0 + r, q_row = at->seq.q0 + i;
    const int64_t o_off = at->b * p->o_bs + q_row * p->o_ss + at->h * p->o_hs;
    const bool empty = w->l[r] == 0.0f;
    gp__cpu_attn_store(job->simd, p->o, o_off, p->dtype, w->acc + r * w->dv_pad, empty ? 0.0f : 1.0f / w->l[r],
                           p->head_dim_v);
    if (p->lse) {
      const float v = empty ? -INFINITY : (float)(((double)w->m[r] + log2((double)w->l[r])) * M_LN2);
      if (p->cu_q)
        p->lse[at->h * job->total_q + q_row] = v;
      else
        p->lse[(at->b * p->heads_q + at->h) * p->seqlen_q + i] = v;
    }
  }
}

/* One work item: query rows [i0, i0 + rows) of head h of sequence b. S = Q K^T and
 * acc += P V run as GEMMs over the key tiles (at multiples of CPU_BK, as the store keeps
 * them) that hold a key some row sees. */
static void run_item(const job_t *job, scratch_t *w, int64_t item) {
  const gp__attn_params_t *p = &job->p;
  where_t at;
  if (!locate(job, item, &at)) return;
  const int64_t d = p->head_dim, dvp = w->dv_pad, q_row = at.seq.q0 + at.i0;
  int64_t lo, hi, lo_last, hi_last;
  gp__attn_key_range(at.i0, at.seq.sq, at.seq.sk, p->window_left, p->window_right, &lo, &hi);
  gp__attn_key_range(at.i0 + at.rows - 1, at.seq.sq, at.seq.sk, p->window_left, p->window_right, &lo_last,
                     &hi_last);
  hi = hi_last; /* both ends grow with the row */

  /* f32 too: the block, read once per key tile by the GEMM, then lies in d * CPU_BQ
   * contiguous floats, not rows a tensor's row stride apart (a page every row or two) */
  for (int64_t r = 0; r < at.rows; r++)
    gp__cpu_attn_load(job->simd, w->q + r * d, p->q, at.b * p->q_bs + (q_row + r) * p->q_ss + at.h * p->q_hs,
                      p->dtype, d);
  for (int64_t r = 0; r < at.rows; r++) w->m[r] = -INFINITY, w->l[r] = 0.0f;
  memset(w->acc, 0, (size_t)(at.rows * dvp) * sizeof(float));
  for (int64_t j0 = lo - lo % CPU_BK; j0 <= hi; j0 += CPU_BK) {
    const int64_t nk = hi - j0 + 1 < CPU_BK ? hi - j0 + 1 : CPU_BK;
    const int64_t col = kv_tile(job, w, &at, j0, nk);
    gp__cpu_attn_gemm(job->simd, at.rows, pad8(nk), d, w->q, d, kt_at(job, w, col), CPU_LDT, w->s, CPU_LDT, false);
    softmax_tile(job, w, &at, j0, nk);
    gp__cpu_attn_gemm(job->simd, at.rows, dvp, nk, w->s, CPU_LDT, w->v + col * w->ldv, w->ldv, w->acc, dvp, true);
  }
  store_rows(job, w, &at);
}

static void *worker(void *arg) {
  job_t *job = (job_t *)arg;
  const int64_t d = job->p.head_dim, dvp = pad8(job->p.head_dim_v), cap = job->cap;
  scratch_t w;
  const int64_t ldv = dvp + 8;
  /* every part a multiple of 16 floats, so each starts 64-byte aligned */
  const int64_t nq = (CPU_BQ * d + 15) & ~(int64_t)15, nkr = CPU_BK * d;
  const int64_t nkt = (cap / CPU_BK * d * CPU_LDT + 15) & ~(int64_t)15;
  const int64_t nv = (cap * ldv + 15) & ~(int64_t)15, nacc = CPU_BQ * dvp, ns = CPU_BQ * CPU_LDT;
  const size_t floats = (size_t)(nq + nkr + nkt + nv + nacc + ns), flags = (size_t)(cap / CPU_BK);
  void *buf = NULL;
  if (posix_memalign(&buf, 64, floats * sizeof(float) + flags) != 0) return NULL;
  /* zeroed: the padding columns of the K and V tiles stay zero */
  memset(buf, 0, floats * sizeof(float) + flags);
  w.q = (float *)buf;
  w.kr = w.q + nq;
  w.kt = w.kr + nkr;
  w.v = w.kt + nkt;
  w.acc = w.v + nv;
  w.s = w.acc + nacc;
  w.done = (unsigned char *)(w.s + ns);
  w.b = w.hk = -1;
  w.dv_pad = dvp, w.ldv = ldv;
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

/* Bytes each thread's K/V store may take (gp__cpu_attn_store_set; < 0: the default). */
static atomic_llong g_store_bytes = -1;

void gp__cpu_attn_store_set(int64_t bytes) { atomic_store(&g_store_bytes, bytes < 0 ? -1 : bytes); }

/* The keys each thread's K/V store holds: the longest sequence's keys (rounded up to
 * CPU_BK) where that fits the budget, else as many tiles as it allows, at least one. */
static int64_t store_keys(const gp__attn_params_t *p) {
  const int64_t set = atomic_load(&g_store_bytes);
  const int64_t budget = set >= 0 ? set : CPU_STORE_BYTES;
  const int64_t per_tile = (int64_t)sizeof(float) * (p->head_dim * CPU_LDT + CPU_BK * (pad8(p->head_dim_v) + 8));
  const int64_t want = (p->seqlen_k + CPU_BK - 1) / CPU_BK * CPU_BK;
  int64_t fit = budget / per_tile * CPU_BK;
  if (fit < CPU_BK) fit = CPU_BK;
  return want < fit ? (want > 0 ? want : CPU_BK) : fit;
}

gp_status_t gp__cpu_attention_fwd(gp_stream_t stream, const gp__attn_params_t *p, bool simd,
                                  char *what, size_t what_len) {
  job_t *job = (job_t *)malloc(sizeof(*job));
  if (job == NULL) return ATTN_ERR(GP_ERROR_OUT_OF_MEMORY, "no memory for the job");
  job->p = *p;
  job->tiles = (p->seqlen_q + CPU_BQ - 1) / CPU_BQ;
  job->items = job->tiles * p->heads_q * p->batch;
  job->total_q = 0;
  job->simd = simd;
  job->direct = p->dtype == GP_F32;
  job->scale2 = (float)((double)p->scale * M_LOG2E);
  job->cap = store_keys(p);
  atomic_init(&job->next, 0);
  snprintf(what, what_len, "cpu tiled online softmax, %s (%d x %d tiles, %lld items, up to %d threads, K/V %s)",
           simd ? "avx2+fma" : "scalar", CPU_BQ, CPU_BK, (long long)job->items,
           gp__cpu_attn_threads(job->items), job->cap >= p->seqlen_k ? "converted once per head" : "per tile");
  return gp__be_enqueue_host_work(stream, run_job, job, true);
}
