/*
 * attention_bwd_cpu.c - attention backward on the CPU backend: FlashAttention-2's
 * Algorithm 2 (Dao 2023) on the host, in the same three steps as the portable kernels
 * (kernels/portable/attention_bwd_portable.cu) and with the same workspace (gp__attn_bwd_params_t).
 *
 *   pre   items (sequence, query head, 32 query rows): D = rowsum(dO * O) in f32, and
 *         the rows of every dq accumulator slice in use set to zero.
 *   main  items (sequence, query head, split): split s takes key blocks s, s + nsplit, ...
 *         of CPU_BK keys. For a key block, K (rows and transposed) and V (transposed) are
 *         converted to f32 once; the query rows that see one of its keys are converted in
 *         groups of up to CPU_RB, and P is recomputed from the forward's lse (never
 *         stored): S = scale Q K^T, P = exp(S - lse), dP = dO V^T, dS = P (dP - D), then
 *         dV += P^T dO, dK += dS^T Q (per-key f32 accumulators of the block) and
 *         dq = dS K (added to each row's accumulator slice once per key block): five
 *         GEMM tiles (attention_tile_cpu.c; the TN form reads P and dS down their
 *         columns for two of them) and one vectorised exp pass per row. At the end of the block dK (scaled) and dV are
 *         stored, or, with GQA/MQA, kept in f32 per query head in the workspace.
 *   post  items (sequence, query head, 32 rows): dq = scale * (sum of the slices, in
 *         order); with GQA/MQA, items (sequence, key/value head, 32 key rows):
 *         dk, dv = sums over the group's query heads, in head order.
 * Deterministic mode gives split s its own dq slice, so every sum has a fixed order and
 * the result depends neither on the thread count nor on scheduling. Otherwise the splits
 * of one (sequence, head) share one slice through atomic additions, as the GPU kernels
 * do. The split count comes from the shape alone (gp__attn_bwd_splits) in deterministic
 * mode; otherwise from the thread count (about two items per thread), so that few
 * threads mean few atomic additions.
 *
 * The call is enqueued with gp__be_enqueue_host_work, so it runs in stream order on the
 * stream's worker, which runs each step over up to GP_CPU_THREADS threads (default: the
 * online cores) taking items from a shared counter. Host memory per call: the job
 * record and per-thread tile buffers, O((CPU_BK + CPU_RB) * (head_dim + head_dim_v +
 * CPU_BK)) floats each;
 * everything of the problem's size is in the caller's workspace.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_cpu.h"
#include "attention_impl.h"
#include "internal.h"

#define CPU_BK 128  /* keys per key block */
#define CPU_ROWS 32 /* rows per item of the pre and post steps */
#define CPU_RB 64   /* query rows per group in the main step */
/* Leading dimension of the tiles with CPU_BK columns: eight floats more, so the rows a
 * GEMM walks down do not all fall in the same cache sets. */
#define CPU_LDT (CPU_BK + 8)

#define BWD_ERR(status, ...) gp__error((status), "gp_attention_bwd", __VA_ARGS__)

enum step { STEP_PRE, STEP_MAIN, STEP_POST };

typedef struct bwd_job {
  gp__attn_bwd_params_t p; /* nslices and nsplit as this implementation uses them */
  int atomic_dq;           /* splits share slice 0 */
  bool simd;               /* the AVX2 tile build (gp__cpu_attn_simd) */
  bool direct;             /* f32: the GEMMs read q and dO in place */
  float scale2;            /* the softmax scale times log2(e): P = 2^(scale2 S - lse log2(e)) */
  int64_t qchunks, kchunks; /* items per (sequence, head) of the pre and post steps */
  int64_t total_q;         /* varlen: rows of the packed q (lse's row length) */
  int step;
  int64_t items;
  atomic_llong next;
} bwd_job_t;

/* One sequence: lengths, first row in the tensors, first row in the workspace (the
 * rule of kernels/common/attention_seq.h, checked for every sequence by run_job before
 * any step reads a tensor). */
typedef gp__attn_seq_t seq_t;

static seq_t sequence(const gp__attn_bwd_params_t *p, int64_t b) {
  seq_t s;
  (void)gp__attn_sequence(&p->f, b, &s);
  return s;
}

static int64_t pad8(int64_t n) { return (n + 7) & ~(int64_t)7; }

