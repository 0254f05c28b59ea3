// -plait-group-casts: the casts of parameters a few ops apart become one plait.grouped_cast.
//
// Under bf16-mixed each step casts every f32 parameter (its master weight) to bf16 before the
// parameter's first use: a kernel per parameter tensor (24 of the GPT sample's kernels per
// step, 149 of a 12-layer GPT's), most of them on a few thousand elements, where the call
// costs more than the conversion, and on CUDA a launch each. The casts of parameters that
// stand within `span` ops of a group's first cast become one kernel that walks the tensors,
// where the first stood; the plait.param ops they read move up to it (a param has no operands
// and names the same tensor wherever it stands). `span` bounds how much earlier the later
// casts' results become live: within a layer's forward, where the backward keeps them live
// anyway.
//
// Grouped: plait.cast of a plait.param, float to float. The module records
// `plait.group_casts` {kernels, casts} for the report.
#include "passes/Passes.h"

#include "ir/PlaitDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_GROUPCASTSPASS
#include "passes/Passes.h.inc"

namespace {

/// Whether `op` is a cast this pass groups: of a parameter, between floats.
bool groupable(Operation *op) {
  auto cast = dyn_cast<CastOp>(op);
  if (!cast || !cast.getX().getDefiningOp<ParamOp>())
    return false;
  return isa<FloatType>(cast.getX().getType().getElementType()) &&
         isa<FloatType>(cast.getType().getElementType());
}

struct GroupCastsPass : impl::GroupCastsPassBase<GroupCastsPass> {
  using GroupCastsPassBase::GroupCastsPassBase;

  void runOnOperation() final {
    ModuleOp module = getOperation();
    int64_t kernels = 0, casts = 0;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      std::vector<SmallVector<CastOp>> groups;
      SmallVector<CastOp> open;
      int64_t first = 0, position = 0;
      for (Operation &op : func.getBody().front()) {
        ++position;
        if (!groupable(&op))
          continue;
        if (!open.empty() && position - first > span)
          groups.push_back(std::exchange(open, {}));
        if (open.empty())
          first = position;
        open.push_back(cast<CastOp>(op));
      }
      if (!open.empty())
        groups.push_back(std::move(open));

      OpBuilder builder(&getContext());
      for (SmallVector<CastOp> &g : groups) {
        if (g.size() < 2)
          continue;
        ++kernels;
        casts += int64_t(g.size());
        Operation *at = g.front();
        SmallVector<Value> inputs;
        SmallVector<Type> types;
        SmallVector<Location> locs;
        for (CastOp c : g) {
          Operation *param = c.getX().getDefiningOp();
          if (!param->isBeforeInBlock(at))
            param->moveBefore(at);
          inputs.push_back(c.getX());
          types.push_back(c.getType());
          locs.push_back(c.getLoc());
        }
        builder.setInsertionPoint(at);
        auto grouped = builder.create<GroupedCastOp>(builder.getFusedLoc(locs), types, inputs);
        for (auto [i, c] : llvm::enumerate(g)) {
          c.getResult().replaceAllUsesWith(grouped->getResult(i));
          c->erase();
        }
      }
    }
    Builder b(&getContext());
    module->setAttr("plait.group_casts",
                    b.getDictionaryAttr({b.getNamedAttr("casts", b.getI64IntegerAttr(casts)),
                                         b.getNamedAttr("kernels", b.getI64IntegerAttr(kernels))}));
  }
};

} // namespace
} // namespace plait
