// The cluster spec and the table of a CUDA calibration (CalibrateCuda.h); built with or
// without the CUDA toolkit.
#include "runtime/cluster/CalibrateCuda.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "runtime/cluster/KernelSamples.h"

namespace plait::cluster {

ClusterSpec specFromCudaCalibration(const CudaCalibration &c, const std::string &name) {
  ClusterSpec spec;
  spec.name = name;
  spec.source = fmt::format("plait-calibrate --device cuda on {}, {} (GPU {}: {})", c.host,
                            c.date, c.device, c.deviceName);
  spec.nodes = 1;
  spec.devicesPerNode = 1;
  DeviceSpec &d = spec.device;
  d.kind = DeviceKind::Gpu;
  d.model = fmt::format("{} (sm_{}{}), measured", c.deviceName, c.major, c.minor);
  d.memoryBytes = c.memoryBytes;
  d.memoryBandwidth = significant(c.copyBandwidth);
  d.peakFlops[size_t(Dtype::Fp32)] = significant(c.fp32Peak);
  d.peakFlops[size_t(Dtype::Bf16)] = significant(c.bf16Peak);
  d.gemmEfficiency = std::clamp(std::round(c.gemmEfficiency * 1000) / 1000, 0.001, 1.0);
  d.memoryEfficiency = 1.0; // memory_bandwidth is the sustained copy rate
  d.launchOverhead = significant(c.launchOverhead);
  for (const KernelClassRates &k : c.kernels)
    d.kernels[k.name] = k.fit;
  return spec;
}

std::string cudaCalibrationTable(const CudaCalibration &c) {
  std::string out = fmt::format(
      "plait-calibrate --device cuda on {}, {}: GPU {} ({}, sm_{}{}, {:.1f} GiB)\n(each number "
      "is the median of several runs of back-to-back calls on one stream, timed by CUDA "
      "events)\n\n",
      c.host, c.date, c.device, c.deviceName, c.major, c.minor,
      double(c.memoryBytes) / double(1ull << 30));
  auto gemms = [&](const char *what, const std::vector<GemmRate> &rates) {
    out += fmt::format("{:<32} TFLOP/s\n", what);
    for (const GemmRate &g : rates)
      out += fmt::format("  {:>5} x {:>5} x {:>5}          {:10.2f}  ({:.1f} us a call)\n", g.m,
                         g.n, g.k, g.flopsPerSecond / 1e12, g.seconds * 1e6);
  };
  gemms("fp32 GEMM (plait's matmul)", c.fp32Gemms);
  gemms("bf16 GEMM (plait's matmul)", c.bf16Gemms);
  gemms("bf16 GEMMs of a width-1024 layer", c.modelGemms);
  out += fmt::format("  peaks: fp32 {:.2f}, bf16 {:.2f} TFLOP/s; the layer's GEMMs reach {:.1f}% "
                     "of the bf16 peak\n",
                     c.fp32Peak / 1e12, c.bf16Peak / 1e12, 100 * c.gemmEfficiency);
  out += fmt::format("device-to-device copy ({} MiB)    {:.1f} GB/s (read + written)\n",
                     c.copyBytes >> 20, c.copyBandwidth / 1e9);
  out += fmt::format("a stream of tiny kernels (add, 256 elements) {:.2f} us a kernel\n",
                     c.launchOverhead * 1e6);
  if (!c.kernels.empty()) {
    out += "\nplait's CUDA kernels (f32), per class: time of one call = overhead + elements x "
           "ns/element + rows x ns/row\n";
    out += kernelClassTable(c.kernels);
  }
  for (const std::string &s : c.skipped)
    out += "  not measured: " + s + "\n";
  out += "  not measured: collectives between GPUs (one device; NCCL calibration is not built)\n";
  return out;
}

} // namespace plait::cluster
