// Check macro for NCCL calls, the twin of cuda_check.h: file:line, the call, ncclGetErrorString
// and, where NCCL has one, its last detailed error (ncclGetLastError). Internal to gpu/.
#pragma once

#include <nccl.h>

#include <string>

#include "base/status.h"

namespace sluice::gpu::internal {

std::string NcclErrorMessage(ncclResult_t res, const char* call, const char* file, int line);

}  // namespace sluice::gpu::internal

#define SLUICE_NCCL_RETURN_IF_ERROR(call)                                                      \
  do {                                                                                         \
    const ncclResult_t _sluice_res = (call);                                                   \
    if (_sluice_res != ncclSuccess)                                                            \
      return ::sluice::Status::IOError(                                                        \
          ::sluice::gpu::internal::NcclErrorMessage(_sluice_res, #call, __FILE__, __LINE__));  \
  } while (0)
