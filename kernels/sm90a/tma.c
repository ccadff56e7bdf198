/*
 * tma.c - TMA tensor maps for the sm_90a kernels (kernels/sm90a/sm90a.h). The cuda backend
 * asks the driver (cuTensorMapEncodeTiled) through cudaGetDriverEntryPointByVersion, so
 * nothing links -lcuda and the library loads where no driver is installed; the cpu
 * backend fills the description its emulation of cp.async.bulk.tensor reads
 * (gpuport/nv_wgmma.h). Both check the same rules first, so a map the emulation accepts
 * is one the driver accepts. Built for the backends that run the sm_90a family (cuda, cpu).
 */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "kernels/sm90a/sm90a.h"

#if defined(GP_BUILD_CUDA)
#include <cuda.h>
#include <cuda_runtime_api.h>

typedef CUresult (*encode_fn_t)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
#endif

#define WHY(...) (snprintf(why, why_len, __VA_ARGS__), GP_ERROR_INVALID_VALUE)

/* The rules of cuTensorMapEncodeTiled this project relies on (CUDA driver API docs). */
static gp_status_t check(unsigned elem_bytes, unsigned rank, const void *base, const uint64_t *dims,
                         const uint64_t *strides, const uint32_t *box, int swizzle, char *why, size_t why_len) {
  if (elem_bytes != 2 && elem_bytes != 4) return WHY("element size %u", elem_bytes);
  if (rank < 2 || rank > 3) return WHY("rank %u (2 or 3)", rank);
  if (!base || ((uintptr_t)base & 15u)) return WHY("base %p not 16-byte aligned", base);
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128) return WHY("swizzle %d", swizzle);
  for (unsigned d = 0; d < rank; d++) {
    if (dims[d] == 0 || dims[d] > (1ull << 32)) return WHY("extent %u is %llu", d, (unsigned long long)dims[d]);
    if (box[d] == 0 || box[d] > 256) return WHY("box extent %u is %u", d, box[d]);
    if (d > 0 && (strides[d - 1] % 16 || strides[d - 1] >= (1ull << 40)))
      return WHY("stride of dimension %u is %llu bytes", d, (unsigned long long)strides[d - 1]);
  }
  if (box[0] * elem_bytes % 16) return WHY("innermost box of %u bytes", box[0] * elem_bytes);
  if (swizzle && box[0] * elem_bytes != (unsigned)swizzle)
    return WHY("swizzled innermost box of %u bytes (must be %d)", box[0] * elem_bytes, swizzle);
  return GP_SUCCESS;
}

gp_status_t gp__nv_tensor_map_make(gp_nv_tensor_map_t *tm, unsigned elem_bytes, unsigned rank, const void *base,
                                   const uint64_t *dims, const uint64_t *strides, const uint32_t *box, int swizzle,
                                   char *why, size_t why_len) {
  GP__TRY(check(elem_bytes, rank, base, dims, strides, box, swizzle, why, why_len));
  memset(tm, 0, sizeof *tm);
#if defined(GP_BUILD_CPU)
  gp__nv_tmap_cpu_t t;
  memset(&t, 0, sizeof t);
  t.magic = GP__NV_TMAP_MAGIC;
  t.base = base;
  t.elem_bytes = elem_bytes;
  t.rank = rank;
  t.swizzle = (uint32_t)swizzle;
  for (unsigned d = 0; d < 3; d++) {
    t.dim[d] = d < rank ? dims[d] : 1;
    t.box[d] = d < rank ? box[d] : 1;
    t.stride[d] = d > 0 && d < rank ? strides[d - 1] : 0;
  }
  memcpy(tm, &t, sizeof t);
  return GP_SUCCESS;
#else
  static encode_fn_t fn;
  if (!fn) {
    void *p = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !p) {
      snprintf(why, why_len, "cuTensorMapEncodeTiled unavailable (%s)", cudaGetErrorString(e));
      return GP_ERROR_NOT_SUPPORTED;
    }
    __atomic_store_n(&fn, (encode_fn_t)p, __ATOMIC_RELEASE);
  }
  const CUtensorMapSwizzle swz = swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                 : swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                 : swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                 : CU_TENSOR_MAP_SWIZZLE_NONE;
  const cuuint32_t estride[3] = {1, 1, 1};
  CUresult r = fn((CUtensorMap *)tm, elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                  rank, (void *)base, (const cuuint64_t *)dims, (const cuuint64_t *)strides, (const cuuint32_t *)box,
                  estride, CU_TENSOR_MAP_INTERLEAVE_NONE, swz, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return WHY("cuTensorMapEncodeTiled failed (CUresult %d)", (int)r);
  return GP_SUCCESS;
#endif
}

gp_status_t gp__nv_tensor_map_encode(gp_nv_tensor_map_t *tm, unsigned elem_bytes, unsigned rank, const void *base,
                                     const uint64_t *dims, const uint64_t *strides, const uint32_t *box, int swizzle) {
  char why[160] = "";
  const gp_status_t st = gp__nv_tensor_map_make(tm, elem_bytes, rank, base, dims, strides, box, swizzle, why, sizeof why);
  return st == GP_SUCCESS ? st : GP__ERR(st, "%s", why);
}

/* The public entry point (gpuport/nv_wgmma.h): the pointers the internal encoder takes
 * on trust are checked here. */
GP_API gp_status_t gp_nv_tensor_map_encode(gp_nv_tensor_map_t *tm, unsigned elem_bytes, unsigned rank,
                                           const void *base, const uint64_t *dims, const uint64_t *strides,
                                           const uint32_t *box, int swizzle) {
  if (!tm) return GP__ERR(GP_ERROR_INVALID_VALUE, "argument 'tm' is NULL");
  if (!dims) return GP__ERR(GP_ERROR_INVALID_VALUE, "argument 'dims' is NULL");
  if (!box) return GP__ERR(GP_ERROR_INVALID_VALUE, "argument 'box' is NULL");
  if (!strides && rank > 1) return GP__ERR(GP_ERROR_INVALID_VALUE, "argument 'strides' is NULL");
  return gp__nv_tensor_map_encode(tm, elem_bytes, rank, base, dims, strides, box, swizzle);
}
