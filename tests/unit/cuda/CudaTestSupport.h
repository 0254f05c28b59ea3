// What the CUDA tests share: whether there is a device to run on (the device tests skip
// without one), and f32 / bf16 values as the bytes a device buffer holds (TensorBytes.h).
#pragma once

#include <vector>

#include "runtime/cuda/CudaDevice.h"
#include "tests/unit/cuda/TensorBytes.h"

namespace plait {

/// Whether the CUDA runtime lists at least one device.
inline bool haveCudaDevice() {
  std::vector<rt::CudaDeviceInfo> devices;
  return rt::listCudaDevices(devices).ok() && !devices.empty();
}

} // namespace plait
