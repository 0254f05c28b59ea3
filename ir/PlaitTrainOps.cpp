// Verifiers of the training ops (state, hyper, assign, gradient kernels, optimizer updates).
#include "ir/PlaitDialect.h"
#include "ir/ShapeRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;

namespace plait {
namespace {

RankedTensorType rankedType(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// Re-runs the forward op's shape rule: `forward` must produce `expected` from the
/// given operands and attributes.
template <typename ForwardOp>
LogicalResult checkForwardShape(Operation *op, ValueRange operands, DictionaryAttr attrs,
                                Type expected, StringRef what) {
  SmallVector<Type> inferred;
  typename ForwardOp::Properties props;
  if (failed(ForwardOp::setPropertiesFromAttr(props, attrs, [&]() {
        return op->emitOpError("has attributes the forward op does not accept");
      })))
    return failure();
  if (failed(ForwardOp::inferReturnTypes(op->getContext(), op->getLoc(), operands, attrs,
                                         OpaqueProperties(&props), {}, inferred)))
    return failure();
  if (inferred.front() != expected)
    return op->emitOpError(what) << " has type " << expected << ", but the forward op gives "
                                 << inferred.front();
  return success();
}

} // namespace

LogicalResult HyperOp::verify() {
  if (getName() != "lr" && getName() != "step")
    return emitOpError("unknown hyper-parameter '") << getName() << "' (expected lr or step)";
  if (getType().getRank() != 0)
    return emitOpError("must be a scalar tensor<f32>");
  return success();
}

LogicalResult AssignOp::verify() {
  if (!getTarget().getDefiningOp<ParamOp>() && !getTarget().getDefiningOp<StateOp>() &&
      !getTarget().getDefiningOp<ParamShardOp>())
    return emitOpError("target must be a plait.param, plait.param_shard or plait.state");
  if (getTarget().getType() != getValue().getType())
    return emitOpError("value type ") << getValue().getType() << " differs from target type "
                                      << getTarget().getType();
  return success();
}

LogicalResult GatherGradOp::verify() {
  auto grad = getGrad().getType(), out = getType();
  int64_t axisAttr = getAxis(); // I64Attr getters return uint64_t
  auto axis = normalizeAxis(axisAttr, out.getRank());
  if (!axis)
    return emitOpError("axis ") << axisAttr << " is out of range for rank " << out.getRank();
  SmallVector<int64_t> expected(out.getShape().take_front(*axis));
  llvm::append_range(expected, getIndices().getType().getShape());
  llvm::append_range(expected, out.getShape().drop_front(*axis + 1));
  if (grad.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("grad has shape ") << shapeToString(grad.getShape()) << ", expected "
                                          << shapeToString(expected);
  if (grad.getElementType() != out.getElementType())
    return emitOpError("changes the element type");
  return success();
}

LogicalResult Conv2dGradInputOp::verify() {
  // The forward conv of a result-shaped input and `w` must give `grad`'s shape.
  Value x = getResult();
  return checkForwardShape<Conv2dOp>(*this, {x, getW()}, (*this)->getAttrDictionary(),
                                     getGrad().getType(), "grad");
}

LogicalResult Conv2dGradWeightOp::verify() {
  Value w = getResult();
  return checkForwardShape<Conv2dOp>(*this, {getX(), w}, (*this)->getAttrDictionary(),
                                     getGrad().getType(), "grad");
}

LogicalResult MaxPool2dGradOp::verify() {
  if (getX().getType() != getType())
    return emitOpError("result type must equal x's type");
  return checkForwardShape<MaxPool2dOp>(*this, {getX()}, (*this)->getAttrDictionary(),
                                        getGrad().getType(), "grad");
}

LogicalResult AvgPool2dGradOp::verify() {
  Value x = getResult();
  return checkForwardShape<AvgPool2dOp>(*this, {x}, (*this)->getAttrDictionary(),
                                        getGrad().getType(), "grad");
}

namespace {
template <typename GradOp, typename ForwardOp> LogicalResult verifyLossGrad(GradOp op) {
  SmallVector<Value> operands{op.getInput(), op.getTarget()};
  if (op.getWeight())
    operands.push_back(op.getWeight());
  return checkForwardShape<ForwardOp>(op, operands, op->getAttrDictionary(),
                                      op.getGrad().getType(), "grad");
}
} // namespace

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  return verifyLossGrad<SoftmaxCrossEntropyGradOp, SoftmaxCrossEntropyOp>(*this);
}

LogicalResult NllLossGradOp::verify() {
  return verifyLossGrad<NllLossGradOp, NllLossOp>(*this);
}

LogicalResult SgdUpdateOp::verify() {
  bool hasBuffer = getMomentumBuffer() != nullptr;
  if (hasBuffer != (getMomentum().convertToDouble() != 0.0))
    return emitOpError("needs a momentum buffer exactly when momentum is non-zero");
  if (hasBuffer != (getNewBuffer() != nullptr))
    return emitOpError("produces a new buffer exactly when it takes one");
  if (hasBuffer && getMomentumBuffer().getType() != getParam().getType())
    return emitOpError("momentum buffer type differs from the param's");
  if (getNesterov() && (getMomentum().convertToDouble() <= 0.0 || getDampening().convertToDouble() != 0.0))
    return emitOpError("nesterov needs momentum > 0 and zero dampening");
  return success();
}

} // namespace plait

#define GET_OP_CLASSES
#include "ir/PlaitTrainOps.cpp.inc"
