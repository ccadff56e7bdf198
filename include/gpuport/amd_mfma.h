/**
 * @file gpuport/amd_mfma.h
 * @brief AMD CDNA matrix instructions (MFMA) in the kernel dialect: the real
 *        instructions under hipcc, a lane-exact emulation on the CPU executor.
 * @ingroup kernel
 *
 * Include after gpuport/kernel.h in a dialect source built with 64-lane wavefronts
 * (HIP, or the CPU backend with GP_WARP_SIZE 64; the sources in kernels/mfma/ define it). Each
 * wrapper is one wave-wide `D = A B + C` (f32 accumulation): every lane of the
 * wavefront calls it with its own registers, as with the instruction. The sources of
 * the register layouts below are the AMD Matrix Instruction Calculator
 * (github.com/ROCm/amd_matrix_instruction_calculator, matrix_calculator.py, class
 * InstCalcGfx9: `__get_input_reg_lanes`, `__get_output_reg_lanes` and the printed
 * equations `_coord_to_lane_eqn`, `_coord_to_output_reg_eqn`, valid for CDNA1-3) and
 * the AMD CDNA3 ISA reference guide, chapter "Matrix Arithmetic Instructions". With
 * lane l (0..63), register r, and no CBSZ/ABID/BLGP modifiers (all 0 here):
 *
 * | instruction | A[i][k] (M x K) | B[k][j] (K x N) | D[i][j] (M x N) |
 * |---|---|---|---|
 * | 32x32x8 bf16/f16 | lane i + 32 (k/4), element k%4 | lane j + 32 (k/4), element k%4 | reg r = 4 (i/8) + i%4, lane 32 ((i/4)%2) + j; so lane l, reg r holds i = 8 (r/4) + 4 (l/32) + r%4, j = l%32 |
 * | 16x16x16 bf16/f16 | lane i + 16 (k/4), element k%4 | lane j + 16 (k/4), element k%4 | reg r = i%4, lane 16 (i/4) + j; lane l, reg r holds i = 4 (l/16) + r, j = l%16 |
 * | 32x32x2 f32 | lane i + 32 k | lane j + 32 k | as 32x32x8 |
 * | 16x16x4 f32 | lane i + 16 k | lane j + 16 k | as 16x16x16 |
 *
 * A 16-bit operand is four values per lane in two VGPRs, element e in bits
 * [16 (e%2) + 15 : 16 (e%2)] of VGPR e/2 (the calculator's `(floor(k / 2) % 2).[16*(k % 2)+15
 * : 16*(k % 2)]`), which is element e of gp_amd_b16x4_t.
 *
 * Names: the gfx90a (CDNA2) mnemonics, `v_mfma_f32_32x32x8bf16_1k` ..., and the gfx940+
 * (CDNA3) spellings of the same opcodes, `v_mfma_f32_32x32x8_bf16` ... (LLVM
 * llvm/test/MC/AMDGPU/mai-gfx940.s: `v_mfma_f32_32x32x8bf16_1k` assembles for gfx940 as
 * `v_mfma_f32_32x32x8_bf16`, one encoding). Under hipcc both call the same clang builtin
 * (`__builtin_amdgcn_mfma_f32_32x32x8bf16_1k`, ...), available on gfx90a and gfx940/942.
 *
 * Numerics: 16-bit products are exact in f32; the emulation adds the K products of each
 * output to C in k order, rounding each sum to f32 (f32 forms also round each product).
 * The hardware's internal order and rounding are not documented, so results agree
 * within f32 summation error, never bit for bit (docs/design/KERNELS.md "Matrix
 * instructions and their emulation").
 *
 * CPU emulation: a wrapper is a wave-wide rendezvous of the executor
 * (gp__cpu_warp_sync): the lanes exchange their A values, then their B values (f32
 * forms exchange A and B in one round), and each lane computes its own D registers
 * from the whole A and B. Every lane of the wavefront must take part, as on the GPU
 * (MFMA reads all 64 lanes whatever EXEC holds); a lane that has exited reads as NaN
 * and the launch logs a warning naming the call site.
 */
#ifndef GP_AMD_MFMA_H
#define GP_AMD_MFMA_H

#include <gpuport/kernel.h>

#if defined(__cplusplus) && (defined(GP_TARGET_HIP) || defined(GP_TARGET_CPU))

#if GP_WARP_SIZE != 64
#error "gpuport/amd_mfma.h: MFMA instructions run on 64-lane wavefronts (define GP_WARP_SIZE 64)"
#endif

/* ---- operand and accumulator types -------------------------------------------------- */
#if defined(GP_TARGET_HIP)
/** @brief Four 16-bit operand values (bf16 or f16 bits) of one lane; element e is
 *         operand element e (bits [16 (e%2) + 15 : 16 (e%2)] of VGPR e/2). */
