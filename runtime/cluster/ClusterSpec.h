// ClusterSpec: the machine a plan is made for (devices, their peak rates and memory, the
// links between them, an optional price), read from and written to the YAML files in
// samples/clusters/ (format: samples/clusters/README.md). MLIR-free: the compiler's planner
// and the runtime's plait-calibrate both use it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/Status.h"

namespace plait::cluster {

enum class DeviceKind { Gpu, Cpu };

/// The element types a device's peak FLOP/s is given for (dense, not sparse).
enum class Dtype { Fp32, Tf32, Bf16, Fp16, Fp8 };
inline constexpr size_t kNumDtypes = 5;

/// "fp32", "tf32", "bf16", "fp16", "fp8": the YAML keys of peak_flops.
std::string_view dtypeName(Dtype dtype);
/// The Dtype named `name`, or nullopt.
std::optional<Dtype> dtypeFromName(std::string_view name);

/// A latency and bandwidth in the ring model of Link (below).
struct LinkFit {
  double bandwidth = 0; ///< bytes/s, per direction, per device
  double latency = 0;   ///< seconds per ring step (per message)
};

/// The collective kinds a Link may have its own fit for, in RingModel's Collective order
/// (the YAML keys).
inline constexpr size_t kNumCollectiveKinds = 3;
inline constexpr std::string_view kCollectiveKindNames[kNumCollectiveKinds] = {
    "all_reduce", "all_gather", "reduce_scatter"};

/// One kind of link between devices, in the ring model the planner uses: a collective over p
/// devices on this link takes steps·latency + factor·S/bandwidth for a buffer of S bytes, with
/// steps = 2(p-1), factor = 2(p-1)/p for all-reduce and steps = p-1, factor = (p-1)/p for
/// all-gather and reduce-scatter.
struct Link {
  double bandwidth = 0; ///< bytes/s, per direction, per device
  double latency = 0;   ///< seconds per ring step (per message)
  /// Optional fits of one collective kind each (index: kCollectiveKindNames), measured by
  /// plait-calibrate: an all-reduce also does the reduction arithmetic, so one fit for all
  /// three kinds misjudges each. A kind without one uses bandwidth and latency above.
  std::array<std::optional<LinkFit>, kNumCollectiveKinds> byKind{};
};

/// The classes of kernels a device may carry measured rates for (the YAML keys of
/// device.kernels); the cost model maps each kernel to one of them. "matmul" is plait's
/// matmul kernel's fixed cost (its FLOPs go by peak_flops × efficiency.gemm): overhead per
/// call and ns_per_row per GEMM of its batch. "fused" is the fused elementwise kernel's own
/// per-call cost; its ops are timed by their own classes. "conv" is the convolutions' own cost
/// (im2col or col2im per column element, a GEMM call per image and group) beside their FLOPs.
/// "conv_depthwise" and "conv_grouped" are the whole cost of the convolutions computed without
/// GEMMs (depthwise ones; grouped ones marked `direct`): ns_per_element per vector multiply-add
/// and ns_per_row per vector laid out in the workspace (runtime/cpu/Workspace.h
/// directConvWork), a class each as their loops differ (a depthwise output's taps are one
/// chain of adds; a group's filters make independent lanes).
inline constexpr std::string_view kKernelClassNames[] = {
    "binary",   "unary", "transcendental", "pow",         "where",     "cast",
    "movement", "copy",  "reduction",      "loss",        "loss_grad", "softmax",
    "norm",     "pool",  "pool_grad",      "adamw",       "sgd",       "matmul",
    "fused",    "conv",  "conv_depthwise", "conv_grouped"};

/// A measured kernel: time = overhead + elements × nsPerElement·1e-9 + rows × nsPerRow·1e-9
/// seconds. A row is what a row-wise kernel works on at a time (the softmax's, norm's or
/// loss's last axis, a reduction's result element, a GEMM of a batched matmul); kernels
/// without rows have nsPerRow 0.
struct KernelRate {
  double nsPerElement = 0; ///< in ns, as the YAML states it, so that it round-trips exactly
  double overhead = 0;     ///< seconds
  double nsPerRow = 0;     ///< in ns; optional in the YAML (ns_per_row), 0 when absent

