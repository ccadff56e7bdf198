/*
 * kt_cg.cu - gpuport/cooperative_groups.h for test/test_dialect.c: every member of a
 * tile of each size (1 .. the warp width), the block and run-time tiles, the coalesced
 * group of a partial warp, and the grid's sync in a cooperative launch.
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
