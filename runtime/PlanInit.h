// The initial bytes of a plan's params and constants on one rank, shared by the CPU executor
// (which writes them into its arena) and the CUDA executor (which copies them to the device).
#pragma once

#include <cstdint>

#include "runtime/Plan.h"

namespace plait::rt {

/// Writes the initial value of param or constant `tensor` (plan.tensors[tensor].bytes bytes)
/// at `dst` as rank `rank` holds it: its data, its initializer evaluated with `seed`, or, for
/// a sharded param, the rank's slice of the unit's flat buffer (zeros in the padding).
/// Errors name the plan and the tensor.
Status initialTensorBytes(const Plan &plan, uint32_t tensor, uint32_t rank, uint64_t seed,
                          uint8_t *dst);

} // namespace plait::rt
