// Builds without the CUDA toolkit: there is never a CUDA device, and CUDA plans are refused.
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaRun.h"

namespace plait::rt {

bool cudaBackendBuilt() { return false; }

Status listCudaDevices(std::vector<CudaDeviceInfo> &out) {
  out.clear();
  return Status::error("no CUDA device: this plait-run was built without the CUDA toolkit");
}

Status runCudaPlanOnRank(const RunOptions &, Plan &plan, Communicator &,
                         const std::vector<HostTensor> &, std::string &) {
  return Status::errorf("{}: compiled for --device cuda: no CUDA device (this plait-run was "
                        "built without the CUDA toolkit)",
                        plan.path);
}

} // namespace plait::rt
