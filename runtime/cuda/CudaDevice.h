// CUDA device discovery for the runtime: what plait-run --list-devices prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/Status.h"

namespace plait::rt {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;      // compute capability
  uint64_t memoryBytes = 0;
  int multiprocessors = 0;
};

/// Lists the CUDA devices. Where the driver or a GPU is missing, returns an error whose
/// message starts with "no CUDA device" and gives CUDA's reason.
Status listCudaDevices(std::vector<CudaDeviceInfo> &out);

/// Whether this runtime was built with the CUDA toolkit.
bool cudaBackendBuilt();

} // namespace plait::rt
