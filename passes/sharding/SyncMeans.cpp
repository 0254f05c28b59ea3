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
  int64_t reduces = 0, elements = 0, statistics = 0;
  MLIRContext *ctx = module.getContext();
  for (auto sync : llvm::to_vector(body.getOps<SyncMeanOp>())) {
    ++reduces;
    ++statistics;
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
  // A fused SyncBatchNorm (plait-fuse-norm): this rank's statistics, one all_gather of every
  // rank's and the kernel combining them; backward, this rank's two sums, one all_reduce
  // (mean) and the kernel reading them.
  const ArrayAttr world = groupsAttr(ctx, worldGroup(worldSize));
  auto vectorType = [&](Value x, int64_t copies) {
    auto type = cast<RankedTensorType>(x.getType());
    return RankedTensorType::get({copies * 2 * type.getDimSize(1)},
                                 batchNormComputeType(type.getElementType()));
  };
  int64_t batchNorms = 0, batchNormGrads = 0, gathers = 0;
  for (auto bn : llvm::to_vector(body.getOps<BatchNormOp>())) {
    if (!bn.getSync())
      continue;
    bn.setSync(false);
    ++batchNorms;
    elements += vectorType(bn.getX(), 1).getNumElements();
    if (worldSize == 1)
      continue;
    OpBuilder b(bn);
    Value local = b.create<BatchNormStatsOp>(bn.getLoc(), vectorType(bn.getX(), 1), bn.getX());
    Value all = b.create<AllGatherOp>(bn.getLoc(), vectorType(bn.getX(), worldSize), local, world);
    bn.getStatsMutable().assign(all);
    ++gathers;
  }
  for (auto grad : llvm::to_vector(body.getOps<BatchNormGradOp>())) {
    if (!grad.getSync())
      continue;
    grad.setSync(false);
    ++batchNormGrads;
    // Nothing reads dx (x is an input of the model): dscale and dbias are this rank's sums.
    if (grad.getDx().use_empty())
      continue;
    elements += vectorType(grad.getX(), 1).getNumElements();
    if (worldSize == 1)
      continue;
    OpBuilder b(grad);
    Value local = b.create<BatchNormGradSumsOp>(grad.getLoc(), vectorType(grad.getX(), 1),
                                                grad.getX(), grad.getMean(), grad.getVar(),
                                                grad.getDy(), grad.getEpsilonAttr());
    Value mean = b.create<AllReduceOp>(grad.getLoc(), local, world, b.getStringAttr("mean"));
    grad.getSumsMutable().assign(mean);
    ++reduces;
  }
  if (reduces + batchNorms + batchNormGrads > 0) {
    Builder b(ctx);
    auto count = [&](const char *name, int64_t n) {
      return b.getNamedAttr(name, b.getI64IntegerAttr(n));
    };
    module->setAttr(
        kSyncMeansAttr,
        b.getDictionaryAttr({count("all_reduces", worldSize > 1 ? reduces : 0),
                             count("all_gathers", gathers), count("statistics", statistics),
                             count("batch_norms", batchNorms),
                             count("batch_norm_grads", batchNormGrads), count("elements", elements),
                             count("world_size", worldSize)}));
  }
  return success();
}

} // namespace plait
