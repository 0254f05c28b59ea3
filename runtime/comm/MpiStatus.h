// One status macro for MPI calls: records the call, file and line (as CudaStatus.h does for
// CUDA), so that an MPI failure reaches plait-run as one line instead of an MPI abort.
#pragma once

#include <mpi.h>

#include "runtime/Status.h"

namespace plait::rt {

/// The Status for a failed MPI call `call` at file:line.
inline Status mpiStatus(int err, const char *call, const char *file, int line) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(err, text, &length) != MPI_SUCCESS)
    length = 0;
  return Status::internal(fmt::format("{} failed at {}:{}: {}", call, file, line,
                                      length ? std::string(text, size_t(length))
                                             : fmt::format("MPI error {}", err)));
}

} // namespace plait::rt

#define PLAIT_MPI_RETURN_IF_ERROR(expr)                                                         \
  do {                                                                                          \
    int plait_mpi_err_ = (expr);                                                                \
    if (plait_mpi_err_ != MPI_SUCCESS)                                                          \
      return ::plait::rt::mpiStatus(plait_mpi_err_, #expr, __FILE__, __LINE__);                 \
  } while (0)
