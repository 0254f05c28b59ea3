// f32 / bf16 values as the bytes a device buffer holds: shared by the CUDA tests on a device
// (tests/unit/cuda) and under the emulation (tests/cuda_emulation).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/Tensor.h"

namespace plait {

/// Bytes of `n` elements of `dtype`.
inline size_t bytesOf(rt::DType dtype, size_t n) { return n * rt::dtypeSize(dtype); }

/// `x` stored as `dtype` (f32 or bf16, rounded to nearest even).
inline std::vector<uint8_t> encode(rt::DType dtype, const std::vector<float> &x) {
  std::vector<uint8_t> bytes(bytesOf(dtype, x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    if (dtype == rt::DType::BF16) {
      uint16_t b = rt::floatToBf16(x[i]);
      std::memcpy(bytes.data() + 2 * i, &b, 2);
    } else {
      std::memcpy(bytes.data() + 4 * i, &x[i], 4);
    }
  }
  return bytes;
}

/// The f32, bf16 or f16 elements in `bytes`, as floats.
inline std::vector<float> decode(rt::DType dtype, const std::vector<uint8_t> &bytes) {
  const bool half = dtype == rt::DType::BF16 || dtype == rt::DType::F16;
  std::vector<float> x(bytes.size() / (half ? 2 : 4));
  for (size_t i = 0; i < x.size(); ++i) {
    if (half) {
      uint16_t b;
      std::memcpy(&b, bytes.data() + 2 * i, 2);
      x[i] = dtype == rt::DType::BF16 ? rt::bf16ToFloat(b) : rt::f16ToFloat(b);
    } else {
      std::memcpy(&x[i], bytes.data() + 4 * i, 4);
    }
  }
  return x;
}

} // namespace plait
