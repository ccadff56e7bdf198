/*
 * tokenizer.h - BERT's uncased WordPiece tokenizer, as the reference library runs it for
 * all-MiniLM-L6-v2 (Hugging Face tokenizers: BertNormalizer with clean_text,
 * handle_chinese_chars, strip_accents and lowercase; BertPreTokenizer; WordPiece with
 * "##" continuations, [UNK] and at most 100 characters a word; [CLS] ... [SEP]).
 *
 * Unicode data (categories, canonical decomposition, lower case) comes from utf8proc.
 */
#ifndef MINILM_TOKENIZER_H
#define MINILM_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A WordPiece vocabulary: token strings and their ids (the line numbers of vocab.txt). */
typedef struct minilm_vocab minilm_vocab_t;

/** Reads vocab.txt (one token a line, id = line number from 0). Returns 0, or -1 with a
 *  message in err. The vocabulary must hold [PAD], [UNK], [CLS] and [SEP]. */
int minilm_vocab_load(minilm_vocab_t **out, const char *path, char *err, size_t errlen);
void minilm_vocab_free(minilm_vocab_t *v);
/** Number of tokens. */
int minilm_vocab_size(const minilm_vocab_t *v);
/** Id of a token (NUL-terminated), or -1. */
int minilm_vocab_id(const minilm_vocab_t *v, const char *token);
/** Token of an id, or NULL when out of range. */
const char *minilm_vocab_token(const minilm_vocab_t *v, int id);
/** Ids of the special tokens. */
int minilm_vocab_pad(const minilm_vocab_t *v);
int minilm_vocab_cls(const minilm_vocab_t *v);
int minilm_vocab_sep(const minilm_vocab_t *v);
int minilm_vocab_unk(const minilm_vocab_t *v);

/**
 * Tokenizes one UTF-8 text into [CLS] pieces... [SEP], keeping at most max_len ids (the
 * pieces are truncated at the end, as truncation=True does; max_len >= 2). Invalid UTF-8
 * bytes are read as U+FFFD, which the normalisation drops. Returns the number of ids
 * written to ids (capacity max_len), or -1 when out of memory or max_len < 2.
 */
int minilm_tokenize(const minilm_vocab_t *v, const char *text, int32_t *ids, int max_len);

#ifdef __cplusplus
}
#endif

#endif /* MINILM_TOKENIZER_H */
