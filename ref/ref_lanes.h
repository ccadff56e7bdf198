/*
 * ref_lanes.h - where the vendors' documents put each element of a matrix instruction's
 * operands and results: the reference layouts the lane probes (cli/probe_*.c, run by
 * `gpuport selftest --hardware` and the suites test_nv_mma, test_nv_wgmma and
 * test_amd_mfma) compare the emulation and the hardware against.
 *
 * Each formula is written from the layout description it cites, coordinate by
 * coordinate, independently of the emulation (gpuport/nv_mma.h, gpuport/nv_wgmma.h and
 * gpuport/amd_mfma.h compute the same maps their own way, mostly the inverse way: from a
 * register to a coordinate). The suites check a few of these values against positions
 * worked out by hand from the documents' figures.
 *
 * NVIDIA: PTX ISA 9.0, section 9.7.14.5 "Matrix Fragments for mma.m16n8k8" (.tf32) and
 * 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating point type" (lane l,
 * groupID g = l >> 2, threadID_in_group t = l % 4); "Warp-level matrix load instruction:
 * ldmatrix"; 9.7.15.5.1.1.1 "Matrix Fragments for wgmma.mma_async.m64nNk16" and
 * 9.7.15.5.1.2 "Shared Memory Matrix Layout" (swizzle atoms, leading and stride byte
 * offsets); "Tensor Copy Instructions" (cp.async.bulk.tensor: box elements outside the
 * tensor read as zero and are not written). AMD: the AMD Instinct MI200 and MI300 ISA
 * references, "Matrix Arithmetic Instructions", as tabulated by the AMD Matrix
 * Instruction Calculator (github.com/ROCm/amd_matrix_instruction_calculator, class
 * InstCalcGfx9) for instructions without modifiers.
 */
#ifndef GP_TOOL_REF_LANES_H
#define GP_TOOL_REF_LANES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- mma.sync m16n8k16, f16 / bf16 inputs, f32 accumulators ---------------------------
 * A is 16 x 16 (M x K, ".row"), B 16 x 8 (K x N, ".col"), C and D 16 x 8. Element e of a
 * lane's fragment sits in register e / 2, the lower e in the low 16 bits. */
/* A element a_e (e 0..7) of lane l: row and column of A. */
void gp_ref_mma16_a(int lane, int e, int *row, int *col);
/* B element b_e (e 0..3) of lane l: k (row of B) and n (column). */
void gp_ref_mma16_b(int lane, int e, int *k, int *n);
/* C / D register c_i (i 0..3) of lane l: row and column (also for m16n8k8). */
void gp_ref_mma_c(int lane, int i, int *row, int *col);

/* ---- mma.sync m16n8k8, tf32 inputs: one element per 32-bit register ------------------ */
/* A (16 x 8) register a_i (i 0..3) of lane l. */
void gp_ref_mma8_tf32_a(int lane, int i, int *row, int *col);
/* B (8 x 8, K x N) register b_i (i 0..1) of lane l. */
void gp_ref_mma8_tf32_b(int lane, int i, int *k, int *n);

/* ---- ldmatrix .m8n8 .b16 ----------------------------------------------------------------
 * Lanes 8j .. 8j + 7 give the addresses of rows 0 .. 7 of matrix j. Half h (0: low 16
 * bits, 1: high) of register j of lane l holds element (row, col) of matrix j, row being
 * the row whose address was given. */
void gp_ref_ldmatrix(int lane, int half, int trans, int *row, int *col);

/* ---- wgmma.mma_async m64nNk16: the f32 accumulator fragment --------------------------
 * Register i (0 .. N/2 - 1) of thread t (0..127) of the warpgroup holds D[row][col]. */
void gp_ref_wgmma_d(int thread, int i, int *row, int *col);

/* The W-byte swizzle (W = 0: none, 32, 64, 128) of shared byte address a: the 16-byte
 * chunk index within a 128-byte line is XORed with the line index modulo W / 16. */
size_t gp_ref_swizzle(size_t a, int w);

/* Byte position (swizzled) of 16-bit element (x, k) of a wgmma operand in a
 * shared-memory image that starts at a multiple of the swizzle atom: x runs along M (A)
 * or N (B), k along K; mn_major 0 is K-major (the descriptor's trans 0); lbo and sbo are
 * the descriptor's leading and stride byte offsets. */
size_t gp_ref_wgmma_pos(int mn_major, int w, int x, int k, int lbo, int sbo);

/* ---- TMA boxes --------------------------------------------------------------------------
 * A box of box[0] x box[1] x box[2] elements of elem_bytes at coordinates c[3] of a tensor
 * of dims[3] elements (innermost first) whose rows are pitch[0] elements apart and
 * planes pitch[1] rows apart. */
typedef struct gp_ref_tma_box {
  unsigned rank;
  uint64_t dims[3];
  uint64_t pitch[2];
  uint32_t box[3];
  int swizzle;
  int c[3];
} gp_ref_tma_box_t;
/* The tensor element (linear index into the allocation) box element (i0, i1, i2) maps
 * to, or -1 when it lies outside the tensor (a load reads zero there, a store skips it). */
long gp_ref_tma_elem(const gp_ref_tma_box_t *t, unsigned i0, unsigned i1, unsigned i2);
/* Shared byte offset of box element (i0, i1, i2) with 2-byte elements: the box is stored
 * densely, innermost first, then swizzled (the box starts on a swizzle atom). */
size_t gp_ref_tma_smem(const gp_ref_tma_box_t *t, unsigned i0, unsigned i1, unsigned i2);

/* ---- AMD MFMA (CDNA2 / CDNA3), wave64 ---------------------------------------------------
 * An M x N x K instruction (M = N = m) with p elements of A and of B per lane. */
/* Lane holding A[x][k] (or B[k][x]), and the element within its register. */
int gp_ref_mfma_in_lane(int m, int p, int x, int k);
int gp_ref_mfma_in_elem(int p, int k);
/* Accumulator register and lane of D[i][j]. */
int gp_ref_mfma_d_reg(int m, int i);
int gp_ref_mfma_d_lane(int m, int i, int j);

#ifdef __cplusplus
}
#endif

#endif /* GP_TOOL_REF_LANES_H */
