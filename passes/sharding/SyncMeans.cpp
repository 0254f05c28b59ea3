// plait.sync_mean lowered for a world size (SyncMeans.h).
#include "passes/sharding/SyncMeans.h"

#include "ir/PlaitDialect.h"
#include "ir/RankGroups.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace plait {

LogicalResult lowerSyncMeans(ModuleOp module, func::FuncOp func, int64_t worldSize) {
  Block &body = func.getBody().front();
  // The count of a synchronised statistic is every rank's values.
  for (auto constant : llvm::to_vector(body.getOps<ConstantOp>())) {
    if (!constant->hasAttr("plait.unbiased_ranks"))
      continue;
    auto count = constant->getAttrOfType<IntegerAttr>("plait.unbiased_count");
    auto type = dyn_cast<RankedTensorType>(constant.getType());
    if (!count || count.getInt() < 1 || !type || !isa<FloatType>(type.getElementType()) ||
        type.getNumElements() != 1)
      return constant.emitOpError("plait.unbiased_ranks needs a float scalar constant marked "
                                  "plait.unbiased_count = n (n >= 1)");
    int64_t m = count.getInt() * worldSize;
    if (m < 2)
      return constant.emitOpError("plait.unbiased_count ")
             << count.getInt() << " over " << worldSize
             << " rank(s) is a statistic of one value: it has no unbiased variance";
    constant.setValueAttr(DenseElementsAttr::get(
        type, FloatAttr::get(type.getElementType(), double(m) / double(m - 1)).getValue()));
    constant->setAttr("plait.unbiased_count", IntegerAttr::get(count.getType(), m));
    constant->removeAttr("plait.unbiased_ranks");
  }
  int64_t reduces = 0, elements = 0;
  MLIRContext *ctx = module.getContext();
  for (auto sync : llvm::to_vector(body.getOps<SyncMeanOp>())) {
    ++reduces;
    elements += cast<RankedTensorType>(sync.getType()).getNumElements();
    Value lowered = sync.getInput();
    if (worldSize > 1) {
      OpBuilder b(sync);
      lowered = b.create<AllReduceOp>(sync.getLoc(), sync.getInput(),
                                      groupsAttr(ctx, worldGroup(worldSize)),
                                      b.getStringAttr("mean"));
    }
    sync.replaceAllUsesWith(lowered);
    sync.erase();
  }
  if (reduces > 0) {
    Builder b(ctx);
    module->setAttr(kSyncMeansAttr,
                    b.getDictionaryAttr({b.getNamedAttr("all_reduces", b.getI64IntegerAttr(
                                                            worldSize > 1 ? reduces : 0)),
                                         b.getNamedAttr("statistics", b.getI64IntegerAttr(reduces)),
                                         b.getNamedAttr("elements", b.getI64IntegerAttr(elements)),
                                         b.getNamedAttr("world_size",
                                                        b.getI64IntegerAttr(worldSize))}));
  }
  return success();
}

} // namespace plait
