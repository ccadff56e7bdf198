/*
 * kernels.cu - the dialect kernels of the MiniLM encoder (everything that is not a GEMM
 * or attention). Built for every backend, and on the CPU a second time at warp width 64
 * (the Makefile's W64_FLAGS: descriptors suffixed _w64). Activations are f32 or bf16 (`dt` is a gp_dtype_t value); every
 * kernel computes in f32. Rows are packed tokens: sequence b owns rows cu[b] .. cu[b+1]-1.
 *
 * Decomposition: MINILM_THREADS threads a block (4 warps at width 32, 2 at width 64).
 *   minilm_k_embed         grid (max_len, batch): one block per token slot of the padded
 *                          batch; slots past the sequence's length return at once.
 *   minilm_k_layernorm     one warp per row (blockDim / warp size rows a block), each
 *                          lane owning columns lane, lane + warp size, ... (at most
 *                          MINILM_LN_PER of them).
 *   minilm_k_layernorm_rows  one thread per row (blockDim rows a block): the cpu
 *                          backend's choice (model.c), where warp operations cost fibers.
 *   minilm_k_bias_act      grid-stride over rows x cols.
 *   minilm_k_mean_pool     grid (batch, ceil(hidden / blockDim)): one thread per column.
 *   minilm_k_l2_normalize  grid (batch): one block per embedding.
 */
#include <gpuport/kernel.h>

#include "kernels.h"

GP_DEVICE float ld(const void *p, int dt, int64_t i) {
  return dt == GP_BF16 ? gp_f32_from_bf16(((const gp_bf16_t *)p)[i]) : ((const float *)p)[i];
}

GP_DEVICE void st(void *p, int dt, int64_t i, float v) {
  if (dt == GP_BF16)
    ((gp_bf16_t *)p)[i] = gp_bf16_from_f32(v);
  else
    ((float *)p)[i] = v;
}

/* An element as f32, and an f32 stored rounded to the element's type: the typed row loops. */
GP_DEVICE float lf(float v) { return v; }
GP_DEVICE float lf(gp_bf16_t v) { return gp_f32_from_bf16(v); }
GP_DEVICE void sv(float *p, float v) { *p = v; }
GP_DEVICE void sv(gp_bf16_t *p, float v) { *p = gp_bf16_from_f32(v); }

/* Sum of v over the block, the same value on every thread. red holds one float per warp;
 * the block's warps are summed in a fixed order, so the result does not depend on the
 * schedule. */
GP_DEVICE float block_sum(float v, float *red) {
  v = gp_warp_reduce_sum(v);
  const int nwarps = (int)((blockDim.x + GP_WARP_SIZE - 1) / GP_WARP_SIZE);
  if (gp_lane_id() == 0) red[gp_warp_id()] = v;
  __syncthreads();
  float t = 0.0f;
  for (int w = 0; w < nwarps; w++) t += red[w];
  __syncthreads(); /* red is free again for the next reduction */
  return t;
}

/* x[row] = word[id] + position[t] + token_type[0] for each real token t of sequence b. */
GP_KERNEL void minilm_k_embed(const int32_t *ids, int max_len, const int32_t *cu, const void *word,
                            const void *pos, const void *type, void *x, int hidden, int dt) {
  const int t = (int)blockIdx.x, b = (int)blockIdx.y;
  if (t >= cu[b + 1] - cu[b]) return; /* padding: never becomes a row */
  const int64_t row = cu[b] + t, id = ids[(int64_t)b * max_len + t];
  for (int c = (int)threadIdx.x; c < hidden; c += (int)blockDim.x) {
    float v = ld(word, dt, id * hidden + c) + ld(type, dt, c) + ld(pos, dt, (int64_t)t * hidden + c);
    st(x, dt, row * hidden + c, v);
  }
}
GP_KERNEL_EXPORT(minilm_k_embed)

/* y = LayerNorm(x + r) * gamma + beta over each row (r may be NULL; y may be x). The
 * variance is taken about the mean (two passes over values held in registers), as
 * torch.nn.LayerNorm, with eps inside the square root. One warp per row, so the two
 * reductions are warp reductions: no block barrier, and on the CPU executor two sync
 * points per thread instead of six. */
GP_KERNEL void minilm_k_layernorm(const void *x, const void *r, const void *gamma, const void *beta,
                                  void *y, int64_t rows, int hidden, float eps, int dt) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / GP_WARP_SIZE) + gp_warp_id();
  if (row >= rows) return; /* the whole warp leaves together */
  const int64_t base = row * hidden;
  const int lane = (int)gp_lane_id();
  float v[MINILM_LN_PER];
  float sum = 0.0f;
  for (int j = 0; j < MINILM_LN_PER; j++) {
    const int c = lane + j * GP_WARP_SIZE;
    v[j] = 0.0f;
    if (c < hidden) {
      v[j] = ld(x, dt, base + c) + (r ? ld(r, dt, base + c) : 0.0f);
      sum += v[j];
    }
  }
  const float mean = gp_warp_reduce_sum(sum) / (float)hidden;
  float sq = 0.0f;
  for (int j = 0; j < MINILM_LN_PER; j++) {
    const int c = lane + j * GP_WARP_SIZE;
    if (c < hidden) sq += (v[j] - mean) * (v[j] - mean);
  }
  const float inv = 1.0f / sqrtf(gp_warp_reduce_sum(sq) / (float)hidden + eps);
  for (int j = 0; j < MINILM_LN_PER; j++) {
    const int c = lane + j * GP_WARP_SIZE;
    if (c < hidden) st(y, dt, base + c, (v[j] - mean) * inv * ld(gamma, dt, c) + ld(beta, dt, c));
  }
}
GP_KERNEL_EXPORT(minilm_k_layernorm)

