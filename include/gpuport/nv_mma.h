/**
 * @file gpuport/nv_mma.h
 * @brief NVIDIA sm_80 matrix instructions in the kernel dialect: `mma.sync` m16n8k16
 *        (f16 or bf16 inputs, f32 accumulators) and m16n8k8 (tf32 inputs, f32
 *        accumulators), `cvt.rna.tf32.f32`, `ldmatrix` (x1, x2, x4, `.trans`) and
 *        `cp.async` (4, 8 and 16 bytes, zero-filling) with commit and wait groups.
 *        Inline PTX under nvcc; on the CPU target an emulation that follows the PTX
 *        ISA's fragment layouts, so kernels written with these wrappers run (slowly) on
 *        the CPU executor and are tested without a GPU.
 * @ingroup kernel
 *
 * Include it after gpuport/kernel.h in a dialect source (C++). Not for HIP (AMD kernels
 * use MFMA) and only at 32 lanes per warp. Every matrix wrapper is a warp-collective
 * operation: all 32 lanes of the warp must call it together, as `.sync.aligned` demands.
 *
 * Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point
 * type"; the same as CuTe's SM80_16x8x16 traits). Lane l, g = l >> 2, t = l & 3; a 32-bit
 * register holds two 16-bit elements, the lower-numbered one in its low half:
 * - A, 16 x 16 (row-major M x K), a[0..3] hold elements e0..e7 (register e >> 1):
 *   row = g + 8 * ((e >> 1) & 1), col = 2t + (e & 1) + 8 * (e >> 2).
 * - B, 16 x 8 (K x N, "col"), b[0..1] hold e0..e3: k = 2t + (e & 1) + 8 * (e >> 1), n = g.
 * - C and D, 16 x 8 f32, d[0..3]: row = g + 8 * (i >> 1), col = 2t + (i & 1).
 * - m16n8k8 with tf32 inputs ("Matrix Fragments for mma.m16n8k8", .tf32: one element per
 *   32-bit register): A, 16 x 8, a[i]: row = g + 8 * (i & 1), col = t + 4 * (i >> 1);
 *   B, 8 x 8, b[i]: k = t + 4 * i, n = g; C and D as above. The hardware reads only the
 *   sign, exponent and top 10 mantissa bits of a tf32 operand; the emulation drops the
 *   low 13 bits the same way, so a kernel that forgets gp_nv_cvt_tf32() loses the
 *   same precision on both.
 * - ldmatrix.m8n8.b16: lanes 8j .. 8j+7 give the addresses of rows 0..7 of matrix j (16
 *   bytes each, 16-byte aligned; .x1 reads lanes 0-7, .x2 lanes 0-15); register j of lane
 *   l holds row l / 4, columns 2(l % 4) and 2(l % 4) + 1 of matrix j; with `.trans` it
 *   holds (row 2(l % 4), column l / 4) low and (row 2(l % 4) + 1, column l / 4) high.
 *
 * The CPU emulation. Each wrapper deposits a pointer to the calling lane's operands at a
 * warp rendezvous (gp__cpu_warp_sync); the first lane to run after the rendezvous, while
 * every other lane still waits inside it with its operands alive on its own stack,
 * computes the instruction for the whole warp from those operands and writes every
 * lane's results, so each instruction sees one snapshot of registers and shared memory,
 * as on the GPU. This relies on the executor running the threads of a block one at a
 * time on one OS thread (docs/LAUNCH_ABI.md, section 5), so no lane returns from the
 * rendezvous before the first one to run has finished the instruction. `mma` forms each product exactly in f32 (f16 x f16 and bf16 x bf16 fit)
 * and sums in f32 in k order onto C: tensor cores round differently, so results agree
 * with a GPU within rounding, not bit for bit. A lane that has exited or does not exist
 * makes the instruction read NaN for its operands and is reported like a shuffle of an
 * inactive lane. A misaligned `ldmatrix` row or `cp.async` address fails the launch, as
 * the GPU faults on it.
 *
 * `cp.async` keeps its state in a gp_nv_async_t the kernel declares per thread (empty
 * on the GPU). The emulation reads the source when the copy is issued, fills the
 * destination with 0xff bytes (NaN in f16, bf16 and f32) at once, and writes the data
 * only when a gp_nv_cp_async_wait() covers the copy's group: a kernel that reads a
 * stage before waiting for it, or overwrites a stage other warps still read, sees NaN
 * in the tests instead of passing by luck. A thread must wait for its copies before it
 * returns (copies still pending then never land).
 */
