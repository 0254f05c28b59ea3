// The driver API through the CUDA runtime's entry-point query: resolved once, checked call
// by call with PLAIT_CU_RETURN_IF_ERROR.
#include "runtime/cuda/CudaModule.h"

#include <algorithm>
#include <mutex>

#include "runtime/cuda/CudaStatus.h"

namespace plait::rt {
namespace {

/// The driver API version the functions are resolved for (their signatures in cuda.h).
constexpr unsigned kDriverApiVersion = 12000;

/// The process's driver functions: filled once, by cudaDriver's first call (cuStatus reads
/// the error-name functions, resolved first, also while cuInit's failure is reported).
CudaDriver gDriver;

Status resolveDriver(CudaDriver &driver) {
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSuccess;
#define PLAIT_CU_RESOLVE(name)                                                                 \
  {                                                                                            \
    void *function = nullptr;                                                                  \
    cudaError_t err = cudaGetDriverEntryPointByVersion(#name, &function, kDriverApiVersion,   \
                                                       cudaEnableDefault, &found);             \
    if (err != cudaSuccess)                                                                    \
      return Status::errorf("no CUDA driver: {} ({})", cudaGetErrorString(err),               \
                            cudaGetErrorName(err));                                            \
    if (found != cudaDriverEntryPointSuccess || !function)                                     \
      return Status::errorf("no CUDA driver: it has no {} for CUDA {}.{}", #name,             \
                            kDriverApiVersion / 1000, kDriverApiVersion % 1000 / 10);         \
    driver.name = reinterpret_cast<decltype(driver.name)>(function);                           \
  }
  PLAIT_CU_FUNCTIONS(PLAIT_CU_RESOLVE)
#undef PLAIT_CU_RESOLVE
  PLAIT_CU_RETURN_IF_ERROR(driver.cuInit(0));
  return {};
}

} // namespace

Status cudaDriver(const CudaDriver *&out) {
  static Status status;
  static std::once_flag once;
  std::call_once(once, [] { status = resolveDriver(gDriver); });
  out = status.ok() ? &gDriver : nullptr;
  return status;
}

Status cuStatus(CUresult result, const char *call, const char *file, int line) {
  const char *name = nullptr, *text = nullptr;
  // The names come from the driver itself (a driver call failed: it was resolved).
  if (gDriver.cuGetErrorName && gDriver.cuGetErrorString) {
    gDriver.cuGetErrorName(result, &name);
    gDriver.cuGetErrorString(result, &text);
  }
  return Status::errorf("{} failed at {}:{}: {} ({})", call, file, line,
                        text ? text : "unknown error", name ? name : std::to_string(result));
}

Status CudaContext::open(int ordinal, std::unique_ptr<CudaContext> &out) {
  const CudaDriver *driver = nullptr;
  PLAIT_RETURN_IF_ERROR(cudaDriver(driver));
  CUdevice device = 0;
  CUcontext context = nullptr;
  PLAIT_CU_RETURN_IF_ERROR(driver->cuDeviceGet(&device, ordinal));
  PLAIT_CU_RETURN_IF_ERROR(driver->cuDevicePrimaryCtxRetain(&context, device));
  out.reset(new CudaContext(*driver, device)); // released from here on, whatever follows
  PLAIT_CU_RETURN_IF_ERROR(driver->cuCtxSetCurrent(context));
  return {};
}

CudaContext::~CudaContext() { driver_.cuDevicePrimaryCtxRelease(device_); }

Status CudaModule::load(const CudaDriver &driver, const std::vector<uint8_t> &fatbin,
                        std::unique_ptr<CudaModule> &out) {
  if (fatbin.empty())
    return Status::error("the plan carries no CUDA kernels (compiled with --no-codegen?)");
  CUmodule module = nullptr;
  PLAIT_CU_RETURN_IF_ERROR(driver.cuModuleLoadData(&module, fatbin.data()));
  out.reset(new CudaModule(driver, module));
  return {};
}

CudaModule::~CudaModule() { driver_.cuModuleUnload(module_); }

Status CudaModule::kernel(const std::string &symbol, CUfunction &out) const {
  PLAIT_CU_RETURN_IF_ERROR(driver_.cuModuleGetFunction(&out, module_, symbol.c_str()));
  return {};
}

Status launchFusedKernel(const CudaDriver &driver, CUfunction kernel,
                         const std::vector<CUdeviceptr> &pointers, int64_t numel,
                         CUstream stream,
                         const std::vector<std::pair<CUdeviceptr, size_t>> &reduced,
                         int64_t lanes) {
  for (const auto &[address, floats] : reduced)
    PLAIT_CU_RETURN_IF_ERROR(driver.cuMemsetD32Async(address, 0, floats, stream));
  // A kernel with reduced results keeps a running sum per thread (compiler/CudaCodegen.cpp):
  // fewer blocks, each thread looping over more elements, mean fewer atomic adds. 1024 blocks
  // of 256 fill an H100/H200 (132 SMs x 2048 threads) and make the grid's stride 2^20
  // elements, a multiple of any power-of-two row, whose column sums then never flush early.
  constexpr int64_t kThreads = 256, kMaxBlocks = 65535, kMaxReducingBlocks = 1024;
  const int64_t perBlock = kThreads * std::max<int64_t>(lanes, 1);
  int64_t blocks = (numel + perBlock - 1) / perBlock;
  blocks = std::clamp<int64_t>(blocks, 1, reduced.empty() ? kMaxBlocks : kMaxReducingBlocks);
  std::vector<void *> arguments;
  for (const CUdeviceptr &p : pointers)
    arguments.push_back(const_cast<CUdeviceptr *>(&p));
  PLAIT_CU_RETURN_IF_ERROR(driver.cuLaunchKernel(kernel, unsigned(blocks), 1, 1,
                                                 unsigned(kThreads), 1, 1, 0, stream,
                                                 arguments.data(), nullptr));
  return {};
}

} // namespace plait::rt
