/*
 * kt_mfma.cu - the MFMA probe of test/test_amd_mfma.c: each lane loads its own operand
 * registers as given (no layout knowledge here), issues one wrapper of
 * gpuport/amd_mfma.h and stores its accumulator registers. On the CPU backend it runs
 * the emulation at warp width 64; on the hip backend the real instruction, so the same
 * test confirms the emulator's tables on an AMD GPU (docs/design/KERNELS.md "Matrix
 * instructions and their emulation").
 * CUDA builds compile it to nothing.
 *
 * Arguments, per wave w of the block (block of 64 * waves threads, lane l):
 *   a[w * 64 + l], b[...]  the lane's A and B register bits: four 16-bit elements
 *                          (element e in bits 16e..16e+15), or an f32 in the low 32 bits;
 *   c[(w * 64 + l) * 16 + r]  accumulator register r in (16 for 32x32, 4 for 16x16);
 *   d[...]                    accumulator register r out.
 * op: 0..5 = 32x32x8bf16_1k, 16x16x16bf16_1k, 32x32x8f16, 16x16x16f16, 32x32x2f32,
 * 16x16x4f32; 6..11 = the same through the gfx940 spellings.
 */
#if defined(GP_BUILD_CPU) || defined(__HIP__)
#define GP_WARP_SIZE 64
#include <gpuport/kernel.h>
#include <gpuport/amd_mfma.h>

GP_DEVICE gp_amd_b16x4_t kt_unpack(uint64_t v) {
  gp_amd_b16x4_t x;
  for (int e = 0; e < 4; e++) x[e] = (short)(uint16_t)(v >> (16 * e));
  return x;
}

GP_DEVICE float kt_f32(uint64_t v) {
  uint32_t u = (uint32_t)v;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

GP_KERNEL void kt_mfma(int op, const uint64_t *a, const uint64_t *b, const float *c, float *d) {
  const int t = (int)threadIdx.x;
  const gp_amd_b16x4_t a16 = kt_unpack(a[t]), b16 = kt_unpack(b[t]);
  const float a32 = kt_f32(a[t]), b32 = kt_f32(b[t]);
  const float *ct = c + (size_t)t * 16;
  float *dt = d + (size_t)t * 16;
  const int base = op % 6, spelling = op / 6;
  if (base == 0 || base == 2 || base == 4) {
    gp_amd_f32x16_t acc, r;
    for (int i = 0; i < 16; i++) acc[i] = ct[i];
    if (base == 0)
      r = spelling ? gp_amd_mfma_f32_32x32x8_bf16(a16, b16, acc) : gp_amd_mfma_f32_32x32x8bf16_1k(a16, b16, acc);
    else if (base == 2)
      r = spelling ? gp_amd_mfma_f32_32x32x8_f16(a16, b16, acc) : gp_amd_mfma_f32_32x32x8f16(a16, b16, acc);
    else
      r = spelling ? gp_amd_mfma_f32_32x32x2_f32(a32, b32, acc) : gp_amd_mfma_f32_32x32x2f32(a32, b32, acc);
    for (int i = 0; i < 16; i++) dt[i] = r[i];
  } else {
    gp_amd_f32x4_t acc, r;
    for (int i = 0; i < 4; i++) acc[i] = ct[i];
    if (base == 1)
      r = spelling ? gp_amd_mfma_f32_16x16x16_bf16(a16, b16, acc) : gp_amd_mfma_f32_16x16x16bf16_1k(a16, b16, acc);
    else if (base == 3)
      r = spelling ? gp_amd_mfma_f32_16x16x16_f16(a16, b16, acc) : gp_amd_mfma_f32_16x16x16f16(a16, b16, acc);
    else
      r = spelling ? gp_amd_mfma_f32_16x16x4_f32(a32, b32, acc) : gp_amd_mfma_f32_16x16x4f32(a32, b32, acc);
    for (int i = 0; i < 4; i++) dt[i] = r[i];
  }
}
GP_KERNEL_EXPORT(kt_mfma)
#else
typedef int kt_mfma_empty_t;
#endif
