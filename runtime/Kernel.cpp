// The kernel registry shared by every backend.
#include "runtime/Kernel.h"

#include <map>
#include <mutex>

namespace plait::rt {

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
