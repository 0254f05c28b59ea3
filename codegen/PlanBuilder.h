// MLIR-free description of a plan and its FlatBuffers serialisation (codegen/schema/plan.fbs).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codegen/schema/plan_generated.h"
#include "runtime/LrSchedule.h"

namespace plait::plan {

/// One parameter inside a sharded unit's flat buffer (plan.fbs ShardPiece).
struct ShardPieceDesc {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t offset = 0, numel = 0; // elements of the flat buffer
  std::vector<uint8_t> data;      // the whole parameter's bytes, or empty (then `init`)
  std::string init;
};

/// A Param that is one rank's shard of a flat unit (plan.fbs Shard); empty `pieces` = none.
struct ShardDesc {
  std::string unit;
  std::vector<uint32_t> groups; // group-major, every rank once
  uint32_t groupSize = 0;
  uint64_t paddedNumel = 0;
  std::vector<ShardPieceDesc> pieces;
};

struct TensorDesc {
  std::string name;
  fb::DType dtype = fb::DType::F32;
  std::vector<int64_t> shape;
  fb::TensorKind kind = fb::TensorKind::Activation;
  uint64_t offset = 0;          // byte offset in the arena
  std::vector<uint8_t> data;    // Param/Constant bytes (little-endian, row-major); may be empty
  std::string init;             // Param initializer spec when `data` is empty
  ShardDesc shard;              // a sharded Param (pieces non-empty)
};

struct AttrDesc {
  std::string name;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string str;
};

struct InstrDesc {
  std::string kernel;           // op mnemonic, e.g. "matmul"
  std::vector<uint32_t> inputs; // tensor indices
  std::vector<uint32_t> outputs;
  std::vector<AttrDesc> attrs;
  std::string name;             // source location for messages
  std::vector<uint32_t> waits;  // collective instructions to complete before this one
  uint64_t workspace = 0;       // scratch bytes its kernel takes (workspaceBytesOf)
};

/// plan.fbs LrSchedule: the runtime's own struct (header-only), so the two cannot drift.
using ScheduleDesc = rt::LrSchedule;

struct PlanDesc {
  uint32_t worldSize = 1;
  std::vector<uint64_t> arenaBytes; // one per rank
  std::vector<uint64_t> workspaceBytes; // one per rank (>= every instruction's workspace), or
                                        // empty: none
  std::vector<uint64_t> peakBytes;  // one per rank (peakBytesOf), or empty
  std::vector<TensorDesc> tensors;
  std::vector<InstrDesc> instrs;
  std::vector<uint32_t> inputs, outputs;
  std::vector<std::string> outputNames; // by position in `outputs`; may be empty
  std::string report;               // JSON
  std::string source;
  bool training = false;
  std::vector<std::pair<uint32_t, uint32_t>> updates; // (source, target) tensor indices
  ScheduleDesc schedule;
  std::vector<uint8_t> generatedCpu; // the generated kernels' shared object, or empty
  std::string device = "cpu";        // plait-compile --device: cpu | cuda
  std::vector<uint8_t> generatedCuda; // the generated CUDA kernels' fatbin, or empty
};

size_t elementSize(fb::DType t);

/// Element count (0 for a shape with a negative dimension).
uint64_t numelOf(const TensorDesc &t);

/// Element count times element size (0 for a shape with a negative dimension).
uint64_t tensorBytes(const TensorDesc &t);

/// The integers of `instr`'s attribute `name`, or null when it has none.
const std::vector<int64_t> *intsAttr(const InstrDesc &instr, const char *name);

/// The workspace bytes the runtime's kernel for `instr` takes per call
/// (runtime/cpu/Workspace.h), from the kernel name, operand types and attributes.
uint64_t workspaceBytesOf(const PlanDesc &plan, const InstrDesc &instr);

/// Sets every instruction's workspace (workspaceBytesOf) and workspaceBytes to their maximum
/// on every rank: what a plan whose ranks run the same instructions declares.
void declareWorkspace(PlanDesc &plan);

/// The planned peak of a plan whose ranks share one layout: the largest offset + bytes over
/// its tensors.
uint64_t peakBytesOf(const PlanDesc &plan);

/// Serialises `plan` (version kPlanVersion, identifier "PLAN", then the checksum trailer of
/// codegen/schema/PlanChecksum.h); deterministic: the same
/// PlanDesc always gives the same bytes. Kernel names are interned in first-use order.
std::vector<uint8_t> serializePlan(const PlanDesc &plan);

/// What one rank sends per step, by collective kind (all_reduce, reduce_scatter, all_gather,
/// broadcast), under the ring model of CommModel.h, and how many collectives of each kind
/// it joins.
struct CommVolume {
  std::map<std::string, uint64_t> bytes{
      {"all_reduce", 0}, {"reduce_scatter", 0}, {"all_gather", 0}, {"broadcast", 0}};
  std::map<std::string, int64_t> count;
  uint64_t total = 0;
};
CommVolume commVolume(const PlanDesc &plan, int64_t rank = 0);

} // namespace plait::plan
