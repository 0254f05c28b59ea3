// plait-calibrate --device cuda: one CUDA device measured through plait's own CUDA kernels,
// each timed with CUDA events around a run of back-to-back calls on one stream (as a step
// replays them), the median of several runs kept. Not run on this project's development
// machine (it has no GPU): tests/gpu/run.sh runs it (CudaCalibrateTest) where there is one.
#include "runtime/cluster/CalibrateCuda.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "runtime/cluster/KernelSamples.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaKernel.h"
#include "runtime/cuda/CudaLibraries.h"
#include "runtime/cuda/CudaStatus.h"

namespace plait::cluster {

using rt::Status;

namespace {

/// One kernel call's operands in device memory (copied from host operands), its workspace
/// and its per-instruction cache, freed with it.
struct DeviceCall {
  std::vector<void *> buffers;
  std::vector<rt::TensorView> inputs, outputs;
  rt::Attrs attrs;
  void *workspace = nullptr;
  uint64_t workspaceBytes = 0;
  std::shared_ptr<void> cache;
  std::vector<const double *> hostScalars;

  DeviceCall() = default;
  DeviceCall(const DeviceCall &) = delete;
  DeviceCall &operator=(const DeviceCall &) = delete;
  ~DeviceCall() {
    for (void *b : buffers)
      cudaFree(b);
    if (workspace)
      cudaFree(workspace);
  }

  Status alloc(size_t bytes, void *&out) {
    PLAIT_CUDA_RETURN_IF_ERROR(cudaMalloc(&out, std::max<size_t>(bytes, 1)));
    buffers.push_back(out);
    return {};
  }
  /// A device copy of `host` (its data copied), or of its shape filled with `fill` bytes.
  Status view(const rt::TensorView &host, bool copyData, int fill, rt::TensorView &out) {
    out.dtype = host.dtype;
    out.shape = host.shape;
    void *data = nullptr;
    PLAIT_RETURN_IF_ERROR(alloc(host.bytes(), data));
    if (copyData && host.data)
      PLAIT_CUDA_RETURN_IF_ERROR(cudaMemcpy(data, host.data, host.bytes(), cudaMemcpyHostToDevice));
    else
      PLAIT_CUDA_RETURN_IF_ERROR(cudaMemset(data, fill, std::max<size_t>(host.bytes(), 1)));
    out.data = data;
    return {};
  }
};

/// Everything one device's measurements share: its stream, its libraries, the device error
/// flag the validating kernels write.
struct Device {
  cudaStream_t stream = nullptr;
  std::unique_ptr<rt::CudaLibraries> libraries;
  int *deviceError = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;

  ~Device() {
    libraries.reset();
    if (deviceError)
      cudaFree(deviceError);
    if (start)
      cudaEventDestroy(start);
    if (stop)
      cudaEventDestroy(stop);
    if (stream)
      cudaStreamDestroy(stream);
  }
  Status create(int index) {
    PLAIT_CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
    PLAIT_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    PLAIT_RETURN_IF_ERROR(rt::CudaLibraries::create(
        stream, rt::CudaLibraries::kDefaultWorkspaceBytes, libraries));
    PLAIT_CUDA_RETURN_IF_ERROR(cudaMalloc(reinterpret_cast<void **>(&deviceError), sizeof(int)));
    PLAIT_CUDA_RETURN_IF_ERROR(cudaMemset(deviceError, 0, sizeof(int)));
    PLAIT_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
    PLAIT_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
    return {};
  }

  rt::CudaKernelCall callOf(DeviceCall &c, bool check) {
    rt::CudaKernelCall call{c.inputs, c.outputs, c.attrs};
    call.check = check;
    call.stream = stream;
    call.workspace = c.workspace;
    call.workspaceBytes = c.workspaceBytes;
    call.libraries = libraries.get();
    call.hostScalars = &c.hostScalars;
    call.deviceError = deviceError;
    call.errorTag = 1;
    call.cache = &c.cache;
    return call;
  }

