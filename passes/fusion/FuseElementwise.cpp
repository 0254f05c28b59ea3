// -plait-fuse-elementwise: chains of f32 elementwise ops become one plait.fused_elementwise.
//
// A training step spends much of its non-GEMM time in short elementwise chains: the erf-GELU
// and its derivative, the decomposed layer norm's scale and shift, the attention's scaling,
// each op reading and writing a whole activation. Fused, a chain reads its inputs once and
// writes only the values read outside it; the intermediate values never reach memory (or the
// memory plan).
//
// Groups form in program order. An op joins the groups of its operands' producers whose result
// has its type, or a smaller one that only it reads (all of them, merged, or else the first it
// can), as long as one place follows every input of the group and precedes every read of its
// results outside it: the fused op stands there (at its last member, or before the first such
// read when that comes earlier). Fused are add, sub, mul, div, neg, exp, erf, sqrt and pow
// whose result is f32 (operands broadcast to it: a bias, a layer norm's per-row mean), and
// broadcast_to. A reduce_sum or reduce_mean (keepdims) of a member's result, or of a value the
// group reads, joins the group as a reduced result: the sum is taken as the elements are
// computed (a layer norm's mean and variance, a bias or norm-weight gradient's sum over the
// batch, softmax's backward row sums), so the reduced value never reaches memory whole.
// Nothing in the group may read a reduced result. A group of one op stays as it is. The
// module records `plait.fuse_elementwise` {kernels, ops, reductions} for the report.
#include "passes/Passes.h"

#include "codegen/schema/FusedElementwise.h"
#include "ir/PlaitDialect.h"
#include "ir/ShapeRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "passes/Passes.h.inc"

namespace {

struct Group {
  RankedTensorType type; // the iteration shape: every member's result but the reductions'
  llvm::SetVector<Operation *> ops; // in program order; empty once merged into another group
};

/// The reduction a reduce op computes as a fused result, or Store when it cannot be fused: a
/// reduce_sum or reduce_mean of f32 with keepdims, over dimensions fused results may reduce.
int64_t fusibleReduction(Operation *op) {
  int64_t kind = isa<ReduceSumOp>(op) ? fused::Sum : isa<ReduceMeanOp>(op) ? fused::Mean
                                                                           : fused::Store;
  if (kind == fused::Store)
    return kind;
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() ||
      !in.getElementType().isF32() || !out.getElementType().isF32() ||
      in.getRank() != out.getRank() || in.getNumElements() == 0)
    return fused::Store;
  // Not over a trailing dimension of 1 either: reduce_sum would sum the next one as a row.
  if (in.getShape() == out.getShape() || in.getShape().back() == 1 ||
      !fused::checkReducedShape(kind, in.getShape(), out.getShape()).empty())
    return fused::Store;
  return kind;
}

/// Each op's position in its block, numbered once before any group forms.
using Positions = llvm::DenseMap<Operation *, int64_t>;

/// The op's opcode when it can be fused (an f32 result; its operands, f32, broadcast to the
/// result, as the op's verifier saw to), else -1.
int64_t fusibleOpcode(Operation *op) {
  if (op->getNumResults() != 1 || !isa<PlaitDialect>(op->getDialect()))
    return -1;
  int64_t code = fused::opcodeOf(op->getName().stripDialect().str());
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (code < 0 || !type || !type.hasStaticShape() || !type.getElementType().isF32() ||
      int64_t(op->getNumOperands()) != fused::opcodeInfo(code).arity)
    return -1;
  for (Value operand : op->getOperands()) {
    auto t = dyn_cast<RankedTensorType>(operand.getType());
    if (!t || !t.hasStaticShape() || !t.getElementType().isF32())
      return -1;
  }
  return code;
}

/// How far apart (in ops of the block) a group's first and last op may be. The fused op
/// computes every member where the last one stood, so the inputs of the first stay live until
/// then: a group must not stretch from a layer's forward to its backward, or across the
/// places plait-schedule and the collectives chose.
constexpr int64_t kMaxSpan = 24;

