/*
 * entries.c - prints every entry of this backend's implementation tables, one full name
 * a line ("gemm.sm80"), for scripts/check-dispatch.sh: the list comes from the tables
 * themselves, so a new row is checked without touching the script.
 */
#include <stdio.h>

#include "dispatch.h"

int main(void) {
  for (size_t i = 0; gp__gemm_table_entry(i); i++)
    printf("%s.%s\n", gp__op_name(GP__OP_GEMM), gp__gemm_table_entry(i)->name);
  for (size_t i = 0; gp__attn_fwd_table_entry(i); i++)
    printf("%s.%s\n", gp__op_name(GP__OP_ATTN_FWD), gp__attn_fwd_table_entry(i)->name);
  for (size_t i = 0; gp__attn_bwd_table_entry(i); i++)
    printf("%s.%s\n", gp__op_name(GP__OP_ATTN_BWD), gp__attn_bwd_table_entry(i)->name);
  for (size_t i = 0; gp__attn_kv_table_entry(i); i++)
    printf("%s.%s\n", gp__op_name(GP__OP_ATTN_KVCACHE), gp__attn_kv_table_entry(i)->name);
  return 0;
}
