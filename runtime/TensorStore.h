// Where one rank's params and optimizer states live, as checkpoints and --save-weights read
// and write them: the CPU executor's arena (Executor), or host copies of a device's tensors
// (HostTensors, for the CUDA backend), so that both backends save and restore through the
// same code (Checkpoint.h, RunCheckpoints.h).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/Plan.h"
#include "runtime/Status.h"
#include "runtime/Tensor.h"
#include "runtime/comm/Comm.h"

namespace plait::rt {

class TensorStore {
public:
  virtual ~TensorStore() = default;
  virtual const Plan &plan() const = 0;
  virtual uint32_t rank() const = 0;
  /// Host bytes of plan tensor `tensor` (this rank's shard of a sharded one), writable. A
  /// store need only hold the params and states (TensorKind::Param and ::State).
  virtual TensorView view(uint32_t tensor) const = 0;
};

/// Whether checkpoints and --save-weights read or write plan tensor `t` (a param or state).
inline bool isPersistent(const PlanTensor &t) {
  return t.kind == TensorKind::Param || t.kind == TensorKind::State;
}

/// The whole value of param or state `tensor` of `store`: its own bytes, or for a sharded one
/// the unit's whole flat buffer (padded), gathered from the rank's shard group over `comm`.
/// Collective for sharded tensors: every rank of the world must call it for the same tensors
/// in the same order.
Status gatherShards(const TensorStore &store, Communicator &comm, uint32_t tensor,
                    std::vector<uint8_t> &out);

} // namespace plait::rt
