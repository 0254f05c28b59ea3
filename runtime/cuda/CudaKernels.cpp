// The CUDA kernel registry and the helpers of CudaKernelSupport.h.
#include <map>
#include <mutex>

#include "runtime/cuda/CudaKernelSupport.h"

namespace plait::rt {
namespace {

struct CudaKernelRegistry {
  std::mutex mutex;
  std::map<std::string, CudaKernelFn, std::less<>> kernels;
};

CudaKernelRegistry &registry() {
  static CudaKernelRegistry r;
  return r;
}

void ensureRegistered() {
  static std::once_flag once;
  std::call_once(once, registerCudaKernels);
}

} // namespace

void registerCudaKernels() {
  registerCudaElementwiseKernels();
  registerCudaReductionKernels();
  registerCudaMovementKernels();
  registerCudaOptimizerKernels();
  registerCudaLibraryKernels();
  registerCudaAttentionKernels();
}

void registerCudaKernel(std::string_view name, CudaKernelFn fn) {
  CudaKernelRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.kernels[std::string(name)] = fn;
}

CudaKernelFn findCudaKernel(std::string_view name) {
  ensureRegistered();
  CudaKernelRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.kernels.find(name);
  return it == r.kernels.end() ? nullptr : it->second;
}

std::vector<std::string> cudaKernelNames() {
  ensureRegistered();
  CudaKernelRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto &entry : r.kernels)
    names.push_back(entry.first);
  return names;
}

} // namespace plait::rt

namespace plait::rt::cuda {

StridedGeometry stridedView(cpu::ShapeRef shape, cpu::ShapeRef strides) {
  StridedGeometry g;
  g.rank = int32_t(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    g.shape[d] = shape[d];
    g.stride[0][d] = strides[d];
  }
  if (g.rank == 0) { // a scalar: one element at offset 0
    g.rank = 1;
    g.shape[0] = 1;
  }
  return g;
}

Status launched(cudaError_t err, std::string_view kernel) {
  if (err == cudaSuccess)
    return {};
  return Status::errorf("{}: CUDA launch failed: {} ({})", kernel, cudaGetErrorString(err),
                        cudaGetErrorName(err));
}

Status takeWorkspace(const CudaKernelCall &call, std::string_view kernel, uint64_t bytes,
                     uint64_t &used, void *&out) {
  constexpr uint64_t kAlign = 256;
  uint64_t start = (used + kAlign - 1) / kAlign * kAlign;
  used = start + bytes;
  out = nullptr;
  if (call.check) {
    if (call.workspaceNeeded)
      *call.workspaceNeeded = std::max(*call.workspaceNeeded, used);
    return {};
  }
  if (used > call.workspaceBytes)
    return Status::internal(fmt::format("{}: needs {} bytes of device workspace, the executor "
                                        "allocated {}", kernel, used, call.workspaceBytes));
  out = static_cast<uint8_t *>(call.workspace) + start;
  return {};
}

Status noCudaDtype(std::string_view kernel, DType t) {
  return Status::errorf("{}: dtype {} has no CUDA kernel", kernel, dtypeName(t));
}

} // namespace plait::rt::cuda
