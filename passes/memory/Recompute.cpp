// -plait-recompute: activation recomputation per segment of the forward pass.
#include "passes/PassUtils.h"
#include "passes/Passes.h"
#include "passes/analysis/MemoryPlan.h"
#include "passes/memory/Recompute.h"
#include "passes/sharding/Placement.h"

#include <set>

#include "ir/PlaitDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_RECOMPUTEPASS
#include "passes/Passes.h.inc"

namespace {

bool isStorage(Operation *op) { return isa<ParamOp, ConstantOp, StateOp, HyperOp>(op); }

/// Rough FLOPs of recomputing `op`: 2MNK for contractions, one per output element otherwise.
double recomputeFlops(Operation *op) {
  auto elements = [](Value v) {
    return (double)cast<RankedTensorType>(v.getType()).getNumElements();
  };
  double out = 0;
  for (Value r : op->getResults())
    out += elements(r);
  if (isa<MatmulOp, GemmOp>(op)) {
    auto a = cast<RankedTensorType>(op->getOperand(0).getType());
    int64_t k = a.getRank() ? a.getShape().back() : 1;
    if (auto gemm = dyn_cast<GemmOp>(op); gemm && gemm.getTransA())
      k = a.getShape().front();
    if (auto matmul = dyn_cast<MatmulOp>(op); matmul && matmul.getTransposeLhs())
      k = a.getShape()[a.getRank() - 2];
    return 2.0 * out * (double)k;
  }
  if (auto conv = dyn_cast<Conv2dOp>(op)) {
    auto w = cast<RankedTensorType>(conv.getW().getType()).getShape();
    return 2.0 * out * (double)(w[1] * w[2] * w[3]);
  }
  return out;
}

} // namespace

std::string segmentKey(StringRef paramName, bool perLayer) {
  if (!perLayer)
    return defaultUnitKey(paramName);
  size_t dot = paramName.rfind('.');
  return (dot == StringRef::npos ? paramName : paramName.take_front(dot)).str();
}

FailureOr<RecomputeAnalysis> analyzeRecompute(func::FuncOp func, RecomputeGranularity grain) {
  bool perLayer = grain != RecomputeGranularity::Unit;
  RecomputeAnalysis a;
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() == 0 || !ret.getOperand(0).getDefiningOp())
    return func.emitOpError("has no computed loss to recompute towards");
  // The forward is what the loss is computed from; everything else the backward (or the
  // optimizer). With micro-batches the step alternates: forward 0, backward 0, forward 1...
  SmallVector<Operation *> stack{ret.getOperand(0).getDefiningOp()};
  while (!stack.empty()) {
    Operation *op = stack.pop_back_val();
    if (!a.forward.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        stack.push_back(def);
  }
  int64_t position = 0;
  bool inForward = false;
  std::set<std::string> seenUnits, seenCheckpointUnits;
  int64_t group = 0;
  for (Operation &op : body) {
    a.position[&op] = position++;
    if (isStorage(&op))
      continue;
    if (!a.forward.contains(&op)) {
      inForward = false;
      continue;
    }
    if (!inForward) { // a new forward phase (micro-batch) starts a new segment
      seenUnits.clear();
      seenCheckpointUnits.clear();
      if (!a.forwardOrder.empty())
        ++group;
      if (!a.segmentOps.empty())
        a.lastOfPhase.insert(a.segmentOps.size() - 1);
      a.segmentOps.emplace_back();
      inForward = true;
    }
    // A segment starts where the forward first reads a param of a unit (or layer) not seen
    // yet in this phase; `checkpointGroup` counts units either way.
    bool newUnit = false;
    for (Value operand : op.getOperands())
      if (auto param = operand.getDefiningOp<ParamOp>()) {
        newUnit |= seenCheckpointUnits.insert(segmentKey(param.getName(), false)).second;
        if (seenUnits.insert(segmentKey(param.getName(), perLayer)).second &&
            !a.segmentOps.back().empty())
          a.segmentOps.emplace_back();
      }
    if (newUnit && !a.forwardOrder.empty() && a.groupOf.count(a.forwardOrder.back()) &&
        a.groupOf.lookup(a.forwardOrder.back()) == group)
      ++group;
    a.segmentOf[&op] = a.segmentOps.size() - 1;
    a.segmentOps.back().push_back(&op);
    a.groupOf[&op] = grain == RecomputeGranularity::Nested ? group : a.segmentOf[&op];
    a.forwardOrder.push_back(&op);
  }
  if (!a.segmentOps.empty())
    a.lastOfPhase.insert(a.segmentOps.size() - 1);
  // Checkpoint groups: segments (unit, layer) or, nested, the unit around the layers.
  for (Operation *op : a.forwardOrder)
    a.lastGroupOfPhase.insert(a.groupOf.lookup(op)); // refined below
  a.lastGroupOfPhase.clear();
  for (size_t s : a.lastOfPhase)
    a.lastGroupOfPhase.insert(a.groupOf.lookup(a.segmentOps[s].front()));
  // What each segment keeps alive for the backward, and what recomputing it would cost.
  a.savedBytes.assign(a.segmentOps.size(), 0);
  a.flops.assign(a.segmentOps.size(), 0);
  for (auto [s, ops] : llvm::enumerate(a.segmentOps))
    for (Operation *op : ops) {
      a.flops[s] += recomputeFlops(op);
      for (Value v : op->getResults())
        if (!a.isCheckpoint(v))
          for (Operation *user : v.getUsers())
            if (a.isBackward(user)) {
              a.savedBytes[s] += tensorBytes(cast<RankedTensorType>(v.getType()));
              break;
            }
    }
  return a;
}

