/*
 * kt_warp_rules.cu - one kernel per warp-operation rule, for test/test_warp.c, which
 * recomputes every expected value on the host from the rule. Built at GP_WARP_SIZE
 * and, on the CPU backend, again at 64 (descriptors suffixed _w64); every kernel
 * reads the width it runs at from GP_WARP_SIZE, never from a literal.
 *
 * Decomposition: 1D grids of 1D blocks, one thread per element; g is the global thread
 * index, l its lane.
 */
#include <gpuport/kernel.h>

/* One shuffle of the table: kind 0 idx, 1 up, 2 down, 3 xor; form 0 the maskless
 * functions, 1 the _sync functions with GP_FULL_MASK, 2 CUDA's spellings. */
GP_DEVICE int kt_shuffle(int form, int kind, int v, int arg, int width) {
  switch (form * 4 + kind) {
  case 0: return gp_shfl(v, arg, width);
  case 1: return gp_shfl_up(v, (unsigned)arg, width);
  case 2: return gp_shfl_down(v, (unsigned)arg, width);
  case 3: return gp_shfl_xor(v, arg, width);
  case 4: return gp_shfl_sync(GP_FULL_MASK, v, arg, width);
  case 5: return gp_shfl_up_sync(GP_FULL_MASK, v, (unsigned)arg, width);
  case 6: return gp_shfl_down_sync(GP_FULL_MASK, v, (unsigned)arg, width);
  case 7: return gp_shfl_xor_sync(GP_FULL_MASK, v, arg, width);
  case 8: return __shfl_sync(GP_FULL_MASK, v, arg, width);
  case 9: return __shfl_up_sync(GP_FULL_MASK, v, (unsigned)arg, width);
  case 10: return __shfl_down_sync(GP_FULL_MASK, v, (unsigned)arg, width);
  default: return __shfl_xor_sync(GP_FULL_MASK, v, arg, width);
  }
}

/* out[g * n + i] = shuffle i of the table {kind, arg, width} x n applied to vals[g]
 * (width 0: GP_WARP_SIZE). */
GP_KERNEL void kt_shfl_table(int form, const int *table, int n, const int *vals, int *out) {
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  int v = vals[g];
  for (int i = 0; i < n; i++) {
    int width = table[3 * i + 2] ? table[3 * i + 2] : GP_WARP_SIZE; /* 0: the whole warp */
    out[(size_t)g * n + i] = kt_shuffle(form, table[3 * i], v, table[3 * i + 1], width);
  }
}
GP_KERNEL_EXPORT(kt_shfl_table)

/* The last nexit lanes of every warp (low != 0: the first nexit) return at once; the
 * others write: out[4g] = sum of 1 over the warp, out[4g+1] = all(1), out[4g+2] =
 * value of lane l+1 (wrapping) by the maskless shuffle, out[4g+3] = value of lane 0 by
 * __shfl_sync(GP_FULL_MASK); ball[g] = ballot(1). */
GP_KERNEL void kt_exited(int nexit, int low, const int *vals, int *out, unsigned long long *ball) {
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x, l = gp_lane_id();
  if (low ? l < (unsigned)nexit : l >= (unsigned)(GP_WARP_SIZE - nexit)) return;
  int v = vals[g];
  out[4 * (size_t)g] = gp_warp_reduce_sum(1);
  out[4 * (size_t)g + 1] = gp_all(1);
  out[4 * (size_t)g + 2] = gp_shfl(v, (int)l + 1);
  out[4 * (size_t)g + 3] = __shfl_sync(GP_FULL_MASK, v, 0);
  ball[g] = gp_ballot(1);
}
GP_KERNEL_EXPORT(kt_exited)

/* Even and odd lanes work in separate masked groups on separate branches, the odd
 * ones with two more operations, then the whole warp meets. Even lanes: out[3g] =
 * value of lane l ^ 2, ball[g] = ballot_sync(even, l % 4 == 0). Odd lanes: out[3g] =
 * value of lane 1 (idx 1 within the warp), ball[g] = ballot_sync(odd, 1).
 * out[3g+1] = any_sync(own half, l == 5), out[3g+2] = warp sum of 1 afterwards. */
