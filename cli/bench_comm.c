/*
 * bench_comm.c - `gpuport bench allreduce|allgather|reducescatter|alltoall|broadcast`, in
 * the manner of nccl-tests: every device of this process is one rank (gp_comm_init_all;
 * on the cpu backend GP_CPU_DEVICES virtual devices), sizes double from --min-bytes to
 * --max-bytes (8 B to 256 MB), each timed out of place and in place.
 *
 * Time: the mean of --iters runs after --warmup ones, host-timed around the enqueue of
 * every rank's call (one group) and the synchronisation of every rank's stream, as
 * nccl-tests does. algbw = size / time, with nccl-tests' size: the bytes of one rank's
 * largest buffer (all-gather: the gathered buffer; reduce-scatter: the send buffer);
 * busbw = algbw x 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and
 * all-to-all, 1 for broadcast (nccl-tests' PERFORMANCE.md). GB = 1e9 bytes.
 *
 * --check runs each size once first on inputs whose sums are exact in any order (small
 * integers, ref/ref_comm.h) and counts wrong elements on every rank (#wrong): exact,
 * GP_AVG within 2 ulp.
 *
 * On the cpu backend the all-reduce table also shows the anchor: the time this machine
 * takes, in the same run, to memcpy what every rank must at least read and write (n
 * threads each copying size bytes: n x size in, n x size out), and the ratio to it.
 */
#include "tool.h"
#include "ref.h"
#include "ref_comm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef enum { B_ALLREDUCE, B_ALLGATHER, B_REDUCESCATTER, B_ALLTOALL, B_BROADCAST } bkind_t;

typedef struct copts {
  bkind_t kind;
  const char *name;
  int64_t min_bytes, max_bytes, iters, warmup, ranks;
  gp_dtype_t dtype;
  gp_reduce_op_t op;
  bool check, json;
} copts_t;

typedef struct rank {
  gp_comm_t comm;
  gp_stream_t stream;
  int device;
  char *send, *recv;
} rank_t;

static double bus_factor(bkind_t k, int n) {
  switch (k) {
    case B_ALLREDUCE: return 2.0 * (n - 1) / n;
    case B_BROADCAST: return 1.0;
    default: return (double)(n - 1) / n;
  }
}

/* Elements per call (the count argument) for nccl-tests' size in bytes. */
static size_t call_count(const copts_t *o, size_t bytes, int n) {
  size_t e = bytes / gp_dtype_size(o->dtype);
  return o->kind == B_ALLREDUCE || o->kind == B_BROADCAST ? e : e / (size_t)n;
}

static gp_status_t enqueue(const copts_t *o, rank_t *rk, int n, int r, size_t count, bool inplace) {
  rank_t *x = &rk[r];
  size_t es = gp_dtype_size(o->dtype);
  char *send = inplace ? x->recv : x->send, *recv = x->recv;
  switch (o->kind) {
    case B_ALLREDUCE: return gp_all_reduce(send, recv, count, o->dtype, o->op, x->comm, x->stream);
    case B_BROADCAST: return gp_broadcast(send, recv, count, o->dtype, 0, x->comm, x->stream);
    case B_ALLGATHER:
      return gp_all_gather(inplace ? recv + (size_t)r * count * es : send, recv, count, o->dtype,
                           x->comm, x->stream);
    case B_REDUCESCATTER:
      return gp_reduce_scatter(send, inplace ? send + (size_t)r * count * es : recv, count, o->dtype,
                               o->op, x->comm, x->stream);
    default:
      if (inplace && gp_backend() != GP_BACKEND_CPU) return GP_ERROR_NOT_SUPPORTED;
      return gp_all_to_all(send, recv, count, o->dtype, x->comm, x->stream);
  }
  (void)n;
}

