/*
 * registry.c - the allocation registry (every pointer gpuport handed out, with its
 * extent and kind), the live-handle set, and the per-thread current device.
 * Both tables are sorted arrays under a mutex: lookups are O(log n) and the tables
 * hold at most thousands of entries in practice. Locks are re-initialised in a
 * forked child, so a child can use gpuport afresh (docs/design/API.md "Threads and fork").
 */
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct table {
  pthread_mutex_t lock;
  void *items;
  size_t count, cap, item_size;
} table_t;

static table_t allocs = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, sizeof(gp__alloc_info_t)};

typedef struct handle_entry {
  const void *h;
  gp__handle_kind_t kind;
} handle_entry_t;

static table_t handles = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, sizeof(handle_entry_t)};

static void atfork_prepare(void) {
  pthread_mutex_lock(&allocs.lock);
  pthread_mutex_lock(&handles.lock);
}
static void atfork_parent(void) {
  pthread_mutex_unlock(&handles.lock);
  pthread_mutex_unlock(&allocs.lock);
}
static void atfork_child(void) {
  pthread_mutex_init(&handles.lock, NULL);
  pthread_mutex_init(&allocs.lock, NULL);
}
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void install_atfork(void) { pthread_atfork(atfork_prepare, atfork_parent, atfork_child); }

static void table_lock(table_t *t) {
  pthread_once(&fork_once, install_atfork);
  pthread_mutex_lock(&t->lock);
}
static void table_unlock(table_t *t) { pthread_mutex_unlock(&t->lock); }

static void *item(table_t *t, size_t i) { return (char *)t->items + i * t->item_size; }

/* Key of an item: both entry types begin with their pointer. */
static uintptr_t key(table_t *t, size_t i) { return (uintptr_t)(*(void *const *)item(t, i)); }

/* First index whose key is > k. */
static size_t upper_bound(table_t *t, uintptr_t k) {
  size_t lo = 0, hi = t->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (key(t, mid) <= k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static gp_status_t table_insert(table_t *t, const void *entry) {
  if (t->count == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    void *p = realloc(t->items, cap * t->item_size);
    if (!p) return GP_ERROR_OUT_OF_MEMORY;
    t->items = p;
    t->cap = cap;
  }
  size_t at = upper_bound(t, (uintptr_t)(*(void *const *)entry));
  memmove(item(t, at + 1), item(t, at), (t->count - at) * t->item_size);
  memcpy(item(t, at), entry, t->item_size);
  t->count++;
  return GP_SUCCESS;
}

static void table_erase(table_t *t, size_t at) {
  memmove(item(t, at), item(t, at + 1), (t->count - at - 1) * t->item_size);
  t->count--;
}

/* Index of the entry whose key is exactly k, or SIZE_MAX. */
static size_t find_exact(table_t *t, uintptr_t k) {
  size_t i = upper_bound(t, k);
  return (i > 0 && key(t, i - 1) == k) ? i - 1 : SIZE_MAX;
}

/* ---- allocations ---------------------------------------------------------------- */
gp_status_t gp__alloc_register(void *base, size_t bytes, gp__alloc_kind_t kind, int device) {
  gp__alloc_info_t e = {base, bytes, kind, device};
  table_lock(&allocs);
  gp_status_t st = table_insert(&allocs, &e);
  table_unlock(&allocs);
  return st;
}

gp_status_t gp__alloc_unregister(void *base, gp__alloc_info_t *removed) {
  table_lock(&allocs);
  size_t i = find_exact(&allocs, (uintptr_t)base);
  if (i != SIZE_MAX) {
    if (removed) *removed = *(gp__alloc_info_t *)item(&allocs, i);
    table_erase(&allocs, i);
  }
  table_unlock(&allocs);
  return i == SIZE_MAX ? GP_ERROR_NOT_FOUND : GP_SUCCESS;
}

bool gp__alloc_find(const void *ptr, gp__alloc_info_t *info) {
  bool found = false;
  table_lock(&allocs);
  size_t i = upper_bound(&allocs, (uintptr_t)ptr);
  if (i > 0) {
    gp__alloc_info_t *e = item(&allocs, i - 1);
    uintptr_t b = (uintptr_t)e->base, p = (uintptr_t)ptr;
    /* A zero-byte entry still owns its base address. */
    if (p == b || p - b < e->bytes) {
      found = true;
      if (info) *info = *e;
    }
  }
  table_unlock(&allocs);
  return found;
}

bool gp__alloc_find_overlap(const void *ptr, size_t bytes, gp__alloc_info_t *info) {
  if (bytes == 0) return gp__alloc_find(ptr, info);
  bool found = false;
  uintptr_t p = (uintptr_t)ptr, last = p + (bytes - 1); /* callers rule out wrap-around */
  table_lock(&allocs);
  /* Entries do not overlap one another, so only the last one starting at or before
   * the range's last byte can reach into the range. */
  size_t i = upper_bound(&allocs, last);
  if (i > 0) {
    gp__alloc_info_t *e = item(&allocs, i - 1);
    uintptr_t b = (uintptr_t)e->base;
    if (b >= p || p - b < e->bytes) {
      found = true;
      if (info) *info = *e;
    }
  }
  table_unlock(&allocs);
  return found;
}

void gp__alloc_drop_device(int device, void (*cb)(const gp__alloc_info_t *, void *), void *user) {
  for (;;) {
    gp__alloc_info_t e;
    bool found = false;
    table_lock(&allocs);
    for (size_t i = 0; i < allocs.count; i++) {
      gp__alloc_info_t *x = item(&allocs, i);
      if (x->device == device && x->kind != GP__ALLOC_REGISTERED && x->kind != GP__ALLOC_HOST) {
        e = *x;
        table_erase(&allocs, i);
        found = true;
        break;
      }
    }
    table_unlock(&allocs);
    if (!found) return;
    if (cb) cb(&e, user); /* outside the lock: the callback frees memory */
  }
}

/* ---- handles -------------------------------------------------------------------- */
gp_status_t gp__handle_add(const void *h, gp__handle_kind_t kind) {
  handle_entry_t e = {h, kind};
  table_lock(&handles);
  gp_status_t st = table_insert(&handles, &e);
  table_unlock(&handles);
  return st;
}

bool gp__handle_remove(const void *h, gp__handle_kind_t kind) {
  table_lock(&handles);
  size_t i = find_exact(&handles, (uintptr_t)h);
  bool ok = i != SIZE_MAX && ((handle_entry_t *)item(&handles, i))->kind == kind;
  if (ok) table_erase(&handles, i);
  table_unlock(&handles);
  return ok;
}

bool gp__handle_valid(const void *h, gp__handle_kind_t kind) {
  if (!h) return false;
  table_lock(&handles);
  size_t i = find_exact(&handles, (uintptr_t)h);
  bool ok = i != SIZE_MAX && ((handle_entry_t *)item(&handles, i))->kind == kind;
  table_unlock(&handles);
  return ok;
}

/* ---- current device --------------------------------------------------------------- */
/* In the thread's state (src/thread.c); gp__current_device() reads it (internal.h). */
gp_status_t gp__set_current_device(int device, const char *func) {
  gp__thread_t *t = device == 0 ? gp__thread_peek() : gp__thread();
  if (t == NULL) {
    if (device == 0) return GP_SUCCESS;
    return gp__error(GP_ERROR_OUT_OF_MEMORY, func,
                     "no host memory for the calling thread's state (device %d)", device);
  }
  t->device = device;
  return GP_SUCCESS;
}
