// An owning tensor in host memory: what file readers produce and writers consume.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/Tensor.h"

namespace plait::rt {

struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes; // numel * dtypeSize(dtype), little-endian, row-major

  TensorView view() {
    return TensorView{bytes.data(), dtype, shape};
  }
  TensorView view() const { // kernels' TensorView is not const-aware; readers must not write
    return TensorView{const_cast<uint8_t *>(bytes.data()), dtype, shape};
  }
};

} // namespace plait::rt
