/*
 * model.c - all-MiniLM-L6-v2 on gpuport (see minilm.h): weights from safetensors onto the
 * device, tokenized batches, and the encoder:
 *
 *   x    = LayerNorm(word[id] + position[t] + type[0])           minilm_k_embed, minilm_k_layernorm
 *   per layer (post-LN BERT):
 *     qkv  = x Wqkv^T + bqkv                                      gp_gemm_ex, bias epilogue
 *     ctx  = softmax(q k^T / sqrt(32)) v per sequence and head    gp_attention_fwd, varlen
 *     x    = LayerNorm(x + ctx Wo^T + bo)                         gp_gemm_ex (bias), minilm_k_layernorm
 *     g    = GELU(x W1^T + b1)                                    gp_gemm_ex, bias+GELU epilogue
 *     x    = LayerNorm(x + g W2^T + b2)                           gp_gemm_ex (bias), minilm_k_layernorm
 *   e    = normalize(mean of x over each sequence's rows)        minilm_k_mean_pool, minilm_k_l2_normalize
 *
 * Linear weights keep PyTorch's [out][in] layout, so each projection is a row-major GEMM
 * with transb = T. Q, K and V are stacked into one [3 x 384][384] weight, and attention
 * reads q, k and v out of the qkv rows by strides.
 */
#include "minilm.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "safetensors.h"

#define HEADS 12          /* config.json: num_attention_heads */
#define LN_EPS 1e-12f     /* config.json: layer_norm_eps */
#define MAX_LAYERS 64

GP_KERNEL_DECLARE(minilm_k_embed);
GP_KERNEL_DECLARE(minilm_k_layernorm);
GP_KERNEL_DECLARE(minilm_k_bias_act);
GP_KERNEL_DECLARE(minilm_k_mean_pool);
GP_KERNEL_DECLARE(minilm_k_l2_normalize);
#if defined(GP_BUILD_CPU)
GP_KERNEL_DECLARE(minilm_k_embed_w64);
GP_KERNEL_DECLARE(minilm_k_layernorm_w64);
GP_KERNEL_DECLARE(minilm_k_bias_act_w64);
GP_KERNEL_DECLARE(minilm_k_mean_pool_w64);
GP_KERNEL_DECLARE(minilm_k_l2_normalize_w64);
GP_KERNEL_DECLARE(minilm_k_layernorm_rows);
GP_KERNEL_DECLARE(minilm_k_layernorm_rows_w64);
#endif

enum { K_EMBED, K_LAYERNORM, K_BIAS_ACT, K_MEAN_POOL, K_L2, K_COUNT };

typedef struct linear {
  void *w, *b;       /* device: [out][in], [out] */
  int64_t in, out;
} linear_t;

typedef struct layer {
  linear_t qkv, o, up, down;
  void *ln1_g, *ln1_b, *ln2_g, *ln2_b;
} layer_t;

struct minilm_model {
  minilm_options_t opt;
  minilm_vocab_t *vocab;
  gp_stream_t stream;
  gp_kernel_t k[K_COUNT];
  int64_t ln_rows_per_block; /* rows a LayerNorm block normalises (k[K_LAYERNORM]'s geometry) */
  int64_t chunk_tokens;      /* tokens of the sequences one encoder pass takes (opt.chunk_tokens) */
  int layers, hidden, inter, vocab_rows, max_pos;
  void *word, *pos, *type, *ln_g, *ln_b; /* embeddings, device */
  layer_t layer[MAX_LAYERS];
  /* workspace, grown on demand */
  int64_t cap_tokens, cap_ids, cap_seqs;
  int32_t *d_ids, *d_cu;
  void *x, *qkv, *ctx, *tmp, *ffn;
  float *pooled;
  char err[512];
};

/* ---- small helpers ------------------------------------------------------------------- */

void minilm_options_init(minilm_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->dtype = GP_F32;
  o->max_batch = 64;
}

static void set_err(minilm_model_t *m, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->err, sizeof(m->err), fmt, ap);
  va_end(ap);
}

