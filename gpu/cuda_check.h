// Check macros for every CUDA runtime call (llm.c's habit): a failure names file:line, the call
// and the runtime's own error string. Internal to gpu/: it includes the CUDA headers, so only
// gpu/*.cc and *.cu include it, never a public header.
//
// Two forms, because library code never exits:
//   SLUICE_CUDA_RETURN_IF_ERROR(call)  in functions returning Status (every recoverable path)
//   SLUICE_CUDA_LOG_IF_ERROR(call)     in destructors and cleanup, where there is no one to return
//                                      to: prints the same line on stderr and carries on
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "base/status.h"

namespace sluice::gpu::internal {

// "gpu/feeder.cc:120: cudaMemcpyAsync(...): invalid argument (cudaErrorInvalidValue = 1)"
std::string CudaErrorMessage(cudaError_t err, const char* call, const char* file, int line);
void LogCudaError(cudaError_t err, const char* call, const char* file, int line);

}  // namespace sluice::gpu::internal

#define SLUICE_CUDA_RETURN_IF_ERROR(call)                                                      \
  do {                                                                                         \
    const cudaError_t _sluice_err = (call);                                                    \
    if (_sluice_err != cudaSuccess)                                                            \
      return ::sluice::Status::IOError(                                                        \
          ::sluice::gpu::internal::CudaErrorMessage(_sluice_err, #call, __FILE__, __LINE__));  \
  } while (0)

#define SLUICE_CUDA_LOG_IF_ERROR(call)                                                         \
  do {                                                                                         \
    const cudaError_t _sluice_err = (call);                                                    \
    if (_sluice_err != cudaSuccess)                                                            \
      ::sluice::gpu::internal::LogCudaError(_sluice_err, #call, __FILE__, __LINE__);           \
  } while (0)
