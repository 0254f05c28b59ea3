// Rank groups of the data-parallel ops: construction, checks and lookup.
#pragma once

#include <cstdint>
#include <optional>

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

namespace plait {

using RankGroupList = llvm::SmallVector<llvm::SmallVector<int64_t>>;

/// The module attribute holding the world size (ranks of the SPMD plan).
inline constexpr llvm::StringLiteral kWorldSizeAttr = "plait.world_size";
/// On a plait.state holding one rank's shard of a flat unit's optimizer state: a dictionary
/// {unit, groups, padded_numel, pieces: [{name, shape, offset}]} laid out like the params'
/// param_shard (written by plait-shard, read by the plan writer for checkpoints).
inline constexpr llvm::StringLiteral kStateLayoutAttr = "plait.layout";

/// `plait.world_size` of the op's module, or 1 when absent.
int64_t worldSizeOf(mlir::Operation *op);

/// {0..n-1} as one group.
RankGroupList worldGroup(int64_t worldSize);
/// Consecutive blocks of `size` ranks: {0..size-1}, {size..2size-1}, ...
RankGroupList blockGroups(int64_t worldSize, int64_t size);
/// Ranks with equal position within their block: {0, size, 2size..}, {1, size+1, ..}, ...
RankGroupList strideGroups(int64_t worldSize, int64_t size);

mlir::ArrayAttr groupsAttr(mlir::MLIRContext *ctx, const RankGroupList &groups);
RankGroupList groupsOf(mlir::ArrayAttr attr);

/// Checks `attr` (equal, non-empty group sizes; no rank twice; ranks in [0, world size));
/// on success returns the group size. `what` names the attribute in the message.
mlir::FailureOr<int64_t> verifyGroups(mlir::Operation *op, mlir::ArrayAttr attr,
                                      llvm::StringRef what, bool everyRank = false);

/// The optional `groups` of an op on a flat shard (every rank in one of them, verifyGroups):
/// their group size, 1 without them (one rank).
inline mlir::FailureOr<int64_t> verifyShardGroups(mlir::Operation *op, mlir::ArrayAttr groups) {
  if (!groups)
    return int64_t(1);
  return verifyGroups(op, groups, "groups", /*everyRank=*/true);
}

/// Position of `rank` within its group, or nullopt when it is in none.
std::optional<int64_t> indexInGroup(const RankGroupList &groups, int64_t rank);
/// The group `rank` belongs to, or nullptr.
const llvm::SmallVector<int64_t> *groupOf(const RankGroupList &groups, int64_t rank);

} // namespace plait