const char *minilm_error(const minilm_model_t *m) { return m->err; }
const minilm_vocab_t *minilm_model_vocab(const minilm_model_t *m) { return m->vocab; }
gp_dtype_t minilm_model_dtype(const minilm_model_t *m) { return m->opt.dtype; }

/* Evaluates a gpuport call inside a function returning gp_status_t; on failure records
 * which call failed and gpuport's message in m->err. */
#define TRY(expr)                                                                            \
  do {                                                                                       \
    gp_status_t try_s_ = (expr);                                                             \
    if (try_s_ != GP_SUCCESS) {                                                              \
      set_err(m, "%s: %s: %s", #expr, gp_status_name(try_s_), gp_last_error_message());      \
      return try_s_;                                                                         \
    }                                                                                        \
  } while (0)

double minilm_cosine(const float *a, const float *b, int n) {
  double ab = 0, aa = 0, bb = 0;
  for (int i = 0; i < n; i++) {
    ab += (double)a[i] * b[i];
    aa += (double)a[i] * a[i];
    bb += (double)b[i] * b[i];
  }
  return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0.0;
}

/* ---- batches ------------------------------------------------------------------------- */

int minilm_batch_tokenize(const minilm_vocab_t *v, const char *const *texts, int n,
                          minilm_batch_t *b) {
  memset(b, 0, sizeof(*b));
  int32_t *all = malloc(sizeof(int32_t) * MINILM_MAX_TOKENS * (size_t)(n > 0 ? n : 1));
  b->lens = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
  if (!all || !b->lens) goto fail;
  for (int i = 0; i < n; i++) {
    int len = minilm_tokenize(v, texts[i], all + (size_t)i * MINILM_MAX_TOKENS, MINILM_MAX_TOKENS);
    if (len < 0) goto fail;
    b->lens[i] = len;
    if (len > b->max_len) b->max_len = len;
  }
  b->n = n;
  b->ids = malloc(sizeof(int32_t) * (size_t)(b->max_len > 0 ? b->max_len : 1) * (size_t)(n > 0 ? n : 1));
  if (!b->ids) goto fail;
  for (int i = 0; i < n; i++)
    for (int t = 0; t < b->max_len; t++)
      b->ids[(size_t)i * b->max_len + t] =
          t < b->lens[i] ? all[(size_t)i * MINILM_MAX_TOKENS + t] : minilm_vocab_pad(v);
  free(all);
  return 0;
fail:
  free(all);
  minilm_batch_free(b);
  return -1;
}

void minilm_batch_free(minilm_batch_t *b) {
  free(b->ids);
  free(b->lens);
  memset(b, 0, sizeof(*b));
}

/* ---- loading ------------------------------------------------------------------------- */

typedef struct loader {
  safetensors_t *st;
  gp_dtype_t dt;
  char *err;
  size_t errlen;
} loader_t;

static float elem_f32(const safetensors_tensor_t *t, size_t i) {
  if (t->dtype == SAFETENSORS_F32) {
    float f;
    memcpy(&f, (const char *)t->data + 4 * i, 4);
    return f;
  }
  uint16_t h;
  memcpy(&h, (const char *)t->data + 2 * i, 2);
  gp_bf16_t b = {h};
  gp_f16_t f = {h};
  return t->dtype == SAFETENSORS_BF16 ? gp_f32_from_bf16(b) : gp_f32_from_f16(f);
}

/* The tensor `name` with shape [d0] or [d0][d1] (d1 = 0 for a vector). */
static const safetensors_tensor_t *tensor(loader_t *l, const char *name, int64_t d0, int64_t d1) {
  const safetensors_tensor_t *t = safetensors_find(l->st, name);
  if (!t) {
    snprintf(l->err, l->errlen, "model.safetensors: no tensor '%s'", name);
    return NULL;
  }
  if (t->dtype != SAFETENSORS_F32 && t->dtype != SAFETENSORS_BF16 && t->dtype != SAFETENSORS_F16) {
    snprintf(l->err, l->errlen, "model.safetensors: tensor '%s' is not F32, F16 or BF16", name);
    return NULL;
  }
  if (t->ndim != (d1 ? 2 : 1) || t->shape[0] != d0 || (d1 && t->shape[1] != d1)) {
    char shape[64];
    if (d1)
      snprintf(shape, sizeof(shape), "[%lld, %lld]", (long long)d0, (long long)d1);
    else
      snprintf(shape, sizeof(shape), "[%lld]", (long long)d0);
    snprintf(l->err, l->errlen, "model.safetensors: tensor '%s' does not have shape %s", name, shape);
    return NULL;
  }
  return t;
}

/* Converts tensors (stacked along their first dimension) to the model's dtype and uploads
 * them as one device array. */
static int upload(loader_t *l, void **dev, const safetensors_tensor_t *const *ts, int nt) {
  size_t n = 0, es = gp_dtype_size(l->dt);
  for (int i = 0; i < nt; i++) n += ts[i]->bytes / safetensors_dtype_size(ts[i]->dtype);
  unsigned char *h = malloc(n * es), *p = h;
  if (!h) {
    snprintf(l->err, l->errlen, "out of memory");
    return -1;
  }
  for (int i = 0; i < nt; i++) {
    size_t ne = ts[i]->bytes / safetensors_dtype_size(ts[i]->dtype);
    for (size_t j = 0; j < ne; j++, p += es) {
      float f = elem_f32(ts[i], j);
      if (l->dt == GP_BF16) {
        gp_bf16_t b = gp_bf16_from_f32(f);
        memcpy(p, &b, 2);
      } else {
        memcpy(p, &f, 4);
      }
    }
  }
  gp_status_t s = gp_malloc(dev, n * es);
  if (s == GP_SUCCESS) s = gp_memcpy(*dev, h, n * es);
  free(h);
  if (s != GP_SUCCESS) {
    snprintf(l->err, l->errlen, "uploading the weights: %s: %s", gp_status_name(s),
             gp_last_error_message());
    return -1;
  }
  return 0;
}

static int load_one(loader_t *l, void **dev, const char *name, int64_t d0, int64_t d1) {
  const safetensors_tensor_t *t = tensor(l, name, d0, d1);
  return t ? upload(l, dev, &t, 1) : -1;
}

static int load_linear(loader_t *l, linear_t *lin, const char *const *names, int parts,
                       int64_t out_each, int64_t in) {
  const safetensors_tensor_t *w[3], *b[3];
  char nm[160];
  for (int i = 0; i < parts; i++) {
    snprintf(nm, sizeof(nm), "%s.weight", names[i]);
    if (!(w[i] = tensor(l, nm, out_each, in))) return -1;
    snprintf(nm, sizeof(nm), "%s.bias", names[i]);
    if (!(b[i] = tensor(l, nm, out_each, 0))) return -1;
  }
  lin->in = in;
  lin->out = out_each * parts;
  return upload(l, &lin->w, w, parts) || upload(l, &lin->b, b, parts) ? -1 : 0;
}

static int load_layer(loader_t *l, minilm_model_t *m, int i) {
  char a[3][96], ln[4][96];
  layer_t *y = &m->layer[i];
  const char *pre = "encoder.layer.";
  snprintf(a[0], sizeof(a[0]), "%s%d.attention.self.query", pre, i);
  snprintf(a[1], sizeof(a[1]), "%s%d.attention.self.key", pre, i);
  snprintf(a[2], sizeof(a[2]), "%s%d.attention.self.value", pre, i);
  const char *qkv[3] = {a[0], a[1], a[2]};
  if (load_linear(l, &y->qkv, qkv, 3, m->hidden, m->hidden)) return -1;
  snprintf(a[0], sizeof(a[0]), "%s%d.attention.output.dense", pre, i);
  snprintf(a[1], sizeof(a[1]), "%s%d.intermediate.dense", pre, i);
  snprintf(a[2], sizeof(a[2]), "%s%d.output.dense", pre, i);
  const char *o = a[0], *up = a[1], *down = a[2];
  if (load_linear(l, &y->o, &o, 1, m->hidden, m->hidden) ||
      load_linear(l, &y->up, &up, 1, m->inter, m->hidden) ||
      load_linear(l, &y->down, &down, 1, m->hidden, m->inter))
    return -1;
  snprintf(ln[0], sizeof(ln[0]), "%s%d.attention.output.LayerNorm.weight", pre, i);
  snprintf(ln[1], sizeof(ln[1]), "%s%d.attention.output.LayerNorm.bias", pre, i);
  snprintf(ln[2], sizeof(ln[2]), "%s%d.output.LayerNorm.weight", pre, i);
  snprintf(ln[3], sizeof(ln[3]), "%s%d.output.LayerNorm.bias", pre, i);
  return load_one(l, &y->ln1_g, ln[0], m->hidden, 0) || load_one(l, &y->ln1_b, ln[1], m->hidden, 0) ||
                 load_one(l, &y->ln2_g, ln[2], m->hidden, 0) || load_one(l, &y->ln2_b, ln[3], m->hidden, 0)
             ? -1
             : 0;
}

/* Sizes from the tensors themselves; the head count is the model's (config.json). */
static int read_shapes(loader_t *l, minilm_model_t *m) {
  const safetensors_tensor_t *w = safetensors_find(l->st, "embeddings.word_embeddings.weight");
  const safetensors_tensor_t *p = safetensors_find(l->st, "embeddings.position_embeddings.weight");
  const safetensors_tensor_t *u = safetensors_find(l->st, "encoder.layer.0.intermediate.dense.weight");
  if (!w || !p || !u || w->ndim != 2 || p->ndim != 2 || u->ndim != 2) {
    snprintf(l->err, l->errlen, "model.safetensors: not a BERT model (embeddings or layer 0 missing)");
    return -1;
  }
  m->vocab_rows = (int)w->shape[0];
  m->hidden = (int)w->shape[1];
  m->max_pos = (int)p->shape[0];
  m->inter = (int)u->shape[0];
  char nm[96];
  for (m->layers = 0; m->layers < MAX_LAYERS; m->layers++) {
    snprintf(nm, sizeof(nm), "encoder.layer.%d.attention.self.query.weight", m->layers);
    if (!safetensors_find(l->st, nm)) break;
  }
  if (m->hidden != MINILM_DIM || m->hidden % HEADS || m->hidden > MINILM_LN_PER * 32 ||
      m->max_pos < MINILM_MAX_TOKENS || m->layers == 0) {
    snprintf(l->err, l->errlen, "model.safetensors: hidden %d, %d positions, %d layers: not "
             "all-MiniLM-L6-v2's geometry (hidden %d, >= %d positions)", m->hidden, m->max_pos,
             m->layers, MINILM_DIM, MINILM_MAX_TOKENS);
    return -1;
  }
  return 0;
}

static int pick_kernels(minilm_model_t *m, char *err, size_t errlen) {
  const struct gp_kernel_s *k32[K_COUNT] = {GP_KERNEL_REF(minilm_k_embed), GP_KERNEL_REF(minilm_k_layernorm),
                                            GP_KERNEL_REF(minilm_k_bias_act), GP_KERNEL_REF(minilm_k_mean_pool),
                                            GP_KERNEL_REF(minilm_k_l2_normalize)};
#if defined(GP_BUILD_CPU)
  /* LayerNorm: a thread per row, so the executor runs plain loops where the warp
   * version's reductions would make every lane a fiber. */
  const struct gp_kernel_s *k64[K_COUNT] = {
      GP_KERNEL_REF(minilm_k_embed_w64), GP_KERNEL_REF(minilm_k_layernorm_rows_w64),
      GP_KERNEL_REF(minilm_k_bias_act_w64), GP_KERNEL_REF(minilm_k_mean_pool_w64),
      GP_KERNEL_REF(minilm_k_l2_normalize_w64)};
  /* With GP_CPU_WARP_SIZE=64 the device reports a warp of 64 and the executor runs the
   * width-64 build of every kernel launched: size the grids for it. */
  int dev = 0, warp64 = m->opt.warp64;
  gp_device_props_t p;
  gp_device_props_init(&p);
  if (gp_device_get(&dev) == GP_SUCCESS && gp_device_get_props(&p, dev) == GP_SUCCESS && p.warp_size == 64)
    warp64 = 1;
  k32[K_LAYERNORM] = GP_KERNEL_REF(minilm_k_layernorm_rows);
  for (int i = 0; i < K_COUNT; i++) m->k[i] = warp64 ? k64[i] : k32[i];
  m->ln_rows_per_block = MINILM_THREADS;
  /* Sequences are independent: the encoder over a few at a time keeps each GEMM's output
   * (1024 x 1536 floats at most: 6 MiB) in the caches for the epilogue, the next GEMM and
   * LayerNorm, where a whole batch of 64 x 128 tokens streams 50 MiB through memory at
   * every step (measured, one thread: 1024 tokens 8% faster than 8192). */
  m->chunk_tokens = m->opt.chunk_tokens > 0 ? m->opt.chunk_tokens : 1024;
  (void)err, (void)errlen;
#else
  if (m->opt.warp64) {
    snprintf(err, errlen, "warp width 64 is emulated on the cpu backend only (%s runs its own width)",
             gp_backend_name());
    return -1;
  }
  for (int i = 0; i < K_COUNT; i++) m->k[i] = k32[i];
  m->ln_rows_per_block = MINILM_THREADS / m->k[K_LAYERNORM]->warp_size; /* a warp per row */
  m->chunk_tokens = m->opt.chunk_tokens > 0 ? m->opt.chunk_tokens : INT64_MAX;
#endif
  return 0;
}

int minilm_load(minilm_model_t **out, const char *dir, const minilm_options_t *opt, char *err,
                size_t errlen) {
  *out = NULL;
  minilm_model_t *m = calloc(1, sizeof(*m));
  if (!m) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (opt)
    m->opt = *opt;
  else
    minilm_options_init(&m->opt);
  if (m->opt.max_batch < 1) m->opt.max_batch = 64;
  if (m->opt.dtype != GP_F32 && m->opt.dtype != GP_BF16) {
    snprintf(err, errlen, "dtype %s: the model runs in f32 or bf16", gp_dtype_name(m->opt.dtype));
    free(m);
    return -1;
  }
  char path[4096];
  loader_t l = {NULL, m->opt.dtype, err, errlen};
  int rc = pick_kernels(m, err, errlen);
  if (!rc) {
    snprintf(path, sizeof(path), "%s/vocab.txt", dir);
    rc = minilm_vocab_load(&m->vocab, path, err, errlen);
  }
  if (!rc) {
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    rc = safetensors_open(&l.st, path, err, errlen);
  }
  if (!rc) rc = read_shapes(&l, m);
  if (!rc && minilm_vocab_size(m->vocab) != m->vocab_rows) {
    snprintf(err, errlen, "%s/vocab.txt has %d tokens, the word embeddings %d rows", dir,
             minilm_vocab_size(m->vocab), m->vocab_rows);
    rc = -1;
  }
  if (!rc) {
    gp_status_t s = gp_stream_create(&m->stream);
    if (s != GP_SUCCESS) {
      snprintf(err, errlen, "gp_stream_create: %s: %s", gp_status_name(s), gp_last_error_message());
      rc = -1;
    }
  }
  if (!rc)
    rc = load_one(&l, &m->word, "embeddings.word_embeddings.weight", m->vocab_rows, m->hidden) ||
         load_one(&l, &m->pos, "embeddings.position_embeddings.weight", m->max_pos, m->hidden) ||
         load_one(&l, &m->type, "embeddings.token_type_embeddings.weight", 2, m->hidden) ||
         load_one(&l, &m->ln_g, "embeddings.LayerNorm.weight", m->hidden, 0) ||
         load_one(&l, &m->ln_b, "embeddings.LayerNorm.bias", m->hidden, 0);
  for (int i = 0; !rc && i < m->layers; i++) rc = load_layer(&l, m, i);
  safetensors_close(l.st);
  if (rc) {
    minilm_free(m);
    return -1;
  }
  *out = m;
  return 0;
}

static void free_linear(linear_t *l) {
  gp_free(l->w);
  gp_free(l->b);
}

void minilm_free(minilm_model_t *m) {
  if (!m) return;
  if (m->stream) gp_stream_synchronize(m->stream);
  void *bufs[] = {m->word, m->pos, m->type, m->ln_g, m->ln_b, m->d_ids, m->d_cu,
                  m->x, m->qkv, m->ctx, m->tmp, m->ffn, m->pooled};
  for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) gp_free(bufs[i]);
  for (int i = 0; i < MAX_LAYERS; i++) {
    layer_t *y = &m->layer[i];
    free_linear(&y->qkv), free_linear(&y->o), free_linear(&y->up), free_linear(&y->down);
    gp_free(y->ln1_g), gp_free(y->ln1_b), gp_free(y->ln2_g), gp_free(y->ln2_b);
  }
  if (m->stream) gp_stream_destroy(m->stream);
  minilm_vocab_free(m->vocab);
  free(m);
}

