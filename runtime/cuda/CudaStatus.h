// One status macro family for CUDA calls, the runtime API's and the driver API's: records the
// call, file and line (IREE's CUDA_RETURN_IF_ERROR habit), so a failure deep in the backend
// reaches plait-run as one line.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "runtime/Status.h"

namespace plait::rt {

/// The Status for a failed CUDA runtime call `call` at file:line.
inline Status cudaStatus(cudaError_t err, const char *call, const char *file, int line) {
  return Status::errorf("{} failed at {}:{}: {} ({})", call, file, line,
                        cudaGetErrorString(err), cudaGetErrorName(err));
}

/// The Status for a failed CUDA driver call `call` at file:line (runtime/cuda/CudaModule.cpp;
/// the error's name and text come from the driver).
Status cuStatus(CUresult result, const char *call, const char *file, int line);

} // namespace plait::rt

#define PLAIT_CUDA_RETURN_IF_ERROR(expr)                                                        \
  do {                                                                                          \
    cudaError_t plait_cuda_err_ = (expr);                                                       \
    if (plait_cuda_err_ != cudaSuccess)                                                         \
      return ::plait::rt::cudaStatus(plait_cuda_err_, #expr, __FILE__, __LINE__);               \
  } while (0)

#define PLAIT_CU_RETURN_IF_ERROR(expr)                                                          \
  do {                                                                                          \
    CUresult plait_cu_result_ = (expr);                                                         \
    if (plait_cu_result_ != CUDA_SUCCESS)                                                       \
      return ::plait::rt::cuStatus(plait_cu_result_, #expr, __FILE__, __LINE__);               \
  } while (0)
