/*
 * ref_lanes.c - the documented operand and result layouts of the matrix instructions
 * (ref_lanes.h names the sections). Each function states its source's rule in the
 * source's own terms, forward from a lane and register to a coordinate (or from a
 * coordinate to a byte), and nothing here is shared with the emulation headers.
 */
#include "ref_lanes.h"

/* PTX ISA 9.7.14.5.8: row = groupID for a0, a1, a4, a5, else groupID + 8;
 * col = threadID_in_group * 2 + (i & 1), plus 8 for a4 .. a7. */
void gp_ref_mma16_a(int lane, int e, int *row, int *col) {
  const int g = lane >> 2, t = lane % 4;
  *row = (e < 2 || (e >= 4 && e < 6)) ? g : g + 8;
  *col = t * 2 + (e & 1) + (e >= 4 ? 8 : 0);
}

/* PTX ISA 9.7.14.5.8, B: row = threadID_in_group * 2 + (i & 1) for b0, b1, plus 8 for
 * b2, b3; col = groupID. */
void gp_ref_mma16_b(int lane, int e, int *k, int *n) {
  const int g = lane >> 2, t = lane % 4;
  *k = t * 2 + (e & 1) + (e >= 2 ? 8 : 0);
  *n = g;
}

/* PTX ISA 9.7.14.5.8 (and 9.7.14.5 for m16n8k8), C / D: row = groupID for c0, c1,
 * groupID + 8 for c2, c3; col = threadID_in_group * 2 + (i & 1). */
void gp_ref_mma_c(int lane, int i, int *row, int *col) {
  const int g = lane >> 2, t = lane % 4;
  *row = i < 2 ? g : g + 8;
  *col = t * 2 + (i & 1);
}

/* PTX ISA 9.7.14.5, .tf32 A: row = groupID for a0, a2, groupID + 8 for a1, a3;
 * col = threadID_in_group for a0, a1, threadID_in_group + 4 for a2, a3. */
void gp_ref_mma8_tf32_a(int lane, int i, int *row, int *col) {
  const int g = lane >> 2, t = lane % 4;
  *row = (i == 0 || i == 2) ? g : g + 8;
  *col = i < 2 ? t : t + 4;
}

/* PTX ISA 9.7.14.5, .tf32 B: row = threadID_in_group for b0, + 4 for b1; col = groupID. */
void gp_ref_mma8_tf32_b(int lane, int i, int *k, int *n) {
  const int g = lane >> 2, t = lane % 4;
  *k = i == 0 ? t : t + 4;
  *n = g;
}

/* ldmatrix .m8n8 .b16: without .trans each thread receives two consecutive elements of
 * row lane / 4, starting at column (lane % 4) * 2; with .trans the matrix is transposed
 * on the way, so the same register holds the elements of column lane / 4 at rows
 * (lane % 4) * 2 and (lane % 4) * 2 + 1. */
void gp_ref_ldmatrix(int lane, int half, int trans, int *row, int *col) {
  if (!trans) {
    *row = lane / 4;
    *col = (lane % 4) * 2 + half;
  } else {
    *row = (lane % 4) * 2 + half;
    *col = lane / 4;
  }
}

/* PTX ISA 9.7.15.5.1.1.1, accumulator D of m64nNk16: each warp of the warpgroup owns 16
 * rows; within them row = groupID for d(4j), d(4j+1), groupID + 8 for d(4j+2), d(4j+3);
 * col = 8 j + threadID_in_group * 2 + (i & 1). */
void gp_ref_wgmma_d(int thread, int i, int *row, int *col) {
  const int warp = thread / 32, lane = thread % 32, g = lane >> 2, t = lane % 4, j = i / 4;
  *row = 16 * warp + ((i % 4) < 2 ? g : g + 8);
  *col = 8 * j + t * 2 + (i & 1);
}

/* PTX ISA 9.7.15.5.1.2: a W-byte swizzle permutes the 16-byte chunks of each 128-byte
 * line of the atom (8 rows of W bytes): chunk bits 4 .. 4 + log2(W / 16) - 1 of the
 * address are XORed with the line bits 7 and up. */
