/*
 * embed.c - `gpuport embed` and `gpuport bench embed`: sentence embeddings with
 * all-MiniLM-L6-v2 (the model code is examples/minilm; `make model` fetches the weights).
 *
 *   gpuport embed [--bf16] [--json] [--model DIR] [--batch N] SENTENCE...
 *     prints each sentence's 384-value unit embedding and, for two or more sentences,
 *     the cosine similarity of every pair.
 *   gpuport bench embed [--dtype f32|bf16] [--batch N] [--seqlen S] [--iters N] [--json]
 *     sentences and tokens per second, end to end (tokenization, the encoder, pooling,
 *     the copy back), for batches of identical sentences of exactly S tokens; default
 *     batch 1 and 64 at S = 128, f32 and bf16.
 *
 * The model folder is --model, else $MINILM_MODEL_DIR, else models/all-MiniLM-L6-v2.
 */
#include "tool.h"

#include <stdlib.h>
#include <string.h>

#if !defined(GP_TOOL_MINILM)
/* Built without libcjson / libutf8proc (see the Makefile): the commands say so. */
static int not_built(void) {
  fprintf(stderr, "gpuport: this build has no MiniLM model code: install libcjson-dev and "
          "libutf8proc-dev (scripts/setup-debian.sh), then rebuild\n");
  return 1;
}
int tool_embed(int argc, char **argv) {
  (void)argc, (void)argv;
  return not_built();
}
int tool_bench_embed(int argc, char **argv) {
  (void)argc, (void)argv;
  return not_built();
}
#else

#include "minilm.h"

static const char *default_dir(void) {
  const char *d = getenv("MINILM_MODEL_DIR");
  return d && *d ? d : MINILM_DEFAULT_DIR;
}

static minilm_model_t *load(const char *dir, gp_dtype_t dt, int max_batch) {
  minilm_options_t opt;
  minilm_options_init(&opt);
  opt.dtype = dt;
  if (max_batch > 0) opt.max_batch = max_batch;
  minilm_model_t *m = NULL;
  char err[512];
  if (minilm_load(&m, dir, &opt, err, sizeof(err)) != 0) {
    fprintf(stderr, "gpuport: %s\n", err);
    if (strstr(err, "vocab.txt") || strstr(err, "model.safetensors"))
      fprintf(stderr, "(`make model` fetches all-MiniLM-L6-v2 into %s; --model DIR or "
              "MINILM_MODEL_DIR names another folder)\n", MINILM_DEFAULT_DIR);
    return NULL;
  }
  return m;
}

/* ---- gpuport embed --------------------------------------------------------------------- */

static void print_text(const float *e, const char *const *texts, int n, const minilm_model_t *m) {
  printf("all-MiniLM-L6-v2, %s, backend %s: %d sentence%s, %d values each\n",
         gp_dtype_name(minilm_model_dtype(m)), gp_backend_name(), n, n == 1 ? "" : "s", MINILM_DIM);
  for (int i = 0; i < n; i++) {
    printf("\n[%d] %s\n", i, texts[i]);
    for (int j = 0; j < MINILM_DIM; j++)
      printf("%s%9.6f", j % 8 ? " " : (j ? "\n    " : "    "), (double)e[(size_t)i * MINILM_DIM + j]);
    printf("\n");
  }
  if (n > 1) printf("\ncosine similarity:\n");
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      printf("  [%d] [%d] %.4f\n", i, j,
             minilm_cosine(e + (size_t)i * MINILM_DIM, e + (size_t)j * MINILM_DIM, MINILM_DIM));
}

static void print_json(const float *e, const char *const *texts, int n, const minilm_model_t *m) {
  printf("{\n  \"model\": \"all-MiniLM-L6-v2\", \"backend\": \"%s\", \"dtype\": \"%s\", \"dim\": %d,\n"
         "  \"embeddings\": [",
         gp_backend_name(), gp_dtype_name(minilm_model_dtype(m)), MINILM_DIM);
  for (int i = 0; i < n; i++) {
    printf("%s\n    {\"text\": ", i ? "," : "");
    tool_json_str(texts[i]);
    printf(", \"embedding\": [");
    for (int j = 0; j < MINILM_DIM; j++)
      printf("%s%.8g", j ? ", " : "", (double)e[(size_t)i * MINILM_DIM + j]);
    printf("]}");
  }
  printf("\n  ],\n  \"cosine\": [");
  for (int i = 0; i < n; i++) {
    printf("%s\n    [", i ? "," : "");
    for (int j = 0; j < n; j++)
      printf("%s%.6f", j ? ", " : "",
             minilm_cosine(e + (size_t)i * MINILM_DIM, e + (size_t)j * MINILM_DIM, MINILM_DIM));
    printf("]");
  }
  printf("\n  ]\n}\n");
}

