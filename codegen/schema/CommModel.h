// Bytes one rank sends for one collective, under the ring model that both the compiler's report
// and the runtime's per-step counters use (plan.fbs documents the same formulas).
#pragma once

#include <cstdint>
#include <string_view>

namespace plait {

/// `fullBytes` is the size of the whole buffer (the all_reduce operand, the reduce_scatter
/// operand, the all_gather result, the broadcast buffer); `groupSize` ranks take part.
inline uint64_t collectiveBytesSent(std::string_view kind, uint64_t fullBytes,
                                    uint64_t groupSize) {
  if (groupSize <= 1)
    return 0;
  uint64_t share = fullBytes * (groupSize - 1) / groupSize;
  return kind == "all_reduce" ? 2 * fullBytes * (groupSize - 1) / groupSize : share;
}

} // namespace plait