/* Every rank's call, one group, then every stream synchronised. */
static gp_status_t run_once(const copts_t *o, rank_t *rk, int n, size_t count, bool inplace,
                            bool sync) {
  gp_status_t s = gp_group_start();
  for (int r = 0; r < n && s == GP_SUCCESS; r++) {
    if ((s = gp_device_set(rk[r].device))) break;
    s = enqueue(o, rk, n, r, count, inplace);
  }
  gp_status_t e = gp_group_end();
  if (s == GP_SUCCESS) s = e;
  for (int r = 0; sync && r < n && s == GP_SUCCESS; r++) {
    if ((s = gp_device_set(rk[r].device))) break;
    s = gp_stream_synchronize(rk[r].stream);
  }
  return s;
}

/* Input extent and output extent of one rank, in elements. */
static void extents(const copts_t *o, size_t count, int n, size_t *in, size_t *out) {
  switch (o->kind) {
    case B_ALLGATHER: *in = count, *out = count * (size_t)n; break;
    case B_REDUCESCATTER: *in = count * (size_t)n, *out = count; break;
    case B_ALLTOALL: *in = *out = count * (size_t)n; break;
    default: *in = *out = count; break;
  }
}

/* Fills the inputs with exact data, runs once, and counts wrong elements on every rank. */
static gp_status_t check_size(const copts_t *o, rank_t *rk, int n, size_t count, bool inplace,
                              uint64_t seed, size_t *wrong) {
  size_t es = gp_dtype_size(o->dtype), in, out;
  extents(o, count, n, &in, &out);
  size_t span = inplace && o->kind == B_REDUCESCATTER ? in : out;
  char *host = malloc((in > span ? in : span) * es + 16);
  if (host == NULL) return GP_ERROR_OUT_OF_MEMORY;
  gp_status_t s = GP_SUCCESS;
  for (int r = 0; r < n && s == GP_SUCCESS; r++) {
    gp_ref_comm_poison(host, o->dtype, span);
    if ((s = gp_device_set(rk[r].device)) || (s = gp_memcpy(rk[r].recv, host, span * es))) break;
    gp_ref_comm_inputs(host, o->dtype, o->op, GP_REF_COMM_EXACT, seed, r, 0, in);
    char *dst = rk[r].send;
    if (inplace) dst = o->kind == B_ALLGATHER ? rk[r].recv + (size_t)r * count * es : rk[r].recv;
    s = gp_memcpy(dst, host, in * es);
  }
  if (s == GP_SUCCESS) s = run_once(o, rk, n, count, inplace, true);
  *wrong = 0;
  char msg[300];
  for (int r = 0; r < n && s == GP_SUCCESS; r++) {
    if ((s = gp_device_set(rk[r].device)) || (s = gp_memcpy(host, rk[r].recv, span * es))) break;
    const char *h = host;
    switch (o->kind) {
      case B_ALLREDUCE:
        *wrong += gp_ref_comm_check_reduce(h, o->dtype, o->op, GP_REF_COMM_EXACT, seed, n, 0, count, msg, sizeof msg);
        break;
      case B_REDUCESCATTER:
        if (inplace) h += (size_t)r * count * es;
        *wrong += gp_ref_comm_check_reduce(h, o->dtype, o->op, GP_REF_COMM_EXACT, seed, n,
                                           (size_t)r * count, count, msg, sizeof msg);
        break;
      case B_BROADCAST:
        *wrong += gp_ref_comm_check_copy(h, o->dtype, o->op, GP_REF_COMM_EXACT, seed, 0, 0, count, msg, sizeof msg);
        break;
      case B_ALLGATHER:
        for (int q = 0; q < n; q++)
          *wrong += gp_ref_comm_check_copy(h + (size_t)q * count * es, o->dtype, o->op, GP_REF_COMM_EXACT,
                                           seed, q, 0, count, msg, sizeof msg);
        break;
      default:
        for (int q = 0; q < n; q++)
          *wrong += gp_ref_comm_check_copy(h + (size_t)q * count * es, o->dtype, o->op, GP_REF_COMM_EXACT,
                                           seed, q, (size_t)r * count, count, msg, sizeof msg);
        break;
    }
  }
  free(host);
  return s;
}

