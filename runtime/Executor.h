// Executes a loaded plan on one rank: one arena, instructions in plan order.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/Arena.h"
#include "runtime/Plan.h"
#include "runtime/Status.h"

namespace plait::rt {

struct ExecutorOptions {
  uint32_t rank = 0;  // which entry of Plan::arenaBytes to allocate
  uint64_t seed = 0;  // for params initialised from a spec (ParamInit)
};

class Executor {
public:
  /// Allocates the rank's arena and writes every param and constant into it. `plan` must
  /// outlive the executor.
  static Status create(const Plan &plan, const ExecutorOptions &options,
                       std::unique_ptr<Executor> &out);

  /// Copies graph input `index` (a position in Plan::inputs) into the arena, after checking
  /// that `value` has the planned dtype and shape.
  Status setInput(size_t index, const TensorView &value);

  /// Writes the per-step hyper-parameters (the "lr" and "step" tensors, when present).
  void setHyperParameters(int64_t step, double lr);

  /// Runs every instruction once, in order, then (training plans) copies each update's
  /// new value into its param or state. Every graph input must have been set since the
  /// previous run: the arena reuses input memory for activations within a step.
  /// A kernel error reads "PLAN: instruction N ('name', kernel K): message".
  Status run();

  /// A tensor in the arena (valid until the executor is destroyed; its contents are only
  /// meaningful while the tensor is live, since the arena reuses memory over a step).
  TensorView view(uint32_t tensor) const;
  /// Graph output `index` (a position in Plan::outputs), read after run().
  TensorView output(size_t index) const { return view(plan_.outputs[index]); }

  const Plan &plan() const { return plan_; }
  uint64_t arenaBytes() const { return arena_.size(); }
  uint64_t instructionsRun() const { return instructionsRun_; }

private:
  // An instruction with its operand views pointing into the arena, built once.
  struct BoundInstr {
    std::vector<TensorView> inputs, outputs;
  };

  Executor(const Plan &plan, const ExecutorOptions &options)
      : plan_(plan), options_(options) {}
  Status initialiseParamsAndConstants();
  Status runInstr(size_t i);

  const Plan &plan_;
  ExecutorOptions options_;
  Arena arena_;
  std::vector<BoundInstr> bound_;
  std::vector<bool> inputSet_;
  std::vector<uint32_t> hyperTensors_; // "lr"/"step" tensors, written before each step
  uint64_t instructionsRun_ = 0;
};

} // namespace plait::rt
