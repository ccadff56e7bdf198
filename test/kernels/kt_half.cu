/*
 * kt_half.cu - the arithmetic half types of gpuport/half.h for test/test_dialect.c:
 * conversions of every 16-bit pattern and of given floats, the scalar operations and
 * intrinsics, the pair forms, shuffles and atomics. One thread per element.
 */
#include <gpuport/kernel.h>
#include <gpuport/half.h>

/* Thread i of 65536: f16f[i] = float of binary16 pattern i, f16back[i] = its pattern back
 * through __float2half; the same for bfloat16. */
GP_KERNEL void kt_h_all_patterns(float *f16f, unsigned short *f16back, float *bf16f, unsigned short *bf16back) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 65536u) return;
  gp_f16_t s;
  s.bits = (uint16_t)i;
  const float f = __half2float(gp_half_of(s));
  f16f[i] = f;
  f16back[i] = gp_f16_of(__float2half_rn(f)).bits;
  gp_bf16_t b;
  b.bits = (uint16_t)i;
  const float g = __bfloat162float(gp_bfloat16_of(b));
  bf16f[i] = g;
  bf16back[i] = gp_bf16_of(__float2bfloat16(g)).bits;
}
GP_KERNEL_EXPORT(kt_h_all_patterns)

/* h[i], b[i]: in[i] rounded to binary16 and to bfloat16 (both spellings of each). */
GP_KERNEL void kt_h_from_float(int n, const float *in, unsigned short *h, unsigned short *b) {
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const __half x = __float2half(in[i]), y = __float2half_rn(in[i]);
  const __nv_bfloat16 u = __float2bfloat16(in[i]), v = __float2bfloat16_rn(in[i]);
  h[i] = gp_f16_of(x).bits == gp_f16_of(y).bits ? gp_f16_of(x).bits : 0xdeadu;
  b[i] = gp_bf16_of(u).bits == gp_bf16_of(v).bits ? gp_bf16_of(u).bits : 0xdeadu;
}
GP_KERNEL_EXPORT(kt_h_from_float)

enum { KT_H_OUTS = 14 };
/* out[KT_H_OUTS * i + k] for patterns a[i], b[i], c[i] of binary16 (bf = 0) or bfloat16
 * (bf = 1): add, sub, mul, div, fma, max, min, neg(a), abs(a), sqrt(a), operator forms
 * (a + b) * c, the comparisons as bits (lt, le, gt, ge, eq, ne, ltu, equ, isnan(a)). */
template <class T> static __device__ void kt_h_ops(const T a, const T b, const T c, unsigned short *o) {
  T r[10] = {__hadd(a, b), __hsub(a, b), __hmul(a, b), __hdiv(a, b), __hfma(a, b, c),
             __hmax(a, b), __hmin(a, b), __hneg(a),    __habs(a),    hsqrt(a)};
  for (int k = 0; k < 10; k++) memcpy(&o[k], &r[k], 2);
  T s = a;
  s += b;
  const T t = (a + b) * c;
  memcpy(&o[10], &s, 2);
  memcpy(&o[11], &t, 2);
  o[12] = (unsigned short)(__hlt(a, b) | __hle(a, b) << 1 | __hgt(a, b) << 2 | __hge(a, b) << 3 |
                           __heq(a, b) << 4 | __hne(a, b) << 5 | __hltu(a, b) << 6 | __hequ(a, b) << 7 |
                           __hisnan(a) << 8 | (a < b) << 9 | (a == b) << 10);
  o[13] = 0;
}
GP_KERNEL void kt_h_arith(int n, int bf, const unsigned short *a, const unsigned short *b,
                          const unsigned short *c, unsigned short *out) {
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  if (bf) {
    gp_bf16_t x, y, z;
    x.bits = a[i], y.bits = b[i], z.bits = c[i];
    kt_h_ops<__nv_bfloat16>(gp_bfloat16_of(x), gp_bfloat16_of(y), gp_bfloat16_of(z), out + KT_H_OUTS * i);
  } else {
    gp_f16_t x, y, z;
    x.bits = a[i], y.bits = b[i], z.bits = c[i];
    kt_h_ops<__half>(gp_half_of(x), gp_half_of(y), gp_half_of(z), out + KT_H_OUTS * i);
  }
}
GP_KERNEL_EXPORT(kt_h_arith)

/* The pair forms, shuffles and atomics, one block of 128 threads; lane l of the warp:
 * pairs[8 * t + k]: __hadd2, __hmul2, __hfma2 of (t, t + 0.5) with (2, 0.25) and (1, 1)
 * as float pairs (x, y), then __low2float(__floats2half2_rn(t, -t)) and
 * __high2float(__halves2half2(...)) ..., shuffled[4 * t + k]: the value of lane l ^ 1 as
 * __half, __half2.y, __nv_bfloat16, __nv_bfloat162.y (bf16 via __shfl_xor_sync, half via
 * gp_shfl_xor); acc[0..1]: atomicAdd of (1, 2) to a __half2 by every thread, acc[2..3]
 * the same on a __nv_bfloat162. */
GP_KERNEL void kt_h_pairs(float *pairs, float *shuffled, half2 *hacc, __nv_bfloat162 *bacc, float *acc) {
  const unsigned t = threadIdx.x;
  const float ft = (float)t;
  const __half2 p = __floats2half2_rn(ft, ft + 0.5f), q = __halves2half2(__float2half(2.0f), __float2half(0.25f));
  const __half2 one = __half2half2(__float2half(1.0f));
  const float2 s = __half22float2(__hadd2(p, q));
  const float2 m = __half22float2(__hmul2(p, q));
  const float2 f = __half22float2(__hfma2(p, q, one));
  const __nv_bfloat162 bp = __floats2bfloat162_rn(ft, -ft);
  const float2 bf = __bfloat1622float2(__hfma2(bp, __float22bfloat162_rn(make_float2(2.0f, 0.5f)),
                                               __bfloat162bfloat162(__float2bfloat16(1.0f))));
  float *o = pairs + 8 * t;
  o[0] = s.x, o[1] = s.y, o[2] = m.x, o[3] = m.y, o[4] = f.x, o[5] = f.y, o[6] = bf.x, o[7] = bf.y;
  (void)__low2half(p), (void)__high2half(p), (void)__lows2half2(p, q);
  (void)__low2bfloat16(bp), (void)__high2bfloat16(bp), (void)__float22half2_rn(make_float2(1.0f, 2.0f));
  /* CUDA's unprefixed names of the types */
  const half h = __float2half(ft);
  const half2 h2 = __lows2half2(__floats2half2_rn(-ft, 0.0f), __float2half2_rn(ft));
  const nv_bfloat16 b = __float2bfloat16(ft);
  const nv_bfloat162 b2 = __floats2bfloat162_rn(-ft, ft);
  float *so = shuffled + 4 * t;
  so[0] = __half2float(gp_shfl_xor(h, 1));
  so[1] = __high2float(gp_shfl_xor(h2, 1));
  so[2] = __bfloat162float(__shfl_xor_sync(GP_FULL_MASK, b, 1));
  so[3] = __high2float(__shfl_xor_sync(GP_FULL_MASK, b2, 1));
  atomicAdd(hacc, __floats2half2_rn(1.0f, 2.0f));
  atomicAdd(bacc, __floats2bfloat162_rn(1.0f, 2.0f));
  __syncthreads();
  if (t == 0) {
    acc[0] = __low2float(*hacc), acc[1] = __high2float(*hacc);
    acc[2] = __low2float(*bacc), acc[3] = __high2float(*bacc);
  }
}
GP_KERNEL_EXPORT(kt_h_pairs)