/* ---- the forward pass ------------------------------------------------------------------ */

/* Replaces a device buffer by one of `bytes` (its contents are not kept). */
static gp_status_t regrow(void **p, size_t bytes) {
  gp_status_t s = gp_free(*p);
  *p = NULL;
  return s != GP_SUCCESS ? s : gp_malloc(p, bytes);
}

static gp_status_t workspace(minilm_model_t *m, int64_t tokens, int64_t ids, int64_t seqs) {
  const size_t es = gp_dtype_size(m->opt.dtype), h = (size_t)m->hidden;
  if (tokens > m->cap_tokens) {
    TRY(regrow(&m->x, (size_t)tokens * h * es));
    TRY(regrow(&m->qkv, (size_t)tokens * 3 * h * es));
    TRY(regrow(&m->ctx, (size_t)tokens * h * es));
    TRY(regrow(&m->tmp, (size_t)tokens * h * es));
    TRY(regrow(&m->ffn, (size_t)tokens * (size_t)m->inter * es));
    m->cap_tokens = tokens;
  }
  if (ids > m->cap_ids) {
    TRY(regrow((void **)&m->d_ids, (size_t)ids * sizeof(int32_t)));
    m->cap_ids = ids;
  }
  if (seqs > m->cap_seqs) {
    TRY(regrow((void **)&m->d_cu, (size_t)(seqs + 1) * sizeof(int32_t)));
    TRY(regrow((void **)&m->pooled, (size_t)seqs * h * sizeof(float)));
    m->cap_seqs = seqs;
  }
  return GP_SUCCESS;
}

