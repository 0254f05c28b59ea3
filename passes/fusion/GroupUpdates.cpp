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
//
// The weight EMAs (--ema-decay), one plait.weight_ema per param built after every update,
// merge the same way into one plait.weight_ema of many averages (those of the same decay,
// schedule and step, of any float type): one kernel instead of one per param (timm's
// ModelEmaV3 uses torch._foreach_lerp_ for the same reason). The module records
// {ema_kernels, emas}.
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
/// update of a flat shard (its norms come from the whole unit: it stands alone), not an
/// Adafactor update.
bool groupable(Operation *op) {
  // Adafactor's updates stand alone too: their states are not of their param's shape, and
  // each takes row, column and whole-tensor sums of its own.
  if (!isOptimizerUpdate(op) || op->hasAttr("segments") || isa<AdafactorUpdateOp>(op))
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

/// Whether `op` is a weight EMA (any: its kernels take bf16 and f16 averages in a merged call
/// too, one at a time through f32 buffers of the largest).
bool isEma(Operation *op) { return isa<WeightEmaOp>(op); }

/// Whether weight EMAs `a` and `b` may be one op: the same schedule (attributes) and step.
bool sameEma(Operation *a, Operation *b) {
  return a->getAttrDictionary() == b->getAttrDictionary() &&
         cast<WeightEmaOp>(a).getStep() == cast<WeightEmaOp>(b).getStep();
}

struct Group {
  SmallVector<Operation *> ops; // in program order
  int64_t first = 0;            // position of the first
  int64_t ready = -1;           // position of the last operand's definition
  int64_t need = INT64_MAX;     // position of the first read of a result outside the group
};

/// The groups of ops `member` takes in `func`'s body, in program order: an op joins the open
/// group when `same` as its first, within `span` ops of it, and one place still follows every
/// operand and precedes every read of a result outside the group.
std::vector<Group> collectGroups(func::FuncOp func, int64_t span,
                                 llvm::function_ref<bool(Operation *)> member,
                                 llvm::function_ref<bool(Operation *, Operation *)> same,
                                 llvm::DenseMap<Operation *, int64_t> &position) {
  position.clear();
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
    if (!member(&op))
      continue;
    int64_t ready = open.ready, need = open.need;
    widen(&op, ready, need);
    bool joins = !open.ops.empty() && same(open.ops.front(), &op) &&
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
  return groups;
}

/// Where group `g`'s op stands: at its last op, or before the first outside read when that
/// comes earlier (collectGroups guarantees it follows every operand).
Operation *groupPlace(const Group &g, const llvm::DenseMap<Operation *, int64_t> &position) {
  Operation *at = g.ops.back();
  if (g.need <= position.lookup(at))
    for (Operation *op = g.ops.front(); op; op = op->getNextNode())
      if (position.lookup(op) == g.need)
        return op;
  return at;
}

/// Replaces the results of `g`'s ops, in order, by `merged`'s, and erases the ops.
void replaceGroup(const Group &g, Operation *merged) {
  unsigned next = 0;
  for (Operation *op : g.ops)
    for (Value r : op->getResults())
      r.replaceAllUsesWith(merged->getResult(next++));
  for (Operation *op : llvm::reverse(g.ops))
    op->erase();
}

struct GroupUpdatesPass : impl::GroupUpdatesPassBase<GroupUpdatesPass> {
  using GroupUpdatesPassBase::GroupUpdatesPassBase;

  void runOnOperation() final {
    ModuleOp module = getOperation();
    int64_t kernels = 0, updates = 0, gradCasts = 0, gradCastBytes = 0;
    int64_t emaKernels = 0, emas = 0;
    OpBuilder builder(&getContext());
    llvm::DenseMap<Operation *, int64_t> position;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      for (Group &g : collectGroups(func, span, groupable, sameKind, position)) {
        if (g.ops.size() < 2)
          continue;
        ++kernels;
        updates += int64_t(g.ops.size());
        builder.setInsertionPoint(groupPlace(g, position));
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
        replaceGroup(
            g, builder.create<GroupedUpdateOp>(builder.getFusedLoc(locs), types, inputs, attrs));
        for (Operation *c : casts)
          c->erase();
      }
      // The weight EMAs (built after every update) merge the same way: params, averages, step;
      // with no bound on their span, as what they read (the new params, the averages, the
      // step) lives to the end of the step anyway.
      for (Group &g : collectGroups(func, INT64_MAX, isEma, sameEma, position)) {
        if (g.ops.size() < 2)
          continue;
        ++emaKernels;
        SmallVector<Value> params, averages;
        SmallVector<Type> types;
        SmallVector<Location> locs;
        for (Operation *op : g.ops) {
          auto ema = cast<WeightEmaOp>(op);
          for (unsigned k = 0; k < ema.getNumAveraged(); ++k) {
            params.push_back(ema.getParam(k));
            averages.push_back(ema.getEma(k));
          }
          llvm::append_range(types, op->getResultTypes());
          locs.push_back(op->getLoc());
        }
        emas += int64_t(types.size());
        auto first = cast<WeightEmaOp>(g.ops.front());
        SmallVector<Value> inputs(params);
        llvm::append_range(inputs, averages);
        inputs.push_back(first.getStep());
        builder.setInsertionPoint(groupPlace(g, position));
        replaceGroup(g, builder.create<WeightEmaOp>(builder.getFusedLoc(locs), types, inputs,
                                                    first->getAttrs()));
      }
    }
    Builder b(&getContext());
    auto count = [&](const char *key, int64_t n) {
      return b.getNamedAttr(key, b.getI64IntegerAttr(n));
    };
    module->setAttr("plait.group_updates",
                    b.getDictionaryAttr({count("kernels", kernels), count("updates", updates),
                                         count("grad_casts", gradCasts),
                                         count("grad_cast_bytes", gradCastBytes),
                                         count("ema_kernels", emaKernels), count("emas", emas)}));
  }
};

} // namespace
} // namespace plait