static const char embed_usage[] =
    "usage: gpuport embed [--bf16] [--json] [--model DIR] [--batch N] SENTENCE...\n"
    "  all-MiniLM-L6-v2 sentence embeddings (384 values, unit length) and the cosine\n"
    "  similarity of each pair. The model comes from `make model` (models/all-MiniLM-L6-v2);\n"
    "  --model DIR or MINILM_MODEL_DIR names another folder. --batch: sentences per forward\n"
    "  pass (default 64). Texts longer than 256 tokens are cut, as the reference library does.\n";

int tool_embed(int argc, char **argv) {
  const char *dir = default_dir();
  bool json = false;
  gp_dtype_t dt = GP_F32;
  int64_t batch = 64;
  int first = argc;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(embed_usage, stdout);
      return 0;
    } else if (!strcmp(argv[i], "--json")) {
      json = true;
    } else if (!strcmp(argv[i], "--bf16")) {
      dt = GP_BF16;
    } else if (!strcmp(argv[i], "--f32")) {
      dt = GP_F32;
    } else if (!strcmp(argv[i], "--model") && i + 1 < argc) {
      dir = argv[++i];
    } else if (tool_arg_i64(argc, argv, &i, "--batch", &batch)) {
    } else if (!strcmp(argv[i], "--")) {
      first = i + 1;
      break;
    } else if (argv[i][0] == '-' && argv[i][1] == '-') {
      return tool_bad_arg("embed", argv[i]);
    } else {
      first = i;
      break;
    }
  }
  int n = argc - first;
  if (n < 1 || batch < 1 || batch > 4096) {
    fputs(embed_usage, stderr);
    return 2;
  }
  minilm_model_t *m = load(dir, dt, (int)batch);
  if (!m) return 1;
  const char *const *texts = (const char *const *)argv + first;
  float *e = malloc(sizeof(float) * MINILM_DIM * (size_t)n);
  int rc = 0;
  if (!e) {
    fprintf(stderr, "gpuport embed: out of memory\n");
    rc = 1;
  } else if (minilm_embed(m, texts, n, e) != GP_SUCCESS) {
    fprintf(stderr, "gpuport embed: %s\n", minilm_error(m));
    rc = 1;
  } else if (json) {
    print_json(e, texts, n, m);
  } else {
    print_text(e, texts, n, m);
  }
  free(e);
  minilm_free(m);
  return rc;
}

/* ---- gpuport bench embed ------------------------------------------------------------------ */

/* One benchmark: `batch` copies of a text of exactly seqlen tokens ([CLS], seqlen - 2 words
 * "hello", [SEP]), embedded iters times after warmup runs; the median wall time. */
static int bench_one(minilm_model_t *m, int64_t batch, int64_t seqlen, int64_t iters, int64_t warmup,
                     bool json, int *count) {
  size_t words = (size_t)seqlen - 2;
  char *text = malloc(words * 6 + 1);
  const char **texts = malloc(sizeof(char *) * (size_t)batch);
  float *e = malloc(sizeof(float) * MINILM_DIM * (size_t)batch);
  double *ms = calloc((size_t)iters, sizeof(double));
  int rc = 0;
  if (!text || !texts || !e || !ms) {
    fprintf(stderr, "gpuport bench embed: out of memory\n");
    rc = 1;
    goto out;
  }
  for (size_t w = 0; w < words; w++) memcpy(text + 6 * w, "hello ", 6);
  text[words * 6] = '\0';
  for (int64_t i = 0; i < batch; i++) texts[i] = text;
  for (int64_t i = 0; i < warmup + iters; i++) {
    double t0 = tool_now_ms();
    if (minilm_embed(m, texts, (int)batch, e) != GP_SUCCESS) {
      fprintf(stderr, "gpuport bench embed: %s\n", minilm_error(m));
      rc = 1;
      goto out;
    }
    if (i >= warmup) ms[i - warmup] = tool_now_ms() - t0;
  }
  double med = tool_median(ms, (int)iters), sps = (double)batch * 1e3 / med;
  const char *dt = gp_dtype_name(minilm_model_dtype(m));
  if (json)
    printf("%s\n    {\"bench\": \"embed\", \"dtype\": \"%s\", \"batch\": %lld, \"seqlen\": %lld, "
           "\"median_ms\": %.4f, \"sentences_per_s\": %.2f, \"tokens_per_s\": %.1f}",
           *count ? "," : "", dt, (long long)batch, (long long)seqlen, med, sps, sps * (double)seqlen);
  else
    printf("embed  %-5s batch %3lld x %3lld tokens  %10.2f ms  %10.2f sentences/s  %10.0f tokens/s\n", dt,
           (long long)batch, (long long)seqlen, med, sps, sps * (double)seqlen);
  fflush(stdout);
  ++*count;
out:
  free(text);
  free(texts);
  free(e);
  free(ms);
  return rc;
}