static gp_status_t launch(minilm_model_t *m, int which, unsigned gx, unsigned gy, void **args) {
  TRY(gp_launch(m->k[which], gp_dim3(gx, gy, 1), gp_dim3(MINILM_THREADS, 1, 1), 0, m->stream, args));
  return GP_SUCCESS;
}

/* c = act(a W^T + b) over `rows` rows: the epilogue does the bias (and GELU), or, with
 * opt.unfused, minilm_k_bias_act after a plain GEMM. */
static gp_status_t linear(minilm_model_t *m, const void *a, int64_t rows, const linear_t *w, void *c,
                          int gelu) {
  const gp_dtype_t dt = m->opt.dtype;
  gp_gemm_desc_t d;
  gp_gemm_desc_init(&d);
  d.layout = GP_ROW_MAJOR;
  d.transb = GP_OP_T;
  d.m = rows, d.n = w->out, d.k = w->in;
  d.a = a, d.a_type = dt, d.lda = w->in;
  d.b = w->w, d.b_type = dt, d.ldb = w->in;
  d.c = c, d.c_type = dt, d.ldc = w->out;
  if (!m->opt.unfused) {
    d.epilogue = gelu ? GP_EPILOGUE_BIAS_GELU : GP_EPILOGUE_BIAS;
    d.bias = w->b, d.bias_type = dt;
  }
  TRY(gp_gemm_ex(m->stream, &d));
  if (m->opt.unfused) {
    int cols = (int)w->out, dti = (int)dt;
    int64_t n = rows * cols, blocks = (n + MINILM_THREADS - 1) / MINILM_THREADS;
    void *args[] = {&c, (void *)&w->b, &rows, &cols, &gelu, &dti};
    TRY(launch(m, K_BIAS_ACT, (unsigned)(blocks < 4096 ? blocks : 4096), 1, args));
  }
  return GP_SUCCESS;
}

