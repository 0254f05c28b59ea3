// -plait-group-updates: optimizer updates close together become one plait.grouped_update.
//
// A training step runs one update per parameter tensor: 29 for the GPT sample, most of them
// on a few hundred elements, where the call costs more than the arithmetic. plait-schedule
// puts each update next to its gradient's producer, so a layer's updates sit a few ops apart
// in the backward. A group of them becomes one kernel that walks the tensors (PyTorch's
// multi-tensor "foreach" optimizers do the same on GPUs), placed where one place follows every
// operand and precedes every read of a result outside the group; `span` bounds how far apart
// its updates may be, which bounds how much longer the earlier gradients stay live.
//
// Grouped: adamw_update and sgd_update of f32 or f64 tensors, of the same kind, operand count
// and attributes.
//
// Under bf16-mixed every gradient arrives in bf16 and is cast to f32 for its update: a kernel
// per parameter tensor (26 of the GPT sample's 127 per step) and an f32 copy of the gradient
// in the arena. With `grad-casts` (plait-compile's default; off: --no-fused-grad-cast) a
// grouped update reads such a gradient in bf16 (or f16) and widens it itself, exactly as the
// cast did, when the cast's result feeds nothing but that update. The module records
// `plait.group_updates` {kernels, updates, grad_casts, grad_cast_bytes} for the report
// (grad_cast_bytes: the wide gradients no longer stored).
#include "passes/Passes.h"

#include "ir/OpKinds.h"
#include "ir/PlaitDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_GROUPUPDATESPASS
#include "passes/Passes.h.inc"

namespace {

/// Whether `op` is an update this pass groups: f32 or f64 tensors (half-precision updates
/// stage through f32 copies per tensor, which the grouped kernel does not do), not a LAMB
/// update of a flat shard (its norms come from the whole unit: it stands alone).
bool groupable(Operation *op) {
  if (!isOptimizerUpdate(op) || op->hasAttr("segments"))
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  return type && (type.getElementType().isF32() || type.getElementType().isF64());
}

/// The half-precision gradient that update `op`'s gradient operand (operand 1) is a widening
/// cast of, when that cast feeds nothing else; else null.
Value castGradSource(Operation *op) {
  auto widen = op->getOperand(1).getDefiningOp<CastOp>();
  if (!widen || !llvm::all_of(widen->getUsers(), [&](Operation *u) { return u == op; }))
    return nullptr;
  auto from = dyn_cast<RankedTensorType>(widen.getOperand().getType());
  auto to = cast<RankedTensorType>(widen.getType());
  if (!from || from.getShape() != to.getShape() ||
      !(from.getElementType().isBF16() || from.getElementType().isF16()) ||
      to != op->getOperand(0).getType())
    return nullptr;
  return widen.getOperand();
}

/// Whether `a` and `b` are updates of the same kind, operand count and attributes.
bool sameKind(Operation *a, Operation *b) {
  return a->getName() == b->getName() && a->getNumOperands() == b->getNumOperands() &&
         a->getNumResults() == b->getNumResults() &&
         a->getAttrDictionary() == b->getAttrDictionary();
}

struct Group {
  SmallVector<Operation *> ops; // in program order
  int64_t first = 0;            // position of the first
  int64_t ready = -1;           // position of the last operand's definition
  int64_t need = INT64_MAX;     // position of the first read of a result outside the group
};

struct GroupUpdatesPass : impl::GroupUpdatesPassBase<GroupUpdatesPass> {
  using GroupUpdatesPassBase::GroupUpdatesPassBase;

