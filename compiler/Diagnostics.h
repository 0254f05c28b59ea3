// One-line diagnostics for the compiler drivers: every user error is one line on stderr.
#pragma once

#include <mutex>
#include <string>

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/JSON.h"

namespace plait {

/// `text` as a message line may carry it: UTF-8 (invalid bytes as U+FFFD, for the report's
/// JSON and the terminal), with no control characters (each as '?'). Names from a model file
/// (ONNX does not check that they are UTF-8) go through it.
inline std::string printableText(llvm::StringRef text) {
  std::string out = llvm::json::isUTF8(text) ? text.str() : llvm::json::fixUTF8(text);
  for (char &c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = '?';
  return out;
}

/// Prints each MLIR error as one line ("file:line:col: error: msg", or for ONNX models
/// "model.onnx: node 'name': msg"), with its notes appended after "; note: ".
class OneLineDiagnostics {
public:
  OneLineDiagnostics(mlir::MLIRContext &ctx, std::string modelPath);
  bool reported() const { return reported_; }

private:
  std::string modelPath_;
  bool reported_ = false;
  std::mutex mutex_; // the strategy search screens candidates on several threads
  mlir::ScopedDiagnosticHandler handler_;
};

/// While one exists, user errors (MLIR diagnostics through OneLineDiagnostics, and
/// reportError) are kept here instead of printed: the first one in `first`. Comparing
/// clusters uses it to show a cluster the model does not fit on as a row, not as an error.
class ErrorCapture {
public:
  ErrorCapture();
  ~ErrorCapture();
  ErrorCapture(const ErrorCapture &) = delete;
  ErrorCapture &operator=(const ErrorCapture &) = delete;
  void add(const std::string &line) {
    if (first.empty())
      first = line;
    ++count;
  }
  std::string first;
  int count = 0; // every error reported while it existed

private:
  ErrorCapture *outer_;
};

/// Prints "plait-compile: message" (or hands it to the ErrorCapture) and returns exit code 1.
int reportError(const std::string &message);
/// Whether reportError has run in this process.
bool anyErrorReported();
/// Prints "plait-compile: internal error: message" and returns exit code 2.
int reportInternalError(const std::string &message);

} // namespace plait
