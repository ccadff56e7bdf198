/*
 * exec_fiber.c - stacks and context switches for the CPU executor (see exec_fiber.h).
 */
#include "cpu/exec_fiber.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef GP__ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define GP__HAVE_VALGRIND 1
#endif
#endif

#ifdef GP__FIBER_ASM
void gp__fiber_swap(void **save_sp, void *load_sp);
void gp__fiber_trampoline(void);
#endif

bool gp__fiber_on_valgrind(void) {
#ifdef GP__HAVE_VALGRIND
  return RUNNING_ON_VALGRIND != 0;
#else
  return false;
#endif
}

size_t gp__fiber_default_stack(void) {
  static size_t cached;
  size_t s = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (s) return s;
  s = (size_t)256 * 1024;
  const char *e = getenv("GP_CPU_STACK_KB");
  if (e && *e) {
    long kb = strtol(e, NULL, 10);
    if (kb >= 16 && kb <= 1024 * 1024) s = (size_t)kb * 1024;
  }
#ifdef GP__ASAN
  s *= 4; /* instrumented frames are larger */
#endif
  __atomic_store_n(&cached, s, __ATOMIC_RELAXED);
  return s;
}

bool gp__fiber_stack_alloc(gp__fiber_t *f, size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size = (size + page - 1) & ~(page - 1);
  void *m = mmap(NULL, size + page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) return false;
  /* The guard page below the stack turns an overflow into a fault at once. */
  if (mprotect(m, page, PROT_NONE) != 0) {
    munmap(m, size + page);
    return false;
  }
  f->map = (unsigned char *)m;
  f->map_size = size + page;
  f->stack_lo = f->map + page;
  f->stack_size = size;
  f->sp = NULL;
  f->has_frames = false;
#ifdef GP__HAVE_VALGRIND
  f->valgrind_id = VALGRIND_STACK_REGISTER(f->stack_lo, f->stack_lo + f->stack_size);
#endif
  return true;
}

void gp__fiber_stack_free(gp__fiber_t *f) {
  if (!f->map) return;
#ifdef GP__HAVE_VALGRIND
  VALGRIND_STACK_DEREGISTER(f->valgrind_id);
#endif
#ifdef GP__ASAN
  ASAN_UNPOISON_MEMORY_REGION(f->stack_lo, f->stack_size);
#endif
  munmap(f->map, f->map_size);
  f->map = NULL;
  f->stack_lo = NULL;
  f->stack_size = 0;
}

#ifdef GP__FIBER_UCONTEXT
/* makecontext passes int arguments only (POSIX): the fiber comes as two 32-bit halves,
 * not through a thread-local (the library keeps none but the executor's context). */
static void gp__uc_entry(unsigned lo, unsigned hi) {
  gp__fiber_t *f = (gp__fiber_t *)(uintptr_t)(((uint64_t)hi << 32) | lo);
  f->entry(f->arg);
  abort(); /* entries never return */
}
#endif

void gp__fiber_prepare(gp__fiber_t *f, void (*entry)(void *), void *arg) {
  unsigned char *top = f->stack_lo + f->stack_size;
#ifdef GP__ASAN
  /* Frames abandoned on this stack (a failed block) leave poisoned redzones behind. */
  if (f->has_frames) {
    /* A fiber that left from a signal handler saved a pointer into the signal stack:
     * then the whole stack is cleaned. */
    unsigned char *sp = (unsigned char *)f->sp, *lo = f->stack_lo;
    if (sp && sp > f->stack_lo + 1024 && sp <= top) lo = sp - 1024;
    ASAN_UNPOISON_MEMORY_REGION(lo, (size_t)(top - lo));
  }
#endif
  f->has_frames = false;
  f->asan_fake = NULL;
#ifdef GP__FIBER_ASM
  uintptr_t t = (uintptr_t)top & ~(uintptr_t)15;
  uint64_t *sp = (uint64_t *)(t - 80);
  uint32_t mxcsr;
  uint16_t fpucw;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(fpucw));
  memset(sp, 0, 80);
  memcpy((unsigned char *)sp, &mxcsr, 4);          /* new fibers inherit the FP modes */
  memcpy((unsigned char *)sp + 4, &fpucw, 2);
  sp[4] = (uint64_t)(uintptr_t)arg;                 /* r12 */
  sp[5] = (uint64_t)(uintptr_t)entry;               /* rbx */
  sp[7] = (uint64_t)(uintptr_t)&gp__fiber_trampoline; /* return address */
  f->sp = sp;
#else
  getcontext(&f->uc);
  f->uc.uc_stack.ss_sp = f->stack_lo;
  f->uc.uc_stack.ss_size = f->stack_size;
  f->uc.uc_link = NULL;
  f->entry = entry;
  f->arg = arg;
  f->sp = top;
  uint64_t p = (uint64_t)(uintptr_t)f;
  makecontext(&f->uc, (void (*)(void))gp__uc_entry, 2, (unsigned)(p & 0xffffffffu), (unsigned)(p >> 32));
#endif
}

void gp__fiber_switch(gp__fiber_t *from, gp__fiber_t *to, bool dying) {
  from->has_frames = true;
#ifdef GP__ASAN
  __sanitizer_start_switch_fiber(dying ? NULL : &from->asan_fake, to->stack_lo, to->stack_size);
#else
  (void)dying;
#endif
#ifdef GP__FIBER_ASM
  gp__fiber_swap(&from->sp, to->sp);
#else
  from->sp = __builtin_frame_address(0); /* depth, for unpoisoning after an abandon */
  swapcontext(&from->uc, &to->uc);
#endif
#ifdef GP__ASAN
  __sanitizer_finish_switch_fiber(from->asan_fake, NULL, NULL);
#endif
}

void gp__fiber_started(gp__fiber_t *prev) {
#ifdef GP__ASAN
  const void *lo = NULL;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(NULL, &lo, &size);
  if (prev && !prev->stack_lo) {
    prev->stack_lo = (unsigned char *)(uintptr_t)lo;
    prev->stack_size = size;
  }
#else
  (void)prev;
#endif
}
