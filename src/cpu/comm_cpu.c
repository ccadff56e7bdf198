/*
 * comm_cpu.c - the cpu backend's communicators (the gp__comm_backend_t of src/comm.h):
 * unique ids, the host rendezvous, splits, the enqueue of calls as stream work, the
 * order of a rank's operations, and teardown. The algorithms are in comm_engine.c.
 *
 * Rendezvous across processes (docs/design/COMM.md "The cpu backend"): the unique id carries 128 random bits that name
 * a POSIX shared-memory segment, "/gpuport-<hex>", and a 64-bit job nonce. The id's maker
 * (gp_comm_get_unique_id) creates the segment (O_CREAT | O_EXCL, mode 0600) holding just
 * the control block's header: the nonce, the maker's identity. Ranks never create it:
 * they open it, check that this user owns it, that nobody else may read it and that its
 * nonce is the id's (else it is foreign), and the first of them sizes it for its nranks
 * (posix_fallocate: a full /dev/shm is an error here, not a SIGBUS later); every later
 * rank must bring the same nranks. Each rank claims its slot with its per-process token;
 * a slot already claimed by another process means two processes say they are that rank.
 * Such arrivals are refused at once (GP_ERROR_INVALID_VALUE, as NCCL's ncclInvalidUsage
 * maps) and noted in the block, so that a clique that then times out says why; they do
 * not break the clique that is forming.
 *
 * An id serves one clique: the last rank to join unlinks the name, which consumes the
 * id (a rank that arrives later finds no segment and fails at once, as does a second job
 * that copied the id). Every other path unlinks it too: a rank that gives up (timeout,
 * a dead or departed peer) unlinks it; the maker unlinks the ids it made at its exit
 * (ranks still to come then find nothing: the maker must outlive the rendezvous, as
 * NCCL's bootstrap root); and gp_comm_get_unique_id first removes this user's segments
 * that can never complete: a claimed rank whose process died (every rank killed during
 * initialisation), or no rank and a dead maker.
 *
 * Ranks that are all in this process (gp_comm_init_all, a split of such ranks, a
 * one-rank clique) share a control block in plain memory instead.
 *
 * Each call becomes stream work (gp__be_enqueue_host_work) numbered at enqueue; the work
 * waits its turn, so a rank's operations run in the order they were called even when
 * they sit on several streams. A communicator is freed when its handle and every
 * pending operation have let go of it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "cpu.h"
#include "cpu/comm_cpu.h"

#define ID_MAGIC "gpuportC"
#define ID_VERSION 2u

typedef struct id_layout {
  char magic[8];
  uint32_t version;
  int32_t creator_pid;
  uint8_t secret[16]; /* names the segment */
  uint64_t nonce;     /* the job nonce the segment records (never 0) */
} id_layout_t;

/* ---- process identity ------------------------------------------------------------------ */

static pthread_mutex_t g_tok_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_tok;
static pid_t g_tok_pid;

static void random_bytes(void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom((char *)buf + got, n - got, 0);
    if (r > 0) got += (size_t)r;
    else if (errno != EINTR) break;
  }
  if (got < n) { /* no getrandom: the clock and pid still make the name unique */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
    for (size_t i = got; i < n; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      ((unsigned char *)buf)[i] = (unsigned char)x;
    }
  }
}

uint64_t gp__cpu_proc_token(void) {
  pthread_mutex_lock(&g_tok_mu);
  if (g_tok_pid != getpid()) { /* first use, or a forked child: a new address space */
    random_bytes(&g_tok, sizeof g_tok);
    g_tok_pid = getpid();
  }
  uint64_t t = g_tok;
  pthread_mutex_unlock(&g_tok_mu);
  return t;
}

