// The compile-time check that no plan can hang in a collective.
#pragma once

#include "mlir/IR/BuiltinOps.h"

namespace plait {

/// Replays every rank's collective sequence (see -plait-verify-collectives); emits one
/// error naming the first divergence and fails if members of a group disagree.
mlir::LogicalResult verifyCollectiveOrder(mlir::ModuleOp module);

} // namespace plait
