// Test helpers for the CPU kernels: owned tensors, attribute builders and a kernel runner.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/Kernel.h"
#include "runtime/cpu/Parallel.h"

namespace plait::rt::test {

template <typename T> constexpr DType dtypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return DType::F32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::F64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::I64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::I32;
  else
    return DType::I1; // uint8_t
}

/// A tensor that owns its bytes; `view` points into them.
struct OwnedTensor {
  std::vector<uint8_t> bytes;
  TensorView view;

  OwnedTensor(DType dtype, std::vector<int64_t> shape) {
    view.dtype = dtype;
    view.shape = std::move(shape);
    bytes.assign(std::max<size_t>(view.bytes(), 1), 0xCD); // garbage, so unwritten shows
    view.data = bytes.data();
  }
  OwnedTensor(const OwnedTensor &o) : bytes(o.bytes), view(o.view) { view.data = bytes.data(); }
  OwnedTensor &operator=(const OwnedTensor &o) {
    bytes = o.bytes;
    view = o.view;
    view.data = bytes.data();
    return *this;
  }

  /// Elements as T (T must match the dtype's storage).
  template <typename T> std::vector<T> values() const {
    std::vector<T> out(view.numel());
    if (!out.empty())
      std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }
  /// Elements of a float tensor of any width, as float.
  std::vector<float> floats() const;
  /// Elements of a float tensor of any width, as double (f64 exactly).
  std::vector<double> doubles() const;
};

/// A tensor of dtypeOf<T>() holding `values` (uint8_t means i1).
template <typename T> OwnedTensor make(std::vector<int64_t> shape, std::vector<T> values) {
  OwnedTensor t(dtypeOf<T>(), std::move(shape));
  EXPECT_EQ((int64_t)values.size(), t.view.numel()) << "test tensor size mismatch";
  if (!values.empty())
    std::memcpy(t.bytes.data(), values.data(), values.size() * sizeof(T));
  return t;
}

/// A tensor of `dtype` holding `values` (T of the dtype's storage size).
template <typename T>
OwnedTensor makeAs(DType dtype, std::vector<int64_t> shape, std::vector<T> values) {
  OwnedTensor t(dtype, std::move(shape));
  EXPECT_EQ(sizeof(T), dtypeSize(dtype));
  EXPECT_EQ((int64_t)values.size(), t.view.numel());
  if (!values.empty())
    std::memcpy(t.bytes.data(), values.data(), values.size() * sizeof(T));
  return t;
}

/// `count` values (i % mod + offset) * scale: a short repeating ramp of test data.
std::vector<double> pattern(int64_t count, int mod, double offset, double scale);

/// A float tensor of any float dtype (bf16/f16 rounded from `values`).
OwnedTensor makeFloat(DType dtype, std::vector<int64_t> shape, const std::vector<double> &values);

/// A float tensor's values in another float dtype: bf16/f16 widened to f32 exactly, f32
/// rounded to bf16/f16 as a cast rounds (the staged kernels' reference in the half tests).
OwnedTensor convertedTo(DType dtype, const OwnedTensor &t);

/// An f32 tensor of values uniform in [lo, hi), from a generator seeded with `seed`.
OwnedTensor randomFloats(std::vector<int64_t> shape, uint32_t seed, double lo = -3,
                         double hi = 3);

/// Builds Attrs fluently: AttrsBuilder().i("axis", 1).ints("axes", {0}).build().
class AttrsBuilder {
public:
  AttrsBuilder &i(const std::string &name, int64_t v) { return set(name, {{v}, {}, {}}); }
  AttrsBuilder &f(const std::string &name, double v) { return set(name, {{}, {v}, {}}); }
  AttrsBuilder &ints(const std::string &name, std::vector<int64_t> v) {
    return set(name, {std::move(v), {}, {}});
  }
  AttrsBuilder &floats(const std::string &name, std::vector<double> v) {
    return set(name, {{}, std::move(v), {}});
  }
  AttrsBuilder &s(const std::string &name, std::string v) { return set(name, {{}, {}, v}); }
  Attrs build() const { return attrs_; }

private:
  AttrsBuilder &set(const std::string &name, AttrValue v) {
    attrs_.set(name, std::move(v));
    return *this;
  }
  Attrs attrs_;
};

/// The outcome of one kernel call.
struct KernelResult {
  Status status;
  std::vector<OwnedTensor> outputs;
  const OwnedTensor &out(size_t i = 0) const { return outputs.at(i); }
};

/// Calls kernel `name` on views the caller owns, with exactly the workspace that
/// kernelWorkspaceBytes (runtime/cpu/Workspace.h) declares for them, and expects a kernel that
/// succeeds to have used all of it: the plan writer and the loader size workspaces with that
/// function, so it must be neither short (the kernel would fail) nor generous. Where the
/// allocation counter is linked in (not in sanitizer builds), a kernel that succeeds must
/// also have allocated nothing.
Status callKernel(const std::string &name, std::vector<TensorView> &inputs,
                  std::vector<TensorView> &outputs, const Attrs &attrs);

/// Called by callKernel after a kernel call succeeds, with a copy of the inputs as they were
/// before the call, the call's results and its attributes: tests/cuda_emulation runs the CUDA
/// kernel of the same op on them and compares. None by default.
using KernelShadow = void (*)(const std::string &name, const std::vector<TensorView> &inputs,
                              const std::vector<TensorView> &outputs, const Attrs &attrs);
void setKernelShadow(KernelShadow shadow);

/// Runs kernel `name` on `inputs`, with outputs of the given dtypes and shapes.
KernelResult runKernel(const std::string &name, const std::vector<OwnedTensor> &inputs,
                       const std::vector<std::pair<DType, std::vector<int64_t>>> &outputs,
                       const Attrs &attrs = Attrs());

/// Runs a kernel expected to succeed and returns its only output.
OwnedTensor runOk(const std::string &name, const std::vector<OwnedTensor> &inputs, DType dtype,
                  std::vector<int64_t> shape, const Attrs &attrs = Attrs());

/// The CPU kernels' threads (runtime/cpu/Parallel.h) set for one scope, 1 again after it.
struct KernelThreads {
  explicit KernelThreads(int threads) { cpu::setKernelThreads(threads); }
  ~KernelThreads() { cpu::setKernelThreads(1); }
  KernelThreads(const KernelThreads &) = delete;
  KernelThreads &operator=(const KernelThreads &) = delete;
};

/// Element-wise closeness with the suite's fp32 tolerances (rtol 1e-4, atol 1e-5).
::testing::AssertionResult allClose(const std::vector<float> &actual,
                                    const std::vector<double> &expected, double rtol = 1e-4,
                                    double atol = 1e-5);
::testing::AssertionResult allClose(const std::vector<double> &actual,
                                    const std::vector<double> &expected, double rtol = 1e-4,
                                    double atol = 1e-5);

} // namespace plait::rt::test
