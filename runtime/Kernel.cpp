// The kernel registry and attribute accessors shared by every backend.
#include "runtime/Kernel.h"

#include <mutex>

namespace plait::rt {

int64_t Attrs::getInt(std::string_view name, int64_t dflt) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return dflt;
  if (!it->second.ints.empty())
    return it->second.ints.front();
  if (!it->second.floats.empty())
    return static_cast<int64_t>(it->second.floats.front());
  return dflt;
}

double Attrs::getFloat(std::string_view name, double dflt) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return dflt;
  if (!it->second.floats.empty())
    return it->second.floats.front();
  if (!it->second.ints.empty())
    return static_cast<double>(it->second.ints.front());
  return dflt;
}

std::vector<int64_t> Attrs::getInts(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<int64_t>{} : it->second.ints;
}

std::string Attrs::getStr(std::string_view name, std::string_view dflt) const {
  auto it = values_.find(name);
  // An attribute that carries numbers is not a string attribute: fall back to the default.
  if (it == values_.end() || (it->second.str.empty() &&
                              (!it->second.ints.empty() || !it->second.floats.empty())))
    return std::string(dflt);
  return it->second.str;
}

namespace {

struct KernelRegistry {
  std::mutex mutex;
  std::map<std::string, KernelFn, std::less<>> kernels;
};

KernelRegistry &registry() {
  static KernelRegistry r;
  return r;
}

// registerCpuKernels() calls registerKernel(), so registerKernel() must not come back here.
void ensureCpuKernelsRegistered() {
  static std::once_flag once;
  std::call_once(once, registerCpuKernels);
}

} // namespace

void registerKernel(std::string_view name, KernelFn fn) {
  KernelRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.kernels[std::string(name)] = fn;
}

KernelFn findKernel(std::string_view name) {
  ensureCpuKernelsRegistered();
  KernelRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.kernels.find(name);
  return it == r.kernels.end() ? nullptr : it->second;
}

std::vector<std::string> kernelNames() {
  ensureCpuKernelsRegistered();
  KernelRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  names.reserve(r.kernels.size());
  for (const auto &entry : r.kernels)
    names.push_back(entry.first);
  return names; // std::map keeps them sorted
}

} // namespace plait::rt