#ifndef GP_NV_MMA_H
#define GP_NV_MMA_H

#include <gpuport/kernel.h>

#ifdef __cplusplus

#if defined(GP_TARGET_HIP)
#error "gpuport/nv_mma.h holds NVIDIA instructions; AMD kernels use MFMA"
#endif
#if GP_WARP_SIZE != 32
#error "gpuport/nv_mma.h: mma.sync and ldmatrix need 32-lane warps (GP_WARP_SIZE 32)"
#endif

/** @brief Copies one thread may have in flight under the CPU emulation of cp.async. */
#define GP_NV_ASYNC_MAX 64

#if defined(GP_TARGET_CPU) /* ================= the CPU emulation ================== */

/** @brief Per-thread state of outstanding cp.async copies (see the file comment). */
typedef struct gp_nv_async {
  unsigned n;         /**< copies issued and not yet landed */
  unsigned committed; /**< groups committed so far */
  struct {
    unsigned char *dst;
    unsigned group; /**< the group the copy belongs to (== committed: not yet committed) */
    unsigned bytes;
    unsigned char data[16];
  } q[GP_NV_ASYNC_MAX]; /**< in issue order */
} gp_nv_async_t;

/** @cond GP_INTERNAL */
#define GP__NV_SITE const char *file = __builtin_FILE(), int line = __builtin_LINE()

/* Fails the launch with a message naming the call site. */
static inline void gp__nv_fail(const char *what, const void *addr, const char *file, int line) {
  flockfile(stderr);
  fprintf(stderr, "%s:%d: %s (address %p)\n", file, line, what, addr);
  funlockfile(stderr);
  gp__cpu_trap(file, line);
}

/* The operands one lane brings to an emulated warp instruction. */
typedef struct gp__nv_lane {
  const uint32_t *a, *b; /* mma: A and B registers */
  float *d;              /* mma: C in, D out */
  const unsigned char *row; /* ldmatrix: this lane's row address */
  uint32_t *r;           /* ldmatrix: destination registers */
  int done;              /* set by the lane that ran the instruction for the warp */
} gp__nv_lane_t;

/* Rendezvous of the warp: returns NULL when another lane already ran the instruction for
 * this one, else fills lanes[] (NULL for lanes that did not take part, reported). */
static inline bool gp__nv_gather(gp__nv_lane_t *me, gp__nv_lane_t *lanes[32], const char *file,
                                 int line) {
  me->done = 0;
  const gp__cpu_warp_xchg_t *x = gp__cpu_warp_sync((uint64_t)(uintptr_t)me, file, line);
  if (me->done) return false;
  for (unsigned l = 0; l < 32; l++) {
    if ((x->active >> l) & 1u) {
      lanes[l] = (gp__nv_lane_t *)(uintptr_t)x->val[l];
    } else {
      lanes[l] = NULL;
      gp__cpu_warp_bad_lane(l, file, line);
    }
  }
  return true;
}

static inline float gp__nv_b16_to_f32(uint32_t bits, int bf16) {
  if (bf16) {
    gp_bf16_t v;
    v.bits = (uint16_t)bits;
    return gp_f32_from_bf16(v);
  }
  gp_f16_t v;
  v.bits = (uint16_t)bits;
  return gp_f32_from_f16(v);
}

