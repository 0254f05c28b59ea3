// Kinds of plait ops that several passes, the memory plan and the plan writer treat alike.
#pragma once

#include "ir/PlaitDialect.h"

namespace plait {

/// A collective: it starts non-blocking where it stands and completes before its first user.
inline bool isCollective(mlir::Operation *op) {
  return mlir::isa<AllReduceOp, ReduceScatterOp, AllGatherOp, BroadcastOp>(op);
}

/// An optimizer update: (param, grad, ...) -> (new param, new state...).
inline bool isOptimizerUpdate(mlir::Operation *op) {
  return mlir::isa<SgdUpdateOp, AdamWUpdateOp>(op);
}

} // namespace plait
