/**
 * @file gpuport/nv_wgmma.h
 * @brief NVIDIA sm_90a (Hopper) asynchronous instructions in the kernel dialect:
 *        `wgmma.mma_async` m64nNk16 (f16 or bf16 inputs from shared-memory matrix
 *        descriptors, f32 accumulators) with `wgmma.fence`, `commit_group` and `wait_group`;
 *        TMA `cp.async.bulk.tensor` 2D and 3D loads and stores through a tensor map;
 *        `mbarrier` init, arrive, expect_tx and try_wait with phase parity; `setmaxnreg`.
 *        Inline PTX under nvcc (sm_90a only); on the CPU target an emulation that follows
 *        the PTX ISA, so the Hopper kernels run (slowly) on the CPU executor and are tested
 *        without a GPU.
 * @ingroup kernel
 *
 * Include it after gpuport/kernel.h in a dialect source (C++), built by nvcc with
 * `-gencode=arch=compute_90a,code=sm_90a`; for other NVIDIA targets the wrappers trap.
 * Not for HIP, and only at 32 lanes per warp. The tensor-map type, the swizzle modes and
 * gp_nv_tensor_map_encode() are also visible from C, for the host code that encodes
 * tensor maps.
 *
 * Sources: PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
 * Instructions" (register fragments of wgmma .m64nNk16, "Matrix Descriptor Format",
 * "Shared Memory Matrix Layout" and its swizzle atoms), "Tensor Copy Instructions"
 * (cp.async.bulk.tensor), "Parallel Synchronization and Communication Instructions:
 * mbarrier"; the CUDA programming guide's "Tensor Memory Access" section and the driver
 * API's cuTensorMapEncodeTiled.
 *
 * **Shared-memory addresses.** A descriptor or a TMA instruction names shared memory by
 * its address in the shared window (`gp_nv_smem_addr`). On the CPU that is the offset
 * from the block's dynamic shared memory, so the operands of wgmma and TMA must lie in
 * dynamic shared memory there. Swizzling acts on address bits: a kernel places each
 * swizzled tile at a multiple of its swizzle atom (256, 512 or 1024 bytes for 32, 64 and
 * 128-byte swizzle) in the shared window, and the emulation checks that.
 *
 * **Swizzle** (16-byte chunks within each W-byte row of 8 rows, W = 32, 64 or 128):
 * the byte at address a is stored at a ^ (((a >> 7) & (W / 16 - 1)) << 4), i.e. chunk
 * c of row r (r = (a >> 7) & 7 for W = 128) moves to chunk c ^ (r mod W / 16).
 *
 * **Descriptor layouts** for 16-bit elements (T = 8 elements per 16 bytes); element (x, k)
 * of the operand, x along M (for A) or N (for B), sits at the start address plus:
 * - K-major, no swizzle: (x % 8) 16 + (x / 8) SBO + (k % 8) 2 + (k / 8) LBO;
 * - K-major, W-byte swizzle: (x % 8) W + (x / 8) SBO + 2 k (LBO unused);
 * - MN-major, no swizzle: (x % 8) 2 + (x / 8) SBO + (k % 8) 16 + (k / 8) LBO;
 * - MN-major, W-byte swizzle: (x % (W/2)) 2 + (x / (W/2)) LBO + (k % 8) W + (k / 8) SBO;
 * then swizzled. K-major is `trans` 0 (A row-major M x K, B stored N x K), MN-major is
 * `trans` 1. The matrix base offset must be 0.
 *
 * **Accumulator fragment** of m64nNk16 (f32, N / 2 registers per thread): thread t of the
 * warpgroup, warp w = t / 32, lane l, g = l / 4, q = l % 4; register i holds
 * D[16 w + g + 8 ((i / 2) % 2)][8 (i / 4) + 2 q + i % 2].
 *
 * **The CPU emulation.** wgmma: every warp of the warpgroup computes its 16 rows of D at
 * a warp rendezvous (its rows depend on its own rows of A and all of B), when the
 * instruction is issued, reading shared memory then, products exact in f32, summed in
 * f32 in k order. The descriptors must be the same in every lane (checked). wait_group
 * checks that the shared memory read by each completed wgmma still holds what it read:
 * a kernel that overwrites a stage while a wgmma may still read it fails the launch.
 * TMA: the copy happens when issued and then completes its bytes on the mbarrier.
 * Out-of-bounds elements of a load read as zero; a store writes in-bounds elements only.
 * mbarrier: a 64-bit object in shared memory; `gp_nv_mbarrier_wait` is warp-collective
 * under the emulation (every live lane of the warp waits together), so a waiting warp
 * lets the block's other warps run, and a wait that cannot complete fails the launch
 * after a bounded number of tries instead of hanging. setmaxnreg does nothing there.
 */
#ifndef GP_NV_WGMMA_H
#define GP_NV_WGMMA_H

#include <gpuport/kernel.h>
#include <gpuport/status.h>

/** @brief Shared-memory swizzle of TMA boxes and wgmma descriptors, in bytes per row. */
enum {
  GP_NV_SWIZZLE_NONE = 0,  /**< no swizzle */
  GP_NV_SWIZZLE_32B = 32,  /**< 32-byte swizzle (atom: 8 rows of 32 bytes) */
  GP_NV_SWIZZLE_64B = 64,  /**< 64-byte swizzle (atom: 8 rows of 64 bytes) */
  GP_NV_SWIZZLE_128B = 128 /**< 128-byte swizzle (atom: 8 rows of 128 bytes) */
};

/** @cond GP_INTERNAL */
/* CUDA wants a tensor map 64-byte aligned (the driver writes it, TMA reads it); the CPU
 * executor keeps kernel arguments 16-byte aligned, which is all the emulation needs. */
#if defined(GP_BUILD_CPU)
#define GP__NV_TMAP_ALIGN 16
#else
#define GP__NV_TMAP_ALIGN 64
#endif
/** @endcond */