static void atomic_add_f32(float *p, float v) {
  float old, nv;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  do {
    nv = old + v;
  } while (!__atomic_compare_exchange(p, &old, &nv, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

/* ---- pre: D and the zeroed dq accumulator ------------------------------------------------ */

static void pre_item(const bwd_job_t *job, int64_t item) {
  const gp__attn_bwd_params_t *p = &job->p;
  const int64_t hq = p->f.heads_q, d = p->f.head_dim, dv = p->f.head_dim_v;
  const int64_t chunk = item % job->qchunks, h = (item / job->qchunks) % hq;
  const int64_t b = item / job->qchunks / hq;
  const seq_t s = sequence(p, b);
  float o[GP__ATTN_MAX_DIM], g[GP__ATTN_MAX_DIM];
  for (int64_t i = chunk * CPU_ROWS; i < s.sq && i < (chunk + 1) * CPU_ROWS; i++) {
    int64_t off = b * p->f.o_bs + (s.q0 + i) * p->f.o_ss + h * p->f.o_hs;
    gp__cpu_attn_load_row(o, 1, p->f.o, off, p->f.dtype, dv);
    gp__cpu_attn_load_row(g, 1, p->d_o, off, p->f.dtype, dv);
    float acc = 0.0f;
    for (int64_t e = 0; e < dv; e++) acc += g[e] * o[e];
    p->ws_d[(s.wq + i) * hq + h] = acc;
    for (int64_t sl = 0; sl < p->nslices; sl++)
      memset(p->ws_dq + ((sl * p->rows_q + s.wq + i) * hq + h) * d, 0, (size_t)d * sizeof(float));
  }
}

/* ---- main: the loop over key blocks -------------------------------------------------------- */

/* Per-thread tile buffers (f32), allocated once per call. Row lengths are padded to
 * multiples of 8 (the padding of kr stays zero: it is never written), and the tiles a
 * GEMM walks down have CPU_LDT-long rows so their rows spread over the cache sets. */
typedef struct tiles {
  float *kr;  /* [CPU_BK][dp] K rows, for dq */
  float *kt;  /* [d][CPU_LDT] K transposed, for the scores */
  float *vt;  /* [dv][CPU_LDT] V transposed, for dP */
  float *dk;  /* [CPU_BK][dp] */
  float *dv;  /* [CPU_BK][dvp] (first V's rows, before their transposition) */
  float *q;   /* [CPU_RB][dp] the group's query rows */
  float *g;   /* [CPU_RB][dvp] their rows of dO */
  float *dq;  /* [CPU_RB][dp] */
  float *s;   /* [CPU_RB][CPU_LDT] scores, then P */
  float *dp;  /* [CPU_RB][CPU_LDT] dP, then dS */
  int64_t dpad, dvpad;
} tiles_t;

static size_t tiles_floats(int64_t d, int64_t dv) {
  int64_t dp = pad8(d), dvp = pad8(dv);
  return (size_t)(2 * CPU_BK * dp + (d + dv) * CPU_LDT + CPU_BK * dvp + CPU_RB * (2 * dp + dvp) +
                  2 * CPU_RB * CPU_LDT);
}

static void tiles_init(tiles_t *t, float *buf, int64_t d, int64_t dv) {
  t->dpad = pad8(d), t->dvpad = pad8(dv);
  t->kr = buf;
  t->kt = t->kr + CPU_BK * t->dpad;
  t->vt = t->kt + d * CPU_LDT;
  t->dk = t->vt + dv * CPU_LDT;
  t->dv = t->dk + CPU_BK * t->dpad;
  t->q = t->dv + CPU_BK * t->dvpad;
  t->g = t->q + CPU_RB * t->dpad;
  t->dq = t->g + CPU_RB * t->dvpad;
  t->s = t->dq + CPU_RB * t->dpad;
  t->dp = t->s + CPU_RB * CPU_LDT;
}

/* Query row i as row r of the group: its keys in the block at j0 (nk keys) as columns
 * [*c0, *c1] and its lse; q and dO converted (unless read in place). Returns false, with
 * the converted rows zeroed, when it contributes nothing (no key in the block, or no key
 * at all). */
static bool group_row(const bwd_job_t *job, tiles_t *t, const seq_t *s, int64_t b, int64_t h,
                      int64_t r, int64_t i, int64_t j0, int64_t nk, int64_t *c0, int64_t *c1,
                      float *lse) {
  const gp__attn_params_t *f = &job->p.f;
  const int64_t d = f->head_dim, dv = f->head_dim_v;
  float *q = t->q + r * t->dpad, *g = t->g + r * t->dvpad;
  int64_t rlo, rhi;
  gp__attn_key_range(i, s->sq, s->sk, f->window_left, f->window_right, &rlo, &rhi);
  *lse = f->cu_q ? f->lse[h * job->total_q + s->q0 + i] : f->lse[(b * f->heads_q + h) * f->seqlen_q + i];
  *c0 = rlo > j0 ? rlo - j0 : 0, *c1 = rhi - j0 < nk - 1 ? rhi - j0 : nk - 1;
  const bool live = *c0 <= *c1 && *lse != -INFINITY;
  if (job->direct) return live;
  if (!live) {
    memset(q, 0, (size_t)d * sizeof(float));
    memset(g, 0, (size_t)dv * sizeof(float));
    return false;
  }
  gp__cpu_attn_load(job->simd, q, f->q, b * f->q_bs + (s->q0 + i) * f->q_ss + h * f->q_hs, f->dtype, d);
  gp__cpu_attn_load(job->simd, g, job->p.d_o, b * f->o_bs + (s->q0 + i) * f->o_ss + h * f->o_hs, f->dtype,
                    dv);
  return true;
}

/* P = exp(scale S - lse) and dS = P (dP - D) for row r (columns [c0, c1]; zero elsewhere,
 * and over the whole row when it is not live). */
static void p_ds_row(const bwd_job_t *job, tiles_t *t, int64_t r, bool live, int64_t c0, int64_t c1,
                     int64_t nk, float lse, float drow) {
  float *p = t->s + r * CPU_LDT, *ds = t->dp + r * CPU_LDT;
  if (!live) {
    memset(p, 0, (size_t)nk * sizeof(float));
    memset(ds, 0, (size_t)nk * sizeof(float));
    return;
  }
  for (int64_t c = 0; c < c0; c++) p[c] = 0.0f, ds[c] = 0.0f;
  for (int64_t c = c1 + 1; c < nk; c++) p[c] = 0.0f, ds[c] = 0.0f;
  (void)gp__cpu_attn_exp2_sum(job->simd, p + c0, c1 - c0 + 1, job->scale2, (float)((double)lse * M_LOG2E));
  gp__cpu_attn_ds_row(job->simd, ds + c0, p + c0, c1 - c0 + 1, drow);
}

/* The contributions of query rows i0 .. i0 + rows - 1 (of head h) to the key block at j0:
 * S = Q K^T and dP = dO V^T, P and dS per row, then dV += P^T dO, dK += dS^T Q and
 * dq = dS K, all GEMM tiles; dq is added to each row's accumulator (row i at
 * dq_acc + i * heads_q * head_dim). */
static void main_rows(const bwd_job_t *job, tiles_t *t, const seq_t *s, int64_t b, int64_t h,
                      int64_t i0, int64_t rows, int64_t j0, int64_t nk, float *dq_acc) {
  const gp__attn_params_t *f = &job->p.f;
  const int64_t d = f->head_dim, dp = t->dpad, dvp = t->dvpad, nkp = pad8(nk);
  const bool simd = job->simd;
  int64_t c0[CPU_RB], c1[CPU_RB];
  float lse[CPU_RB];
  bool live[CPU_RB], any = false;
  for (int64_t r = 0; r < rows; r++) {
    live[r] = group_row(job, t, s, b, h, r, i0 + r, j0, nk, &c0[r], &c1[r], &lse[r]);
    any = any || live[r];
  }
  if (!any) return;
  /* Q and dO: the converted rows, or (f32) the tensors' own, read exactly d and dv wide */
  const float *q = t->q, *g = t->g;
  int64_t ldq = dp, ldg = dvp, nq = dp, ng = dvp;
  if (job->direct) {
    q = (const float *)f->q + b * f->q_bs + (s->q0 + i0) * f->q_ss + h * f->q_hs;
    g = (const float *)job->p.d_o + b * f->o_bs + (s->q0 + i0) * f->o_ss + h * f->o_hs;
    ldq = f->q_ss, ldg = f->o_ss, nq = d, ng = f->head_dim_v;
  }
  gp__cpu_attn_gemm(simd, rows, nkp, d, q, ldq, t->kt, CPU_LDT, t->s, CPU_LDT, false);
  gp__cpu_attn_gemm(simd, rows, nkp, f->head_dim_v, g, ldg, t->vt, CPU_LDT, t->dp, CPU_LDT, false);
  for (int64_t r = 0; r < rows; r++)
    p_ds_row(job, t, r, live[r], c0[r], c1[r], nk, lse[r],
             live[r] ? job->p.ws_d[(s->wq + i0 + r) * f->heads_q + h] : 0.0f);
  gp__cpu_attn_gemm_tn(simd, nk, ng, rows, t->s, CPU_LDT, g, ldg, t->dv, dvp, true);
  gp__cpu_attn_gemm_tn(simd, nk, nq, rows, t->dp, CPU_LDT, q, ldq, t->dk, dp, true);
  if (!job->atomic_dq) { /* the rows that see no key of the block add dS = 0 */
    gp__cpu_attn_gemm(simd, rows, d, nk, t->dp, CPU_LDT, t->kr, dp, dq_acc + i0 * f->heads_q * d, f->heads_q * d,
                      true);
    return;
  }
  gp__cpu_attn_gemm(simd, rows, dp, nk, t->dp, CPU_LDT, t->kr, dp, t->dq, dp, false);
  for (int64_t r = 0; r < rows; r++) {
    if (!live[r]) continue;
    const float *y = t->dq + r * dp;
    float *row = dq_acc + (i0 + r) * f->heads_q * d;
    for (int64_t e = 0; e < d; e++) atomic_add_f32(row + e, y[e]);
  }
}

/* Converts the key block [j0, j0 + nk) to f32: K rows and K transposed, V transposed
 * (through the dV buffer, zeroed after). */
static void load_block(const bwd_job_t *job, tiles_t *t, const seq_t *s, int64_t b, int64_t hk, int64_t j0,
                       int64_t nk) {
  const gp__attn_params_t *f = &job->p.f;
  const int64_t d = f->head_dim, dv = f->head_dim_v;
  for (int64_t c = 0; c < nk; c++) {
    gp__cpu_attn_load(job->simd, t->kr + c * t->dpad, f->k, b * f->k_bs + (s->k0 + j0 + c) * f->k_ss + hk * f->k_hs,
                      f->dtype, d);
    gp__cpu_attn_load(job->simd, t->dv + c * t->dvpad, f->v,
                      b * f->v_bs + (s->k0 + j0 + c) * f->v_ss + hk * f->v_hs, f->dtype, dv);
  }
  gp__cpu_attn_transpose(job->simd, nk, d, t->kr, t->dpad, t->kt, CPU_LDT);
  gp__cpu_attn_transpose(job->simd, nk, dv, t->dv, t->dvpad, t->vt, CPU_LDT);
  memset(t->dk, 0, (size_t)(CPU_BK * t->dpad) * sizeof(float));
  memset(t->dv, 0, (size_t)(CPU_BK * t->dvpad) * sizeof(float));
}

static void main_item(const bwd_job_t *job, tiles_t *t, int64_t item) {
  const gp__attn_bwd_params_t *p = &job->p;
  const gp__attn_params_t *f = &p->f;
  const int64_t hq = f->heads_q, bh = item % (f->batch * hq), split = item / (f->batch * hq);
  const int64_t h = bh % hq, b = bh / hq, hk = h / (hq / f->heads_kv);
  const int64_t d = f->head_dim, dv = f->head_dim_v;
  const seq_t s = sequence(p, b);
  const int64_t nkb = (s.sk + CPU_BK - 1) / CPU_BK;
  float *dq_acc = p->ws_dq + ((job->atomic_dq ? 0 : split) * p->rows_q + s.wq) * hq * d + h * d;

  for (int64_t kb = split; kb < nkb; kb += p->nsplit) {
    const int64_t j0 = kb * CPU_BK, nk = s.sk - j0 < CPU_BK ? s.sk - j0 : CPU_BK;
    load_block(job, t, &s, b, hk, j0, nk);
    int64_t ilo, ihi;
    gp__attn_query_range(j0, j0 + nk - 1, s.sq, s.sk, f->window_left, f->window_right, &ilo, &ihi);
    for (int64_t i = ilo; i <= ihi; i += CPU_RB)
      main_rows(job, t, &s, b, h, i, ihi - i + 1 < CPU_RB ? ihi - i + 1 : CPU_RB, j0, nk, dq_acc);

    for (int64_t c = 0; c < nk; c++) {
      const int64_t row = s.wk + j0 + c;
      if (p->ws_dk) { /* GQA/MQA: summed over the group in the post step */
        memcpy(p->ws_dk + (row * hq + h) * d, t->dk + c * t->dpad, (size_t)d * sizeof(float));
        memcpy(p->ws_dv + (row * hq + h) * dv, t->dv + c * t->dvpad, (size_t)dv * sizeof(float));
      } else {
        gp__cpu_attn_store(job->simd, p->dk, b * f->k_bs + (s.k0 + j0 + c) * f->k_ss + hk * f->k_hs,
                               f->dtype, t->dk + c * t->dpad, f->scale, d);
        gp__cpu_attn_store(job->simd, p->dv, b * f->v_bs + (s.k0 + j0 + c) * f->v_ss + hk * f->v_hs,
                               f->dtype, t->dv + c * t->dvpad, 1.0f, dv);
      }
    }
  }
}

/* ---- post: dq from its slices, dk and dv summed over the group ---------------------------- */

static void post_dq(const bwd_job_t *job, int64_t item) {
  const gp__attn_bwd_params_t *p = &job->p;
  const int64_t hq = p->f.heads_q, d = p->f.head_dim;
  const int64_t chunk = item % job->qchunks, h = (item / job->qchunks) % hq;
  const int64_t b = item / job->qchunks / hq;
  const seq_t s = sequence(p, b);
  float x[GP__ATTN_MAX_DIM];
  for (int64_t i = chunk * CPU_ROWS; i < s.sq && i < (chunk + 1) * CPU_ROWS; i++) {
    const float *acc = p->ws_dq + ((s.wq + i) * hq + h) * d;
    for (int64_t e = 0; e < d; e++) x[e] = 0.0f;
    for (int64_t sl = 0; sl < p->nslices; sl++)
      for (int64_t e = 0; e < d; e++) x[e] += acc[sl * p->rows_q * hq * d + e];
    gp__cpu_attn_store(job->simd, p->dq, b * p->f.q_bs + (s.q0 + i) * p->f.q_ss + h * p->f.q_hs,
                           p->f.dtype, x, p->f.scale, d);
  }
}

static void post_dkv(const bwd_job_t *job, int64_t item) {
  const gp__attn_bwd_params_t *p = &job->p;
  const int64_t hq = p->f.heads_q, hkv = p->f.heads_kv, group = hq / hkv;
  const int64_t d = p->f.head_dim, dv = p->f.head_dim_v;
  const int64_t chunk = item % job->kchunks, hk = (item / job->kchunks) % hkv;
  const int64_t b = item / job->kchunks / hkv;
  const seq_t s = sequence(p, b);
  float x[GP__ATTN_MAX_DIM];
  for (int64_t j = chunk * CPU_ROWS; j < s.sk && j < (chunk + 1) * CPU_ROWS; j++) {
    const int64_t row = s.wk + j;
    for (int64_t e = 0; e < d; e++) x[e] = 0.0f;
    for (int64_t g = 0; g < group; g++)
      for (int64_t e = 0; e < d; e++) x[e] += p->ws_dk[(row * hq + hk * group + g) * d + e];
    gp__cpu_attn_store(job->simd, p->dk, b * p->f.k_bs + (s.k0 + j) * p->f.k_ss + hk * p->f.k_hs,
                           p->f.dtype, x, p->f.scale, d);
    for (int64_t e = 0; e < dv; e++) x[e] = 0.0f;
    for (int64_t g = 0; g < group; g++)
      for (int64_t e = 0; e < dv; e++) x[e] += p->ws_dv[(row * hq + hk * group + g) * dv + e];
    gp__cpu_attn_store(job->simd, p->dv, b * p->f.v_bs + (s.k0 + j) * p->f.v_ss + hk * p->f.v_hs,
                           p->f.dtype, x, 1.0f, dv);
  }
}

/* ---- the steps over threads ------------------------------------------------------------ */

static void *worker(void *arg) {
  bwd_job_t *job = (bwd_job_t *)arg;
  const gp__attn_params_t *f = &job->p.f;
  const int64_t nq_items = job->qchunks * f->heads_q * f->batch;
  float *buf = NULL;
  tiles_t t;
  if (job->step == STEP_MAIN) {
    /* 64-byte aligned (every tile's size is a multiple of 8 floats: each starts 32-byte
     * aligned, so no vector load of a row start splits a cache line), zeroed */
    const size_t bytes = tiles_floats(f->head_dim, f->head_dim_v) * sizeof(float);
    if (posix_memalign((void **)&buf, 64, bytes) != 0) return NULL; /* takes no item; the caller retries or reports */
    memset(buf, 0, bytes);
    tiles_init(&t, buf, f->head_dim, f->head_dim_v);
  }
  for (;;) {
    int64_t item = atomic_fetch_add(&job->next, 1);
    if (item >= job->items) break;
    if (job->step == STEP_PRE)
      pre_item(job, item);
    else if (job->step == STEP_MAIN)
      main_item(job, &t, item);
    else if (item < nq_items)
      post_dq(job, item);
    else
      post_dkv(job, item - nq_items);
  }
  free(buf);
  return NULL;
}

static gp_status_t run_step(bwd_job_t *job, int step, int64_t items) {
  job->step = step;
  job->items = items;
  atomic_store(&job->next, 0);
  if (!gp__cpu_attn_parallel(worker, job, items, &job->next))
    return BWD_ERR(GP_ERROR_OUT_OF_MEMORY, "no memory for the tile buffers");
  return GP_SUCCESS;
}

static gp_status_t run_job(void *user) {
  bwd_job_t *job = (bwd_job_t *)user;
  const gp__attn_params_t *f = &job->p.f;
  if (f->cu_q) {
    GP__TRY(gp__cpu_attn_check_varlen(f, "gp_attention_bwd"));
    job->total_q = f->cu_q[f->batch];
  }
  const int64_t bh = f->batch * f->heads_q, nq_items = job->qchunks * bh;
  GP__TRY(run_step(job, STEP_PRE, nq_items));
  GP__TRY(run_step(job, STEP_MAIN, job->p.nsplit * bh));
  return run_step(job, STEP_POST, nq_items + (job->p.ws_dk ? job->kchunks * f->batch * f->heads_kv : 0));
}

gp_status_t gp__cpu_attention_bwd(gp_stream_t stream, const gp__attn_bwd_params_t *p, bool simd,
                                  char *what, size_t what_len) {
  bwd_job_t *job = (bwd_job_t *)malloc(sizeof(*job));
  if (job == NULL) return BWD_ERR(GP_ERROR_OUT_OF_MEMORY, "no memory for the job");
  const gp__attn_params_t *f = &p->f;
  const int64_t nkb = (f->seqlen_k + CPU_BK - 1) / CPU_BK;

  job->p = *p;
  if (p->deterministic) { /* one slice per split (the workspace has p->nslices) */
    job->p.nsplit = p->nslices < nkb ? p->nslices : nkb;
    job->p.nslices = job->p.nsplit;
    job->atomic_dq = 0;
  } else {
    /* Splits only for parallelism: about two items per thread. Each split past the first
     * makes every dq addition atomic, so a machine with few threads takes few splits
     * (atomic sums have no fixed order anyway, so the thread count may decide here). */
    const int64_t bh = f->batch * f->heads_q, want = 2 * (int64_t)gp__cpu_attn_threads(INT32_MAX);
    const int64_t splits = (want + bh - 1) / bh;
    job->p.nsplit = splits < nkb ? splits : nkb;
    job->p.nslices = 1;
    job->atomic_dq = job->p.nsplit > 1;
  }
  job->qchunks = (f->seqlen_q + CPU_ROWS - 1) / CPU_ROWS;
  job->kchunks = (f->seqlen_k + CPU_ROWS - 1) / CPU_ROWS;
  job->total_q = 0;
  job->simd = simd;
  job->direct = f->dtype == GP_F32;
  job->scale2 = (float)((double)f->scale * M_LOG2E);
  job->step = STEP_PRE;
  job->items = 0;
  atomic_init(&job->next, 0);
  snprintf(what, what_len,
           "cpu tiled, %s (%d-key blocks, %lld split%s x %lld heads x %lld sequences, dq %s, up to %d threads)",
           simd ? "avx2+fma" : "scalar", CPU_BK, (long long)job->p.nsplit, job->p.nsplit == 1 ? "" : "s", (long long)f->heads_q,
           (long long)f->batch,
           job->atomic_dq ? "atomic" : job->p.nslices > 1 ? "in per-split slices" : "in one slice",
           gp__cpu_attn_threads(job->p.nsplit * f->batch * f->heads_q));
  return gp__be_enqueue_host_work(stream, run_job, job, true);
}
