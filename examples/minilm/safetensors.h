/*
 * safetensors.h - a read-only view of a .safetensors file (the format of Hugging Face's
 * safetensors library: an 8-byte little-endian header length N, N bytes of JSON naming
 * each tensor's dtype, shape and [begin, end) byte offsets into the data that follows).
 * The file is mapped; the header is parsed with cJSON and every entry is checked (known
 * dtype, shape, offsets inside the file, size = product of the shape x element size).
 */
#ifndef MINILM_SAFETENSORS_H
#define MINILM_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SAFETENSORS_MAX_DIMS 8

/** Element types of the format ("F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8",
 *  "U8", "BOOL"). */
typedef enum safetensors_dtype {
  SAFETENSORS_F32, SAFETENSORS_F16, SAFETENSORS_BF16, SAFETENSORS_F64, SAFETENSORS_I64,
  SAFETENSORS_I32, SAFETENSORS_I16, SAFETENSORS_I8, SAFETENSORS_U8, SAFETENSORS_BOOL
} safetensors_dtype_t;

typedef struct safetensors_tensor {
  const char *name;
  safetensors_dtype_t dtype;
  int ndim;
  int64_t shape[SAFETENSORS_MAX_DIMS];
  const void *data; /* inside the mapping: valid until safetensors_close */
  size_t bytes;
} safetensors_tensor_t;

typedef struct safetensors safetensors_t;

/** Maps and checks a file. Returns 0, or -1 with a message in err (file, and what is wrong). */
int safetensors_open(safetensors_t **out, const char *path, char *err, size_t errlen);
/** The tensor called name, or NULL. */
const safetensors_tensor_t *safetensors_find(const safetensors_t *st, const char *name);
/** Number of tensors, and tensor i (in header order). */
int safetensors_count(const safetensors_t *st);
const safetensors_tensor_t *safetensors_at(const safetensors_t *st, int i);
/** Bytes of one element of dtype. */
size_t safetensors_dtype_size(safetensors_dtype_t dtype);
void safetensors_close(safetensors_t *st);

#ifdef __cplusplus
}
#endif

#endif /* MINILM_SAFETENSORS_H */
