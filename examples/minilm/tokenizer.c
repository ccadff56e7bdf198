/*
 * tokenizer.c - BERT's uncased WordPiece tokenizer (see tokenizer.h), step for step as
 * Hugging Face tokenizers runs it for all-MiniLM-L6-v2:
 *
 *  1. BertNormalizer: drop NUL, U+FFFD and "other" characters (general categories Cc,
 *     Cf, Co and Cs, except tab, newline and carriage return; unassigned code points stay,
 *     and end up in [UNK]); whitespace becomes a
 *     space; CJK ideographs get a space on each side; canonical decomposition (NFD) with
 *     nonspacing marks (Mn) dropped, which strips accents; lower case.
 *  2. BertPreTokenizer: split on whitespace, and make every punctuation character (ASCII
 *     punctuation, or a Unicode P* category) a word of its own.
 *  3. WordPiece: greedy longest match from the start of each word, later pieces looked up
 *     with "##" in front; a word with a piece not in the vocabulary, or longer than 100
 *     characters, becomes [UNK].
 *  4. [CLS] pieces [SEP], the pieces cut at max_len - 2.
 *
 * The vocabulary is a glibc hash table (hsearch_r) from token to id.
 */
#include "tokenizer.h"

#include <errno.h>
#include <search.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define MAX_WORD_CHARS 100 /* WordPiece's max_input_chars_per_word */

struct minilm_vocab {
  char *text;          /* the file, lines NUL-terminated in place */
  char **tokens;       /* tokens[id] */
  int n;               /* number of tokens */
  struct hsearch_data table;
  int pad, unk, cls, sep;
};

/* ---- vocabulary ------------------------------------------------------------------ */

static int vocab_fail(char *err, size_t errlen, const char *what, const char *path) {
  snprintf(err, errlen, "%s: %s", path, what);
  return -1;
}

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n + 65536 + 1 > cap) {
      cap = (n + 65536 + 1) * 2;
      char *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = nb;
    }
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0) break;
  }
  bool bad = ferror(f) != 0;
  fclose(f);
  if (bad) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

int minilm_vocab_load(minilm_vocab_t **out, const char *path, char *err, size_t errlen) {
  *out = NULL;
  minilm_vocab_t *v = calloc(1, sizeof(*v));
  if (!v) return vocab_fail(err, errlen, "out of memory", path);
  size_t len = 0;
  v->text = read_all(path, &len);
  if (!v->text) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO));
    free(v);
    return -1;
  }
  int lines = 0;
  for (size_t i = 0; i < len; i++) lines += v->text[i] == '\n';
  if (len > 0 && v->text[len - 1] != '\n') lines++;
  v->tokens = calloc((size_t)lines + 1, sizeof(char *));
  if (!v->tokens || !hcreate_r((size_t)lines * 2 + 16, &v->table)) {
    free(v->tokens);
    free(v->text);
    free(v);
    return vocab_fail(err, errlen, "out of memory", path);
  }
  char *p = v->text, *end = v->text + len;
  while (p < end) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    char *stop = nl ? nl : end;
    if (stop > p && stop[-1] == '\r') stop[-1] = '\0';
    *stop = '\0';
    v->tokens[v->n] = p;
    ENTRY e = {p, (void *)(intptr_t)v->n}, *found = NULL;
    if (!hsearch_r(e, ENTER, &found, &v->table)) {
      minilm_vocab_free(v);
      return vocab_fail(err, errlen, "hash table full", path);
    }
    found->data = (void *)(intptr_t)v->n; /* a repeated token keeps its last id */
    v->n++;
    p = stop + 1;
  }
  v->pad = minilm_vocab_id(v, "[PAD]");
  v->unk = minilm_vocab_id(v, "[UNK]");
  v->cls = minilm_vocab_id(v, "[CLS]");
  v->sep = minilm_vocab_id(v, "[SEP]");
  if (v->pad < 0 || v->unk < 0 || v->cls < 0 || v->sep < 0) {
    minilm_vocab_free(v);
    return vocab_fail(err, errlen, "not a BERT vocabulary ([PAD], [UNK], [CLS] or [SEP] missing)",
                      path);
  }
  *out = v;
  return 0;
}

void minilm_vocab_free(minilm_vocab_t *v) {
  if (!v) return;
  hdestroy_r(&v->table);
  free(v->tokens);
  free(v->text);
  free(v);
}

int minilm_vocab_size(const minilm_vocab_t *v) { return v->n; }
int minilm_vocab_pad(const minilm_vocab_t *v) { return v->pad; }
int minilm_vocab_cls(const minilm_vocab_t *v) { return v->cls; }
int minilm_vocab_sep(const minilm_vocab_t *v) { return v->sep; }
int minilm_vocab_unk(const minilm_vocab_t *v) { return v->unk; }

int minilm_vocab_id(const minilm_vocab_t *v, const char *token) {
  ENTRY e = {(char *)token, NULL}, *found = NULL;
  /* hsearch_r's FIND does not modify the table; the cast drops const for the old API. */
  if (!hsearch_r(e, FIND, &found, (struct hsearch_data *)&v->table)) return -1;
  return (int)(intptr_t)found->data;
}

const char *minilm_vocab_token(const minilm_vocab_t *v, int id) {
  return id >= 0 && id < v->n ? v->tokens[id] : NULL;
}

/* ---- character classes ------------------------------------------------------------ */

/* The Unicode White_Space property (Rust's char::is_whitespace). */
static bool is_space(int32_t c) {
  return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
         c == 0x205f || c == 0x3000;
}

