// The SIMT layer's in-process NCCL (docs/gpu.md "The SIMT layer"): the subset of NCCL's API that
// gpu/nccl_communicator.cc uses, for ranks that are threads of one process, each on its own device
// of the CPU device backend (gpu/simt/cuda_runtime_host.h). Reached as <nccl.h> through
// gpu/simt/host_include in the SIMT build only. Own declarations with C++ linkage and NCCL's
// values (nccl.h 2.28); the real header is never included, so libnccl's C symbols cannot clash.
//
// Semantics, NCCL's where NCCL defines them:
// - Ids: ncclGetUniqueId makes a fresh id, unless NCCL_COMM_ID is set: then the id is derived from
//   that string alone, as NCCL's bootstrap derives it from the address, so every rank thread of
//   the process that reads the same NCCL_COMM_ID builds the same id on its own (what
//   NcclCommunicator does with NCCL_COMM_ID or MASTER_ADDR:MASTER_PORT). Set it before the rank
//   threads start: NcclCommunicator::Create's setenv would race their getenv.
// - ncclCommInitRank and ncclCommSplit block until every rank has called them (split: every rank
//   of the parent, in the order of their calls), as NCCL's blocking communicators do. The device
//   of a communicator is the calling thread's current device.
// - ncclAllReduce and ncclBroadcast return at once: the collective is queued on `stream`
//   (sluice::simt::LaunchHostTask) and runs when that stream's worker reaches it, then waits
//   there until every rank's stream has reached the same collective (the n-th collective of each
//   rank of a communicator is one operation), so it overlaps other streams as NCCL's kernels do.
//   Results are deterministic: reductions run element by element over ranks 0, 1, ..., n-1 in the
//   element type; ncclAvg is that sum divided by n (integers: truncated). Buffers must be device
//   memory (cudaMalloc) of count elements; in place (sendbuff == recvbuff) is allowed.
//   Types: int8, uint8, int32, uint32, int64, uint64, float32, float64 (half and bf16: the NCCL
//   backend of sluice does not use them; refused with ncclInvalidArgument).
// - Checks a GPU would not make, each the error of the collective on every rank: ranks whose n-th
//   collectives differ (kind, count, type, op, root) are ncclInvalidUsage naming both calls.
// - Failure, bounded: a collective that cannot complete (a peer called ncclCommAbort, or
//   destroyed its communicator before issuing that collective, or SLUICE_SIMT_NCCL_TIMEOUT
//   seconds (default 120, read at ncclCommInitRank) passed without every rank arriving) fails
//   the way an NCCL kernel that traps does: the rank's device gets the sticky
//   cudaErrorLaunchFailure and the reason goes to stderr; the communicator's async error
//   (ncclCommGetAsyncError) becomes ncclRemoteError (peer gone), ncclInvalidUsage (mismatch) or
//   ncclSystemError (timeout), later calls on it return that error, and ncclGetLastError(comm)
//   describes it. Every other rank of the communicator fails the same way instead of waiting.
// - ncclCommDestroy does not wait: collectives already queued still run with their peers.
//   ncclCommAbort also cancels this rank's queued collectives (they do nothing) and makes the
//   peers' fail. Either way the handle is gone when the call returns.
// - ncclGetLastError(nullptr): the last error of an NCCL call on this thread.
#pragma once

#include <cstddef>

#include "gpu/simt/cuda_runtime_host.h"

#define NCCL_UNIQUE_ID_BYTES 128
#define NCCL_SPLIT_NOCOLOR -1

using ncclComm_t = struct ncclComm*;
struct ncclUniqueId {
  char internal[NCCL_UNIQUE_ID_BYTES];
};

enum ncclResult_t {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8,
};

enum ncclRedOp_t { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };

enum ncclDataType_t {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
};

// Not modelled: ncclCommSplit takes only a null config.
struct ncclConfig_t;

const char* ncclGetErrorString(ncclResult_t result);
const char* ncclGetLastError(ncclComm_t comm);
ncclResult_t ncclGetVersion(int* version);

ncclResult_t ncclGetUniqueId(ncclUniqueId* unique_id);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId comm_id, int rank);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error);
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
