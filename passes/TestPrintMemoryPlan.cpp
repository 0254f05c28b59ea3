// -plait-test-print-memory-plan: prints the memory-plan analysis for lit tests.
#include "passes/Passes.h"
#include "passes/analysis/MemoryPlan.h"

#include "ir/PlaitDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

namespace plait {
#define GEN_PASS_DEF_TESTPRINTMEMORYPLANPASS
#include "passes/Passes.h.inc"

namespace {

std::string valueName(mlir::Value v) {
  if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) {
    auto func = llvm::cast<mlir::func::FuncOp>(arg.getOwner()->getParentOp());
    if (auto name = func.getArgAttrOfType<mlir::StringAttr>(arg.getArgNumber(), "plait.name"))
      return name.str();
    return "arg" + std::to_string(arg.getArgNumber());
  }
  if (auto param = v.getDefiningOp<ParamOp>())
    return param.getName().str();
  return v.getDefiningOp()->getName().stripDialect().str();
}

void printPlan(mlir::func::FuncOp func, const MemoryPlan &plan, llvm::raw_ostream &os) {
  os << "memory-plan @" << func.getSymName() << ": arena = " << plan.arenaBytes
     << ", lower_bound = " << plan.lowerBound << ", values = " << plan.buffers.size() << "\n";
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlannedBuffer &b = plan.buffers[i];
    os << "  %" << i << " \"" << valueName(b.value) << "\" " << bufferKindName(b.kind)
       << ": offset = " << b.offset << ", size = " << b.size << ", live = [" << b.start << ", "
       << b.end << "]";
    if (b.aliasOf >= 0)
      os << ", in place of %" << b.aliasOf;
    os << "\n";
  }
}

struct TestPrintMemoryPlanPass
    : impl::TestPrintMemoryPlanPassBase<TestPrintMemoryPlanPass> {
  using Base::Base;
  void runOnOperation() final {
    for (auto func : getOperation().getOps<mlir::func::FuncOp>()) {
      MemoryPlanOptions options;
      options.alignment = alignment;
      options.inPlace = inPlace;
      options.aliasReshapeResults = reshapeAlias;
      options.aliasElementwiseResults = elementwiseAlias;
      options.inPlaceCollectives = collectiveAlias;
      auto plan = planMemory(func, options);
      if (failed(plan))
        return signalPassFailure();
      printPlan(func, *plan, llvm::outs());
    }
  }
};

} // namespace
} // namespace plait