/// Where a group's fused op may stand: after `ready` (the last definition of an input) and
/// no later than `need` (the first read of a result outside the group).
struct Window {
  int64_t ready = -1, need = INT64_MAX;
};

/// The window of `members` (ops of one block); block arguments are ready at -1.
Window windowOf(const llvm::SmallPtrSetImpl<Operation *> &members, const Positions &position) {
  Window w;
  for (Operation *m : members) {
    for (Value v : m->getOperands())
      if (Operation *def = v.getDefiningOp(); def && !members.contains(def))
        w.ready = std::max(w.ready, position.lookup(def));
    for (Operation *user : m->getResult(0).getUsers())
      if (!members.contains(user))
        w.need = std::min(w.need, position.lookup(user));
  }
  return w;
}

/// Whether `groups` and `op` may become one group iterating over `type`: one place comes
/// after every input and before every outside read of a result (the fused op stands there),
/// the group spans at most kMaxSpan ops, nothing in it reads a reduced result, a member of a
/// smaller shape (computed again for every element it broadcasts to) is read only inside,
/// and the program stays within the limits. `reduced` holds the groups' reductions.
bool canFuse(ArrayRef<Group *> groups, Operation *op, RankedTensorType type,
             const Positions &position, const llvm::SmallPtrSetImpl<Operation *> &reduced) {
  bool opReduces = fusibleReduction(op) != fused::Store;
  llvm::SmallPtrSet<Operation *, 32> members;
  members.insert(op);
  int64_t first = position.lookup(op), last = first, instructions = 0;
  for (Group *g : groups) {
    members.insert(g->ops.begin(), g->ops.end());
    first = std::min(first, position.lookup(g->ops.front()));
    last = std::max(last, position.lookup(g->ops.back()));
  }
  if (last - first > kMaxSpan)
    return false;
  llvm::SmallPtrSet<Value, 32> inputs;
  for (Operation *m : members) {
    for (Value v : m->getOperands())
      if (!members.contains(v.getDefiningOp()))
        inputs.insert(v);
    bool reduction = m == op ? opReduces : reduced.contains(m);
    instructions += reduction ? 2 : 1; // a reduced result may need a copy of its register
    bool inside = !reduction && m->getResult(0).getType() != type;
    for (Operation *user : m->getResult(0).getUsers())
      if (members.contains(user) ? reduction : inside)
        return false;
    // pow computes products for a one-element exponent (x^2 of a norm's backward, whose
    // exponent is computed); computed again per element, the exponent would not be one
    // element any more, and pow would take std::pow's slow path.
    if (isa<PowOp>(m))
      if (Operation *exponent = m->getOperand(1).getDefiningOp();
          exponent && members.contains(exponent) &&
          exponent->getResult(0).getType() != type)
        return false;
  }
  Window w = windowOf(members, position);
  return w.ready < w.need && instructions <= int64_t(fused::kMaxInstructions) &&
         inputs.size() <= fused::kMaxInputs;
}