/* ---- the memcpy anchor (cpu backend) ------------------------------------------------------- */

typedef struct anchor_arg {
  pthread_barrier_t *bar;
  char *dst;
  const char *src;
  size_t bytes;
  int reps;
} anchor_arg_t;

static void *anchor_main(void *p) {
  anchor_arg_t *a = p;
  for (int i = 0; i < a->reps; i++) {
    pthread_barrier_wait(a->bar);
    memcpy(a->dst, a->src, a->bytes);
    pthread_barrier_wait(a->bar);
  }
  return NULL;
}

/* Mean time of n threads each copying bytes (rank r's send to its recv), in ms. */
static double anchor_ms(rank_t *rk, int n, size_t bytes, int warmup, int iters) {
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, (unsigned)n + 1);
  pthread_t th[64];
  anchor_arg_t args[64];
  int reps = warmup + iters;
  for (int r = 0; r < n; r++) {
    args[r] = (anchor_arg_t){&bar, rk[r].recv, rk[r].send, bytes, reps};
    pthread_create(&th[r], NULL, anchor_main, &args[r]);
  }
  double total = 0;
  for (int i = 0; i < reps; i++) {
    double t0 = tool_now_ms();
    pthread_barrier_wait(&bar); /* start */
    pthread_barrier_wait(&bar); /* all done */
    if (i >= warmup) total += tool_now_ms() - t0;
  }
  for (int r = 0; r < n; r++) pthread_join(th[r], NULL);
  pthread_barrier_destroy(&bar);
  return total / iters;
}

/* ---- driver ------------------------------------------------------------------------------------ */

static void print_header(const copts_t *o, int n, bool anchor) {
  if (o->json) return;
  printf("# gpuport bench %s: backend %s, %d ranks (one per device), %s, %s, %lld iterations "
         "(%lld warm-up)\n",
         o->name, gp_backend_name(), n, gp_dtype_name(o->dtype),
         o->kind == B_ALLREDUCE || o->kind == B_REDUCESCATTER ? gp_reduce_op_name_tool(o->op) : "-",
         (long long)o->iters, (long long)o->warmup);
  printf("#%11s %12s %6s | %10s %8s %8s %6s | %10s %8s %8s %6s%s\n", "size (B)", "count", "type",
         "out (us)", "algbw", "busbw", "#wrong", "in (us)", "algbw", "busbw", "#wrong",
         anchor ? " |  memcpy (us)  ratio" : "");
  printf("#%11s %12s %6s | %10s %8s %8s %6s | %10s %8s %8s %6s%s\n", "", "", "", "", "GB/s",
         "GB/s", "", "", "GB/s", "GB/s", "", anchor ? " |" : "");
}

