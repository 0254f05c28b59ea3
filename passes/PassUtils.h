// Small helpers shared by the plait passes.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace plait {

/// The step's function: @main, or the module's only function; null when there is neither.
inline mlir::func::FuncOp findEntryFunction(mlir::ModuleOp module) {
  if (auto main = module.lookupSymbol<mlir::func::FuncOp>("main"))
    return main;
  auto funcs = llvm::to_vector(module.getOps<mlir::func::FuncOp>());
  return funcs.size() == 1 ? funcs.front() : mlir::func::FuncOp();
}

/// The function a pass works on (findEntryFunction), or an error saying what it was for.
inline mlir::FailureOr<mlir::func::FuncOp> entryFunction(mlir::ModuleOp module,
                                                         llvm::StringRef purpose) {
  if (auto func = findEntryFunction(module))
    return func;
  return module.emitError("expected a function @main to ") << purpose;
}

} // namespace plait
