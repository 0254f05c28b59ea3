// Host copies of one rank's params and optimizer states, for a backend whose tensors live on
// a device (the CUDA backend): pull() copies them from the device, checkpoints and
// --save-weights read (or a resume writes) the copies through the TensorStore interface, and
// push() copies them back. Other tensors (activations, constants) have no copy.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/TensorStore.h"

namespace plait::rt {

class HostTensors final : public TensorStore {
public:
  /// Copies plan tensor `tensor`'s bytes (this rank's) from the device into `out`, or from
  /// `bytes` (its planned size) onto the device.
  using Read = std::function<Status(uint32_t tensor, std::vector<uint8_t> &out)>;
  using Write = std::function<Status(uint32_t tensor, const std::vector<uint8_t> &bytes)>;

  HostTensors(const Plan &plan, uint32_t rank) : plan_(plan), rank_(rank) {}

  /// Every param and state, read afresh (a sharded one's padding included, so that push()
  /// writes back what the device held there).
  Status pull(const Read &read);
  /// Every param and state pulled, written back.
  Status push(const Write &write) const;

  const Plan &plan() const override { return plan_; }
  uint32_t rank() const override { return rank_; }
  /// A param's or state's copy (after pull()); any other tensor's view has no data.
  TensorView view(uint32_t tensor) const override;

private:
  const Plan &plan_;
  uint32_t rank_;
  // By plan tensor; mutable: TensorStore's views are writable, as the executor's arena is.
  mutable std::vector<std::vector<uint8_t>> bytes_;
};

} // namespace plait::rt
