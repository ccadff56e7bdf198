/*
 * kt_cg.cu - gpuport/cooperative_groups.h for test/test_dialect.c: every member of a
 * tile of each size (1 .. the warp width), the block and run-time tiles, the coalesced
 * group of a partial warp, and the grid's sync in a cooperative launch; groups as the
 * type-erased thread_group, binary and labeled partitions, reduce() and the shuffles of
 * user structs, and the __reduce_*_sync functions.
 */
#include <gpuport/kernel.h>
#include <gpuport/cooperative_groups.h>
namespace cg = gp_cg;

enum { KT_CG_OUTS = 20 };
/* out[KT_CG_OUTS * g + k] for thread g of the grid (blocks of a multiple of the warp),
 * value v = in[g]: thread_rank, size, meta_group_rank, meta_group_size, shfl(v, rank + 1),
 * shfl_down(v, 1), shfl_up(v, 1), shfl_xor(v, 1 or 0), any(v odd), all(v > 0), ballot(v odd)
 * low and high 32 bits, match_any(v % 3) low and high, reduce with plus, less, greater,
 * bit_and, bit_or, bit_xor. */
template <unsigned N> GP_KERNEL_TEMPLATE void kt_cg_tile(const int *in, int *out) {
  cg::thread_block b = cg::this_thread_block();
  cg::thread_block_tile<N> t = cg::tiled_partition<N>(b);
  const unsigned g = blockIdx.x * b.size() + b.thread_rank();
  const int v = in[g];
  int *o = out + KT_CG_OUTS * g;
  t.sync();
  o[0] = (int)t.thread_rank();
  o[1] = (int)t.size() * 1000 + (int)t.num_threads();
  o[2] = (int)t.meta_group_rank();
  o[3] = (int)t.meta_group_size();
  o[4] = t.shfl(v, (int)(t.thread_rank() + 1));
  o[5] = t.shfl_down(v, 1u);
  o[6] = t.shfl_up(v, 1u);
  o[7] = t.shfl_xor(v, N > 1 ? 1 : 0);
  o[8] = t.any(v & 1);
  o[9] = t.all(v > 0);
  const gp_lane_mask_t bal = t.ballot(v & 1), mat = t.match_any(v % 3);
  o[10] = (int)(unsigned)bal;
  o[11] = (int)(unsigned)(bal >> 32);
  o[12] = (int)(unsigned)mat;
  o[13] = (int)(unsigned)(mat >> 32);
  o[14] = cg::reduce(t, v, cg::plus<int>());
  o[15] = cg::reduce(t, v, cg::less<int>());
  o[16] = cg::reduce(t, v, cg::greater<int>());
  o[17] = cg::reduce(t, v, cg::bit_and<int>());
  o[18] = cg::reduce(t, v, cg::bit_or<int>());
  o[19] = cg::reduce(t, v, cg::bit_xor<int>());
  cg::sync(t);
}
GP_KERNEL_EXPORT_INSTANCE(kt_cg_tile_1, kt_cg_tile<1>)
GP_KERNEL_EXPORT_INSTANCE(kt_cg_tile_2, kt_cg_tile<2>)
GP_KERNEL_EXPORT_INSTANCE(kt_cg_tile_4, kt_cg_tile<4>)
GP_KERNEL_EXPORT_INSTANCE(kt_cg_tile_8, kt_cg_tile<8>)
GP_KERNEL_EXPORT_INSTANCE(kt_cg_tile_16, kt_cg_tile<16>)
GP_KERNEL_EXPORT_INSTANCE(kt_cg_tile_32, kt_cg_tile<32>)
#if GP_WARP_SIZE == 64
GP_KERNEL_EXPORT_INSTANCE(kt_cg_tile_64, kt_cg_tile<64>)
#endif

enum { KT_CG_BOUTS = 12 };
/* out[KT_CG_BOUTS * g + k], blocks of any size: the block's thread_rank, size, num_threads,
 * group_index.x, thread_index.x, group_dim.x; tiled_partition(b, 16)'s thread_rank, size,
 * meta_group_rank, meta_group_size; coalesced_threads()'s size and thread_rank * 1000 +
 * the rank its shfl(rank, size - 1 - rank) reads. */
