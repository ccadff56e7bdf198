/*
 * minilm.h - all-MiniLM-L6-v2 sentence embeddings on gpuport.
 *
 * The model (sentence-transformers/all-MiniLM-L6-v2): a 6-layer BERT encoder (hidden 384,
 * 12 heads of 32, intermediate 1536, GELU, post-LayerNorm), mean pooling over the real
 * tokens, L2 normalisation. Weights come from model.safetensors and the vocabulary from
 * vocab.txt in one folder (`make model` fills models/all-MiniLM-L6-v2).
 *
 * Texts are tokenized into a padded batch (ids [n][max_len], [PAD] after each sequence's
 * length). The encoder packs the real tokens into rows (sequence b owns rows cu[b] ..
 * cu[b+1]-1), so no padding position enters a GEMM, a softmax or the pooling: the
 * projections are gp_gemm_ex with bias / bias+GELU epilogues, attention is
 * gp_attention_fwd with varlen cu_seqlens, and the rest are the dialect kernels of
 * kernels.cu. Weights and activations are f32 or bf16 (f32 accumulation throughout).
 */
#ifndef MINILM_H
#define MINILM_H

#include <stddef.h>
#include <stdint.h>
#include <gpuport.h>

#include "tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MINILM_DIM 384        /* embedding width */
#define MINILM_MAX_TOKENS 256 /* sentence-transformers' max_seq_length, [CLS] and [SEP] included */
#define MINILM_DEFAULT_DIR "models/all-MiniLM-L6-v2"

typedef struct minilm_model minilm_model_t;

typedef struct minilm_options {
  gp_dtype_t dtype; /* GP_F32 (default) or GP_BF16: weights and activations */
  int warp64;       /* cpu backend: run the width-64 builds of the dialect kernels */
  int unfused;      /* bias and GELU by a dialect kernel after plain GEMMs, not epilogues */
  int max_batch;    /* sentences per forward pass in minilm_embed (default 64) */
  int chunk_tokens; /* minilm_forward runs the encoder over consecutive sequences of at
                       most this many tokens at a time (a longer sequence alone); 0: the
                       backend's choice (cpu: 1024, so a chunk's activations stay in the
                       caches; GPUs: the whole batch) */
} minilm_options_t;

void minilm_options_init(minilm_options_t *o);

/** A tokenized batch: ids[b * max_len + t] for t < lens[b], [PAD] after. */
typedef struct minilm_batch {
  int n;         /* sequences */
  int max_len;   /* the longest, in tokens */
  int32_t *ids;  /* n x max_len */
  int32_t *lens; /* n */
} minilm_batch_t;

/** Tokenizes n texts (each cut at MINILM_MAX_TOKENS). Returns 0, or -1 when out of memory. */
int minilm_batch_tokenize(const minilm_vocab_t *v, const char *const *texts, int n,
                          minilm_batch_t *b);
void minilm_batch_free(minilm_batch_t *b);

/** Loads model.safetensors and vocab.txt from dir onto the current device. Returns 0, or
 *  -1 with a message in err. opt may be NULL (defaults). */
int minilm_load(minilm_model_t **out, const char *dir, const minilm_options_t *opt, char *err,
                size_t errlen);
void minilm_free(minilm_model_t *m);
const minilm_vocab_t *minilm_model_vocab(const minilm_model_t *m);
gp_dtype_t minilm_model_dtype(const minilm_model_t *m);

/** The encoder on one batch: out (host, n x MINILM_DIM floats) receives the unit-length
 *  embeddings. On failure, minilm_error() says which step failed and why. */
gp_status_t minilm_forward(minilm_model_t *m, const minilm_batch_t *b, float *out);

/** Tokenizes and embeds n texts, max_batch at a time, into out (n x MINILM_DIM). */
gp_status_t minilm_embed(minilm_model_t *m, const char *const *texts, int n, float *out);

/** The message of the last failure of minilm_forward / minilm_embed on m. */
const char *minilm_error(const minilm_model_t *m);

/** Cosine similarity of two vectors of n floats (in double). */
double minilm_cosine(const float *a, const float *b, int n);

#ifdef __cplusplus
}
#endif

#endif /* MINILM_H */
