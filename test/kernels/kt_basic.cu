/*
 * kt_basic.cu - dialect kernels for test/test_kernel.c: indices, shared memory,
 * barriers, atomics, faults. One thread per element unless a kernel says otherwise.
 */
#include <gpuport/kernel.h>

/* c[i] = a[i] + b[i]; 1D grid of 1D blocks, n need not be a multiple of the block. */
GP_KERNEL void kt_vadd(int n, const float *a, const float *b, float *c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
GP_KERNEL_EXPORT(kt_vadd)

/* Every thread of a 3D grid of 3D blocks writes its six indices and the four extents
 * at out[8 * g], g = its linear index in the grid (block-major). */
GP_KERNEL void kt_index3d(unsigned *out) {
  unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned g = b * (blockDim.x * blockDim.y * blockDim.z) + t;
  unsigned *o = out + 8 * (size_t)g;
  o[0] = blockIdx.x;
  o[1] = blockIdx.y;
  o[2] = blockIdx.z;
  o[3] = threadIdx.x;
  o[4] = threadIdx.y;
  o[5] = threadIdx.z;
  o[6] = blockDim.x * 1000000u + blockDim.y * 1000u + blockDim.z;
  o[7] = gridDim.x * 1000000u + gridDim.y * 1000u + gridDim.z;
}
GP_KERNEL_EXPORT(kt_index3d)

/* Tree reduction in static shared memory (blocks of 256 threads): out[blockIdx.x] is
 * the sum of the block's 256 elements of x (0 past n). */
GP_KERNEL void kt_reduce_static(int n, const float *x, float *out) {
  GP_SHARED(float, buf, [256]);
  GP_SHARED(int, first_seen, );
  unsigned t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  if (t == 0) first_seen = 1;
  buf[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (t < s) buf[t] += buf[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = first_seen ? buf[0] : -1.0f;
}
GP_KERNEL_EXPORT(kt_reduce_static)

/* The same with dynamic shared memory of blockDim.x floats (any power-of-two block). */
GP_KERNEL void kt_reduce_dynamic(int n, const float *x, float *out) {
  GP_DYNAMIC_SHARED(float, buf);
  unsigned t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  buf[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (t < s) buf[t] += buf[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = buf[0];
}
GP_KERNEL_EXPORT(kt_reduce_dynamic)

/* Every thread (global index g) hits the same counters: ints[0] += 1, ints[1] max= g,
 * ints[2] min= g, ints[3] |= bit (g % 31), ints[4] ^= g, ints[5] -= 2;
 * uints[0] += 1, uints[1] = atomicInc wrap at 1000, uints[2] &= ~(bit g % 32);
 * f[0] += 0.5, d[0] += 0.25; ull[0] += g; CAS on ints[6] counts one winner per value. */
GP_KERNEL void kt_atomics(int *ints, unsigned *uints, float *f, double *d, unsigned long long *ull) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&ints[0], 1);
  atomicMax(&ints[1], g);
  atomicMin(&ints[2], g);
  atomicOr(&ints[3], 1 << (g % 31));
  atomicXor(&ints[4], g);
  atomicSub(&ints[5], 2);
  atomicAdd(&uints[0], 1u);
  atomicInc(&uints[1], 999u);
  atomicAnd(&uints[2], ~(1u << (g % 32)));
  atomicAdd(&f[0], 0.5f);
  atomicAdd(&d[0], 0.25);
  atomicAdd(&ull[0], (unsigned long long)g);
  int old = ints[6];
  while (atomicCAS(&ints[6], old, old + 1) != old) old = ints[6];
  __threadfence();
  atomicExch(&ints[7], 42);
}
GP_KERNEL_EXPORT(kt_atomics)

/* Thread `bad` of block `bad_block` executes __trap() (mode 0) or a failing assert
 * (mode 1); before a barrier when sync != 0. Everyone else writes out[g] = 1. */
GP_KERNEL void kt_fault(int *out, int bad_block, int bad, int mode, int sync) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (sync) __syncthreads();
  if ((int)blockIdx.x == bad_block && (int)threadIdx.x == bad) {
    if (mode == 0) __trap();
    assert(bad < 0 && "the faulting thread");
  }
  out[g] = 1;
}
GP_KERNEL_EXPORT(kt_fault)

/* Divergent barriers. mode 0: the low half of the block waits at one __syncthreads, the
 * rest at another. mode 1: in warp 0, lanes below 8 wait at __syncthreads while the
 * other lanes wait at a warp operation: neither can ever complete. mode 2: threads that
 * skip the barrier exit (a legal pattern: exited threads do not hold it back). */
GP_KERNEL void kt_divergent(int mode, int *out) {
  unsigned t = threadIdx.x;
  if (mode == 0) {
    if (t < blockDim.x / 2)
      __syncthreads();
    else
      __syncthreads();
  } else if (mode == 1) {
    if (t < 8)
      __syncthreads();
    else
      gp_syncwarp();
  } else {
    if (t >= blockDim.x / 2) return;
    __syncthreads();
  }
  out[t] = 1;
}
GP_KERNEL_EXPORT(kt_divergent)

/* __syncthreads_count/_and/_or: out[0..2] from thread 0 of block 0. */
GP_KERNEL void kt_sync_ops(int *out) {
  unsigned t = threadIdx.x;
  int c = __syncthreads_count(t % 3 == 0);
  int a = __syncthreads_and(t < blockDim.x);
  int o = __syncthreads_or(t == blockDim.x - 1);
  int a0 = __syncthreads_and(t != 5);
  if (t == 0) {
    out[0] = c;
    out[1] = a;
    out[2] = o;
    out[3] = a0;
  }
}
GP_KERNEL_EXPORT(kt_sync_ops)

/* Benchmark: iters barriers per block; out[blockIdx.x] = threads that passed them. */
GP_KERNEL void kt_barriers(int iters, int *out) {
  GP_SHARED(int, count, );
  if (threadIdx.x == 0) count = 0;
  for (int i = 0; i < iters; i++) __syncthreads();
  atomicAdd(&count, 1);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = count;
}
GP_KERNEL_EXPORT(kt_barriers)

/* Reads a GP_SHARED array one element past its end when over != 0 (the sanitizer
 * build reports it; never run in the test suite). */
GP_KERNEL void kt_shared_overflow(int over, float *out) {
  GP_SHARED(float, tile, [64]);
  tile[threadIdx.x] = (float)threadIdx.x;
  __syncthreads();
  const float *p = &tile[0]; /* through a pointer: AddressSanitizer, not the bounds check */
  out[threadIdx.x] = p[threadIdx.x + (over ? 1 : 0)];
}
GP_KERNEL_EXPORT(kt_shared_overflow)