/// Replaces the group's ops by one fused op at the place of its last member, or before the
/// first outside read of a result when that comes earlier.
void fuse(const Group &group, Positions &position, OpBuilder &builder) {
  Operation *last = group.ops.back();
  llvm::SmallPtrSet<Operation *, 32> members(group.ops.begin(), group.ops.end());
  Window w = windowOf(members, position);
  Operation *at = last;
  if (w.need <= position.lookup(last))
    for (Operation *op = group.ops.front(); op; op = op->getNextNode())
      if (position.lookup(op) == w.need) {
        at = op;
        break;
      }
  llvm::MapVector<Value, int64_t> registers; // inputs first, then the members' results
  SmallVector<Value> inputs;
  for (Operation *op : group.ops)
    for (Value operand : op->getOperands())
      if (!group.ops.contains(operand.getDefiningOp()) && !registers.count(operand)) {
        registers[operand] = int64_t(inputs.size());
        inputs.push_back(operand);
      }
  SmallVector<int64_t> program, outputs, reductions;
  SmallVector<Value> escaping; // member results read outside the group
  auto append = [&](int64_t code, int64_t a, int64_t b) {
    program.append({code, a, b});
    return int64_t(inputs.size() + program.size() / 3 - 1);
  };
  for (Operation *op : group.ops) {
    Value result = op->getResult(0);
    if (int64_t reduction = fusibleReduction(op); reduction != fused::Store) {
      // The operand's register, summed as it is computed (a register is written once: one
      // listed already gets a copy).
      int64_t r = registers.lookup(op->getOperand(0));
      if (r < int64_t(inputs.size()) || llvm::is_contained(outputs, r))
        r = append(fused::BroadcastTo, r, -1);
      outputs.push_back(r);
      reductions.push_back(reduction);
      escaping.push_back(result);
      continue;
    }
    int64_t code = fused::opcodeOf(op->getName().stripDialect().str());
    registers[result] =
        append(code, registers.lookup(op->getOperand(0)),
               op->getNumOperands() > 1 ? registers.lookup(op->getOperand(1)) : -1);
    if (llvm::any_of(result.getUsers(),
                     [&](Operation *user) { return !group.ops.contains(user); })) {
      outputs.push_back(registers.lookup(result));
      reductions.push_back(fused::Store);
      escaping.push_back(result);
    }
  }
  SmallVector<Location> locs;
  for (Operation *op : group.ops)
    locs.push_back(op->getLoc());
  builder.setInsertionPoint(at);
  SmallVector<Type> types;
  for (Value v : escaping)
    types.push_back(v.getType());
  bool reduces = llvm::any_of(reductions, [](int64_t r) { return r != fused::Store; });
  auto fusedOp = builder.create<FusedElementwiseOp>(
      builder.getFusedLoc(locs), types, inputs, builder.getDenseI64ArrayAttr(program),
      builder.getDenseI64ArrayAttr(outputs),
      reduces ? builder.getDenseI64ArrayAttr(reductions) : DenseI64ArrayAttr());
  // Later groups' windows see it where it stands (it may read their results, or they its).
  position[fusedOp] = position.lookup(at);
  for (auto [value, replacement] : llvm::zip(escaping, fusedOp.getResults()))
    value.replaceAllUsesWith(replacement);
  for (Operation *op : llvm::reverse(group.ops))
    op->erase();
}

