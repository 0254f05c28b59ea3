// One-line diagnostics for the compiler drivers: every user error is one line on stderr.
#pragma once

#include <string>

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

namespace plait {

/// Prints each MLIR error as one line ("file:line:col: error: msg", or for ONNX models
/// "model.onnx: node 'name': msg"), with its notes appended after "; note: ".
class OneLineDiagnostics {
public:
  OneLineDiagnostics(mlir::MLIRContext &ctx, std::string modelPath);
  bool reported() const { return reported_; }

private:
  std::string modelPath_;
  bool reported_ = false;
  mlir::ScopedDiagnosticHandler handler_;
};

/// Prints "plait-compile: message" and returns exit code 1.
int reportError(const std::string &message);
/// Prints "plait-compile: internal error: message" and returns exit code 2.
int reportInternalError(const std::string &message);

} // namespace plait
