/*
 * thread.c - the calling thread's state (the last error message, the current device,
 * ...), kept on the heap behind one pthread key instead of in thread-local storage.
 *
 * Why not TLS: all thread-locals of one ELF module share one TLS block, and the CPU
 * executor's context (gp__cpu_tls, initial-exec for the speed of every GPU thread,
 * docs/LAUNCH_ABI.md section 3) makes that whole block static. A library loaded with
 * dlopen (Python's ctypes, plugin hosts) takes static TLS from a surplus that glibc sizes
 * at startup for all such libraries of the process together (about 1.7 KB by default:
 * 144 bytes for libc in each dlmopen namespace but the first, 144 per namespace for
 * libraries such as libgomp, and glibc.rtld.optional_static_tls; glibc elf/dl-tls.c),
 * so the block stays the context alone.
 *
 * The state is made on first use and freed by the key's destructor when the thread
 * exits (POSIX pthread_key_create: a destructor that makes the value again is run again,
 * up to PTHREAD_DESTRUCTOR_ITERATIONS times, so a later destructor that records an
 * error is cleaned up too).
 */
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
pthread_key_t gp__thread_key;
int gp__thread_key_state;
static long g_live; /* states made and not yet freed (atomic), for the tests */

static void thread_free(void *p) {
  gp__thread_t *t = (gp__thread_t *)p;
  gp__comm_group_free(t->comm_group);
  free(t);
  __atomic_fetch_sub(&g_live, 1, __ATOMIC_RELAXED);
}

static void key_make(void) {
  int made = pthread_key_create(&gp__thread_key, thread_free) == 0;
  __atomic_store_n(&gp__thread_key_state, made ? 1 : -1, __ATOMIC_RELEASE);
}

/* Made when the library is loaded, so that the reads of every launch (the current
 * device) test one flag rather than run pthread_once. */
__attribute__((constructor)) static void key_make_at_load(void) { pthread_once(&g_once, key_make); }

bool gp__thread_key_ready(void) {
  pthread_once(&g_once, key_make);
  return __atomic_load_n(&gp__thread_key_state, __ATOMIC_ACQUIRE) > 0;
}

gp__thread_t *gp__thread(void) {
  gp__thread_t *t = gp__thread_peek();
  if (t != NULL || __atomic_load_n(&gp__thread_key_state, __ATOMIC_ACQUIRE) <= 0) return t;
  t = (gp__thread_t *)calloc(1, sizeof(*t));
  if (t == NULL) return NULL;
  if (pthread_setspecific(gp__thread_key, t) != 0) {
    free(t);
    return NULL;
  }
  __atomic_fetch_add(&g_live, 1, __ATOMIC_RELAXED);
  return t;
}

long gp__thread_live(void) { return __atomic_load_n(&g_live, __ATOMIC_RELAXED); }
