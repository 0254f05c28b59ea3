// One-line diagnostics for the compiler drivers.
#include "compiler/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace plait {
namespace {

bool startsWith(const std::string &s, const std::string &prefix) {
  return !prefix.empty() && s.compare(0, prefix.size(), prefix) == 0;
}

std::string formatLocation(Location loc, const std::string &modelPath) {
  if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    if (file.getLine() == 0)
      return file.getFilename().str();
    return file.getFilename().str() + ":" + std::to_string(file.getLine()) + ":" +
           std::to_string(file.getColumn());
  }
  if (auto name = dyn_cast<NameLoc>(loc))
    return modelPath + ": node '" + name.getName().str() + "'";
  if (auto fused = dyn_cast<FusedLoc>(loc); fused && !fused.getLocations().empty())
    return formatLocation(fused.getLocations().front(), modelPath);
  return modelPath;
}

ErrorCapture *activeCapture = nullptr;
bool errorReported = false; // reportError ran (printed or captured)
// An error line has been printed: later errors are its consequences (MLIR adds "failed to
// infer returned types" after an op's own verifier error; found by fuzz.mlir) and are not
// printed, so that a failed compile is one line.
bool linePrinted = false;

/// Prints (or captures) one error line, made printable: what it quotes from the model or
/// the command line (a string attribute's carriage returns, a path holding a newline, a
/// .mlir model's location names, which are not checked for UTF-8 before they are printed)
/// must not make it a second line.
void printLine(const std::string &text) {
  std::string line = printableText(text);
  if (activeCapture) {
    activeCapture->add(line);
  } else if (!linePrinted) {
    llvm::errs() << "plait-compile: " << line << "\n";
    linePrinted = true;
  }
}

std::string flatten(std::string text) {
  for (char &c : text)
    if (c == '\n')
      c = ' ';
  return text;
}

} // namespace

OneLineDiagnostics::OneLineDiagnostics(MLIRContext &ctx, std::string modelPath)
    : modelPath_(std::move(modelPath)),
      handler_(&ctx, [this](Diagnostic &diag) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (diag.getSeverity() != DiagnosticSeverity::Error)
          return success(); // warnings and remarks are not printed by the drivers
        // Whether the message names its place itself is asked before flattening: a path
        // holding a newline was named twice.
        std::string message = diag.str();
        std::string where = formatLocation(diag.getLocation(), modelPath_);
        std::string line = startsWith(message, modelPath_) || startsWith(message, where)
                               ? flatten(message)
                               : where + ": " + flatten(message);
        for (Diagnostic &note : diag.getNotes())
          line += "; note: " + flatten(note.str());
        printLine(line);
        reported_ = true;
        return success();
      }) {}

ErrorCapture::ErrorCapture() : outer_(activeCapture) { activeCapture = this; }
ErrorCapture::~ErrorCapture() { activeCapture = outer_; }

bool anyErrorReported() { return errorReported; }

int reportError(const std::string &message) {
  errorReported = true;
  printLine(message);
  return 1;
}

int reportInternalError(const std::string &message) {
  errorReported = true; // said once: compileModel adds no second line
  llvm::errs() << "plait-compile: internal error: " << printableText(message) << "\n";
  return 2;
}

} // namespace plait
