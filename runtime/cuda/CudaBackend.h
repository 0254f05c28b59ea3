// The boundary between the runtime and its CUDA backend. The backend (every runtime/cuda/*.cpp
// but the loader, and the device kernels) is its own shared library, libplait-cuda.so, beside
// libplait-runtime.so. The runtime opens it the first time a CUDA device or a CUDA plan is asked
// for (CudaBackendLoader.cpp), so that a CPU run never loads CUDA's libraries: loading cuBLASLt,
// cuDNN and NCCL took 0.34 s and 213 MB per process, on every rank of every run, and a machine
// without them could not start plait-run at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/Plan.h"
#include "runtime/RunPlan.h"
#include "runtime/Status.h"
#include "runtime/comm/Comm.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/io/HostTensor.h"

namespace plait::rt {

/// The file name of the backend, looked for in the folder of libplait-runtime.so.
inline constexpr const char *kCudaBackendLibrary = "libplait-cuda.so";

/// Changes when an entry point's signature does, and with the sizes of the types the entry
/// points share, so that a backend from another build is refused instead of misread.
inline constexpr uint64_t kCudaBackendAbi =
    (uint64_t{1} << 48) ^ (uint64_t{sizeof(RunOptions)} << 32) ^
    (uint64_t{sizeof(Plan)} << 16) ^ uint64_t{sizeof(HostTensor)};

/// What libplait-cuda.so hands the runtime.
struct CudaBackendEntry {
  uint64_t abi = kCudaBackendAbi;
  Status (*listDevices)(std::vector<CudaDeviceInfo> &out) = nullptr;
  Status (*runPlanOnRank)(const RunOptions &options, Plan &plan, Communicator &comm,
                          const std::vector<HostTensor> &inputs, std::string &summary) = nullptr;
};

/// The backend's side of listCudaDevices (CudaDevice.cpp) and runCudaPlanOnRank (CudaRun.cpp).
namespace cuda_backend {
Status listDevices(std::vector<CudaDeviceInfo> &out);
Status runPlanOnRank(const RunOptions &options, Plan &plan, Communicator &comm,
                     const std::vector<HostTensor> &inputs, std::string &summary);
} // namespace cuda_backend

} // namespace plait::rt

/// The one symbol the loader looks up in libplait-cuda.so (CudaBackendEntry.cpp).
extern "C" const plait::rt::CudaBackendEntry *plait_cuda_backend_entry();