/* x = LayerNorm(x + r) with gamma g and beta b, in place: a warp per row on GPUs, a
 * thread per row on the cpu backend (pick_kernels). */
static gp_status_t layernorm(minilm_model_t *m, int64_t rows, void *x, const void *r, void *g, void *b) {
  int hidden = m->hidden, dti = (int)m->opt.dtype;
  float eps = LN_EPS;
  const int64_t per_block = m->ln_rows_per_block;
  void *args[] = {&x, (void *)&r, &g, &b, &x, &rows, &hidden, &eps, &dti};
  return launch(m, K_LAYERNORM, (unsigned)((rows + per_block - 1) / per_block), 1, args);
}

static gp_status_t encoder_layer(minilm_model_t *m, const layer_t *y, int64_t rows, int n, int max_len) {
  const size_t es = gp_dtype_size(m->opt.dtype);
  const int64_t h = m->hidden;
  TRY(linear(m, m->x, rows, &y->qkv, m->qkv, 0));
  gp_attention_desc_t a;
  gp_attention_desc_init(&a);
  a.dtype = m->opt.dtype;
  a.batch = n, a.seqlen_q = a.seqlen_k = max_len;
  a.heads_q = a.heads_kv = HEADS, a.head_dim = h / HEADS;
  a.q = m->qkv, a.k = (char *)m->qkv + h * es, a.v = (char *)m->qkv + 2 * h * es, a.o = m->ctx;
  a.q_seq_stride = a.k_seq_stride = a.v_seq_stride = 3 * h;
  a.q_head_stride = a.k_head_stride = a.v_head_stride = h / HEADS;
  a.cu_seqlens_q = a.cu_seqlens_k = m->d_cu;
  TRY(gp_attention_fwd(m->stream, &a));
  TRY(linear(m, m->ctx, rows, &y->o, m->tmp, 0));
  TRY(layernorm(m, rows, m->x, m->tmp, y->ln1_g, y->ln1_b));
  TRY(linear(m, m->x, rows, &y->up, m->ffn, 1));
  TRY(linear(m, m->ffn, rows, &y->down, m->tmp, 0));
  TRY(layernorm(m, rows, m->x, m->tmp, y->ln2_g, y->ln2_b));
  return GP_SUCCESS;
}