static int run(const copts_t *o) {
  int ndev = 0, rc = 0, n = 0;
  rank_t rk[64];
  memset(rk, 0, sizeof rk);
  gp_comm_t comms[64];
  TOOL_TRY(gp_device_count(&ndev));
  n = o->ranks > 0 ? (int)o->ranks : ndev;
  if (n > ndev || n > 64) {
    fprintf(stderr, "gpuport bench %s: --ranks %d but %d devices (cpu backend: set GP_CPU_DEVICES)\n",
            o->name, n, ndev);
    return 2;
  }
  size_t es = gp_dtype_size(o->dtype), maxb = (size_t)o->max_bytes;
  TOOL_TRY(gp_comm_init_all(comms, n, NULL));
  for (int r = 0; r < n; r++) {
    rk[r].comm = comms[r];
    rk[r].device = r;
    TOOL_TRY(gp_device_set(r));
    TOOL_TRY(gp_stream_create(&rk[r].stream));
    size_t buf = maxb + 64 * es * (size_t)n;
    TOOL_TRY(gp_malloc((void **)&rk[r].send, buf));
    TOOL_TRY(gp_malloc((void **)&rk[r].recv, buf));
    TOOL_TRY(gp_memset(rk[r].send, 0, buf)); /* touched: no first-touch page faults timed */
    TOOL_TRY(gp_memset(rk[r].recv, 0, buf));
  }
  bool anchor = gp_backend() == GP_BACKEND_CPU && o->kind == B_ALLREDUCE;
  print_header(o, n, anchor);
  if (o->json)
    printf("{\n  \"bench\": \"%s\", \"backend\": \"%s\", \"ranks\": %d, \"dtype\": \"%s\", \"iters\": %lld, "
           "\"results\": [",
           o->name, gp_backend_name(), n, gp_dtype_name(o->dtype), (long long)o->iters);
  uint64_t seed = gp_ref_default_seed();
  int row = 0;
  for (size_t bytes = (size_t)o->min_bytes; bytes <= maxb; bytes *= 2) {
    size_t count = call_count(o, bytes, n);
    if (count == 0) continue;
    double us[2] = {0, 0}, algbw[2], busbw[2];
    size_t wrong[2] = {0, 0};
    bool skipped[2] = {false, false};
    for (int ip = 0; ip < 2; ip++) {
      if (o->kind == B_ALLTOALL && ip && gp_backend() != GP_BACKEND_CPU) {
        skipped[ip] = true; /* NCCL defines no in-place all-to-all */
        continue;
      }
      if (o->check) TOOL_TRY(check_size(o, rk, n, count, ip, seed ^ bytes, &wrong[ip]));
      for (int64_t i = 0; i < o->warmup; i++) TOOL_TRY(run_once(o, rk, n, count, ip, false));
      TOOL_TRY(run_once(o, rk, n, count, ip, true));
      double t0 = tool_now_ms();
      for (int64_t i = 0; i < o->iters; i++) TOOL_TRY(run_once(o, rk, n, count, ip, i + 1 == o->iters));
      us[ip] = (tool_now_ms() - t0) * 1e3 / (double)o->iters;
      double size = (double)count * (double)es * (o->kind == B_ALLREDUCE || o->kind == B_BROADCAST ? 1 : n);
      algbw[ip] = size / (us[ip] * 1e-6) * 1e-9;
      busbw[ip] = algbw[ip] * bus_factor(o->kind, n);
    }
    double a_us = anchor ? anchor_ms(rk, n, bytes, (int)o->warmup, (int)o->iters) * 1e3 : 0;
    size_t nbytes = count * es * (o->kind == B_ALLREDUCE || o->kind == B_BROADCAST ? 1 : (size_t)n);
    if (o->json) {
      printf("%s\n    {\"size\": %zu, \"count\": %zu", row ? "," : "", nbytes, count);
      for (int ip = 0; ip < 2; ip++) {
        if (skipped[ip]) continue;
        const char *k = ip ? "in" : "out";
        printf(", \"%s_us\": %.2f, \"%s_algbw\": %.3f, \"%s_busbw\": %.3f", k, us[ip], k, algbw[ip], k, busbw[ip]);
        if (o->check) printf(", \"%s_wrong\": %zu", k, wrong[ip]);
      }
      if (anchor) printf(", \"memcpy_us\": %.2f, \"ratio\": %.3f", a_us, us[0] / a_us);
      printf("}");
    } else {
      printf("%12zu %12zu %6s", nbytes, count, gp_dtype_name(o->dtype));
      for (int ip = 0; ip < 2; ip++) {
        if (skipped[ip]) {
          printf(" | %10s %8s %8s %6s", "-", "-", "-", "-");
          continue;
        }
        char w[16] = "-";
        if (o->check) snprintf(w, sizeof w, "%zu", wrong[ip]);
        printf(" | %10.1f %8.3f %8.3f %6s", us[ip], algbw[ip], busbw[ip], w);
      }
      if (anchor) printf(" | %12.1f %6.2f", a_us, us[0] / a_us);
      printf("\n");
    }
    fflush(stdout);
    row++;
    if (o->check && (wrong[0] || wrong[1])) rc = 1;
  }
  if (o->json) printf("\n  ]\n}\n");
out:
  for (int r = 0; r < n; r++) {
    gp_device_set(r);
    gp_free(rk[r].send);
    gp_free(rk[r].recv);
    gp_stream_destroy(rk[r].stream);
    gp_comm_destroy(rk[r].comm);
  }
  gp_device_set(0);
  return rc;
}