struct FuseElementwisePass : impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() final {
    ModuleOp module = getOperation();
    int64_t kernels = 0, ops = 0, reductions = 0;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      Positions position;
      for (Operation &op : func.getBody().front())
        position[&op] = int64_t(position.size());
      std::vector<std::unique_ptr<Group>> groups;
      llvm::DenseMap<Operation *, Group *> groupOf;
      llvm::SmallPtrSet<Operation *, 32> reduced; // reductions that joined a group
      for (Operation &op : func.getBody().front()) {
        if (fusibleReduction(&op) != fused::Store) {
          // A reduction joins its operand's group, if that group may take it; it never
          // starts one.
          auto type = cast<RankedTensorType>(op.getOperand(0).getType());
          Group *g = groupOf.lookup(op.getOperand(0).getDefiningOp());
          if (g && g->type == type && !reduced.contains(op.getOperand(0).getDefiningOp()) &&
              canFuse({g}, &op, type, position, reduced)) {
            g->ops.insert(&op);
            groupOf[&op] = g;
            reduced.insert(&op);
          }
          continue;
        }
        if (fusibleOpcode(&op) < 0)
          continue;
        auto type = cast<RankedTensorType>(op.getResult(0).getType());
        // The groups of its operands' producers with its type: all of them merged with it
        // when that is allowed, else the first it may join alone, else a group of its own.
        // Never a group whose reduction it reads: that sum is complete only after the group.
        SmallVector<Group *> candidates, excluded;
        for (Value operand : op.getOperands())
          if (reduced.contains(operand.getDefiningOp()))
            excluded.push_back(groupOf.lookup(operand.getDefiningOp()));
        // A group of a smaller shape (a layer norm's per-row statistics, a scalar) may join
        // too when nothing outside reads it: it is computed again for every element.
        auto compatible = [&](Group *g) {
          if (g->type == type)
            return true;
          return broadcastsTo(g->type.getShape(), type.getShape()) &&
                 llvm::none_of(g->ops, [&](Operation *m) {
                   // pow's products need the base whole (as the unfused kernel has it)
                   return reduced.contains(m) || isa<PowOp>(m);
                 });
        };
        for (Value operand : op.getOperands()) {
          Group *g = groupOf.lookup(operand.getDefiningOp());
          if (g && compatible(g) && !llvm::is_contained(candidates, g) &&
              !llvm::is_contained(excluded, g))
            candidates.push_back(g);
        }
        SmallVector<Group *> chosen;
        if (candidates.size() > 1 && canFuse(candidates, &op, type, position, reduced))
          chosen = candidates;
        else
          for (Group *g : candidates)
            if (canFuse({g}, &op, type, position, reduced)) {
              chosen = {g};
              break;
            }
        Group *joined;
        if (chosen.empty()) {
          groups.push_back(std::make_unique<Group>());
          joined = groups.back().get();
          joined->type = type;
        } else {
          joined = chosen.front();
          for (Group *other : llvm::drop_begin(chosen)) {
            for (Operation *m : other->ops) {
              joined->ops.insert(m);
              groupOf[m] = joined;
            }
            other->ops.clear();
          }
          // Keep program order (the merged groups' ops interleave).
          SmallVector<Operation *> ordered(joined->ops.begin(), joined->ops.end());
          llvm::sort(ordered, [&](Operation *x, Operation *y) {
            return position.lookup(x) < position.lookup(y);
          });
          joined->ops.clear();
          joined->ops.insert(ordered.begin(), ordered.end());
          joined->type = type; // it may have been a smaller group
        }
        joined->ops.insert(&op);
        groupOf[&op] = joined;
      }
      // A reduction of a value that a group reads (a bias gradient's sum of the same
      // gradient a norm's weight gradient multiplies) is summed by that group too.
      for (Operation &op : func.getBody().front()) {
        if (fusibleReduction(&op) == fused::Store || reduced.contains(&op))
          continue;
        Value operand = op.getOperand(0);
        auto type = cast<RankedTensorType>(operand.getType());
        for (Operation *user : operand.getUsers()) {
          Group *g = groupOf.lookup(user);
          if (!g || g->type != type || g->ops.size() < 2 || !canFuse({g}, &op, type, position, reduced))
            continue;
          SmallVector<Operation *> ordered(g->ops.begin(), g->ops.end());
          ordered.push_back(&op);
          llvm::sort(ordered, [&](Operation *x, Operation *y) {
            return position.lookup(x) < position.lookup(y);
          });
          g->ops.clear();
          g->ops.insert(ordered.begin(), ordered.end());
          groupOf[&op] = g;
          reduced.insert(&op);
          break;
        }
      }
      OpBuilder builder(&getContext());
      for (const auto &group : groups) {
        if (group->ops.size() < 2) // single ops stay, merged groups are empty
          continue;
        ++kernels;
        ops += int64_t(group->ops.size());
        reductions += llvm::count_if(group->ops, [&](Operation *m) { return reduced.contains(m); });
        fuse(*group, position, builder);
      }
    }
    Builder b(&getContext());
    module->setAttr("plait.fuse_elementwise",
                    b.getDictionaryAttr({b.getNamedAttr("kernels", b.getI64IntegerAttr(kernels)),
                                         b.getNamedAttr("ops", b.getI64IntegerAttr(ops)),
                                         b.getNamedAttr("reductions",
                                                        b.getI64IntegerAttr(reductions))}));
  }
};

} // namespace
} // namespace plait