/** @brief A TMA tensor map: the driver's opaque 128-byte CUtensorMap on CUDA, the
 *         emulation's description on the CPU. Encoded on the host, passed to a kernel
 *         by value as a `const __grid_constant__` parameter. */
typedef struct __attribute__((aligned(GP__NV_TMAP_ALIGN))) gp_nv_tensor_map {
  uint64_t opaque[16]; /**< not to be read or written by users */
} gp_nv_tensor_map_t;

#ifdef __cplusplus
extern "C" {
#endif
/**
 * @brief Encodes a 2D or 3D tiled TMA tensor map on the host, for gp_nv_tma_load_2d(),
 *        gp_nv_tma_load_3d(), gp_nv_tma_store_2d() and gp_nv_tma_store_3d() in a kernel
 *        that receives @p tm by value (a `const __grid_constant__` parameter).
 *
 * The map has no interleave and fills out-of-bounds elements of a load with zeros; a
 * store writes the in-bounds elements only. On the cuda backend it is the driver's
 * CUtensorMap (cuTensorMapEncodeTiled, reached through cudaGetDriverEntryPointByVersion,
 * so nothing links -lcuda); on the cpu backend the description the emulation reads.
 * Both check the same rules first, so a map the emulation accepts is one the driver
 * accepts. Source: CUDA Driver API, cuTensorMapEncodeTiled; PTX ISA, "Tensor Copy
 * Instructions" (cp.async.bulk.tensor).
 *
 * @param tm         the map to write (64-byte aligned on CUDA: gp_nv_tensor_map_t is).
 * @param elem_bytes element size, 2 or 4 bytes.
 * @param rank       2 or 3 dimensions.
 * @param base       global address of element (0, 0, 0): device memory, 16-byte aligned.
 * @param dims       rank extents in elements, innermost first, each 1 .. 2^32.
 * @param strides    rank - 1 byte strides of dimensions 1 .. rank - 1, multiples of 16,
 *                   below 2^40.
 * @param box        rank box extents in elements, each 1 .. 256; the innermost box is a
 *                   multiple of 16 bytes and, when swizzled, exactly @p swizzle bytes.
 * @param swizzle    GP_NV_SWIZZLE_NONE, _32B, _64B or _128B.
 * @return GP_SUCCESS when @p tm holds the map.
 * @return GP_ERROR_INVALID_VALUE when a pointer is NULL or a rule above is broken (the
 *         message names it), or the driver refuses the map.
 * @return GP_ERROR_NOT_SUPPORTED on the hip backend, or when the driver lacks
 *         cuTensorMapEncodeTiled.
 */
GP_API gp_status_t gp_nv_tensor_map_encode(gp_nv_tensor_map_t *tm, unsigned elem_bytes, unsigned rank,
                                           const void *base, const uint64_t *dims, const uint64_t *strides,
                                           const uint32_t *box, int swizzle);
#ifdef __cplusplus
}
#endif

/** @cond GP_INTERNAL */
/* The CPU emulation's view of gp_nv_tensor_map_t (host code fills it: kernels/sm90a/tma.c). */
typedef struct gp__nv_tmap_cpu {
  uint64_t magic;      /* GP__NV_TMAP_MAGIC */
  const void *base;    /* global address of element (0, 0, 0) */
  uint64_t dim[3];     /* extents, innermost first (unused ones 1) */
  uint64_t stride[3];  /* byte strides of dims 1 and 2 (stride[0] unused) */
  uint32_t box[3];     /* box extents in elements */
  uint32_t elem_bytes; /* 2 or 4 */
  uint32_t rank;       /* 2 or 3 */
  uint32_t swizzle;    /* GP_NV_SWIZZLE_* */
} gp__nv_tmap_cpu_t;
#define GP__NV_TMAP_MAGIC 0x70616d74726f7067ull
/** @endcond */

#ifdef __cplusplus

#if defined(GP_TARGET_HIP)
#error "gpuport/nv_wgmma.h holds NVIDIA instructions"
#endif
#if GP_WARP_SIZE != 32
#error "gpuport/nv_wgmma.h: wgmma needs 32-lane warps (GP_WARP_SIZE 32)"
#endif

#if defined(GP_TARGET_CPU) /* ================= the CPU emulation ================== */

#ifndef __grid_constant__
#define __grid_constant__
#endif

/** @brief wgmma groups one thread may have committed and not waited for (emulation). */
#define GP_NV_WGMMA_MAX 16

/** @brief Per-thread state of the wgmma groups in flight (CPU emulation; empty on GPUs). */
typedef struct gp_nv_wgmma_state {
  unsigned n;         /**< wgmma instructions recorded (this warp's checker lane only) */
  unsigned committed; /**< groups committed */
  struct {
    unsigned group;            /**< the group of the instruction */
    uint64_t desc_a, desc_b;   /**< its descriptors */
    unsigned n, ta, tb, w4;    /**< its width N, majorness, and warp in the warpgroup */
    uint64_t sum;              /**< checksum of the shared memory it read */
  } q[GP_NV_WGMMA_MAX];
} gp_nv_wgmma_state_t;

/** @cond GP_INTERNAL */
#define GP__NV_SITE const char *file = __builtin_FILE(), int line = __builtin_LINE()

/* Fails the launch with a message naming the call site. */
static inline void gp__nvw_fail(const char *what, uint64_t v, const char *file, int line) {
  flockfile(stderr);
  fprintf(stderr, "%s:%d: %s (0x%llx)\n", file, line, what, (unsigned long long)v);
  funlockfile(stderr);
  gp__cpu_trap(file, line);
}

static inline unsigned char *gp__nvw_smem_base(void) {
  GP_DYNAMIC_SHARED(unsigned char, base);
  return base;
}