  void runOnOperation() final {
    ModuleOp module = getOperation();
    int64_t kernels = 0, updates = 0, gradCasts = 0, gradCastBytes = 0;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      llvm::DenseMap<Operation *, int64_t> position;
      for (Operation &op : func.getBody().front())
        position[&op] = int64_t(position.size());
      // Where a group with `op` may stand: after its operands, before outside reads.
      auto widen = [&](Operation *op, int64_t &ready, int64_t &need) {
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp())
            ready = std::max(ready, position.lookup(def));
        for (Value r : op->getResults())
          for (Operation *user : r.getUsers())
            need = std::min(need, position.lookup(user));
      };
      std::vector<Group> groups;
      Group open;
      for (Operation &op : func.getBody().front()) {
        if (!groupable(&op))
          continue;
        int64_t ready = open.ready, need = open.need;
        widen(&op, ready, need);
        bool joins = !open.ops.empty() && sameKind(open.ops.front(), &op) &&
                     position.lookup(&op) - open.first <= span && ready < need;
        if (!joins) {
          if (!open.ops.empty())
            groups.push_back(std::move(open));
          open = Group();
          open.first = position.lookup(&op);
          ready = -1;
          need = INT64_MAX;
          widen(&op, ready, need);
        }
        open.ready = ready;
        open.need = need;
        open.ops.push_back(&op);
      }
      if (!open.ops.empty())
        groups.push_back(std::move(open));

      OpBuilder builder(&getContext());
      for (Group &g : groups) {
        if (g.ops.size() < 2)
          continue;
        ++kernels;
        updates += int64_t(g.ops.size());
        // At the last update, or before the first outside read when that comes earlier
        // (the window guarantees it follows every operand).
        Operation *at = g.ops.back();
        if (g.need <= position.lookup(at))
          for (Operation *op = g.ops.front(); op; op = op->getNextNode())
            if (position.lookup(op) == g.need) {
              at = op;
              break;
            }
        builder.setInsertionPoint(at);
        Operation *first = g.ops.front();
        SmallVector<Value> inputs;
        SmallVector<Type> types;
        SmallVector<Location> locs;
        SmallVector<Operation *> casts; // folded into the group, erased after it
        for (Operation *op : g.ops) {
          size_t grad = inputs.size() + 1;
          llvm::append_range(inputs, op->getOperands());
          llvm::append_range(types, op->getResultTypes());
          locs.push_back(op->getLoc());
          if (!foldGradCasts)
            continue;
          if (Value narrow = castGradSource(op)) {
            casts.push_back(op->getOperand(1).getDefiningOp());
            inputs[grad] = narrow;
            auto wide = cast<RankedTensorType>(op->getOperand(1).getType());
            gradCastBytes += wide.getNumElements() * (wide.getElementTypeBitWidth() / 8);
          }
        }
        gradCasts += int64_t(casts.size());
        SmallVector<NamedAttribute> attrs(first->getAttrs());
        attrs.push_back(builder.getNamedAttr(
            "update", builder.getStringAttr(first->getName().stripDialect())));
        attrs.push_back(builder.getNamedAttr(
            "operands_per_update", builder.getI64IntegerAttr(first->getNumOperands())));
        attrs.push_back(builder.getNamedAttr(
            "results_per_update", builder.getI64IntegerAttr(first->getNumResults())));
        auto grouped = builder.create<GroupedUpdateOp>(builder.getFusedLoc(locs), types,
                                                       inputs, attrs);
        unsigned next = 0;
        for (Operation *op : g.ops)
          for (Value r : op->getResults())
            r.replaceAllUsesWith(grouped->getResult(next++));
        for (Operation *op : llvm::reverse(g.ops))
          op->erase();
        for (Operation *c : casts)
          c->erase();
      }
    }
    Builder b(&getContext());
    module->setAttr("plait.group_updates",
                    b.getDictionaryAttr({b.getNamedAttr("kernels", b.getI64IntegerAttr(kernels)),
                                         b.getNamedAttr("updates", b.getI64IntegerAttr(updates)),
                                         b.getNamedAttr("grad_casts", b.getI64IntegerAttr(gradCasts)),
                                         b.getNamedAttr("grad_cast_bytes",
                                                        b.getI64IntegerAttr(gradCastBytes))}));
  }
};

} // namespace
} // namespace plait
