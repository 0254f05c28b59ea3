// One status macro for CUDA runtime calls: records the call, file and line (IREE's
// CUDA_RETURN_IF_ERROR habit), so a failure deep in the backend reaches plait-run as one line.
#pragma once

#include <cuda_runtime_api.h>

#include "runtime/Status.h"

namespace plait::rt {

/// The Status for a failed CUDA runtime call `call` at file:line.
inline Status cudaStatus(cudaError_t err, const char *call, const char *file, int line) {
  return Status::errorf("{} failed at {}:{}: {} ({})", call, file, line,
                        cudaGetErrorString(err), cudaGetErrorName(err));
}

} // namespace plait::rt

#define PLAIT_CUDA_RETURN_IF_ERROR(expr)                                                        \
  do {                                                                                          \
    cudaError_t plait_cuda_err_ = (expr);                                                       \
    if (plait_cuda_err_ != cudaSuccess)                                                         \
      return ::plait::rt::cudaStatus(plait_cuda_err_, #expr, __FILE__, __LINE__);               \
  } while (0)
