/*
 * transpose.cu - out = in^T through a shared-memory tile (the classic coalesced
 * transpose), for any matrix size.
 *
 * Decomposition
 *   grid   ceil(cols / TILE) x ceil(rows / TILE) blocks; block (bx, by) owns the tile
 *          of rows by*TILE.., columns bx*TILE.. of in.
 *   block  TILE x TILE_ROWS threads (32 x 8): each thread loads TILE / TILE_ROWS = 4 rows
 *          of the tile with reads along rows, the block meets at a barrier, and writes
 *          the tile transposed with writes along rows of out. The tile has one padding
 *          column so that reading a column touches every shared-memory bank once.
 *          TILE is a tile size, not the warp width: the kernel is right at any width.
 */
#include <gpuport/kernel.h>

#define TILE 32
#define TILE_ROWS 8

GP_KERNEL void transpose_tiled(int rows, int cols, const float *in, float *out) {
  GP_SHARED(float, tile, [TILE][TILE + 1]);
  int x = (int)(blockIdx.x * TILE + threadIdx.x);
  int y = (int)(blockIdx.y * TILE + threadIdx.y);
  for (int j = 0; j < TILE; j += TILE_ROWS)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * cols + x];
  __syncthreads();
  x = (int)(blockIdx.y * TILE + threadIdx.x);
  y = (int)(blockIdx.x * TILE + threadIdx.y);
  for (int j = 0; j < TILE; j += TILE_ROWS)
    if (x < rows && y + j < cols) out[(size_t)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
GP_KERNEL_EXPORT(transpose_tiled)
