// listCudaDevices and runCudaPlanOnRank where plait is built with the CUDA toolkit: they open
// libplait-cuda.so on first use (CudaBackend.h says why) and call into it. Where it cannot be
// opened (CUDA's libraries missing, say), there is no CUDA device, and dlopen says why.
#include <dlfcn.h>

#include <filesystem>

#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/CudaRun.h"

namespace plait::rt {
namespace {

struct LoadedBackend {
  const CudaBackendEntry *entry = nullptr;
  std::string error; // why there is no entry
};

void anchor() {} // an address inside libplait-runtime.so, for dladdr

std::string backendPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&anchor), &info) && info.dli_fname && *info.dli_fname)
    return (std::filesystem::path(info.dli_fname).parent_path() / kCudaBackendLibrary).string();
  return kCudaBackendLibrary; // the loader's search path
}

LoadedBackend load() {
  LoadedBackend out;
  std::string path = backendPath();
  // Never closed: CUDA's libraries stay loaded until the process exits.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    out.error = fmt::format("cannot load the CUDA backend: {}", why ? why : path);
    return out;
  }
  using EntryFn = const CudaBackendEntry *(*)();
  auto fn = reinterpret_cast<EntryFn>(dlsym(handle, "plait_cuda_backend_entry"));
  const CudaBackendEntry *entry = fn ? fn() : nullptr;
  if (!entry || !entry->listDevices || !entry->runPlanOnRank)
    out.error = fmt::format("{} is not a plait CUDA backend", path);
  else if (entry->abi != kCudaBackendAbi)
    out.error = fmt::format("{} is from another build of plait (rebuild, or use the "
                            "libplait-cuda.so built with this libplait-runtime.so)",
                            path);
  else
    out.entry = entry;
  return out;
}

const LoadedBackend &backend() {
  static const LoadedBackend loaded = load();
  return loaded;
}

} // namespace

bool cudaBackendBuilt() { return true; }

Status listCudaDevices(std::vector<CudaDeviceInfo> &out) {
  out.clear();
  const LoadedBackend &b = backend();
  if (!b.entry)
    return Status::errorf("no CUDA device: {}", b.error);
  return b.entry->listDevices(out);
}

Status runCudaPlanOnRank(const RunOptions &options, Plan &plan, Communicator &comm,
                         const std::vector<HostTensor> &inputs, std::string &summary) {
  const LoadedBackend &b = backend();
  if (!b.entry)
    return Status::errorf("{}: compiled for --device cuda: no CUDA device ({})", plan.path,
                          b.error);
  return b.entry->runPlanOnRank(options, plan, comm, inputs, summary);
}

} // namespace plait::rt
