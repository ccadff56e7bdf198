/*
 * probe_sm90a.cu - the sm_90a lane probes of `gpuport selftest --hardware` and
 * test/test_nv_wgmma.c: the wrappers of gpuport/nv_wgmma.h, wgmma from descriptors of
 * every swizzle and majorness, TMA loads and stores, mbarrier phases, transaction bytes
 * and a producer/consumer ring. The host side (cli/probe_sm90a.c) builds the
 * shared-memory images and the expected registers from the PTX ISA's layouts
 * (ref/ref_lanes.h); these kernels know no layout. On the cpu backend they run the
 * emulation; on a GPU of compute capability 9.0 the real instructions (built for sm_90a
 * alone, like every kernel of kernels/sm90a), so the same probe checks the emulation's
 * layouts against the hardware.
 */
#if defined(GP_BUILD_CPU) && !defined(GP_EMULATE_SM80)
#error "kernels/sm80 and kernels/sm90a build for the CPU executor only in emulation mode (-DGP_EMULATE_SM80)"
#endif
#include <gpuport/kernel.h>
#include <gpuport/nv_wgmma.h>

/* The first 1024-aligned address of the shared window at or after p (swizzle atoms). */
GP_DEVICE unsigned char *probe_align1024(unsigned char *p) {
  return p + ((1024u - gp_nv_smem_addr(p) % 1024u) % 1024u);
}

/* One warpgroup (128 threads): the A and B images (bytes, a_bytes and b_bytes) are copied
 * to shared memory at 1024-aligned addresses; d = A B (+ c when scale_d) by one
 * m64nNk16 with desc_a = (image A + a_off, lbo_a, sbo_a, swz_a), likewise B; out[128][n/2]
 * receives every thread's accumulators. n is 8 or 64; mode bits: 1 bf16, 2 trans_a,
 * 4 trans_b. */
GP_KERNEL void gp__probe_sm90a_wgmma(int mode, int n, const unsigned char *a, int a_bytes, const unsigned char *b, int b_bytes,
                        int a_off, int lbo_a, int sbo_a, int swz_a, int b_off, int lbo_b, int sbo_b, int swz_b,
                        int scale_d, const float *c, float *out) {
  GP_DYNAMIC_SHARED(unsigned char, raw);
  unsigned char *sa = probe_align1024(raw);
  unsigned char *sb = sa + (a_bytes + 1023) / 1024 * 1024;
  const int t = (int)threadIdx.x;
  for (int i = t; i < a_bytes; i += 128) sa[i] = a[i];
  for (int i = t; i < b_bytes; i += 128) sb[i] = b[i];
  gp_nv_fence_proxy_async();
  __syncthreads();
  float d[32];
  for (int i = 0; i < n / 2; i++) d[i] = c[t * (n / 2) + i];
  gp_nv_wgmma_state_t st;
  gp_nv_wgmma_init(&st);
  const uint64_t da = gp_nv_wgmma_desc(sa + a_off, (uint32_t)lbo_a, (uint32_t)sbo_a, swz_a);
  const uint64_t db = gp_nv_wgmma_desc(sb + b_off, (uint32_t)lbo_b, (uint32_t)sbo_b, swz_b);
  const int bf16 = mode & 1, ta = (mode >> 1) & 1, tb = (mode >> 2) & 1;
  gp_nv_wgmma_fence(&st);
  /* constant shapes and immediates on every branch, as the PTX needs */
#define PROBE_MMA(N, BF, TA, TB) gp_nv_wgmma(&st, d, N, da, db, scale_d, TA, TB, BF)
#define PROBE_MMA_T(N, BF)                \
  do {                                 \
    if (ta && tb) PROBE_MMA(N, BF, 1, 1); \
    else if (ta) PROBE_MMA(N, BF, 1, 0);  \
    else if (tb) PROBE_MMA(N, BF, 0, 1);  \
    else PROBE_MMA(N, BF, 0, 0);          \
  } while (0)
  if (n == 8) {
    if (bf16) PROBE_MMA_T(8, 1); else PROBE_MMA_T(8, 0);
  } else {
    if (bf16) PROBE_MMA_T(64, 1); else PROBE_MMA_T(64, 0);
  }
  gp_nv_wgmma_commit(&st);
  gp_nv_wgmma_wait(&st, 0);
  for (int i = 0; i < n / 2; i++) out[t * (n / 2) + i] = d[i];
}
GP_KERNEL_EXPORT(gp__probe_sm90a_wgmma)


/* TMA load of one box at (c0, c1, c2) (3D when rank 3) into 1024-aligned shared memory,
 * completed on an mbarrier; the box's raw shared bytes (box_bytes) go to out. 32 threads. */
GP_KERNEL void gp__probe_sm90a_tma_load(const __grid_constant__ gp_nv_tensor_map_t tm, int rank, int c0, int c1, int c2,
                           int box_bytes, unsigned char *out) {
  GP_DYNAMIC_SHARED(unsigned char, raw);
  GP_SHARED(uint64_t, bar, );
  unsigned char *s = probe_align1024(raw + 16);
  const int t = (int)threadIdx.x;
  if (t == 0) {
    gp_nv_mbarrier_init(&bar, 1);
    gp_nv_fence_mbarrier_init();
  }
  __syncthreads();
  if (t == 0) {
    gp_nv_mbarrier_arrive_expect_tx(&bar, (unsigned)box_bytes);
    if (rank == 3)
      gp_nv_tma_load_3d(s, &tm, c0, c1, c2, &bar);
    else
      gp_nv_tma_load_2d(s, &tm, c0, c1, &bar);
  }
  gp_nv_mbarrier_wait(&bar, 0);
  for (int i = t; i < box_bytes; i += 32) out[i] = s[i];
}
GP_KERNEL_EXPORT(gp__probe_sm90a_tma_load)

