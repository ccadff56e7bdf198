/*
 * registry.c - the allocation registry (every pointer gpuport handed out, with its
 * extent and kind), the reference-counted handle table (internal.h "handle registry"),
 * the table of kernel and device-variable descriptors, and the per-thread current
 * device. The tables are sorted arrays under a mutex each: lookups are O(log n) and the
 * tables hold at most thousands of entries in practice. No lock here is held while
 * calling out (finalisers run after the handle table's lock is released), so each is a
 * leaf. The locks are taken around fork and released in both processes, so a child can
 * use gpuport afresh (docs/design/API.md "Threads and fork").
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
  bool dead;               /* destroyed: lookups fail; freed when refs reaches 0 */
  uint32_t refs;           /* the handle's own (until killed) + one per call using it */
  gp__handle_fini_t fini;
} handle_entry_t;

static table_t handles = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, sizeof(handle_entry_t)};

/* Several entries may share a descriptor: the program's registration (owner NULL) and
 * each module that handed it out (the same shared object loaded twice is one object). */
typedef struct desc_entry {
  const void *d;
  gp_module_t owner;
  gp__desc_kind_t kind;
} desc_entry_t;

static table_t descs = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, sizeof(desc_entry_t)};

/* In the order the registry nests them: a descriptor lookup takes the handle table's
 * lock under its own (a module's liveness). */
static void atfork_prepare(void) {
  pthread_mutex_lock(&allocs.lock);
  pthread_mutex_lock(&descs.lock);
  pthread_mutex_lock(&handles.lock);
}
static void atfork_parent(void) {
  pthread_mutex_unlock(&handles.lock);
  pthread_mutex_unlock(&descs.lock);
  pthread_mutex_unlock(&allocs.lock);
}
/* The child's one thread is the one that took the locks: it releases them (a fresh
 * pthread_mutex_init would leave ThreadSanitizer believing them held). */
static void atfork_child(void) { atfork_parent(); }
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
static handle_entry_t *handle_at(size_t i) { return item(&handles, i); }

gp_status_t gp__handle_add(const void *h, gp__handle_kind_t kind, gp__handle_fini_t fini) {
  handle_entry_t e = {h, kind, false, 1, fini};
  table_lock(&handles);
  /* A dead entry keeps its object allocated, so its address cannot be handed out again
   * before the entry goes: a duplicate is a bug of the caller. */
  gp_status_t st = find_exact(&handles, (uintptr_t)h) != SIZE_MAX ? GP_ERROR_INTERNAL
                                                                   : table_insert(&handles, &e);
  table_unlock(&handles);
  return st;
}

/* Whether h is a live handle of kind, without a reference (the answer may be stale). */
static bool handle_live(const void *h, gp__handle_kind_t kind) {
  table_lock(&handles);
  size_t i = find_exact(&handles, (uintptr_t)h);
  bool ok = i != SIZE_MAX && handle_at(i)->kind == kind && !handle_at(i)->dead;
  table_unlock(&handles);
  return ok;
}

bool gp__handle_acquire(const void *h, gp__handle_kind_t kind) {
  if (!h) return false;
  table_lock(&handles);
  size_t i = find_exact(&handles, (uintptr_t)h);
  bool ok = i != SIZE_MAX && handle_at(i)->kind == kind && !handle_at(i)->dead;
  if (ok) handle_at(i)->refs++;
  table_unlock(&handles);
  return ok;
}

/* Drops one reference of entry i (lock held); returns the finaliser to run once the lock
 * is released, or NULL. */
static gp__handle_fini_t drop_locked(size_t i) {
  handle_entry_t *e = handle_at(i);
  if (--e->refs > 0) return NULL;
  gp__handle_fini_t fini = e->fini;
  table_erase(&handles, i);
  return fini;
}

static gp_status_t run_fini(gp__handle_fini_t fini, const void *h) {
  return fini ? fini((void *)(uintptr_t)h) : GP_SUCCESS;
}

gp_status_t gp__handle_release(const void *h) {
  if (!h) return GP_SUCCESS;
  table_lock(&handles);
  size_t i = find_exact(&handles, (uintptr_t)h);
  gp__handle_fini_t fini = i != SIZE_MAX ? drop_locked(i) : NULL;
  table_unlock(&handles);
  return run_fini(fini, h);
}

