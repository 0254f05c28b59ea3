// C++ traits of plait ops (declared in ODS as NativeOpTrait, cppNamespace ::plait::traits).
#pragma once

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"

namespace plait::traits {

/// An optimizer update: (param, grad, lr, step, states...) -> (new param, new states...)
/// (ir/OpKinds.h describes the operand layout). Every update carries `lr_scale`, the factor
/// on the step's lr that --lr-scale sets: checked here once for all of them.
template <typename ConcreteType>
class OptimizerUpdate : public mlir::OpTrait::TraitBase<ConcreteType, OptimizerUpdate> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    auto scale = op->getAttrOfType<mlir::FloatAttr>("lr_scale");
    if (scale && scale.getValueAsDouble() < 0.0)
      return op->emitOpError("needs lr_scale >= 0");
    return mlir::success();
  }
};

/// An elementwise map whose CPU kernel computes each result element from the operand
/// elements at the same index (after broadcasting) and reads them before it writes it: its
/// result may be stored over an operand of its size that dies at the op (MemoryPlan.cpp's
/// aliasElementwiseResults). A marker; nothing to verify.
template <typename ConcreteType>
class ElementwiseMap : public mlir::OpTrait::TraitBase<ConcreteType, ElementwiseMap> {};

} // namespace plait::traits
