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
  return mlir::isa<SgdUpdateOp, AdamWUpdateOp>(op);
}

} // namespace plait
