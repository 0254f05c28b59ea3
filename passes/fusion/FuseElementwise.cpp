// -plait-fuse-elementwise: chains of f32 elementwise ops become one plait.fused_elementwise.
//
// A training step spends much of its non-GEMM time in short elementwise chains: the erf-GELU
// and its derivative, the decomposed layer norm's scale and shift, the attention's scaling,
// each op reading and writing a whole activation. Fused, a chain reads its inputs once and
// writes only the values read outside it; the intermediate values never reach memory (or the
// memory plan).
//
// Groups form in program order. An op joins the groups of its operands' producers whose result
// has the same type (all of them, merged, or else the first it can), as long as every value of
// the group read outside it is read after the op (the fused op takes the place of its last
// member, so those readers must still follow it). Fused are add, sub, mul, div, neg, exp, erf, sqrt and pow whose result is f32
// (operands broadcast to it: a bias, a layer norm's per-row mean); a group of one op stays
// as it is. The module records `plait.fuse_elementwise` {kernels, ops}
// for the report.
#include "passes/Passes.h"

#include "codegen/schema/FusedElementwise.h"
#include "ir/PlaitDialect.h"

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
  RankedTensorType type;
  llvm::SetVector<Operation *> ops; // in program order; empty once merged into another group
};

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

/// Whether `groups` and `op` may become one group: every value of theirs read outside them is
/// read after `op` (where the fused op will stand), the group spans at most kMaxSpan ops, and
/// the program stays within the limits.
bool canFuse(ArrayRef<Group *> groups, Operation *op, const Positions &position) {
  llvm::SmallPtrSet<Operation *, 32> members;
  members.insert(op);
  for (Group *g : groups) {
    members.insert(g->ops.begin(), g->ops.end());
    if (position.lookup(op) - position.lookup(g->ops.front()) > kMaxSpan)
      return false;
  }
  if (members.size() > fused::kMaxInstructions)
    return false;
  llvm::SmallPtrSet<Value, 32> inputs;
  for (Operation *m : members) {
    for (Value v : m->getOperands())
      if (!members.contains(v.getDefiningOp()))
        inputs.insert(v);
    if (m == op)
      continue;
    for (Operation *user : m->getResult(0).getUsers())
      if (!members.contains(user) && position.lookup(user) <= position.lookup(op))
        return false;
  }
  return inputs.size() <= fused::kMaxInputs;
}

/// Replaces the group's ops by one fused op at the place of its last member.
void fuse(const Group &group, OpBuilder &builder) {
  Operation *last = group.ops.back();
  llvm::MapVector<Value, int64_t> registers; // inputs first, then the members' results
  SmallVector<Value> inputs;
  for (Operation *op : group.ops)
    for (Value operand : op->getOperands())
      if (!group.ops.contains(operand.getDefiningOp()) && !registers.count(operand)) {
        registers[operand] = int64_t(inputs.size());
        inputs.push_back(operand);
      }
  SmallVector<int64_t> program, outputs;
  SmallVector<Value> escaping; // member results read outside the group
  for (Operation *op : group.ops) {
    int64_t code = fused::opcodeOf(op->getName().stripDialect().str());
    program.push_back(code);
    program.push_back(registers.lookup(op->getOperand(0)));
    program.push_back(op->getNumOperands() > 1 ? registers.lookup(op->getOperand(1)) : -1);
    Value result = op->getResult(0);
    registers[result] = int64_t(inputs.size() + program.size() / 3 - 1);
    if (llvm::any_of(result.getUsers(),
                     [&](Operation *user) { return !group.ops.contains(user); })) {
      outputs.push_back(registers.lookup(result));
      escaping.push_back(result);
    }
  }
  SmallVector<Location> locs;
  for (Operation *op : group.ops)
    locs.push_back(op->getLoc());
  builder.setInsertionPoint(last);
  SmallVector<Type> types(escaping.size(), group.type);
  auto fusedOp = builder.create<FusedElementwiseOp>(
      builder.getFusedLoc(locs), types, inputs, builder.getDenseI64ArrayAttr(program),
      builder.getDenseI64ArrayAttr(outputs));
  for (auto [value, replacement] : llvm::zip(escaping, fusedOp.getResults()))
    value.replaceAllUsesWith(replacement);
  for (Operation *op : llvm::reverse(group.ops))
    op->erase();
}

struct FuseElementwisePass : impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() final {
    ModuleOp module = getOperation();
    int64_t kernels = 0, ops = 0;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      Positions position;
      for (Operation &op : func.getBody().front())
        position[&op] = int64_t(position.size());
      std::vector<std::unique_ptr<Group>> groups;
      llvm::DenseMap<Operation *, Group *> groupOf;
      for (Operation &op : func.getBody().front()) {
        if (fusibleOpcode(&op) < 0)
          continue;
        auto type = cast<RankedTensorType>(op.getResult(0).getType());
        // The groups of its operands' producers with its type: all of them merged with it
        // when that is allowed, else the first it may join alone, else a group of its own.
        SmallVector<Group *> candidates;
        for (Value operand : op.getOperands()) {
          Group *g = groupOf.lookup(operand.getDefiningOp());
          if (g && g->type == type && !llvm::is_contained(candidates, g))
            candidates.push_back(g);
        }
        SmallVector<Group *> chosen;
        if (candidates.size() > 1 && canFuse(candidates, &op, position))
          chosen = candidates;
        else
          for (Group *g : candidates)
            if (canFuse({g}, &op, position)) {
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
        }
        joined->ops.insert(&op);
        groupOf[&op] = joined;
      }
      OpBuilder builder(&getContext());
      for (const auto &group : groups) {
        if (group->ops.size() < 2) // single ops stay, merged groups are empty
          continue;
        ++kernels;
        ops += int64_t(group->ops.size());
        fuse(*group, builder);
      }
    }
    Builder b(&getContext());
    module->setAttr("plait.fuse_elementwise",
                    b.getDictionaryAttr({b.getNamedAttr("kernels", b.getI64IntegerAttr(kernels)),
                                         b.getNamedAttr("ops", b.getI64IntegerAttr(ops))}));
  }
};

} // namespace
} // namespace plait
