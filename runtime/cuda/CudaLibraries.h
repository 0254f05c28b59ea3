// The vendor libraries one CUDA executor uses: a cuBLASLt handle, a cuDNN handle bound to the
// compute stream, and one device workspace they share (sized once at create(), never grown
// during a step).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "runtime/Status.h"

struct cublasLtContext;
struct cudnnContext;

namespace plait::rt {

class CudaLibraries {
public:
  /// Creates the handles (cuDNN's on `stream`) and a workspace of `workspaceBytes`.
  static Status create(cudaStream_t stream, uint64_t workspaceBytes,
                       std::unique_ptr<CudaLibraries> &out);
  ~CudaLibraries();
  CudaLibraries(const CudaLibraries &) = delete;
  CudaLibraries &operator=(const CudaLibraries &) = delete;

  cublasLtContext *cublasLt() const { return cublasLt_; }
  cudnnContext *cudnn() const { return cudnn_; }
  void *workspace() const { return workspace_; }
  uint64_t workspaceBytes() const { return workspaceBytes_; }

  /// The bytes of library workspace every executor reserves: cuBLASLt's recommendation for
  /// Hopper (32 MiB) plus room for cuDNN's convolution algorithms.
  static constexpr uint64_t kDefaultWorkspaceBytes = 64ull << 20;

private:
  CudaLibraries() = default;
  cublasLtContext *cublasLt_ = nullptr;
  cudnnContext *cudnn_ = nullptr;
  void *workspace_ = nullptr;
  uint64_t workspaceBytes_ = 0;
};

} // namespace plait::rt
