/*
 * exec_fiber.h - fibers for the CPU executor: mmap'ed stacks with a guard page, a
 * hand-written context switch on x86-64 (src/cpu/fiber_x86_64.S: callee-saved
 * registers, MXCSR, x87 control word; no system call) and ucontext elsewhere, with the
 * AddressSanitizer and valgrind annotations that stack switching needs.
 *
 * A fiber never moves between OS threads.
 */
#ifndef GP_CPU_EXEC_FIBER_H
#define GP_CPU_EXEC_FIBER_H

#include <stdbool.h>
#include <stddef.h>

#if defined(__x86_64__) && !defined(GP_CPU_FIBER_UCONTEXT)
#define GP__FIBER_ASM 1
#else
#define GP__FIBER_UCONTEXT 1
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define GP__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GP__ASAN 1
#endif
#endif

typedef struct gp__fiber {
  void *sp; /* saved stack pointer while suspended (asm switch) */
#ifdef GP__FIBER_UCONTEXT
  ucontext_t uc;
  void (*entry)(void *);
  void *arg;
#endif
  unsigned char *map;       /* the mapping (guard page first); NULL: a thread's own stack */
  size_t map_size;
  unsigned char *stack_lo;  /* usable stack, above the guard page */
  size_t stack_size;
  void *asan_fake;          /* AddressSanitizer fake stack while suspended */
  unsigned valgrind_id;
  bool has_frames;          /* was suspended or abandoned with frames on it */
} gp__fiber_t;

/* Maps a stack of size bytes (rounded to pages) plus a guard page; false on failure. */
bool gp__fiber_stack_alloc(gp__fiber_t *f, size_t size);
void gp__fiber_stack_free(gp__fiber_t *f);
/* Prepares f to run entry(arg) from the top of its stack at the next switch to it.
 * entry must never return: it ends by switching away with dying = true. */
void gp__fiber_prepare(gp__fiber_t *f, void (*entry)(void *), void *arg);
/* Suspends from (dying: never to be resumed) and runs to. Returns when from resumes. */
void gp__fiber_switch(gp__fiber_t *from, gp__fiber_t *to, bool dying);
/* First call of every fiber entry: completes the sanitizer handshake; fills the
 * stack bounds of prev (the fiber that switched here) when they were unknown. */
void gp__fiber_started(gp__fiber_t *prev);
/* Default stack size of a GPU thread's fiber (GP_CPU_STACK_KB, else 256 KiB; x4
 * under AddressSanitizer). */
size_t gp__fiber_default_stack(void);
/* Whether the process runs under valgrind. */
bool gp__fiber_on_valgrind(void);

#endif /* GP_CPU_EXEC_FIBER_H */
