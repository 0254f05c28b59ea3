// One status macro family for CUDA calls: the runtime API's, the driver API's, cuBLAS(Lt),
// cuDNN and NCCL. Each records the call, file and line (IREE's CUDA_RETURN_IF_ERROR habit), so
// a failure deep in the backend reaches plait-run as one line.
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

/// The Status for a failed cuBLAS / cuBLASLt, cuDNN or NCCL call (CudaLibraries.cpp; the
/// libraries' own error strings). The codes are passed as int so that this header needs
/// none of the libraries' headers.
Status cublasStatus(int status, const char *call, const char *file, int line);
Status cudnnStatus(int status, const char *call, const char *file, int line);
Status ncclStatus(int result, const char *call, const char *file, int line);

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

#define PLAIT_CUBLAS_RETURN_IF_ERROR(expr)                                                      \
  do {                                                                                          \
    int plait_cublas_status_ = int(expr);                                                       \
    if (plait_cublas_status_ != 0 /* CUBLAS_STATUS_SUCCESS */)                                  \
      return ::plait::rt::cublasStatus(plait_cublas_status_, #expr, __FILE__, __LINE__);        \
  } while (0)

#define PLAIT_CUDNN_RETURN_IF_ERROR(expr)                                                       \
  do {                                                                                          \
    int plait_cudnn_status_ = int(expr);                                                        \
    if (plait_cudnn_status_ != 0 /* CUDNN_STATUS_SUCCESS */)                                    \
      return ::plait::rt::cudnnStatus(plait_cudnn_status_, #expr, __FILE__, __LINE__);         \
  } while (0)

#define PLAIT_NCCL_RETURN_IF_ERROR(expr)                                                        \
  do {                                                                                          \
    int plait_nccl_result_ = int(expr);                                                         \
    if (plait_nccl_result_ != 0 /* ncclSuccess */)                                              \
      return ::plait::rt::ncclStatus(plait_nccl_result_, #expr, __FILE__, __LINE__);           \
  } while (0)

/// A kernel launch (<<<...>>>) reports configuration errors only through cudaGetLastError.
#define PLAIT_CUDA_RETURN_IF_LAUNCH_FAILED() PLAIT_CUDA_RETURN_IF_ERROR(cudaGetLastError())
