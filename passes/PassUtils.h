// Small helpers shared by the plait passes.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace plait {

/// The function a pass works on: @main, or the module's only function.
inline mlir::FailureOr<mlir::func::FuncOp> entryFunction(mlir::ModuleOp module,
                                                         llvm::StringRef purpose) {
  if (auto main = module.lookupSymbol<mlir::func::FuncOp>("main"))
    return main;
  auto funcs = llvm::to_vector(module.getOps<mlir::func::FuncOp>());
  if (funcs.size() == 1)
    return funcs.front();
  return module.emitError("expected a function @main to ") << purpose;
}

} // namespace plait
