/*
 * kt_exec.cu - kernels for the executor tests of test/test_kernel.c: device variables
 * (`__constant__` and `__device__` with gp_memcpy_to_symbol), f16/bf16 atomics,
 * cooperative launches with gp_grid_sync, and the faults of GPU threads (stack
 * overflow, invalid address, out-of-bounds read for AddressSanitizer).
 *
 * Decomposition: 1D grids of 1D blocks; g is the global thread index.
 */
#include <gpuport/kernel.h>

/* ---- device variables ------------------------------------------------------------- */
#define KT_NCOEF 8
__constant__ float kt_coef[KT_NCOEF];
GP_SYMBOL_EXPORT(kt_coef)
static __device__ unsigned kt_calls;
GP_SYMBOL_EXPORT(kt_calls)

/* y[i] = sum_k kt_coef[k] x[i]^k (Horner), for i < n; counts the threads in kt_calls. */
GP_KERNEL void kt_poly(int n, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = kt_coef[KT_NCOEF - 1];
  for (int k = KT_NCOEF - 2; k >= 0; k--) acc = acc * x[i] + kt_coef[k];
  y[i] = acc;
  atomicAdd(&kt_calls, 1u);
}
GP_KERNEL_EXPORT(kt_poly)

/* ---- f16 / bf16 atomics -------------------------------------------------------------- */
/* Thread g adds v[g] to h[g % 4] and b[g % 4] (four 16-bit counters, two per 32-bit word),
 * takes the max into h[4 + g % 2] / b[4 + g % 2], the min into h[6] / b[6], and exchanges
 * v[g] into h[7] / b[7], storing the old values in old_h[g] / old_b[g]. */
GP_KERNEL void kt_atomic_half(int n, const float *v, gp_f16_t *h, gp_bf16_t *b, gp_f16_t *old_h,
                              gp_bf16_t *old_b) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= n) return;
  gp_f16_t vh = gp_f16_from_f32(v[g]);
  gp_bf16_t vb = gp_bf16_from_f32(v[g]);
  atomicAdd(&h[g % 4], vh);
  atomicAdd(&b[g % 4], vb);
  atomicMax(&h[4 + g % 2], vh);
  atomicMax(&b[4 + g % 2], vb);
  atomicMin(&h[6], vh);
  atomicMin(&b[6], vb);
  old_h[g] = atomicExch(&h[7], vh);
  old_b[g] = atomicExch(&b[7], vb);
}
GP_KERNEL_EXPORT(kt_atomic_half)

/* ---- cooperative launches --------------------------------------------------------------- */
/* phases rounds of: every block sums its slice of x scaled by (round + 1) into
 * partial[block]; the grid meets; every block adds all partials and block b stores
 * the total in out[round * gridDim.x + b]; the grid meets again before partial is
 * reused. Blocks of 128 threads. */
GP_KERNEL void kt_coop_sum(int n, const float *x, float *partial, float *out, int phases) {
  GP_SHARED(float, s, [128]);
  const unsigned t = threadIdx.x, b = blockIdx.x, nb = gridDim.x;
  for (int r = 0; r < phases; r++) {
    float acc = 0.0f;
    for (int i = (int)(b * blockDim.x + t); i < n; i += (int)(nb * blockDim.x)) acc += x[i] * (float)(r + 1);
    s[t] = acc;
    __syncthreads();
    for (unsigned h = blockDim.x / 2; h > 0; h /= 2) {
      if (t < h) s[t] += s[t + h];
      __syncthreads();
    }
    if (t == 0) partial[b] = s[0];
    gp_grid_sync();
    if (t == 0) {
      float tot = 0.0f;
      for (unsigned k = 0; k < nb; k++) tot += partial[k];
      out[(size_t)r * nb + b] = tot;
    }
    gp_grid_sync();
  }
}
GP_KERNEL_EXPORT(kt_coop_sum)

/* Thread 0 of every block raises its flag, then waits (at most about two seconds) for
 * every block's flag: out[b] = 1 when it saw them all, which needs every block of the
 * grid to run at once. */
