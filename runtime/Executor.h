// Executes a loaded plan on one rank: one arena and one workspace, instructions in plan order.
// After create(), a step (setInput, setHyperParameters, run) allocates no memory; only the
// communicator's MPI calls may.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/Arena.h"
#include "runtime/GeneratedKernels.h"
#include "runtime/Plan.h"
#include "runtime/Status.h"
#include "runtime/TensorStore.h"
#include "runtime/comm/Comm.h"

namespace plait::rt {

class StepTrace;

struct ExecutorOptions {
  uint32_t rank = 0;  // which entry of Plan::arenaBytes to allocate
  uint64_t seed = 0;  // for params initialised from a spec (ParamInit)
  /// Runs the plan's collectives; its rank() and size() must be `rank` and the plan's world
  /// size. Null: a single-process communicator (makeLocalComm), enough for plans whose
  /// groups all have one rank. Must outlive the executor.
  Communicator *comm = nullptr;
};

class Executor final : public TensorStore {
public:
  /// Allocates the rank's arena and workspace and writes every param and constant into the
  /// arena. `plan` must outlive the executor.
  static Status create(const Plan &plan, const ExecutorOptions &options,
                       std::unique_ptr<Executor> &out);

  /// Copies graph input `index` (a position in Plan::inputs) into the arena, after checking
  /// that `value` has the planned dtype and shape.
  Status setInput(size_t index, const TensorView &value);
  /// The same, from raw bytes of `dtype` and `shape` (no TensorView needs building).
  Status setInput(size_t index, DType dtype, const std::vector<int64_t> &shape,
                  const void *data);

  /// Writes the per-step hyper-parameters (the "lr", "prev_lr" and "step" tensors, when
  /// present): `lr` the step's, `prevLr` the one the step before ran at (LrController).
  void setHyperParameters(int64_t step, double lr, double prevLr);

  /// Runs every instruction once, in order, then (training plans) copies each update's
  /// new value into its param or state. Every graph input must have been set since the
  /// previous run: the arena reuses input memory for activations within a step.
  /// Collectives start at their place in the stream and complete before the first
  /// instruction that waits for them, or else at the end of the step, before the updates.
  /// A kernel error reads "PLAN: instruction N ('name', kernel K): message".
  Status run();

  /// Bytes this rank sent in collectives during the last run() (ring model, CommModel.h).
  const CommBytes &stepCommBytes() const { return stepCommBytes_; }

  /// The highest arena byte the last step touched: the largest offset + bytes over the
  /// tensors that its instructions read or write, its inputs and hyper-parameters and its
  /// updates (the same definition as the plan's peak_bytes, so the two compare exactly).
  uint64_t stepArenaHighWater() const { return stepArenaHighWater_; }
  /// The most workspace bytes one instruction of the last run() used.
  uint64_t stepWorkspaceHighWater() const { return stepWorkspaceHighWater_; }

  /// The full value of param `tensor`: its own bytes, or for a sharded param the unit's
  /// whole flat buffer (padded), gathered from the rank's group. Collective for sharded
  /// params: every rank of the world must call it for the same tensors in the same order.
  Status gatherParam(uint32_t tensor, std::vector<uint8_t> &out);

  /// A tensor in the arena (valid until the executor is destroyed; its contents are only
  /// meaningful while the tensor is live, since the arena reuses memory over a step).
  TensorView view(uint32_t tensor) const override;
  /// Graph output `index` (a position in Plan::outputs), read after run().
  TensorView output(size_t index) const { return view(plan_.outputs[index]); }

  /// Records the next run()s' instructions, waits and collectives into `trace` (Trace.h);
  /// null (the default) records nothing and costs one pointer test per event.
  void setTrace(StepTrace *trace) { trace_ = trace; }

  const Plan &plan() const override { return plan_; }
  /// One line on the plan's generated kernels (empty when the plan fuses nothing).
  const std::string &generatedNote() const { return generated_.note; }
  uint32_t rank() const override { return options_.rank; }
  uint64_t arenaBytes() const { return arena_.size(); }
  uint64_t workspaceBytes() const { return workspace_.size(); }
  uint64_t instructionsRun() const { return instructionsRun_; }

private:
  // An instruction with its operand views pointing into the arena, built once.
  struct BoundInstr {
    std::vector<TensorView> inputs, outputs;
    uint64_t arenaEnd = 0; // the largest offset + bytes of its operands
    // Collectives: this rank's group (member == false: the rank skips the instruction).
    bool member = false;
    CommGroup group = 0;
    bool inFlight = false; // started this step and not yet completed
    CommRequest request = 0;
  };

  Executor(const Plan &plan, const ExecutorOptions &options)
      : plan_(plan), options_(options) {}
  Status createGroups();
  Status initialiseParamsAndConstants();
  Status runInstr(size_t i);
  /// Notes that the step touches `tensor` (for stepArenaHighWater).
  void touch(uint32_t tensor) {
    const PlanTensor &t = plan_.tensors[tensor];
    touched_ = std::max(touched_, t.offset + t.bytes);
  }
  Status startCollective(size_t i);
  Status completeCollective(size_t i);
  std::string where(size_t i) const;

  const Plan &plan_;
  ExecutorOptions options_;
  std::unique_ptr<Communicator> ownComm_; // when options_.comm was null
  Communicator *comm_ = nullptr;
  Arena arena_;
  Arena workspace_; // kernels' scratch (KernelCall::workspace), shared by every instruction
  GeneratedKernels generated_; // the plan's generated code, per instruction
  std::vector<BoundInstr> bound_;
  std::vector<size_t> inFlight_;       // instructions whose collectives are in flight
  CommBytes stepCommBytes_;
  std::vector<bool> inputSet_;
  std::vector<uint32_t> hyperTensors_; // "lr"/"step" tensors, written before each step
  uint64_t instructionsRun_ = 0;
  uint64_t touched_ = 0; // this step's arena high water so far
  uint64_t stepArenaHighWater_ = 0, stepWorkspaceHighWater_ = 0;
  StepTrace *trace_ = nullptr;
};

} // namespace plait::rt