  /// One call's seconds on `elements` elements and `rows` rows.
  double seconds(double elements, double rows = 0) const {
    return overhead + (elements * nsPerElement + rows * nsPerRow) * 1e-9;
  }
};

/// How a CPU rank's kernels speed up on more than one thread (plait-run --threads, Parallel.h),
/// measured by plait-calibrate on one rank alone on a node: a GEMM and an elementwise loop
/// large enough to split, on `count` threads against one. A rank that has the cores of
/// devices it does not use (a plan with fewer ranks per node than devices_per_node) runs
/// its large kernels on several threads; the cost model scales their work by these.
struct ThreadScaling {
  uint32_t count = 1;         ///< the threads measured: all the CPUs one rank could use
  double gemmSpeedup = 1;     ///< a split GEMM's time on 1 thread / on `count`
  double elementSpeedup = 1;  ///< the same for split elementwise loops (add and gelu's mean)
  double regionOverhead = 0;  ///< seconds one split call costs beyond its chunks (handing out)

  /// The speedup of a call split into `chunks` (1 ≤ chunks ≤ count) of the kind whose speedup
  /// on `count` threads is `full`: linear between 1 thread and `count`.
  double speedup(double full, double chunks) const {
    if (count <= 1 || chunks <= 1)
      return 1;
    return 1 + (full - 1) * (std::min(chunks, double(count)) - 1) / double(count - 1);
  }
};

/// One device (a GPU, or one CPU rank) of the cluster; every device is the same.
struct DeviceSpec {
  DeviceKind kind = DeviceKind::Gpu;
  std::string model;          ///< optional: "NVIDIA H100 SXM5 80GB"
  uint64_t memoryBytes = 0;   ///< memory one device can use
  double memoryBandwidth = 0; ///< bytes/s
  /// Peak FLOP/s per Dtype (index: the enum's value); 0 where the device has no such rate.
  std::array<double, kNumDtypes> peakFlops{};
  /// Fractions of the peaks that real kernels reach: GEMMs of peakFlops, memory-bound
  /// kernels of memoryBandwidth.
  double gemmEfficiency = 0.7;
  double memoryEfficiency = 0.8;
  /// Optional: the GEMM efficiency by the multiply-adds (m·n·k) of one GEMM call, measured
  /// (plait-calibrate: its square GEMMs and the GPT sample's). A call between two sizes takes
  /// the efficiency interpolated in log(size); beyond the ends, the end's. Empty: every GEMM
  /// gets gemmEfficiency.
  std::map<double, double> gemmEfficiencyBySize;
  double launchOverhead = 0; ///< seconds each kernel launch costs beyond its work
  /// Measured element-kernel rates by class (kKernelClassNames); empty for datasheet specs.
  std::map<std::string, KernelRate, std::less<>> kernels;
  /// CPU: the kernels' speedup on several threads per rank; absent: predictions assume one.
  std::optional<ThreadScaling> threads;

  double peak(Dtype dtype) const { return peakFlops[size_t(dtype)]; }

  /// The fraction of peakFlops a GEMM call of `multiplyAdds` reaches (gemmEfficiencyBySize,
  /// or gemmEfficiency without it).
  double gemmEfficiencyFor(double multiplyAdds) const;
};

struct ClusterSpec {
  std::string name;
  std::string source; ///< where the numbers come from: a datasheet, or plait-calibrate
  uint32_t nodes = 1;
  uint32_t devicesPerNode = 1;
  DeviceSpec device;
  std::optional<Link> intraNode;            ///< required when devicesPerNode > 1
  std::optional<Link> interNode;            ///< required when nodes > 1
  std::optional<double> pricePerDeviceHour; ///< USD
  std::string priceNote;                    ///< where the price comes from, and when

  uint32_t worldSize() const { return nodes * devicesPerNode; }
};

/// Reads the YAML spec at `path`. Every error is one line naming the file, the line and the
/// field: unknown fields (typos are not ignored), missing required fields, malformed or
/// non-positive quantities, and YAML syntax errors.
rt::Status parseClusterSpec(const std::string &path, ClusterSpec &spec);

/// The same from YAML `text`; `displayName` stands for the file in messages.
rt::Status parseClusterSpecText(const std::string &text, const std::string &displayName,
                                ClusterSpec &spec);

/// `spec` as YAML in the format parseClusterSpec reads, with human-readable units; parsing
/// the result gives `spec` back exactly.
std::string writeClusterSpec(const ClusterSpec &spec);

} // namespace plait::cluster