uint64_t gp__cpu_pidns(void) {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* ---- control blocks ------------------------------------------------------------------------ */

static size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* Offsets and size of a block for n ranks; staged blocks carry staging and channel buffers. */
static void layout(gp__ctl_t *h, int n, bool staged) {
  size_t nn = (size_t)n * (size_t)n, off = align_up(sizeof(gp__ctl_t), 64);
  h->nranks = n;
  h->slots_off = off;
  off += (size_t)n * sizeof(gp__slot_t);
  h->chans_off = off;
  off += nn * sizeof(gp__chan_t);
  h->half = h->chan_chunk = 0;
  h->staging_off = h->chanbuf_off = 0;
  if (staged) {
    size_t half = n <= 16 ? (512u << 10) : (8u << 20) / (size_t)n;
    size_t chunk = (1u << 20) / nn;
    chunk = chunk < 4096 ? 4096 : chunk > (64u << 10) ? (64u << 10) : align_up(chunk, 64);
    h->half = half;
    h->chan_chunk = chunk;
    h->staging_off = off = align_up(off, 4096);
    off += (size_t)n * 2 * half;
    h->chanbuf_off = off;
    off += nn * 2 * chunk;
  }
  h->bytes = align_up(off, 4096);
}

gp__ctl_t *gp__cpu_ctl_new_local(int nranks) {
  gp__ctl_t h;
  memset(&h, 0, sizeof h);
  layout(&h, nranks, false);
  void *p = NULL;
  if (posix_memalign(&p, 64, h.bytes) != 0) return NULL;
  memset(p, 0, h.bytes);
  gp__ctl_t *c = p;
  *c = h;
  c->version = GP__CTL_VERSION;
  c->shared = 0;
  atomic_store(&c->magic, GP__CTL_MAGIC);
  return c;
}

void gp__cpu_comm_shm_name(const gp_comm_id_t *id, char *buf, size_t len) {
  id_layout_t l;
  memcpy(&l, id->internal, sizeof l);
  char hex[33];
  for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", l.secret[i]);
  snprintf(buf, len, "/gpuport-%s", hex);
}

static bool id_valid(const gp_comm_id_t *id) {
  id_layout_t l;
  memcpy(&l, id->internal, sizeof l);
  return memcmp(l.magic, ID_MAGIC, 8) == 0 && l.version == ID_VERSION;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static id_layout_t id_read(const gp_comm_id_t *id) {
  id_layout_t l;
  memcpy(&l, id->internal, sizeof l);
  return l;
}

/* An arrival the clique refuses: noted in its block for the others' messages. */
static void note_refused(gp__ctl_t *h, const char *text) {
  atomic_fetch_add(&h->refused, 1);
  uint32_t zero = 0;
  if (atomic_compare_exchange_strong(&h->refused_claim, &zero, 1)) {
    snprintf(h->refused_msg, sizeof h->refused_msg, "%s", text);
    atomic_store(&h->refused_ready, 1);
  }
}

/* Fails this arrival (the message) and notes it in the block (note: a short form for
 * the messages of the ranks that wait). */
static gp_status_t refuse(gp__ctl_t *h, const char *note, const char *func, const char *fmt, ...)
    GP__PRINTF(4, 5);
static gp_status_t refuse(gp__ctl_t *h, const char *note, const char *func, const char *fmt, ...) {
  char text[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  note_refused(h, note);
  return gp__error(GP_ERROR_INVALID_VALUE, func, "%s", text);
}

/* The segment could not be sized: the ranks waiting for it fail, the id is consumed. */
static gp_status_t sizing_failed(gp__ctl_t *h, const char *name, gp_status_t st) {
  int32_t zero = 0;
  if (atomic_compare_exchange_strong(&h->failed, &zero, (int32_t)st)) {
    h->failed_rank = h->sizer_rank;
    snprintf(h->failed_msg, sizeof h->failed_msg, "%s", gp_last_error_message());
    atomic_store(&h->failed_ready, 1);
  }
  atomic_store(&h->sized, 2);
  shm_unlink(name);
  return st;
}

/* This rank is the first: the segment gets the size and layout of an n-rank clique. */
static gp_status_t size_segment(int fd, gp__ctl_t *h, const char *name, int n, int rank, const char *func) {
  h->sizer_pid = (int32_t)getpid();
  h->sizer_start = gp__cpu_proc_starttime(getpid());
  h->sizer_rank = rank;
  gp__ctl_t l;
  memset(&l, 0, sizeof l);
  layout(&l, n, true);
  struct statvfs vfs;
  if (statvfs("/dev/shm", &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < l.bytes)
    return sizing_failed(h, name,
                         gp__error(GP_ERROR_OUT_OF_MEMORY, func,
                                   "the rendezvous of %d ranks needs %.1f MiB in /dev/shm, which has %.1f "
                                   "MiB free (in a container, raise --shm-size)",
                                   n, (double)l.bytes / 1048576.0,
                                   (double)vfs.f_bavail * (double)vfs.f_frsize / 1048576.0));
  int e = posix_fallocate(fd, 0, (off_t)l.bytes);
  if (e != 0)
    return sizing_failed(h, name,
                         gp__error(e == ENOSPC ? GP_ERROR_OUT_OF_MEMORY : GP_ERROR_COMM, func,
                                   "cannot reserve %.1f MiB for shared-memory segment %s: %s%s",
                                   (double)l.bytes / 1048576.0, name, strerror(e),
                                   e == ENOSPC ? " (/dev/shm is full; in a container, raise --shm-size)" : ""));
  /* The file grew zero-filled: the slots and channels start at 0. */
  h->nranks = l.nranks;
  h->bytes = l.bytes;
  h->half = l.half;
  h->chan_chunk = l.chan_chunk;
  h->slots_off = l.slots_off;
  h->chans_off = l.chans_off;
  h->staging_off = l.staging_off;
  h->chanbuf_off = l.chanbuf_off;
  atomic_store(&h->sized, 1);
  return GP_SUCCESS;
}

/* Waits until the first rank has sized the segment (a bounded wait; its death ends it). */
static gp_status_t wait_sized(gp__ctl_t *h, const char *name, double deadline, const char *func) {
  double next_check = gp__comm_now() + 0.1;
  for (;;) {
    uint32_t sz = atomic_load(&h->sized);
    if (sz == 1) return GP_SUCCESS;
    if (sz == 2)
      return gp__error(GP_ERROR_COMM, func, "rank %d, the first to arrive, could not size segment %s: %s",
                       h->sizer_rank, name, atomic_load(&h->failed_ready) ? h->failed_msg : "?");
    double now = gp__comm_now();
    if (now >= deadline) {
      shm_unlink(name);
      return gp__error(GP_ERROR_TIMEOUT, func, "rank %d (process %d) never finished sizing segment %s",
                       h->sizer_rank, (int)h->sizer_pid, name);
    }
    if (now >= next_check) {
      next_check = now + 0.1;
      if (h->sizer_pid && !gp__cpu_proc_alive(h->sizer_pid, h->sizer_start)) {
        shm_unlink(name);
        return gp__error(GP_ERROR_COMM, func, "rank %d (process %d) died while it sized segment %s",
                         h->sizer_rank, (int)h->sizer_pid, name);
      }
    }
    sleep_ms(1);
  }
}

/* Checks the segment's header against the id; INVALID_VALUE when it is not this id's. */
static gp_status_t check_header(const gp__ctl_t *h, const id_layout_t *l, const char *name, const char *func) {
  if (atomic_load(&h->magic) != GP__CTL_MAGIC || h->version != GP__CTL_VERSION || h->shared != 1)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "shared-memory segment %s is not a gpuport rendezvous of control-block version %u "
                     "(another program, or another gpuport version, made it): refusing to join it",
                     name, GP__CTL_VERSION);
  if (h->nonce != l->nonce)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "shared-memory segment %s belongs to another clique (its job nonce is not this "
                     "id's): refusing to join it",
                     name);
  return GP_SUCCESS;
}

/* Opens the segment the id names after checking who made it (*fd, or an error). */
static gp_status_t open_segment(const char *name, const id_layout_t *l, int *fd, const char *func) {
  *fd = shm_open(name, O_RDWR | O_CLOEXEC, 0); /* glibc adds O_NOFOLLOW */
  if (*fd < 0 && errno == ENOENT)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "no clique is forming for this id on this host (no segment %s): an id serves one "
                     "communicator and its clique has already formed or failed, or the process that "
                     "made it (pid %d) has exited, or it was made on another host; make a new id with "
                     "gp_comm_get_unique_id for every communicator",
                     name, (int)l->creator_pid);
  if (*fd < 0)
    return gp__error(GP_ERROR_COMM, func, "cannot open shared-memory segment %s: %s", name, strerror(errno));
  struct stat st;
  gp_status_t s = GP_SUCCESS;
  if (fstat(*fd, &st) != 0)
    s = gp__error(GP_ERROR_COMM, func, "cannot stat segment %s: %s", name, strerror(errno));
  else if (!S_ISREG(st.st_mode))
    s = gp__error(GP_ERROR_COMM, func, "%s in /dev/shm is not a shared-memory segment: refusing to join it", name);
  else if (st.st_uid != geteuid())
    s = gp__error(GP_ERROR_COMM, func,
                  "shared-memory segment %s is owned by uid %d, not by this user (%d): refusing to join a "
                  "rendezvous someone else made",
                  name, (int)st.st_uid, (int)geteuid());
  else if ((st.st_mode & 0777) != 0600)
    s = gp__error(GP_ERROR_COMM, func,
                  "shared-memory segment %s has mode %03o, not 0600: refusing to join a rendezvous others "
                  "can read or write",
                  name, (unsigned)(st.st_mode & 0777));
  else if ((uint64_t)st.st_size < GP__CTL_HEADER_BYTES)
    s = gp__error(GP_ERROR_INVALID_VALUE, func,
                  "shared-memory segment %s has %llu bytes, less than a rendezvous header: refusing to join it",
                  name, (unsigned long long)st.st_size);
  if (s != GP_SUCCESS) {
    close(*fd);
    *fd = -1;
  }
  return s;
}

/* With the header mapped and checked: this rank sizes the segment when it is the first,
 * else it must bring the first one's nranks and waits for the sizing. */
static gp_status_t claim_size(int fd, gp__ctl_t *h, const char *name, int n, int rank, double deadline,
                              const char *func) {
  int32_t first = 0;
  if (atomic_compare_exchange_strong(&h->claim, &first, n)) return size_segment(fd, h, name, n, rank, func);
  if (first == n) return wait_sized(h, name, deadline, func);
  char note[120];
  snprintf(note, sizeof note, "process %d said nranks = %d for rank %d (the clique has %d)", (int)getpid(), n, rank,
           first);
  return refuse(h, note, func,
                "rank %d (process %d) says nranks = %d, but the clique of this id was made for %d ranks (by "
                "the first rank to arrive): every rank must pass the same nranks",
                rank, (int)getpid(), n, first);
}

/* Opens the segment the id names, sizes it when this rank is the first, and maps it. A
 * refused arrival leaves the segment to the clique that is forming. */
static gp_status_t shm_attach(const gp_comm_id_t *id, int n, int rank, double deadline, gp__ctl_t **out,
                              const char *func) {
  char name[64];
  gp__cpu_comm_shm_name(id, name, sizeof name);
  id_layout_t l = id_read(id);
  int fd = -1;
  GP__TRY(open_segment(name, &l, &fd, func));
  gp_status_t s = GP_SUCCESS;
  void *hp = mmap(NULL, GP__CTL_HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (hp == MAP_FAILED) {
    s = gp__error(GP_ERROR_OUT_OF_MEMORY, func, "cannot map segment %s: %s", name, strerror(errno));
    close(fd);
    return s;
  }
  gp__ctl_t *h = hp;
  s = check_header(h, &l, name, func);
  if (s == GP_SUCCESS) s = claim_size(fd, h, name, n, rank, deadline, func);
  uint64_t bytes = h->bytes;
  struct stat st;
  if (s == GP_SUCCESS && (fstat(fd, &st) != 0 || (uint64_t)st.st_size != bytes))
    s = gp__error(GP_ERROR_COMM, func, "segment %s does not have the size of its clique (%llu bytes)", name,
                  (unsigned long long)bytes);
  void *p = s == GP_SUCCESS ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (s == GP_SUCCESS && p == MAP_FAILED)
    s = gp__error(GP_ERROR_OUT_OF_MEMORY, func, "cannot map segment %s: %s", name, strerror(errno));
  munmap(h, GP__CTL_HEADER_BYTES);
  close(fd);
  if (s == GP_SUCCESS) *out = (gp__ctl_t *)p;
  return s;
}

/* ---- the ids this process made, and segments that can never complete -------------------- */

static pthread_mutex_t g_made_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_made[64][64]; /* names of segments this process made */
static int g_made_n;
static pid_t g_made_pid;

/* At exit (or when the library is unloaded), the rendezvous this process still holds
 * open end: ranks arriving later find no segment. A forked child has its own list. */
__attribute__((destructor)) static void made_cleanup(void) {
  pthread_mutex_lock(&g_made_mu);
  if (g_made_pid == getpid())
    for (int i = 0; i < g_made_n; i++) shm_unlink(g_made[i]);
  g_made_n = 0;
  pthread_mutex_unlock(&g_made_mu);
}

static bool segment_exists(const char *name) {
  char path[96];
  snprintf(path, sizeof path, "/dev/shm%s", name);
  return access(path, F_OK) == 0;
}

static void made_add(const char *name) {
  pthread_mutex_lock(&g_made_mu);
  if (g_made_pid != getpid()) { /* first use, or a forked child */
    g_made_pid = getpid();
    g_made_n = 0;
  }
  if (g_made_n == (int)(sizeof g_made / sizeof g_made[0])) {
    int k = 0; /* forget the rendezvous that ended (their names are gone) */
    for (int i = 0; i < g_made_n; i++)
      if (segment_exists(g_made[i])) memmove(g_made[k++], g_made[i], sizeof g_made[0]);
    g_made_n = k;
  }
  if (g_made_n == (int)(sizeof g_made / sizeof g_made[0])) { /* the oldest is left to the sweep */
    memmove(g_made[0], g_made[1], sizeof g_made[0] * (size_t)(g_made_n - 1));
    g_made_n--;
  }
  snprintf(g_made[g_made_n++], sizeof g_made[0], "%s", name);
  pthread_mutex_unlock(&g_made_mu);
}

static bool is_segment_name(const char *n) {
  if (strncmp(n, "gpuport-", 8) != 0 || strlen(n) != 8 + 32) return false;
  for (const char *p = n + 8; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
  return true;
}

/* Whether a segment (already checked: ours, 0600, bytes long) can never complete. Its
 * contents are only this user's to write, but are checked before they are used. */
static bool segment_stale(gp__ctl_t *h, uint64_t bytes, time_t mtime, uint64_t pidns) {
  if (atomic_load(&h->magic) != GP__CTL_MAGIC) return time(NULL) - mtime > 60; /* a maker killed while it made it */
  if (h->version != GP__CTL_VERSION || h->shared != 1 || h->maker_pidns != pidns) return false;
  bool maker_dead = !gp__cpu_proc_alive(h->maker_pid, h->maker_start);
  uint32_t sized = atomic_load(&h->sized);
  if (atomic_load(&h->claim) == 0) return maker_dead;
  if (sized != 1) return sized == 2 || (maker_dead && !gp__cpu_proc_alive(h->sizer_pid, h->sizer_start));
  gp__ctl_t l;
  memset(&l, 0, sizeof l);
  int n = h->nranks;
  if (n < 2 || n > GP__CPU_MAX_RANKS) return false;
  layout(&l, n, true);
  if (l.bytes != h->bytes || l.bytes != bytes || l.slots_off != h->slots_off) return false;
  bool claimed = false;
  for (int r = 0; r < n; r++) {
    gp__slot_t *s = (gp__slot_t *)((char *)h + l.slots_off) + r;
    uint32_t state = atomic_load(&s->state);
    if (state != GP__SLOT_JOINING && state != GP__SLOT_JOINED) continue;
    claimed = true;
    if (s->pid > 0 && s->pidns == pidns && !gp__cpu_proc_alive(s->pid, s->starttime))
      return true; /* a claimed rank died: the clique can never form */
  }
  return !claimed && maker_dead;
}

/* Removes this user's rendezvous segments that can never complete (ranks that all died
 * during initialisation leave theirs: nobody else would remove it). */
static void sweep_stale(void) {
  DIR *d = opendir("/dev/shm");
  if (d == NULL) return;
  uint64_t pidns = gp__cpu_pidns();
  gp__ctl_t big;
  memset(&big, 0, sizeof big);
  layout(&big, GP__CPU_MAX_RANKS, true);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!is_segment_name(e->d_name)) continue;
    int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) continue;
    struct stat st;
    bool stale = false;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 0777) == 0600 &&
        (uint64_t)st.st_size >= GP__CTL_HEADER_BYTES && (uint64_t)st.st_size <= big.bytes) {
      void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) {
        stale = segment_stale((gp__ctl_t *)p, (uint64_t)st.st_size, st.st_mtime, pidns);
        munmap(p, (size_t)st.st_size);
      }
    }
    close(fd);
    if (stale) {
      char name[64];
      snprintf(name, sizeof name, "/%.48s", e->d_name); /* is_segment_name: 40 characters */
      shm_unlink(name);
      GP__INFO(GP__SUB_COMM, "removed shared-memory segment %s: its rendezvous can never complete", name);
    }
  }
  closedir(d);
}

