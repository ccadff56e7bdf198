/*
 * fuzz_image.c - libFuzzer harness for the code-image check every loader call makes
 * first (src/image.c, gp__image_check_for), as each backend runs it: the cpu backend's
 * (host ELF shared objects), the cuda backend's (cubin, fatbin, PTX) and the hip
 * backend's (AMD code objects, offload bundles, compressed bundles). Any bytes are
 * either accepted as an image whose headers describe only data inside it, or refused
 * with GP_ERROR_INVALID_IMAGE and a message; never a crash or a read outside the buffer
 * (the buffer is an exact-size copy, so ASan sees a read one byte past it).
 */
#include <string.h>

#include "fuzz_input.h"
#include "module.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int backends[] = {GP_BACKEND_CPU, GP_BACKEND_CUDA, GP_BACKEND_HIP};
  unsigned char *copy = malloc(size ? size : 1);
  if (copy == NULL) return 0;
  memcpy(copy, data, size);
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    gp_status_t st = gp__image_check_for(backends[i], copy, size, "fuzz", "the image");
    if (st != GP_SUCCESS && st != GP_ERROR_INVALID_IMAGE) abort();
    if (st != GP_SUCCESS && gp_last_error_message()[0] == '\0') abort();
  }
  free(copy);
  return 0;
}
