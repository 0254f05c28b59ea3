// The in-memory plan: what the loader decodes and checks once, so that the executor never
// reads FlatBuffers on the hot path.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/Kernel.h"
#include "runtime/LrSchedule.h"
#include "runtime/ParamInit.h"
#include "runtime/Tensor.h"
#include "runtime/comm/Comm.h"

namespace plait::rt {

/// Same numbering as plait.fb.TensorKind in codegen/schema/plan.fbs.
enum class TensorKind : uint8_t {
  Activation = 0,
  Input = 1,
  Param = 2,
  Constant = 3,
  State = 4, // persistent optimizer state, starts as zeros
  Hyper = 5  // a scalar the runtime writes before each step ("lr" or "step")
};
const char *tensorKindName(TensorKind k);

/// The weight EMA's averages (plait.weight_ema, --ema-decay) are states named after what they
/// average: "<param>.ema", and "<unit>.ema" for a sharded unit, whose pieces are
/// "<param>.ema". The param a name averages, or "" when it names no average.
inline std::string averagedParam(const std::string &name) {
  constexpr size_t kSuffix = 4; // ".ema"
  return name.size() > kSuffix && name.compare(name.size() - kSuffix, kSuffix, ".ema") == 0
             ? name.substr(0, name.size() - kSuffix)
             : std::string();
}

/// One parameter inside a sharded unit's flat buffer (plan.fbs ShardPiece): elements
/// [offset, offset + numel) of the flat buffer, initialised from `data` or `init`.
struct ShardPiece {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t offset = 0, numel = 0; // elements of the flat buffer
  int32_t data = -1;              // index into Plan::buffers (the whole parameter), or -1
  ParamInit init;
};

/// A Param holding one rank's shard of a flat unit (plan.fbs Shard): rank r holds elements
/// [i * S, (i + 1) * S) of the `paddedNumel`-element flat buffer, where i is r's index in
/// its group and S the tensor's element count (paddedNumel = S * groups.groupSize).
struct ShardSpec {
  std::string unit;
  RankGroups groups; // every rank exactly once
  uint64_t paddedNumel = 0;
  std::vector<ShardPiece> pieces;
};

struct PlanTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  TensorKind kind = TensorKind::Activation;
  uint64_t offset = 0;  // byte offset in the rank's arena
  uint64_t bytes = 0;   // numel * dtypeSize(dtype), checked by the loader
  int32_t data = -1;    // index into Plan::buffers, or -1
  ParamInit init;       // Param without data: how to initialise it
  bool sharded = false; // a Param holding one rank's shard of `shard`
  ShardSpec shard;

  /// The loader bounds the product of the non-zero dimensions by int64_t.
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// Writes a hyper-parameter's value (Hyper tensor `t`: an f32 or f64 scalar, as the loader
/// checks) to `dst`, its bytes in an arena or a host buffer.
inline void writeHyperParameter(const PlanTensor &t, double value, void *dst) {
  if (t.dtype == DType::F64) {
    std::memcpy(dst, &value, sizeof value);
  } else {
    float f = static_cast<float>(value);
    std::memcpy(dst, &f, sizeof f);
  }
}

/// What a collective instruction does, decoded from its kernel name and attributes.
struct CollectiveSpec {
  CollectiveKind kind = CollectiveKind::AllReduce;
  RankGroups groups;
  bool mean = false; // all_reduce, reduce_scatter: divide the sum by the group size
  uint32_t root = 0; // broadcast: index within the group
};

struct PlanInstr {
  uint32_t kernel = 0;      // index into Plan::kernels
  KernelFn fn = nullptr;    // resolved by the loader; null exactly for collectives
  std::vector<uint32_t> inputs, outputs; // tensor indices
  Attrs attrs;
  std::string name;         // source location for messages
  std::vector<uint32_t> waits; // earlier collectives that must complete before this runs
  bool isCollective = false;
  CollectiveSpec collective; // when isCollective
  uint64_t workspace = 0;    // workspace bytes the plan declares for it (>= its kernel's need)
};

/// A weight blob: a byte range of Plan::fileBytes (kept as offsets, so that copying or
/// moving a Plan never leaves a dangling pointer).
struct PlanBuffer {
  size_t offset = 0;
  size_t size = 0;
};

/// After a training step, `source`'s bytes are copied into `target` (a Param or State).
struct PlanUpdate {
  uint32_t source = 0, target = 0;
};

struct Plan {
  std::string path;                 // the file it was loaded from; prefixes every message
  uint32_t version = 0;
  uint32_t worldSize = 1;
  std::vector<uint64_t> arenaBytes; // one entry per rank
  std::vector<uint64_t> workspaceBytes; // one per rank: kernels' scratch, beside the arena
  /// One per rank, or empty: the compiler's planned peak, the largest offset + bytes over the
  /// rank's tensors (informational; Executor::stepArenaHighWater measures the same thing).
  std::vector<uint64_t> peakBytes;
  std::vector<std::string> kernels;
  std::vector<PlanTensor> tensors;
  std::vector<PlanInstr> instrs;
  std::vector<uint32_t> inputs;     // graph inputs (tensor indices), in order
  std::vector<uint32_t> outputs;    // graph outputs (tensor indices), in order
  std::vector<std::string> outputNames; // graph output names, in order (one per output)
  std::vector<PlanBuffer> buffers;
  std::string report;               // the compiler's report, JSON
  std::string source;               // the model file the plan was compiled from
  std::vector<uint8_t> fileBytes;   // the whole plan file; buffers point into it
  /// The plan's generated CPU kernels (a shared object), or empty: fused_elementwise
  /// instructions then run the interpreter.
  std::vector<uint8_t> generatedCpu;
  /// The plan's generated CUDA kernels (an nvcc fatbin for sm_80 and sm_90), or empty; each
  /// fused_elementwise instruction names its kernel in its "cuda_symbol" attribute.
  std::vector<uint8_t> generatedCuda;
  /// The device the plan was compiled for: "cpu" or "cuda" (the CUDA executor runs "cuda").
  std::string device = "cpu";
  bool training = false;            // output 0 is the loss; updates run after each step
  std::vector<PlanUpdate> updates;
  LrSchedule schedule;

  const uint8_t *bufferData(int32_t index) const { return fileBytes.data() + buffers[index].offset; }
  /// Frees fileBytes (the initial weights and constants, usually most of the file) once an
  /// executor has copied them into its arena; bufferData must not be called after this.
  void releaseFileBytes() {
    std::vector<uint8_t>().swap(fileBytes);
    buffers.clear();
  }
  /// Samples per step over every rank: the first graph input's leading dimension is the
  /// per-rank batch (1 for a plan without batched inputs).
  int64_t globalBatch() const {
    int64_t batch = 1;
    if (!inputs.empty() && !tensors[inputs[0]].shape.empty())
      batch = tensors[inputs[0]].shape[0];
    return batch * int64_t(worldSize);
  }
  /// The index of the training step's grad_norm output (the gradients' global norm, with
  /// --clip-grad-norm or --log-grad-norm: a float scalar, logged each step), or -1.
  int gradNormOutput() const {
    if (!training)
      return -1;
    for (size_t i = 1; i < outputs.size() && i < outputNames.size(); ++i)
      if (outputNames[i] == "grad_norm" && tensors[outputs[i]].numel() == 1)
        return int(i);
    return -1;
  }
};

} // namespace plait::rt
