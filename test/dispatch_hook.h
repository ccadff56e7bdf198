/*
 * dispatch_hook.h - what the test builds learn from the implementation tables
 * (src/dispatch.h) through test/dispatch_hook.c, which every test binary links.
 */
#ifndef GP_TEST_DISPATCH_HOOK_H
#define GP_TEST_DISPATCH_HOOK_H

#include "dispatch.h"

/* The kernel (a static string: a kernel's name, or the host path's) the calling thread's
 * last call of op chose, NULL when none chose one since gp__last_kernel_reset(). */
const char *gp__last_kernel(gp__op_t op);
/* Forgets the calling thread's choices, so a call that chooses nothing (an empty GEMM)
 * can be told from one that does. */
void gp__last_kernel_reset(void);

#endif /* GP_TEST_DISPATCH_HOOK_H */
