/**
 * @file gpuport/cooperative_groups.h
 * @brief CUDA's cooperative groups for dialect sources, in namespace `gp_cg`, on the
 *        dialect's warp primitives at its warp width (GP_WARP_SIZE 32 or 64).
 * @ingroup kernel
 *
 * Include it after gpuport/kernel.h; `namespace cg = gp_cg;` then reads as CUDA code:
 * @code
 * #include <gpuport/kernel.h>
 * #include <gpuport/cooperative_groups.h>
 * namespace cg = gp_cg;
 * GP_KERNEL void sum(const float *x, float *out) {
 *   cg::thread_block b = cg::this_thread_block();
 *   cg::thread_block_tile<32> t = cg::tiled_partition<32>(b);
 *   float v = cg::reduce(t, x[b.thread_rank()], cg::plus<float>());
 *   if (t.thread_rank() == 0) atomicAdd(out, v);
 * }
 * @endcode
 *
 * - `thread_block` / `this_thread_block()`: sync, thread_rank, size, num_threads,
 *   group_index, thread_index, group_dim, dim_threads.
 * - `thread_block_tile<N>` / `tiled_partition<N>(g)`, N a power of two from 1 to the warp
 *   width (a tile of 64 exists only at width 64; a tile of 32 on a 64-lane wave is a
 *   half-wave): sync, thread_rank, size, num_threads, meta_group_rank, meta_group_size,
 *   shfl, shfl_down, shfl_up, shfl_xor (within the tile), any, all, ballot (bit r for
 *   tile rank r), match_any (the ranks holding the same value).
 * - `thread_block_tile<N>` of several warps (N a power of two from twice the warp width
 *   to 1024): sync (the block's barrier), thread_rank, size, meta_group_rank,
 *   meta_group_size, and reduce() through the block's `block_tile_memory`
 *   (`__shared__ block_tile_memory<1024> m; this_thread_block(m)`).
 * - `thread_group`: what the block, a tile, a coalesced group and `tiled_partition(g, n)`
 *   (a group of n threads) convert to, as in CUDA: sync, thread_rank, size, num_threads,
 *   meta_group_rank, meta_group_size.
 * - `coalesced_threads()`: the warp's live lanes (on the CPU, lanes diverged in a branch
 *   are not told apart: call it where the warp is converged): sync, thread_rank, size,
 *   shfl, any, all, ballot. `binary_partition(g, pred)` and `labeled_partition(g, label)`
 *   of a tile or a coalesced group: the coalesced group of the lanes sharing the caller's
 *   predicate or label.
 * - `reduce(g, x, op)` over a tile or a coalesced group with `plus<T>`, `less<T>`
 *   (minimum), `greater<T>` (maximum), `bit_and<T>`, `bit_or<T>`, `bit_xor<T>` or the
 *   program's own operator: every thread of the group gets the result. T is any
 *   trivially copyable type (classes are shuffled word by word).
 * - `grid_group` / `this_grid()`: sync (gp_grid_sync(): a cooperative launch),
 *   thread_rank, size, num_threads, block_rank, num_blocks.
 * - `sync(g)` for any of them.
 *
 * Every target uses this implementation (the warp primitives of gpuport/kernel.h), so a
 * kernel behaves the same under nvcc, hipcc and on the CPU at both widths.
 */
#ifndef GP_COOPERATIVE_GROUPS_H
#define GP_COOPERATIVE_GROUPS_H

#include <gpuport/kernel.h>

#ifdef __cplusplus

#if defined(GP_TARGET_CPU)
#define GP__CGQ inline
#else
#define GP__CGQ __device__ __forceinline__
#endif

