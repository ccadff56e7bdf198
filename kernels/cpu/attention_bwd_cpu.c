/*
 * attention_bwd_cpu.c - attention backward on the CPU backend: FlashAttention-2's
 * Algorithm 2 (Dao 2023) on the host, in the same three steps as the portable kernels
 * (kernels/portable/attention_bwd_portable.cu) and with the same workspace (gp__attn_bwd_params_t).
 *
 *   pre   items (sequence, query head, 32 query rows): D = rowsum(dO * O) in f32, and
 *         the rows of every dq accumulator slice in use set to zero.
 *   main  items (sequence, query head, split): split s takes key blocks s, s + nsplit, ...
 *         of CPU_BK keys. For a key block, K (also transposed) and V (transposed) are
 *         converted to f32 once; the query rows that see one of its keys are converted in
 *         groups of CPU_RB, and P is recomputed from the forward's lse (never stored):
 *         s_j = scale q.k_j, P_j = exp(s_j - lse), dP_j = dO.v_j, dS_j = P_j (dP_j - D)
 *         (4 x 8 register tiles), then dV_j += sum_r P_rj dO_r, dK_j += sum_r dS_rj q_r
 *         (per-key f32 accumulators of the block, four rows per pass) and
 *         dq_r += sum_j dS_rj k_j (one f32 row per query row, added to its accumulator
 *         slice once per key block). At the end of the block dK (scaled) and dV are
 *         stored, or, with GQA/MQA, kept in f32 per query head in the workspace.
 *   post  items (sequence, query head, 32 rows): dq = scale * (sum of the slices, in
 *         order); with GQA/MQA, items (sequence, key/value head, 32 key rows):
 *         dk, dv = sums over the group's query heads, in head order.
 * Deterministic mode gives split s its own dq slice, so every sum has a fixed order and
 * the result depends neither on the thread count nor on scheduling. Otherwise the splits
 * of one (sequence, head) share one slice through atomic additions, as the GPU kernels
 * do. The split count comes from the shape alone (gp__attn_bwd_splits).
 *
 * The call is enqueued with gp__be_enqueue_host_work, so it runs in stream order on the
 * stream's worker, which runs each step over up to GP_CPU_THREADS threads (default: the
 * online cores) taking items from a shared counter. Host memory per call: the job
 * record and per-thread tile buffers, O(CPU_BK * (head_dim + head_dim_v)) floats each;
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

#define CPU_BK 64   /* keys per key block */
#define CPU_ROWS 32 /* rows per item of the pre and post steps */
#define CPU_RB 4    /* query rows per group in the main step (dots4 and axpy4x2 take four) */

#define BWD_ERR(status, ...) gp__error((status), "gp_attention_bwd", __VA_ARGS__)

enum step { STEP_PRE, STEP_MAIN, STEP_POST };