/* "Other" characters, which clean_text removes; tab, newline and CR are whitespace. */
static bool is_other(int32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  utf8proc_category_t cat = utf8proc_category(c);
  return cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF ||
         cat == UTF8PROC_CATEGORY_CO || cat == UTF8PROC_CATEGORY_CS;
}

/* The CJK Unified Ideographs blocks BERT isolates (google-research/bert tokenization.py,
 * _is_chinese_char). */
static bool is_cjk(int32_t c) {
  return (c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3400 && c <= 0x4dbf) ||
         (c >= 0x20000 && c <= 0x2a6df) || (c >= 0x2a700 && c <= 0x2b73f) ||
         (c >= 0x2b740 && c <= 0x2b81f) || (c >= 0x2b820 && c <= 0x2ceaf) ||
         (c >= 0xf900 && c <= 0xfaff) || (c >= 0x2f800 && c <= 0x2fa1f);
}

static bool is_punct(int32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126))
    return true;
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE: case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

/* ---- normalisation ------------------------------------------------------------------ */

typedef struct cpbuf {
  int32_t *v;
  size_t n, cap;
} cpbuf_t;

static bool push(cpbuf_t *b, int32_t c) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    int32_t *nv = realloc(b->v, cap * sizeof(*nv));
    if (!nv) return false;
    b->v = nv;
    b->cap = cap;
  }
  b->v[b->n++] = c;
  return true;
}

/* One input character through BertNormalizer into out. */
static bool normalize_char(int32_t c, cpbuf_t *out) {
  if (c == 0 || c == 0xfffd || is_other(c)) return true;
  if (is_space(c)) return push(out, ' ');
  bool cjk = is_cjk(c);
  if (cjk && !push(out, ' ')) return false;
  utf8proc_int32_t d[32];
  int last = 0;
  utf8proc_ssize_t nd = utf8proc_decompose_char(c, d, 32, UTF8PROC_DECOMPOSE, &last);
  if (nd < 0 || nd > 32) { /* cannot happen for a valid code point: keep it as it is */
    d[0] = c;
    nd = 1;
  }
  for (utf8proc_ssize_t i = 0; i < nd; i++) {
    if (utf8proc_category(d[i]) == UTF8PROC_CATEGORY_MN) continue; /* strip accents */
    if (!push(out, utf8proc_tolower(d[i]))) return false;
  }
  return !cjk || push(out, ' ');
}

static bool normalize(const char *text, cpbuf_t *out) {
  const utf8proc_uint8_t *s = (const utf8proc_uint8_t *)text;
  utf8proc_ssize_t left = (utf8proc_ssize_t)strlen(text);
  while (left > 0) {
    utf8proc_int32_t c;
    utf8proc_ssize_t used = utf8proc_iterate(s, left, &c);
    if (used <= 0) { /* an invalid byte reads as U+FFFD, which is dropped */
      c = 0xfffd;
      used = 1;
    }
    if (!normalize_char(c, out)) return false;
    s += used;
    left -= used;
  }
  return true;
}

/* ---- WordPiece ------------------------------------------------------------------------ */

typedef struct emit {
  int32_t *ids;
  int n, cap; /* ids written, room for pieces (max_len - 1, [SEP] reserved) */
} emit_t;

static void emit(emit_t *e, int id) {
  if (e->n < e->cap) e->ids[e->n++] = id;
}

/* The pieces of one word of nc characters. */
static void wordpiece(const minilm_vocab_t *v, const int32_t *w, size_t nc, emit_t *e) {
  if (nc > MAX_WORD_CHARS) {
    emit(e, v->unk);
    return;
  }
  /* UTF-8 of the word, and the byte offset of each character. */
  char bytes[MAX_WORD_CHARS * 4 + 1];
  size_t off[MAX_WORD_CHARS + 1], nb = 0;
  for (size_t i = 0; i < nc; i++) {
    off[i] = nb;
    nb += (size_t)utf8proc_encode_char(w[i], (utf8proc_uint8_t *)bytes + nb);
  }
  off[nc] = nb;
  int pieces[MAX_WORD_CHARS];
  int np = 0;
  char key[MAX_WORD_CHARS * 4 + 3];
  for (size_t start = 0; start < nc;) {
    int id = -1;
    size_t end = nc;
    for (; end > start; end--) {
      size_t k = 0;
      if (start > 0) key[k++] = '#', key[k++] = '#';
      memcpy(key + k, bytes + off[start], off[end] - off[start]);
      key[k + off[end] - off[start]] = '\0';
      if ((id = minilm_vocab_id(v, key)) >= 0) break;
    }
    if (id < 0) {
      emit(e, v->unk);
      return;
    }
    pieces[np++] = id;
    start = end;
  }
  for (int i = 0; i < np; i++) emit(e, pieces[i]);
}

int minilm_tokenize(const minilm_vocab_t *v, const char *text, int32_t *ids, int max_len) {
  if (max_len < 2) return -1;
  cpbuf_t norm = {0};
  if (!normalize(text, &norm)) {
    free(norm.v);
    return -1;
  }
  emit_t e = {ids, 0, max_len - 1};
  emit(&e, v->cls);
  size_t start = 0;
  for (size_t i = 0; i <= norm.n && e.n < e.cap; i++) {
    int32_t c = i < norm.n ? norm.v[i] : ' ';
    bool space = is_space(c), punct = !space && is_punct(c);
    if (!space && !punct) continue;
    if (i > start) wordpiece(v, norm.v + start, i - start, &e);
    if (punct) wordpiece(v, norm.v + i, 1, &e);
    start = i + 1;
  }
  free(norm.v);
  ids[e.n++] = v->sep;
  return e.n;
}