static gp_status_t check_batch(minilm_model_t *m, const minilm_batch_t *b, int32_t *cu) {
  if (b->n < 1 || b->max_len < 1 || b->max_len > MINILM_MAX_TOKENS) {
    set_err(m, "batch of %d sequences of up to %d tokens: need >= 1 sequence of 1..%d tokens", b->n,
            b->max_len, MINILM_MAX_TOKENS);
    return GP_ERROR_INVALID_VALUE;
  }
  cu[0] = 0;
  for (int i = 0; i < b->n; i++) {
    if (b->lens[i] < 1 || b->lens[i] > b->max_len) {
      set_err(m, "sequence %d has %d tokens: need 1..%d", i, b->lens[i], b->max_len);
      return GP_ERROR_INVALID_VALUE;
    }
    for (int t = 0; t < b->lens[i]; t++) {
      int32_t id = b->ids[(size_t)i * b->max_len + t];
      if (id < 0 || id >= m->vocab_rows) {
        set_err(m, "sequence %d, token %d: id %d outside the vocabulary (0..%d)", i, t, id,
                m->vocab_rows - 1);
        return GP_ERROR_INVALID_VALUE;
      }
    }
    cu[i + 1] = cu[i] + b->lens[i];
  }
  return GP_SUCCESS;
}