typedef struct bwd_job {
  gp__attn_bwd_params_t p; /* nslices and nsplit as this implementation uses them */
  int atomic_dq;           /* splits share slice 0 */
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

/* Per-thread tile buffers (f32). Rows are padded to multiples of 8 and the padding stays
 * zero (the buffer is zeroed once and padding is never written), so the inner loops have
 * fixed trip counts the compiler vectorises. */
typedef struct tiles {
  float *kt;  /* [d][CPU_BK] K transposed, for the scores */
  float *kr;  /* [CPU_BK][dp] K rows, for dq */
  float *vt;  /* [dv][CPU_BK] V transposed, for dP */
  float *dk;  /* [CPU_BK][dp] */
  float *dv;  /* [CPU_BK][dvp] */
  float *q;   /* [CPU_RB][dp] the group's query rows */
  float *g;   /* [CPU_RB][dvp] their rows of dO */
  float *dq;  /* [CPU_RB][dp] */
  float s[CPU_RB][CPU_BK], dp[CPU_RB][CPU_BK], p[CPU_RB][CPU_BK], ds[CPU_RB][CPU_BK];
  int64_t dpad, dvpad;
} tiles_t;

static size_t tiles_floats(int64_t d, int64_t dv) {
  int64_t dp = pad8(d), dvp = pad8(dv);
  return (size_t)(d * CPU_BK + CPU_BK * dp + dv * CPU_BK + CPU_BK * dp + CPU_BK * dvp +
                  CPU_RB * (2 * dp + dvp));
}

static void tiles_init(tiles_t *t, float *buf, int64_t d, int64_t dv) {
  t->dpad = pad8(d), t->dvpad = pad8(dv);
  t->kt = buf;
  t->kr = t->kt + d * CPU_BK;
  t->vt = t->kr + CPU_BK * t->dpad;
  t->dk = t->vt + dv * CPU_BK;
  t->dv = t->dk + CPU_BK * t->dpad;
  t->q = t->dv + CPU_BK * t->dvpad;
  t->dq = t->q + CPU_RB * t->dpad;
  t->g = t->dq + CPU_RB * t->dpad;
}

/* y0[0..n) += sum_r a0[r] x_r and y1[0..n) += sum_r a1[r] x_r over the four rows
 * x_r = x + r * ld (n a multiple of 8): two outputs per pass share the loads of x. */
static void axpy4x2(float *restrict y0, float *restrict y1, const float a0[4], const float a1[4],
                    const float *restrict x, int64_t ld, int64_t n) {
  const float *restrict x0 = x, *restrict x1 = x + ld, *restrict x2 = x + 2 * ld, *restrict x3 = x + 3 * ld;
  const float b0 = a0[0], b1 = a0[1], b2 = a0[2], b3 = a0[3];
  const float c0 = a1[0], c1 = a1[1], c2 = a1[2], c3 = a1[3];
  for (int64_t e = 0; e < n; e += 8)
    for (int u = 0; u < 8; u++) {
      const float v0 = x0[e + u], v1 = x1[e + u], v2 = x2[e + u], v3 = x3[e + u];
      y0[e + u] += b0 * v0 + b1 * v1 + b2 * v2 + b3 * v3;
      y1[e + u] += c0 * v0 + c1 * v1 + c2 * v2 + c3 * v3;
    }
}

/* y[0..n) += sum_{c < 8} a[c] x_c over the rows x_c = x + c * ld (n a multiple of 8). */
static void axpy8(float *restrict y, const float a[8], const float *restrict x, int64_t ld, int64_t n) {
  const float *restrict x0 = x, *restrict x1 = x + ld, *restrict x2 = x + 2 * ld, *restrict x3 = x + 3 * ld;
  const float *restrict x4 = x + 4 * ld, *restrict x5 = x + 5 * ld, *restrict x6 = x + 6 * ld;
  const float *restrict x7 = x + 7 * ld;
  const float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5], a6 = a[6], a7 = a[7];
  for (int64_t e = 0; e < n; e += 8)
    for (int u = 0; u < 8; u++)
      y[e + u] += a0 * x0[e + u] + a1 * x1[e + u] + a2 * x2[e + u] + a3 * x3[e + u] +
                  a4 * x4[e + u] + a5 * x5[e + u] + a6 * x6[e + u] + a7 * x7[e + u];
}

/* out[r][c] = sum_e x_r[e] * mt[e][c] for the CPU_RB rows x_r = x + r * ld and the
 * CPU_BK columns of a transposed tile: 4 x 8 accumulators stay in registers while a
 * row of the tile streams past. */
static void dots4(float out[CPU_RB][CPU_BK], const float *restrict x, int64_t ld,
                  const float *restrict mt, int64_t n) {
  for (int cb = 0; cb < CPU_BK; cb += 8) {
    float acc[CPU_RB][8] = {{0}};
    for (int64_t e = 0; e < n; e++) {
      const float *restrict row = mt + e * CPU_BK + cb;
#pragma GCC unroll 4
      for (int r = 0; r < CPU_RB; r++) {
        const float xr = x[r * ld + e];
#pragma GCC unroll 8
        for (int u = 0; u < 8; u++) acc[r][u] += xr * row[u];
      }
    }
    for (int r = 0; r < CPU_RB; r++)
      for (int u = 0; u < 8; u++) out[r][cb + u] = acc[r][u];
  }
}

/* Query row i as row r of the group: its keys in the block at j0 (nk keys) as columns
 * [*c0, *c1] and its lse; q and dO converted. Returns false, with the rows zeroed, when it
 * contributes nothing (past the sequence, no key in the block, or no key at all). */
static bool group_row(const bwd_job_t *job, tiles_t *t, const seq_t *s, int64_t b, int64_t h,
                      int r, int64_t i, int64_t j0, int64_t nk, int64_t *c0, int64_t *c1,
                      float *lse) {
  const gp__attn_params_t *f = &job->p.f;
  const int64_t d = f->head_dim, dv = f->head_dim_v;
  float *q = t->q + r * t->dpad, *g = t->g + r * t->dvpad;
  int64_t rlo = 0, rhi = -1;
  *lse = -INFINITY;
  if (i < s->sq) {
    gp__attn_key_range(i, s->sq, s->sk, f->window_left, f->window_right, &rlo, &rhi);
    *lse = f->cu_q ? f->lse[h * job->total_q + s->q0 + i] : f->lse[(b * f->heads_q + h) * f->seqlen_q + i];
  }
  *c0 = rlo > j0 ? rlo - j0 : 0, *c1 = rhi - j0 < nk - 1 ? rhi - j0 : nk - 1;
  if (*c0 > *c1 || *lse == -INFINITY) {
    memset(q, 0, (size_t)d * sizeof(float));
    memset(g, 0, (size_t)dv * sizeof(float));
    return false;
  }
  gp__cpu_attn_load_row(q, 1, f->q, b * f->q_bs + (s->q0 + i) * f->q_ss + h * f->q_hs, f->dtype, d);
  gp__cpu_attn_load_row(g, 1, job->p.d_o, b * f->o_bs + (s->q0 + i) * f->o_ss + h * f->o_hs,
                        f->dtype, dv);
  return true;
}

