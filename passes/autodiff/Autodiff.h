// Reverse-mode autodiff over a plait function body, through the VJP op interface.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"

namespace plait {

/// Builds, before `func`'s terminator, the gradient of the scalar `loss` with respect to
/// each value in `wrt` (results of plait.param). Only ops on a path from a `wrt` value to
/// the loss get gradient work. Returns the gradient of each `wrt` value that reaches the
/// loss (absent when it does not), in `wrt`'s order. Fails with a diagnostic naming the op
/// when the loss depends on a `wrt` value only through a non-differentiable path, or
/// when an op on the path has no VJP. `seed` is the loss's own gradient: 1, or -1 for the
/// gradients of -loss, each exactly the negation of the loss's (every op rounds
/// symmetrically), as torch's `maximize` negates them.
mlir::FailureOr<llvm::MapVector<mlir::Value, mlir::Value>>
differentiate(mlir::func::FuncOp func, mlir::Value loss, llvm::ArrayRef<mlir::Value> wrt,
              double seed = 1.0);

} // namespace plait
