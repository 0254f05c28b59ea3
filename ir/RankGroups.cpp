// Rank groups of the data-parallel ops.
#include "ir/RankGroups.h"

#include <set>

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

namespace plait {

int64_t worldSizeOf(Operation *op) {
  auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  if (!module)
    return 1;
  auto attr = module->getAttrOfType<IntegerAttr>(kWorldSizeAttr);
  return attr ? attr.getInt() : 1;
}

RankGroupList worldGroup(int64_t worldSize) { return blockGroups(worldSize, worldSize); }

RankGroupList blockGroups(int64_t worldSize, int64_t size) {
  RankGroupList groups;
  for (int64_t first = 0; first < worldSize; first += size) {
    groups.emplace_back();
    for (int64_t r = first; r < first + size; ++r)
      groups.back().push_back(r);
  }
  return groups;
}

RankGroupList strideGroups(int64_t worldSize, int64_t size) {
  RankGroupList groups;
  for (int64_t i = 0; i < size; ++i) {
    groups.emplace_back();
    for (int64_t r = i; r < worldSize; r += size)
      groups.back().push_back(r);
  }
  return groups;
}

ArrayAttr groupsAttr(MLIRContext *ctx, const RankGroupList &groups) {
  SmallVector<Attribute> list;
  for (const auto &g : groups)
    list.push_back(DenseI64ArrayAttr::get(ctx, g));
  return ArrayAttr::get(ctx, list);
}

RankGroupList groupsOf(ArrayAttr attr) {
  RankGroupList groups;
  if (!attr)
    return groups;
  for (Attribute a : attr)
    if (auto g = dyn_cast<DenseI64ArrayAttr>(a))
      groups.emplace_back(g.asArrayRef().begin(), g.asArrayRef().end());
  return groups;
}

FailureOr<int64_t> verifyGroups(Operation *op, ArrayAttr attr, StringRef what, bool everyRank) {
  RankGroupList groups = groupsOf(attr);
  if (groups.empty() || groups.size() != attr.size())
    return op->emitOpError(what) << " must list at least one group of ranks";
  int64_t world = worldSizeOf(op);
  size_t size = groups.front().size();
  std::set<int64_t> seen;
  for (const auto &g : groups) {
    if (g.empty() || g.size() != size)
      return op->emitOpError(what) << " must have groups of equal, non-zero size";
    for (int64_t r : g) {
      if (r < 0 || r >= world)
        return op->emitOpError(what) << " names rank " << r << ", outside world size " << world;
      if (!seen.insert(r).second)
        return op->emitOpError(what) << " names rank " << r << " twice";
    }
  }
  if (everyRank && (int64_t)seen.size() != world)
    return op->emitOpError(what) << " must include every rank of world size " << world;
  return (int64_t)size;
}

std::optional<int64_t> indexInGroup(const RankGroupList &groups, int64_t rank) {
  for (const auto &g : groups)
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i] == rank)
        return (int64_t)i;
  return std::nullopt;
}

const SmallVector<int64_t> *groupOf(const RankGroupList &groups, int64_t rank) {
  for (const auto &g : groups)
    if (llvm::is_contained(g, rank))
      return &g;
  return nullptr;
}

} // namespace plait
