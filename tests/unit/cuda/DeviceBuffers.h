// Device memory a CUDA test allocates as it goes and frees when it ends, failed assertions
// included.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

namespace plait {

class DeviceBuffers {
public:
  DeviceBuffers() = default;
  DeviceBuffers(const DeviceBuffers &) = delete;
  DeviceBuffers &operator=(const DeviceBuffers &) = delete;
  ~DeviceBuffers() {
    for (void *p : buffers_)
      cudaFree(p);
  }

  /// `bytes` of device memory (at least one byte, so that empty operands still get a pointer);
  /// a test failure when cudaMalloc fails.
  void *alloc(size_t bytes) {
    void *p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(bytes, 1)), cudaSuccess);
    buffers_.push_back(p);
    return p;
  }

private:
  std::vector<void *> buffers_;
};

} // namespace plait