bool gp__handle_kill(const void *h, gp__handle_kind_t kind, gp_status_t *fini_status) {
  if (fini_status) *fini_status = GP_SUCCESS;
  if (!h) return false;
  table_lock(&handles);
  size_t i = find_exact(&handles, (uintptr_t)h);
  bool ok = i != SIZE_MAX && handle_at(i)->kind == kind && !handle_at(i)->dead;
  gp__handle_fini_t fini = NULL;
  if (ok) {
    handle_at(i)->dead = true;
    fini = drop_locked(i);
  }
  table_unlock(&handles);
  gp_status_t st = run_fini(fini, h);
  if (fini_status) *fini_status = st;
  return ok;
}

static const char *kind_text(gp__handle_kind_t kind) {
  switch (kind) {
    case GP__H_STREAM: return "a live gpuport stream (destroyed, or never created)";
    case GP__H_EVENT: return "a live gpuport event (destroyed, or never created)";
    case GP__H_GRAPH: return "a live graph (destroyed, or never created)";
    case GP__H_GRAPH_EXEC: return "a live executable graph (destroyed, or never created)";
    case GP__H_MODULE: return "a loaded module (unloaded, or never loaded)";
    case GP__H_COMM: return "a live communicator (destroyed, aborted, or never made)";
    case GP__H_GRAPH_NODE: return "a node of a live graph (its graph was destroyed, or it was never made)";
  }
  return "a gpuport handle";
}

gp_status_t gp__handle_get(const void *h, gp__handle_kind_t kind, const char *func,
                           const char *arg) {
  if (h == NULL) return gp__error(GP_ERROR_INVALID_HANDLE, func, "'%s' is NULL", arg);
  if (!gp__handle_acquire(h, kind))
    return gp__error(GP_ERROR_INVALID_HANDLE, func, "'%s' (%p) is not %s", arg, h,
                     kind_text(kind));
  return GP_SUCCESS;
}

gp_status_t gp__handle_hold(const void *h, gp__handle_kind_t kind, const char *func,
                            const char *arg, const void **held) {
  GP__TRY(gp__handle_get(h, kind, func, arg));
  *held = h;
  return GP_SUCCESS;
}

void gp__handle_put_ref(const void *const *held) {
  if (*held == NULL) return;
  gp_status_t st = gp__handle_release(*held);
  if (st != GP_SUCCESS) /* a racing destroy's release: the call that saw it succeeded */
    GP__WARN(GP__SUB_ALL, "releasing handle %p, destroyed meanwhile, failed: %s", *held,
             gp_status_name(st));
}

/* ---- descriptors -------------------------------------------------------------------- */
static desc_entry_t *desc_at(size_t i) { return item(&descs, i); }