/* TMA store of the raw shared image img (box_bytes) to (c0, c1, c2). 32 threads. */
GP_KERNEL void gp__probe_sm90a_tma_store(const __grid_constant__ gp_nv_tensor_map_t tm, int rank, int c0, int c1, int c2,
                            int box_bytes, const unsigned char *img) {
  GP_DYNAMIC_SHARED(unsigned char, raw);
  unsigned char *s = probe_align1024(raw);
  const int t = (int)threadIdx.x;
  for (int i = t; i < box_bytes; i += 32) s[i] = img[i];
  gp_nv_fence_proxy_async();
  __syncthreads();
  if (t == 0) {
    if (rank == 3)
      gp_nv_tma_store_3d(&tm, s, c0, c1, c2);
    else
      gp_nv_tma_store_2d(&tm, s, c0, c1);
    gp_nv_tma_store_commit();
    gp_nv_tma_store_wait();
  }
}
GP_KERNEL_EXPORT(gp__probe_sm90a_tma_store)

/* mbarrier phases, by one thread: out[] records try_wait results after each step. */
GP_KERNEL void gp__probe_sm90a_mbarrier_phases(int *out) {
  GP_SHARED(uint64_t, bar, );
  if (threadIdx.x != 0) return;
  int i = 0;
  gp_nv_mbarrier_init(&bar, 2);
  out[i++] = gp_nv_mbarrier_try_wait_parity(&bar, 0); /* 0: phase 0 open */
  gp_nv_mbarrier_arrive(&bar);
  out[i++] = gp_nv_mbarrier_try_wait_parity(&bar, 0); /* 0: one of two arrivals */
  gp_nv_mbarrier_arrive(&bar);
  out[i++] = gp_nv_mbarrier_try_wait_parity(&bar, 0); /* 1: phase 0 complete */
  out[i++] = gp_nv_mbarrier_try_wait_parity(&bar, 1); /* 0: phase 1 open */
  gp_nv_mbarrier_arrive_expect_tx(&bar, 64);
  gp_nv_mbarrier_arrive(&bar);
  out[i++] = gp_nv_mbarrier_try_wait_parity(&bar, 1); /* 0: 64 bytes outstanding */
  out[i] = i;
}
GP_KERNEL_EXPORT(gp__probe_sm90a_mbarrier_phases)

/* The tx half of the phases test: arrive.expect_tx, then a TMA load completes the bytes. */
GP_KERNEL void gp__probe_sm90a_mbarrier_tx(const __grid_constant__ gp_nv_tensor_map_t tm, int *out) {
  GP_DYNAMIC_SHARED(unsigned char, raw);
  GP_SHARED(uint64_t, bar, );
  unsigned char *s = probe_align1024(raw);
  if (threadIdx.x != 0) return;
  gp_nv_mbarrier_init(&bar, 1);
  gp_nv_mbarrier_arrive_expect_tx(&bar, 64);
  out[0] = gp_nv_mbarrier_try_wait_parity(&bar, 0); /* 0: bytes outstanding */
  gp_nv_tma_load_2d(s, &tm, 0, 0, &bar);            /* a 64-byte box */
  while (!gp_nv_mbarrier_try_wait_parity(&bar, 0)) {
  }
  out[1] = 1;
  out[2] = gp_nv_mbarrier_try_wait_parity(&bar, 1); /* 0: phase 1 open */
}
GP_KERNEL_EXPORT(gp__probe_sm90a_mbarrier_tx)

/* A two-slot ring between warp 0 (producer) and warp 1 (consumer) over `iters` items,
 * with full and empty mbarriers and phase parities: out[k] = item k as received. */
GP_KERNEL void gp__probe_sm90a_mbarrier_ring(int iters, int *out) {
  GP_SHARED(uint64_t, full, [2]);
  GP_SHARED(uint64_t, empty, [2]);
  GP_SHARED(int, slot, [2][32]);
  const int t = (int)threadIdx.x, lane = t % 32;
  if (t == 0) {
    for (int s = 0; s < 2; s++) {
      gp_nv_mbarrier_init(&full[s], 32);
      gp_nv_mbarrier_init(&empty[s], 32);
    }
    gp_nv_fence_mbarrier_init();
  }
  __syncthreads();
  gp_nv_setmaxnreg_dec(40);
  for (int k = 0; k < iters; k++) {
    const int s = k % 2;
    const unsigned phase = (unsigned)(k / 2) & 1u;
    if (t < 32) {
      gp_nv_mbarrier_wait(&empty[s], phase ^ 1u); /* the first pass finds the slots free */
      slot[s][lane] = 1000 * k + lane;
      gp_nv_mbarrier_arrive(&full[s]);
    } else {
      gp_nv_mbarrier_wait(&full[s], phase);
      out[32 * k + lane] = slot[s][lane];
      gp_nv_mbarrier_arrive(&empty[s]);
    }
  }
}
GP_KERNEL_EXPORT(gp__probe_sm90a_mbarrier_ring)

