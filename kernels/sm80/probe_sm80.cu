/*
 * probe_sm80.cu - the sm_80 lane probes of `gpuport selftest --hardware` and
 * test/test_nv_mma.c: the instruction wrappers of gpuport/nv_mma.h, one instruction (or
 * one short sequence) per kernel. The host side (cli/probe_sm80.c) computes every
 * register a lane passes in or must get back from the PTX ISA's layouts
 * (ref/ref_lanes.h); these kernels know no layout, they only move registers. On the cpu
 * backend they run the emulation (built with -DGP_EMULATE_SM80); on an NVIDIA GPU of
 * compute capability 8.0 or above the real instructions, so the same probe checks the
 * emulation's tables against the hardware.
 *
 * Every kernel runs one warp (32 threads) unless said otherwise.
 */
#if defined(GP_BUILD_CPU) && !defined(GP_EMULATE_SM80)
#error "kernels/sm80 and kernels/sm90a build for the CPU executor only in emulation mode (-DGP_EMULATE_SM80)"
#endif
#include <gpuport/kernel.h>
#include <gpuport/nv_mma.h>

/* d = A B + C with the registers given per lane: a[32][4], b[32][2], c[32][4] -> d[32][4]
 * (lanes at or above blockDim.x neither read nor write). */
GP_KERNEL void gp__probe_sm80_mma(int bf16, const uint32_t *a, const uint32_t *b, const float *c, float *d) {
  const unsigned l = threadIdx.x;
  uint32_t ra[4], rb[2];
  float acc[4];
  for (int i = 0; i < 4; i++) ra[i] = a[4 * l + i];
  for (int i = 0; i < 2; i++) rb[i] = b[2 * l + i];
  for (int i = 0; i < 4; i++) acc[i] = c[4 * l + i];
  if (bf16)
    gp_nv_mma_m16n8k16_bf16(acc, ra, rb);
  else
    gp_nv_mma_m16n8k16_f16(acc, ra, rb);
  for (int i = 0; i < 4; i++) d[4 * l + i] = acc[i];
}
GP_KERNEL_EXPORT(gp__probe_sm80_mma)

/* The tf32 form: lane l rounds its operands a[32][4], b[32][2] (f32) with cvt.rna.tf32
 * unless raw, writes the rounded bits to ra_out[32][4], then d = A B + C (m16n8k8). */
GP_KERNEL void gp__probe_sm80_mma_tf32(int raw, const float *a, const float *b, const float *c, float *d,
                                       uint32_t *ra_out) {
  const unsigned l = threadIdx.x;
  uint32_t ra[4], rb[2];
  float acc[4];
  for (int i = 0; i < 4; i++) {
    const float x = a[4 * l + i];
    uint32_t bits;
    memcpy(&bits, &x, 4);
    ra[i] = raw ? bits : gp_nv_cvt_tf32(x);
    ra_out[4 * l + i] = ra[i];
  }
  for (int i = 0; i < 2; i++) {
    const float x = b[2 * l + i];
    uint32_t bits;
    memcpy(&bits, &x, 4);
    rb[i] = raw ? bits : gp_nv_cvt_tf32(x);
  }
  for (int i = 0; i < 4; i++) acc[i] = c[4 * l + i];
  gp_nv_mma_m16n8k8_tf32(acc, ra, rb);
  for (int i = 0; i < 4; i++) d[4 * l + i] = acc[i];
}
GP_KERNEL_EXPORT(gp__probe_sm80_mma_tf32)

/* ldmatrix of a 32 x 8 b16 array staged in shared memory: lane l gives the address of
 * row rows[l]; variant = nmat (1, 2, 4) + 8 * trans; r[32][4] receives the registers
 * (those the variant does not write keep 0). */
GP_KERNEL void gp__probe_sm80_ldmatrix(int variant, const uint16_t *src, const int *rows, uint32_t *r) {
  GP_SHARED(uint4, tile4, [32]); /* uint4: rows 16-byte aligned on every target */
  uint16_t(*tile)[8] = reinterpret_cast<uint16_t(*)[8]>(&tile4[0]);
  const unsigned l = threadIdx.x;
  for (int e = 0; e < 8; e++) tile[l][e] = src[8 * l + e];
  __syncthreads();
  uint32_t v[4] = {0u, 0u, 0u, 0u};
  const void *row = &tile[rows[l]][0];
  switch (variant) {
    case 1: gp_nv_ldmatrix_x1(v, row); break;
    case 2: gp_nv_ldmatrix_x2(v, row); break;
    case 4: gp_nv_ldmatrix_x4(v, row); break;
    case 9: gp_nv_ldmatrix_x1_trans(v, row); break;
    case 10: gp_nv_ldmatrix_x2_trans(v, row); break;
    default: gp_nv_ldmatrix_x4_trans(v, row); break;
  }
  for (int i = 0; i < 4; i++) r[4 * l + i] = v[i];
}
GP_KERNEL_EXPORT(gp__probe_sm80_ldmatrix)