/* The contributions of query rows i0 .. i0 + CPU_RB - 1 (of head h; rows past the
 * sequence contribute nothing) to the key block at j0: dK and dV of the block, and each
 * row's dq accumulator (row i at dq_acc + i * heads_q * head_dim). */
static void main_rows(const bwd_job_t *job, tiles_t *t, const seq_t *s, int64_t b, int64_t h,
                      int64_t i0, int64_t j0, int64_t nk, float *dq_acc) {
  const gp__attn_params_t *f = &job->p.f;
  const int64_t d = f->head_dim, dp = t->dpad, dvp = t->dvpad;
  int64_t c0[CPU_RB], c1[CPU_RB], cmin = CPU_BK, cmax = -1;
  float lse[CPU_RB];
  bool live[CPU_RB];
  for (int r = 0; r < CPU_RB; r++) {
    live[r] = group_row(job, t, s, b, h, r, i0 + r, j0, nk, &c0[r], &c1[r], &lse[r]);
    if (live[r] && c0[r] < cmin) cmin = c0[r];
    if (live[r] && c1[r] > cmax) cmax = c1[r];
  }
  if (cmax < cmin) return;
  dots4(t->s, t->q, dp, t->kt, d);
  dots4(t->dp, t->g, dvp, t->vt, f->head_dim_v);
  for (int r = 0; r < CPU_RB; r++) { /* P and dS, zero where masked */
    memset(t->p[r], 0, sizeof(t->p[r]));
    memset(t->ds[r], 0, sizeof(t->ds[r]));
    if (!live[r]) continue;
    const float drow = job->p.ws_d[(s->wq + i0 + r) * f->heads_q + h];
    for (int64_t c = c0[r]; c <= c1[r]; c++) {
      t->p[r][c] = expf(t->s[r][c] * f->scale - lse[r]);
      t->ds[r][c] = t->p[r][c] * (t->dp[r][c] - drow);
    }
  }
  /* Key columns in pairs and eights from an aligned start: P and dS are zero outside each
   * row's keys, and CPU_BK is a multiple of 8. */
  for (int64_t c = cmin & ~(int64_t)1; c <= cmax; c += 2) {
    const float p0[4] = {t->p[0][c], t->p[1][c], t->p[2][c], t->p[3][c]};
    const float p1[4] = {t->p[0][c + 1], t->p[1][c + 1], t->p[2][c + 1], t->p[3][c + 1]};
    const float d0[4] = {t->ds[0][c], t->ds[1][c], t->ds[2][c], t->ds[3][c]};
    const float d1[4] = {t->ds[0][c + 1], t->ds[1][c + 1], t->ds[2][c + 1], t->ds[3][c + 1]};
    axpy4x2(t->dv + c * dvp, t->dv + (c + 1) * dvp, p0, p1, t->g, dvp, dvp);
    axpy4x2(t->dk + c * dp, t->dk + (c + 1) * dp, d0, d1, t->q, dp, dp);
  }
  for (int r = 0; r < CPU_RB; r++) {
    if (!live[r]) continue;
    float *y = t->dq + r * dp;
    memset(y, 0, (size_t)dp * sizeof(float));
    for (int64_t c = cmin & ~(int64_t)7; c <= cmax; c += 8) axpy8(y, &t->ds[r][c], t->kr + c * dp, dp, dp);
    float *row = dq_acc + (i0 + r) * f->heads_q * d;
    if (job->atomic_dq)
      for (int64_t e = 0; e < d; e++) atomic_add_f32(row + e, y[e]);
    else
      for (int64_t e = 0; e < d; e++) row[e] += y[e];
  }
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
    for (int64_t c = 0; c < nk; c++) {
      int64_t koff = b * f->k_bs + (s.k0 + j0 + c) * f->k_ss + hk * f->k_hs;
      gp__cpu_attn_load_row(t->kt + c, CPU_BK, f->k, koff, f->dtype, d);
      gp__cpu_attn_load_row(t->kr + c * t->dpad, 1, f->k, koff, f->dtype, d);
      gp__cpu_attn_load_row(t->vt + c, CPU_BK, f->v,
                            b * f->v_bs + (s.k0 + j0 + c) * f->v_ss + hk * f->v_hs, f->dtype, dv);
    }
    memset(t->dk, 0, (size_t)(CPU_BK * t->dpad) * sizeof(float));
    memset(t->dv, 0, (size_t)(CPU_BK * t->dvpad) * sizeof(float));
    int64_t ilo, ihi;
    gp__attn_query_range(j0, j0 + nk - 1, s.sq, s.sk, f->window_left, f->window_right, &ilo, &ihi);
    for (int64_t i = ilo; i <= ihi; i += CPU_RB) main_rows(job, t, &s, b, h, i, j0, nk, dq_acc);

    for (int64_t c = 0; c < nk; c++) {
      const int64_t row = s.wk + j0 + c;
      if (p->ws_dk) { /* GQA/MQA: summed over the group in the post step */
        memcpy(p->ws_dk + (row * hq + h) * d, t->dk + c * t->dpad, (size_t)d * sizeof(float));
        memcpy(p->ws_dv + (row * hq + h) * dv, t->dv + c * t->dvpad, (size_t)dv * sizeof(float));
      } else {
        gp__cpu_attn_store_row(p->dk, b * f->k_bs + (s.k0 + j0 + c) * f->k_ss + hk * f->k_hs,
                               f->dtype, t->dk + c * t->dpad, f->scale, d);
        gp__cpu_attn_store_row(p->dv, b * f->v_bs + (s.k0 + j0 + c) * f->v_ss + hk * f->v_hs,
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
    gp__cpu_attn_store_row(p->dq, b * p->f.q_bs + (s.q0 + i) * p->f.q_ss + h * p->f.q_hs,
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
    gp__cpu_attn_store_row(p->dk, b * p->f.k_bs + (s.k0 + j) * p->f.k_ss + hk * p->f.k_hs,
                           p->f.dtype, x, p->f.scale, d);
    for (int64_t e = 0; e < dv; e++) x[e] = 0.0f;
    for (int64_t g = 0; g < group; g++)
      for (int64_t e = 0; e < dv; e++) x[e] += p->ws_dv[(row * hq + hk * group + g) * dv + e];
    gp__cpu_attn_store_row(p->dv, b * p->f.v_bs + (s.k0 + j) * p->f.v_ss + hk * p->f.v_hs,
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
    buf = (float *)calloc(tiles_floats(f->head_dim, f->head_dim_v), sizeof(float));
    if (buf == NULL) return NULL; /* takes no item; the caller retries or reports */
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

gp_status_t gp__cpu_attention_bwd(gp_stream_t stream, const gp__attn_bwd_params_t *p, char *what,
                                  size_t what_len) {
  bwd_job_t *job = (bwd_job_t *)malloc(sizeof(*job));
  if (job == NULL) return BWD_ERR(GP_ERROR_OUT_OF_MEMORY, "no memory for the job");
  const gp__attn_params_t *f = &p->f;
  const int64_t nkb = (f->seqlen_k + CPU_BK - 1) / CPU_BK;
  int64_t splits = gp__attn_bwd_splits(f->batch, f->heads_q, f->seqlen_k);
  job->p = *p;
  if (p->deterministic) { /* one slice per split (the workspace has p->nslices) */
    job->p.nsplit = p->nslices < nkb ? p->nslices : nkb;
    job->p.nslices = job->p.nsplit;
    job->atomic_dq = 0;
  } else {
    job->p.nsplit = splits < nkb ? splits : nkb;
    job->p.nslices = 1;
    job->atomic_dq = job->p.nsplit > 1;
  }
  job->qchunks = (f->seqlen_q + CPU_ROWS - 1) / CPU_ROWS;
  job->kchunks = (f->seqlen_k + CPU_ROWS - 1) / CPU_ROWS;
  job->total_q = 0;
  job->step = STEP_PRE;
  job->items = 0;
  atomic_init(&job->next, 0);
  snprintf(what, what_len,
           "cpu tiled (%d-key blocks, %lld split%s x %lld heads x %lld sequences, dq %s, up to %d threads)",
           CPU_BK, (long long)job->p.nsplit, job->p.nsplit == 1 ? "" : "s", (long long)f->heads_q,
           (long long)f->batch,
           job->atomic_dq ? "atomic" : job->p.nslices > 1 ? "in per-split slices" : "in one slice",
           gp__cpu_attn_threads(job->p.nsplit * f->batch * f->heads_q));
  return gp__be_enqueue_host_work(stream, run_job, job, true);
}
