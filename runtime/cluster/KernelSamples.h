// The synthetic kernel calls plait-calibrate times per kernel class (ClusterSpec's
// kKernelClassNames): each class's kernels and variants, and their operands on the host,
// shaped as plans shape them. Shared by the CPU measurements (Calibrate.cpp) and the CUDA ones
// (CalibrateCuda.cpp), which copy the same operands to the device.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/Attrs.h"
#include "runtime/Tensor.h"

namespace plait::cluster {

/// The calibrations' small helpers: this host's name, today's date (UTC, YYYY-MM-DD), `x`
/// rounded to the 4 significant digits a measurement can claim (the double nearest that
/// decimal, which a spec then prints as written), the median of `values`.
std::string hostName();
std::string today();
double significant(double x);
double median(std::vector<double> values);

/// A number in [0, 1) that looks random in i (splitmix64's finaliser): neighbours compare
/// either way with even odds, as a max pool's window or a where's condition meets real data.
float scattered(uint64_t i);

/// Synthetic operands and results of one kernel call, owning their (host) bytes.
struct KernelOperands {
  std::vector<std::vector<uint8_t>> storage;
  std::vector<rt::TensorView> inputs, outputs;
  rt::Attrs attrs;
  std::vector<uint8_t> workspace;
  uint8_t *aligned = nullptr;
  uint64_t workspaceBytes = 0;
  /// What the cost model counts for this call: its elements (for the per-element term) and
  /// its rows (KernelRate's nsPerRow: rows of a row-wise kernel, GEMMs of a matmul).
  int64_t elements = 0, rows = 0;

  /// A tensor of `shape` in (value, value + 0.5), scattered; a scalar is `value` itself.
  rt::TensorView make(rt::DType dtype, std::vector<int64_t> shape, float value);
  void in(rt::DType dtype, std::vector<int64_t> shape, float value = 0.5f) {
    inputs.push_back(make(dtype, std::move(shape), value));
  }
  void out(rt::DType dtype, std::vector<int64_t> shape) {
    outputs.push_back(make(dtype, std::move(shape), 0));
  }
  void ints(const char *name, std::vector<int64_t> values) {
    attrs.set(name, rt::AttrValue{std::move(values), {}, {}});
  }
  /// The CPU kernel's workspace (kernelWorkspaceBytes), aligned.
  void allocateWorkspace(std::string_view kernel);
};

/// The registered kernel a timed variant runs ("pow_square" is pow with a scalar exponent).
std::string registered(const std::string &variant);

/// The operands of `kernel` (a registered kernel or a variant) for `elements` f32 elements
/// (a multiple of 256); see KernelSamples.cpp for the shapes.
void kernelOperands(const std::string &kernel, int64_t elements, KernelOperands &k);

/// Each class (cluster::kKernelClassNames) and the kernels timed for it.
struct KernelClass {
  const char *name;
  std::vector<std::string> kernels;
};
const std::vector<KernelClass> &kernelClasses();

} // namespace plait::cluster
