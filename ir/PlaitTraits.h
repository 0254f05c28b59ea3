// C++ traits of plait ops (declared in ODS as NativeOpTrait, cppNamespace ::plait::traits).
#pragma once

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"

namespace plait {

/// The attribute by which an update's momentum, or first beta, follows a cyclical
/// learning-rate schedule (--lr-schedule onecycle, cyclic): 7 numbers, runtime/
/// OptimizerSchedule.h MomentumCycle's layout.
inline constexpr llvm::StringLiteral kMomentumCycleAttr = "momentum_cycle";

/// Checks `op`'s momentum_cycle, where it has one: an update of sgd, rmsprop (whose
/// momentum attribute is then non-zero: it keeps a buffer), adamw, lion, adamax, nadam,
/// radam or lamb (or lamb_norms); [kind, base, max, ...] with kind 1 (one cycle: total steps
/// > 0, pct_start in [0, 1], anneal linear 0 or 1, three_phase 0 or 1) or 2 (cyclic: step
/// sizes up and down > 0, mode 0, 1 or 2, gamma > 0), and momenta in (0, 1).
mlir::LogicalResult verifyMomentumCycle(mlir::Operation *op);

} // namespace plait

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
    return verifyMomentumCycle(op);
  }
};

/// An elementwise map whose CPU kernel computes each result element from the operand
/// elements at the same index (after broadcasting) and reads them before it writes it: its
/// result may be stored over an operand of its size that dies at the op (MemoryPlan.cpp's
/// aliasElementwiseResults). A marker; nothing to verify.
template <typename ConcreteType>
class ElementwiseMap : public mlir::OpTrait::TraitBase<ConcreteType, ElementwiseMap> {};

} // namespace plait::traits
