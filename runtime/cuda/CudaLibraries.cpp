// cuBLASLt and cuDNN handles, and the library status messages of CudaStatus.h.
#include "runtime/cuda/CudaLibraries.h"

#include <cublasLt.h>
#include <cudnn.h>
#include <nccl.h>

#include "runtime/cuda/CudaStatus.h"

namespace plait::rt {

Status cublasStatus(int status, const char *call, const char *file, int line) {
  auto s = static_cast<cublasStatus_t>(status);
  return Status::errorf("{} failed at {}:{}: {} ({})", call, file, line,
                        cublasLtGetStatusString(s), cublasLtGetStatusName(s));
}

Status cudnnStatus(int status, const char *call, const char *file, int line) {
  return Status::errorf("{} failed at {}:{}: {}", call, file, line,
                        cudnnGetErrorString(static_cast<cudnnStatus_t>(status)));
}

Status ncclStatus(int result, const char *call, const char *file, int line) {
  return Status::errorf("{} failed at {}:{}: {}", call, file, line,
                        ncclGetErrorString(static_cast<ncclResult_t>(result)));
}

Status CudaLibraries::create(cudaStream_t stream, uint64_t workspaceBytes,
                             std::unique_ptr<CudaLibraries> &out) {
  std::unique_ptr<CudaLibraries> libraries(new CudaLibraries());
  PLAIT_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&libraries->cublasLt_));
  PLAIT_CUDNN_RETURN_IF_ERROR(cudnnCreate(&libraries->cudnn_));
  PLAIT_CUDNN_RETURN_IF_ERROR(cudnnSetStream(libraries->cudnn_, stream));
  if (workspaceBytes > 0)
    PLAIT_CUDA_RETURN_IF_ERROR(cudaMalloc(&libraries->workspace_, workspaceBytes));
  libraries->workspaceBytes_ = workspaceBytes;
  out = std::move(libraries);
  return {};
}

CudaLibraries::~CudaLibraries() {
  // Teardown errors have nowhere to go: the executor is being destroyed.
  if (workspace_)
    (void)cudaFree(workspace_);
  if (cudnn_)
    (void)cudnnDestroy(cudnn_);
  if (cublasLt_)
    (void)cublasLtDestroy(cublasLt_);
}

} // namespace plait::rt
