// Verifiers of Adafactor's ops: adafactor_update, whole or on a flat shard, and the sums a
// sharded one takes from every rank (adafactor_stats, adafactor_norms), whose layout
// codegen/schema/AdafactorShard.h defines.
#include "codegen/schema/AdafactorShard.h"
#include "ir/PlaitDialect.h"
#include "ir/RankGroups.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace plait {
namespace {

/// A sharded Adafactor op's layout: `segments` and `factors` (AdafactorShard.h), fitting the
/// group's whole flat buffer (this rank's 1-D `param` times the size of a group of `groups`,
/// one rank without them); `grad` like `param`. Fills `out` and the stats' length.
LogicalResult verifyShardLayout(Operation *op, Value param, Value grad, ArrayRef<int64_t> segments,
                                ArrayRef<int64_t> factors, ArrayAttr groups,
                                std::vector<adafactor::Segment> &out, int64_t &statsLength) {
  auto shardGroups = verifyShardGroups(op, groups);
  if (failed(shardGroups))
    return failure();
  const int64_t groupSize = *shardGroups;
  auto type = cast<RankedTensorType>(param.getType());
  if (type.getRank() != 1)
    return op->emitOpError("works on a flat (1-D) shard, got ") << type;
  if (grad.getType() != type)
    return op->emitOpError("grad ") << grad.getType() << " differs from the param " << type;
  std::string error = adafactor::layoutSegments(
      std::vector<int64_t>(segments.begin(), segments.end()),
      std::vector<int64_t>(factors.begin(), factors.end()), out, statsLength);
  if (!error.empty())
    return op->emitOpError(error);
  const adafactor::Segment &last = out.back();
  if (last.start + last.length > type.getDimSize(0) * groupSize)
    return op->emitOpError("segments (")
           << last.start + last.length << " elements) must fit the flat buffer ("
           << type.getDimSize(0) << " x " << groupSize << " ranks)";
  return success();
}

/// A 1-D f64 tensor of `length` entries, named `what`.
LogicalResult verifySums(Operation *op, Type type, int64_t length, StringRef what) {
  auto ranked = cast<RankedTensorType>(type);
  if (ranked.getRank() != 1 || ranked.getDimSize(0) != length)
    return op->emitOpError(what) << " must be tensor<" << length << "xf64>, got " << type;
  return success();
}

/// A sharded update's second-moment states (and their results, when given), in segment
/// order: exp_avg_sq_row and exp_avg_sq_col of a factored segment (batches x rows and
/// batches x cols elements), exp_avg_sq of an unfactored one (its elements); each of the
/// param's element type.
LogicalResult verifyShardMoments(Operation *op, Type element, ValueRange states,
                                 std::optional<ValueRange> results,
                                 ArrayRef<adafactor::Segment> segments) {
  SmallVector<std::pair<int64_t, StringRef>> want;
  for (const adafactor::Segment &s : segments) {
    if (s.factored()) {
      want.push_back({s.rowCount(), "exp_avg_sq_row"});
      want.push_back({s.colCount(), "exp_avg_sq_col"});
    } else {
      want.push_back({s.length, "exp_avg_sq"});
    }
  }
  if (states.size() != want.size())
    return op->emitOpError("takes ") << want.size() << " second-moment states for its "
                                     << segments.size() << " segments, not " << states.size();
  for (auto [k, w] : llvm::enumerate(want)) {
    auto type = cast<RankedTensorType>(states[k].getType());
    if (type.getElementType() != element || type.getNumElements() != w.first)
      return op->emitOpError("state ") << k << " (" << w.second << ") must hold " << w.first << " "
                                       << element << " elements, got " << type;
    if (results && (*results)[k].getType() != type)
      return op->emitOpError("new state ") << k << " (" << w.second << ") must be " << type
                                           << ", got " << (*results)[k].getType();
  }
  return success();
}

} // namespace

