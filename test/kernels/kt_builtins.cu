/*
 * kt_builtins.cu - built-ins of the dialect for test/test_dialect.c: 24-bit and
 * high-half multiplies, __align__, the small vector types, __grid_constant__, scoped
 * atomics, cache-hinted loads and stores, mixed-signedness min/max; and <assert.h>
 * included after gpuport/kernel.h, whose assert must still fail the launch.
 */
#include <gpuport/kernel.h>
#include <assert.h>

struct __align__(16) kt_aligned {
  int a;
};

/* One thread: out[k] as the test lists them; p = {x, y} of the test. */
GP_KERNEL void kt_builtins(const __grid_constant__ int2 p, unsigned *out, int *counter) {
  const int x = p.x, y = p.y;
  out[0] = (unsigned)__mul24(x, y);
  out[1] = __umul24((unsigned)x, (unsigned)y);
  out[2] = (unsigned)__mulhi(x, y);
  out[3] = __umulhi((unsigned)x, (unsigned)y);
  out[4] = min(-1, 5u);                  /* unsigned: 5 */
  out[5] = max(-1, 5u);                  /* unsigned: 0xffffffff */
  out[6] = (unsigned)alignof(kt_aligned);
  const uchar4 c = make_uchar4(1, 2, 3, 250);
  const char4 d = make_char4(-1, 2, -3, 4);
  const ushort2 e = make_ushort2(65535, 7);
  const short4 f = make_short4(-5, 6, -7, 8);
  out[7] = (unsigned)(c.x + c.y + c.z + c.w) + (unsigned)(sizeof(uchar4) == 4 && alignof(uchar4) == 4);
  out[8] = (unsigned)(d.x + d.y + d.z + d.w) + (unsigned)(sizeof(short4) == 8 && alignof(ushort2) == 4) * 100u;
  out[9] = (unsigned)e.x + e.y + (unsigned)(f.x + f.y + f.z + f.w);
  atomicAdd_system(counter, 2);
  atomicAdd_block(counter, 3);
  (void)atomicCAS_system(counter, 5, 50);
  (void)atomicMax_block(counter, 40);
  out[10] = (unsigned)__ldcs(counter) + (unsigned)__ldcg(&x) + (unsigned)__ldca(&y) + (unsigned)__ldlu(&x) +
            (unsigned)__ldcv(&y);
  __stcs(&out[11], 11u);
  __stcg(&out[12], 12u);
  __stwb(&out[13], 13u);
  __stwt(&out[14], 14u);
}
GP_KERNEL_EXPORT(kt_builtins)

/* Thread 3 of the block fails an assert (assert from <assert.h> included last). */
GP_KERNEL void kt_assert_after(int *out) {
  out[threadIdx.x] = 1;
  assert(threadIdx.x != 3);
}
GP_KERNEL_EXPORT(kt_assert_after)

/* Warp match (__match_any_sync, __match_all_sync and their maskless gp_ forms) and the
 * integer umin / umax family, per thread: out[6 * t + k] as test_dialect.c lists them. */
GP_KERNEL void kt_match(const int *in, unsigned long long *out) {
  const unsigned t = threadIdx.x, lane = gp_lane_id();
  const int v = in[t];
  unsigned long long *o = out + 6 * t;
  o[0] = gp_match_any(v);
  /* 64-bit values: pointers, as an aggregated atomic compares them */
  o[1] = __match_any_sync(GP_FULL_MASK, (unsigned long long)(uintptr_t)(in + v));
  if (lane % 2 == 0) {
    gp_lane_mask_t even = 0;
    for (unsigned l = 0; l < GP_WARP_SIZE; l += 2) even |= (gp_lane_mask_t)1 << l;
    o[2] = __match_any_sync(even, (float)v);
  }
  int pred = -1;
  const double w = gp_warp_id() % 2 == 0 ? 7.0 : (double)v;
  o[3] = __match_all_sync(GP_FULL_MASK, w, &pred);
  o[4] = (unsigned long long)pred;
  /* nibbles: umin, umax, llmin + 8, llmax + 8, ullmin, ullmax >> 40 */
  o[5] = umin((unsigned)v, 2u) | umax((unsigned)v, 2u) << 4 | (unsigned long long)(llmin(-v, -2) + 8) << 8 |
         (unsigned long long)(llmax(-v, -2) + 8) << 12 | ullmin(1ull << 40, (unsigned long long)v) << 16 |
         (ullmax(1ull << 40, (unsigned long long)v) >> 40) << 20;
}
GP_KERNEL_EXPORT(kt_match)
