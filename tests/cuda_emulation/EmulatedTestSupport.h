// What the emulated kernel tests share: operands drawn at random in any float type, a
// tensor's bytes as a kernel's device operand, and a bit-for-bit comparison that names the
// first element that differs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tests/unit/kernels/KernelTestSupport.h"

namespace plait::emulated_test {

using rt::DType;
using rt::test::OwnedTensor;

/// `n` values uniform in [lo, hi) as `dtype` holds them, as an owned tensor of `shape`.
inline OwnedTensor randomTensor(std::mt19937 &rng, DType dtype, std::vector<int64_t> shape,
                                double lo, double hi) {
  OwnedTensor f32 = rt::test::randomFloats(shape, uint32_t(rng()), lo, hi);
  return dtype == DType::F32 ? f32 : rt::test::runOk("cast", {f32}, dtype, shape);
}

/// A tensor's bytes, owned (a kernel's operand on the emulated device).
inline std::vector<uint8_t> bytes(const OwnedTensor &t) {
  return std::vector<uint8_t>(t.bytes.begin(), t.bytes.begin() + t.view.bytes());
}

/// got (a CUDA kernel's result, any float dtype: f64 too) bit for bit the CPU kernel's `want`
/// (the same arithmetic on the same operands); the first element that differs reported.
inline void expectSameBits(const char *what, const OwnedTensor &got, const OwnedTensor &want) {
  ASSERT_EQ(got.view.bytes(), want.view.bytes()) << what;
  if (std::memcmp(got.bytes.data(), want.bytes.data(), want.view.bytes()) == 0)
    return;
  std::vector<double> g = got.doubles(), w = want.doubles();
  for (size_t i = 0; i < g.size(); ++i)
    if (std::memcmp(&g[i], &w[i], sizeof(double)) != 0) {
      ADD_FAILURE() << what << ": the bits differ first at [" << i << "]: " << g[i] << ", expected "
                    << w[i];
      return;
    }
}

} // namespace plait::emulated_test
