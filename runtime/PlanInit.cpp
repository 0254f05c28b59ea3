// Initial values of params and constants (PlanInit.h), moved out of the CPU executor so that
// every backend initialises exactly alike.
#include "runtime/PlanInit.h"

#include <algorithm>
#include <cstring>

namespace plait::rt {
namespace {

// This rank's slice [i * S, (i + 1) * S) of the unit's flat buffer: the overlapping part of
// each piece, from its data or its initializer (which fillParam evaluates per element, so
// the slice equals that part of the unsharded param), zeros in the padding.
Status initialShardBytes(const Plan &plan, uint32_t tensor, uint32_t rank, uint64_t seed,
                         uint8_t *dst) {
  const PlanTensor &t = plan.tensors[tensor];
  uint32_t group, index;
  if (!t.shard.groups.locate(rank, group, index)) // the loader places every rank
    return Status::internal(fmt::format("{}: rank {} holds no shard of tensor {}", plan.path,
                                        rank, tensor));
  size_t elementBytes = dtypeSize(t.dtype);
  uint64_t first = uint64_t(index) * uint64_t(t.numel()), last = first + uint64_t(t.numel());
  std::memset(dst, 0, t.bytes);
  for (const ShardPiece &p : t.shard.pieces) {
    uint64_t lo = std::max(first, p.offset), hi = std::min(last, p.offset + p.numel);
    if (lo >= hi)
      continue;
    uint8_t *out = dst + (lo - first) * elementBytes;
    uint64_t inPiece = lo - p.offset;
    if (p.data >= 0) {
      std::memcpy(out, plan.bufferData(p.data) + inPiece * elementBytes,
                  (hi - lo) * elementBytes);
      continue;
    }
    Status filled = fillParam(p.init, t.dtype, int64_t(hi - lo), out, seed, p.name,
                              int64_t(inPiece));
    if (!filled.ok())
      return filled.withPrefix(fmt::format("{}: tensor {} ('{}'), piece '{}': ", plan.path,
                                           tensor, printable(t.name), printable(p.name)));
  }
  return {};
}

} // namespace

Status initialTensorBytes(const Plan &plan, uint32_t tensor, uint32_t rank, uint64_t seed,
                          uint8_t *dst) {
  const PlanTensor &t = plan.tensors[tensor];
  if (t.sharded)
    return initialShardBytes(plan, tensor, rank, seed, dst);
  if (t.data >= 0) {
    if (t.bytes != 0) // an empty tensor's source may be a null pointer
      std::memcpy(dst, plan.bufferData(t.data), t.bytes);
    return {};
  }
  Status filled = fillParam(t.init, t.dtype, t.numel(), dst, seed, t.name);
  if (!filled.ok())
    return filled.withPrefix(
        fmt::format("{}: tensor {} ('{}'): ", plan.path, tensor, printable(t.name)));
  return {};
}

} // namespace plait::rt