/* A 16 x 8 x 16 product through shared memory: A (16 x 16, row-major b16) by ldmatrix.x4,
 * B stored k-major (16 x 8, [k][n]) by ldmatrix.x2.trans, then mma; d[16][8] row-major.
 * The fragment plumbing a GEMM uses, checked end to end. */
GP_KERNEL void gp__probe_sm80_tile(int bf16, const uint16_t *a, const uint16_t *b, float *d) {
  GP_SHARED(uint4, as4, [32]);
  GP_SHARED(uint4, bs4, [16]);
  uint16_t(*as)[16] = reinterpret_cast<uint16_t(*)[16]>(&as4[0]);
  uint16_t(*bs)[8] = reinterpret_cast<uint16_t(*)[8]>(&bs4[0]);
  const unsigned l = threadIdx.x;
  for (int e = (int)l; e < 256; e += 32) as[e / 16][e % 16] = a[e];
  for (int e = (int)l; e < 128; e += 32) bs[e / 8][e % 8] = b[e];
  __syncthreads();
  uint32_t ra[4], rb[2];
  /* matrices 0..3: rows 0-7 / 8-15 at column 0, then at column 8 */
  gp_nv_ldmatrix_x4(ra, &as[(l % 8) + 8 * ((l / 8) % 2)][8 * (l / 16)]);
  /* matrices 0, 1: k rows 0-7, then 8-15 (lanes 16-31 give unused addresses) */
  gp_nv_ldmatrix_x2_trans(rb, &bs[l % 16][0]);
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (bf16)
    gp_nv_mma_m16n8k16_bf16(acc, ra, rb);
  else
    gp_nv_mma_m16n8k16_f16(acc, ra, rb);
  const unsigned g = l / 4, t = l % 4;
  for (int i = 0; i < 4; i++) d[(g + 8 * (i / 2)) * 8 + 2 * t + (i % 2)] = acc[i];
}
GP_KERNEL_EXPORT(gp__probe_sm80_tile)

/* cp.async of every size, one thread per lane; each lane owns 80 bytes of shared memory
 * (5 chunks of 16, first set to 0x5a) and copies from src + 80 l:
 *   chunk 0  one 16-byte copy of 16 bytes                      group 0
 *   chunk 1  one 16-byte copy of sb16[l] (0..16) bytes         group 0
 *   chunk 2  four 4-byte copies, the last of 0 bytes           group 1
 *   chunk 3  two 8-byte copies, of 8 and of sb8[l] (0..8) bytes group 1
 *   chunk 4  one 16-byte copy, committed only at the end       group 2
 * snap[l][3][80] receives the lane's bytes after wait_group 1, after wait_group 0, and
 * at the end (after the last commit and a wait 0). */
GP_KERNEL void gp__probe_sm80_cp_async(const unsigned char *src, const int *sb16, const int *sb8, unsigned char *snap) {
  GP_SHARED(uint4, buf, [32 * 5]);
  const unsigned l = threadIdx.x;
  unsigned char *mine = reinterpret_cast<unsigned char *>(&buf[5 * l]);
  const unsigned char *from = src + 80 * l;
  for (int e = 0; e < 80; e++) mine[e] = 0x5a;
  __syncthreads(); /* the plain stores are done before any copy is issued */
  gp_nv_async_t as;
  gp_nv_async_init(&as);
  gp_nv_cp_async_16(&as, mine, from, 16);
  gp_nv_cp_async_16(&as, mine + 16, from + 16, sb16[l]);
  gp_nv_cp_async_commit(&as);
  for (int w = 0; w < 4; w++) gp_nv_cp_async_4(&as, mine + 32 + 4 * w, from + 32 + 4 * w, w == 3 ? 0 : 4);
  gp_nv_cp_async_8(&as, mine + 48, from + 48, 8);
  gp_nv_cp_async_8(&as, mine + 56, from + 56, sb8[l]);
  gp_nv_cp_async_commit(&as);
  gp_nv_cp_async_16(&as, mine + 64, from + 64, 16);
  gp_nv_cp_async_wait(&as, 1);
  for (int e = 0; e < 80; e++) snap[(3 * l + 0) * 80 + e] = mine[e];
  gp_nv_cp_async_wait(&as, 0);
  for (int e = 0; e < 80; e++) snap[(3 * l + 1) * 80 + e] = mine[e];
  gp_nv_cp_async_commit(&as);
  gp_nv_cp_async_wait(&as, 0);
  for (int e = 0; e < 80; e++) snap[(3 * l + 2) * 80 + e] = mine[e];
}
GP_KERNEL_EXPORT(gp__probe_sm80_cp_async)
