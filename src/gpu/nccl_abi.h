/*
 * nccl_abi.h - the part of NCCL's public ABI (nccl.h, major version 2) that gpuport
 * calls, declared here so the library builds without NCCL or RCCL headers and loads the
 * library at run time (docs/design/COMM.md "NCCL and RCCL"). NCCL keeps this ABI stable
 * within a major version (NVIDIA/nccl#218); RCCL uses the same names, with hipStream_t
 * for cudaStream_t (both pointers, passed here as void *).
 *
 * ncclConfig_t: gpuport passes the 2.14 layout (the first version with the struct) and
 * says so in its size and version fields; NCCL copies min(size, its own) bytes and
 * takes defaults for the rest (init.cc parseCommConfig), and RCCL's struct starts the
 * same way.
 */
#ifndef GP_NCCL_ABI_H
#define GP_NCCL_ABI_H

#include <stddef.h>

#define GP__NCCL_VERSION(x, y, z) ((x) <= 2 && (y) <= 8 ? (x)*1000 + (y)*100 + (z) : (x)*10000 + (y)*100 + (z))

typedef struct gp__nccl_comm *gp__ncclComm_t;
typedef struct {
  char internal[128];
} gp__ncclUniqueId;

typedef enum {
  gp__ncclSuccess = 0,
  gp__ncclUnhandledCudaError = 1,
  gp__ncclSystemError = 2,
  gp__ncclInternalError = 3,
  gp__ncclInvalidArgument = 4,
  gp__ncclInvalidUsage = 5,
  gp__ncclRemoteError = 6,
  gp__ncclInProgress = 7,
  gp__ncclTimeout = 8 /* NCCL only */
} gp__ncclResult_t;

typedef enum {
  gp__ncclInt8 = 0,
  gp__ncclUint8 = 1,
  gp__ncclInt32 = 2,
  gp__ncclUint32 = 3,
  gp__ncclInt64 = 4,
  gp__ncclUint64 = 5,
  gp__ncclFloat16 = 6,
  gp__ncclFloat32 = 7,
  gp__ncclFloat64 = 8,
  gp__ncclBfloat16 = 9,
  gp__ncclFloat8e4m3 = 10, /* NCCL 2.24+, OCP encoding (RCCL: FNUZ, not ours) */
  gp__ncclFloat8e5m2 = 11
} gp__ncclDataType_t;

typedef enum {
  gp__ncclSum = 0,
  gp__ncclProd = 1,
  gp__ncclMax = 2,
  gp__ncclMin = 3,
  gp__ncclAvg = 4
} gp__ncclRedOp_t;

#define GP__NCCL_CONFIG_MAGIC 0xcafebeefu
#define GP__NCCL_CONFIG_UNDEF_INT (-2147483647 - 1) /* INT_MIN */
#define GP__NCCL_SPLIT_NOCOLOR (-1)

/* ncclConfig_t as of NCCL 2.14 (ncclConfig_v21400). */
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char *netName;
} gp__ncclConfig_t;

typedef gp__ncclResult_t (*gp__ncclGetVersion_fn)(int *version);
typedef gp__ncclResult_t (*gp__ncclGetUniqueId_fn)(gp__ncclUniqueId *id);
typedef gp__ncclResult_t (*gp__ncclCommInitRankConfig_fn)(gp__ncclComm_t *comm, int nranks,
                                                          gp__ncclUniqueId id, int rank,
                                                          gp__ncclConfig_t *config);
typedef gp__ncclResult_t (*gp__ncclComm_fn)(gp__ncclComm_t comm); /* Finalize, Destroy, Abort */
typedef gp__ncclResult_t (*gp__ncclCommGetAsyncError_fn)(gp__ncclComm_t comm, gp__ncclResult_t *err);
typedef gp__ncclResult_t (*gp__ncclCommInt_fn)(const gp__ncclComm_t comm, int *v); /* Count, CuDevice, UserRank */
typedef gp__ncclResult_t (*gp__ncclCommSplit_fn)(gp__ncclComm_t comm, int color, int key,
                                                 gp__ncclComm_t *newcomm, gp__ncclConfig_t *config);
typedef const char *(*gp__ncclGetErrorString_fn)(gp__ncclResult_t r);
typedef const char *(*gp__ncclGetLastError_fn)(gp__ncclComm_t comm);
typedef gp__ncclResult_t (*gp__ncclGroup_fn)(void);
typedef gp__ncclResult_t (*gp__ncclAllReduce_fn)(const void *send, void *recv, size_t count,
                                                 gp__ncclDataType_t t, gp__ncclRedOp_t op,
                                                 gp__ncclComm_t comm, void *stream);
typedef gp__ncclResult_t (*gp__ncclBroadcast_fn)(const void *send, void *recv, size_t count,
                                                 gp__ncclDataType_t t, int root,
                                                 gp__ncclComm_t comm, void *stream);
typedef gp__ncclResult_t (*gp__ncclReduce_fn)(const void *send, void *recv, size_t count,
                                              gp__ncclDataType_t t, gp__ncclRedOp_t op, int root,
                                              gp__ncclComm_t comm, void *stream);
typedef gp__ncclResult_t (*gp__ncclAllGather_fn)(const void *send, void *recv, size_t sendcount,
                                                 gp__ncclDataType_t t, gp__ncclComm_t comm,
                                                 void *stream);
typedef gp__ncclResult_t (*gp__ncclReduceScatter_fn)(const void *send, void *recv,
                                                     size_t recvcount, gp__ncclDataType_t t,
                                                     gp__ncclRedOp_t op, gp__ncclComm_t comm,
                                                     void *stream);
typedef gp__ncclResult_t (*gp__ncclAlltoAll_fn)(const void *send, void *recv, size_t count,
                                                gp__ncclDataType_t t, gp__ncclComm_t comm,
                                                void *stream);
typedef gp__ncclResult_t (*gp__ncclSend_fn)(const void *buf, size_t count, gp__ncclDataType_t t,
                                            int peer, gp__ncclComm_t comm, void *stream);
typedef gp__ncclResult_t (*gp__ncclRecv_fn)(void *buf, size_t count, gp__ncclDataType_t t,
                                            int peer, gp__ncclComm_t comm, void *stream);

#endif /* GP_NCCL_ABI_H */