/* The id's segment: just the header, with the nonce and the maker. */
static gp_status_t make_segment(const id_layout_t *l, const char *name) {
  const char *func = "gp_comm_get_unique_id";
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return gp__error(errno == EEXIST ? GP_ERROR_INTERNAL : GP_ERROR_COMM, func,
                     "cannot create shared-memory segment %s: %s", name, strerror(errno));
  gp_status_t s = GP_SUCCESS;
  int e = fchmod(fd, 0600) == 0 ? posix_fallocate(fd, 0, GP__CTL_HEADER_BYTES) : errno;
  if (e != 0)
    s = gp__error(e == ENOSPC ? GP_ERROR_OUT_OF_MEMORY : GP_ERROR_COMM, func,
                  "cannot reserve shared-memory segment %s: %s%s", name, strerror(e),
                  e == ENOSPC ? " (/dev/shm is full; in a container, raise --shm-size)" : "");
  void *p = s == GP_SUCCESS ? mmap(NULL, GP__CTL_HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                            : MAP_FAILED;
  if (s == GP_SUCCESS && p == MAP_FAILED)
    s = gp__error(GP_ERROR_OUT_OF_MEMORY, func, "cannot map segment %s: %s", name, strerror(errno));
  if (s == GP_SUCCESS) {
    gp__ctl_t *h = p;
    h->version = GP__CTL_VERSION;
    h->shared = 1;
    h->bytes = GP__CTL_HEADER_BYTES;
    h->nonce = l->nonce;
    h->maker_pid = (int32_t)getpid();
    h->maker_start = gp__cpu_proc_starttime(getpid());
    h->maker_pidns = gp__cpu_pidns();
    atomic_store(&h->magic, GP__CTL_MAGIC);
    munmap(p, GP__CTL_HEADER_BYTES);
    made_add(name);
  } else {
    shm_unlink(name);
  }
  close(fd);
  return s;
}

/* ---- ranks ------------------------------------------------------------------------------ */

static gp__cpu_comm_t *cc_new(gp_comm_t base) {
  gp__cpu_comm_t *cc = calloc(1, sizeof(*cc));
  if (cc == NULL) return NULL;
  cc->base = base;
  cc->me = base->rank;
  cc->n = base->nranks;
  cc->refs = 1;
  pthread_mutex_init(&cc->mu, NULL);
  pthread_cond_init(&cc->cv, NULL);
  base->impl = cc;
  return cc;
}

static void cc_release_ctl(gp__cpu_comm_t *cc) {
  gp__ctl_t *ctl = cc->ctl;
  cc->ctl = NULL;
  if (ctl == NULL) return;
  if (ctl->shared) munmap(ctl, ctl->bytes);
  else if (atomic_fetch_sub(&ctl->refs, 1) == 1) free(ctl);
}

static void cc_unref(gp__cpu_comm_t *cc) {
  pthread_mutex_lock(&cc->mu);
  bool last = --cc->refs == 0;
  if (!last) pthread_cond_broadcast(&cc->cv); /* a destroy waits for this (quiesce) */
  pthread_mutex_unlock(&cc->mu);
  if (!last) return;
  cc_release_ctl(cc);
  if (cc->ext) cc->ext->destroy(cc->ext_ctx);
  pthread_mutex_destroy(&cc->mu);
  pthread_cond_destroy(&cc->cv);
  gp_comm_t base = cc->base;
  free(cc);
  gp__comm_free(base);
}

/* Wakes whoever waits for this rank's turn or readiness. */
static void cc_wake(gp__cpu_comm_t *cc) {
  pthread_mutex_lock(&cc->mu);
  pthread_cond_broadcast(&cc->cv);
  pthread_mutex_unlock(&cc->mu);
}

/* Fills this rank's slot and counts it in; the last rank in unlinks the segment's name,
 * which consumes the id. A slot another process holds is refused (two processes say they
 * are this rank); the clique that is forming goes on. */
static gp_status_t join(gp__cpu_comm_t *cc, const char *shm_name, const char *func) {
  gp__slot_t *s = gp__ctl_slot(cc->ctl, cc->me);
  uint32_t free_state = GP__SLOT_FREE;
  if (!atomic_compare_exchange_strong(&s->state, &free_state, GP__SLOT_JOINING)) {
    if (free_state == GP__SLOT_JOINING) sleep_ms(1); /* its identity is being written */
    uint64_t tok = s->proc_token;
    if (!shm_name || tok == gp__cpu_proc_token())
      return gp__error(GP_ERROR_INVALID_VALUE, func,
                       "rank %d joined the clique twice: each rank passes the id once", cc->me);
    char note[120];
    snprintf(note, sizeof note, "process %d claimed rank %d, already claimed by process %d", (int)getpid(), cc->me,
             (int)s->pid);
    return refuse(cc->ctl, note, func,
                  "rank %d (process %d) is already claimed by process %d: two processes passed this id "
                  "as rank %d (two jobs sharing one id, or a launcher bug); each rank number joins once",
                  cc->me, (int)getpid(), (int)s->pid, cc->me);
  }
  s->pid = (int32_t)getpid();
  s->starttime = gp__cpu_proc_starttime(getpid());
  s->pidns = gp__cpu_pidns();
  s->proc_token = gp__cpu_proc_token();
  s->device = cc->base->device;
  atomic_store(&s->state, GP__SLOT_JOINED);
  if (atomic_fetch_add(&cc->ctl->joined, 1) + 1 == (uint32_t)cc->n && shm_name) shm_unlink(shm_name);
  gp__cpu_comm_ring_all(cc);
  return GP_SUCCESS;
}

/* After everyone joined: the data path, and two ranks of one process on one device. */
static gp_status_t settle(gp__cpu_comm_t *cc, const char *func) {
  gp__slot_t *mine = gp__ctl_slot(cc->ctl, cc->me);
  cc->direct = true;
  for (int r = 0; r < cc->n; r++) {
    gp__slot_t *s = gp__ctl_slot(cc->ctl, r);
    if (s->proc_token != mine->proc_token) {
      cc->direct = false;
      continue;
    }
    if (r != cc->me && s->device == mine->device)
      return gp__cpu_comm_fail_clique(cc, GP_ERROR_INVALID_VALUE, func,
                                      "ranks %d and %d are in one process on one device (%d): "
                                      "each rank of a process needs its own device (GP_CPU_DEVICES)",
                                      r < cc->me ? r : cc->me, r < cc->me ? cc->me : r, s->device);
  }
  GP__INFO(GP__SUB_COMM, "%s: rank %d of %d joined (%s path%s)", func, cc->me, cc->n,
           cc->direct ? "direct" : "staged", cc->ctl->shared ? ", shared-memory segment" : "");
  return GP_SUCCESS;
}

/* Joins the clique the id names; on failure the rank holds no block. A refused arrival
 * leaves the clique to the ranks that are forming it; any other failure ends the
 * rendezvous (the name goes: the id is consumed). */
static gp_status_t rendezvous(gp__cpu_comm_t *cc, const gp_comm_id_t *id, const char *func) {
  double deadline = gp__comm_now() + cc->base->timeout_s;
  char name[64];
  gp__cpu_comm_shm_name(id, name, sizeof name);
  GP__TRY(shm_attach(id, cc->n, cc->me, deadline, &cc->ctl, func));
  gp_status_t st = join(cc, name, func);
  if (st != GP_SUCCESS) {
    cc_release_ctl(cc);
    return st;
  }
  st = gp__cpu_comm_wait_joined(cc, deadline, func);
  if (st == GP_SUCCESS) st = settle(cc, func);
  if (st != GP_SUCCESS) {
    shm_unlink(name); /* a failed clique leaves nothing behind (ENOENT when already gone) */
    atomic_store(&gp__ctl_slot(cc->ctl, cc->me)->state, GP__SLOT_LEFT);
    gp__cpu_comm_ring_all(cc);
    cc_release_ctl(cc);
  }
  return st;
}

static gp_status_t join_local(gp__cpu_comm_t *cc, gp__ctl_t *ctl, double deadline, const char *func) {
  cc->ctl = ctl;
  GP__TRY(join(cc, NULL, func));
  GP__TRY(gp__cpu_comm_wait_joined(cc, deadline, func));
  return settle(cc, func);
}

/* ---- initialisation ------------------------------------------------------------------------ */

/* Releases a rank that did not come into being (its common part is the funnel's). */
static void drop_impl(gp_comm_t base) {
  gp__cpu_comm_t *cc = base->impl;
  if (cc == NULL) return;
  if (cc->ctl) {
    atomic_store(&gp__ctl_slot(cc->ctl, cc->me)->state, GP__SLOT_LEFT);
    gp__cpu_comm_ring_all(cc);
  }
  cc_release_ctl(cc);
  pthread_mutex_destroy(&cc->mu);
  pthread_cond_destroy(&cc->cv);
  free(cc);
  base->impl = NULL;
}

typedef struct init_job {
  gp__cpu_comm_t *cc;
  gp_comm_id_t id;
  gp_status_t st;
  char msg[400];
} init_job_t;

static void *init_main(void *arg) {
  init_job_t *j = arg;
  gp__cpu_comm_t *cc = j->cc;
  gp_status_t st = rendezvous(cc, &j->id, "gp_comm_init_rank");
  j->st = st;
  if (st != GP_SUCCESS) snprintf(j->msg, sizeof j->msg, "%s", gp_last_error_message());
  if (cc->base->blocking) return NULL; /* the caller joins the thread and reads the job */
  if (st != GP_SUCCESS) gp__comm_record(cc->base, st, j->msg);
  else gp__comm_set_status(cc->base, GP_SUCCESS);
  pthread_mutex_lock(&cc->mu);
  cc->initialising = false;
  pthread_cond_broadcast(&cc->cv);
  pthread_mutex_unlock(&cc->mu);
  free(j);
  cc_unref(cc);
  return NULL;
}

static gp_status_t cpu_unique_id(gp_comm_id_t *id) {
  sweep_stale();
  id_layout_t l;
  gp_status_t st = GP_ERROR_INTERNAL;
  for (int attempt = 0; attempt < 4 && st == GP_ERROR_INTERNAL; attempt++) {
    memset(&l, 0, sizeof l);
    memcpy(l.magic, ID_MAGIC, 8);
    l.version = ID_VERSION;
    l.creator_pid = (int32_t)getpid();
    random_bytes(l.secret, sizeof l.secret);
    while (l.nonce == 0) random_bytes(&l.nonce, sizeof l.nonce);
    gp_comm_id_t tmp;
    memset(&tmp, 0, sizeof tmp);
    memcpy(tmp.internal, &l, sizeof l);
    char name[64];
    gp__cpu_comm_shm_name(&tmp, name, sizeof name);
    st = make_segment(&l, name); /* INTERNAL: the name exists (a collision): another secret */
  }
  if (st != GP_SUCCESS) return st;
  memset(id, 0, sizeof(*id));
  memcpy(id->internal, &l, sizeof l);
  return GP_SUCCESS;
}

/* gp_comm_init_all: every rank here, in one block, all or none. */
static gp_status_t init_all_local(gp__comm_init_t *inits, size_t n) {
  const char *func = "gp_comm_init_all";
  gp_status_t st = GP_SUCCESS;
  gp__ctl_t *ctl = gp__cpu_ctl_new_local((int)n);
  if (ctl == NULL) st = gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory for the communicators");
  else atomic_store(&ctl->refs, (uint32_t)n);
  for (size_t i = 0; i < n && st == GP_SUCCESS; i++) {
    gp__cpu_comm_t *cc = cc_new(inits[i].comm);
    if (cc == NULL) {
      st = gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory for a communicator");
      break;
    }
    cc->ctl = ctl;
    st = join(cc, NULL, func);
  }
  for (size_t i = 0; i < n && st == GP_SUCCESS; i++) st = settle(inits[i].comm->impl, func);
  if (st != GP_SUCCESS) {
    size_t held = 0;
    for (size_t i = 0; i < n; i++) held += inits[i].comm->impl != NULL;
    if (ctl) atomic_store(&ctl->refs, (uint32_t)held + (held == 0)); /* freed by the last drop */
    for (size_t i = 0; i < n; i++) drop_impl(inits[i].comm);
    if (held == 0) free(ctl);
  }
  for (size_t i = 0; i < n; i++) inits[i].st = st;
  return st;
}

static gp_status_t cpu_init(gp__comm_init_t *inits, size_t n, bool all_local) {
  if (all_local) return init_all_local(inits, n);
  const char *func = "gp_comm_init_rank";
  gp_status_t first = GP_SUCCESS;
  init_job_t **jobs = calloc(n, sizeof(*jobs));
  pthread_t *th = calloc(n, sizeof(*th));
  if (jobs == NULL || th == NULL) {
    free(jobs);
    free(th);
    for (size_t i = 0; i < n; i++) inits[i].st = GP_ERROR_OUT_OF_MEMORY;
    return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory");
  }
  /* One-rank cliques need nobody; one blocking rank joins inline; the others (a group,
   * non-blocking ranks) join on threads of their own. */
  for (size_t i = 0; i < n; i++) {
    gp_comm_t base = inits[i].comm;
    gp_status_t st = GP_SUCCESS;
    gp__cpu_comm_t *cc = NULL;
    if (!id_valid(&inits[i].id))
      st = gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'id' was not made by gp_comm_get_unique_id of the cpu backend");
    else if (base->nranks > GP__CPU_MAX_RANKS)
      st = gp__error(GP_ERROR_NOT_SUPPORTED, func,
                     "%d ranks: the cpu engine supports up to %d ranks per communicator (more "
                     "through gpuport/mpi.h)",
                     base->nranks, GP__CPU_MAX_RANKS);
    else if ((cc = cc_new(base)) == NULL)
      st = gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory for a communicator");
    else if (cc->n == 1) {
      gp__ctl_t *ctl = gp__cpu_ctl_new_local(1);
      if (ctl == NULL) st = gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory");
      else atomic_store(&ctl->refs, 1), st = join_local(cc, ctl, gp__comm_now() + 1.0, func);
    } else if (n == 1 && base->blocking) {
      st = rendezvous(cc, &inits[i].id, func);
    } else {
      init_job_t *j = calloc(1, sizeof(*j));
      if (j == NULL) {
        st = gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory");
      } else {
        j->cc = cc;
        j->id = inits[i].id;
        if (!base->blocking) {
          gp__comm_set_status(base, GP_ERROR_NOT_READY);
          cc->refs++; /* the thread's */
          cc->initialising = true;
        }
        if (pthread_create(&th[i], NULL, init_main, j) != 0) {
          cc->refs = 1;
          cc->initialising = false;
          free(j);
          st = gp__error(GP_ERROR_OUT_OF_MEMORY, func, "cannot start a thread to join the clique");
        } else if (base->blocking) {
          jobs[i] = j;
        } else {
          pthread_detach(th[i]);
        }
      }
    }
    inits[i].st = st;
    if (st != GP_SUCCESS && first == GP_SUCCESS) first = st;
  }
  for (size_t i = 0; i < n; i++) {
    if (jobs[i] == NULL) continue;
    pthread_join(th[i], NULL);
    inits[i].st = jobs[i]->st;
    if (jobs[i]->st != GP_SUCCESS && first == GP_SUCCESS)
      first = gp__error(jobs[i]->st, func, "rank %d: %s", inits[i].comm->rank, jobs[i]->msg);
    free(jobs[i]);
  }
  for (size_t i = 0; i < n; i++)
    if (inits[i].st != GP_SUCCESS) drop_impl(inits[i].comm);
  free(jobs);
  free(th);
  return first;
}

gp_status_t gp__cpu_comm_create_ext(gp_comm_t *comm, int rank, int nranks, double timeout_s,
                                    const gp__comm_ext_t *ext, void *ctx) {
  *comm = NULL;
  if (ext == NULL || ext->version != GP__COMM_EXT_VERSION)
    return gp__error(GP_ERROR_NOT_SUPPORTED, "gp_comm_init_mpi",
                     "the transport was built for another gpuport (interface version %u, this "
                     "library has %u): rebuild libgpuport-mpi with this gpuport",
                     ext ? ext->version : 0u, GP__COMM_EXT_VERSION);
  GP__TRY(gp__api_init("gp_comm_init_mpi"));
  gp_comm_t base = gp__comm_new(rank, nranks, gp__current_device(), 1,
                                timeout_s > 0 ? timeout_s : gp__comm_default_timeout());
  gp__cpu_comm_t *cc = base ? cc_new(base) : NULL;
  if (cc == NULL) {
    gp__comm_free(base);
    return gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_comm_init_mpi", "no host memory");
  }
  cc->ext = ext;
  cc->ext_ctx = ctx;
  gp_status_t st = gp__comm_register(base);
  if (st != GP_SUCCESS) {
    cc->ext = NULL; /* the caller still owns ctx */
    cc_unref(cc);
    return st;
  }
  GP__INFO(GP__SUB_COMM, "gp_comm_init_mpi: rank %d of %d on device %d (%s transport)", rank,
           nranks, base->device, ext->name);
  *comm = base;
  return GP_SUCCESS;
}

/* ---- a rank's turn --------------------------------------------------------------------------- */

/* Absolute CLOCK_REALTIME time (pthread_cond_timedwait's clock) of a monotonic deadline. */
static struct timespec realtime_deadline(double deadline) {
  struct timespec now_rt, ts;
  clock_gettime(CLOCK_REALTIME, &now_rt);
  double left = deadline - gp__comm_now();
  double abs_rt = (double)now_rt.tv_sec + (double)now_rt.tv_nsec * 1e-9 + (left > 0 ? left : 0);
  ts.tv_sec = (time_t)abs_rt;
  ts.tv_nsec = (long)((abs_rt - (double)ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
  return ts;
}

static gp_status_t gate_enter(gp__cpu_comm_t *cc, uint64_t ticket, double deadline,
                              const char *func) {
  struct timespec ts = realtime_deadline(deadline);
  pthread_mutex_lock(&cc->mu);
  for (;;) {
    pthread_mutex_lock(&cc->base->mu);
    gp_status_t s = cc->base->status;
    pthread_mutex_unlock(&cc->base->mu);
    if (s != GP_SUCCESS && s != GP_ERROR_NOT_READY) break; /* failed: fail fast */
    if (cc->next + 1 == ticket && s == GP_SUCCESS) break;
    if (pthread_cond_timedwait(&cc->cv, &cc->mu, &ts) == ETIMEDOUT) {
      bool init = s == GP_ERROR_NOT_READY;
      pthread_mutex_unlock(&cc->mu);
      return gp__comm_fail(cc->base, GP_ERROR_TIMEOUT, func,
                           "rank %d waited %.3g s (the communicator's timeout) for %s", cc->me,
                           cc->base->timeout_s,
                           init ? "its non-blocking initialisation to complete"
                                : "its earlier operations on this communicator (on other streams)");
    }
  }
  pthread_mutex_unlock(&cc->mu);
  return gp__comm_status(cc->base, func);
}

static void gate_leave(gp__cpu_comm_t *cc) {
  pthread_mutex_lock(&cc->mu);
  cc->next++;
  pthread_cond_broadcast(&cc->cv);
  pthread_mutex_unlock(&cc->mu);
}

/* ---- calls ------------------------------------------------------------------------------------ */

typedef struct work {
  gp__cpu_comm_t *cc;
  uint64_t ticket;
  const char *func;
  size_t n;
  gp__comm_call_t calls[];
} work_t;

static gp_status_t comm_work(void *p) {
  work_t *w = p;
  gp__cpu_comm_t *cc = w->cc;
  double deadline = gp__comm_now() + cc->base->timeout_s;
  gp_status_t st = gate_enter(cc, w->ticket, deadline, w->func);
  if (st == GP_SUCCESS) {
    if (cc->ext) {
      char msg[400] = "";
      st = cc->ext->run(cc->ext_ctx, w->calls, w->n, deadline, msg, sizeof msg);
      if (st != GP_SUCCESS) st = gp__comm_fail(cc->base, st, w->func, "%s", msg);
    } else {
      st = gp__cpu_comm_run(cc, w->calls, w->n, deadline, w->func);
    }
    gate_leave(cc);
  }
  cc_unref(cc);
  return st;
}

static gp_status_t cpu_check(const gp__comm_call_t *c, const char *func) {
  int dev = gp__cpu_stream_device(c->stream);
  if (dev != c->comm->device)
    return gp__error(GP_ERROR_INVALID_VALUE, func,
                     "'stream' feeds device %d but the communicator (rank %d) is on device %d: "
                     "pass a stream of device %d (or make it current for the default stream)",
                     dev, c->comm->rank, c->comm->device, c->comm->device);
  return GP_SUCCESS;
}

/* Enqueues one rank's calls as one piece of stream work. Calls on several streams: the
 * work runs on the first call's stream, which first waits for the others, and they
 * then wait for it (NCCL's multi-stream groups). */
static gp_status_t enqueue_on_device(const gp__comm_call_t *const *list, size_t m, bool grouped) {
  gp__cpu_comm_t *cc = list[0]->comm->impl;
  const char *func = grouped ? "gp_group_end" : gp__coll_public_name(list[0]->coll);
  work_t *w = malloc(sizeof(*w) + m * sizeof(gp__comm_call_t));
  if (w == NULL) return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory for a collective");
  for (size_t i = 0; i < m; i++) w->calls[i] = *list[i];
  w->n = m;
  w->cc = cc;
  w->func = func;
  gp_stream_t s0 = list[0]->stream;
  gp_status_t st = GP_SUCCESS;
  for (size_t i = 1; i < m && st == GP_SUCCESS; i++) {
    bool seen = list[i]->stream == s0;
    for (size_t j = 1; j < i && !seen; j++) seen = list[j]->stream == list[i]->stream;
    if (seen) continue;
    gp_event_t e = NULL;
    st = gp__be_event_create(&e, GP_EVENT_DISABLE_TIMING);
    if (st == GP_SUCCESS) st = gp__be_event_record(e, list[i]->stream);
    if (st == GP_SUCCESS) st = gp__be_stream_wait_event(s0, e);
    if (e) (void)gp__be_event_destroy(e);
  }
  if (st != GP_SUCCESS) {
    free(w);
    return st;
  }
  pthread_mutex_lock(&cc->mu);
  w->ticket = ++cc->enq;
  cc->refs++;
  pthread_mutex_unlock(&cc->mu);
  if (cc->ext && cc->ext->synchronous) {
    /* MPI below MPI_THREAD_MULTIPLE: only this thread may call it, so the call runs here
     * once the stream's earlier work is done (still in stream order, but blocking). */
    st = gp__be_stream_synchronize(s0);
    if (st == GP_SUCCESS) st = comm_work(w);
    else cc_unref(cc);
    free(w);
    return st;
  }
  st = gp__be_enqueue_host_work(s0, comm_work, w, true);

  if (st != GP_SUCCESS) {
    /* This rank skipped a call its peers make: the clique cannot continue. */
    gp__comm_record(cc->base, st, "a collective could not be enqueued on this rank");
    cc_wake(cc);
    cc_unref(cc);
    return st;
  }
  gp_event_t done = NULL;
  if (gp__be_event_create(&done, GP_EVENT_DISABLE_TIMING) == GP_SUCCESS) {
    bool joined = false;
    for (size_t i = 1; i < m; i++) {
      if (list[i]->stream == s0) continue;
      if (!joined) joined = gp__be_event_record(done, s0) == GP_SUCCESS;
      if (joined) (void)gp__be_stream_wait_event(list[i]->stream, done);
    }
    (void)gp__be_event_destroy(done);
  }
  return GP_SUCCESS;
}

/* The default streams (NULL, legacy, per-thread) of a call mean its communicator's device,
 * whichever device is current when a group ends (as NCCL launches on the comm's device). */
static gp_status_t enqueue_work(const gp__comm_call_t *const *list, size_t m, bool grouped) {
  int saved = gp__current_device();
  GP__TRY(gp__set_current_device(list[0]->comm->device, "gpuport collective"));
  gp_status_t st = enqueue_on_device(list, m, grouped);
  (void)gp__set_current_device(saved, "gpuport collective"); /* the state exists now: this cannot fail */
  return st;
}

static gp_status_t cpu_calls(const gp__comm_call_t *calls, size_t n, bool grouped) {
  const gp__comm_call_t *one[1];
  if (n == 1) {
    one[0] = &calls[0];
    return enqueue_work(one, 1, grouped);
  }
  const gp__comm_call_t **list = malloc(n * sizeof(*list));
  bool *done = calloc(n, sizeof(*done));
  gp_status_t st = GP_SUCCESS;
  if (list == NULL || done == NULL)
    st = gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_group_end", "no host memory");
  /* One piece of work per communicator, its calls in call order. */
  for (size_t i = 0; i < n && st == GP_SUCCESS; i++) {
    if (done[i]) continue;
    size_t m = 0;
    for (size_t j = i; j < n; j++)
      if (!done[j] && calls[j].comm == calls[i].comm) {
        list[m++] = &calls[j];
        done[j] = true;
      }
    st = enqueue_work(list, m, grouped);
  }
  free(list);
  free(done);
  return st;
}

/* ---- split ------------------------------------------------------------------------------------ */

static gp_status_t split_one(gp__comm_split_t *sp) {
  gp__cpu_comm_t *cc = sp->parent->impl;
  const char *func = "gp_comm_split";
  int rank = -1, size = 0;
  if (cc->ext) {
    void *child_ctx = NULL;
    if (cc->ext->split == NULL)
      return gp__error(GP_ERROR_NOT_SUPPORTED, func, "the %s transport cannot split", cc->ext->name);
    char msg[400] = "";
    gp_status_t st = cc->ext->split(cc->ext_ctx, sp->color, sp->key, &child_ctx, &rank, &size, msg,
                                    sizeof msg);
    if (st != GP_SUCCESS) return gp__error(st, func, "%s", msg);
    if (sp->child == NULL) return GP_SUCCESS;
    sp->child->rank = rank;
    sp->child->nranks = size;
    gp__cpu_comm_t *c2 = cc_new(sp->child);
    if (c2 == NULL) {
      cc->ext->destroy(child_ctx);
      return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory");
    }
    c2->ext = cc->ext;
    c2->ext_ctx = child_ctx;
    return GP_SUCCESS;
  }
  /* The exchange is an operation of the parent: it takes its turn among the others. */
  pthread_mutex_lock(&cc->mu);
  uint64_t ticket = ++cc->enq;
  cc->refs++;
  pthread_mutex_unlock(&cc->mu);
  double deadline = gp__comm_now() + sp->parent->timeout_s;
  gp__ctl_t *local = NULL;
  gp_comm_id_t id;
  memset(&id, 0, sizeof id);
  gp_status_t st = gate_enter(cc, ticket, deadline, func);
  if (st == GP_SUCCESS) {
    st = gp__cpu_comm_split_exchange(cc, sp->color, sp->key, deadline, &rank, &size, &local, &id);
    gate_leave(cc);
  }
  cc_unref(cc);
  if (st != GP_SUCCESS || sp->child == NULL) return st;
  sp->child->rank = rank;
  sp->child->nranks = size;
  gp__cpu_comm_t *c2 = cc_new(sp->child);
  if (c2 == NULL) return gp__error(GP_ERROR_OUT_OF_MEMORY, func, "no host memory");
  st = local ? join_local(c2, local, gp__comm_now() + sp->child->timeout_s, func)
             : rendezvous(c2, &id, func);
  if (st != GP_SUCCESS) drop_impl(sp->child);
  return st;
}

typedef struct split_job {
  gp__comm_split_t *sp;
  char msg[400];
} split_job_t;

static void *split_main(void *arg) {
  split_job_t *j = arg;
  j->sp->st = split_one(j->sp);
  if (j->sp->st != GP_SUCCESS) snprintf(j->msg, sizeof j->msg, "%s", gp_last_error_message());
  return NULL;
}

static gp_status_t cpu_split(gp__comm_split_t *sp, size_t n) {
  if (n == 1) return sp->st = split_one(sp);
  /* A group: one thread per split, since each waits for the others. */
  split_job_t *jobs = calloc(n, sizeof(*jobs));
  pthread_t *th = calloc(n, sizeof(*th));
  gp_status_t first = GP_SUCCESS;
  if (jobs == NULL || th == NULL) {
    for (size_t i = 0; i < n; i++) sp[i].st = GP_ERROR_OUT_OF_MEMORY;
    first = gp__error(GP_ERROR_OUT_OF_MEMORY, "gp_comm_split", "no host memory");
  }
  for (size_t i = 0; i < n && jobs && th; i++) {
    jobs[i].sp = &sp[i];
    sp[i].st = GP_ERROR_INTERNAL;
    if (pthread_create(&th[i], NULL, split_main, &jobs[i]) != 0) {
      jobs[i].sp = NULL;
      sp[i].st = GP_ERROR_OUT_OF_MEMORY;
      snprintf(jobs[i].msg, sizeof jobs[i].msg, "cannot start a thread for the split");
    }
  }
  for (size_t i = 0; i < n && jobs && th; i++) {
    if (jobs[i].sp) pthread_join(th[i], NULL);
    if (sp[i].st != GP_SUCCESS && first == GP_SUCCESS)
      first = gp__error(sp[i].st, "gp_comm_split", "rank %d: %s", sp[i].parent->rank, jobs[i].msg);
  }
  free(jobs);
  free(th);
  return first;
}

/* ---- teardown ---------------------------------------------------------------------------------- */

/* Waits (bounded) until pred-like state: no pending operation (refs == min_refs) and no
 * initialisation in progress. Returns whether it got there. */
static bool quiesce(gp__cpu_comm_t *cc, int min_refs, double deadline) {
  struct timespec ts = realtime_deadline(deadline);
  pthread_mutex_lock(&cc->mu);
  while ((cc->refs > min_refs || cc->initialising) &&
         pthread_cond_timedwait(&cc->cv, &cc->mu, &ts) != ETIMEDOUT) {
  }
  bool ok = cc->refs <= min_refs && !cc->initialising;
  pthread_mutex_unlock(&cc->mu);
  return ok;
}

static gp_status_t cpu_destroy(gp_comm_t base) {
  gp__cpu_comm_t *cc = base->impl;
  /* Pending operations finish first (each is bounded by the timeout). */
  bool idle = quiesce(cc, 1, gp__comm_now() + base->timeout_s + 1.0);
  if (!idle)
    GP__WARN(GP__SUB_COMM,
             "gp_comm_destroy: rank %d of %d: operations still pending after the timeout; they "
             "will fail",
             cc->me, cc->n);
  pthread_mutex_lock(&cc->mu);
  gp__ctl_t *ctl = cc->initialising ? NULL : cc->ctl;
  pthread_mutex_unlock(&cc->mu);
  if (ctl) {
    if (!idle) {
      int32_t zero = 0;
      atomic_compare_exchange_strong(&ctl->failed, &zero, (int32_t)GP_ERROR_COMM);
    }
    atomic_store(&gp__ctl_slot(ctl, cc->me)->state, GP__SLOT_LEFT);
    gp__cpu_comm_ring_all(cc);
    gp__cpu_comm_ring_rank(ctl, cc->me);
  }
  cc_unref(cc);
  return GP_SUCCESS;
}

static gp_status_t cpu_abort(gp_comm_t base) {
  gp__cpu_comm_t *cc = base->impl;
  char text[128];
  snprintf(text, sizeof text, "rank %d aborted its communicator (gp_comm_abort)", cc->me);
  gp__comm_record(base, GP_ERROR_COMM, text);
  pthread_mutex_lock(&cc->mu);
  gp__ctl_t *ctl = cc->initialising ? NULL : cc->ctl; /* an initialising rank's is not ours yet */
  pthread_cond_broadcast(&cc->cv);
  pthread_mutex_unlock(&cc->mu);
  if (ctl) {
    int32_t zero = 0;
    if (atomic_compare_exchange_strong(&ctl->failed, &zero, (int32_t)GP_ERROR_COMM)) {
      ctl->failed_rank = cc->me;
      snprintf(ctl->failed_msg, sizeof ctl->failed_msg, "%s", text);
      atomic_store(&ctl->failed_ready, 1);
    }
    atomic_store(&gp__ctl_slot(ctl, cc->me)->state, GP__SLOT_LEFT);
    gp__cpu_comm_ring_all(cc);
    gp__cpu_comm_ring_rank(ctl, cc->me); /* this rank's own operation, on its stream's thread */
  }
  cc_unref(cc); /* pending operations fail fast and release the rest */
  return GP_SUCCESS;
}

const gp__comm_backend_t gp__comm_native_backend = {
    .name = "cpu",
    .unique_id = cpu_unique_id,
    .init = cpu_init,
    .split = cpu_split,
    .check = cpu_check,
    .calls = cpu_calls,
    .destroy = cpu_destroy,
    .abort = cpu_abort,
    .poll = NULL,
};