typedef short gp_amd_b16x4_t __attribute__((ext_vector_type(4)));
/** @brief The 16 f32 accumulator registers of one lane for a 32x32 instruction. */
typedef float gp_amd_f32x16_t __attribute__((ext_vector_type(16)));
/** @brief The 4 f32 accumulator registers of one lane for a 16x16 instruction. */
typedef float gp_amd_f32x4_t __attribute__((ext_vector_type(4)));
/** @cond GP_INTERNAL */
typedef _Float16 gp__amd_h4_t __attribute__((ext_vector_type(4)));
/** @endcond */
#else
/* The CPU: plain arrays with the same element access (x[i]) as the vector types. */
#define GP__AMD_VEC(N, T, n)                                                               \
  struct N {                                                                               \
    T v[n];                                                                                \
    T &operator[](int i) { return v[i]; }                                                  \
    const T &operator[](int i) const { return v[i]; }                                      \
  };
GP__AMD_VEC(gp_amd_b16x4_t, short, 4)
GP__AMD_VEC(gp_amd_f32x16_t, float, 16)
GP__AMD_VEC(gp_amd_f32x4_t, float, 4)
#undef GP__AMD_VEC
#endif

/* ---- the instructions on HIP ---------------------------------------------------------- */
#if defined(GP_TARGET_HIP)
#define GP__AMD_FN static __device__ __forceinline__
#define GP__AMD_SITE_DECL
#define GP__AMD_SITE_PASS

GP__AMD_FN gp_amd_f32x16_t gp_amd_mfma_f32_32x32x8bf16_1k(gp_amd_b16x4_t a, gp_amd_b16x4_t b,
                                                         gp_amd_f32x16_t c) {
  return __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, c, 0, 0, 0);
}
GP__AMD_FN gp_amd_f32x4_t gp_amd_mfma_f32_16x16x16bf16_1k(gp_amd_b16x4_t a, gp_amd_b16x4_t b,
                                                         gp_amd_f32x4_t c) {
  return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0);
}
GP__AMD_FN gp_amd_f32x16_t gp_amd_mfma_f32_32x32x8f16(gp_amd_b16x4_t a, gp_amd_b16x4_t b,
                                                     gp_amd_f32x16_t c) {
  return __builtin_amdgcn_mfma_f32_32x32x8f16(__builtin_bit_cast(gp__amd_h4_t, a),
                                              __builtin_bit_cast(gp__amd_h4_t, b), c, 0, 0, 0);
}
GP__AMD_FN gp_amd_f32x4_t gp_amd_mfma_f32_16x16x16f16(gp_amd_b16x4_t a, gp_amd_b16x4_t b,
                                                     gp_amd_f32x4_t c) {
  return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(gp__amd_h4_t, a),
                                               __builtin_bit_cast(gp__amd_h4_t, b), c, 0, 0, 0);
}
GP__AMD_FN gp_amd_f32x16_t gp_amd_mfma_f32_32x32x2f32(float a, float b, gp_amd_f32x16_t c) {
  return __builtin_amdgcn_mfma_f32_32x32x2f32(a, b, c, 0, 0, 0);
}
GP__AMD_FN gp_amd_f32x4_t gp_amd_mfma_f32_16x16x4f32(float a, float b, gp_amd_f32x4_t c) {
  return __builtin_amdgcn_mfma_f32_16x16x4f32(a, b, c, 0, 0, 0);
}

/* ---- the emulation on the CPU executor ----------------------------------------------- */
#else
#define GP__AMD_FN static inline
#define GP__AMD_SITE_DECL , const char *file = __builtin_FILE(), int line = __builtin_LINE()
#define GP__AMD_SITE_PASS , file, line

/** @cond GP_INTERNAL */
enum { GP__AMD_BF16 = 0, GP__AMD_F16 = 1, GP__AMD_F32 = 2 };

/* All 64 lanes' values of one exchange round; a lane that did not take part reads as
 * all ones (NaN as bf16, f16 and f32) and is reported. */
static inline void gp__amd_gather(uint64_t mine, uint64_t out[64], const char *file, int line) {
  const gp__cpu_warp_xchg_t *x = gp__cpu_warp_sync(mine, file, line);
  for (unsigned l = 0; l < 64; l++) {
    if ((x->active >> l) & 1u) {
      out[l] = x->val[l];
    } else {
      gp__cpu_warp_bad_lane(l, file, line);
      out[l] = ~(uint64_t)0;
    }
  }
}

static inline uint64_t gp__amd_pack(gp_amd_b16x4_t a) {
  uint64_t v = 0;
  for (int e = 0; e < 4; e++) v |= (uint64_t)(uint16_t)a[e] << (16 * e);
  return v;
}