GP_KERNEL void kt_cg_block(int *out) {
  cg::thread_block b = cg::this_thread_block();
  const unsigned g = blockIdx.x * b.size() + b.thread_rank();
  int *o = out + KT_CG_BOUTS * g;
  b.sync();
  o[0] = (int)b.thread_rank();
  o[1] = (int)b.size();
  o[2] = (int)b.num_threads();
  o[3] = (int)b.group_index().x;
  o[4] = (int)b.thread_index().x;
  o[5] = (int)b.group_dim().x;
  cg::thread_group d = cg::tiled_partition(b, 16);
  d.sync();
  o[6] = (int)d.thread_rank();
  o[7] = (int)d.size();
  o[8] = (int)d.meta_group_rank();
  o[9] = (int)d.meta_group_size();
  cg::sync(b);
  cg::coalesced_group c = cg::coalesced_threads();
  o[10] = (int)c.size();
  o[11] = (int)c.thread_rank() * 1000 + c.shfl((int)c.thread_rank(), c.size() - 1 - c.thread_rank());
  c.sync();
}
GP_KERNEL_EXPORT(kt_cg_block)

/* A cooperative launch: thread 0 of each block writes buf[block] = block + 1, the grid
 * syncs, then every thread writes out[thread_rank] = the sum of buf, and thread 0 of
 * block 0 writes out[size] = size and out[size + 1] = num_blocks. */
GP_KERNEL void kt_cg_grid(int *buf, int *out) {
  cg::grid_group grid = cg::this_grid();
  if (threadIdx.x == 0) buf[grid.block_rank()] = (int)grid.block_rank() + 1;
  grid.sync();
  int s = 0;
  for (unsigned long long k = 0; k < grid.num_blocks(); k++) s += buf[k];
  out[grid.thread_rank()] = s;
  if (grid.thread_rank() == 0) {
    out[grid.size()] = (int)grid.num_threads();
    out[grid.size() + 1] = (int)grid.num_blocks();
  }
}
GP_KERNEL_EXPORT(kt_cg_grid)

/* Functions written once for every group take CUDA's type-erased thread_group. */
GP_DEVICE int kt_cg_erased(cg::thread_group g) {
  g.sync();
  return (int)g.thread_rank() * 1000 + (int)g.size();
}
/* A user type for reduce() and the shuffles of classes: three words, the last one half
 * used. */
struct kt_cg_summax {
  int sum, max;
  short tag;
};
struct kt_cg_summax_op {
  __device__ kt_cg_summax operator()(kt_cg_summax a, kt_cg_summax b) const {
    kt_cg_summax r;
    r.sum = a.sum + b.sum;
    r.max = a.max > b.max ? a.max : b.max;
    r.tag = (short)(a.tag | b.tag);
    return r;
  }
};
struct kt_cg_quad {
  int x, y, z, w;
};
struct kt_cg_three_shorts {
  short a, b, c;
};

enum { KT_CG_POUTS = 30 };
/* out[KT_CG_POUTS * g + k], blocks of 96 threads (the last warp is partial at width 64),
 * value v = in[g]: thread_group from the block, a tile of 8, tiled_partition(b, 16) and
 * coalesced_threads() (rank * 1000 + size); binary_partition of the warp's tile by v odd:
 * size, thread_rank, reduce plus and greater in diverged branches, shfl(v, 0);
 * labeled_partition by v % 3: size, thread_rank, reduce plus, shfl(v, size - 1);
 * labeled_partition of the binary partition: size, reduce plus; reduce of a struct over a
 * tile of 8: sum, max, tag; shuffles of a 4-int struct in a tile of 8: shfl(rank + 1).z,
 * shfl_down(1).y, shfl_xor(1).w, shfl_up(1).x, the maskless gp_shfl_xor(1).y; a 6-byte
 * struct's gp_shfl(0, width 8).c; __reduce_*_sync over the lanes of v's parity: add, min,
 * max, and, or, xor; reduce of the struct over the binary partition: sum, max. */