/* The swizzled position of shared address a (W = 0, 32, 64, 128). */
static inline uint32_t gp__nvw_swz(uint32_t a, unsigned w) {
  if (!w) return a;
  const uint32_t mask = w / 16 - 1;
  return a ^ (((a >> 7) & mask) << 4);
}

/* Byte offset of element (x, k) of a descriptor operand, before swizzling. */
static inline uint32_t gp__nvw_desc_off(uint64_t desc, int mn_major, unsigned x, unsigned k) {
  const uint32_t start = (uint32_t)(desc & 0x3fff) << 4;
  const uint32_t lbo = (uint32_t)((desc >> 16) & 0x3fff) << 4;
  const uint32_t sbo = (uint32_t)((desc >> 32) & 0x3fff) << 4;
  const unsigned mode = (unsigned)(desc >> 62);
  const unsigned w = mode == 1 ? 128u : mode == 2 ? 64u : mode == 3 ? 32u : 0u;
  uint32_t off;
  if (!mn_major)
    off = w ? (x % 8) * w + (x / 8) * sbo + 2 * k : (x % 8) * 16 + (x / 8) * sbo + (k % 8) * 2 + (k / 8) * lbo;
  else
    off = w ? (x % (w / 2)) * 2 + (x / (w / 2)) * lbo + (k % 8) * w + (k / 8) * sbo
            : (x % 8) * 2 + (x / 8) * sbo + (k % 8) * 16 + (k / 8) * lbo;
  return gp__nvw_swz(start + off, w);
}

/* The operands one lane brings to an emulated wgmma. */
typedef struct gp__nvw_lane {
  float *d;
  uint64_t da, db;
  int scale_d;
  int done;
} gp__nvw_lane_t;

/* Out-of-line emulation entry points (one copy per translation unit keeps kernels with
 * many call sites quick to build). A checksum of rows x0 .. x0 + rows - 1 of an operand. */
__attribute__((noinline, unused)) static uint64_t gp__nvw_checksum(uint64_t desc, int mn_major, unsigned x0,
                                                                   unsigned rows) {
  const unsigned char *s = gp__nvw_smem_base();
  uint64_t h = 1469598103934665603ull;
  for (unsigned x = x0; x < x0 + rows; x++)
    for (unsigned k = 0; k < 16; k++) {
      uint16_t v;
      memcpy(&v, s + gp__nvw_desc_off(desc, mn_major, x, k), 2);
      h = (h ^ v) * 1099511628211ull;
    }
  return h;
}

__attribute__((noinline, unused)) static void gp__nvw_mma(gp_nv_wgmma_state_t *st, float *d, unsigned n, uint64_t da,
                                                          uint64_t db, int scale_d, int ta, int tb, int bf16,
                                                          const char *file, int line) {
  gp__nvw_lane_t me;
  me.d = d;
  me.da = da;
  me.db = db;
  me.scale_d = scale_d;
  me.done = 0;
  const gp__cpu_warp_xchg_t *x = gp__cpu_warp_sync((uint64_t)(uintptr_t)&me, file, line);
  const unsigned warp = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) / 32u;
  if (!me.done) {
    gp__nvw_lane_t *lanes[32];
    for (unsigned l = 0; l < 32; l++) {
      if ((x->active >> l) & 1u) {
        lanes[l] = (gp__nvw_lane_t *)(uintptr_t)x->val[l];
        if (lanes[l]->da != da || lanes[l]->db != db || lanes[l]->scale_d != scale_d)
          gp__nvw_fail("wgmma.mma_async: descriptors or scale-d differ between the lanes of a warp", da,
                       file, line);
      } else {
        lanes[l] = NULL;
        gp__cpu_warp_bad_lane(l, file, line);
      }
    }
    if (((da >> 49) & 7u) || ((db >> 49) & 7u))
      gp__nvw_fail("wgmma.mma_async: a descriptor has a nonzero matrix base offset", (da >> 49) & 7u,
                   file, line);
    const unsigned char *s = gp__nvw_smem_base();
    const unsigned w4 = warp % 4; /* this warp's rows of the warpgroup's 64 */
    float A[16][16], B[16][256];
    for (unsigned r = 0; r < 16; r++)
      for (unsigned k = 0; k < 16; k++) {
        uint16_t v;
        memcpy(&v, s + gp__nvw_desc_off(da, ta, 16 * w4 + r, k), 2);
        if (bf16) {
          gp_bf16_t h;
          h.bits = v;
          A[r][k] = gp_f32_from_bf16(h);
        } else {
          gp_f16_t h;
          h.bits = v;
          A[r][k] = gp_f32_from_f16(h);
        }
      }
    for (unsigned k = 0; k < 16; k++)
      for (unsigned c = 0; c < n; c++) {
        uint16_t v;
        memcpy(&v, s + gp__nvw_desc_off(db, tb, c, k), 2);
        if (bf16) {
          gp_bf16_t h;
          h.bits = v;
          B[k][c] = gp_f32_from_bf16(h);
        } else {
          gp_f16_t h;
          h.bits = v;
          B[k][c] = gp_f32_from_f16(h);
        }
      }
    for (unsigned l = 0; l < 32; l++) {
      gp__nvw_lane_t *L = lanes[l];
      if (!L) continue;
      const unsigned g = l / 4, q = l % 4;
      for (unsigned i = 0; i < n / 2; i++) {
        const unsigned r = g + 8 * ((i / 2) % 2), c = 8 * (i / 4) + 2 * q + i % 2;
        float acc = L->scale_d ? L->d[i] : 0.0f;
        for (unsigned k = 0; k < 16; k++) acc = fmaf(A[r][k], B[k][c], acc);
        L->d[i] = acc;
      }
      L->done = 1;
    }
    /* this lane keeps the record that wait_group checks */
    if (st->n == GP_NV_WGMMA_MAX)
      gp__nvw_fail("wgmma.mma_async: more instructions in flight than the emulation holds (GP_NV_WGMMA_MAX)",
                   st->n, file, line);
    const unsigned i = st->n++;
    st->q[i].group = st->committed;
    st->q[i].desc_a = da;
    st->q[i].desc_b = db;
    st->q[i].n = n;
    st->q[i].ta = (unsigned)ta;
    st->q[i].tb = (unsigned)tb;
    st->q[i].w4 = w4;
    st->q[i].sum = gp__nvw_checksum(da, ta, 16 * w4, 16) ^ (gp__nvw_checksum(db, tb, 0, n) * 3u);
  }
}

