/*
 * fuzz_comm_id.c - libFuzzer harness for the communicator id a rank presents
 * (gp_comm_init_rank on the cpu backend: src/comm.c checks, src/cpu/comm_cpu.c's id
 * validation, segment name, nonce and clique-membership checks). The input's first two
 * bytes choose nranks (1..4) and rank (possibly out of range); the rest is XORed into a
 * real id made once at start, so the fuzzer explores both ids that name the real
 * rendezvous segment (foreign nonces, wrong nranks, claimed ranks) and ids that name
 * nothing. Every call either succeeds (a one-rank clique, destroyed at once) or fails
 * with a message; never a crash, a hang (the communicator's timeout is 50 ms) or a leak.
 */
#include <string.h>

#include "fuzz_input.h"
#include <gpuport.h>

static gp_comm_id_t g_id;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  setenv("GP_COMM_TIMEOUT_S", "0.05", 1);
  setenv("GP_DEBUG", "NONE", 1);
  if (gp_comm_get_unique_id(&g_id) != GP_SUCCESS) abort();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  const int nranks = 1 + data[0] % 4, rank = (int)(data[1] % 6) - 1;
  gp_comm_id_t id = g_id;
  for (size_t i = 2; i < size && i - 2 < sizeof id.internal; i++) id.internal[i - 2] ^= (char)data[i];
  gp_comm_t comm = NULL;
  gp_status_t st = gp_comm_init_rank(&comm, nranks, id, rank);
  if (st == GP_SUCCESS) {
    if (comm == NULL || gp_comm_destroy(comm) != GP_SUCCESS) abort();
  } else if (comm != NULL || gp_last_error_message()[0] == '\0') {
    abort(); /* a refusal leaves no communicator and says why */
  }
  return 0;
}
