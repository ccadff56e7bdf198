/*
 * fuzz_safetensors.c - libFuzzer harness for the safetensors reader
 * (examples/minilm/safetensors.c): any file either opens, and then every tensor it
 * lists lies inside the mapping with bytes = product(shape) x element size, or is
 * refused with a message; never a crash, a leak or a read outside the file.
 */
#include <string.h>

#include "fuzz_input.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64], err[256];
  int fd = fuzz_input_file(data, size, path, sizeof path);
  if (fd < 0) return 0;
  safetensors_t *st = NULL;
  if (safetensors_open(&st, path, err, sizeof err) == 0) {
    for (int i = 0; i < safetensors_count(st); i++) {
      const safetensors_tensor_t *t = safetensors_at(st, i);
      size_t elems = 1;
      for (int d = 0; d < t->ndim; d++) elems *= (size_t)t->shape[d];
      if (t->bytes != elems * safetensors_dtype_size(t->dtype)) abort();
      fuzz_touch(t->data, t->bytes);
      if (safetensors_find(st, t->name) == NULL) abort();
    }
    safetensors_close(st);
  } else if (err[0] == '\0') {
    abort(); /* a refusal always says why */
  }
  close(fd);
  return 0;
}