__attribute__((noinline, unused)) static void gp__nvw_wait(gp_nv_wgmma_state_t *st, int n, const char *file,
                                                           int line) {
  const unsigned limit = (unsigned)n >= st->committed ? 0u : st->committed - (unsigned)n;
  unsigned keep = 0;
  for (unsigned i = 0; i < st->n; i++) {
    if (st->q[i].group < limit) {
      const uint64_t sum = gp__nvw_checksum(st->q[i].desc_a, (int)st->q[i].ta, 16 * st->q[i].w4, 16) ^
                           (gp__nvw_checksum(st->q[i].desc_b, (int)st->q[i].tb, 0, st->q[i].n) * 3u);
      if (sum != st->q[i].sum)
        gp__nvw_fail("wgmma.wait_group: shared memory read by a wgmma in flight changed before the wait",
                     st->q[i].desc_a, file, line);
    } else {
      st->q[keep++] = st->q[i];
    }
  }
  st->n = keep;
}

/* TMA: copies the box at coordinates c[] between global memory and shared address s. */
__attribute__((noinline, unused)) static void gp__nvw_tma(const gp_nv_tensor_map_t *tm, uint32_t s, const int32_t *c,
                                                          int store, const char *file, int line) {
  gp__nv_tmap_cpu_t t;
  memcpy(&t, tm, sizeof t);
  if (t.magic != GP__NV_TMAP_MAGIC) gp__nvw_fail("cp.async.bulk.tensor: not an encoded tensor map", t.magic, file, line);
  const uint32_t atom = t.swizzle ? 8u * t.swizzle : 128u;
  if (s % atom)
    gp__nvw_fail("cp.async.bulk.tensor: shared address not aligned to 128 bytes (to the swizzle atom when swizzled)",
                 s, file, line);
  unsigned char *base = gp__nvw_smem_base();
  const uint32_t row = t.box[0] * t.elem_bytes;
  uint32_t at = s;
  for (uint32_t i2 = 0; i2 < t.box[2]; i2++)
    for (uint32_t i1 = 0; i1 < t.box[1]; i1++, at += row)
      for (uint32_t i0 = 0; i0 < t.box[0]; i0++) {
        const int64_t g0 = (int64_t)c[0] + i0, g1 = (int64_t)c[1] + i1, g2 = (int64_t)c[2] + i2;
        const bool in = g0 >= 0 && g1 >= 0 && g2 >= 0 && (uint64_t)g0 < t.dim[0] && (uint64_t)g1 < t.dim[1] &&
                        (uint64_t)g2 < t.dim[2];
        unsigned char *sp = base + gp__nvw_swz(at + i0 * t.elem_bytes, t.swizzle);
        unsigned char *gp = in ? (unsigned char *)t.base + (uint64_t)g0 * t.elem_bytes + (uint64_t)g1 * t.stride[1] +
                                     (uint64_t)g2 * t.stride[2]
                               : (unsigned char *)0;
        if (store) {
          if (in) memcpy(gp, sp, t.elem_bytes);
        } else if (in) {
          memcpy(sp, gp, t.elem_bytes);
        } else {
          memset(sp, 0, t.elem_bytes);
        }
      }
}

/* mbarrier state in its 64 bits: pending arrivals [0, 20), expected arrivals [20, 40),
 * transaction bytes outstanding [40, 63) (signed: may go below zero before expect_tx),
 * the phase parity at bit 63. */
static inline uint64_t gp__nvw_mbar_pack(uint64_t pend, uint64_t exp, int64_t tx, uint64_t ph) {
  return pend | exp << 20 | ((uint64_t)tx & ((1ull << 23) - 1)) << 40 | ph << 63;
}
static inline void gp__nvw_mbar_update(uint64_t *bar, int arrivals, int64_t tx_delta, const char *file, int line) {
  const uint64_t v = *bar;
  int64_t pend = (int64_t)(v & 0xfffff), exp = (int64_t)((v >> 20) & 0xfffff);
  int64_t tx = (int64_t)((v >> 40) & ((1ull << 23) - 1));
  if (tx & (1ll << 22)) tx -= 1ll << 23;
  uint64_t ph = v >> 63;
  if (exp == 0) gp__nvw_fail("mbarrier: used before mbarrier.init", v, file, line);
  pend -= arrivals;
  tx += tx_delta;
  if (pend < 0) gp__nvw_fail("mbarrier: more arrivals than the count of the current phase", (uint64_t)exp, file, line);
  if (pend == 0 && tx == 0) {
    pend = exp;
    ph ^= 1u;
  }
  *bar = gp__nvw_mbar_pack((uint64_t)pend, (uint64_t)exp, tx, ph);
}
/** @endcond */

/** @brief The address of shared-memory pointer @p p in the shared window (on the CPU: its
 *         offset from the block's dynamic shared memory, where wgmma and TMA operands live). */
static inline uint32_t gp_nv_smem_addr(const void *p) {
  return (uint32_t)((const unsigned char *)p - gp__nvw_smem_base());
}

/** @brief `mbarrier.init.shared::cta.b64`: a barrier whose phases complete after @p count
 *         arrivals (1 .. 2^20 - 1) and their expected transaction bytes. One thread initialises;
 *         the others see it after gp_nv_fence_mbarrier_init() and a barrier. */