/* A tf32 operand as the tensor core reads it: the low 13 mantissa bits ignored. */
static inline float gp__nv_tf32_to_f32(uint32_t bits) {
  bits &= 0xffffe000u;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* Input types of the emulated mma (the `kind` argument below). */
#define GP__NV_F16 0
#define GP__NV_BF16 1
#define GP__NV_TF32 2

/* D = A B + C for the whole warp (fragment layouts in the file comment; m16n8k16 for
 * f16 and bf16, m16n8k8 for tf32). This and the per-lane entries below are not
 * inlined: one copy per translation unit keeps kernels with many matrix-instruction
 * call sites quick to build. */
__attribute__((noinline, unused)) static void gp__nv_mma_warp(gp__nv_lane_t *const lanes[32], int kind) {
  float A[16][16], B[16][8], C[16][8];
  const unsigned K = kind == GP__NV_TF32 ? 8 : 16;
  for (unsigned l = 0; l < 32; l++) {
    const unsigned g = l >> 2, t = l & 3;
    const gp__nv_lane_t *L = lanes[l];
    if (kind == GP__NV_TF32) {
      for (unsigned i = 0; i < 4; i++)
        A[g + 8 * (i & 1)][t + 4 * (i >> 1)] = L ? gp__nv_tf32_to_f32(L->a[i]) : NAN;
      for (unsigned i = 0; i < 2; i++) B[t + 4 * i][g] = L ? gp__nv_tf32_to_f32(L->b[i]) : NAN;
    } else {
      for (unsigned e = 0; e < 8; e++) {
        const unsigned row = g + 8 * ((e >> 1) & 1), col = 2 * t + (e & 1) + 8 * (e >> 2);
        A[row][col] = L ? gp__nv_b16_to_f32(L->a[e >> 1] >> (16 * (e & 1)), kind) : NAN;
      }
      for (unsigned e = 0; e < 4; e++) {
        const unsigned k = 2 * t + (e & 1) + 8 * (e >> 1);
        B[k][g] = L ? gp__nv_b16_to_f32(L->b[e >> 1] >> (16 * (e & 1)), kind) : NAN;
      }
    }
    for (unsigned i = 0; i < 4; i++) C[g + 8 * (i >> 1)][2 * t + (i & 1)] = L ? L->d[i] : NAN;
  }
  for (unsigned i = 0; i < 16; i++)
    for (unsigned j = 0; j < 8; j++) {
      float acc = C[i][j];
      for (unsigned k = 0; k < K; k++) acc = fmaf(A[i][k], B[k][j], acc);
      C[i][j] = acc;
    }
  for (unsigned l = 0; l < 32; l++) {
    gp__nv_lane_t *L = lanes[l];
    if (!L) continue;
    const unsigned g = l >> 2, t = l & 3;
    for (unsigned i = 0; i < 4; i++) L->d[i] = C[g + 8 * (i >> 1)][2 * t + (i & 1)];
    L->done = 1;
  }
}

__attribute__((noinline, unused)) static void gp__nv_mma(float d[4], const uint32_t a[4],
                                                  const uint32_t b[2], int kind, const char *file,
                                                  int line) {
  gp__nv_lane_t me, *lanes[32];
  me.a = a;
  me.b = b;
  me.d = d;
  me.row = NULL;
  me.r = NULL;
  if (gp__nv_gather(&me, lanes, file, line)) gp__nv_mma_warp(lanes, kind);
}

/* ldmatrix of nmat 8x8 b16 matrices for the whole warp (not inlined, as above). */
__attribute__((noinline, unused)) static void gp__nv_ldmatrix_warp(gp__nv_lane_t *const lanes[32], unsigned nmat, int trans,
                                        const char *file, int line) {
  for (unsigned l = 0; l < 8 * nmat; l++) {
    if (!lanes[l]) continue;
    const unsigned char *row = lanes[l]->row;
    if (((uintptr_t)row & 15u) != 0)
      gp__nv_fail("ldmatrix: a row address is not 16-byte aligned", row, file, line);
  }
  uint32_t out[32][4];
  for (unsigned l = 0; l < 32; l++) {
    const unsigned g = l >> 2, t = l & 3;
    for (unsigned j = 0; j < nmat; j++) {
      if (!trans) {
        const gp__nv_lane_t *src = lanes[8 * j + g];
        uint32_t v = 0xffffffffu;
        if (src) memcpy(&v, src->row + 4 * t, 4);
        out[l][j] = v;
      } else {
        const gp__nv_lane_t *r0 = lanes[8 * j + 2 * t], *r1 = lanes[8 * j + 2 * t + 1];
        uint16_t lo = 0xffffu, hi = 0xffffu;
        if (r0) memcpy(&lo, r0->row + 2 * g, 2);
        if (r1) memcpy(&hi, r1->row + 2 * g, 2);
        out[l][j] = (uint32_t)lo | ((uint32_t)hi << 16);
      }
    }
  }
  for (unsigned l = 0; l < 32; l++) {
    gp__nv_lane_t *L = lanes[l];
    if (!L) continue;
    for (unsigned j = 0; j < nmat; j++) L->r[j] = out[l][j];
    L->done = 1;
  }
}

__attribute__((noinline, unused)) static void gp__nv_ldmatrix(uint32_t *r, const void *row, unsigned nmat,
                                                       int trans, const char *file, int line) {
  gp__nv_lane_t me, *lanes[32];
  me.a = me.b = NULL;
  me.d = NULL;
  me.row = (const unsigned char *)row;
  me.r = r;
  if (gp__nv_gather(&me, lanes, file, line)) gp__nv_ldmatrix_warp(lanes, nmat, trans, file, line);
}

static inline void gp__nv_cp_async(gp_nv_async_t *as, void *smem, const void *gmem, int src_bytes,
                                   unsigned size, const char *file, int line) {
  if (src_bytes < 0 || (unsigned)src_bytes > size)
    gp__nv_fail("cp.async: src-size outside 0..cp-size", gmem, file, line);
  if (((uintptr_t)smem & (size - 1)) != 0)
    gp__nv_fail("cp.async: shared-memory address not aligned to the copy size", smem, file, line);
  if (src_bytes > 0 && ((uintptr_t)gmem & (size - 1)) != 0)
    gp__nv_fail("cp.async: global address not aligned to the copy size", gmem, file, line);
  if (as->n == GP_NV_ASYNC_MAX)
    gp__nv_fail("cp.async: more copies in flight than the emulation holds (GP_NV_ASYNC_MAX)",
                smem, file, line);
  unsigned idx = as->n++;
  as->q[idx].dst = (unsigned char *)smem;
  as->q[idx].group = as->committed;
  as->q[idx].bytes = size;
  memset(as->q[idx].data, 0, sizeof as->q[idx].data);
  if (src_bytes > 0) memcpy(as->q[idx].data, gmem, (size_t)src_bytes);
  memset(smem, 0xff, size); /* undefined until the wait: make reads before it visible */
}
/** @endcond */

/** @brief Initialises a thread's cp.async state (before its first copy). */
static inline void gp_nv_async_init(gp_nv_async_t *as) {
  as->n = 0;
  as->committed = 0;
}

/** @brief `cp.async.cg.shared.global` of 16 bytes: @p src_bytes (0..16) bytes from @p gmem,
 *         the rest of the 16 zero-filled (@p gmem is not read when @p src_bytes is 0).
 *         Both addresses 16-byte aligned. */
static inline void gp_nv_cp_async_16(gp_nv_async_t *as, void *smem, const void *gmem, int src_bytes,
                                     GP__NV_SITE) {
  gp__nv_cp_async(as, smem, gmem, src_bytes, 16, file, line);
}

/** @brief `cp.async.ca.shared.global` of 8 bytes: @p src_bytes (0..8) bytes from @p gmem,
 *         the rest of the 8 zero-filled. Both addresses 8-byte aligned. */
static inline void gp_nv_cp_async_8(gp_nv_async_t *as, void *smem, const void *gmem, int src_bytes,
                                    GP__NV_SITE) {
  gp__nv_cp_async(as, smem, gmem, src_bytes, 8, file, line);
}

/** @brief `cp.async.ca.shared.global` of 4 bytes (@p src_bytes 0 or 4; 0 writes zeros). */
static inline void gp_nv_cp_async_4(gp_nv_async_t *as, void *smem, const void *gmem, int src_bytes,
                                    GP__NV_SITE) {
  gp__nv_cp_async(as, smem, gmem, src_bytes, 4, file, line);
}

/** @brief `cp.async.commit_group`: the copies issued since the last commit form a group. */
static inline void gp_nv_cp_async_commit(gp_nv_async_t *as) { as->committed++; }

/** @brief `cp.async.wait_group n`: every committed group but the @p n most recent has
 *         landed (n a constant 0..7). Other threads see the data after a barrier. */
static inline void gp_nv_cp_async_wait(gp_nv_async_t *as, int n) {
  const unsigned limit = (unsigned)n >= as->committed ? 0u : as->committed - (unsigned)n;
  unsigned keep = 0;
  for (unsigned i = 0; i < as->n; i++) {
    if (as->q[i].group < limit)
      memcpy(as->q[i].dst, as->q[i].data, as->q[i].bytes);
    else
      as->q[keep++] = as->q[i];
  }
  as->n = keep;
}

/** @brief `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`: d = A B + d (warp-wide). */
static inline void gp_nv_mma_m16n8k16_f16(float d[4], const uint32_t a[4], const uint32_t b[2],
                                          GP__NV_SITE) {
  gp__nv_mma(d, a, b, GP__NV_F16, file, line);
}
/** @brief `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`: d = A B + d (warp-wide). */
static inline void gp_nv_mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2],
                                           GP__NV_SITE) {
  gp__nv_mma(d, a, b, GP__NV_BF16, file, line);
}
/** @brief `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`: d = A B + d (warp-wide);
 *         A and B registers hold tf32 values (gp_nv_cvt_tf32()). */