  /// Checks the call (its operands, its workspace) and allocates what it asks for.
  Status prepare(const std::string &kernel, rt::CudaKernelFn fn, DeviceCall &c) {
    rt::CudaKernelCall call = callOf(c, /*check=*/true);
    uint64_t need = 0;
    call.workspaceNeeded = &need;
    if (Status s = fn(call); !s.ok())
      return Status::errorf("plait-calibrate: CUDA kernel '{}': {}", kernel, s.message());
    if (need > 0) {
      PLAIT_CUDA_RETURN_IF_ERROR(cudaMalloc(&c.workspace, need));
      c.workspaceBytes = need;
    }
    return {};
  }

  /// The seconds of one call of `fn` on `c`: `calls` back-to-back calls timed with events, the
  /// median over `reps` such runs (after one untimed call).
  Status time(const std::string &kernel, rt::CudaKernelFn fn, DeviceCall &c, int calls,
              int reps, double &seconds) {
    auto once = [&]() -> Status {
      rt::CudaKernelCall call = callOf(c, /*check=*/false);
      if (Status s = fn(call); !s.ok())
        return Status::errorf("plait-calibrate: CUDA kernel '{}': {}", kernel, s.message());
      return {};
    };
    PLAIT_RETURN_IF_ERROR(once());
    PLAIT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    std::vector<double> runs;
    for (int r = 0; r < reps; ++r) {
      PLAIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(start, stream));
      for (int i = 0; i < calls; ++i)
        PLAIT_RETURN_IF_ERROR(once());
      PLAIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop, stream));
      PLAIT_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop));
      float ms = 0;
      PLAIT_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start, stop));
      runs.push_back(double(ms) * 1e-3 / calls);
    }
    int error = 0;
    PLAIT_CUDA_RETURN_IF_ERROR(cudaMemcpy(&error, deviceError, sizeof(int), cudaMemcpyDeviceToHost));
    if (error != 0)
      return Status::errorf("plait-calibrate: CUDA kernel '{}' flagged its synthetic operands",
                            kernel);
    seconds = median(runs);
    return {};
  }
};

/// The device copy of host operands `k` for `kernel`.
Status deviceCallOf(const KernelOperands &k, DeviceCall &c) {
  c.attrs = k.attrs;
  c.inputs.resize(k.inputs.size());
  c.outputs.resize(k.outputs.size());
  for (size_t i = 0; i < k.inputs.size(); ++i)
    PLAIT_RETURN_IF_ERROR(c.view(k.inputs[i], /*copyData=*/true, 0, c.inputs[i]));
  for (size_t i = 0; i < k.outputs.size(); ++i)
    PLAIT_RETURN_IF_ERROR(c.view(k.outputs[i], /*copyData=*/false, 0, c.outputs[i]));
  c.hostScalars.assign(k.inputs.size(), nullptr);
  return {};
}

/// An n×n×n (or m×n×k) product through plait's CUDA matmul (cuBLASLt) in `dtype`.
Status measureGemm(Device &device, rt::DType dtype, int m, int n, int k, bool quick,
                   GemmRate &out) {
  rt::CudaKernelFn fn = rt::findCudaKernel("matmul");
  if (!fn)
    return Status::error("plait-calibrate: no CUDA matmul kernel");
  rt::TensorView a, b, y; // shapes only: device data is filled, not copied
  a.dtype = b.dtype = y.dtype = dtype;
  a.shape = {m, k};
  b.shape = {k, n};
  y.shape = {m, n};
  DeviceCall c;
  c.inputs.resize(2);
  c.outputs.resize(1);
  // 0x3C bytes: 0.0115 in bf16, 0.0117 in f32; finite, no denormals.
  PLAIT_RETURN_IF_ERROR(c.view(a, false, 0x3C, c.inputs[0]));
  PLAIT_RETURN_IF_ERROR(c.view(b, false, 0x3C, c.inputs[1]));
  PLAIT_RETURN_IF_ERROR(c.view(y, false, 0, c.outputs[0]));
  c.hostScalars.assign(2, nullptr);
  PLAIT_RETURN_IF_ERROR(device.prepare("matmul", fn, c));
  double flops = 2.0 * m * n * k, seconds = 0;
  int calls = std::clamp(int(2e12 / flops), 1, 200); // ~ a few ms of work per run
  PLAIT_RETURN_IF_ERROR(device.time("matmul", fn, c, quick ? 1 : calls, quick ? 2 : 7, seconds));
  out = {m, n, k, flops / seconds, seconds};
  return {};
}