static inline void gp_nv_mbarrier_init(uint64_t *bar, unsigned count) {
  *bar = gp__nvw_mbar_pack(count, count, 0, 0);
}
/** @brief `fence.mbarrier_init.release.cluster` (after initialisation; a no-op on the CPU). */
static inline void gp_nv_fence_mbarrier_init(void) {}
/** @brief `mbarrier.arrive.shared::cta.b64` by the calling thread. */
static inline void gp_nv_mbarrier_arrive(uint64_t *bar, GP__NV_SITE) { gp__nvw_mbar_update(bar, 1, 0, file, line); }
/** @brief `mbarrier.arrive.expect_tx.shared::cta.b64`: the current phase also waits for
 *         @p bytes of transactions (TMA copies completing on @p bar); then arrives. */
static inline void gp_nv_mbarrier_arrive_expect_tx(uint64_t *bar, unsigned bytes, GP__NV_SITE) {
  gp__nvw_mbar_update(bar, 1, (int64_t)bytes, file, line);
}
/** @brief `mbarrier.try_wait.parity.shared::cta.b64`: true when the phase of parity
 *         @p parity has completed (the barrier's current phase parity differs). */
static inline bool gp_nv_mbarrier_try_wait_parity(uint64_t *bar, unsigned parity) {
  return (*bar >> 63) != (parity & 1u);
}
/** @brief Waits until the phase of parity @p parity of @p bar completed (a try_wait loop).
 *         Warp-collective under the CPU emulation: every live lane of the warp calls it. */
static inline void gp_nv_mbarrier_wait(uint64_t *bar, unsigned parity, GP__NV_SITE) {
  /* The lanes vote at each try, so that the whole warp leaves the loop in the same round
   * (a lane leaving early would meet its warp's next rendezvous alone). A phase, once
   * complete, stays complete until this warp takes part again, so one lane seeing it
   * suffices. The rendezvous also lets the block's other warps run. */
  for (unsigned long tries = 0;; tries++) {
    const gp__cpu_warp_xchg_t *x = gp__cpu_warp_sync(gp_nv_mbarrier_try_wait_parity(bar, parity), file, line);
    for (unsigned l = 0; l < 32; l++)
      if (((x->active >> l) & 1u) && x->val[l]) return;
    if (tries == (1ul << 22))
      gp__nvw_fail("mbarrier wait: the phase never completed (deadlock)", parity, file, line);
  }
}

/** @brief `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`:
 *         loads the box at element coordinates (@p c0, @p c1) (innermost first; may lie
 *         partly or wholly outside the tensor: those elements read as zero) into shared
 *         memory at @p smem (128-byte aligned; swizzle-atom aligned when swizzled), and
 *         completes the box's bytes on @p bar. Issued by one thread. */
static inline void gp_nv_tma_load_2d(void *smem, const gp_nv_tensor_map_t *tm, int32_t c0, int32_t c1, uint64_t *bar,
                                     GP__NV_SITE) {
  const int32_t c[3] = {c0, c1, 0};
  gp__nvw_tma(tm, gp_nv_smem_addr(smem), c, 0, file, line);
  gp__nv_tmap_cpu_t t;
  memcpy(&t, tm, sizeof t);
  gp__nvw_mbar_update(bar, 0, -(int64_t)(t.box[0] * t.box[1] * t.box[2] * t.elem_bytes), file, line);
}
/** @brief The 3D form of gp_nv_tma_load_2d (coordinates @p c0, @p c1, @p c2). */
static inline void gp_nv_tma_load_3d(void *smem, const gp_nv_tensor_map_t *tm, int32_t c0, int32_t c1, int32_t c2,
                                     uint64_t *bar, GP__NV_SITE) {
  const int32_t c[3] = {c0, c1, c2};
  gp__nvw_tma(tm, gp_nv_smem_addr(smem), c, 0, file, line);
  gp__nv_tmap_cpu_t t;
  memcpy(&t, tm, sizeof t);
  gp__nvw_mbar_update(bar, 0, -(int64_t)(t.box[0] * t.box[1] * t.box[2] * t.elem_bytes), file, line);
}
/** @brief `cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group`: stores the box in
 *         shared memory at @p smem to coordinates (@p c0, @p c1); elements outside the
 *         tensor are not written. Precede it with gp_nv_fence_proxy_async(); follow with
 *         gp_nv_tma_store_commit() and gp_nv_tma_store_wait(). */
static inline void gp_nv_tma_store_2d(const gp_nv_tensor_map_t *tm, const void *smem, int32_t c0, int32_t c1,
                                      GP__NV_SITE) {
  const int32_t c[3] = {c0, c1, 0};
  gp__nvw_tma(tm, gp_nv_smem_addr(smem), c, 1, file, line);
}
/** @brief The 3D form of gp_nv_tma_store_2d. */
static inline void gp_nv_tma_store_3d(const gp_nv_tensor_map_t *tm, const void *smem, int32_t c0, int32_t c1,
                                      int32_t c2, GP__NV_SITE) {
  const int32_t c[3] = {c0, c1, c2};
  gp__nvw_tma(tm, gp_nv_smem_addr(smem), c, 1, file, line);
}
/** @brief `cp.async.bulk.commit_group` (the stores issued so far form a group). */
static inline void gp_nv_tma_store_commit(void) {}
/** @brief `cp.async.bulk.wait_group.read 0`: the stores' shared memory may be reused. */
static inline void gp_nv_tma_store_wait(void) {}
/** @brief `fence.proxy.async.shared::cta`: the thread's shared-memory writes become visible
 *         to TMA and wgmma (the async proxy). A no-op on the CPU. */
static inline void gp_nv_fence_proxy_async(void) {}

