/*
 * softmax.cu - softmax of each row of a row-major rows x cols matrix, for any warp width.
 *
 * Decomposition
 *   grid   one block per row.
 *   block  SOFTMAX_THREADS threads stride over the row three times: the maximum
 *          (gp_warp_reduce_max per warp, then across warps through shared memory), the
 *          sum of exp(x - max) (gp_warp_reduce_sum the same way), and the outputs
 *          exp(x - max) / sum.
 */
#include <gpuport/kernel.h>

#define SOFTMAX_THREADS 256

/* The block's reduction of v (op 0: max, 1: sum), every thread gets it. */
GP_DEVICE float block_reduce(float v, int op, float *scratch) {
  const unsigned lane = gp_lane_id(), warp = gp_warp_id(), warps = blockDim.x / GP_WARP_SIZE;
  v = op ? gp_warp_reduce_sum(v) : gp_warp_reduce_max(v);
  __syncthreads(); /* scratch is free: every thread has read the last result */
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = scratch[0];
  for (unsigned w = 1; w < warps; w++) r = op ? r + scratch[w] : fmaxf(r, scratch[w]);
  return r;
}

GP_KERNEL void softmax_rows(int cols, const float *in, float *out) {
  GP_SHARED(float, scratch, [SOFTMAX_THREADS / 32]);
  const float *x = in + (size_t)blockIdx.x * cols;
  float *y = out + (size_t)blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = (int)threadIdx.x; c < cols; c += (int)blockDim.x) m = fmaxf(m, x[c]);
  m = block_reduce(m, 0, scratch);
  float s = 0.0f;
  for (int c = (int)threadIdx.x; c < cols; c += (int)blockDim.x) s += expf(x[c] - m);
  s = block_reduce(s, 1, scratch);
  const float inv = 1.0f / s;
  for (int c = (int)threadIdx.x; c < cols; c += (int)blockDim.x) y[c] = expf(x[c] - m) * inv;
}
GP_KERNEL_EXPORT(softmax_rows)