GP_KERNEL void kt_coop_flags(int *flags, int *out) {
  if (threadIdx.x != 0) return;
  const unsigned nb = gridDim.x;
  atomicExch(&flags[blockIdx.x], 1);
  __threadfence();
  long long start = clock64();
  int seen = 0;
  for (long long spin = 0; spin < (1ll << 40); spin++) {
    seen = 0;
    for (unsigned k = 0; k < nb; k++) seen += atomicAdd(&flags[k], 0) != 0;
    if (seen == (int)nb || clock64() - start > 6000000000ll) break;
  }
  out[blockIdx.x] = seen == (int)nb;
}
GP_KERNEL_EXPORT(kt_coop_flags)

/* Misuse of the grid barrier: every block but block 0 returns before it (mode 0);
 * out[b] = 1 otherwise. */
GP_KERNEL void kt_coop_bad(int mode, int *out) {
  if (mode == 0 && blockIdx.x != 0) return;
  gp_grid_sync();
  out[blockIdx.x] = 1;
}
GP_KERNEL_EXPORT(kt_coop_bad)

#if defined(GP_TARGET_CPU) /* faults a GPU does not survive (or nvcc warns about) */
/* ---- faults of GPU threads ------------------------------------------------------------ */
/* A frame of about 1 KiB per level that the compiler cannot remove. */
GP_DEVICE int kt_deep(int n) {
  volatile char frame[1024];
  frame[n % 1024] = (char)n;
  if (n == 0) return frame[0];
  return kt_deep(n - 1) + frame[(n * 7) % 1024];
}

/* Thread `bad` of block `bad_block` recurses `depth` levels (after a barrier when
 * sync != 0, so on a fiber's stack; before it, on the worker's); out[g] = 1. */
GP_KERNEL void kt_recurse(int bad_block, int bad, int depth, int sync, int *out) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (sync) __syncthreads();
  int r = 0;
  if ((int)blockIdx.x == bad_block && (int)threadIdx.x == bad) r = kt_deep(depth);
  out[g] = 1 + (r & 0);
}
GP_KERNEL_EXPORT(kt_recurse)

/* Thread `bad` of block `bad_block` stores through wild, a pointer to nothing. */
GP_KERNEL void kt_wild(int bad_block, int bad, volatile int *wild, int *out) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  if ((int)blockIdx.x == bad_block && (int)threadIdx.x == bad) *wild = 1;
  out[g] = 1;
}
GP_KERNEL_EXPORT(kt_wild)

/* out[i] = x[i + over] for i < n: with over != 0 the last thread reads past the end of
 * x, which AddressSanitizer reports with this line. line[0] = the line of that read. */
GP_KERNEL void kt_oob(int n, int over, const float *x, float *out, int *line) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) line[0] = __LINE__ + 2;
  if (i < n)
    out[i] = x[i + over];
}
GP_KERNEL_EXPORT(kt_oob)

/* ---- kernel output and the launch watchdog ----------------------------------------------- */
/* Each thread prints `lines` records "p <block> <thread> <i>", with a barrier after each
 * when sync != 0 (the threads then interleave as fibers); out[g] = 1. */
GP_KERNEL void kt_printf(int lines, int sync, int *out) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = 0; i < lines; i++) {
    printf("p %u %u %d\n", blockIdx.x, threadIdx.x, i);
    if (sync) __syncthreads();
  }
  out[g] = 1;
}
GP_KERNEL_EXPORT(kt_printf)

/* The issue's case: a %s of a pointer to nothing, inside the formatting. */
GP_KERNEL void kt_printf_bad(int *out) {
  if (threadIdx.x == 0) printf("%s", (char *)0x10);
  out[threadIdx.x] = 1;
}
GP_KERNEL_EXPORT(kt_printf_bad)

/* Thread `spin` of block `spin_block` waits for *flag: mode 0 in a loop without a sync
 * point, before any barrier (the worker's lead fiber); mode 1 the same after a barrier
 * (a fiber); mode 2 every thread loops on __syncthreads(). out[g] = 1. */
GP_KERNEL void kt_spin(int mode, int spin_block, int spin, volatile int *flag, int *out) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  bool me = (int)blockIdx.x == spin_block && (int)threadIdx.x == spin;
  if (mode == 1) __syncthreads();
  if (mode == 2) {
    while (!*flag) __syncthreads();
  } else if (me) {
    while (!*flag) {
    }
  }
  out[g] = 1;
}
GP_KERNEL_EXPORT(kt_spin)
#endif