/** @brief CUDA's cooperative groups on the dialect's primitives. */
namespace gp_cg {
/* The warp width is part of every name here (an inline namespace, w32 or w64): the
 * builds of one source at 32 and at 64 lanes, linked into one program on the CPU, keep
 * their own definitions, where one inline function of each name would serve both. */
inline namespace GP__CAT(w, GP_WARP_SIZE) {

/** @cond GP_INTERNAL */
/* The threads of the caller's block, and the lanes of the caller's warp that exist (a
 * last warp may be partial). */
GP__CGQ unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
GP__CGQ gp_lane_mask_t warp_lanes() {
  const unsigned base = gp__linear_tid() - gp_lane_id(), n = block_threads() - base;
  return n >= (unsigned)GP_WARP_SIZE ? GP_FULL_MASK : (((gp_lane_mask_t)1 << n) - 1u);
}
/* The lanes of the caller's group of n lanes (n a power of two up to the warp). */
GP__CGQ gp_lane_mask_t tile_lanes(unsigned n) {
  const gp_lane_mask_t m = n >= 64u ? ~(gp_lane_mask_t)0 : (((gp_lane_mask_t)1 << n) - 1u);
  return (m << (gp_lane_id() & ~(n - 1u))) & warp_lanes();
}
/** @endcond */

/** @brief Any group, its kind known at run time (CUDA's type-erased
 *         cooperative_groups::thread_group): what a thread_block, a thread_block_tile, a
 *         coalesced_group or tiled_partition(g, n) converts to, for functions written once
 *         for every group (CUDA C++ Programming Guide, "Cooperative Groups: Group Types"). */
struct thread_group {
  /** @brief What the group is. */
  enum kind_t { BLOCK, TILE, LANES };
  kind_t kind;       /**< the block, a tile of n threads, or the lanes of m */
  unsigned n;        /**< TILE: threads in the tile */
  gp_lane_mask_t m;  /**< LANES: the lanes, bit l for lane l of the caller's warp */
  /** @brief __syncthreads() for the block, a masked warp sync of the lanes otherwise. */
  GP__CGQ void sync() const {
    if (kind == BLOCK) __syncthreads();
    else gp_syncwarp_mask(kind == TILE ? tile_lanes(n) : m);
  }
  /** @brief The caller's rank in the group. */
  GP__CGQ unsigned thread_rank() const {
    if (kind == BLOCK) return gp__linear_tid();
    if (kind == TILE) return gp__linear_tid() % n;
    return (unsigned)__popcll(m & (((gp_lane_mask_t)1 << gp_lane_id()) - 1u));
  }
  /** @brief Threads in the group. */
  GP__CGQ unsigned size() const {
    return kind == BLOCK ? block_threads() : kind == TILE ? n : (unsigned)__popcll(m);
  }
  /** @brief Threads in the group. */
  GP__CGQ unsigned num_threads() const { return size(); }
  /** @brief A tile's index among the block's tiles of its size (0 for the other kinds). */
  GP__CGQ unsigned meta_group_rank() const { return kind == TILE ? gp__linear_tid() / n : 0u; }
  /** @brief The number of tiles of its size in the block (1 for the other kinds). */
  GP__CGQ unsigned meta_group_size() const { return kind == TILE ? (block_threads() + n - 1u) / n : 1u; }
};

/** @brief The caller's block (CUDA's cooperative_groups::thread_block). */
struct thread_block {
  /** @brief The block_tile_memory given to this_thread_block(), or null: what tiles of
   *         more than a warp exchange their warps' values through. */
  unsigned char *scratch;
  /** @brief __syncthreads(). */
  GP__CGQ void sync() const { __syncthreads(); }
  /** @brief The caller's linear index in the block. */
  GP__CGQ unsigned thread_rank() const { return gp__linear_tid(); }
  /** @brief Threads in the block. */
  GP__CGQ unsigned size() const { return block_threads(); }
  /** @brief Threads in the block. */
  GP__CGQ unsigned num_threads() const { return block_threads(); }
  /** @brief blockIdx. */
  GP__CGQ dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  /** @brief threadIdx. */
  GP__CGQ dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  /** @brief blockDim. */
  GP__CGQ dim3 group_dim() const { return dim3(blockDim.x, blockDim.y, blockDim.z); }
  /** @brief blockDim. */
  GP__CGQ dim3 dim_threads() const { return group_dim(); }
  /** @brief The block as a run-time group. */
  GP__CGQ operator thread_group() const { return thread_group{thread_group::BLOCK, 0u, 0u}; }
};
/** @brief The caller's block. */
GP__CGQ thread_block this_thread_block() { return thread_block{nullptr}; }

/** @brief Shared memory through which the tiles of more than a warp of a block of up to
 *         MaxBlockSize threads combine their warps' values (CUDA's block_tile_memory,
 *         CUDA C++ Programming Guide, "Thread Block Tile"): declare it `__shared__` and
 *         give it to this_thread_block(). Holds 16 bytes a warp (reduce() of types up to
 *         16 bytes). */
template <unsigned MaxBlockSize = 1024> struct block_tile_memory {
  alignas(16) unsigned char bytes[(MaxBlockSize + 31u) / 32u * 16u]; /**< a slot of 16 bytes a warp */
};
/** @brief The caller's block, whose tiles of more than a warp use @p m. */
template <unsigned MaxBlockSize> GP__CGQ thread_block this_thread_block(block_tile_memory<MaxBlockSize> &m) {
  return thread_block{m.bytes};
}

/** @brief A tile of N threads of the block: N a power of two up to the warp width (the
 *         members below), or a multiple of the warp width up to 1024 (the specialisation
 *         for tiles of several warps). */
template <unsigned N, bool MultiWarp = (N > (unsigned)GP_WARP_SIZE)> struct thread_block_tile {
  /** @brief The tile of the caller (a tile within a warp needs no scratch). */
  GP__CGQ static thread_block_tile make(unsigned char *) { return thread_block_tile(); }
  static_assert(N >= 1 && N <= (unsigned)GP_WARP_SIZE && (N & (N - 1)) == 0,
                "a tile has a power-of-two size up to the warp width (64 only at GP_WARP_SIZE 64)");
  /** @brief The tile's lanes in the caller's warp. */
  GP__CGQ gp_lane_mask_t lanes() const { return tile_lanes(N); }
  /** @brief Waits for the tile's lanes (a masked warp sync). */
  GP__CGQ void sync() const { gp_syncwarp_mask(lanes()); }
  /** @brief The caller's rank in the tile. */
  GP__CGQ unsigned thread_rank() const { return gp_lane_id() & (N - 1u); }
  /** @brief N. */
  GP__CGQ static constexpr unsigned size() { return N; }
  /** @brief N. */
  GP__CGQ static constexpr unsigned num_threads() { return N; }
  /** @brief The tile's index among the block's tiles. */
  GP__CGQ unsigned meta_group_rank() const { return gp__linear_tid() / N; }
  /** @brief The number of tiles in the block. */
  GP__CGQ unsigned meta_group_size() const { return (block_threads() + N - 1u) / N; }
  /** @brief The value of tile rank @p src (taken modulo N). */
  template <class T> GP__CGQ T shfl(T v, int src) const { return gp_shfl_sync(lanes(), v, src, (int)N); }
  /** @brief The value of tile rank + @p d (the caller's own past the tile's end). */
  template <class T> GP__CGQ T shfl_down(T v, unsigned d) const { return gp_shfl_down_sync(lanes(), v, d, (int)N); }
  /** @brief The value of tile rank - @p d (the caller's own before the tile's start). */
  template <class T> GP__CGQ T shfl_up(T v, unsigned d) const { return gp_shfl_up_sync(lanes(), v, d, (int)N); }
  /** @brief The value of tile rank ^ @p m. */
  template <class T> GP__CGQ T shfl_xor(T v, int m) const { return gp_shfl_xor_sync(lanes(), v, m, (int)N); }
  /** @brief Bit r set when rank r's @p pred is nonzero (a 64-bit mask at every width). */
  GP__CGQ gp_lane_mask_t ballot(int pred) const {
    return gp_ballot_sync(lanes(), pred) >> (gp_lane_id() & ~(N - 1u));
  }
  /** @brief Nonzero when some rank's @p pred is. */
  GP__CGQ int any(int pred) const { return gp_ballot_sync(lanes(), pred) != 0; }
  /** @brief Nonzero when every rank's @p pred is. */
  GP__CGQ int all(int pred) const { return gp_ballot_sync(lanes(), !pred) == 0; }
  /** @brief The ranks whose @p v equals the caller's (bit r for rank r). */
  template <class T> GP__CGQ gp_lane_mask_t match_any(T v) const {
    gp_lane_mask_t m = 0;
    for (unsigned r = 0; r < N; r++)
      if (shfl(v, (int)r) == v) m |= (gp_lane_mask_t)1 << r;
    return m;
  }
  /** @brief The tile as a run-time group. */
  GP__CGQ operator thread_group() const { return thread_group{thread_group::TILE, N, 0u}; }
};

/** @brief A tile of several warps (N a multiple of the warp width, at most 1024): thread
 *         rank, size, meta group rank and size, sync, and reduce(). Its sync is the
 *         block's barrier, so every thread of the block must reach it (the block's tiles
 *         together), and reduce() needs the block's block_tile_memory
 *         (this_thread_block(scratch)). */
template <unsigned N> struct thread_block_tile<N, true> {
  static_assert(N % (unsigned)GP_WARP_SIZE == 0 && N <= 1024u && (N & (N - 1)) == 0,
                "a tile of several warps has a power-of-two size up to 1024");
  unsigned char *scratch; /**< the block's block_tile_memory, or null */
  /** @brief The caller's tile, with the block's scratch @p s. */
  GP__CGQ static thread_block_tile make(unsigned char *s) { return thread_block_tile{s}; }
  /** @brief __syncthreads(): every tile of the block reaches it together. */
  GP__CGQ void sync() const { __syncthreads(); }
  /** @brief The caller's rank in the tile. */
  GP__CGQ unsigned thread_rank() const { return gp__linear_tid() % N; }
  /** @brief N. */
  GP__CGQ static constexpr unsigned size() { return N; }
  /** @brief N. */
  GP__CGQ static constexpr unsigned num_threads() { return N; }
  /** @brief The tile's index among the block's tiles. */
  GP__CGQ unsigned meta_group_rank() const { return gp__linear_tid() / N; }
  /** @brief The number of tiles in the block. */
  GP__CGQ unsigned meta_group_size() const { return (block_threads() + N - 1u) / N; }
  /** @brief The tile as a run-time group. */
  GP__CGQ operator thread_group() const { return thread_group{thread_group::TILE, N, 0u}; }
};

/** @cond GP_INTERNAL */
GP__CGQ unsigned char *scratch_of(const thread_block &b) { return b.scratch; }
template <class P> GP__CGQ unsigned char *scratch_of(const P &) { return nullptr; }
/** @endcond */
/** @brief The caller's tile of N threads of @p parent (a block or a larger tile). */
template <unsigned N, class P> GP__CGQ thread_block_tile<N> tiled_partition(const P &parent) {
  return thread_block_tile<N>::make(scratch_of(parent));
}
/** @brief The caller's tile of @p n threads (a power of two up to the warp, or the
 *         block's size) of @p parent. */
template <class P> GP__CGQ thread_group tiled_partition(const P &parent, unsigned n) {
  (void)parent;
  if (n >= block_threads() && n > (unsigned)GP_WARP_SIZE) return thread_group{thread_group::BLOCK, 0u, 0u};
  return thread_group{thread_group::TILE, n, 0u};
}

/** @brief The warp's live lanes (CUDA's coalesced_group). */
struct coalesced_group {
  gp_lane_mask_t m; /**< the lanes, bit l for lane l */
  /** @brief A warp sync of the group's lanes. */
  GP__CGQ void sync() const { gp_syncwarp_mask(m); }
  /** @brief The number of the group's lanes below the caller's. */
  GP__CGQ unsigned thread_rank() const {
    return (unsigned)__popcll(m & (((gp_lane_mask_t)1 << gp_lane_id()) - 1u));
  }
  /** @brief Lanes in the group. */
  GP__CGQ unsigned size() const { return (unsigned)__popcll(m); }
  /** @brief Lanes in the group. */
  GP__CGQ unsigned num_threads() const { return size(); }
  /** @brief The value of the group's rank @p src. */
  template <class T> GP__CGQ T shfl(T v, unsigned src) const {
    gp_lane_mask_t r = m;
    for (unsigned i = 0; i < src % size(); i++) r &= r - 1u;
    return gp_shfl_sync(m, v, __ffsll((long long)r) - 1);
  }
  /** @brief Bit r set when rank r's @p pred is nonzero. */
  GP__CGQ gp_lane_mask_t ballot(int pred) const {
    const gp_lane_mask_t b = gp_ballot_sync(m, pred);
    gp_lane_mask_t out = 0, rest = m;
    for (unsigned r = 0; rest; r++, rest &= rest - 1u)
      if (b & rest & (~rest + 1u)) out |= (gp_lane_mask_t)1 << r;
    return out;
  }
  /** @brief Nonzero when some lane's @p pred is. */
  GP__CGQ int any(int pred) const { return gp_ballot_sync(m, pred) != 0; }
  /** @brief Nonzero when every lane's @p pred is. */
  GP__CGQ int all(int pred) const { return gp_ballot_sync(m, !pred) == 0; }
  /** @brief The group as a run-time group. */
  GP__CGQ operator thread_group() const { return thread_group{thread_group::LANES, 0u, m}; }
};
/** @brief The calling warp's live lanes. */
GP__CGQ coalesced_group coalesced_threads() { return coalesced_group{gp_active_mask()}; }

/** @cond GP_INTERNAL */
#if defined(GP_TARGET_CPU)
/* On the CPU one rendezvous hands every lane the values (up to 64 bits) of the lanes of
 * m, where a shuffle per lane would cost a rendezvous each. */
template <class T> inline const gp__cpu_warp_xchg_t *lanes_xchg(gp_lane_mask_t m, const T &v) {
  uint64_t b = 0;
  __builtin_memcpy(&b, &v, sizeof(T) < 8 ? sizeof(T) : 8);
  return gp__cpu_warp_sync_mask(m, b, __FILE__, __LINE__);
}
/* The value of the lowest lane of rest in exchange x. */
template <class T> inline T lane_value(const gp__cpu_warp_xchg_t *x, gp_lane_mask_t rest) {
  T v;
  __builtin_memcpy(&v, &x->val[__builtin_ctzll(rest)], sizeof(T) < 8 ? sizeof(T) : 8);
  return v;
}
#endif
/* The lanes of a group that lives in one warp. */
template <unsigned N> GP__CGQ gp_lane_mask_t group_lanes(const thread_block_tile<N, false> &t) { return t.lanes(); }
GP__CGQ gp_lane_mask_t group_lanes(const coalesced_group &g) { return g.m; }
/** @endcond */

/** @brief The lanes of @p parent (a tile or a coalesced group) whose @p pred has the
 *         caller's truth value: two groups, each lane in one (CUDA's binary_partition,
 *         CUDA C++ Programming Guide, "Group Partitioning"). Every lane of @p parent calls it. */
template <class P> GP__CGQ coalesced_group binary_partition(const P &parent, bool pred) {
  const gp_lane_mask_t all = group_lanes(parent), yes = gp_ballot_sync(all, pred);
  return coalesced_group{pred ? yes : all & ~yes};
}
/** @brief The lanes of @p parent (a tile or a coalesced group) whose @p label equals the
 *         caller's (CUDA's labeled_partition, int or unsigned labels). Every lane of
 *         @p parent calls it. */
template <class P, class L> GP__CGQ coalesced_group labeled_partition(const P &parent, L label) {
  const gp_lane_mask_t all = group_lanes(parent);
  gp_lane_mask_t same = 0;
#if defined(GP_TARGET_CPU)
  if (sizeof(L) <= 8) {
    const gp__cpu_warp_xchg_t *x = lanes_xchg(all, label);
    for (gp_lane_mask_t rest = x->active; rest; rest &= rest - 1u)
      if (lane_value<L>(x, rest) == label) same |= rest & (~rest + 1u);
    return coalesced_group{same};
  }
#endif
  for (gp_lane_mask_t rest = all; rest; rest &= rest - 1u) {
    const int l = __ffsll((long long)rest) - 1;
    if (gp_shfl_sync(all, label, l) == label) same |= (gp_lane_mask_t)1 << l;
  }
  return coalesced_group{same};
}

/** @brief The whole grid of a cooperative launch (gp_launch_ex() with cooperative = 1). */
struct grid_group {
  /** @brief Barrier of every thread of the grid (gp_grid_sync()). */
  GP__CGQ void sync() const { gp_grid_sync(); }
  /** @brief The caller's block's linear index in the grid. */
  GP__CGQ unsigned long long block_rank() const {
    return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
  }
  /** @brief Blocks in the grid. */
  GP__CGQ unsigned long long num_blocks() const {
    return (unsigned long long)gridDim.x * gridDim.y * gridDim.z;
  }
  /** @brief The caller's linear index in the grid (block-major). */
  GP__CGQ unsigned long long thread_rank() const { return block_rank() * block_threads() + gp__linear_tid(); }
  /** @brief Threads in the grid. */
  GP__CGQ unsigned long long size() const { return num_blocks() * block_threads(); }
  /** @brief Threads in the grid. */
  GP__CGQ unsigned long long num_threads() const { return size(); }
};
/** @brief The grid of a cooperative launch. */
GP__CGQ grid_group this_grid() { return grid_group(); }

/** @brief g.sync(). */
template <class G> GP__CGQ void sync(const G &g) { g.sync(); }

/** @brief Reduction operators of reduce(): the sum. */
template <class T> struct plus {
  /** @brief a + b. */
  GP__CGQ T operator()(T a, T b) const { return a + b; }
};
/** @brief The minimum (CUDA's cooperative_groups::less as a reduction). */
template <class T> struct less {
  /** @brief The smaller of a and b. */
  GP__CGQ T operator()(T a, T b) const { return b < a ? b : a; }
};
/** @brief The maximum (CUDA's cooperative_groups::greater as a reduction). */
template <class T> struct greater {
  /** @brief The larger of a and b. */
  GP__CGQ T operator()(T a, T b) const { return a < b ? b : a; }
};
/** @brief Bitwise and. */
template <class T> struct bit_and {
  /** @brief a & b. */
  GP__CGQ T operator()(T a, T b) const { return a & b; }
};
/** @brief Bitwise or. */
template <class T> struct bit_or {
  /** @brief a | b. */
  GP__CGQ T operator()(T a, T b) const { return a | b; }
};
/** @brief Bitwise exclusive or. */
template <class T> struct bit_xor {
  /** @brief a ^ b. */
  GP__CGQ T operator()(T a, T b) const { return a ^ b; }
};

/** @brief @p op over the tile's values of @p x (a butterfly: every rank gets the result). */
template <unsigned N, class T, class Op> GP__CGQ T reduce(const thread_block_tile<N, false> &t, T x, Op op) {
  for (unsigned o = N / 2; o > 0; o /= 2) x = op(x, t.shfl_xor(x, (int)o));
  return x;
}
/** @brief @p op over the values of @p x of a tile of several warps: each warp's butterfly,
 *         then its warps' results in order through the block's block_tile_memory (every
 *         thread gets the result; every thread of the block calls it). */
template <unsigned N, class T, class Op> GP__CGQ T reduce(const thread_block_tile<N, true> &t, T x, Op op) {
  static_assert(sizeof(T) <= 16, "reduce() over several warps exchanges values of up to 16 bytes");
  if (!t.scratch) {
#if defined(GP_TARGET_CPU)
    gp__cpu_fail(__FILE__, __LINE__, "reduce() over a tile of %u threads needs this_thread_block(block_tile_memory)", N);
#else
    __trap();
#endif
  }
  for (unsigned o = (unsigned)GP_WARP_SIZE / 2; o > 0; o /= 2) x = op(x, gp_shfl_xor(x, (int)o));
  t.sync(); /* earlier readers of the scratch are done */
  if (gp_lane_id() == 0) __builtin_memcpy(t.scratch + 16u * gp_warp_id(), &x, sizeof x);
  t.sync();
  const unsigned first = gp__linear_tid() / N * (N / (unsigned)GP_WARP_SIZE);
  T r;
  __builtin_memcpy(&r, t.scratch + 16u * first, sizeof r);
  for (unsigned k = 1; k < N / (unsigned)GP_WARP_SIZE; k++) {
    T w;
    __builtin_memcpy(&w, t.scratch + 16u * (first + k), sizeof w);
    r = op(r, w);
  }
  return r;
}
/** @brief @p op over the group's values of @p x, folded in lane order (every lane gets
 *         the same result; @p op associative and commutative, as CUDA requires). */
template <class T, class Op> GP__CGQ T reduce(const coalesced_group &g, T x, Op op) {
#if defined(GP_TARGET_CPU)
  if (sizeof(T) <= 8) {
    const gp__cpu_warp_xchg_t *e = lanes_xchg(g.m, x);
    gp_lane_mask_t lanes = e->active;
    T r = lane_value<T>(e, lanes);
    for (lanes &= lanes - 1u; lanes; lanes &= lanes - 1u) r = op(r, lane_value<T>(e, lanes));
    return r;
  }
#endif
  gp_lane_mask_t rest = g.m;
  T r = gp_shfl_sync(g.m, x, __ffsll((long long)rest) - 1);
  for (rest &= rest - 1u; rest; rest &= rest - 1u) r = op(r, gp_shfl_sync(g.m, x, __ffsll((long long)rest) - 1));
  return r;
}

} // inline namespace w32 / w64
} // namespace gp_cg

#undef GP__CGQ
#endif /* __cplusplus */
#endif /* GP_COOPERATIVE_GROUPS_H */
