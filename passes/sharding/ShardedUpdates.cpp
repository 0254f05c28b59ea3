// The optimizer updates of flat shards (ShardedUpdates.h).
#include "passes/sharding/ShardedUpdates.h"

#include "codegen/schema/AdafactorShard.h"
#include "ir/OpKinds.h"
#include "ir/PlaitTraits.h"

using namespace mlir;

namespace plait {
namespace {

/// `v` summed over `groups` (an all_reduce), or `v` where each group is one rank.
Value sumOverGroups(OpBuilder &b, Location loc, Value v, ArrayAttr groups) {
  if (groups && cast<DenseI64ArrayAttr>(groups[0]).size() > 1)
    return b.create<AllReduceOp>(loc, v, groups, b.getStringAttr("sum"));
  return v;
}

} // namespace

Operation *buildShardUpdate(OpBuilder &b, Location loc, Operation *like, Value param, Value grad,
                            ArrayRef<Value> states) {
  Operation *update = b.clone(*like);
  update->setLoc(loc);
  update->setOperand(0, param);
  update->setOperand(1, grad);
  StringRef name = like->getName().stripDialect();
  for (auto [k, state] : llvm::enumerate(states))
    update->setOperand(updateStateOperand(name, unsigned(k)), state);
  for (Value result : update->getResults())
    result.setType(param.getType());
  return update;
}

Operation *buildAdafactorShardUpdate(OpBuilder &b, Location loc,
                                     ArrayRef<AdafactorUpdateOp> perParam, Value param, Value grad,
                                     ArrayAttr groups, SmallVectorImpl<Value> &states) {
  SmallVector<int64_t> segments, factors;
  for (AdafactorUpdateOp update : perParam) {
    auto type = cast<RankedTensorType>(update.getParam().getType());
    segments.push_back(type.getNumElements());
    factors.push_back(update.factored() ? type.getDimSize(type.getRank() - 2) : 0);
    factors.push_back(update.factored() ? type.getDimSize(type.getRank() - 1) : 0);
    llvm::append_range(states, secondMoments(update));
  }
  AdafactorUpdateOp like = perParam.front();
  SmallVector<Value> operands{param, grad, like.getLr(), like.getStep()};
  operands.append(states.begin(), states.end());
  SmallVector<Type> results{param.getType()};
  for (Value state : states)
    results.push_back(state.getType());
  auto update = b.create<AdafactorUpdateOp>(loc, results, operands, like->getAttrs());
  update.setSegments(segments);
  update.setFactors(factors);
  update.setGroupsAttr(groups);
  return update;
}

void materializeLambNorms(Block &body) {
  for (LambUpdateOp update : llvm::to_vector(body.getOps<LambUpdateOp>())) {
    if (!update.getSegments() || update.getNorms())
      continue;
    OpBuilder b(update);
    Location loc = update.getLoc();
    auto segments = *update.getSegments();
    auto normsType = RankedTensorType::get({int64_t(segments.size()), 2}, b.getF32Type());
    Value norms = b.create<LambNormsOp>(
        loc, normsType, update.getParam(), update.getGrad(), update.getStep(), update.getExpAvg(),
        update.getExpAvgSq(), update.getBeta1Attr(), update.getBeta2Attr(), update.getEpsAttr(),
        update.getWeightDecayAttr(), update.getSegmentsAttr(), update.getGroupsAttr());
    // A cycled beta1 (--lr-schedule onecycle, cyclic) moves the norms' update too.
    if (Attribute cycle = update->getAttr(kMomentumCycleAttr))
      norms.getDefiningOp()->setAttr(kMomentumCycleAttr, cycle);
    norms = sumOverGroups(b, loc, norms, update.getGroupsAttr());
    SmallVector<Value> operands(update->getOperands());
    operands.push_back(norms);
    auto rebuilt =
        b.create<LambUpdateOp>(loc, update->getResultTypes(), operands, update->getAttrs());
    update->replaceAllUsesWith(rebuilt);
    update->erase();
  }
}

void materializeAdafactorSums(Block &body) {
  for (AdafactorUpdateOp update : llvm::to_vector(body.getOps<AdafactorUpdateOp>())) {
    if (!update.sharded() || update.getShardStats())
      continue;
    OpBuilder b(update);
    Location loc = update.getLoc();
    ArrayAttr groups = update.getGroupsAttr();
    ArrayRef<int64_t> lengths = *update.getSegments(), factors = *update.getFactors();
    int64_t statsLength = 0, total = 0;
    (void)adafactor::checkSegments(std::vector<int64_t>(lengths.begin(), lengths.end()),
                                   std::vector<int64_t>(factors.begin(), factors.end()),
                                   statsLength, total);
    Value stats = sumOverGroups(
        b, loc,
        b.create<AdafactorStatsOp>(loc, RankedTensorType::get({statsLength}, b.getF64Type()),
                                   update.getParam(), update.getGrad(), update.getSegmentsAttr(),
                                   update.getFactorsAttr(), groups, update.getEps1Attr()),
        groups);
    Value norms =
        sumOverGroups(b, loc,
                      b.create<AdafactorNormsOp>(
                          loc, RankedTensorType::get({int64_t(lengths.size())}, b.getF64Type()),
                          update.getParam(), update.getGrad(), update.getStep(), stats,
                          SmallVector<Value>(secondMoments(update)), update.getSegmentsAttr(),
                          update.getFactorsAttr(), groups, update.getDecayRateAttr()),
                      groups);
    SmallVector<Value> operands(update->getOperands());
    operands.append({stats, norms});
    auto rebuilt =
        b.create<AdafactorUpdateOp>(loc, update->getResultTypes(), operands, update->getAttrs());
    update->replaceAllUsesWith(rebuilt);
    update->erase();
  }
}

} // namespace plait