/* minilm_k_layernorm's result with one thread per row (MINILM_THREADS rows a block), for
 * the cpu backend: no warp operation, so the executor runs each block as a plain loop
 * (no fibers, no switches), and a row's sums are eight interleaved partial sums the
 * compiler can keep in one vector register. The row is read three times (sum, squared
 * deviations, result) rather than held, so y may be x as in minilm_k_layernorm. On a
 * GPU the warp version is the fast one; this one is built there too but not chosen. */
template <typename T>
GP_DEVICE void layernorm_row(const T *x, const T *r, const T *gamma, const T *beta, T *y, int hidden,
                             float eps) {
  enum { P = 8 };
  float part[P] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  int c = 0;
  for (; c + P <= hidden; c += P)
    for (int j = 0; j < P; j++) part[j] += lf(x[c + j]) + (r ? lf(r[c + j]) : 0.0f);
  for (; c < hidden; c++) part[0] += lf(x[c]) + (r ? lf(r[c]) : 0.0f);
  float sum = 0.0f;
  for (int j = 0; j < P; j++) sum += part[j];
  const float mean = sum / (float)hidden;
  for (int j = 0; j < P; j++) part[j] = 0.0f;
  for (c = 0; c + P <= hidden; c += P)
    for (int j = 0; j < P; j++) {
      const float d = lf(x[c + j]) + (r ? lf(r[c + j]) : 0.0f) - mean;
      part[j] += d * d;
    }
  for (; c < hidden; c++) {
    const float d = lf(x[c]) + (r ? lf(r[c]) : 0.0f) - mean;
    part[0] += d * d;
  }
  float sq = 0.0f;
  for (int j = 0; j < P; j++) sq += part[j];
  const float inv = 1.0f / sqrtf(sq / (float)hidden + eps);
  for (c = 0; c < hidden; c++) {
    const float v = lf(x[c]) + (r ? lf(r[c]) : 0.0f);
    sv(&y[c], (v - mean) * inv * lf(gamma[c]) + lf(beta[c]));
  }
}

GP_KERNEL void minilm_k_layernorm_rows(const void *x, const void *r, const void *gamma, const void *beta,
                                       void *y, int64_t rows, int hidden, float eps, int dt) {
  const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const int64_t base = row * hidden;
  if (dt == GP_BF16) {
    const gp_bf16_t *xb = (const gp_bf16_t *)x, *rb = (const gp_bf16_t *)r;
    layernorm_row<gp_bf16_t>(xb + base, rb ? rb + base : NULL, (const gp_bf16_t *)gamma, (const gp_bf16_t *)beta,
                             (gp_bf16_t *)y + base, hidden, eps);
    return;
  }
  const float *xf = (const float *)x, *rf = (const float *)r;
  layernorm_row<float>(xf + base, rf ? rf + base : NULL, (const float *)gamma, (const float *)beta, (float *)y + base,
                       hidden, eps);
}
GP_KERNEL_EXPORT(minilm_k_layernorm_rows)

/* x[i][j] = act(x[i][j] + bias[j]), act the identity or GELU (erf form, as BERT's "gelu"):
 * the unfused path, against which the GEMM epilogues are checked. */
GP_KERNEL void minilm_k_bias_act(void *x, const void *bias, int64_t rows, int cols, int gelu, int dt) {
  const int64_t n = rows * cols, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = ld(x, dt, i) + ld(bias, dt, i % cols);
    if (gelu) v = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    st(x, dt, i, v);
  }
}
GP_KERNEL_EXPORT(minilm_k_bias_act)

/* out[b][c] = mean of x[row][c] over the rows of sequence b (its real tokens only). */
GP_KERNEL void minilm_k_mean_pool(const void *x, const int32_t *cu, float *out, int hidden, int dt) {
  const int b = (int)blockIdx.y, c = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= hidden) return;
  const int64_t r0 = cu[b], r1 = cu[b + 1];
  float s = 0.0f;
  for (int64_t r = r0; r < r1; r++) s += ld(x, dt, r * hidden + c);
  out[(int64_t)b * hidden + c] = r1 > r0 ? s / (float)(r1 - r0) : 0.0f;
}
GP_KERNEL_EXPORT(minilm_k_mean_pool)

/* e[b] /= max(||e[b]||_2, 1e-12), as torch.nn.functional.normalize. */
GP_KERNEL void minilm_k_l2_normalize(float *e, int hidden) {
  GP_SHARED(float, red, [MINILM_THREADS / 32]);
  float *row = e + (int64_t)blockIdx.x * hidden;
  float sq = 0.0f;
  for (int c = (int)threadIdx.x; c < hidden; c += (int)blockDim.x) sq += row[c] * row[c];
  const float norm = sqrtf(block_sum(sq, red));
  const float inv = 1.0f / (norm > 1e-12f ? norm : 1e-12f);
  for (int c = (int)threadIdx.x; c < hidden; c += (int)blockDim.x) row[c] *= inv;
}
GP_KERNEL_EXPORT(minilm_k_l2_normalize)
