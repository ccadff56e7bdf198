/*
 * dispatch_hook.c - the test builds' side of the implementation tables' hooks
 * (src/dispatch.h). Linked into every test binary and nowhere else: the library refers
 * to these functions weakly, so the shared library has neither hook.
 *   - gp__dispatch_test_chose records, per thread and operation, the kernel the walk chose
 *     (a pointer to a static string: nothing is copied), for gp__last_kernel;
 *   - gp__dispatch_test_off switches the table entries named in GP__DISPATCH_DISABLE
 *     (comma-separated full names, "gemm.sm80,attention_fwd.host") off: the walk passes
 *     them over as if they had declined. `make check-dispatch` switches each entry off
 *     in turn and expects a test to fail (scripts/check-dispatch.sh).
 */
#include <stdlib.h>
#include <string.h>

#include "dispatch_hook.h"

static _Thread_local const char *tl_last[GP__OP_COUNT];

void gp__dispatch_test_chose(gp__op_t op, const char *kernel) {
  if ((unsigned)op < GP__OP_COUNT) tl_last[op] = kernel;
}

const char *gp__last_kernel(gp__op_t op) { return (unsigned)op < GP__OP_COUNT ? tl_last[op] : NULL; }

void gp__last_kernel_reset(void) { memset(tl_last, 0, sizeof tl_last); }

bool gp__dispatch_test_off(const char *entry) {
  const char *list = getenv("GP__DISPATCH_DISABLE");
  const size_t n = strlen(entry);
  for (const char *s = list; s && *s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL)
    if (strncmp(s, entry, n) == 0 && (s[n] == ',' || s[n] == '\0')) return true;
  return false;
}