/* The encoder on the whole of batch b. */
static gp_status_t forward_all(minilm_model_t *m, const minilm_batch_t *b, float *out) {
  int32_t *cu = malloc(sizeof(int32_t) * (size_t)(b->n > 0 ? b->n + 1 : 1));
  if (!cu) {
    set_err(m, "out of memory");
    return GP_ERROR_OUT_OF_MEMORY;
  }
  gp_status_t s = check_batch(m, b, cu);
  if (s == GP_SUCCESS) {
    const int64_t rows = cu[b->n];
    s = workspace(m, rows, (int64_t)b->n * b->max_len, b->n);
    if (s == GP_SUCCESS) {
      size_t ids_bytes = sizeof(int32_t) * (size_t)b->n * b->max_len;
      s = gp_memcpy_async(m->d_ids, b->ids, ids_bytes, m->stream);
      if (s == GP_SUCCESS) s = gp_memcpy_async(m->d_cu, cu, sizeof(int32_t) * (size_t)(b->n + 1), m->stream);
      if (s != GP_SUCCESS) set_err(m, "uploading the batch: %s: %s", gp_status_name(s), gp_last_error_message());
    }
    /* The copies read cu from the host: wait for them before cu is freed. */
    if (s == GP_SUCCESS && (s = gp_stream_synchronize(m->stream)) != GP_SUCCESS)
      set_err(m, "uploading the batch: %s: %s", gp_status_name(s), gp_last_error_message());
  }
  free(cu);
  if (s != GP_SUCCESS) return s;

  int hidden = m->hidden, dti = (int)m->opt.dtype, max_len = b->max_len;
  int64_t rows = 0;
  for (int i = 0; i < b->n; i++) rows += b->lens[i];
  void *ea[] = {&m->d_ids, &max_len, &m->d_cu, &m->word, &m->pos, &m->type, &m->x, &hidden, &dti};
  TRY(launch(m, K_EMBED, (unsigned)max_len, (unsigned)b->n, ea));
  TRY(layernorm(m, rows, m->x, NULL, m->ln_g, m->ln_b));
  for (int i = 0; i < m->layers; i++) TRY(encoder_layer(m, &m->layer[i], rows, b->n, max_len));
  void *pa[] = {&m->x, &m->d_cu, &m->pooled, &hidden, &dti};
  TRY(launch(m, K_MEAN_POOL, (unsigned)((hidden + MINILM_THREADS - 1) / MINILM_THREADS), (unsigned)b->n, pa));
  void *na[] = {&m->pooled, &hidden};
  TRY(launch(m, K_L2, (unsigned)b->n, 1, na));
  TRY(gp_memcpy_async(out, m->pooled, sizeof(float) * (size_t)b->n * hidden, m->stream));
  TRY(gp_stream_synchronize(m->stream));
  return GP_SUCCESS;
}

