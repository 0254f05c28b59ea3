// Verifiers of the data-parallel ops (sharded storage, collectives, placement-level ops).
#include "ir/PlaitDialect.h"
#include "ir/RankGroups.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;

namespace plait {
namespace {

RankedTensorType rankedType(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// A 1-D `input` of N * groupSize elements and a 1-D `result` of N (scatter) or the
/// reverse (gather), of one element type.
LogicalResult verifyChunking(Operation *op, Value whole, Value chunk, int64_t groupSize) {
  auto w = rankedType(whole), c = rankedType(chunk);
  if (w.getRank() != 1 || c.getRank() != 1)
    return op->emitOpError("works on flat (1-D) buffers, got ") << rankedType(op->getOperand(0))
                                                                << " -> "
                                                                << rankedType(op->getResult(0));
  if (w.getElementType() != c.getElementType())
    return op->emitOpError("changes the element type");
  if (w.getDimSize(0) != c.getDimSize(0) * groupSize)
    return op->emitOpError("needs the whole buffer (")
           << w.getDimSize(0) << " elements) to be the chunk (" << c.getDimSize(0)
           << ") times the group size (" << groupSize << ")";
  return success();
}

} // namespace

LogicalResult ParamShardOp::verify() {
  auto groupSize = verifyGroups(*this, getGroups(), "groups", /*everyRank=*/true);
  if (failed(groupSize))
    return failure();
  int64_t padded = getPaddedNumel();
  if (getType().getRank() != 1 || getType().getDimSize(0) * *groupSize != padded)
    return emitOpError("result must hold padded_numel / group size = ")
           << padded / *groupSize << " elements, got " << getType();
  int64_t end = 0;
  for (auto [i, attr] : llvm::enumerate(getPieces())) {
    auto piece = cast<DictionaryAttr>(attr);
    auto name = piece.getAs<StringAttr>("name");
    auto shape = piece.getAs<DenseI64ArrayAttr>("shape");
    auto offset = piece.getAs<IntegerAttr>("offset");
    if (!name || !shape || !offset)
      return emitOpError("piece ") << i << " needs name, shape and offset";
    int64_t numel = 1;
    for (int64_t d : shape.asArrayRef())
      numel *= d;
    if (offset.getInt() < end || offset.getInt() + numel > padded)
      return emitOpError("piece '") << name.getValue() << "' [" << offset.getInt() << ", "
                                    << offset.getInt() + numel
                                    << ") overlaps another or lies outside the unit";
    end = offset.getInt() + numel;
    auto value = piece.getAs<ElementsAttr>("value");
    auto init = piece.getAs<StringAttr>("init");
    if (!value == !init)
      return emitOpError("piece '") << name.getValue() << "' needs exactly one of value, init";
    if (value && (value.getShapedType().getShape() != shape.asArrayRef() ||
                  value.getElementType() != getType().getElementType()))
      return emitOpError("piece '") << name.getValue() << "' value does not match its shape";
  }
  return success();
}

LogicalResult LocalShardOp::verify() {
  auto groupSize = verifyGroups(*this, getGroups(), "groups", /*everyRank=*/true);
  return failed(groupSize) ? failure()
                           : verifyChunking(*this, getInput(), getResult(), *groupSize);
}

LogicalResult AllReduceOp::verify() {
  if (getReduce() != "sum" && getReduce() != "mean")
    return emitOpError("reduce must be sum or mean, got '") << getReduce() << "'";
  return verifyGroups(*this, getGroups(), "groups");
}

LogicalResult ReduceScatterOp::verify() {
  if (getReduce() != "sum" && getReduce() != "mean")
    return emitOpError("reduce must be sum or mean, got '") << getReduce() << "'";
  auto groupSize = verifyGroups(*this, getGroups(), "groups");
  return failed(groupSize) ? failure()
                           : verifyChunking(*this, getInput(), getResult(), *groupSize);
}

LogicalResult AllGatherOp::verify() {
  auto groupSize = verifyGroups(*this, getGroups(), "groups");
  return failed(groupSize) ? failure()
                           : verifyChunking(*this, getResult(), getInput(), *groupSize);
}

LogicalResult BroadcastOp::verify() {
  auto groupSize = verifyGroups(*this, getGroups(), "groups");
  if (failed(groupSize))
    return failure();
  if (getRoot() < 0 || getRoot() >= *groupSize)
    return emitOpError("root ") << getRoot() << " is not a position in a group of "
                                << *groupSize;
  return success();
}

LogicalResult UnshardOp::verify() {
  auto groupSize = verifyGroups(*this, getGroups(), "groups", /*everyRank=*/true);
  return failed(groupSize) ? failure()
                           : verifyChunking(*this, getResult(), getInput(), *groupSize);
}

LogicalResult SyncGradOp::verify() {
  if (!getShardGroups() && !getReplicaGroups())
    return emitOpError("needs shard_groups, replica_groups or both");
  if (auto replicas = getReplicaGroupsAttr())
    if (failed(verifyGroups(*this, replicas, "replica_groups", /*everyRank=*/true)))
      return failure();
  if (auto shards = getShardGroupsAttr()) {
    auto groupSize = verifyGroups(*this, shards, "shard_groups", /*everyRank=*/true);
    return failed(groupSize) ? failure()
                             : verifyChunking(*this, getGrad(), getResult(), *groupSize);
  }
  if (getGrad().getType() != getResult().getType())
    return emitOpError("without shard_groups keeps the gradient's type");
  return success();
}

} // namespace plait

#define GET_OP_CLASSES
#include "ir/PlaitDistOps.cpp.inc"
