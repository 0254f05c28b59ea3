// Cost model: roofline op times from OpCost.cpp's per-instruction costs, collective times
// and the two-stream step simulation (formulas in CostModel.h).
#include "passes/analysis/CostModel.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "passes/analysis/CostSupport.h"
#include "runtime/cluster/RingModel.h"

namespace plait::cost {
namespace {

cluster::Dtype peakDtype(fb::DType dtype) {
  switch (dtype) {
  case fb::DType::BF16:
    return cluster::Dtype::Bf16;
  case fb::DType::F16:
    return cluster::Dtype::Fp16;
  default:
    return cluster::Dtype::Fp32;
  }
}

/// Rank 0's members of a collective's group ("groups" is group-major, group_size each), or
/// empty when rank 0 takes no part.
std::vector<int64_t> rankZeroGroup(const plan::InstrDesc &instr) {
  const std::vector<int64_t> *groups = plan::intsAttr(instr, "groups");
  int64_t size = intAttr(instr, "group_size", 1);
  if (!groups || size < 1)
    return {};
  for (size_t g = 0; g + size <= groups->size(); g += size)
    for (int64_t k = 0; k < size; ++k)
      if ((*groups)[g + k] == 0)
        return std::vector<int64_t>(groups->begin() + g, groups->begin() + g + size);
  return {};
}

} // namespace

rt::Status placeRanks(const cluster::ClusterSpec &spec, uint32_t worldSize, Placement &out) {
  out.ranks = std::max<uint32_t>(worldSize, 1);
  uint32_t perNode = std::max<uint32_t>(spec.devicesPerNode, 1);
  if (out.ranks > spec.worldSize()) {
    if (spec.device.kind == cluster::DeviceKind::Gpu)
      return rt::Status::errorf("the plan is for {} ranks but cluster '{}' has {} devices",
                                out.ranks, spec.name, spec.worldSize());
    // CPU: the extra ranks share the nodes' cores, spread evenly.
    out.ranksPerNode = (out.ranks + spec.nodes - 1) / spec.nodes;
    out.computeShare = std::min(1.0, double(perNode) / double(out.ranksPerNode));
  } else {
    out.ranksPerNode = std::min(out.ranks, perNode);
    out.computeShare = 1;
  }
  // plait-run's default threads (Parallel.h's defaultKernelThreads): the node's CPUs over
  // the ranks on it.
  if (spec.device.kind == cluster::DeviceKind::Cpu && spec.device.threads)
    out.threads = std::max<uint32_t>(1, spec.device.threads->count / out.ranksPerNode);
  return {};
}

double collectiveSeconds(const cluster::ClusterSpec &spec, const Placement &placement,
                         const std::string &kind, const std::vector<int64_t> &members,
                         double bytes) {
  uint32_t p = uint32_t(members.size());
  if (p <= 1)
    return 0;
  uint32_t perNode = std::max<uint32_t>(placement.ranksPerNode, 1);
  bool spansNodes = false;
  for (int64_t r : members)
    spansNodes |= r / perNode != members.front() / perNode;
  const std::optional<cluster::Link> &chosen = spansNodes ? spec.interNode : spec.intraNode;
  cluster::Link link = chosen ? *chosen : spansNodes && spec.intraNode ? *spec.intraNode
                                                                       : cluster::Link{};
  if (link.bandwidth <= 0)
    return 0; // a spec without that link level: nothing to charge
  using cluster::Collective;
  // The kind's own fit where the spec has one (broadcast moves bytes as all-gather does).
  for (size_t k = 0; k < cluster::kNumCollectiveKinds; ++k)
    if (link.byKind[k] && (kind == cluster::kCollectiveKindNames[k] ||
                           (kind == "broadcast" && k == size_t(Collective::AllGather)))) {
      link.bandwidth = link.byKind[k]->bandwidth;
      link.latency = link.byKind[k]->latency;
    }
  // Oversubscribed CPU ranks share cores, and MPI's shared-memory copies run on them.
  link.bandwidth *= placement.computeShare;
  link.latency /= placement.computeShare;
  if (kind == "all_reduce")
    return std::min(cluster::ringTime(link, Collective::AllReduce, p, bytes),
                    cluster::treeAllReduceTime(link, p, bytes));
  if (kind == "reduce_scatter")
    return cluster::ringTime(link, Collective::ReduceScatter, p, bytes);
  return cluster::ringTime(link, Collective::AllGather, p, bytes); // all_gather, broadcast
}

StepTime simulateStep(const std::vector<SimOp> &ops, bool overlap, double tailSeconds) {
  StepTime out;
  double computeClock = 0, commClock = 0;
  std::vector<double> ends(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    const SimOp &op = ops[i];
    for (uint32_t w : op.waits)
      if (w < i)
        computeClock = std::max(computeClock, ends[w]);
    if (op.collective) {
      out.commSeconds += op.seconds;
      double start = std::max(computeClock, commClock);
      ends[i] = commClock = start + op.seconds;
      if (!overlap)
        computeClock = commClock;
      continue;
    }
    out.computeSeconds += op.seconds;
    computeClock += op.seconds;
    ends[i] = computeClock;
  }
  out.seconds = std::max(computeClock, commClock) + tailSeconds;
  out.computeSeconds += tailSeconds;
  out.exposedCommSeconds = std::max(0.0, out.seconds - out.computeSeconds);
  return out;
}

rt::Status predictStep(const plan::PlanDesc &plan, const cluster::ClusterSpec &spec,
                       Prediction &out) {
  out = {};
  if (auto s = placeRanks(spec, plan.worldSize, out.placement); !s.ok())
    return s;
  const cluster::DeviceSpec &device = spec.device;
  const double share = out.placement.computeShare;
  const bool cpu = device.kind == cluster::DeviceKind::Cpu;
  const double bandwidth = device.memoryBandwidth * device.memoryEfficiency * share;
  auto memorySeconds = [&](double bytes) {
    if (cpu && bytes <= kCpuCacheBytes)
      return 0.0;
    return bandwidth > 0 ? bytes / bandwidth : 0.0;
  };
  std::vector<SimOp> ops(plan.instrs.size());
  out.instrSeconds.reserve(plan.instrs.size());
  std::array<double, cluster::kNumDtypes> contractionFlops{};
  for (size_t i = 0; i < plan.instrs.size(); ++i) {
    const plan::InstrDesc &instr = plan.instrs[i];
    OpCost cost = opCost(plan, instr);
    SimOp &op = ops[i];
    op.waits = instr.waits;
    if (cost.collective) {
      const plan::TensorDesc &in = plan.tensors[instr.inputs.front()];
      const plan::TensorDesc &res = plan.tensors[instr.outputs.front()];
      const plan::TensorDesc &whole = instr.kernel == "all_gather" ? res : in;
      std::vector<int64_t> members = rankZeroGroup(instr);
      op.collective = true;
      op.seconds = collectiveSeconds(spec, out.placement, instr.kernel, members,
                                     double(plan::tensorBytes(whole)));
      if (!members.empty())
        op.seconds += device.launchOverhead;
      // A mean divides the completed sum in place (Executor::completeCollective): one
      // binary op over the result.
      if (members.size() > 1 && stringAttr(instr, "reduce") == "mean") {
        double elements = numel(res);
        auto binary = device.kernels.find("binary");
        op.seconds += binary != device.kernels.end()
                          ? binary->second.seconds(elements) / share
                          : memorySeconds(2.0 * double(plan::tensorBytes(res)));
      }
    } else {
      // The op's work terms on this rank's threads (Placement::threads): the part in split
      // calls divided by the speedup of its chunks, each split call's hand-out added.
      double speedup = 1, regions = 0;
      if (out.placement.threads > 1 && cost.splitShare > 0) {
        const cluster::ThreadScaling &scaling = *device.threads;
        double chunks = std::min(double(out.placement.threads), std::floor(cost.splitGrains));
        speedup = scaling.speedup(cost.splitGemm ? scaling.gemmSpeedup : scaling.elementSpeedup,
                                  chunks);
        regions = cost.splitCalls * scaling.regionOverhead;
      }
      auto threaded = [&](double seconds) {
        return seconds * (1 - cost.splitShare) + seconds * cost.splitShare / speedup;
      };
      auto memorySplit = [&](double bytes) { return threaded(memorySeconds(bytes)); };
      fb::DType dtype = instr.outputs.empty() ? fb::DType::F32
                                              : plan.tensors[instr.outputs[0]].dtype;
      double peak = device.peak(peakDtype(dtype));
      if (peak <= 0)
        peak = device.peak(cluster::Dtype::Fp32);
      auto measured = cost.rateClass ? device.kernels.find(cost.rateClass) : device.kernels.end();
      if (cost.rateClass && measured == device.kernels.end() && !device.kernels.empty())
        ++out.unmeasured[cost.rateClass];
      double partsNs = 0, partsOverhead = 0;
      bool partsMeasured = !cost.parts.empty();
      for (auto [rateClass, elements] : cost.parts) {
        auto part = rateClass ? device.kernels.find(rateClass) : device.kernels.end();
        if (part == device.kernels.end()) {
          partsMeasured = false;
          break;
        }
        partsNs += elements * part->second.nsPerElement;
        partsOverhead = std::max(partsOverhead, part->second.overhead);
      }
      // The kernel's own fixed costs, when the spec measured them: matmul's call and GEMMs,
      // the fused kernel's call and reduced rows.
      const cluster::KernelRate *own =
          measured != device.kernels.end() ? &measured->second : nullptr;
      if (partsMeasured) {
        double fixed = own ? own->seconds(0, cost.rows) : partsOverhead;
        op.seconds = std::max((fixed + threaded(partsNs * 1e-9)) / share, memorySplit(cost.bytes));
      } else if (own && !cost.contraction && cost.parts.empty()) {
        // The class's measured loop (timed in cache): its fixed part replaces the launch
        // overhead; an op too large for the cache is still held to DRAM bandwidth.
        double work = own->seconds(cost.elements, cost.rows) - own->overhead;
        op.seconds = std::max((own->overhead + threaded(work)) / share, memorySplit(cost.bytes));
      } else {
        // The GEMM efficiency of its calls' size (device.gemm_efficiency_by_size).
        double rate = peak * device.gemmEfficiencyFor(multiplyAddsPerCall(cost)) * share;
        double computeSeconds = rate > 0 ? cost.flops / rate : 0;
        op.seconds = std::max(threaded(computeSeconds), memorySplit(cost.bytes));
        // The kernel's fixed costs beside its FLOPs: matmul's call and GEMM calls; a
        // convolution's call, GEMM calls and im2col / col2im columns (its elements).
        op.seconds += own && cost.contraction ? own->seconds(cost.elements, cost.rows) / share
                                              : device.launchOverhead;
        // gemm's broadcast of c (matmul's bias) into the result moves its columns at the
        // movement class's rate (an overestimate where cuBLASLt's bias epilogue adds it).
        if (auto movement = device.kernels.find("movement");
            cost.columns > 0 && movement != device.kernels.end())
          op.seconds += cost.columns * movement->second.nsPerElement * 1e-9 / share;
        for (const OpCost::SideWork &work : cost.side)
          if (auto part = device.kernels.find(work.rateClass); part != device.kernels.end())
            op.seconds += threaded((work.elements * part->second.nsPerElement +
                                    work.rows * part->second.nsPerRow) *
                                   1e-9) /
                          share;
      }
      op.seconds += regions;
      out.flops += cost.flops;
      if (cost.contraction)
        contractionFlops[size_t(peakDtype(dtype))] += cost.flops;
    }
    auto &entry = out.byKernel[instr.kernel];
    entry.first += 1;
    entry.second += op.seconds;
    out.instrSeconds.push_back(op.seconds);
  }
  // Updates not written in place are copied after the step: read and write their bytes.
  double tail = 0;
  for (auto [source, target] : plan.updates)
    tail += memorySeconds(2.0 * double(plan::tensorBytes(plan.tensors[target])));
  out.step = simulateStep(ops, /*overlap=*/!cpu, tail);
  // MFU against the peak of the dtype most contraction FLOPs run in (bf16 under
  // bf16-mixed), where the device has one.
  size_t main = size_t(cluster::Dtype::Fp32);
  for (size_t d = 0; d < contractionFlops.size(); ++d)
    if (contractionFlops[d] > contractionFlops[main])
      main = d;
  double peak = device.peak(cluster::Dtype(main));
  if (peak <= 0)
    peak = device.peak(cluster::Dtype::Fp32);
  // A CPU rank on k threads uses k of the node's CPUs, each a device's peak.
  peak *= out.placement.threads;
  out.mfu = out.step.seconds > 0 && peak > 0 ? out.flops / (out.step.seconds * peak) : 0;
  return {};
}

} // namespace plait::cost