bool RecomputeAnalysis::isBackward(Operation *op) const {
  return position.count(op) && !forward.contains(op);
}

bool RecomputeAnalysis::isCheckpoint(Value v) const {
  Operation *def = v.getDefiningOp();
  if (!def || !segmentOf.count(def))
    return true; // arguments, params, constants, backward values
  int64_t g = groupOf.lookup(def);
  if (lastGroupOfPhase.count(g) || !isMemoryEffectFree(def))
    return true; // the last segment's backward starts at once; effects are not replayed
  for (Operation *user : v.getUsers())
    if (forward.contains(user) && groupOf.lookup(user) != g)
      return true; // crosses into a later segment (unit, when nested) of the forward
  return false;
}

int64_t recomputeSegments(func::FuncOp func, const RecomputeAnalysis &a,
                          ArrayRef<size_t> segments) {
  int64_t added = 0;
  Block &block = func.getBody().front();
  OpPositions pos(block);
  for (size_t s : segments) {
    if (s >= a.segmentOps.size() || a.segmentOps[s].empty() ||
        a.lastGroupOfPhase.count(a.groupOf.lookup(a.segmentOps[s].front())))
      continue;
    // The segment's values the backward reads, and where the backward first reads one.
    SmallVector<Value> wanted;
    Operation *firstUse = nullptr;
    for (Operation *op : a.segmentOps[s])
      for (Value v : op->getResults()) {
        if (a.isCheckpoint(v))
          continue;
        bool backward = false;
        for (Operation *user : v.getUsers())
          if (a.isBackward(user)) {
            backward = true;
            if (!firstUse || a.position.lookup(user) < a.position.lookup(firstUse))
              firstUse = user;
          }
        if (backward)
          wanted.push_back(v);
      }
    if (wanted.empty())
      continue;
    // Everything those values need from inside the segment (nested: from the unit's earlier
    // layers too, replayed again for this layer), in forward order.
    llvm::SmallPtrSet<Operation *, 32> needed;
    SmallVector<Value> stack(wanted.begin(), wanted.end());
    while (!stack.empty()) {
      Value v = stack.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (a.isCheckpoint(v) || !needed.insert(def).second)
        continue;
      for (Value operand : def->getOperands())
        stack.push_back(operand);
    }
    OpBuilder b(firstUse);
    IRMapping map;
    SmallVector<Operation *> clones;
    for (Operation *op : a.forwardOrder)
      if (needed.contains(op)) {
        clones.push_back(b.clone(*op, map));
        ++added;
      }
    for (Value v : wanted)
      v.replaceUsesWithIf(map.lookup(v),
                          [&](OpOperand &use) { return a.isBackward(use.getOwner()); });
    // Each replayed op then sinks to just before its first user (last clone first), so the
    // attention of a block is not recomputed while its MLP's backward still runs.
    pos.inserted(clones); // they stand together just before firstUse
    for (Operation *clone : llvm::reverse(clones)) {
      Operation *first = nullptr;
      for (Operation *user : clone->getUsers())
        if (!first || pos[user] < pos[first])
          first = user;
      if (first && first->getBlock() == &block && pos[clone] < pos[first])
        pos.moveBefore(clone, first);
    }
  }
  return added;
}

namespace {

struct RecomputePass : impl::RecomputePassBase<RecomputePass> {
  using Base::Base;

  void runOnOperation() final {
    ModuleOp module = getOperation();
    if (granularity != "unit" && granularity != "layer" && granularity != "nested") {
      module.emitError("unknown recompute granularity '")
          << granularity << "' (expected unit, layer or nested)";
      return signalPassFailure();
    }
    if (mode != "none" && mode != "all" && mode != "segments") {
      module.emitError("unknown recompute mode '") << mode << "' (expected none, all or segments)";
      return signalPassFailure();
    }
    auto func = entryFunction(module, "recompute");
    if (failed(func))
      return signalPassFailure();
    auto analysis = analyzeRecompute(*func, granularity == "unit"    ? RecomputeGranularity::Unit
                                            : granularity == "layer" ? RecomputeGranularity::Layer
                                                                     : RecomputeGranularity::Nested);
    if (failed(analysis))
      return signalPassFailure();
    SmallVector<size_t> chosen;
    if (mode == "all")
      for (size_t s = 0; s < analysis->segmentOps.size(); ++s)
        if (!analysis->segmentOps[s].empty() &&
            !analysis->lastGroupOfPhase.count(analysis->groupOf.lookup(analysis->segmentOps[s].front())))
          chosen.push_back(s);
    if (mode == "segments")
      for (int64_t s : segments) {
        if (s < 0 || (size_t)s >= analysis->segmentOps.size()) {
          module.emitError("recompute segment ")
              << s << " does not exist (" << analysis->segmentOps.size() << " segments)";
          return signalPassFailure();
        }
        chosen.push_back(s);
      }
    int64_t added = recomputeSegments(*func, *analysis, chosen);
    int64_t saved = 0;
    for (size_t s : chosen)
      saved += analysis->savedBytes[s];
    OpBuilder b(module.getContext());
    module->setAttr("plait.recompute",
                    b.getDictionaryAttr({
                        b.getNamedAttr("mode", b.getStringAttr(mode)),
                        b.getNamedAttr("granularity", b.getStringAttr(granularity)),
                        b.getNamedAttr("segments",
                                       b.getI64IntegerAttr(analysis->segmentOps.size())),
                        b.getNamedAttr("recomputed", b.getI64IntegerAttr(chosen.size())),
                        b.getNamedAttr("ops_added", b.getI64IntegerAttr(added)),
                        b.getNamedAttr("saved_bytes", b.getI64IntegerAttr(saved)),
                    }));
  }
};

} // namespace
} // namespace plait