/* Element e (0..3) of a packed 16-bit operand as f32 (exact). */
static inline float gp__amd_b16(uint64_t v, int e, int kind) {
  const uint16_t bits = (uint16_t)(v >> (16 * e));
  if (kind == GP__AMD_BF16) {
    gp_bf16_t b;
    b.bits = bits;
    return gp_f32_from_bf16(b);
  }
  gp_f16_t h;
  h.bits = bits;
  return gp_f32_from_f16(h);
}

/* Row i and column j of D held by register r of lane l (class InstCalcGfx9,
 * __get_output_reg_lanes: 4-row groups, 64/N of them side by side in one register). */
static inline int gp__amd_d_row(int n, int l, int r) { return (r / 4) * 4 * (64 / n) + 4 * (l / n) + r % 4; }
static inline int gp__amd_d_col(int n, int l) { return l % n; }

/* Element kk of the operand held by lanes x + m (kk / per) (16-bit kinds: four elements
 * per lane, per = 4; f32: the low 32 bits, per = 1), as f32 (exact). */
static inline float gp__amd_operand(const uint64_t *v, int m, int x, int kk, int kind) {
  if (kind == GP__AMD_F32) {
    const uint32_t u = (uint32_t)v[x + m * kk];
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
  }
  return gp__amd_b16(v[x + m * (kk / 4)], kk % 4, kind);
}

/* D = A B + C for an m x m x k instruction with one block, for lane l's nregs
 * registers; av[lane], bv[lane]: each lane's operand bits (__get_input_reg_lanes: operand
 * element (x, k) is in lane x + m floor(k / per), element k % per). Each output adds its
 * k products to C in k order, rounding each product and each sum to f32 (16-bit
 * products are exact, so for them this is one rounding per step, as fmaf). */
static inline void gp__amd_mma(int m, int k, int kind, const uint64_t *av, const uint64_t *bv,
                               unsigned l, const float *c, float *d, int nregs) {
  const int j = gp__amd_d_col(m, (int)l);
  float bcol[16];
  for (int kk = 0; kk < k; kk++) bcol[kk] = gp__amd_operand(bv, m, j, kk, kind);
  for (int r = 0; r < nregs; r++) {
    const int i = gp__amd_d_row(m, (int)l, r);
    float acc = c[r];
    for (int kk = 0; kk < k; kk++) {
      const float prod = gp__amd_operand(av, m, i, kk, kind) * bcol[kk];
      acc += prod;
    }
    d[r] = acc;
  }
}

/* The 16-bit forms: A and B in two exchange rounds. Not inlined: kernels unroll many
 * MFMA calls, and one out-of-line copy keeps their CPU builds small and quick to compile
 * (a call is nothing beside the rendezvous). */
static inline __attribute__((noinline)) void gp__amd_mfma_b16(int m, int k, int kind, gp_amd_b16x4_t a, gp_amd_b16x4_t b,
                                    const float *c, float *d, int nregs, const char *file, int line) {
  uint64_t av[64];
  gp__amd_gather(gp__amd_pack(a), av, file, line);
  uint64_t bv[64];
  gp__amd_gather(gp__amd_pack(b), bv, file, line);
  gp__amd_mma(m, k, kind, av, bv, gp_lane_id(), c, d, nregs);
}

/* The f32 forms: A in the low and B in the high 32 bits of one exchange round. */
static inline __attribute__((noinline)) void gp__amd_mfma_f32(int m, int k, float a, float b, const float *c, float *d,
                                    int nregs, const char *file, int line) {
  uint32_t ua, ub;
  memcpy(&ua, &a, sizeof ua);
  memcpy(&ub, &b, sizeof ub);
  uint64_t ab[64], av[64], bv[64];
  gp__amd_gather((uint64_t)ua | ((uint64_t)ub << 32), ab, file, line);
  for (int l = 0; l < 64; l++) {
    av[l] = ab[l] & 0xffffffffu;
    bv[l] = ab[l] >> 32;
  }
  gp__amd_mma(m, k, GP__AMD_F32, av, bv, gp_lane_id(), c, d, nregs);
}
/** @endcond */

