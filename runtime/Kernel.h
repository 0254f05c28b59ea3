// The contract between the executor and the CPU kernels: one function per plait op.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/Status.h"
#include "runtime/Tensor.h"

namespace plait::rt {

/// One attribute of an instruction, decoded from the plan (plan.fbs `Attr`).
struct AttrValue {
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string str;
};

/// Attributes of one instruction, by name. Names are the ODS attribute names in
/// ir/PlaitOps.td; a DefaultValuedAttr may be absent, so kernels pass the ODS default.
class Attrs {
public:
  void set(std::string name, AttrValue v) { values_[std::move(name)] = std::move(v); }
  bool has(std::string_view name) const { return values_.count(std::string(name)) != 0; }
  int64_t getInt(std::string_view name, int64_t dflt) const;
  bool getBool(std::string_view name, bool dflt) const { return getInt(name, dflt) != 0; }
  double getFloat(std::string_view name, double dflt) const;
  std::vector<int64_t> getInts(std::string_view name) const; // empty when absent
  std::string getStr(std::string_view name, std::string_view dflt) const;

private:
  std::map<std::string, AttrValue, std::less<>> values_;
};

/// Arguments of one kernel invocation. Optional trailing operands are absent from `inputs`.
struct KernelCall {
  const std::vector<TensorView> &inputs;
  std::vector<TensorView> &outputs;   // shapes and dtypes set by the plan; kernels fill data
  const Attrs &attrs;
  /// The rank running the plan and the plan's world size: what makes a rank-dependent
  /// kernel (local_shard picks this rank's chunk) differ between ranks of one SPMD plan.
  uint32_t rank = 0;
  uint32_t worldSize = 1;
};

using KernelFn = Status (*)(const KernelCall &call);

/// The kernel registered under `name` (the op mnemonic, e.g. "matmul"), or nullptr.
KernelFn findKernel(std::string_view name);

/// Names of every registered kernel (for diagnostics and tests).
std::vector<std::string> kernelNames();

/// Registers a kernel. Called only from registerCpuKernels(); no static registrars, so
/// that linking the kernels from a static library cannot silently drop any.
void registerKernel(std::string_view name, KernelFn fn);

/// Defined in runtime/cpu/Kernels.cpp: registers every CPU kernel. findKernel() calls it
/// once (thread-safe) before the first lookup.
void registerCpuKernels();

} // namespace plait::rt