/// Device-to-device copies of `bytes`: bytes read plus bytes written per second.
Status measureCopy(Device &device, uint64_t bytes, int reps, double &bandwidth) {
  void *src = nullptr, *dst = nullptr;
  PLAIT_CUDA_RETURN_IF_ERROR(cudaMalloc(&src, bytes));
  std::unique_ptr<void, decltype(&cudaFree)> srcOwner(src, &cudaFree);
  PLAIT_CUDA_RETURN_IF_ERROR(cudaMalloc(&dst, bytes));
  std::unique_ptr<void, decltype(&cudaFree)> dstOwner(dst, &cudaFree);
  PLAIT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(src, 1, bytes, device.stream));
  std::vector<double> runs;
  for (int r = 0; r < reps + 1; ++r) {
    PLAIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(device.start, device.stream));
    PLAIT_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, device.stream));
    PLAIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(device.stop, device.stream));
    PLAIT_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(device.stop));
    float ms = 0;
    PLAIT_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, device.start, device.stop));
    if (r > 0) // the first run warms up
      runs.push_back(2.0 * double(bytes) / (double(ms) * 1e-3));
  }
  bandwidth = median(runs);
  return {};
}

/// One sample of a class: `kernel` (a variant) on `elements` elements.
Status measureKernel(Device &device, const std::string &kernel, int64_t elements, bool quick,
                     KernelClassRates::Sample &out) {
  rt::CudaKernelFn fn = rt::findCudaKernel(registered(kernel));
  if (!fn)
    return Status::errorf("plait-calibrate: no CUDA kernel named '{}'", registered(kernel));
  KernelOperands host;
  kernelOperands(kernel, elements, host);
  DeviceCall c;
  PLAIT_RETURN_IF_ERROR(deviceCallOf(host, c));
  PLAIT_RETURN_IF_ERROR(device.prepare(kernel, fn, c));
  double seconds = 0;
  // Enough calls that launching them (microseconds each) is not all a run measures.
  const int calls = quick ? 4 : std::clamp(int(4e8 / double(std::max<int64_t>(elements, 1))), 8, 200);
  PLAIT_RETURN_IF_ERROR(device.time(kernel, fn, c, calls, quick ? 2 : 5, seconds));
  out = {kernel, host.elements, host.rows, seconds};
  return {};
}

/// Classes the CUDA calibration leaves out, and why.
const char *skippedClass(const std::string &name) {
  if (name == "fused")
    return "fused kernels are generated per plan (CUDA C++ compiled by nvcc), not registered";
  return nullptr;
}

Status measureKernelClasses(Device &device, bool quick, CudaCalibration &out) {
  // As the CPU classes are timed in cache: back-to-back calls on one set of operands of at
  // most 1M f32 elements (a binary op's 12 MiB stay in an A100's or H100's L2), so a class
  // says what the kernel costs beside DRAM traffic, which the cost model charges apart
  // (memory_bandwidth) for larger tensors. That is also why fused kernels can be costed as
  // the sum of their ops' classes.
  const std::vector<int64_t> sizes = quick ? std::vector<int64_t>{4096, 65536}
                                           : std::vector<int64_t>{4096, 65536, 1 << 18, 1 << 20};
  for (const KernelClass &k : kernelClasses()) {
    if (const char *why = skippedClass(k.name)) {
      out.skipped.push_back(fmt::format("{}: {}", k.name, why));
      continue;
    }
    std::string missing;
    for (const std::string &kernel : k.kernels)
      if (!rt::findCudaKernel(registered(kernel)))
        missing = registered(kernel);
    if (!missing.empty()) {
      out.skipped.push_back(fmt::format("{}: no CUDA kernel '{}'", k.name, missing));
      continue;
    }
    KernelClassRates rates;
    rates.name = k.name;
    rates.kernels = k.kernels;
    Status failed;
    for (const std::string &kernel : k.kernels)
      for (int64_t n : sizes) {
        KernelClassRates::Sample sample;
        if (failed.ok())
          failed = measureKernel(device, kernel, n, quick, sample);
        rates.samples.push_back(sample);
      }
    if (!failed.ok()) { // a class the kernels refuse stays out of the spec, said why
      out.skipped.push_back(fmt::format("{}: {}", k.name, failed.message()));
      // A failed launch may leave the device unusable: stop at an error that sticks.
      PLAIT_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
      continue;
    }
    std::vector<RateSample> points;
    for (const KernelClassRates::Sample &s : rates.samples)
      points.push_back({double(s.elements), double(s.rows), s.seconds});
    rates.fit = fitKernelRate(points);
    out.kernels.push_back(std::move(rates));
  }
  return {};
}

} // namespace