GP__AMD_FN gp_amd_f32x16_t gp_amd_mfma_f32_32x32x8bf16_1k(gp_amd_b16x4_t a, gp_amd_b16x4_t b,
                                                         gp_amd_f32x16_t c GP__AMD_SITE_DECL) {
  gp_amd_f32x16_t d;
  gp__amd_mfma_b16(32, 8, GP__AMD_BF16, a, b, c.v, d.v, 16, file, line);
  return d;
}
GP__AMD_FN gp_amd_f32x4_t gp_amd_mfma_f32_16x16x16bf16_1k(gp_amd_b16x4_t a, gp_amd_b16x4_t b,
                                                         gp_amd_f32x4_t c GP__AMD_SITE_DECL) {
  gp_amd_f32x4_t d;
  gp__amd_mfma_b16(16, 16, GP__AMD_BF16, a, b, c.v, d.v, 4, file, line);
  return d;
}
GP__AMD_FN gp_amd_f32x16_t gp_amd_mfma_f32_32x32x8f16(gp_amd_b16x4_t a, gp_amd_b16x4_t b,
                                                     gp_amd_f32x16_t c GP__AMD_SITE_DECL) {
  gp_amd_f32x16_t d;
  gp__amd_mfma_b16(32, 8, GP__AMD_F16, a, b, c.v, d.v, 16, file, line);
  return d;
}
GP__AMD_FN gp_amd_f32x4_t gp_amd_mfma_f32_16x16x16f16(gp_amd_b16x4_t a, gp_amd_b16x4_t b,
                                                     gp_amd_f32x4_t c GP__AMD_SITE_DECL) {
  gp_amd_f32x4_t d;
  gp__amd_mfma_b16(16, 16, GP__AMD_F16, a, b, c.v, d.v, 4, file, line);
  return d;
}
GP__AMD_FN gp_amd_f32x16_t gp_amd_mfma_f32_32x32x2f32(float a, float b,
                                                     gp_amd_f32x16_t c GP__AMD_SITE_DECL) {
  gp_amd_f32x16_t d;
  gp__amd_mfma_f32(32, 2, a, b, c.v, d.v, 16, file, line);
  return d;
}
GP__AMD_FN gp_amd_f32x4_t gp_amd_mfma_f32_16x16x4f32(float a, float b,
                                                    gp_amd_f32x4_t c GP__AMD_SITE_DECL) {
  gp_amd_f32x4_t d;
  gp__amd_mfma_f32(16, 4, a, b, c.v, d.v, 4, file, line);
  return d;
}
#endif /* targets */

/* ---- the gfx940+ (CDNA3) spellings of the same opcodes ------------------------------ */
/** @brief gfx940+ name of v_mfma_f32_32x32x8bf16_1k (same opcode). */
GP__AMD_FN gp_amd_f32x16_t gp_amd_mfma_f32_32x32x8_bf16(gp_amd_b16x4_t a, gp_amd_b16x4_t b,
                                                       gp_amd_f32x16_t c GP__AMD_SITE_DECL) {
  return gp_amd_mfma_f32_32x32x8bf16_1k(a, b, c GP__AMD_SITE_PASS);
}
/** @brief gfx940+ name of v_mfma_f32_16x16x16bf16_1k (same opcode). */
GP__AMD_FN gp_amd_f32x4_t gp_amd_mfma_f32_16x16x16_bf16(gp_amd_b16x4_t a, gp_amd_b16x4_t b,
                                                       gp_amd_f32x4_t c GP__AMD_SITE_DECL) {
  return gp_amd_mfma_f32_16x16x16bf16_1k(a, b, c GP__AMD_SITE_PASS);
}
/** @brief gfx940+ name of v_mfma_f32_32x32x8f16 (same opcode). */
GP__AMD_FN gp_amd_f32x16_t gp_amd_mfma_f32_32x32x8_f16(gp_amd_b16x4_t a, gp_amd_b16x4_t b,
                                                      gp_amd_f32x16_t c GP__AMD_SITE_DECL) {
  return gp_amd_mfma_f32_32x32x8f16(a, b, c GP__AMD_SITE_PASS);
}
/** @brief gfx940+ name of v_mfma_f32_16x16x16f16 (same opcode). */
GP__AMD_FN gp_amd_f32x4_t gp_amd_mfma_f32_16x16x16_f16(gp_amd_b16x4_t a, gp_amd_b16x4_t b,
                                                      gp_amd_f32x4_t c GP__AMD_SITE_DECL) {
  return gp_amd_mfma_f32_16x16x16f16(a, b, c GP__AMD_SITE_PASS);
}
/** @brief gfx940+ name of v_mfma_f32_32x32x2f32 (same opcode). */
GP__AMD_FN gp_amd_f32x16_t gp_amd_mfma_f32_32x32x2_f32(float a, float b,
                                                      gp_amd_f32x16_t c GP__AMD_SITE_DECL) {
  return gp_amd_mfma_f32_32x32x2f32(a, b, c GP__AMD_SITE_PASS);
}
/** @brief gfx940+ name of v_mfma_f32_16x16x4f32 (same opcode). */
GP__AMD_FN gp_amd_f32x4_t gp_amd_mfma_f32_16x16x4_f32(float a, float b,
                                                     gp_amd_f32x4_t c GP__AMD_SITE_DECL) {
  return gp_amd_mfma_f32_16x16x4f32(a, b, c GP__AMD_SITE_PASS);
}

#undef GP__AMD_FN
#undef GP__AMD_SITE_DECL
#undef GP__AMD_SITE_PASS

#endif /* C++ on HIP or the CPU */
#endif /* GP_AMD_MFMA_H */