/** @brief A wgmma shared-memory matrix descriptor for the operand at @p smem (see the file
 *         comment): leading and stride byte offsets @p lbo, @p sbo (multiples of 16), swizzle
 *         @p swizzle (GP_NV_SWIZZLE_*), base offset 0. */
static inline uint64_t gp_nv_wgmma_desc(const void *smem, uint32_t lbo, uint32_t sbo, int swizzle) {
  const uint64_t mode = swizzle == 128 ? 1u : swizzle == 64 ? 2u : swizzle == 32 ? 3u : 0u;
  return (uint64_t)((gp_nv_smem_addr(smem) & 0x3ffffu) >> 4) | (uint64_t)((lbo & 0x3ffffu) >> 4) << 16 |
         (uint64_t)((sbo & 0x3ffffu) >> 4) << 32 | mode << 62;
}

/** @brief Initialises a thread's wgmma state (before its first wgmma). */
static inline void gp_nv_wgmma_init(gp_nv_wgmma_state_t *st) {
  st->n = 0;
  st->committed = 0;
}
/** @brief `wgmma.fence.sync.aligned`: orders register and shared-memory accesses before
 *         the next wgmma (every thread of the warpgroup). A no-op on the CPU. */
static inline void gp_nv_wgmma_fence(gp_nv_wgmma_state_t *st) { (void)st; }
/** @brief `wgmma.commit_group.sync.aligned`: the wgmmas issued since the last commit form a group. */
static inline void gp_nv_wgmma_commit(gp_nv_wgmma_state_t *st) { st->committed++; }
/** @brief `wgmma.wait_group.sync.aligned n`: every committed group but the @p n most recent
 *         (a constant 0..7) has completed; their accumulators may be read. */
static inline void gp_nv_wgmma_wait(gp_nv_wgmma_state_t *st, int n, GP__NV_SITE) { gp__nvw_wait(st, n, file, line); }

/** @brief `wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}` with both operands from
 *         shared memory: D = A B (+ D when @p scale_d), A 64 x 16 by @p desc_a (M-major when
 *         @p trans_a), B 16 x N by @p desc_b (N-major when @p trans_b); @p d holds the
 *         thread's N / 2 accumulators. @p n is 8, 16, 32, 64, 128 or 256; @p n, @p trans_a,
 *         @p trans_b and @p bf16 are compile-time constants (PTX immediates). Every thread
 *         of the warpgroup issues it. */
static inline void gp_nv_wgmma(gp_nv_wgmma_state_t *st, float *d, int n, uint64_t desc_a, uint64_t desc_b,
                               int scale_d, int trans_a, int trans_b, int bf16, GP__NV_SITE) {
  gp__nvw_mma(st, d, (unsigned)n, desc_a, desc_b, scale_d, trans_a, trans_b, bf16, file, line);
}

/** @brief `setmaxnreg.inc.sync.aligned.u32 n` (a no-op on the CPU). */
#define gp_nv_setmaxnreg_inc(n) ((void)0)
/** @brief `setmaxnreg.dec.sync.aligned.u32 n` (a no-op on the CPU). */
#define gp_nv_setmaxnreg_dec(n) ((void)0)

#undef GP__NV_SITE

#else /* ================================ CUDA: inline PTX ============================ */

#ifndef __grid_constant__
#define __grid_constant__
#endif

/* The instructions exist in sm_90a device code only; elsewhere the wrappers trap. */
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GP__NVW_ASM(...) asm volatile(__VA_ARGS__)
#elif defined(__CUDA_ARCH__)
#define GP__NVW_ASM(...) __trap()
#else
#define GP__NVW_ASM(...) ((void)0)
#endif

typedef struct gp_nv_wgmma_state {
  int unused; /**< the hardware tracks the groups */
} gp_nv_wgmma_state_t;