GP_KERNEL void kt_cg_part(const int *in, int *out) {
  cg::thread_block b = cg::this_thread_block();
  const unsigned g = blockIdx.x * b.size() + b.thread_rank();
  const int v = in[g];
  int *o = out + KT_CG_POUTS * g;
  cg::thread_block_tile<GP_WARP_SIZE> t = cg::tiled_partition<GP_WARP_SIZE>(b);
  cg::thread_block_tile<8> t8 = cg::tiled_partition<8>(b);
  o[0] = kt_cg_erased(b);
  o[1] = kt_cg_erased(t8);
  o[2] = kt_cg_erased(cg::tiled_partition(b, 16));
  o[3] = kt_cg_erased(cg::coalesced_threads());
  cg::coalesced_group p = cg::binary_partition(t, v & 1);
  o[4] = (int)p.size();
  o[5] = (int)p.thread_rank();
  if (v & 1) {
    o[6] = cg::reduce(p, v, cg::plus<int>());
    o[7] = cg::reduce(p, v, cg::greater<int>());
  } else {
    o[6] = cg::reduce(p, v, cg::plus<int>());
    o[7] = cg::reduce(p, v, cg::greater<int>());
  }
  o[8] = p.shfl(v, 0);
  t.sync();
  cg::coalesced_group q = cg::labeled_partition(t, v % 3);
  o[9] = (int)q.size();
  o[10] = (int)q.thread_rank();
  o[11] = cg::reduce(q, v, cg::plus<int>());
  o[12] = q.shfl(v, q.size() - 1);
  cg::coalesced_group pq = cg::labeled_partition(p, (unsigned)(v % 3));
  o[13] = (int)pq.size();
  o[14] = cg::reduce(pq, v, cg::plus<int>());
  kt_cg_summax s;
  s.sum = v;
  s.max = v;
  s.tag = (short)(1 << t8.thread_rank());
  s = cg::reduce(t8, s, kt_cg_summax_op());
  o[15] = s.sum;
  o[16] = s.max;
  o[17] = s.tag;
  kt_cg_quad q4;
  q4.x = v, q4.y = v + 1, q4.z = v + 2, q4.w = v + 3;
  o[18] = t8.shfl(q4, (int)t8.thread_rank() + 1).z;
  o[19] = t8.shfl_down(q4, 1u).y;
  o[20] = t8.shfl_xor(q4, 1).w;
  o[21] = t8.shfl_up(q4, 1u).x;
  o[22] = gp_shfl_xor(q4, 1).y;
  kt_cg_three_shorts s6;
  s6.a = (short)v, s6.b = (short)(2 * v), s6.c = (short)(3 * v);
  o[23] = gp_shfl(s6, 0, 8).c;
  const gp_lane_mask_t m = gp_ballot_sync(t.lanes(), v & 1);
  const gp_lane_mask_t mine = (v & 1) ? m : t.lanes() & ~m;
  o[24] = __reduce_add_sync(mine, v) * 1000 + __reduce_min_sync(mine, v) * 10 + (int)__reduce_min_sync(mine, (unsigned)v);
  o[25] = __reduce_max_sync(mine, v) * 1000 + (int)__reduce_max_sync(mine, (unsigned)v) * 10 +
          (int)(__reduce_add_sync(mine, (unsigned)v) % 10u);
  o[26] = (int)__reduce_and_sync(mine, (unsigned)v) * 100 + (int)__reduce_or_sync(mine, (unsigned)v);
  o[27] = (int)__reduce_xor_sync(mine, (unsigned)v);
  kt_cg_summax s0;
  s0.sum = v, s0.max = v, s0.tag = 0;
  s0 = cg::reduce(p, s0, kt_cg_summax_op());
  o[28] = s0.sum;
  o[29] = s0.max;
}
GP_KERNEL_EXPORT(kt_cg_part)

/* Tiles of several warps (CUDA's block_tile_memory): blocks of 256 threads in tiles of
 * 128; out[3 * g + k] for thread g: thread_rank * 1000 + meta_group_rank * 10 +
 * meta_group_size, the tile's sum of in (reduce plus), and its maximum of a struct's
 * field (reduce of a struct). */
GP_KERNEL void kt_cg_multiwarp(const int *in, int *out) {
  GP_SHARED(cg::block_tile_memory<256>, scratch, );
  cg::thread_block b = cg::this_thread_block(scratch);
  cg::thread_block_tile<128> t = cg::tiled_partition<128>(b);
  const unsigned g = blockIdx.x * b.size() + b.thread_rank();
  const int v = in[g];
  int *o = out + 3 * g;
  o[0] = (int)t.thread_rank() * 1000 + (int)t.meta_group_rank() * 10 + (int)t.meta_group_size();
  o[1] = cg::reduce(t, v, cg::plus<int>());
  kt_cg_summax s;
  s.sum = 0, s.max = v, s.tag = 0;
  o[2] = cg::reduce(t, s, kt_cg_summax_op()).max;
  t.sync();
}
GP_KERNEL_EXPORT(kt_cg_multiwarp)

/* reduce() over a tile of several warps of a block given no block_tile_memory: the
 * launch fails (CPU) with the reason. */
GP_KERNEL void kt_cg_multiwarp_no_scratch(int *out) {
  cg::thread_block_tile<128> t = cg::tiled_partition<128>(cg::this_thread_block());
  out[threadIdx.x] = cg::reduce(t, 1, cg::plus<int>());
}
GP_KERNEL_EXPORT(kt_cg_multiwarp_no_scratch)