GP_KERNEL void kt_subsets(const int *vals, int *out, unsigned long long *ball) {
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x, l = gp_lane_id();
  const gp_lane_mask_t even = GP_FULL_MASK / 3u, odd = even << 1;
  int v = vals[g];
  if (l % 2u == 0u) {
    out[3 * (size_t)g] = gp_shfl_xor_sync(even, v, 2);
    ball[g] = gp_ballot_sync(even, l % 4u == 0u);
    out[3 * (size_t)g + 1] = gp_any_sync(even, l == 5u);
  } else {
    gp_syncwarp_mask(odd);
    out[3 * (size_t)g] = gp_shfl_sync(odd, v, 1);
    gp_syncwarp_mask(odd);
    ball[g] = gp_ballot_sync(odd, 1);
    out[3 * (size_t)g + 1] = gp_any_sync(odd, l == 5u);
  }
  gp_syncwarp();
  out[3 * (size_t)g + 2] = gp_warp_reduce_sum(1);
}
GP_KERNEL_EXPORT(kt_subsets)

/* Each half-warp stores to shared memory, meets at gp_syncwarp_mask(its half), then
 * reads its neighbour's slot: out[g] = 7 * (t ^ 1) + 1 (blocks of at most 256). */
GP_KERNEL void kt_syncwarp_order(int *out) {
  GP_SHARED(int, buf, [256]);
  unsigned t = threadIdx.x, l = gp_lane_id();
  const gp_lane_mask_t lo = GP_FULL_MASK >> (GP_WARP_SIZE / 2), hi = GP_FULL_MASK & ~lo;
  buf[t] = 7 * (int)t + 1;
  gp_syncwarp_mask(l < GP_WARP_SIZE / 2 ? lo : hi);
  out[blockIdx.x * blockDim.x + t] = buf[t ^ 1u];
}
GP_KERNEL_EXPORT(kt_syncwarp_order)

/* The first nexit lanes of each warp return; the others store gp_active_mask(). */
GP_KERNEL void kt_active(int nexit, unsigned long long *out) {
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  if (gp_lane_id() < (unsigned)nexit) return;
  out[g] = gp_active_mask();
}
GP_KERNEL_EXPORT(kt_active)

/* Warp operations a GPU leaves undefined; the CPU executor fails the launch. mode 0:
 * a mask without the caller; 1: a mask naming a lane that has exited; 2: a lane named
 * by a mask others wait at exits; 3: CUDA's 32-bit full mask (an error at width 64
 * only); 4: a shuffle width that is not a power of two. out[g] = 1 when done. */
GP_KERNEL void kt_warp_faults(int mode, int *out) {
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x, l = gp_lane_id();
  int v = (int)g;
  if (mode == 0) {
    v = gp_shfl_sync(1u, v, 0);
  } else if (mode == 1) {
    if (l < 2u) return;
    if (l < 4u) gp_syncwarp_mask(0xfu);
  } else if (mode == 2) {
    if (l == 3u) return;
    if (l < 4u) gp_syncwarp_mask(0xfu);
  } else if (mode == 3) {
    v = __shfl_sync(0xffffffffu, v, 0);
  } else {
    v = gp_shfl(v, 0, 24);
  }
  out[g] = v >= 0;
}
GP_KERNEL_EXPORT(kt_warp_faults)

#if defined(GP_TARGET_CPU)
/* The executor ABI's promise to code that reads exchanges directly (matrix-instruction
 * emulations): the results of two consecutive warp operations are readable together.
 * out[g] = sum over the warp of (l + 1) from the first and (1000 + l) from the second. */
GP_KERNEL void kt_two_exchanges(int *out) {
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x, l = gp_lane_id();
  const gp__cpu_warp_xchg_t *a = gp__cpu_warp_sync(l + 1u, __FILE__, __LINE__);
  const gp__cpu_warp_xchg_t *b = gp__cpu_warp_sync(1000u + l, __FILE__, __LINE__);
  long long s = 0;
  for (unsigned k = 0; k < GP_WARP_SIZE; k++) s += (long long)a->val[k] + (long long)b->val[k];
  out[g] = (int)s;
}
GP_KERNEL_EXPORT(kt_two_exchanges)
#endif
