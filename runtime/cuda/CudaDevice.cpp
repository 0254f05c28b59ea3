// CUDA device discovery through the CUDA runtime API (compiled wherever the toolkit is), for
// listCudaDevices (CudaBackendLoader.cpp).
#include "runtime/cuda/CudaBackend.h"

#include "runtime/cuda/CudaStatus.h"

namespace plait::rt {

Status cuda_backend::listDevices(std::vector<CudaDeviceInfo> &out) {
  out.clear();
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  // Without a driver or GPU this fails (e.g. "CUDA driver version is insufficient"): that
  // is the expected state of a CPU-only machine, reported as such rather than as a failure.
  if (err != cudaSuccess)
    return Status::errorf("no CUDA device: {} ({})", cudaGetErrorString(err),
                          cudaGetErrorName(err));
  if (count == 0)
    return Status::error("no CUDA device: the driver reports 0 devices");
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    PLAIT_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, i));
    out.push_back({i, prop.name, prop.major, prop.minor, static_cast<uint64_t>(prop.totalGlobalMem),
                   prop.multiProcessorCount});
  }
  return {};
}

} // namespace plait::rt