Status calibrateCuda(const CudaCalibrateOptions &options, CudaCalibration &out) {
  std::vector<rt::CudaDeviceInfo> devices;
  PLAIT_RETURN_IF_ERROR(rt::listCudaDevices(devices));
  auto it = std::find_if(devices.begin(), devices.end(),
                         [&](const rt::CudaDeviceInfo &d) { return d.index == options.device; });
  if (it == devices.end())
    return Status::errorf("--gpu {}: no such CUDA device (this machine has {})", options.device,
                          devices.size());
  out = CudaCalibration();
  out.host = hostName();
  out.date = today();
  out.device = it->index;
  out.deviceName = it->name;
  out.major = it->major;
  out.minor = it->minor;
  out.memoryBytes = it->memoryBytes;
  Device device;
  PLAIT_RETURN_IF_ERROR(device.create(options.device));

  const bool quick = options.quick;
  for (int n : quick ? std::vector<int>{512, 1024} : std::vector<int>{2048, 4096, 8192}) {
    GemmRate g;
    PLAIT_RETURN_IF_ERROR(measureGemm(device, rt::DType::F32, n, n, n, quick, g));
    out.fp32Gemms.push_back(g);
    PLAIT_RETURN_IF_ERROR(measureGemm(device, rt::DType::BF16, n, n, n, quick, g));
    out.bf16Gemms.push_back(g);
  }
  auto best = [](const std::vector<GemmRate> &rates) {
    double b = 0;
    for (const GemmRate &g : rates)
      b = std::max(b, g.flopsPerSecond);
    return b;
  };
  out.fp32Peak = best(out.fp32Gemms);
  out.bf16Peak = best(out.bf16Gemms);
  // A width-1024 layer of 4096 tokens: its projection, MLP up and down products.
  const int tokens = quick ? 512 : 4096, width = quick ? 256 : 1024;
  double flops = 0, seconds = 0;
  for (auto [m, n, k] : {std::array<int, 3>{tokens, width, width},
                         std::array<int, 3>{tokens, 4 * width, width},
                         std::array<int, 3>{tokens, width, 4 * width}}) {
    GemmRate g;
    PLAIT_RETURN_IF_ERROR(measureGemm(device, rt::DType::BF16, m, n, k, quick, g));
    out.modelGemms.push_back(g);
    flops += 2.0 * m * n * k;
    seconds += g.seconds;
  }
  out.gemmEfficiency = out.bf16Peak > 0 ? std::min(1.0, flops / seconds / out.bf16Peak) : 1.0;

  out.copyBytes = quick ? (64ull << 20) : (1ull << 30);
  PLAIT_RETURN_IF_ERROR(measureCopy(device, out.copyBytes, quick ? 2 : 7, out.copyBandwidth));

  // A stream of tiny kernels: what each costs beyond its work (launch and scheduling).
  {
    rt::CudaKernelFn add = rt::findCudaKernel("add");
    KernelOperands host;
    kernelOperands("add", 256, host);
    DeviceCall c;
    PLAIT_RETURN_IF_ERROR(deviceCallOf(host, c));
    PLAIT_RETURN_IF_ERROR(device.prepare("add", add, c));
    PLAIT_RETURN_IF_ERROR(device.time("add", add, c, quick ? 50 : 2000, quick ? 2 : 5,
                                      out.launchOverhead));
  }
  return measureKernelClasses(device, quick, out);
}

} // namespace plait::cluster