static inline void gp_nv_mma_m16n8k8_tf32(float d[4], const uint32_t a[4], const uint32_t b[2],
                                          GP__NV_SITE) {
  gp__nv_mma(d, a, b, GP__NV_TF32, file, line);
}

/** @brief `ldmatrix.sync.aligned.m8n8.x1.shared.b16` (lanes 0-7 give the row addresses). */
static inline void gp_nv_ldmatrix_x1(uint32_t r[1], const void *row, GP__NV_SITE) {
  gp__nv_ldmatrix(r, row, 1, 0, file, line);
}
/** @brief `ldmatrix.sync.aligned.m8n8.x2.shared.b16` (lanes 0-15). */
static inline void gp_nv_ldmatrix_x2(uint32_t r[2], const void *row, GP__NV_SITE) {
  gp__nv_ldmatrix(r, row, 2, 0, file, line);
}
/** @brief `ldmatrix.sync.aligned.m8n8.x4.shared.b16` (lanes 0-31). */
static inline void gp_nv_ldmatrix_x4(uint32_t r[4], const void *row, GP__NV_SITE) {
  gp__nv_ldmatrix(r, row, 4, 0, file, line);
}
/** @brief `ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16`. */
static inline void gp_nv_ldmatrix_x1_trans(uint32_t r[1], const void *row, GP__NV_SITE) {
  gp__nv_ldmatrix(r, row, 1, 1, file, line);
}
/** @brief `ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16`. */
static inline void gp_nv_ldmatrix_x2_trans(uint32_t r[2], const void *row, GP__NV_SITE) {
  gp__nv_ldmatrix(r, row, 2, 1, file, line);
}
/** @brief `ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16`. */
static inline void gp_nv_ldmatrix_x4_trans(uint32_t r[4], const void *row, GP__NV_SITE) {
  gp__nv_ldmatrix(r, row, 4, 1, file, line);
}

