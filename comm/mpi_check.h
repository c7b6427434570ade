// Check macro for MPI calls, the twin of cuda_check.h: file:line, the call and MPI_Error_string.
// Needs MPI_ERRORS_RETURN on the communicator (MpiCommunicator sets it), else MPI aborts first.
// Internal to comm/.
#pragma once

// The C API only: Open MPI's and MPICH's deprecated C++ bindings do not compile warning-free.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <string>

#include "base/status.h"

namespace sluice::comm::internal {

std::string MpiErrorMessage(int err, const char* call, const char* file, int line);

}  // namespace sluice::comm::internal

#define SLUICE_MPI_RETURN_IF_ERROR(call)                                                       \
  do {                                                                                         \
    const int _sluice_mpi = (call);                                                            \
    if (_sluice_mpi != MPI_SUCCESS)                                                            \
      return ::sluice::Status::IOError(                                                        \
          ::sluice::comm::internal::MpiErrorMessage(_sluice_mpi, #call, __FILE__, __LINE__));   \
  } while (0)