LogicalResult AdafactorUpdateOp::verify() {
  if (!(getEps1().convertToDouble() >= 0.0 && getEps2().convertToDouble() >= 0.0 &&
        getClipThreshold().convertToDouble() > 0.0 && getDecayRate().convertToDouble() <= 0.0 &&
        getWeightDecay().convertToDouble() >= 0.0))
    return emitOpError("needs eps1, eps2 and weight_decay >= 0, clip_threshold > 0 and "
                       "decay_rate <= 0");
  if (auto beta1 = getBeta1AttrName(); (*this)->hasAttr(beta1)) {
    double b1 = getBeta1Attr().getValueAsDouble();
    if (!(b1 >= 0.0 && b1 < 1.0))
      return emitOpError("needs 0 <= beta1 < 1, got ") << b1;
  }
  if (getWarmupInit() && !getRelativeStep())
    return emitOpError("warmup_init applies to a relative step only (relative_step)");
  auto param = cast<RankedTensorType>(getParam().getType());
  if (sharded()) {
    if (!getFactors())
      return emitOpError("with segments needs factors (each segment's rows and cols)");
    std::vector<adafactor::Segment> segments;
    int64_t statsLength = 0;
    if (failed(verifyShardLayout(*this, getParam(), getGrad(), *getSegments(), *getFactors(),
                                 getGroupsAttr(), segments, statsLength)))
      return failure();
    const size_t first = getBeta1() ? 1 : 0;
    if (getStates().size() < first + 2 || getNewStates().size() + 2 != getStates().size())
      return emitOpError("with segments takes its states, then stats and norms (")
             << getStates().size() << " operands after the step for " << getNewStates().size()
             << " new states)";
    if (first && (getStates()[0].getType() != param || getNewStates()[0].getType() != param))
      return emitOpError("exp_avg must be the shard's type ") << param;
    if (failed(verifyShardMoments(*this, param.getElementType(),
                                  getMomentStates().drop_front(first),
                                  ValueRange(getNewStates()).drop_front(first), segments)))
      return failure();
    if (failed(verifySums(*this, getShardStats().getType(), statsLength, "stats")))
      return failure();
    return verifySums(*this, getShardNorms().getType(), int64_t(segments.size()), "norms");
  }
  if (getFactors() || getGroupsAttr())
    return emitOpError("has factors or groups but no segments");
  // The state types: exp_avg as the param; the factored row and column without the last
  // dimension and without the one before it.
  SmallVector<Type> expected;
  SmallVector<StringRef> names;
  if (getBeta1()) {
    expected.push_back(param);
    names.push_back("exp_avg");
  }
  if (factored()) {
    ArrayRef<int64_t> shape = param.getShape();
    SmallVector<int64_t> col(shape.drop_back(2));
    col.push_back(shape.back());
    expected.push_back(param.clone(shape.drop_back()));
    expected.push_back(param.clone(col));
    names.append({"exp_avg_sq_row", "exp_avg_sq_col"});
  } else {
    expected.push_back(param);
    names.push_back("exp_avg_sq");
  }
  if (getStates().size() != expected.size())
    return emitOpError("takes ") << expected.size() << " states (" << llvm::join(names, ", ")
                                 << "), not " << getStates().size();
  if (getNewStates().size() != expected.size())
    return emitOpError("gives a new value of each of its ")
           << expected.size() << " states, not " << getNewStates().size();
  for (auto [k, want] : llvm::enumerate(expected))
    if (getStates()[k].getType() != want || getNewStates()[k].getType() != want)
      return emitOpError("state ")
             << names[k] << " must be " << want << ", got " << getStates()[k].getType() << " -> "
             << getNewStates()[k].getType();
  return success();
}

LogicalResult AdafactorStatsOp::verify() {
  if (!(getEps1().convertToDouble() >= 0.0))
    return emitOpError("needs eps1 >= 0");
  std::vector<adafactor::Segment> segments;
  int64_t statsLength = 0;
  if (failed(verifyShardLayout(*this, getParam(), getGrad(), getSegments(), getFactors(),
                               getGroupsAttr(), segments, statsLength)))
    return failure();
  return verifySums(*this, getStats().getType(), statsLength, "stats");
}

LogicalResult AdafactorNormsOp::verify() {
  if (!(getDecayRate().convertToDouble() <= 0.0))
    return emitOpError("needs decay_rate <= 0");
  std::vector<adafactor::Segment> segments;
  int64_t statsLength = 0;
  if (failed(verifyShardLayout(*this, getParam(), getGrad(), getSegments(), getFactors(),
                               getGroupsAttr(), segments, statsLength)))
    return failure();
  if (failed(verifySums(*this, getStats().getType(), statsLength, "stats")) ||
      failed(verifyShardMoments(*this, getParam().getType().getElementType(), getStates(),
                                std::nullopt, segments)))
    return failure();
  return verifySums(*this, getNorms().getType(), int64_t(segments.size()), "norms");
}

} // namespace plait
