/*
 * main.c - sentence embeddings with all-MiniLM-L6-v2 on gpuport, the short version
 * (`gpuport embed` is the full command):
 *
 *   make model && make examples-cpu
 *   bin/examples-cpu/minilm "A man is eating food." "A man is eating a piece of bread."
 *
 * Prints the first values of each embedding and the cosine similarity of each pair.
 * MINILM_MODEL_DIR names the model folder (default models/all-MiniLM-L6-v2).
 */
#include <stdio.h>
#include <stdlib.h>

#include "minilm.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SENTENCE...\n", argv[0]);
    return 2;
  }
  const char *dir = getenv("MINILM_MODEL_DIR") ? getenv("MINILM_MODEL_DIR") : MINILM_DEFAULT_DIR;
  char err[512];
  minilm_model_t *model = NULL;
  if (minilm_load(&model, dir, NULL, err, sizeof(err)) != 0) { /* f32, default options */
    fprintf(stderr, "minilm: %s (run `make model` first)\n", err);
    return 1;
  }
  int n = argc - 1;
  float *e = malloc(sizeof(float) * MINILM_DIM * (size_t)n);
  if (!e || minilm_embed(model, (const char *const *)argv + 1, n, e) != GP_SUCCESS) {
    fprintf(stderr, "minilm: %s\n", e ? minilm_error(model) : "out of memory");
    free(e);
    minilm_free(model);
    return 1;
  }
  for (int i = 0; i < n; i++) {
    printf("[%d] %.4f %.4f %.4f %.4f ... (%d values, backend %s)  %s\n", i, e[i * MINILM_DIM],
           e[i * MINILM_DIM + 1], e[i * MINILM_DIM + 2], e[i * MINILM_DIM + 3], MINILM_DIM,
           gp_backend_name(), argv[i + 1]);
  }
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      printf("cosine(%d, %d) = %.4f\n", i, j,
             minilm_cosine(e + (size_t)i * MINILM_DIM, e + (size_t)j * MINILM_DIM, MINILM_DIM));
  free(e);
  minilm_free(model);
  return 0;
}
