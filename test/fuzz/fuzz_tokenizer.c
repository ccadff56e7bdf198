/*
 * fuzz_tokenizer.c - libFuzzer harness for the WordPiece tokenizer
 * (examples/minilm/tokenizer.c, minilm_tokenize) over any bytes, valid UTF-8 or not:
 * the result is [CLS] ids... [SEP] within max_len, every id a vocabulary id; never a
 * crash or a read past the text. The vocabulary is a small fixed one, so words split
 * into "##" pieces and unknown words become [UNK].
 */
#include <string.h>

#include "fuzz_input.h"
#include "tokenizer.h"

static minilm_vocab_t *g_vocab;

static const char k_vocab[] =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\na\nman\nis\neat\n##ing\nfood\n.\n,\n!\n"
    "un\n##believ\n##able\n##s\nb\n##r\n##e\n##a\n##d\n\xe4\xb8\xad\n\xc3\xa9\ne\n";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  char path[64], err[256];
  int fd = fuzz_input_file((const uint8_t *)k_vocab, sizeof k_vocab - 1, path, sizeof path);
  if (fd < 0 || minilm_vocab_load(&g_vocab, path, err, sizeof err) != 0) abort();
  close(fd);
  return 0;
}

static void check(const char *text, int max_len) {
  int32_t ids[130];
  memset(ids, 0xff, sizeof ids);
  int n = minilm_tokenize(g_vocab, text, ids, max_len);
  if (n < 2 || n > max_len) abort();
  if (ids[0] != minilm_vocab_cls(g_vocab) || ids[n - 1] != minilm_vocab_sep(g_vocab)) abort();
  for (int i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= minilm_vocab_size(g_vocab)) abort();
  for (int i = n; i < (int)(sizeof ids / sizeof ids[0]); i++)
    if (ids[i] != -1) abort(); /* nothing written past the result */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (text == NULL) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  check(text, 128);
  check(text, 2);
  free(text);
  return 0;
}