/* First index whose descriptor is >= d. */
static size_t desc_lower(uintptr_t d) {
  size_t lo = 0, hi = descs.count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((uintptr_t)desc_at(mid)->d < d) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

gp_status_t gp__desc_add(const void *d, gp__desc_kind_t kind, gp_module_t owner) {
  desc_entry_t e = {d, owner, kind};
  gp_status_t st = GP_SUCCESS;
  table_lock(&descs);
  size_t i = desc_lower((uintptr_t)d);
  bool present = false;
  for (; i < descs.count && desc_at(i)->d == d; i++) present = present || desc_at(i)->owner == owner;
  /* Checked under this lock: an unload kills the module, then drops its entries under
   * it, so an entry added for a module being unloaded is either refused or dropped. */
  if (owner && !handle_live(owner, GP__H_MODULE)) st = GP_ERROR_INVALID_HANDLE;
  else if (!present) st = table_insert(&descs, &e);
  table_unlock(&descs);
  return st;
}

void gp__desc_remove(const void *d, gp_module_t owner) {
  table_lock(&descs);
  for (size_t i = desc_lower((uintptr_t)d); i < descs.count && desc_at(i)->d == d; i++) {
    if (desc_at(i)->owner == owner) {
      table_erase(&descs, i);
      break;
    }
  }
  table_unlock(&descs);
}

void gp__desc_drop_owner(gp_module_t owner) {
  if (owner == NULL) return;
  table_lock(&descs);
  size_t k = 0;
  for (size_t i = 0; i < descs.count; i++)
    if (desc_at(i)->owner != owner) memmove(item(&descs, k++), desc_at(i), sizeof(desc_entry_t));
  descs.count = k;
  table_unlock(&descs);
}

void gp__desc_drop_range(uintptr_t lo, uintptr_t hi) {
  table_lock(&descs);
  size_t a = desc_lower(lo), b = desc_lower(hi);
  if (b > a) {
    memmove(item(&descs, a), item(&descs, b), (descs.count - b) * sizeof(desc_entry_t));
    descs.count -= b - a;
  }
  table_unlock(&descs);
}

void gp__desc_adopt_range(uintptr_t lo, uintptr_t hi, gp_module_t owner) {
  table_lock(&descs);
  for (size_t i = desc_lower(lo); i < descs.count && (uintptr_t)desc_at(i)->d < hi; i++) {
    desc_entry_t *e = desc_at(i);
    if (e->owner == NULL) {
      e->owner = owner;
      continue;
    }
    /* The object is another module's too (loaded again while that one is still held):
     * each module owns the descriptors, so either one's reference keeps them mapped. */
    bool present = false;
    for (size_t j = desc_lower((uintptr_t)e->d); j < descs.count && desc_at(j)->d == e->d; j++)
      present = present || desc_at(j)->owner == owner;
    if (!present) {
      desc_entry_t n = {e->d, owner, e->kind};
      (void)table_insert(&descs, &n); /* after e's equal range; visited later, found present */
    }
  }
  table_unlock(&descs);
}

/* Another reference on handle h of kind, dead or not, while it still exists (a caller
 * that holds one can always take more: the object cannot be finalised meanwhile). */
static bool handle_retain(const void *h, gp__handle_kind_t kind) {
  table_lock(&handles);
  size_t i = find_exact(&handles, (uintptr_t)h);
  bool ok = i != SIZE_MAX && handle_at(i)->kind == kind;
  if (ok) handle_at(i)->refs++;
  table_unlock(&handles);
  return ok;
}

/* gp__desc_find and gp__desc_hold: with dead set, a module already unloaded but still
 * referenced hands out a reference too. */
static bool desc_lookup(const void *d, gp__desc_kind_t kind, gp_module_t *owner, bool dead) {
  if (owner) *owner = NULL;
  if (d == NULL) return false;
  bool linked = false, held = false;
  table_lock(&descs);
  /* A module that handed the descriptor out is preferred: its reference keeps the
   * object mapped while the caller uses the descriptor. */
  for (size_t i = desc_lower((uintptr_t)d); i < descs.count && desc_at(i)->d == d; i++) {
    desc_entry_t *e = desc_at(i);
    if (e->kind != kind) continue;
    if (e->owner == NULL) {
      linked = true;
    } else if (!held && owner &&
               (dead ? handle_retain(e->owner, GP__H_MODULE) : gp__handle_acquire(e->owner, GP__H_MODULE))) {
      *owner = e->owner;
      held = true;
    } else if (!owner && handle_live(e->owner, GP__H_MODULE)) {
      held = true;
    }
  }
  table_unlock(&descs);
  return linked || held;
}

bool gp__desc_find(const void *d, gp__desc_kind_t kind, gp_module_t *owner) {
  return desc_lookup(d, kind, owner, false);
}

bool gp__desc_hold(const void *d, gp__desc_kind_t kind, gp_module_t *owner) {
  /* A live module first: the same object loaded again (a module compiled from the same
   * source while an unloaded one is still held) gives descriptors two owners, and the
   * caller holds the live one. */
  if (desc_lookup(d, kind, owner, false) && (owner == NULL || *owner != NULL)) return true;
  return desc_lookup(d, kind, owner, true);
}

/* The registration of GP_KERNEL_EXPORT (GPU targets) and GP_SYMBOL_EXPORT descriptors
 * (gpuport/kernel_abi.h): called by a static object of the descriptor's translation
 * unit while its object is loaded, so the magic it reads is the emitter's own. */
GP_API int gp__abi_register(const void *desc) {
  uint32_t magic;
  memcpy(&magic, desc, sizeof magic);
  gp__desc_kind_t kind = magic == GP_SYMBOL_MAGIC ? GP__DESC_SYMBOL : GP__DESC_KERNEL;
  return gp__desc_add(desc, kind, NULL) == GP_SUCCESS ? 0 : -1;
}

GP_API void gp__abi_unregister(const void *desc) { gp__desc_remove(desc, NULL); }

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
