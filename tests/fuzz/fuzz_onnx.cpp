// libFuzzer target: bytes as an ONNX model through importOnnxFile (what plait-compile imports),
// and a model that imports through the whole of plait-compile (FuzzCompile.h).
// The importer reads a path (the ONNX checker and external data need the model's folder), so
// every input is written to model.onnx in a private, otherwise empty temporary folder.
#include <cstdint>
#include <string>

#include "compiler/import/onnx/OnnxImporter.h"
#include "ir/PlaitDialect.h"
#include "tests/fuzz/FuzzCompile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string dir = plait::fuzz::privateDir("plait-fuzz-onnx");
  static const std::string path = dir + "/model.onnx";
  plait::fuzz::writeInput(path, data, size);
  // A fresh context per input: attributes are uniqued for a context's lifetime, so one shared
  // context would grow with every input.
  mlir::DialectRegistry registry;
  registry.insert<plait::PlaitDialect, mlir::func::FuncDialect>();
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  ctx.printOpOnDiagnostic(false);
  int errors = 0;
  std::string first;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &diag) {
    if (diag.getSeverity() == mlir::DiagnosticSeverity::Error && errors++ == 0)
      first = diag.str();
    return mlir::success();
  });

  // Every other input (by a bit of its middle byte) is imported with --upgrade-opset, so
  // ONNX's version converter sees older models too.
  plait::OnnxImportOptions options;
  options.upgradeOpset = size > 0 && (data[size / 2] & 1) != 0;
  auto module = plait::importOnnxFile(ctx, path, options);
  if (mlir::failed(module)) {
    // The importer's contract: exactly one error, a complete line naming the model.
    if (errors != 1)
      plait::fuzz::finding("the import failed with other than one error; the first:", first);
    plait::fuzz::expectOneLineError(first, path);
    return 0;
  }
  if (errors != 0)
    plait::fuzz::finding("the import succeeded but reported an error:", first);
  if (mlir::failed(mlir::verify(**module)))
    plait::fuzz::finding("the importer made an invalid module", first);
  // An imported model goes on through the pipeline (which imports it again, in its own
  // context) to a plan or one line naming the file.
  plait::fuzz::expectCompiles(path, dir + "/model.plan", data, size, options.upgradeOpset);
  return 0;
}