static __device__ __forceinline__ uint32_t gp_nv_smem_addr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}
static __device__ __forceinline__ void gp_nv_mbarrier_init(uint64_t *bar, unsigned count) {
  GP__NVW_ASM("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(gp_nv_smem_addr(bar)), "r"(count) : "memory");
}
static __device__ __forceinline__ void gp_nv_fence_mbarrier_init(void) {
  GP__NVW_ASM("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
static __device__ __forceinline__ void gp_nv_mbarrier_arrive(uint64_t *bar) {
  GP__NVW_ASM("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(gp_nv_smem_addr(bar)) : "memory");
}
static __device__ __forceinline__ void gp_nv_mbarrier_arrive_expect_tx(uint64_t *bar, unsigned bytes) {
  GP__NVW_ASM("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(gp_nv_smem_addr(bar)), "r"(bytes)
              : "memory");
}
static __device__ __forceinline__ bool gp_nv_mbarrier_try_wait_parity(uint64_t *bar, unsigned parity) {
  uint32_t done = 0;
  GP__NVW_ASM(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(gp_nv_smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}
static __device__ __forceinline__ void gp_nv_mbarrier_wait(uint64_t *bar, unsigned parity) {
  while (!gp_nv_mbarrier_try_wait_parity(bar, parity)) {
  }
}
static __device__ __forceinline__ void gp_nv_tma_load_2d(void *smem, const gp_nv_tensor_map_t *tm, int32_t c0,
                                                         int32_t c1, uint64_t *bar) {
  GP__NVW_ASM(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];\n" ::"r"(gp_nv_smem_addr(smem)),
      "l"(tm), "r"(c0), "r"(c1), "r"(gp_nv_smem_addr(bar))
      : "memory");
}
static __device__ __forceinline__ void gp_nv_tma_load_3d(void *smem, const gp_nv_tensor_map_t *tm, int32_t c0,
                                                         int32_t c1, int32_t c2, uint64_t *bar) {
  GP__NVW_ASM(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(gp_nv_smem_addr(smem)),
      "l"(tm), "r"(c0), "r"(c1), "r"(c2), "r"(gp_nv_smem_addr(bar))
      : "memory");
}
static __device__ __forceinline__ void gp_nv_tma_store_2d(const gp_nv_tensor_map_t *tm, const void *smem, int32_t c0,
                                                          int32_t c1) {
  GP__NVW_ASM("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(tm),
              "r"(gp_nv_smem_addr(smem)), "r"(c0), "r"(c1)
              : "memory");
}
static __device__ __forceinline__ void gp_nv_tma_store_3d(const gp_nv_tensor_map_t *tm, const void *smem, int32_t c0,
                                                          int32_t c1, int32_t c2) {
  GP__NVW_ASM("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(tm),
              "r"(gp_nv_smem_addr(smem)), "r"(c0), "r"(c1), "r"(c2)
              : "memory");
}
static __device__ __forceinline__ void gp_nv_tma_store_commit(void) {
  GP__NVW_ASM("cp.async.bulk.commit_group;\n" ::: "memory");
}
static __device__ __forceinline__ void gp_nv_tma_store_wait(void) {
  GP__NVW_ASM("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
static __device__ __forceinline__ void gp_nv_fence_proxy_async(void) {
  GP__NVW_ASM("fence.proxy.async.shared::cta;\n" ::: "memory");
}
static __device__ __forceinline__ uint64_t gp_nv_wgmma_desc(const void *smem, uint32_t lbo, uint32_t sbo,
                                                            int swizzle) {
  const uint64_t mode = swizzle == 128 ? 1u : swizzle == 64 ? 2u : swizzle == 32 ? 3u : 0u;
  return (uint64_t)((gp_nv_smem_addr(smem) & 0x3ffffu) >> 4) | (uint64_t)((lbo & 0x3ffffu) >> 4) << 16 |
         (uint64_t)((sbo & 0x3ffffu) >> 4) << 32 | mode << 62;
}
static __device__ __forceinline__ void gp_nv_wgmma_init(gp_nv_wgmma_state_t *st) { (void)st; }
static __device__ __forceinline__ void gp_nv_wgmma_fence(gp_nv_wgmma_state_t *st) {
  (void)st;
  GP__NVW_ASM("wgmma.fence.sync.aligned;\n" ::: "memory");
}
static __device__ __forceinline__ void gp_nv_wgmma_commit(gp_nv_wgmma_state_t *st) {
  (void)st;
  GP__NVW_ASM("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
/* The count is an immediate in PTX: with n a constant, the switch folds away. */
static __device__ __forceinline__ void gp_nv_wgmma_wait(gp_nv_wgmma_state_t *st, int n) {
  (void)st;
  switch (n) {
    case 0: GP__NVW_ASM("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); break;
    case 1: GP__NVW_ASM("wgmma.wait_group.sync.aligned 1;\n" ::: "memory"); break;
    case 2: GP__NVW_ASM("wgmma.wait_group.sync.aligned 2;\n" ::: "memory"); break;
    case 3: GP__NVW_ASM("wgmma.wait_group.sync.aligned 3;\n" ::: "memory"); break;
    case 4: GP__NVW_ASM("wgmma.wait_group.sync.aligned 4;\n" ::: "memory"); break;
    case 5: GP__NVW_ASM("wgmma.wait_group.sync.aligned 5;\n" ::: "memory"); break;
    case 6: GP__NVW_ASM("wgmma.wait_group.sync.aligned 6;\n" ::: "memory"); break;
    default: GP__NVW_ASM("wgmma.wait_group.sync.aligned 7;\n" ::: "memory"); break;
  }
}
#define gp_nv_setmaxnreg_inc(n) GP__NVW_ASM("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(n))
#define gp_nv_setmaxnreg_dec(n) GP__NVW_ASM("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(n))

/* wgmma.mma_async m64nNk16, both operands from descriptors: one asm statement per input
 * type and pair of majorness immediates, d[] the N / 2 accumulators. */
#define GP__NVW_MMA_N8(TYPE, TA, TB) \
  GP__NVW_ASM("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\nwgmma.mma_async.sync.aligned.m64n8k16.f32." TYPE "." TYPE \
              " {%0, %1, %2, %3}, %4, %5, p, 1, 1, " #TA ", " #TB ";\n}\n" \
              : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) \
              : "l"(da), "l"(db), "r"(scale_d))
static __device__ __forceinline__ void gp__nvw_mma_n8(float *d, uint64_t da, uint64_t db, int scale_d, int ta, int tb, int bf16) {
  if (bf16) {
    if (ta) { if (tb) GP__NVW_MMA_N8("bf16", 1, 1); else GP__NVW_MMA_N8("bf16", 1, 0); }
    else { if (tb) GP__NVW_MMA_N8("bf16", 0, 1); else GP__NVW_MMA_N8("bf16", 0, 0); }
  } else {
    if (ta) { if (tb) GP__NVW_MMA_N8("f16", 1, 1); else GP__NVW_MMA_N8("f16", 1, 0); }
    else { if (tb) GP__NVW_MMA_N8("f16", 0, 1); else GP__NVW_MMA_N8("f16", 0, 0); }
  }
}
#define GP__NVW_MMA_N16(TYPE, TA, TB) \
  GP__NVW_ASM("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\nwgmma.mma_async.sync.aligned.m64n16k16.f32." TYPE "." TYPE \
              " {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, " #TA ", " #TB ";\n}\n" \
              : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]) \
              : "l"(da), "l"(db), "r"(scale_d))
static __device__ __forceinline__ void gp__nvw_mma_n16(float *d, uint64_t da, uint64_t db, int scale_d, int ta, int tb, int bf16) {
  if (bf16) {
    if (ta) { if (tb) GP__NVW_MMA_N16("bf16", 1, 1); else GP__NVW_MMA_N16("bf16", 1, 0); }
    else { if (tb) GP__NVW_MMA_N16("bf16", 0, 1); else GP__NVW_MMA_N16("bf16", 0, 0); }
  } else {
    if (ta) { if (tb) GP__NVW_MMA_N16("f16", 1, 1); else GP__NVW_MMA_N16("f16", 1, 0); }
    else { if (tb) GP__NVW_MMA_N16("f16", 0, 1); else GP__NVW_MMA_N16("f16", 0, 0); }
  }
}
#define GP__NVW_MMA_N32(TYPE, TA, TB) \
  GP__NVW_ASM("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\nwgmma.mma_async.sync.aligned.m64n32k16.f32." TYPE "." TYPE \
              " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, " #TA ", " #TB ";\n}\n" \
              : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]) \
              : "l"(da), "l"(db), "r"(scale_d))
static __device__ __forceinline__ void gp__nvw_mma_n32(float *d, uint64_t da, uint64_t db, int scale_d, int ta, int tb, int bf16) {
  if (bf16) {
    if (ta) { if (tb) GP__NVW_MMA_N32("bf16", 1, 1); else GP__NVW_MMA_N32("bf16", 1, 0); }
    else { if (tb) GP__NVW_MMA_N32("bf16", 0, 1); else GP__NVW_MMA_N32("bf16", 0, 0); }
  } else {
    if (ta) { if (tb) GP__NVW_MMA_N32("f16", 1, 1); else GP__NVW_MMA_N32("f16", 1, 0); }
    else { if (tb) GP__NVW_MMA_N32("f16", 0, 1); else GP__NVW_MMA_N32("f16", 0, 0); }
  }
}
#define GP__NVW_MMA_N64(TYPE, TA, TB) \
  GP__NVW_ASM("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\nwgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE \
              " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, " #TA ", " #TB ";\n}\n" \
              : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
              : "l"(da), "l"(db), "r"(scale_d))
static __device__ __forceinline__ void gp__nvw_mma_n64(float *d, uint64_t da, uint64_t db, int scale_d, int ta, int tb, int bf16) {
  if (bf16) {
    if (ta) { if (tb) GP__NVW_MMA_N64("bf16", 1, 1); else GP__NVW_MMA_N64("bf16", 1, 0); }
    else { if (tb) GP__NVW_MMA_N64("bf16", 0, 1); else GP__NVW_MMA_N64("bf16", 0, 0); }
  } else {
    if (ta) { if (tb) GP__NVW_MMA_N64("f16", 1, 1); else GP__NVW_MMA_N64("f16", 1, 0); }
    else { if (tb) GP__NVW_MMA_N64("f16", 0, 1); else GP__NVW_MMA_N64("f16", 0, 0); }
  }
}
#define GP__NVW_MMA_N128(TYPE, TA, TB) \
  GP__NVW_ASM("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\nwgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE \
              " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, " #TA ", " #TB ";\n}\n" \
              : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
              : "l"(da), "l"(db), "r"(scale_d))
static __device__ __forceinline__ void gp__nvw_mma_n128(float *d, uint64_t da, uint64_t db, int scale_d, int ta, int tb, int bf16) {
  if (bf16) {
    if (ta) { if (tb) GP__NVW_MMA_N128("bf16", 1, 1); else GP__NVW_MMA_N128("bf16", 1, 0); }
    else { if (tb) GP__NVW_MMA_N128("bf16", 0, 1); else GP__NVW_MMA_N128("bf16", 0, 0); }
  } else {
    if (ta) { if (tb) GP__NVW_MMA_N128("f16", 1, 1); else GP__NVW_MMA_N128("f16", 1, 0); }
    else { if (tb) GP__NVW_MMA_N128("f16", 0, 1); else GP__NVW_MMA_N128("f16", 0, 0); }
  }
}
#define GP__NVW_MMA_N256(TYPE, TA, TB) \
  GP__NVW_ASM("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\nwgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE \
              " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, " #TA ", " #TB ";\n}\n" \
              : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
              : "l"(da), "l"(db), "r"(scale_d))
static __device__ __forceinline__ void gp__nvw_mma_n256(float *d, uint64_t da, uint64_t db, int scale_d, int ta, int tb, int bf16) {
  if (bf16) {
    if (ta) { if (tb) GP__NVW_MMA_N256("bf16", 1, 1); else GP__NVW_MMA_N256("bf16", 1, 0); }
    else { if (tb) GP__NVW_MMA_N256("bf16", 0, 1); else GP__NVW_MMA_N256("bf16", 0, 0); }
  } else {
    if (ta) { if (tb) GP__NVW_MMA_N256("f16", 1, 1); else GP__NVW_MMA_N256("f16", 1, 0); }
    else { if (tb) GP__NVW_MMA_N256("f16", 0, 1); else GP__NVW_MMA_N256("f16", 0, 0); }
  }
}
static __device__ __forceinline__ void gp_nv_wgmma(gp_nv_wgmma_state_t *st, float *d, int n, uint64_t desc_a,
                                                   uint64_t desc_b, int scale_d, int trans_a, int trans_b, int bf16) {
  (void)st;
  switch (n) {
    case 8: gp__nvw_mma_n8(d, desc_a, desc_b, scale_d, trans_a, trans_b, bf16); break;
    case 16: gp__nvw_mma_n16(d, desc_a, desc_b, scale_d, trans_a, trans_b, bf16); break;
    case 32: gp__nvw_mma_n32(d, desc_a, desc_b, scale_d, trans_a, trans_b, bf16); break;
    case 64: gp__nvw_mma_n64(d, desc_a, desc_b, scale_d, trans_a, trans_b, bf16); break;
    case 128: gp__nvw_mma_n128(d, desc_a, desc_b, scale_d, trans_a, trans_b, bf16); break;
    default: gp__nvw_mma_n256(d, desc_a, desc_b, scale_d, trans_a, trans_b, bf16); break;
  }
}

#endif /* targets */

#endif /* __cplusplus */
#endif /* GP_NV_WGMMA_H */