/** @brief `cvt.rna.tf32.f32`: @p x rounded to tf32 (10 mantissa bits, to nearest, ties
 *         away from zero), as the bits of an f32 with the low 13 bits zero. */
static inline uint32_t gp_nv_cvt_tf32(float x) {
  uint32_t bits;
  memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) != 0x7f800000u) return (bits + 0x1000u) & 0xffffe000u; /* + half an ulp */
  if (bits & 0x007fffffu) return 0x7fffffffu; /* NaN stays NaN (canonical) */
  return bits;                                /* infinity */
}

/** @brief Two f32 rounded to f16 (nearest even) in one register, @p lo in the low half. */
static inline uint32_t gp_nv_pack_f16x2(float lo, float hi) {
  return (uint32_t)gp_f16_from_f32(lo).bits | ((uint32_t)gp_f16_from_f32(hi).bits << 16);
}
/** @brief Two f32 rounded to bf16 (nearest even) in one register, @p lo in the low half. */
static inline uint32_t gp_nv_pack_bf16x2(float lo, float hi) {
  return (uint32_t)gp_bf16_from_f32(lo).bits | ((uint32_t)gp_bf16_from_f32(hi).bits << 16);
}
#undef GP__NV_SITE

#else /* ================================ CUDA: inline PTX ============================ */