static const char bench_embed_usage[] =
    "usage: gpuport bench embed [--dtype f32|bf16] [--batch N] [--seqlen S] [--iters N]\n"
    "                           [--warmup N] [--model DIR] [--json]\n"
    "  all-MiniLM-L6-v2 end to end (tokenize, encode, pool, copy back): sentences/s and\n"
    "  tokens/s for batches of sentences of exactly S tokens. Default: f32 and bf16, batch 1\n"
    "  and 64, S = 128; median of --iters runs (default 20 GPU, 5 CPU) after --warmup (2).\n"
    "  scripts/minilm/bench_embed.sh runs it beside the reference library.\n";

int tool_bench_embed(int argc, char **argv) {
  const char *dir = default_dir(), *dtype = NULL;
  bool json = false, cpu = gp_backend() == GP_BACKEND_CPU;
  int64_t batch = 0, seqlen = 128, iters = cpu ? 5 : 20, warmup = 2;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--help")) {
      fputs(bench_embed_usage, stdout);
      return 0;
    } else if (!strcmp(argv[i], "--json")) {
      json = true;
    } else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
      dtype = argv[++i];
    } else if (!strcmp(argv[i], "--model") && i + 1 < argc) {
      dir = argv[++i];
    } else if (!(tool_arg_i64(argc, argv, &i, "--batch", &batch) ||
                 tool_arg_i64(argc, argv, &i, "--seqlen", &seqlen) ||
                 tool_arg_i64(argc, argv, &i, "--iters", &iters) ||
                 tool_arg_i64(argc, argv, &i, "--warmup", &warmup))) {
      return tool_bad_arg("bench embed", argv[i]);
    }
  }
  if (dtype && strcmp(dtype, "f32") && strcmp(dtype, "bf16")) {
    fprintf(stderr, "gpuport bench embed: --dtype must be f32 or bf16\n");
    return 2;
  }
  if (seqlen < 2 || seqlen > MINILM_MAX_TOKENS || batch > 4096 || iters < 1) {
    fprintf(stderr, "gpuport bench embed: need 2 <= --seqlen <= %d, --batch <= 4096, --iters >= 1\n",
            MINILM_MAX_TOKENS);
    return 2;
  }
  const gp_dtype_t dts[2] = {GP_F32, GP_BF16};
  const int64_t batches[2] = {1, 64};
  int count = 0, rc = 0;
  if (json)
    printf("{\n  \"backend\": \"%s\", \"model\": \"all-MiniLM-L6-v2\", \"iters\": %lld, \"results\": [",
           gp_backend_name(), (long long)iters);
  else
    printf("gpuport bench embed: all-MiniLM-L6-v2, backend %s, median of %lld runs\n", gp_backend_name(),
           (long long)iters);
  for (int d = 0; d < 2 && !rc; d++) {
    if (dtype && strcmp(dtype, gp_dtype_name(dts[d]))) continue;
    minilm_model_t *m = load(dir, dts[d], (int)(batch ? batch : batches[1]));
    if (!m) return 1;
    for (int b = 0; b < (batch ? 1 : 2) && !rc; b++)
      rc = bench_one(m, batch ? batch : batches[b], seqlen, iters, warmup, json, &count);
    minilm_free(m);
  }
  if (json) printf("\n  ]\n}\n");
  return rc;
}

#endif /* GP_TOOL_MINILM */
