// -plait-verify-collectives: every rank must run the same collectives, in the same order,
// as the other members of each group; a plan that could hang is rejected here.
#include "passes/Passes.h"
#include "passes/sharding/VerifyCollectives.h"

#include "ir/OpKinds.h"
#include "ir/PlaitDialect.h"
#include "ir/RankGroups.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_VERIFYCOLLECTIVESPASS
#include "passes/Passes.h.inc"

namespace {

/// One collective as one rank runs it.
struct Entry {
  Operation *op;
  SmallVector<int64_t> members;
  size_t index; // position in the rank's sequence
};

ArrayAttr groupsOfOp(Operation *op) { return op->getAttrOfType<ArrayAttr>("groups"); }

/// What members must agree on: kind, buffer type, reduction and root.
std::string signature(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName().stripDialect() << " of ";
  auto type = cast<RankedTensorType>(op->getOperand(0).getType());
  os << type.getNumElements() << " x " << type.getElementType();
  if (auto reduce = op->getAttrOfType<StringAttr>("reduce"))
    os << " (" << reduce.getValue() << ")";
  if (auto root = op->getAttrOfType<IntegerAttr>("root"))
    os << " (root " << root.getInt() << ")";
  return os.str();
}

std::string describe(const Entry &e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "#" << e.index << " (" << signature(e.op) << " over [";
  llvm::interleaveComma(e.members, os);
  os << "])";
  return os.str();
}

} // namespace

LogicalResult verifyCollectiveOrder(ModuleOp module) {
  int64_t world = worldSizeOf(module);
  std::vector<std::vector<Entry>> sequences(world);
  for (auto fn : module.getOps<func::FuncOp>()) {
    SmallVector<int64_t> ranks;
    if (auto only = fn->getAttrOfType<DenseI64ArrayAttr>("plait.ranks")) {
      for (int64_t r : only.asArrayRef())
        if (r < 0 || r >= world)
          return fn.emitOpError("plait.ranks names rank ")
                 << r << ", outside world size " << world;
      llvm::append_range(ranks, only.asArrayRef());
    } else {
      for (int64_t r = 0; r < world; ++r)
        ranks.push_back(r);
    }
    WalkResult walk = fn.walk([&](Operation *op) {
      if (!isCollective(op))
        return WalkResult::advance();
      RankGroupList groups = groupsOf(groupsOfOp(op));
      for (int64_t r : ranks)
        if (const auto *group = groupOf(groups, r))
          sequences[r].push_back({op, *group, sequences[r].size()});
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }

  // Replay: a collective completes when every member of its group has it next.
  std::vector<size_t> head(world, 0);
  auto done = [&](int64_t r) { return head[r] >= sequences[r].size(); };
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t r = 0; r < world; ++r) {
      if (done(r))
        continue;
      const Entry &e = sequences[r][head[r]];
      bool ready = true;
      for (int64_t m : e.members)
        ready = ready && !done(m) && sequences[m][head[m]].members == e.members;
      if (!ready)
        continue;
      for (int64_t m : e.members) {
        const Entry &other = sequences[m][head[m]];
        if (signature(other.op) != signature(e.op)) {
          InFlightDiagnostic diag = e.op->emitError()
                                    << "collective order differs between ranks: rank " << r
                                    << "'s collective " << describe(e) << " meets rank " << m
                                    << "'s " << describe(other)
                                    << "; the ranks would hang or corrupt data";
          diag.attachNote(other.op->getLoc()) << "rank " << m << "'s collective";
          return diag;
        }
      }
      for (int64_t m : e.members)
        ++head[m];
      progress = true;
    }
  }
  for (int64_t r = 0; r < world; ++r) {
    if (done(r))
      continue;
    const Entry &e = sequences[r][head[r]];
    for (int64_t m : e.members) {
      if (!done(m) && sequences[m][head[m]].members == e.members)
        continue;
      InFlightDiagnostic diag = e.op->emitError()
                                << "collective order differs between ranks: rank " << r
                                << " waits in its collective " << describe(e) << " for rank "
                                << m << ", which ";
      if (done(m))
        return diag << "runs no further collective; the ranks would hang";
      const Entry &other = sequences[m][head[m]];
      diag << "is in its collective " << describe(other) << "; the ranks would hang";
      diag.attachNote(other.op->getLoc()) << "rank " << m << "'s collective";
      return diag;
    }
  }
  return success();
}

namespace {
struct VerifyCollectivesPass : impl::VerifyCollectivesPassBase<VerifyCollectivesPass> {
  void runOnOperation() final {
    if (failed(verifyCollectiveOrder(getOperation())))
      signalPassFailure();
  }
};
} // namespace

} // namespace plait