typedef struct gp_nv_async {
  int unused; /**< the hardware tracks the groups */
} gp_nv_async_t;

static __device__ __forceinline__ void gp_nv_async_init(gp_nv_async_t *as) { (void)as; }

static __device__ __forceinline__ unsigned gp__nv_smem(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

static __device__ __forceinline__ void gp_nv_cp_async_16(gp_nv_async_t *as, void *smem, const void *gmem,
                                                         int src_bytes) {
  (void)as;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(gp__nv_smem(smem)), "l"(gmem),
               "r"(src_bytes));
}

static __device__ __forceinline__ void gp_nv_cp_async_8(gp_nv_async_t *as, void *smem, const void *gmem,
                                                        int src_bytes) {
  (void)as;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(gp__nv_smem(smem)), "l"(gmem),
               "r"(src_bytes));
}

static __device__ __forceinline__ void gp_nv_cp_async_4(gp_nv_async_t *as, void *smem, const void *gmem,
                                                        int src_bytes) {
  (void)as;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(gp__nv_smem(smem)), "l"(gmem),
               "r"(src_bytes));
}

static __device__ __forceinline__ void gp_nv_cp_async_commit(gp_nv_async_t *as) {
  (void)as;
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* The count is an immediate in PTX: with n a constant, the switch folds away. */
static __device__ __forceinline__ void gp_nv_cp_async_wait(gp_nv_async_t *as, int n) {
  (void)as;
  switch (n) {
    case 0: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;\n" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;\n" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;\n" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 7;\n" ::: "memory"); break;
  }
}

static __device__ __forceinline__ void gp_nv_mma_m16n8k16_f16(float d[4], const uint32_t a[4],
                                                              const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

static __device__ __forceinline__ void gp_nv_mma_m16n8k16_bf16(float d[4], const uint32_t a[4],
                                                               const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

static __device__ __forceinline__ void gp_nv_mma_m16n8k8_tf32(float d[4], const uint32_t a[4],
                                                              const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

static __device__ __forceinline__ uint32_t gp_nv_cvt_tf32(float x) {
  uint32_t d;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(d) : "f"(x));
  return d;
}

static __device__ __forceinline__ void gp_nv_ldmatrix_x1(uint32_t r[1], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(gp__nv_smem(row)));
}
static __device__ __forceinline__ void gp_nv_ldmatrix_x2(uint32_t r[2], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(gp__nv_smem(row)));
}
static __device__ __forceinline__ void gp_nv_ldmatrix_x4(uint32_t r[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(gp__nv_smem(row)));
}
static __device__ __forceinline__ void gp_nv_ldmatrix_x1_trans(uint32_t r[1], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0])
               : "r"(gp__nv_smem(row)));
}
static __device__ __forceinline__ void gp_nv_ldmatrix_x2_trans(uint32_t r[2], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(gp__nv_smem(row)));
}
static __device__ __forceinline__ void gp_nv_ldmatrix_x4_trans(uint32_t r[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(gp__nv_smem(row)));
}

/* cvt.rn.{f16,bf16}x2.f32 d, a, b puts a in the high half and b in the low half. */
static __device__ __forceinline__ uint32_t gp_nv_pack_f16x2(float lo, float hi) {
  uint32_t d;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}
static __device__ __forceinline__ uint32_t gp_nv_pack_bf16x2(float lo, float hi) {
  uint32_t d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}

#endif /* targets */

#endif /* __cplusplus */
#endif /* GP_NV_MMA_H */
