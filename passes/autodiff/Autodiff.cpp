// Reverse-mode autodiff: activity analysis, then VJPs in reverse program order.
#include "passes/autodiff/Autodiff.h"

#include "ir/PlaitDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace plait {
namespace {

bool isFloatTensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}

/// Values that depend on `wrt`: `anyDependence` follows every value, `floatVaried` only
/// float tensors (integer and boolean values carry no gradient).
void forwardDependence(Block &body, ArrayRef<Value> wrt, DenseSet<Value> &anyDependence,
                       DenseSet<Value> &floatVaried) {
  for (Value v : wrt) {
    anyDependence.insert(v);
    floatVaried.insert(v);
  }
  for (Operation &op : body) {
    bool depends = false, varied = false;
    for (Value operand : op.getOperands()) {
      depends |= anyDependence.contains(operand);
      varied |= floatVaried.contains(operand);
    }
    for (Value result : op.getResults()) {
      if (depends)
        anyDependence.insert(result);
      if (varied && isFloatTensor(result))
        floatVaried.insert(result);
    }
  }
}

/// Values the loss depends on.
DenseSet<Value> backwardDependence(Block &body, Value loss) {
  DenseSet<Value> useful{loss};
  for (Operation &op : llvm::reverse(body)) {
    if (llvm::none_of(op.getResults(), [&](Value r) { return useful.contains(r); }))
      continue;
    for (Value operand : op.getOperands())
      useful.insert(operand);
  }
  return useful;
}

/// The first op on a path to the loss where the dependence on a param leaves the float
/// tensors (argmax, a comparison, a cast to integers...).
Operation *findBreak(Block &body, const DenseSet<Value> &floatVaried, const DenseSet<Value> &useful) {
  for (Operation &op : body) {
    bool variedIn = llvm::any_of(op.getOperands(), [&](Value v) { return floatVaried.contains(v); });
    bool usefulOut = llvm::any_of(op.getResults(), [&](Value v) { return useful.contains(v); });
    bool variedOut = llvm::any_of(op.getResults(), [&](Value v) { return floatVaried.contains(v); });
    if (variedIn && usefulOut && !variedOut)
      return &op;
  }
  return nullptr;
}

/// A constant of `v`'s type, every element `value`.
Value splatLike(OpBuilder &b, Location loc, Value v, double value) {
  auto type = cast<RankedTensorType>(v.getType());
  return b.create<ConstantOp>(
      loc, DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), value)));
}

} // namespace

FailureOr<llvm::MapVector<Value, Value>> differentiate(func::FuncOp func, Value loss,
                                                       ArrayRef<Value> wrt, double seed) {
  Block &body = func.getBody().front();
  DenseSet<Value> anyDependence, floatVaried;
  forwardDependence(body, wrt, anyDependence, floatVaried);
  DenseSet<Value> useful = backwardDependence(body, loss);

  if (!floatVaried.contains(loss)) {
    if (anyDependence.contains(loss)) {
      Operation *cut = findBreak(body, floatVaried, useful);
      return (cut ? cut->emitOpError() : func.emitOpError())
             << "is a non-differentiable path from the trainable params to the loss";
    }
    return func.emitOpError("the loss does not depend on any trainable param");
  }

  Operation *terminator = body.getTerminator();
  OpBuilder b(terminator);
  llvm::DenseMap<Value, Value> grads;
  grads[loss] = splatLike(b, loss.getLoc(), loss, seed);
  auto accumulate = [&](Value target, Value grad, Location loc) {
    auto [it, inserted] = grads.try_emplace(target, grad);
    if (!inserted)
      it->second = b.create<AddOp>(loc, it->second, grad);
  };

  // Walk the forward ops (not the ones being appended) in reverse.
  SmallVector<Operation *> forward;
  for (Operation &op : body)
    if (&op != terminator && op.getNumOperands() > 0) // sources (params) end the chain
      forward.push_back(&op);
  for (Operation *op : llvm::reverse(forward)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      Value g = floatVaried.contains(r) ? grads.lookup(r) : Value();
      resultGrads.push_back(g);
      any |= (bool)g;
    }
    if (!any)
      continue;
    auto vjp = dyn_cast<VJPOpInterface>(op);
    if (!vjp)
      return op->emitOpError("is on the path from a trainable param to the loss but has no "
                             "gradient rule");
    SmallVector<Value> operandGrads;
    b.setInsertionPoint(terminator);
    if (failed(vjp.buildVJP(b, resultGrads, operandGrads)))
      return failure();
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
      if (g && floatVaried.contains(operand) && useful.contains(operand))
        accumulate(operand, g, op->getLoc());
  }

  llvm::MapVector<Value, Value> result;
  for (Value v : wrt)
    if (Value g = grads.lookup(v))
      result[v] = g;
  return result;
}

} // namespace plait
