// Device discovery for builds without the CUDA toolkit: there is never a CUDA device.
#include "runtime/cuda/CudaDevice.h"

namespace plait::rt {

bool cudaBackendBuilt() { return false; }

Status listCudaDevices(std::vector<CudaDeviceInfo> &out) {
  out.clear();
  return Status::error("no CUDA device: this plait-run was built without the CUDA toolkit");
}

} // namespace plait::rt
