// -plait-verify-collectives: every rank must run the same collectives, in the same order,
// as the other members of each group; a plan that could hang is rejected here.
#include "passes/Passes.h"
#include "passes/sharding/VerifyCollectives.h"

#include <map>
#include <unordered_map>
#include <vector>

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
  int32_t group; // index into the interned groups: equal ids, equal members
  size_t index;  // position in the rank's sequence
};

/// Each distinct group of ranks once: entries hold an id, so building the sequences and
/// comparing groups costs the same for 1,024 ranks as for 2 (not a copy of every group for
/// every member).
class GroupTable {
public:
  int32_t intern(ArrayRef<int64_t> members) {
    std::vector<int64_t> key(members.begin(), members.end());
    auto [it, inserted] = ids_.emplace(std::move(key), (int32_t)groups_.size());
    if (inserted)
      groups_.push_back(&it->first);
    return it->second;
  }
  const std::vector<int64_t> &members(int32_t id) const { return *groups_[id]; }

private:
  std::map<std::vector<int64_t>, int32_t> ids_;
  std::vector<const std::vector<int64_t> *> groups_;
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

std::string describe(const Entry &e, const GroupTable &table) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "#" << e.index << " (" << signature(e.op) << " over [";
  llvm::interleaveComma(table.members(e.group), os);
  os << "])";
  return os.str();
}

} // namespace

LogicalResult verifyCollectiveOrder(ModuleOp module) {
  int64_t world = worldSizeOf(module);
  std::vector<std::vector<Entry>> sequences(world);
  GroupTable table;
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
    std::vector<bool> runs(world, false);
    for (int64_t r : ranks)
      runs[r] = true;
    WalkResult walk = fn.walk([&](Operation *op) {
      if (!isCollective(op))
        return WalkResult::advance();
      // Each rank in the group it belongs to (the first, as groupOf finds it).
      std::vector<int32_t> groupOfRank(world, -1);
      for (const auto &group : groupsOf(groupsOfOp(op))) {
        int32_t id = table.intern(group);
        for (int64_t r : group)
          if (r >= 0 && r < world && groupOfRank[r] < 0)
            groupOfRank[r] = id;
      }
      for (int64_t r = 0; r < world; ++r)
        if (runs[r] && groupOfRank[r] >= 0)
          sequences[r].push_back({op, groupOfRank[r], sequences[r].size()});
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }

  std::unordered_map<Operation *, std::string> signatures; // references stay valid
  auto signatureOf = [&](Operation *op) -> const std::string & {
    auto it = signatures.find(op);
    if (it == signatures.end())
      it = signatures.try_emplace(op, signature(op)).first;
    return it->second;
  };

  // Replay: a collective completes when every member of its group has it next.
  std::vector<size_t> head(world, 0);
  auto done = [&](int64_t r) { return head[r] >= sequences[r].size(); };
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t r = 0; r < world; ++r) {
      if (done(r))
        continue;
      const Entry &e = sequences[r][head[r]];
      const std::vector<int64_t> &members = table.members(e.group);
      bool ready = true;
      for (int64_t m : members)
        ready = ready && !done(m) && sequences[m][head[m]].group == e.group;
      if (!ready)
        continue;
      for (int64_t m : members) {
        const Entry &other = sequences[m][head[m]];
        if (other.op != e.op && signatureOf(other.op) != signatureOf(e.op)) {
          InFlightDiagnostic diag = e.op->emitError()
                                    << "collective order differs between ranks: rank " << r
                                    << "'s collective " << describe(e, table) << " meets rank "
                                    << m << "'s " << describe(other, table)
                                    << "; the ranks would hang or corrupt data";
          diag.attachNote(other.op->getLoc()) << "rank " << m << "'s collective";
          return diag;
        }
      }
      for (int64_t m : members)
        ++head[m];
      progress = true;
    }
  }
  for (int64_t r = 0; r < world; ++r) {
    if (done(r))
      continue;
    const Entry &e = sequences[r][head[r]];
    for (int64_t m : table.members(e.group)) {
      if (!done(m) && sequences[m][head[m]].group == e.group)
        continue;
      InFlightDiagnostic diag = e.op->emitError()
                                << "collective order differs between ranks: rank " << r
                                << " waits in its collective " << describe(e, table)
                                << " for rank "
                                << m << ", which ";
      if (done(m))
        return diag << "runs no further collective; the ranks would hang";
      const Entry &other = sequences[m][head[m]];
      diag << "is in its collective " << describe(other, table) << "; the ranks would hang";
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
