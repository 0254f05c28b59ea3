// The plan's generated CUDA kernels on a device: the fatbin (Plan::generatedCuda) loaded with
// the CUDA driver API and its fused kernels launched; the first piece of the CUDA backend.
// The driver is resolved at run time through the CUDA runtime
// (cudaGetDriverEntryPointByVersion), so nothing links libcuda, which only a machine with the
// NVIDIA driver has; every driver call goes through PLAIT_CU_RETURN_IF_ERROR (CudaStatus.h).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/Status.h"

namespace plait::rt {

/// The driver API functions plait calls, by their unversioned names.
#define PLAIT_CU_FUNCTIONS(X)                                                                   \
  X(cuGetErrorName)                                                                             \
  X(cuGetErrorString)                                                                           \
  X(cuInit)                                                                                     \
  X(cuDeviceGet)                                                                                \
  X(cuDevicePrimaryCtxRetain)                                                                   \
  X(cuDevicePrimaryCtxRelease)                                                                  \
  X(cuCtxSetCurrent)                                                                            \
  X(cuCtxSynchronize)                                                                           \
  X(cuModuleLoadData)                                                                           \
  X(cuModuleUnload)                                                                             \
  X(cuModuleGetFunction)                                                                        \
  X(cuLaunchKernel)                                                                             \
  X(cuMemAlloc)                                                                                 \
  X(cuMemFree)                                                                                  \
  X(cuMemcpyHtoD)                                                                               \
  X(cuMemcpyDtoH)                                                                                \
  X(cuMemsetD32Async)

/// Pointers to the driver's functions (cuda.h maps some names to their _v2 versions; the
/// members follow, so `driver.cuMemAlloc(...)` calls what cuda.h declares).
struct CudaDriver {
#define PLAIT_CU_POINTER(name) decltype(&::name) name = nullptr;
  PLAIT_CU_FUNCTIONS(PLAIT_CU_POINTER)
#undef PLAIT_CU_POINTER
};

/// The driver, resolved once per process (cuInit included). Where there is none, an error
/// whose message starts with "no CUDA driver" and gives CUDA's reason.
Status cudaDriver(const CudaDriver *&out);

/// A device's primary context, current on the thread that opened it while this is held.
class CudaContext {
public:
  static Status open(int ordinal, std::unique_ptr<CudaContext> &out);
  ~CudaContext();
  CudaContext(const CudaContext &) = delete;
  CudaContext &operator=(const CudaContext &) = delete;
  const CudaDriver &driver() const { return driver_; }

private:
  CudaContext(const CudaDriver &driver, CUdevice device) : driver_(driver), device_(device) {}
  const CudaDriver &driver_;
  CUdevice device_;
};

/// A loaded fatbin: its kernels are looked up by name.
class CudaModule {
public:
  /// Loads `fatbin` (nvcc -fatbin output) into the current context.
  static Status load(const CudaDriver &driver, const std::vector<uint8_t> &fatbin,
                     std::unique_ptr<CudaModule> &out);
  ~CudaModule();
  CudaModule(const CudaModule &) = delete;
  CudaModule &operator=(const CudaModule &) = delete;
  /// The kernel `symbol` (a fused instruction's "cuda_symbol").
  Status kernel(const std::string &symbol, CUfunction &out) const;

private:
  CudaModule(const CudaDriver &driver, CUmodule module) : driver_(driver), module_(module) {}
  const CudaDriver &driver_;
  CUmodule module_;
};

/// Launches a generated fused kernel (compiler/CudaCodegen.cpp) over its `numel` result
/// elements on `stream`: `pointers` are the device addresses of its inputs, then of its
/// results, as the kernel declares them. Blocks of 256 threads, about `lanes` elements each
/// (the kernel's elements per iteration, its "cuda_lanes"; the kernels stride over the grid,
/// so any grid is correct). `reduced` lists the reduced results (address, floats): the kernel
/// adds into them, so they are zeroed first on the same stream.
Status launchFusedKernel(const CudaDriver &driver, CUfunction kernel,
                         const std::vector<CUdeviceptr> &pointers, int64_t numel,
                         CUstream stream = nullptr,
                         const std::vector<std::pair<CUdeviceptr, size_t>> &reduced = {},
                         int64_t lanes = 4);

} // namespace plait::rt
