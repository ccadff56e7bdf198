/*
 * fuzz_vocab.c - libFuzzer harness for the WordPiece vocabulary loader
 * (examples/minilm/tokenizer.c, minilm_vocab_load): any vocab.txt either loads, and then
 * every id maps to its token and back to an id of the same token, or is refused with a
 * message; never a crash, a leak or an out-of-bounds read.
 */
#include <string.h>

#include "fuzz_input.h"
#include "tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64], err[256];
  int fd = fuzz_input_file(data, size, path, sizeof path);
  if (fd < 0) return 0;
  minilm_vocab_t *v = NULL;
  err[0] = '\0';
  if (minilm_vocab_load(&v, path, err, sizeof err) == 0) {
    const int n = minilm_vocab_size(v);
    for (int id = 0; id < n; id++) {
      const char *tok = minilm_vocab_token(v, id);
      if (tok == NULL) abort();
      /* Duplicate lines keep one id; the token found must be the same string. */
      int back = minilm_vocab_id(v, tok);
      if (back < 0 || strcmp(minilm_vocab_token(v, back), tok) != 0) abort();
    }
    if (minilm_vocab_token(v, n) != NULL || minilm_vocab_token(v, -1) != NULL) abort();
    if (minilm_vocab_pad(v) < 0 || minilm_vocab_unk(v) < 0 || minilm_vocab_cls(v) < 0 ||
        minilm_vocab_sep(v) < 0)
      abort(); /* a loaded vocabulary holds the special tokens */
    minilm_vocab_free(v);
  } else if (err[0] == '\0') {
    abort();
  }
  close(fd);
  return 0;
}
