// plait-opt: MlirOptMain with the plait dialect and every plait pass (for lit tests).
#include "ir/PlaitDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<plait::PlaitDialect, mlir::func::FuncDialect>();
  plait::registerVJPInterfaces(registry);
  plait::registerPlaitPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "plait optimizer driver\n", registry));
}
