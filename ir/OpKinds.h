// Kinds of plait ops that several passes, the memory plan and the plan writer treat alike.
#pragma once

#include "ir/PlaitDialect.h"

#include "mlir/IR/BuiltinOps.h"

namespace plait {

/// A collective: it starts non-blocking where it stands and completes before its first user.
inline bool isCollective(mlir::Operation *op) {
  return mlir::isa<AllReduceOp, ReduceScatterOp, AllGatherOp, BroadcastOp>(op);
}

/// The module attribute plait-insert-collectives records its reduce-scatters-in-flight in.
constexpr const char *kReduceScattersInFlightAttr = "plait.in_flight_reduce_scatters";
/// Marks the plait.neg plait-build-train-step puts before the update of a param group whose
/// maximize is not the run's: plait-shard lifts it while it places the gradient (and only it:
/// a gradient that ends in a negation of its own, a subtracted param's, stays as it is).
constexpr const char *kMaximizeNegationAttr = "plait.maximize";
/// Its default (and the bound where a module has no attribute).
constexpr int64_t kReduceScattersInFlight = 2;

/// Gradient reduce-scatters are in flight at most N = plait.in_flight_reduce_scatters at a
/// time: each completes before the one N places after it starts, if no op reads its shard
/// before that (then before that reader); N = 0: no bound. A unit's whole gradient, which its
/// reduce-scatter reads until it completes, is then freed while the backward goes on instead
/// of living until the optimizer reads the shard (which made ZeRO-2 hold as much gradient
/// memory as ZeRO-1), and each reduction still overlaps N units of compute. The memory plan
/// and the plan writer both place the wait by this: `block`'s reduce-scatters, each mapped to
/// the one it must complete before.
inline llvm::DenseMap<mlir::Operation *, mlir::Operation *>
nextReduceScatters(mlir::Block &block) {
  int64_t inFlight = kReduceScattersInFlight;
  if (auto module = block.getParentOp()->getParentOfType<mlir::ModuleOp>())
    if (auto n = module->getAttrOfType<mlir::IntegerAttr>(kReduceScattersInFlightAttr))
      inFlight = n.getInt();
  llvm::SmallVector<mlir::Operation *> scatters;
  for (mlir::Operation &op : block)
    if (mlir::isa<ReduceScatterOp>(op))
      scatters.push_back(&op);
  llvm::DenseMap<mlir::Operation *, mlir::Operation *> next;
  for (size_t i = 0; inFlight > 0 && i + size_t(inFlight) < scatters.size(); ++i)
    next[scatters[i]] = scatters[i + size_t(inFlight)];
  return next;
}

/// An optimizer update: (param, grad, ...) -> (new param, new state...).
inline bool isOptimizerUpdate(mlir::Operation *op) {
  return op->hasTrait<traits::OptimizerUpdate>();
}

/// An optimizer update's operands, by the update's name (adamw_update, sgd_update,
/// adagrad_update, rmsprop_update, lion_update, adamax_update, nadam_update, radam_update,
/// adadelta_update, rprop_update, asgd_update, lamb_update; grouped_update repeats them):
/// param, grad, then adamw_update's exp_avg, exp_avg_sq, lr, step and, with amsgrad,
/// max_exp_avg_sq; the others' lr, step and states (lamb_update's optional norms after them).
/// Result 0 is the new param and result k the new value of state k - 1, read element by
/// element from the operand updatedOperand gives (so it may be written over it).
inline unsigned updateStateOperand(llvm::StringRef update, unsigned state) {
  if (update == "adamw_update")
    return state < 2 ? 2 + state : 6;
  return 4 + state;
}
inline unsigned updateLrOperand(llvm::StringRef update) {
  return update == "adamw_update" ? 4 : 2;
}
inline unsigned updatedOperand(llvm::StringRef update, unsigned result) {
  return result == 0 ? 0 : updateStateOperand(update, result - 1);
}

/// The state operands of optimizer update `op` (isOptimizerUpdate), in operand order.
inline llvm::SmallVector<mlir::Value> updateStates(mlir::Operation *op) {
  llvm::StringRef name = op->getName().stripDialect();
  llvm::SmallVector<mlir::Value> states;
  for (unsigned k = 0; k + 1 < op->getNumResults(); ++k)
    states.push_back(op->getOperand(updateStateOperand(name, k)));
  return states;
}

} // namespace plait