const char *gp_reduce_op_name_tool(gp_reduce_op_t op) {
  static const char *const names[] = {"sum", "prod", "max", "min", "avg"};
  return (unsigned)op <= GP_AVG ? names[op] : "?";
}

static const char comm_usage[] =
    "usage: gpuport bench allreduce|allgather|reducescatter|alltoall|broadcast [options]\n"
    "  --min-bytes N --max-bytes N  sizes, doubling (default 8 B to 256 MB)\n"
    "  --iters N --warmup N         timed and untimed runs per size (default 20/5 GPU, 5/1 CPU)\n"
    "  --dtype f32|f64|f16|bf16|i32|... --op sum|prod|max|min|avg (default f32 sum)\n"
    "  --ranks N                    ranks (default: every device; cpu: GP_CPU_DEVICES)\n"
    "  --check                      verify each size first on exact inputs (#wrong)\n"
    "  --json\n";

int tool_bench_comm(int argc, char **argv) {
  static const char *const names[] = {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast"};
  bool cpu = gp_backend() == GP_BACKEND_CPU;
  copts_t o = {B_ALLREDUCE, argv[1], 8, 256ll << 20, cpu ? 5 : 20, cpu ? 1 : 5, 0, GP_F32, GP_SUM, false, false};
  int k = 0;
  while (k < 5 && strcmp(argv[1], names[k])) k++;
  if (k == 5) return -1; /* not ours */
  o.kind = (bkind_t)k;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) {
      o.json = true;
    } else if (!strcmp(argv[i], "--check")) {
      o.check = true;
    } else if (!strcmp(argv[i], "--help")) {
      fputs(comm_usage, stdout);
      return 0;
    } else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
      const char *d = argv[++i];
      int t = 0;
      while (t < GP_DTYPE_COUNT && strcmp(d, gp_dtype_name((gp_dtype_t)t))) t++;
      if (t == GP_DTYPE_COUNT) {
        fprintf(stderr, "gpuport bench %s: unknown --dtype '%s'\n", o.name, d);
        return 2;
      }
      o.dtype = (gp_dtype_t)t;
    } else if (!strcmp(argv[i], "--op") && i + 1 < argc) {
      const char *d = argv[++i];
      int t = 0;
      while (t <= GP_AVG && strcmp(d, gp_reduce_op_name_tool((gp_reduce_op_t)t))) t++;
      if (t > GP_AVG) {
        fprintf(stderr, "gpuport bench %s: unknown --op '%s'\n", o.name, d);
        return 2;
      }
      o.op = (gp_reduce_op_t)t;
    } else if (!(tool_arg_i64(argc, argv, &i, "--min-bytes", &o.min_bytes) ||
                 tool_arg_i64(argc, argv, &i, "--max-bytes", &o.max_bytes) ||
                 tool_arg_i64(argc, argv, &i, "--iters", &o.iters) ||
                 tool_arg_i64(argc, argv, &i, "--warmup", &o.warmup) ||
                 tool_arg_i64(argc, argv, &i, "--ranks", &o.ranks))) {
      return tool_bad_arg("bench", argv[i]);
    }
  }
  if (o.iters < 1) o.iters = 1;
  if (o.min_bytes < 1) o.min_bytes = 1;
  if (o.max_bytes < o.min_bytes) o.max_bytes = o.min_bytes;
  return run(&o);
}
