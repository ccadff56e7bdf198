/*
 * attention_mfma_common.h - helpers shared by the AMD MFMA attention kernels
 * (kernels/mfma/attention_fwd_mfma.cu, kernels/mfma/attention_bwd_mfma.cu): global loads through address
 * space 1, 16-bit packing, the MFMA of the input type, rounding and stores. Include after
 * gpuport/amd_mfma.h; everything here has internal linkage.
 */
#ifndef GP_HIP_ATTENTION_MFMA_COMMON_H
#define GP_HIP_ATTENTION_MFMA_COMMON_H

#if defined(GP_TARGET_CPU)
#define AF_UNROLL /* the CPU build: left to the compiler (quicker to build) */
#define AF_INLINE static inline __attribute__((always_inline))
#else
#define AF_UNROLL _Pragma("unroll")
#define AF_INLINE static __device__ __forceinline__
#endif

/* Global memory through address space 1 on AMDGPU (pointers read from a by-value
 * struct are generic otherwise: flat loads); native vector types for the vector loads. */
#if defined(GP_TARGET_HIP)
#define AF_GLOBAL __attribute__((address_space(1)))
typedef unsigned af_u32x4 __attribute__((ext_vector_type(4)));
AF_INLINE uint4 af_ld16(const AF_GLOBAL char *q) {
  const af_u32x4 v = *(const AF_GLOBAL af_u32x4 *)q;
  return make_uint4(v.x, v.y, v.z, v.w);
}
#else
#define AF_GLOBAL
AF_INLINE uint4 af_ld16(const char *q) { return *(const uint4 *)q; }
#endif

enum { AF_BF16 = 0, AF_F16 = 1 };

AF_INLINE uint32_t af_ld2(const AF_GLOBAL char *base, int64_t elem) {
  return ((const AF_GLOBAL uint16_t *)base)[elem];
}
AF_INLINE uint32_t af_lo16s(uint32_t a, uint32_t b) { return (a & 0xffffu) | (b << 16); }
AF_INLINE uint32_t af_hi16s(uint32_t a, uint32_t b) { return (a >> 16) | (b & 0xffff0000u); }

/* 8 consecutive 16-bit values at element e of base: one 16-byte load when vec. */
AF_INLINE uint4 af_ld8x16(const AF_GLOBAL char *base, int64_t e, bool vec) {
  if (vec) return af_ld16(base + e * 2);
  return make_uint4(af_ld2(base, e) | af_ld2(base, e + 1) << 16, af_ld2(base, e + 2) | af_ld2(base, e + 3) << 16,
                    af_ld2(base, e + 4) | af_ld2(base, e + 5) << 16, af_ld2(base, e + 6) | af_ld2(base, e + 7) << 16);
}

/* Two consecutive 16-bit values (low: element e) as one 32-bit word. */
AF_INLINE uint32_t af_ld2x16(const AF_GLOBAL char *base, int64_t e, bool vec) {
  if (vec) return *(const AF_GLOBAL uint32_t *)(base + e * 2);
  return af_ld2(base, e) | af_ld2(base, e + 1) << 16;
}

AF_INLINE gp_amd_b16x4_t af_b16x4(uint32_t w0, uint32_t w1) {
  gp_amd_b16x4_t x;
  x[0] = (short)(w0 & 0xffffu);
  x[1] = (short)(w0 >> 16);
  x[2] = (short)(w1 & 0xffffu);
  x[3] = (short)(w1 >> 16);
  return x;
}

AF_INLINE gp_amd_f32x16_t af_mfma(int kind, gp_amd_b16x4_t a, gp_amd_b16x4_t b, gp_amd_f32x16_t c) {
  if (kind == AF_BF16) return gp_amd_mfma_f32_32x32x8bf16_1k(a, b, c);
  return gp_amd_mfma_f32_32x32x8f16(a, b, c);
}

AF_INLINE uint32_t af_round16(int kind, float x) {
  return kind == AF_BF16 ? gp_bf16_from_f32(x).bits : gp_f16_from_f32(x).bits;
}

AF_INLINE void af_store(void *o, int64_t i, int kind, float x) {
  ((AF_GLOBAL uint16_t *)o)[i] = (uint16_t)af_round16(kind, x);
}

#endif /* GP_HIP_ATTENTION_MFMA_COMMON_H */
