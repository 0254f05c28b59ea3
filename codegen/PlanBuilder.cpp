// Serialises a PlanDesc into the FlatBuffers plan format (codegen/schema/plan.fbs).
#include "codegen/PlanBuilder.h"
#include "codegen/schema/CommModel.h"
#include "codegen/schema/PlanChecksum.h"

#include <algorithm>
#include <map>

#include "codegen/schema/PlanVersion.h"
#include "runtime/cpu/Workspace.h"

namespace plait::plan {

/// fb::DType and rt::DType share their numbering; an unknown dtype has size 0, which the
/// runtime's loader rejects with the resulting byte count.
size_t elementSize(fb::DType t) { return rt::dtypeSize(rt::DType(t)); }

const std::vector<int64_t> *intsAttr(const InstrDesc &instr, const char *name) {
  for (const AttrDesc &a : instr.attrs)
    if (a.name == name)
      return &a.ints;
  return nullptr;
}

// Negative dimensions are written as they are (the loader rejects them); the counts then
// saturate to 0 rather than wrapping around.
uint64_t numelOf(const TensorDesc &t) {
  uint64_t n = 1;
  for (int64_t d : t.shape) {
    if (d < 0)
      return 0;
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

uint64_t tensorBytes(const TensorDesc &t) { return numelOf(t) * elementSize(t.dtype); }

uint64_t workspaceBytesOf(const PlanDesc &plan, const InstrDesc &instr) {
  // fb::DType and rt::DType share their numbering (runtime/Tensor.h); an out-of-range tensor
  // index is the loader's to reject, and needs nothing here.
  auto operands = [&](const std::vector<uint32_t> &indices,
                      std::vector<rt::OperandType> &out) {
    for (uint32_t t : indices) {
      if (t >= plan.tensors.size())
        return false;
      out.push_back({static_cast<rt::DType>(plan.tensors[t].dtype), &plan.tensors[t].shape});
    }
    return true;
  };
  std::vector<rt::OperandType> inputs, outputs;
  inputs.reserve(instr.inputs.size());
  outputs.reserve(instr.outputs.size());
  if (!operands(instr.inputs, inputs) || !operands(instr.outputs, outputs))
    return 0;
  rt::LazyAttrs attrs([&](rt::Attrs &out) {
    for (const AttrDesc &a : instr.attrs)
      out.set(a.name, {a.ints, a.floats, a.str});
  });
  return rt::kernelWorkspaceBytes(instr.kernel, inputs, outputs, attrs);
}

void declareWorkspace(PlanDesc &plan) {
  uint64_t most = 0;
  for (InstrDesc &instr : plan.instrs) {
    instr.workspace = workspaceBytesOf(plan, instr);
    most = std::max(most, instr.workspace);
  }
  plan.workspaceBytes.assign(plan.worldSize, most);
}

uint64_t peakBytesOf(const PlanDesc &plan) {
  uint64_t peak = 0;
  for (const TensorDesc &t : plan.tensors)
    peak = std::max(peak, t.offset + tensorBytes(t));
  return peak;
}

namespace {

// plan.fbs asks for 64-byte aligned weight blobs (force_align: 64, for mmap-friendly
// plans), but FlatBuffers 2.0.8's ForceVectorAlignment, used by CreateBufferDirect, asserts
// alignment <= FLATBUFFERS_MAX_ALIGNMENT (32) in debug builds. PreAlign pads the same way
// without that assert; the final buffer is then aligned to 64 as a whole.
constexpr size_t kBufferAlignment = 64;

flatbuffers::Offset<fb::Buffer> buildBuffer(flatbuffers::FlatBufferBuilder &fbb,
                                            const std::vector<uint8_t> &data) {
  fbb.PreAlign(data.size(), kBufferAlignment);
  auto bytes = fbb.CreateVector(data);
  return fb::CreateBuffer(fbb, bytes);
}

flatbuffers::Offset<fb::Attr> buildAttr(flatbuffers::FlatBufferBuilder &fbb, const AttrDesc &a) {
  auto name = fbb.CreateString(a.name);
  auto ints = a.ints.empty() ? 0 : fbb.CreateVector(a.ints);
  auto floats = a.floats.empty() ? 0 : fbb.CreateVector(a.floats);
  auto str = a.str.empty() ? 0 : fbb.CreateString(a.str);
  return fb::CreateAttr(fbb, name, ints, floats, str);
}

} // namespace

std::vector<uint8_t> serializePlan(const PlanDesc &plan) {
  flatbuffers::FlatBufferBuilder fbb(1 << 16);

  // Buffers first, in tensor order, so that weights sit at the front of the file and the
  // same PlanDesc always lays them out identically.
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  std::vector<int32_t> bufferOfTensor(plan.tensors.size(), -1);
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorDesc &t = plan.tensors[i];
    if (t.data.empty())
      continue;
    bufferOfTensor[i] = static_cast<int32_t>(buffers.size());
    buffers.push_back(buildBuffer(fbb, t.data));
  }
  // Then the pieces of sharded params, in tensor and piece order.
  std::vector<std::vector<int32_t>> bufferOfPiece(plan.tensors.size());
  for (size_t i = 0; i < plan.tensors.size(); ++i)
    for (const ShardPieceDesc &p : plan.tensors[i].shard.pieces) {
      bufferOfPiece[i].push_back(p.data.empty() ? -1 : static_cast<int32_t>(buffers.size()));
      if (!p.data.empty())
        buffers.push_back(buildBuffer(fbb, p.data));
    }

  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  tensors.reserve(plan.tensors.size());
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorDesc &t = plan.tensors[i];
    auto name = fbb.CreateString(t.name);
    auto shape = fbb.CreateVector(t.shape);
    auto init = t.init.empty() ? 0 : fbb.CreateString(t.init);
    flatbuffers::Offset<fb::Shard> shard = 0;
    if (!t.shard.pieces.empty()) {
      std::vector<flatbuffers::Offset<fb::ShardPiece>> pieces;
      for (size_t k = 0; k < t.shard.pieces.size(); ++k) {
        const ShardPieceDesc &p = t.shard.pieces[k];
        pieces.push_back(fb::CreateShardPieceDirect(fbb, p.name.c_str(), &p.shape, p.offset,
                                                    p.numel, bufferOfPiece[i][k],
                                                    p.init.empty() ? nullptr : p.init.c_str()));
      }
      shard = fb::CreateShardDirect(fbb, t.shard.unit.c_str(), &t.shard.groups,
                                    t.shard.groupSize, t.shard.paddedNumel, &pieces);
    }
    tensors.push_back(fb::CreateTensor(fbb, name, t.dtype, shape, t.kind, t.offset,
                                       tensorBytes(t), bufferOfTensor[i], init, shard));
  }

  // Kernel names are interned in first-use order: deterministic and independent of any
  // hash or pointer order.
  std::vector<std::string> kernelNames;
  std::map<std::string, uint32_t> kernelIndex;
  std::vector<flatbuffers::Offset<fb::Instr>> instrs;
  instrs.reserve(plan.instrs.size());
  for (const InstrDesc &in : plan.instrs) {
    auto [it, inserted] =
        kernelIndex.emplace(in.kernel, static_cast<uint32_t>(kernelNames.size()));
    if (inserted)
      kernelNames.push_back(in.kernel);
    std::vector<flatbuffers::Offset<fb::Attr>> attrs;
    attrs.reserve(in.attrs.size());
    for (const AttrDesc &a : in.attrs)
      attrs.push_back(buildAttr(fbb, a));
    instrs.push_back(fb::CreateInstrDirect(fbb, it->second, &in.inputs, &in.outputs, &attrs,
                                           in.name.c_str(),
                                           in.waits.empty() ? nullptr : &in.waits,
                                           in.workspace));
  }

  std::vector<flatbuffers::Offset<flatbuffers::String>> kernels;
  kernels.reserve(kernelNames.size());
  for (const std::string &k : kernelNames)
    kernels.push_back(fbb.CreateString(k));

  std::vector<flatbuffers::Offset<flatbuffers::String>> outputNames;
  for (const std::string &name : plan.outputNames)
    outputNames.push_back(fbb.CreateString(name));
  std::vector<flatbuffers::Offset<fb::Update>> updates;
  for (auto [source, target] : plan.updates)
    updates.push_back(fb::CreateUpdate(fbb, source, target));
  flatbuffers::Offset<fb::LrSchedule> schedule = 0;
  if (plan.training)
    schedule = fb::CreateLrScheduleDirect(
        fbb, plan.schedule.kind.c_str(), plan.schedule.lr, plan.schedule.warmupSteps,
        plan.schedule.totalSteps, plan.schedule.minLr, plan.schedule.gamma, plan.schedule.stepSize,
        plan.schedule.power, plan.schedule.decaySteps,
        plan.schedule.milestones.empty() ? nullptr : &plan.schedule.milestones,
        plan.schedule.cycleSteps, plan.schedule.cycleMult, plan.schedule.pctStart,
        plan.schedule.annealLinear, plan.schedule.threePhase, plan.schedule.divFactor,
        plan.schedule.finalDivFactor, plan.schedule.stepSizeDown, plan.schedule.cyclicMode.c_str(),
        plan.schedule.patience, plan.schedule.threshold, plan.schedule.thresholdAbs,
        plan.schedule.cooldown, plan.schedule.eps, plan.schedule.plateauSteps);
  auto root = fb::CreatePlanDirect(fbb, kPlanVersion, plan.worldSize, &plan.arenaBytes,
                                   &kernels, &tensors, &instrs, &plan.inputs, &plan.outputs,
                                   &buffers, plan.report.c_str(), plan.source.c_str(),
                                   plan.training, &updates, schedule,
                                   plan.outputNames.empty() ? nullptr : &outputNames,
                                   plan.workspaceBytes.empty() ? nullptr : &plan.workspaceBytes,
                                   plan.peakBytes.empty() ? nullptr : &plan.peakBytes,
                                   plan.generatedCpu.empty() ? nullptr : &plan.generatedCpu,
                                   plan.device.c_str(),
                                   plan.generatedCuda.empty() ? nullptr : &plan.generatedCuda);
  fb::FinishPlanBuffer(fbb, root);
  std::vector<uint8_t> bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  appendPlanChecksum(bytes);
  return bytes;
}

CommVolume commVolume(const PlanDesc &plan, int64_t rank) {
  CommVolume out;
  for (const InstrDesc &instr : plan.instrs) {
    if (!out.bytes.count(instr.kernel))
      continue;
    std::vector<int64_t> groups;
    int64_t groupSize = 1;
    for (const AttrDesc &a : instr.attrs) {
      if (a.name == "groups")
        groups = a.ints;
      if (a.name == "group_size")
        groupSize = a.ints.front();
    }
    if (std::find(groups.begin(), groups.end(), rank) == groups.end())
      continue; // the rank skips it
    const TensorDesc &in = plan.tensors[instr.inputs.front()];
    const TensorDesc &result = plan.tensors[instr.outputs.front()];
    uint64_t sent =
        collectiveBytesSent(instr.kernel, tensorBytes(instr.kernel == "all_gather" ? result : in),
                            (uint64_t)groupSize);
    out.bytes[instr.kernel] += sent;
    out.total += sent;
    ++out.count[instr.kernel];
  }
  return out;
}

} // namespace plait::plan