gp_status_t minilm_forward(minilm_model_t *m, const minilm_batch_t *b, float *out) {
  /* The whole batch checked first, so a failure names the caller's sequence index. */
  int32_t *cu = malloc(sizeof(int32_t) * (size_t)(b->n > 0 ? b->n + 1 : 1));
  if (!cu) {
    set_err(m, "out of memory");
    return GP_ERROR_OUT_OF_MEMORY;
  }
  const gp_status_t s = check_batch(m, b, cu);
  const int64_t total = s == GP_SUCCESS ? cu[b->n] : 0;
  free(cu);
  if (s != GP_SUCCESS) return s;
  if (total <= m->chunk_tokens) return forward_all(m, b, out);
  for (int i = 0; i < b->n;) {
    int64_t tokens = b->lens[i];
    int k = 1;
    while (i + k < b->n && tokens + b->lens[i + k] <= m->chunk_tokens) tokens += b->lens[i + k++];
    const minilm_batch_t c = {k, b->max_len, b->ids + (size_t)i * b->max_len, b->lens + i};
    TRY(forward_all(m, &c, out + (size_t)i * MINILM_DIM));
    i += k;
  }
  return GP_SUCCESS;
}

gp_status_t minilm_embed(minilm_model_t *m, const char *const *texts, int n, float *out) {
  for (int i = 0; i < n; i += m->opt.max_batch) {
    int k = n - i < m->opt.max_batch ? n - i : m->opt.max_batch;
    minilm_batch_t b;
    if (minilm_batch_tokenize(m->vocab, texts + i, k, &b) != 0) {
      set_err(m, "tokenizing: out of memory");
      return GP_ERROR_OUT_OF_MEMORY;
    }
    gp_status_t s = minilm_forward(m, &b, out + (size_t)i * MINILM_DIM);
    minilm_batch_free(&b);
    if (s != GP_SUCCESS) return s;
  }
  return GP_SUCCESS;
}