size_t gp_ref_swizzle(size_t a, int w) {
  if (w == 0) return a;
  const size_t mask = (size_t)(w / 16 - 1);
  return a ^ (((a >> 7) & mask) << 4);
}

/* PTX ISA 9.7.15.5.1.2 (atoms of 8 rows x W bytes, "core matrices" of 8 rows x 16 bytes
 * without swizzle), for 16-bit elements:
 *   K-major, no swizzle: core matrix (x / 8, k / 8) at (x / 8) SBO + (k / 8) LBO, row
 *     x % 8 of 16 bytes, element k % 8;
 *   K-major, swizzled: atom x / 8 at (x / 8) SBO, row x % 8 of W bytes holding k;
 *   MN-major, no swizzle: core matrix (x / 8, k / 8) at (x / 8) SBO + (k / 8) LBO, row
 *     k % 8 of 16 bytes, element x % 8;
 *   MN-major, swizzled: atom (x / (W / 2), k / 8) at (x / (W / 2)) LBO + (k / 8) SBO, row
 *     k % 8 of W bytes holding x % (W / 2). */
size_t gp_ref_wgmma_pos(int mn_major, int w, int x, int k, int lbo, int sbo) {
  size_t p;
  if (!mn_major && !w)
    p = (size_t)(x / 8) * (size_t)sbo + (size_t)(k / 8) * (size_t)lbo + 16 * (size_t)(x % 8) + 2 * (size_t)(k % 8);
  else if (!mn_major)
    p = (size_t)(x / 8) * (size_t)sbo + (size_t)w * (size_t)(x % 8) + 2 * (size_t)k;
  else if (!w)
    p = (size_t)(x / 8) * (size_t)sbo + (size_t)(k / 8) * (size_t)lbo + 16 * (size_t)(k % 8) + 2 * (size_t)(x % 8);
  else
    p = (size_t)(x / (w / 2)) * (size_t)lbo + (size_t)(k / 8) * (size_t)sbo + (size_t)w * (size_t)(k % 8) +
        2 * (size_t)(x % (w / 2));
  return gp_ref_swizzle(p, w);
}

/* cp.async.bulk.tensor, tile mode: box element (i0, i1, i2) is tensor element c + i;
 * coordinates outside [0, dims) are out of bounds. */
long gp_ref_tma_elem(const gp_ref_tma_box_t *t, unsigned i0, unsigned i1, unsigned i2) {
  const long g0 = t->c[0] + (long)i0, g1 = t->c[1] + (long)i1, g2 = t->c[2] + (long)i2;
  if (g0 < 0 || g1 < 0 || g2 < 0 || g0 >= (long)t->dims[0] || g1 >= (long)t->dims[1] || g2 >= (long)t->dims[2])
    return -1;
  return g0 + (long)t->pitch[0] * (g1 + (long)t->pitch[1] * g2);
}

/* The box lands in shared memory row after row (box[0] elements each), plane after
 * plane, with the map's swizzle applied to the byte addresses. */
size_t gp_ref_tma_smem(const gp_ref_tma_box_t *t, unsigned i0, unsigned i1, unsigned i2) {
  const size_t lin = ((size_t)i2 * t->box[1] + i1) * (2 * (size_t)t->box[0]) + 2 * (size_t)i0;
  return gp_ref_swizzle(lin, t->swizzle);
}

/* The Matrix Instruction Calculator's equations (no modifiers): A[i][k] and B[k][j] sit
 * in lane x + M floor(k / p), element k % p. */
int gp_ref_mfma_in_lane(int m, int p, int x, int k) { return x + m * (k / p); }
int gp_ref_mfma_in_elem(int p, int k) { return k % p; }

/* D[i][j]: 32x32 in register 4 floor(i / 8) + i % 4 of lane (32 floor(i / 4)) % 64 + j;
 * 16x16 in register i % 4 of lane 16 floor(i / 4) + j. */
int gp_ref_mfma_d_reg(int m, int i) { return m == 32 ? 4 * (i / 8) + i % 4 : i % 4; }
int gp_ref_mfma_d_lane(int m, int i, int j) { return m == 32 ? (32 * (i / 4)) % 64 + j : 16 * (i / 4) + j; }
